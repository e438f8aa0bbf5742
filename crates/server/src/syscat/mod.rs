//! The system catalogs as relations: `pg_catalog` and `information_schema`, answered from
//! Permafrost's schema by a relational engine of their own.
//!
//! Drivers, ORMs and tools read the catalogs with queries of every shape: joins, outer
//! joins, correlated subqueries, set-returning functions, regular expressions. Those
//! queries are not the engine's business (they touch no user data, and nothing of them
//! needs partitions, eviction or the log), so they are answered apart: the catalog is
//! written into an in-memory SQLite database ([`relations`]), the query is translated from
//! PostgreSQL's SQL to SQLite's ([`translate`]), PostgreSQL's catalog functions are defined
//! there ([`functions`]), and the rows come back typed as PostgreSQL types them.
//!
//! A query goes here when it names a catalog relation (`pg_catalog.x`,
//! `information_schema.x`, or an unqualified `pg_x` that is not a user table), or when it
//! reads no relation at all and calls a catalog function the engine's SQL lacks
//! (`current_database()`, `pg_backend_pid()` ...). A query that names both a catalog and a
//! user table is refused (0A000). A catalog database is kept for the next query of the same
//! schema, procedures and role ([`checkout`]); a query may not run longer than the
//! session's `statement_timeout`, and a cancel request stops it.

mod catalog;
mod functions;
mod limits;
mod names;
mod pg_columns;
pub mod relations;
mod sizes;

pub use relations::SessionInfo;
mod tables;
mod translate;

use std::ops::ControlFlow;
use std::sync::Arc;

use permafrost_executor::Database;
use permafrost_sql::Catalog;
use permafrost_types::Value;
use pgwire::api::Type;
use pgwire::api::portal::Format;
use pgwire::api::results::{DataRowEncoder, FieldFormat, QueryResponse, Response};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::types::format::FormatOptions;
use rusqlite::Connection;
use rusqlite::types::{Value as V, ValueRef};
use sqlparser::ast::{ObjectName, ObjectNamePart, Statement, Visit, Visitor};

use crate::error::client_error;

/// A planned catalog query.
#[derive(Debug)]
pub struct SystemQuery {
    /// Its SQLite text.
    sql: String,
    /// Its columns, named and typed as PostgreSQL's.
    pub columns: Vec<(String, Type)>,
    /// The PostgreSQL type names of the columns (how values are written).
    types: Vec<&'static str>,
    /// Its parameters' types (`$1` ...): what the text compares them with, else text.
    pub params: Vec<Type>,
}

/// The wire type of a PostgreSQL type name.
fn wire_type(name: &str) -> Type {
    relations::types()
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| u32::try_from(t.oid).ok())
        .and_then(Type::from_oid)
        .unwrap_or(Type::TEXT)
}

/// Whether `pg_catalog.name` is a catalog relation (every relation of [`pg_columns`] is,
/// views included).
fn is_catalog_relation(name: &str) -> bool {
    pg_columns::PG_COLUMNS
        .iter()
        .any(|(s, n, _)| *s == "pg_catalog" && *n == name)
}

