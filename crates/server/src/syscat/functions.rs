//! PostgreSQL's catalog functions, defined on the engine that answers catalog queries
//! (as `pf_<name>`, the names `super::translate` gives them): lookups by object
//! (`pg_get_indexdef`, `format_type`, `'name'::regclass` ...), the session's values
//! (`current_user`, `current_setting` ...) and the string and array helpers SQLite lacks.
//! Arrays are JSON arrays here, as in `super::relations`.
//!
//! A function that builds a value builds it under its query's budget
//! (`super::limits::QueryBudget::build`), which refuses it before it is allocated (54000,
//! "requested length too large", past 1 GB or the statement's `work_mem`; 53200 past the
//! statement pool): the only way a function here makes a value of a length its caller
//! chose. (Reading an argument copies a value SQLite already holds, within its limit.)

use std::sync::Arc;

use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Error};

use super::limits::{PgError, QueryBudget};
use super::relations::{self, Objects, ROLE_OID, SessionInfo};

fn raise<T>(code: &'static str, msg: String) -> rusqlite::Result<T> {
    Err(Error::UserFunctionError(Box::new(PgError(code, msg))))
}

fn text(ctx: &Context<'_>, i: usize) -> Option<String> {
    match ctx.get_raw(i) {
        ValueRef::Null => None,
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
    }
}

