//! SELECT: the bound query's relations, filters, groups, output and order into a
//! [`SelectPlan`].

use std::sync::Arc;

use permafrost_types::DataType;
use sqlparser::ast::{self, GroupByExpr, SelectItem, SetExpr};

use super::access::*;
use super::column_names::column_name;
use super::from::*;
use super::tree::*;
use crate::bind::{Binder, Rel, common_type, ident};
use crate::catalog::Catalog;
use crate::error::{Point, Result, SqlError, shown, unsupported};
use crate::expr::AggCall;
use crate::expr::Expr;
use crate::rows::ColumnInfo;
pub fn plan_query(catalog: &Catalog, q: &ast::Query) -> Result<Planned> {
    let mut b = Binder::new(catalog);
    b.plan_subquery = Some(subquery);
    with_ctes(&mut b, q, plan_top)
}

/// [`plan_query`] once the query's WITH list is known.
fn plan_top(b: &mut Binder<'_>, q: &ast::Query) -> Result<Planned> {
    if matches!(q.body.as_ref(), SetExpr::SetOperation { .. } | SetExpr::Values(_)) {
        let plan = compound(b, q)?;
        let columns = plan.columns.to_vec();
        return Ok(Planned {
            plan: Plan::Compound(plan),
            params: std::mem::take(&mut b.params),
            array_params: std::mem::take(&mut b.array_params),
            columns,
        });
    }
    let (plan, columns) = select(b, q)?;
    Ok(Planned {
        plan: Plan::Select(plan),
        params: std::mem::take(&mut b.params),
        array_params: std::mem::take(&mut b.array_params),
        columns,
    })
}

/// The windows of a WINDOW clause, in order, each merged with the earlier one it is built
/// on.
fn named_windows(b: &mut Binder<'_>, defs: &[ast::NamedWindowDefinition]) -> Result<Vec<(String, ast::WindowSpec)>> {
    let mut named = std::mem::take(&mut b.named_windows);
    named.clear();
    for ast::NamedWindowDefinition(ast_name, def) in defs {
        let name = ident(ast_name);
        if named.iter().any(|(n, _)| *n == name) {
            let e = SqlError::WindowingError(format!("window \"{name}\" is already defined"));
            return Err(e.at(ast_name.span, Point::Paren));
        }
        let spec = match def {
            ast::NamedWindowExpr::WindowSpec(spec) => spec.clone(),
            ast::NamedWindowExpr::NamedWindow(base) => ast::WindowSpec {
                window_name: Some(base.clone()),
                partition_by: Vec::new(),
                order_by: Vec::new(),
                window_frame: None,
            },
        };
        b.named_windows = named;
        let merged = b.window_spec(&spec, false);
        named = std::mem::take(&mut b.named_windows);
        named.push((name, merged?));
    }
    Ok(named)
}

