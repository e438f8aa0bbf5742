//! What a partition's recent transactions changed and read: for each committed
//! transaction, the partition-column value of each row it inserted, updated or deleted,
//! and (for interactive transactions) the ranges of partition-column values it read, with
//! its place in the serial order taken from a clock shared by every partition.
//!
//! **Stamps.** A committing transaction that changed rows takes one stamp (`fetch_add` on
//! the clock) while it holds all its partitions; one that changed nothing is placed by a
//! load of the clock while it holds them. Stamp order is a serial order: two transactions
//! that share a partition hold it one after the other, and take their stamps (or loads)
//! in that order.
//!
//! **Unchanged reads.** An interactive transaction's COMMIT checks that each of its reads
//! still gives what its client was shown. A read that looked at the rows of one table
//! whose partition column lies in a known range, and that started when the clock said
//! `seen`, cannot give anything else if no transaction stamped after `seen` changed a row
//! of that table in that range at any partition it reads: then the COMMIT need not run it
//! again ([`Recent::unchanged_since`]). Why a stamp at or below `seen` was seen by the
//! read: a transaction takes its stamp while it holds its partitions, before it lets go of
//! them; a read loads the clock before it takes its partitions. If the load returned the
//! stamp or more, the stamp was taken before the load, so the writer held the partition
//! before the read took it, and the read saw its changes. A change the read did not see
//! was therefore stamped after the load: above `seen`, and looked at.
//!
//! **Earlier places.** A COMMIT whose reads changed since its client saw them may still
//! commit at an earlier place of the order, just before the first change it did not see
//! (its *cut*), when nothing committed after that place read or wrote a row it writes
//! (interactive.rs, "Committing at an earlier place"). Its entries then cover every stamp
//! from its cut to its own stamp ([`Span`]), so that any check over that stretch finds
//! them: the place it took lies there, and its changes were not in the partitions there.
//! That check needs the reads of recent commits: the ranges an interactive transaction
//! read ([`Recent::push_read`]), and for every other transaction, whose reads are not
//! described, the latest place one read anything ([`Recent::mark_opaque`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::schema::TableId;
use permafrost_types::{Value, sql_compare};

/// Changes, and reads, one partition remembers: past this many of each, the oldest are
/// forgotten (a read started before them is then run again at its COMMIT, and no COMMIT
/// takes a place before them).
pub const REMEMBERED: usize = 4096;

/// At most this many entries are looked at for one check; past them it answers "changed"
/// (looking would cost more than running the read again).
pub const LOOKED_AT: usize = 1024;

/// The stamps a committed transaction's entries cover: its own (`from == to`), or, for one
/// that committed at an earlier place, every stamp from just after its cut to its own.
/// Entries are pushed in the order their partition ran them, so `to` never decreases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub from: u64,
    pub to: u64,
}

impl Span {
    /// A transaction at stamp (or clock load) `at`.
    pub fn at(at: u64) -> Span {
        Span { from: at, to: at }
    }

    /// Whether it covers a stamp in `(after, upto]`.
    fn meets(self, after: u64, upto: u64) -> bool {
        self.from <= upto && self.to > after
    }
}

/// One changed row.
#[derive(Debug, Clone)]
struct Written {
    span: Span,
    table: TableId,
    /// Its partition-column value (before and after an update that changed it: two
    /// entries); `None` for a table without a partition column (any read of it counts as
    /// changed).
    key: Option<Value>,
}

/// The rows of `table` whose partition-column value lies between `lo` and `hi`
/// (inclusive, `None` unbounded): what a statement read, or chose the rows it wrote by.
#[derive(Debug, Clone)]
pub struct KeyRange {
    pub table: TableId,
    pub lo: Option<Value>,
    pub hi: Option<Value>,
}

/// One range a committed interactive transaction read, at its stamp (or place).
#[derive(Debug, Clone)]
struct Read {
    to: u64,
    range: KeyRange,
}

