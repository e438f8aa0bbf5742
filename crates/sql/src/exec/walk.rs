//! Walking the relations of a plan: nested loops, innermost last, each level reaching
//! its tuples through the access path the planner chose at the partitions its partition
//! pick names, binding them ([`Bindings`]) for the filters and for what the walk emits.
//! An evicted tuple met on the way is recorded (the pre-pass) and passed over, or, where
//! the statement reads evicted data where it lies ([`EvictedRows`]), read and bound.

use std::ops::ControlFlow;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use permafrost_storage::index::KeyEncoder;
use permafrost_storage::partitioning::partition_of;
use permafrost_storage::{PartitionStore, Table, TableId, TableSchema, TupleRef};
use permafrost_types::Value;

use crate::error::{Result, SqlError};
use crate::expr::{Cx, Expr};
use crate::plan::{Access, DERIVED_TABLE, PartitionPick, RelPlan};
use crate::rows::{RowRef, Rows};

use super::evicted_rows::EvictedRows;
use super::hashjoin::{self, Hashed, Passes, pass_of, probe_key};
use super::keys::{any_keys, build_key, build_range, first_if, key_value};
use super::reached::{EvictedRef, EvictedRefs};

mod bindings;
mod lateral;

pub(super) use bindings::Bindings;

/// Computes the rows of a LATERAL item of FROM: its query run with `args` as the values
/// it reads around it (`Expr::Outer`). The correlated subqueries' `Reader` does, through
/// the same shared borrow of the partitions as the walk (`walk/lateral.rs`).
pub(super) trait LateralRows {
    fn rows(&self, lateral: &crate::plan::Lateral, args: Vec<Value>, cx: &Cx<'_>) -> Result<std::rc::Rc<Rows>>;
}

/// Tuples a statement visits between two looks at [`Env::interrupted`].
pub const INTERRUPT_EVERY: u32 = 1024;

/// Whether a level reads one copy of a replicated table or every copy (writes).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Copies {
    One,
    All,
}

pub(super) struct Walker<'w, 's> {
    rels: &'w [RelPlan],
    stores: &'s [&'s mut PartitionStore],
    cx: &'w Cx<'w>,
    evicted: &'w mut EvictedRefs,
    touched: Option<&'w mut Vec<(usize, TableId, u32)>>,
    total: u32,
    copies: Copies,
    interrupted: &'w dyn Fn() -> bool,
    /// `Env::deadline`.
    deadline: Option<Instant>,
    /// Tuples visited since the last look at `interrupted`.
    visits: u32,
    /// Whether scans pass over evicted tuples without recording them (a `Deferred` scan
    /// reads them afterwards).
    skip_evicted: bool,
    /// The held partitions (positions in `stores`, below 64) the outermost level visited.
    pub(super) visited_locals: u64,
    /// The rows of the plan's subqueries in FROM, by relation ([`Walker::reading`]).
    derived: &'s [(usize, Rows)],
    /// The tuples (held partition, slot) of a FULL JOIN's right side that some row of its
    /// left side matched ([`RelPlan::full`]).
    /// (Made at the first match: a walk without a FULL JOIN makes none.)
    full_matched: Option<std::collections::HashSet<(usize, u32)>>,
    /// The null-extended groups (by number, [`RelPlan::starts`]) a row passed since the
    /// current entry of their first level.
    matched: u64,
    /// For EXPLAIN ANALYZE, by level: how often the walk entered it and how many rows
    /// passed its filters there ([`Walker::counting`]); `None`: nothing is counted.
    pub(super) counts: Option<Vec<(u64, u64)>>,
    /// `Env::work_mem`: the most a level's hash table may take.
    work_mem: usize,
    /// By level, the hash table of a relation reached by `Access::Hash` (hashjoin.rs).
    hashed: Vec<Hashed>,
    /// By level, the hash table of a subquery in FROM reached by `Access::Hash`.
    rows_hashed: Vec<Option<hashjoin::RowsTable>>,
    /// Whether a hash table past `work_mem` may be built in passes ([`Walker::walk_all`]).
    partitionable: bool,
    /// A level whose table did not fit, and the passes it needs (set by its first entry,
    /// which stops the walk: nothing was emitted before it).
    overflow: Option<(usize, u64)>,
    /// The pass being walked, and the encoder of its level's keys.
    passes: Option<(Passes, KeyEncoder)>,
    /// For EXPLAIN ANALYZE (when counting), by level: how its hash table went, once
    /// [`Walker::walk_all`] is over.
    pub(super) hash_notes: Option<Vec<Option<String>>>,
    /// What computes the rows of the LATERAL items of FROM ([`Walker::lateral`]).
    lateral: Option<&'w dyn LateralRows>,
    /// `Reach::evicted_rows`: where the evicted tuples met are read instead of recorded.
    evicted_rows: Option<&'w dyn EvictedRows>,
}

