//! The memory statements hold while they run: results, sort buffers, groups, COPY batches.
//!
//! Each statement counts what it holds against its own limit ([`WorkMem`], `work_mem`:
//! past it, 54000). All running statements together draw from one [`MemoryPool`] per
//! database, which the partitions count as part of the memory budget (they evict to make
//! room for it), so statements cannot take the process past its budget by running many
//! at once: a statement that would take the pool past its limit fails with 53200. A
//! statement that holds little (under [`POOL_STEP`]) never touches the pool, so point
//! reads pay nothing for it.
//!
//! A value a function builds is checked against the same two limits before it is
//! allocated ([`crate::value_budget`]), since it exists before its row is counted here.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use permafrost_types::Value;

use crate::error::{Result, SqlError};

/// Statements take memory from the pool in steps of this many bytes (and hold the first
/// step's worth without taking any).
pub const POOL_STEP: usize = 256 << 10;

/// The memory all running statements of a database hold together, against one limit.
///
/// The partitions evict to make room for what the pool holds, but only between
/// transactions: a statement whose rows are gathered at a partition (a grouping over the
/// tuples in memory) holds the partition until it ends, and what it takes meanwhile is
/// on top of the data. So the pool also knows the memory budget and what the partitions
/// hold ([`MemoryPool::set_data`], published at each of their memory checks): what may
/// spill takes no more than the budget has free ([`MemoryPool::free_now`]) and goes to
/// disk past it.
pub struct MemoryPool {
    used: AtomicUsize,
    /// The most `used` has been since the last [`MemoryPool::reset_peak`].
    peak: AtomicUsize,
    limit: usize,
    /// The memory budget the pool is part of (`usize::MAX`: none known).
    budget: usize,
    /// What each partition held at its last memory check, statements not counted.
    data: Box<[AtomicUsize]>,
}

impl std::fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryPool")
            .field("used", &self.used())
            .field("limit", &self.limit)
            .field("budget", &self.budget)
            .field("data", &self.data_held())
            .finish()
    }
}

impl MemoryPool {
    /// A pool with no known budget (what it gives is bounded by `limit` alone).
    pub fn new(limit: usize) -> Arc<MemoryPool> {
        MemoryPool::within_budget(limit, usize::MAX, 0)
    }

    /// A pool of at most `limit` bytes, part of a memory budget of `budget` bytes shared
    /// with `partitions` partitions' data.
    pub fn within_budget(limit: usize, budget: usize, partitions: usize) -> Arc<MemoryPool> {
        Arc::new(MemoryPool {
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            limit,
            budget,
            data: (0..partitions).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    /// Partition `p` holds `bytes` of data (its memory check's figure, statements not
    /// counted).
    pub fn set_data(&self, p: usize, bytes: usize) {
        if let Some(d) = self.data.get(p) {
            d.store(bytes, Ordering::Relaxed);
        }
    }

    /// What the partitions held at their last memory checks.
    pub fn data_held(&self) -> usize {
        self.data.iter().map(|d| d.load(Ordering::Relaxed)).sum()
    }

    /// What the budget has free now: neither the partitions' data nor statements hold it.
    pub fn free_now(&self) -> usize {
        self.budget.saturating_sub(self.data_held()).saturating_sub(self.used())
    }

    /// The most running statements have held at once since [`MemoryPool::reset_peak`].
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Starts [`MemoryPool::peak`] again from what is held now.
    pub fn reset_peak(&self) {
        self.peak.store(self.used(), Ordering::Relaxed);
    }

    fn after_take(&self) {
        self.peak.fetch_max(self.used(), Ordering::Relaxed);
    }

    /// Bytes held by running statements now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether `n` more bytes would fit now (nothing is taken: a value being built is
    /// checked, [`crate::value_budget`]).
    pub(crate) fn has_room(&self, n: usize) -> bool {
        self.used().checked_add(n).is_some_and(|t| t <= self.limit)
    }

    /// Takes `n` bytes; `false` (nothing taken) if that would pass the limit.
    fn try_take(&self, n: usize) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|&t| t <= self.limit)
            })
            .is_ok();
        if taken {
            self.after_take();
        }
        taken
    }

    fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// What one statement took from a [`MemoryPool`]; given back when dropped.
#[derive(Debug, Default)]
pub struct Reservation {
    pool: Option<Arc<MemoryPool>>,
    taken: usize,
}

/// What a statement may hold before it spills for want of free room in the memory budget
/// ([`MemoryPool::free_now`]): a sort's runs are at least this large.
pub const FREE_ROOM_FLOOR: usize = 4 << 20;

/// What the pool counts of `bytes` held: beyond the first [`POOL_STEP`], in whole steps.
fn steps(bytes: usize) -> usize {
    bytes.saturating_sub(POOL_STEP).div_ceil(POOL_STEP) * POOL_STEP
}

