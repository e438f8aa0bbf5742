//! INSERT, UPDATE and DELETE (and their RETURNING) into plans.

use std::sync::Arc;

use permafrost_storage::TableSchema;
use permafrost_types::Value;
use sqlparser::ast::{self, GroupByExpr, SelectItem, SetExpr, Spanned, TableFactor};

use super::access::*;
use super::column_names::column_name;
use super::from::add_factor;
use super::select::*;
use super::tree::*;
use crate::bind::{Binder, ident};
use crate::catalog::Catalog;
use crate::error::{Point, Result, SqlError, shown, unsupported};
use crate::expr::Expr;
use crate::foreign::Writes;
use crate::rows::ColumnInfo;

/// RETURNING is evaluated after the row is written, where no correlated subquery runs.
fn refuse_correlated(e: &Expr) -> Result<()> {
    let mut found = false;
    e.walk(&mut |x| found |= matches!(x, Expr::SubPlan { .. }));
    if found {
        return unsupported("a correlated subquery in RETURNING (return the columns and query them afterwards)");
    }
    Ok(())
}

fn returning(b: &mut Binder<'_>, items: &Option<Vec<SelectItem>>) -> Result<(Vec<Expr>, Vec<ColumnInfo>)> {
    let mut out = Vec::new();
    let mut cols = Vec::new();
    for item in items.iter().flatten() {
        match item {
            SelectItem::UnnamedExpr(e) => {
                let (x, t) = b.expr_in("RETURNING", e)?;
                refuse_correlated(&x)?;
                out.push(x);
                cols.push(ColumnInfo {
                    name: column_name(e),
                    ty: t,
                });
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let (x, t) = b.expr_in("RETURNING", expr)?;
                refuse_correlated(&x)?;
                out.push(x);
                cols.push(ColumnInfo {
                    name: ident(alias),
                    ty: t,
                });
            }
            SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                // `t.*`: the target's columns, named by its name or alias.
                let name = crate::namespace::bare(&crate::bind::object_name(n)?).to_string();
                if b.rels[0].alias != name {
                    return Err(SqlError::MissingFromEntry(name));
                }
                wildcard(b, &mut out, &mut cols);
            }
            SelectItem::Wildcard(_) => wildcard(b, &mut out, &mut cols),
            other => return unsupported(format!("this RETURNING item: {}", shown(other))),
        }
    }
    Ok((out, cols))
}

/// The target's columns, as `RETURNING *` gives them.
fn wildcard(b: &Binder<'_>, out: &mut Vec<Expr>, cols: &mut Vec<ColumnInfo>) {
    for (ci, c) in b.rels[0].schema.columns.iter().enumerate() {
        out.push(Expr::Column { rel: 0, col: ci });
        cols.push(ColumnInfo {
            name: c.name.clone(),
            ty: Some(c.ty),
        });
    }
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

/// What an INSERT's `ON CONFLICT` clause does.
enum Conflict<'a> {
    /// `DO NOTHING`: the rows it skips.
    Skip(SkipConflicts),
    /// `DO UPDATE`: the arbiter indexes (positions in the table's schema) and the clause.
    Update(Vec<usize>, &'a ast::DoUpdate),
}

/// What `ON CONFLICT [target] DO NOTHING | DO UPDATE ...` does on `schema`: the target is
/// the columns of a unique index (in any order: 42P10 when none has exactly those) or a
/// unique index by name (`ON CONSTRAINT`: 42704 when there is none); DO UPDATE requires
/// one (42601).
fn on_conflict<'a>(schema: &TableSchema, on: &'a ast::OnInsert) -> Result<Conflict<'a>> {
    let ast::OnInsert::OnConflict(c) = on else {
        return unsupported("INSERT ... ON DUPLICATE KEY UPDATE (use ON CONFLICT ... DO UPDATE)");
    };
    let indexes = match &c.conflict_target {
        None => None,
        Some(ast::ConflictTarget::Columns(cols)) => {
            let mut want = Vec::with_capacity(cols.len());
            for c in cols {
                let n = ident(c);
                want.push(schema.column_index_exact(&n).ok_or(SqlError::UnknownColumn(n))?);
            }
            want.sort_unstable();
            want.dedup();
            let names: Vec<String> = schema
                .indexes
                .iter()
                .filter(|ix| {
                    let mut cols = ix.columns.clone();
                    cols.sort_unstable();
                    ix.unique && cols == want
                })
                .map(|ix| ix.name.clone())
                .collect();
            if names.is_empty() {
                return Err(SqlError::NoConflictConstraint);
            }
            Some(names)
        }
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let n = crate::bind::object_name(name)?;
            if !schema.indexes.iter().any(|ix| ix.unique && ix.name == n) {
                return Err(SqlError::UnknownConstraint {
                    name: n,
                    table: schema.name.clone(),
                });
            }
            Some(vec![n])
        }
    };
    match &c.action {
        ast::OnConflictAction::DoNothing => Ok(Conflict::Skip(SkipConflicts { indexes })),
        ast::OnConflictAction::DoUpdate(set) => {
            let names = indexes.ok_or(SqlError::ConflictTargetMissing)?;
            let arbiters = schema
                .indexes
                .iter()
                .enumerate()
                .filter(|(_, ix)| names.contains(&ix.name))
                .map(|(i, _)| i)
                .collect();
            Ok(Conflict::Update(arbiters, set))
        }
    }
}

