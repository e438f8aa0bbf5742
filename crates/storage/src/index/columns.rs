//! The columns of a compact-stage chunk ([`super::cold`]): keys and tombstone ids, each
//! stored in as few bytes as the chunk's values need.
//!
//! Integers (keys, ids) are offsets from the chunk's smallest value, all of one width, the
//! fewest bytes that hold the chunk's span (frame-of-reference coding; no bytes at all when
//! every value is the same): the keys of a chunk of dense integer keys take 2 bytes each,
//! tombstone ids 3. Byte keys of one length (every key of integer-like columns: composite
//! primary keys such as TPC-C's `(w_id, d_id, o_id, number)`) are cut into 8-byte words,
//! and each word position is coded as integers are: words every key of the chunk shares
//! take no bytes, a column whose values lie close together one or two. Byte keys of
//! different lengths (text) keep the prefix all of the chunk's keys share once and the rest
//! of each key back to back with a 4-byte end. A chunk holds at most a few hundred entries,
//! so a value that does not fit the chunk's coding re-codes the chunk.

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

/// Unsigned integers as offsets from `base`, `width` bytes each (little-endian); width 0
/// when all of them are `base`.
#[derive(Default)]
pub struct Packed {
    base: u64,
    /// 0 to 8.
    width: u8,
    len: u32,
    data: Vec<u8>,
}

/// Bytes that hold `span`.
fn width_for(span: u64) -> u8 {
    ((64 - span.leading_zeros()) as u8).div_ceil(8)
}

impl Packed {
    pub fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        let w = self.width as usize;
        let mut b = [0u8; 8];
        b[..w].copy_from_slice(&self.data[i * w..i * w + w]);
        self.base.wrapping_add(u64::from_le_bytes(b))
    }

    fn fits(&self, v: u64) -> bool {
        self.len > 0 && v >= self.base && (self.width == 8 || v - self.base < 1u64 << (8 * u32::from(self.width)))
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
        Packed {
            base: min,
            width,
            len: vals.len() as u32,
            data,
        }
    }

    pub fn insert(&mut self, i: usize, v: u64) {
        if !self.fits(v) {
            let mut vals: Vec<u64> = self.values().collect();
            vals.insert(i, v);
            *self = Packed::from_values(&vals);
            return;
        }
        let w = self.width as usize;
        grow(&mut self.data, w);
        let bytes = (v - self.base).to_le_bytes();
        self.data.splice(i * w..i * w, bytes[..w].iter().copied());
        self.len += 1;
    }

    pub fn remove(&mut self, i: usize) {
        let w = self.width as usize;
        self.data.drain(i * w..i * w + w);
        self.len -= 1;
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

/// Byte keys: cut into coded words when they all have one length, else the prefix they all
/// share and the rest of each back to back with its end.
pub enum BytesColumn {
    Words(Words),
    Varied(Varied),
}

impl Default for BytesColumn {
    fn default() -> Self {
        BytesColumn::Varied(Varied::default())
    }
}

/// Keys of `len` bytes each: word position `j` (bytes `8j..8j + 8`, big-endian, the last one
/// padded with zeros) is `lanes[j]`. Big-endian words compare as the bytes they hold, so a
/// key compares word by word.
pub struct Words {
    len: usize,
    lanes: Vec<Packed>,
}

/// Word `j` of `k`, of the bytes `k` has there (zeros after its end).
#[inline]
fn word(k: &[u8], j: usize) -> u64 {
    let lo = (8 * j).min(k.len());
    let hi = (8 * j + 8).min(k.len());
    let mut b = [0u8; 8];
    b[..hi - lo].copy_from_slice(&k[lo..hi]);
    u64::from_be_bytes(b)
}

impl Words {
    fn from_keys(len: usize, keys: &[Vec<u8>]) -> Words {
        let lanes = (0..len.div_ceil(8))
            .map(|j| Packed::from_values(&keys.iter().map(|k| word(k, j)).collect::<Vec<u64>>()))
            .collect();
        Words { len, lanes }
    }

    fn count(&self) -> usize {
        self.lanes.first().map_or(0, Packed::len)
    }

    #[inline]
    fn cmp_at(&self, i: usize, k: &[u8]) -> Ordering {
        for (j, lane) in self.lanes.iter().enumerate() {
            let lo = 8 * j;
            if lo >= k.len() {
                // `k` is a proper prefix of the key.
                return Ordering::Greater;
            }
            let here = (lo + 8).min(self.len) - lo;
            let both = here.min(k.len() - lo);
            let mask = u64::MAX << (8 * (8 - both));
            match (lane.get(i) & mask).cmp(&word(k, j)) {
                Ordering::Equal if both < here => return Ordering::Greater,
                Ordering::Equal => {}
                o => return o,
            }
        }
        self.len.cmp(&k.len())
    }

    fn key(&self, i: usize) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.lanes.len() * 8);
        for lane in &self.lanes {
            k.extend_from_slice(&lane.get(i).to_be_bytes());
        }
        k.truncate(self.len);
        k
    }

    fn bytes(&self) -> usize {
        self.lanes.capacity() * std::mem::size_of::<Packed>() + self.lanes.iter().map(Packed::bytes).sum::<usize>()
    }
}

