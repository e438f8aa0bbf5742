//! Permafrost anti-cache: when a partition's data outgrows its share of the memory budget,
//! its coldest tuples move to blocks on disk, and come back when a transaction needs them
//! (DeBrabant et al. 2013 §3; Ma et al. 2016 §3–4 for the policies).
//!
//! ```text
//! memory over eviction_threshold x budget
//!   -> evict::evict: coldest tuples (access tracker) -> blocks -> one group write
//!      -> tombstones in memory, index entries re-pointed, tuple memory freed
//!      -> blocks written asynchronously by blockio::BlockIo -> on_written
//! transaction reaches a tombstone (pre-pass records it, transaction rolls back)
//!   -> AntiCache::resolve: tombstones -> blocks
//!   -> abort-restart: AntiCache::request -> blockio::BlockIo (io_uring) -> on_fetched
//!      -> merge_staged at a safe point -> the partition restarts the parked transaction
//!   -> synchronous: AntiCache::fetch_sync reads and merges on the partition thread
//! ```
//!
//! One [`AntiCache`] belongs to one partition and is used only by its thread. The parked
//! transactions themselves are the executor's business; this crate tells it which blocks a
//! transaction waits for and which have been merged.

pub mod block;
pub mod blockio;
pub mod buf;
pub mod clock;
pub mod error;
pub mod evict;
pub mod file;
pub mod fuzzing;
mod index_read;
pub mod merge;
mod scan;
mod scan_read;
pub mod store;
pub mod view;

use permafrost_io::Fs;
use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use permafrost_storage::{AccessTracker, LruChain, PartitionStore, TableId};

pub use blockio::{BlockIo, ReadDone, ReadRequest, WriteDone, WriteRequest};
pub use buf::{AlignedBuf, BufPool};
pub use error::{AntiCacheError, Result};
pub use evict::EvictStats;
pub use merge::{MergePolicy, MergeStats};
pub use scan::{BlockBytes, SCAN_READ_BYTES, ScanDone, ScanHold};
pub use store::{BlockMeta, BlockStore, DirectoryDelta, StoreStats};

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

/// Threads reading blocks at once in [`AntiCache::fetch_sync`].
const SYNC_READERS: usize = 16;

/// Largest single write call, in bytes and in buffers (Linux's IOV_MAX is 1024).
const MAX_WRITE_BYTES: usize = 4 << 20;
const MAX_WRITE_BLOCKS: usize = 1024;

/// Most bytes one memory check evicts ([`AntiCache::maybe_evict`]). Evicted tuples go into
/// block buffers before their slots are freed, and the heap gives its chunks back only when
/// the partition compacts after the round: a round that evicted all a big statement's
/// reservation asked for at once (110 MB of Voter's votes, for a grouping's 68 MB) held
/// the tuples twice, the server 110 MB past its bound for a moment, killed in its cgroup.
/// In steps, each compacted before the next and the next waiting for the writes (the
/// pending-write bound), the overshoot is one step.
pub const EVICTION_STEP: u64 = 16 << 20;

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
    /// Block reads and writes kept in flight by the I/O thread.
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
    /// Fetches served from a block still being written.
    pub reads_from_write_buffer: u64,
    pub blocks_live: u64,
    pub file_bytes: u64,
    pub fetch_errors: u64,
    pub write_errors: u64,
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
    io: Arc<BlockIo>,
    read_done: ReadDone,
    write_done: WriteDone,
    /// Blocks being read, with the tombstones transactions asked for.
    in_flight: HashMap<u32, Vec<u32>>,
    in_flight_bytes: usize,
    /// Blocks written but not yet confirmed on disk; reads are served from these buffers.
    writing: HashMap<u32, Arc<AlignedBuf>>,
    writing_bytes: usize,
    /// Retired blocks whose slots wait for their outstanding I/O before reuse.
    retired: HashMap<u32, u16>,
    /// Blocks read and not yet merged.
    staged: Vec<(u32, io::Result<AlignedBuf>, Vec<u32>)>,
    staged_bytes: usize,
    /// Block-sized buffers for eviction and reads.
    pool: BufPool,
    /// After a failed write, evictions pause until then.
    write_backoff: Option<std::time::Instant>,
    last_write_error: Option<AntiCacheError>,
    stats: AntiCacheStats,
    /// The newest snapshot that may refer to blocks retired from now on (the last one
    /// started, or the one recovered from); `None` before any.
    snapshot_hold: Option<u64>,
    /// Retired blocks whose slots a snapshot may still refer to: (the snapshot, block,
    /// span); reusable once a later snapshot has completed.
    held: Vec<(u64, u32, u16)>,
    /// Scans reading this partition's blocks without merging them ([`ScanHold`]): while
    /// any is running, no block's slots are reused.
    scans: ScanHold,
    /// Slots freed while scans ran: (block, span), reused once none runs.
    scan_held: Vec<(u32, u16)>,
}