/// The relations a statement names, as (schema, name) lower-cased.
fn relations_of(stmt: &Statement) -> Vec<(Option<String>, String)> {
    struct Names(Vec<(Option<String>, String)>);
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_relation(&mut self, r: &ObjectName) -> ControlFlow<()> {
            let parts: Vec<String> =
                r.0.iter()
                    .map(|p| match p {
                        ObjectNamePart::Identifier(i) if i.quote_style.is_some() => i.value.clone(),
                        ObjectNamePart::Identifier(i) => i.value.to_ascii_lowercase(),
                        ObjectNamePart::Function(f) => f.name.value.to_ascii_lowercase(),
                    })
                    .collect();
            match parts.as_slice() {
                [name] => self.0.push((None, name.clone())),
                [.., schema, name] => self.0.push((Some(schema.clone()), name.clone())),
                [] => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut n = Names(Vec::new());
    let _ = stmt.visit(&mut n);
    n.0
}

/// Whether a relation named in a query is a catalog relation; `None` when it names
/// neither (a user table, or nothing known).
fn names_catalog(schema: Option<&str>, name: &str, catalog: &Catalog) -> Option<bool> {
    match schema {
        Some("pg_catalog" | "information_schema") => Some(true),
        Some("public") | None if catalog.table(name).is_some() => Some(false),
        None if is_catalog_relation(name) => Some(true),
        _ => None,
    }
}

/// Whether `stmt` is the catalogs' to answer: a query that names a catalog relation, or
/// that reads no relation and calls a catalog function or casts to a reg type (`SELECT
/// current_database()`, `SELECT 'x'::regclass`). 0A000 when it joins catalogs with user
/// tables.
pub fn answers(stmt: &Statement, catalog: &Catalog) -> PgWireResult<bool> {
    if !matches!(stmt, Statement::Query(_)) {
        return Ok(false);
    }
    let relations = relations_of(stmt);
    if relations.is_empty() {
        return Ok(calls_catalog_functions(stmt));
    }
    let mut system = false;
    let mut user = false;
    for (schema, name) in relations {
        match names_catalog(schema.as_deref(), &name, catalog) {
            Some(true) => system = true,
            Some(false) => user = true,
            None => {}
        }
    }
    if system && user {
        return Err(client_error(
            "0A000",
            "a query cannot read the system catalogs and user tables together (query them separately)",
        ));
    }
    Ok(system)
}

/// Translates `sql` if it parses (the fuzz target's entry: translation never panics).
pub fn fuzz_translate(sql: &str) {
    if let Ok(stmt) = permafrost_sql::parse::parse_statement(sql) {
        let _ = translate::translate(&stmt);
    }
}

/// Whether `stmt` calls one of PostgreSQL's catalog functions the catalog's engine
/// defines and the engine's SQL lacks (`current_database()`, `pg_backend_pid()` ...) or
/// casts to a reg type.
fn calls_catalog_functions(stmt: &Statement) -> bool {
    /// Whether one was found; the `name::regclass` or `pg_get_serial_sequence(...)`
    /// arguments of `nextval()`, `setval()` and `currval()` (by address), which name a sequence the
    /// engine resolves itself (permafrost_sql's bind/sequence.rs).
    struct Calls(bool, Vec<*const sqlparser::ast::Expr>);
    impl Visitor for Calls {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &sqlparser::ast::Expr) -> ControlFlow<()> {
            use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments};
            let found = match e {
                Expr::Function(f) => match f.name.0.last() {
                    Some(ObjectNamePart::Identifier(i)) => {
                        if ["nextval", "setval", "currval"].contains(&i.value.to_ascii_lowercase().as_str())
                            && let FunctionArguments::List(l) = &f.args
                            && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(a))) = l.args.first()
                        {
                            self.1.push(a as *const Expr);
                        }
                        !self.1.contains(&(e as *const Expr))
                            && names::is_catalog_function(&i.value)
                            && !permafrost_sql::bind::call::has_function(&i.value)
                    }
                    _ => false,
                },
                Expr::Cast { data_type, .. } => {
                    !self.1.contains(&(e as *const Expr)) && data_type.to_string().to_ascii_lowercase().contains("reg")
                }
                _ => false,
            };
            if found {
                self.0 = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut c = Calls(false, Vec::new());
    let _ = stmt.visit(&mut c);
    c.0
}

/// The SQLSTATE and message of an engine error.
fn error_of(e: rusqlite::Error) -> PgWireError {
    let msg = e.to_string();
    if let Some(rest) = msg.split("SQLSTATE ").nth(1)
        && let Some((code, m)) = rest.split_once(": ")
        && code.len() == 5
    {
        return client_error(code, m.to_string());
    }
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        match f.code {
            rusqlite::ErrorCode::OperationInterrupted => {
                return client_error("57014", "canceling statement due to user request or statement timeout");
            }
            // A value past the query's SQLITE_LIMIT_LENGTH (`limits`): as PostgreSQL
            // answers a value past its limit.
            rusqlite::ErrorCode::TooBig => return client_error("54000", "requested length too large"),
            _ => {}
        }
    }
    if let Some(f) = msg.strip_prefix("no such function: ") {
        let name = f.split_whitespace().next().unwrap_or(f).trim_start_matches("pf_");
        return client_error("42883", format!("function {name} does not exist"));
    }
    if let Some(c) = msg.strip_prefix("no such column: ") {
        return client_error("42703", format!("column {c} does not exist"));
    }
    if let Some(t) = msg.strip_prefix("no such table: ") {
        return client_error("42P01", format!("relation \"{t}\" does not exist"));
    }
    client_error("0A000", format!("this catalog query is not supported: {msg}"))
}