fn int(ctx: &Context<'_>, i: usize) -> Option<i64> {
    match ctx.get_raw(i) {
        ValueRef::Integer(n) => Some(n),
        ValueRef::Real(f) => Some(f as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// An object name as written in a reg-type literal (one reader for the engine's
/// `nextval('...')` and the catalogs').
use permafrost_sql::bind::name_in_text as object_name;

/// The oid of a type named as PostgreSQL reads type names.
fn type_by_name(name: &str) -> Option<i64> {
    let n = object_name(name);
    let (base, array) = match n.strip_suffix("[]") {
        Some(b) => (b.trim().to_string(), true),
        None => (n, false),
    };
    let base = match base.split('(').next().unwrap_or("").trim() {
        "integer" | "int" => "int4",
        "bigint" => "int8",
        "smallint" => "int2",
        "boolean" => "bool",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "character varying" => "varchar",
        "character" => "bpchar",
        "decimal" => "numeric",
        "timestamp without time zone" => "timestamp",
        other => other,
    }
    .to_string();
    let types = relations::types();
    let t = types.iter().find(|t| t.name == base)?;
    if array {
        (t.array != 0).then_some(t.array)
    } else {
        Some(t.oid)
    }
}

/// A JSON array held in a value, as its elements (None: not an array).
fn array(ctx: &Context<'_>, i: usize) -> Option<Vec<serde_json::Value>> {
    match serde_json::from_str(&text(ctx, i)?) {
        Ok(serde_json::Value::Array(v)) => Some(v),
        _ => None,
    }
}

fn element_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Compiles a PostgreSQL regular expression (the subset Rust's regex shares with it).
/// `pattern` compiled as the engine compiles PostgreSQL's (permafrost_sql's expr/regex.rs).
fn regex(pattern: &str, flags: &str) -> rusqlite::Result<regex::Regex> {
    permafrost_sql::expr::regex::compile(pattern, flags).or_else(|e| raise(e.sqlstate(), e.to_string()))
}

/// Defines every function on `conn`, those that build values under `budget`.
pub fn define(
    conn: &Connection,
    objects: &Arc<Objects>,
    session: &SessionInfo,
    budget: &Arc<QueryBudget>,
) -> rusqlite::Result<()> {
    define_object_names(conn, objects, session)?;
    define_conditions(conn, budget)?;
    define_catalog_text(conn, objects, session)?;
    define_session(conn, objects, session)?;
    define_strings(conn, budget)
}

/// The casts to and from object names: regclass, regtype, regproc, regnamespace, regrole.
fn define_object_names(conn: &Connection, objects: &Arc<Objects>, session: &SessionInfo) -> rusqlite::Result<()> {
    let det = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    // A relation's OID from its name, or from its OID written as text ('16385'::regclass,
    // as in PostgreSQL).
    let relation = |o: &Objects, ctx: &rusqlite::functions::Context<'_>| -> rusqlite::Result<Option<i64>> {
        if let ValueRef::Integer(n) = ctx.get_raw(0) {
            return Ok(Some(n));
        }
        let Some(name) = text(ctx, 0) else { return Ok(None) };
        if let Ok(n) = name.trim().parse::<i64>() {
            return Ok(Some(n));
        }
        match o.relation_oids.get(&object_name(&name)) {
            Some(&oid) => Ok(Some(oid)),
            None => raise("42P01", format!("relation \"{name}\" does not exist")),
        }
    };
    let o = objects.clone();
    conn.create_scalar_function("pf_regclass", 1, det, move |ctx| relation(&o, ctx))?;
    // pg_partition_ancestors(rel): a table that is no partition is its only ancestor (a
    // set of one row, read as a value; in FROM, `Translator::from_functions` makes it a
    // row). psql passes the table's OID as text.
    let o = objects.clone();
    conn.create_scalar_function("pf_pg_partition_ancestors", 1, det, move |ctx| relation(&o, ctx))?;
    let o = objects.clone();
    conn.create_scalar_function("pf_regclass_name", 1, det, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Integer(n) => Some(o.relation_names.get(&n).cloned().unwrap_or_else(|| n.to_string())),
            ValueRef::Null => None,
            _ => {
                let name = text(ctx, 0).unwrap_or_default();
                match o.relation_oids.get(&object_name(&name)) {
                    Some(oid) => o.relation_names.get(oid).cloned(),
                    None => return raise("42P01", format!("relation \"{name}\" does not exist")),
                }
            }
        })
    })?;
    // A name among the built-in types, else the enum types'.
    let o = objects.clone();
    let type_by_name = move |name: &str| {
        type_by_name(name).or_else(|| {
            let n = object_name(name);
            o.type_names.iter().find(|(_, t)| **t == n).map(|(oid, _)| *oid)
        })
    };
    let by_name = type_by_name.clone();
    let to_regtype = type_by_name.clone();
    conn.create_scalar_function("pf_regtype", 1, det, move |ctx| {
        if let ValueRef::Integer(n) = ctx.get_raw(0) {
            return Ok(Some(n));
        }
        let Some(name) = text(ctx, 0) else { return Ok(None) };
        match by_name(&name) {
            Some(oid) => Ok(Some(oid)),
            None => raise("42704", format!("type \"{name}\" does not exist")),
        }
    })?;
    let o = objects.clone();
    let type_name = move |oid: i64| relations::format_type(oid, -1).or_else(|| o.type_names.get(&oid).cloned());
    conn.create_scalar_function("pf_regtype_name", 1, det, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Integer(n) => Some(type_name(n).unwrap_or_else(|| n.to_string())),
            ValueRef::Null => None,
            _ => {
                let name = text(ctx, 0).unwrap_or_default();
                match type_by_name(&name) {
                    Some(oid) => type_name(oid),
                    None => return raise("42704", format!("type \"{name}\" does not exist")),
                }
            }
        })
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_regproc", 1, det, move |ctx| {
        if let ValueRef::Integer(n) = ctx.get_raw(0) {
            return Ok(Some(n));
        }
        let Some(name) = text(ctx, 0) else { return Ok(None) };
        let wanted = object_name(name.split('(').next().unwrap_or(""));
        let wanted = wanted.strip_prefix("pg_catalog.").unwrap_or(&wanted);
        match o.procedures.iter().find(|(_, n)| **n == wanted) {
            Some((&oid, _)) => Ok(Some(oid)),
            None => match relations::INPUT_FUNCTIONS.iter().find(|(_, n)| *n == wanted) {
                Some((oid, _)) => Ok(Some(*oid)),
                None => raise("42883", format!("function \"{name}\" does not exist")),
            },
        }
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_regproc_name", 1, det, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Integer(n) => Some(o.procedures.get(&n).cloned().unwrap_or_else(|| {
                let builtin = relations::INPUT_FUNCTIONS.iter().find(|(oid, _)| *oid == n);
                builtin.map_or_else(|| n.to_string(), |(_, name)| name.to_string())
            })),
            _ => text(ctx, 0),
        })
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_regnamespace", 1, det, move |ctx| {
        if let ValueRef::Integer(n) = ctx.get_raw(0) {
            return Ok(Some(n));
        }
        let Some(name) = text(ctx, 0) else { return Ok(None) };
        match o.namespaces.get(&object_name(&name)) {
            Some(&oid) => Ok(Some(oid)),
            None => raise("3F000", format!("schema \"{name}\" does not exist")),
        }
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_regnamespace_name", 1, det, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Integer(n) => Some(
                o.namespaces
                    .iter()
                    .find(|(_, oid)| **oid == n)
                    .map_or_else(|| n.to_string(), |(name, _)| name.clone()),
            ),
            _ => text(ctx, 0),
        })
    })?;
    let user = session.user.clone();
    conn.create_scalar_function("pf_regrole", 1, det, move |ctx| {
        if let ValueRef::Integer(n) = ctx.get_raw(0) {
            return Ok(Some(n));
        }
        let Some(name) = text(ctx, 0) else { return Ok(None) };
        if object_name(&name) == user {
            Ok(Some(ROLE_OID))
        } else {
            raise("42704", format!("role \"{name}\" does not exist"))
        }
    })?;
    // to_regclass('name') and the like: the oid, or NULL when there is no such object.
    let o = objects.clone();
    conn.create_scalar_function("pf_to_regclass", 1, det, move |ctx| {
        Ok(text(ctx, 0).and_then(|n| o.relation_oids.get(&object_name(&n)).copied()))
    })?;
    conn.create_scalar_function("pf_to_regtype", 1, det, move |ctx| {
        Ok(text(ctx, 0).and_then(|n| to_regtype(&n)))
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_to_regproc", 1, det, move |ctx| {
        let wanted = object_name(&text(ctx, 0).unwrap_or_default());
        Ok(o.procedures.iter().find(|(_, n)| **n == wanted).map(|(&oid, _)| oid))
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_to_regnamespace", 1, det, move |ctx| {
        Ok(o.namespaces
            .get(&object_name(&text(ctx, 0).unwrap_or_default()))
            .copied())
    })?;
    Ok(())
}

