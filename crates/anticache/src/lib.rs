//! Permafrost anti-cache: when a partition's data outgrows its share of the memory budget,
//! its coldest tuples move to blocks on disk, and come back when a transaction needs them
//! (anti-caching.txt §3; larger-than-memory-storage.txt §3–4 for the policies).
//!
//! ```text
//! memory over eviction_threshold x budget
//!   -> evict::evict: coldest tuples (access tracker) -> blocks -> one group write
//!      -> tombstones in memory, index entries re-pointed, tuple memory freed
//! transaction reaches a tombstone (pre-pass records it, transaction rolls back)
//!   -> AntiCache::resolve: tombstones -> blocks
//!   -> abort-restart: AntiCache::request -> fetch::Fetcher (io_uring) -> on_fetched
//!      -> merge_staged at a safe point -> the partition restarts the parked transaction
//!   -> synchronous: AntiCache::fetch_sync reads and merges on the partition thread
//! ```
//!
//! One [`AntiCache`] belongs to one partition and is used only by its thread. The parked
//! transactions themselves are the executor's business; this crate tells it which blocks a
//! transaction waits for and which have been merged.

pub mod block;
pub mod buf;
pub mod clock;
pub mod error;
pub mod evict;
pub mod fetch;
pub mod file;
pub mod merge;
pub mod store;

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use permafrost_storage::{AccessTracker, LruChain, PartitionStore, TableId};

pub use buf::{AlignedBuf, BufPool};
pub use error::{AntiCacheError, Result};
pub use evict::EvictStats;
pub use fetch::{Done, FetchRequest, Fetcher};
pub use merge::{MergePolicy, MergeStats};
pub use store::{BlockMeta, BlockStore, StoreStats};

/// How a transaction that needs evicted data gets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retrieval {
    /// Roll back, fetch in the background, merge, restart; the partition keeps running.
    AbortRestart,
    /// Read the blocks on the partition thread, merge, restart at once.
    Synchronous,
}

impl Retrieval {
    pub fn name(&self) -> &'static str {
        match self {
            Retrieval::AbortRestart => "abort-restart",
            Retrieval::Synchronous => "synchronous",
        }
    }
}

/// Which tuples count as cold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColdPolicy {
    /// The LRU chain through tuple headers (the paper's).
    Lru,
    /// A CLOCK reference bit.
    Clock,
}

impl ColdPolicy {
    /// A tracker for one evictable table.
    pub fn tracker(self) -> Box<dyn AccessTracker> {
        match self {
            ColdPolicy::Lru => Box::new(LruChain::new()),
            ColdPolicy::Clock => Box::new(clock::Clock::new()),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ColdPolicy::Lru => "lru",
            ColdPolicy::Clock => "clock",
        }
    }
}

pub const MIN_BLOCK_SIZE: usize = 1 << 10;
pub const MAX_BLOCK_SIZE: usize = 4 << 20;
/// The default eviction block size. Chosen by measuring this project's development disk
/// (`permafrost bench device`, docs/results/device.md): 4 KiB blocks give the most blocks per
/// second (random reads), and a tuple fetch reads no more than one device page.
pub const DEFAULT_BLOCK_SIZE: usize = 4 << 10;

/// Anti-cache settings (validated by [`AntiCacheConfig::validate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AntiCacheConfig {
    /// Directory for the block files (one per partition).
    pub dir: PathBuf,
    /// `eviction_block_size`: bytes per block, 1 KiB ..= 4 MiB.
    pub block_size: usize,
    /// `eviction_threshold`: fraction of a partition's memory share at which eviction
    /// starts, 0.1 ..= 0.99.
    pub eviction_threshold: f64,
    /// `eviction_size`: bytes evicted per round beyond what brings memory back under the
    /// threshold, >= one block.
    pub eviction_size: u64,
    /// `eviction_check_interval`: how often, at most, a partition checks its memory.
    pub eviction_check_interval: std::time::Duration,
    pub retrieval: Retrieval,
    pub merge: MergePolicy,
    pub cold_policy: ColdPolicy,
    /// Block reads kept in flight by the fetcher.
    pub fetch_depth: u32,
}

