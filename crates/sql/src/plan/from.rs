//! The FROM clause and the queries that stand as relations: tables, views, WITH queries,
//! subqueries in FROM, VALUES, generate_series; joins (inner, outer, USING, NATURAL,
//! parenthesized) and the columns `SELECT *` shows.

use std::sync::Arc;

use permafrost_types::DataType;
use sqlparser::ast::{self, JoinConstraint, JoinOperator, TableFactor};

use super::access::OuterJoin;
use super::full_join::{FullJoin, SideColumn, plain_table, quoted, two_tables};
use super::set_functions::{json_rows, regexp_matches, rewritten_args, series, unnest};
use super::tree::*;
use crate::bind::{Binder, Cte, common_type, ident};
use crate::error::{Point, Result, SqlError, shown, unsupported};
use crate::expr::Expr;
use crate::rows::ColumnInfo;

/// The ON conditions of a FROM clause as they are read, and the groups of relations its
/// outer joins null-extend.
#[derive(Default)]
pub(super) struct Joins {
    /// Each ON condition: the group it belongs to (`None`: an inner join's, read as a
    /// WHERE condition), the relations it may read (its join's sides), and the condition.
    pub(super) on: Vec<(Option<u64>, u64, ast::Expr)>,
    /// The relations (as bits) of each group null-extended together: a LEFT JOIN's right
    /// side, a RIGHT JOIN's left side (one relation, or a join's), a FULL JOIN's second
    /// relation.
    pub(super) groups: Vec<u64>,
    /// Whether the FROM item read next is the query's only one (a FULL JOIN of two tables
    /// there is planned directly); read once.
    pub(super) alone: bool,
}

/// Adds the FROM relations to the binder's scope and returns the conjuncts of the inner
/// joins' conditions and the WHERE clause, and the groups outer joins null-extend, each
/// with its conditions (its ON conditions and those of the inner joins inside it).
pub(super) fn from_and_where(b: &mut Binder<'_>, s: &ast::Select) -> Result<(Vec<Expr>, Vec<OuterJoin>)> {
    let mut conjuncts = Vec::new();
    let mut joins = Joins {
        alone: s.from.len() == 1,
        ..Joins::default()
    };
    for twj in &s.from {
        let cols = from_item(b, twj, &mut joins)?;
        b.star.extend(cols);
    }
    let mut outer: Vec<OuterJoin> = joins
        .groups
        .iter()
        .map(|&rels| OuterJoin {
            rels,
            on: Vec::new(),
            full: b.full_join.is_some_and(|r| rels == 1 << r),
        })
        .collect();
    for (group, visible, e) in &joins.on {
        let mut on = Vec::new();
        let bound = b.expr_in("JOIN conditions", e)?.0;
        if let Some(hidden) = (0..b.rels.len()).find(|&r| bound.rels() & !visible & (1 << r) != 0) {
            let alias = b.rels[hidden].alias.clone();
            let err = SqlError::FromEntryHidden(alias.clone());
            return Err(match reference_to(e, &alias) {
                Some(span) => err.at(span, Point::Start),
                None => err,
            });
        }
        bound.conjuncts(&mut on);
        match group {
            None => conjuncts.extend(on),
            Some(g) => match outer.iter_mut().find(|o| o.rels == *g) {
                Some(o) => o.on.extend(on),
                None => unreachable!("a group's conditions without the group"),
            },
        }
    }
    if let Some(w) = &s.selection {
        let (e, _) = b.expr_in("WHERE", w)?;
        e.conjuncts(&mut conjuncts);
    }
    Ok((conjuncts, outer))
}

