//! The messages a partition handles, and what travels with them: calls ([`Invocation`]),
//! multi-partition transactions, block I/O completions, administration, and what an
//! answered transaction logs.

use std::io;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use permafrost_anticache::{AlignedBuf, AntiCache};
use permafrost_storage::{EvictedEntries, PartitionStore, TableId, TableSchema};
use permafrost_types::Value;

use crossbeam_channel::{Receiver, Sender};
use permafrost_sql::workmem::Reservation;
use permafrost_sql::{DdlChange, EvictedRefs};

use crate::error::{Error, Result};
use crate::procedure::{Procedure, Replayed, SchemaState};
use crate::reply::Reply;
use crate::snapshot::job::SnapJob;

use super::fence::QueueState;

/// A message to a partition executor.
pub(crate) enum Msg {
    Batch(Vec<Invocation>),
    Mp(Arc<MpTxn>),
    Fetched {
        block: u32,
        result: io::Result<AlignedBuf>,
    },
    /// Evicted blocks the I/O thread wrote (or failed to).
    Written {
        blocks: Vec<u32>,
        result: io::Result<()>,
    },
    MpFetch {
        refs: EvictedRefs,
        ticket: Arc<MpFetch>,
    },
    Inspect(Box<dyn FnOnce(&mut PartitionStore) + Send>),
    /// Build the entries that the last index of the schema gives the evicted tuples of its
    /// table, from their blocks, between transactions (an index built over a table part of
    /// which is on disk: registry.rs); `None` when the partition has no such table.
    /// The entries are counted in the statement pool until the index is built.
    EvictedKeys(
        Arc<TableSchema>,
        crossbeam_channel::Sender<Result<Option<(EvictedEntries, Reservation)>>>,
    ),
    /// Read the evicted tuples of the schema's table from their blocks, between
    /// transactions, each with the partition it goes to under the schema (a table whose
    /// partitioning changes: repartition.rs); `None` when the partition has no such table.
    /// They are counted in the statement pool until the change is done.
    EvictedTuples(
        Arc<TableSchema>,
        crossbeam_channel::Sender<Result<Option<(super::repartition::Moving, Reservation)>>>,
    ),
    /// Read the store and the anti-cache between transactions (statistics, stats.rs).
    Observe(Observer),
    /// Evict about this many bytes now (an administrative command), then acknowledge.
    Evict(u64, crossbeam_channel::Sender<Result<u64>>),
    /// Publish counters now, then acknowledge.
    Publish(crossbeam_channel::Sender<()>),
    /// The command log made more records durable (or failed): answer the transactions
    /// waiting for that.
    Durable,
    /// Load part of a snapshot (recovery), then acknowledge.
    Restore(Restore, crossbeam_channel::Sender<Result<()>>),
    /// A snapshot completed: blocks only older snapshots refer to may be reused. `base`:
    /// it lists whole block directories; later ones list differences from it.
    SnapshotDone {
        epoch: u64,
        base: bool,
    },
    /// Read blocks for a scan that does not merge them (scan.rs); `done` gets each one's
    /// bytes.
    ScanRead {
        blocks: Vec<u32>,
        done: permafrost_anticache::ScanDone,
    },
    /// A scan that read blocks without merging them ended: slots freed meanwhile may be
    /// reused once no scan runs.
    ScansEnded,
    /// Memory held off the partitions changed (the statement pool: a COPY's rows taken or
    /// given back): check the budget now, evicting ahead or opening the write gate.
    CheckMemory,
    Shutdown,
}

impl Msg {
    /// Whether it carries a caller's order: a call or a multi-partition transaction
    /// (counted for fences, fence.rs).
    pub(crate) fn counts(&self) -> bool {
        matches!(self, Msg::Batch(_) | Msg::Mp(_))
    }
}

/// A part of a snapshot for one partition to load ([`Msg::Restore`]).
pub(crate) type Restore = Box<dyn FnOnce(&mut PartitionStore, Option<&mut AntiCache>) -> Result<()> + Send>;

/// A read of a partition's store and anti-cache between transactions ([`Msg::Observe`]).
pub(crate) type Observer = Box<dyn FnOnce(&PartitionStore, Option<&AntiCache>) + Send>;

