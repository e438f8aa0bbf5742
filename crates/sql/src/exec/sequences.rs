//! Table sequences (SERIAL, BIGSERIAL, identity columns): one counter per table for the
//! whole database, so that values increase per table whatever the partition count, and
//! what each transaction drew ([`Draws`]), which its command-log record keeps.
//!
//! A value is drawn from the table's counter ([`Sequences`], an atomic shared by the
//! partitions: taking a value is one `fetch_add`, no partition waits on another). When the
//! drawn column is the table's partition key, the row must live at the partition the value
//! hashes to, so a transaction skips values that belong to partitions it does not hold
//! (the server routes a one-row INSERT to the partition of the counter's next value, so a
//! lone inserter skips none). As in PostgreSQL, values are never given back: a transaction
//! that rolls back leaves a gap.
//!
//! Replay must rebuild the rows clients were answered, but counters are drawn in the order
//! transactions ran, not the order they committed, so a record keeps the values its
//! transaction drew and replay takes them instead of drawing ([`Draws::replaying`]); an
//! interactive transaction's COMMIT likewise takes the values its statements drew when
//! they first ran. A value given at recovery touches no counter: recovery moves them itself,
//! in log order ([`Sequences::replayed`]: each value raises its counter, each `setval()`,
//! kept among the values with [`SET_MARK`], sets it). The partition that commits a table's
//! values notes the highest (`Table::sequence`, in snapshots), and a snapshot keeps the
//! counters of the sequences of their own, so that after a restart no counter hands out
//! a value a client has seen.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use arc_swap::ArcSwap;

use permafrost_storage::partitioning::partition_of;
use permafrost_storage::{StorageError, TableId, TableSchema};
use permafrost_types::ValueRef;

use crate::error::{Result, SqlError};
use crate::expr::DrawSource;
use crate::prepared::Route;
use crate::sequence::SeqStep;

/// The counters of the database's table sequences: the last value each handed out. The
/// map is read without a lock (a new table's counter replaces it whole, once).
#[derive(Debug, Default)]
pub struct Sequences {
    counters: ArcSwap<HashMap<TableId, Arc<AtomicI64>>>,
}

impl Sequences {
    /// The counter of `table`'s sequence (0 until it hands out a value).
    pub fn counter(&self, table: TableId) -> Arc<AtomicI64> {
        if let Some(c) = self.counters.load().get(&table) {
            return c.clone();
        }
        self.counters.rcu(|m| {
            let mut m = HashMap::clone(m);
            m.entry(table).or_default();
            m
        });
        self.counters.load()[&table].clone()
    }

    /// The last value `table`'s sequence handed out (0: none).
    pub fn last(&self, table: TableId) -> i64 {
        self.counters
            .load()
            .get(&table)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Forgets the counter of a dropped sequence (`lastval()` of it is then not defined).
    pub fn forget(&self, table: TableId) {
        self.counters.rcu(|m| {
            let mut m = HashMap::clone(m);
            m.remove(&table);
            m
        });
    }

    /// Whether `table`'s sequence has a counter (it was created and not dropped).
    pub fn exists(&self, table: TableId) -> bool {
        self.counters.load().contains_key(&table)
    }

    /// Makes `v` the last value `table`'s sequence handed out, whatever it was (a sequence
    /// created, its counter one step below its START).
    pub fn set(&self, table: TableId, v: i64) {
        self.counter(table).store(v, Ordering::Relaxed);
    }

    /// Makes `table`'s sequence hand out values above `v` only (a value a snapshot or a
    /// replayed record says was handed out).
    pub fn raise(&self, table: TableId, v: i64) {
        self.counter(table).fetch_max(v, Ordering::Relaxed);
    }

    /// Recovery's account of a logged transaction's `values` (what it took, in order), in
    /// log order: each value drawn raises its counter, each `setval()` ([`SET_MARK`]) sets
    /// it. (The transactions run again at their partitions concurrently, taking the values
    /// given, and touch no counter.)
    pub fn replayed(&self, values: &[(TableId, i64)]) {
        for &(id, v) in values {
            if id & READ_MARK != 0 {
                // (A read of the session's value: nothing moved.)
            } else if id & SET_MARK != 0 {
                self.set(id & !SET_MARK, v);
            } else {
                self.raise(id, v);
            }
        }
    }

    /// Where an INSERT of `rows` rows whose partition key `schema`'s sequence draws runs:
    /// at the partitions of the counter's next values (a lone inserter's rows then get
    /// those values; one that meets others skips the values they took), all partitions for
    /// more rows than there are partitions.
    pub fn route_next(&self, schema: &TableSchema, rows: usize, partitions: u32) -> Route {
        let last = self.last(schema.id);
        let next = (1..=rows as i64).map(|i| last.saturating_add(i));
        route_values(schema, next, rows, partitions)
    }
}

pub use crate::sequence::sequence_name;

/// What a statement's `nextval()` and `setval()` draw from: its transaction's [`Draws`],
/// behind the `RefCell` its `Env` shares with the expressions.
impl DrawSource for std::cell::RefCell<Draws<'_>> {
    fn nextval(&self, table: TableId, name: &str, step: SeqStep) -> Result<i64> {
        self.borrow_mut().draw_stepping(table, name, step)
    }

