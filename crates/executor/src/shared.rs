//! State shared by the database handle and the partition executors: configuration, the
//! partitions' queues, the published schema, counters, and the multi-partition order.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use crossbeam_channel::Sender;
use permafrost_anticache::AntiCacheStats;
use permafrost_storage::{AccessTracker, LruChain, MemoryUsage};

use crate::config::Config;
use crate::partition::msg::Msg;
use crate::procedure::SchemaState;

/// Counters a partition publishes after each pass over its queue.
#[derive(Debug, Default)]
pub struct PartitionStats {
    pub committed: AtomicU64,
    pub aborted_user: AtomicU64,
    pub failed: AtomicU64,
    pub restarts_evicted: AtomicU64,
    pub restarts_schema: AtomicU64,
    pub mp_coordinated: AtomicU64,
    pub tuple_bytes: AtomicU64,
    pub tuple_used_bytes: AtomicU64,
    pub string_bytes: AtomicU64,
    pub index_bytes: AtomicU64,
    pub tombstone_bytes: AtomicU64,
    pub buffer_bytes: AtomicU64,
    /// Everything the anti-cache holds: block directory, free-space map, I/O buffers.
    pub anticache_bytes: AtomicU64,
    /// The block directory and free-space map alone (the per-block bookkeeping).
    pub directory_bytes: AtomicU64,
    pub evictions: AtomicU64,
    pub evicted_tuples: AtomicU64,
    pub evicted_bytes: AtomicU64,
    pub unevicted_tuples: AtomicU64,
    pub blocks_written: AtomicU64,
    pub blocks_read: AtomicU64,
    pub blocks_live: AtomicU64,
    pub block_file_bytes: AtomicU64,
    /// Tuples currently evicted.
    pub evicted_now: AtomicU64,
    /// Transactions waiting for evicted data.
    pub parked: AtomicU64,
    /// Time spent evicting (building and writing blocks), merging fetched blocks and
    /// compacting heaps, in nanoseconds.
    pub evict_nanos: AtomicU64,
    pub merge_nanos: AtomicU64,
    pub compact_nanos: AtomicU64,
}

impl PartitionStats {
    pub(crate) fn set_memory(&self, m: &MemoryUsage, anticache_bytes: u64, directory_bytes: u64) {
        self.tuple_bytes.store(m.tuple_bytes, Ordering::Relaxed);
        self.tuple_used_bytes.store(m.tuple_used_bytes, Ordering::Relaxed);
        self.string_bytes.store(m.string_bytes, Ordering::Relaxed);
        self.index_bytes.store(m.index_bytes, Ordering::Relaxed);
        self.tombstone_bytes.store(m.tombstone_bytes, Ordering::Relaxed);
        self.buffer_bytes.store(m.buffer_bytes, Ordering::Relaxed);
        self.anticache_bytes.store(anticache_bytes, Ordering::Relaxed);
        self.directory_bytes.store(directory_bytes, Ordering::Relaxed);
    }

    pub(crate) fn set_anticache(&self, s: &AntiCacheStats) {
        self.evictions.store(s.evictions, Ordering::Relaxed);
        self.evicted_tuples.store(s.evicted_tuples, Ordering::Relaxed);
        self.evicted_bytes.store(s.evicted_bytes, Ordering::Relaxed);
        self.unevicted_tuples.store(s.unevicted_tuples, Ordering::Relaxed);
        self.blocks_written.store(s.blocks_written, Ordering::Relaxed);
        self.blocks_read.store(s.blocks_read, Ordering::Relaxed);
        self.blocks_live.store(s.blocks_live, Ordering::Relaxed);
        self.block_file_bytes.store(s.file_bytes, Ordering::Relaxed);
    }

    pub fn memory(&self) -> MemoryUsage {
        MemoryUsage {
            tuple_bytes: self.tuple_bytes.load(Ordering::Relaxed),
            tuple_used_bytes: self.tuple_used_bytes.load(Ordering::Relaxed),
            string_bytes: self.string_bytes.load(Ordering::Relaxed),
            string_used_bytes: 0,
            index_bytes: self.index_bytes.load(Ordering::Relaxed),
            tombstone_bytes: self.tombstone_bytes.load(Ordering::Relaxed),
            buffer_bytes: self.buffer_bytes.load(Ordering::Relaxed),
        }
    }
}

/// State shared by the database handle and all partition executors.
pub(crate) struct Shared {
    pub config: Config,
    pub senders: Vec<Sender<Msg>>,
    pub stats: Vec<Arc<PartitionStats>>,
    pub schema: ArcSwap<SchemaState>,
    /// The next multi-partition timestamp; held while enqueueing one.
    pub mp_order: Mutex<u64>,
    /// Turns of the partitions at running statements that any partition can run.
    pub any_turn: std::sync::atomic::AtomicU32,
    /// The command log, when one is configured.
    pub log: Option<Arc<permafrost_durability::CommandLog>>,
    /// Per partition, the scans reading its blocks without merging them (scan.rs); `None`
    /// without an anti-cache.
    pub scan_holds: Vec<Option<permafrost_anticache::ScanHold>>,
    /// The memory running statements hold together ([`permafrost_sql::workmem`]); the
    /// partitions count it in the budget.
    pub statement_pool: Arc<permafrost_sql::workmem::MemoryPool>,
}

impl Shared {
    /// What running statements may hold together: half the memory budget, at least what
    /// one statement may hold.
    pub(crate) fn statement_pool_limit(memory_limit: u64) -> usize {
        usize::try_from(memory_limit / 2)
            .unwrap_or(usize::MAX)
            .max(crate::partition::txn::work_mem(memory_limit))
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