/// Whether `key` lies between `lo` and `hi` (inclusive, `None` unbounded); values that do
/// not compare count as inside.
fn inside(key: &Value, lo: Option<&Value>, hi: Option<&Value>) -> bool {
    let above_lo = lo.is_none_or(|lo| sql_compare(key.as_ref(), lo.as_ref()).is_none_or(|o| o.is_ge()));
    let below_hi = hi.is_none_or(|hi| sql_compare(key.as_ref(), hi.as_ref()).is_none_or(|o| o.is_le()));
    above_lo && below_hi
}

/// What the transactions committed at one partition changed and read, newest last
/// ([`crate::PartitionStore::remember_writes`]).
#[derive(Debug)]
pub struct Recent {
    clock: Arc<AtomicU64>,
    writes: VecDeque<Written>,
    reads: VecDeque<Read>,
    /// The latest place at which a committed transaction whose reads are not described
    /// read this partition ([`Recent::mark_opaque`]).
    opaque: u64,
    /// The largest `to` forgotten among changes: checks reaching below it cannot be told.
    floor: u64,
    /// The same among reads.
    read_floor: u64,
    /// Checks answered so far: unchanged, and changed (or not known).
    checks: (u64, u64),
    /// COMMITs that looked for an earlier place: placed there, and refused.
    places: (u64, u64),
}

/// A check that cannot be told: what it needs was forgotten, or is too long to look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unknown;

impl Recent {
    pub fn new(clock: Arc<AtomicU64>) -> Recent {
        let floor = clock.load(Ordering::Acquire);
        Recent {
            clock,
            writes: VecDeque::new(),
            reads: VecDeque::new(),
            opaque: floor,
            floor,
            read_floor: floor,
            checks: (0, 0),
            places: (0, 0),
        }
    }

