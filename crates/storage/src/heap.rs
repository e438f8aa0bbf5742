//! The tuple heap: fixed-size tuple slots in large chunks.
//!
//! A table at one partition stores its tuples in slots of one size (the tuple layout's slot
//! size), in 2 MiB chunks aligned for transparent huge pages, so a 4-byte slot number names
//! a tuple and finding its bytes is a multiply-shift division and a multiply. Freed slots go
//! on a free list threaded through their headers and are reused first.
//!
//! A table's first chunk stays on small pages, so a small table costs only the pages it
//! touches; from the second chunk on, all its chunks are advised as huge pages.
//!
//! Every slot starts with the tuple header the anti-cache needs (DeBrabant et al. 2013 §3.1,
//! Fig. 4):
//!
//! ```text
//! byte 0      flags    (FLAG_* below)
//! bytes 1..5  prev     u32 LE, the tuple id of the neighbour towards the cold end
//! bytes 5..9  next     u32 LE, the tuple id of the neighbour towards the hot end
//! ```
//!
//! The link fields belong to whichever access tracker the table uses (the LRU chain); a free
//! slot reuses `next` as its free-list link.

use crate::chunk::{Chunk, HUGE_PAGE, round_to_page};
use crate::error::{Result, StorageError};

/// Bytes of tuple header at the start of each slot.
pub const HEADER_SIZE: usize = 9;

/// The slot holds a tuple.
pub const FLAG_LIVE: u8 = 0x01;
/// The tuple was deleted by the running transaction; freed at commit, revived at abort.
pub const FLAG_DELETED: u8 = 0x02;
/// The tuple is linked into its table's LRU chain.
pub const FLAG_IN_CHAIN: u8 = 0x04;
/// Reference bit for CLOCK-style trackers.
pub const FLAG_REFERENCED: u8 = 0x08;
/// The tuple must not be evicted (a parked transaction is waiting to use it).
pub const FLAG_PINNED: u8 = 0x10;

/// "No tuple" in a link field.
pub const NIL: u32 = u32::MAX;

/// Largest number of slots per table per partition; the top bit of a tuple reference tells
/// tuples from tombstones.
pub const MAX_SLOTS: u32 = 1 << 31;

/// Division by a constant with a multiply and a shift (Lemire, Kaser and Kurz: "Faster
/// remainder by direct computation"); exact for 32-bit dividends.
#[derive(Debug, Clone, Copy)]
struct FastDiv {
    d: u32,
    m: u64,
}

impl FastDiv {
    fn new(d: u32) -> FastDiv {
        assert!(d > 0);
        FastDiv {
            d,
            m: if d == 1 { 0 } else { u64::MAX / d as u64 + 1 },
        }
    }

    #[inline]
    fn divmod(&self, n: u32) -> (u32, u32) {
        if self.d == 1 {
            return (n, 0);
        }
        let q = ((self.m as u128 * n as u128) >> 64) as u32;
        (q, n - q * self.d)
    }
}

/// Slot storage for one table at one partition.
pub struct Heap {
    slot_size: usize,
    per_chunk: u32,
    div: FastDiv,
    chunks: Vec<Chunk>,
    /// Slots below this number have been handed out at least once.
    fresh: u32,
    free_head: u32,
    live: u32,
}

impl Heap {
    pub fn new(slot_size: usize) -> Heap {
        assert!((HEADER_SIZE..=HUGE_PAGE).contains(&slot_size));
        let per_chunk = (HUGE_PAGE / slot_size) as u32;
        Heap {
            slot_size,
            per_chunk,
            div: FastDiv::new(per_chunk),
            chunks: Vec::new(),
            fresh: 0,
            free_head: NIL,
            live: 0,
        }
    }

    #[inline]
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    #[inline]
    fn offset(&self, slot: u32) -> (usize, usize) {
        let (c, i) = self.div.divmod(slot);
        (c as usize, i as usize * self.slot_size)
    }

    /// Whether `slot` has ever been handed out (its bytes exist).
    #[inline]
    pub fn exists(&self, slot: u32) -> bool {
        slot < self.fresh
    }

    /// The bytes of `slot`. Panics if the slot was never allocated: slot numbers come from
    /// our own indexes, never from outside input.
    #[inline]
    pub fn bytes(&self, slot: u32) -> &[u8] {
        let (c, off) = self.offset(slot);
        &self.chunks[c].bytes()[off..off + self.slot_size]
    }

    #[inline]
    pub fn bytes_mut(&mut self, slot: u32) -> &mut [u8] {
        let (c, off) = self.offset(slot);
        let size = self.slot_size;
        &mut self.chunks[c].bytes_mut()[off..off + size]
    }

