//! What an index entry points at ([`TupleRef`]), which every kind of index stores.

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
