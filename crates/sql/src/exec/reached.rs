//! The evicted tuples a statement reached: what its partition fetches before it runs again,
//! or what a read leaves for later.
//!
//! A read of a table mostly evicted reaches every tombstone (a grouping over twelve million
//! evicted votes reached twelve million). Kept as a list, that is 12 bytes per tuple that no
//! budget counts, held by the partition's scratch list until the next statement: 192 MiB at
//! 12.9 million votes in a 256 MiB budget, the server past its bound and killed by its
//! cgroup. So [`EvictedRefs`] keeps a short list, and past [`LIST_MAX`] entries one bit per
//! tombstone id of each (partition, table) it reached: an eighth of a byte per tombstone,
//! against the 6 bytes each tombstone holds itself (counted in the budget).

use std::collections::BTreeMap;

use permafrost_storage::TableId;

/// An evicted tuple a statement needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EvictedRef {
    pub partition: u32,
    pub table: TableId,
    pub tombstone: u32,
}

/// Entries kept as a list (at most 768 KiB) before they become bitmaps.
pub const LIST_MAX: usize = 1 << 16;

/// A set of evicted tuples reached, in the order they were reached while few, by
/// (partition, table, tombstone) once many; see the module documentation.
#[derive(Debug, Default)]
pub struct EvictedRefs {
    list: Vec<EvictedRef>,
    /// Past [`LIST_MAX`]: one bit per tombstone id, by (partition, table).
    bits: BTreeMap<(u32, TableId), Vec<u64>>,
    /// Distinct tuples in `bits`.
    in_bits: usize,
}

impl EvictedRefs {
    pub fn new() -> EvictedRefs {
        EvictedRefs::default()
    }

    /// Records one evicted tuple reached.
    pub fn push(&mut self, r: EvictedRef) {
        if self.bits.is_empty() {
            if self.list.len() < LIST_MAX {
                self.list.push(r);
                return;
            }
            for r in std::mem::take(&mut self.list) {
                self.set(r);
            }
        }
        self.set(r);
    }

    fn set(&mut self, r: EvictedRef) {
        let words = self.bits.entry((r.partition, r.table)).or_default();
        let (word, bit) = ((r.tombstone / 64) as usize, r.tombstone % 64);
        if words.len() <= word {
            words.resize(word + 1, 0);
        }
        if words[word] & (1 << bit) == 0 {
            words[word] |= 1 << bit;
            self.in_bits += 1;
        }
    }

    /// Tuples recorded (a tuple reached twice may count twice while the list holds them).
    pub fn len(&self) -> usize {
        self.list.len() + self.in_bits
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets them all, giving back the bitmaps.
    pub fn clear(&mut self) {
        self.list.clear();
        self.bits.clear();
        self.in_bits = 0;
    }

    /// Adds what `other` recorded.
    pub fn extend(&mut self, other: EvictedRefs) {
        for r in other.iter() {
            self.push(r);
        }
    }

    /// Each tuple recorded.
    pub fn iter(&self) -> impl Iterator<Item = EvictedRef> + '_ {
        let in_bits = self.bits.iter().flat_map(|(&(partition, table), words)| {
            words.iter().enumerate().flat_map(move |(w, &word)| {
                (0..64u32)
                    .filter(move |b| word & (1 << b) != 0)
                    .map(move |b| EvictedRef {
                        partition,
                        table,
                        tombstone: w as u32 * 64 + b,
                    })
            })
        });
        self.list.iter().copied().chain(in_bits)
    }

    /// Memory held, in bytes (the list's capacity and the bitmaps).
    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        self.list.capacity() * std::mem::size_of::<EvictedRef>()
            + self.bits.values().map(|w| w.capacity() * 8).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(partition: u32, table: u32, tombstone: u32) -> EvictedRef {
        EvictedRef {
            partition,
            table,
            tombstone,
        }
    }

    #[test]
    fn few_stay_a_list_in_their_order() {
        let mut s = EvictedRefs::new();
        s.push(r(1, 2, 9));
        s.push(r(0, 2, 3));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![r(1, 2, 9), r(0, 2, 3)]);
        assert_eq!(s.len(), 2);
        s.clear();
        assert!(s.is_empty());
    }

    #[test]
    fn many_become_bitmaps_of_bounded_size_and_lose_none() {
        let mut s = EvictedRefs::new();
        let n = 3 * LIST_MAX as u32;
        for i in 0..n {
            // Each tuple twice, over two partitions.
            s.push(r(i % 2, 7, i / 2));
            s.push(r(i % 2, 7, i / 2));
        }
        assert_eq!(s.len(), n as usize);
        let mut all = s.iter().collect::<Vec<_>>();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n as usize);
        assert!(all.iter().all(|x| x.table == 7 && x.tombstone < n / 2 + 1));
        // An eighth of a byte per tombstone id (and the emptied list's buffer).
        assert!(
            s.held_bytes() <= LIST_MAX * 12 + (n as usize / 8) + 64,
            "{}",
            s.held_bytes()
        );
        let mut other = EvictedRefs::new();
        other.push(r(5, 1, 1));
        s.extend(other);
        assert_eq!(s.len(), n as usize + 1);
        s.clear();
        assert_eq!(s.held_bytes(), 0);
    }
}