/// Booleans read as PostgreSQL reads them, and regular expressions.
fn define_conditions(conn: &Connection, budget: &Arc<QueryBudget>) -> rusqlite::Result<()> {
    let det = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    conn.create_scalar_function("pf_bool", 1, det, |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Null => None,
            ValueRef::Integer(n) => Some(n != 0),
            _ => {
                let t = text(ctx, 0).unwrap_or_default().trim().to_ascii_lowercase();
                match t.as_str() {
                    "t" | "true" | "y" | "yes" | "on" | "1" => Some(true),
                    "f" | "false" | "n" | "no" | "off" | "0" => Some(false),
                    _ => return raise("22P02", format!("invalid input syntax for type boolean: \"{t}\"")),
                }
            }
        })
    })?;
    conn.create_scalar_function("pf_regex", 3, det, |ctx| {
        let (Some(s), Some(p)) = (text(ctx, 0), text(ctx, 1)) else {
            return Ok(None);
        };
        Ok(Some(
            regex(&p, if int(ctx, 2) == Some(1) { "i" } else { "" })?.is_match(&s),
        ))
    })?;
    let b = budget.clone();
    conn.create_scalar_function("pf_regexp_replace", -1, det, move |ctx| {
        let (Some(s), Some(p), Some(r)) = (text(ctx, 0), text(ctx, 1), text(ctx, 2)) else {
            return Ok(None);
        };
        let flags = if ctx.len() > 3 {
            text(ctx, 3).unwrap_or_default()
        } else {
            String::new()
        };
        let re = regex(&p, &flags)?;
        b.build(|b| permafrost_sql::expr::regex::replace(&s, &re, &r, flags.contains('g'), b).map(Some))
    })?;
    Ok(())
}

