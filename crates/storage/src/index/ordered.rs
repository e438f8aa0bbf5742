//! Ordered indexes: equality, prefix and range lookups in key order.
//!
//! Entries are `(key, tuple reference)` pairs in a B-tree set, so duplicates of a key sit
//! next to each other ordered by reference and every entry is individually addressable (for
//! eviction, which re-points one entry from a tuple to its tombstone).
//!
//! Memory is estimated from the B-tree's node layout (the standard library does not report
//! its allocations): leaves of up to 11 entries, on average about two-thirds full.

use std::collections::BTreeSet;
use std::ops::{Bound, ControlFlow};

use super::entry::{HotStage, TupleRef};

pub trait OrdKey: Ord + Clone {
    fn heap_bytes(&self) -> usize;
    /// The smallest key, for building bounds.
    fn min_value() -> Self;
}

impl OrdKey for i64 {
    fn heap_bytes(&self) -> usize {
        0
    }
    fn min_value() -> Self {
        i64::MIN
    }
}

impl OrdKey for super::KeyBuf {
    fn heap_bytes(&self) -> usize {
        super::KeyBuf::heap_bytes(self)
    }
    fn min_value() -> Self {
        super::KeyBuf::new(&[])
    }
}

pub struct OrderedIndex<K> {
    set: BTreeSet<(K, TupleRef)>,
    key_heap_bytes: usize,
}

impl<K: OrdKey> Default for OrderedIndex<K> {
    fn default() -> Self {
        Self::new()
    }
}

const MIN_REF: TupleRef = TupleRef(0);
const MAX_REF: TupleRef = TupleRef(u32::MAX);