/// Binds `DO UPDATE SET ... [WHERE ...]` of an upsert into the table bound as relation 0
/// of `b`: the proposed row is the relation `excluded`, read as `Expr::Outer` (a column
/// name both have is ambiguous unqualified, as in PostgreSQL).
fn conflict_update(
    b: &mut Binder<'_>,
    schema: &Arc<TableSchema>,
    arbiters: Vec<usize>,
    set: &ast::DoUpdate,
) -> Result<ConflictUpdate> {
    let excluded = b.add_rel(schema.clone(), Some(&ast::Ident::new("excluded")))?;
    let mut assignments = Vec::with_capacity(set.assignments.len());
    for a in &set.assignments {
        let c = assignment_column(schema, a, &assignments)?;
        let (x, _) = b.expr_in("UPDATE", &a.value)?;
        literal_fits(&a.value, &schema.columns[c].ty)?;
        b.infer(&x, Some(schema.columns[c].ty));
        assignments.push((c, x));
    }
    let mut filter = match &set.selection {
        Some(w) => Some(b.expr_in("WHERE", w)?.0),
        None => None,
    };
    b.rels.truncate(excluded);
    let mut refused = false;
    let mut proposed = |e: &mut Expr| match e {
        Expr::Column { rel, col } if *rel == excluded => *e = Expr::Outer(*col),
        Expr::SubPlan { .. } => refused = true,
        _ => {}
    };
    for (_, x) in assignments.iter_mut() {
        x.walk_mut(&mut proposed);
    }
    if let Some(f) = filter.as_mut() {
        f.walk_mut(&mut proposed);
    }
    if refused {
        return unsupported(
            "a correlated subquery in ON CONFLICT DO UPDATE (compute the value in the VALUES list, or use a subquery that reads no column of the row)",
        );
    }
    Ok(ConflictUpdate {
        arbiters,
        assignments,
        filter,
    })
}

/// The column of `schema` assignment `a` sets (42703 when there is none, 42601 when an
/// earlier assignment of `done` set it too).
fn assignment_column(schema: &TableSchema, a: &ast::Assignment, done: &[(usize, Expr)]) -> Result<usize> {
    let n = match &a.target {
        ast::AssignmentTarget::ColumnName(n) => crate::bind::object_name(n)?,
        ast::AssignmentTarget::Tuple(_) => {
            return unsupported("UPDATE with a column tuple (write one assignment per column)");
        }
    };
    let c = schema
        .column_index_exact(&n)
        .ok_or_else(|| SqlError::UnknownTargetColumn {
            column: n.clone(),
            table: schema.name.clone(),
        })?;
    if done.iter().any(|(x, _)| *x == c) {
        return Err(SqlError::Syntax(format!("multiple assignments to same column \"{n}\"")));
    }
    if schema.columns[c].generated_always && !is_default(&a.value) {
        return Err(SqlError::GeneratedAlways {
            column: n,
            update: true,
        });
    }
    Ok(c)
}

