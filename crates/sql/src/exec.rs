//! Executing plans against partition storage.
//!
//! A statement runs inside a transaction that holds one partition (single-partition) or
//! several (multi-partition); [`Env`] gives it those partitions' stores. Relations are
//! joined by nested loops, innermost last; each level reaches its tuples through the access
//! path the planner chose, at the partitions its partition pick names.
//!
//! **Evicted tuples.** When an index entry or a scan reaches a tombstone, the tuple is on
//! disk. The statement records it in [`Env::evicted`] and carries on without it: this is
//! the pre-pass of DeBrabant et al. 2013 §3.3. The caller sees the non-empty list, rolls the
//! transaction back, fetches the blocks and restarts it; results computed during a pre-pass
//! are never returned to a client.
//!
//! **Atomicity.** A statement that fails part-way is rolled back to a savepoint taken
//! before it, so a failed statement changes nothing.

use std::cmp::Ordering;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use permafrost_storage::partitioning::partition_of;
use permafrost_storage::{
    ColumnDefault, PartitionStore, Row, Savepoint, StorageError, Table, TableId, TableSchema, TupleRef,
};
use permafrost_types::{DataType, Value, ValueError, ValueRef};

use crate::error::{Result, SqlError};
use crate::expr::{ColumnSource, Cx, Expr, NoColumns, compare};
use crate::plan::{
    Access, DeletePlan, InitPlan, InsertPlan, InsertSource, MAX_RELS, PartitionPick, Plan, RelPlan, SelectPlan,
    UpdatePlan,
};
use crate::prepared::Prepared;
pub use crate::prepared::coerce_params;
use crate::rows::{ColumnInfo, Rows};

/// An evicted tuple a statement needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EvictedRef {
    pub partition: u32,
    pub table: TableId,
    pub tombstone: u32,
}

/// What a statement runs against.
pub struct Env<'a, 'b> {
    /// The partitions the transaction holds.
    pub stores: &'a mut [&'b mut PartitionStore],
    /// Partitions in the database.
    pub total_partitions: u32,
    /// Whether this transaction's accesses update the access trackers (LRU sampling).
    pub sampled: bool,
    /// Transaction timestamp (microseconds since the epoch).
    pub now: i64,
    /// Evicted tuples the transaction reached (the pre-pass record).
    pub evicted: &'a mut Vec<EvictedRef>,
    /// Whether the statement is to stop: nobody waits for its result any more (a cancel
    /// request, a statement timeout, a client that went away). Asked every
    /// [`INTERRUPT_EVERY`] tuples a statement visits; the statement then fails with 57014
    /// and its transaction is rolled back.
    pub interrupted: &'a dyn Fn() -> bool,
    /// The memory one statement may hold for its result and its intermediate rows (sorts,
    /// DISTINCT, groups), in bytes; past it the statement fails with 54000.
    pub work_mem: usize,
    /// Whether a single-table scan that reaches evicted tuples may leave them to be read
    /// afterwards ([`Deferred`], set in `deferred`) instead of recording them in
    /// `evicted`: only for a transaction that is one read-only statement.
    pub defer_scans: bool,
    /// The evicted part of a scan left for later (see `defer_scans`).
    pub deferred: Option<Box<Deferred>>,
    /// The memory all running statements draw from past their first step
    /// ([`crate::workmem`]); `None`: no shared limit.
    pub pool: Option<&'a Arc<MemoryPool>>,
    /// The end of a read-only statement's read slice: looked at with
    /// [`Env::interrupted`], and once passed the statement stops with
    /// [`SqlError::SliceOver`] (the executor then runs it elsewhere, off its partitions).
    /// `None`: it runs to its end.
    pub deadline: Option<Instant>,
    /// The partition whose sequences give a partitioned table's new keys when the
    /// transaction holds several (an interactive transaction's, so that its probes and its
    /// commit draw the same keys); `None`: the first partition held.
    pub sequence_home: Option<u32>,
    /// Whether the transaction's changes are all undone whatever happens (an interactive
    /// transaction's probe): it may write a replicated table at fewer than all partitions,
    /// since each copy it writes gives what every copy would.
    pub undone: bool,
}