    fn currval(&self, table: Option<TableId>, name: &str) -> Result<i64> {
        let mut d = self.borrow_mut();
        // Drawn (or, for currval, set by `setval(s, v)`) earlier in the transaction.
        // (lastval(): the sequence drawn from last, and its value now.)
        let of = table.or_else(|| {
            d.taken
                .iter()
                .rev()
                .find(|(t, _)| t & (SET_MARK | READ_MARK) == 0)
                .map(|e| e.0)
        });
        let drawn = of.and_then(|x| {
            d.taken
                .iter()
                .enumerate()
                .rev()
                .find(|&(i, &(t, _))| t == x || (t == x | SET_MARK && d.called.contains(&i)))
                .map(|(_, &(_, v))| v)
        });
        if let Some(v) = drawn {
            return Ok(v);
        }
        let entry = table.map_or(LASTVAL, |t| t | READ_MARK);
        // Given (replay, a block's COMMIT): read where it first ran; else the session's.
        let v = match d.given.iter().find(|(t, _)| *t == entry) {
            Some(&(_, v)) => Some(v),
            None => d.session.as_ref().and_then(|s| match table {
                Some(t) => s.current(t),
                // (Not of a sequence dropped since.)
                None => s
                    .last()
                    .filter(|(t, _)| d.counters.is_none_or(|c| c.exists(*t)))
                    .map(|l| l.1),
            }),
        };
        let v = v.ok_or_else(|| {
            SqlError::SequenceNotYetDefined(match table {
                Some(_) => format!("currval of sequence \"{name}\" is not yet defined in this session"),
                None => "lastval is not yet defined in this session".to_string(),
            })
        })?;
        d.taken.push((entry, v));
        Ok(v)
    }

    /// Sets the counter (not undone by a rollback, as in PostgreSQL) and notes it among
    /// the values taken, marked ([`SET_MARK`]); a statement that runs again with its
    /// values given (replay, a block's COMMIT) leaves the counter to whoever set it first.
    fn setval(&self, table: TableId, last: i64, called: bool) -> Result<()> {
        let mut d = self.borrow_mut();
        let counters = d
            .counters
            .ok_or_else(|| SqlError::Unsupported("setval() where no value may be set".into()))?;
        if d.take_given(table | SET_MARK).is_none() {
            counters.set(table, last);
        }
        if called {
            let at = d.taken.len();
            d.called.push(at);
        }
        d.taken.push((table | SET_MARK, last));
        Ok(())
    }

    fn clock(&self, statement: bool) -> Result<i64> {
        let mut d = self.borrow_mut();
        let entry = if statement { STATEMENT_CLOCK } else { CLOCK };
        if statement {
            // (Its statement's, or the statement's first clock_timestamp(): no clock read
            // in the statement comes before its statement_timestamp().)
            let start = d.statement_start.min(d.taken.len());
            if let Some(&(_, v)) = d.taken[start..]
                .iter()
                .find(|(t, _)| *t == STATEMENT_CLOCK || *t == CLOCK)
            {
                return Ok(v);
            }
        }
        // Given (replay, a block's COMMIT): what the statement read when it first ran.
        let v = match d.take_given(entry) {
            Some(v) => v,
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |t| i64::try_from(t.as_micros()).unwrap_or(i64::MAX)),
        };
        d.taken.push((entry, v));
        Ok(v)
    }
}