/// The catalog's text functions (format_type, pg_get_*) and the session's names, schemas and
/// version.
fn define_catalog_text(conn: &Connection, objects: &Arc<Objects>, session: &SessionInfo) -> rusqlite::Result<()> {
    let det = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    let o = objects.clone();
    conn.create_scalar_function("pf_format_type", 2, det, move |ctx| {
        let Some(oid) = int(ctx, 0) else { return Ok(None) };
        Ok(Some(
            relations::format_type(oid, int(ctx, 1).unwrap_or(-1))
                .or_else(|| o.type_names.get(&oid).cloned())
                .unwrap_or_else(|| "???".into()),
        ))
    })?;
    conn.create_scalar_function("pf_pg_get_expr", -1, det, |ctx| Ok(text(ctx, 0)))?;
    let o = objects.clone();
    conn.create_scalar_function("pf_pg_get_indexdef", -1, det, move |ctx| {
        let Some((def, cols)) = int(ctx, 0).and_then(|oid| o.indexes.get(&oid)) else {
            return Ok(None);
        };
        let col = if ctx.len() > 1 { int(ctx, 1).unwrap_or(0) } else { 0 };
        Ok(match col {
            0 => Some(def.clone()),
            n => usize::try_from(n - 1).ok().and_then(|k| cols.get(k).cloned()),
        })
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_pg_get_constraintdef", -1, det, move |ctx| {
        Ok(int(ctx, 0).and_then(|oid| o.constraints.get(&oid).cloned()))
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_pg_get_serial_sequence", 2, det, move |ctx| {
        let (Some(t), Some(c)) = (text(ctx, 0), text(ctx, 1)) else {
            return Ok(None);
        };
        let table = object_name(&t);
        if !o.relation_oids.contains_key(&table) {
            return raise("42P01", format!("relation \"{t}\" does not exist"));
        }
        Ok(o.serial.get(&(table, c.to_ascii_lowercase())).cloned())
    })?;
    let user = session.user.clone();
    conn.create_scalar_function("pf_pg_get_userbyid", 1, det, move |ctx| {
        Ok(int(ctx, 0).map(|oid| {
            if oid == ROLE_OID {
                user.clone()
            } else {
                format!("unknown (OID={oid})")
            }
        }))
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_pg_get_viewdef", -1, det, move |ctx| {
        Ok(int(ctx, 0).and_then(|oid| o.view_definitions.get(&oid).cloned()))
    })?;
    for name in [
        "pf_pg_get_triggerdef",
        "pf_pg_get_ruledef",
        "pf_pg_get_partkeydef",
        "pf_pg_get_statisticsobjdef",
        "pf_pg_get_statisticsobjdef_columns",
        "pf_pg_get_policy_expr",
        "pf_shobj_description",
    ] {
        // Nothing here has a trigger, rule, partition key or comment on
        // a shared object.
        conn.create_scalar_function(name, -1, det, |_| Ok(None::<String>))?;
    }
    // The comments of tables (`obj_description(oid [, 'pg_class'])`) and of columns
    // (`col_description(oid, attnum)`).
    let o = objects.clone();
    conn.create_scalar_function("pf_obj_description", -1, det, move |ctx| {
        let class = if ctx.len() > 1 { text(ctx, 1) } else { None };
        if class.as_deref().is_some_and(|c| c != "pg_class") {
            return Ok(None);
        }
        Ok(int(ctx, 0).and_then(|oid| o.comments.get(&(oid, 0)).cloned()))
    })?;
    let o = objects.clone();
    conn.create_scalar_function("pf_col_description", 2, det, move |ctx| {
        let (Some(oid), Some(n)) = (int(ctx, 0), int(ctx, 1)) else {
            return Ok(None);
        };
        Ok(if n > 0 {
            o.comments.get(&(oid, n)).cloned()
        } else {
            None
        })
    })?;
    conn.create_scalar_function("pf_pg_get_function_result", 1, det, |_| Ok(None::<String>))?;
    for name in ["pf_pg_get_function_arguments", "pf_pg_get_function_identity_arguments"] {
        let o = objects.clone();
        conn.create_scalar_function(name, 1, det, move |ctx| {
            Ok(int(ctx, 0).and_then(|oid| o.procedure_args.get(&oid).cloned()))
        })?;
    }
    for name in ["pf_pg_function_is_visible", "pf_pg_collation_is_visible"] {
        conn.create_scalar_function(name, 1, det, |ctx| Ok(int(ctx, 0).map(|_| true)))?;
    }
    for name in [
        "pf_has_table_privilege",
        "pf_has_schema_privilege",
        "pf_has_database_privilege",
        "pf_has_column_privilege",
        "pf_has_function_privilege",
        "pf_has_sequence_privilege",
        "pf_pg_has_role",
        "pf_pg_relation_is_publishable",
    ] {
        // Every role may do everything (there is one role: the session's).
        conn.create_scalar_function(name, -1, det, |_| Ok(true))?;
    }
    conn.create_scalar_function("pf_pg_is_in_recovery", 0, det, |_| Ok(false))?;
    conn.create_scalar_function("pf_pg_encoding_to_char", 1, det, |ctx| {
        Ok(int(ctx, 0).map(|e| if e == 6 { "UTF8" } else { "" }))
    })?;
    conn.create_scalar_function("pf_pg_tablespace_location", 1, det, |_| Ok(""))?;
    for name in ["pf_current_database", "pf_current_catalog"] {
        let db = session.database.clone();
        conn.create_scalar_function(name, 0, det, move |_| Ok(db.clone()))?;
    }
    for name in ["pf_current_user", "pf_current_role", "pf_session_user", "pf_user"] {
        let user = session.user.clone();
        conn.create_scalar_function(name, 0, det, move |_| Ok(user.clone()))?;
    }
    let version = crate::session_settings::version_text();
    conn.create_scalar_function("pf_version", 0, det, move |_| Ok(version.clone()))?;
    Ok(())
}

