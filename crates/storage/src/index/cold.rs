//! The compact stage of an index: the entries of evicted tuples.
//!
//! The Hybrid Index (Zhang et al., SIGMOD 2016) splits an index into a dynamic stage that
//! takes writes and a compact, read-mostly stage for the rest. Here the split follows the
//! anti-cache: an entry moves to this stage when its tuple is evicted (it then points at a
//! tombstone) and back to the dynamic stage ([`super::HashIndex`], [`super::OrderedIndex`])
//! when the tuple is merged back. Evicted tuples are the cold ones, so their entries are the
//! ones to keep small, and the dynamic stage keeps only the hot tuples' entries.
//!
//! Entries are `(key, tombstone id)`, sorted, in chunks of at most [`CHUNK`] entries. A
//! chunk stores its keys as one column and its tombstone ids as another, each coded in as
//! few bytes as the chunk's values need ([`super::columns`]): about 2 bytes per key of dense
//! integer keys and 3 per id, no per-entry pointer, padding or hash-table slack, against
//! about 27 bytes per entry in the B-tree and 24 to 34 in the hash table. Chunks sit in a
//! B-tree map under their first entry, so an insertion or removal moves (or re-codes) at
//! most one chunk's entries; chunks that fall below a quarter full are merged with their
//! successor.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;

use super::KeyBuf;
use super::columns::{BytesColumn, IntColumn, KeyColumn, Packed};

/// Most entries in one chunk: an insertion moves at most this many keys and ids.
const CHUNK: usize = 256;

/// Key types the compact stage can store, with the column that stores them.
pub trait ColdKey: Ord + Clone {
    type Column: KeyColumn<Self>;
}

impl ColdKey for i64 {
    type Column = IntColumn;
}

impl ColdKey for KeyBuf {
    type Column = BytesColumn;
}

/// Up to [`CHUNK`] consecutive entries.
pub struct Chunk<K: ColdKey> {
    keys: K::Column,
    ids: Packed,
}

impl<K: ColdKey> Chunk<K> {
    fn len(&self) -> usize {
        self.ids.len()
    }

    #[inline]
    fn cmp_entry(&self, i: usize, k: &K, id: u32) -> Ordering {
        self.keys.cmp_at(i, k).then(self.ids.get(i).cmp(&u64::from(id)))
    }

    /// The first position whose entry is not below `(k, id)`.
    fn position(&self, k: &K, id: u32) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.cmp_entry(mid, k, id) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn first(&self) -> (K, u32) {
        (self.keys.key_at(0), self.id(0))
    }

    /// How the key at `i` compares with `k`.
    #[inline]
    pub fn cmp_key(&self, i: usize, k: &K) -> Ordering {
        self.keys.cmp_at(i, k)
    }

    #[inline]
    pub fn id(&self, i: usize) -> u32 {
        self.ids.get(i) as u32
    }

    fn bytes(&self) -> usize {
        // The chunk's own record and its map key, with the map's node slack.
        let fixed = (std::mem::size_of::<Self>() + std::mem::size_of::<(K, u32)>()) * 3 / 2;
        fixed + self.keys.bytes() + self.ids.bytes()
    }
}

/// One entry of the compact stage, for iteration: a chunk and a position in it.
pub type Entry<'a, K> = (&'a Chunk<K>, usize);

/// The compact stage of one index; see the module documentation.
pub struct Cold<K: ColdKey> {
    chunks: BTreeMap<(K, u32), Chunk<K>>,
    len: usize,
    bytes: usize,
}

impl<K: ColdKey> Default for Cold<K> {
    fn default() -> Self {
        Cold {
            chunks: BTreeMap::new(),
            len: 0,
            bytes: 0,
        }
    }
}

