//! CHECK constraints at run time (their definitions: crate::check): each row a statement
//! inserts or updates is checked once written, before the statement ends (a failure rolls
//! the statement back by its savepoint); a check that gives NULL passes, as in PostgreSQL.
//! `ALTER TABLE ... ADD CHECK` checks the rows already there ([`validate_added`]).

use std::ops::ControlFlow;

use permafrost_storage::{PartitionStore, Table, TableSchema};
use permafrost_types::{Value, ValueRef};

use super::walk::Bindings;
use crate::error::{Result, SqlError};
use crate::expr::{ColumnSource, Cx, Expr};

/// Checks the row at `slot` of `table` against `checks` (bound over it, relation 0, in the
/// order PostgreSQL tests them: by name).
pub(super) fn check_row(checks: &[(String, Expr)], table: &Table, slot: u32, cx: &Cx<'_>) -> Result<()> {
    if checks.is_empty() {
        return Ok(());
    }
    let mut b = Bindings::new();
    b.bind(0, table, slot, 0);
    for (name, e) in checks {
        if matches!(e.eval(&b, cx)?.as_ref(), ValueRef::Bool(false)) {
            let row = table.row(slot);
            return Err(violation(
                &table.schema().name,
                (0..row.len()).map(|c| row.get(c)),
                name,
            ));
        }
    }
    Ok(())
}

/// A row to be inserted into table `schema` (whole, converted to the column types), as
/// its values are: the checks see it before it is stored, as PostgreSQL's do (an upsert's
/// proposed row too).
pub(super) fn check_values(checks: &[(String, Expr)], schema: &TableSchema, row: &[Value], cx: &Cx<'_>) -> Result<()> {
    struct Proposed<'r>(&'r [Value]);
    impl ColumnSource for Proposed<'_> {
        fn column(&self, _: usize, col: usize) -> ValueRef<'_> {
            self.0.get(col).map_or(ValueRef::Null, Value::as_ref)
        }
    }
    let src = Proposed(row);
    for (name, e) in checks {
        if matches!(e.eval(&src, cx)?.as_ref(), ValueRef::Bool(false)) {
            // (Named without its schema, as PostgreSQL names it here.)
            let table = crate::namespace::bare(&schema.name);
            return Err(violation(table, row.iter().map(Value::as_ref), name));
        }
    }
    Ok(())
}

fn violation<'v>(table: &str, values: impl IntoIterator<Item = ValueRef<'v>>, name: &str) -> SqlError {
    SqlError::CheckViolation {
        message: format!("new row for relation \"{table}\" violates check constraint \"{name}\""),
        detail: format!("Failing row contains {}.", permafrost_storage::error::row_text(values)),
    }
}

/// Checks the rows of a table that gains checks (`after` has checks `before` lacks), at
/// every partition (`stores`: all of them); the first row that fails one is the error
/// (as PostgreSQL words it: "check constraint ... is violated by some row"). A table part
/// of which is evicted is refused (0A000): its evicted rows are not in memory to check.
pub fn validate_added(stores: &[&mut PartitionStore], before: &TableSchema, after: &TableSchema) -> Result<()> {
    let added: Vec<&permafrost_storage::CheckDef> =
        after.checks.iter().filter(|c| !before.checks.contains(c)).collect();
    if added.is_empty() {
        return Ok(());
    }
    let bound = crate::check::bound(after)?;
    let cx = Cx::new(&[], 0);
    for s in stores {
        let Some(table) = s.table(after.id) else { continue };
        for c in &added {
            if table.evicted_tuples() > 0 {
                return Err(SqlError::FeatureNotSupported(format!(
                    "adding check constraint \"{}\" to table \"{}\", part of which is evicted",
                    c.name, after.name
                )));
            }
            let Some((_, e)) = bound.iter().find(|(n, _)| *n == c.name) else {
                continue;
            };
            let mut failed = None;
            let mut error = None;
            let _ = table.scan(|slot| {
                let mut b = Bindings::new();
                b.bind(0, table, slot, 0);
                match e.eval(&b, &cx) {
                    Ok(v) if matches!(v.as_ref(), ValueRef::Bool(false)) => failed = Some(slot),
                    Ok(_) => {}
                    Err(err) => error = Some(err),
                }
                if failed.is_some() || error.is_some() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            if let Some(err) = error {
                return Err(err);
            }
            if failed.is_some() {
                return Err(SqlError::CheckViolatedByRow {
                    name: c.name.clone(),
                    table: after.name.clone(),
                });
            }
        }
    }
    Ok(())
}