/// Defines the functions that answer for one session's connection: its backend pid and
/// settings (defined again for each query of a cached catalog database).
pub fn define_session(conn: &Connection, objects: &Arc<Objects>, session: &SessionInfo) -> rusqlite::Result<()> {
    let det = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    // The schemas of the session's search path that exist (`current_schema()`: the first).
    let schemas: Vec<String> = session.path()[1..]
        .iter()
        .filter(|s| *s == permafrost_sql::namespace::PUBLIC || objects.namespaces.contains_key(*s))
        .cloned()
        .collect();
    let first = schemas.first().cloned();
    conn.create_scalar_function("pf_current_schema", 0, det, move |_| Ok(first.clone()))?;
    conn.create_scalar_function("pf_current_schemas", 1, det, move |ctx| {
        let implicit = int(ctx, 0).unwrap_or(0) != 0;
        let names = implicit
            .then(|| "pg_catalog".to_string())
            .into_iter()
            .chain(schemas.iter().cloned());
        Ok(serde_json::Value::from(names.collect::<Vec<_>>()).to_string())
    })?;
    // What the session's temporary schema and search path reach, each name in the first
    // schema that has it (crate::temp_tables qualifies unqualified names likewise).
    let o = objects.clone();
    let path = session.path();
    conn.create_scalar_function("pf_pg_table_is_visible", 1, det, move |ctx| {
        Ok(int(ctx, 0).map(|oid| o.relation_names.get(&oid).is_none_or(|k| o.visible(k, &path))))
    })?;
    let o = objects.clone();
    let path = session.path();
    conn.create_scalar_function("pf_pg_type_is_visible", 1, det, move |ctx| {
        Ok(int(ctx, 0).map(|oid| o.type_names.get(&oid).is_none_or(|k| o.visible(k, &path))))
    })?;
    let pid = session.pid;
    conn.create_scalar_function("pf_pg_backend_pid", 0, det, move |_| Ok(pid))?;
    let settings = session.settings.clone();
    conn.create_scalar_function("pf_current_setting", -1, det, move |ctx| {
        let Some(name) = text(ctx, 0) else { return Ok(None) };
        let missing_ok = ctx.len() > 1 && int(ctx, 1).unwrap_or(0) != 0;
        let lower = name.to_ascii_lowercase();
        if let Some((_, v, _)) = settings.iter().find(|(n, _, _)| n.to_ascii_lowercase() == lower) {
            return Ok(Some(v.clone()));
        }
        if let Some(v) = crate::session_settings::read_only_parameter(&lower) {
            return Ok(Some(v.to_string()));
        }
        if missing_ok {
            return Ok(None);
        }
        raise("42704", format!("unrecognized configuration parameter \"{name}\""))
    })?;
    // `set_config(name, value, is_local)` with other expressions (alone it is SET,
    // crate::command::classify) changes nothing from a catalog query: a setting this server
    // has is refused; one it lacks (asyncpg asks for `jit`) is unknown, as
    // `current_setting` says.
    let settings = session.settings.clone();
    conn.create_scalar_function("pf_set_config", 3, det, move |ctx| {
        let Some(name) = text(ctx, 0) else {
            return raise::<Option<String>>("22023", "SET requires parameter name".to_string());
        };
        let lower = name.to_ascii_lowercase();
        let known = settings.iter().any(|(n, _, _)| n.to_ascii_lowercase() == lower)
            || crate::session_settings::read_only_parameter(&lower).is_some();
        if known {
            return raise(
                "0A000",
                format!(
                    "set_config('{name}', ...) among other expressions is not supported (call it alone, \
                     or use SET {name} = value)"
                ),
            );
        }
        raise("42704", format!("unrecognized configuration parameter \"{name}\""))
    })?;
    Ok(())
}