/// The catalog's tables and procedures as the relations need them.
/// A catalog database, kept for the next query of the same schema, procedures and role.
struct Built {
    catalog: Arc<Catalog>,
    procedures: relations::Procedures,
    user: String,
    database: String,
    conn: Connection,
    /// Its objects by id (what the functions that are defined again per session read).
    objects: Arc<relations::Objects>,
    /// The budget of the query it runs ([`limits`]), which its functions build under.
    budget: Arc<limits::QueryBudget>,
    /// The engine's sizes its size functions read, taken for a query that calls them.
    sizes: Arc<sizes::Sizes>,
}

/// The most a catalog query's rows may take (they are held whole before they are sent).
const MAX_RESULT_BYTES: usize = 64 << 20;

/// Catalog databases kept between queries (their connections use them one at a time).
static BUILT: std::sync::Mutex<Vec<Built>> = std::sync::Mutex::new(Vec::new());
const KEPT: usize = 8;

/// A catalog database for `session`'s query: a kept one if the schema is unchanged (with
/// the session's settings and pid set again), else a new one.
fn checkout(db: &Database, session: &SessionInfo) -> PgWireResult<Built> {
    let catalog = db.catalog();
    let procedures: relations::Procedures = db
        .procedure_names()
        .into_iter()
        .filter_map(|n| {
            let sig = db.procedure(&n).ok()?.signature()?.to_vec();
            Some((n, sig))
        })
        .collect();
    let kept = {
        let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
        built
            .iter()
            .position(|b| {
                Arc::ptr_eq(&b.catalog, &catalog)
                    && b.procedures == procedures
                    && b.user == session.user
                    && b.database == session.database
            })
            .map(|i| built.swap_remove(i))
    };
    if let Some(b) = kept {
        let refresh = || -> rusqlite::Result<()> {
            b.conn.execute_batch("DELETE FROM pg_catalog.pg_settings")?;
            insert_rows(&b.conn, &relations::settings(session))?;
            functions::define_session(&b.conn, &b.objects, session)
        };
        refresh().map_err(error_of)?;
        return Ok(b);
    }
    let tables: Vec<_> = catalog.tables().map(|t| &**t).collect();
    let sequences: Vec<_> = catalog.sequences().map(|s| &**s).collect();
    let enums: Vec<_> = catalog.enum_types().collect();
    let schemas: Vec<_> = catalog.schemas().collect();
    let views = views_shown(&catalog);
    let budget = Arc::new(limits::QueryBudget::default());
    let sizes = Arc::new(sizes::Sizes::default());
    let (conn, objects) = build_db(
        (&tables, &sequences, &enums, &schemas, &views),
        &procedures,
        session,
        &budget,
        &sizes,
    )?;
    Ok(Built {
        catalog: catalog.clone(),
        procedures,
        user: session.user.clone(),
        database: session.database.clone(),
        conn,
        objects,
        budget,
        sizes,
    })
}

/// The catalog's views as the catalogs show them: their columns as a query of each would
/// answer (none for one that no longer plans).
fn views_shown(catalog: &Catalog) -> Vec<relations::ViewShown> {
    let quoted = permafrost_sql::expr::format::quote_ident;
    catalog
        .views()
        .map(|v| {
            let (schema, bare) = permafrost_sql::namespace::split(&v.name);
            let sql = format!("SELECT * FROM {}.{}", quoted(schema), quoted(bare));
            let columns = permafrost_sql::prepare(catalog, &sql)
                .map(|p| p.columns().iter().map(|c| (c.name.clone(), c.ty)).collect())
                .unwrap_or_default();
            relations::ViewShown {
                name: v.name.clone(),
                columns,
                definition: format!(" {};", v.query),
            }
        })
        .collect()
}

/// Keeps a catalog database for the next query (the oldest goes past [`KEPT`]).
fn checkin(b: Built) {
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    built.push(b);
    if built.len() > KEPT {
        built.remove(0);
    }
}

fn insert_rows(conn: &Connection, r: &relations::Relation) -> rusqlite::Result<()> {
    if r.rows.is_empty() {
        return Ok(());
    }
    let marks = vec!["?"; r.columns.len()].join(", ");
    let mut ins = conn.prepare(&format!("INSERT INTO {}.{} VALUES ({marks})", r.schema, r.name))?;
    for row in &r.rows {
        ins.execute(rusqlite::params_from_iter(row.iter()))?;
    }
    Ok(())
}