/// What a snapshot keeps of one partition's anti-cache: the block directory (whole, or as
/// a difference from an earlier snapshot's) and the blocks whose writes were still in
/// flight (their bytes, since they may not be on disk yet).
#[derive(Clone)]
pub struct DirectoryImage {
    /// The block file (synced by the snapshot writer before the snapshot counts).
    pub file_path: Option<std::path::PathBuf>,
    pub slot_size: usize,
    pub file_slots: u32,
    /// The snapshot `directory` is a difference from; `None`: it is the whole directory.
    pub base: Option<u64>,
    /// Whole: every live block in `added`, `removed` empty.
    pub directory: DirectoryDelta,
    /// Live blocks (the size of the whole directory).
    pub live: u32,
    /// Blocks being written: id, span, bytes.
    pub pending: Vec<(u32, u16, Arc<AlignedBuf>)>,
}

impl AntiCache {
    /// Creates partition `partition`'s anti-cache with an empty block file. The callbacks
    /// are called on the I/O thread with every completed read and write; the executor
    /// forwards them to the partition, which passes them to [`AntiCache::on_fetched`] and
    /// [`AntiCache::on_written`].
    pub fn new(
        partition: u32,
        cfg: AntiCacheConfig,
        fs: &dyn Fs,
        io: Arc<BlockIo>,
        read_done: ReadDone,
        write_done: WriteDone,
    ) -> Result<AntiCache> {
        AntiCache::open_file(partition, cfg, fs, false, io, read_done, write_done)
    }

    /// The partition's block file (opened through `fs`), truncated or (`keep`) as it is,
    /// under a fresh directory.
    fn open_file(
        partition: u32,
        cfg: AntiCacheConfig,
        fs: &dyn Fs,
        keep: bool,
        io: Arc<BlockIo>,
        read_done: ReadDone,
        write_done: WriteDone,
    ) -> Result<AntiCache> {
        cfg.validate()?;
        let path = cfg.dir.join(format!("partition-{partition}.blocks"));
        let what = if keep { "open" } else { "create" };
        let file = fs
            .block_file(&path, keep)
            .map_err(|e| AntiCacheError::io(what, &path, &e))?;
        let store = BlockStore::with_file(file, cfg.block_size);
        Ok(AntiCache::with_store(cfg, store, io, read_done, write_done))
    }

    /// An anti-cache over a given block store (tests use in-memory files).
    pub fn with_store(
        cfg: AntiCacheConfig,
        store: BlockStore,
        io: Arc<BlockIo>,
        read_done: ReadDone,
        write_done: WriteDone,
    ) -> AntiCache {
        // Idle buffers kept: enough for the writes of the rounds that may be pending (two,
        // see `maybe_evict`, and the one being built) and a full fetch queue, so steady
        // traffic never maps or unmaps buffers (each unmap interrupts every core).
        let keep = 3 * (cfg.eviction_size as usize).div_ceil(store.slot_size()) + cfg.fetch_depth as usize;
        AntiCache {
            pool: BufPool::new(store.slot_size(), keep),
            cfg,
            store,
            io,
            read_done,
            write_done,
            in_flight: HashMap::new(),
            in_flight_bytes: 0,
            writing: HashMap::new(),
            writing_bytes: 0,
            retired: HashMap::new(),
            staged: Vec::new(),
            staged_bytes: 0,
            write_backoff: None,
            last_write_error: None,
            stats: AntiCacheStats::default(),
            snapshot_hold: None,
            held: Vec::new(),
            scans: ScanHold::default(),
            scan_held: Vec::new(),
        }
    }

