//! `UPDATE ... FROM` and `DELETE ... USING`: a write whose rows are chosen, and whose new
//! values read, rows of other tables.
//!
//! Written as the correlated subqueries they mean, then planned as any write: the WHERE
//! conditions that read only the target stay its filters (and pick its access path); the
//! others, the join conditions, become `EXISTS (SELECT 1 FROM <others> WHERE <join>)`;
//! a new value that reads the other tables becomes `(SELECT <value> FROM <others> WHERE
//! <join> LIMIT 1)`. A target row that several rows of the others match is written once,
//! with the values of one of them — as in PostgreSQL, which leaves which one unspecified.
//! Each subquery is one lookup per target row where an index covers its join columns.
//!
//! Names are first resolved as PostgreSQL resolves them, over the target and the other
//! tables together, so that an unknown or ambiguous name gets PostgreSQL's error (with its
//! place) before anything is rewritten.

use sqlparser::ast::{self, BinaryOperator};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::from::{add_factor, from_item};
use crate::bind::Binder;
use crate::catalog::Catalog;
use crate::error::{Result, SqlError, unsupported};

/// What a joined write becomes: its WHERE and its new values, over the target alone.
pub(super) struct Rewritten {
    pub selection: Option<ast::Expr>,
    pub values: Vec<ast::Expr>,
}

/// Rewrites a write to `target` whose statement also names `others` (FROM of UPDATE,
/// USING of DELETE) with condition `selection` and new values `values`; `returning` may
/// read the target only.
pub(super) fn rewrite(
    catalog: &Catalog,
    target: &ast::TableFactor,
    others: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    values: &[&ast::Expr],
    returning: Option<&[ast::SelectItem]>,
) -> Result<Rewritten> {
    let mut both = scope(catalog, target, others)?;
    let mut own = scope(catalog, target, &[])?;
    let target_name = own.rels[0].alias.clone();
    // Reads only the target: binds where the other tables are not in scope.
    let mut reads_target_only = |e: &ast::Expr| -> Result<bool> {
        both.expr(e)?;
        Ok(own.expr(e).is_ok())
    };
    let mut conjuncts = Vec::new();
    if let Some(w) = selection {
        split_and(w, &mut conjuncts);
    }
    let mut kept = Vec::new();
    let mut join = Vec::new();
    for c in conjuncts {
        if reads_target_only(c)? {
            kept.push(format!("({c})"));
        } else {
            join.push(format!("({c})"));
        }
    }
    let from = others.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    let join_where = if join.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", join.join(" AND "))
    };
    let mut new_values = Vec::with_capacity(values.len());
    for v in values {
        if reads_target_only(v)? {
            new_values.push((*v).clone());
        } else {
            new_values.push(parse(&format!("(SELECT ({v}) FROM {from}{join_where} LIMIT 1)"))?);
        }
    }
    for item in returning.unwrap_or_default() {
        if let ast::SelectItem::Wildcard(_) = item {
            return unsupported(
                "RETURNING * of an UPDATE ... FROM or DELETE ... USING (name the columns; \
                 target.* returns the target's)",
            );
        }
        if let ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(n), _) = item
            && crate::bind::object_name(n)? != target_name
        {
            return unsupported(format!(
                "RETURNING {n}.*, the columns of a table in FROM / USING (return the target's \
                 columns and read the others with a query)"
            ));
        }
        if let ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } = item
            && !reads_target_only(e)?
        {
            return unsupported(format!(
                "RETURNING {e}, a column of the tables in FROM / USING (return the target's \
                 columns and read the others with a query)"
            ));
        }
    }
    kept.push(format!("EXISTS (SELECT 1 FROM {from}{join_where})"));
    Ok(Rewritten {
        selection: Some(parse(&kept.join(" AND "))?),
        values: new_values,
    })
}

/// A binder over the target and `others`, for resolving names; the others' ON conditions
/// are bound there too, so that a bad name in one is reported where the client wrote it.
fn scope<'c>(catalog: &'c Catalog, target: &ast::TableFactor, others: &[ast::TableWithJoins]) -> Result<Binder<'c>> {
    let mut b = Binder::new(catalog);
    b.plan_subquery = Some(super::select::subquery);
    add_factor(&mut b, target)?;
    let mut joins = super::from::Joins::default();
    for t in others {
        from_item(&mut b, t, &mut joins)?;
    }
    for (_, _, e) in &joins.on {
        b.expr_in("JOIN conditions", e)?;
    }
    Ok(b)
}

/// The conditions of a conjunction `a AND b AND ...`, parentheses looked through (without
/// recursion: a chain may be long).
fn split_and<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            ast::Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                stack.push(right);
                stack.push(left);
            }
            ast::Expr::Nested(inner)
                if matches!(
                    **inner,
                    ast::Expr::BinaryOp {
                        op: BinaryOperator::And,
                        ..
                    }
                ) =>
            {
                stack.push(inner)
            }
            e => out.push(e),
        }
    }
}

/// An expression written here in SQL (from parts of the client's statement).
fn parse(sql: &str) -> Result<ast::Expr> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::Syntax(format!("syntax error: rewriting a joined write: {e}")))
}
