//! The Evicted Table (DeBrabant et al. 2013 §3.1): one small record per evicted tuple saying
//! where the tuple is on disk. Index entries of an evicted tuple point at its tombstone.
//!
//! A tombstone is a block id and the tuple's position in that block (a block holds at most
//! 65,535 tuples). Eviction gives the tuples of one block consecutive ids, at consecutive
//! positions, so the ids are kept in chunks of [`CHUNK`] as *runs*: ids `start..start+len`
//! are at positions `offset..offset+len` of `block`, 12 bytes a run (one a block, where a
//! block holds hundreds of small tuples). Tuples brought back and ids given to other tuples
//! break runs; a chunk whose runs would take more than an array would becomes one: 6 bytes
//! an id, the most a tombstone costs (a table evicted at load and read no more keeps well
//! under a byte a tuple). Freed ids are reused lowest first, so that the next block's ids
//! run on; the free list costs 4 bytes per free id.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Where an evicted tuple lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tombstone {
    pub block: u32,
    pub offset: u32,
}

const FREE: u32 = u32::MAX;
/// A reserved id whose tuple is still being written to disk.
const PENDING: u32 = u32::MAX - 1;

/// Ids a chunk covers.
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Bytes of a chunk kept as an array: a block id and a position per id.
const DENSE_BYTES: usize = CHUNK * 6;
/// Runs past which a chunk is kept as an array (they would take more).
const MAX_RUNS: usize = DENSE_BYTES / std::mem::size_of::<Run>();

/// Ids `start..start + len` of a chunk: at positions `offset..` of `block`, or all
/// [`PENDING`] (their offset unused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: u16,
    len: u16,
    block: u32,
    offset: u16,
}

impl Run {
    fn end(&self) -> usize {
        usize::from(self.start) + usize::from(self.len)
    }

    /// Its value at `local` (within the run).
    fn at(&self, local: usize) -> (u32, u16) {
        if self.block == PENDING {
            (PENDING, 0)
        } else {
            (self.block, self.offset + (local - usize::from(self.start)) as u16)
        }
    }

    /// Whether `next` continues it.
    fn runs_on(&self, next: &Run) -> bool {
        self.end() == usize::from(next.start)
            && self.block == next.block
            && (self.block == PENDING || u32::from(self.offset) + u32::from(self.len) == u32::from(next.offset))
    }
}

#[derive(Debug)]
struct Dense {
    blocks: [u32; CHUNK],
    offsets: [u16; CHUNK],
}

#[derive(Debug)]
enum Chunk {
    /// Sorted, disjoint runs; ids in none are free.
    Runs(Vec<Run>),
    Dense(Box<Dense>),
}

impl Chunk {
    fn get(&self, local: usize) -> (u32, u16) {
        match self {
            Chunk::Runs(runs) => {
                let i = runs.partition_point(|r| usize::from(r.start) <= local);
                match i.checked_sub(1).map(|i| &runs[i]) {
                    Some(r) if local < r.end() => r.at(local),
                    _ => (FREE, 0),
                }
            }
            Chunk::Dense(d) => (d.blocks[local], d.offsets[local]),
        }
    }

