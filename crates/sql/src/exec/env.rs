//! What a statement runs against ([`Env`]): the partitions its transaction holds, its
//! clock, limits and random state, and what it records for the transaction (evicted tuples
//! reached, deferred scans and foreign-key checks, EXPLAIN ANALYZE's counts).

use std::sync::Arc;
use std::time::Instant;

use permafrost_storage::PartitionStore;

use super::deferred::Deferred;
use super::evicted_rows::EvictedRows;
use super::foreign;
use super::reached::EvictedRefs;
use super::walk::Reach;
use crate::workmem::MemoryPool;

/// What a statement runs against.
pub struct Env<'a, 'b> {
    /// The partitions the transaction holds.
    pub stores: &'a mut [&'b mut PartitionStore],
    /// Partitions in the database.
    pub total_partitions: u32,
    /// Whether this transaction's accesses update the access trackers (LRU sampling).
    pub sampled: bool,
    /// Transaction timestamp (microseconds since the epoch).
    pub now: i64,
    /// Evicted tuples the transaction reached (the pre-pass record).
    pub evicted: &'a mut EvictedRefs,
    /// Whether the statement is to stop: nobody waits for its result any more (a cancel
    /// request, a statement timeout, a client that went away). Asked every
    /// [`INTERRUPT_EVERY`] tuples a statement visits; the statement then fails with 57014
    /// and its transaction is rolled back.
    pub interrupted: &'a dyn Fn() -> bool,
    /// The memory one statement may hold for its result and its intermediate rows (sorts,
    /// DISTINCT, groups), in bytes; past it the statement fails with 54000, unless it may
    /// spill (`spill`).
    pub work_mem: usize,
    /// Where a query's result and sort past `work_mem` go instead of failing: temporary
    /// files in this directory (`exec/spill.rs`), read back as the result's rest
    /// ([`Rows::take_rest`]). Only for callers that read a rest: one ad hoc query
    /// answered to its client. `None`: 54000 past `work_mem`.
    pub spill: Option<Arc<std::path::Path>>,
    /// Whether a single-table scan that reaches evicted tuples may leave them to be read
    /// afterwards ([`Deferred`], set in `deferred`) instead of recording them in
    /// `evicted`: only for a transaction that is one read-only statement.
    pub defer_scans: bool,
    /// The evicted part of a scan left for later (see `defer_scans`).
    pub deferred: Option<Box<Deferred>>,
    /// The memory all running statements draw from past their first step
    /// ([`crate::workmem`]); `None`: no shared limit.
    pub pool: Option<&'a Arc<MemoryPool>>,
    /// The end of a read-only statement's read slice: looked at with
    /// [`Env::interrupted`], and once passed the statement stops with
    /// [`SqlError::SliceOver`] (the executor then runs it elsewhere, off its partitions).
    /// `None`: it runs to its end.
    pub deadline: Option<Instant>,
    /// Where the transaction's sequence values come from, and those it took
    /// ([`super::sequences`]); shared with its statements' expressions (`nextval()`).
    pub draws: &'a std::cell::RefCell<super::sequences::Draws<'a>>,
    /// For a replayed record of an earlier build ([`super::sequences::Draws::legacy`]):
    /// the partition whose sequences gave a partitioned table's new keys when the
    /// transaction held several; `None`: the first partition held.
    pub sequence_home: Option<u32>,
    /// Whether the transaction's changes are all undone whatever happens (an interactive
    /// transaction's probe): it may write a replicated table at fewer than all partitions,
    /// since each copy it writes gives what every copy would.
    pub undone: bool,
    /// For EXPLAIN ANALYZE: the query whose walk counts its rows, and the counts.
    pub analyze: Option<Analyze>,
    /// Foreign-key checks waiting for the transaction's end (keys declared `DEFERRABLE
    /// INITIALLY DEFERRED`): [`foreign::check_deferred`] runs them.
    pub deferred_fk: Vec<foreign::FkCheck>,
    /// The running statement's random state, which `random()` and `gen_random_uuid()`
    /// draw from ([`Cx::draw`]): set by the executor before each statement from what its
    /// transaction's log record keeps (its seed and timestamp, or an interactive
    /// statement's own seed), so that replay and a COMMIT's second run draw the same values.
    pub random: Arc<std::sync::atomic::AtomicU64>,
    /// Where the evicted tuples the statement meets are read from their blocks, in place,
    /// instead of being recorded in `evicted` to be brought back: only in a forked
    /// reader's image (the executor's forked.rs), whose memory merged tuples would fill.
    pub evicted_rows: Option<&'a dyn EvictedRows>,
}

/// What EXPLAIN ANALYZE learns of the query it runs ([`Env::analyze`]).
pub struct Analyze {
    /// The address of the query's plan: its subqueries, run through the same code, count
    /// nothing.
    pub(super) plan: usize,
    /// By relation of its walk: how often the walk entered it, how many rows it gave.
    pub(super) levels: Vec<(u64, u64)>,
    /// By relation of its walk: how its hash table went, if it had one
    /// (`Walker::hash_notes`).
    pub(super) hashes: Vec<Option<String>>,
}

/// For callers whose statements are never interrupted.
pub fn never_interrupted() -> bool {
    false
}

impl Env<'_, '_> {
    pub(super) fn local_of(&self, partition: u32) -> Option<usize> {
        self.stores.iter().position(|s| s.partition() == partition)
    }

    pub(super) fn held(&self) -> Vec<u32> {
        self.stores.iter().map(|s| s.partition()).collect()
    }

    pub(super) fn holds_all(&self) -> bool {
        self.stores.len() as u32 == self.total_partitions
    }

    /// What a walk reads ([`Reach`]), and the list of evicted tuples it records into.
    pub(super) fn reach(&mut self) -> (Reach<'_>, &mut EvictedRefs) {
        (
            Reach {
                stores: &*self.stores,
                total: self.total_partitions,
                interrupted: self.interrupted,
                deadline: self.deadline,
                work_mem: self.work_mem,
                evicted_rows: self.evicted_rows,
            },
            &mut *self.evicted,
        )
    }
}
