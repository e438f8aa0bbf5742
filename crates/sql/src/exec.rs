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

use std::ops::ControlFlow;
use std::sync::Arc;

use permafrost_storage::partitioning::partition_of;
use permafrost_storage::{ColumnDefault, Savepoint, StorageError, Table, TableId, TableSchema};
use permafrost_types::{DataType, Value, ValueRef};

use crate::error::{Result, SqlError};
use crate::expr::{Cx, Expr};
use crate::plan::{
    Access, CompoundPlan, DeletePlan, InitPlan, InsertPlan, InsertSource, PartitionPick, Plan, RelPlan, SelectPlan,
    SetTree, UpdatePlan,
};
use crate::prepared::Prepared;
pub use crate::prepared::coerce_params;
use crate::rows::{ColumnInfo, Rows};

mod aggregate;
pub mod check;
mod correlated;
mod deferred;
mod env;
mod evicted_rows;
pub mod foreign;
mod gather;
mod hashjoin;
mod keys;
mod reached;
pub mod sequences;
mod setop;
mod sorter;
mod spill;
mod subquery;
mod upsert;
mod walk;
mod window;
mod window_disk;

use crate::value_budget::ValueBudget;
pub use crate::workmem::value_size;
use correlated::{PlanRunner, Reader};
use deferred::each_batch;
pub use deferred::{DEFER_INDEX_READS, Deferred, DeferredPart};
pub use env::{Analyze, Env, never_interrupted};
pub use evicted_rows::EvictedRows;
use gather::{Gather, start_select};
pub use reached::{EvictedRef, EvictedRefs};
use upsert::column_context;
pub use walk::INTERRUPT_EVERY;
use walk::{Bindings, Copies, Reach, Walker, checked_table, stop_now};

impl Prepared {
    /// Runs the statement.
    pub fn execute(&self, env: &mut Env<'_, '_>, params: &[Value]) -> Result<Rows> {
        let params = coerce_params(params, self.param_types())?;
        if let Some(a) = self.analyzed() {
            return self.run_analyzed(a, env, &params);
        }
        if let Some(inner) = self.explained() {
            let mut rows = Rows::empty(self.columns().clone());
            for line in crate::explain::explain(inner, &params, env.total_partitions) {
                rows.push_row(std::iter::once(permafrost_types::ValueRef::Text(&line)));
            }
            return Ok(rows);
        }
        execute(self.plan(), self.columns(), env, &params)
    }
}

impl Prepared {
    /// Runs EXPLAIN ANALYZE: the query (this statement's plan is its own), whole — none
    /// of its evicted tuples left for later, since what it gives is its plan — counting
    /// its rows.
    fn run_analyzed(
        &self,
        a: &crate::prepared::ExplainAnalyze,
        env: &mut Env<'_, '_>,
        params: &[Value],
    ) -> Result<Rows> {
        let started = std::time::Instant::now();
        let plan = match self.plan() {
            Plan::Select(s) => s as *const SelectPlan as usize,
            _ => 0,
        };
        env.analyze = Some(Analyze {
            plan,
            levels: Vec::new(),
            hashes: Vec::new(),
        });
        let defer = std::mem::replace(&mut env.defer_scans, false);
        let r = execute(self.plan(), &a.columns, env, params);
        env.defer_scans = defer;
        let (levels, hashes) = env.analyze.take().map(|a| (a.levels, a.hashes)).unwrap_or_default();
        let lines = crate::explain::explain_analyzed(self, params, env.total_partitions, levels, hashes);
        Ok(crate::explain::Analyzed::new(lines, r?, started, a.summary, self.columns().clone()).into_rows())
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
        if self.analyzed().is_some() {
            return Ok(None);
        }
        // One partitioned relation read at every partition: each part reads its own
        // (and no subquery, which would read every partition at once).
        if p.rels.len() != 1 || p.rels[0].pick != PartitionPick::All || !p.init.is_empty() {
            return Ok(None);
        }
        let params = coerce_params(params, self.param_types())?.into_owned();
        let (gather, reads) = start_select(p, self.columns(), work_mem, &Cx::new(&params, 0), None)?;
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
        let cx = Cx::new(&part.params, env.now)
            .with_random(env.random.clone())
            .with_budget(gather.budget(env.pool.map(|p| &**p)));
        let mut touched = Vec::new();
        let sampled = env.sampled;
        let pool = env.pool;
        let (reach, evicted) = env.reach();
        let mut walker = Walker::over(
            &p.rels,
            reach,
            evicted,
            &cx,
            sampled.then_some(&mut touched),
            Copies::One,
            false,
        );
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
        // (What is left to compute draws from a state of its own: a query run in parts is
        // read-only, and runs again alike at an interactive COMMIT.)
        let random = Arc::new(std::sync::atomic::AtomicU64::new(now as u64));
        let cx = Cx::new(&part.params, now)
            .with_random(random)
            .with_budget(part.gather.budget(None));
        part.gather.finish(p, self.columns(), &cx)
    }
}

