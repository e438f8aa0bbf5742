//! Prepared statements: a statement planned once ([`prepare`]) with what its callers ask
//! of it before running it (its kind, its parameter and result types, the tables it
//! touches, where it must run). The executor runs it (`Prepared::execute`, defined with
//! the executor so that this module never depends on it).

use std::borrow::Cow;
use std::sync::Arc;

use permafrost_storage::partitioning::partition_of;
use permafrost_storage::{TableId, TableSchema};
use permafrost_types::{DataType, Value};
use sqlparser::ast::Statement;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError};
use crate::expr::{Cx, Expr};
use crate::foreign::{ParentAt, parent_at};
use crate::plan::{Access, DERIVED_TABLE, InsertSource, PartitionPick, Plan, RelPlan, SelectPlan, SetTree};
use crate::rows::ColumnInfo;
use crate::{ddl, limits, parse, plan};

pub(crate) mod blocks;

/// What kind of statement a prepared statement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    Select,
    Insert,
    Update,
    Delete,
}

/// Where a statement must run, given its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// All rows it reads or writes are at this partition.
    Single(u32),
    /// Any one partition will do: it reads only replicated tables, or it inserts rows whose
    /// partition key the table's sequence draws at the partition that runs it.
    Any,
    /// It needs every partition.
    All,
}

/// A planned statement.
pub struct Prepared {
    pub sql: String,
    plan: Plan,
    param_types: Vec<Option<DataType>>,
    /// The parameters that are arrays (`x = ANY($1)`), with their elements' type; their
    /// entries in `param_types` are empty (the value is the array literal's text).
    array_params: Vec<(usize, Option<DataType>)>,
    columns: Arc<[ColumnInfo]>,
    kind: StatementKind,
    /// `EXPLAIN statement`: the statement shown (this one's plan reads nothing; running it
    /// gives the statement's plan as text, `crate::explain`).
    explain: Option<Box<Prepared>>,
    /// `EXPLAIN ANALYZE query`: this one's plan, parameters and route are the query's, so
    /// that it runs where the query runs and reads what it reads; running it runs the
    /// query and gives the plan with the rows each step gave and the time taken.
    analyze: Option<ExplainAnalyze>,
    /// Whether it calls `nextval()` or `setval()`: a query that does is a write (it takes
    /// sequence values, which its transaction's record keeps), as in PostgreSQL, where
    /// nextval() fails in a read-only transaction.
    draws: bool,
    /// Whether it calls `currval()` or `lastval()`: it reads its session's sequence
    /// values, which only its partitions' run is given.
    reads_session: bool,
    /// [`Prepared::footprint`], computed at its first use (every probe of a block asks it
    /// of each earlier write).
    footprint: std::sync::OnceLock<Vec<TableId>>,
}

/// What EXPLAIN ANALYZE keeps besides the query's plan.
#[derive(Debug, Clone)]
pub struct ExplainAnalyze {
    /// `SUMMARY` (on by default): the execution time, after the plan.
    pub summary: bool,
    /// The query's own result columns (the statement's is EXPLAIN's one).
    pub columns: Arc<[ColumnInfo]>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("sql", &self.sql)
            .field("kind", &self.kind)
            .finish()
    }
}

/// The start of a bulk insert's statement text (what COPY FROM runs, the executor's
/// `Procedure::bulk_insert`): a comment, so the text is an ordinary one-row INSERT to the
/// parser; its rows are the call's parameters, one group after another, and like COPY in
/// PostgreSQL it writes the values it is given into identity columns GENERATED ALWAYS.
pub const BULK_MARK: &str = "/* permafrost: bulk insert, one row per group of parameters */ ";

/// Plans one DML or query statement from text, parsed whole: `crate::prepare`
/// (crate::long_insert) plans a long INSERT's rows in chunks, each with this.
pub fn prepare(catalog: &Catalog, sql: &str) -> Result<Prepared> {
    limits::with_stack_for(sql, || {
        let stmt = parse::parse_statement(sql)?;
        prepare_statement(catalog, &stmt, sql)
    })
}

