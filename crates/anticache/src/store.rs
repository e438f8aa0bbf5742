//! The Block Table (DeBrabant et al. 2013 §3.1): one file of blocks per partition plus an
//! in-memory directory.
//!
//! The file is an array of equal *slots* of `slot_size` bytes (the eviction block size,
//! rounded up to the device's direct-I/O alignment). A block occupies one slot, or several
//! consecutive slots when a single tuple is larger than a slot; its id is its first slot's
//! number, so finding a block is a multiplication. The directory keeps, per slot, the table,
//! tuple count, hole count and span of the block starting there (8 bytes).
//!
//! Free space is a bitmap, one bit per slot (so its memory is 1/8 byte per slot whatever the
//! fragmentation). An eviction round takes free runs in file order from a rotating cursor
//! (next fit), so the round's blocks land in as few, as long runs as the free space allows
//! and each run is one sequential write; with no free space the round goes at the end of
//! the file in one run. While free space is scarce (under a quarter of the file) runs
//! shorter than [`MIN_PIECE`] slots are passed over: the file grows a little rather than a
//! round being scattered into many small writes, and those slots wait for their neighbours.
//!
//! Freeing is two steps: [`BlockStore::retire`] removes a block from the directory (no
//! tuple points to it any more), [`BlockStore::release`] makes its slots reusable. The
//! anti-cache releases a retired block only once no read or write of it is in flight, so an
//! outstanding I/O never meets a slot that was reused.
//!
//! For snapshots the store tags every block with the snapshot epoch in effect when it went
//! live, and (once snapshots are taken) logs retired blocks with their tags and the epoch of
//! their retirement, so that a snapshot can record the directory as a difference from an
//! earlier one ([`BlockStore::delta_since`]): blocks never change once written, so which
//! blocks were added and removed is all that changes.

use std::sync::Arc;

use permafrost_storage::alloc::{BigVec, big_vec};

use crate::buf::AlignedBuf;
use crate::error::{AntiCacheError, Result};
use crate::file::BlockFile;

/// What the directory knows about a block (8 bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockMeta {
    pub table: u16,
    pub tuples: u16,
    /// Tuples merged back into memory since the block was written (stale copies).
    pub holes: u16,
    /// Slots the block occupies; 0 means no block starts at this slot.
    pub span: u16,
}

/// Most tuples one block holds (the directory counts them in 16 bits).
pub const MAX_TUPLES_PER_BLOCK: u32 = u16::MAX as u32;
/// While free space is scarce, free runs shorter than this are not used.
pub const MIN_PIECE: u32 = 8;

/// Consecutive slots for consecutive blocks of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub start: u32,
    /// The blocks' ids (first slots), in order.
    pub ids: Vec<u32>,
}

/// Counters of one block store.
#[derive(Debug, Default, Clone, Copy)]
pub struct StoreStats {
    pub blocks_written: u64,
    pub blocks_read: u64,
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub blocks_freed: u64,
    pub write_calls: u64,
}

/// The live blocks of one table, kept up to date as blocks are written, merged and freed
/// (so per-table figures cost nothing to read).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TableBlocks {
    /// Live blocks.
    pub blocks: u64,
    /// Slots they occupy in the block file (times the slot size: bytes on disk).
    pub slots: u64,
    /// Tuples written into them.
    pub tuples: u64,
    /// Of those, tuples merged back since (stale copies, never read again).
    pub holes: u64,
}

pub struct BlockStore {
    file: Arc<dyn BlockFile>,
    block_size: usize,
    slot_size: usize,
    dir: BigVec<BlockMeta>,
    /// One bit per slot, set when the slot is free.
    free: Vec<u64>,
    free_slots: u64,
    /// Where the next search for free runs starts.
    cursor: u32,
    live_blocks: u32,
    /// Live blocks per table, indexed by table id.
    per_table: Vec<TableBlocks>,
    pub stats: StoreStats,
    /// The snapshot epoch in effect (the last snapshot started); `None` while no snapshot
    /// is taken, and then retired blocks are not logged.
    epoch: Option<u64>,
    /// Per slot: the epoch in effect when the block starting there went live (4 bytes:
    /// see [`BlockStore::set_epoch`]).
    born: BigVec<u32>,
    /// Retired blocks a directory difference may have to name, oldest first.
    removed: Vec<Removed>,
}