/// One call of a single-partition procedure.
pub(crate) struct Invocation {
    pub proc: Arc<Procedure>,
    pub params: Vec<Value>,
    pub reply: Reply,
    /// Times this call was restarted (schema change, evicted data).
    pub restarts: u32,
    /// Set when the call is a command-log record being replayed: it runs with the
    /// timestamp and seed it first ran with, and is not logged again.
    pub replay: Option<Replayed>,
    /// The sequence values an earlier attempt of this call drew before it was rolled back
    /// to run again (past its slice on a caller's thread, for evicted data, a schema
    /// change, room in memory): the next attempt takes them first, so that a client's
    /// INSERT leaves no gap for runs it never saw ([`crate::partition::txn::Attempt`]).
    pub drawn: Vec<(u32, i64)>,
}

/// What [`Partition::answer`] needs to log a finished transaction.
pub(crate) struct Answer {
    /// Whether it changed anything.
    pub wrote: bool,
    /// The partitions it ran at, ascending: this one, or those of a multi-partition one.
    pub partitions: Option<Vec<u32>>,
    pub info_now: i64,
    pub info_seed: u64,
    /// The session TimeZone it ran in, which its record keeps; `None`: UTC.
    pub info_zone: Option<permafrost_types::zone::Zone>,
    /// Its request, for the log; `None` when it is not to be logged (a replayed record).
    pub log: Option<LogWhat>,
}

impl Answer {
    /// A read's: nothing written, nothing logged, at its partition.
    pub(crate) fn read(info: &super::txn::TxnInfo) -> Answer {
        Answer {
            wrote: false,
            partitions: None,
            info_now: info.now,
            info_seed: info.seed,
            info_zone: info.zone.clone(),
            log: None,
        }
    }
}

/// What the command log records of a transaction (encoded straight into the partition's
/// chunk, without building a `TxnRecord`).
pub(crate) enum LogWhat {
    Call(Arc<Procedure>, Vec<Value>),
    /// A multi-partition call: its parameters shared with the transaction, not copied
    /// (a COPY batch's rows are its parameters).
    SharedCall(Arc<Procedure>, Arc<[Value]>),
    Schema(String),
}

/// What a multi-partition transaction does.
pub(crate) enum MpWork {
    Call {
        proc: Arc<Procedure>,
        /// Shared by its retries and its log record (a COPY batch's rows are not copied).
        params: Arc<[Value]>,
        restarts: u32,
        /// Set for a command-log record being replayed.
        replay: Option<Replayed>,
    },
    /// Schema changes, applied at all partitions at one point of the serial order; on
    /// success `next` becomes the published schema state. `sql` is the statement, for the
    /// command log (`log`: whether to log it; not when replaying).
    Ddl {
        changes: Vec<DdlChange>,
        next: Arc<SchemaState>,
        sql: String,
        log: bool,
        /// For a `CreateIndex`: each partition's entries for the table's evicted tuples,
        /// read before ([`Msg::EvictedKeys`]); `None` without the anti-cache.
        evicted: Option<Arc<EvictedKeys>>,
        /// For a `Repartition`: each partition's evicted tuples of the table, read before
        /// ([`Msg::EvictedTuples`]); `None` without the anti-cache.
        moving: Option<Arc<super::repartition::MovingTuples>>,
    },
    /// A snapshot: taken when the coordinator holds every store (see `crate::snapshot`).
    Snapshot(Arc<SnapJob>),
}

/// The entries an index being created gives the evicted tuples of its table, by
/// partition ([`MpWork::Ddl`]); each partition takes its own into the index it builds.
pub(crate) struct EvictedKeys {
    pub(crate) table: TableId,
    /// The index's name.
    pub(crate) index: String,
    /// `None` where nothing was read (nothing was evicted, or no such table).
    pub(crate) by_partition: Vec<Mutex<Option<EvictedEntries>>>,
    /// What the entries take, counted in the statement pool while they are held.
    pub(crate) _held: Vec<Reservation>,
}