    /// Asks the CPU to start loading a slot's cache lines (a hint: nothing waits for it,
    /// and a slot past the end is ignored). A range read calls it a few tuples ahead of
    /// the one it reads, so that their memory misses overlap instead of following one
    /// another.
    #[inline]
    pub fn prefetch(&self, slot: u32) {
        if slot >= self.fresh {
            return;
        }
        let (c, off) = self.offset(slot);
        let bytes = &self.chunks[c].bytes()[off..off + self.slot_size];
        for line in bytes.chunks(64) {
            prefetch_line(line.as_ptr());
        }
        // A slot that does not start on a line boundary ends in one more line.
        prefetch_line(bytes[bytes.len() - 1..].as_ptr());
    }

    #[inline]
    pub fn flags(&self, slot: u32) -> u8 {
        self.bytes(slot)[0]
    }

    #[inline]
    pub fn set_flags(&mut self, slot: u32, flags: u8) {
        self.bytes_mut(slot)[0] = flags;
    }

    #[inline]
    pub fn is_live(&self, slot: u32) -> bool {
        slot < self.fresh && self.flags(slot) & FLAG_LIVE != 0
    }

    /// Live and not deleted by the running transaction: what a query may see.
    #[inline]
    pub fn is_visible(&self, slot: u32) -> bool {
        slot < self.fresh && self.flags(slot) & (FLAG_LIVE | FLAG_DELETED) == FLAG_LIVE
    }

    #[inline]
    pub fn prev(&self, slot: u32) -> u32 {
        let b = self.bytes(slot);
        u32::from_le_bytes([b[1], b[2], b[3], b[4]])
    }

    #[inline]
    pub fn next(&self, slot: u32) -> u32 {
        let b = self.bytes(slot);
        u32::from_le_bytes([b[5], b[6], b[7], b[8]])
    }

    #[inline]
    pub fn set_prev(&mut self, slot: u32, v: u32) {
        self.bytes_mut(slot)[1..5].copy_from_slice(&v.to_le_bytes());
    }

    #[inline]
    pub fn set_next(&mut self, slot: u32, v: u32) {
        self.bytes_mut(slot)[5..9].copy_from_slice(&v.to_le_bytes());
    }

    /// Takes a free slot, marks it live with cleared links and returns its number.
    pub fn alloc(&mut self) -> Result<u32> {
        let slot = if self.free_head != NIL {
            let s = self.free_head;
            self.free_head = self.next(s);
            s
        } else {
            if self.fresh >= MAX_SLOTS {
                return Err(StorageError::TableFull {
                    table: String::new(),
                    limit: MAX_SLOTS as u64,
                });
            }
            let s = self.fresh;
            if self.offset(s).0 >= self.chunks.len() {
                self.chunks.push(Chunk::new_huge_aligned()?);
                if self.chunks.len() >= 2 {
                    for c in &mut self.chunks {
                        c.advise_huge();
                    }
                }
            }
            self.fresh += 1;
            s
        };
        let b = self.bytes_mut(slot);
        b[0] = FLAG_LIVE;
        b[1..HEADER_SIZE].fill(0xFF);
        self.live += 1;
        Ok(slot)
    }

    /// Returns `slot` to the free list.
    pub fn free(&mut self, slot: u32) {
        debug_assert!(self.is_live(slot));
        let head = self.free_head;
        let b = self.bytes_mut(slot);
        b[0] = 0;
        b[5..9].copy_from_slice(&head.to_le_bytes());
        self.free_head = slot;
        self.live -= 1;
    }

    /// Number of live tuples.
    pub fn live(&self) -> u32 {
        self.live
    }

    /// Slots per chunk.
    pub fn per_chunk(&self) -> u32 {
        self.per_chunk
    }

    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// The free slots below slot `end`.
    pub(crate) fn free_below(&self, end: u32) -> Vec<u32> {
        (0..end.min(self.fresh)).filter(|&s| !self.is_live(s)).collect()
    }

    /// Copies the tuple in slot `from` (header included) into the free slot `to`, which
    /// becomes live. `from` is left as it is; the caller truncates it away.
    pub(crate) fn move_slot(&mut self, from: u32, to: u32, scratch: &mut Vec<u8>) {
        scratch.clear();
        scratch.extend_from_slice(self.bytes(from));
        self.bytes_mut(to).copy_from_slice(scratch);
    }