/// What a walk reads and how it is stopped: the partitions a transaction holds (shared:
/// a walk only reads), how many the database has, and `Env::interrupted` and
/// `Env::deadline`.
#[derive(Clone, Copy)]
pub(super) struct Reach<'s> {
    pub(super) stores: &'s [&'s mut PartitionStore],
    pub(super) total: u32,
    pub(super) interrupted: &'s dyn Fn() -> bool,
    pub(super) deadline: Option<Instant>,
    /// `Env::work_mem`.
    pub(super) work_mem: usize,
    /// `Env::evicted_rows`.
    pub(super) evicted_rows: Option<&'s dyn EvictedRows>,
}

impl<'w> Walker<'w, 'w> {
    /// A walk of `rels` over the partitions `reach` gives: recording the evicted tuples it
    /// meets in `evicted`, the tuples it visits in `touched` (LRU sampling) when given,
    /// reading replicated relations from `copies`, passing over evicted tuples without
    /// recording them when `skip_evicted`.
    pub(super) fn over(
        rels: &'w [RelPlan],
        reach: Reach<'w>,
        evicted: &'w mut EvictedRefs,
        cx: &'w Cx<'w>,
        touched: Option<&'w mut Vec<(usize, TableId, u32)>>,
        copies: Copies,
        skip_evicted: bool,
    ) -> Walker<'w, 'w> {
        Walker {
            rels,
            stores: reach.stores,
            cx,
            evicted,
            touched,
            total: reach.total,
            copies,
            interrupted: reach.interrupted,
            deadline: reach.deadline,
            visits: 0,
            skip_evicted,
            visited_locals: 0,
            derived: &[],
            full_matched: None,
            matched: 0,
            counts: None,
            work_mem: reach.work_mem,
            hashed: Vec::new(),
            rows_hashed: Vec::new(),
            partitionable: false,
            overflow: None,
            passes: None,
            hash_notes: None,
            lateral: None,
            evicted_rows: reach.evicted_rows,
        }
    }

    /// This walk, counting the rows of each level (EXPLAIN ANALYZE).
    pub(super) fn counting(self, on: bool) -> Self {
        let counts = on.then(|| vec![(0, 0); self.rels.len()]);
        Walker { counts, ..self }
    }

    /// This walk, with the hash tables by level an earlier walk of the same relations
    /// built ([`Walker::take_hashes`]): a correlated subquery's walks share them.
    pub(super) fn hashing(self, hashed: Vec<Hashed>) -> Self {
        Walker { hashed, ..self }
    }

    /// The hash tables by level this walk built or was given.
    pub(super) fn take_hashes(&mut self) -> Vec<Hashed> {
        std::mem::take(&mut self.hashed)
    }

    /// This walk, reading the rows `derived` (by relation) for the plan's subqueries in
    /// FROM.
    pub(super) fn reading(self, derived: &'w [(usize, Rows)]) -> Self {
        Walker { derived, ..self }
    }
}

pub(super) struct LevelState {
    err: Option<SqlError>,
    flow: ControlFlow<()>,
}