/// The values a session's sequences last gave it (`nextval()` in any of its statements):
/// what `currval()` and `lastval()` read. Shared by the connection's statements, each of
/// which notes what it drew when its body ran to its end ([`Draws::note_session`]).
#[derive(Debug, Default)]
pub struct SessionSequences {
    values: std::sync::Mutex<SessionValues>,
}

#[derive(Debug, Default)]
struct SessionValues {
    by_sequence: HashMap<TableId, i64>,
    last: Option<TableId>,
}

impl SessionSequences {
    fn lock(&self) -> std::sync::MutexGuard<'_, SessionValues> {
        self.values.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value sequence `table` last gave the session.
    pub fn current(&self, table: TableId) -> Option<i64> {
        self.lock().by_sequence.get(&table).copied()
    }

    /// The sequence the session drew from last, and its value for the session now (what
    /// it drew, or a later `setval()` set).
    pub fn last(&self) -> Option<(TableId, i64)> {
        let v = self.lock();
        let t = v.last?;
        v.by_sequence.get(&t).map(|&x| (t, x))
    }

    /// Notes the values a statement drew (marked entries are not draws), in order, and
    /// those `setval(s, v)` made the session's current ones (`called`: where in `taken`).
    pub fn note(&self, taken: &[(TableId, i64)], called: &[usize]) {
        // (Draws, and setval() entries: not the reads of currval() and lastval().)
        let mut drawn = taken
            .iter()
            .enumerate()
            .filter(|(_, (t, _))| t & READ_MARK == 0)
            .peekable();
        if drawn.peek().is_none() {
            return;
        }
        let mut v = self.lock();
        for (i, &(t, x)) in drawn {
            if t & SET_MARK == 0 {
                v.by_sequence.insert(t, x);
                v.last = Some(t);
            } else if called.contains(&i) {
                v.by_sequence.insert(t & !SET_MARK, x);
            }
        }
    }
}

/// Marks a `currval()` or `lastval()` that read the session's value among a transaction's
/// values taken (the sequence's id with this bit set, [`LASTVAL`] for `lastval()`), so
/// that replay and a block's COMMIT read the same value without the session.
pub const READ_MARK: TableId = 1 << 30;

/// The entry of a `lastval()` read ([`READ_MARK`]).
pub const LASTVAL: TableId = READ_MARK | (READ_MARK - 1);

/// The entry of a `clock_timestamp()` read ([`READ_MARK`]; no sequence has this id), with
/// the microseconds since the epoch it read.
pub const CLOCK: TableId = READ_MARK | (READ_MARK - 2);

/// The entry of a statement's `statement_timestamp()` ([`READ_MARK`]), read once per
/// statement.
pub const STATEMENT_CLOCK: TableId = READ_MARK | (READ_MARK - 3);

/// Marks a `setval()` among a transaction's values taken (the id of its sequence with this
/// bit set, and the last value it set): the command log keeps it in order with the values
/// drawn, and recovery sets the counter to it in log order ([`Sequences::replayed`]).
pub const SET_MARK: TableId = 1 << 31;

/// The partitions of `values` of `schema`'s partition key (`n` of them): one, or all.
pub fn route_values(schema: &TableSchema, values: impl Iterator<Item = i64>, n: usize, partitions: u32) -> Route {
    let Some(pc) = schema.partition_column else {
        return Route::All;
    };
    if n == 0 || n as u64 > u64::from(partitions) {
        return Route::All;
    }
    let ty = &schema.columns[pc].ty;
    let mut single = None;
    for v in values {
        let p = partition_of(ValueRef::Int(v), ty, partitions);
        match single {
            None => single = Some(p),
            Some(q) if q != p => return Route::All,
            Some(_) => {}
        }
    }
    single.map_or(Route::All, Route::Single)
}