/// Plans a query: its clauses are bound in the order of their steps below (FROM and WHERE,
/// GROUP BY, the select list, HAVING, ORDER BY), then aggregation, DISTINCT, LIMIT and the
/// join order are planned.
pub(super) fn select(b: &mut Binder<'_>, q: &ast::Query) -> Result<(SelectPlan, Vec<ColumnInfo>)> {
    let s = plain_select(q)?;
    // A set-returning function in the select list: read as one in FROM (`plan/srf.rs`).
    let lifted = super::srf::lift(s)?;
    let s = lifted.as_ref().unwrap_or(s);
    let (conjuncts, outer) = from_and_where(b, s)?;
    let groups = group_by(b, &s.group_by, &s.projection)?;
    // The select list, HAVING and ORDER BY may hold aggregates; they are collected.
    b.aggs = Some(Vec::new());
    // The select list and ORDER BY may hold window function calls; they are collected.
    b.windows = Some(Vec::new());
    b.named_windows = named_windows(b, &s.named_window)?;
    let (mut output, columns) = projection(b, &s.projection)?;
    let having = match &s.having {
        Some(h) => {
            let w = b.windows.take();
            let r = b.expr_in("HAVING", h);
            b.windows = w;
            Some(r?.0)
        }
        None => None,
    };
    let mut order = order_by(b, q, &output, &columns)?;
    if lifted.is_some()
        && (!groups.is_empty()
            || having.is_some()
            || b.aggs.as_ref().is_some_and(|a| !a.is_empty())
            || b.windows.as_ref().is_some_and(|w| !w.is_empty()))
    {
        return unsupported(
            "a set-returning function in the select list of a query that aggregates or calls window functions",
        );
    }
    let (distinct, distinct_on) = match &s.distinct {
        None | Some(ast::Distinct::All) => (false, 0),
        Some(ast::Distinct::Distinct) => (true, 0),
        Some(ast::Distinct::On(exprs)) => (false, distinct_on(b, exprs, &output, &columns, &mut order)?),
    };
    let aggs = b.aggs.take().unwrap_or_default();
    let mut windows = b.windows.take().unwrap_or_default();
    let mut groups = groups;
    if !groups.is_empty() {
        let reads = output
            .iter()
            .chain(order.iter().map(|k| &k.expr))
            .chain(having.as_ref())
            .chain(
                windows
                    .iter()
                    .flat_map(|w| w.args.iter().chain(&w.partition).chain(w.order.iter().map(|o| &o.0))),
            );
        add_dependent_columns(&b.rels, &mut groups, reads);
    }
    let agg = aggregation(groups, aggs, having, &mut output, &mut order, &b.rels)?;
    if let Some(a) = &agg {
        for w in &mut windows {
            for e in w
                .args
                .iter_mut()
                .chain(&mut w.partition)
                .chain(w.order.iter_mut().map(|o| &mut o.0))
            {
                *e = to_post_agg(e, &a.groups, &b.rels)?;
            }
        }
    }
    // The columns a query with window calls keeps of each row until they are computed.
    let mut image: Vec<(usize, usize)> = Vec::new();
    if !windows.is_empty() && agg.is_none() {
        let exprs = output.iter().chain(order.iter().map(|k| &k.expr)).chain(
            windows
                .iter()
                .flat_map(|w| w.args.iter().chain(&w.partition).chain(w.order.iter().map(|o| &o.0))),
        );
        for e in exprs {
            e.walk(&mut |x| {
                if let Expr::Column { rel, col } = x
                    && !image.contains(&(*rel, *col))
                {
                    image.push((*rel, *col));
                }
            });
        }
    }
    if distinct && let Some(i) = order.iter().position(|k| !output.contains(sorted_value(&k.expr))) {
        let err = SqlError::InvalidColumnReference(
            "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
        );
        return Err(match order_items(q).get(i) {
            Some(item) => err.at(crate::error::start_of(&item.expr), Point::Start),
            None => err,
        });
    }
    let (limit, offset) = limit_offset(b, q)?;
    let locks = row_locks(b, q, agg.is_some(), distinct || distinct_on > 0)?;
    let (mut conjuncts, mut outer, mut agg) = (conjuncts, outer, agg);
    let reads = super::pullup::Reads {
        conjuncts: &mut conjuncts,
        outer: &mut outer,
        output: &mut output,
        order: &mut order,
        agg: &mut agg,
    };
    super::pullup::pull_up(b, q, !windows.is_empty(), reads);
    let (mut rels, pre_filters) = plan_joins(b, conjuncts, outer)?;
    let sorted_alone = agg.is_none() && windows.is_empty() && !distinct && distinct_on == 0 && b.derived.is_empty();
    let index_ordered = sorted_alone && index_order(&mut rels, &order);
    if index_ordered {
        order.clear();
    }
    let size_hint = std::sync::atomic::AtomicUsize::new(64);
    Ok((
        SelectPlan {
            size_hint,
            rels,
            pre_filters,
            output,
            agg,
            order,
            index_ordered,
            limit,
            offset,
            distinct,
            distinct_on,
            windows,
            image,
            init: std::mem::take(&mut b.init),
            derived: std::mem::take(&mut b.derived),
            locks,
        },
        columns,
    ))
}

/// Plans a subquery: a SELECT, or a set operation of them.
pub(super) fn subquery(b: &mut Binder<'_>, q: &ast::Query) -> Result<(SetTree, Vec<ColumnInfo>)> {
    with_ctes(b, q, subquery_body)
}

/// [`subquery`] once the query's WITH list is known.
fn subquery_body(b: &mut Binder<'_>, q: &ast::Query) -> Result<(SetTree, Vec<ColumnInfo>)> {
    if matches!(q.body.as_ref(), SetExpr::SetOperation { .. } | SetExpr::Values(_)) {
        let c = compound(b, q)?;
        let columns = c.columns.to_vec();
        return Ok((SetTree::Compound(Box::new(c)), columns));
    }
    let (plan, columns) = select(b, q)?;
    Ok((
        SetTree::Select {
            plan: Box::new(plan),
            columns: columns.clone().into(),
        },
        columns,
    ))
}

