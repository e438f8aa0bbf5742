//! `CREATE SEQUENCE` and `DROP SEQUENCE` planned against the catalog (what a sequence is:
//! crate::sequence).

use std::sync::Arc;

use permafrost_storage::ColumnDefault;
use permafrost_types::DataType;
use sqlparser::ast::{self, SequenceOptions};

use crate::bind::object_name;
use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError, unsupported};
use crate::sequence::{SeqOwner, SeqStep, SequenceDef};

/// `CREATE SEQUENCE [IF NOT EXISTS] name [AS type] [options]`.
pub(crate) fn create_sequence(catalog: &Catalog, stmt: &ast::Statement) -> Result<Vec<DdlChange>> {
    let ast::Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        data_type,
        sequence_options,
        owned_by,
    } = stmt
    else {
        return unsupported(format!("statement {stmt}"));
    };
    if *temporary {
        return unsupported("CREATE TEMPORARY SEQUENCE (create it without TEMPORARY)");
    }
    let owned_by = match owned_by {
        Some(o) => owner(catalog, &crate::bind::name_parts(o)?)?,
        None => None,
    };
    let name = object_name(name)?;
    catalog.check_schema_of(&name)?;
    if catalog.has_relation(&name) {
        return if *if_not_exists {
            Ok(Vec::new())
        } else {
            Err(SqlError::DuplicateTable(name))
        };
    }
    let ty = match data_type {
        None | Some(ast::DataType::BigInt(_) | ast::DataType::Int8(_)) => DataType::BigInt,
        Some(ast::DataType::Int(_) | ast::DataType::Integer(_) | ast::DataType::Int4(_)) => DataType::Integer,
        Some(ast::DataType::SmallInt(_) | ast::DataType::Int2(_)) => DataType::SmallInt,
        Some(_) => return invalid("sequence type must be smallint, integer, or bigint"),
    };
    let (_, hi) = type_range(ty);
    let mut increment = 1;
    let (mut min, mut max, mut start, mut cache) = (None, None, None, 1);
    for o in sequence_options {
        match o {
            SequenceOptions::IncrementBy(e, _) => increment = integer(e, "INCREMENT")?,
            SequenceOptions::MinValue(e) => min = e.as_ref().map(|e| integer(e, "MINVALUE")).transpose()?,
            SequenceOptions::MaxValue(e) => max = e.as_ref().map(|e| integer(e, "MAXVALUE")).transpose()?,
            SequenceOptions::StartWith(e, _) => start = Some(integer(e, "START")?),
            SequenceOptions::Cache(e) => cache = integer(e, "CACHE")?,
            SequenceOptions::Cycle(no) => {
                if !*no {
                    return unsupported("CYCLE (a sequence here stops at its MAXVALUE: declare NO CYCLE)");
                }
            }
        }
    }
    if increment == 0 {
        return invalid("INCREMENT must not be zero");
    }
    if increment < 0 {
        return unsupported("a sequence that counts down (INCREMENT BY a negative number)");
    }
    let min = min.unwrap_or(1);
    let max = max.unwrap_or(hi);
    check_bounds(ty, min, max)?;
    let start = start.unwrap_or(min);
    if start < min {
        return invalid(format!("START value ({start}) cannot be less than MINVALUE ({min})"));
    }
    if start > max {
        return invalid(format!("START value ({start}) cannot be greater than MAXVALUE ({max})"));
    }
    if cache <= 0 {
        return invalid(format!("CACHE ({cache}) must be greater than zero"));
    }
    Ok(vec![DdlChange::CreateSequence(Arc::new(SequenceDef {
        id: catalog.next_table_id(),
        name,
        ty,
        start,
        step: SeqStep { increment, min, max },
        cache,
        owned_by,
    }))])
}

/// The column `OWNED BY` names (`parts`: `table.column`, which `public.` may qualify), or
/// `None` for `OWNED BY NONE`.
pub(crate) fn owner(catalog: &Catalog, parts: &[String]) -> Result<Option<SeqOwner>> {
    let (table, column) = match parts {
        [none] if none == "none" => return Ok(None),
        [t, c] => (t, c),
        [s, t, c] if s == "public" => (t, c),
        [_, _, _] => return Err(SqlError::UnknownTable(parts[..2].join("."))),
        _ => return Err(SqlError::OwnedByOption),
    };
    let t = catalog
        .table(table)
        .ok_or_else(|| SqlError::UnknownTable(table.clone()))?;
    if !t.columns.iter().any(|c| c.name == *column) {
        return Err(SqlError::UnknownTargetColumn {
            column: column.clone(),
            table: table.clone(),
        });
    }
    Ok(Some(SeqOwner {
        table: t.id,
        column: column.clone(),
    }))
}

