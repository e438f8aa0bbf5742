//! The Block Table (anti-caching.txt §3.1): one file of blocks per partition plus an
//! in-memory directory.
//!
//! The file is an array of equal *slots* of `slot_size` bytes (the eviction block size,
//! rounded up to the device's direct-I/O alignment). A block occupies one slot, or several
//! consecutive slots when a single tuple is larger than a slot; its id is its first slot's
//! number, so finding a block is a multiplication. The directory keeps, per slot, the table,
//! tuple count, hole count and span of the block starting there (8 bytes); a slot whose
//! block is gone (all tuples merged back) goes on a free list and is reused by the next
//! eviction.
//!
//! Eviction writes a group of blocks with as few system calls as the slots allow: runs of
//! consecutive slots become one vectored write.

use std::path::Path;
use std::sync::Arc;

use permafrost_storage::alloc::{BigVec, big_vec};

use crate::buf::AlignedBuf;
use crate::error::{AntiCacheError, Result};
use crate::file::{BlockFile, DiskFile};

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

pub struct BlockStore {
    file: Arc<dyn BlockFile>,
    block_size: usize,
    slot_size: usize,
    dir: BigVec<BlockMeta>,
    free: BigVec<u32>,
    live_blocks: u32,
    pub stats: StoreStats,
}

impl BlockStore {
    /// Creates an empty store in file `path` (an existing file is truncated).
    pub fn create(path: &Path, block_size: usize) -> Result<BlockStore> {
        let file = DiskFile::create(path).map_err(|e| AntiCacheError::io("create", path, &e))?;
        Ok(BlockStore::with_file(Arc::new(file), block_size))
    }

