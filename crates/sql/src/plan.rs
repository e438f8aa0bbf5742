//! Planning: bound statements to executable plans.
//!
//! OLTP statements touch few rows, so plans are nested loops over the FROM relations where
//! each relation is reached through the best access path its predicates allow:
//!
//! 1. an equality lookup on every column of an index (a unique one is best);
//! 2. an ordered index with equalities on a prefix of its columns and optionally a range
//!    on the next column;
//! 3. a scan of the relation.
//!
//! Columns of relations earlier in the join order count as known, so a join predicate like
//! `s_i_id = ol_i_id` becomes an index lookup on the inner relation. All join orders of up
//! to five relations are costed with a simple model (lookups cost little and return few
//! rows, ranges return more, scans the most) and the cheapest is kept.

use std::sync::Arc;

use permafrost_storage::{DataType, IndexKind, TableSchema, Value};
use sqlparser::ast::{self, GroupByExpr, JoinConstraint, JoinOperator, SelectItem, SetExpr, TableFactor};

pub use crate::bind::MAX_RELS;
use crate::bind::{AggCall, Binder, Typed, ident};
use crate::catalog::Catalog;
use crate::error::{Result, SqlError, unsupported};
use crate::expr::{CmpOp, Expr, Func};
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

#[derive(Debug, Clone)]
pub struct RelPlan {
    pub rel: usize,
    pub schema: Arc<TableSchema>,
    pub access: Access,
    /// Predicates checked once this relation (and all earlier ones) is bound.
    pub filters: Vec<Expr>,
    /// How many of `filters`, at their start, are the predicates an `IndexRange`
    /// access's bounds came from: a range the executor builds exactly (integer keys,
    /// every bound converted) guarantees them, so they are not checked again.
    pub bounds: usize,
    pub pick: PartitionPick,
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
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    pub distinct: bool,
}

impl SelectPlan {
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
    pub schema: Arc<TableSchema>,
    /// For each table column, the position in the source rows, or `None` for the default.
    pub targets: Vec<Option<usize>>,
    pub source: InsertSource,
    pub returning: Vec<Expr>,
}

#[derive(Debug, Clone)]
pub struct UpdatePlan {
    pub target: RelPlan,
    pub assignments: Vec<(usize, Expr)>,
    pub returning: Vec<Expr>,
}

#[derive(Debug, Clone)]
pub struct DeletePlan {
    pub target: RelPlan,
    pub returning: Vec<Expr>,
}

#[derive(Debug)]
pub enum Plan {
    Select(SelectPlan),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
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

pub fn plan_query(catalog: &Catalog, q: &ast::Query) -> Result<Planned> {
    let mut b = Binder::new(catalog);
    let (plan, columns) = select(&mut b, q)?;
    Ok(Planned {
        plan: Plan::Select(plan),
        params: b.params,
        array_params: b.array_params,
        columns,
    })
}

/// Plans a query: its clauses are bound in the order of their steps below (FROM and WHERE,
/// GROUP BY, the select list, HAVING, ORDER BY), then aggregation, DISTINCT, LIMIT and the
/// join order are planned.
fn select(b: &mut Binder<'_>, q: &ast::Query) -> Result<(SelectPlan, Vec<ColumnInfo>)> {
    let s = plain_select(q)?;
    let conjuncts = from_and_where(b, s)?;
    let groups = group_by(b, &s.group_by)?;
    // The select list, HAVING and ORDER BY may hold aggregates; they are collected.
    b.aggs = Some(Vec::new());
    let (mut output, columns) = projection(b, &s.projection)?;
    let having = match &s.having {
        Some(h) => Some(b.expr(h)?.0),
        None => None,
    };
    let mut order = order_by(b, q, &output, &columns)?;
    let aggs = b.aggs.take().unwrap_or_default();
    let distinct = match &s.distinct {
        None => false,
        Some(ast::Distinct::Distinct) => true,
        Some(_) => return unsupported("DISTINCT ON"),
    };
    let agg = aggregation(groups, aggs, having, &mut output, &mut order)?;
    if distinct {
        for k in &order {
            if !output.contains(&k.expr) {
                return Err(SqlError::Grouping(
                    "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
                ));
            }
        }
    }
    let (limit, offset) = limit_offset(b, q)?;
    let (rels, pre_filters) = plan_joins(b, conjuncts)?;
    let size_hint = std::sync::atomic::AtomicUsize::new(64);
    Ok((
        SelectPlan {
            size_hint,
            rels,
            pre_filters,
            output,
            agg,
            order,
            limit,
            offset,
            distinct,
        },
        columns,
    ))
}

/// The SELECT of a query, when the query is one plain SELECT (no WITH, set operation,
/// FETCH, locking clause or dialect-specific SELECT form).
fn plain_select(q: &ast::Query) -> Result<&ast::Select> {
    if q.with.is_some() {
        return unsupported("WITH");
    }
    if q.fetch.is_some() || !q.locks.is_empty() {
        return unsupported("FETCH / FOR UPDATE");
    }
    let s = match q.body.as_ref() {
        SetExpr::Select(s) => s,
        SetExpr::Values(_) => return unsupported("VALUES as a query"),
        _ => return unsupported("UNION / INTERSECT / EXCEPT"),
    };
    if s.top.is_some() || !s.lateral_views.is_empty() || s.prewhere.is_some() || s.qualify.is_some() || s.into.is_some()
    {
        return unsupported("this SELECT form");
    }
    Ok(s)
}

/// Adds the FROM relations (inner and cross joins only) to the binder's scope and returns
/// the conjuncts of the join conditions and the WHERE clause.
fn from_and_where(b: &mut Binder<'_>, s: &ast::Select) -> Result<Vec<Expr>> {
    let mut conjuncts = Vec::new();
    let mut on_clauses = Vec::new();
    for twj in &s.from {
        add_factor(b, &twj.relation)?;
        for j in &twj.joins {
            add_factor(b, &j.relation)?;
            match &j.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) => match c {
                    JoinConstraint::On(e) => on_clauses.push(e.clone()),
                    JoinConstraint::None => {}
                    _ => return unsupported("JOIN ... USING / NATURAL"),
                },
                JoinOperator::CrossJoin(JoinConstraint::None) => {}
                _ => return unsupported("outer and other non-inner joins"),
            }
        }
    }
    for e in &on_clauses {
        b.expr(e)?.0.conjuncts(&mut conjuncts);
    }
    if let Some(w) = &s.selection {
        let (e, _) = b.expr(w)?;
        e.conjuncts(&mut conjuncts);
    }
    Ok(conjuncts)
}

