//! CHECK constraints: what `CREATE TABLE ... CHECK (...)` and `ALTER TABLE ... ADD
//! [CONSTRAINT c] CHECK (...)` declare, checked as PostgreSQL checks a definition (the
//! expression reads the table's own columns, is boolean, and holds no subquery, aggregate,
//! window call or parameter), kept as SQL text in the schema, and bound again for the
//! statements that write the table (exec/check.rs evaluates them).

use std::sync::Arc;

use permafrost_storage::{CheckDef, TableSchema};
use permafrost_types::DataType;
use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::bind::{Binder, ident};
use crate::catalog::Catalog;
use crate::error::{Result, SqlError};
use crate::expr::Expr;

/// PostgreSQL's longest identifier, in bytes.
const MAX_NAME: usize = 63;

/// The CHECK constraint `expr` declares on table `schema` (`column`: declared on that
/// column), named `name` or as PostgreSQL names it.
pub(crate) fn plan(
    schema: &TableSchema,
    column: Option<usize>,
    name: Option<&ast::Ident>,
    expr: &ast::Expr,
) -> Result<CheckDef> {
    let text = expr.to_string();
    bind_one(schema, &text)?;
    let name = match name {
        Some(n) => ident(n),
        None => default_name(schema, column, expr),
    };
    Ok(CheckDef { name, expr: text })
}

/// PostgreSQL's name for an unnamed check: the table, the one column it reads (if it
/// reads one), `check`, made unique among the table's constraints by a number.
fn default_name(schema: &TableSchema, column: Option<usize>, expr: &ast::Expr) -> String {
    let mut columns: Vec<String> = Vec::new();
    let _ = ast::visit_expressions(expr, |e| {
        if let ast::Expr::Identifier(i) = e {
            let n = ident(i);
            if schema.columns.iter().any(|c| c.name == n) && !columns.contains(&n) {
                columns.push(n);
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let base = match (column, columns.as_slice()) {
        (Some(c), _) => format!(
            "{}_{}_check",
            crate::namespace::bare(&schema.name),
            schema.columns[c].name
        ),
        (None, [one]) => format!("{}_{one}_check", crate::namespace::bare(&schema.name)),
        _ => format!("{}_check", crate::namespace::bare(&schema.name)),
    };
    let taken = |n: &str| {
        schema.checks.iter().any(|c| c.name == n)
            || schema.indexes.iter().any(|i| i.name == n)
            || schema.foreign_keys.iter().any(|f| f.name == n)
    };
    let mut name = truncate(base.clone());
    let mut k = 0;
    while taken(&name) {
        k += 1;
        name = truncate(format!("{base}{k}"));
    }
    name
}

fn truncate(mut s: String) -> String {
    if s.len() > MAX_NAME {
        let mut cut = MAX_NAME;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// Check `text` bound over a row of `schema` (relation 0).
fn bind_one(schema: &TableSchema, text: &str) -> Result<Expr> {
    let parsed = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::Syntax(format!("check constraint {text}: {e}")))?;
    let mut has_subquery = false;
    let _ = ast::visit_expressions(&parsed, |e| {
        has_subquery |= matches!(
            e,
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. }
        );
        std::ops::ControlFlow::<()>::Continue(())
    });
    if has_subquery {
        return Err(SqlError::FeatureNotSupported(
            "cannot use subquery in check constraint".into(),
        ));
    }
    let catalog = Catalog::new();
    let mut b = Binder::new(&catalog);
    b.add_rel(Arc::new(schema.clone()), None)?;
    let (x, t) = b.expr_in("check constraints", &parsed)?;
    if !b.params.is_empty() {
        return Err(SqlError::Syntax("a check constraint cannot take parameters".into()));
    }
    match t {
        Some(DataType::Boolean) | None => Ok(x),
        Some(other) => Err(SqlError::Type(format!(
            "argument of CHECK must be type boolean, not type {}",
            other.sql_name()
        ))),
    }
}

/// The checks of `schema`, bound over a row of it (relation 0), with their names, in the
/// order PostgreSQL tests them (by name).
pub fn bound(schema: &TableSchema) -> Result<Vec<(String, Expr)>> {
    let mut out = schema
        .checks
        .iter()
        .map(|c| Ok((c.name.clone(), bind_one(schema, &c.expr)?)))
        .collect::<Result<Vec<_>>>()?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Check `check` bound over a row of `schema`: fails when it reads a column `schema` lacks.
pub(crate) fn bound_over(schema: &TableSchema, check: &CheckDef) -> Result<Expr> {
    bind_one(schema, &check.expr)
}

/// The SQL of a check's definition, as `pg_get_constraintdef` gives it.
pub fn definition(c: &CheckDef) -> String {
    format!("CHECK ({})", c.expr)
}

/// `ALTER TABLE ... DROP CONSTRAINT name` of a check: `schema` without it, or `None`
/// when `schema` has no check of that name.
pub(crate) fn without(schema: &TableSchema, name: &str) -> Option<TableSchema> {
    let k = schema.checks.iter().position(|c| c.name == name)?;
    let mut next = schema.clone();
    next.checks.remove(k);
    Some(next)
}

/// Check `text` with column `from` renamed `to`.
pub(crate) fn renamed(text: &str, from: &str, to: &str) -> Result<String> {
    let mut parsed = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::Syntax(format!("check constraint {text}: {e}")))?;
    let plain = to
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !to.starts_with(|c: char| c.is_ascii_digit());
    let new = || {
        if plain {
            ast::Ident::new(to)
        } else {
            ast::Ident::with_quote('"', to)
        }
    };
    let _ = ast::visit_expressions_mut(&mut parsed, |e| {
        match e {
            ast::Expr::Identifier(i) if ident(i) == from => *i = new(),
            ast::Expr::CompoundIdentifier(parts) => {
                if let Some(last) = parts.last_mut()
                    && ident(last) == from
                {
                    *last = new();
                }
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    Ok(parsed.to_string())
}
