//! The Evicted Table (DeBrabant et al. 2013 §3.1): one small record per evicted tuple saying
//! where the tuple is on disk. Index entries of an evicted tuple point at its tombstone.
//!
//! A tombstone is 6 bytes: the block id (4) and the tuple's position in that block (2: a
//! block holds at most 65,535 tuples), kept in two arrays so nothing pads them. Freed
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
    /// Each id's block, or [`FREE`] or [`PENDING`].
    blocks: BigVec<u32>,
    /// Each id's position in its block.
    offsets: BigVec<u16>,
    free: BigVec<u32>,
    live: usize,
    /// Counts changes: equal counts mean the same tombstones ([`Tombstones::changes`]).
    changes: u64,
}

impl Default for Tombstones {
    fn default() -> Self {
        Self::new()
    }
}

impl Tombstones {
    pub fn new() -> Tombstones {
        Tombstones {
            blocks: big_vec(),
            offsets: big_vec(),
            free: big_vec(),
            live: 0,
            changes: 0,
        }
    }

    /// Records an evicted tuple and returns its tombstone id.
    pub fn add(&mut self, t: Tombstone) -> u32 {
        debug_assert!(t.block != FREE);
        debug_assert!(t.offset <= u32::from(u16::MAX));
        self.live += 1;
        self.changes += 1;
        match self.free.pop() {
            Some(id) => {
                self.blocks[id as usize] = t.block;
                self.offsets[id as usize] = t.offset as u16;
                id
            }
            None => {
                // Grow by an eighth at a time: doubling would leave up to half the
                // vectors unused, and tombstones are the anti-cache's per-tuple cost.
                if self.blocks.len() == self.blocks.capacity() {
                    let more = (self.blocks.len() / 8).max(1024);
                    self.blocks.reserve_exact(more);
                    self.offsets.reserve_exact(more);
                }
                self.blocks.push(t.block);
                self.offsets.push(t.offset as u16);
                (self.blocks.len() - 1) as u32
            }
        }
    }

    pub fn get(&self, id: u32) -> Option<Tombstone> {
        let block = *self.blocks.get(id as usize)?;
        (block < PENDING).then(|| Tombstone {
            block,
            offset: u32::from(self.offsets[id as usize]),
        })
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
        debug_assert!(t.block < PENDING && t.offset <= u32::from(u16::MAX));
        self.changes += 1;
        if let Some(b) = self.blocks.get_mut(id as usize) {
            *b = t.block;
            self.offsets[id as usize] = t.offset as u16;
        }
    }

    /// Forgets a tombstone (its tuple is back in memory or deleted).
    pub fn remove(&mut self, id: u32) -> Option<Tombstone> {
        let b = self.blocks.get_mut(id as usize)?;
        if *b == FREE {
            return None;
        }
        let t = Tombstone {
            block: *b,
            offset: u32::from(self.offsets[id as usize]),
        };
        *b = FREE;
        self.changes += 1;
        self.free.push(id);
        self.live -= 1;
        Some(t)
    }

    /// Live tombstones as `(id, tombstone)`.
    pub fn iter(&self) -> impl Iterator<Item = (u32, Tombstone)> + '_ {
        self.blocks
            .iter()
            .zip(self.offsets.iter())
            .enumerate()
            .filter(|(_, (b, _))| **b < PENDING)
            .map(|(i, (b, o))| {
                (
                    i as u32,
                    Tombstone {
                        block: *b,
                        offset: u32::from(*o),
                    },
                )
            })
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    pub fn memory_bytes(&self) -> usize {
        self.blocks.capacity() * 4 + self.offsets.capacity() * 2 + self.free.capacity() * 4
    }

    /// How many times the tombstones changed: while it stays the same, so does every
    /// tombstone (what was read from them is still true).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Number of ids handed out so far (live or free): ids are below this.
    pub fn id_bound(&self) -> u32 {
        self.blocks.len() as u32
    }

    /// Replaces the contents with `entries`, indexed by id, where `None` is a free id
    /// (loading a snapshot: ids are kept, so index entries loaded with them stay valid).
    pub fn restore(&mut self, entries: impl ExactSizeIterator<Item = Option<Tombstone>>) {
        let (mut blocks, mut offsets) = (big_vec(), big_vec());
        blocks.reserve_exact(entries.len());
        offsets.reserve_exact(entries.len());
        let mut free = big_vec();
        let mut live = 0;
        for (id, e) in entries.enumerate() {
            match e {
                Some(t) if t.block < PENDING => {
                    debug_assert!(t.offset <= u32::from(u16::MAX), "the loader checks offsets");
                    blocks.push(t.block);
                    offsets.push(t.offset as u16);
                    live += 1;
                }
                _ => {
                    blocks.push(FREE);
                    offsets.push(0);
                    free.push(id as u32);
                }
            }
        }
        // Lowest free ids are reused first.
        free.reverse();
        self.blocks = blocks;
        self.offsets = offsets;
        self.free = free;
        self.live = live;
        self.changes += 1;
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