/// Where expression `e` first reads a column of `alias` by its name (`alias.column`).
fn reference_to(e: &impl ast::Visit, alias: &str) -> Option<sqlparser::tokenizer::Span> {
    use sqlparser::ast::Spanned;
    let mut found = None;
    let _ = ast::visit_expressions(e, |x| {
        if let ast::Expr::CompoundIdentifier(parts) = x
            && parts.len() == 2
            && ident(&parts[0]) == alias
        {
            found = Some(x.span());
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    found
}

/// A FROM item added to the scope: its relation when it is one, and the columns `SELECT *`
/// shows of it.
type Added = (Option<usize>, Vec<(usize, usize)>);

/// The relations `from..to` as bits.
fn span(from: usize, to: usize) -> u64 {
    (from..to).fold(0, |m, r| m | 1 << r)
}

/// Adds the relations of one FROM item (a relation and the joins after it) to the scope,
/// and their ON conditions to `joins`, with the group each belongs to: an outer join's to
/// the group it null-extends (a LEFT JOIN's right side, a RIGHT JOIN's left side, each one
/// relation or a join's), an inner join's to the group it is inside, or to none (read as
/// WHERE conditions). A parenthesized join without an alias, `(a CROSS JOIN b)`, joins its
/// relations as if they were written in place. `JOIN ... USING (columns)` and `NATURAL
/// JOIN` are joins on the equality of those columns, each shown once by `SELECT *` and
/// found once by an unqualified name. Gives the item's columns as `SELECT *` shows them.
pub(super) fn from_item(
    b: &mut Binder<'_>,
    twj: &ast::TableWithJoins,
    joins: &mut Joins,
) -> Result<Vec<(usize, usize)>> {
    let add = |b: &mut Binder<'_>, f: &TableFactor, joins: &mut Joins| -> Result<Added> {
        match f {
            TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => Ok((None, from_item(b, table_with_joins, joins)?)),
            f => {
                let rel = add_factor(b, f)?;
                let cols = (0..b.rels[rel].schema.columns.len()).map(|c| (rel, c)).collect();
                Ok((Some(rel), cols))
            }
        }
    };
    // The inner joins' conditions from `since` on, read from now on as group `g`'s.
    let into_group = |joins: &mut Joins, since: usize, until: usize, g: u64| {
        for (group, _, _) in &mut joins.on[since..until] {
            if group.is_none() {
                *group = Some(g);
            }
        }
    };
    let first = b.rels.len();
    let item_on = joins.on.len();
    let alone = std::mem::take(&mut joins.alone);
    // A FULL JOIN other than the query's only two tables: everything up to the last one
    // is one relation (`plan/full_join.rs`).
    let last_full = twj
        .joins
        .iter()
        .rposition(|j| matches!(j.join_operator, JoinOperator::FullOuter(_)));
    let ((left, mut cols), rest) = match last_full {
        Some(k) if !(alone && first == 0 && two_tables(b, twj)) => (lift_full_join(b, twj, k)?, &twj.joins[k + 1..]),
        _ => (add(b, &twj.relation, joins)?, &twj.joins[..]),
    };
    for j in rest {
        // The left side so far, when it is one relation.
        let lone_left = left.filter(|_| b.rels.len() == first + 1);
        let before_right = b.rels.len();
        let right_on = joins.on.len();
        let (right, right_cols) = add(b, &j.relation, joins)?;
        let (left_rels, right_rels) = (span(first, before_right), span(before_right, b.rels.len()));
        let (constraint, null_extended) = match &j.join_operator {
            JoinOperator::Join(c) | JoinOperator::Inner(c) => (c, None),
            JoinOperator::CrossJoin(c @ JoinConstraint::None) => (c, None),
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => {
                into_group(joins, right_on, joins.on.len(), right_rels);
                (c, Some(right_rels))
            }
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) => {
                into_group(joins, item_on, right_on, left_rels);
                (c, Some(left_rels))
            }
            JoinOperator::FullOuter(c) => {
                let (Some(_), Some(rel)) = (lone_left, right) else {
                    return unsupported("FULL JOIN of more than two relations");
                };
                if !matches!(c, JoinConstraint::On(_)) {
                    return unsupported("FULL JOIN ... USING / NATURAL (write the ON condition)");
                }
                b.full_join = Some(rel);
                (c, Some(right_rels))
            }
            _ => return unsupported(format!("this kind of join: {}", shown(j).trim_start())),
        };
        if let Some(g) = null_extended {
            joins.groups.push(g);
        }
        // A LATERAL item on the right may read the left side only where the left side is
        // not null-extended.
        if matches!(j.join_operator, JoinOperator::FullOuter(_)) || null_extended == Some(left_rels) {
            lateral_not_reading(b, right_rels, left_rels, &j.relation)?;
        }
        let kind = match &j.join_operator {
            JoinOperator::FullOuter(_) => "FULL JOIN",
            _ if null_extended.is_none() => "JOIN",
            _ if null_extended == Some(right_rels) => "LEFT JOIN",
            _ => "RIGHT JOIN",
        };
        let visible = left_rels | right_rels;
        let names: Vec<String> = match constraint {
            JoinConstraint::On(e) => {
                joins.on.push((null_extended, visible, e.clone()));
                cols.extend(right_cols);
                continue;
            }
            JoinConstraint::None if null_extended.is_some() => {
                return Err(SqlError::Syntax(format!("{kind} needs an ON condition")));
            }
            JoinConstraint::None => {
                cols.extend(right_cols);
                continue;
            }
            JoinConstraint::Using(names) => names.iter().map(crate::bind::object_name).collect::<Result<_>>()?,
            JoinConstraint::Natural => common_names(b, &cols, &right_cols),
        };
        let (merged, rest_left, rest_right) = using_columns(b, &names, &cols, &right_cols)?;
        for (l, r) in &merged {
            let qualified = |&(rel, col): &(usize, usize)| {
                ast::Expr::CompoundIdentifier(vec![
                    ast::Ident::with_quote('"', b.rels[rel].alias.clone()),
                    ast::Ident::with_quote('"', b.rels[rel].schema.columns[col].name.clone()),
                ])
            };
            joins.on.push((
                null_extended,
                visible,
                ast::Expr::BinaryOp {
                    left: Box::new(qualified(l)),
                    op: ast::BinaryOperator::Eq,
                    right: Box::new(qualified(r)),
                },
            ));
        }
        // The merged column is the side's that is never null-extended.
        let right_wins = null_extended == Some(left_rels);
        let mut shown = Vec::with_capacity(cols.len() + right_cols.len());
        for &(l, r) in &merged {
            let (keep, hide) = if right_wins { (r, l) } else { (l, r) };
            shown.push(keep);
            b.hidden.push(hide);
        }
        shown.extend(rest_left);
        shown.extend(rest_right);
        cols = shown;
    }
    Ok(cols)
}

/// The names of the columns `left` and `right` both have (as `SELECT *` shows them), in
/// the right side's order: what `NATURAL JOIN` joins on.
fn common_names(b: &Binder<'_>, left: &[(usize, usize)], right: &[(usize, usize)]) -> Vec<String> {
    let name = |&(r, c): &(usize, usize)| b.rels[r].schema.columns[c].name.clone();
    let on_left: Vec<String> = left.iter().map(name).collect();
    let mut common: Vec<String> = Vec::new();
    for n in right.iter().map(name) {
        if on_left.contains(&n) && !common.contains(&n) {
            common.push(n);
        }
    }
    common
}

/// Refuses a LATERAL item among `right` (relations as bits) that reads one of `left`,
/// which the join null-extends (42P10, as PostgreSQL).
/// (`written`: the right side as written, where the error points at the reference.)
fn lateral_not_reading(b: &Binder<'_>, right: u64, left: u64, written: &TableFactor) -> Result<()> {
    let read = b
        .lateral
        .iter()
        .filter(|(r, _)| right & (1 << r) != 0)
        .flat_map(|(_, l)| &l.args)
        .fold(0u64, |m, a| m | a.rels())
        & left;
    if read != 0 {
        let name = b.rels[read.trailing_zeros() as usize].alias.clone();
        let at = reference_to(written, &name);
        let err = SqlError::LateralJoinType(name);
        return Err(match at {
            Some(span) => err.at(span, Point::Start),
            None => err,
        });
    }
    Ok(())
}

/// FROM item `twj` up to its FULL JOIN `k` (the last one) as one relation of the query,
/// the subquery `plan/full_join.rs` writes. The two sides are bound once here, in a
/// scope of their own, to learn their columns. Gives the relation and the columns
/// `SELECT *` shows.
fn lift_full_join(b: &mut Binder<'_>, twj: &ast::TableWithJoins, k: usize) -> Result<Added> {
    let left = ast::TableWithJoins {
        relation: twj.relation.clone(),
        joins: twj.joins[..k].to_vec(),
    };
    let j = &twj.joins[k];
    let JoinOperator::FullOuter(constraint) = &j.join_operator else {
        unreachable!("join {k} is a FULL JOIN")
    };
    let full = b.in_own_scope(|sub| {
        let mut joins = Joins::default();
        let left_star = from_item(sub, &left, &mut joins)?;
        let nl = sub.rels.len();
        let right_star = match &j.relation {
            TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => from_item(sub, table_with_joins, &mut joins)?,
            f => {
                let r = add_factor(sub, f)?;
                (0..sub.rels[r].schema.columns.len()).map(|c| (r, c)).collect()
            }
        };
        lateral_not_reading(sub, span(nl, sub.rels.len()), span(0, nl), &j.relation)?;
        let mut columns = Vec::new();
        let mut offsets = Vec::with_capacity(sub.rels.len());
        for (r, rel) in sub.rels.iter().enumerate() {
            offsets.push(columns.len());
            for (c, col) in rel.schema.columns.iter().enumerate() {
                let member = match &rel.members {
                    Some(m) => m[c].clone(),
                    None => Some(rel.alias.clone()),
                };
                columns.push(SideColumn {
                    rel: member.clone().unwrap_or_else(|| rel.alias.clone()),
                    name: col.name.clone(),
                    member,
                    hidden: sub.hidden.contains(&(r, c)),
                });
            }
        }
        let index = |&(r, c): &(usize, usize)| offsets[r] + c;
        let names = match constraint {
            JoinConstraint::On(_) => Vec::new(),
            JoinConstraint::Using(names) => names.iter().map(crate::bind::object_name).collect::<Result<_>>()?,
            JoinConstraint::Natural => common_names(sub, &left_star, &right_star),
            _ => return Err(SqlError::Syntax("FULL JOIN needs an ON condition".into())),
        };
        let (pairs, _, _) = using_columns(sub, &names, &left_star, &right_star)?;
        let merged: Vec<(usize, usize)> = pairs.iter().map(|(l, r)| (index(l), index(r))).collect();
        let q = |i: usize| format!("{}.{}", quoted(&columns[i].rel), quoted(&columns[i].name));
        let on = match constraint {
            JoinConstraint::On(e) => e.to_string(),
            _ if merged.is_empty() => "TRUE".into(),
            _ => merged
                .iter()
                .map(|&(l, r)| format!("{} = {}", q(l), q(r)))
                .collect::<Vec<_>>()
                .join(" AND "),
        };
        Ok(FullJoin {
            left: offsets.get(nl).copied().unwrap_or(columns.len()),
            columns,
            left_star: left_star.iter().map(index).collect(),
            right_star: right_star.iter().map(index).collect(),
            merged,
            on,
            left_sql: left.to_string(),
            right_sql: j.relation.to_string(),
        })
    })?;
    let relation = full.relation();
    let mut inside: Vec<&str> = Vec::new();
    for m in relation.members.iter().flatten() {
        if !inside.contains(&m.as_str()) {
            b.alias_unused(m)?;
            inside.push(m);
        }
    }
    let ast::Statement::Query(q) = crate::parse::parse_statement(&relation.sql)? else {
        unreachable!("a FULL JOIN's relation is a query")
    };
    let rel = derived(b, &q, format!("full join of {}", inside.join(", ")), &relation.names)?;
    b.rels[rel].members = Some(relation.members.into());
    b.hidden.extend(relation.hidden.iter().map(|&c| (rel, c)));
    Ok((Some(rel), relation.star.iter().map(|&c| (rel, c)).collect()))
}

/// For `JOIN ... USING (names)` between the columns `left` and `right` (as `SELECT *`
/// shows them): each name's column on either side, and the other columns of each side.
#[allow(clippy::type_complexity)]
pub(super) fn using_columns(
    b: &Binder<'_>,
    names: &[String],
    left: &[(usize, usize)],
    right: &[(usize, usize)],
) -> Result<(
    Vec<((usize, usize), (usize, usize))>,
    Vec<(usize, usize)>,
    Vec<(usize, usize)>,
)> {
    let name = |&(r, c): &(usize, usize)| b.rels[r].schema.columns[c].name.as_str();
    let one = |side: &[(usize, usize)], n: &str, which: &str| -> Result<(usize, usize)> {
        let found: Vec<(usize, usize)> = side.iter().copied().filter(|x| name(x) == n).collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(SqlError::UsingColumnMissing(format!(
                "column \"{n}\" specified in USING clause does not exist in {which} table"
            ))),
            _ => Err(SqlError::UsingColumnAmbiguous(format!(
                "common column name \"{n}\" appears more than once in {which} table"
            ))),
        }
    };
    let mut merged = Vec::with_capacity(names.len());
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(SqlError::DuplicateColumn(format!(
                "column name \"{n}\" appears more than once in USING clause"
            )));
        }
        merged.push((one(left, n, "left")?, one(right, n, "right")?));
    }
    let rest_left = left
        .iter()
        .copied()
        .filter(|x| !merged.iter().any(|(l, _)| l == x))
        .collect();
    let rest_right = right
        .iter()
        .copied()
        .filter(|x| !merged.iter().any(|(_, r)| r == x))
        .collect();
    Ok((merged, rest_left, rest_right))
}