/// Plans a query whose body is a set operation (UNION, INTERSECT, EXCEPT): each side in a
/// scope of its own, the result's column types resolved over the sides, ORDER BY naming
/// result columns (by name or number), then LIMIT and OFFSET.
fn compound(b: &mut Binder<'_>, q: &ast::Query) -> Result<CompoundPlan> {
    if q.with.is_some() {
        return unsupported("WITH");
    }
    if let Some(l) = q.locks.first() {
        return unsupported(format!(
            "FOR {} is not allowed with UNION/INTERSECT/EXCEPT",
            l.lock_type
        ));
    }
    let tree = set_tree(b, q, &q.body)?;
    let columns: Arc<[ColumnInfo]> = result_columns(&tree)?.into();
    let mut order = Vec::new();
    if let Some(ob) = &q.order_by {
        let ast::OrderByKind::Expressions(items) = &ob.kind else {
            return unsupported("ORDER BY ALL");
        };
        for item in items {
            let at = match &item.expr {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => match n.parse::<usize>() {
                        Ok(i) if (1..=columns.len()).contains(&i) => i - 1,
                        _ => {
                            return Err(SqlError::InvalidColumnReference(format!(
                                "ORDER BY position {n} is not in select list"
                            )));
                        }
                    },
                    _ => return unsupported("ORDER BY a constant"),
                },
                ast::Expr::Identifier(i) => {
                    let name = ident(i);
                    columns.iter().position(|c| c.name == name).ok_or_else(|| {
                        SqlError::Unsupported(format!(
                            "ORDER BY \"{name}\" of a UNION, INTERSECT or EXCEPT result: order by one of its \
                             columns, by name or number"
                        ))
                    })?
                }
                other => {
                    return unsupported(format!(
                        "ORDER BY {other} of a UNION, INTERSECT or EXCEPT result (order by one of its columns, by \
                         name or number)"
                    ));
                }
            };
            let desc = match item.options.sort {
                None | Some(ast::OrderBySort::Asc) => false,
                Some(ast::OrderBySort::Desc) => true,
                Some(_) => return unsupported("ORDER BY ... USING"),
            };
            order.push((at, desc, item.options.nulls_first.unwrap_or(desc)));
        }
    }
    let (limit, offset) = limit_offset(b, q)?;
    Ok(CompoundPlan {
        tree,
        columns,
        order,
        limit,
        offset,
    })
}

/// Where PostgreSQL points at a side of a set operation: its first select item.
fn first_item(side: &SetExpr) -> sqlparser::tokenizer::Span {
    match side {
        SetExpr::Select(s) => s
            .projection
            .first()
            .map_or_else(sqlparser::tokenizer::Span::empty, item_start),
        SetExpr::SetOperation { left, .. } => first_item(left),
        _ => sqlparser::tokenizer::Span::empty(),
    }
}

/// Where a select item begins ([`crate::error::start_of`]).
pub(super) fn item_start(i: &SelectItem) -> sqlparser::tokenizer::Span {
    match i {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => crate::error::start_of(e),
        _ => sqlparser::tokenizer::Span::empty(),
    }
}

/// One side of a set operation of query `outer`.
fn set_tree(b: &mut Binder<'_>, outer: &ast::Query, e: &SetExpr) -> Result<SetTree> {
    Ok(match e {
        SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } => {
            let op = match op {
                ast::SetOperator::Union => SetOp::Union,
                ast::SetOperator::Intersect => SetOp::Intersect,
                ast::SetOperator::Except | ast::SetOperator::Minus => SetOp::Except,
            };
            let all = match set_quantifier {
                ast::SetQuantifier::All => true,
                ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
                other => return unsupported(format!("set operations {other}")),
            };
            let right_at = first_item(right);
            let left = set_tree(b, outer, left)?;
            let right = set_tree(b, outer, right)?;
            if width(&left) != width(&right) {
                let name = match op {
                    SetOp::Union => "UNION",
                    SetOp::Intersect => "INTERSECT",
                    SetOp::Except => "EXCEPT",
                };
                return Err(
                    SqlError::Syntax(format!("each {name} query must have the same number of columns"))
                        .at(right_at, Point::Start),
                );
            }
            SetTree::Op {
                op,
                all,
                left: Box::new(left),
                right: Box::new(right),
            }
        }
        SetExpr::Select(_) => {
            // The side as a query of its own, without the whole's WITH (bound already),
            // ORDER BY, LIMIT and FETCH, and without a copy of the other sides.
            let side = ast::Query {
                with: None,
                body: Box::new(e.clone()),
                order_by: None,
                limit_clause: None,
                fetch: None,
                locks: outer.locks.clone(),
                for_clause: outer.for_clause.clone(),
                settings: outer.settings.clone(),
                format_clause: outer.format_clause.clone(),
                pipe_operators: outer.pipe_operators.clone(),
            };
            let (plan, columns) = b.in_own_scope(|sub| select(sub, &side))?;
            SetTree::Select {
                plan: Box::new(plan),
                columns: columns.into(),
            }
        }
        SetExpr::Query(q) => {
            let (tree, _) = b.in_own_scope(|sub| subquery(sub, q))?;
            tree
        }
        SetExpr::Values(v) => values(b, v)?,
        _ => return unsupported("this form of query in UNION / INTERSECT / EXCEPT"),
    })
}

