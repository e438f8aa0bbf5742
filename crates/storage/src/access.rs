//! Access tracking for cold-tuple identification.
//!
//! An evictable table owns an [`AccessTracker`]; the table tells it about inserts, removals
//! and (for the sampled fraction of transactions) accesses, and eviction asks it for the
//! coldest tuples. The tracker keeps its state in the tuple headers ([`crate::heap`]), so
//! tracking costs no memory beyond the 9 header bytes every tuple already has.
//!
//! [`LruChain`] is the paper's policy (DeBrabant et al. 2013 §3.1): a doubly linked list through
//! the headers, coldest at the head, hottest at the tail. Other policies implement the same
//! trait so that they can be compared on the same runs.

use crate::heap::{FLAG_IN_CHAIN, FLAG_PINNED, Heap, NIL};

/// Tracks how recently tuples of one table were used.
pub trait AccessTracker: Send {
    /// Short name for reports ("lru", "clock").
    fn name(&self) -> &'static str;
    /// A tuple entered memory because it was inserted or requested by a transaction.
    fn on_insert(&mut self, heap: &mut Heap, slot: u32);
    /// A tuple entered memory without being asked for (the rest of a block-merged block).
    fn on_insert_cold(&mut self, heap: &mut Heap, slot: u32);
    /// A sampled transaction read or wrote the tuple.
    fn on_access(&mut self, heap: &mut Heap, slot: u32);
    /// The tuple left memory (deleted or evicted).
    fn on_remove(&mut self, heap: &mut Heap, slot: u32);
    /// The tuple moved from slot `from` to slot `to` (heap compaction); its header bytes
    /// were copied along.
    fn on_move(&mut self, heap: &mut Heap, from: u32, to: u32);
    /// Appends up to `n` eviction candidates to `out`, coldest first, skipping pinned
    /// tuples. Does not remove them.
    fn victims(&mut self, heap: &mut Heap, n: usize, out: &mut Vec<u32>);
    /// Calls `f` with the tracked tuples from coldest to hottest and returns true, or
    /// returns false if the tracker keeps no such order (snapshots save tuples in this
    /// order so that a restart keeps what was cold, cold).
    fn cold_to_hot(&self, heap: &Heap, f: &mut dyn FnMut(u32)) -> bool {
        let _ = (heap, f);
        false
    }
    /// Number of tuples tracked.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The least-recently-used chain embedded in tuple headers.
#[derive(Debug)]
pub struct LruChain {
    head: u32,
    tail: u32,
    len: usize,
}

impl Default for LruChain {
    fn default() -> Self {
        Self::new()
    }
}

impl LruChain {
    pub fn new() -> LruChain {
        LruChain {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    /// The coldest tuple.
    pub fn head(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The hottest tuple.
    pub fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    fn push_tail(&mut self, heap: &mut Heap, slot: u32) {
        heap.set_prev(slot, self.tail);
        heap.set_next(slot, NIL);
        if self.tail != NIL {
            heap.set_next(self.tail, slot);
        } else {
            self.head = slot;
        }
        self.tail = slot;
        heap.set_flags(slot, heap.flags(slot) | FLAG_IN_CHAIN);
        self.len += 1;
    }

    fn push_head(&mut self, heap: &mut Heap, slot: u32) {
        heap.set_next(slot, self.head);
        heap.set_prev(slot, NIL);
        if self.head != NIL {
            heap.set_prev(self.head, slot);
        } else {
            self.tail = slot;
        }
        self.head = slot;
        heap.set_flags(slot, heap.flags(slot) | FLAG_IN_CHAIN);
        self.len += 1;
    }

    fn unlink(&mut self, heap: &mut Heap, slot: u32) {
        let (p, n) = (heap.prev(slot), heap.next(slot));
        if p != NIL {
            heap.set_next(p, n);
        } else {
            self.head = n;
        }
        if n != NIL {
            heap.set_prev(n, p);
        } else {
            self.tail = p;
        }
        heap.set_prev(slot, NIL);
        heap.set_next(slot, NIL);
        heap.set_flags(slot, heap.flags(slot) & !FLAG_IN_CHAIN);
        self.len -= 1;
    }

    /// Walks the chain from the cold end (for tests and consistency checks).
    pub fn iter_cold_to_hot<'h>(&self, heap: &'h Heap) -> impl Iterator<Item = u32> + 'h {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let s = cur;
                cur = heap.next(s);
                s
            })
        })
    }
}