/// Plans an INSERT. `overriding`: values given to identity columns GENERATED ALWAYS are
/// taken (as `OVERRIDING SYSTEM VALUE` would: COPY FROM's bulk insert does so, as in
/// PostgreSQL); otherwise such a value is refused (428C9).
pub fn plan_insert(catalog: &Catalog, ins: &ast::Insert, overriding: bool) -> Result<Planned> {
    if ins.or.is_some() || ins.ignore || ins.replace_into || ins.partitioned.is_some() {
        return unsupported("INSERT OR REPLACE / INSERT IGNORE / INSERT ... PARTITION");
    }
    if !ins.assignments.is_empty() {
        return unsupported("INSERT ... SET");
    }
    let mut b = Binder::new(catalog);
    b.plan_subquery = Some(super::select::subquery);
    let name = match &ins.table {
        ast::TableObject::TableName(n) => n.clone(),
        _ => return unsupported("INSERT into a table function"),
    };
    let schema = b.table(&name)?;
    let conflict = ins.on.as_ref().map(|on| on_conflict(&schema, on)).transpose()?;
    // Column list: all columns in order by default (as many as the rows give; the others
    // take their defaults).
    let mut named: Vec<usize> = if ins.columns.is_empty() {
        (0..schema.columns.len()).collect()
    } else {
        let mut v = Vec::new();
        for c in &ins.columns {
            let n = crate::bind::object_name(c)?;
            let i = schema
                .column_index_exact(&n)
                .ok_or_else(|| SqlError::UnknownTargetColumn {
                    column: n.clone(),
                    table: schema.name.clone(),
                })?;
            if v.contains(&i) {
                return Err(SqlError::DuplicateColumn(format!(
                    "column \"{n}\" specified more than once"
                )));
            }
            v.push(i);
        }
        v
    };
    let inlined = match ins.source.as_deref() {
        Some(q) => inline_values_select(q),
        None => None,
    };
    let source = match inlined.as_ref().or(ins.source.as_deref()) {
        // DEFAULT VALUES: one row, every column its default.
        None => {
            named.clear();
            None
        }
        Some(q) => match q.body.as_ref() {
            SetExpr::Values(values) if q.order_by.is_none() && q.limit_clause.is_none() => {
                let width = values.rows.first().map_or(0, |r| r.len());
                if let Some(other) = values.rows.iter().find(|r| r.len() != width) {
                    let err = SqlError::Syntax("VALUES lists must all be the same length".into());
                    return Err(match other.first() {
                        Some(e) => err.at(crate::error::start_of(e), Point::Start),
                        None => err,
                    });
                }
                if ins.columns.is_empty() {
                    named.truncate(width);
                }
                // A column that is DEFAULT in every row is left out (it takes its default
                // as an unnamed column does, a serial column's next value included).
                let all_default: Vec<bool> = (0..width)
                    .map(|pos| values.rows.iter().all(|r| r.get(pos).is_some_and(is_default)))
                    .collect();
                let mut rows = Vec::with_capacity(values.rows.len());
                for row in &values.rows {
                    if let Some(extra) = row.get(named.len()) {
                        return Err(more_expressions().at(crate::error::start_of(extra), Point::Start));
                    }
                    if row.len() < named.len() {
                        let err = more_targets();
                        return Err(match ins.columns.get(row.len()) {
                            Some(c) => err.at(c.span(), Point::Start),
                            None => err,
                        });
                    }
                    let mut out = Vec::with_capacity(row.len());
                    for (pos, e) in row.iter().enumerate() {
                        if all_default[pos] {
                            continue;
                        }
                        if is_default(e) {
                            out.push(default_expr(&schema.columns[named[pos]])?);
                            continue;
                        }
                        let (x, _) = b.expr_in("VALUES", e)?;
                        let ty = schema.columns[named[pos]].ty;
                        literal_fits(e, &ty)?;
                        b.infer(&x, Some(ty));
                        out.push(x);
                    }
                    rows.push(out);
                }
                let mut pos = 0;
                named.retain(|_| {
                    pos += 1;
                    !all_default[pos - 1]
                });
                Some(InsertSource::Values(rows))
            }
            _ => {
                let (plan, cols) = select(&mut b, q)?;
                if ins.columns.is_empty() {
                    named.truncate(cols.len());
                }
                if cols.len() > named.len() {
                    let extra = match q.body.as_ref() {
                        SetExpr::Select(s) => s.projection.get(named.len()).map(super::select::item_start),
                        _ => None,
                    };
                    return Err(match extra {
                        Some(at) => more_expressions().at(at, Point::Start),
                        None => more_expressions(),
                    });
                }
                if cols.len() < named.len() {
                    return Err(more_targets());
                }
                b.rels.clear();
                Some(InsertSource::Select(Box::new(plan)))
            }
        },
    }
    .unwrap_or_else(|| InsertSource::Values(vec![vec![]]));
    if let Some(&c) = named
        .iter()
        .find(|&&c| schema.columns[c].generated_always && !overriding)
    {
        return Err(SqlError::GeneratedAlways {
            column: schema.columns[c].name.clone(),
            update: false,
        });
    }
    let mut targets = vec![None; schema.columns.len()];
    for (pos, &c) in named.iter().enumerate() {
        targets[c] = Some(pos);
    }
    b.rels.clear();
    b.add_rel(schema.clone(), ins.table_alias.as_ref().map(|a| &a.alias))?;
    let (ret, columns) = returning(&mut b, &ins.returning)?;
    let (skip_conflicts, update_conflicts) = match conflict {
        None => (None, None),
        Some(Conflict::Skip(s)) => (Some(s), None),
        Some(Conflict::Update(arbiters, set)) => (None, Some(conflict_update(&mut b, &schema, arbiters, set)?)),
    };
    if let Some(c) = &update_conflicts
        && crate::foreign::fk_plan(
            catalog,
            &schema,
            |k| c.assignments.iter().any(|(a, _)| *a == k),
            Writes::Updates,
        )?
        .is_some_and(|f| !f.referencing.is_empty())
    {
        return unsupported(
            "ON CONFLICT DO UPDATE of columns a foreign key references (use UPDATE for the rows in conflict)",
        );
    }
    let fk = crate::foreign::fk_plan(catalog, &schema, |_| true, Writes::Inserts)?;
    Ok(Planned {
        plan: Plan::Insert(InsertPlan {
            checks: crate::check::bound(&schema)?,
            fk,
            schema,
            targets,
            source,
            returning: ret,
            skip_conflicts,
            update_conflicts,
            init: std::mem::take(&mut b.init),
        }),
        params: b.params,
        array_params: b.array_params,
        columns,
    })
}