impl AntiCacheConfig {
    pub fn new(dir: impl Into<PathBuf>) -> AntiCacheConfig {
        AntiCacheConfig {
            dir: dir.into(),
            block_size: DEFAULT_BLOCK_SIZE,
            eviction_threshold: 0.9,
            eviction_size: 1 << 20,
            eviction_check_interval: std::time::Duration::from_millis(1),
            retrieval: Retrieval::AbortRestart,
            merge: MergePolicy::Tuple { hole_threshold: 0.5 },
            cold_policy: ColdPolicy::Lru,
            fetch_depth: 128,
        }
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |setting: &'static str, message: String| Err(AntiCacheError::Config { setting, message });
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&self.block_size) {
            return bad(
                "eviction_block_size",
                format!("must be between 1KiB and 4MiB, got {} bytes", self.block_size),
            );
        }
        if !(0.1..=0.99).contains(&self.eviction_threshold) {
            return bad(
                "eviction_threshold",
                format!("must be between 0.1 and 0.99, got {}", self.eviction_threshold),
            );
        }
        if self.eviction_size < self.block_size as u64 {
            return bad(
                "eviction_size",
                format!("must be at least one block ({} bytes)", self.block_size),
            );
        }
        if self.eviction_check_interval > std::time::Duration::from_secs(60) {
            return bad("eviction_check_interval", "must be at most 60s".into());
        }
        if let MergePolicy::Tuple { hole_threshold } = self.merge
            && !(0.0..=1.0).contains(&hole_threshold)
        {
            return bad(
                "merge_hole_threshold",
                format!("must be between 0.0 and 1.0, got {hole_threshold}"),
            );
        }
        if !(1..=4096).contains(&self.fetch_depth) {
            return bad(
                "fetch_depth",
                format!("must be between 1 and 4096, got {}", self.fetch_depth),
            );
        }
        Ok(())
    }
}

/// Counters of one partition's anti-cache.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct AntiCacheStats {
    pub evictions: u64,
    pub evicted_tuples: u64,
    pub evicted_bytes: u64,
    pub unevicted_tuples: u64,
    pub blocks_written: u64,
    pub blocks_read: u64,
    pub blocks_live: u64,
    pub file_bytes: u64,
    pub fetch_errors: u64,
}

/// A tuple a transaction needs: the block it is in and its tombstone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Need {
    pub block: u32,
    pub table: TableId,
    pub tombstone: u32,
}

/// One partition's anti-cache.
pub struct AntiCache {
    cfg: AntiCacheConfig,
    store: BlockStore,
    fetcher: Arc<Fetcher>,
    done: Done,
    /// Blocks being read, with the tombstones transactions asked for.
    in_flight: HashMap<u32, Vec<u32>>,
    in_flight_bytes: usize,
    /// Blocks read and not yet merged.
    staged: Vec<(u32, io::Result<AlignedBuf>, Vec<u32>)>,
    staged_bytes: usize,
    /// Block-sized buffers for eviction and reads.
    pool: BufPool,
    stats: AntiCacheStats,
}

impl AntiCache {
    /// Creates partition `partition`'s anti-cache with an empty block file. `done` is
    /// called (on the fetcher's thread) with every completed asynchronous read; the
    /// executor forwards it to the partition, which passes it to [`AntiCache::on_fetched`].
    pub fn new(partition: u32, cfg: AntiCacheConfig, fetcher: Arc<Fetcher>, done: Done) -> Result<AntiCache> {
        cfg.validate()?;
        let path = cfg.dir.join(format!("partition-{partition}.blocks"));
        let store = BlockStore::create(&path, cfg.block_size)?;
        Ok(AntiCache::with_store(cfg, store, fetcher, done))
    }

