//! What a plan is: the access path to each relation, the join order, and the plans of
//! SELECT, INSERT, UPDATE and DELETE that the executor runs.

use std::sync::Arc;

use permafrost_storage::TableSchema;
use permafrost_types::DataType;

use crate::expr::AggCall;
use crate::expr::Expr;
use crate::rows::ColumnInfo;

/// How a relation's tuples are found.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    Scan,
    /// Equality on all columns of index `index`.
    IndexEq {
        index: usize,
        keys: Vec<Expr>,
    },
    /// `col = ANY(array)` on the column of a one-column index: a lookup per distinct
    /// element of the array (evaluated before the relation is read).
    IndexAny {
        index: usize,
        array: Expr,
    },
    /// Equalities on a prefix of an ordered index plus an optional range on the next column.
    IndexRange {
        index: usize,
        prefix: Vec<Expr>,
        lower: Option<(Expr, bool)>,
        upper: Option<(Expr, bool)>,
        /// Visited from the upper end down: the query's ORDER BY is this index's order
        /// reversed (`access::index_order`), so it is not sorted.
        backward: bool,
    },
    /// Equalities `cols[i] = keys[i]` that no index answers, on a relation the walk enters
    /// once per row of those before it: a hash join. At its first entry the walk builds a
    /// hash table of the relation's rows by those columns, within `work_mem` (else it
    /// scans the relation at each entry instead), and answers each entry from it.
    Hash {
        cols: Vec<usize>,
        keys: Vec<Expr>,
    },
}

/// Which partitions' copies of a relation a statement reads.
#[derive(Debug, Clone, PartialEq)]
pub enum PartitionPick {
    /// Every partition the transaction holds.
    All,
    /// Only the partition of this value of the partition column.
    Key(Expr),
    /// A replicated table: one copy is enough to read.
    Replicated,
}

/// The end of a null-extended group of relations ([`RelPlan::starts`]).
#[derive(Debug, Clone)]
pub struct GroupEnd {
    /// The group's number.
    pub id: usize,
    /// Its first level.
    pub start: usize,
    /// The predicates around the group (the query's, or the conditions of a group around
    /// it) whose last relation is in the group: checked once the walk is past the group,
    /// its rows bound or null-extended.
    pub after: Vec<Expr>,
}

impl RelPlan {
    /// Whether the relation is null-extended: in a group that starts here or earlier.
    pub fn null_extended(rels: &[RelPlan], level: usize) -> bool {
        !rels[level].starts.is_empty() || RelPlan::inside_group(rels, level)
    }

    /// Whether level `level` is in a null-extended group that starts before it.
    pub fn inside_group(rels: &[RelPlan], level: usize) -> bool {
        rels[..level]
            .iter()
            .any(|r| r.starts.iter().any(|&(_, end)| end >= level))
    }
}

#[derive(Debug, Clone)]
pub struct RelPlan {
    pub rel: usize,
    pub schema: Arc<TableSchema>,
    pub access: Access,
    /// Predicates checked once this relation (and all earlier ones) is bound: those of the
    /// innermost null-extended group it is in (its ON conditions, and those of the inner
    /// joins inside it), or the query's (WHERE, inner joins' ON).
    pub filters: Vec<Expr>,
    /// The null-extended groups whose first level this is, innermost first: each one's
    /// number (below 64) and last level. A group is the right side of a LEFT JOIN or the
    /// left of a RIGHT JOIN (one relation or a join's), its levels consecutive: when for
    /// the tuples bound before it no row of its relations passes its conditions, the walk
    /// goes on past its last level with none of them bound (their columns read NULL).
    pub starts: Vec<(usize, usize)>,
    /// The null-extended groups whose last level this is, innermost first.
    pub ends: Vec<GroupEnd>,
    /// The right side of a FULL JOIN (of two relations, this one second, a group of its
    /// own): besides being null-extended, its tuples no row of the first matched are
    /// emitted at the end with the first null-extended.
    pub full: bool,
    /// How many of `filters`, at their start, are the predicates an `IndexRange`
    /// access's bounds came from: a range the executor builds exactly (integer keys,
    /// every bound converted) guarantees them, so they are not checked again. For
    /// `Access::Hash`, the predicates that read this relation alone: its hash table holds
    /// only the rows that pass them (a relation scanned instead checks them all).
    pub bounds: usize,
    pub pick: PartitionPick,
    /// A LATERAL subquery in FROM (or a function call there reading earlier FROM items):
    /// its rows are computed at each entry of the level, from the tuples bound before it.
    pub lateral: Option<Arc<Lateral>>,
}