pub(super) fn add_factor(b: &mut Binder<'_>, f: &TableFactor) -> Result<usize> {
    if let Some((name, alias)) = plain_table(f) {
        return table(b, name, alias);
    }
    match f {
        TableFactor::Derived {
            lateral,
            subquery: q,
            alias,
            sample: None,
        } => {
            let Some(alias) = alias else {
                return Err(SqlError::SubqueryAlias.at(crate::error::query_start(q), Point::Before));
            };
            let names: Vec<String> = alias.columns.iter().map(|c| ident(&c.name)).collect();
            if !*lateral {
                return derived(b, q, ident(&alias.name), &names);
            }
            let Some(planner) = b.plan_subquery else {
                return unsupported("a LATERAL subquery here");
            };
            let ((tree, columns), args) = b.in_lateral_scope(|sub| planner(sub, q))?;
            lateral_tree(b, Lateral { query: tree, args }, columns, ident(&alias.name), &names)
        }
        TableFactor::Table {
            name,
            alias,
            args: Some(args),
            with_hints,
            version: None,
            partitions,
            with_ordinality,
            ..
        } if with_hints.is_empty() && partitions.is_empty() => function(b, name, &args.args, *with_ordinality, alias),
        TableFactor::Function {
            name,
            args,
            with_ordinality,
            alias,
            ..
        } => function(b, name, args, *with_ordinality, alias),
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_offset: false,
            with_offset_alias: None,
            with_ordinality,
        } => {
            let args: Vec<ast::FunctionArg> = array_exprs
                .iter()
                .map(|e| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e.clone())))
                .collect();
            let name = ast::ObjectName::from(vec![ast::Ident::new("unnest")]);
            function(b, &name, &args, *with_ordinality, alias)
        }
        other => unsupported(format!("this FROM item: {}", shown(other))),
    }
}

