//! What a partition's recent transactions changed: for each committed transaction that
//! changed rows, a stamp from a clock shared by every partition, and the partition-column
//! value of each row it inserted, updated or deleted.
//!
//! An interactive transaction's COMMIT checks that each of its reads still gives what its
//! client was shown. A read that looked at the rows of one table whose partition column
//! lies in a known range, and that started when the clock said `seen`, cannot give anything
//! else if no transaction stamped after `seen` changed a row of that table in that range at
//! any partition it reads: then the COMMIT need not run it again
//! ([`RecentWrites::unchanged_since`]).
//!
//! Why a stamp at or below `seen` was seen by the read: a transaction takes its stamp
//! (`fetch_add` on the clock) while it holds its partitions, before it lets go of them; a
//! read loads the clock before it takes its partitions. If the load returned the stamp or
//! more, the stamp was taken before the load, so the writer held the partition before the
//! read took it, and the read saw its changes. A change the read did not see was therefore
//! stamped after the load: above `seen`, and looked at.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::schema::TableId;
use crate::types::{Value, sql_compare};

/// Changes one partition remembers: past this many, the oldest are forgotten (a read
/// started before them is then run again at its COMMIT).
pub const REMEMBERED: usize = 4096;

/// At most this many changes are looked at for one read; past them it is run again
/// (looking would cost more than running it).
pub const LOOKED_AT: usize = 1024;

/// One changed row.
#[derive(Debug, Clone)]
struct Written {
    stamp: u64,
    table: TableId,
    /// Its partition-column value (before and after an update that changed it: two
    /// entries); `None` for a table without a partition column (any read of it counts as
    /// changed).
    key: Option<Value>,
}

/// The changes committed at one partition, newest last ([`crate::PartitionStore::remember_writes`]).
#[derive(Debug)]
pub struct RecentWrites {
    clock: Arc<AtomicU64>,
    entries: VecDeque<Written>,
    /// The largest stamp forgotten: reads that started before it cannot be checked here.
    floor: u64,
    /// Checks answered so far: unchanged, and changed (or not known).
    checks: (u64, u64),
}

impl RecentWrites {
    pub fn new(clock: Arc<AtomicU64>) -> RecentWrites {
        let floor = clock.load(Ordering::Acquire);
        RecentWrites {
            clock,
            entries: VecDeque::new(),
            floor,
            checks: (0, 0),
        }
    }