/// Binds the GROUP BY expressions (plain lists only).
fn group_by(b: &mut Binder<'_>, group_by: &GroupByExpr) -> Result<Vec<Expr>> {
    let mut groups = Vec::new();
    match group_by {
        GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => {
            for e in exprs {
                groups.push(group_expr(b, e)?);
            }
        }
        GroupByExpr::Expressions(..) | GroupByExpr::All(_) => {
            return unsupported("GROUP BY ALL / ROLLUP / CUBE");
        }
    }
    Ok(groups)
}

/// Binds the select list: the output expressions and their result columns, with `*` and
/// `t.*` expanded to the relations' columns.
fn projection(b: &mut Binder<'_>, items: &[SelectItem]) -> Result<(Vec<Expr>, Vec<ColumnInfo>)> {
    let mut output: Vec<Expr> = Vec::new();
    let mut columns: Vec<ColumnInfo> = Vec::new();
    for item in items {
        match item {
            SelectItem::UnnamedExpr(e) => {
                let (x, t) = b.expr(e)?;
                columns.push(ColumnInfo {
                    name: column_name(e),
                    ty: t,
                });
                output.push(x);
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let (x, t) = b.expr(expr)?;
                columns.push(ColumnInfo {
                    name: ident(alias),
                    ty: t,
                });
                output.push(x);
            }
            SelectItem::Wildcard(_) => {
                if b.rels.is_empty() {
                    return Err(SqlError::Syntax(
                        "SELECT * with no tables specified is not valid".into(),
                    ));
                }
                for ri in 0..b.rels.len() {
                    all_columns(b, ri, &mut output, &mut columns);
                }
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let name = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => crate::bind::object_name(n)?,
                    _ => return unsupported("this wildcard form"),
                };
                let ri = b
                    .rels
                    .iter()
                    .position(|r| r.alias == name)
                    .ok_or(SqlError::UnknownTable(name))?;
                all_columns(b, ri, &mut output, &mut columns);
            }
            _ => return unsupported("this select item"),
        }
    }
    Ok((output, columns))
}

/// Appends every column of relation `ri` to the output, as `rel.*` selects them.
fn all_columns(b: &Binder<'_>, ri: usize, output: &mut Vec<Expr>, columns: &mut Vec<ColumnInfo>) {
    for (ci, c) in b.rels[ri].schema.columns.iter().enumerate() {
        output.push(Expr::Column { rel: ri, col: ci });
        columns.push(ColumnInfo {
            name: c.name.clone(),
            ty: Some(c.ty),
        });
    }
}

/// Binds the ORDER BY keys: output names and positions first, then expressions.
fn order_by(b: &mut Binder<'_>, q: &ast::Query, output: &[Expr], columns: &[ColumnInfo]) -> Result<Vec<SortKey>> {
    let mut order = Vec::new();
    if let Some(ob) = &q.order_by {
        let ast::OrderByKind::Expressions(items) = &ob.kind else {
            return unsupported("ORDER BY ALL");
        };
        for item in items {
            let expr = order_expr(b, &item.expr, output, columns)?;
            let desc = match item.options.sort {
                None | Some(ast::OrderBySort::Asc) => false,
                Some(ast::OrderBySort::Desc) => true,
                Some(_) => return unsupported("ORDER BY ... USING"),
            };
            // PostgreSQL: NULLS LAST for ascending, NULLS FIRST for descending, by default.
            let nulls_first = item.options.nulls_first.unwrap_or(desc);
            order.push(SortKey {
                expr,
                desc,
                nulls_first,
            });
        }
    }
    Ok(order)
}