/// A FROM item naming a table, a view or a WITH query.
fn table(b: &mut Binder<'_>, name: &ast::ObjectName, alias: Option<&ast::TableAlias>) -> Result<usize> {
    if let Some(a) = alias.filter(|a| !a.columns.is_empty()) {
        // `t AS c(x, y)`: read as `(SELECT * FROM t) AS c(x, y)`, which is pulled
        // up into the query as any simple subquery is.
        let ast::Statement::Query(q) = crate::parse::parse_statement(&format!("SELECT * FROM {name}"))? else {
            return unsupported("column aliases of this FROM item");
        };
        let names: Vec<String> = a.columns.iter().map(|c| ident(&c.name)).collect();
        return derived(b, &q, ident(&a.name), &names);
    }
    let n = crate::bind::object_name(name)?;
    if name.0.len() == 1
        && let Some(i) = b.ctes.iter().rposition(|c| c.name == n)
    {
        let cte = b.ctes[i].clone();
        let alias = alias.map_or(n, |a| ident(&a.name));
        if let Some((slot, columns)) = &cte.working {
            // A recursive step reading its own query's rows so far.
            let tree = SetTree::Working {
                slot: *slot,
                columns: columns.clone(),
            };
            return derived_tree(b, tree, columns.to_vec(), alias, &[]);
        }
        if cte.recursive {
            // Seeing the ones before it, and itself in its step.
            let later = b.ctes.split_off(i + 1);
            let r = recursive(b, &cte).and_then(|(tree, columns)| derived_tree(b, tree, columns, alias, &[]));
            b.ctes.extend(later);
            return r;
        }
        // A WITH query, planned seeing only the ones before it.
        let later = b.ctes.split_off(i);
        let r = derived(b, &cte.query, alias, &cte.columns);
        b.ctes.extend(later);
        return r;
    }
    if let Some(view) = b.catalog.view(&n).cloned() {
        // A view is its query, in FROM (named by its bare name, as a table).
        let alias = alias.map_or_else(|| crate::namespace::bare(&n).to_string(), |a| ident(&a.name));
        return derived(b, &view.query, alias, &view.columns);
    }
    let schema = b.table(name)?;
    b.add_rel(schema, alias.map(|a| &a.name))
}

