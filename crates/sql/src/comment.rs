//! `COMMENT ON TABLE t IS '...'` and `COMMENT ON COLUMN t.c IS '...'`: a table's or a
//! column's description, kept in its schema (`TableSchema::comment`, `Column::comment`,
//! recorded like any schema change), shown by psql's `\d+` and read by the catalogs'
//! `obj_description`, `col_description` and `pg_description`. `IS NULL` or `IS ''` removes
//! it, as in PostgreSQL. Comments on other objects are refused (0A000).

use std::sync::Arc;

use sqlparser::ast::{CommentObject, ObjectName};

use crate::bind::{ident, object_name};
use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError, unsupported};

/// The schema change of a COMMENT ON statement.
pub(crate) fn comment_on(
    catalog: &Catalog,
    object: &CommentObject,
    name: &ObjectName,
    comment: Option<&str>,
) -> Result<Vec<DdlChange>> {
    let comment = comment.filter(|c| !c.is_empty()).map(str::to_string);
    match object {
        CommentObject::Table => {
            let table = object_name(name)?;
            let t = catalog
                .table(&table)
                .ok_or_else(|| SqlError::UnknownTable(table.clone()))?;
            let mut next = (**t).clone();
            next.comment = comment;
            Ok(vec![DdlChange::AlterSchema(Arc::new(next))])
        }
        CommentObject::Column => {
            let Some((column, table)) = name.0.split_last() else {
                return Err(SqlError::Syntax(format!("syntax error: bad name {name}")));
            };
            if table.is_empty() {
                return Err(SqlError::Syntax("column name must be qualified".into()));
            }
            let column = column
                .as_ident()
                .map(ident)
                .ok_or_else(|| SqlError::Syntax(format!("syntax error: bad name {name}")))?;
            let table = object_name(&ObjectName(table.to_vec()))?;
            let t = catalog
                .table(&table)
                .ok_or_else(|| SqlError::UnknownTable(table.clone()))?;
            let c = t.column_index(&column).ok_or_else(|| SqlError::UnknownTargetColumn {
                column: column.clone(),
                table: table.clone(),
            })?;
            let mut next = (**t).clone();
            next.columns[c].comment = comment;
            Ok(vec![DdlChange::AlterSchema(Arc::new(next))])
        }
        other => unsupported(format!("COMMENT ON {other} (tables and columns take comments)")),
    }
}
