//! Out-of-line storage for variable-length values (long strings and byte arrays).
//!
//! Values that do not fit inline in a tuple slot live here. Each value goes into the
//! smallest size class that holds it; a class is a set of chunks of equal slots with an
//! intrusive free list, so freed space is reused by the next value of that class without
//! fragmentation inside a class. Values above the largest class get their own allocation.
//!
//! A value is named by a [`VarHandle`]: class number and slot number packed in 64 bits. The
//! heap never moves a value, so a handle stays valid until it is freed.

use crate::chunk::Chunk;
use crate::error::{Result, StorageError};

/// Size classes in bytes, about 1.5x apart.
const CLASSES: [u32; 25] = [
    16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
    24576, 32768, 49152, 65536,
];
const LARGE_CLASS: u64 = 0xFF;
const CLASS_SHIFT: u32 = 56;
const INDEX_MASK: u64 = (1 << CLASS_SHIFT) - 1;
const NO_SLOT: u64 = u64::MAX;

/// Names one out-of-line value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VarHandle(pub u64);

impl VarHandle {
    fn new(class: u64, index: u64) -> VarHandle {
        VarHandle((class << CLASS_SHIFT) | index)
    }
    fn class(self) -> u64 {
        self.0 >> CLASS_SHIFT
    }
    fn index(self) -> u64 {
        self.0 & INDEX_MASK
    }
}

struct SizeClass {
    size: usize,
    per_chunk: u64,
    chunks: Vec<Chunk>,
    /// Slots below this index have been handed out at least once.
    fresh: u64,
    /// Head of the free list threaded through free slots' first 8 bytes.
    free_head: u64,
    live: u64,
}

impl SizeClass {
    fn new(size: u32) -> SizeClass {
        let size = size as usize;
        let chunk_bytes = (size * 64).clamp(16 * 1024, 1024 * 1024);
        SizeClass {
            size,
            per_chunk: (chunk_bytes / size) as u64,
            chunks: Vec::new(),
            fresh: 0,
            free_head: NO_SLOT,
            live: 0,
        }
    }

    #[inline]
    fn locate(&self, index: u64) -> (usize, usize) {
        (
            (index / self.per_chunk) as usize,
            (index % self.per_chunk) as usize * self.size,
        )
    }

    fn slot(&self, index: u64) -> Option<&[u8]> {
        let (c, off) = self.locate(index);
        self.chunks.get(c).map(|ch| &ch.bytes()[off..off + self.size])
    }

    fn slot_mut(&mut self, index: u64) -> Option<&mut [u8]> {
        let (c, off) = self.locate(index);
        let size = self.size;
        self.chunks.get_mut(c).map(|ch| &mut ch.bytes_mut()[off..off + size])
    }

    fn alloc(&mut self, reserved: &mut usize) -> Result<u64> {
        if self.free_head != NO_SLOT {
            let index = self.free_head;
            let slot = self.slot(index).ok_or_else(|| corrupt("free list"))?;
            self.free_head = u64::from_le_bytes(slot[..8].try_into().expect("slot >= 8 bytes"));
            self.live += 1;
            return Ok(index);
        }
        let index = self.fresh;
        if index >= INDEX_MASK {
            return Err(StorageError::Internal("string heap size class exhausted".into()));
        }
        if (index / self.per_chunk) as usize >= self.chunks.len() {
            let chunk = Chunk::new(self.per_chunk as usize * self.size)?;
            *reserved += chunk.len();
            self.chunks.push(chunk);
        }
        self.fresh += 1;
        self.live += 1;
        Ok(index)
    }

    fn free(&mut self, index: u64) {
        let head = self.free_head;
        if let Some(slot) = self.slot_mut(index) {
            slot[..8].copy_from_slice(&head.to_le_bytes());
            self.free_head = index;
            self.live -= 1;
        }
    }
}

fn corrupt(what: &str) -> StorageError {
    StorageError::Internal(format!("string heap {what} is inconsistent"))
}

/// Out-of-line value storage for one table at one partition.
pub struct VarHeap {
    classes: Vec<SizeClass>,
    large: Vec<Option<Box<[u8]>>>,
    large_free: Vec<u32>,
    reserved: usize,
    used: usize,
}