/// Drops the sequences that belong to table `table`'s column `column` (`None`: to any of
/// its columns) with it, as `OWNED BY` made them; refused (2BP01) while a DEFAULT elsewhere
/// draws from one of them.
pub(crate) fn drop_owned(
    catalog: &Catalog,
    table: &permafrost_storage::TableSchema,
    column: Option<&str>,
) -> Result<Vec<DdlChange>> {
    let mut changes = Vec::new();
    for s in catalog.sequences().filter(|s| {
        s.owned_by
            .as_ref()
            .is_some_and(|o| o.table == table.id && column.is_none_or(|c| c == o.column))
    }) {
        for t in catalog.tables() {
            let user = t.columns.iter().find(|c| {
                matches!(&c.default, Some(ColumnDefault::NextVal { sequence, .. }) if *sequence == s.id)
                    && (t.id != table.id || column.is_some_and(|gone| gone != c.name))
            });
            if let Some(c) = user {
                return Err(SqlError::DependedOn {
                    what: format!("sequence {}", s.name),
                    detail: format!(
                        "default value for column {} of table {} depends on sequence {}",
                        c.name, t.name, s.name
                    ),
                });
            }
        }
        changes.push(DdlChange::DropSequence(s.id));
    }
    Ok(changes)
}

/// `DROP SEQUENCE` of `name` (at most one change).
pub(crate) fn drop_sequence(catalog: &Catalog, name: &str, if_exists: bool) -> Result<Option<DdlChange>> {
    match catalog.sequence(name) {
        Some(s) => {
            for t in catalog.tables() {
                if let Some(c) = t
                    .columns
                    .iter()
                    .find(|c| matches!(&c.default, Some(ColumnDefault::NextVal { sequence, .. }) if *sequence == s.id))
                {
                    return Err(SqlError::DependedOn {
                        what: format!("sequence {name}"),
                        detail: format!(
                            "default value for column {} of table {} depends on sequence {name}",
                            c.name, t.name
                        ),
                    });
                }
            }
            Ok(Some(DdlChange::DropSequence(s.id)))
        }
        None if if_exists => Ok(None),
        None => Err(SqlError::UnknownSequence(name.to_string())),
    }
}

/// The range of a sequence type's values.
pub(crate) fn type_range(ty: DataType) -> (i64, i64) {
    match ty {
        DataType::SmallInt => (i64::from(i16::MIN), i64::from(i16::MAX)),
        DataType::Integer => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => (i64::MIN, i64::MAX),
    }
}

/// MINVALUE and MAXVALUE within the type's range and in order, as PostgreSQL checks them.
pub(crate) fn check_bounds(ty: DataType, min: i64, max: i64) -> Result<()> {
    let (lo, hi) = type_range(ty);
    for (what, v) in [("MINVALUE", min), ("MAXVALUE", max)] {
        if v < lo || v > hi {
            return invalid(format!(
                "{what} ({v}) is out of range for sequence data type {}",
                ty.sql_name()
            ));
        }
    }
    if min >= max {
        return invalid(format!("MINVALUE ({min}) must be less than MAXVALUE ({max})"));
    }
    Ok(())
}

/// An option's value: an integer literal, signed or not.
fn integer(e: &ast::Expr, what: &str) -> Result<i64> {
    let (negative, e) = match e {
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => (true, &**expr),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Plus,
            expr,
        } => (false, &**expr),
        e => (false, e),
    };
    let text = match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.clone(),
            _ => return Err(SqlError::Syntax(format!("{what} takes an integer, not {e}"))),
        },
        _ => return Err(SqlError::Syntax(format!("{what} takes an integer, not {e}"))),
    };
    let text = if negative { format!("-{text}") } else { text };
    text.parse::<i64>()
        .map_err(|_| SqlError::InvalidArgument(format!("{what} ({text}) is out of range for a bigint")))
}

fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(SqlError::InvalidArgument(msg.into()))
}

/// The sequences owned by a column of `before` that `after` (the same table) names
/// otherwise, owned by the new name.
pub(crate) fn follow_renamed_column(
    catalog: &Catalog,
    before: &permafrost_storage::TableSchema,
    after: &permafrost_storage::TableSchema,
) -> Vec<DdlChange> {
    let mut changes = Vec::new();
    for (old, new) in before
        .columns
        .iter()
        .zip(&after.columns)
        .filter(|(o, n)| o.name != n.name)
    {
        for s in catalog.sequences() {
            if let Some(o) = s
                .owned_by
                .as_ref()
                .filter(|o| o.table == before.id && o.column == old.name)
            {
                let mut def = (**s).clone();
                def.owned_by = Some(SeqOwner {
                    table: o.table,
                    column: new.name.clone(),
                });
                changes.push(DdlChange::AlterSequence {
                    def: Arc::new(def),
                    restart: None,
                });
            }
        }
    }
    changes
}