    /// A stamp for a transaction committing now (called while it holds its partitions).
    pub(crate) fn stamp(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// The place of a transaction that changes nothing, committing now (called while it
    /// holds its partitions).
    pub(crate) fn now(&self) -> u64 {
        self.clock.load(Ordering::Acquire)
    }

    pub(crate) fn push(&mut self, span: Span, table: TableId, key: Option<Value>) {
        if self.writes.len() >= REMEMBERED
            && let Some(old) = self.writes.pop_front()
        {
            self.floor = self.floor.max(old.span.to);
        }
        self.writes.push_back(Written { span, table, key });
    }

    /// Notes that a transaction committed at `to` read `range`.
    pub(crate) fn push_read(&mut self, to: u64, range: KeyRange) {
        if self.reads.len() >= REMEMBERED
            && let Some(old) = self.reads.pop_front()
        {
            self.read_floor = self.read_floor.max(old.to);
        }
        self.reads.push_back(Read { to, range });
    }

    /// Notes that a transaction committed at `at` may have read anything here.
    pub(crate) fn mark_opaque(&mut self, at: u64) {
        self.opaque = self.opaque.max(at);
    }

    /// Forgets everything: reads started before now are run again at their COMMIT, and no
    /// COMMIT takes a place before now (after a change not made through transactions,
    /// such as a restore or a schema change).
    pub fn forget(&mut self) {
        self.writes.clear();
        self.reads.clear();
        let now = self.clock.load(Ordering::Acquire);
        self.floor = now;
        self.read_floor = now;
        self.opaque = now;
    }

    /// Whether no transaction stamped after `seen` changed a row of `table` whose
    /// partition-column value lies between `lo` and `hi` (inclusive; `None`: unbounded).
    /// `false` whenever this cannot be told (forgotten changes, too many to look at,
    /// values that do not compare). Counted ([`Recent::checks`]).
    pub fn unchanged_since(&mut self, seen: u64, table: TableId, lo: Option<&Value>, hi: Option<&Value>) -> bool {
        let unchanged = !self.changed_between(seen, u64::MAX, table, lo, hi);
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

    /// Counts a COMMIT that looked for an earlier place: `placed` there, or refused.
    pub fn count_place(&mut self, placed: bool) {
        if placed {
            self.places.0 += 1;
        } else {
            self.places.1 += 1;
        }
    }

    /// COMMITs counted here that looked for an earlier place: (placed, refused).
    pub fn places(&self) -> (u64, u64) {
        self.places
    }

    /// Whether a transaction whose entries cover a stamp in `(after, upto]` changed a row
    /// of `table` whose partition-column value lies between `lo` and `hi`; `true` when
    /// this cannot be told.
    pub fn changed_between(
        &self,
        after: u64,
        upto: u64,
        table: TableId,
        lo: Option<&Value>,
        hi: Option<&Value>,
    ) -> bool {
        if after < self.floor {
            return true;
        }
        for (n, w) in self.writes.iter().rev().enumerate() {
            if w.span.to <= after {
                return false;
            }
            if n >= LOOKED_AT {
                return true;
            }
            if w.table != table || !w.span.meets(after, upto) {
                continue;
            }
            match &w.key {
                Some(key) if !inside(key, lo, hi) => {}
                _ => return true,
            }
        }
        false
    }

    /// The first stamp covered by a change made after `seen` to a row of `table` whose
    /// partition-column value lies between `lo` and `hi`: a read started at `seen` that
    /// did not see that change may be put just before it. `Ok(None)` when there is none.
    pub fn first_change_after(
        &self,
        seen: u64,
        table: TableId,
        lo: Option<&Value>,
        hi: Option<&Value>,
    ) -> Result<Option<u64>, Unknown> {
        if seen < self.floor {
            return Err(Unknown);
        }
        let mut first: Option<u64> = None;
        for (n, w) in self.writes.iter().rev().enumerate() {
            if w.span.to <= seen {
                break;
            }
            if n >= LOOKED_AT {
                return Err(Unknown);
            }
            if w.table != table {
                continue;
            }
            match &w.key {
                Some(key) if !inside(key, lo, hi) => {}
                Some(_) => first = Some(first.map_or(w.span.from, |f| f.min(w.span.from))),
                None => return Err(Unknown),
            }
        }
        Ok(first)
    }

    /// Whether a transaction that committed after `cut` (its entries cover a later stamp)
    /// read the row of `table` whose partition-column value is `key`, or may have; `true`
    /// when this cannot be told.
    pub fn read_after(&self, cut: u64, table: TableId, key: &Value) -> bool {
        if self.opaque > cut || self.read_floor > cut {
            return true;
        }
        for (n, r) in self.reads.iter().rev().enumerate() {
            if r.to <= cut {
                return false;
            }
            if n >= LOOKED_AT {
                return true;
            }
            if r.range.table == table && inside(key, r.range.lo.as_ref(), r.range.hi.as_ref()) {
                return true;
            }
        }
        false
    }

    /// Bytes held.
    pub fn memory(&self) -> usize {
        self.writes.capacity() * std::mem::size_of::<Written>() + self.reads.capacity() * std::mem::size_of::<Read>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: i64) -> Value {
        Value::Int(v)
    }

    fn range(table: TableId, lo: Option<Value>, hi: Option<Value>) -> KeyRange {
        KeyRange { table, lo, hi }
    }

    #[test]
    fn a_change_in_the_range_after_the_read_began_is_found_and_others_are_not() {
        let clock = Arc::new(AtomicU64::new(0));
        let mut r = Recent::new(clock.clone());
        let s1 = r.stamp();
        r.push(Span::at(s1), 1, Some(int(50)));
        let seen = clock.load(Ordering::Acquire);
        assert!(
            r.unchanged_since(seen, 1, Some(&int(40)), Some(&int(60))),
            "before the read: seen"
        );
        let s2 = r.stamp();
        r.push(Span::at(s2), 1, Some(int(70)));
        r.push(Span::at(s2), 2, Some(int(50)));
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
        let s = r.stamp();
        r.push(Span::at(s), 3, None);
        assert!(!r.unchanged_since(seen, 3, Some(&int(1)), Some(&int(1))));
        // Values that do not compare count as inside.
        assert!(!r.unchanged_since(seen, 1, Some(&Value::Text("a".into())), None));
    }

    #[test]
    fn reads_older_than_what_was_forgotten_cannot_be_checked() {
        let clock = Arc::new(AtomicU64::new(0));
        let mut r = Recent::new(clock.clone());
        let seen = clock.load(Ordering::Acquire);
        for _ in 0..REMEMBERED + 1 {
            let s = r.stamp();
            r.push(Span::at(s), 1, Some(int(1_000_000)));
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
        let mut r = Recent::new(clock.clone());
        let seen = clock.load(Ordering::Acquire);
        for _ in 0..LOOKED_AT + 2 {
            let s = r.stamp();
            r.push(Span::at(s), 2, Some(int(1)));
        }
        assert!(!r.unchanged_since(seen, 1, None, None));
    }

    #[test]
    fn a_commit_placed_earlier_covers_every_stamp_from_its_cut_to_its_own() {
        let clock = Arc::new(AtomicU64::new(0));
        let mut r = Recent::new(clock.clone());
        let seen = clock.load(Ordering::Acquire);
        let s1 = r.stamp();
        r.push(Span::at(s1), 1, Some(int(10)));
        let s2 = r.stamp();
        r.push(Span::at(s2), 1, Some(int(20)));
        assert_eq!(
            r.first_change_after(seen, 1, Some(&int(0)), Some(&int(30))),
            Ok(Some(s1))
        );
        assert_eq!(r.first_change_after(seen, 1, Some(&int(15)), None), Ok(Some(s2)));
        assert_eq!(r.first_change_after(s2, 1, None, None), Ok(None));
        assert!(
            !r.changed_between(seen, s1 - 1, 1, None, None),
            "nothing up to the first stamp"
        );
        assert!(r.changed_between(seen, s1, 1, Some(&int(10)), Some(&int(10))));
        assert!(
            !r.changed_between(s1, s2, 1, Some(&int(10)), Some(&int(10))),
            "row 10 changed at s1 only"
        );
        // A commit placed just after `seen` (before s1), stamped s3: any stretch from its
        // cut to its stamp finds it.
        let s3 = r.stamp();
        r.push(Span { from: seen + 1, to: s3 }, 1, Some(int(30)));
        for (after, upto) in [(seen, seen + 1), (s1, s1), (s2, s3), (seen, u64::MAX)] {
            assert!(
                r.changed_between(after, upto, 1, Some(&int(30)), Some(&int(30))),
                "({after}, {upto}]"
            );
        }
        assert!(!r.changed_between(s3, u64::MAX, 1, None, None));
        assert_eq!(r.first_change_after(s1, 1, Some(&int(30)), None), Ok(Some(seen + 1)));
        // Forgotten changes cannot be told.
        r.forget();
        assert_eq!(r.first_change_after(seen, 1, None, None), Err(Unknown));
        assert!(r.changed_between(seen, seen, 1, None, None));
    }

    #[test]
    fn reads_after_a_cut_are_found_by_key_and_undescribed_readers_count_as_reading_all() {
        let clock = Arc::new(AtomicU64::new(0));
        let mut r = Recent::new(clock.clone());
        let cut = clock.load(Ordering::Acquire);
        let s1 = r.stamp();
        r.push_read(s1, range(1, Some(int(10)), Some(int(20))));
        r.push_read(s1, range(2, None, None));
        assert!(r.read_after(cut, 1, &int(15)));
        assert!(!r.read_after(cut, 1, &int(21)), "outside the range");
        assert!(r.read_after(cut, 2, &int(99)), "unbounded");
        assert!(!r.read_after(s1, 1, &int(15)), "read at the cut or before");
        let s2 = r.stamp();
        r.mark_opaque(s2);
        assert!(r.read_after(s1, 1, &int(99)), "an undescribed reader after the cut");
        assert!(!r.read_after(s2, 1, &int(99)));
        // Forgotten reads cannot be told.
        for _ in 0..REMEMBERED + 1 {
            let s = r.stamp();
            r.push_read(s, range(3, Some(int(0)), Some(int(0))));
        }
        assert!(r.read_after(s2, 1, &int(99)));
    }
}
