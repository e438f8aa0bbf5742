//! The columns of a compact-stage chunk ([`super::cold`]): keys and tombstone ids, each
//! stored in as few bytes as the chunk's values need.
//!
//! Integers (keys, ids) are offsets from the chunk's smallest value, all of one width, the
//! fewest bytes that hold the chunk's span (frame-of-reference coding): the keys of a chunk
//! of dense integer keys take 2 bytes each, tombstone ids 3. Byte keys keep the prefix all
//! of the chunk's keys share once and the rest of each key back to back with a 4-byte end.
//! A chunk holds at most a few hundred entries, so a value that does not fit the chunk's
//! coding re-codes the chunk.

use std::cmp::Ordering;

use super::KeyBuf;

/// The keys of one chunk, in order.
pub trait KeyColumn<K>: Default {
    fn len(&self) -> usize;
    /// How the key at `i` compares with `k`.
    fn cmp_at(&self, i: usize, k: &K) -> Ordering;
    fn key_at(&self, i: usize) -> K;
    fn insert(&mut self, i: usize, k: &K);
    fn remove(&mut self, i: usize);
    /// Moves the keys from `at` on into a new column.
    fn split_off(&mut self, at: usize) -> Self;
    /// Moves all of `other`'s keys to the end of this column.
    fn append(&mut self, other: &mut Self);
    /// Gives back capacity well beyond the length.
    fn trim(&mut self);
    /// Bytes allocated.
    fn bytes(&self) -> usize;
}

/// Grows a vector by a quarter at a time rather than doubling: chunks are many and small,
/// and doubling would leave a third of their memory unused on average.
pub(super) fn grow<T>(v: &mut Vec<T>, more: usize) {
    if v.len() + more > v.capacity() {
        v.reserve_exact((v.capacity() / 4).max(more).max(8));
    }
}

pub(super) fn trim_vec<T>(v: &mut Vec<T>) {
    if v.capacity() > v.len() + v.len() / 2 + 8 {
        v.shrink_to(v.len() + v.len() / 4);
    }
}

/// Unsigned integers as offsets from `base`, `width` bytes each (little-endian).
#[derive(Default)]
pub struct Packed {
    base: u64,
    /// 0 while empty, then 1 to 8.
    width: u8,
    data: Vec<u8>,
}

/// Bytes that hold `span`.
fn width_for(span: u64) -> u8 {
    (((64 - span.leading_zeros()) as u8).div_ceil(8)).max(1)
}

