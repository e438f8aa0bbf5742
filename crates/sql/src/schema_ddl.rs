//! `CREATE SCHEMA [IF NOT EXISTS] {name [AUTHORIZATION role] | AUTHORIZATION role}` and
//! `DROP SCHEMA [IF EXISTS] name [, ...] [RESTRICT | CASCADE]` (crate::namespace). A schema
//! lives in the catalog only; the role is accepted as every owner is (crate::privileges). A
//! schema with objects in it is not dropped without CASCADE (2BP01), and public never is.
//! CASCADE drops the schema's own objects (its views, its tables with their indexes and
//! the sequences they own, its other sequences and its types); where an object outside the
//! schema depends on one of them (a view, a foreign key, a column's type or default),
//! PostgreSQL would drop or change that one too, and here the statement is refused
//! instead (2BP01, naming it).

use sqlparser::ast::{self, Ident, ObjectName, SchemaName};

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

/// `DROP SCHEMA name [, ...] CASCADE`: each schema with its objects (see the module's
/// documentation); `drop_tables` is crate::ddl's DROP TABLE of several tables at once.
pub(crate) fn drop_cascade(
    catalog: &Catalog,
    names: &[ObjectName],
    if_exists: bool,
    drop_tables: impl Fn(&Catalog, &[ObjectName]) -> Result<Vec<DdlChange>>,
) -> Result<Vec<DdlChange>> {
    let mut at = catalog.clone();
    let mut out = Vec::new();
    let mut take = |changes: Vec<DdlChange>, at: &mut Catalog| -> Result<()> {
        for c in changes {
            *at = at.apply(&c)?;
            out.push(c);
        }
        Ok(())
    };
    for n in names {
        let name = crate::bind::object_name(n)?;
        if name == crate::namespace::PUBLIC || SYSTEM.contains(&name.as_str()) {
            return unsupported(format!("dropping schema {name}"));
        }
        if !at.has_schema(&name) {
            match if_exists {
                true => continue,
                false => return Err(SqlError::UnknownSchema(name)),
            }
        }
        let of_kind = |at: &Catalog, kind: &str| -> Vec<String> {
            at.objects_in_schema(&name)
                .filter(|(k, _)| *k == kind)
                .map(|(_, key)| key.to_string())
                .collect()
        };
        // Views first (they may read the tables), then the tables with what they own.
        let views = of_kind(&at, "view").into_iter().map(DdlChange::DropView).collect();
        take(views, &mut at)?;
        let tables: Vec<ObjectName> = of_kind(&at, "table").iter().map(|k| key_name(k)).collect();
        let dropped = drop_tables(&at, &tables)?;
        take(dropped, &mut at)?;
        for key in of_kind(&at, "sequence") {
            let changes = crate::sequence_ddl::drop_sequence(&at, &key, false)?;
            take(changes.into_iter().collect(), &mut at)?;
        }
        for key in of_kind(&at, "type") {
            let changes = crate::enum_ddl::drop_type(&at, &key, false)?;
            take(changes, &mut at)?;
        }
        take(vec![DdlChange::DropSchema(name)], &mut at)?;
    }
    Ok(out)
}

/// The NOTICE PostgreSQL gives for `DROP SCHEMA ... CASCADE` of a schema with objects:
/// the one object it drops with it, or how many (tables, views, sequences of their own and
/// types: an index or a column's sequence goes with its table unnamed).
pub(crate) fn cascade_notices(catalog: &Catalog, names: &[ObjectName]) -> Vec<(&'static str, String)> {
    let mut objects = Vec::new();
    for name in names.iter().filter_map(|n| crate::bind::object_name(n).ok()) {
        objects.extend(
            catalog
                .objects_in_schema(&name)
                .filter(|(kind, key)| {
                    *kind != "sequence" || catalog.sequence(key).is_some_and(|s| s.owned_by.is_none())
                })
                .map(|(kind, key)| format!("{kind} {key}")),
        );
    }
    match objects.as_slice() {
        [] => Vec::new(),
        [one] => vec![("00000", format!("drop cascades to {one}"))],
        many => vec![("00000", format!("drop cascades to {} other objects", many.len()))],
    }
}

/// A catalog key as a name that reads back as it (each part quoted).
fn key_name(key: &str) -> ObjectName {
    let (schema, bare) = crate::namespace::split(key);
    ObjectName::from(vec![Ident::with_quote('"', schema), Ident::with_quote('"', bare)])
}