impl Reservation {
    /// Whether covering `bytes` would take more from `pool` than the memory budget has
    /// free now ([`MemoryPool::free_now`]): what may spill goes to disk instead.
    pub(crate) fn past_free_room(&self, bytes: usize, pool: Option<&Arc<MemoryPool>>) -> bool {
        let Some(pool) = self.pool.as_ref().or(pool) else {
            return false;
        };
        // (Per row of a sort or a result: the free room is read only when the bytes would
        // take another step.)
        let more = steps(bytes).saturating_sub(self.taken);
        bytes > FREE_ROOM_FLOOR && more > 0 && more > pool.free_now()
    }

    /// Makes the reservation cover `bytes` (beyond the first step, in whole steps); an
    /// error (53200) if the pool cannot give that much. Takes `pool` the first time it is
    /// needed.
    pub fn cover(&mut self, bytes: usize, pool: Option<&Arc<MemoryPool>>) -> Result<()> {
        let want = steps(bytes);
        if want <= self.taken {
            return Ok(());
        }
        let pool = match &self.pool {
            Some(p) => p.clone(),
            None => match pool {
                Some(p) => {
                    self.pool = Some(p.clone());
                    p.clone()
                }
                None => return Ok(()),
            },
        };
        let more = want - self.taken;
        if !pool.try_take(more) {
            return Err(SqlError::StatementMemory {
                held: pool.used(),
                limit: pool.limit(),
            });
        }
        self.taken = want;
        Ok(())
    }
}

impl Reservation {
    /// Counts `bytes` that are held already (a result on its way to its client) in `pool`,
    /// past its limit if need be: the memory exists, so the partitions must count it (and
    /// evict for it) and other statements find that much less room until it is dropped.
    /// Like [`Reservation::cover`], the first step is not counted.
    pub fn hold(pool: &Arc<MemoryPool>, bytes: usize) -> Reservation {
        let taken = steps(bytes);
        if taken == 0 {
            return Reservation::default();
        }
        pool.used.fetch_add(taken, Ordering::AcqRel);
        pool.after_take();
        Reservation {
            pool: Some(pool.clone()),
            taken,
        }
    }

    /// Makes the reservation hold exactly `bytes` of `pool` (no step is free): more is
    /// taken, or what is over given back. An error (53200, nothing changed) if the pool
    /// cannot give that much. For memory held long and in small pieces (prepared
    /// statements), where steps would count too much or too little.
    pub fn set_exact(&mut self, bytes: usize, pool: &Arc<MemoryPool>) -> Result<()> {
        if self.pool.is_none() {
            self.pool = Some(pool.clone());
        }
        if bytes > self.taken {
            if !pool.try_take(bytes - self.taken) {
                return Err(SqlError::StatementMemory {
                    held: pool.used(),
                    limit: pool.limit(),
                });
            }
        } else {
            pool.give(self.taken - bytes);
        }
        self.taken = bytes;
        Ok(())
    }

    /// The bytes taken from the pool.
    pub fn taken(&self) -> usize {
        self.taken
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(p) = &self.pool {
            p.give(self.taken);
        }
    }
}

/// Counts the bytes one statement holds against its limit (`work_mem`) and, past the
/// first [`POOL_STEP`], against the database's [`MemoryPool`].
#[derive(Debug)]
pub(crate) struct WorkMem {
    used: usize,
    limit: usize,
    reservation: Reservation,
}

impl WorkMem {
    pub(crate) fn new(limit: usize) -> WorkMem {
        WorkMem {
            used: 0,
            limit,
            reservation: Reservation::default(),
        }
    }

    /// Adds `bytes`; an error once the statement holds more than its limit or the pool
    /// has no room.
    pub(crate) fn add(&mut self, bytes: usize, pool: Option<&Arc<MemoryPool>>) -> Result<()> {
        self.used += bytes;
        self.check(pool)
    }

    /// The statement holds `bytes` now; an error past its limit or the pool's.
    pub(crate) fn holds(&mut self, bytes: usize, pool: Option<&Arc<MemoryPool>>) -> Result<()> {
        self.used = bytes;
        self.check(pool)
    }

    /// Whether holding `bytes` would take more from `pool` than the memory budget has free
    /// now (what may spill then goes to disk: [`MemoryPool`]).
    pub(crate) fn past_free_room(&self, bytes: usize, pool: Option<&Arc<MemoryPool>>) -> bool {
        self.reservation.past_free_room(bytes, pool)
    }

    /// The pool this statement has taken from, once it has.
    pub(crate) fn pool(&self) -> Option<&Arc<MemoryPool>> {
        self.reservation.pool.as_ref()
    }

    /// The statement holds `bytes` now, which the caller is about to write to disk: counted
    /// against its limit, nothing more taken from the pool.
    pub(crate) fn holds_uncovered(&mut self, bytes: usize) {
        self.used = bytes;
    }

    /// The statement's limit (`work_mem`).
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The bytes the statement holds now.
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    fn check(&mut self, pool: Option<&Arc<MemoryPool>>) -> Result<()> {
        if self.used > self.limit {
            return Err(SqlError::OutOfWorkMem(self.limit));
        }
        self.reservation.cover(self.used, pool)
    }
}