/// A new catalog database of `tables` (with the sequences of their own) and `procedures`
/// for `session`.
fn build_db(
    tables: relations::Relations<'_>,
    procedures: &relations::Procedures,
    session: &SessionInfo,
    budget: &Arc<limits::QueryBudget>,
    sizes: &Arc<sizes::Sizes>,
) -> PgWireResult<(Connection, Arc<relations::Objects>)> {
    let (rels, objects) = catalog::build(tables, procedures, session);
    let conn = Connection::open_in_memory().map_err(error_of)?;
    let setup = || -> rusqlite::Result<()> {
        conn.execute_batch(
            "ATTACH DATABASE ':memory:' AS pg_catalog; ATTACH DATABASE ':memory:' AS information_schema; \
             PRAGMA case_sensitive_like = ON;",
        )?;
        for r in &rels {
            // Each column is declared as `<pg type>__<affinity>`: the engine reads the
            // type back (decltype), and the affinity keeps text text.
            let cols: Vec<String> = r
                .columns
                .iter()
                .map(|(n, t)| format!("\"{n}\" \"{t}__{}\"", affinity(t)))
                .collect();
            conn.execute_batch(&format!("CREATE TABLE {}.{} ({})", r.schema, r.name, cols.join(", ")))?;
            insert_rows(&conn, r)?;
        }
        for (name, select) in relations::VIEWS {
            conn.execute_batch(&format!("CREATE VIEW pg_catalog.{name} AS {select}"))?;
        }
        Ok(())
    };
    setup().map_err(error_of)?;
    let objects = Arc::new(objects);
    functions::define(&conn, &objects, session, budget).map_err(error_of)?;
    limits::define_array_agg(&conn, budget).map_err(error_of)?;
    sizes::define(&conn, sizes).map_err(error_of)?;
    rusqlite::vtab::series::load_module(&conn).map_err(error_of)?;
    Ok((conn, objects))
}

fn affinity(pg: &str) -> &'static str {
    match pg {
        "int2" | "int4" | "int8" | "oid" | "bool" | "regproc" | "regclass" | "regtype" => "INT",
        "float4" | "float8" => "REAL",
        _ => "TEXT",
    }
}

/// The PostgreSQL type a column's declared type names (`int2__INT` is int2).
fn declared(decl: &str) -> Option<&'static str> {
    let (t, _) = decl.trim_matches('"').split_once("__")?;
    relations::static_type_name(t)
}

/// Plans a catalog query: its translation, its columns and their types.
pub fn prepare(db: &Database, stmt: &Statement) -> PgWireResult<SystemQuery> {
    let tr = translate::translate(stmt).map_err(|e| match e.0.strip_prefix("SQLSTATE 42883: ") {
        Some(m) => client_error("42883", m.to_string()),
        None => client_error("0A000", e.0),
    })?;
    let built = checkout(db, &SessionInfo::default())?;
    let described = describe(&built.conn, &tr);
    checkin(built);
    let (columns, types, count) = described?;
    let params = (0..count)
        .map(|i| tr.params.get(i).copied().flatten().map_or(Type::TEXT, wire_type))
        .collect();
    Ok(SystemQuery {
        sql: tr.sql,
        columns,
        types,
        params,
    })
}