impl Prepared {
    /// This INSERT's rows followed by `other`'s, `other` being the same INSERT of other
    /// listed rows, without parameters (crate::long_insert); `None` otherwise.
    pub(crate) fn append_rows(&mut self, other: Prepared) -> Option<()> {
        if !self.param_types.is_empty() || !other.param_types.is_empty() || self.kind != other.kind {
            return None;
        }
        self.plan.append_rows(other.plan)?;
        self.draws |= other.draws;
        self.reads_session |= other.reads_session;
        Some(())
    }
}

/// Plans one already-parsed DML or query statement.
pub fn prepare_statement(catalog: &Catalog, stmt: &Statement, sql: &str) -> Result<Prepared> {
    let (planned, kind) = match stmt {
        Statement::Explain {
            describe_alias: sqlparser::ast::DescribeAlias::Explain,
            analyze,
            query_plan: false,
            estimate: false,
            statement,
            format,
            options,
            ..
        } => {
            let summary = explain_options(*analyze, format.is_some(), options.as_deref())?;
            let inner = prepare_statement(catalog, statement, sql)?;
            let columns: Arc<[ColumnInfo]> = vec![ColumnInfo {
                name: "QUERY PLAN".into(),
                ty: Some(DataType::Varchar(None)),
            }]
            .into();
            let Some(summary) = summary else {
                return Ok(Prepared {
                    sql: sql.to_string(),
                    plan: Plan::Select(SelectPlan::reading_nothing()),
                    param_types: inner.param_types.clone(),
                    array_params: inner.array_params.clone(),
                    columns,
                    kind: StatementKind::Select,
                    explain: Some(Box::new(inner)),
                    analyze: None,
                    draws: false,
                    reads_session: false,
                    footprint: Default::default(),
                });
            };
            if inner.explain.is_some() || inner.analyze.is_some() {
                return Err(SqlError::Unsupported("EXPLAIN ANALYZE of EXPLAIN".into()));
            }
            // Of a write, it is that write (it runs, as in PostgreSQL), giving the plan's
            // lines instead of its command tag.
            return Ok(Prepared {
                sql: sql.to_string(),
                plan: inner.plan,
                param_types: inner.param_types,
                array_params: inner.array_params,
                columns,
                kind: inner.kind,
                explain: None,
                analyze: Some(ExplainAnalyze {
                    summary,
                    columns: inner.columns,
                }),
                draws: inner.draws,
                reads_session: inner.reads_session,
                footprint: Default::default(),
            });
        }
        Statement::Query(q) => (plan::plan_query(catalog, q)?, StatementKind::Select),
        Statement::Insert(i) => (
            plan::plan_insert(catalog, i, sql.starts_with(BULK_MARK))?,
            StatementKind::Insert,
        ),
        Statement::Update(u) => (plan::plan_update(catalog, u)?, StatementKind::Update),
        Statement::Delete(d) => (plan::plan_delete(catalog, d)?, StatementKind::Delete),
        other if ddl::is_ddl(other) => {
            return Err(SqlError::Unsupported(
                "DDL cannot be prepared as a statement; run it as DDL".into(),
            ));
        }
        other => {
            return Err(SqlError::Unsupported(format!(
                "statement {}",
                first_words(&other.to_string())
            )));
        }
    };
    Ok(Prepared {
        sql: sql.to_string(),
        plan: planned.plan,
        param_types: planned.params,
        array_params: planned.array_params,
        columns: planned.columns.into(),
        kind,
        explain: None,
        analyze: None,
        draws: calls_sequence_functions(stmt, &["nextval", "setval"]),
        reads_session: calls_sequence_functions(stmt, &["currval", "lastval"]),
        footprint: Default::default(),
    })
}