impl Packed {
    pub fn len(&self) -> usize {
        match self.width {
            0 => 0,
            w => self.data.len() / w as usize,
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        let w = self.width as usize;
        let mut b = [0u8; 8];
        b[..w].copy_from_slice(&self.data[i * w..i * w + w]);
        self.base.wrapping_add(u64::from_le_bytes(b))
    }

    fn fits(&self, v: u64) -> bool {
        v >= self.base && (self.width == 8 || v - self.base < 1u64 << (8 * u32::from(self.width)))
    }

    fn values(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The values, coded from their smallest in the width their span needs.
    fn from_values(vals: &[u64]) -> Packed {
        let (Some(&min), Some(&max)) = (vals.iter().min(), vals.iter().max()) else {
            return Packed::default();
        };
        let width = width_for(max - min);
        let mut data = Vec::with_capacity(vals.len() * width as usize);
        for v in vals {
            data.extend_from_slice(&(v - min).to_le_bytes()[..width as usize]);
        }
        Packed { base: min, width, data }
    }

    pub fn insert(&mut self, i: usize, v: u64) {
        if !self.fits(v) || self.width == 0 {
            let mut vals: Vec<u64> = self.values().collect();
            vals.insert(i, v);
            *self = Packed::from_values(&vals);
            return;
        }
        let w = self.width as usize;
        grow(&mut self.data, w);
        let bytes = (v - self.base).to_le_bytes();
        self.data.splice(i * w..i * w, bytes[..w].iter().copied());
    }

    pub fn remove(&mut self, i: usize) {
        let w = self.width as usize;
        self.data.drain(i * w..i * w + w);
    }

    pub fn split_off(&mut self, at: usize) -> Packed {
        let right: Vec<u64> = (at..self.len()).map(|i| self.get(i)).collect();
        let left: Vec<u64> = (0..at).map(|i| self.get(i)).collect();
        *self = Packed::from_values(&left);
        Packed::from_values(&right)
    }

    pub fn append(&mut self, other: &mut Packed) {
        let all: Vec<u64> = self.values().chain(other.values()).collect();
        *self = Packed::from_values(&all);
        *other = Packed::default();
    }

    pub fn trim(&mut self) {
        trim_vec(&mut self.data);
    }

    pub fn bytes(&self) -> usize {
        self.data.capacity()
    }
}

/// Maps an `i64` to a `u64` of the same order.
#[inline]
fn ordered(k: i64) -> u64 {
    (k as u64) ^ (1 << 63)
}

#[inline]
fn unordered(v: u64) -> i64 {
    (v ^ (1 << 63)) as i64
}

/// Integer keys, frame-of-reference coded ([`Packed`]).
#[derive(Default)]
pub struct IntColumn(Packed);

impl KeyColumn<i64> for IntColumn {
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    fn cmp_at(&self, i: usize, k: &i64) -> Ordering {
        self.0.get(i).cmp(&ordered(*k))
    }
    fn key_at(&self, i: usize) -> i64 {
        unordered(self.0.get(i))
    }
    fn insert(&mut self, i: usize, k: &i64) {
        self.0.insert(i, ordered(*k));
    }
    fn remove(&mut self, i: usize) {
        self.0.remove(i);
    }
    fn split_off(&mut self, at: usize) -> Self {
        IntColumn(self.0.split_off(at))
    }
    fn append(&mut self, other: &mut Self) {
        self.0.append(&mut other.0);
    }
    fn trim(&mut self) {
        self.0.trim();
    }
    fn bytes(&self) -> usize {
        self.0.bytes()
    }
}

/// Byte keys: the prefix they all share, then the rest of each back to back with its end.
#[derive(Default)]
pub struct BytesColumn {
    prefix: Vec<u8>,
    rest: Vec<u8>,
    ends: Vec<u32>,
}

impl BytesColumn {
    fn span(&self, i: usize) -> (usize, usize) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        (start, self.ends[i] as usize)
    }

    fn rest_of(&self, i: usize) -> &[u8] {
        let (s, e) = self.span(i);
        &self.rest[s..e]
    }

    fn full(&self, i: usize) -> Vec<u8> {
        let mut k = self.prefix.clone();
        k.extend_from_slice(self.rest_of(i));
        k
    }

    /// A column of `keys` (in order), sharing their longest common prefix.
    fn from_keys(keys: &[Vec<u8>]) -> BytesColumn {
        let prefix = match (keys.first(), keys.last()) {
            // Sorted: what the first and last share, all share.
            (Some(a), Some(b)) => a[..a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count()].to_vec(),
            _ => Vec::new(),
        };
        let mut rest = Vec::with_capacity(keys.iter().map(|k| k.len() - prefix.len()).sum());
        let mut ends = Vec::with_capacity(keys.len());
        for k in keys {
            rest.extend_from_slice(&k[prefix.len()..]);
            ends.push(rest.len() as u32);
        }
        BytesColumn { prefix, rest, ends }
    }

    fn all(&self) -> Vec<Vec<u8>> {
        (0..self.len()).map(|i| self.full(i)).collect()
    }
}

impl KeyColumn<KeyBuf> for BytesColumn {
    fn len(&self) -> usize {
        self.ends.len()
    }
    #[inline]
    fn cmp_at(&self, i: usize, k: &KeyBuf) -> Ordering {
        let p = self.prefix.len();
        if k.len() < p || k[..p] != self.prefix[..] {
            // The key at `i` starts with the prefix, so the prefix decides.
            return self.prefix[..].cmp(&k[..p.min(k.len())]).then(Ordering::Greater);
        }
        self.rest_of(i).cmp(&k[p..])
    }
    fn key_at(&self, i: usize) -> KeyBuf {
        KeyBuf::new(&self.full(i))
    }
    fn insert(&mut self, i: usize, k: &KeyBuf) {
        if self.ends.is_empty() || !k.starts_with(&self.prefix) {
            let mut keys = self.all();
            keys.insert(i, k.to_vec());
            *self = BytesColumn::from_keys(&keys);
            return;
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let suffix = &k[self.prefix.len()..];
        grow(&mut self.rest, suffix.len());
        grow(&mut self.ends, 1);
        self.rest.splice(start..start, suffix.iter().copied());
        let n = suffix.len() as u32;
        for e in &mut self.ends[i..] {
            *e += n;
        }
        self.ends.insert(i, start as u32 + n);
    }
    fn remove(&mut self, i: usize) {
        let (s, e) = self.span(i);
        self.rest.drain(s..e);
        self.ends.remove(i);
        let n = (e - s) as u32;
        for end in &mut self.ends[i..] {
            *end -= n;
        }
    }
    fn split_off(&mut self, at: usize) -> Self {
        let keys = self.all();
        *self = BytesColumn::from_keys(&keys[..at]);
        BytesColumn::from_keys(&keys[at..])
    }
    fn append(&mut self, other: &mut Self) {
        let mut keys = self.all();
        keys.extend(other.all());
        *self = BytesColumn::from_keys(&keys);
        *other = BytesColumn::default();
    }
    fn trim(&mut self) {
        trim_vec(&mut self.rest);
        trim_vec(&mut self.ends);
    }
    fn bytes(&self) -> usize {
        self.prefix.capacity() + self.rest.capacity() + self.ends.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the values' spread, a packed column gives back what was put in.
        #[test]
        fn packed_values_come_back(ops in prop::collection::vec((any::<bool>(), prop_oneof![0u64..300, any::<u64>(), 1u64 << 40..(1u64 << 40) + 70_000]), 0..400)) {
            let mut p = Packed::default();
            let mut model: Vec<u64> = Vec::new();
            for (add, v) in ops {
                if add || model.is_empty() {
                    let at = (v as usize) % (model.len() + 1);
                    p.insert(at, v);
                    model.insert(at, v);
                } else {
                    let at = (v as usize) % model.len();
                    p.remove(at);
                    model.remove(at);
                }
                prop_assert_eq!(p.len(), model.len());
            }
            let at = model.len() / 3;
            let right = p.split_off(at);
            let mut back: Vec<u64> = p.values().collect();
            back.extend(right.values());
            prop_assert_eq!(back, model);
        }
    }

    #[test]
    fn widths_follow_the_span() {
        assert_eq!(width_for(0), 1);
        assert_eq!(width_for(255), 1);
        assert_eq!(width_for(256), 2);
        assert_eq!(width_for(u64::MAX), 8);
        let dense = Packed::from_values(&(1_000_000..1_000_256).collect::<Vec<u64>>());
        assert_eq!(dense.bytes(), 256);
        let every_other = Packed::from_values(&(0..256).map(|v| 1_000_000 + 2 * v).collect::<Vec<u64>>());
        assert_eq!(every_other.bytes(), 256 * 2);
    }
}