    /// Creates partition `partition`'s anti-cache over its existing block file (kept for
    /// a snapshot to be restored with [`AntiCache::restore`]); the directory starts empty.
    pub fn open_existing(
        partition: u32,
        cfg: AntiCacheConfig,
        fs: &dyn Fs,
        io: Arc<BlockIo>,
        read_done: ReadDone,
        write_done: WriteDone,
    ) -> Result<AntiCache> {
        AntiCache::open_file(partition, cfg, fs, true, io, read_done, write_done)
    }

    /// The directory (whole, or as a difference from snapshot `base`'s, which must have
    /// been started by this anti-cache) and the in-flight blocks, for a snapshot taken now
    /// (between transactions).
    pub fn directory_image(&self, base: Option<u64>) -> DirectoryImage {
        let directory = match base {
            Some(b) => self.store.delta_since(b),
            None => DirectoryDelta {
                added: self.store.live().collect(),
                removed: Vec::new(),
            },
        };
        DirectoryImage {
            file_path: Some(self.store.file().path().to_path_buf()),
            slot_size: self.store.slot_size(),
            file_slots: self.store.file_slots(),
            base,
            directory,
            live: self.store.live_blocks(),
            pending: self
                .writing
                .iter()
                .filter_map(|(&b, buf)| Some((b, self.store.meta(b)?.span, buf.clone())))
                .collect(),
        }
    }

    /// Restores the directory a snapshot saved (taken with slots of `slot_size` bytes),
    /// writes the blocks that were in flight then (`pending`: id and bytes) and syncs the
    /// file. Blocks that snapshot refers to are not reused until a later snapshot
    /// completes (`epoch`: the snapshot's). Only on a fresh anti-cache.
    pub fn restore(
        &mut self,
        epoch: u64,
        slot_size: usize,
        file_slots: u32,
        blocks: &[(u32, BlockMeta)],
        pending: &[(u32, Vec<u8>)],
    ) -> Result<()> {
        let file = self.store.file().clone();
        let corrupt = |what: String| AntiCacheError::Corrupt { block: 0, what };
        if self.store.live_blocks() > 0 || !self.writing.is_empty() {
            return Err(corrupt(
                "a snapshot can only be restored into an empty anti-cache".into(),
            ));
        }
        if slot_size != self.store.slot_size() {
            return Err(corrupt(format!(
                "the snapshot's blocks are {slot_size} bytes per slot, this block file has {} \
                 (eviction_block_size or the device changed since the snapshot)",
                self.store.slot_size()
            )));
        }
        let need = file_slots as u64 * slot_size as u64;
        if let Ok(len) = file.len()
            && len < need
        {
            return Err(corrupt(format!(
                "block file {} holds {len} bytes, the snapshot needs {need}",
                file.path().display(),
            )));
        }
        let mut store = BlockStore::restore(file.clone(), self.cfg.block_size, file_slots, blocks)?;
        for (id, bytes) in pending {
            let Some(m) = store.meta(*id) else { continue };
            let len = m.span as usize * slot_size;
            if bytes.len() != len {
                return Err(corrupt(format!(
                    "saved block {id} has {} bytes, its directory entry says {len}",
                    bytes.len()
                )));
            }
            let mut buf = AlignedBuf::new(len);
            buf.copy_from_slice(bytes);
            store.write_now(*id, &[&buf])?;
        }
        file.sync().map_err(|e| AntiCacheError::io("sync", file.path(), &e))?;
        self.store = store;
        self.store.set_epoch(epoch);
        self.snapshot_hold = Some(epoch);
        Ok(())
    }