/// A subquery in FROM that reads the FROM items before it (`LATERAL`): `query`, whose
/// `Expr::Outer(i)` reads the value of `args[i]` over the tuples bound before its level.
/// Its relation's level comes after those of the relations `args` read.
#[derive(Debug)]
pub struct Lateral {
    pub query: SetTree,
    pub args: Vec<Expr>,
}

#[derive(Debug, Clone)]
pub struct AggPlan {
    pub groups: Vec<Expr>,
    pub aggs: Vec<AggCall>,
    pub having: Option<Expr>,
}

#[derive(Debug, Clone)]
pub struct SortKey {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

pub use crate::expr::SubqueryKind;

/// A subquery of a plan's expressions. One that reads nothing of the row being looked at
/// (PostgreSQL's InitPlan) is run once, before its statement reads a row, its values then
/// read by the statement's expressions by number (`Expr::Subquery(n)` is `init[n]` of the
/// plan holding it). A correlated one (PostgreSQL's SubPlan, `Expr::SubPlan`) is run for
/// each row it is evaluated on, with that row's values (`Expr::Outer` inside it).
#[derive(Debug)]
pub struct InitPlan {
    pub kind: SubqueryKind,
    /// A SELECT, or a set operation of them.
    pub query: SetTree,
    /// Whether it reads values of the query around it (run per row, not first).
    pub correlated: bool,
}

#[derive(Debug)]
pub struct SelectPlan {
    /// The largest result produced so far, in bytes: the next result buffer starts this
    /// big, so a point read does not regrow its buffer value by value.
    pub size_hint: std::sync::atomic::AtomicUsize,
    pub rels: Vec<RelPlan>,
    /// Predicates that read no relation, checked once.
    pub pre_filters: Vec<Expr>,
    pub output: Vec<Expr>,
    pub agg: Option<AggPlan>,
    pub order: Vec<SortKey>,
    /// The ORDER BY is its one relation's index order (`plan/access.rs::index_order`):
    /// `order` is empty, and the rows must come in the walk's order, so no evicted tuple
    /// the walk meets may be passed over or left for later.
    pub index_ordered: bool,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    pub distinct: bool,
    /// `DISTINCT ON`: of the rows equal in their first `distinct_on` sort keys, only the
    /// first in sort order is kept (0: none).
    pub distinct_on: usize,
    /// The window function calls of its select list and ORDER BY (`Expr::Window`),
    /// computed over its rows after aggregation, before DISTINCT, ORDER BY and LIMIT.
    pub windows: Vec<crate::expr::window::WindowCall>,
    /// With window calls and no aggregation: the columns (relation, column) each row keeps
    /// until they are computed.
    pub image: Vec<(usize, usize)>,
    /// The subqueries its expressions read, run first ([`InitPlan`]).
    pub init: Vec<Arc<InitPlan>>,
    /// The subqueries in FROM (views and CTEs included) among its relations: their rows,
    /// computed before the walk, are read in place of a table's.
    pub derived: Vec<DerivedRel>,
    /// `FOR UPDATE` / `FOR SHARE`: the relations whose rows a block's statement locks
    /// (docs/architecture/interactive.md, "Row locks").
    pub locks: Vec<RowLock>,
}

/// A locking clause on one relation of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLock {
    /// The relation (`RelPlan::rel`).
    pub rel: usize,
    /// FOR UPDATE (else FOR SHARE).
    pub exclusive: bool,
    /// NOWAIT: fail rather than wait.
    pub nowait: bool,
}

/// A subquery in FROM (or a view, or a CTE): relation `rel` of its query, whose schema
/// is [`derived_schema`]'s, reads its rows.
#[derive(Debug)]
pub struct DerivedRel {
    pub rel: usize,
    pub query: SetTree,
}

/// The table id of a subquery in FROM's relation: no table of the catalog.
pub const DERIVED_TABLE: permafrost_storage::TableId = permafrost_storage::TableId::MAX;

/// The schema of a subquery in FROM named `alias`, of result columns `columns`: no
/// index, no partitioning (its rows are wherever its subquery read them: the walk reads
/// them once, as a replicated table's).
pub fn derived_schema(alias: String, columns: &[ColumnInfo]) -> TableSchema {
    TableSchema {
        id: DERIVED_TABLE,
        name: alias,
        columns: columns
            .iter()
            .map(|c| permafrost_storage::Column::new(c.name.clone(), c.ty.unwrap_or(DataType::Varchar(None))))
            .collect(),
        indexes: Vec::new(),
        partition_column: None,
        partition_declared: false,
        evictable: false,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        comment: None,
    }
}