/// The columns of a translated query (named and typed) and its number of parameters.
type Described = (Vec<(String, Type)>, Vec<&'static str>, usize);

fn describe(conn: &Connection, tr: &translate::Translated) -> PgWireResult<Described> {
    let st = conn.prepare(&tr.sql).map_err(error_of)?;
    let mut columns = Vec::new();
    let mut types = Vec::new();
    for (k, c) in st.columns().enumerate() {
        let said = tr.columns.as_ref().and_then(|cs| cs.get(k));
        let ty = c
            .decl_type()
            .and_then(declared)
            .or_else(|| said.and_then(|s| s.1))
            .unwrap_or("text");
        let name = said.map_or_else(|| c.name().to_string(), |s| s.0.clone());
        columns.push((name, wire_type(ty)));
        types.push(ty);
    }
    let count = (1..=st.parameter_count())
        .map(|i| {
            st.parameter_name(i)
                .and_then(|n| n.trim_start_matches('$').parse::<usize>().ok())
                .unwrap_or(i)
        })
        .max()
        .unwrap_or(0);
    Ok((columns, types, count))
}

/// Runs a catalog query with its parameters: its rows. It stops (57014) once
/// `stopped` says so (a cancel request, the statement timeout).
pub fn run(
    db: &Database,
    q: &SystemQuery,
    params: &[Value],
    session: &SessionInfo,
    stopped: impl Fn() -> bool + Send + 'static,
) -> PgWireResult<Vec<Vec<V>>> {
    let mut built = checkout(db, session)?;
    built
        .budget
        .set(&built.conn, db.statement_memory(), db.statement_pool().clone())
        .map_err(error_of)?;
    if sizes::Sizes::wanted(&q.sql)
        && let Err(e) = built.sizes.fill(db, &built.conn)
    {
        checkin(built);
        return Err(client_error(e.0, e.1));
    }
    let r = query(&mut built.conn, &built.budget, q, params, stopped);
    // (A query stopped half-way leaves the database as it was: it only reads.)
    let _ = built.conn.progress_handler(0, None::<fn() -> bool>);
    checkin(built);
    r
}

fn query(
    conn: &mut Connection,
    budget: &limits::QueryBudget,
    q: &SystemQuery,
    params: &[Value],
    stopped: impl Fn() -> bool + Send + 'static,
) -> PgWireResult<Vec<Vec<V>>> {
    conn.progress_handler(10_000, Some(stopped)).map_err(error_of)?;
    let mut st = conn.prepare(&q.sql).map_err(error_of)?;
    for i in 1..=st.parameter_count() {
        let n = st
            .parameter_name(i)
            .and_then(|n| n.trim_start_matches('$').parse::<usize>().ok())
            .unwrap_or(i);
        let v = n
            .checked_sub(1)
            .and_then(|k| params.get(k))
            .ok_or_else(|| client_error("08P01", format!("parameter ${n} was not bound")))?;
        let array = q.params.get(n - 1).is_some_and(|t| t.name().starts_with('_'));
        let v = match (array, v) {
            (true, Value::Text(t)) => V::Text(array_json(t.as_ref()).ok_or_else(|| {
                client_error(
                    "22P02",
                    format!("malformed array literal: \"{}\" (parameter ${n})", t.as_ref()),
                )
            })?),
            _ => sqlite_value(v),
        };
        st.raw_bind_parameter(i, v).map_err(error_of)?;
    }
    let mut rows = st.raw_query();
    let mut out = Vec::new();
    let mut bytes = 0usize;
    // The rows are held whole before they are sent: they count against the statement's
    // memory and draw from the pool, as the engine's results do.
    let limit = MAX_RESULT_BYTES.min(budget.work_mem());
    let mut reservation = permafrost_sql::workmem::Reservation::default();
    let pool = budget.pool();
    while let Some(row) = rows.next().map_err(error_of)? {
        let mut r = Vec::with_capacity(q.types.len());
        for k in 0..q.types.len() {
            let v = owned(row.get_ref(k).map_err(error_of)?);
            bytes += 16
                + match &v {
                    V::Text(t) => t.len(),
                    V::Blob(b) => b.len(),
                    _ => 0,
                };
            r.push(v);
        }
        if bytes > limit {
            return Err(client_error(
                "54000",
                format!("a catalog query's result may hold at most {limit} bytes (its statement's memory)"),
            ));
        }
        reservation
            .cover(bytes, pool.as_ref())
            .map_err(|e| client_error(e.sqlstate(), e.to_string()))?;
        budget.set_held(bytes);
        out.push(r);
    }
    Ok(out)
}

fn owned(v: ValueRef<'_>) -> V {
    match v {
        ValueRef::Null => V::Null,
        ValueRef::Integer(n) => V::Integer(n),
        ValueRef::Real(f) => V::Real(f),
        ValueRef::Text(t) => V::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => V::Blob(b.to_vec()),
    }
}

/// The response of a catalog query's rows, each column in the format the client asked
/// for.
pub fn respond(q: &SystemQuery, rows: Vec<Vec<V>>, format: &Format) -> PgWireResult<Response> {
    let schema = Arc::new(crate::pg_types::fields(&q.columns, format));
    let mut enc = DataRowEncoder::new(schema.clone());
    let opts = FormatOptions::default();
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        for (k, v) in row.iter().enumerate() {
            let ty = q.types[k];
            match format.format_for(k) {
                FieldFormat::Text => {
                    let t = pg_text(ValueRef::from(v), ty);
                    enc.encode_field_with_type_and_format(&t, &Type::TEXT, FieldFormat::Text, &opts)?;
                }
                FieldFormat::Binary => binary(&mut enc, v, ty, &q.columns[k].1)?,
            }
        }
        out.push(Ok(enc.take_row()));
    }
    Ok(Response::Query(QueryResponse::new(schema, futures::stream::iter(out))))
}