fn width(t: &SetTree) -> usize {
    match t {
        SetTree::Values { columns, .. }
        | SetTree::Series { columns, .. }
        | SetTree::Unnest { columns, .. }
        | SetTree::Recursive { columns, .. }
        | SetTree::Working { columns, .. } => columns.len(),
        SetTree::Select { columns, .. } => columns.len(),
        SetTree::Compound(c) => c.columns.len(),
        SetTree::Op { left, .. } => width(left),
    }
}

/// The result columns of a set operation: named as the first side's, each typed as the
/// sides' types resolve (as PostgreSQL's UNION does: integers widen, then numeric, then
/// double precision; texts of different lengths are text).
fn result_columns(t: &SetTree) -> Result<Vec<ColumnInfo>> {
    Ok(match t {
        SetTree::Values { columns, .. }
        | SetTree::Series { columns, .. }
        | SetTree::Unnest { columns, .. }
        | SetTree::Recursive { columns, .. }
        | SetTree::Working { columns, .. } => columns.to_vec(),
        SetTree::Select { columns, .. } => columns.to_vec(),
        SetTree::Compound(c) => c.columns.to_vec(),
        SetTree::Op { left, right, .. } => {
            let (mut l, r) = (result_columns(left)?, result_columns(right)?);
            for (a, b) in l.iter_mut().zip(r) {
                a.ty = match (a.ty, b.ty) {
                    (None, t) | (t, None) => t,
                    (Some(x), Some(y)) => Some(common_type(x, y)?),
                };
            }
            l
        }
    })
}

/// The SELECT of a query, when the query is one plain SELECT (no WITH, set operation,
/// FETCH, locking clause or dialect-specific SELECT form).
/// `FOR UPDATE` / `FOR SHARE [OF table] [NOWAIT]`: checked, and the relations whose rows
/// they lock. Inside a transaction block the COMMIT runs the query again at the block's
/// place in the serial order and fails with 40001 if another transaction changed what it
/// returned, so no change to those rows is lost between the read and the commit, which is
/// what the clause is for; the locks (taken by the server before the statement runs, held
/// until the block ends) make other blocks' locking reads of those rows wait instead of
/// failing at COMMIT (docs/architecture/interactive.md, "Row locks"). `SKIP LOCKED` is
/// refused.
fn row_locks(b: &Binder<'_>, q: &ast::Query, grouped: bool, distinct: bool) -> Result<Vec<RowLock>> {
    let mut locks: Vec<RowLock> = Vec::new();
    for l in &q.locks {
        let what = format!("FOR {}", l.lock_type);
        if matches!(l.nonblock, Some(ast::NonBlock::SkipLocked)) {
            return unsupported(format!(
                "{what} SKIP LOCKED (rows are not locked here; a concurrent change fails the COMMIT with 40001)"
            ));
        }
        if grouped {
            return unsupported(format!(
                "{what} is not allowed with GROUP BY clause or aggregate functions"
            ));
        }
        if distinct {
            return unsupported(format!("{what} is not allowed with DISTINCT clause"));
        }
        let of = l.of.as_ref().map(crate::bind::object_name).transpose()?;
        if let Some(n) = &of
            && !b.rels.iter().any(|r| r.answers_to(n))
        {
            return Err(SqlError::MissingFromEntry(n.clone()));
        }
        let exclusive = matches!(l.lock_type, ast::LockType::Update);
        let nowait = matches!(l.nonblock, Some(ast::NonBlock::Nowait));
        for (rel, _) in b
            .rels
            .iter()
            .enumerate()
            .filter(|(_, r)| of.as_ref().is_none_or(|n| r.answers_to(n)))
        {
            match locks.iter_mut().find(|k| k.rel == rel) {
                Some(k) => {
                    k.exclusive |= exclusive;
                    k.nowait |= nowait;
                }
                None => locks.push(RowLock { rel, exclusive, nowait }),
            }
        }
    }
    Ok(locks)
}