    /// An anti-cache over a given block store (tests use in-memory files).
    pub fn with_store(cfg: AntiCacheConfig, store: BlockStore, fetcher: Arc<Fetcher>, done: Done) -> AntiCache {
        // Idle buffers kept: enough for an eviction round or a full fetch queue.
        let keep = ((cfg.eviction_size as usize / store.slot_size()) + 1).max(cfg.fetch_depth as usize);
        AntiCache {
            pool: BufPool::new(store.slot_size(), keep),
            cfg,
            store,
            fetcher,
            done,
            in_flight: HashMap::new(),
            in_flight_bytes: 0,
            staged: Vec::new(),
            staged_bytes: 0,
            stats: AntiCacheStats::default(),
        }
    }

    pub fn config(&self) -> &AntiCacheConfig {
        &self.cfg
    }

    pub fn block_store(&self) -> &BlockStore {
        &self.store
    }

    pub fn block_store_mut(&mut self) -> &mut BlockStore {
        &mut self.store
    }

    pub fn stats(&self) -> AntiCacheStats {
        let s = &self.store.stats;
        AntiCacheStats {
            blocks_written: s.blocks_written,
            blocks_read: s.blocks_read,
            blocks_live: self.store.live_blocks() as u64,
            file_bytes: self.store.file_bytes(),
            ..self.stats
        }
    }

    /// Memory the anti-cache itself holds: directory, free list, read buffers.
    pub fn memory_bytes(&self) -> u64 {
        (self.store.memory_bytes()
            + self.in_flight_bytes
            + self.staged_bytes
            + self.pool.memory_bytes()
            + self.in_flight.capacity() * 48) as u64
    }

    /// Whether reads are outstanding or blocks wait to be merged.
    pub fn busy(&self) -> bool {
        !self.in_flight.is_empty() || !self.staged.is_empty()
    }

    pub fn has_staged(&self) -> bool {
        !self.staged.is_empty()
    }

    /// Maps evicted tuples (table, tombstone) reached by a transaction to their blocks.
    /// Tombstones that no longer exist (their tuple was merged meanwhile) are skipped.
    /// Fails if the transaction needs more than half of `budget` bytes back at once.
    pub fn resolve(
        &self,
        store: &PartitionStore,
        refs: impl IntoIterator<Item = (TableId, u32)>,
        budget: u64,
    ) -> Result<Vec<Need>> {
        let mut needs: Vec<Need> = Vec::new();
        let mut bytes = 0u64;
        for (table, tombstone) in refs {
            let Some(t) = store.table(table) else { continue };
            if let Some(at) = t.tombstones().get(tombstone) {
                needs.push(Need {
                    block: at.block,
                    table,
                    tombstone,
                });
                bytes += t.heap().slot_size() as u64;
            }
        }
        needs.sort_unstable();
        needs.dedup();
        if bytes > budget / 2 {
            return Err(AntiCacheError::TooLarge {
                tuples: needs.len(),
                bytes,
                budget,
            });
        }
        Ok(needs)
    }

    /// Starts reading the blocks `needs` are in (those not already being read) and
    /// returns the distinct blocks to wait for.
    pub fn request(&mut self, needs: &[Need]) -> Vec<u32> {
        let mut blocks: Vec<u32> = Vec::new();
        for n in needs {
            if !blocks.contains(&n.block) {
                blocks.push(n.block);
            }
            match self.in_flight.get_mut(&n.block) {
                Some(req) => {
                    if !req.contains(&n.tombstone) {
                        req.push(n.tombstone);
                    }
                }
                None => {
                    let Some((offset, len)) = self.store.location(n.block) else {
                        // Freed meanwhile (merged whole): nothing to wait for; a staged
                        // empty result lets the waiter restart.
                        self.staged
                            .push((n.block, Err(io::Error::other("block already merged")), vec![]));
                        continue;
                    };
                    self.in_flight.insert(n.block, vec![n.tombstone]);
                    self.in_flight_bytes += len;
                    self.fetcher.submit(FetchRequest {
                        file: self.store.file().clone(),
                        block: n.block,
                        offset,
                        buf: self.pool.take(len),
                        done: self.done.clone(),
                    });
                }
            }
        }
        blocks
    }