/// Adds query `q` (a subquery in FROM, or a view's) as a relation of the query, named
/// `alias`, its first columns named `names`.
pub(super) fn derived(b: &mut Binder<'_>, q: &ast::Query, alias: String, names: &[String]) -> Result<usize> {
    let Some(planner) = b.plan_subquery else {
        return unsupported("a subquery in FROM here");
    };
    let (tree, columns) = b.in_own_scope(|sub| planner(sub, q))?;
    derived_tree(b, tree, columns, alias, names)
}

/// Adds the rows of `tree`, of result columns `columns`, as a relation of the query named
/// `alias`, its first columns named `names`.
pub(super) fn derived_tree(
    b: &mut Binder<'_>,
    tree: SetTree,
    columns: Vec<ColumnInfo>,
    alias: String,
    names: &[String],
) -> Result<usize> {
    let columns = named(columns, names, &alias)?;
    let ident = ast::Ident::with_quote('"', alias.clone());
    let rel = b.add_rel(Arc::new(derived_schema(alias, &columns)), Some(&ident))?;
    b.derived.push(DerivedRel { rel, query: tree });
    Ok(rel)
}

/// A function call in FROM (`generate_series` is the one taken), which may read the FROM
/// items before it (as PostgreSQL, with or without LATERAL); `WITH ORDINALITY` adds a
/// column numbering its rows.
fn function(
    b: &mut Binder<'_>,
    name: &ast::ObjectName,
    args: &[ast::FunctionArg],
    ordinality: bool,
    alias: &Option<ast::TableAlias>,
) -> Result<usize> {
    let (called, n) = (name, crate::bind::object_name(name)?);
    let name = n.strip_prefix("pg_catalog.").unwrap_or(&n);
    let ((tree, columns), args) = match name {
        "generate_series" => b.in_lateral_scope(|sub| series(sub, args, ordinality))?,
        "unnest" => b.in_lateral_scope(|sub| unnest(sub, args, ordinality))?,
        // generate_subscripts(a, d): the series 1 .. array_length(a, d) (none for an empty
        // array, another dimension or NULL, as PostgreSQL gives none).
        "generate_subscripts" => {
            let args = match args {
                [a, d] => rewritten_args("1, array_length({0}, {1})", &[a, d])?,
                _ => return unsupported("generate_subscripts with these arguments (array, dimension)"),
            };
            b.in_lateral_scope(|sub| series(sub, &args, ordinality))?
        }
        // regexp_split_to_table(s, p [, flags]): the elements of regexp_split_to_array.
        "regexp_split_to_table" => {
            let args = match args {
                [s, p] => rewritten_args("regexp_split_to_array({0}, {1})", &[s, p])?,
                [s, p, f] => rewritten_args("regexp_split_to_array({0}, {1}, {2})", &[s, p, f])?,
                _ => return Err(SqlError::UnknownFunction(format!("{name} with these arguments"))),
            };
            b.in_lateral_scope(|sub| unnest(sub, &args, ordinality))?
        }
        "regexp_matches" => b.in_lateral_scope(|sub| regexp_matches(sub, called, args, ordinality))?,
        "jsonb_array_elements"
        | "jsonb_array_elements_text"
        | "json_array_elements"
        | "json_array_elements_text"
        | "jsonb_object_keys"
        | "jsonb_each"
        | "jsonb_each_text" => b.in_lateral_scope(|sub| json_rows(sub, name, args, ordinality))?,
        _ => {
            return unsupported(format!(
                "function {n} in FROM (generate_series, unnest, generate_subscripts, regexp_split_to_table, regexp_matches \
                 and the json functions that give rows are the ones taken)"
            ));
        }
    };
    let aliased = alias.is_some();
    let (alias, names) = match alias {
        Some(a) => (
            ident(&a.name),
            a.columns.iter().map(|c| ident(&c.name)).collect::<Vec<_>>(),
        ),
        None => (name.to_string(), Vec::new()),
    };
    // A function of one column (with ordinality, two) names it after its alias, as in
    // PostgreSQL; unnest of several arrays keeps its columns' names (unnest, unnest, ...).
    // (The json functions name their columns `value`, `key`: without an alias those
    // names stay.)
    let names = match names.is_empty() {
        true if columns.len() - usize::from(ordinality) == 1 && (aliased || !name.starts_with("json")) => {
            vec![alias.clone()]
        }
        _ => names,
    };
    lateral_tree(b, Lateral { query: tree, args }, columns, alias, &names)
}

