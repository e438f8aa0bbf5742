//! One partition's state: its store, anti-cache, parked transactions, log chunk and
//! counters ([`Partition`]), and how the command log's writer wakes it
//! ([`DurableSignal`]). The loop that drives it is run.rs.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use permafrost_anticache::AntiCache;
use permafrost_sql::{Catalog, EvictedRefs, Rows};
use permafrost_storage::PartitionStore;

use super::gates::Paced;
use super::msg::{Invocation, Msg};
use super::parking::Parking;
use crate::counters::PartitionStats;
use crate::error::{Error, Result};
use crate::reply::{Held, Outbox, Reply};
use crate::shared::Shared;

/// How the command log's writer tells a partition that records became durable: at most
/// one [`Msg::Durable`] in its queue at a time, however many records a group commit
/// covers.
pub(crate) struct DurableSignal {
    pub(super) scheduled: std::sync::atomic::AtomicBool,
    pub(super) error: std::sync::Mutex<Option<Error>>,
    tx: crossbeam_channel::Sender<Msg>,
}

impl DurableSignal {
    pub(super) fn notify(&self, r: std::result::Result<(), permafrost_durability::LogError>) {
        if let Err(e) = r
            && let Ok(mut slot) = self.error.lock()
            && slot.is_none()
        {
            *slot = Some(e.into());
        }
        if !self.scheduled.swap(true, Ordering::AcqRel) {
            let _ = self.tx.send(Msg::Durable);
        }
    }
}

/// One partition executor.
pub(crate) struct Partition {
    pub(crate) id: u32,
    pub(crate) store: Option<Box<PartitionStore>>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) stats: Arc<PartitionStats>,
    pub(crate) outbox: Outbox,
    pub(crate) evicted: EvictedRefs,
    pub(crate) ac: Option<AntiCache>,
    pub(crate) parking: Parking,
    /// Free string-heap memory left after the last compaction (what trimming could not
    /// give back): compaction runs again once the slack has grown past it.
    pub(crate) string_slack: u64,
    /// The same for the tuple heaps: each table's last chunk, part empty, stays (up to a
    /// huge page per table), so the slack never falls to zero.
    pub(crate) tuple_slack: u64,
    /// When the memory was last checked ([`Partition::wall`] microseconds: no clock is
    /// read for it, the check following every call).
    pub(crate) last_check: i64,
    pub(crate) last_catalog: Arc<Catalog>,
    /// This partition's own copy of [`crate::Config::temp_dir`] (what its transactions'
    /// queries spill to: [`crate::partition::txn::TxnInfo::spill`]), so that partitions do
    /// not share a reference count.
    pub(crate) spill_dir: Option<Arc<std::path::Path>>,
    pub(crate) wall: i64,
    pub(super) rng: u64,
    pub(super) sample_threshold: u64,
    pub(super) txn_seq: u64,
    pub(super) last_now: i64,
    pub(super) last_publish: Instant,
    /// Replayed calls held back behind one the memory budget refused, in log order
    /// (recovery: see `crate::recovery`).
    pub(crate) replay_stall: std::collections::VecDeque<Invocation>,
    /// Writes the memory budget refused, held until eviction makes room (pacing.rs).
    pub(crate) paced: Paced,
    /// Answers of read-only transactions that wait for records appended before them (by
    /// this partition in an earlier pass, or by others) to be durable (sync mode), by the
    /// LSN they wait for. Answers that wait for this partition's own pass go with its
    /// chunk instead (`flush_log`).
    pub(super) durable_wait: std::collections::VecDeque<(u64, Reply, Result<Rows>)>,
    pub(super) durable_signal: Arc<DurableSignal>,
    /// Records of this pass's commits, not yet appended to the log, and (sync mode) the
    /// answers that wait for them: they go with the chunk, and the log's writer sends them
    /// once it is durable (`flush_log`).
    pub(super) log_chunk: permafrost_durability::Chunk,
    pub(super) log_replies: Held,
    /// The highest LSN a log barrier was asked for (answers of read-only transactions
    /// waiting for other partitions' records).
    pub(super) barrier_lsn: u64,
    /// The thread running the partition now is the block I/O thread, handling a read
    /// that completed while the partition was free (cell.rs, [`PartitionCell::try_handle`]):
    /// the calls it restarts run there only if short, and for at most a slice.
    ///
    /// [`PartitionCell::try_handle`]: super::cell::PartitionCell::try_handle
    pub(crate) on_io_thread: bool,
}

impl Partition {
    pub(crate) fn new(id: u32, shared: Arc<Shared>, ac: Option<AntiCache>) -> Partition {
        let stats = shared.stats[id as usize].clone();
        let alpha = shared.config.lru_sample_rate;
        let sample_threshold = if alpha >= 1.0 {
            u64::MAX
        } else {
            (alpha * u64::MAX as f64) as u64
        };
        let last_catalog = shared.schema.load().catalog.clone();
        let durable_signal = Arc::new(DurableSignal {
            scheduled: std::sync::atomic::AtomicBool::new(false),
            error: std::sync::Mutex::new(None),
            tx: shared.senders[id as usize].clone(),
        });
        let spill_dir = shared.config.temp_dir.as_deref().map(Arc::from);
        Partition {
            spill_dir,
            id,
            store: Some(Box::new({
                let mut store = PartitionStore::new(id);
                store.set_partitions(shared.config.partitions);
                store.remember_writes(shared.write_clock.clone());
                store
            })),
            shared,
            stats,
            outbox: Outbox::default(),
            evicted: EvictedRefs::new(),
            ac,
            parking: Parking::default(),
            string_slack: 0,
            tuple_slack: 0,
            last_check: 0,
            last_catalog,
            wall: 0,
            rng: 0x2545_F491_4F6C_DD1D ^ (id as u64 + 1),
            sample_threshold,
            txn_seq: 0,
            last_now: 0,
            last_publish: Instant::now(),
            replay_stall: std::collections::VecDeque::new(),
            paced: Default::default(),
            durable_wait: std::collections::VecDeque::new(),
            durable_signal,
            log_chunk: permafrost_durability::Chunk::new(),
            log_replies: Held::default(),
            barrier_lsn: 0,
            on_io_thread: false,
        }
    }
}