impl<K: ColdKey> Cold<K> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes allocated: chunks' columns and records and the map holding them.
    pub fn memory_bytes(&self) -> usize {
        self.bytes
    }

    /// The map key of the chunk that holds, or would hold, `(k, id)`: the last chunk whose
    /// first entry is not above it, else the first chunk.
    fn chunk_for(&self, k: &K, id: u32) -> Option<(K, u32)> {
        self.chunks
            .range(..=(k.clone(), id))
            .next_back()
            .or_else(|| self.chunks.iter().next())
            .map(|(key, _)| key.clone())
    }

    /// Takes a chunk out of the map to change it; [`Cold::put`] puts it back under its
    /// (possibly new) first entry, splitting or merging it as its size asks.
    fn take(&mut self, key: &(K, u32)) -> Chunk<K> {
        let c = self.chunks.remove(key).expect("the chunk was just found");
        self.bytes -= c.bytes();
        c
    }

    fn put(&mut self, mut c: Chunk<K>) {
        if c.len() == 0 {
            return;
        }
        if c.len() > CHUNK {
            let at = c.len() / 2;
            let right = Chunk {
                keys: c.keys.split_off(at),
                ids: c.ids.split_off(at),
            };
            self.insert_chunk(right);
        } else if c.len() < CHUNK / 4 {
            let first = c.first();
            let next = self
                .chunks
                .range((Bound::Excluded(first), Bound::Unbounded))
                .next()
                .filter(|(_, n)| n.len() + c.len() <= CHUNK * 3 / 4)
                .map(|(key, _)| key.clone());
            if let Some(next) = next {
                let mut n = self.take(&next);
                c.keys.append(&mut n.keys);
                c.ids.append(&mut n.ids);
            }
            c.keys.trim();
            c.ids.trim();
        }
        self.insert_chunk(c);
    }

    fn insert_chunk(&mut self, c: Chunk<K>) {
        self.bytes += c.bytes();
        self.chunks.insert(c.first(), c);
    }

    /// Adds `(k, id)` (a tuple evicted under tombstone `id`); it must not be present.
    pub fn insert(&mut self, k: &K, id: u32) {
        self.len += 1;
        let key = self.chunk_for(k, id);
        if let Some(c) = key.as_ref().and_then(|key| self.chunks.get_mut(key)) {
            let at = c.position(k, id);
            // Not a new first entry and no split: the chunk changes where it is.
            if at > 0 && c.len() < CHUNK {
                let before = c.bytes();
                c.keys.insert(at, k);
                c.ids.insert(at, u64::from(id));
                let after = c.bytes();
                self.bytes = self.bytes - before + after;
                return;
            }
        }
        let mut c = match key {
            Some(key) => self.take(&key),
            None => Chunk {
                keys: K::Column::default(),
                ids: Packed::default(),
            },
        };
        let at = c.position(k, id);
        debug_assert!(at == c.len() || c.cmp_entry(at, k, id) != Ordering::Equal);
        c.keys.insert(at, k);
        c.ids.insert(at, u64::from(id));
        self.put(c);
    }

    /// Removes `(k, id)`; whether it was present.
    pub fn remove(&mut self, k: &K, id: u32) -> bool {
        let Some(key) = self.chunk_for(k, id) else {
            return false;
        };
        let Some(c) = self.chunks.get_mut(&key) else {
            return false;
        };
        let at = c.position(k, id);
        if at == c.len() || c.cmp_entry(at, k, id) != Ordering::Equal {
            return false;
        }
        // Not the first entry and the chunk stays over a quarter full: it changes where it is.
        if at > 0 && c.len() > CHUNK / 4 {
            let before = c.bytes();
            c.keys.remove(at);
            c.ids.remove(at);
            let after = c.bytes();
            self.bytes = self.bytes - before + after;
            self.len -= 1;
            return true;
        }
        let mut c = self.take(&key);
        c.keys.remove(at);
        c.ids.remove(at);
        self.len -= 1;
        self.put(c);
        true
    }

    /// Entries with keys within the bounds, ascending.
    pub fn ascending<'a>(
        &'a self,
        lo: Bound<&'a K>,
        hi: Bound<&'a K>,
    ) -> impl Iterator<Item = Entry<'a, K>> + Clone + 'a {
        let start = match lo {
            Bound::Included(k) => self.chunk_for(k, 0),
            Bound::Excluded(k) => self.chunk_for(k, u32::MAX),
            Bound::Unbounded => None,
        };
        let chunks = match start {
            Some(s) => self.chunks.range(s..),
            None => self.chunks.range(..),
        };
        chunks
            .flat_map(|(_, c)| (0..c.len()).map(move |i| (c, i)))
            .skip_while(move |(c, i)| match lo {
                Bound::Included(k) => c.cmp_key(*i, k) == Ordering::Less,
                Bound::Excluded(k) => c.cmp_key(*i, k) != Ordering::Greater,
                Bound::Unbounded => false,
            })
            .take_while(move |(c, i)| within_hi(c, *i, hi))
    }

    /// Entries with keys within the bounds, descending.
    pub fn descending<'a>(
        &'a self,
        lo: Bound<&'a K>,
        hi: Bound<&'a K>,
    ) -> impl Iterator<Item = Entry<'a, K>> + Clone + 'a {
        let end = match hi {
            Bound::Included(k) | Bound::Excluded(k) => Some((k.clone(), u32::MAX)),
            Bound::Unbounded => None,
        };
        let chunks = match end {
            Some(e) => self.chunks.range(..=e),
            None => self.chunks.range(..),
        };
        chunks
            .rev()
            .flat_map(|(_, c)| (0..c.len()).rev().map(move |i| (c, i)))
            .skip_while(move |(c, i)| !within_hi(c, *i, hi))
            .take_while(move |(c, i)| match lo {
                Bound::Included(k) => c.cmp_key(*i, k) != Ordering::Less,
                Bound::Excluded(k) => c.cmp_key(*i, k) == Ordering::Greater,
                Bound::Unbounded => true,
            })
    }

    /// The tombstone ids of the entries equal to `k`, ascending.
    pub fn lookup<'a>(&'a self, k: &'a K) -> impl Iterator<Item = u32> + 'a {
        let (mut chunks, first) = match self.chunk_for(k, 0) {
            Some(s) => {
                let at = self.chunks[&s].position(k, 0);
                (self.chunks.range(s..), at)
            }
            None => (self.chunks.range(..), 0),
        };
        let mut current = chunks.next().map(|(_, c)| (c, first));
        std::iter::from_fn(move || {
            loop {
                let (c, i) = current.as_mut()?;
                if *i < c.len() {
                    let (chunk, at) = (*c, *i);
                    *i += 1;
                    if chunk.cmp_key(at, k) == Ordering::Equal {
                        return Some(chunk.id(at));
                    }
                    current = None;
                    return None;
                }
                current = chunks.next().map(|(_, c)| (c, 0));
            }
        })
    }

    /// Every entry, ascending.
    pub fn for_each(&self, mut f: impl FnMut(K, u32)) {
        for c in self.chunks.values() {
            for i in 0..c.len() {
                f(c.keys.key_at(i), c.id(i));
            }
        }
    }
}