fn plain_select(q: &ast::Query) -> Result<&ast::Select> {
    if q.with.is_some() {
        return unsupported("WITH");
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

/// Binds the GROUP BY expressions (plain lists only).
fn group_by(b: &mut Binder<'_>, group_by: &GroupByExpr, items: &[SelectItem]) -> Result<Vec<Expr>> {
    let mut groups = Vec::new();
    match group_by {
        GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => {
            for e in exprs {
                groups.push(group_key(b, e, items)?);
            }
        }
        GroupByExpr::Expressions(..) | GroupByExpr::All(_) => {
            return unsupported("GROUP BY ALL / ROLLUP / CUBE");
        }
    }
    Ok(groups)
}

/// One GROUP BY key: an expression over the input columns; a number, the select list's
/// item at that position; a name no input column has, the select list's item of that
/// name (an input column wins, as in PostgreSQL).
fn group_key<'a>(b: &mut Binder<'_>, e: &ast::Expr, items: &'a [SelectItem]) -> Result<Expr> {
    let item = |i: &'a SelectItem| match i {
        SelectItem::UnnamedExpr(x) | SelectItem::ExprWithAlias { expr: x, .. } => Some(x),
        _ => None,
    };
    if let ast::Expr::Value(v) = e
        && let ast::Value::Number(n, _) = &v.value
    {
        let at = n
            .parse::<usize>()
            .ok()
            .and_then(|p| items.get(p.wrapping_sub(1)))
            .and_then(item)
            .ok_or_else(|| {
                SqlError::InvalidColumnReference(format!("GROUP BY position {n} is not in select list"))
                    .at(crate::error::start_of(e), Point::Start)
            })?;
        return group_expr(b, at);
    }
    match group_expr(b, e) {
        Err(SqlError::UnknownColumn(name)) if matches!(e, ast::Expr::Identifier(_)) => {
            let named = items.iter().find_map(|i| match i {
                SelectItem::ExprWithAlias { expr, alias } if ident(alias) == name => Some(expr),
                _ => None,
            });
            match named {
                Some(x) => group_expr(b, x),
                None => Err(SqlError::UnknownColumn(name)),
            }
        }
        r => r,
    }
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
                for &(rel, col) in &b.star {
                    let c = &b.rels[rel].schema.columns[col];
                    output.push(Expr::Column { rel, col });
                    columns.push(ColumnInfo {
                        name: c.name.clone(),
                        ty: Some(c.ty),
                    });
                }
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let name = match kind {
                    // (`s.t.*` names the FROM item `t`.)
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                        crate::namespace::bare(&crate::bind::object_name(n)?).to_string()
                    }
                    _ => return unsupported(format!("this wildcard form: {}", shown(item))),
                };
                let ri = b
                    .rels
                    .iter()
                    .position(|r| r.answers_to(&name))
                    .ok_or(SqlError::UnknownTable(name.clone()))?;
                if b.rels[ri].alias == name {
                    all_columns(b, ri, &mut output, &mut columns);
                } else {
                    // A table inside a FULL JOIN's relation: its own columns.
                    for ci in b.rels[ri].member_columns(&name) {
                        let c = &b.rels[ri].schema.columns[ci];
                        output.push(Expr::Column { rel: ri, col: ci });
                        columns.push(ColumnInfo {
                            name: c.name.clone(),
                            ty: Some(c.ty),
                        });
                    }
                }
            }
            other => return unsupported(format!("this select item: {}", shown(other))),
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
/// The ORDER BY items of `q` as written.
fn order_items(q: &ast::Query) -> &[ast::OrderByExpr] {
    match q.order_by.as_ref().map(|o| &o.kind) {
        Some(ast::OrderByKind::Expressions(items)) => items,
        _ => &[],
    }
}