impl Default for VarHeap {
    fn default() -> Self {
        Self::new()
    }
}

impl VarHeap {
    pub fn new() -> VarHeap {
        VarHeap {
            classes: CLASSES.iter().map(|&s| SizeClass::new(s)).collect(),
            large: Vec::new(),
            large_free: Vec::new(),
            reserved: 0,
            used: 0,
        }
    }

    fn class_for(len: usize) -> Option<usize> {
        CLASSES.iter().position(|&c| c as usize >= len)
    }

    /// Stores `data` and returns its handle.
    pub fn alloc(&mut self, data: &[u8]) -> Result<VarHandle> {
        match Self::class_for(data.len()) {
            Some(c) => {
                let class = &mut self.classes[c];
                let index = class.alloc(&mut self.reserved)?;
                let size = class.size;
                let slot = class.slot_mut(index).ok_or_else(|| corrupt("allocation"))?;
                slot[..data.len()].copy_from_slice(data);
                self.used += size;
                Ok(VarHandle::new(c as u64, index))
            }
            None => {
                let boxed: Box<[u8]> = data.into();
                self.reserved += boxed.len();
                self.used += boxed.len();
                let index = match self.large_free.pop() {
                    Some(i) => {
                        self.large[i as usize] = Some(boxed);
                        i as u64
                    }
                    None => {
                        self.large.push(Some(boxed));
                        (self.large.len() - 1) as u64
                    }
                };
                Ok(VarHandle::new(LARGE_CLASS, index))
            }
        }
    }

    /// The `len` bytes stored under `h`, or `None` if the handle names nothing (a corrupt
    /// handle never panics).
    #[inline]
    pub fn get(&self, h: VarHandle, len: usize) -> Option<&[u8]> {
        let class = h.class();
        if class == LARGE_CLASS {
            return self
                .large
                .get(h.index() as usize)?
                .as_deref()
                .and_then(|b| b.get(..len));
        }
        let sc = self.classes.get(class as usize)?;
        if len > sc.size || h.index() >= sc.fresh {
            return None;
        }
        sc.slot(h.index()).map(|s| &s[..len])
    }

    /// Frees the value under `h`.
    pub fn free(&mut self, h: VarHandle) {
        let class = h.class();
        if class == LARGE_CLASS {
            let i = h.index() as usize;
            if let Some(b) = self.large.get_mut(i).and_then(Option::take) {
                self.reserved -= b.len();
                self.used -= b.len();
                self.large_free.push(i as u32);
            }
            return;
        }
        if let Some(sc) = self.classes.get_mut(class as usize)
            && h.index() < sc.fresh
        {
            self.used -= sc.size;
            sc.free(h.index());
        }
    }

    /// Gives back the chunks no value uses: every chunk of a size class that holds nothing,
    /// and the chunks at the end of a class that hold nothing (values never move, so a
    /// chunk with one live value stays). Returns the bytes given back. Walks the free
    /// lists: call it now and then (heap compaction), not per value.
    pub fn trim(&mut self) -> usize {
        let mut released = 0;
        for sc in &mut self.classes {
            if sc.chunks.is_empty() {
                continue;
            }
            if sc.live == 0 {
                released += sc.chunks.iter().map(Chunk::len).sum::<usize>();
                sc.chunks.clear();
                sc.fresh = 0;
                sc.free_head = NO_SLOT;
                continue;
            }
            let per = sc.per_chunk;
            let mut free_in = vec![0u64; sc.chunks.len()];
            let mut free = Vec::new();
            let mut at = sc.free_head;
            while at != NO_SLOT {
                free.push(at);
                if let Some(n) = free_in.get_mut((at / per) as usize) {
                    *n += 1;
                }
                at = match sc.slot(at) {
                    Some(slot) => u64::from_le_bytes(slot[..8].try_into().expect("slot >= 8 bytes")),
                    None => break,
                };
            }
            let handed = |c: usize| sc.fresh.min((c as u64 + 1) * per).saturating_sub(c as u64 * per);
            let mut keep = sc.chunks.len();
            while keep > 0 && handed(keep - 1) == free_in[keep - 1] {
                keep -= 1;
            }
            if keep == sc.chunks.len() {
                continue;
            }
            let end = keep as u64 * per;
            released += sc.chunks[keep..].iter().map(Chunk::len).sum::<usize>();
            sc.chunks.truncate(keep);
            sc.fresh = sc.fresh.min(end);
            // The free list without the slots given back, in its old order.
            sc.free_head = NO_SLOT;
            for &i in free.iter().rev().filter(|&&i| i < end) {
                let head = sc.free_head;
                if let Some(slot) = sc.slot_mut(i) {
                    slot[..8].copy_from_slice(&head.to_le_bytes());
                    sc.free_head = i;
                }
            }
        }
        self.reserved -= released;
        released
    }

