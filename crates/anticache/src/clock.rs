//! CLOCK: a second cold-tuple policy to compare with the LRU chain on the same runs.
//!
//! Every tracked tuple has a reference bit in its header (`FLAG_REFERENCED`), set when it is
//! inserted or accessed by a sampled transaction (with this policy every transaction is
//! sampled unless `lru_sample_rate` says otherwise). Eviction sweeps a hand over the slots: a
//! referenced tuple loses its bit and is passed over, an unreferenced one is a victim. It
//! costs one bit per tuple and no pointer updates on access, at the price of a coarser
//! notion of recency than LRU.

use permafrost_storage::AccessTracker;
use permafrost_storage::heap::{FLAG_IN_CHAIN, FLAG_PINNED, FLAG_REFERENCED, Heap};

#[derive(Debug, Default)]
pub struct Clock {
    hand: u32,
    len: usize,
}

impl Clock {
    pub fn new() -> Clock {
        Clock::default()
    }
}

impl AccessTracker for Clock {
    fn name(&self) -> &'static str {
        "clock"
    }

    fn on_insert(&mut self, heap: &mut Heap, slot: u32) {
        let f = heap.flags(slot);
        if f & FLAG_IN_CHAIN == 0 {
            self.len += 1;
        }
        heap.set_flags(slot, f | FLAG_IN_CHAIN | FLAG_REFERENCED);
    }

    fn on_insert_cold(&mut self, heap: &mut Heap, slot: u32) {
        let f = heap.flags(slot);
        if f & FLAG_IN_CHAIN == 0 {
            self.len += 1;
        }
        heap.set_flags(slot, (f | FLAG_IN_CHAIN) & !FLAG_REFERENCED);
    }

    #[inline]
    fn on_access(&mut self, heap: &mut Heap, slot: u32) {
        let f = heap.flags(slot);
        if f & FLAG_IN_CHAIN != 0 {
            heap.set_flags(slot, f | FLAG_REFERENCED);
        }
    }

    fn on_remove(&mut self, heap: &mut Heap, slot: u32) {
        let f = heap.flags(slot);
        if f & FLAG_IN_CHAIN != 0 {
            self.len -= 1;
            heap.set_flags(slot, f & !(FLAG_IN_CHAIN | FLAG_REFERENCED));
        }
    }

    fn on_move(&mut self, _heap: &mut Heap, _from: u32, _to: u32) {
        // The reference bit moved with the header.
    }

    fn victims(&mut self, heap: &mut Heap, n: usize, out: &mut Vec<u32>) {
        let end = heap.high_water();
        if end == 0 || self.len == 0 {
            return;
        }
        let mut taken = 0;
        // Two full sweeps are enough to clear every bit and find victims. The second passes
        // the first's victims again (still unreferenced: they are not removed here), so each
        // slot taken is noted and never taken twice: a tuple evicted twice would free its
        // values twice.
        let mut chosen = vec![0u64; (end as usize).div_ceil(64)];
        let mut steps = 2 * end as u64;
        while taken < n && steps > 0 {
            if self.hand >= end {
                self.hand = 0;
            }
            let s = self.hand;
            self.hand += 1;
            steps -= 1;
            if !heap.is_live(s) {
                continue;
            }
            let f = heap.flags(s);
            if f & FLAG_IN_CHAIN == 0 || f & FLAG_PINNED != 0 {
                continue;
            }
            let (word, bit) = ((s / 64) as usize, 1u64 << (s % 64));
            if f & FLAG_REFERENCED != 0 {
                heap.set_flags(s, f & !FLAG_REFERENCED);
            } else if chosen[word] & bit == 0 {
                chosen[word] |= bit;
                out.push(s);
                taken += 1;
            }
        }
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_takes_each_tuple_once() {
        let mut heap = Heap::new(32);
        let mut c = Clock::new();
        let s: Vec<u32> = (0..4).map(|_| heap.alloc().unwrap()).collect();
        for &x in &s {
            c.on_insert_cold(&mut heap, x);
        }
        c.on_insert(&mut heap, s[2]);
        // More asked for than there are: the unreferenced ones, then the one whose bit the
        // first sweep cleared, each once.
        let mut out = vec![];
        c.victims(&mut heap, 10, &mut out);
        assert_eq!(out, vec![s[0], s[1], s[3], s[2]]);
    }

    #[test]
    fn referenced_tuples_get_a_second_chance() {
        let mut heap = Heap::new(32);
        let mut c = Clock::new();
        let s: Vec<u32> = (0..4).map(|_| heap.alloc().unwrap()).collect();
        for &x in &s {
            c.on_insert(&mut heap, x);
        }
        // All referenced: the first sweep clears bits, the second finds victims.
        let mut out = vec![];
        c.victims(&mut heap, 1, &mut out);
        assert_eq!(out, vec![s[0]]);
        c.on_access(&mut heap, s[1]);
        let mut out = vec![];
        c.victims(&mut heap, 2, &mut out);
        assert_eq!(out, vec![s[2], s[3]]);
        c.on_remove(&mut heap, s[2]);
        assert_eq!(c.len(), 3);
    }
}