/// Writes a value in the binary form of its column's type.
fn binary(enc: &mut DataRowEncoder, v: &V, ty: &str, wire: &Type) -> PgWireResult<()> {
    let b = FieldFormat::Binary;
    let o = &FormatOptions::default();
    if matches!(v, V::Null) {
        return enc.encode_field_with_type_and_format(&None::<i32>, wire, b, o);
    }
    let int = || match v {
        V::Integer(n) => Some(*n),
        V::Real(f) => Some(*f as i64),
        V::Text(t) => t.trim().parse().ok(),
        _ => None,
    };
    let array = || -> Vec<serde_json::Value> {
        match v {
            V::Text(t) => serde_json::from_str(t).unwrap_or_default(),
            _ => Vec::new(),
        }
    };
    let bad = || {
        client_error(
            "XX000",
            format!("internal error: a catalog value does not fit type {ty}"),
        )
    };
    match ty {
        "bool" => enc.encode_field_with_type_and_format(&(int().ok_or_else(bad)? != 0), wire, b, o),
        "int2" => enc.encode_field_with_type_and_format(&(int().ok_or_else(bad)? as i16), wire, b, o),
        "int4" => enc.encode_field_with_type_and_format(&(int().ok_or_else(bad)? as i32), wire, b, o),
        "int8" => enc.encode_field_with_type_and_format(&int().ok_or_else(bad)?, wire, b, o),
        "oid" | "regclass" | "regtype" | "regproc" => {
            enc.encode_field_with_type_and_format(&(int().ok_or_else(bad)? as u32), wire, b, o)
        }
        "float4" | "float8" => {
            let f = match v {
                V::Real(f) => *f,
                V::Integer(n) => *n as f64,
                _ => return Err(bad()),
            };
            if ty == "float4" {
                enc.encode_field_with_type_and_format(&(f as f32), wire, b, o)
            } else {
                enc.encode_field_with_type_and_format(&f, wire, b, o)
            }
        }
        "char" => {
            let c = pg_text(ValueRef::from(v), ty)
                .unwrap_or_default()
                .bytes()
                .next()
                .unwrap_or(0) as i8;
            enc.encode_field_with_type_and_format(&c, wire, b, o)
        }
        "int2vector" | "_int2" => {
            let items: Vec<Option<i16>> = array().iter().map(|x| x.as_i64().map(|n| n as i16)).collect();
            enc.encode_field_with_type_and_format(&items, wire, b, o)
        }
        "_int4" => {
            let items: Vec<Option<i32>> = array().iter().map(|x| x.as_i64().map(|n| n as i32)).collect();
            enc.encode_field_with_type_and_format(&items, wire, b, o)
        }
        "_int8" => {
            let items: Vec<Option<i64>> = array().iter().map(serde_json::Value::as_i64).collect();
            enc.encode_field_with_type_and_format(&items, wire, b, o)
        }
        "oidvector" | "_oid" => {
            let items: Vec<Option<u32>> = array().iter().map(|x| x.as_i64().map(|n| n as u32)).collect();
            enc.encode_field_with_type_and_format(&items, wire, b, o)
        }
        "_bool" => {
            let items: Vec<Option<bool>> = array()
                .iter()
                .map(|x| x.as_bool().or_else(|| x.as_i64().map(|n| n != 0)))
                .collect();
            enc.encode_field_with_type_and_format(&items, wire, b, o)
        }
        t if t.starts_with('_') => {
            let items: Vec<Option<String>> = array()
                .iter()
                .map(|x| match x {
                    serde_json::Value::Null => None,
                    serde_json::Value::String(s) => Some(s.clone()),
                    other => Some(other.to_string()),
                })
                .collect();
            enc.encode_field_with_type_and_format(&items, wire, b, o)
        }
        _ => {
            let t = pg_text(ValueRef::from(v), ty);
            enc.encode_field_with_type_and_format(&t, &Type::TEXT, b, o)
        }
    }
}

