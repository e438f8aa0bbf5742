//! Indexes. All of them stay in memory (an invariant of anti-caching); each entry resolves to an
//! in-memory tuple or, once the tuple is evicted, to its tombstone. An index keeps the entries
//! of evicted tuples in a compact stage of their own ([`staged`], [`cold`]).

mod cold;
mod columns;
mod entry;
mod hash;
mod key;
mod ordered;
mod staged;

use std::ops::{Bound, ControlFlow};

pub use entry::TupleRef;
pub use hash::HashIndex;
pub use key::{IndexKey, KeyBuf, KeyEncoder, KeyKind, encode_value, prefix_successor};
pub use ordered::OrderedIndex;
pub use staged::Staged;

use crate::schema::IndexKind;

/// A bound of an index range, in the index's key representation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyBound {
    Unbounded,
    Included(IndexKey),
    Excluded(IndexKey),
}

/// One index of one table at one partition.
pub enum IndexStore {
    HashInt(Staged<HashIndex<i64>, i64>),
    HashBytes(Staged<HashIndex<KeyBuf>, KeyBuf>),
    OrderedInt(Staged<OrderedIndex<i64>, i64>),
    OrderedBytes(Staged<OrderedIndex<KeyBuf>, KeyBuf>),
}

macro_rules! dispatch {
    ($self:expr, $key:expr, |$ix:ident, $k:ident| $body:expr, $default:expr) => {
        match ($self, $key) {
            (IndexStore::HashInt($ix), IndexKey::Int($k)) => $body,
            (IndexStore::OrderedInt($ix), IndexKey::Int($k)) => $body,
            (IndexStore::HashBytes($ix), IndexKey::Bytes($k)) => $body,
            (IndexStore::OrderedBytes($ix), IndexKey::Bytes($k)) => $body,
            _ => $default,
        }
    };
}

/// Runs `$body` on an ordered index with `lo` and `hi` as bounds of its key type; a hash
/// index, or a bound of the other key type, visits nothing.
macro_rules! ordered_range {
    ($self:expr, $lo:expr, $hi:expr, |$ix:ident, $l:ident, $h:ident| $body:expr) => {
        match $self {
            IndexStore::OrderedInt($ix) => match (int_bound($lo), int_bound($hi)) {
                (Some($l), Some($h)) => $body,
                _ => ControlFlow::Continue(()),
            },
            IndexStore::OrderedBytes($ix) => match (bytes_bound($lo), bytes_bound($hi)) {
                (Some($l), Some($h)) => $body,
                _ => ControlFlow::Continue(()),
            },
            _ => ControlFlow::Continue(()),
        }
    };
}

impl IndexStore {
    pub fn new(kind: IndexKind, key: KeyKind) -> IndexStore {
        match (kind, key) {
            (IndexKind::Hash, KeyKind::Int) => IndexStore::HashInt(Staged::default()),
            (IndexKind::Hash, KeyKind::Bytes) => IndexStore::HashBytes(Staged::default()),
            (IndexKind::Ordered, KeyKind::Int) => IndexStore::OrderedInt(Staged::default()),
            (IndexKind::Ordered, KeyKind::Bytes) => IndexStore::OrderedBytes(Staged::default()),
        }
    }

    pub fn is_ordered(&self) -> bool {
        matches!(self, IndexStore::OrderedInt(_) | IndexStore::OrderedBytes(_))
    }

    pub fn insert(&mut self, key: IndexKey, r: TupleRef) {
        match (self, key) {
            (IndexStore::HashInt(ix), IndexKey::Int(k)) => ix.insert(k, r),
            (IndexStore::OrderedInt(ix), IndexKey::Int(k)) => ix.insert(k, r),
            (IndexStore::HashBytes(ix), IndexKey::Bytes(k)) => ix.insert(k, r),
            (IndexStore::OrderedBytes(ix), IndexKey::Bytes(k)) => ix.insert(k, r),
            _ => debug_assert!(false, "key kind does not match index"),
        }
    }

    pub fn remove(&mut self, key: &IndexKey, r: TupleRef) -> bool {
        dispatch!(self, key, |ix, k| ix.remove(k, r), false)
    }

    /// Re-points the entry `(key, old)` to `new` (eviction and merge).
    pub fn replace(&mut self, key: &IndexKey, old: TupleRef, new: TupleRef) -> bool {
        dispatch!(self, key, |ix, k| ix.replace(k, old, new), false)
    }

    /// Whether `key` has an entry other than `except` (unique constraint checks).
    pub fn has_other(&self, key: &IndexKey, except: Option<TupleRef>) -> bool {
        dispatch!(self, key, |ix, k| ix.has_other(k, except), false)
    }

    /// Visits the entries equal to `key`.
    #[inline]
    pub fn lookup(&self, key: &IndexKey, f: impl FnMut(TupleRef) -> ControlFlow<()>) -> ControlFlow<()> {
        dispatch!(self, key, |ix, k| ix.lookup(k, f), ControlFlow::Continue(()))
    }