/// The aggregation of a query with aggregates or GROUP BY (`None` without either, where
/// HAVING is refused). The output and ORDER BY expressions are rewritten to read the
/// groups and aggregate results.
fn aggregation(
    groups: Vec<Expr>,
    aggs: Vec<AggCall>,
    having: Option<Expr>,
    output: &mut [Expr],
    order: &mut [SortKey],
) -> Result<Option<AggPlan>> {
    if aggs.is_empty() && groups.is_empty() {
        if having.is_some() {
            return Err(SqlError::Grouping("HAVING needs GROUP BY or an aggregate".into()));
        }
        return Ok(None);
    }
    for e in output.iter_mut().chain(order.iter_mut().map(|k| &mut k.expr)) {
        *e = to_post_agg(e, &groups)?;
    }
    let having = having.map(|h| to_post_agg(&h, &groups)).transpose()?;
    Ok(Some(AggPlan { groups, aggs, having }))
}

fn add_factor(b: &mut Binder<'_>, f: &TableFactor) -> Result<usize> {
    match f {
        TableFactor::Table {
            name,
            alias,
            args: None,
            with_hints,
            version: None,
            partitions,
            ..
        } if with_hints.is_empty() && partitions.is_empty() => {
            if alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
                return unsupported("column aliases in FROM");
            }
            let schema = b.table(name)?;
            b.add_rel(schema, alias.as_ref().map(|a| &a.name))
        }
        TableFactor::Derived { .. } => unsupported("subqueries in FROM"),
        _ => unsupported("this FROM item"),
    }
}

fn group_expr(b: &mut Binder<'_>, e: &ast::Expr) -> Result<Expr> {
    let saved = b.aggs.take();
    let r = b.expr(e).map(|t| t.0);
    b.aggs = saved;
    r
}

fn order_expr(b: &mut Binder<'_>, e: &ast::Expr, output: &[Expr], columns: &[ColumnInfo]) -> Result<Expr> {
    if let ast::Expr::Value(v) = e
        && let ast::Value::Number(n, _) = &v.value
    {
        let pos: usize = n
            .parse()
            .map_err(|_| SqlError::Syntax(format!("bad ORDER BY position {n}")))?;
        return output
            .get(pos.wrapping_sub(1))
            .cloned()
            .ok_or_else(|| SqlError::Syntax(format!("ORDER BY position {pos} is not in select list")));
    }
    if let ast::Expr::Identifier(i) = e {
        let name = ident(i);
        let hits: Vec<usize> = columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.name == name)
            .map(|(i, _)| i)
            .collect();
        if let [one] = hits.as_slice() {
            return Ok(output[*one].clone());
        }
    }
    Ok(b.expr(e)?.0)
}

/// The name PostgreSQL gives an unaliased output column.
fn column_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => ident(i),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(f) => crate::bind::object_name(&f.name).unwrap_or_else(|_| "?column?".into()),
        ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => column_name(expr),
        ast::Expr::Substring { .. } => "substring".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Trim { .. } => "btrim".into(),
        ast::Expr::Case { .. } => "case".into(),
        _ => "?column?".into(),
    }
}

/// Rewrites an expression of an aggregate query to read group keys and aggregate results.
fn to_post_agg(e: &Expr, groups: &[Expr]) -> Result<Expr> {
    if let Some(i) = groups.iter().position(|g| g == e) {
        return Ok(Expr::Group(i));
    }
    let r = |x: &Expr| to_post_agg(x, groups);
    let rb = |x: &Expr| to_post_agg(x, groups).map(Box::new);
    Ok(match e {
        Expr::Column { .. } => {
            return Err(SqlError::Grouping(
                "column must appear in the GROUP BY clause or be used in an aggregate function".into(),
            ));
        }
        Expr::Param(_) | Expr::Const(_) | Expr::Now | Expr::Agg(_) | Expr::Group(_) => e.clone(),
        Expr::Not(x) => Expr::Not(rb(x)?),
        Expr::Neg(x) => Expr::Neg(rb(x)?),
        Expr::Cast(x, t) => Expr::Cast(rb(x)?, *t),
        Expr::And(a, b) => Expr::And(rb(a)?, rb(b)?),
        Expr::Or(a, b) => Expr::Or(rb(a)?, rb(b)?),
        Expr::Cmp(op, a, b) => Expr::Cmp(*op, rb(a)?, rb(b)?),
        Expr::Arith(op, a, b) => Expr::Arith(*op, rb(a)?, rb(b)?),
        Expr::Concat(a, b) => Expr::Concat(rb(a)?, rb(b)?),
        Expr::IsNull { expr, negated } => Expr::IsNull {
            expr: rb(expr)?,
            negated: *negated,
        },
        Expr::IsDistinct { left, right, negated } => Expr::IsDistinct {
            left: rb(left)?,
            right: rb(right)?,
            negated: *negated,
        },
        Expr::InList { expr, list, negated } => Expr::InList {
            expr: rb(expr)?,
            list: list.iter().map(r).collect::<Result<_>>()?,
            negated: *negated,
        },
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => Expr::Like {
            expr: rb(expr)?,
            pattern: rb(pattern)?,
            negated: *negated,
            case_insensitive: *case_insensitive,
        },
        Expr::Case {
            operand,
            whens,
            otherwise,
        } => Expr::Case {
            operand: operand.as_deref().map(rb).transpose()?,
            whens: whens.iter().map(|(w, t)| Ok((r(w)?, r(t)?))).collect::<Result<_>>()?,
            otherwise: otherwise.as_deref().map(rb).transpose()?,
        },
        Expr::Func(f, args) => Expr::Func(*f, args.iter().map(r).collect::<Result<_>>()?),
    })
}