mod deferred;
mod gather;
mod keys;
mod subquery;

use crate::value_budget::ValueBudget;
use crate::workmem::MemoryPool;
pub use crate::workmem::value_size;
use deferred::deferred_part;
pub use deferred::{DEFER_INDEX_READS, Deferred, DeferredPart};
use gather::{Gather, limit_value};
use keys::{any_keys, build_key, build_range, first_if, key_value};

/// Tuples a statement visits between two looks at [`Env::interrupted`].
pub const INTERRUPT_EVERY: u32 = 1024;

/// For callers whose statements are never interrupted.
pub fn never_interrupted() -> bool {
    false
}

impl Env<'_, '_> {
    fn local_of(&self, partition: u32) -> Option<usize> {
        self.stores.iter().position(|s| s.partition() == partition)
    }

    fn held(&self) -> Vec<u32> {
        self.stores.iter().map(|s| s.partition()).collect()
    }

    fn holds_all(&self) -> bool {
        self.stores.len() as u32 == self.total_partitions
    }
}

impl Prepared {
    /// Runs the statement.
    pub fn execute(&self, env: &mut Env<'_, '_>, params: &[Value]) -> Result<Rows> {
        let params = coerce_params(params, self.param_types())?;
        execute(self.plan(), self.columns(), env, &params)
    }
}

/// A query run one partition at a time ([`Prepared::partial`]): what it has gathered from
/// the partitions run so far. Unlike [`Prepared::execute`] over all of them at once, its
/// parts see each partition at a different point of the serial order, so only a caller
/// that checks the result again at one point (an interactive transaction's COMMIT) may
/// use it.
pub struct PartialSelect {
    gather: Gather,
    /// Whether there are rows to read ([`start_select`]).
    reads: bool,
    params: Vec<Value>,
}

impl Prepared {
    /// The state to run this query partition by partition ([`PartialSelect`]), if it is a
    /// SELECT of one partitioned relation that it reads at every partition (each part then
    /// reads its own rows); `None` otherwise (joins, replicated tables, keyed reads,
    /// writes). `work_mem`: as [`Env::work_mem`]. What it evaluates before any partition
    /// runs (LIMIT, OFFSET, predicates that read no relation) sees `now()` as 0: only for
    /// queries that do not read the clock.
    pub fn partial(&self, params: &[Value], work_mem: usize) -> Result<Option<PartialSelect>> {
        let Plan::Select(p) = self.plan() else { return Ok(None) };
        // One partitioned relation read at every partition: each part reads its own
        // (and no subquery, which would read every partition at once).
        if p.rels.len() != 1 || p.rels[0].pick != PartitionPick::All || !p.init.is_empty() {
            return Ok(None);
        }
        let params = coerce_params(params, self.param_types())?.into_owned();
        let (gather, reads) = start_select(p, self.columns(), work_mem, &Cx::new(&params, 0))?;
        Ok(Some(PartialSelect { gather, reads, params }))
    }

    /// Runs the query over the partitions `env` holds, adding what it finds to `part`.
    /// Evicted tuples it reaches are recorded in `env.evicted` as usual (their rows are
    /// then missing from `part`: the caller starts again).
    pub fn execute_part(&self, part: &mut PartialSelect, env: &mut Env<'_, '_>) -> Result<()> {
        let Plan::Select(p) = self.plan() else {
            return Err(SqlError::Unsupported(
                "a partial run of a statement that is not a query".into(),
            ));
        };
        let gather = &mut part.gather;
        if !part.reads || gather.is_full() {
            return Ok(());
        }
        let cx = Cx::new(&part.params, env.now).with_budget(gather.budget(env.pool.map(|p| &**p)));
        let mut touched = Vec::new();
        let sampled = env.sampled;
        let pool = env.pool;
        let mut walker = Walker::over(&p.rels, env, &cx, sampled.then_some(&mut touched), Copies::One, false);
        let mut b = Bindings::new();
        let r = walker.walk(0, &mut b, &mut |b| gather.add(p, b, &cx, pool));
        apply_touches(env, &touched);
        r.map(|_| ())
    }