fn lower<K: Clone>(b: Bound<&K>) -> Bound<(K, TupleRef)> {
    match b {
        Bound::Included(k) => Bound::Included((k.clone(), MIN_REF)),
        Bound::Excluded(k) => Bound::Excluded((k.clone(), MAX_REF)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn upper<K: Clone>(b: Bound<&K>) -> Bound<(K, TupleRef)> {
    match b {
        Bound::Included(k) => Bound::Included((k.clone(), MAX_REF)),
        Bound::Excluded(k) => Bound::Excluded((k.clone(), MIN_REF)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// How many entries ahead of a range's visit [`OrderedIndex::range_ahead`] looks: enough
/// for the fetches of a few tuples to overlap (a tuple of a few cache lines each; a core
/// keeps about ten misses in flight).
const LOOK_AHEAD: usize = 4;

pub(super) fn visit_ahead(
    entries: impl Iterator<Item = TupleRef> + Clone,
    mut ahead: impl FnMut(TupleRef),
    mut f: impl FnMut(TupleRef) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut lead = entries.clone();
    for r in lead.by_ref().take(LOOK_AHEAD) {
        ahead(r);
    }
    for r in entries {
        if let Some(next) = lead.next() {
            ahead(next);
        }
        f(r)?;
    }
    ControlFlow::Continue(())
}

impl<K: OrdKey> OrderedIndex<K> {
    pub fn new() -> Self {
        OrderedIndex {
            set: BTreeSet::new(),
            key_heap_bytes: 0,
        }
    }

    /// Visits entries with keys between the bounds, ascending or descending.
    pub fn range(
        &self,
        lo: Bound<&K>,
        hi: Bound<&K>,
        reverse: bool,
        mut f: impl FnMut(TupleRef) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let Some(range) = self.entries(lo, hi) else {
            return ControlFlow::Continue(());
        };
        if reverse {
            range.rev().try_for_each(|e| f(e.1))
        } else {
            range.into_iter().try_for_each(|e| f(e.1))
        }
    }

    /// [`OrderedIndex::range`], telling `ahead` of each entry [`LOOK_AHEAD`] entries
    /// before `f` visits it, so the caller can start fetching the tuple it will read.
    pub fn range_ahead(
        &self,
        lo: Bound<&K>,
        hi: Bound<&K>,
        reverse: bool,
        ahead: impl FnMut(TupleRef),
        f: impl FnMut(TupleRef) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let Some(range) = self.entries(lo, hi) else {
            return ControlFlow::Continue(());
        };
        if reverse {
            visit_ahead(range.rev().map(|e| e.1), ahead, f)
        } else {
            visit_ahead(range.map(|e| e.1), ahead, f)
        }
    }

    /// The entries between the bounds; `None` for an inverted or empty-exclusive range
    /// (which selects nothing, and on which `BTreeSet::range` would panic).
    pub(super) fn entries(
        &self,
        lo: Bound<&K>,
        hi: Bound<&K>,
    ) -> Option<std::collections::btree_set::Range<'_, (K, TupleRef)>> {
        let (lo, hi) = (lower(lo), upper(hi));
        if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) = (&lo, &hi)
            && (a > b || (a == b && (matches!(lo, Bound::Excluded(_)) || matches!(hi, Bound::Excluded(_)))))
        {
            return None;
        }
        Some(self.set.range((lo, hi)))
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The entries of one key, in reference order. The range is open above: a bounded one
    /// searches every node on the way down twice (for each end), and one key's entries sit
    /// together, so they end at the first entry of another key.
    fn equal<'a>(&'a self, key: &'a K) -> impl Iterator<Item = &'a (K, TupleRef)> + 'a {
        self.set
            .range((lower(Bound::Included(key)), Bound::Unbounded))
            .take_while(move |e| e.0 == *key)
    }
}

impl<K: OrdKey> HotStage<K> for OrderedIndex<K> {
    fn insert(&mut self, key: K, r: TupleRef) {
        let heap = key.heap_bytes();
        if self.set.insert((key, r)) {
            self.key_heap_bytes += heap;
        }
    }

    fn remove(&mut self, key: &K, r: TupleRef) -> bool {
        // The probe clones the key; byte keys are short and usually inline.
        if self.set.remove(&(key.clone(), r)) {
            self.key_heap_bytes -= key.heap_bytes();
            true
        } else {
            false
        }
    }

    fn replace(&mut self, key: &K, old: TupleRef, new: TupleRef) -> bool {
        if self.set.remove(&(key.clone(), old)) {
            self.set.insert((key.clone(), new));
            true
        } else {
            false
        }
    }

    fn has_other(&self, key: &K, except: Option<TupleRef>) -> bool {
        self.equal(key).any(|e| Some(e.1) != except)
    }

    fn lookup(&self, key: &K, mut f: impl FnMut(TupleRef) -> ControlFlow<()>) -> ControlFlow<()> {
        self.equal(key).try_for_each(|e| f(e.1))
    }

    fn for_each(&self, mut f: impl FnMut(&K, TupleRef)) {
        for e in &self.set {
            f(&e.0, e.1)
        }
    }

    fn len(&self) -> usize {
        self.set.len()
    }

    /// Estimated bytes: leaves of 11 entries two-thirds full, one internal node per ~7 leaves.
    fn memory_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(K, TupleRef)>();
        let leaf = 16 + 11 * entry;
        let internal = leaf + 12 * 8;
        let leaves = self.set.len().div_ceil(7);
        leaves * leaf + leaves.div_ceil(7) * internal + self.key_heap_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `range` (plain iteration) and `range_ahead` visit the same entries in the same
    /// order, for every kind of bound, inverted and empty ranges included.
    #[test]
    fn range_and_range_ahead_visit_the_same_entries() {
        let mut ix = OrderedIndex::<i64>::new();
        for k in 0..30 {
            ix.insert(k / 2, TupleRef(k as u32));
        }
        let bounds = |k: i64| [Bound::Included(k), Bound::Excluded(k), Bound::Unbounded];
        for lo in [-1, 0, 3, 7, 14, 20].into_iter().flat_map(bounds) {
            for hi in [-1, 0, 3, 7, 14, 20].into_iter().flat_map(bounds) {
                for reverse in [false, true] {
                    let (lo, hi) = (lo.as_ref(), hi.as_ref());
                    let mut plain = Vec::new();
                    let _ = ix.range(lo, hi, reverse, |r| {
                        plain.push(r.0);
                        ControlFlow::Continue(())
                    });
                    let mut ahead = Vec::new();
                    let _ = ix.range_ahead(
                        lo,
                        hi,
                        reverse,
                        |_| {},
                        |r| {
                            ahead.push(r.0);
                            ControlFlow::Continue(())
                        },
                    );
                    assert_eq!(plain, ahead, "{lo:?}..{hi:?} reverse {reverse}");
                    let expect: Vec<u32> = {
                        let mut v: Vec<u32> = (0..30u32)
                            .filter(|&r| {
                                let k = i64::from(r) / 2;
                                (match lo {
                                    Bound::Included(&l) => k >= l,
                                    Bound::Excluded(&l) => k > l,
                                    Bound::Unbounded => true,
                                }) && (match hi {
                                    Bound::Included(&h) => k <= h,
                                    Bound::Excluded(&h) => k < h,
                                    Bound::Unbounded => true,
                                })
                            })
                            .collect();
                        if reverse {
                            v.reverse();
                        }
                        v
                    };
                    assert_eq!(plain, expect, "{lo:?}..{hi:?} reverse {reverse}");
                }
            }
        }
    }

    /// Each visited entry was announced to `ahead` exactly [`LOOK_AHEAD`] entries before
    /// its visit (or at the start), in both directions, and a visit that stops the range
    /// stops the announcements too.
    #[test]
    fn entries_are_announced_a_fixed_distance_before_their_visit() {
        let mut ix = OrderedIndex::<i64>::new();
        for k in 0..20 {
            ix.insert(k, TupleRef(k as u32));
        }
        for reverse in [false, true] {
            let events = std::cell::RefCell::new(Vec::new());
            let _ = ix.range_ahead(
                Bound::Included(&3),
                Bound::Excluded(&15),
                reverse,
                |r| events.borrow_mut().push(('a', r.0)),
                |r| {
                    events.borrow_mut().push(('v', r.0));
                    ControlFlow::Continue(())
                },
            );
            let events = events.into_inner();
            let mut order: Vec<u32> = (3..15).collect();
            if reverse {
                order.reverse();
            }
            let announced: Vec<u32> = events.iter().filter(|e| e.0 == 'a').map(|e| e.1).collect();
            let visited: Vec<u32> = events.iter().filter(|e| e.0 == 'v').map(|e| e.1).collect();
            assert_eq!(announced, order);
            assert_eq!(visited, order);
            for (i, r) in order.iter().enumerate() {
                let a = events.iter().position(|e| *e == ('a', *r)).unwrap();
                let v = events.iter().position(|e| *e == ('v', *r)).unwrap();
                let visits_between = events[a..v].iter().filter(|e| e.0 == 'v').count();
                assert_eq!(visits_between, i.min(LOOK_AHEAD), "entry {r}, reverse {reverse}");
            }
        }
        let mut announced = 0;
        let _ = ix.range_ahead(
            Bound::Unbounded,
            Bound::Unbounded,
            false,
            |_| announced += 1,
            |r| {
                if r.0 == 2 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        assert_eq!(announced, 3 + LOOK_AHEAD, "no more than the look-ahead past the stop");
    }

    /// A key's lookup visits exactly its entries, in reference order, and stops where asked;
    /// `has_other` sees them, with neighbours on both sides that must not count.
    #[test]
    fn a_key_sees_its_own_entries_and_none_of_its_neighbours() {
        let mut ix = OrderedIndex::<i64>::new();
        for r in 0..40u32 {
            ix.insert(i64::from(r % 8), TupleRef(r));
        }
        ix.insert(100, TupleRef(7));
        for k in [-1, 0, 3, 7, 8, 100] {
            let mut seen = Vec::new();
            let _ = ix.lookup(&k, |r| {
                seen.push(r.0);
                ControlFlow::Continue(())
            });
            let expect: Vec<u32> = match k {
                0..8 => (0..40u32).filter(|r| i64::from(r % 8) == k).collect(),
                100 => vec![7],
                _ => vec![],
            };
            assert_eq!(seen, expect, "key {k}");
            let mut first = Vec::new();
            let _ = ix.lookup(&k, |r| {
                first.push(r.0);
                ControlFlow::Break(())
            });
            assert_eq!(
                first,
                expect.iter().copied().take(1).collect::<Vec<_>>(),
                "key {k}, stopped"
            );
            assert_eq!(ix.has_other(&k, None), !expect.is_empty(), "key {k}");
            let only = (expect.len() == 1).then(|| TupleRef(expect[0]));
            assert_eq!(
                ix.has_other(&k, only),
                expect.len() > 1,
                "key {k}, except its one entry"
            );
        }
    }
}