/// Whether `stmt` calls one of the functions `names` anywhere.
fn calls_sequence_functions(stmt: &Statement, names: &[&str]) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(stmt, |e| {
        if let sqlparser::ast::Expr::Function(f) = e
            && let Some(last) = f.name.0.last().and_then(|p| p.as_ident())
            && names.contains(&last.value.to_lowercase().as_str())
        {
            found = true;
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    found
}

/// The options of EXPLAIN that are taken: `VERBOSE` and `COSTS` (there are no costs to
/// show either way), `FORMAT TEXT`, `ANALYZE` with `SUMMARY` and `TIMING` (each step's
/// rows are counted, its time is not measured: the statement's is); the other options
/// and formats are refused. For ANALYZE, whether SUMMARY is on.
fn explain_options(
    analyze: bool,
    format: bool,
    options: Option<&[sqlparser::ast::UtilityOption]>,
) -> Result<Option<bool>> {
    let (mut analyze, mut summary) = (analyze, None);
    if format {
        return Err(SqlError::Unsupported(
            "EXPLAIN FORMAT (the plan is shown as text)".into(),
        ));
    }
    for o in options.unwrap_or_default() {
        let name = o.name.value.to_lowercase();
        let arg = o.arg.as_ref().map(|a| a.to_string().to_lowercase());
        let on = !matches!(arg.as_deref(), Some("false" | "off" | "0"));
        match name.as_str() {
            "verbose" | "costs" | "timing" => {}
            "format" if arg.as_deref() == Some("text") => {}
            "analyze" => analyze = on,
            "summary" => summary = Some(on),
            "buffers" | "wal" | "settings" | "generic_plan" if !on => {}
            other => {
                return Err(SqlError::Unsupported(format!(
                    "EXPLAIN option {other}{}",
                    arg.map_or(String::new(), |a| format!(" {a}"))
                )));
            }
        }
    }
    Ok(analyze.then(|| summary.unwrap_or(true)))
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

impl Prepared {
    pub fn kind(&self) -> StatementKind {
        self.kind
    }

    pub fn is_read_only(&self) -> bool {
        self.kind == StatementKind::Select && !self.draws
    }

    /// Whether it calls `nextval()` or `setval()` (see [`Prepared::is_read_only`]).
    pub fn draws_sequences(&self) -> bool {
        self.draws
    }

    /// Whether it calls `currval()` or `lastval()`.
    pub fn reads_session_sequences(&self) -> bool {
        self.reads_session
    }

    /// What its result is answered as: its kind, but a query's for EXPLAIN ANALYZE of a
    /// write (which gives rows, the plan's lines).
    pub fn result_kind(&self) -> StatementKind {
        if self.analyze.is_some() {
            StatementKind::Select
        } else {
            self.kind
        }
    }

    /// The inferred type of each parameter (`None` where nothing constrains it).
    pub fn param_types(&self) -> &[Option<DataType>] {
        &self.param_types
    }

    /// Whether parameter `i` is an array (`x = ANY($1)`): `Some` with its elements' type.
    pub fn array_param(&self, i: usize) -> Option<Option<DataType>> {
        self.array_params.iter().find(|(p, _)| *p == i).map(|(_, t)| *t)
    }

    /// The result columns (empty for DML without RETURNING).
    pub fn columns(&self) -> &Arc<[ColumnInfo]> {
        &self.columns
    }

    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// For `EXPLAIN statement`, the statement it shows.
    pub fn explained(&self) -> Option<&Prepared> {
        self.explain.as_deref()
    }

    /// For `EXPLAIN ANALYZE query`, what it keeps besides the query's plan.
    pub fn analyzed(&self) -> Option<&ExplainAnalyze> {
        self.analyze.as_ref()
    }

    /// Whether the statement touches a few rows found by exact key: every relation it reads
    /// or changes is reached by equality on a unique index, or it inserts a few rows of
    /// VALUES. Such a statement takes microseconds, so the executor may run it on the
    /// caller's thread when its partition is idle.
    pub fn is_point(&self) -> bool {
        use crate::plan::{Access, RelPlan};
        let point = |r: &RelPlan| matches!(&r.access, Access::IndexEq { index, .. } if r.schema.indexes.get(*index).is_some_and(|i| i.unique));
        if !self.subquery_rels().is_empty() {
            return false;
        }
        match &self.plan {
            Plan::Select(s) => !s.rels.is_empty() && s.rels.iter().all(point),
            Plan::Insert(i) => matches!(&i.source, InsertSource::Values(rows) if rows.len() <= 16),
            Plan::Update(u) => point(&u.target),
            Plan::Delete(d) => point(&d.target),
            Plan::Compound(_) => false,
        }
    }

    /// The tables the statement reads or writes.
    pub fn tables(&self) -> Vec<TableId> {
        let mut v: Vec<TableId> = match &self.plan {
            Plan::Select(s) => s
                .rels
                .iter()
                .map(|r| r.schema.id)
                .filter(|&id| id != DERIVED_TABLE)
                .collect(),
            Plan::Insert(i) => {
                let mut v = vec![i.schema.id];
                if let InsertSource::Select(s) = &i.source {
                    v.extend(s.rels.iter().map(|r| r.schema.id).filter(|&id| id != DERIVED_TABLE));
                }
                v
            }
            Plan::Update(u) => vec![u.target.schema.id],
            Plan::Delete(d) => vec![d.target.schema.id],
            Plan::Compound(_) => Vec::new(),
        };
        v.extend(self.subquery_rels().iter().map(|r| r.schema.id));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// What a query reads, when it reads one table's rows and nothing else: its result is
    /// then a function of those rows alone, and stays the same while none of them changes
    /// (`permafrost_storage::Recent`). The rows whose partition-column value lies in a
    /// range these parameters give, when it reads them through an index led by that
    /// column; else (a scan, another index, bounds that cannot be computed here) all of
    /// the table's rows, unbounded: a coarse read set, one entry however many rows it read.
    /// `None` for anything else: writes, joins, subqueries, tables without a partition
    /// column.
    pub fn read_range(&self, params: &[Value]) -> Option<ReadRange> {
        let Plan::Select(s) = &self.plan else { return None };
        if !s.init.is_empty() || !s.derived.is_empty() {
            return None;
        }
        let [rel] = s.rels.as_slice() else { return None };
        if rel.schema.id == DERIVED_TABLE || rel.schema.partition_column.is_none() {
            return None;
        }
        self.range_of(rel, params).or_else(|| {
            Some(ReadRange {
                schema: rel.schema.clone(),
                lo: None,
                hi: None,
            })
        })
    }

    /// What a query reads, described as [`Prepared::read_range`] does when it reads one
    /// table; else, for a query of several tables (joins, subqueries, set operations),
    /// all of the rows of each table it reads: a coarse read set, one entry per table,
    /// its result being a function of those rows alone. `None` for writes.
    pub fn read_ranges(&self, params: &[Value]) -> Option<Vec<ReadRange>> {
        if !self.is_read_only() || !matches!(self.plan, Plan::Select(_) | Plan::Compound(_)) {
            return None;
        }
        if let Some(r) = self.read_range(params) {
            return Some(vec![r]);
        }
        let mut rels: Vec<&RelPlan> = match &self.plan {
            Plan::Select(s) => s.rels.iter().filter(|r| r.schema.id != DERIVED_TABLE).collect(),
            _ => Vec::new(),
        };
        rels.extend(self.subquery_rels());
        rels.sort_unstable_by_key(|r| r.schema.id);
        rels.dedup_by_key(|r| r.schema.id);
        Some(
            rels.into_iter()
                .map(|r| ReadRange {
                    schema: r.schema.clone(),
                    lo: None,
                    hi: None,
                })
                .collect(),
        )
    }

    /// The rows an UPDATE or DELETE picks, when it picks them among one range of its
    /// table's partition-column values that these parameters give (through an index led
    /// by that column), as [`Prepared::read_range`] for a query: what it does is then a
    /// function of those rows alone (its expressions read nothing else, and the unique
    /// indexes it checks all hold the partition column). `None` for anything else.
    pub fn write_range(&self, params: &[Value]) -> Option<ReadRange> {
        if !self.plan.init().is_empty() {
            return None;
        }
        // (A write with foreign-key work reads other tables' keys.)
        match &self.plan {
            Plan::Update(u) if u.fk.is_none() => self.range_of(&u.target, params),
            Plan::Delete(d) if d.fk.is_none() => self.range_of(&d.target, params),
            _ => None,
        }
    }

    /// Whether it is an INSERT of listed rows into a table with a partition column: it
    /// reads nothing but the rows with the keys it inserts (its unique indexes all hold
    /// the partition column).
    pub fn inserts_keyed_rows(&self) -> bool {
        matches!(&self.plan, Plan::Insert(i) if matches!(i.source, InsertSource::Values(_))
            && i.schema.partition_column.is_some()
            && i.fk.is_none()
            && i.schema.global_unique_indexes().next().is_none())
    }

    fn range_of(&self, rel: &RelPlan, params: &[Value]) -> Option<ReadRange> {
        let schema = &rel.schema;
        let pc = schema.partition_column?;
        let ty = schema.columns[pc].ty;
        if !(ty.is_integer() || matches!(ty, DataType::Varchar(_))) {
            return None;
        }
        let params = coerce_params(params, &self.param_types).ok()?;
        let cx = Cx::new(&params, 0);
        let value = |e: &Expr| key_constant(e, &cx, &ty).filter(|v| !v.is_null());
        let leads = |index: usize| {
            schema
                .indexes
                .get(index)
                .is_some_and(|i| i.columns.first() == Some(&pc))
        };
        let (lo, hi) = match &rel.access {
            Access::IndexEq { index, keys } if leads(*index) => {
                let v = value(keys.first()?)?;
                (Some(v.clone()), Some(v))
            }
            Access::IndexRange {
                index,
                prefix,
                lower,
                upper,
                ..
            } if leads(*index) => match prefix.first() {
                Some(e) => {
                    let v = value(e)?;
                    (Some(v.clone()), Some(v))
                }
                None => {
                    let bound = |b: &Option<(Expr, bool)>| match b {
                        Some((e, _)) => value(e).map(Some),
                        None => Some(None),
                    };
                    (bound(lower)?, bound(upper)?)
                }
            },
            _ => return None,
        };
        Some(ReadRange {
            schema: schema.clone(),
            lo,
            hi,
        })
    }

    /// Where the statement must run with these parameters among `partitions`. With one
    /// partition, a statement over all of them runs at that one.
    pub fn route(&self, params: &[Value], partitions: u32) -> Route {
        match self.route_among(params, partitions, false) {
            Route::All if partitions == 1 => Route::Single(0),
            r => r,
        }
    }

    /// Where a run whose changes are all undone (an interactive transaction's probe) may
    /// run: as [`Prepared::route`], except that a write to a replicated table needs only one
    /// partition, since every partition holds the same rows and gives the same result.
    pub fn route_undone(&self, params: &[Value], partitions: u32) -> Route {
        match self.route_among(params, partitions, true) {
            Route::All if partitions == 1 => Route::Single(0),
            r => r,
        }
    }

    /// For an `INSERT ... VALUES` whose rows' partition key their table's sequence draws
    /// ([`Route::Any`] as far as the plan tells): the table, and how many rows it inserts.
    /// The caller routes it to the partitions of the sequence's next values
    /// ([`crate::exec::sequences::Sequences::route_next`]).
    pub fn sequence_key(&self) -> Option<(&permafrost_storage::TableSchema, usize)> {
        let Plan::Insert(i) = &self.plan else { return None };
        let InsertSource::Values(rows) = &i.source else {
            return None;
        };
        let pc = i.schema.partition_column?;
        (i.targets[pc].is_none() && i.schema.columns[pc].default == Some(permafrost_storage::ColumnDefault::Sequence))
            .then_some((&*i.schema, rows.len()))
    }

    fn route_among(&self, params: &[Value], partitions: u32, undone: bool) -> Route {
        let params = match coerce_params(params, &self.param_types) {
            Ok(p) => p,
            Err(_) => return Route::All,
        };
        let cx = Cx::new(&params, 0);
        let key_partition = |schema: &TableSchema, e: &Expr| key_partition(schema, e, &cx, partitions);
        let pick_route = |schema: &permafrost_storage::TableSchema, pick: &PartitionPick| match pick {
            PartitionPick::Replicated => None,
            PartitionPick::Key(e) => Some(key_partition(schema, e).map_or(Route::All, Route::Single)),
            PartitionPick::All => Some(Route::All),
        };
        let combine = |routes: Vec<Route>, writes_replicated: bool| -> Route {
            if writes_replicated && !undone {
                return Route::All;
            }
            let mut single = None;
            for r in routes {
                match (r, single) {
                    (Route::All, _) | (Route::Any, _) => return Route::All,
                    (Route::Single(p), None) => single = Some(p),
                    (Route::Single(p), Some(q)) if p != q => return Route::All,
                    _ => {}
                }
            }
            single.map_or(Route::Any, Route::Single)
        };
        // A write of a key of a unique index without the partition column checks it at
        // every partition.
        let writes_global = match &self.plan {
            Plan::Insert(i) => i.schema.global_unique_over(|_| true).is_some(),
            Plan::Update(u) => u
                .target
                .schema
                .global_unique_over(|c| u.assignments.iter().any(|(a, _)| *a == c))
                .is_some(),
            _ => false,
        };
        // (An interactive block's probe too: it must see the keys the block wrote.)
        if writes_global {
            return Route::All;
        }
        // A write with foreign-key work looks up keys at every partition, unless each
        // key's rows lie at a partition its value names (`FkPlan::local`): then an INSERT
        // of listed rows also goes to the partitions of the rows its keys reference, and
        // an UPDATE or DELETE (which does not write a key's columns) finds the rows
        // referencing those it changes with them.
        let fk = match &self.plan {
            Plan::Insert(i) => i.fk.as_ref().map(|f| (f, &*i.schema)),
            Plan::Update(u) => u.fk.as_ref().map(|f| (f, &*u.target.schema)),
            Plan::Delete(d) => d.fk.as_ref().map(|f| (f, &*d.target.schema)),
            _ => None,
        };
        if let Some((f, schema)) = fk
            && (!f.local(schema) || (!matches!(self.plan, Plan::Insert(_)) && !f.parents.is_empty()))
        {
            return Route::All;
        }
        // The relations its subqueries read are read where they are, as the statement's.
        let subqueries = self.subquery_rels();
        if !subqueries.is_empty() {
            let mut routes: Vec<Route> = subqueries
                .iter()
                .filter_map(|r| pick_route(&r.schema, &r.pick))
                .collect();
            let (own, writes_replicated): (Vec<&RelPlan>, bool) = match &self.plan {
                Plan::Select(s) => (s.rels.iter().collect(), false),
                Plan::Update(u) => (vec![&u.target], u.target.schema.is_replicated()),
                Plan::Delete(d) => (vec![&d.target], d.target.schema.is_replicated()),
                Plan::Compound(_) => (Vec::new(), false),
                Plan::Insert(_) => return Route::All,
            };
            routes.extend(own.iter().filter_map(|r| pick_route(&r.schema, &r.pick)));
            return combine(routes, writes_replicated);
        }
        match &self.plan {
            Plan::Select(s) => combine(
                s.rels
                    .iter()
                    .filter_map(|r| pick_route(&r.schema, &through_join(r, &s.rels)))
                    .collect(),
                false,
            ),
            // (Sides that read no relation.)
            Plan::Compound(_) => combine(Vec::new(), false),
            Plan::Update(u) => combine(
                pick_route(&u.target.schema, &u.target.pick).into_iter().collect(),
                u.target.schema.is_replicated(),
            ),
            Plan::Delete(d) => combine(
                pick_route(&d.target.schema, &d.target.pick).into_iter().collect(),
                d.target.schema.is_replicated(),
            ),
            Plan::Insert(i) => {
                let InsertSource::Values(rows) = &i.source else {
                    return Route::All;
                };
                // The partitions of the rows the new rows' keys reference.
                let Some(keys) = parent_keys(i) else {
                    return Route::All;
                };
                let mut parents = Vec::new();
                for (parent, pos) in keys {
                    parents.extend(
                        rows.iter()
                            .map(|r| key_partition(parent, &r[pos]).map_or(Route::All, Route::Single)),
                    );
                }
                let Some(pc) = i.schema.partition_column else {
                    // Into a replicated table: its VALUES read no table.
                    return if !undone {
                        Route::All
                    } else if parents.is_empty() {
                        Route::Any
                    } else {
                        combine(parents, false)
                    };
                };
                let Some(pos) = i.targets[pc] else {
                    // A partition key from the table's sequence: anywhere, as far as the
                    // plan tells (callers route it by the sequence's next values,
                    // [`Prepared::sequence_key`]); otherwise the key is missing (NULL).
                    return if i.schema.columns[pc].default == Some(permafrost_storage::ColumnDefault::Sequence)
                        && parents.is_empty()
                    {
                        Route::Any
                    } else {
                        Route::All
                    };
                };
                parents.extend(
                    rows.iter()
                        .map(|r| key_partition(&i.schema, &r[pos]).map_or(Route::All, Route::Single)),
                );
                combine(parents, false)
            }
        }
    }
}

impl Prepared {
    /// The relations the statement's subqueries read (in expressions and in FROM), theirs
    /// included, at any depth (an INSERT's SELECT's too), and every relation of a set
    /// operation's sides; never a subquery in FROM's own relation.
    fn subquery_rels(&self) -> Vec<&RelPlan> {
        /// The relations of the queries `tree` holds, theirs included.
        fn all<'p>(tree: &'p SetTree, out: &mut Vec<&'p RelPlan>) {
            tree.for_each_select(&mut |s| {
                out.extend(s.rels.iter().filter(|r| r.schema.id != DERIVED_TABLE));
                nested(s, out);
            });
        }
        /// The relations of the subqueries of `s`.
        fn nested<'p>(s: &'p SelectPlan, out: &mut Vec<&'p RelPlan>) {
            for ip in &s.init {
                all(&ip.query, out);
            }
            for d in &s.derived {
                all(&d.query, out);
            }
            for l in s.rels.iter().filter_map(|r| r.lateral.as_ref()) {
                all(&l.query, out);
            }
        }
        let mut out = Vec::new();
        for ip in self.plan.init() {
            all(&ip.query, &mut out);
        }
        match &self.plan {
            Plan::Select(s) => {
                for d in &s.derived {
                    all(&d.query, &mut out);
                }
                for l in s.rels.iter().filter_map(|r| r.lateral.as_ref()) {
                    all(&l.query, &mut out);
                }
            }
            Plan::Insert(i) => {
                if let InsertSource::Select(s) = &i.source {
                    nested(s, &mut out);
                }
            }
            Plan::Compound(c) => all(&c.tree, &mut out),
            Plan::Update(_) | Plan::Delete(_) => {}
        }
        out
    }
}

/// The partition of the row whose partition column (of table `schema`) key expression `e`
/// gives before any row is read; `None` when it reads a row, or the table is replicated.
fn key_partition(schema: &TableSchema, e: &Expr, cx: &Cx<'_>, partitions: u32) -> Option<u32> {
    let ty = schema.columns[schema.partition_column?].ty;
    let v = key_constant(e, cx, &ty)?;
    Some(partition_of(v.as_ref(), &ty, partitions))
}

/// For an INSERT's rows: each table their foreign keys reference whose partition column is
/// a column of the key, with the position among the inserted columns of the value that
/// names the referenced row's partition; `None` when an inserted row does not give that
/// column (its default decides it).
fn parent_keys(i: &crate::plan::InsertPlan) -> Option<Vec<(&TableSchema, usize)>> {
    let mut out = Vec::new();
    for (k, parent) in i.fk.iter().flat_map(|f| f.parents.iter()) {
        let def = &i.schema.foreign_keys[*k];
        if let ParentAt::KeyValue(at) = parent_at(def, parent) {
            out.push((&**parent, i.targets[def.columns[at]]?));
        }
    }
    Some(out)
}

/// The partition pick of relation `r` among `rels`, with a key equal to another relation's
/// partition column (TPC-C's `c_w_id = w_id`) taken as that relation's key when it has one
/// before any row is read (`w_id = 1`): equal values, so `r`'s rows that can match are at
/// that value's partition, whatever the join.
fn through_join<'p>(r: &'p RelPlan, rels: &'p [RelPlan]) -> Cow<'p, PartitionPick> {
    if let PartitionPick::Key(Expr::Column { rel, col }) = &r.pick
        && let Some(other) = rels
            .iter()
            .find(|o| o.rel == *rel && o.schema.partition_column == Some(*col))
        && let PartitionPick::Key(e) = &other.pick
        && e.is_row_independent()
    {
        return Cow::Owned(PartitionPick::Key(e.clone()));
    }
    Cow::Borrowed(&r.pick)
}

/// The value of a key expression computed before any row is read (from constants and
/// parameters), as type `ty`; `None` if it reads a row or does not convert.
fn key_constant(e: &Expr, cx: &Cx<'_>, ty: &DataType) -> Option<Value> {
    if !e.is_row_independent() {
        return None;
    }
    e.eval_const(cx).ok()?.coerce_to(ty).ok()
}

/// The rows a query reads ([`Prepared::read_range`]): those of the table of `schema` whose
/// partition-column value lies between `lo` and `hi` (inclusive; `None`: unbounded).
#[derive(Debug, Clone)]
pub struct ReadRange {
    pub schema: Arc<TableSchema>,
    pub lo: Option<Value>,
    pub hi: Option<Value>,
}

/// Converts parameters to the types inferred for them where the kinds differ.
pub fn coerce_params<'p>(params: &'p [Value], types: &[Option<DataType>]) -> Result<Cow<'p, [Value]>> {
    if params.len() != types.len() {
        return Err(SqlError::ParamCount {
            expected: types.len(),
            got: params.len(),
        });
    }
    let needs = |v: &Value, t: &DataType| match (v, t) {
        (Value::Null, _) => false,
        (Value::Text(_), DataType::Varchar(_)) => false,
        (Value::Text(_), _) => true,
        (Value::Int(_), DataType::Double | DataType::Decimal { .. }) => true,
        _ => false,
    };
    if !params
        .iter()
        .zip(types)
        .any(|(v, t)| t.as_ref().is_some_and(|t| needs(v, t)))
    {
        return Ok(Cow::Borrowed(params));
    }
    let mut out = Vec::with_capacity(params.len());
    for (v, t) in params.iter().zip(types) {
        out.push(match t {
            Some(t) if needs(v, t) => v.clone().coerce_to(&match t {
                // A text parameter compared with a VARCHAR(n) must not be length-checked.
                DataType::Varchar(_) => DataType::Varchar(None),
                other => *other,
            })?,
            _ => v.clone(),
        });
    }
    Ok(Cow::Owned(out))
}

