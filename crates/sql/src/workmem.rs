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
#[derive(Debug)]
pub struct MemoryPool {
    used: AtomicUsize,
    limit: usize,
}

impl MemoryPool {
    pub fn new(limit: usize) -> Arc<MemoryPool> {
        Arc::new(MemoryPool {
            used: AtomicUsize::new(0),
            limit,
        })
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
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|&t| t <= self.limit)
            })
            .is_ok()
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

impl Reservation {
    /// Makes the reservation cover `bytes` (beyond the first step, in whole steps); an
    /// error (53200) if the pool cannot give that much. Takes `pool` the first time it is
    /// needed.
    pub fn cover(&mut self, bytes: usize, pool: Option<&Arc<MemoryPool>>) -> Result<()> {
        let want = bytes.saturating_sub(POOL_STEP).div_ceil(POOL_STEP) * POOL_STEP;
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
        let taken = bytes.saturating_sub(POOL_STEP).div_ceil(POOL_STEP) * POOL_STEP;
        if taken == 0 {
            return Reservation::default();
        }
        pool.used.fetch_add(taken, Ordering::AcqRel);
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
