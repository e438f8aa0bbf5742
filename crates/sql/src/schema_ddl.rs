//! `CREATE SCHEMA [IF NOT EXISTS] {name [AUTHORIZATION role] | AUTHORIZATION role}` and
//! `DROP SCHEMA [IF EXISTS] name [, ...] [RESTRICT]` (crate::namespace). A schema lives in
//! the catalog only; the role is accepted as every owner is (crate::privileges). A schema
//! with objects in it is not dropped (2BP01; CASCADE is refused), nor is public.

use sqlparser::ast::{self, SchemaName};

use crate::bind::ident;
use crate::catalog::{Catalog, DdlChange};
use crate::error::{Result, SqlError, unsupported};

/// The schemas that are always there, besides public (they hold the catalogs).
const SYSTEM: [&str; 2] = ["pg_catalog", "information_schema"];

/// The name `CREATE SCHEMA` gives its schema.
fn created_name(schema_name: &SchemaName) -> Result<String> {
    let name = match schema_name {
        SchemaName::Simple(n) | SchemaName::NamedAuthorization(n, _) => match crate::bind::name_parts(n)?.as_slice() {
            [one] => one.clone(),
            _ => {
                return Err(SqlError::Syntax(format!(
                    "syntax error: schema name {n} cannot be qualified"
                )));
            }
        },
        SchemaName::UnnamedAuthorization(role) => ident(role),
    };
    if name.starts_with("pg_") {
        return Err(SqlError::ReservedName(format!("unacceptable schema name \"{name}\"")));
    }
    if name.contains('.') {
        return unsupported(format!("a schema name with a dot in it (\"{name}\")"));
    }
    Ok(name)
}

pub(crate) fn create_schema(catalog: &Catalog, stmt: &ast::Statement) -> Result<Vec<DdlChange>> {
    let ast::Statement::CreateSchema {
        schema_name,
        if_not_exists,
        or_replace: false,
        with: None,
        options: None,
        default_collate_spec: None,
        clone: None,
    } = stmt
    else {
        return unsupported(format!("this form of CREATE SCHEMA ({stmt})"));
    };
    let name = created_name(schema_name)?;
    if catalog.has_schema(&name) || SYSTEM.contains(&name.as_str()) {
        return match if_not_exists {
            true => Ok(Vec::new()),
            false => Err(SqlError::DuplicateSchema(name)),
        };
    }
    Ok(vec![DdlChange::CreateSchema {
        name,
        id: catalog.next_table_id(),
    }])
}

/// The NOTICE of `CREATE SCHEMA IF NOT EXISTS` for a schema that exists.
pub(crate) fn create_skipped(catalog: &Catalog, stmt: &ast::Statement) -> Option<(&'static str, String)> {
    let ast::Statement::CreateSchema {
        schema_name,
        if_not_exists: true,
        ..
    } = stmt
    else {
        return None;
    };
    let name = created_name(schema_name).ok()?;
    (catalog.has_schema(&name) || SYSTEM.contains(&name.as_str()))
        .then(|| ("42P06", format!("schema \"{name}\" already exists, skipping")))
}

pub(crate) fn drop_schema(catalog: &Catalog, name: &str, if_exists: bool) -> Result<Option<DdlChange>> {
    if name == crate::namespace::PUBLIC || SYSTEM.contains(&name) {
        return unsupported(format!("dropping schema {name}"));
    }
    if !catalog.has_schema(name) {
        return match if_exists {
            true => Ok(None),
            false => Err(SqlError::UnknownSchema(name.to_string())),
        };
    }
    let objects: Vec<String> = catalog
        .objects_in_schema(name)
        .map(|(kind, key)| format!("{kind} {key} depends on schema {name}"))
        .collect();
    if !objects.is_empty() {
        return Err(SqlError::DependedOn {
            what: format!("schema {name}"),
            detail: objects.join("\n"),
        });
    }
    Ok(Some(DdlChange::DropSchema(name.to_string())))
}