/// Adds the rows of a LATERAL item of FROM as a relation of the query named `alias`, its
/// first columns named `names`: computed once, as any subquery in FROM, when it reads
/// nothing around it; else per entry of its level.
fn lateral_tree(
    b: &mut Binder<'_>,
    lateral: Lateral,
    columns: Vec<ColumnInfo>,
    alias: String,
    names: &[String],
) -> Result<usize> {
    if lateral.args.is_empty() {
        return derived_tree(b, lateral.query, columns, alias, names);
    }
    let columns = named(columns, names, &alias)?;
    let ident = ast::Ident::with_quote('"', alias.clone());
    let rel = b.add_rel(Arc::new(derived_schema(alias, &columns)), Some(&ident))?;
    b.lateral.push((rel, Arc::new(lateral)));
    Ok(rel)
}

/// How many columns a side gives.
/// A query of `WITH RECURSIVE`: `base UNION [ALL] step`, the step reading the query's own
/// name as the rows the last run added; one whose step does not read it, or that is no
/// UNION, is planned as any WITH query.
fn recursive(b: &mut Binder<'_>, cte: &Cte) -> Result<(SetTree, Vec<ColumnInfo>)> {
    static SLOTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    let Some(planner) = b.plan_subquery else {
        return unsupported("a WITH query here");
    };
    let q = &cte.query;
    let ast::SetExpr::SetOperation {
        op: ast::SetOperator::Union,
        set_quantifier,
        left,
        right,
    } = q.body.as_ref()
    else {
        let (tree, columns) = b.in_own_scope(|sub| planner(sub, q))?;
        return Ok((tree, named(columns, &cte.columns, &cte.name)?));
    };
    if q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return unsupported("ORDER BY / LIMIT in a recursive query");
    }
    let all = match set_quantifier {
        ast::SetQuantifier::All => true,
        ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
        other => return unsupported(format!("set operations {other}")),
    };
    let side = |e: &ast::SetExpr| {
        let mut s = q.clone();
        *s.body = e.clone();
        s.with = None;
        s
    };
    let (base, columns) = b.in_own_scope(|sub| planner(sub, &side(left)))?;
    let columns = named(columns, &cte.columns, &cte.name)?;
    let slot = SLOTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let shared: Arc<[ColumnInfo]> = columns.clone().into();
    b.ctes.push(Arc::new(Cte {
        name: cte.name.clone(),
        query: q.clone(),
        columns: cte.columns.clone(),
        recursive: false,
        working: Some((slot, shared.clone())),
    }));
    let stepped = b.in_own_scope(|sub| planner(sub, &side(right)));
    b.ctes.pop();
    let (step, step_columns) = stepped?;
    if step_columns.len() != columns.len() {
        return Err(SqlError::Syntax(
            "each UNION query must have the same number of columns".into(),
        ));
    }
    let reads_itself = {
        let mut found = false;
        reads_working(&step, slot, &mut found);
        found
    };
    let tree = if reads_itself {
        SetTree::Recursive {
            base: Box::new(base),
            step: Box::new(step),
            all,
            slot,
            columns: shared,
        }
    } else {
        SetTree::Compound(Box::new(CompoundPlan {
            tree: SetTree::Op {
                op: SetOp::Union,
                all,
                left: Box::new(base),
                right: Box::new(step),
            },
            columns: shared,
            order: Vec::new(),
            limit: None,
            offset: None,
        }))
    };
    Ok((tree, columns))
}