    /// After a restore, once every table's tombstones are back: sets each block's count of
    /// merged-back tuples to its tuples minus the tombstones still pointing into it (a
    /// snapshot does not save the counts, which change after a block is written), and
    /// retires blocks no tombstone points into. Fails if a tombstone points outside the
    /// live blocks of its table.
    pub fn recount_holes(&mut self, store: &PartitionStore) -> Result<()> {
        let mut live = vec![0u32; self.store.file_slots() as usize];
        for t in store.tables() {
            let table = t.schema().id;
            for (id, at) in t.tombstones().iter() {
                let ok = self
                    .store
                    .meta(at.block)
                    .is_some_and(|m| m.table as u32 == table && at.offset < m.tuples as u32);
                if !ok {
                    return Err(AntiCacheError::Corrupt {
                        block: at.block,
                        what: format!(
                            "tombstone {id} of table \"{}\" points at tuple {} of a block the snapshot's \
                             directory does not hold for it",
                            t.schema().name,
                            at.offset
                        ),
                    });
                }
                live[at.block as usize] += 1;
            }
        }
        let blocks: Vec<(u32, BlockMeta)> = self.store.live().collect();
        for (b, m) in blocks {
            let n = live[b as usize];
            if n == 0 {
                self.retire(b);
            } else {
                self.store.set_holes(b, (m.tuples as u32).saturating_sub(n) as u16);
            }
        }
        Ok(())
    }

    /// A snapshot began (between transactions): blocks retired from now on stay unused
    /// until a later snapshot completes.
    pub fn snapshot_started(&mut self, epoch: u64) {
        self.snapshot_hold = Some(epoch);
        self.store.set_epoch(epoch);
    }

    /// Snapshot `epoch` is complete: blocks only older snapshots refer to are reusable.
    /// `base`: it holds the whole directory, and later snapshots' differences are taken
    /// from it.
    pub fn snapshot_completed(&mut self, epoch: u64, base: bool) {
        if base {
            self.store.forget_removed_before(epoch);
        }
        let mut i = 0;
        while i < self.held.len() {
            let (tag, block, span) = self.held[i];
            if tag < epoch {
                self.held.swap_remove(i);
                self.free_slots(block, span);
            } else {
                i += 1;
            }
        }
    }

    pub fn config(&self) -> &AntiCacheConfig {
        &self.cfg
    }

