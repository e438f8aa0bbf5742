//! Enum types in the catalog: `CREATE TYPE name AS ENUM (...)`, `ALTER TYPE` (ADD VALUE,
//! RENAME VALUE, RENAME TO) and `DROP TYPE`. What a definition and its values are:
//! `permafrost_types::enum_type`; type names resolve to them in `bind::map_type_in`.
//!
//! An `ALTER TYPE` makes a new version of the definition; every table with a column of
//! the type gets that version in its schema (an `AlterSchema` change: rows and indexes
//! stay, since a label's index and sort position never change).

use std::sync::Arc;

use permafrost_types::enum_type::{EnumError, Place};
use permafrost_types::{DataType, EnumRef, EnumType};
use sqlparser::ast;

use crate::bind::{ident, object_name};
use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError, unsupported};

/// `CREATE TYPE name AS ENUM ('label', ...)`; other kinds of types are refused.
pub(crate) fn create_type(catalog: &Catalog, stmt: &ast::Statement) -> Result<Vec<DdlChange>> {
    let ast::Statement::CreateType { name, representation } = stmt else {
        return unsupported(format!("statement {stmt}"));
    };
    let Some(ast::UserDefinedTypeRepresentation::Enum { labels }) = representation else {
        return unsupported(
            "CREATE TYPE other than AS ENUM (composite, range and base types; use a table, two columns, or a \
             built-in type)",
        );
    };
    let name = object_name(name)?;
    catalog.check_schema_of(&name)?;
    if catalog.has_type_name(&name) {
        return Err(SqlError::DuplicateObject(format!("type \"{name}\" already exists")));
    }
    let labels: Vec<String> = labels.iter().map(|l| l.value.clone()).collect();
    let ty = EnumType::define(catalog.next_table_id(), &name, &labels)?;
    Ok(vec![DdlChange::CreateType(ty)])
}

/// `ALTER TYPE name ADD VALUE [IF NOT EXISTS] 'l' [BEFORE | AFTER 'm']`, `RENAME VALUE 'a'
/// TO 'b'`, `RENAME TO new`: the new version and the tables whose columns take it.
pub(crate) fn alter_type(catalog: &Catalog, at: &ast::AlterType) -> Result<Vec<DdlChange>> {
    let name = object_name(&at.name)?;
    let ty = catalog
        .enum_type(&name)
        .ok_or_else(|| SqlError::UnknownType(name.clone()))?;
    let next = match &at.operation {
        ast::AlterTypeOperation::AddValue(add) => {
            let place = match &add.position {
                None => Place::Last,
                Some(ast::AlterTypeAddValuePosition::Before(l)) => Place::Before(&l.value),
                Some(ast::AlterTypeAddValuePosition::After(l)) => Place::After(&l.value),
            };
            match ty.add_label(&add.value.value, place) {
                Err(EnumError::Duplicate(_)) if add.if_not_exists => return Ok(Vec::new()),
                other => other?,
            }
        }
        ast::AlterTypeOperation::RenameValue(r) => ty.rename_label(&r.from.value, &r.to.value)?,
        ast::AlterTypeOperation::Rename(r) => {
            let new = crate::namespace::sibling(&name, &ident(&r.new_name));
            if catalog.has_type_name(&new) {
                return Err(SqlError::DuplicateObject(format!("type \"{new}\" already exists")));
            }
            ty.renamed(&new)
        }
    };
    let mut changes = vec![DdlChange::AlterType(next)];
    for t in catalog.tables() {
        if t.columns.iter().any(|c| of_type(&c.ty, ty)) {
            let mut schema = (**t).clone();
            for c in &mut schema.columns {
                if of_type(&c.ty, ty) {
                    c.ty = DataType::Enum(next);
                }
            }
            changes.push(DdlChange::AlterSchema(Arc::new(schema)));
        }
    }
    Ok(changes)
}

/// The NOTICE of `ALTER TYPE ... ADD VALUE IF NOT EXISTS` of a label the type has.
pub(crate) fn skipped(catalog: &Catalog, at: &ast::AlterType) -> Option<(&'static str, String)> {
    let ast::AlterTypeOperation::AddValue(add) = &at.operation else {
        return None;
    };
    let ty = catalog.enum_type(&object_name(&at.name).ok()?)?;
    (add.if_not_exists && ty.index_of(&add.value.value).is_some()).then(|| {
        (
            "42710",
            format!("enum label \"{}\" already exists, skipping", add.value.value),
        )
    })
}

/// `DROP TYPE [IF EXISTS] name`: refused while a column has the type (2BP01).
pub(crate) fn drop_type(catalog: &Catalog, name: &str, if_exists: bool) -> Result<Vec<DdlChange>> {
    let Some(ty) = catalog.enum_type(name) else {
        return if if_exists {
            Ok(Vec::new())
        } else {
            Err(SqlError::UnknownType(name.to_string()))
        };
    };
    let users: Vec<String> = catalog
        .tables()
        .flat_map(|t| {
            t.columns
                .iter()
                .filter(|c| of_type(&c.ty, ty))
                .map(|c| format!("column {} of table {} depends on type {name}", c.name, t.name))
        })
        .collect();
    if !users.is_empty() {
        return Err(SqlError::DependedOn {
            what: format!("type {name}"),
            detail: users.join("\n"),
        });
    }
    Ok(vec![DdlChange::DropType(ty.id)])
}

fn of_type(column: &DataType, ty: EnumRef) -> bool {
    matches!(column, DataType::Enum(e) if *e == ty)
}