/// Keys of different lengths: the prefix they all share, then the rest of each back to back
/// with its end.
#[derive(Default)]
pub struct Varied {
    prefix: Vec<u8>,
    rest: Vec<u8>,
    ends: Vec<u32>,
}

impl Varied {
    fn span(&self, i: usize) -> (usize, usize) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        (start, self.ends[i] as usize)
    }

    fn rest_of(&self, i: usize) -> &[u8] {
        let (s, e) = self.span(i);
        &self.rest[s..e]
    }

    fn key(&self, i: usize) -> Vec<u8> {
        let mut k = self.prefix.clone();
        k.extend_from_slice(self.rest_of(i));
        k
    }

    fn from_keys(keys: &[Vec<u8>]) -> Varied {
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
        Varied { prefix, rest, ends }
    }

    #[inline]
    fn cmp_at(&self, i: usize, k: &[u8]) -> Ordering {
        let p = self.prefix.len();
        if k.len() < p || k[..p] != self.prefix[..] {
            // The key at `i` starts with the prefix, so the prefix decides.
            return self.prefix[..].cmp(&k[..p.min(k.len())]).then(Ordering::Greater);
        }
        self.rest_of(i).cmp(&k[p..])
    }

    /// Inserts `k`, which starts with the prefix.
    fn insert(&mut self, i: usize, k: &[u8]) {
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

    fn bytes(&self) -> usize {
        self.prefix.capacity() + self.rest.capacity() + self.ends.capacity() * 4
    }
}

impl BytesColumn {
    fn full(&self, i: usize) -> Vec<u8> {
        match self {
            BytesColumn::Words(w) => w.key(i),
            BytesColumn::Varied(v) => v.key(i),
        }
    }

    /// A column of `keys` (in order): words when they have one length.
    fn from_keys(keys: &[Vec<u8>]) -> BytesColumn {
        match keys.first() {
            Some(first) if !first.is_empty() && keys.iter().all(|k| k.len() == first.len()) => {
                BytesColumn::Words(Words::from_keys(first.len(), keys))
            }
            _ => BytesColumn::Varied(Varied::from_keys(keys)),
        }
    }

    fn all(&self) -> Vec<Vec<u8>> {
        (0..self.len()).map(|i| self.full(i)).collect()
    }

    /// Re-codes the column with `k` inserted at `i`.
    fn recode_with(&mut self, i: usize, k: &[u8]) {
        let mut keys = self.all();
        keys.insert(i, k.to_vec());
        *self = BytesColumn::from_keys(&keys);
    }
}