impl AccessTracker for LruChain {
    fn name(&self) -> &'static str {
        "lru"
    }

    fn cold_to_hot(&self, heap: &Heap, f: &mut dyn FnMut(u32)) -> bool {
        for s in self.iter_cold_to_hot(heap) {
            f(s);
        }
        true
    }

    fn on_insert(&mut self, heap: &mut Heap, slot: u32) {
        if heap.flags(slot) & FLAG_IN_CHAIN == 0 {
            self.push_tail(heap, slot);
        }
    }

    fn on_insert_cold(&mut self, heap: &mut Heap, slot: u32) {
        if heap.flags(slot) & FLAG_IN_CHAIN == 0 {
            self.push_head(heap, slot);
        }
    }

    #[inline]
    fn on_access(&mut self, heap: &mut Heap, slot: u32) {
        if slot == self.tail || heap.flags(slot) & FLAG_IN_CHAIN == 0 {
            return;
        }
        self.unlink(heap, slot);
        self.push_tail(heap, slot);
    }

    fn on_remove(&mut self, heap: &mut Heap, slot: u32) {
        if heap.flags(slot) & FLAG_IN_CHAIN != 0 {
            self.unlink(heap, slot);
        }
    }

    fn on_move(&mut self, heap: &mut Heap, from: u32, to: u32) {
        if heap.flags(to) & FLAG_IN_CHAIN == 0 {
            return;
        }
        let (p, n) = (heap.prev(to), heap.next(to));
        if p != NIL {
            heap.set_next(p, to);
        } else if self.head == from {
            self.head = to;
        }
        if n != NIL {
            heap.set_prev(n, to);
        } else if self.tail == from {
            self.tail = to;
        }
    }

    fn victims(&mut self, heap: &mut Heap, n: usize, out: &mut Vec<u32>) {
        let mut cur = self.head;
        let mut taken = 0;
        while cur != NIL && taken < n {
            if heap.flags(cur) & FLAG_PINNED == 0 {
                out.push(cur);
                taken += 1;
            }
            cur = heap.next(cur);
        }
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The chain matches a model list under any sequence of operations, and its links are
        /// consistent in both directions.
        #[test]
        fn chain_matches_model(ops in prop::collection::vec((0u8..4, 0usize..30), 0..300)) {
            let mut heap = Heap::new(32);
            let slots: Vec<u32> = (0..30).map(|_| heap.alloc().unwrap()).collect();
            let mut chain = LruChain::new();
            let mut model: Vec<u32> = Vec::new();
            for (op, i) in ops {
                let s = slots[i];
                match op {
                    0 => { if !model.contains(&s) { chain.on_insert(&mut heap, s); model.push(s); } }
                    1 => { if !model.contains(&s) { chain.on_insert_cold(&mut heap, s); model.insert(0, s); } }
                    2 => { chain.on_access(&mut heap, s); if let Some(p) = model.iter().position(|&x| x == s) { model.remove(p); model.push(s); } }
                    _ => { chain.on_remove(&mut heap, s); model.retain(|&x| x != s); }
                }
                let forward: Vec<u32> = chain.iter_cold_to_hot(&heap).collect();
                prop_assert_eq!(&forward, &model);
                prop_assert_eq!(chain.len(), model.len());
                let mut backward = vec![];
                let mut cur = chain.tail;
                while cur != NIL { backward.push(cur); cur = heap.prev(cur); }
                backward.reverse();
                prop_assert_eq!(&backward, &model);
            }
        }
    }

    #[test]
    fn victims_skip_pinned_tuples() {
        let mut heap = Heap::new(32);
        let mut chain = LruChain::new();
        let s: Vec<u32> = (0..4).map(|_| heap.alloc().unwrap()).collect();
        for &x in &s {
            chain.on_insert(&mut heap, x);
        }
        heap.set_flags(s[0], heap.flags(s[0]) | FLAG_PINNED);
        let mut out = vec![];
        chain.victims(&mut heap, 2, &mut out);
        assert_eq!(out, vec![s[1], s[2]]);
    }
}