    /// A store over any [`BlockFile`] (tests use an in-memory one).
    pub fn with_file(file: Arc<dyn BlockFile>, block_size: usize) -> BlockStore {
        let align = file.alignment().max(1);
        let slot_size = block_size.div_ceil(align) * align;
        BlockStore {
            file,
            block_size,
            slot_size,
            dir: big_vec(),
            free: big_vec(),
            live_blocks: 0,
            stats: StoreStats::default(),
        }
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

    /// Picks slots for blocks of the given spans: free slots first for one-slot blocks,
    /// the end of the file otherwise. The blocks are not live until [`BlockStore::write`].
    pub fn allocate(&mut self, spans: &[u16]) -> Vec<u32> {
        let mut ids = Vec::with_capacity(spans.len());
        let mut end = self.dir.len() as u32;
        for &span in spans {
            if span == 1
                && let Some(id) = self.free.pop()
            {
                ids.push(id);
                continue;
            }
            ids.push(end);
            end += span as u32;
        }
        if self.dir.len() < end as usize {
            self.dir.resize(end as usize, BlockMeta::default());
        }
        ids
    }

    /// Gives back slots allocated for blocks that were never written.
    pub fn release(&mut self, ids: &[u32], spans: &[u16]) {
        for (&id, &span) in ids.iter().zip(spans) {
            for s in 0..span as u32 {
                self.free.push(id + s);
            }
        }
    }

    /// Writes blocks (`(id, bytes)`, each `span * slot_size` bytes) and makes them live in
    /// the directory with `metas`. Runs of consecutive slots are written with one call. On
    /// error nothing becomes live and the slots are released.
    pub fn write(&mut self, blocks: &[(u32, &[u8])], metas: &[BlockMeta]) -> Result<()> {
        let mut order: Vec<usize> = (0..blocks.len()).collect();
        order.sort_by_key(|&i| blocks[i].0);
        let mut i = 0;
        while i < order.len() {
            let start = blocks[order[i]].0;
            let mut next = start;
            let mut bufs: Vec<&[u8]> = Vec::new();
            while i < order.len() && blocks[order[i]].0 == next {
                let (_, b) = blocks[order[i]];
                debug_assert_eq!(b.len() % self.slot_size, 0);
                next += (b.len() / self.slot_size) as u32;
                bufs.push(b);
                i += 1;
            }
            let offset = start as u64 * self.slot_size as u64;
            if let Err(e) = self.file.write_at(&bufs, offset) {
                let ids: Vec<u32> = blocks.iter().map(|b| b.0).collect();
                let spans: Vec<u16> = metas.iter().map(|m| m.span).collect();
                self.release(&ids, &spans);
                return Err(AntiCacheError::io("write", self.file.path(), &e));
            }
            self.stats.write_calls += 1;
        }
        for ((id, bytes), meta) in blocks.iter().zip(metas) {
            self.dir[*id as usize] = *meta;
            self.live_blocks += 1;
            self.stats.blocks_written += 1;
            self.stats.bytes_written += bytes.len() as u64;
        }
        Ok(())
    }

    /// Offset and length of a live block in the file.
    pub fn location(&self, block: u32) -> Option<(u64, usize)> {
        self.meta(block)
            .map(|m| (block as u64 * self.slot_size as u64, m.span as usize * self.slot_size))
    }

    /// Reads a block on the calling thread (synchronous retrieval).
    pub fn read(&mut self, block: u32) -> Result<AlignedBuf> {
        let len = self.location(block).map_or(self.slot_size, |l| l.1);
        self.read_into(block, AlignedBuf::new(len))
    }

    /// Reads a block into `buf` (of the block's length) on the calling thread.
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

    /// Counts a read done elsewhere (the fetcher).
    pub fn note_read(&mut self, len: usize) {
        self.stats.blocks_read += 1;
        self.stats.bytes_read += len as u64;
    }

    /// Records that `n` tuples of a block were merged back. Frees the block when none is
    /// left; returns whether it was freed.
    pub fn add_holes(&mut self, block: u32, n: u32) -> bool {
        let Some(m) = self.dir.get_mut(block as usize).filter(|m| m.span > 0) else {
            return false;
        };
        m.holes = (m.holes as u32 + n).min(m.tuples as u32) as u16;
        if m.holes >= m.tuples {
            self.free_block(block);
            return true;
        }
        false
    }

    /// Frees a block's slots for reuse.
    pub fn free_block(&mut self, block: u32) {
        let Some(m) = self.dir.get_mut(block as usize).filter(|m| m.span > 0) else {
            return;
        };
        let span = m.span;
        *m = BlockMeta::default();
        for s in 0..span as u32 {
            self.free.push(block + s);
        }
        self.live_blocks -= 1;
        self.stats.blocks_freed += 1;
    }

    /// The tables that have blocks.
    pub fn tables(&self) -> Vec<u32> {
        let mut t: Vec<u32> = self.dir.iter().filter(|m| m.span > 0).map(|m| m.table as u32).collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// Frees every block of a dropped table.
    pub fn drop_table(&mut self, table: u32) {
        let ids: Vec<u32> = self
            .dir
            .iter()
            .enumerate()
            .filter(|(_, m)| m.span > 0 && m.table as u32 == table)
            .map(|(i, _)| i as u32)
            .collect();
        for id in ids {
            self.free_block(id);
        }
    }

    /// Memory the directory and free list take.
    pub fn memory_bytes(&self) -> usize {
        self.dir.capacity() * std::mem::size_of::<BlockMeta>() + self.free.capacity() * 4
    }

    /// Bytes of the file in use or free for reuse.
    pub fn file_bytes(&self) -> u64 {
        self.dir.len() as u64 * self.slot_size as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::MemFile;

    fn meta(span: u16) -> BlockMeta {
        BlockMeta {
            table: 1,
            tuples: 2,
            holes: 0,
            span,
        }
    }

    #[test]
    fn directory_entries_are_eight_bytes() {
        assert_eq!(std::mem::size_of::<BlockMeta>(), 8);
    }

    #[test]
    fn blocks_are_written_read_and_their_space_reused() {
        let mut s = BlockStore::with_file(Arc::new(MemFile::default()), 1000);
        assert_eq!(s.slot_size(), 1024);
        let ids = s.allocate(&[1, 1, 2]);
        assert_eq!(ids, vec![0, 1, 2]);
        let bufs: Vec<Vec<u8>> = vec![vec![1u8; 1024], vec![2u8; 1024], vec![3u8; 2048]];
        let blocks: Vec<(u32, &[u8])> = ids.iter().zip(&bufs).map(|(i, b)| (*i, b.as_slice())).collect();
        s.write(&blocks, &[meta(1), meta(1), meta(2)]).unwrap();
        assert_eq!(s.stats.write_calls, 1, "consecutive slots go in one write");
        assert_eq!(s.read(1).unwrap()[0], 2);
        assert_eq!(s.read(2).unwrap().len(), 2048);
        assert!(!s.add_holes(0, 1));
        assert!(s.add_holes(0, 1), "freed when every tuple is back in memory");
        assert!(s.read(0).is_err());
        assert_eq!(s.allocate(&[1]), vec![0], "free slot reused");
        assert_eq!(s.live_blocks(), 2);
        s.drop_table(1);
        assert_eq!(s.live_blocks(), 0);
    }
}