impl KeyColumn<KeyBuf> for BytesColumn {
    fn len(&self) -> usize {
        match self {
            BytesColumn::Words(w) => w.count(),
            BytesColumn::Varied(v) => v.ends.len(),
        }
    }
    #[inline]
    fn cmp_at(&self, i: usize, k: &KeyBuf) -> Ordering {
        match self {
            BytesColumn::Words(w) => w.cmp_at(i, k),
            BytesColumn::Varied(v) => v.cmp_at(i, k),
        }
    }
    fn key_at(&self, i: usize) -> KeyBuf {
        KeyBuf::new(&self.full(i))
    }
    fn insert(&mut self, i: usize, k: &KeyBuf) {
        match self {
            BytesColumn::Words(w) if w.count() > 0 && k.len() == w.len => {
                for (j, lane) in w.lanes.iter_mut().enumerate() {
                    lane.insert(i, word(k, j));
                }
            }
            BytesColumn::Varied(v) if !v.ends.is_empty() && k.starts_with(&v.prefix) => v.insert(i, k),
            _ => self.recode_with(i, k),
        }
    }
    fn remove(&mut self, i: usize) {
        match self {
            BytesColumn::Words(w) => w.lanes.iter_mut().for_each(|lane| lane.remove(i)),
            BytesColumn::Varied(v) => v.remove(i),
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
        match self {
            BytesColumn::Words(w) => w.lanes.iter_mut().for_each(Packed::trim),
            BytesColumn::Varied(v) => {
                trim_vec(&mut v.rest);
                trim_vec(&mut v.ends);
            }
        }
    }
    fn bytes(&self) -> usize {
        match self {
            BytesColumn::Words(w) => w.bytes(),
            BytesColumn::Varied(v) => v.bytes(),
        }
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

    proptest! {
        /// A byte column compares its keys with any probe (shorter, longer, equal) as the
        /// bytes compare, whether its keys share one length (words) or not.
        #[test]
        fn byte_keys_compare_as_their_bytes(
            mut keys in prop::collection::vec(prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 13), 1..40),
            odd in prop::option::of(prop::collection::vec(any::<u8>(), 0..20)),
            probes in prop::collection::vec(prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..18), 1..20),
        ) {
            keys.extend(odd);
            keys.sort();
            let col = BytesColumn::from_keys(&keys);
            let one_length = keys.iter().all(|k| k.len() == keys[0].len()) && !keys[0].is_empty();
            prop_assert_eq!(matches!(col, BytesColumn::Words(_)), one_length);
            let mut probes = probes;
            // Probes that are prefixes and extensions of the keys themselves.
            for k in &keys {
                probes.push(k[..k.len() / 2].to_vec());
                let mut longer = k.clone();
                longer.push(0);
                probes.push(longer);
                probes.push(k.clone());
            }
            for (i, k) in keys.iter().enumerate() {
                prop_assert_eq!(&col.full(i), k);
                for p in &probes {
                    prop_assert_eq!(col.cmp_at(i, &KeyBuf::new(p)), k.as_slice().cmp(p.as_slice()), "{:?} vs {:?}", k, p);
                }
            }
        }
    }

    /// Keys of four integer columns, as a TPC-C order line's `(w_id, d_id, o_id, number)`,
    /// take a byte or two a key in words, against a dozen as a prefix and rests.
    #[test]
    fn composite_integer_keys_take_a_byte_or_two() {
        let keys: Vec<Vec<u8>> = (3000..3020)
            .flat_map(|o: i64| (1..=12).map(move |n: i64| [1i64, 7, o, n]))
            .map(|cols| {
                cols.iter()
                    .flat_map(|c| ((*c as u64) ^ (1 << 63)).to_be_bytes())
                    .collect()
            })
            .collect();
        let words = BytesColumn::from_keys(&keys);
        assert!(matches!(words, BytesColumn::Words(_)));
        let per_key = (words.bytes() - 4 * std::mem::size_of::<Packed>()) as f64 / keys.len() as f64;
        assert!(per_key <= 2.0, "{per_key} bytes per key");
        let varied = Varied::from_keys(&keys);
        assert!(varied.bytes() >= 12 * keys.len(), "{} bytes", varied.bytes());
    }

    #[test]
    fn widths_follow_the_span() {
        assert_eq!(width_for(0), 0);
        assert_eq!(width_for(255), 1);
        assert_eq!(width_for(256), 2);
        assert_eq!(width_for(u64::MAX), 8);
        let dense = Packed::from_values(&(1_000_000..1_000_256).collect::<Vec<u64>>());
        assert_eq!(dense.bytes(), 256);
        let every_other = Packed::from_values(&(0..256).map(|v| 1_000_000 + 2 * v).collect::<Vec<u64>>());
        assert_eq!(every_other.bytes(), 256 * 2);
    }
}