fn limit_offset(b: &mut Binder<'_>, q: &ast::Query) -> Result<(Option<Expr>, Option<Expr>)> {
    let mut bind = |e: &ast::Expr| -> Result<Expr> {
        let saved = b.aggs.take();
        let r = b.expr(e);
        b.aggs = saved;
        let (x, _) = r?;
        if !x.is_row_independent() {
            return Err(SqlError::Syntax(
                "LIMIT and OFFSET must be constants or parameters".into(),
            ));
        }
        b.infer(&x, Some(DataType::BigInt));
        Ok(x)
    };
    Ok(match &q.limit_clause {
        None => (None, None),
        Some(ast::LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return unsupported("LIMIT BY");
            }
            (
                limit.as_ref().map(&mut bind).transpose()?,
                offset.as_ref().map(|o| bind(&o.value)).transpose()?,
            )
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(bind(limit)?), Some(bind(offset)?)),
    })
}

// ---------------------------------------------------------------------------------------
// Access paths and join order

/// A predicate usable to reach relation `rel`: `col op value`, `value` computable before.
struct Sarg {
    col: usize,
    op: CmpOp,
    value: Expr,
}

fn sargs(rel: usize, conjuncts: &[Expr], known: u64) -> Vec<Sarg> {
    let mut out = Vec::new();
    for c in conjuncts {
        if let Expr::Cmp(op, a, b) = c {
            if *op == CmpOp::NotEq {
                continue;
            }
            let usable = |v: &Expr| v.rels() & !known == 0 && v.rels() & (1 << rel) == 0;
            match (a.as_ref(), b.as_ref()) {
                (Expr::Column { rel: r, col }, v) if *r == rel && usable(v) => out.push(Sarg {
                    col: *col,
                    op: *op,
                    value: v.clone(),
                }),
                (v, Expr::Column { rel: r, col }) if *r == rel && usable(v) => out.push(Sarg {
                    col: *col,
                    op: op.flip(),
                    value: v.clone(),
                }),
                _ => {}
            }
        }
    }
    out
}