pub(super) type Emit<'f, 's> = dyn FnMut(&Bindings<'s>) -> Result<ControlFlow<()>> + 'f;

impl<'w, 's> Walker<'w, 's> {
    /// A level reading a subquery in FROM: its rows, computed before the walk, each
    /// checked against the level's filters (and null-extended as a table's would be).
    /// Adds to the counts of `level` (EXPLAIN ANALYZE), when they are kept.
    fn count(&mut self, level: usize, loops: u64, rows: u64) {
        if let Some(c) = self.counts.as_mut().and_then(|c| c.get_mut(level)) {
            c.0 += loops;
            c.1 += rows;
        }
    }

    fn walk_derived(
        &mut self,
        level: usize,
        rp: &RelPlan,
        b: &mut Bindings<'s>,
        emit: &mut Emit<'_, 's>,
    ) -> Result<ControlFlow<()>> {
        let derived: &'s [(usize, Rows)] = self.derived;
        let Some((_, rows)) = derived.iter().find(|(r, _)| *r == rp.rel) else {
            return Err(SqlError::Unsupported(
                "a subquery in FROM whose rows were not computed".into(),
            ));
        };
        // Reached through a hash table of its rows (this walk's own: a correlated
        // subquery's rows in FROM may differ from one run to the next).
        let table = match &rp.access {
            Access::Hash { cols, .. } => self.rows_table(level, rp, rows, cols)?,
            _ => None,
        };
        let r = self.walk_derived_rows(level, rp, rows, table.as_ref(), b, emit);
        if let Some(t) = table {
            self.rows_hashed[level] = Some(t);
        }
        r
    }

    /// The hash table of the rows `rows` of a subquery in FROM (level `level`) by columns
    /// `cols`, taken out of the walk (put back by the caller); built at the level's first
    /// entry; `None` past `work_mem` (the level reads every row).
    fn rows_table(
        &mut self,
        level: usize,
        rp: &RelPlan,
        rows: &'s Rows,
        cols: &[usize],
    ) -> Result<Option<hashjoin::RowsTable>> {
        if self.rows_hashed.len() <= level {
            self.rows_hashed.resize_with(level + 1, || None);
        }
        if let Some(t) = self.rows_hashed[level].take() {
            return Ok(Some(t));
        }
        if self
            .hashed
            .get(level)
            .is_some_and(|h| matches!(h, Hashed::Scanned { .. }))
        {
            return Ok(None);
        }
        let own = &rp.filters[..rp.bounds.min(rp.filters.len())];
        let mut b = Bindings::new();
        let cx = self.cx;
        let mut keep = |row: RowRef<'s>| -> Result<bool> {
            b.bind_derived(rp.rel, row);
            for f in own {
                if !f.test(&b, cx)? {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        let t = hashjoin::RowsTable::build(rows, cols, self.work_mem, &mut keep)?;
        if t.is_none() {
            // Remembered, so that later entries do not try again.
            if self.hashed.len() <= level {
                self.hashed.resize_with(level + 1, || Hashed::Unbuilt);
            }
            self.hashed[level] = Hashed::Scanned { needed: 0 };
        }
        Ok(t)
    }

    /// The rows of a subquery in FROM at level `level`: those of `table` whose key the
    /// bound tuples give (past the filters it was built with), or all of them.
    fn walk_derived_rows(
        &mut self,
        level: usize,
        rp: &RelPlan,
        rows: &'s Rows,
        table: Option<&hashjoin::RowsTable>,
        b: &mut Bindings<'s>,
        emit: &mut Emit<'_, 's>,
    ) -> Result<ControlFlow<()>> {
        let (picked, first) = match (table, &rp.access) {
            (Some(t), Access::Hash { keys, .. }) => (Some(t.matches(keys, b, self.cx)?), rp.bounds),
            _ => (None, 0),
        };
        let n = picked.map_or(rows.len(), <[u32]>::len);
        self.count(level, 1, 0);
        for i in 0..n {
            b.bind_derived(rp.rel, rows.row(picked.map_or(i, |p| p[i] as usize)));
            if self.row_bound(level, rp, first, b, emit)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        self.left(level, b, emit)
    }

    /// A result row bound at level `level` (a subquery in FROM's, a LATERAL item's): its
    /// filters from `first` on checked, and the walk goes on past the level.
    fn row_bound(
        &mut self,
        level: usize,
        rp: &RelPlan,
        first: usize,
        b: &mut Bindings<'s>,
        emit: &mut Emit<'_, 's>,
    ) -> Result<ControlFlow<()>> {
        self.visits += 1;
        if self.visits == INTERRUPT_EVERY {
            self.visits = 0;
            stop_now(self.interrupted, self.deadline)?;
        }
        if !self.all_hold(&rp.filters[first..], b)? {
            return Ok(ControlFlow::Continue(()));
        }
        self.count(level, 0, 1);
        self.passed(level, 0, b, emit)
    }

    /// Past level `level` with its tuple bound (or groups ending there null-extended): the
    /// groups ending there from the `from`th on are marked as matched, the predicates
    /// checked after each hold, and the walk goes on to the next level.
    #[inline]
    fn passed(
        &mut self,
        level: usize,
        from: usize,
        b: &mut Bindings<'s>,
        emit: &mut Emit<'_, 's>,
    ) -> Result<ControlFlow<()>> {
        for g in &self.rels[level].ends[from..] {
            self.matched |= 1 << g.id;
            if !self.all_hold(&g.after, b)? {
                return Ok(ControlFlow::Continue(()));
            }
        }
        self.walk(level + 1, b, emit)
    }

    /// Whether every predicate of `preds` holds over the tuples bound.
    #[inline]
    fn all_hold(&self, preds: &[Expr], b: &Bindings<'s>) -> Result<bool> {
        for f in preds {
            if !f.test(b, self.cx)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The end of an entry of level `level`: each null-extended group starting there that
    /// no row passed (innermost first) goes on with none of its relations bound (their
    /// columns read NULL), once the predicates checked after it hold.
    #[inline]
    fn left(&mut self, level: usize, b: &mut Bindings<'s>, emit: &mut Emit<'_, 's>) -> Result<ControlFlow<()>> {
        let starts = &self.rels[level].starts;
        for &(id, end) in starts {
            if self.matched & (1 << id) != 0 {
                continue;
            }
            for rp in &self.rels[level..=end] {
                b.unbind(rp.rel);
            }
            let ends = &self.rels[end].ends;
            let Some(k) = ends.iter().position(|g| g.id == id) else {
                return Err(SqlError::Unsupported("a null-extended group that does not end".into()));
            };
            if self.all_hold(&ends[k].after, b)? && self.passed(end, k + 1, b, emit)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The tuple `tuple` (held partition, slot) of level `level`, bound: the level's
    /// filters from `first_filter` on checked, and the walk goes on past the level.
    #[inline]
    fn bound(
        &mut self,
        level: usize,
        (li, slot): (usize, u32),
        first_filter: usize,
        b: &mut Bindings<'s>,
        emit: &mut Emit<'_, 's>,
    ) -> Result<ControlFlow<()>> {
        let rp = &self.rels[level];
        for f in &rp.filters[first_filter..] {
            if !f.test(b, self.cx)? {
                return Ok(ControlFlow::Continue(()));
            }
        }
        if let Some(t) = self.touched.as_deref_mut() {
            t.push((li, rp.schema.id, slot));
        }
        self.count(level, 0, 1);
        if rp.full {
            self.full_matched.get_or_insert_default().insert((li, slot));
        }
        self.passed(level, 0, b, emit)
    }

    /// Whether level `level` (relation `rp`, `Access::Hash` by columns `cols`) has its hash
    /// table: built at its first entry; `false` when it would take more than `work_mem`
    /// (the level scans instead).
    fn hash_table(&mut self, level: usize, rp: &RelPlan, cols: &[usize]) -> Result<bool> {
        if self.hashed.len() <= level {
            self.hashed.resize_with(level + 1, || Hashed::Unbuilt);
        }
        if matches!(self.hashed[level], Hashed::Unbuilt) {
            let locals = if rp.pick == PartitionPick::Replicated && self.copies == Copies::One {
                0..1
            } else {
                0..self.stores.len()
            };
            let stores: &'s [&'s mut PartitionStore] = self.stores;
            let tables = locals
                .map(|li| Ok((li, checked_table(stores[li], &rp.schema)?)))
                .collect::<Result<Vec<_>>>()?;
            // The table holds the tuples that pass the predicates on the relation alone.
            let own = &rp.filters[..rp.bounds.min(rp.filters.len())];
            let mut b = Bindings::new();
            let cx = self.cx;
            let mut keep = |li: usize, table: &'s Table, slot: u32, read: Option<&Rc<[Value]>>| -> Result<bool> {
                match read {
                    Some(row) => b.bind_read(rp.rel, row.clone(), TupleRef(slot), li),
                    None => b.bind(rp.rel, table, slot, li),
                }
                for f in own {
                    if !f.test(&b, cx)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            };
            let (interrupted, deadline) = (self.interrupted, self.deadline);
            let mut visits = 0u32;
            let mut tick = || {
                visits += 1;
                if visits == INTERRUPT_EVERY {
                    visits = 0;
                    stop_now(interrupted, deadline)?;
                }
                Ok(())
            };
            let enc = KeyEncoder::new(cols.iter().map(|&c| rp.schema.columns[c].ty).collect());
            let pass = self
                .passes
                .as_ref()
                .filter(|(p, _)| p.level == level)
                .map(|(p, _)| (p.pass, p.of));
            let evicted_rows = self.evicted_rows.map(|rows| {
                (
                    rows,
                    tables.iter().map(|(li, _)| stores[*li].partition()).collect::<Vec<_>>(),
                )
            });
            let read = evicted_rows.as_ref().map(|(rows, parts)| (*rows, parts.as_slice()));
            self.hashed[level] = hashjoin::build(enc, cols, &tables, self.work_mem, pass, read, &mut keep, &mut tick)?;
            // (Not a level inside a null-extended group: whether the group matched
            // cannot wait for other passes.)
            if let Hashed::Scanned { needed } = self.hashed[level]
                && self.partitionable
                && !RelPlan::inside_group(self.rels, level)
                && self.passes.is_none()
                && self.overflow.is_none()
            {
                self.overflow = Some((level, hashjoin::passes_for(needed, self.work_mem)));
            }
            // Its evicted tuples (once): the pre-pass brings them back, and the statement
            // runs again.
            if !self.skip_evicted
                && self.evicted_rows.is_none()
                && pass.is_none_or(|(p, _)| p == 0)
                && matches!(self.hashed[level], Hashed::Built(_))
            {
                for (li, table) in tables {
                    for (tomb, _) in table.tombstones().iter() {
                        self.evicted.push(EvictedRef {
                            partition: stores[li].partition(),
                            table: rp.schema.id,
                            tombstone: tomb,
                        });
                    }
                }
            }
        }
        Ok(matches!(self.hashed[level], Hashed::Built(_)))
    }

    /// A level reached through its hash table: the tuples whose key equals `keys` over
    /// the tuples bound before, each checked against the level's filters.
    fn walk_hashed(
        &mut self,
        level: usize,
        rp: &RelPlan,
        keys: &[Expr],
        b: &mut Bindings<'s>,
        emit: &mut Emit<'_, 's>,
    ) -> Result<ControlFlow<()>> {
        // Taken out while the level's tuples are walked (deeper levels have their own),
        // and put back however the walk ends.
        let Hashed::Built(table) = std::mem::replace(&mut self.hashed[level], Hashed::Unbuilt) else {
            return Ok(ControlFlow::Continue(()));
        };
        let r = self.walk_matches(level, rp, &table, keys, b, emit);
        self.hashed[level] = Hashed::Built(table);
        r
    }

    fn walk_matches(
        &mut self,
        level: usize,
        rp: &RelPlan,
        hashed: &hashjoin::HashTable,
        keys: &[Expr],
        b: &mut Bindings<'s>,
        emit: &mut Emit<'_, 's>,
    ) -> Result<ControlFlow<()>> {
        self.count(level, 1, 0);
        let found = match hashed.key(keys, b, self.cx)? {
            Some(k) => hashed.matches(&k),
            None => &[],
        };
        for &(li, slot) in found {
            let (li, stores) = (li as usize, self.stores);
            let table = checked_table(stores[li], &rp.schema)?;
            self.visits += 1;
            if self.visits == INTERRUPT_EVERY {
                self.visits = 0;
                stop_now(self.interrupted, self.deadline)?;
            }
            if TupleRef(slot).as_slot().is_some_and(|s| !table.is_visible(s)) {
                continue;
            }
            self.bind_tuple(b, rp, (li, table), slot)?;
            if self.bound(level, (li, slot), rp.bounds, b, emit)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        self.left(level, b, emit)
    }

    /// Binds tuple `r` (a slot, or an evicted tuple's reference, which a hash table or a
    /// FULL JOIN's unmatched side holds only when read in place) of `table`, at held
    /// partition `li`, as relation `rp`.
    fn bind_tuple(&self, b: &mut Bindings<'s>, rp: &RelPlan, (li, table): (usize, &'s Table), r: u32) -> Result<()> {
        match (TupleRef(r).as_tombstone(), self.evicted_rows) {
            (None, _) => b.bind(rp.rel, table, r, li),
            (Some(tomb), Some(rows)) => {
                let row = rows.row(self.stores[li].partition(), table, tomb)?;
                b.bind_read(rp.rel, row, TupleRef(r), li);
            }
            (Some(_), None) => return Err(SqlError::Unsupported("an evicted tuple bound without its block".into())),
        }
        Ok(())
    }

    /// The held partitions (as positions in `stores`) a level visits.
    fn locals(&self, rp: &RelPlan, b: &Bindings<'s>) -> Result<std::ops::Range<usize>> {
        Ok(match &rp.pick {
            PartitionPick::Replicated if self.copies == Copies::One => 0..1,
            PartitionPick::Key(e) => {
                let pc = rp.schema.partition_column.expect("keyed pick on a partitioned table");
                let ty = rp.schema.columns[pc].ty;
                let v = e.eval(b, self.cx)?;
                let Some(kv) = key_value(v.as_ref(), &ty) else {
                    return Ok(0..0);
                };
                let p = partition_of(Value::as_ref(&kv), &ty, self.total);
                match self.stores.iter().position(|s| s.partition() == p) {
                    Some(i) => i..i + 1,
                    None => 0..0,
                }
            }
            _ => 0..self.stores.len(),
        })
    }

    /// Walks every level from the first ([`Walker::walk`]); when a relation's hash table
    /// does not fit in `work_mem`, once per pass of its keys instead ([`Passes`]): the
    /// first walk stops at that relation's first entry, before anything was emitted.
    /// (EXPLAIN ANALYZE's counts are those of the passes, added up.)
    pub(super) fn walk_all(&mut self, b: &mut Bindings<'s>, emit: &mut Emit<'_, 's>) -> Result<ControlFlow<()>> {
        self.partitionable = true;
        let first = self.walk(0, b, emit)?;
        let Some((level, of)) = self.overflow.take() else {
            self.note_hashes(None);
            return Ok(first);
        };
        let Some(Access::Hash { cols, .. }) = self.rels.get(level).map(|r| &r.access) else {
            return Ok(first);
        };
        if let Some(c) = self.counts.as_mut() {
            c.iter_mut().for_each(|x| *x = (0, 0));
        }
        let schema = &self.rels[level].schema;
        let enc = KeyEncoder::new(cols.iter().map(|&c| schema.columns[c].ty).collect());
        let mut flow = ControlFlow::Continue(());
        for pass in 0..of {
            self.passes = Some((Passes { level, of, pass }, enc.clone()));
            self.hashed[level] = Hashed::Unbuilt;
            flow = self.walk(0, b, emit)?;
            if flow.is_break() {
                break;
            }
        }
        self.passes = None;
        self.note_hashes(Some((level, of)));
        self.hashed[level] = Hashed::Unbuilt;
        Ok(flow)
    }

    /// For EXPLAIN ANALYZE, how each level's hash table went (`hash_notes`); level
    /// `passes.0` was hashed in `passes.1` passes.
    fn note_hashes(&mut self, passes: Option<(usize, u64)>) {
        if self.counts.is_none() {
            return;
        }
        let notes = (0..self.rels.len())
            .map(|level| {
                if !matches!(self.rels[level].access, Access::Hash { .. }) {
                    return None;
                }
                if let Some((at, of)) = passes
                    && at == level
                {
                    return Some(format!("Hash: past work_mem, in {of} passes of its keys"));
                }
                if let Some(Some(t)) = self.rows_hashed.get(level) {
                    return Some(format!("Hash: {} rows", t.len()));
                }
                match self.hashed.get(level) {
                    Some(Hashed::Built(t)) => Some(format!("Hash: {} rows", t.len())),
                    Some(Hashed::Scanned { .. }) => Some("Hash: past work_mem, scanned at each entry".into()),
                    _ => None,
                }
            })
            .collect();
        self.hash_notes = Some(notes);
    }

    pub(super) fn walk(
        &mut self,
        level: usize,
        b: &mut Bindings<'s>,
        emit: &mut Emit<'_, 's>,
    ) -> Result<ControlFlow<()>> {
        if level == self.rels.len() {
            return emit(b);
        }
        let rp = &self.rels[level];
        for &(id, _) in &rp.starts {
            self.matched &= !(1 << id);
        }
        if rp.schema.id == DERIVED_TABLE {
            if let Some(l) = &rp.lateral {
                return self.walk_lateral(level, rp, l, b, emit);
            }
            return self.walk_derived(level, rp, b, emit);
        }
        if let Access::Hash { cols, keys } = &rp.access {
            // Hashed in passes: an entry whose key falls in another pass is taken there.
            if let Some((p, enc)) = self.passes.as_ref().filter(|(p, _)| p.level == level) {
                let here = match probe_key(enc, keys, b, self.cx)? {
                    Some(k) => pass_of(&k, p.of) == p.pass,
                    None => p.pass == 0,
                };
                if !here {
                    return Ok(ControlFlow::Continue(()));
                }
            }
            if self.hash_table(level, rp, cols)? {
                return self.walk_hashed(level, rp, keys, b, emit);
            }
            if self.overflow.is_some() {
                return Ok(ControlFlow::Break(()));
            }
        }
        self.count(level, 1, 0);
        for li in self.locals(rp, b)? {
            if level == 0 && li < 64 {
                self.visited_locals |= 1 << li;
            }
            let store: &'s PartitionStore = self.stores[li];
            let table = checked_table(store, &rp.schema)?;
            let mut st = LevelState {
                err: None,
                flow: ControlFlow::Continue(()),
            };
            // Filters an exact index range guarantees are not checked again (`RelPlan::bounds`).
            let first_filter = std::cell::Cell::new(0);
            let mut visit =
                |r: TupleRef, this: &mut Self, b: &mut Bindings<'s>, st: &mut LevelState| -> ControlFlow<()> {
                    this.visits += 1;
                    if this.visits == INTERRUPT_EVERY {
                        this.visits = 0;
                        if let Err(e) = stop_now(this.interrupted, this.deadline) {
                            st.err = Some(e);
                            return ControlFlow::Break(());
                        }
                    }
                    let res = match r.as_slot() {
                        Some(slot) if table.is_visible(slot) => {
                            b.bind(rp.rel, table, slot, li);
                            this.bound(level, (li, slot), first_filter.get(), b, emit)
                        }
                        Some(_) => return ControlFlow::Continue(()),
                        None => {
                            let tombstone = r.as_tombstone().expect("not a slot");
                            let Some(rows) = this.evicted_rows else {
                                this.evicted.push(EvictedRef {
                                    partition: store.partition(),
                                    table: rp.schema.id,
                                    tombstone,
                                });
                                return ControlFlow::Continue(());
                            };
                            // Read where it lies (a forked reader's image), not brought back.
                            rows.row(store.partition(), table, tombstone).and_then(|row| {
                                b.bind_read(rp.rel, row, r, li);
                                this.bound(level, (li, r.0), first_filter.get(), b, emit)
                            })
                        }
                    };
                    match res {
                        Ok(c) => {
                            st.flow = c;
                            c
                        }
                        Err(e) => {
                            st.err = Some(e);
                            ControlFlow::Break(())
                        }
                    }
                };
            match &rp.access {
                // (A relation too large to hash is scanned.)
                Access::Scan | Access::Hash { .. } => {
                    let _ = table.scan(|slot| visit(TupleRef::slot(slot), self, b, &mut st));
                    if st.err.is_none() && st.flow.is_continue() && !self.skip_evicted {
                        for (tomb, _) in table.tombstones().iter() {
                            let _ = visit(TupleRef::tombstone(tomb), self, b, &mut st);
                        }
                    }
                }
                Access::IndexEq { index, keys } => {
                    if let Some(key) = build_key(table, *index, keys, b, self.cx)? {
                        let unique = table.schema().indexes[*index].unique;
                        let _ = table
                            .index_store(*index)
                            .lookup(&key, |r| first_if(unique, visit(r, self, b, &mut st)));
                    }
                }
                Access::IndexAny { index, array } => {
                    let unique = table.schema().indexes[*index].unique;
                    for key in any_keys(table, *index, array, b, self.cx)? {
                        let _ = table
                            .index_store(*index)
                            .lookup(&key, |r| first_if(unique, visit(r, self, b, &mut st)));
                        if st.err.is_some() || st.flow.is_break() {
                            break;
                        }
                    }
                }
                Access::IndexRange {
                    index,
                    prefix,
                    lower,
                    upper,
                    backward,
                } => {
                    if let Some((lo, hi, exact)) = build_range(table, *index, prefix, lower, upper, b, self.cx)? {
                        if exact {
                            first_filter.set(rp.bounds);
                        }
                        let _ = table.index_store(*index).range_ahead(
                            &lo,
                            &hi,
                            *backward,
                            |r| table.prefetch(r),
                            |r| visit(r, self, b, &mut st),
                        );
                    }
                }
            }
            if let Some(e) = st.err {
                return Err(e);
            }
            if st.flow.is_break() {
                return Ok(st.flow);
            }
        }
        if self.left(level, b, emit)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
        if level == 0 && self.rels.get(1).is_some_and(|r| r.full) {
            return self.unmatched(b, emit);
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The end of a FULL JOIN's walk: the tuples of its right side (the second relation)
    /// that no tuple of the left matched, each with the left null-extended, checked
    /// against the query's predicates.
    fn unmatched(&mut self, b: &mut Bindings<'s>, emit: &mut Emit<'_, 's>) -> Result<ControlFlow<()>> {
        let (left, rp) = (&self.rels[0], &self.rels[1]);
        b.unbind(left.rel);
        let copies = if rp.pick == PartitionPick::Replicated && self.copies == Copies::One {
            0..1
        } else {
            0..self.stores.len()
        };
        for li in copies {
            let store: &'s PartitionStore = self.stores[li];
            let table = checked_table(store, &rp.schema)?;
            let matched = |t: u32| self.full_matched.as_ref().is_some_and(|m| m.contains(&(li, t)));
            // Its evicted tuples: read where they lie (and bound as read, below), or
            // recorded to be brought back.
            let mut slots = Vec::new();
            for (tomb, _) in table.tombstones().iter() {
                if self.evicted_rows.is_some() {
                    let r = TupleRef::tombstone(tomb).0;
                    if !matched(r) {
                        slots.push(r);
                    }
                } else {
                    self.evicted.push(EvictedRef {
                        partition: store.partition(),
                        table: rp.schema.id,
                        tombstone: tomb,
                    });
                }
            }
            let _ = table.scan(|slot| {
                if table.is_visible(slot) && !matched(slot) {
                    slots.push(slot);
                }
                ControlFlow::<()>::Continue(())
            });
            'slots: for slot in slots {
                stop_now(self.interrupted, self.deadline)?;
                self.bind_tuple(b, rp, (li, table), slot)?;
                for f in rp.ends.iter().flat_map(|g| &g.after) {
                    if !f.test(b, self.cx)? {
                        continue 'slots;
                    }
                }
                if self.walk(2, b, emit)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// The table a plan was made for, or `SchemaChanged` if the table was dropped or altered
/// since (the caller re-plans and retries).
pub(super) fn checked_table<'s>(store: &'s PartitionStore, schema: &Arc<TableSchema>) -> Result<&'s Table> {
    match store.table(schema.id) {
        Some(t) if Arc::ptr_eq(t.schema(), schema) => Ok(t),
        _ => Err(SqlError::SchemaChanged(schema.name.clone())),
    }
}

/// Whether a statement is to stop now: cancelled (57014), or past its slice.
pub(super) fn stop_now(interrupted: &dyn Fn() -> bool, deadline: Option<Instant>) -> Result<()> {
    if interrupted() {
        return Err(SqlError::Cancelled);
    }
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(SqlError::SliceOver);
    }
    Ok(())
}