impl EvictedKeys {
    /// Takes partition `p`'s entries, if these are the entries of `schema`'s last index.
    pub(crate) fn take(&self, schema: &TableSchema, p: u32) -> Option<EvictedEntries> {
        let same = schema.id == self.table && schema.indexes.last().is_some_and(|d| d.name == self.index);
        if !same {
            return None;
        }
        self.by_partition
            .get(p as usize)?
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

type Channel<T> = (Sender<T>, Receiver<T>);

/// A multi-partition transaction, shared by the partitions it involves.
pub(crate) struct MpTxn {
    /// Its place in the global multi-partition order, given when it is queued
    /// (`Shared::enqueue_mp`); 0 for one run on its caller's thread (cell.rs).
    pub ts: u64,
    pub work: MpWork,
    /// Partitions involved, ascending; the first coordinates.
    pub parts: Vec<u32>,
    pub reply: Mutex<Option<Reply>>,
    /// Per partition (as `parts`): fenced, so the coordinator takes its token instead of
    /// its thread handing the store over (fence.rs); set when it is queued.
    pub(super) fenced: Vec<bool>,
    /// The fences to lift once it has run, or when it is dropped without running (a
    /// shutdown): no partition waits for a transaction that will never come.
    pub(super) fences: Mutex<Vec<Arc<QueueState>>>,
    pub(super) handoff: Channel<(u32, Box<PartitionStore>)>,
    pub(super) returns: Vec<Channel<Box<PartitionStore>>>,
    /// The sequence values an earlier attempt drew (as [`Invocation::drawn`]).
    pub(super) drawn: Mutex<Vec<(u32, i64)>>,
    /// A read-only statement that reached more evicted data than its partitions may bring
    /// back (or many evicted tuples, or kept reaching more): it runs in a forked reader
    /// that reads the evicted tuples where they lie (`forked::move_off_reading`), and as
    /// [`InPlace`] says when every reader's turn is taken. `None`: it runs as usual.
    pub(super) reads_in_place: Mutex<Option<InPlace>>,
    /// Set when its move to a reader was declined ([`InPlace::OrRun`]): should it reach
    /// evicted data, it brings it back (resubmitted to move again, it would go round
    /// without a fetch until a reader's turn came).
    pub(super) no_reader: std::sync::atomic::AtomicBool,
    /// With `reads_in_place`: each partition's blocks, taken while the coordinator
    /// holds it (participants add theirs before they hand their store over).
    pub(super) views: Mutex<Vec<(u32, permafrost_anticache::view::BlockView)>>,
}

/// What a multi-partition read moved to a forked reader that reads the evicted tuples
/// where they lie ([`MpTxn::reads_in_place`]) does when every reader's turn is taken.
pub(crate) enum InPlace {
    /// Fails with this error (it needs more than may come back, or kept reaching more).
    OrFail(crate::error::Error),
    /// Runs as usual, bringing back what it reaches (it only reached many tuples).
    OrRun,
}

impl MpTxn {
    pub(crate) fn new(work: MpWork, parts: Vec<u32>, reply: Reply) -> MpTxn {
        let n = parts.len();
        MpTxn {
            ts: 0,
            work,
            returns: (0..n).map(|_| crossbeam_channel::bounded(1)).collect(),
            fenced: vec![false; n],
            fences: Mutex::new(Vec::new()),
            parts,
            reply: Mutex::new(Some(reply)),
            handoff: crossbeam_channel::bounded(n),
            drawn: Mutex::new(Vec::new()),
            reads_in_place: Mutex::new(None),
            no_reader: std::sync::atomic::AtomicBool::new(false),
            views: Mutex::new(Vec::new()),
        }
    }

    /// Lifts its fences (fence.rs): it ran, or never will.
    pub(super) fn lift_fences(&self) {
        let fences = match self.fences.lock() {
            Ok(mut f) => std::mem::take(&mut *f),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        };
        for f in fences {
            f.lift();
        }
    }

    pub(super) fn take_reply(&self) -> Reply {
        self.reply
            .lock()
            .map(|mut r| r.take())
            .ok()
            .flatten()
            .unwrap_or(Reply::None)
    }
}

impl Drop for MpTxn {
    fn drop(&mut self) {
        self.lift_fences();
    }
}

/// A multi-partition transaction waiting for evicted data at several partitions.
pub(crate) struct MpFetch {
    pub(super) remaining: AtomicUsize,
    pub(super) error: Mutex<Option<Error>>,
    pub(super) retry: Mutex<Option<MpRetry>>,
}

pub(super) struct MpRetry {
    pub(super) proc: Arc<Procedure>,
    pub(super) params: Arc<[Value]>,
    pub(super) restarts: u32,
    pub(super) replay: Option<Replayed>,
    pub(super) parts: Vec<u32>,
    pub(super) reply: Reply,
}