/// A quoted literal given for a column of type `ty` that is not text of that type is an
/// error at the literal (the value is converted where it is stored).
fn literal_fits(e: &ast::Expr, ty: &permafrost_types::DataType) -> Result<()> {
    if let ast::Expr::Value(v) = e
        && let ast::Value::SingleQuotedString(text) = &v.value
        && !ty.is_text()
        && let Err(err) = Value::parse(ty, text)
    {
        return Err(SqlError::from(err).at(v.span, Point::Start));
    }
    Ok(())
}

/// Whether a VALUES item is the keyword DEFAULT.
fn is_default(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"))
}

/// What DEFAULT in a VALUES row gives column `c` where other rows give it values.
fn default_expr(c: &permafrost_storage::Column) -> Result<Expr> {
    Ok(match &c.default {
        None => Expr::Const(Value::Null),
        Some(permafrost_storage::ColumnDefault::Value(v)) => Expr::Const(v.clone()),
        Some(permafrost_storage::ColumnDefault::CurrentTimestamp { .. }) => Expr::Now,
        Some(d @ (permafrost_storage::ColumnDefault::Random | permafrost_storage::ColumnDefault::RandomUuid)) => {
            crate::expr::volatile_default(d)
        }
        Some(permafrost_storage::ColumnDefault::NextVal {
            sequence,
            name,
            increment,
            min,
            max,
        }) => Expr::Func(
            crate::expr::Func::NextVal {
                table: *sequence,
                step: crate::sequence::SeqStep {
                    increment: *increment,
                    min: *min,
                    max: *max,
                },
            },
            vec![Expr::Const(Value::from(name.clone()))],
        ),
        Some(permafrost_storage::ColumnDefault::Sequence) => {
            return unsupported(format!(
                "DEFAULT for serial column \"{}\" in some VALUES rows but not all (write DEFAULT in every row, or leave the column out)",
                c.name
            ));
        }
    })
}

fn more_expressions() -> SqlError {
    SqlError::Syntax("INSERT has more expressions than target columns".into())
}

