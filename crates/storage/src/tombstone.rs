//! The Evicted Table (DeBrabant et al. 2013 §3.1): one small record per evicted tuple saying
//! where the tuple is on disk. Index entries of an evicted tuple point at its tombstone.
//!
//! A tombstone is 8 bytes: the block id and the tuple's position in that block. Freed
//! tombstones are reused; the free list costs 4 bytes per free entry.

/// Where an evicted tuple lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tombstone {
    pub block: u32,
    pub offset: u32,
}

use crate::alloc::{BigVec, big_vec};

const FREE: u32 = u32::MAX;
/// A reserved id whose tuple is still being written to disk.
const PENDING: u32 = u32::MAX - 1;

/// The tombstones of one table at one partition.
#[derive(Debug)]
pub struct Tombstones {
    entries: BigVec<Tombstone>,
    free: BigVec<u32>,
    live: usize,
}

impl Default for Tombstones {
    fn default() -> Self {
        Self::new()
    }
}

impl Tombstones {
    pub fn new() -> Tombstones {
        Tombstones {
            entries: big_vec(),
            free: big_vec(),
            live: 0,
        }
    }

    /// Records an evicted tuple and returns its tombstone id.
    pub fn add(&mut self, t: Tombstone) -> u32 {
        debug_assert!(t.block != FREE);
        self.live += 1;
        match self.free.pop() {
            Some(id) => {
                self.entries[id as usize] = t;
                id
            }
            None => {
                // Grow by an eighth at a time: doubling would leave up to half the
                // vector unused, and tombstones are the anti-cache's per-tuple cost.
                if self.entries.len() == self.entries.capacity() {
                    self.entries.reserve_exact((self.entries.len() / 8).max(1024));
                }
                self.entries.push(t);
                (self.entries.len() - 1) as u32
            }
        }
    }

    pub fn get(&self, id: u32) -> Option<Tombstone> {
        self.entries.get(id as usize).copied().filter(|t| t.block < PENDING)
    }

    /// Reserves an id for a tuple about to be evicted; [`Tombstones::set`] fills it once
    /// the tuple's block is on disk, [`Tombstones::remove`] gives it back if the write fails.
    pub fn reserve(&mut self) -> u32 {
        self.add(Tombstone {
            block: PENDING,
            offset: 0,
        })
    }

    /// Fills a reserved id.
    pub fn set(&mut self, id: u32, t: Tombstone) {
        debug_assert!(t.block < PENDING);
        if let Some(e) = self.entries.get_mut(id as usize) {
            *e = t;
        }
    }

    /// Forgets a tombstone (its tuple is back in memory or deleted).
    pub fn remove(&mut self, id: u32) -> Option<Tombstone> {
        let e = self.entries.get_mut(id as usize)?;
        if e.block == FREE {
            return None;
        }
        let t = *e;
        e.block = FREE;
        self.free.push(id);
        self.live -= 1;
        Some(t)
    }

    /// Live tombstones as `(id, tombstone)`.
    pub fn iter(&self) -> impl Iterator<Item = (u32, Tombstone)> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, t)| t.block < PENDING)
            .map(|(i, t)| (i as u32, *t))
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    pub fn memory_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Tombstone>() + self.free.capacity() * 4
    }

    /// Number of ids handed out so far (live or free): ids are below this.
    pub fn id_bound(&self) -> u32 {
        self.entries.len() as u32
    }

    /// Replaces the contents with `entries`, indexed by id, where `None` is a free id
    /// (loading a snapshot: ids are kept, so index entries loaded with them stay valid).
    pub fn restore(&mut self, entries: impl ExactSizeIterator<Item = Option<Tombstone>>) {
        let mut all = big_vec();
        all.reserve_exact(entries.len());
        let mut free = big_vec();
        let mut live = 0;
        for (id, e) in entries.enumerate() {
            match e {
                Some(t) if t.block < PENDING => {
                    all.push(t);
                    live += 1;
                }
                _ => {
                    all.push(Tombstone { block: FREE, offset: 0 });
                    free.push(id as u32);
                }
            }
        }
        // Lowest free ids are reused first.
        free.reverse();
        self.entries = all;
        self.free = free;
        self.live = live;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_reused_and_iteration_skips_free_entries() {
        let mut t = Tombstones::new();
        let a = t.add(Tombstone { block: 1, offset: 0 });
        let b = t.add(Tombstone { block: 1, offset: 1 });
        assert_eq!(t.remove(a), Some(Tombstone { block: 1, offset: 0 }));
        assert_eq!(t.remove(a), None);
        assert_eq!(t.iter().map(|(i, _)| i).collect::<Vec<_>>(), vec![b]);
        let c = t.add(Tombstone { block: 2, offset: 5 });
        assert_eq!(c, a);
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(c).unwrap().block, 2);
    }

    #[test]
    fn restore_keeps_ids_and_reuses_the_free_ones() {
        let mut t = Tombstones::new();
        let at = |b| Some(Tombstone { block: b, offset: 3 });
        t.restore([at(7), None, at(9), None].into_iter());
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(2), Some(Tombstone { block: 9, offset: 3 }));
        assert_eq!(t.get(1), None);
        assert_eq!(t.id_bound(), 4);
        assert_eq!(t.add(Tombstone { block: 1, offset: 0 }), 1);
        assert_eq!(t.add(Tombstone { block: 1, offset: 1 }), 3);
        assert_eq!(t.add(Tombstone { block: 1, offset: 2 }), 4);
    }
}