    /// Visits entries between the bounds in key order. Hash indexes cannot do this and visit
    /// nothing; the planner only asks ordered indexes.
    pub fn range(
        &self,
        lo: &KeyBound,
        hi: &KeyBound,
        reverse: bool,
        f: impl FnMut(TupleRef) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        ordered_range!(self, lo, hi, |ix, lo, hi| ix.range(lo, hi, reverse, f))
    }

    /// [`IndexStore::range`], telling `ahead` of each entry a few entries before `f`
    /// visits it ([`ordered::OrderedIndex::range_ahead`]): a range read prefetches the
    /// tuples it is about to read.
    pub fn range_ahead(
        &self,
        lo: &KeyBound,
        hi: &KeyBound,
        reverse: bool,
        ahead: impl FnMut(TupleRef),
        f: impl FnMut(TupleRef) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        ordered_range!(self, lo, hi, |ix, lo, hi| ix.range_ahead(lo, hi, reverse, ahead, f))
    }

    /// Every entry (for consistency checks and tests).
    pub fn for_each(&self, mut f: impl FnMut(IndexKey, TupleRef)) {
        match self {
            IndexStore::HashInt(ix) => ix.for_each(|k, r| f(IndexKey::Int(*k), r)),
            IndexStore::OrderedInt(ix) => ix.for_each(|k, r| f(IndexKey::Int(*k), r)),
            IndexStore::HashBytes(ix) => ix.for_each(|k, r| f(IndexKey::Bytes(k.clone()), r)),
            IndexStore::OrderedBytes(ix) => ix.for_each(|k, r| f(IndexKey::Bytes(k.clone()), r)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            IndexStore::HashInt(ix) => ix.len(),
            IndexStore::HashBytes(ix) => ix.len(),
            IndexStore::OrderedInt(ix) => ix.len(),
            IndexStore::OrderedBytes(ix) => ix.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the dynamic stage: the entries of tuples in memory.
    pub fn hot_bytes(&self) -> usize {
        match self {
            IndexStore::HashInt(ix) => ix.hot_bytes(),
            IndexStore::HashBytes(ix) => ix.hot_bytes(),
            IndexStore::OrderedInt(ix) => ix.hot_bytes(),
            IndexStore::OrderedBytes(ix) => ix.hot_bytes(),
        }
    }

    /// Bytes of the compact stage: the entries of evicted tuples ([`staged`]).
    pub fn cold_bytes(&self) -> usize {
        match self {
            IndexStore::HashInt(ix) => ix.cold_bytes(),
            IndexStore::HashBytes(ix) => ix.cold_bytes(),
            IndexStore::OrderedInt(ix) => ix.cold_bytes(),
            IndexStore::OrderedBytes(ix) => ix.cold_bytes(),
        }
    }

    pub fn memory_bytes(&self) -> usize {
        self.hot_bytes() + self.cold_bytes()
    }
}

fn int_bound(b: &KeyBound) -> Option<Bound<&i64>> {
    Some(match b {
        KeyBound::Unbounded => Bound::Unbounded,
        KeyBound::Included(IndexKey::Int(k)) => Bound::Included(k),
        KeyBound::Excluded(IndexKey::Int(k)) => Bound::Excluded(k),
        _ => return None,
    })
}

fn bytes_bound(b: &KeyBound) -> Option<Bound<&KeyBuf>> {
    Some(match b {
        KeyBound::Unbounded => Bound::Unbounded,
        KeyBound::Included(IndexKey::Bytes(k)) => Bound::Included(k),
        KeyBound::Excluded(IndexKey::Bytes(k)) => Bound::Excluded(k),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(i64, u32),
        Remove(i64, u32),
        Replace(i64, u32, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0i64..50, 0u32..40).prop_map(|(k, r)| Op::Insert(k, r)),
            (0i64..50, 0u32..40).prop_map(|(k, r)| Op::Remove(k, r)),
            (0i64..50, 0u32..40, 0u32..40).prop_map(|(k, a, b)| Op::Replace(k, a, b)),
        ]
    }

    fn check_against_model(kind: IndexKind, key_kind: KeyKind, ops: Vec<Op>) -> Result<(), TestCaseError> {
        let mk = |k: i64| match key_kind {
            KeyKind::Int => IndexKey::Int(k),
            KeyKind::Bytes => IndexKey::Bytes(KeyBuf::new(&k.to_be_bytes())),
        };
        let mut ix = IndexStore::new(kind, key_kind);
        // model: set of (key, ref)
        let mut model: BTreeMap<(i64, u32), ()> = BTreeMap::new();
        // Odd references are tombstones (entries of evicted tuples, in the compact stage),
        // so operations move entries between the stages.
        let tr = |r: u32| if r % 2 == 1 { TupleRef::tombstone(r) } else { TupleRef::slot(r) }.0;
        let ops = ops.into_iter().map(|op| match op {
            Op::Insert(k, r) => Op::Insert(k, tr(r)),
            Op::Remove(k, r) => Op::Remove(k, tr(r)),
            Op::Replace(k, a, b) => Op::Replace(k, tr(a), tr(b)),
        });
        for op in ops {
            match op {
                Op::Insert(k, r) => {
                    if let std::collections::btree_map::Entry::Vacant(e) = model.entry((k, r)) {
                        ix.insert(mk(k), TupleRef(r));
                        e.insert(());
                    }
                }
                Op::Remove(k, r) => {
                    prop_assert_eq!(ix.remove(&mk(k), TupleRef(r)), model.remove(&(k, r)).is_some());
                }
                Op::Replace(k, a, b) => {
                    if !model.contains_key(&(k, b)) || a == b {
                        let had = model.remove(&(k, a)).is_some();
                        prop_assert_eq!(ix.replace(&mk(k), TupleRef(a), TupleRef(b)), had);
                        if had {
                            model.insert((k, b), ());
                        }
                    }
                }
            }
            prop_assert_eq!(ix.len(), model.len());
        }
        for k in 0..50 {
            let mut got = vec![];
            let _ = ix.lookup(&mk(k), |r| {
                got.push(r.0);
                ControlFlow::Continue(())
            });
            got.sort();
            let want: Vec<u32> = model.keys().filter(|(mk, _)| *mk == k).map(|(_, r)| *r).collect();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(ix.has_other(&mk(k), None), !want.is_empty());
        }
        if ix.is_ordered() {
            let (lo, hi) = (10, 30);
            let want: Vec<u32> = model
                .keys()
                .filter(|(k, _)| (lo..hi).contains(k))
                .map(|(_, r)| *r)
                .collect();
            for reverse in [false, true] {
                let (mut got, mut ahead) = (vec![], vec![]);
                let _ = ix.range(&KeyBound::Included(mk(lo)), &KeyBound::Excluded(mk(hi)), reverse, |r| {
                    got.push(r.0);
                    ControlFlow::Continue(())
                });
                let _ = ix.range_ahead(
                    &KeyBound::Included(mk(lo)),
                    &KeyBound::Excluded(mk(hi)),
                    reverse,
                    |r| ahead.push(r.0),
                    |_| ControlFlow::Continue(()),
                );
                if reverse {
                    got.reverse();
                    ahead.reverse();
                }
                prop_assert_eq!(&got, &want);
                prop_assert_eq!(&ahead, &want);
            }
        }
        let mut every = vec![];
        ix.for_each(|k, r| every.push((k, r.0)));
        every.sort();
        let want: Vec<(IndexKey, u32)> = model.keys().map(|(k, r)| (mk(*k), *r)).collect();
        prop_assert_eq!(every, want);
        Ok(())
    }

    proptest! {
        #[test]
        fn hash_int_matches_model(ops in prop::collection::vec(op(), 0..200)) {
            check_against_model(IndexKind::Hash, KeyKind::Int, ops)?;
        }
        #[test]
        fn hash_bytes_matches_model(ops in prop::collection::vec(op(), 0..200)) {
            check_against_model(IndexKind::Hash, KeyKind::Bytes, ops)?;
        }
        #[test]
        fn ordered_int_matches_model(ops in prop::collection::vec(op(), 0..200)) {
            check_against_model(IndexKind::Ordered, KeyKind::Int, ops)?;
        }
        #[test]
        fn ordered_bytes_matches_model(ops in prop::collection::vec(op(), 0..200)) {
            check_against_model(IndexKind::Ordered, KeyKind::Bytes, ops)?;
        }
    }

    #[test]
    fn empty_and_inverted_ranges_select_nothing() {
        let mut ix = IndexStore::new(IndexKind::Ordered, KeyKind::Int);
        ix.insert(IndexKey::Int(5), TupleRef(1));
        let count = |lo: KeyBound, hi: KeyBound| {
            let mut n = 0;
            let _ = ix.range(&lo, &hi, false, |_| {
                n += 1;
                ControlFlow::Continue(())
            });
            n
        };
        assert_eq!(
            count(
                KeyBound::Excluded(IndexKey::Int(5)),
                KeyBound::Excluded(IndexKey::Int(5))
            ),
            0
        );
        assert_eq!(
            count(
                KeyBound::Included(IndexKey::Int(6)),
                KeyBound::Included(IndexKey::Int(4))
            ),
            0
        );
        assert_eq!(
            count(
                KeyBound::Included(IndexKey::Int(5)),
                KeyBound::Included(IndexKey::Int(5))
            ),
            1
        );
        assert_eq!(
            count(
                KeyBound::Excluded(IndexKey::Int(5)),
                KeyBound::Included(IndexKey::Int(5))
            ),
            0
        );
    }

    #[test]
    fn tuple_refs_tell_slots_from_tombstones() {
        let s = TupleRef::slot(42);
        let t = TupleRef::tombstone(42);
        assert_eq!(s.as_slot(), Some(42));
        assert_eq!(t.as_tombstone(), Some(42));
        assert!(t.is_evicted() && !s.is_evicted());
        assert_ne!(s, t);
    }
}