    /// The query's result once every partition has run its part.
    pub fn finish_part(&self, part: PartialSelect, now: i64) -> Result<Rows> {
        let Plan::Select(p) = self.plan() else {
            return Err(SqlError::Unsupported(
                "a partial run of a statement that is not a query".into(),
            ));
        };
        let cx = Cx::new(&part.params, now).with_budget(part.gather.budget(None));
        part.gather.finish(p, self.columns(), &cx)
    }
}

/// Executes a plan. `params` must already be coerced ([`coerce_params`]).
pub fn execute(plan: &Plan, columns: &Arc<[ColumnInfo]>, env: &mut Env<'_, '_>, params: &[Value]) -> Result<Rows> {
    let budget = ValueBudget::new(env.work_mem, env.pool.map(|p| &**p));
    let cx = Cx::new(params, env.now).with_budget(budget);
    match plan {
        Plan::Select(p) => {
            let mut touched = Vec::new();
            let r = select(p, columns, env, &cx, &mut touched);
            apply_touches(env, &touched);
            r
        }
        Plan::Compound(p) => {
            let mut touched = Vec::new();
            let work_mem = env.work_mem;
            let r = subquery::compound(p, env, &cx, work_mem, &mut |p, c, env, cx| {
                select_whole(p, c, env, cx, &mut touched)
            });
            apply_touches(env, &touched);
            r
        }
        Plan::Insert(p) => atomically(env, |env| {
            write_with_init(&p.init, env, &cx, |env, cx| insert(p, columns, env, cx))
        }),
        Plan::Update(p) => atomically(env, |env| {
            write_with_init(&p.init, env, &cx, |env, cx| update(p, columns, env, cx))
        }),
        Plan::Delete(p) => atomically(env, |env| {
            write_with_init(&p.init, env, &cx, |env, cx| delete(p, columns, env, cx))
        }),
    }
}

/// Runs `f`, a write, with the values of the subqueries `init` of its plan in its context.
fn write_with_init(
    init: &[Arc<InitPlan>],
    env: &mut Env<'_, '_>,
    cx: &Cx<'_>,
    f: impl FnOnce(&mut Env<'_, '_>, &Cx<'_>) -> Result<Rows>,
) -> Result<Rows> {
    if init.is_empty() {
        return f(env, cx);
    }
    let mut touched = Vec::new();
    let work_mem = env.work_mem;
    let subs = subquery::run_init(init, env, cx, work_mem, &mut |p, c, env, cx| {
        select_whole(p, c, env, cx, &mut touched)
    });
    apply_touches(env, &touched);
    f(env, &cx.with_subs(&subs?))
}

fn atomically(env: &mut Env<'_, '_>, f: impl FnOnce(&mut Env<'_, '_>) -> Result<Rows>) -> Result<Rows> {
    let sps: Vec<Savepoint> = env.stores.iter().map(|s| s.savepoint()).collect();
    let r = f(env);
    if r.is_err() {
        for (s, sp) in env.stores.iter_mut().zip(sps) {
            s.rollback_to(sp);
        }
    }
    r
}

fn apply_touches(env: &mut Env<'_, '_>, touched: &[(usize, TableId, u32)]) {
    for &(li, tid, slot) in touched {
        if let Some(t) = env.stores[li].table_mut(tid)
            && t.is_visible(slot)
        {
            t.touch(slot);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Walking relations

/// The tuples bound at the current point of the nested loops.
struct Bindings<'s> {
    rows: [Option<Row<'s>>; MAX_RELS],
    slots: [u32; MAX_RELS],
    locals: [usize; MAX_RELS],
}

impl<'s> Bindings<'s> {
    fn new() -> Self {
        Bindings {
            rows: [None; MAX_RELS],
            slots: [0; MAX_RELS],
            locals: [0; MAX_RELS],
        }
    }

    #[inline]
    fn bind(&mut self, rel: usize, table: &'s Table, slot: u32, local: usize) {
        self.rows[rel] = Some(table.row(slot));
        self.slots[rel] = slot;
        self.locals[rel] = local;
    }
}

impl ColumnSource for Bindings<'_> {
    #[inline]
    fn column(&self, rel: usize, col: usize) -> ValueRef<'_> {
        match &self.rows[rel] {
            Some(r) => r.get(col),
            None => ValueRef::Null,
        }
    }
}

/// Whether a level reads one copy of a replicated table or every copy (writes).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Copies {
    One,
    All,
}

struct Walker<'w, 's> {
    rels: &'w [RelPlan],
    stores: &'s [&'s mut PartitionStore],
    cx: &'w Cx<'w>,
    evicted: &'w mut Vec<EvictedRef>,
    touched: Option<&'w mut Vec<(usize, TableId, u32)>>,
    total: u32,
    copies: Copies,
    interrupted: &'w dyn Fn() -> bool,
    /// [`Env::deadline`].
    deadline: Option<Instant>,
    /// Tuples visited since the last look at `interrupted`.
    visits: u32,
    /// Whether scans pass over evicted tuples without recording them (a [`Deferred`] scan
    /// reads them afterwards).
    skip_evicted: bool,
    /// The held partitions (positions in `stores`, below 64) the outermost level visited.
    visited_locals: u64,
}

