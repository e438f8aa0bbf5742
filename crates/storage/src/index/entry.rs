//! What an index entry points at ([`TupleRef`]), which every kind of index stores, and what
//! the dynamic stage of every kind of index does ([`HotStage`]).

use std::ops::ControlFlow;

/// What an index entry points at: a tuple slot, or the tombstone of an evicted tuple. The
/// top bit tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TupleRef(pub u32);

const EVICTED_BIT: u32 = 1 << 31;

impl TupleRef {
    #[inline]
    pub fn slot(slot: u32) -> TupleRef {
        debug_assert!(slot & EVICTED_BIT == 0);
        TupleRef(slot)
    }

    #[inline]
    pub fn tombstone(id: u32) -> TupleRef {
        debug_assert!(id & EVICTED_BIT == 0);
        TupleRef(id | EVICTED_BIT)
    }

    #[inline]
    pub fn as_slot(self) -> Option<u32> {
        (self.0 & EVICTED_BIT == 0).then_some(self.0)
    }

    #[inline]
    pub fn as_tombstone(self) -> Option<u32> {
        (self.0 & EVICTED_BIT != 0).then_some(self.0 & !EVICTED_BIT)
    }

    #[inline]
    pub fn is_evicted(self) -> bool {
        self.0 & EVICTED_BIT != 0
    }
}

/// What the dynamic stage of an index does (both kinds of index).
pub trait HotStage<K> {
    fn insert(&mut self, key: K, r: TupleRef);
    fn remove(&mut self, key: &K, r: TupleRef) -> bool;
    fn replace(&mut self, key: &K, old: TupleRef, new: TupleRef) -> bool;
    fn has_other(&self, key: &K, except: Option<TupleRef>) -> bool;
    fn lookup(&self, key: &K, f: impl FnMut(TupleRef) -> ControlFlow<()>) -> ControlFlow<()>;
    fn for_each(&self, f: impl FnMut(&K, TupleRef));
    fn len(&self) -> usize;
    fn memory_bytes(&self) -> usize;
}