/// A retired block, for directory differences ([`BlockStore::delta_since`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Removed {
    block: u32,
    /// The epoch in effect when it went live, and when it was retired.
    born: u64,
    retired: u64,
}

/// How the directory changed since a snapshot: the blocks live now that were not live at
/// its cut, and the blocks live at its cut that are not live now. A slot may appear in both
/// (a block retired, its slots reused by a new one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectoryDelta {
    pub added: Vec<(u32, BlockMeta)>,
    pub removed: Vec<u32>,
}

impl BlockStore {
    /// An empty store over a block file (opened through the I/O seam's `Fs::block_file`;
    /// tests use an in-memory one).
    pub fn with_file(file: Arc<dyn BlockFile>, block_size: usize) -> BlockStore {
        let align = file.alignment().max(1);
        let slot_size = block_size.div_ceil(align) * align;
        BlockStore {
            file,
            block_size,
            slot_size,
            dir: big_vec(),
            free: Vec::new(),
            free_slots: 0,
            cursor: 0,
            live_blocks: 0,
            per_table: Vec::new(),
            stats: StoreStats::default(),
            epoch: None,
            born: big_vec(),
            removed: Vec::new(),
        }
    }

    /// A store over a file that already holds blocks (recovery from a snapshot): the
    /// file's first `file_slots` slots with `blocks` (id, directory entry) live in them,
    /// every other slot free. Fails, naming the problem, if the blocks overlap or lie
    /// beyond `file_slots`.
    pub fn restore(
        file: Arc<dyn BlockFile>,
        block_size: usize,
        file_slots: u32,
        blocks: &[(u32, BlockMeta)],
    ) -> Result<BlockStore> {
        let mut s = BlockStore::with_file(file, block_size);
        let bad = |detail: String| AntiCacheError::Corrupt {
            block: 0,
            what: format!("snapshot block directory: {detail}"),
        };
        s.grow(file_slots);
        s.mark(0, file_slots, true);
        s.free_slots = file_slots as u64;
        for &(id, meta) in blocks {
            let end = id as u64 + meta.span as u64;
            if meta.span == 0 || end > file_slots as u64 {
                return Err(bad(format!(
                    "block {id} (span {}) lies outside the {file_slots} slots of the file",
                    meta.span
                )));
            }
            if !(id..id + meta.span as u32).all(|i| s.is_free(i)) {
                return Err(bad(format!("block {id} overlaps another block")));
            }
            s.mark(id, meta.span as u32, false);
            s.free_slots -= meta.span as u64;
            s.set_live(id, meta, 0);
        }
        s.stats = StoreStats::default();
        Ok(s)
    }