fn order_by(b: &mut Binder<'_>, q: &ast::Query, output: &[Expr], columns: &[ColumnInfo]) -> Result<Vec<SortKey>> {
    let mut order = Vec::new();
    if let Some(ob) = &q.order_by {
        let ast::OrderByKind::Expressions(items) = &ob.kind else {
            return unsupported("ORDER BY ALL");
        };
        for item in items {
            let expr = order_expr(b, &item.expr, output, columns)
                .map_err(|e| e.at(crate::error::start_of(&item.expr), Point::Start))?;
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

/// `DISTINCT ON (exprs)`: the rows are sorted by the ORDER BY keys, which must begin with
/// those expressions (in any order; they are the keys when there is no ORDER BY), and the
/// first row of each run of equal values is kept. Gives how many leading sort keys those
/// are (`SelectPlan::distinct_on`).
fn distinct_on(
    b: &mut Binder<'_>,
    exprs: &[ast::Expr],
    output: &[Expr],
    columns: &[ColumnInfo],
    order: &mut Vec<SortKey>,
) -> Result<usize> {
    let on = exprs
        .iter()
        .map(|e| order_expr(b, e, output, columns))
        .collect::<Result<Vec<_>>>()?;
    if order.is_empty() {
        order.extend(on.iter().map(|e| SortKey {
            expr: e.clone(),
            desc: false,
            nulls_first: false,
        }));
        return Ok(on.len());
    }
    let n = on.len();
    let leading = order.get(..n).unwrap_or(order.as_slice());
    if leading.len() < n
        || !leading.iter().all(|k| on.contains(&k.expr))
        || !on.iter().all(|e| leading.iter().any(|k| k.expr == *e))
    {
        let err = SqlError::InvalidColumnReference(
            "SELECT DISTINCT ON expressions must match initial ORDER BY expressions".into(),
        );
        return Err(match exprs.first() {
            Some(e) => err.at(crate::error::start_of(e), Point::Start),
            None => err,
        });
    }
    Ok(n)
}

/// Makes the columns of a table whose primary key is grouped on group keys too: they are
/// functionally dependent on it, so PostgreSQL lets the select list, HAVING and ORDER BY
/// read them ungrouped (`GROUP BY w_id` then `SELECT w_ytd`). A key appended this way
/// splits no group.
fn add_dependent_columns<'e>(rels: &[Rel], groups: &mut Vec<Expr>, reads: impl Iterator<Item = &'e Expr>) {
    let keyed = |groups: &[Expr], rel: usize| {
        rels.get(rel).and_then(|r| r.schema.primary_key()).is_some_and(|pk| {
            pk.columns
                .iter()
                .all(|&col| groups.contains(&Expr::Column { rel, col }))
        })
    };
    let mut found = Vec::new();
    for e in reads {
        e.walk(&mut |x| {
            if let Expr::Column { rel, .. } = x
                && !groups.contains(x)
                && !found.contains(x)
                && keyed(groups, *rel)
            {
                found.push(x.clone());
            }
        });
    }
    groups.extend(found);
}

/// The aggregation of a query with aggregates, GROUP BY or HAVING (`None` without any).
/// The output and ORDER BY expressions are rewritten to read the groups and aggregate
/// results.
fn aggregation(
    groups: Vec<Expr>,
    aggs: Vec<AggCall>,
    having: Option<Expr>,
    output: &mut [Expr],
    order: &mut [SortKey],
    rels: &[Rel],
) -> Result<Option<AggPlan>> {
    // HAVING alone makes the query grouped, one group of all rows (as in PostgreSQL).
    if aggs.is_empty() && groups.is_empty() && having.is_none() {
        return Ok(None);
    }
    for e in output.iter_mut().chain(order.iter_mut().map(|k| &mut k.expr)) {
        *e = to_post_agg(e, &groups, rels)?;
    }
    let having = having.map(|h| to_post_agg(&h, &groups, rels)).transpose()?;
    Ok(Some(AggPlan { groups, aggs, having }))
}

fn group_expr(b: &mut Binder<'_>, e: &ast::Expr) -> Result<Expr> {
    let saved = b.aggs.take();
    let r = b.expr_in("GROUP BY", e).map(|t| t.0);
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
        let i = pos.wrapping_sub(1);
        return output
            .get(i)
            .map(|e| sort_form(e.clone(), columns[i].ty))
            .ok_or_else(|| SqlError::InvalidColumnReference(format!("ORDER BY position {pos} is not in select list")));
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
            return Ok(sort_form(output[*one].clone(), columns[*one].ty));
        }
    }
    let (x, t) = b.expr(e)?;
    Ok(sort_form(x, t))
}

