//! Hash indexes: equality lookups in one probe.
//!
//! Entries are `(key, tuple reference)` pairs in an open-addressing table. A non-unique index
//! stores one entry per tuple; equal keys share a probe sequence, so hash indexes suit keys
//! with few duplicates (use an ordered index for low-cardinality columns).

use std::hash::{BuildHasher, Hash};
use std::ops::ControlFlow;

use hashbrown::HashTable;

use super::entry::{HotStage, TupleRef};
use crate::alloc::MapAlloc;

/// Key types a hash index can hold.
pub trait HashKey: Hash + Eq + Clone {
    fn heap_bytes(&self) -> usize;
}

impl HashKey for i64 {
    fn heap_bytes(&self) -> usize {
        0
    }
}

impl HashKey for super::KeyBuf {
    fn heap_bytes(&self) -> usize {
        super::KeyBuf::heap_bytes(self)
    }
}

/// Shards per index: a resize copies one shard at a time, so the transient memory of a
/// growing index is a sixteenth of the index.
const SHARDS: usize = 16;

/// A shard's table shrinks when a quarter full only above this capacity (small tables are
/// not worth the rehash).
const SHRINK_ABOVE: usize = 1024;

pub struct HashIndex<K> {
    shards: Vec<HashTable<(K, TupleRef), MapAlloc>>,
    hasher: foldhash::fast::RandomState,
    key_heap_bytes: usize,
}

impl<K: HashKey> Default for HashIndex<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: HashKey> HashIndex<K> {
    pub fn new() -> Self {
        HashIndex {
            shards: (0..SHARDS).map(|_| HashTable::new_in(MapAlloc)).collect(),
            hasher: foldhash::fast::RandomState::default(),
            key_heap_bytes: 0,
        }
    }

    #[inline]
    fn hash(&self, k: &K) -> u64 {
        self.hasher.hash_one(k)
    }

    /// The shard of a hash: bits above those any table uses for its bucket index, below
    /// the 7 it uses for control bytes.
    #[inline]
    fn shard(h: u64) -> usize {
        ((h >> 40) as usize) & (SHARDS - 1)
    }

    pub fn is_empty(&self) -> bool {
        self.shards.iter().all(|s| s.is_empty())
    }
}

impl<K: HashKey> HotStage<K> for HashIndex<K> {
    fn insert(&mut self, key: K, r: TupleRef) {
        let h = self.hash(&key);
        self.key_heap_bytes += key.heap_bytes();
        let hasher = &self.hasher;
        self.shards[Self::shard(h)].insert_unique(h, (key, r), |e| hasher.hash_one(&e.0));
    }

    fn remove(&mut self, key: &K, r: TupleRef) -> bool {
        let h = self.hash(key);
        let shard = Self::shard(h);
        match self.shards[shard].find_entry(h, |e| e.0 == *key && e.1 == r) {
            Ok(entry) => {
                let ((k, _), _) = entry.remove();
                self.key_heap_bytes -= k.heap_bytes();
                // Entries leave in bulk when their tuples are evicted (they move to the
                // compact stage): give the table's memory back once it is mostly empty.
                let table = &mut self.shards[shard];
                if table.len() * 4 < table.capacity() && table.capacity() > SHRINK_ABOVE {
                    let hasher = &self.hasher;
                    table.shrink_to(table.len() * 2, |e| hasher.hash_one(&e.0));
                }
                true
            }
            Err(_) => false,
        }
    }

    fn replace(&mut self, key: &K, old: TupleRef, new: TupleRef) -> bool {
        let h = self.hash(key);
        match self.shards[Self::shard(h)].find_mut(h, |e| e.0 == *key && e.1 == old) {
            Some(e) => {
                e.1 = new;
                true
            }
            None => false,
        }
    }

    /// Whether the key has an entry other than `except`.
    fn has_other(&self, key: &K, except: Option<TupleRef>) -> bool {
        let h = self.hash(key);
        self.shards[Self::shard(h)]
            .iter_hash(h)
            .any(|e| e.0 == *key && Some(e.1) != except)
    }

    #[inline]
    fn lookup(&self, key: &K, mut f: impl FnMut(TupleRef) -> ControlFlow<()>) -> ControlFlow<()> {
        let h = self.hash(key);
        for e in self.shards[Self::shard(h)].iter_hash(h) {
            if e.0 == *key {
                f(e.1)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// Every entry, in no particular order.
    fn for_each(&self, mut f: impl FnMut(&K, TupleRef)) {
        for shard in &self.shards {
            for e in shard.iter() {
                f(&e.0, e.1)
            }
        }
    }

    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    /// Bytes allocated: the tables' buckets and control bytes plus out-of-line key bytes.
    fn memory_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.allocation_size()).sum::<usize>() + self.key_heap_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries leaving in bulk (their tuples evicted) give the table's memory back, and
    /// those that stay are still found.
    #[test]
    fn a_mostly_emptied_index_gives_memory_back() {
        let mut ix = HashIndex::<i64>::new();
        for k in 0..200_000 {
            ix.insert(k, TupleRef::slot(k as u32));
        }
        let full = ix.memory_bytes();
        for k in 0..200_000 {
            if k % 20 != 0 {
                assert!(ix.remove(&k, TupleRef::slot(k as u32)));
            }
        }
        assert!(
            ix.memory_bytes() < full / 4,
            "{} of {full} bytes kept",
            ix.memory_bytes()
        );
        for k in (0..200_000).step_by(20) {
            let mut found = Vec::new();
            let _ = ix.lookup(&k, |r| {
                found.push(r);
                ControlFlow::Continue(())
            });
            assert_eq!(found, vec![TupleRef::slot(k as u32)]);
        }
    }
}