/// Whether `t` reads the working rows of `slot` anywhere (its subqueries included).
fn reads_working(t: &SetTree, slot: usize, found: &mut bool) {
    match t {
        SetTree::Working { slot: s, .. } => *found |= *s == slot,
        SetTree::Recursive { base, step, .. } => {
            reads_working(base, slot, found);
            reads_working(step, slot, found);
        }
        SetTree::Op { left, right, .. } => {
            reads_working(left, slot, found);
            reads_working(right, slot, found);
        }
        SetTree::Compound(c) => reads_working(&c.tree, slot, found),
        SetTree::Select { plan, .. } => {
            for d in &plan.derived {
                reads_working(&d.query, slot, found);
            }
            for ip in &plan.init {
                reads_working(&ip.query, slot, found);
            }
            for l in plan.rels.iter().filter_map(|r| r.lateral.as_ref()) {
                reads_working(&l.query, slot, found);
            }
        }
        SetTree::Values { .. } | SetTree::Series { .. } | SetTree::Unnest { .. } => {}
    }
}

/// Result columns `columns`, the first renamed `names` (a column list given with the
/// alias `alias`); more names than columns is 42P10.
fn named(mut columns: Vec<ColumnInfo>, names: &[String], alias: &str) -> Result<Vec<ColumnInfo>> {
    if names.len() > columns.len() {
        return Err(SqlError::ColumnAliases(format!(
            "table \"{alias}\" has {} columns available but {} columns specified",
            columns.len(),
            names.len()
        )));
    }
    for (c, n) in columns.iter_mut().zip(names) {
        c.name = n.clone();
    }
    Ok(columns)
}