impl SelectPlan {
    /// A query of no relation and no column (what EXPLAIN's own plan is: its rows are made
    /// by `crate::explain`).
    pub fn reading_nothing() -> SelectPlan {
        SelectPlan {
            size_hint: std::sync::atomic::AtomicUsize::new(64),
            rels: Vec::new(),
            pre_filters: Vec::new(),
            output: Vec::new(),
            agg: None,
            order: Vec::new(),
            index_ordered: false,
            limit: None,
            offset: None,
            distinct: false,
            distinct_on: 0,
            windows: Vec::new(),
            image: Vec::new(),
            init: Vec::new(),
            derived: Vec::new(),
            locks: Vec::new(),
        }
    }

    /// Initial capacity for a result buffer.
    pub fn size_hint(&self) -> usize {
        self.size_hint.load(std::sync::atomic::Ordering::Relaxed).min(1 << 20)
    }

    /// Remembers a result size (written only when it grows, so partitions sharing the plan
    /// rarely write the same cache line).
    pub fn note_size(&self, bytes: usize) {
        if bytes > self.size_hint.load(std::sync::atomic::Ordering::Relaxed) {
            self.size_hint.store(bytes, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

#[derive(Debug)]
pub enum InsertSource {
    Values(Vec<Vec<Expr>>),
    Select(Box<SelectPlan>),
}

#[derive(Debug)]
pub struct InsertPlan {
    /// The target table's CHECK constraints, bound over its row (relation 0), with their names.
    pub checks: Vec<(String, Expr)>,
    /// Its foreign-key work (crate::foreign), if any.
    pub fk: Option<Arc<crate::foreign::FkPlan>>,
    pub schema: Arc<TableSchema>,
    /// For each table column, the position in the source rows, or `None` for the default.
    pub targets: Vec<Option<usize>>,
    pub source: InsertSource,
    pub returning: Vec<Expr>,
    /// `ON CONFLICT [target] DO NOTHING`: the rows it skips.
    pub skip_conflicts: Option<SkipConflicts>,
    /// `ON CONFLICT target DO UPDATE SET ... [WHERE ...]`: what a conflicting row becomes.
    pub update_conflicts: Option<ConflictUpdate>,
    /// The subqueries its VALUES and RETURNING read, run first ([`InitPlan`]).
    pub init: Vec<Arc<InitPlan>>,
}

/// Which rows `INSERT ... ON CONFLICT [target] DO NOTHING` skips: a row whose key one of
/// these unique indexes already holds (an earlier row of the same statement's included) is
/// not inserted, counted or returned; a conflict on another index is still an error (23505).
#[derive(Debug, Clone, PartialEq)]
pub struct SkipConflicts {
    /// The indexes by name, or every unique index of the table (`None`: no target given).
    pub indexes: Option<Vec<String>>,
}

impl SkipConflicts {
    /// Whether a conflict on index `name` is skipped.
    pub fn skips(&self, name: &str) -> bool {
        self.indexes.as_ref().is_none_or(|v| v.iter().any(|n| n == name))
    }
}

/// `INSERT ... ON CONFLICT target DO UPDATE SET ... [WHERE ...]`: a proposed row whose key
/// one of the `arbiters` (unique indexes, by position in the table's schema) already holds
/// is not inserted; the row holding it is updated instead, when `filter` holds. The
/// expressions read the existing row as relation 0 and the proposed row (`EXCLUDED`) as
/// `Expr::Outer(column)`.
#[derive(Debug, Clone)]
pub struct ConflictUpdate {
    pub arbiters: Vec<usize>,
    pub assignments: Vec<(usize, Expr)>,
    pub filter: Option<Expr>,
}

#[derive(Debug, Clone)]
pub struct UpdatePlan {
    /// The target table's CHECK constraints, bound over its row (relation 0), with their names.
    pub checks: Vec<(String, Expr)>,
    /// Its foreign-key work (crate::foreign), if any.
    pub fk: Option<Arc<crate::foreign::FkPlan>>,
    pub target: RelPlan,
    pub assignments: Vec<(usize, Expr)>,
    pub returning: Vec<Expr>,
    /// The subqueries its expressions read, run first ([`InitPlan`]).
    pub init: Vec<Arc<InitPlan>>,
}

#[derive(Debug, Clone)]
pub struct DeletePlan {
    /// Its foreign-key work (crate::foreign), if any.
    pub fk: Option<Arc<crate::foreign::FkPlan>>,
    pub target: RelPlan,
    pub returning: Vec<Expr>,
    /// The subqueries its expressions read, run first ([`InitPlan`]).
    pub init: Vec<Arc<InitPlan>>,
}

/// A set operation of queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

/// One side of a set operation.
#[derive(Debug)]
pub enum SetTree {
    Select {
        plan: Box<SelectPlan>,
        columns: Arc<[ColumnInfo]>,
    },
    /// A parenthesized query with its own ORDER BY or LIMIT.
    Compound(Box<CompoundPlan>),
    Op {
        op: SetOp,
        /// `ALL`: duplicates kept (UNION ALL) or counted (INTERSECT ALL, EXCEPT ALL).
        all: bool,
        left: Box<SetTree>,
        right: Box<SetTree>,
    },
    /// `VALUES (...), (...)`: rows of expressions that read no relation, their columns
    /// `column1`, `column2`, ... of the types the rows resolve to.
    Values {
        rows: Vec<Vec<Expr>>,
        columns: Arc<[ColumnInfo]>,
    },
    /// `WITH RECURSIVE name AS (base UNION [ALL] step)`: the rows of `base`, then of
    /// `step` run again and again over the rows the last run added (its `Working(slot)`),
    /// until a run adds none; UNION (not ALL) adds only rows not seen before.
    Recursive {
        base: Box<SetTree>,
        step: Box<SetTree>,
        all: bool,
        slot: usize,
        columns: Arc<[ColumnInfo]>,
    },
    /// Inside a recursive step: the rows its last run added (`Cx::working`).
    Working { slot: usize, columns: Arc<[ColumnInfo]> },
    /// `generate_series(start, stop [, step])` in FROM: the integers or numerics from
    /// `start` to `stop` by `step` (1 by default), in one column.
    Series {
        start: Expr,
        stop: Expr,
        step: Option<Expr>,
        /// `WITH ORDINALITY`: a second column numbering the rows from 1.
        ordinality: bool,
        columns: Arc<[ColumnInfo]>,
    },
    /// `unnest(a [, b, ...])` in FROM: one column per array, row i holding each array's
    /// i-th element (NULL past an array's end), as many rows as the longest array has
    /// elements. Each array is the text of its literal (crate::array); its elements are
    /// read as their column's type.
    Unnest {
        arrays: Vec<Expr>,
        /// `WITH ORDINALITY`: a last column numbering the rows from 1.
        ordinality: bool,
        columns: Arc<[ColumnInfo]>,
    },
}

/// A query combining queries with UNION, INTERSECT and EXCEPT (`[ALL]`): its rows are the
/// sides' rows, each cast to the column types the sides resolve to (`columns`), then
/// ordered by result columns and cut by LIMIT and OFFSET.
#[derive(Debug)]
pub struct CompoundPlan {
    pub tree: SetTree,
    pub columns: Arc<[ColumnInfo]>,
    /// Result column, descending, NULLs first.
    pub order: Vec<(usize, bool, bool)>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
}

impl SetTree {
    /// Calls `f` with each SELECT of the tree, nested ones included.
    pub fn for_each_select<'p>(&'p self, f: &mut impl FnMut(&'p SelectPlan)) {
        match self {
            SetTree::Select { plan, .. } => f(plan),
            SetTree::Compound(c) => c.tree.for_each_select(f),
            SetTree::Op { left, right, .. } => {
                left.for_each_select(f);
                right.for_each_select(f);
            }
            SetTree::Recursive { base, step, .. } => {
                base.for_each_select(f);
                step.for_each_select(f);
            }
            SetTree::Values { .. } | SetTree::Series { .. } | SetTree::Unnest { .. } | SetTree::Working { .. } => {}
        }
    }
}

#[derive(Debug)]
pub enum Plan {
    Select(SelectPlan),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
    Compound(CompoundPlan),
}

impl Plan {
    /// The subqueries the statement reads at its top level ([`InitPlan`]; an INSERT's
    /// SELECT holds its own).
    pub fn init(&self) -> &[Arc<InitPlan>] {
        match self {
            Plan::Select(p) => &p.init,
            Plan::Insert(p) => &p.init,
            Plan::Update(p) => &p.init,
            Plan::Delete(p) => &p.init,
            Plan::Compound(_) => &[],
        }
    }
}

/// The result of planning one statement.
pub struct Planned {
    pub plan: Plan,
    pub params: Vec<Option<DataType>>,
    /// The parameters that are arrays, with their elements' type (`Binder::array_params`).
    pub array_params: Vec<(usize, Option<DataType>)>,
    pub columns: Vec<ColumnInfo>,
}

// ---------------------------------------------------------------------------------------
// SELECT