    /// A stamp for a transaction committing now (called while it holds its partitions).
    pub(crate) fn stamp(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::AcqRel) + 1
    }

    pub(crate) fn push(&mut self, stamp: u64, table: TableId, key: Option<Value>) {
        if self.entries.len() >= REMEMBERED
            && let Some(old) = self.entries.pop_front()
        {
            self.floor = self.floor.max(old.stamp);
        }
        self.entries.push_back(Written { stamp, table, key });
    }

    /// Forgets everything: reads started before now are run again at their COMMIT (after
    /// a change not made through transactions, such as a restore).
    pub fn forget(&mut self) {
        self.entries.clear();
        self.floor = self.clock.load(Ordering::Acquire);
    }

    /// Whether no transaction stamped after `seen` changed a row of `table` whose
    /// partition-column value lies between `lo` and `hi` (inclusive; `None`: unbounded).
    /// `false` whenever this cannot be told (forgotten changes, too many to look at,
    /// values that do not compare). Counted ([`RecentWrites::checks`]).
    pub fn unchanged_since(&mut self, seen: u64, table: TableId, lo: Option<&Value>, hi: Option<&Value>) -> bool {
        let unchanged = self.look(seen, table, lo, hi);
        if unchanged {
            self.checks.0 += 1;
        } else {
            self.checks.1 += 1;
        }
        unchanged
    }

    /// Checks answered since this partition started: (unchanged, changed or not known).
    pub fn checks(&self) -> (u64, u64) {
        self.checks
    }

    fn look(&self, seen: u64, table: TableId, lo: Option<&Value>, hi: Option<&Value>) -> bool {
        if seen < self.floor {
            return false;
        }
        for (n, w) in self.entries.iter().rev().enumerate() {
            if w.stamp <= seen {
                return true;
            }
            if n >= LOOKED_AT {
                return false;
            }
            if w.table != table {
                continue;
            }
            let Some(key) = &w.key else { return false };
            let above_lo = lo.is_none_or(|lo| sql_compare(key.as_ref(), lo.as_ref()).is_none_or(|o| o.is_ge()));
            let below_hi = hi.is_none_or(|hi| sql_compare(key.as_ref(), hi.as_ref()).is_none_or(|o| o.is_le()));
            if above_lo && below_hi {
                return false;
            }
        }
        true
    }

    /// Bytes held.
    pub fn memory(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Written>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: i64) -> Value {
        Value::Int(v)
    }

    #[test]
    fn a_change_in_the_range_after_the_read_began_is_found_and_others_are_not() {
        let clock = Arc::new(AtomicU64::new(0));
        let mut r = RecentWrites::new(clock.clone());
        let s1 = r.stamp();
        r.push(s1, 1, Some(int(50)));
        let seen = clock.load(Ordering::Acquire);
        assert!(
            r.unchanged_since(seen, 1, Some(&int(40)), Some(&int(60))),
            "before the read: seen"
        );
        let s2 = r.stamp();
        r.push(s2, 1, Some(int(70)));
        r.push(s2, 2, Some(int(50)));
        assert!(
            r.unchanged_since(seen, 1, Some(&int(40)), Some(&int(60))),
            "outside the range, other table"
        );
        assert!(!r.unchanged_since(seen, 1, Some(&int(60)), Some(&int(80))));
        assert!(
            !r.unchanged_since(seen, 1, Some(&int(70)), Some(&int(70))),
            "bounds are inclusive"
        );
        assert!(!r.unchanged_since(seen, 1, None, Some(&int(70))));
        assert!(!r.unchanged_since(seen, 1, Some(&int(70)), None));
        assert!(r.unchanged_since(seen, 1, Some(&int(71)), None));
        assert!(!r.unchanged_since(seen, 2, None, None));
        // A table without a partition column: any change counts.
        r.push(r.stamp(), 3, None);
        assert!(!r.unchanged_since(seen, 3, Some(&int(1)), Some(&int(1))));
        // Values that do not compare count as inside.
        assert!(!r.unchanged_since(seen, 1, Some(&Value::Text("a".into())), None));
    }

    #[test]
    fn reads_older_than_what_was_forgotten_cannot_be_checked() {
        let clock = Arc::new(AtomicU64::new(0));
        let mut r = RecentWrites::new(clock.clone());
        let seen = clock.load(Ordering::Acquire);
        for _ in 0..REMEMBERED + 1 {
            let s = r.stamp();
            r.push(s, 1, Some(int(1_000_000)));
        }
        assert!(!r.unchanged_since(seen, 1, Some(&int(0)), Some(&int(10))));
        let now = clock.load(Ordering::Acquire);
        assert!(r.unchanged_since(now, 1, Some(&int(0)), Some(&int(10))));
        r.forget();
        assert!(!r.unchanged_since(now - 1, 1, Some(&int(0)), Some(&int(10))));
        assert!(r.unchanged_since(clock.load(Ordering::Acquire), 1, None, None));
        assert_eq!(r.checks(), (2, 2));
    }

    #[test]
    fn too_many_changes_to_look_at_count_as_changed() {
        let clock = Arc::new(AtomicU64::new(0));
        let mut r = RecentWrites::new(clock.clone());
        let seen = clock.load(Ordering::Acquire);
        for _ in 0..LOOKED_AT + 2 {
            let s = r.stamp();
            r.push(s, 2, Some(int(1)));
        }
        assert!(!r.unchanged_since(seen, 1, None, None));
    }
}