/// Statements at and past the limits, through the whole front end on a test thread's
/// default stack: each is planned or refused with 54001, never a stack overflow.
#[cfg(test)]
mod deep_statements {
    use crate::catalog::Catalog;

    fn chain(head: &str, term: &str, op: &str, n: usize) -> String {
        let mut s = String::from(head);
        for i in 0..n {
            if i > 0 {
                s.push_str(op);
            }
            s.push_str(term);
        }
        s
    }

    fn plan(sql: &str) -> Result<(), &'static str> {
        super::prepare(&Catalog::new(), sql)
            .map(|_| ())
            .map_err(|e| e.sqlstate())
    }

    #[test]
    fn long_plus_chains_run_up_to_the_depth_limit() {
        assert_eq!(plan(&chain("SELECT ", "1", " + ", 1_200)), Ok(()));
        assert_eq!(plan(&chain("SELECT ", "1", "+", 3_000)), Ok(()));
        assert_eq!(plan(&chain("SELECT ", "1", " + ", 10_000)), Err("54001"));
        assert_eq!(plan(&chain("SELECT ", "1", "+", 200_000)), Err("54001"));
        // An error at the top of a long chain is placed at it (its span is the chain's).
        let bad = format!("{} + 'x'", chain("SELECT ", "1", "+", 2_999));
        assert_eq!(plan(&bad), Err("22P02"));
        let bad = format!("{} WHERE count(*) > 1", chain("SELECT ", "1", "+", 2_999));
        assert_eq!(plan(&bad), Err("42803"));
        let bad = format!("{} IN (SELECT 1, 2)", chain("SELECT ", "1", "+", 2_999));
        assert_eq!(plan(&bad), Err("42601"));
    }

    #[test]
    fn boolean_and_concatenation_chains_of_any_length_are_flattened() {
        assert_eq!(plan(&chain("SELECT 1 WHERE ", "1 = 2", " OR ", 100_000)), Ok(()));
        assert_eq!(plan(&chain("SELECT 1 WHERE ", "1 = 1", " AND ", 20_000)), Ok(()));
        assert_eq!(plan(&chain("SELECT ", "'a'", " || ", 20_000)), Ok(()));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let n = 5_000;
        let sql = format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(plan(&sql), Err("54001"));
        let sql = format!("SELECT {}1", "- ".repeat(n));
        assert_eq!(plan(&sql), Err("54001"));
        let sql = format!("SELECT 1{}", "::int".repeat(n));
        assert_eq!(plan(&sql), Err("54001"));
    }
}