    /// Sets the value at `local` (`block` may be [`FREE`] or [`PENDING`]).
    fn set(&mut self, local: usize, block: u32, offset: u16) {
        let runs = match self {
            Chunk::Dense(d) => {
                d.blocks[local] = block;
                d.offsets[local] = offset;
                return;
            }
            Chunk::Runs(runs) => runs,
        };
        // Take `local` out of the run holding it, if any.
        let mut i = runs.partition_point(|r| usize::from(r.start) <= local);
        if let Some(r) = i.checked_sub(1).map(|k| runs[k])
            && local < r.end()
        {
            let k = i - 1;
            let before = Run {
                len: (local - usize::from(r.start)) as u16,
                ..r
            };
            let after_start = local + 1;
            let after = Run {
                start: after_start as u16,
                len: (r.end() - after_start) as u16,
                block: r.block,
                offset: if r.block == PENDING {
                    0
                } else {
                    r.offset + (after_start - usize::from(r.start)) as u16
                },
            };
            grow(runs);
            let parts = [before, after];
            let kept = parts.iter().filter(|p| p.len > 0).copied();
            runs.splice(k..=k, kept);
            i = k + usize::from(before.len > 0);
        }
        if block == FREE {
            if runs.len() > MAX_RUNS {
                self.make_dense();
            }
            return;
        }
        // `i` is where a run starting at `local` goes; join it to its neighbours.
        let new = Run {
            start: local as u16,
            len: 1,
            block,
            offset: if block == PENDING { 0 } else { offset },
        };
        let joins_prev = i > 0 && runs[i - 1].runs_on(&new);
        let joins_next = i < runs.len() && new.runs_on(&runs[i]);
        match (joins_prev, joins_next) {
            (true, true) => {
                let next = runs.remove(i);
                runs[i - 1].len += 1 + next.len;
            }
            (true, false) => runs[i - 1].len += 1,
            (false, true) => {
                let next = &mut runs[i];
                next.start -= 1;
                next.len += 1;
                next.offset = new.offset;
            }
            (false, false) => {
                if runs.len() >= MAX_RUNS {
                    self.make_dense();
                    return self.set(local, block, offset);
                }
                grow(runs);
                runs.insert(i, new);
            }
        }
    }

    fn make_dense(&mut self) {
        let mut d = Box::new(Dense {
            blocks: [FREE; CHUNK],
            offsets: [0; CHUNK],
        });
        if let Chunk::Runs(runs) = self {
            for r in runs.iter() {
                for local in usize::from(r.start)..r.end() {
                    (d.blocks[local], d.offsets[local]) = r.at(local);
                }
            }
        }
        *self = Chunk::Dense(d);
    }

    fn memory_bytes(&self) -> usize {
        match self {
            Chunk::Runs(runs) => runs.capacity() * std::mem::size_of::<Run>(),
            Chunk::Dense(_) => std::mem::size_of::<Dense>(),
        }
    }
}