fn sqlite_value(v: &Value) -> V {
    match v {
        Value::Null => V::Null,
        Value::Int(n) => V::Integer(*n),
        Value::Bool(b) => V::Integer(i64::from(*b)),
        Value::Double(d) => V::Real(*d),
        other => V::Text(other.to_string()),
    }
}

/// A value as PostgreSQL writes a value of type `ty` in text.
fn pg_text(v: ValueRef<'_>, ty: &str) -> Option<String> {
    let raw = match v {
        ValueRef::Null => return None,
        ValueRef::Integer(n) if ty == "bool" => return Some(if n != 0 { "t" } else { "f" }.into()),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
    };
    match ty {
        "int2vector" | "oidvector" => Some(match serde_json::from_str::<Vec<serde_json::Value>>(&raw) {
            Ok(items) => items.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" "),
            Err(_) => raw,
        }),
        t if t.starts_with('_') => Some(match serde_json::from_str::<Vec<serde_json::Value>>(&raw) {
            // SQLite's comparisons are 0 and 1.
            Ok(items) if t == "_bool" => array_literal(
                &items
                    .into_iter()
                    .map(|v| match v.as_i64() {
                        Some(n) => serde_json::Value::Bool(n != 0),
                        None => v,
                    })
                    .collect::<Vec<_>>(),
            ),
            Ok(items) => array_literal(&items),
            Err(_) => raw,
        }),
        "bool" => Some(match raw.as_str() {
            "1" | "true" => "t".into(),
            "0" | "false" => "f".into(),
            _ => raw,
        }),
        _ => Some(raw),
    }
}

/// The JSON array of PostgreSQL's text form of a one-dimensional array (`{a,"b c",NULL}`).
fn array_json(text: &str) -> Option<String> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut items: Vec<serde_json::Value> = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut item = String::new();
        if chars.next_if_eq(&'"').is_some() {
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => item.push(chars.next()?),
                    c => item.push(c),
                }
            }
            items.push(serde_json::Value::String(item));
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',') {
                if c == '{' || c == '"' {
                    return None;
                }
                item.push(c);
            }
            let item = item.trim();
            if item.eq_ignore_ascii_case("null") {
                items.push(serde_json::Value::Null);
            } else if let Ok(n) = item.parse::<i64>() {
                items.push(serde_json::Value::from(n));
            } else {
                items.push(serde_json::Value::String(item.to_string()));
            }
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        match chars.next() {
            None => break,
            Some(',') => {}
            Some(_) => return None,
        }
    }
    serde_json::to_string(&items).ok()
}

/// PostgreSQL's text form of an array: `{a,"b c",NULL}`.
fn array_literal(items: &[serde_json::Value]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|v| match v {
            serde_json::Value::Null => "NULL".to_string(),
            serde_json::Value::Bool(b) => if *b { "t" } else { "f" }.to_string(),
            serde_json::Value::String(s) => {
                let plain = !s.is_empty()
                    && !s.eq_ignore_ascii_case("null")
                    && !s.chars().any(|c| c.is_whitespace() || "{},\"\\".contains(c));
                if plain {
                    s.clone()
                } else {
                    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
                }
            }
            other => other.to_string(),
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_written_as_postgresql_writes_them() {
        let items: Vec<serde_json::Value> = serde_json::from_str(r#"["a","b c",null,"",1]"#).unwrap();
        assert_eq!(array_literal(&items), r#"{a,"b c",NULL,"",1}"#);
        assert_eq!(pg_text(ValueRef::Text(b"[1,2]"), "int2vector").as_deref(), Some("1 2"));
        assert_eq!(pg_text(ValueRef::Integer(1), "bool").as_deref(), Some("t"));
        assert_eq!(declared("\"int2__INT\""), Some("int2"));
        assert_eq!(
            array_json(r#"{int4, "a \"b\"",NULL,7}"#).as_deref(),
            Some(r#"["int4","a \"b\"",null,7]"#)
        );
        assert_eq!(array_json("{}").as_deref(), Some("[]"));
        assert_eq!(array_json("{a").as_deref(), None);
    }
}
