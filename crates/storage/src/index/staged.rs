//! An index as two stages: the entries of tuples in memory in a dynamic stage (a hash table
//! or a B-tree, [`super::HashIndex`], [`OrderedIndex`]), the entries of evicted
//! tuples in the compact stage ([`Cold`]). The reference tells which: an entry pointing at a
//! tombstone lives in the compact stage, any other in the dynamic one, so eviction (slot to
//! tombstone) moves an entry down and a merge (tombstone to slot) moves it back up.
//!
//! Lookups ask both stages; ordered ranges merge them in `(key, reference)` order, where a
//! key's slot entries come before its tombstone entries (tombstone references have the top
//! bit set). With nothing evicted the compact stage is empty and every operation is the
//! dynamic stage's alone.

use std::cmp::Ordering;
use std::iter::Peekable;
use std::ops::{Bound, ControlFlow};

use super::cold::{Cold, ColdKey, Entry};
use super::entry::{HotStage, TupleRef};
use super::ordered::{OrdKey, OrderedIndex, visit_ahead};

/// One index: a dynamic stage `H` and the compact stage.
pub struct Staged<H, K: ColdKey> {
    hot: H,
    cold: Cold<K>,
}

impl<H: HotStage<K> + Default, K: ColdKey> Default for Staged<H, K> {
    fn default() -> Self {
        Staged {
            hot: H::default(),
            cold: Cold::default(),
        }
    }
}

impl<H: HotStage<K>, K: ColdKey> Staged<H, K> {
    pub fn insert(&mut self, key: K, r: TupleRef) {
        match r.as_tombstone() {
            Some(id) => self.cold.insert(&key, id),
            None => self.hot.insert(key, r),
        }
    }

    pub fn remove(&mut self, key: &K, r: TupleRef) -> bool {
        match r.as_tombstone() {
            Some(id) => self.cold.remove(key, id),
            None => self.hot.remove(key, r),
        }
    }

    /// Re-points `(key, old)` to `new`, moving it between the stages when one of the two
    /// is a tombstone and the other is not.
    pub fn replace(&mut self, key: &K, old: TupleRef, new: TupleRef) -> bool {
        match (old.as_tombstone(), new.as_tombstone()) {
            (None, None) => self.hot.replace(key, old, new),
            (None, Some(to)) => {
                let had = self.hot.remove(key, old);
                if had {
                    self.cold.insert(key, to);
                }
                had
            }
            (Some(from), None) => {
                let had = self.cold.remove(key, from);
                if had {
                    self.hot.insert(key.clone(), new);
                }
                had
            }
            (Some(from), Some(to)) => {
                let had = self.cold.remove(key, from);
                if had {
                    self.cold.insert(key, to);
                }
                had
            }
        }
    }

    pub fn has_other(&self, key: &K, except: Option<TupleRef>) -> bool {
        self.hot.has_other(key, except)
            || (!self.cold.is_empty() && {
                let except = except.and_then(TupleRef::as_tombstone);
                self.cold.lookup(key).any(|id| Some(id) != except)
            })
    }

    /// The key's entries: those of tuples in memory first, then those of evicted tuples.
    #[inline]
    pub fn lookup(&self, key: &K, mut f: impl FnMut(TupleRef) -> ControlFlow<()>) -> ControlFlow<()> {
        self.hot.lookup(key, &mut f)?;
        if self.cold.is_empty() {
            return ControlFlow::Continue(());
        }
        self.cold.lookup(key).try_for_each(|id| f(TupleRef::tombstone(id)))
    }

    pub fn for_each(&self, mut f: impl FnMut(&K, TupleRef)) {
        self.hot.for_each(&mut f);
        self.cold.for_each(|k, id| f(&k, TupleRef::tombstone(id)));
    }

    pub fn len(&self) -> usize {
        self.hot.len() + self.cold.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the dynamic stage.
    pub fn hot_bytes(&self) -> usize {
        self.hot.memory_bytes()
    }

    /// Bytes of the compact stage.
    pub fn cold_bytes(&self) -> usize {
        self.cold.memory_bytes()
    }

    /// Entries in the compact stage (of evicted tuples).
    pub fn cold_len(&self) -> usize {
        self.cold.len()
    }
}

impl<K: OrdKey + ColdKey> Staged<OrderedIndex<K>, K> {
    /// Visits entries with keys between the bounds, ascending or descending.
    pub fn range(
        &self,
        lo: Bound<&K>,
        hi: Bound<&K>,
        reverse: bool,
        f: impl FnMut(TupleRef) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.cold.is_empty() {
            return self.hot.range(lo, hi, reverse, f);
        }
        self.range_ahead(lo, hi, reverse, |_| {}, f)
    }

    /// [`Staged::range`], telling `ahead` of each entry a few entries before `f` visits it
    /// ([`OrderedIndex::range_ahead`]).
    pub fn range_ahead(
        &self,
        lo: Bound<&K>,
        hi: Bound<&K>,
        reverse: bool,
        ahead: impl FnMut(TupleRef),
        f: impl FnMut(TupleRef) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.cold.is_empty() {
            return self.hot.range_ahead(lo, hi, reverse, ahead, f);
        }
        let Some(hot) = self.hot.entries(lo, hi) else {
            return ControlFlow::Continue(());
        };
        if reverse {
            visit_ahead(Merge::new(hot.rev(), self.cold.descending(lo, hi), true), ahead, f)
        } else {
            visit_ahead(Merge::new(hot, self.cold.ascending(lo, hi), false), ahead, f)
        }
    }
}

/// The two stages' entries of a range as one sequence in index order.
#[derive(Clone)]
struct Merge<'a, K: ColdKey + 'a, H: Iterator<Item = &'a (K, TupleRef)>, C: Iterator<Item = Entry<'a, K>>> {
    hot: Peekable<H>,
    cold: Peekable<C>,
    reverse: bool,
}

impl<'a, K: ColdKey + 'a, H, C> Merge<'a, K, H, C>
where
    H: Iterator<Item = &'a (K, TupleRef)>,
    C: Iterator<Item = Entry<'a, K>>,
{
    fn new(hot: H, cold: C, reverse: bool) -> Self {
        Merge {
            hot: hot.peekable(),
            cold: cold.peekable(),
            reverse,
        }
    }
}

impl<'a, K: ColdKey + 'a, H, C> Iterator for Merge<'a, K, H, C>
where
    H: Iterator<Item = &'a (K, TupleRef)>,
    C: Iterator<Item = Entry<'a, K>>,
{
    type Item = TupleRef;

    fn next(&mut self) -> Option<TupleRef> {
        let take_hot = match (self.hot.peek(), self.cold.peek()) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            // Equal keys: the slot entry (hot) sorts first, so ascending takes it first and
            // descending last.
            (Some(h), Some((c, i))) => match c.cmp_key(*i, &h.0) {
                Ordering::Less => self.reverse,
                Ordering::Greater => !self.reverse,
                Ordering::Equal => !self.reverse,
            },
        };
        if take_hot {
            self.hot.next().map(|e| e.1)
        } else {
            self.cold.next().map(|(c, i)| TupleRef::tombstone(c.id(i)))
        }
    }
}