/// The string and array helpers (those that build values, under `budget`).
fn define_strings(conn: &Connection, budget: &Arc<QueryBudget>) -> rusqlite::Result<()> {
    let det = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    let b = budget.clone();
    conn.create_scalar_function("pf_quote_ident", 1, det, move |ctx| {
        let Some(s) = text(ctx, 0) else { return Ok(None) };
        b.build(|b| b.check(s.len().saturating_mul(2).saturating_add(2)))?;
        Ok(Some(permafrost_sql::expr::format::quote_ident(&s)))
    })?;
    let b = budget.clone();
    conn.create_scalar_function("pf_quote_literal", 1, det, move |ctx| {
        let Some(s) = text(ctx, 0) else { return Ok(None) };
        b.build(|b| b.check(s.len().saturating_mul(2).saturating_add(2)))?;
        Ok(Some(permafrost_sql::expr::format::quote_literal(&s)))
    })?;
    let b = budget.clone();
    conn.create_scalar_function("pf_array_to_string", -1, det, move |ctx| {
        let Some(items) = array(ctx, 0) else { return Ok(None) };
        let sep = text(ctx, 1).unwrap_or_default();
        let null = if ctx.len() > 2 { text(ctx, 2) } else { None };
        b.build(|b| {
            let mut out = b.text(0)?;
            for part in items.iter().filter_map(|v| element_text(v).or_else(|| null.clone())) {
                if !out.is_empty() {
                    out.push_str(&sep)?;
                }
                out.push_str(&part)?;
            }
            Ok(Some(out.finish()))
        })
    })?;
    conn.create_scalar_function("pf_array_upper", 2, det, |ctx| {
        Ok(array(ctx, 0).and_then(|a| (!a.is_empty()).then_some(a.len() as i64)))
    })?;
    conn.create_scalar_function("pf_array_lower", 2, det, |ctx| {
        Ok(array(ctx, 0).and_then(|a| (!a.is_empty()).then_some(1i64)))
    })?;
    // The first position (from 1, or from the third argument) of an element equal to the
    // second argument; NULL when there is none. NULL is found by NULL, as in PostgreSQL.
    conn.create_scalar_function("pf_array_position", -1, det, |ctx| {
        let Some(items) = array(ctx, 0) else { return Ok(None) };
        let wanted = text(ctx, 1);
        let from = if ctx.len() > 2 {
            int(ctx, 2).unwrap_or(1).max(1)
        } else {
            1
        };
        Ok(items
            .iter()
            .enumerate()
            .skip(usize::try_from(from - 1).unwrap_or(0))
            .find(|(_, v)| element_text(v) == wanted)
            .map(|(i, _)| i as i64 + 1))
    })?;
    let b = budget.clone();
    conn.create_scalar_function("pf_split_part", 3, det, move |ctx| {
        let (Some(s), Some(d), Some(n)) = (text(ctx, 0), text(ctx, 1), int(ctx, 2)) else {
            return Ok(None);
        };
        let parts: Vec<&str> = if d.is_empty() {
            vec![s.as_str()]
        } else {
            s.split(d.as_str()).collect()
        };
        let k = if n > 0 { n - 1 } else { parts.len() as i64 + n };
        let part = usize::try_from(k).ok().and_then(|k| parts.get(k)).map_or("", |p| p);
        b.build(|b| b.copy(part)).map(Some)
    })?;
    conn.create_scalar_function("pf_starts_with", 2, det, |ctx| {
        Ok(match (text(ctx, 0), text(ctx, 1)) {
            (Some(s), Some(p)) => Some(s.starts_with(&p)),
            _ => None,
        })
    })?;
    for (name, left) in [("pf_left", true), ("pf_right", false)] {
        let b = budget.clone();
        conn.create_scalar_function(name, 2, det, move |ctx| {
            let (Some(s), Some(n)) = (text(ctx, 0), int(ctx, 1)) else {
                return Ok(None);
            };
            let len = s.chars().count() as i64;
            let take = if n >= 0 { n.min(len) } else { (len + n).max(0) };
            // The byte where the kept characters start or end.
            let at = |chars: i64| s.char_indices().nth(chars as usize).map_or(s.len(), |(i, _)| i);
            let part = if left { &s[..at(take)] } else { &s[at(len - take)..] };
            b.build(|b| b.copy(part)).map(Some)
        })?;
    }
    for (name, left) in [("pf_lpad", true), ("pf_rpad", false)] {
        let b = budget.clone();
        conn.create_scalar_function(name, -1, det, move |ctx| {
            let (Some(s), Some(n)) = (text(ctx, 0), int(ctx, 1)) else {
                return Ok(None);
            };
            let fill = if ctx.len() > 2 {
                match text(ctx, 2) {
                    Some(f) => f,
                    None => return Ok(None),
                }
            } else {
                " ".into()
            };
            b.build(|b| b.pad(&s, n, &fill, left)).map(Some)
        })?;
    }
    let b = budget.clone();
    conn.create_scalar_function("pf_repeat", 2, det, move |ctx| {
        let (Some(s), Some(n)) = (text(ctx, 0), int(ctx, 1)) else {
            return Ok(None);
        };
        b.build(|b| b.repeat(&s, n)).map(Some)
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_types_are_read_as_postgresql_reads_them() {
        assert_eq!(object_name("public.\"Items\""), "Items");
        assert_eq!(object_name("pg_catalog.PG_CLASS"), "pg_class");
        assert_eq!(type_by_name("integer"), Some(23));
        assert_eq!(type_by_name("character varying(20)"), Some(1043));
        assert_eq!(type_by_name("text[]"), Some(1009));
        assert_eq!(type_by_name("hstore"), None);
    }
}