/// `VALUES (...), ...` as a query: each row's expressions bound with no relation (and no
/// subquery), the columns' types resolved over the rows as UNION's are.
pub(super) fn values(b: &mut Binder<'_>, v: &ast::Values) -> Result<SetTree> {
    let mut rows = Vec::with_capacity(v.rows.len());
    let mut types: Vec<Option<DataType>> = Vec::new();
    // A quoted literal has no type of its own (PostgreSQL's "unknown"): it takes its
    // column's, text when the column has no other.
    let mut literal: Vec<bool> = Vec::new();
    let unknown =
        |e: &ast::Expr| matches!(e, ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_)));
    for (i, row) in v.rows.iter().enumerate() {
        let bound = b.in_own_scope(|sub| {
            let r = row
                .iter()
                .map(|e| sub.expr_in("VALUES", e))
                .collect::<Result<Vec<_>>>()?;
            if !sub.init.is_empty() {
                return unsupported("a subquery in VALUES");
            }
            Ok(r)
        })?;
        if i == 0 {
            types = vec![None; bound.len()];
            literal = vec![false; bound.len()];
        } else if bound.len() != types.len() {
            return Err(SqlError::Syntax("VALUES lists must all be the same length".into()));
        }
        for ((t, (_, bt)), (lit, e)) in types.iter_mut().zip(&bound).zip(literal.iter_mut().zip(row.iter())) {
            if unknown(e) {
                *lit = true;
                continue;
            }
            *t = match (*t, *bt) {
                (None, x) | (x, None) => x,
                (Some(x), Some(y)) => Some(common_type(x, y).map_err(|_| {
                    SqlError::Type(format!(
                        "VALUES types {} and {} cannot be matched",
                        x.sql_name(),
                        y.sql_name()
                    ))
                })?),
            };
        }
        rows.push(bound.into_iter().map(|(e, _)| e).collect());
    }
    let columns: Vec<ColumnInfo> = types
        .into_iter()
        .zip(literal)
        .enumerate()
        .map(|(i, (ty, lit))| ColumnInfo {
            name: format!("column{}", i + 1),
            ty: ty.or(lit.then_some(DataType::Varchar(None))),
        })
        .collect();
    Ok(SetTree::Values {
        rows,
        columns: columns.into(),
    })
}

/// Plans query `q` with `f`, the queries of its WITH list (common table expressions)
/// named in FROM as subqueries are (each planned where it is named, seeing the ones
/// before it; `f` is given `q` without its WITH list). WITH RECURSIVE is refused.
pub(super) fn with_ctes<'c, T>(
    b: &mut Binder<'c>,
    q: &ast::Query,
    f: impl FnOnce(&mut Binder<'c>, &ast::Query) -> Result<T>,
) -> Result<T> {
    let Some(with) = &q.with else {
        return f(b, q);
    };
    let before = b.ctes.len();
    for cte in &with.cte_tables {
        let name = ident(&cte.alias.name);
        if cte.from.is_some() {
            b.ctes.truncate(before);
            return unsupported("WITH ... FROM");
        }
        if b.ctes[before..].iter().any(|c| c.name == name) {
            b.ctes.truncate(before);
            return Err(
                SqlError::DuplicateAlias(format!("WITH query name \"{name}\" specified more than once"))
                    .at(cte.alias.name.span, Point::Start),
            );
        }
        b.ctes.push(Arc::new(Cte {
            name,
            query: (*cte.query).clone(),
            columns: cte.alias.columns.iter().map(|c| ident(&c.name)).collect(),
            recursive: with.recursive,
            working: None,
        }));
    }
    let mut inner = q.clone();
    inner.with = None;
    let r = f(b, &inner);
    b.ctes.truncate(before);
    r
}