    pub fn block_store(&self) -> &BlockStore {
        &self.store
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

    /// The last write failure, while evictions are paused because of it.
    pub fn write_error(&self) -> Option<&AntiCacheError> {
        match self.write_backoff {
            Some(until) if std::time::Instant::now() < until => self.last_write_error.as_ref(),
            _ => None,
        }
    }

    /// Memory of the block directory and free-space map.
    pub fn directory_bytes(&self) -> u64 {
        self.store.memory_bytes() as u64
    }

    /// Memory the anti-cache itself holds: directory, free-space map, I/O buffers.
    pub fn memory_bytes(&self) -> u64 {
        (self.store.memory_bytes()
            + self.in_flight_bytes
            + self.writing_bytes
            + self.staged_bytes
            + self.pool.memory_bytes()
            + (self.in_flight.capacity() + self.writing.capacity()) * 48
            + self.held.capacity() * std::mem::size_of::<(u64, u32, u16)>()) as u64
    }

    /// Gives the idle block buffers back to the system (the partition is over its budget:
    /// steady traffic would reuse them, but the budget comes first); the bytes freed.
    pub fn release_idle_buffers(&mut self) -> u64 {
        self.pool.release_idle() as u64
    }

    /// Whether reads or writes are outstanding or blocks wait to be merged.
    pub fn busy(&self) -> bool {
        !self.in_flight.is_empty() || !self.writing.is_empty() || !self.staged.is_empty()
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
        let mut past = 0usize;
        for (table, tombstone) in refs {
            let Some(t) = store.table(table) else { continue };
            if let Some(at) = t.tombstones().get(tombstone) {
                bytes += t.heap().slot_size() as u64;
                if bytes > budget / 2 {
                    // Refused whatever follows: counted, not listed (a read of millions of
                    // evicted tuples would list them all only to be refused).
                    past += 1;
                    continue;
                }
                needs.push(Need {
                    block: at.block,
                    table,
                    tombstone,
                });
            }
        }
        if past > 0 {
            return Err(AntiCacheError::TooLarge {
                tuples: needs.len() + past,
                bytes,
                budget,
            });
        }
        needs.sort_unstable();
        needs.dedup();
        // The blocks are read whole (into staging buffers, then merged): at least that much
        // comes into memory, and for tuples with values stored out of line (long text) far
        // more than their slots. Counting slots alone let a scan of a table of long rows
        // fetch the whole table, thrash and take the process far past its budget.
        let mut blocks = needs.iter().map(|n| n.block).collect::<Vec<_>>();
        blocks.dedup();
        bytes = bytes.max(blocks.len() as u64 * self.config().block_size as u64);
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
    /// returns the distinct blocks to wait for. A block still being written is "read" from
    /// its buffer at once.
    pub fn request(&mut self, needs: &[Need]) -> Vec<u32> {
        let mut blocks: Vec<u32> = Vec::new();
        for n in needs {
            if !blocks.contains(&n.block) {
                blocks.push(n.block);
            }
            if let Some(req) = self.in_flight.get_mut(&n.block) {
                if !req.contains(&n.tombstone) {
                    req.push(n.tombstone);
                }
                continue;
            }
            if let Some((_, _, req)) = self.staged.iter_mut().find(|s| s.0 == n.block) {
                if !req.contains(&n.tombstone) {
                    req.push(n.tombstone);
                }
                continue;
            }
            if let Some(buf) = self.writing.get(&n.block) {
                let mut copy = self.pool.take(buf.len());
                copy.copy_from_slice(buf);
                self.staged_bytes += copy.mapped_len();
                self.staged.push((n.block, Ok(copy), vec![n.tombstone]));
                self.stats.reads_from_write_buffer += 1;
                continue;
            }
            let Some((offset, len)) = self.store.location(n.block) else {
                // Retired meanwhile (merged whole): nothing to wait for.
                self.staged
                    .push((n.block, Err(io::Error::other("block already merged")), vec![]));
                continue;
            };
            self.in_flight.insert(n.block, vec![n.tombstone]);
            self.in_flight_bytes += buf::mapped_size(len);
            self.io.read(ReadRequest {
                file: self.store.file().clone(),
                block: n.block,
                offset,
                buf: self.pool.take(len),
                done: self.read_done.clone(),
            });
        }
        blocks
    }

    /// A read finished (called on the partition thread).
    pub fn on_fetched(&mut self, block: u32, result: io::Result<AlignedBuf>) {
        let requested = self.in_flight.remove(&block).unwrap_or_default();
        let len = result.as_ref().map_or(self.store.slot_size(), |b| b.len());
        self.in_flight_bytes = self.in_flight_bytes.saturating_sub(buf::mapped_size(len));
        if let Ok(b) = &result {
            self.staged_bytes += b.mapped_len();
            self.store.note_read(b.len());
        }
        self.staged.push((block, result, requested));
        self.release_if_idle(block);
    }

    /// A write finished (called on the partition thread). If it failed, the blocks' tuples
    /// go back into memory from their buffers and evictions pause for a second.
    pub fn on_written(&mut self, store: &mut PartitionStore, blocks: &[u32], result: io::Result<()>) -> Result<()> {
        let mut outcome = Ok(());
        if let Err(e) = &result {
            let err = AntiCacheError::io("write", self.store.file().path(), e);
            self.stats.write_errors += 1;
            self.write_backoff = Some(std::time::Instant::now() + std::time::Duration::from_secs(1));
            self.last_write_error = Some(err.clone());
            outcome = Err(err);
        }
        for &b in blocks {
            let Some(buf) = self.writing.remove(&b) else { continue };
            self.writing_bytes = self.writing_bytes.saturating_sub(buf.mapped_len());
            if result.is_err() && self.store.meta(b).is_some() {
                // Put every live tuple back; the block is then empty and retired.
                let m = merge::merge_block(store, &mut self.store, b, &buf, &[], MergePolicy::Block)?;
                self.stats.unevicted_tuples += m.merged as u64;
                self.retire(b);
            }
            if let Ok(buf) = Arc::try_unwrap(buf) {
                self.pool.give(buf);
            }
            self.release_if_idle(b);
        }
        outcome
    }

    /// Retires a block whose tuples are all back in memory; its slots are reused once no
    /// I/O of it is outstanding.
    fn retire(&mut self, block: u32) {
        if let Some(span) = self.store.retire(block) {
            self.retired.insert(block, span);
            self.release_if_idle(block);
        }
    }

    fn release_if_idle(&mut self, block: u32) {
        if self.in_flight.contains_key(&block) || self.writing.contains_key(&block) {
            return;
        }
        if let Some(span) = self.retired.remove(&block) {
            match self.snapshot_hold {
                Some(epoch) => self.held.push((epoch, block, span)),
                None => self.free_slots(block, span),
            }
        }
    }

    fn merge_one(
        &mut self,
        store: &mut PartitionStore,
        block: u32,
        buf: &[u8],
        requested: &[u32],
    ) -> Result<MergeStats> {
        let m = merge::merge_block(store, &mut self.store, block, buf, requested, self.cfg.merge)?;
        self.stats.unevicted_tuples += m.merged as u64;
        if m.retire {
            self.retire(block);
        }
        Ok(m)
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
                    let r = self.merge_one(store, block, &buf, &requested);
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
            out.push((block, r));
        }
        out
    }

    /// Synchronous retrieval: reads the blocks of `needs` on this thread and merges them.
    pub fn fetch_sync(&mut self, store: &mut PartitionStore, needs: &[Need]) -> Result<()> {
        let mut blocks: Vec<u32> = needs.iter().map(|n| n.block).collect();
        blocks.sort_unstable();
        blocks.dedup();
        blocks.retain(|&b| self.store.meta(b).is_some());
        // Blocks on disk are read in parallel (up to SYNC_READERS at once): replay reads
        // the blocks of many queued calls in one go.
        let on_disk: Vec<(u32, u64, usize)> = blocks
            .iter()
            .filter(|b| !self.writing.contains_key(b))
            .filter_map(|&b| self.store.location(b).map(|(off, len)| (b, off, len)))
            .collect();
        let mut bufs: Vec<AlignedBuf> = on_disk.iter().map(|&(_, _, len)| self.pool.take(len)).collect();
        for (buf, &(_, _, len)) in bufs.iter_mut().zip(&on_disk) {
            if buf.len() != len {
                *buf = AlignedBuf::new(len);
            }
        }
        let file = self.store.file().clone();
        let results: Vec<io::Result<()>> = if on_disk.len() <= 1 {
            bufs.iter_mut()
                .zip(&on_disk)
                .map(|(buf, &(_, off, _))| file.read_at(buf, off))
                .collect()
        } else {
            let per = on_disk.len().div_ceil(SYNC_READERS);
            std::thread::scope(|sc| {
                let handles: Vec<_> = bufs
                    .chunks_mut(per)
                    .zip(on_disk.chunks(per))
                    .map(|(bs, locs)| {
                        let file = &file;
                        sc.spawn(move || {
                            bs.iter_mut()
                                .zip(locs)
                                .map(|(buf, &(_, off, _))| file.read_at(buf, off))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| {
                        h.join()
                            .unwrap_or_else(|_| vec![Err(io::Error::other("block reader panicked"))])
                    })
                    .collect()
            })
        };
        let mut read: HashMap<u32, AlignedBuf> = HashMap::with_capacity(on_disk.len());
        let mut first_err = None;
        for ((buf, &(b, _, len)), r) in bufs.into_iter().zip(&on_disk).zip(results) {
            match r {
                Ok(()) => {
                    self.store.note_read(len);
                    read.insert(b, buf);
                }
                Err(e) => {
                    first_err.get_or_insert(AntiCacheError::io("read", file.path(), &e));
                    self.pool.give(buf);
                }
            }
        }
        if let Some(e) = first_err {
            for (_, buf) in read {
                self.pool.give(buf);
            }
            return Err(e);
        }
        let mut outcome = Ok(());
        for b in blocks {
            let requested: Vec<u32> = needs.iter().filter(|n| n.block == b).map(|n| n.tombstone).collect();
            let buf = match read.remove(&b) {
                Some(buf) => buf,
                None => match self.writing.get(&b) {
                    Some(w) => {
                        self.stats.reads_from_write_buffer += 1;
                        let mut copy = self.pool.take(w.len());
                        copy.copy_from_slice(w);
                        copy
                    }
                    None => continue,
                },
            };
            let m = if outcome.is_ok() {
                self.merge_one(store, b, &buf, &requested).map(|_| ())
            } else {
                Ok(())
            };
            self.pool.give(buf);
            if let Err(e) = m {
                outcome = Err(e);
            }
        }
        outcome
    }

    /// Bytes of evicted blocks still being written: memory that returns to the buffer pool
    /// (or to the OS) as soon as the writes complete.
    pub fn pending_write_bytes(&self) -> u64 {
        self.writing_bytes as u64
    }

    /// Evicts if `used` bytes, not counting blocks already on their way to disk, exceed
    /// the threshold of `share`: enough to get back under it plus `eviction_size`, at most
    /// [`EVICTION_STEP`] at a time. No more is evicted while two rounds' worth of blocks
    /// are still being written (the device sets the pace), nor for a while after a failed
    /// write. Returns what was evicted.
    pub fn maybe_evict(
        &mut self,
        store: &mut PartitionStore,
        used: u64,
        share: u64,
        now_micros: i64,
    ) -> Result<Option<EvictStats>> {
        let threshold = (self.cfg.eviction_threshold * share as f64) as u64;
        let pending = self.pending_write_bytes();
        let settled = used.saturating_sub(pending);
        if settled <= threshold || self.write_error().is_some() || pending > 2 * self.cfg.eviction_size {
            return Ok(None);
        }
        let target = (settled - threshold + self.cfg.eviction_size).min(EVICTION_STEP.max(self.cfg.eviction_size));
        self.evict(store, target, now_micros).map(Some)
    }

    /// Evicts about `target` bytes now; the blocks are written asynchronously.
    pub fn evict(&mut self, store: &mut PartitionStore, target: u64, now_micros: i64) -> Result<EvictStats> {
        let e = evict::evict(store, &mut self.store, &mut self.pool, target, now_micros)?;
        for g in e.groups {
            let mut start = g.start;
            let mut blocks = g.blocks.into_iter().peekable();
            while blocks.peek().is_some() {
                // One call writes at most MAX_WRITE_BYTES and MAX_WRITE_BLOCKS buffers (the
                // kernel refuses vectored writes of more than IOV_MAX = 1024 buffers).
                let mut chunk = Vec::new();
                let mut bytes = 0;
                while let Some((id, buf)) = blocks.next_if(|(_, b)| {
                    chunk.is_empty() || (chunk.len() < MAX_WRITE_BLOCKS && bytes + b.len() <= MAX_WRITE_BYTES)
                }) {
                    bytes += buf.len();
                    self.writing_bytes += buf.mapped_len();
                    self.writing.insert(id, buf.clone());
                    chunk.push((id, buf));
                }
                self.io.write(WriteRequest {
                    file: self.store.file().clone(),
                    offset: self.store.offset(start),
                    blocks: chunk,
                    done: self.write_done.clone(),
                });
                start += (bytes / self.store.slot_size()) as u32;
                self.store.stats.write_calls += 1;
            }
        }
        if e.stats.tuples > 0 {
            self.stats.evictions += 1;
            self.stats.evicted_tuples += e.stats.tuples;
            self.stats.evicted_bytes += e.stats.bytes;
        }
        Ok(e.stats)
    }

    /// Frees the blocks of every table not in `tables`: a table dropped, or one that holds
    /// no evicted tuple any more (its tuples moved to other partitions by a schema change,
    /// or all merged back), whose blocks hold nothing live.
    pub fn drop_missing_tables(&mut self, tables: &[TableId]) {
        for t in self.store.tables() {
            if !tables.contains(&t) {
                for b in self.store.blocks_of(t) {
                    self.retire(b);
                }
            }
        }
    }
}
