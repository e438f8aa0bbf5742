//! State shared by the database handle and the partition executors: configuration, the
//! partitions' queues, the published schema, counters, and the multi-partition order.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use crossbeam_channel::Sender;
use permafrost_storage::{AccessTracker, LruChain};

use crate::config::Config;
use crate::counters::PartitionStats;
use crate::partition::fence::QueueState;
use crate::partition::gates::Gates;
use crate::partition::msg::Msg;
use crate::procedure::SchemaState;

/// State shared by the database handle and all partition executors.
pub(crate) struct Shared {
    pub config: Config,
    /// The partitions' queues. Calls and multi-partition transactions go through
    /// [`Shared::send`], which counts them for fences (partition/fence.rs).
    pub senders: Vec<Sender<Msg>>,
    /// Per partition, what was sent to its queue and handled, and its fences.
    pub queues: Vec<Arc<QueueState>>,
    pub stats: Vec<Arc<PartitionStats>>,
    pub schema: ArcSwap<SchemaState>,
    /// The next multi-partition timestamp; held while enqueueing one.
    pub mp_order: Mutex<u64>,
    /// Turns of the partitions at running statements that any partition can run.
    pub any_turn: std::sync::atomic::AtomicU32,
    /// The command log, when one is configured.
    pub log: Option<Arc<permafrost_durability::CommandLog>>,
    /// The file system every file of the database goes through: the command log, the
    /// block files, snapshots, the schema log ([`crate::Database::open_with_fs`]).
    pub fs: Arc<dyn permafrost_io::Fs>,
    /// Per partition, the scans reading its blocks without merging them (scan.rs); `None`
    /// without an anti-cache.
    pub scan_holds: Vec<Option<permafrost_anticache::ScanHold>>,
    /// The memory running statements hold together ([`permafrost_sql::workmem`]); the
    /// partitions count it in the budget.
    pub statement_pool: Arc<permafrost_sql::workmem::MemoryPool>,
    /// Per partition, its ownership token, which a caller takes to run a short call on its
    /// own thread (partition/cell.rs); unset when the partitions have no threads of their
    /// own (the step harness). A `Vec<Arc<PartitionCell>>`, which holds the partitions and
    /// so their `Shared`: kept as `Any` here, set and read through `Shared::set_cells` and
    /// `Shared::cells` (cell.rs).
    pub inline: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    /// Statements running now moved off their partitions (forked.rs), at most
    /// [`crate::forked::MAX_MOVED`].
    pub moved_running: std::sync::atomic::AtomicUsize,
    /// Stamps the commits that change rows, at every partition
    /// ([`permafrost_storage::Recent`]): an interactive transaction notes it before
    /// each read, and its COMMIT need not run again a read whose rows no later commit
    /// changed ([`crate::Database::write_clock`]).
    pub write_clock: Arc<std::sync::atomic::AtomicU64>,
    /// Each partition's write gate, for pacing writes to eviction (partition/pacing.rs).
    pub gates: Gates,
    /// The counters of the tables' sequences, shared by the partitions and read by the
    /// server's routing ([`permafrost_sql::exec::sequences`]).
    pub sequences: permafrost_sql::exec::sequences::Sequences,
    /// Per table, the statements that ran over several partitions because of the tables'
    /// partitioning ([`permafrost_sql::Prepared::crossing`]), and the committed blocks whose
    /// statements' keys pinned them to different partitions (`TableStats::crossing_statements`).
    pub crossings: Mutex<std::collections::BTreeMap<permafrost_storage::TableId, u64>>,
}

impl Shared {
    /// The partitions statement `p` of a transaction block with `params` runs at: a bulk
    /// insert (a COPY's rows) at every partition, any other as its plan routes it. In a probe
    /// (`undone`: its changes are undone), a write to a replicated table needs one partition
    /// only (`Prepared::route_undone`). An INSERT of new keys from its table's sequence runs
    /// where the values it drew before (`draws`) live, or the sequence's next ones
    /// ([`Shared::sequence_route`]).
    pub fn block_route(
        &self,
        p: &permafrost_sql::Prepared,
        params: &[permafrost_types::Value],
        undone: bool,
        draws: &[(u32, i64)],
    ) -> permafrost_sql::Route {
        use permafrost_sql::Route;
        let partitions = self.config.partitions;
        let r = match crate::procedure::bulk_width(p) {
            Some(_) if partitions <= 1 => Route::Single(0),
            Some(_) => Route::All,
            None if undone => p.route_undone(params, partitions),
            None => p.route(params, partitions),
        };
        self.sequence_route(p, r, draws)
    }

    /// Counts statement `p` (with `params`), which runs over several partitions, against
    /// the tables whose partitioning made it so.
    pub fn note_crossing(&self, p: &permafrost_sql::Prepared, params: &[permafrost_types::Value]) {
        self.note_crossed(p.crossing(params, self.config.partitions));
    }

    /// Counts one crossing against each of `tables` (once each).
    pub fn note_crossed(&self, mut tables: Vec<permafrost_storage::TableId>) {
        if tables.is_empty() {
            return;
        }
        tables.sort_unstable();
        tables.dedup();
        let mut c = self.crossings.lock().unwrap_or_else(|e| e.into_inner());
        for t in tables {
            *c.entry(t).or_default() += 1;
        }
    }

    /// What running statements may hold together: half the memory budget, at least what
    /// one statement may hold.
    pub(crate) fn statement_pool_limit(memory_limit: u64) -> usize {
        usize::try_from(memory_limit / 2)
            .unwrap_or(usize::MAX)
            .max(crate::partition::txn::work_mem(memory_limit))
    }

    /// Sends `msg` to partition `p`'s queue, counting calls and multi-partition
    /// transactions for fences (partition/fence.rs). Gives the message back when the
    /// partition has shut down.
    pub(crate) fn send(&self, p: u32, msg: Msg) -> std::result::Result<(), Msg> {
        let counted = msg.counts();
        if counted {
            self.queues[p as usize].sending();
        }
        self.senders[p as usize].send(msg).map_err(|e| {
            if counted {
                // Never to be handled.
                self.queues[p as usize].handled();
            }
            e.into_inner()
        })
    }

    /// Each partition's share of the memory budget.
    pub(crate) fn memory_share(&self) -> u64 {
        self.config.memory_limit / self.config.partitions as u64
    }

    /// The access tracker a new evictable table gets.
    pub(crate) fn tracker(&self) -> Box<dyn AccessTracker> {
        match &self.config.anticache {
            Some(ac) => ac.cold_policy.tracker(),
            None => Box::new(LruChain::new()),
        }
    }
}