/// The `col = ANY(array)` predicates usable to reach relation `rel`: the column and the
/// array, computable before.
fn any_sargs(rel: usize, conjuncts: &[Expr], known: u64) -> Vec<(usize, Expr)> {
    conjuncts
        .iter()
        .filter_map(|c| match c {
            Expr::Func(Func::AnyEq { negated: false, .. }, args) => match args.as_slice() {
                [Expr::Column { rel: r, col }, v]
                    if *r == rel && v.rels() & !known == 0 && v.rels() & (1 << rel) == 0 =>
                {
                    Some((*col, v.clone()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The best access path for `schema` given the usable predicates (`anys`: `col =
/// ANY(array)`), with its cost and the number of rows it is expected to produce.
fn choose_access(schema: &TableSchema, sargs: &[Sarg], anys: &[(usize, Expr)]) -> (Access, f64, f64) {
    let eq = |col: usize| {
        sargs
            .iter()
            .find(|s| s.col == col && s.op == CmpOp::Eq)
            .map(|s| s.value.clone())
    };
    let mut best = (Access::Scan, 1000.0, 1000.0);
    for (i, ix) in schema.indexes.iter().enumerate() {
        let prefix: Vec<Expr> = ix.columns.iter().map_while(|&c| eq(c)).collect();
        let (cost, rows, access) = if prefix.len() == ix.columns.len() {
            let (cost, rows) = if ix.unique { (1.0, 1.0) } else { (4.0, 10.0) };
            let cost = if ix.kind == IndexKind::Ordered {
                cost * 1.2
            } else {
                cost
            };
            (cost, rows, Access::IndexEq { index: i, keys: prefix })
        } else if ix.kind == IndexKind::Ordered {
            let next = ix.columns[prefix.len()];
            let bound = |ops: [CmpOp; 2]| {
                sargs
                    .iter()
                    .find(|s| s.col == next && ops.contains(&s.op))
                    .map(|s| (s.value.clone(), s.op == ops[1]))
            };
            let lower = bound([CmpOp::Gt, CmpOp::GtEq]);
            let upper = bound([CmpOp::Lt, CmpOp::LtEq]);
            if prefix.is_empty() && lower.is_none() && upper.is_none() {
                continue;
            }
            let ranged = lower.is_some() as u8 + upper.is_some() as u8;
            let cost = 20.0 - 2.0 * prefix.len() as f64 - ranged as f64;
            let rows = 100.0 / (1.0 + prefix.len() as f64 + ranged as f64);
            (
                cost,
                rows,
                Access::IndexRange {
                    index: i,
                    prefix,
                    lower,
                    upper,
                },
            )
        } else {
            continue;
        };
        if cost < best.1 {
            best = (access, cost, rows);
        }
    }
    for (i, ix) in schema.indexes.iter().enumerate() {
        let [col] = ix.columns.as_slice() else { continue };
        let Some((_, array)) = anys.iter().find(|(c, _)| c == col) else {
            continue;
        };
        let (cost, rows) = if ix.unique { (3.0, 10.0) } else { (12.0, 40.0) };
        if cost < best.1 {
            best = (
                Access::IndexAny {
                    index: i,
                    array: array.clone(),
                },
                cost,
                rows,
            );
        }
    }
    best
}

fn plan_joins(b: &Binder<'_>, conjuncts: Vec<Expr>) -> Result<(Vec<RelPlan>, Vec<Expr>)> {
    let n = b.rels.len();
    let pre_filters: Vec<Expr> = conjuncts.iter().filter(|c| c.rels() == 0).cloned().collect();
    let conjuncts: Vec<Expr> = conjuncts.into_iter().filter(|c| c.rels() != 0).collect();
    if n == 0 {
        return Ok((vec![], pre_filters));
    }
    let orders: Vec<Vec<usize>> = if n <= 5 {
        permutations(n)
    } else {
        vec![(0..n).collect()]
    };
    let mut best: Option<(f64, Vec<usize>)> = None;
    for order in orders {
        let mut known = 0u64;
        let mut cost = 0.0;
        let mut fanout = 1.0;
        for &r in &order {
            let (_, c, rows) = choose_access(
                &b.rels[r].schema,
                &sargs(r, &conjuncts, known),
                &any_sargs(r, &conjuncts, known),
            );
            cost += c * fanout;
            fanout *= rows;
            known |= 1 << r;
        }
        if best.as_ref().is_none_or(|(bc, _)| cost < *bc) {
            best = Some((cost, order));
        }
    }
    let order = best.expect("at least one order").1;
    let mut known = 0u64;
    let mut rels = Vec::with_capacity(n);
    for &r in &order {
        let schema = b.rels[r].schema.clone();
        let sg = sargs(r, &conjuncts, known);
        let (access, _, _) = choose_access(&schema, &sg, &any_sargs(r, &conjuncts, known));
        known |= 1 << r;
        let implied = implied_by(&access, &schema, r);
        let mut filters: Vec<Expr> = conjuncts
            .iter()
            .filter(|c| c.rels() & !known == 0 && c.rels() & (1 << r) != 0 && !implied.contains(c))
            .cloned()
            .collect();
        // The range's bounds first (`RelPlan::bounds`).
        let is_bound = |c: &Expr| range_bound_of(&access, &schema, r, known, c);
        filters.sort_by_key(|c| !is_bound(c));
        let bounds = filters.iter().take_while(|c| is_bound(c)).count();
        let pick = partition_pick(&schema, &sg);
        rels.push(RelPlan {
            rel: r,
            schema,
            access,
            filters,
            bounds,
            pick,
        });
    }
    Ok((rels, pre_filters))
}

/// Whether conjunct `c` is one an `IndexRange` access of relation `rel` took a bound
/// from: a comparison of the range's column with that bound's value, the right way.
fn range_bound_of(access: &Access, schema: &TableSchema, rel: usize, known: u64, c: &Expr) -> bool {
    let Access::IndexRange {
        index,
        prefix,
        lower,
        upper,
    } = access
    else {
        return false;
    };
    let next = schema.indexes[*index].columns[prefix.len()];
    sargs(rel, std::slice::from_ref(c), known).iter().any(|s| {
        let from = |b: &Option<(Expr, bool)>, ops: [CmpOp; 2]| {
            b.as_ref()
                .is_some_and(|(v, incl)| *v == s.value && s.op == ops[usize::from(*incl)])
        };
        s.col == next && (from(lower, [CmpOp::Gt, CmpOp::GtEq]) || from(upper, [CmpOp::Lt, CmpOp::LtEq]))
    })
}

/// The equality predicates an exact-key index lookup already guarantees for every tuple it
/// returns (the lookup converts the value exactly to the column type or returns nothing;
/// `col = ANY(array)` reads each element as the column's type, as its lookups do).
fn implied_by(access: &Access, schema: &TableSchema, rel: usize) -> Vec<Expr> {
    if let Access::IndexAny { index, array } = access {
        let col = schema.indexes[*index].columns[0];
        let elem = Some(schema.columns[col].ty);
        return vec![Expr::Func(
            Func::AnyEq { elem, negated: false },
            vec![Expr::Column { rel, col }, array.clone()],
        )];
    }
    let Access::IndexEq { index, keys } = access else {
        return vec![];
    };
    schema.indexes[*index]
        .columns
        .iter()
        .zip(keys)
        .flat_map(|(&col, k)| {
            let c = Expr::Column { rel, col };
            [
                Expr::Cmp(CmpOp::Eq, c.clone().boxed(), k.clone().boxed()),
                Expr::Cmp(CmpOp::Eq, k.clone().boxed(), c.boxed()),
            ]
        })
        .collect()
}

fn partition_pick(schema: &TableSchema, sargs: &[Sarg]) -> PartitionPick {
    match schema.partition_column {
        None => PartitionPick::Replicated,
        Some(pc) => match sargs.iter().find(|s| s.col == pc && s.op == CmpOp::Eq) {
            Some(s) => PartitionPick::Key(s.value.clone()),
            None => PartitionPick::All,
        },
    }
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    fn go(cur: &mut Vec<usize>, used: &mut [bool], out: &mut Vec<Vec<usize>>) {
        if cur.len() == used.len() {
            out.push(cur.clone());
            return;
        }
        for i in 0..used.len() {
            if !used[i] {
                used[i] = true;
                cur.push(i);
                go(cur, used, out);
                cur.pop();
                used[i] = false;
            }
        }
    }
    let mut out = Vec::new();
    go(&mut Vec::new(), &mut vec![false; n], &mut out);
    out
}

// ---------------------------------------------------------------------------------------
// INSERT, UPDATE, DELETE

fn returning(b: &mut Binder<'_>, items: &Option<Vec<SelectItem>>) -> Result<(Vec<Expr>, Vec<ColumnInfo>)> {
    let mut out = Vec::new();
    let mut cols = Vec::new();
    for item in items.iter().flatten() {
        match item {
            SelectItem::UnnamedExpr(e) => {
                let (x, t) = b.expr(e)?;
                out.push(x);
                cols.push(ColumnInfo {
                    name: column_name(e),
                    ty: t,
                });
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let (x, t) = b.expr(expr)?;
                out.push(x);
                cols.push(ColumnInfo {
                    name: ident(alias),
                    ty: t,
                });
            }
            SelectItem::Wildcard(_) => {
                for (ci, c) in b.rels[0].schema.columns.iter().enumerate() {
                    out.push(Expr::Column { rel: 0, col: ci });
                    cols.push(ColumnInfo {
                        name: c.name.clone(),
                        ty: Some(c.ty),
                    });
                }
            }
            _ => return unsupported("this RETURNING item"),
        }
    }
    Ok((out, cols))
}

/// `SELECT e1, e2 ... FROM (VALUES (...), ...) AS a(c1, c2 ...) [ORDER BY ck]` as the
/// VALUES list it stands for: each row with the `ei` computed over it, in the order asked
/// (rows sorted by a numbered column). SQLAlchemy sends its multi-row INSERT ... RETURNING
/// so, to match the returned keys with its objects by that order. `None` for any other
/// query (or one whose expressions read anything but the list's columns).
fn inline_values_select(q: &ast::Query) -> Option<ast::Query> {
    use sqlparser::ast::{Expr, VisitMut, VisitorMut};
    use std::ops::ControlFlow;
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    if q.limit_clause.is_some()
        || q.with.is_some()
        || s.selection.is_some()
        || s.having.is_some()
        || s.distinct.is_some()
        || s.from.len() != 1
        || !s.from[0].joins.is_empty()
        || !matches!(&s.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
    {
        return None;
    }
    let TableFactor::Derived {
        lateral: false,
        subquery,
        alias: Some(alias),
        ..
    } = &s.from[0].relation
    else {
        return None;
    };
    let SetExpr::Values(values) = subquery.body.as_ref() else {
        return None;
    };
    let names: Vec<String> = alias
        .columns
        .iter()
        .map(|c| c.name.value.to_ascii_lowercase())
        .collect();
    if names.is_empty() || values.rows.iter().any(|r| r.content.len() != names.len()) {
        return None;
    }
    // The rows in the order asked: by a column of the list whose values are numbers.
    let mut rows: Vec<&Vec<Expr>> = values.rows.iter().map(|r| &r.content).collect();
    if let Some(order) = &q.order_by {
        let ast::OrderByKind::Expressions(keys) = &order.kind else {
            return None;
        };
        let [key] = keys.as_slice() else { return None };
        if !matches!(key.options.sort, None | Some(ast::OrderBySort::Asc)) || key.options.nulls_first.is_some() {
            return None;
        }
        let Expr::Identifier(col) = &key.expr else { return None };
        let k = names.iter().position(|n| n.eq_ignore_ascii_case(&col.value))?;
        let mut numbered = Vec::with_capacity(rows.len());
        for r in rows {
            let Expr::Value(v) = &r[k] else { return None };
            let ast::Value::Number(n, _) = &v.value else {
                return None;
            };
            numbered.push((n.parse::<i64>().ok()?, r));
        }
        numbered.sort_by_key(|(n, _)| *n);
        rows = numbered.into_iter().map(|(_, r)| r).collect();
    }
    struct Substitute<'a> {
        alias: String,
        names: &'a [String],
        row: &'a [Expr],
        foreign: bool,
    }
    impl VisitorMut for Substitute<'_> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let col = match e {
                Expr::Identifier(i) => Some(i.value.to_ascii_lowercase()),
                Expr::CompoundIdentifier(p) if p.len() == 2 && p[0].value.eq_ignore_ascii_case(&self.alias) => {
                    Some(p[1].value.to_ascii_lowercase())
                }
                Expr::CompoundIdentifier(_) => {
                    self.foreign = true;
                    None
                }
                _ => None,
            };
            if let Some(c) = col {
                match self.names.iter().position(|n| *n == c) {
                    Some(k) => *e = Expr::Nested(Box::new(self.row[k].clone())),
                    None => self.foreign = true,
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut out_rows = Vec::with_capacity(rows.len());
    for r in rows {
        let mut sub = Substitute {
            alias: alias.name.value.clone(),
            names: &names,
            row: r,
            foreign: false,
        };
        let mut row = Vec::with_capacity(s.projection.len());
        for item in &s.projection {
            let mut e = match item {
                ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
                _ => return None,
            };
            let _ = e.visit(&mut sub);
            row.push(e);
        }
        if sub.foreign {
            return None;
        }
        out_rows.push(ast::Parens::with_empty_span(row));
    }
    let mut out = q.clone();
    out.order_by = None;
    out.body = Box::new(SetExpr::Values(ast::Values {
        explicit_row: values.explicit_row,
        value_keyword: values.value_keyword,
        rows: out_rows,
    }));
    Some(out)
}

pub fn plan_insert(catalog: &Catalog, ins: &ast::Insert) -> Result<Planned> {
    if ins.or.is_some() || ins.ignore || ins.on.is_some() || ins.replace_into || ins.partitioned.is_some() {
        return unsupported("INSERT ... ON CONFLICT / OR REPLACE / IGNORE");
    }
    if !ins.assignments.is_empty() {
        return unsupported("INSERT ... SET");
    }
    let mut b = Binder::new(catalog);
    let name = match &ins.table {
        ast::TableObject::TableName(n) => n.clone(),
        _ => return unsupported("INSERT into a table function"),
    };
    let schema = b.table(&name)?;
    // Column list: all columns in order by default.
    let named: Vec<usize> = if ins.columns.is_empty() {
        (0..schema.columns.len()).collect()
    } else {
        let mut v = Vec::new();
        for c in &ins.columns {
            let n = crate::bind::object_name(c)?;
            let i = schema
                .column_index_exact(&n)
                .ok_or_else(|| SqlError::UnknownColumn(n.clone()))?;
            if v.contains(&i) {
                return Err(SqlError::Syntax(format!("column \"{n}\" specified more than once")));
            }
            v.push(i);
        }
        v
    };
    let mut targets = vec![None; schema.columns.len()];
    for (pos, &c) in named.iter().enumerate() {
        targets[c] = Some(pos);
    }
    let inlined = match ins.source.as_deref() {
        Some(q) => inline_values_select(q),
        None => None,
    };
    let source = match inlined.as_ref().or(ins.source.as_deref()) {
        None => return unsupported("INSERT ... DEFAULT VALUES"),
        Some(q) => match q.body.as_ref() {
            SetExpr::Values(values) if q.order_by.is_none() && q.limit_clause.is_none() => {
                let mut rows = Vec::with_capacity(values.rows.len());
                for row in &values.rows {
                    if row.len() > named.len() {
                        return Err(SqlError::Syntax(
                            "INSERT has more expressions than target columns".into(),
                        ));
                    }
                    if row.len() < named.len() {
                        return Err(SqlError::Syntax(
                            "INSERT has more target columns than expressions".into(),
                        ));
                    }
                    let mut out = Vec::with_capacity(row.len());
                    for (pos, e) in row.iter().enumerate() {
                        let (x, _) = b.expr(e)?;
                        b.infer(&x, Some(schema.columns[named[pos]].ty));
                        out.push(x);
                    }
                    rows.push(out);
                }
                InsertSource::Values(rows)
            }
            _ => {
                let (plan, cols) = select(&mut b, q)?;
                if cols.len() != named.len() {
                    return Err(SqlError::Syntax(
                        "INSERT's SELECT returns a different number of columns".into(),
                    ));
                }
                b.rels.clear();
                InsertSource::Select(Box::new(plan))
            }
        },
    };
    b.rels.clear();
    b.add_rel(schema.clone(), None)?;
    let (ret, columns) = returning(&mut b, &ins.returning)?;
    Ok(Planned {
        plan: Plan::Insert(InsertPlan {
            schema,
            targets,
            source,
            returning: ret,
        }),
        params: b.params,
        array_params: b.array_params,
        columns,
    })
}

fn single_target(b: &mut Binder<'_>, t: &ast::TableWithJoins) -> Result<()> {
    if !t.joins.is_empty() {
        return unsupported("UPDATE/DELETE with joins");
    }
    add_factor(b, &t.relation)?;
    Ok(())
}

fn target_plan(b: &mut Binder<'_>, selection: &Option<ast::Expr>) -> Result<RelPlan> {
    let mut conjuncts = Vec::new();
    if let Some(w) = selection {
        b.expr(w)?.0.conjuncts(&mut conjuncts);
    }
    let (mut rels, pre) = plan_joins(b, conjuncts)?;
    let mut target = rels.pop().expect("one relation");
    // Predicates on no column (e.g. `WHERE $1`) are checked per row too.
    target.filters.extend(pre);
    Ok(target)
}

pub fn plan_update(catalog: &Catalog, u: &ast::Update) -> Result<Planned> {
    if u.from.is_some() || u.or.is_some() {
        return unsupported("UPDATE ... FROM");
    }
    let mut b = Binder::new(catalog);
    single_target(&mut b, &u.table)?;
    let schema = b.rels[0].schema.clone();
    let mut assignments: Vec<(usize, Expr)> = Vec::new();
    for a in &u.assignments {
        let cols = match &a.target {
            ast::AssignmentTarget::ColumnName(n) => vec![n.clone()],
            ast::AssignmentTarget::Tuple(_) => return unsupported("UPDATE with a column tuple"),
        };
        let n = crate::bind::object_name(&cols[0])?;
        let c = schema
            .column_index_exact(&n)
            .ok_or_else(|| SqlError::UnknownColumn(n.clone()))?;
        if assignments.iter().any(|(x, _)| *x == c) {
            return Err(SqlError::Syntax(format!("multiple assignments to same column \"{n}\"")));
        }
        let (x, _) = b.expr(&a.value)?;
        b.infer(&x, Some(schema.columns[c].ty));
        assignments.push((c, x));
    }
    let target = target_plan(&mut b, &u.selection)?;
    let (ret, columns) = returning(&mut b, &u.returning)?;
    Ok(Planned {
        plan: Plan::Update(UpdatePlan {
            target,
            assignments,
            returning: ret,
        }),
        params: b.params,
        array_params: b.array_params,
        columns,
    })
}

pub fn plan_delete(catalog: &Catalog, d: &ast::Delete) -> Result<Planned> {
    if d.using.is_some() || !d.order_by.is_empty() || d.limit.is_some() || !d.tables.is_empty() {
        return unsupported("DELETE ... USING / ORDER BY / LIMIT");
    }
    let mut b = Binder::new(catalog);
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
    };
    match from.as_slice() {
        [t] => single_target(&mut b, t)?,
        _ => return unsupported("DELETE from several tables"),
    }
    let target = target_plan(&mut b, &d.selection)?;
    let (ret, columns) = returning(&mut b, &d.returning)?;
    Ok(Planned {
        plan: Plan::Delete(DeletePlan { target, returning: ret }),
        params: b.params,
        array_params: b.array_params,
        columns,
    })
}

/// Evaluates a constant expression written in DDL (a DEFAULT).
pub fn bind_constant(catalog: &Catalog, e: &ast::Expr) -> Result<Typed> {
    let mut b = Binder::new(catalog);
    let t = b.expr(e)?;
    if !b.params.is_empty() || !t.0.is_row_independent() {
        return Err(SqlError::Definition("DEFAULT must be a constant".into()));
    }
    Ok(t)
}

/// Values of no relation: for evaluating constants at plan time.
pub fn eval_constant(e: &Expr) -> Result<Value> {
    e.eval_const(&crate::expr::Cx::new(&[], 0))
}

trait ExactColumn {
    fn column_index_exact(&self, name: &str) -> Option<usize>;
}

impl ExactColumn for TableSchema {
    fn column_index_exact(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let mut c = Catalog::new();
        for sql in [
            "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, grp INT)",
            "CREATE INDEX t_grp ON t (grp)",
        ] {
            let stmt = crate::parse::parse_statement(sql).unwrap();
            for change in crate::ddl::plan_ddl(&c, &stmt).unwrap() {
                c = c.apply(&change).unwrap();
            }
        }
        c
    }

    fn access(sql: &str) -> Access {
        rel(sql).access
    }

    fn rel(sql: &str) -> RelPlan {
        let c = catalog();
        let ast::Statement::Query(q) = crate::parse::parse_statement(sql).unwrap() else {
            panic!("not a query")
        };
        let Plan::Select(s) = plan_query(&c, &q).unwrap().plan else {
            panic!("not a select")
        };
        s.rels[0].clone()
    }

    #[test]
    fn a_range_access_puts_the_predicates_of_its_bounds_first() {
        let r = rel("SELECT * FROM t WHERE name = 'x' AND id <= $2 AND grp > 1 AND $1 < id");
        assert!(
            matches!(r.access, Access::IndexRange { index: 0, .. }),
            "{:?}",
            r.access
        );
        assert_eq!(r.bounds, 2, "{:?}", r.filters);
        assert_eq!(r.filters.len(), 4);
        for f in &r.filters[..2] {
            assert!(
                matches!(f, Expr::Cmp(_, a, b) if matches!(**a, Expr::Column { col: 0, .. }) || matches!(**b, Expr::Column { col: 0, .. })),
                "{f:?}"
            );
        }
        let r = rel("SELECT * FROM t WHERE id BETWEEN 1 AND 5");
        assert_eq!((r.bounds, r.filters.len()), (2, 2));
        // A second predicate on the column that gave no bound is checked as any filter.
        let r = rel("SELECT * FROM t WHERE id > 1 AND id > 0 AND id < 9");
        assert_eq!((r.bounds, r.filters.len()), (2, 3));
        // Other accesses have none.
        assert_eq!(rel("SELECT * FROM t WHERE id = 3 AND name = 'x'").bounds, 0);
        assert_eq!(rel("SELECT * FROM t WHERE name = 'x'").bounds, 0);
    }

    #[test]
    fn any_of_an_array_probes_a_one_column_index() {
        for sql in [
            "SELECT * FROM t WHERE id = ANY($1)",
            "SELECT * FROM t WHERE id = ANY('{1,2}') AND name = 'x'",
        ] {
            assert!(matches!(access(sql), Access::IndexAny { index: 0, .. }), "{sql}");
        }
        assert!(matches!(
            access("SELECT * FROM t WHERE grp = ANY($1)"),
            Access::IndexAny { index: 1, .. }
        ));
        // The lookups guarantee the ANY: it is not tested again on each row they find.
        assert!(rel("SELECT * FROM t WHERE id = ANY($1)").filters.is_empty());
        assert_eq!(
            rel("SELECT * FROM t WHERE id = ANY($1) AND name = 'x'").filters.len(),
            1
        );
        // An equality is better; no index on the column, or <> ALL: a scan.
        assert!(matches!(
            access("SELECT * FROM t WHERE id = 3 AND grp = ANY($1)"),
            Access::IndexEq { index: 0, .. }
        ));
        assert!(matches!(access("SELECT * FROM t WHERE name = ANY($1)"), Access::Scan));
        assert!(matches!(access("SELECT * FROM t WHERE id <> ALL($1)"), Access::Scan));
    }
}
