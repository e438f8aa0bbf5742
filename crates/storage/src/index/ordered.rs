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

use super::TupleRef;

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

impl<K: OrdKey> OrderedIndex<K> {
    pub fn new() -> Self {
        OrderedIndex {
            set: BTreeSet::new(),
            key_heap_bytes: 0,
        }
    }

    pub fn insert(&mut self, key: K, r: TupleRef) {
        let heap = key.heap_bytes();
        if self.set.insert((key, r)) {
            self.key_heap_bytes += heap;
        }
    }

    pub fn remove(&mut self, key: &K, r: TupleRef) -> bool {
        // The probe clones the key; byte keys are short and usually inline.
        if self.set.remove(&(key.clone(), r)) {
            self.key_heap_bytes -= key.heap_bytes();
            true
        } else {
            false
        }
    }

    pub fn replace(&mut self, key: &K, old: TupleRef, new: TupleRef) -> bool {
        if self.set.remove(&(key.clone(), old)) {
            self.set.insert((key.clone(), new));
            true
        } else {
            false
        }
    }

    pub fn has_other(&self, key: &K, except: Option<TupleRef>) -> bool {
        self.set
            .range((lower(Bound::Included(key)), upper(Bound::Included(key))))
            .any(|e| Some(e.1) != except)
    }

    pub fn lookup(&self, key: &K, f: impl FnMut(TupleRef) -> ControlFlow<()>) -> ControlFlow<()> {
        self.range(Bound::Included(key), Bound::Included(key), false, f)
    }

    /// Visits entries with keys between the bounds, ascending or descending.
    pub fn range(
        &self,
        lo: Bound<&K>,
        hi: Bound<&K>,
        reverse: bool,
        mut f: impl FnMut(TupleRef) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let (lo, hi) = (lower(lo), upper(hi));
        // BTreeSet::range panics on an inverted or empty-exclusive range; such a range
        // selects nothing.
        if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) = (&lo, &hi)
            && (a > b || (a == b && (matches!(lo, Bound::Excluded(_)) || matches!(hi, Bound::Excluded(_)))))
        {
            return ControlFlow::Continue(());
        }
        let range = self.set.range((lo, hi));
        if reverse {
            for e in range.rev() {
                f(e.1)?;
            }
        } else {
            for e in range {
                f(e.1)?;
            }
        }
        ControlFlow::Continue(())
    }

    pub fn for_each(&self, mut f: impl FnMut(&K, TupleRef)) {
        for e in &self.set {
            f(&e.0, e.1)
        }
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Estimated bytes: leaves of 11 entries two-thirds full, one internal node per ~7 leaves.
    pub fn memory_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(K, TupleRef)>();
        let leaf = 16 + 11 * entry;
        let internal = leaf + 12 * 8;
        let leaves = self.set.len().div_ceil(7);
        leaves * leaf + leaves.div_ceil(7) * internal + self.key_heap_bytes
    }
}