/// Where a transaction's sequence values come from, and the values it took.
#[derive(Debug, Default)]
pub struct Draws<'a> {
    /// The database's counters; `None` where nothing may draw (a statement checked but not
    /// run, tests of the plan alone).
    pub counters: Option<&'a Sequences>,
    /// Values to take before drawing, by table in order: what a replayed record or a
    /// COMMIT's statements drew when they first ran.
    given: VecDeque<(TableId, i64)>,
    /// Whether the transaction is a replayed record written before records kept their
    /// values: it draws as it did then, from the partition's own sequence.
    pub legacy: bool,
    /// The values the transaction took, in order: what its record keeps.
    pub taken: Vec<(TableId, i64)>,
    /// Whether the values given are a replayed record's: recovery moves the counters in
    /// log order ([`Sequences::replayed`]), so taking them moves none. Otherwise (a block's
    /// statements run again by a probe or the COMMIT, after its CREATE SEQUENCE set the
    /// counter anew) a value given raises its counter.
    recovering: bool,
    /// Where in `taken` the running statement's values start (a transaction block's
    /// statement: [`Draws::give_statement`]).
    pub statement_start: usize,
    /// What `currval()` and `lastval()` read, and where the values drawn are noted: the
    /// session's, for a statement a client sent.
    pub session: Option<Arc<SessionSequences>>,
    /// Where in `taken` the `setval(s, v)` calls are (not `setval(s, v, false)`): their
    /// `v`, the value set, becomes the session's `currval(s)`. Not logged: no later
    /// transaction's values depend on a session's.
    pub called: Vec<usize>,
}