    /// A read finished (called on the partition thread).
    pub fn on_fetched(&mut self, block: u32, result: io::Result<AlignedBuf>) {
        let requested = self.in_flight.remove(&block).unwrap_or_default();
        if let Some((_, len)) = self.store.location(block) {
            self.in_flight_bytes = self.in_flight_bytes.saturating_sub(len);
        }
        if let Ok(b) = &result {
            self.staged_bytes += b.len();
            self.store.note_read(b.len());
        }
        self.staged.push((block, result, requested));
    }

    /// Merges every staged block into `store`; returns each block with the outcome (the
    /// executor restarts, or fails, the transactions waiting for it).
    pub fn merge_staged(&mut self, store: &mut PartitionStore) -> Vec<(u32, Result<MergeStats>)> {
        let staged = std::mem::take(&mut self.staged);
        self.staged_bytes = 0;
        let mut out = Vec::with_capacity(staged.len());
        for (block, result, requested) in staged {
            let r = match result {
                Ok(buf) => {
                    let r = merge::merge_block(store, &mut self.store, block, &buf, &requested, self.cfg.merge);
                    self.pool.give(buf);
                    r
                }
                // The block was merged whole before this request: nothing to do.
                Err(_) if self.store.meta(block).is_none() => Ok(MergeStats::default()),
                Err(e) => {
                    self.stats.fetch_errors += 1;
                    Err(AntiCacheError::io("read", self.store.file().path(), &e))
                }
            };
            if let Ok(m) = &r {
                self.stats.unevicted_tuples += m.merged as u64;
            }
            out.push((block, r));
        }
        out
    }

    /// Synchronous retrieval: reads the blocks of `needs` on this thread and merges them.
    pub fn fetch_sync(&mut self, store: &mut PartitionStore, needs: &[Need]) -> Result<()> {
        let mut blocks: Vec<u32> = needs.iter().map(|n| n.block).collect();
        blocks.dedup();
        for b in blocks {
            if self.store.meta(b).is_none() {
                continue;
            }
            let requested: Vec<u32> = needs.iter().filter(|n| n.block == b).map(|n| n.tombstone).collect();
            let buf = self.store.read_into(b, self.pool.take(self.store.slot_size()))?;
            let m = merge::merge_block(store, &mut self.store, b, &buf, &requested, self.cfg.merge);
            self.pool.give(buf);
            let m = m?;
            self.stats.unevicted_tuples += m.merged as u64;
        }
        Ok(())
    }

    /// Evicts if `used` bytes exceed the threshold of `share`: enough to get back under
    /// it plus `eviction_size`. Returns what was evicted, if anything.
    pub fn maybe_evict(
        &mut self,
        store: &mut PartitionStore,
        used: u64,
        share: u64,
        now_micros: i64,
    ) -> Result<Option<EvictStats>> {
        let threshold = (self.cfg.eviction_threshold * share as f64) as u64;
        if used <= threshold {
            return Ok(None);
        }
        let target = used - threshold + self.cfg.eviction_size;
        self.evict(store, target, now_micros).map(Some)
    }

    /// Evicts about `target` bytes now.
    pub fn evict(&mut self, store: &mut PartitionStore, target: u64, now_micros: i64) -> Result<EvictStats> {
        let s = evict::evict(store, &mut self.store, &mut self.pool, target, now_micros)?;
        if s.tuples > 0 {
            self.stats.evictions += 1;
            self.stats.evicted_tuples += s.tuples;
            self.stats.evicted_bytes += s.bytes;
        }
        Ok(s)
    }

    /// Frees the blocks of a dropped table.
    pub fn drop_table(&mut self, table: TableId) {
        self.store.drop_table(table);
    }

    /// Frees the blocks of every table not in `tables` (they were dropped).
    pub fn drop_missing_tables(&mut self, tables: &[TableId]) {
        for t in self.store.tables() {
            if !tables.contains(&t) {
                self.store.drop_table(t);
            }
        }
    }
}