/// The value a sort key sorts ([`sort_form`] undone).
fn sorted_value(e: &Expr) -> &Expr {
    match e {
        Expr::Func(
            crate::expr::Func::Array {
                f: crate::expr::array::ArrayFn::SortKey,
                ..
            },
            args,
        ) => &args[0],
        e => e,
    }
}

/// What a sort key of type `ty` sorts by: itself, or for an array the bytes that order as
/// PostgreSQL orders arrays (its text would put `{10}` before `{9}`).
fn sort_form(e: Expr, ty: Option<DataType>) -> Expr {
    match ty {
        Some(DataType::Array(elem)) => {
            let f = crate::expr::Func::Array {
                f: crate::expr::array::ArrayFn::SortKey,
                elem,
            };
            Expr::Func(f, vec![e])
        }
        _ => e,
    }
}

/// Rewrites an expression of an aggregate query to read group keys and aggregate results.
fn to_post_agg(e: &Expr, groups: &[Expr], rels: &[Rel]) -> Result<Expr> {
    if let Some(i) = groups.iter().position(|g| g == e) {
        return Ok(Expr::Group(i));
    }
    let r = |x: &Expr| to_post_agg(x, groups, rels);
    let rb = |x: &Expr| to_post_agg(x, groups, rels).map(Box::new);
    Ok(match e {
        Expr::Column { rel, col } => {
            let name = rels
                .get(*rel)
                .and_then(|r| Some(format!("{}.{}", r.alias, r.schema.columns.get(*col)?.name)))
                .unwrap_or_default();
            return Err(SqlError::Ungrouped(name));
        }
        Expr::Param(_)
        | Expr::Const(_)
        | Expr::Now
        | Expr::Agg(_)
        | Expr::Group(_)
        | Expr::Subquery(_)
        | Expr::Exists(_)
        | Expr::Window(_)
        | Expr::Outer(_) => e.clone(),
        Expr::SubPlan { sub, kind, args, test } => Expr::SubPlan {
            sub: *sub,
            kind: *kind,
            args: args.iter().map(r).collect::<Result<_>>()?,
            test: test
                .as_ref()
                .map(|(x, n)| Ok::<_, SqlError>((rb(x)?, *n)))
                .transpose()?,
        },
        Expr::InSubquery { expr, sub, negated } => Expr::InSubquery {
            expr: rb(expr)?,
            sub: *sub,
            negated: *negated,
        },
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
    // As PostgreSQL: "aggregate functions are not allowed in LIMIT", "argument of OFFSET
    // must not contain variables".
    let mut bind_in = |clause: &'static str, e: &ast::Expr| -> Result<Expr> {
        let saved = (b.aggs.take(), b.windows.take());
        let r = b.expr_in(clause, e);
        (b.aggs, b.windows) = saved;
        let (x, _) = r?;
        if !x.is_row_independent() {
            return Err(
                SqlError::InvalidColumnReference(format!("argument of {clause} must not contain variables"))
                    .at(crate::error::start_of(e), Point::Start),
            );
        }
        b.infer(&x, Some(DataType::BigInt));
        Ok(x)
    };
    let (limit, offset) = match &q.limit_clause {
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
                limit.as_ref().map(|l| bind_in("LIMIT", l)).transpose()?,
                offset.as_ref().map(|o| bind_in("OFFSET", &o.value)).transpose()?,
            )
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
            (Some(bind_in("LIMIT", limit)?), Some(bind_in("OFFSET", offset)?))
        }
    };
    // FETCH FIRST n ROWS ONLY: the standard's LIMIT (one row without n).
    let Some(fetch) = &q.fetch else {
        return Ok((limit, offset));
    };
    if fetch.with_ties || fetch.percent {
        return unsupported("FETCH FIRST ... WITH TIES / PERCENT");
    }
    if limit.is_some() {
        return Err(SqlError::Syntax("multiple LIMIT clauses not allowed".into()));
    }
    let n = match &fetch.quantity {
        Some(e) => bind_in("LIMIT", e)?,
        None => Expr::Const(permafrost_types::Value::Int(1)),
    };
    Ok((Some(n), offset))
}

// ---------------------------------------------------------------------------------------
// Access paths and join order