impl<'a> Draws<'a> {
    /// Draws of a live transaction from `counters`.
    pub fn live(counters: &'a Sequences) -> Draws<'a> {
        Draws {
            counters: Some(counters),
            ..Draws::default()
        }
    }

    /// Draws of a replayed record of an earlier build, which kept no values
    /// ([`Draws::legacy`]).
    pub fn legacy(counters: &'a Sequences) -> Draws<'a> {
        Draws {
            counters: Some(counters),
            legacy: true,
            ..Draws::default()
        }
    }

    /// Draws that take `given` first (a replayed record's values, or those a transaction
    /// block's statements drew before its COMMIT), then draw from `counters`.
    pub fn replaying(counters: &'a Sequences, given: &[(TableId, i64)]) -> Draws<'a> {
        Draws {
            counters: Some(counters),
            given: given.iter().copied().collect(),
            recovering: true,
            ..Draws::default()
        }
    }

    /// Starts a statement of a transaction block that takes `values` before drawing (what
    /// it took when it first ran; none for a new statement).
    pub fn give_statement(&mut self, values: &[(TableId, i64)]) {
        self.given.clear();
        self.given.extend(values.iter().copied());
        self.statement_start = self.taken.len();
    }

    /// Starts the next statement of a replayed transaction block, whose values were all
    /// given at its start (`statement_timestamp()` is read once per statement).
    pub fn start_statement(&mut self) {
        self.statement_start = self.taken.len();
    }

    /// Forgets the clock reads of the running statement (a query of a transaction block,
    /// which replay does not run).
    pub fn forget_clock_reads(&mut self) {
        let start = self.statement_start.min(self.taken.len());
        let mut i = 0;
        self.taken.retain(|(t, _)| {
            i += 1;
            i <= start || (*t != CLOCK && *t != STATEMENT_CLOCK)
        });
    }

    /// The next given value for `table`, if any is left.
    pub(crate) fn take_given(&mut self, table: TableId) -> Option<i64> {
        let at = self.given.iter().position(|(t, _)| *t == table)?;
        self.given.remove(at).map(|(_, v)| v)
    }

    /// The next value of `table`'s sequence (named `name`, for messages): the next one
    /// given for it, else the counter's next value that `accept` admits (the others are
    /// skipped: a gap). The record keeps it.
    pub(crate) fn draw(&mut self, table: TableId, name: &str, accept: impl Fn(i64) -> bool) -> Result<i64> {
        if let Some(v) = self.take_given(table) {
            self.take_given_value(table, v);
            return Ok(v);
        }
        let counter = self.counter_of(table, name)?;
        let v = loop {
            let v = counter
                .fetch_add(1, Ordering::Relaxed)
                .checked_add(1)
                .ok_or_else(|| SqlError::Storage(StorageError::SequenceExhausted { table: name.into() }))?;
            if accept(v) {
                break v;
            }
        };
        self.taken.push((table, v));
        Ok(v)
    }

    /// Takes value `v` given for `table` ([`Draws::recovering`]).
    fn take_given_value(&mut self, table: TableId, v: i64) {
        if !self.recovering
            && let Some(c) = self.counters
        {
            c.raise(table, v);
        }
        self.taken.push((table, v));
    }

    /// The counter of sequence `table` (named `name`, for the message where there is none).
    fn counter_of(&self, table: TableId, name: &str) -> Result<Arc<AtomicI64>> {
        Ok(self
            .counters
            .ok_or_else(|| SqlError::Unsupported(format!("{name}: a sequence drawn where no value may be")))?
            .counter(table))
    }

    /// The next value of sequence `table` (named `name`) stepping as `step` says: the next
    /// one given for it, else the counter's next value (2200H past MAXVALUE, the counter
    /// left where it was). The record keeps it.
    pub(crate) fn draw_stepping(&mut self, table: TableId, name: &str, step: SeqStep) -> Result<i64> {
        if step == SeqStep::SERIAL {
            return self.draw(table, name, |_| true);
        }
        if let Some(v) = self.take_given(table) {
            self.take_given_value(table, v);
            return Ok(v);
        }
        let last = self
            .counter_of(table, name)?
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                c.checked_add(step.increment).filter(|v| *v <= step.max)
            })
            .map_err(|_| SqlError::SequenceLimit {
                name: name.to_string(),
                max: step.max,
            })?;
        let v = last + step.increment;
        self.taken.push((table, v));
        Ok(v)
    }

    /// Records that the transaction took `v` of `table`'s sequence from its partition's own
    /// (a replayed record of an earlier build): the counter is at least `v`, and the
    /// record keeps it.
    pub(crate) fn took(&mut self, table: TableId, v: i64) {
        if let Some(c) = self.counters {
            c.raise(table, v);
        }
        self.taken.push((table, v));
    }

    /// Notes the values the transaction drew in its session ([`SessionSequences`]).
    pub fn note_session(&self) {
        if let Some(s) = &self.session {
            s.note(&self.taken, &self.called);
        }
    }

    /// Whether it drew or set sequence values (not only read its session's): a change
    /// the command log keeps.
    pub fn changed(taken: &[(TableId, i64)]) -> bool {
        taken.iter().any(|(t, _)| t & READ_MARK == 0)
    }

    /// The highest value drawn per table (what the committing partition notes).
    pub fn highest(&self) -> Vec<(TableId, i64)> {
        let mut out: Vec<(TableId, i64)> = Vec::new();
        for &(t, v) in self.taken.iter().filter(|(t, _)| t & (SET_MARK | READ_MARK) == 0) {
            match out.iter_mut().find(|(x, _)| *x == t) {
                Some(e) => e.1 = e.1.max(v),
                None => out.push((t, v)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_raise_and_never_go_back() {
        let s = Sequences::default();
        assert_eq!(s.last(3), 0);
        s.raise(3, 10);
        s.raise(3, 4);
        assert_eq!(s.last(3), 10);
        assert_eq!(s.counter(3).fetch_add(1, Ordering::Relaxed) + 1, 11);
        assert_eq!(s.last(3), 11);
    }

    #[test]
    fn given_values_are_taken_per_table_in_order() {
        let s = Sequences::default();
        let mut d = Draws::replaying(&s, &[(1, 5), (2, 7), (1, 6)]);
        assert_eq!(d.take_given(2), Some(7));
        assert_eq!(d.take_given(2), None);
        assert_eq!(d.take_given(1), Some(5));
        assert_eq!(d.take_given(1), Some(6));
        d.taken = vec![(1, 5), (2, 7), (1, 6)];
        assert_eq!(d.highest(), vec![(1, 6), (2, 7)]);
    }
}