    /// Keeps the first `keep` chunks, unmapping the rest, and of the slots there only
    /// those up to the last live one, giving back the pages past it; `free` (the free
    /// slots below the new end) less those past the last live slot becomes the free list.
    /// Every live tuple must be below the new end.
    pub(crate) fn truncate(&mut self, keep: usize, free: Vec<u32>) {
        let end = self.fresh.min(keep as u32 * self.per_chunk);
        // One past the last live slot: the slots after it have never been handed out, as
        // far as anyone can tell.
        self.fresh = (0..end)
            .rev()
            .find(|&s| self.flags(s) & FLAG_LIVE != 0)
            .map_or(0, |s| s + 1);
        let keep = self.fresh.div_ceil(self.per_chunk) as usize;
        self.chunks.truncate(keep);
        self.chunks.shrink_to_fit();
        if let Some(last) = self.chunks.last_mut() {
            let used = self.fresh as usize - (keep - 1) * self.per_chunk as usize;
            last.release_after(used * self.slot_size);
        }
        self.free_head = NIL;
        let fresh = self.fresh;
        for s in free.into_iter().filter(|&s| s < fresh) {
            let head = self.free_head;
            let b = self.bytes_mut(s);
            b[0] = 0;
            b[5..9].copy_from_slice(&head.to_le_bytes());
            self.free_head = s;
        }
    }

    /// One past the highest slot number ever handed out; scans go up to here.
    pub fn high_water(&self) -> u32 {
        self.fresh
    }

    /// Bytes of memory the slots occupy: whole chunks once they are on huge pages, the
    /// pages touched so far while the table is one small-page chunk.
    pub fn reserved_bytes(&self) -> usize {
        let mut total = self.chunks.capacity() * std::mem::size_of::<Chunk>();
        for (i, c) in self.chunks.iter().enumerate() {
            total += if c.is_huge() {
                c.len()
            } else {
                let used = (self.fresh as usize)
                    .saturating_sub(i * self.per_chunk as usize)
                    .min(self.per_chunk as usize);
                round_to_page(used * self.slot_size).min(c.len())
            };
        }
        total
    }

    /// Bytes of live slots.
    pub fn used_bytes(&self) -> usize {
        self.live as usize * self.slot_size
    }
}

/// A prefetch of the cache line holding `p` into all cache levels (no-op where the target
/// has no such hint).
#[inline(always)]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address; `p` points
    // into a live slot anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_division_is_exact() {
        for d in [1u32, 2, 3, 7, 1000, 2018, 65_535, 1 << 20] {
            let f = FastDiv::new(d);
            for n in [0u32, 1, d - 1, d, d + 1, 12_345_678, u32::MAX - 1, u32::MAX] {
                assert_eq!(f.divmod(n), (n / d, n % d), "{n} / {d}");
            }
        }
    }

    #[test]
    fn prefetch_takes_any_slot_and_changes_nothing() {
        // Slots of an odd size end mid-line and at the end of a chunk.
        let mut h = Heap::new(203);
        let n = h.per_chunk + 3;
        for _ in 0..n {
            h.alloc().unwrap();
        }
        let before: Vec<u8> = (0..n).flat_map(|s| h.bytes(s).to_vec()).collect();
        for s in [0, 1, h.per_chunk - 1, h.per_chunk, n - 1, n, n + 1000, u32::MAX] {
            h.prefetch(s);
        }
        let after: Vec<u8> = (0..n).flat_map(|s| h.bytes(s).to_vec()).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn a_small_table_costs_the_pages_it_touches() {
        let mut h = Heap::new(100);
        h.alloc().unwrap();
        assert!(h.reserved_bytes() < 2 * 4096 + 64, "{}", h.reserved_bytes());
    }

    #[test]
    fn slots_are_reused_lifo_and_headers_reset() {
        let mut h = Heap::new(40);
        let a = h.alloc().unwrap();
        let b = h.alloc().unwrap();
        assert_eq!((a, b), (0, 1));
        h.set_prev(a, 7);
        h.set_next(a, 9);
        assert_eq!((h.prev(a), h.next(a)), (7, 9));
        h.free(a);
        assert!(!h.is_live(a));
        let c = h.alloc().unwrap();
        assert_eq!(c, a);
        assert_eq!((h.prev(c), h.next(c)), (NIL, NIL));
        assert_eq!(h.live(), 2);
    }

    #[test]
    fn grows_across_chunks() {
        let mut h = Heap::new(1000);
        let n: u32 = 5000;
        assert_eq!(h.reserved_bytes(), 0);
        for i in 0..n {
            let s = h.alloc().unwrap();
            h.bytes_mut(s)[HEADER_SIZE..HEADER_SIZE + 4].copy_from_slice(&i.to_le_bytes());
        }
        for i in 0..n {
            let b = h.bytes(i);
            assert_eq!(
                u32::from_le_bytes(b[HEADER_SIZE..HEADER_SIZE + 4].try_into().unwrap()),
                i
            );
        }
        assert!(h.reserved_bytes() >= n as usize * 1000);
        assert!(h.reserved_bytes() <= 3 * HUGE_PAGE + 4096);
        assert_eq!(h.used_bytes(), n as usize * 1000);
    }
}