    /// Bytes mapped for out-of-line values (chunks and large values).
    pub fn reserved_bytes(&self) -> usize {
        self.reserved + self.large.capacity() * std::mem::size_of::<Option<Box<[u8]>>>()
    }

    /// Bytes of slots holding live values.
    pub fn used_bytes(&self) -> usize {
        self.used
    }

    /// Number of live values.
    pub fn live_values(&self) -> u64 {
        self.classes.iter().map(|c| c.live).sum::<u64>() + self.large.iter().filter(|b| b.is_some()).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_gives_back_empty_chunks_and_keeps_every_live_value() {
        let mut h = VarHeap::new();
        // 1000-byte values: class 1024, 64 per 64 KiB chunk; 640 values fill 10 chunks.
        let value = |i: u32| format!("{i:08}").repeat(125).into_bytes();
        let handles: Vec<VarHandle> = (0..640).map(|i| h.alloc(&value(i)).unwrap()).collect();
        let full = h.reserved_bytes();
        assert_eq!(h.trim(), 0, "nothing is free");
        // Free the last six chunks' values and every other value of the first four.
        for (i, hd) in handles.iter().enumerate() {
            if i >= 256 || i % 2 == 1 {
                h.free(*hd);
            }
        }
        let released = h.trim();
        assert_eq!(released, full / 10 * 6, "the six empty chunks at the end go");
        assert_eq!(h.reserved_bytes(), full - released);
        for (i, hd) in handles.iter().enumerate().take(256).step_by(2) {
            assert_eq!(h.get(*hd, 1000).unwrap(), &value(i as u32)[..]);
        }
        // The free list was rebuilt: new values take the holes, then new chunks.
        let more: Vec<(u32, VarHandle)> = (1000..1400).map(|i| (i, h.alloc(&value(i)).unwrap())).collect();
        for (i, hd) in handles.iter().enumerate().take(256).step_by(2) {
            assert_eq!(h.get(*hd, 1000).unwrap(), &value(i as u32)[..]);
        }
        for (i, hd) in &more {
            assert_eq!(h.get(*hd, 1000).unwrap(), &value(*i)[..]);
        }
        // A class that holds nothing gives back every chunk.
        for hd in handles.iter().take(256).step_by(2) {
            h.free(*hd);
        }
        for (_, hd) in &more {
            h.free(*hd);
        }
        h.trim();
        assert_eq!(h.reserved_bytes(), 0);
        let again = h.alloc(&value(7)).unwrap();
        assert_eq!(h.get(again, 1000).unwrap(), &value(7)[..]);
    }

    #[test]
    fn values_round_trip_and_space_is_reused() {
        let mut h = VarHeap::new();
        let a = h.alloc(b"hello world, this is a longer value").unwrap();
        let big = vec![7u8; 100_000];
        let b = h.alloc(&big).unwrap();
        assert_eq!(h.get(a, 35).unwrap(), b"hello world, this is a longer value");
        assert_eq!(h.get(b, big.len()).unwrap(), &big[..]);
        let used = h.used_bytes();
        h.free(a);
        let c = h.alloc(b"another value of similar length!!!").unwrap();
        assert_eq!(c, a, "freed slot is reused");
        assert_eq!(h.used_bytes(), used);
        h.free(b);
        h.free(c);
        assert_eq!(h.used_bytes(), 0);
        assert_eq!(h.live_values(), 0);
    }

    #[test]
    fn bad_handles_do_not_panic() {
        let h = VarHeap::new();
        assert!(h.get(VarHandle(12345), 4).is_none());
        assert!(h.get(VarHandle(u64::MAX), 4).is_none());
    }
}