/// Executes a plan. `params` must already be coerced ([`coerce_params`]).
pub fn execute(plan: &Plan, columns: &Arc<[ColumnInfo]>, env: &mut Env<'_, '_>, params: &[Value]) -> Result<Rows> {
    let budget = ValueBudget::new(env.work_mem, env.pool.map(|p| &**p));
    let cx = Cx::new(params, env.now)
        .with_random(env.random.clone())
        .with_draws(env.draws)
        .with_budget(budget);
    match plan {
        Plan::Select(p) => {
            let mut touched = Vec::new();
            let spill = env.spill.clone();
            let r = select(p, columns, env, &cx, &mut touched, spill);
            apply_touches(env, &touched);
            r
        }
        Plan::Compound(p) => {
            let mut touched = Vec::new();
            let spill = env.spill.clone();
            let r = compound(p, env, &cx, &mut touched, spill);
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

/// Runs set operation `p` in memory and, past the working memory where its result may
/// spill (`spill`), again on disk (exec/setop.rs), its rest then streaming the answer.
fn compound(
    p: &CompoundPlan,
    env: &mut Env<'_, '_>,
    cx: &Cx<'_>,
    touched: &mut Vec<(usize, TableId, u32)>,
    spill: Option<Arc<std::path::Path>>,
) -> Result<Rows> {
    let mut mine = Vec::new();
    let work_mem = env.work_mem;
    let mut r = subquery::compound(p, env, cx, work_mem, &mut |p, c, env, cx| {
        select_all(p, c, env, cx, &mut mine, None)
    });
    if let (Err(SqlError::OutOfWorkMem(_)), Some(dir)) = (&r, spill) {
        mine.clear();
        let mut also = Vec::new();
        let defer = std::mem::replace(&mut env.defer_scans, false);
        r = setop::spilled(
            p,
            env,
            cx,
            work_mem,
            &dir,
            &mut |p, c, env, cx| select(p, c, env, cx, &mut mine, Some(dir.clone())),
            &mut |p, c, env, cx| select_all(p, c, env, cx, &mut also, None),
        );
        env.defer_scans = defer;
        mine.extend(also);
    }
    touched.extend(mine);
    r
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
        select_all(p, c, env, cx, &mut touched, None)
    });
    apply_touches(env, &touched);
    f(env, &cx.with_subs(&subs?))
}

fn atomically(env: &mut Env<'_, '_>, f: impl FnOnce(&mut Env<'_, '_>) -> Result<Rows>) -> Result<Rows> {
    let sps: Vec<Savepoint> = env.stores.iter().map(|s| s.savepoint()).collect();
    let deferred = env.deferred_fk.len();
    let r = f(env);
    if r.is_err() {
        for (s, sp) in env.stores.iter_mut().zip(sps) {
            s.rollback_to(sp);
        }
        env.deferred_fk.truncate(deferred);
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
// SELECT

fn select(
    p: &SelectPlan,
    columns: &Arc<[ColumnInfo]>,
    env: &mut Env<'_, '_>,
    cx: &Cx<'_>,
    touched: &mut Vec<(usize, TableId, u32)>,
    spill: Option<Arc<std::path::Path>>,
) -> Result<Rows> {
    let lateral = p.rels.iter().any(|r| r.lateral.is_some());
    if p.init.is_empty() && !lateral {
        return select_rows(p, columns, env, cx, touched, spill);
    }
    let work_mem = env.work_mem;
    let subs = subquery::run_init(&p.init, env, cx, work_mem, &mut |p, c, env, cx| {
        select_all(p, c, env, cx, touched, None)
    })?;
    let cx = cx.with_subs(&subs);
    // (A LATERAL item of FROM is computed per entry of its level, as a correlated
    // subquery is per row.)
    if correlated(&p.init) || lateral {
        return with_reader(env, touched, |r| {
            let runner = PlanRunner::new(r, &p.init);
            r.rows(p, columns, &cx.with_runner(&runner))
        });
    }
    select_rows(p, columns, env, &cx, touched, spill)
}

/// Whether some of a plan's subqueries are correlated (run per row, through a [`Reader`]).
fn correlated(init: &[Arc<InitPlan>]) -> bool {
    init.iter().any(|i| i.correlated)
}

/// Runs `f` with a [`Reader`] of the partitions `env` holds, then records in `env` the
/// evicted tuples its walks met and in `touched` the tuples they visited.
fn with_reader<T>(
    env: &mut Env<'_, '_>,
    touched: &mut Vec<(usize, TableId, u32)>,
    f: impl FnOnce(&Reader<'_>) -> Result<T>,
) -> Result<T> {
    let reader = Reader {
        reach: Reach {
            stores: &*env.stores,
            total: env.total_partitions,
            interrupted: env.interrupted,
            deadline: env.deadline,
            work_mem: env.work_mem,
            evicted_rows: env.evicted_rows,
        },
        sampled: env.sampled,
        work_mem: env.work_mem,
        pool: env.pool,
        evicted: Default::default(),
        touched: Default::default(),
        hashes: Default::default(),
        laterals: Default::default(),
    };
    let r = f(&reader);
    let (evicted, seen) = (reader.evicted.into_inner(), reader.touched.into_inner());
    env.evicted.extend(evicted);
    touched.extend(seen);
    r
}

/// A SELECT run whole, none of its scans' evicted tuples left for later (a subquery, a side
/// of a set operation: what holds its rows does not read them afterwards); with `spill`,
/// its rows past `work_mem` may come in its result's rest.
fn select_all(
    p: &SelectPlan,
    columns: &Arc<[ColumnInfo]>,
    env: &mut Env<'_, '_>,
    cx: &Cx<'_>,
    touched: &mut Vec<(usize, TableId, u32)>,
    spill: Option<Arc<std::path::Path>>,
) -> Result<Rows> {
    let defer = std::mem::replace(&mut env.defer_scans, false);
    let r = select(p, columns, env, cx, touched, spill);
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
    spill: Option<Arc<std::path::Path>>,
) -> Result<Rows> {
    let (mut gather, reads) = start_select(p, columns, env.work_mem, cx, spill.clone())?;
    if !reads || gather.is_full() {
        // (An aggregate over no rows still yields one row.)
        return gather.finish(p, columns, cx);
    }
    // A query of one subquery in FROM (a SELECT or a set operation), which may spill: its
    // rows are read as they come, a batch at a time, rather than held whole.
    if let (Some(dir), [d], 1) = (&spill, &p.derived[..], p.rels.len())
        && matches!(d.query, SetTree::Select { .. } | SetTree::Compound(_))
    {
        let rows = match &d.query {
            // Its scan of one table may leave the evicted tuples for later as the
            // statement's own would: what they give is walked into this query then.
            SetTree::Select { plan, columns: c } if env.defer_scans && p.init.is_empty() && scan_alone(plan) => {
                select(plan, c, env, cx, touched, Some(dir.clone()))?
            }
            SetTree::Select { plan, columns: c } => select_all(plan, c, env, cx, touched, Some(dir.clone()))?,
            SetTree::Compound(c) => compound(c, env, cx, touched, Some(dir.clone()))?,
            _ => unreachable!("matched above"),
        };
        each_batch(d.rel, rows, |batch| {
            Ok(walk_rows(p, env, cx, touched, batch, false, &mut gather)?.1)
        })?;
        if let Some(mut later) = env.deferred.take()
            && !gather.is_full()
        {
            let (first, gather) = gather.split(p, columns);
            later.outer = Some(gather);
            env.deferred = Some(later);
            return Ok(first);
        }
        return gather.finish(p, columns, cx);
    }
    // The subqueries in FROM, run whole before the walk reads their rows.
    let work_mem = env.work_mem;
    let derived = p
        .derived
        .iter()
        .map(|d| {
            let rows = subquery::run_query(&d.query, env, cx, work_mem, &mut |p, c, env, cx| {
                select_all(p, c, env, cx, touched, None)
            })?;
            Ok((d.rel, rows))
        })
        .collect::<Result<Vec<_>>>()?;
    // A single-table scan may leave its evicted tuples for later ([`Deferred`]), unless
    // it reads subqueries (the later part does not hold their values) or its rows must
    // come in its index's order (an ORDER BY no sort gives: the rows left for later would
    // come after those in memory, and a LIMIT met in memory would pass over them).
    let later = env.defer_scans && p.init.is_empty() && p.derived.is_empty() && !p.index_ordered;
    let defer = later && p.rels.len() == 1 && matches!(p.rels[0].access, Access::Scan);
    let (visited, _) = walk_rows(p, env, cx, touched, &derived, defer, &mut gather)?;
    // A single-table read through an index that reached many evicted tuples leaves them
    // for later too, rather than bringing them all back.
    let many = later && p.rels.len() == 1 && env.evicted.len() > DEFER_INDEX_READS;
    if many && gather.is_full() {
        // A LIMIT without ORDER BY met by rows in memory: any rows the predicates accept
        // answer it, so the evicted ones passed on the way are not needed. (Only for a
        // read that is its own transaction: what a write reads must not depend on what is
        // evicted, or its replay would pick other rows.)
        env.evicted.clear();
    }
    if (defer || many) && !gather.is_full() {
        let parts = if defer {
            deferred::deferred_parts(&p.rels[0].schema, env.stores, visited)?
        } else {
            deferred::deferred_parts_of_refs(&p.rels[0].schema, env.stores, env.evicted)?
        };
        if !parts.is_empty() {
            let (first, gather) = gather.split(p, columns);
            env.deferred = Some(Box::new(Deferred {
                gather,
                outer: None,
                work_mem: env.work_mem,
                parts,
                params: cx.params.to_vec(),
                now: cx.now,
                zone: permafrost_types::zone::with_session(|z| z.cloned()),
                random: env.random.clone(),
                pool: env.pool.cloned(),
            }));
            return Ok(first);
        }
    }
    gather.finish(p, columns, cx)
}

/// Whether `p` is a query of one table and nothing else, whose scan may leave its evicted
/// tuples for later ([`Deferred`]).
fn scan_alone(p: &SelectPlan) -> bool {
    p.rels.len() == 1 && p.init.is_empty() && p.derived.is_empty() && p.rels[0].lateral.is_none()
}

/// Walks the relations of `p` (reading `derived` for its subqueries in FROM) into
/// `gather`; `defer`: a single-table scan leaves the evicted tuples it meets for later.
/// Gives the local partitions the walk visited (a bit each), and whether the gather took
/// no more rows.
fn walk_rows(
    p: &SelectPlan,
    env: &mut Env<'_, '_>,
    cx: &Cx<'_>,
    touched: &mut Vec<(usize, TableId, u32)>,
    derived: &[(usize, Rows)],
    defer: bool,
    gather: &mut Gather,
) -> Result<(u64, ControlFlow<()>)> {
    let sampled = env.sampled;
    let pool = env.pool;
    let counting = env
        .analyze
        .as_ref()
        .is_some_and(|a| a.plan == p as *const SelectPlan as usize);
    let (reach, evicted) = env.reach();
    let mut walker = Walker::over(
        &p.rels,
        reach,
        evicted,
        cx,
        sampled.then_some(touched),
        Copies::One,
        defer,
    )
    .reading(derived)
    .counting(counting);
    let mut b = Bindings::new();
    let flow = walker.walk_all(&mut b, &mut |b| gather.add(p, b, cx, pool))?;
    let visited = (walker.visited_locals, flow);
    let counts = walker.counts.take();
    let hashes = walker.hash_notes.take();
    if let (Some(a), Some(counts)) = (env.analyze.as_mut(), counts) {
        // (Summed over the batches of a subquery read as it comes.)
        a.levels.resize(counts.len().max(a.levels.len()), (0, 0));
        for (l, c) in a.levels.iter_mut().zip(counts) {
            l.0 += c.0;
            l.1 += c.1;
        }
        a.hashes = hashes.unwrap_or_default();
    }
    Ok(visited)
}

// ---------------------------------------------------------------------------------------
// Writes

fn single_level_targets(rp: &RelPlan, env: &mut Env<'_, '_>, cx: &Cx<'_>, copies: Copies) -> Result<Vec<(usize, u32)>> {
    let mut out = Vec::new();
    let rels = std::slice::from_ref(rp);
    let (reach, evicted) = env.reach();
    let mut walker = Walker::over(rels, reach, evicted, cx, None, copies, false);
    let mut b = Bindings::new();
    let _ = walker.walk(0, &mut b, &mut |b| {
        out.push(b.tuple(rp.rel));
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

/// A write of columns `written` selects, into a table with a unique index without its
/// partition column on one of them, needs every partition, where such a key is checked.
fn require_all_for_unique(env: &Env<'_, '_>, schema: &TableSchema, written: impl Fn(usize) -> bool) -> Result<()> {
    if env.holds_all() || env.undone {
        return Ok(());
    }
    match schema.global_unique_over(written) {
        Some(i) => Err(SqlError::Unsupported(format!(
            "writing table \"{}\" needs a multi-partition transaction over all partitions: its unique index \"{}\" does not hold the partition column",
            schema.name, schema.indexes[i].name
        ))),
        None => Ok(()),
    }
}

fn insert(p: &InsertPlan, columns: &Arc<[ColumnInfo]>, env: &mut Env<'_, '_>, cx: &Cx<'_>) -> Result<Rows> {
    require_all_for_unique(env, &p.schema, |_| true)?;
    foreign::require_all(env.holds_all(), p.fk.as_ref(), &p.schema)?;
    let source_rows: Vec<Vec<Value>> = match &p.source {
        InsertSource::Values(rows) => rows
            .iter()
            .map(|r| r.iter().map(|e| e.eval_const(cx)).collect::<Result<Vec<_>>>())
            .collect::<Result<_>>()?,
        InsertSource::Select(sel) => {
            let cols: Arc<[ColumnInfo]> = Arc::from(vec![]);
            let mut touched = Vec::new();
            let rows = select(sel, &cols, env, cx, &mut touched, None)?;
            rows.to_values()
        }
    };
    let schema = &p.schema;
    let mut out = Rows::empty(columns.clone());
    let mut n = 0u64;
    let mut checks = foreign::Checks::default();
    // The slots this statement wrote, per held partition (ON CONFLICT DO UPDATE's).
    let mut mine = vec![
        std::collections::HashSet::new();
        if p.update_conflicts.is_some() {
            env.stores.len()
        } else {
            0
        }
    ];
    for (i, src) in source_rows.into_iter().enumerate() {
        look(env, i)?;
        let mut row = Vec::with_capacity(schema.columns.len());
        for (c, col) in schema.columns.iter().enumerate() {
            let v = match p.targets[c] {
                Some(pos) => src[pos].clone(),
                None => match &col.default {
                    Some(ColumnDefault::Value(v)) => v.clone(),
                    Some(ColumnDefault::CurrentTimestamp { .. }) => Value::TimestampTz(cx.now),
                    Some(ColumnDefault::Sequence) => Value::Int(next_sequence(env, schema)?),
                    Some(ColumnDefault::NextVal {
                        sequence,
                        name,
                        increment,
                        min,
                        max,
                    }) => {
                        let step = crate::sequence::SeqStep {
                            increment: *increment,
                            min: *min,
                            max: *max,
                        };
                        Value::Int(env.draws.borrow_mut().draw_stepping(*sequence, name, step)?)
                    }
                    Some(d @ (ColumnDefault::Random | ColumnDefault::RandomUuid)) => {
                        crate::expr::volatile_default(d).eval_const(cx)?
                    }
                    None => Value::Null,
                },
            };
            row.push(v.coerce_to(&col.ty).map_err(|e| column_context(e, &col.name))?);
        }
        check::check_values(&p.checks, schema, &row, cx)?;
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
        if let Some(spec) = &p.update_conflicts {
            // ON CONFLICT DO UPDATE: each copy of the row (a replicated table's) finds the
            // same row in conflict; the first copy's outcome is returned.
            let mut counted = false;
            for (i, li) in targets.into_iter().enumerate() {
                checked_table(env.stores[li], schema)?;
                let total = env.total_partitions;
                let (at, done) = upsert::upsert(env.stores, li, schema, spec, &row, &mut mine, total, cx)?;
                let slot = match done {
                    upsert::Upserted::Inserted(slot) | upsert::Upserted::Updated(slot) => slot,
                    upsert::Upserted::Kept => continue,
                    upsert::Upserted::Evicted(tombstone) => {
                        let partition = env.stores[at].partition();
                        env.evicted.push(EvictedRef {
                            partition,
                            table: schema.id,
                            tombstone,
                        });
                        continue;
                    }
                };
                if i == 0 {
                    counted = true;
                    let table = env.stores[at].table(schema.id).expect("just written");
                    if matches!(done, upsert::Upserted::Updated(_)) {
                        check::check_row(&p.checks, table, slot, cx)?;
                    }
                    returning_row(&p.returning, &mut out, table, slot, cx)?;
                    if let Some(f) = &p.fk {
                        let now = table.row(slot).to_values();
                        foreign::written(&mut checks, &mut env.deferred_fk, f, schema, &now);
                    }
                }
            }
            n += u64::from(counted);
            continue;
        }
        let mut skipped = false;
        for (i, li) in targets.into_iter().enumerate() {
            checked_table(env.stores[li], schema)?;
            // A key of a unique index without the partition column, held at another
            // partition (replicated tables have none), evicted or not, as the partition's
            // own index answers for its keys.
            if let Some((ix, _, _)) = upsert::held_elsewhere(env.stores, li, schema, &row, |_| true) {
                if !p
                    .skip_conflicts
                    .as_ref()
                    .is_some_and(|s| s.skips(&schema.indexes[ix].name))
                {
                    let table = checked_table(env.stores[li], schema)?;
                    return Err(table.unique_violation_at(ix, &row).into());
                }
                skipped = true;
                break;
            }
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
        if !skipped && let Some(f) = &p.fk {
            foreign::written(&mut checks, &mut env.deferred_fk, f, schema, &row);
        }
        n += u64::from(!skipped);
    }
    checks.finish(env.stores, env.total_partitions)?;
    out.affected = n;
    Ok(out)
}

/// The next value of a table's sequence ([`sequences`]): a value the transaction was
/// given (replay, a COMMIT re-running its block), else one drawn from the table's counter,
/// skipping, when the sequence fills the partition key, values of partitions the
/// transaction does not hold. A replayed record from before records kept their values
/// draws as it did then ([`legacy_sequence`]).
fn next_sequence(env: &mut Env<'_, '_>, schema: &TableSchema) -> Result<i64> {
    let draws = env.draws;
    if draws.borrow().legacy {
        let v = legacy_sequence(env, schema)?;
        draws.borrow_mut().took(schema.id, v);
        return Ok(v);
    }
    let keyed = schema
        .partition_column
        .filter(|&pc| schema.columns[pc].default == Some(ColumnDefault::Sequence));
    let (stores, total) = (&*env.stores, env.total_partitions);
    let held = |v: i64| {
        keyed.is_none_or(|pc| {
            let p = partition_of(ValueRef::Int(v), &schema.columns[pc].ty, total);
            stores.iter().any(|s| s.partition() == p)
        })
    };
    draws.borrow_mut().draw(schema.id, &schema.name, held)
}

/// How a table's sequence drew before records kept the values drawn (a replayed record
/// of an earlier build): a partitioned table's values came from the transaction's
/// sequence home if it held it, else from the first partition it held, among the values
/// that hash to that partition; a replicated table's copies advanced together.
fn legacy_sequence(env: &mut Env<'_, '_>, schema: &TableSchema) -> Result<i64> {
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

/// In a write's loop over its rows, every [`INTERRUPT_EVERY`] rows: whether to stop, as
/// the walker looks every as many tuples it visits ([`stop_now`]).
fn look(env: &Env<'_, '_>, i: usize) -> Result<()> {
    if i % INTERRUPT_EVERY as usize != INTERRUPT_EVERY as usize - 1 {
        return Ok(());
    }
    stop_now(env.interrupted, env.deadline)
}

fn update(p: &UpdatePlan, columns: &Arc<[ColumnInfo]>, env: &mut Env<'_, '_>, cx: &Cx<'_>) -> Result<Rows> {
    let schema = p.target.schema.clone();
    let replicated = schema.partition_column.is_none();
    if replicated {
        require_all(env, &schema)?;
    }
    let copies = if replicated { Copies::All } else { Copies::One };
    let assigned: Vec<usize> = p.assignments.iter().map(|(c, _)| *c).collect();
    require_all_for_unique(env, &schema, |c| assigned.contains(&c))?;
    foreign::require_all(env.holds_all(), p.fk.as_ref(), &schema)?;
    // With correlated subqueries, every target's new values are computed before the first
    // write (the subqueries read the partitions while they are being evaluated).
    let (targets, mut planned) = if correlated(&p.init) {
        let mut touched = Vec::new();
        let planned = with_reader(env, &mut touched, |r| {
            let runner = PlanRunner::new(r, &p.init);
            let cx = cx.with_runner(&runner);
            r.targets(&p.target, &cx, copies)?
                .into_iter()
                .map(|(li, slot)| {
                    let store = &*r.reach.stores[li];
                    let table = checked_table(store, &schema)?;
                    Ok((
                        (li, slot),
                        new_values(p, table, slot, store.partition(), r.reach.total, &cx)?,
                    ))
                })
                .collect::<Result<Vec<_>>>()
        })?;
        apply_touches(env, &touched);
        let (targets, values): (Vec<_>, Vec<_>) = planned.into_iter().unzip();
        (targets, Some(values))
    } else {
        (single_level_targets(&p.target, env, cx, copies)?, None)
    };
    let mut out = Rows::empty(columns.clone());
    let mut n = 0u64;
    let mut checks = foreign::Checks::default();
    for (i, (li, slot)) in targets.into_iter().enumerate() {
        look(env, i)?;
        let changes = match planned.as_mut() {
            Some(values) => std::mem::take(&mut values[i]),
            None => {
                let store = &*env.stores[li];
                let table = store.table(schema.id).expect("target table");
                new_values(p, table, slot, store.partition(), env.total_partitions, cx)?
            }
        };
        upsert::check_elsewhere(env.stores, li, &schema, slot, &changes)?;
        let first_copy = !replicated || li == 0;
        // (Read only for foreign-key work: the common write reads nothing more.)
        let before = match &p.fk {
            Some(_) if first_copy => Some(
                env.stores[li]
                    .table(schema.id)
                    .expect("target table")
                    .row(slot)
                    .to_values(),
            ),
            _ => None,
        };
        env.stores[li].update(schema.id, slot, &changes)?;
        if first_copy {
            let table = env.stores[li].table(schema.id).expect("target table");
            check::check_row(&p.checks, table, slot, cx)?;
            returning_row(&p.returning, &mut out, table, slot, cx)?;
            n += 1;
            if let (Some(f), Some(before)) = (&p.fk, before) {
                let after = table.row(slot).to_values();
                foreign::updated(&mut checks, &mut env.deferred_fk, f, &schema, &before, &after);
                foreign::written(&mut checks, &mut env.deferred_fk, f, &schema, &after);
            }
        }
    }
    checks.finish(env.stores, env.total_partitions)?;
    out.affected = n;
    Ok(out)
}

/// The values an UPDATE's assignments give the tuple at `slot` of `table`, at the
/// partition `partition` of `total`: each converted to its column's type; a new value of
/// the partition column that would move the row to another partition is refused.
fn new_values(
    p: &UpdatePlan,
    table: &Table,
    slot: u32,
    partition: u32,
    total: u32,
    cx: &Cx<'_>,
) -> Result<Vec<(usize, Value)>> {
    let mut b = Bindings::new();
    b.bind(0, table, slot, 0);
    upsert::assigned(&p.assignments, &p.target.schema, table, slot, &b, partition, total, cx)
}

fn delete(p: &DeletePlan, columns: &Arc<[ColumnInfo]>, env: &mut Env<'_, '_>, cx: &Cx<'_>) -> Result<Rows> {
    let schema = p.target.schema.clone();
    let replicated = schema.partition_column.is_none();
    if replicated {
        require_all(env, &schema)?;
    }
    foreign::require_all(env.holds_all(), p.fk.as_ref(), &schema)?;
    let copies = if replicated { Copies::All } else { Copies::One };
    let targets = if correlated(&p.init) {
        let mut touched = Vec::new();
        let targets = with_reader(env, &mut touched, |r| {
            let runner = PlanRunner::new(r, &p.init);
            r.targets(&p.target, &cx.with_runner(&runner), copies)
        })?;
        apply_touches(env, &touched);
        targets
    } else {
        single_level_targets(&p.target, env, cx, copies)?
    };
    let mut out = Rows::empty(columns.clone());
    let mut n = 0u64;
    let mut gone = Vec::new();
    for (i, (li, slot)) in targets.into_iter().enumerate() {
        look(env, i)?;
        let first_copy = !replicated || li == 0;
        if first_copy {
            let table = env.stores[li].table(schema.id).expect("target table");
            returning_row(&p.returning, &mut out, table, slot, cx)?;
            n += 1;
            gone.extend(p.fk.as_ref().map(|_| table.row(slot).to_values()));
        }
        env.stores[li].delete(schema.id, slot)?;
    }
    if let Some(f) = &p.fk {
        let mut checks = foreign::Checks::default();
        let reach = foreign::Reach {
            total: env.total_partitions,
            stores: env.stores,
            evicted: env.evicted,
            interrupted: env.interrupted,
            deadline: env.deadline,
        };
        foreign::deleted(&mut checks, &mut env.deferred_fk, reach, f, &schema, gone)?;
        checks.finish(env.stores, env.total_partitions)?;
    }
    out.affected = n;
    Ok(out)
}
