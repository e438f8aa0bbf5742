//! Storage parameters: the `WITH (...)` of CREATE TABLE (crate::ddl's table) and
//! `ALTER TABLE ... SET (...)`, which changes a table's partitioning after it was created
//! and loaded ([`DdlChange::Repartition`]: its rows move; docs/architecture/multi-partition.md,
//! "A partitioning for plain DDL").

use std::sync::Arc;

use permafrost_storage::{Column, IndexKind, TableSchema};
use sqlparser::ast::{self, SqlOption};

use crate::bind::ident;
use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError, unsupported};

/// What `WITH (...)` says.
pub(crate) struct TableOptions {
    pub(crate) partition_by: Option<String>,
    pub(crate) evictable: bool,
    pub(crate) pk_kind: IndexKind,
}

fn option_text(v: &ast::Expr) -> Result<String> {
    match v {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => Ok(s.clone()),
            ast::Value::Boolean(b) => Ok(b.to_string()),
            ast::Value::Number(n, _) => Ok(n.clone()),
            other => Ok(other.to_string()),
        },
        ast::Expr::Identifier(i) => Ok(ident(i)),
        other => Err(SqlError::Definition(format!("bad storage parameter value {other}"))),
    }
}

fn parse_bool(name: &str, s: &str) -> Result<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err(SqlError::Definition(format!(
            "storage parameter {name} must be true or false, got \"{s}\""
        ))),
    }
}

/// The options as `(name, value text)`, names folded as identifiers.
fn pairs(list: &[SqlOption]) -> Result<Vec<(String, String)>> {
    list.iter()
        .map(|o| match o {
            SqlOption::KeyValue { key, value } => Ok((ident(key), option_text(value)?)),
            other => Err(SqlError::Definition(format!("bad storage parameter {other}"))),
        })
        .collect()
}

/// PostgreSQL's page fill factor. Tuples live in memory and are updated in place, with no
/// page space held back for updates: that is fillfactor 100 (what pgbench -i asks for), and
/// only that is accepted.
fn fillfactor(v: &str) -> Result<()> {
    match v.parse::<u32>() {
        Ok(100) => Ok(()),
        Ok(n) if (10..100).contains(&n) => {
            unsupported("fillfactor below 100 (tuples are updated in place in memory; no page space is held back)")
        }
        _ => Err(SqlError::Definition(format!(
            "value {v} out of bounds for option \"fillfactor\" (10 to 100)"
        ))),
    }
}

pub(crate) fn table_options(opts: &ast::CreateTableOptions) -> Result<TableOptions> {
    let mut t = TableOptions {
        partition_by: None,
        evictable: true,
        pk_kind: IndexKind::Ordered,
    };
    let list = match opts {
        ast::CreateTableOptions::None => return Ok(t),
        ast::CreateTableOptions::With(l) => l,
        _ => return unsupported("table options other than WITH (...)"),
    };
    for (k, v) in pairs(list)? {
        match k.as_str() {
            "partition_by" => t.partition_by = Some(v),
            "evictable" => t.evictable = parse_bool(&k, &v)?,
            "primary_key_index" => {
                t.pk_kind = match v.to_ascii_lowercase().as_str() {
                    "hash" => IndexKind::Hash,
                    "ordered" | "btree" => IndexKind::Ordered,
                    _ => {
                        return Err(SqlError::Definition(format!(
                            "primary_key_index must be 'hash' or 'ordered', got \"{v}\""
                        )));
                    }
                }
            }
            "fillfactor" => fillfactor(&v)?,
            other => {
                return Err(SqlError::Definition(format!(
                    "unknown storage parameter \"{other}\" (known: partition_by, evictable, primary_key_index, fillfactor)"
                )));
            }
        }
    }
    Ok(t)
}

/// The column `partition_by = 'given'` names among `columns` of table `table`; `None` for
/// `'none'` (replicated).
pub(crate) fn partition_column(columns: &[Column], table: &str, given: &str) -> Result<Option<usize>> {
    if given.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let p = given.to_lowercase();
    columns.iter().position(|c| c.name == p).map(Some).ok_or_else(|| {
        SqlError::Definition(format!(
            "partition_by names column \"{p}\", which table \"{table}\" does not have"
        ))
    })
}

/// `ALTER TABLE name SET (option = value, ...)` on table `schema`: `partition_by = 'column'
/// | 'none'` and `replicated = true | false` give the table another partitioning, its rows
/// moved ([`DdlChange::Repartition`]); the partitioning given so is kept as declared (a later
/// CREATE TABLE does not refine it). `replicated = false` alone partitions a replicated table
/// as CREATE TABLE would have without its dimension rule (crate::placement). `fillfactor =
/// 100` changes nothing, as at CREATE; `evictable` and `primary_key_index` are fixed at
/// CREATE (0A000).
pub(crate) fn set_options(catalog: &Catalog, schema: &TableSchema, list: &[SqlOption]) -> Result<Vec<DdlChange>> {
    let mut partition_by: Option<Option<usize>> = None;
    let mut replicated: Option<bool> = None;
    for (k, v) in pairs(list)? {
        match k.as_str() {
            "partition_by" => partition_by = Some(partition_column(&schema.columns, &schema.name, &v)?),
            "replicated" => replicated = Some(parse_bool(&k, &v)?),
            "fillfactor" => fillfactor(&v)?,
            "evictable" | "primary_key_index" => {
                return unsupported(format!(
                    "changing {k} after CREATE TABLE (create a table with the option and copy the rows: INSERT INTO ... SELECT)"
                ));
            }
            other => {
                return Err(SqlError::Definition(format!(
                    "unknown storage parameter \"{other}\" (known: partition_by, replicated, fillfactor)"
                )));
            }
        }
    }
    let column = match (partition_by, replicated) {
        (None, None) => return Ok(Vec::new()),
        (Some(Some(c)), Some(true)) => {
            return Err(SqlError::Definition(format!(
                "partition_by = '{}' contradicts replicated = true",
                schema.columns[c].name
            )));
        }
        (Some(None), Some(false)) => {
            return Err(SqlError::Definition(
                "partition_by = 'none' contradicts replicated = false".into(),
            ));
        }
        (Some(c), _) => c,
        (None, Some(true)) => None,
        (None, Some(false)) => match schema.partition_column {
            Some(c) => Some(c),
            None => Some(crate::placement::partitioned_choice(catalog, schema).ok_or_else(|| {
                SqlError::Definition(format!(
                    "table \"{}\" has no primary key nor a column named after another table's key: name its partition column with partition_by",
                    schema.name
                ))
            })?),
        },
    };
    let mut next = schema.clone();
    next.partition_declared = true;
    if column == schema.partition_column {
        if schema.partition_declared {
            return Ok(Vec::new());
        }
        return Ok(vec![DdlChange::AlterSchema(Arc::new(next))]);
    }
    next.partition_column = column;
    next.validate()?;
    Ok(vec![DdlChange::Repartition(Arc::new(next))])
}