fn more_targets() -> SqlError {
    SqlError::Syntax("INSERT has more target columns than expressions".into())
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
        b.expr_in("WHERE", w)?.0.conjuncts(&mut conjuncts);
    }
    let (mut rels, pre) = plan_joins(b, conjuncts, Vec::new())?;
    let mut target = rels.pop().expect("one relation");
    // Predicates on no column (e.g. `WHERE $1`) are checked per row too.
    target.filters.extend(pre);
    Ok(target)
}

pub fn plan_update(catalog: &Catalog, u: &ast::Update) -> Result<Planned> {
    if u.or.is_some() {
        return unsupported("UPDATE OR ... (SQLite's conflict clauses)");
    }
    let joined = match &u.from {
        None => None,
        Some(ast::UpdateTableFromKind::BeforeSet(others) | ast::UpdateTableFromKind::AfterSet(others)) => {
            if !u.table.joins.is_empty() {
                return unsupported("UPDATE/DELETE with joins");
            }
            let values: Vec<&ast::Expr> = u.assignments.iter().map(|a| &a.value).collect();
            Some(super::joined_write::rewrite(
                catalog,
                &u.table.relation,
                others,
                u.selection.as_ref(),
                &values,
                u.returning.as_deref(),
            )?)
        }
    };
    let selection = joined.as_ref().map_or(&u.selection, |j| &j.selection);
    let mut b = Binder::new(catalog);
    b.plan_subquery = Some(super::select::subquery);
    single_target(&mut b, &u.table)?;
    let schema = b.rels[0].schema.clone();
    let mut assignments: Vec<(usize, Expr)> = Vec::new();
    for (i, a) in u.assignments.iter().enumerate() {
        let value = joined.as_ref().map_or(&a.value, |j| &j.values[i]);
        let c = assignment_column(&schema, a, &assignments)?;
        let (x, _) = b.expr_in("UPDATE", value)?;
        literal_fits(value, &schema.columns[c].ty)?;
        b.infer(&x, Some(schema.columns[c].ty));
        assignments.push((c, x));
    }
    let target = target_plan(&mut b, selection)?;
    let (ret, columns) = returning(&mut b, &u.returning)?;
    let fk = crate::foreign::fk_plan(
        catalog,
        &schema,
        |k| assignments.iter().any(|(a, _)| *a == k),
        Writes::Updates,
    )?;
    Ok(Planned {
        plan: Plan::Update(UpdatePlan {
            checks: crate::check::bound(&schema)?,
            fk,
            target,
            assignments,
            returning: ret,
            init: std::mem::take(&mut b.init),
        }),
        params: b.params,
        array_params: b.array_params,
        columns,
    })
}

pub fn plan_delete(catalog: &Catalog, d: &ast::Delete) -> Result<Planned> {
    if !d.order_by.is_empty() || d.limit.is_some() || !d.tables.is_empty() {
        return unsupported("DELETE ... ORDER BY / LIMIT (MySQL's; use WHERE ... IN (SELECT ... LIMIT n))");
    }
    let mut b = Binder::new(catalog);
    b.plan_subquery = Some(super::select::subquery);
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
    };
    match from.as_slice() {
        [t] => single_target(&mut b, t)?,
        _ => return unsupported("DELETE from several tables"),
    }
    let joined = match (&d.using, from.as_slice()) {
        (Some(others), [t]) => Some(super::joined_write::rewrite(
            catalog,
            &t.relation,
            others,
            d.selection.as_ref(),
            &[],
            d.returning.as_deref(),
        )?),
        _ => None,
    };
    let selection = joined.as_ref().map_or(&d.selection, |j| &j.selection);
    let target = target_plan(&mut b, selection)?;
    let (ret, columns) = returning(&mut b, &d.returning)?;
    let fk = crate::foreign::fk_plan(catalog, &target.schema, |_| false, Writes::Deletes)?;
    Ok(Planned {
        plan: Plan::Delete(DeletePlan {
            fk,
            target,
            returning: ret,
            init: std::mem::take(&mut b.init),
        }),
        params: b.params,
        array_params: b.array_params,
        columns,
    })
}

trait ExactColumn {
    fn column_index_exact(&self, name: &str) -> Option<usize>;
}

impl ExactColumn for TableSchema {
    fn column_index_exact(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}