/// About the bytes a value holds, itself and what it owns (what a statement's working
/// memory and a COPY's buffer count).
pub fn value_size(v: &Value) -> usize {
    std::mem::size_of::<Value>()
        + match v {
            Value::Text(t) => t.len(),
            Value::Bytes(b) => b.len(),
            _ => 0,
        }
}

/// About the bytes a row of values holds (for [`WorkMem`]).
pub(crate) fn values_size(vs: &[Value]) -> usize {
    vs.iter().map(value_size).sum::<usize>() + std::mem::size_of::<Vec<Value>>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_draw_from_one_pool_and_give_back_what_they_took() {
        let pool = MemoryPool::new(4 * POOL_STEP);
        let mut a = WorkMem::new(usize::MAX);
        // The first step is free.
        a.holds(POOL_STEP, Some(&pool)).unwrap();
        assert_eq!(pool.used(), 0);
        a.holds(3 * POOL_STEP, Some(&pool)).unwrap();
        assert_eq!(pool.used(), 2 * POOL_STEP);
        let mut b = WorkMem::new(usize::MAX);
        b.holds(3 * POOL_STEP, Some(&pool)).unwrap();
        assert_eq!(pool.used(), 4 * POOL_STEP);
        // The pool is full: a third statement that needs more fails with 53200.
        let mut c = WorkMem::new(usize::MAX);
        let e = c.holds(2 * POOL_STEP, Some(&pool)).unwrap_err();
        assert_eq!(e.sqlstate(), "53200", "{e}");
        drop(a);
        assert_eq!(pool.used(), 2 * POOL_STEP);
        c.holds(2 * POOL_STEP, Some(&pool)).unwrap();
        drop((b, c));
        assert_eq!(pool.used(), 0);
        // Its own limit still comes first: 54000.
        let mut d = WorkMem::new(POOL_STEP);
        assert_eq!(d.add(POOL_STEP + 1, Some(&pool)).unwrap_err().sqlstate(), "54000");
    }

    #[test]
    fn what_may_spill_takes_no_more_than_the_budget_has_free() {
        const MIB: usize = 1 << 20;
        let pool = MemoryPool::within_budget(64 * MIB, 100 * MIB, 2);
        pool.set_data(0, 40 * MIB);
        pool.set_data(1, 40 * MIB);
        assert_eq!(pool.free_now(), 20 * MIB);
        let mut a = WorkMem::new(32 * MIB);
        a.holds(10 * MIB + POOL_STEP, Some(&pool)).unwrap();
        assert_eq!(pool.free_now(), 10 * MIB);
        // Within the free room, or under the floor: taken as before.
        assert!(!a.past_free_room(20 * MIB + POOL_STEP, Some(&pool)));
        let b = WorkMem::new(32 * MIB);
        assert!(!b.past_free_room(FREE_ROOM_FLOOR, Some(&pool)));
        // Past it: not taken (the caller spills), though work_mem and the pool have room.
        assert!(a.past_free_room(20 * MIB + 2 * POOL_STEP, Some(&pool)));
        a.holds(20 * MIB + 2 * POOL_STEP, Some(&pool)).unwrap();
        assert_eq!(pool.peak(), 20 * MIB + POOL_STEP);
        drop(a);
        assert_eq!(pool.free_now(), 20 * MIB);
        pool.reset_peak();
        assert_eq!(pool.peak(), 0);
        // A pool that knows no budget has room as far as its limit.
        let unbounded = MemoryPool::new(4 * POOL_STEP);
        assert!(!WorkMem::new(usize::MAX).past_free_room(usize::MAX / 2, Some(&unbounded)));
    }

    #[test]
    fn memory_already_held_is_counted_past_the_limit_until_dropped() {
        let pool = MemoryPool::new(4 * POOL_STEP);
        let mut a = WorkMem::new(usize::MAX);
        a.holds(4 * POOL_STEP, Some(&pool)).unwrap();
        assert_eq!(pool.used(), 3 * POOL_STEP);
        // A result of 3 steps and a bit: 3 steps counted (the first is not), the pool is
        // past its limit.
        let held = Reservation::hold(&pool, 3 * POOL_STEP + 1);
        assert_eq!(held.taken(), 3 * POOL_STEP);
        assert_eq!(pool.used(), 6 * POOL_STEP);
        // Nothing else fits until it is dropped.
        let mut b = WorkMem::new(usize::MAX);
        assert_eq!(b.holds(2 * POOL_STEP, Some(&pool)).unwrap_err().sqlstate(), "53200");
        drop((held, a));
        assert_eq!(pool.used(), 0);
        b.holds(2 * POOL_STEP, Some(&pool)).unwrap();
        // A small result counts nothing.
        assert_eq!(Reservation::hold(&pool, POOL_STEP).taken(), 0);
    }
}