/// The tombstones of one table at one partition.
#[derive(Debug)]
pub struct Tombstones {
    chunks: Vec<Chunk>,
    /// Ids handed out so far (live or free): ids are below it.
    bound: u32,
    /// Free ids below `bound`, lowest first.
    free: BinaryHeap<Reverse<u32>>,
    live: usize,
    /// What the chunks' runs and arrays take (kept as they change).
    chunk_bytes: usize,
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
            chunks: Vec::new(),
            bound: 0,
            free: BinaryHeap::new(),
            live: 0,
            chunk_bytes: 0,
            changes: 0,
        }
    }

    /// The value of `id` (block, or [`FREE`] or [`PENDING`]; position).
    fn value(&self, id: u32) -> (u32, u16) {
        if id >= self.bound {
            return (FREE, 0);
        }
        let (c, local) = split(id);
        self.chunks[c].get(local)
    }

    fn write(&mut self, id: u32, block: u32, offset: u16) {
        let (c, local) = split(id);
        if c == self.chunks.len() {
            self.chunks.push(Chunk::Runs(Vec::new()));
        }
        let chunk = &mut self.chunks[c];
        let before = chunk.memory_bytes();
        chunk.set(local, block, offset);
        self.chunk_bytes = self.chunk_bytes - before + chunk.memory_bytes();
        self.changes += 1;
    }

    /// A new id: the lowest free one, else the next.
    fn take_id(&mut self) -> u32 {
        match self.free.pop() {
            Some(Reverse(id)) => id,
            None => {
                self.bound += 1;
                self.bound - 1
            }
        }
    }

    /// Records an evicted tuple and returns its tombstone id.
    pub fn add(&mut self, t: Tombstone) -> u32 {
        debug_assert!(t.block < PENDING || t.block == PENDING && t.offset == 0);
        debug_assert!(t.offset <= u32::from(u16::MAX));
        let id = self.take_id();
        self.live += 1;
        self.write(id, t.block, t.offset as u16);
        id
    }

    pub fn get(&self, id: u32) -> Option<Tombstone> {
        let (block, offset) = self.value(id);
        (block < PENDING).then_some(Tombstone {
            block,
            offset: u32::from(offset),
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
        if self.value(id).0 == PENDING {
            self.write(id, t.block, t.offset as u16);
        }
    }

    /// Forgets a tombstone (its tuple is back in memory or deleted; or, reserved, its
    /// block's write failed).
    pub fn remove(&mut self, id: u32) -> Option<Tombstone> {
        let (block, offset) = self.value(id);
        if block == FREE {
            return None;
        }
        self.write(id, FREE, 0);
        self.free.push(Reverse(id));
        self.live -= 1;
        Some(Tombstone {
            block,
            offset: u32::from(offset),
        })
    }

    /// Live tombstones as `(id, tombstone)`, by id.
    pub fn iter(&self) -> impl Iterator<Item = (u32, Tombstone)> + '_ {
        self.chunks.iter().enumerate().flat_map(|(c, chunk)| {
            let base = (c << CHUNK_BITS) as u32;
            let (runs, dense) = match chunk {
                Chunk::Runs(runs) => (runs.as_slice(), None),
                Chunk::Dense(d) => (&[][..], Some(d)),
            };
            let from_runs = runs
                .iter()
                .filter(|r| r.block != PENDING)
                .flat_map(move |r| (usize::from(r.start)..r.end()).map(move |local| (local, r.at(local))));
            let from_dense = dense
                .into_iter()
                .flat_map(|d| (0..CHUNK).map(move |local| (local, (d.blocks[local], d.offsets[local]))));
            from_runs
                .chain(from_dense)
                .filter(|(_, (block, _))| *block < PENDING)
                .map(move |(local, (block, offset))| {
                    (
                        base + local as u32,
                        Tombstone {
                            block,
                            offset: u32::from(offset),
                        },
                    )
                })
        })
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    pub fn memory_bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Chunk>()
            + self.chunk_bytes
            + self.free.capacity() * std::mem::size_of::<u32>()
    }

    /// How many times the tombstones changed: while it stays the same, so does every
    /// tombstone (what was read from them is still true).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Number of ids handed out so far (live or free): ids are below this.
    pub fn id_bound(&self) -> u32 {
        self.bound
    }

    /// Replaces the contents with `entries`, indexed by id, where `None` is a free id
    /// (loading a snapshot: ids are kept, so index entries loaded with them stay valid).
    pub fn restore(&mut self, entries: impl ExactSizeIterator<Item = Option<Tombstone>>) {
        let changes = self.changes;
        *self = Tombstones::new();
        let mut free = Vec::new();
        for (id, e) in entries.enumerate() {
            let id = id as u32;
            self.bound = id + 1;
            match e {
                Some(t) if t.block < PENDING => {
                    debug_assert!(t.offset <= u32::from(u16::MAX), "the loader checks offsets");
                    self.write(id, t.block, t.offset as u16);
                    self.live += 1;
                }
                _ => {
                    if split(id).0 == self.chunks.len() {
                        self.chunks.push(Chunk::Runs(Vec::new()));
                    }
                    free.push(Reverse(id));
                }
            }
        }
        self.free = BinaryHeap::from(free);
        self.changes = changes + 1;
    }
}

/// Makes room for one more run, a quarter more at a time (doubling would leave up to half
/// of a chunk's runs unused).
fn grow(runs: &mut Vec<Run>) {
    if runs.len() == runs.capacity() {
        runs.reserve_exact((runs.len() / 4).max(2));
    }
}

/// An id's chunk and its place in it.
fn split(id: u32) -> (usize, usize) {
    ((id >> CHUNK_BITS) as usize, id as usize & (CHUNK - 1))
}

#[cfg(test)]
mod tests;