impl<'w> Walker<'w, 'w> {
    /// A walk of `rels` over the partitions `env` holds: recording the tuples it visits
    /// in `touched` (LRU sampling) when given, reading replicated relations from `copies`,
    /// passing over evicted tuples without recording them when `skip_evicted`.
    fn over(
        rels: &'w [RelPlan],
        env: &'w mut Env<'_, '_>,
        cx: &'w Cx<'w>,
        touched: Option<&'w mut Vec<(usize, TableId, u32)>>,
        copies: Copies,
        skip_evicted: bool,
    ) -> Walker<'w, 'w> {
        Walker {
            rels,
            stores: &*env.stores,
            cx,
            evicted: &mut *env.evicted,
            touched,
            total: env.total_partitions,
            copies,
            interrupted: env.interrupted,
            deadline: env.deadline,
            visits: 0,
            skip_evicted,
            visited_locals: 0,
        }
    }
}

struct LevelState {
    err: Option<SqlError>,
    flow: ControlFlow<()>,
}

type Emit<'f, 's> = dyn FnMut(&Bindings<'s>) -> Result<ControlFlow<()>> + 'f;

impl<'w, 's> Walker<'w, 's> {
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

    fn walk(&mut self, level: usize, b: &mut Bindings<'s>, emit: &mut Emit<'_, 's>) -> Result<ControlFlow<()>> {
        if level == self.rels.len() {
            return emit(b);
        }
        let rp = &self.rels[level];
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
                    let slot = match r.as_slot() {
                        Some(s) => s,
                        None => {
                            this.evicted.push(EvictedRef {
                                partition: store.partition(),
                                table: rp.schema.id,
                                tombstone: r.as_tombstone().expect("not a slot"),
                            });
                            return ControlFlow::Continue(());
                        }
                    };
                    if !table.is_visible(slot) {
                        return ControlFlow::Continue(());
                    }
                    b.bind(rp.rel, table, slot, li);
                    let res = (|| -> Result<ControlFlow<()>> {
                        for f in &rp.filters[first_filter.get()..] {
                            if !f.test(b, this.cx)? {
                                return Ok(ControlFlow::Continue(()));
                            }
                        }
                        if let Some(t) = this.touched.as_deref_mut() {
                            t.push((li, rp.schema.id, slot));
                        }
                        this.walk(level + 1, b, emit)
                    })();
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
                Access::Scan => {
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
                } => {
                    if let Some((lo, hi, exact)) = build_range(table, *index, prefix, lower, upper, b, self.cx)? {
                        if exact {
                            first_filter.set(rp.bounds);
                        }
                        let _ = table.index_store(*index).range_ahead(
                            &lo,
                            &hi,
                            false,
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
        Ok(ControlFlow::Continue(()))
    }
}

/// The evicted tuples of the table `rp` scans at the held partitions `locals` visited:
/// per partition, the blocks they are in and which entries of each block.
fn deferred_parts(rp: &RelPlan, env: &Env<'_, '_>, locals: u64) -> Result<Vec<DeferredPart>> {
    let mut parts = Vec::new();
    for (li, store) in env.stores.iter().enumerate() {
        if li >= 64 || locals & (1 << li) == 0 {
            continue;
        }
        let table = checked_table(store, &rp.schema)?;
        if let Some(part) = deferred_part(store, table, table.tombstones().iter().map(|(_, t)| t)) {
            parts.push(part);
        }
    }
    Ok(parts)
}

/// The evicted tuples a single-table read reached through an index (`env.evicted`), as
/// [`deferred_parts`] gives them; empties `env.evicted`.
fn deferred_parts_of_refs(rp: &RelPlan, env: &mut Env<'_, '_>) -> Result<Vec<DeferredPart>> {
    let mut refs = std::mem::take(env.evicted);
    refs.sort_unstable();
    refs.dedup();
    let mut parts = Vec::new();
    for group in refs.chunk_by(|a, b| a.partition == b.partition) {
        let Some(li) = env.local_of(group[0].partition) else {
            continue;
        };
        let store = &*env.stores[li];
        let table = checked_table(store, &rp.schema)?;
        let tombs = group.iter().filter_map(|r| table.tombstones().get(r.tombstone));
        if let Some(part) = deferred_part(store, table, tombs) {
            parts.push(part);
        }
    }
    Ok(parts)
}

/// The table a plan was made for, or `SchemaChanged` if the table was dropped or altered
/// since (the caller re-plans and retries).
fn checked_table<'s>(store: &'s PartitionStore, schema: &Arc<TableSchema>) -> Result<&'s Table> {
    match store.table(schema.id) {
        Some(t) if Arc::ptr_eq(t.schema(), schema) => Ok(t),
        _ => Err(SqlError::SchemaChanged(schema.name.clone())),
    }
}

// ---------------------------------------------------------------------------------------
// SELECT

/// What a SELECT gathers into, with its LIMIT and OFFSET, and whether it has rows to read
/// (false when a predicate that reads no relation is false).
fn start_select(p: &SelectPlan, columns: &Arc<[ColumnInfo]>, work_mem: usize, cx: &Cx<'_>) -> Result<(Gather, bool)> {
    let limit = limit_value(&p.limit, cx, "LIMIT")?;
    let offset = limit_value(&p.offset, cx, "OFFSET")?.unwrap_or(0);
    let gather = Gather::new(p, columns, work_mem, limit, offset);
    for f in &p.pre_filters {
        if !f.test(&NoColumns, cx)? {
            return Ok((gather, false));
        }
    }
    Ok((gather, true))
}

fn select(
    p: &SelectPlan,
    columns: &Arc<[ColumnInfo]>,
    env: &mut Env<'_, '_>,
    cx: &Cx<'_>,
    touched: &mut Vec<(usize, TableId, u32)>,
) -> Result<Rows> {
    if p.init.is_empty() {
        return select_rows(p, columns, env, cx, touched);
    }
    let work_mem = env.work_mem;
    let subs = subquery::run_init(&p.init, env, cx, work_mem, &mut |p, c, env, cx| {
        select_whole(p, c, env, cx, touched)
    })?;
    select_rows(p, columns, env, &cx.with_subs(&subs), touched)
}

/// A SELECT run whole, none of its scans' evicted tuples left for later (a subquery, a side
/// of a set operation: what holds its rows does not read them afterwards).
fn select_whole(
    p: &SelectPlan,
    columns: &Arc<[ColumnInfo]>,
    env: &mut Env<'_, '_>,
    cx: &Cx<'_>,
    touched: &mut Vec<(usize, TableId, u32)>,
) -> Result<Rows> {
    let defer = std::mem::replace(&mut env.defer_scans, false);
    let r = select(p, columns, env, cx, touched);
    env.defer_scans = defer;
    r
}

/// [`select`] once its subqueries have run.
fn select_rows(
    p: &SelectPlan,
    columns: &Arc<[ColumnInfo]>,
    env: &mut Env<'_, '_>,
    cx: &Cx<'_>,
    touched: &mut Vec<(usize, TableId, u32)>,
) -> Result<Rows> {
    let (mut gather, reads) = start_select(p, columns, env.work_mem, cx)?;
    if !reads || gather.is_full() {
        // (An aggregate over no rows still yields one row.)
        return gather.finish(p, columns, cx);
    }
    if let Some(q) = &p.from_query {
        // A subquery in FROM: its rows, checked against the relation's filters.
        let work_mem = env.work_mem;
        let rows = subquery::run_query(q, env, cx, work_mem, &mut |p, c, env, cx| {
            select_whole(p, c, env, cx, touched)
        })?;
        let pool = env.pool;
        'rows: for row in rows.iter() {
            let src = subquery::RowSource(row);
            for f in &p.rels[0].filters {
                if !f.test(&src, cx)? {
                    continue 'rows;
                }
            }
            if gather.add(p, &src, cx, pool)?.is_break() {
                break;
            }
        }
        return gather.finish(p, columns, cx);
    }
    // A single-table scan may leave its evicted tuples for later ([`Deferred`]), unless
    // it reads subqueries (the later part does not hold their values).
    let later = env.defer_scans && p.init.is_empty();
    let defer = later && p.rels.len() == 1 && matches!(p.rels[0].access, Access::Scan);
    let sampled = env.sampled;
    let pool = env.pool;
    let mut walker = Walker::over(&p.rels, env, cx, sampled.then_some(touched), Copies::One, defer);
    let mut b = Bindings::new();
    let _ = walker.walk(0, &mut b, &mut |b| gather.add(p, b, cx, pool))?;
    let visited = walker.visited_locals;
    // A single-table read through an index that reached many evicted tuples leaves them
    // for later too, rather than bringing them all back.
    let many = later && p.rels.len() == 1 && env.evicted.len() > DEFER_INDEX_READS;
    if (defer || many) && !gather.is_full() {
        let parts = if defer {
            deferred_parts(&p.rels[0], env, visited)?
        } else {
            deferred_parts_of_refs(&p.rels[0], env)?
        };
        if !parts.is_empty() {
            let (first, gather) = gather.split(p, columns);
            env.deferred = Some(Box::new(Deferred {
                gather,
                parts,
                params: cx.params.to_vec(),
                now: cx.now,
                pool: env.pool.cloned(),
            }));
            return Ok(first);
        }
    }
    gather.finish(p, columns, cx)
}

// ---------------------------------------------------------------------------------------
// Writes

fn single_level_targets(rp: &RelPlan, env: &mut Env<'_, '_>, cx: &Cx<'_>, copies: Copies) -> Result<Vec<(usize, u32)>> {
    let mut out = Vec::new();
    let rels = std::slice::from_ref(rp);
    let mut walker = Walker::over(rels, env, cx, None, copies, false);
    let mut b = Bindings::new();
    let _ = walker.walk(0, &mut b, &mut |b| {
        out.push((b.locals[rp.rel], b.slots[rp.rel]));
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(out)
}

fn returning_row(exprs: &[Expr], rows: &mut Rows, table: &Table, slot: u32, cx: &Cx<'_>) -> Result<()> {
    if exprs.is_empty() {
        return Ok(());
    }
    let mut b = Bindings::new();
    b.bind(0, table, slot, 0);
    rows.begin_row();
    for e in exprs {
        rows.push(e.eval(&b, cx)?.as_ref());
    }
    Ok(())
}

fn require_all(env: &Env<'_, '_>, schema: &TableSchema) -> Result<()> {
    if env.holds_all() || env.undone {
        Ok(())
    } else {
        Err(SqlError::Unsupported(format!(
            "writing replicated table \"{}\" needs a multi-partition transaction over all partitions",
            schema.name
        )))
    }
}

fn insert(p: &InsertPlan, columns: &Arc<[ColumnInfo]>, env: &mut Env<'_, '_>, cx: &Cx<'_>) -> Result<Rows> {
    let source_rows: Vec<Vec<Value>> = match &p.source {
        InsertSource::Values(rows) => rows
            .iter()
            .map(|r| r.iter().map(|e| e.eval_const(cx)).collect::<Result<Vec<_>>>())
            .collect::<Result<_>>()?,
        InsertSource::Select(sel) => {
            let cols: Arc<[ColumnInfo]> = Arc::from(vec![]);
            let mut touched = Vec::new();
            let rows = select(sel, &cols, env, cx, &mut touched)?;
            rows.to_values()
        }
    };
    let schema = &p.schema;
    let mut out = Rows::empty(columns.clone());
    let mut n = 0u64;
    for (i, src) in source_rows.into_iter().enumerate() {
        look(env, i)?;
        let mut row = Vec::with_capacity(schema.columns.len());
        for (c, col) in schema.columns.iter().enumerate() {
            let v = match p.targets[c] {
                Some(pos) => src[pos].clone(),
                None => match &col.default {
                    Some(ColumnDefault::Value(v)) => v.clone(),
                    Some(ColumnDefault::CurrentTimestamp) => Value::Timestamp(cx.now),
                    Some(ColumnDefault::Sequence) => Value::Int(next_sequence(env, schema)?),
                    None => Value::Null,
                },
            };
            row.push(v.coerce_to(&col.ty).map_err(|e| column_context(e, &col.name))?);
        }
        let targets: Vec<usize> = match schema.partition_column {
            Some(pc) => {
                let part = partition_of(row[pc].as_ref(), &schema.columns[pc].ty, env.total_partitions);
                match env.local_of(part) {
                    Some(li) => vec![li],
                    None => {
                        return Err(SqlError::WrongPartition {
                            row: part,
                            held: env.held(),
                        });
                    }
                }
            }
            None => {
                require_all(env, schema)?;
                (0..env.stores.len()).collect()
            }
        };
        let mut skipped = false;
        for (i, li) in targets.into_iter().enumerate() {
            checked_table(env.stores[li], schema)?;
            let slot = match env.stores[li].insert(schema.id, &row) {
                Ok(slot) => slot,
                // ON CONFLICT DO NOTHING: the row is left out. (A replicated table's copies
                // hold the same keys: the first copy's conflict is every copy's.)
                Err(StorageError::UniqueViolation { index, .. })
                    if i == 0 && p.skip_conflicts.as_ref().is_some_and(|s| s.skips(&index)) =>
                {
                    skipped = true;
                    break;
                }
                Err(e) => return Err(e.into()),
            };
            if i == 0 {
                let table = env.stores[li].table(schema.id).expect("just inserted");
                returning_row(&p.returning, &mut out, table, slot, cx)?;
            }
        }
        n += u64::from(!skipped);
    }
    out.affected = n;
    Ok(out)
}

/// The next value of a table's sequence. A partitioned table's values come from the
/// transaction's sequence home if it holds it, else from the first partition it holds,
/// among the values that hash to that partition (so each value belongs to one partition,
/// and partitions never hand out the same one); a replicated table's copies advance
/// together.
fn next_sequence(env: &mut Env<'_, '_>, schema: &TableSchema) -> Result<i64> {
    if schema.partition_column.is_some() {
        let at = env
            .sequence_home
            .and_then(|h| env.stores.iter().position(|s| s.partition() == h))
            .unwrap_or(0);
        let home = env.stores[at].partition();
        let total = env.total_partitions;
        let owns = move |v: i64| partition_of(ValueRef::Int(v), &DataType::BigInt, total) == home;
        return Ok(env.stores[at].next_sequence(schema.id, owns)?);
    }
    require_all(env, schema)?;
    let mut value = None;
    for store in env.stores.iter_mut() {
        let v = store.next_sequence(schema.id, |_| true)?;
        if value.is_some_and(|x| x != v) {
            return Err(SqlError::Unsupported(format!(
                "the copies of replicated table \"{}\" disagree on its sequence",
                schema.name
            )));
        }
        value = Some(v);
    }
    value.ok_or_else(|| SqlError::Unsupported("a transaction that holds no partition".into()))
}

/// Whether a statement is to stop now: cancelled (57014), or past its slice.
fn stop_now(interrupted: &dyn Fn() -> bool, deadline: Option<Instant>) -> Result<()> {
    if interrupted() {
        return Err(SqlError::Cancelled);
    }
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(SqlError::SliceOver);
    }
    Ok(())
}

/// In a write's loop over its rows, every [`INTERRUPT_EVERY`] rows: whether to stop, as
/// the walker looks every as many tuples it visits ([`stop_now`]).
fn look(env: &Env<'_, '_>, i: usize) -> Result<()> {
    if i % INTERRUPT_EVERY as usize != INTERRUPT_EVERY as usize - 1 {
        return Ok(());
    }
    stop_now(env.interrupted, env.deadline)
}

fn column_context(e: ValueError, column: &str) -> SqlError {
    match e {
        ValueError::TypeMismatch(m) => SqlError::Type(format!("column \"{column}\": {m}")),
        other => other.into(),
    }
}

fn update(p: &UpdatePlan, columns: &Arc<[ColumnInfo]>, env: &mut Env<'_, '_>, cx: &Cx<'_>) -> Result<Rows> {
    let schema = p.target.schema.clone();
    let replicated = schema.partition_column.is_none();
    if replicated {
        require_all(env, &schema)?;
    }
    let copies = if replicated { Copies::All } else { Copies::One };
    let targets = single_level_targets(&p.target, env, cx, copies)?;
    let mut out = Rows::empty(columns.clone());
    let mut n = 0u64;
    for (i, (li, slot)) in targets.into_iter().enumerate() {
        look(env, i)?;
        let changes = {
            let table = env.stores[li].table(schema.id).expect("target table");
            let mut b = Bindings::new();
            b.bind(0, table, slot, li);
            let mut changes = Vec::with_capacity(p.assignments.len());
            for (c, e) in &p.assignments {
                let col = &schema.columns[*c];
                let v = e
                    .eval(&b, cx)?
                    .into_value()
                    .coerce_to(&col.ty)
                    .map_err(|err| column_context(err, &col.name))?;
                if Some(*c) == schema.partition_column {
                    let old = table.value(slot, *c);
                    if compare(old, v.as_ref())? != Some(Ordering::Equal) {
                        let to = partition_of(v.as_ref(), &col.ty, env.total_partitions);
                        if to != env.stores[li].partition() {
                            return Err(SqlError::Unsupported(format!(
                                "changing partition column \"{}\" moves the row to another partition; delete and insert it instead",
                                col.name
                            )));
                        }
                    }
                }
                changes.push((*c, v));
            }
            changes
        };
        env.stores[li].update(schema.id, slot, &changes)?;
        let first_copy = !replicated || li == 0;
        if first_copy {
            let table = env.stores[li].table(schema.id).expect("target table");
            returning_row(&p.returning, &mut out, table, slot, cx)?;
            n += 1;
        }
    }
    out.affected = n;
    Ok(out)
}

fn delete(p: &DeletePlan, columns: &Arc<[ColumnInfo]>, env: &mut Env<'_, '_>, cx: &Cx<'_>) -> Result<Rows> {
    let schema = p.target.schema.clone();
    let replicated = schema.partition_column.is_none();
    if replicated {
        require_all(env, &schema)?;
    }
    let copies = if replicated { Copies::All } else { Copies::One };
    let targets = single_level_targets(&p.target, env, cx, copies)?;
    let mut out = Rows::empty(columns.clone());
    let mut n = 0u64;
    for (i, (li, slot)) in targets.into_iter().enumerate() {
        look(env, i)?;
        let first_copy = !replicated || li == 0;
        if first_copy {
            let table = env.stores[li].table(schema.id).expect("target table");
            returning_row(&p.returning, &mut out, table, slot, cx)?;
            n += 1;
        }
        env.stores[li].delete(schema.id, slot)?;
    }
    out.affected = n;
    Ok(out)
}