fn within_hi<K: ColdKey>(c: &Chunk<K>, i: usize, hi: Bound<&K>) -> bool {
    match hi {
        Bound::Included(k) => c.cmp_key(i, k) != Ordering::Greater,
        Bound::Excluded(k) => c.cmp_key(i, k) == Ordering::Less,
        Bound::Unbounded => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn check<K: ColdKey + std::fmt::Debug>(
        mk: impl Fn(i64) -> K,
        ops: Vec<(bool, i64, u32)>,
    ) -> Result<(), TestCaseError> {
        let mut cold = Cold::<K>::default();
        let mut model: BTreeSet<(K, u32)> = BTreeSet::new();
        for (add, k, id) in ops {
            let k = mk(k);
            if add {
                if model.insert((k.clone(), id)) {
                    cold.insert(&k, id);
                }
            } else {
                prop_assert_eq!(cold.remove(&k, id), model.remove(&(k, id)));
            }
            prop_assert_eq!(cold.len(), model.len());
        }
        let mut all = Vec::new();
        cold.for_each(|k, id| all.push((k, id)));
        let want: Vec<(K, u32)> = model.iter().cloned().collect();
        prop_assert_eq!(&all, &want);
        for k in (-1..1100).map(&mk) {
            let got: Vec<u32> = cold.lookup(&k).collect();
            let want: Vec<u32> = model.iter().filter(|e| e.0 == k).map(|e| e.1).collect();
            prop_assert_eq!(got, want, "key {:?}", k);
        }
        let bounds = |k: i64| [Bound::Included(mk(k)), Bound::Excluded(mk(k)), Bound::Unbounded];
        for lo in [0, 300, 555, 1100].into_iter().flat_map(bounds) {
            for hi in [0, 301, 700, 1100].into_iter().flat_map(bounds) {
                let within = |k: &K| {
                    (match &lo {
                        Bound::Included(l) => k >= l,
                        Bound::Excluded(l) => k > l,
                        Bound::Unbounded => true,
                    }) && (match &hi {
                        Bound::Included(h) => k <= h,
                        Bound::Excluded(h) => k < h,
                        Bound::Unbounded => true,
                    })
                };
                let want: Vec<u32> = model.iter().filter(|e| within(&e.0)).map(|e| e.1).collect();
                let up: Vec<u32> = cold.ascending(lo.as_ref(), hi.as_ref()).map(|(c, i)| c.id(i)).collect();
                prop_assert_eq!(&up, &want, "{:?}..{:?}", lo, hi);
                let mut down: Vec<u32> = cold
                    .descending(lo.as_ref(), hi.as_ref())
                    .map(|(c, i)| c.id(i))
                    .collect();
                down.reverse();
                prop_assert_eq!(&down, &want, "{:?}..{:?} descending", lo, hi);
            }
        }
        let expect_bytes: usize = cold.chunks.values().map(|c| c.bytes()).sum();
        prop_assert_eq!(cold.memory_bytes(), expect_bytes);
        for (key, c) in &cold.chunks {
            prop_assert!(c.len() > 0 && c.len() <= CHUNK);
            prop_assert_eq!(key, &c.first());
        }
        Ok(())
    }

    fn ops() -> impl Strategy<Value = Vec<(bool, i64, u32)>> {
        // Many insertions and fewer removals over a key space wide enough for several chunks.
        prop::collection::vec((prop::bool::weighted(0.7), 0i64..1000, 0u32..4), 0..3000)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn int_keys_match_a_sorted_set(ops in ops()) {
            check(|k| k, ops)?;
        }
        #[test]
        fn byte_keys_match_a_sorted_set(ops in ops()) {
            // Variable lengths: the key's decimal digits, so byte order differs from numeric.
            check(|k| KeyBuf::new(k.to_string().repeat(1 + k.rem_euclid(5) as usize).as_bytes()), ops)?;
        }
        #[test]
        fn composite_integer_keys_match_a_sorted_set(ops in ops()) {
            // Keys of one length, as integer columns give them: (k / 7, k % 7), big-endian.
            check(|k| {
                let (a, b) = ((k.div_euclid(7) as u64) ^ (1 << 63), (k.rem_euclid(7) as u64) ^ (1 << 63));
                KeyBuf::new(&[a.to_be_bytes(), b.to_be_bytes()].concat())
            }, ops)?;
        }
    }

    /// The point of the stage: an integer entry takes a few bytes, fewer the denser the keys.
    #[test]
    fn integer_entries_take_a_few_bytes() {
        let per_entry = |keys: &mut dyn Iterator<Item = i64>| {
            let mut cold = Cold::<i64>::default();
            // Tombstone ids in a pseudo-random order, as eviction gives them.
            let mut x = 7u64;
            for k in keys {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                cold.insert(&k, (x >> 40) as u32 % 4_000_000);
            }
            cold.memory_bytes() as f64 / cold.len() as f64
        };
        // Every other key of a dense range (a table's ids, half of them evicted).
        let dense = per_entry(&mut (0..400_000).map(|k| k * 2));
        assert!(dense < 8.0, "{dense} bytes per dense entry");
        // Keys spread over 2^44 values, in a pseudo-random order.
        let mut x = 1u64;
        let spread = per_entry(&mut (0..200_000).map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 20) as i64
        }));
        assert!(spread < 12.0, "{spread} bytes per spread entry");
    }
}