    /// The live blocks with their directory entries, in file order.
    pub fn live(&self) -> impl Iterator<Item = (u32, BlockMeta)> + '_ {
        self.dir
            .iter()
            .enumerate()
            .filter(|(_, m)| m.span > 0)
            .map(|(i, m)| (i as u32, *m))
    }

    /// Slots of the file (in use or free).
    pub fn file_slots(&self) -> u32 {
        self.dir.len() as u32
    }

    pub fn file(&self) -> &Arc<dyn BlockFile> {
        &self.file
    }

    /// The configured block size.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Bytes one slot takes on disk.
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Slots needed for a block whose content is `bytes` long.
    pub fn span_for(&self, bytes: usize) -> u16 {
        bytes.div_ceil(self.slot_size).clamp(1, u16::MAX as usize) as u16
    }

    pub fn meta(&self, block: u32) -> Option<BlockMeta> {
        self.dir.get(block as usize).copied().filter(|m| m.span > 0)
    }

    pub fn live_blocks(&self) -> u32 {
        self.live_blocks
    }

    /// Byte offset of a slot in the file.
    pub fn offset(&self, slot: u32) -> u64 {
        slot as u64 * self.slot_size as u64
    }

    fn is_free(&self, slot: u32) -> bool {
        self.free[slot as usize / 64] >> (slot % 64) & 1 == 1
    }

    /// Marks `len` slots from `start` free (`free`) or used.
    fn mark(&mut self, start: u32, len: u32, free: bool) {
        let (mut i, end) = (start as usize, start as usize + len as usize);
        while i < end {
            let (w, b) = (i / 64, i % 64);
            let n = (64 - b).min(end - i);
            let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << b };
            if free {
                self.free[w] |= mask;
            } else {
                self.free[w] &= !mask;
            }
            i += n;
        }
    }

    /// The first free slot at or after `from` and before `end`.
    fn next_free(&self, from: u32, end: u32) -> Option<u32> {
        let mut i = from as usize;
        while i < end as usize {
            let w = self.free[i / 64] >> (i % 64);
            if w != 0 {
                let at = i + w.trailing_zeros() as usize;
                return (at < end as usize).then_some(at as u32);
            }
            i = (i / 64 + 1) * 64;
        }
        None
    }

    /// Length of the free run starting at `start` (a free slot), at most `max`.
    fn run_len(&self, start: u32, max: u32) -> u32 {
        let end = (start as u64 + max as u64).min(self.dir.len() as u64) as usize;
        let mut i = start as usize;
        while i < end {
            let w = !self.free[i / 64] >> (i % 64);
            if w != 0 {
                return ((i + w.trailing_zeros() as usize).min(end) - start as usize) as u32;
            }
            i = (i / 64 + 1) * 64;
        }
        (end - start as usize) as u32
    }

    /// Takes free runs in file order from the cursor until `need` slots are found or the
    /// whole file was searched; runs shorter than `min_piece` (unless they cover the rest of
    /// the need) are skipped.
    fn take_runs(&mut self, mut need: u32, min_piece: u32) -> Vec<(u32, u32)> {
        let mut pieces = Vec::new();
        let len = self.dir.len() as u32;
        let origin = self.cursor.min(len);
        let mut pos = origin;
        let mut wrapped = false;
        while need > 0 {
            let end = if wrapped { origin } else { len };
            let Some(start) = self.next_free(pos, end) else {
                if wrapped {
                    break;
                }
                wrapped = true;
                pos = 0;
                continue;
            };
            let run = self.run_len(start, (end - start).min(need));
            if run >= min_piece.min(need) {
                self.mark(start, run, false);
                self.free_slots -= run as u64;
                pieces.push((start, run));
                need -= run;
                self.cursor = start + run;
            }
            pos = start + run;
        }
        pieces
    }

    /// Places a group of blocks with the given spans in free runs found from the cursor
    /// (see the module documentation), growing the file for what they cannot hold. Returns
    /// the runs of consecutive slots, the blocks' ids in the order of `spans`.
    pub fn allocate(&mut self, spans: &[u16]) -> Vec<Run> {
        let singles = spans.iter().filter(|&&s| s == 1).count() as u32;
        let mut ids: Vec<u32> = Vec::with_capacity(spans.len());
        // Single-slot blocks (all of them unless tuples outgrow a slot) fill runs in order.
        let mut slots = self.find(singles, None).into_iter().flat_map(|(s, n)| s..s + n);
        for &span in spans {
            let id = if span == 1 {
                slots.next().expect("find returns the slots asked for")
            } else {
                // A block of several slots needs one run that holds it whole.
                let p = self.find(span as u32, Some(span as u32));
                debug_assert!(p.len() == 1);
                p[0].0
            };
            ids.push(id);
        }
        let mut runs: Vec<Run> = Vec::new();
        let mut next = u32::MAX;
        for (&id, &span) in ids.iter().zip(spans) {
            match runs.last_mut() {
                Some(r) if id == next => r.ids.push(id),
                _ => runs.push(Run {
                    start: id,
                    ids: vec![id],
                }),
            }
            next = id + span as u32;
        }
        runs
    }

    /// `need` slots in free runs of at least `min_piece` slots (by default [`MIN_PIECE`]
    /// while free space is scarce, else any), the rest at the end of the file.
    fn find(&mut self, need: u32, min_piece: Option<u32>) -> Vec<(u32, u32)> {
        if need == 0 {
            return Vec::new();
        }
        let mut pieces = Vec::new();
        if self.free_slots > 0 {
            let scarce = self.free_slots * 4 < self.dir.len() as u64;
            let min = min_piece.unwrap_or(if scarce { MIN_PIECE } else { 1 });
            pieces = self.take_runs(need, min);
        }
        let placed: u32 = pieces.iter().map(|p| p.1).sum();
        if placed < need {
            pieces.push((self.grow(need - placed), need - placed));
        }
        pieces
    }

    /// Extends the file by `n` slots and returns the first.
    fn grow(&mut self, n: u32) -> u32 {
        let start = self.dir.len() as u32;
        let need = start as usize + n as usize;
        if need > self.dir.capacity() {
            // Grow by an eighth at a time (doubling would leave up to half the directory
            // unused: it is part of the per-tuple cost of eviction).
            self.dir
                .reserve_exact((need - self.dir.len()).max(self.dir.len() / 8).max(4096));
        }
        self.dir.resize(need, BlockMeta::default());
        if need > self.born.capacity() {
            self.born.reserve_exact(self.dir.capacity() - self.born.len());
        }
        self.born.resize(need, 0);
        self.free.resize(self.dir.len().div_ceil(64), 0);
        start
    }

    /// Records a block in the directory (its tuples now point to it).
    pub fn set_live(&mut self, block: u32, meta: BlockMeta, bytes: usize) {
        self.dir[block as usize] = meta;
        self.born[block as usize] = self.epoch.unwrap_or(0).min(u32::MAX as u64) as u32;
        self.live_blocks += 1;
        let t = meta.table as usize;
        if self.per_table.len() <= t {
            self.per_table.resize(t + 1, TableBlocks::default());
        }
        let tb = &mut self.per_table[t];
        tb.blocks += 1;
        tb.slots += meta.span as u64;
        tb.tuples += meta.tuples as u64;
        tb.holes += meta.holes as u64;
        self.stats.blocks_written += 1;
        self.stats.bytes_written += bytes as u64;
    }

    /// Removes a block from the directory; returns its span. Its slots stay reserved until
    /// [`BlockStore::release`].
    pub fn retire(&mut self, block: u32) -> Option<u16> {
        let m = self.dir.get_mut(block as usize).filter(|m| m.span > 0)?;
        let old = *m;
        *m = BlockMeta::default();
        self.live_blocks -= 1;
        if let Some(tb) = self.per_table.get_mut(old.table as usize) {
            tb.blocks = tb.blocks.saturating_sub(1);
            tb.slots = tb.slots.saturating_sub(old.span as u64);
            tb.tuples = tb.tuples.saturating_sub(old.tuples as u64);
            tb.holes = tb.holes.saturating_sub(old.holes as u64);
        }
        let span = old.span;
        self.stats.blocks_freed += 1;
        if let Some(epoch) = self.epoch {
            self.removed.push(Removed {
                block,
                born: self.born[block as usize] as u64,
                retired: epoch,
            });
        }
        Some(span)
    }

    /// A snapshot with this epoch began: blocks that go live or are retired from now on
    /// carry it, and retired blocks are logged for [`BlockStore::delta_since`]. Tags stop
    /// at `u32::MAX` (a snapshot a second for 136 years): past it, differences are wrong and
    /// snapshots must list the whole directory (the executor does).
    pub fn set_epoch(&mut self, epoch: u64) {
        self.epoch = Some(epoch);
    }

    /// The directory as a difference from the one at the cut of snapshot `base` (a
    /// snapshot started in this process, whose epoch is at most the current one).
    pub fn delta_since(&self, base: u64) -> DirectoryDelta {
        let added = self
            .live()
            .filter(|(id, _)| self.born[*id as usize] as u64 >= base)
            .collect();
        let removed = self
            .removed
            .iter()
            .filter(|r| r.born < base && r.retired >= base)
            .map(|r| r.block)
            .collect();
        DirectoryDelta { added, removed }
    }

    /// Snapshot `base` is now the one differences are taken from: blocks retired before
    /// it are in no difference any more.
    pub fn forget_removed_before(&mut self, base: u64) {
        self.removed.retain(|r| r.retired >= base);
    }

    /// Sets a block's count of merged-back tuples (recovery recounts them from the
    /// tombstones that still point into it).
    pub fn set_holes(&mut self, block: u32, holes: u16) {
        let Some(m) = self.dir.get_mut(block as usize).filter(|m| m.span > 0) else {
            return;
        };
        let (before, table) = (m.holes as u64, m.table as usize);
        m.holes = holes.min(m.tuples);
        let after = m.holes as u64;
        if let Some(tb) = self.per_table.get_mut(table) {
            tb.holes = tb.holes - before + after;
        }
    }

    /// Makes the slots of a retired block reusable.
    pub fn release(&mut self, block: u32, span: u16) {
        self.release_slots(block, span as u32);
    }

    fn release_slots(&mut self, start: u32, len: u32) {
        debug_assert!((start..start + len).all(|i| !self.is_free(i)), "slot released twice");
        self.mark(start, len, true);
        self.free_slots += len as u64;
    }

    /// Offset and length of a live block in the file.
    pub fn location(&self, block: u32) -> Option<(u64, usize)> {
        self.meta(block)
            .map(|m| (self.offset(block), m.span as usize * self.slot_size))
    }

    /// Writes blocks synchronously (tests and tools; eviction writes through the I/O thread).
    pub fn write_now(&mut self, start: u32, bufs: &[&[u8]]) -> Result<()> {
        self.file
            .write_at(bufs, self.offset(start))
            .map_err(|e| AntiCacheError::io("write", self.file.path(), &e))?;
        self.stats.write_calls += 1;
        Ok(())
    }

    /// Reads a block into `buf` on the calling thread (synchronous retrieval).
    pub fn read_into(&mut self, block: u32, mut buf: AlignedBuf) -> Result<AlignedBuf> {
        let (offset, len) = self.location(block).ok_or_else(|| AntiCacheError::Corrupt {
            block,
            what: "no such block in the directory".into(),
        })?;
        if buf.len() != len {
            buf = AlignedBuf::new(len);
        }
        self.file
            .read_at(&mut buf, offset)
            .map_err(|e| AntiCacheError::io("read", self.file.path(), &e))?;
        self.note_read(len);
        Ok(buf)
    }

    /// Counts a read done elsewhere (the I/O thread).
    pub fn note_read(&mut self, len: usize) {
        self.stats.blocks_read += 1;
        self.stats.bytes_read += len as u64;
    }

    /// Records that `n` tuples of a block were merged back; returns true when none is left
    /// (the caller retires the block).
    pub fn add_holes(&mut self, block: u32, n: u32) -> bool {
        let Some(m) = self.dir.get_mut(block as usize).filter(|m| m.span > 0) else {
            return false;
        };
        let before = m.holes;
        m.holes = (m.holes as u32 + n).min(m.tuples as u32) as u16;
        let (table, added, full) = (m.table as usize, (m.holes - before) as u64, m.holes >= m.tuples);
        if let Some(tb) = self.per_table.get_mut(table) {
            tb.holes += added;
        }
        full
    }

    /// The live blocks of table `table`.
    pub fn table_blocks(&self, table: u32) -> TableBlocks {
        self.per_table.get(table as usize).copied().unwrap_or_default()
    }

    /// Every table with live blocks, with its blocks, in table id order.
    pub fn tables_blocks(&self) -> impl Iterator<Item = (u32, TableBlocks)> + '_ {
        self.per_table
            .iter()
            .enumerate()
            .filter(|(_, tb)| tb.blocks > 0)
            .map(|(t, tb)| (t as u32, *tb))
    }

    /// The tables that have blocks.
    pub fn tables(&self) -> Vec<u32> {
        let mut t: Vec<u32> = self.dir.iter().filter(|m| m.span > 0).map(|m| m.table as u32).collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// The blocks of a table.
    pub fn blocks_of(&self, table: u32) -> Vec<u32> {
        self.dir
            .iter()
            .enumerate()
            .filter(|(_, m)| m.span > 0 && m.table as u32 == table)
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Memory the directory and free-space maps take.
    pub fn memory_bytes(&self) -> usize {
        self.dir.capacity() * std::mem::size_of::<BlockMeta>()
            + self.born.capacity() * 4
            + self.removed.capacity() * std::mem::size_of::<Removed>()
            + self.free.capacity() * 8
            + self.per_table.capacity() * std::mem::size_of::<TableBlocks>()
    }

    /// Bytes of the file in use or free for reuse.
    pub fn file_bytes(&self) -> u64 {
        self.dir.len() as u64 * self.slot_size as u64
    }

    /// Slots free for reuse.
    pub fn free_slots(&self) -> u64 {
        self.free_slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::MemFile;

    #[test]
    fn directory_entries_are_eight_bytes() {
        assert_eq!(std::mem::size_of::<BlockMeta>(), 8);
    }

    fn store() -> BlockStore {
        BlockStore::with_file(Arc::new(MemFile::default()), 1000)
    }

    fn meta(span: u16) -> BlockMeta {
        BlockMeta {
            table: 1,
            tuples: 2,
            holes: 0,
            span,
        }
    }

    fn free(s: &mut BlockStore, ids: impl IntoIterator<Item = u32>) {
        for b in ids {
            let span = s.retire(b).unwrap();
            s.release(b, span);
        }
    }

    fn place(s: &mut BlockStore, spans: &[u16]) -> Vec<Run> {
        let runs = s.allocate(spans);
        let ids: Vec<u32> = runs.iter().flat_map(|r| r.ids.clone()).collect();
        for (&id, &span) in ids.iter().zip(spans) {
            s.set_live(id, meta(span), span as usize * 1024);
        }
        runs
    }

    #[test]
    fn groups_are_contiguous_and_space_is_reused() {
        let mut s = store();
        assert_eq!(s.slot_size(), 1024);
        assert_eq!(
            place(&mut s, &[1, 1, 2]),
            vec![Run {
                start: 0,
                ids: vec![0, 1, 2]
            }]
        );
        assert_eq!(
            place(&mut s, &[1, 1]),
            vec![Run {
                start: 4,
                ids: vec![4, 5]
            }]
        );
        // Two neighbours freed (a third of the file): reused by the next group of 2.
        free(&mut s, [0, 1]);
        assert_eq!(s.free_slots(), 2);
        assert_eq!(
            place(&mut s, &[1, 1]),
            vec![Run {
                start: 0,
                ids: vec![0, 1]
            }]
        );
        assert_eq!(s.free_slots(), 0);
        // The two-slot block freed: a group of three takes it and one slot at the end.
        free(&mut s, [2]);
        assert_eq!(
            place(&mut s, &[1, 1, 1]),
            vec![
                Run {
                    start: 2,
                    ids: vec![2, 3]
                },
                Run { start: 6, ids: vec![6] }
            ]
        );
        assert_eq!(s.file_bytes(), 7 * 1024);
    }

    #[test]
    fn per_table_tallies_follow_writes_holes_and_frees() {
        let mut s = store();
        place(&mut s, &[1, 2]);
        let other = BlockMeta {
            table: 3,
            tuples: 5,
            holes: 0,
            span: 1,
        };
        let id = s.allocate(&[1])[0].start;
        s.set_live(id, other, 1024);
        assert_eq!(
            s.table_blocks(1),
            TableBlocks {
                blocks: 2,
                slots: 3,
                tuples: 4,
                holes: 0
            }
        );
        assert!(!s.add_holes(id, 2));
        assert_eq!(s.table_blocks(3).holes, 2);
        // Holes never exceed the tuples written.
        assert!(s.add_holes(id, 9));
        assert_eq!(s.table_blocks(3).holes, 5);
        free(&mut s, [id]);
        assert_eq!(s.table_blocks(3), TableBlocks::default());
        assert_eq!(s.tables_blocks().map(|(t, _)| t).collect::<Vec<_>>(), vec![1]);
        free(&mut s, [0, 1]);
        assert_eq!(s.tables_blocks().count(), 0);
    }

    #[test]
    fn a_large_block_never_straddles_two_runs() {
        let mut s = store();
        place(&mut s, &[1; 8]);
        free(&mut s, [1, 3, 4]);
        // Slot 1 is too small for a span of 2; slots 3-4 hold it.
        assert_eq!(place(&mut s, &[2]), vec![Run { start: 3, ids: vec![3] }]);
        assert_eq!(s.free_slots(), 1, "slot 1 still free");
    }

    #[test]
    fn scarce_free_space_is_not_scattered_into_small_writes() {
        let mut s = store();
        place(&mut s, &[1; 100]);
        // Ten single free slots (a tenth of the file): a group of 4 goes to the end.
        free(&mut s, (0..10).map(|i| i * 10));
        assert_eq!(
            place(&mut s, &[1; 4]),
            vec![Run {
                start: 100,
                ids: vec![100, 101, 102, 103]
            }]
        );
        // Half the file free in single slots: reused, one run each.
        free(&mut s, (0..104).filter(|i| i % 2 == 1 && i % 10 != 0));
        let runs = place(&mut s, &[1; 4]);
        let ids: Vec<u32> = runs.iter().flat_map(|r| r.ids.clone()).collect();
        assert_eq!(ids, vec![0, 1, 3, 5]);
        assert_eq!(s.file_bytes(), 104 * 1024, "the file did not grow");
    }

    #[test]
    fn the_file_stays_bounded_under_random_frees() {
        // Blocks freed at random and rounds of 16 allocated: the file never outgrows the
        // live blocks by much, no slot is handed out twice, and the free count is exact.
        let mut s = store();
        let mut live: Vec<u32> = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..2000 {
            for r in place(&mut s, &[1; 16]) {
                for id in r.ids {
                    assert!(!live.contains(&id), "slot {id} handed out twice");
                    live.push(id);
                }
            }
            for _ in 0..16.min(live.len()) {
                let i = rand(live.len());
                free(&mut s, [live.swap_remove(i)]);
            }
            let slots = s.file_bytes() / 1024;
            assert_eq!(slots - s.free_slots(), live.len() as u64);
            assert!(
                slots <= 4 * (live.len() as u64).max(64),
                "{slots} slots for {} live",
                live.len()
            );
        }
    }

    #[derive(Debug, Clone)]
    enum DeltaOp {
        /// Write blocks of these spans (tables 0..3 by position).
        Add(Vec<u16>),
        /// Retire and release the live block at this index (modulo their number).
        Retire(usize),
        /// Start a snapshot; `full` asks for a whole directory, else a difference when a
        /// base exists. It completes at a later `Complete`, or fails (`fail`).
        Snapshot { full: bool, fail: bool },
        /// The snapshot started last completes.
        Complete,
    }

    fn delta_op() -> impl proptest::strategy::Strategy<Value = DeltaOp> {
        use proptest::prelude::*;
        prop_oneof![
            4 => proptest::collection::vec(1u16..3, 1..6).prop_map(DeltaOp::Add),
            3 => any::<usize>().prop_map(DeltaOp::Retire),
            1 => (any::<bool>(), proptest::bool::weighted(0.2))
                .prop_map(|(full, fail)| DeltaOp::Snapshot { full, fail }),
            1 => Just(DeltaOp::Complete),
        ]
    }

    type Image = std::collections::BTreeMap<u32, (u16, u16, u16)>;

    fn image(s: &BlockStore) -> Image {
        s.live().map(|(id, m)| (id, (m.table, m.tuples, m.span))).collect()
    }

    proptest::proptest! {
        /// The base snapshot's directory, minus the removed blocks, plus the added ones, is
        /// the directory at the cut: whatever was written, retired, reused, and whichever
        /// snapshots completed or failed in between.
        #[test]
        fn a_difference_applied_to_its_base_gives_the_directory(
            ops in proptest::collection::vec(delta_op(), 1..120)
        ) {
            let mut s = store();
            let mut live: Vec<u32> = Vec::new();
            let mut epoch = 0u64;
            // The last complete snapshot with a whole directory: (epoch, its directory).
            let mut base: Option<(u64, Image)> = None;
            // The snapshot started and not yet complete: (epoch, directory at its cut, whole).
            let mut pending: Option<(u64, Image, bool)> = None;
            for op in ops {
                match op {
                    DeltaOp::Add(spans) => {
                        let runs = s.allocate(&spans);
                        let ids: Vec<u32> = runs.iter().flat_map(|r| r.ids.clone()).collect();
                        for (i, (&id, &span)) in ids.iter().zip(&spans).enumerate() {
                            let m = BlockMeta { table: (i % 3) as u16, tuples: 1 + i as u16, holes: 0, span };
                            s.set_live(id, m, 0);
                            live.push(id);
                        }
                    }
                    DeltaOp::Retire(i) if !live.is_empty() => {
                        free(&mut s, [live.swap_remove(i % live.len())]);
                    }
                    DeltaOp::Retire(_) => {}
                    DeltaOp::Snapshot { full, fail } => {
                        epoch += 1;
                        let now = image(&s);
                        let whole = full || base.is_none();
                        if !whole {
                            let (b, base_img) = base.as_ref().unwrap();
                            let d = s.delta_since(*b);
                            let mut rebuilt = base_img.clone();
                            for id in &d.removed {
                                proptest::prop_assert!(rebuilt.remove(id).is_some(), "removed {} not in the base", id);
                            }
                            for (id, m) in &d.added {
                                proptest::prop_assert!(
                                    rebuilt.insert(*id, (m.table, m.tuples, m.span)).is_none(),
                                    "added {} already there", id
                                );
                            }
                            proptest::prop_assert_eq!(&rebuilt, &now);
                        }
                        s.set_epoch(epoch);
                        pending = (!fail).then_some((epoch, now, whole));
                    }
                    DeltaOp::Complete => {
                        if let Some((e, img, whole)) = pending.take() && whole {
                            s.forget_removed_before(e);
                            base = Some((e, img));
                        }
                    }
                }
            }
            // The log keeps no block retired before the base.
            if let Some((b, _)) = &base {
                proptest::prop_assert!(s.removed.iter().all(|r| r.retired >= *b));
            }
        }
    }
}
