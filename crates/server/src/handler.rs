//! The protocol handlers: what a client's statement does. Both query protocols share one
//! classification of statements ([`Command`]) and one way of running them.
//!
//! A statement is classified once, when it is parsed (simple query) or prepared (extended
//! query): DML and queries are planned then and the plan is kept with the prepared
//! statement, so executing it again costs no parsing or planning (the executor plans again
//! only if the schema changed in between).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::{Sink, SinkExt, StreamExt, stream};
use permafrost_executor::{AdHoc, ColumnInfo, Database, ProcHandle, Rows, StatementKind, StopFlag, Value};
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler, send_describe_response};
use pgwire::api::results::{
    DataRowEncoder, DescribePortalResponse, DescribeResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag,
};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, PgWireServerHandlers, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::ParameterDescription;
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Describe, Execute, Parse, ParseComplete, Sync as PgSync, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::CommandComplete;
use sqlparser::ast::{self, Statement};

use crate::copy::{self, CopyCommand};
use crate::error::{client_error, db_error, sql_error};
use crate::metrics::{Outcome, ServerMetrics, StatementClass};
use crate::pgcatalog;
use crate::pipeline::{PendingResult, Pipeline, write_response};
use crate::schema_log::SchemaLog;
use crate::session::{CancelToken, Cancels, Startup};
use crate::types::{decode_param, encode, pg_type};

/// The PostgreSQL version clients are told they talk to (the protocol and catalog
/// behaviour they may rely on).
pub const PG_VERSION: &str = "16.6";

/// A DML statement or query, planned.
#[derive(Debug)]
pub struct DmlCommand {
    stmt: AdHoc,
    params: Vec<Type>,
    columns: Vec<(String, Type)>,
    kind: StatementKind,
    read_only: bool,
}

/// One argument of a CALL: a constant or a parameter of the statement.
#[derive(Debug, Clone)]
enum CallArg {
    Value(Value),
    Param(usize),
}

/// What a CALL runs.
#[derive(Debug, Clone)]
enum CallTarget {
    Procedure(ProcHandle),
    Builtin(Builtin),
}

/// Procedures every server has (schema `permafrost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builtin {
    /// `permafrost.evict(bytes)`: an eviction round of about `bytes` at every partition.
    Evict,
    /// `permafrost.stats()`: the figures of `/metrics` as rows.
    Stats,
    /// `permafrost.procedures()`: the procedures and their signatures.
    Procedures,
}

impl Builtin {
    fn lookup(name: &str) -> Option<Builtin> {
        match name {
            "permafrost.evict" => Some(Builtin::Evict),
            "permafrost.stats" => Some(Builtin::Stats),
            "permafrost.procedures" => Some(Builtin::Procedures),
            _ => None,
        }
    }

    fn signature(self) -> Vec<Type> {
        match self {
            Builtin::Evict => vec![Type::INT8],
            Builtin::Stats | Builtin::Procedures => vec![],
        }
    }

    fn columns(self) -> Vec<(String, Type)> {
        match self {
            Builtin::Evict => vec![("evicted_tuples".into(), Type::INT8)],
            Builtin::Stats => stats_columns(),
            Builtin::Procedures => vec![
                ("name".into(), Type::TEXT),
                ("arguments".into(), Type::TEXT),
                ("partitioning".into(), Type::TEXT),
                ("definition".into(), Type::TEXT),
            ],
        }
    }
}

fn stats_columns() -> Vec<(String, Type)> {
    vec![
        ("name".into(), Type::TEXT),
        ("labels".into(), Type::TEXT),
        ("value".into(), Type::FLOAT8),
    ]
}

/// A CALL, resolved.
#[derive(Debug)]
pub struct CallCommand {
    target: CallTarget,
    args: Vec<CallArg>,
    /// Types of the statement's parameters (from the procedure's signature).
    params: Vec<Type>,
    columns: Vec<(String, Type)>,
}

impl CallCommand {
    /// The procedure's arguments: constants, and the statement's bound parameters.
    fn bind_args(&self, params: &[Value]) -> PgWireResult<Vec<Value>> {
        self.args
            .iter()
            .map(|a| match a {
                CallArg::Value(v) => Ok(v.clone()),
                CallArg::Param(i) => params
                    .get(*i)
                    .cloned()
                    .ok_or_else(|| client_error("08P01", format!("parameter ${} was not bound", i + 1))),
            })
            .collect()
    }
}

/// How a statement ended, for the metrics.
fn outcome_of<T>(r: &PgWireResult<T>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(PgWireError::UserError(e)) => Outcome::error(e.code.clone()),
        Err(_) => Outcome::error("XX000"),
    }
}

/// What one statement is, decided when it is parsed.
#[derive(Debug, Clone)]
pub enum Command {
    /// DML or a query, planned against the catalog.
    Dml(Arc<DmlCommand>),
    /// CREATE/DROP TABLE/INDEX, with its command tag.
    Ddl { sql: String, tag: String },
    /// `CREATE [OR REPLACE] PROCEDURE ... AS $$ ... $$`.
    CreateProcedure(String),
    /// `DROP PROCEDURE [IF EXISTS] name`.
    DropProcedure(String),
    /// `CALL name(args)`.
    Call(Arc<CallCommand>),
    /// `COPY table [(columns)] FROM STDIN [WITH (...)]`.
    Copy(Arc<CopyCommand>),
    /// `COPY {table [(columns)] | (query)} TO STDOUT [WITH (...)]`.
    CopyOut(Arc<copy::CopyOut>),
    /// A lookup in the system catalogs, answered from the schema.
    Catalog(pgcatalog::Lookup),
    /// The server's figures (`SHOW permafrost_stats`, `SELECT * FROM permafrost_stats`).
    Stats,
    /// SET: accepted (session settings do not change the engine's behaviour).
    Set,
    /// `SET statement_timeout` (milliseconds; 0: none), kept per connection.
    SetStatementTimeout(u64),
    /// SHOW a setting.
    Show(String),
    /// `SELECT version()`.
    Version,
    /// COMMIT/ROLLBACK outside a transaction: nothing to do, as in PostgreSQL.
    EndTransaction(&'static str),
    /// `CHECKPOINT`: take a snapshot now and answer once it is durable.
    Checkpoint,
}

impl Command {
    fn class(&self) -> StatementClass {
        match self {
            Command::Dml(d) if d.read_only => StatementClass::Query,
            Command::CopyOut(_) => StatementClass::Query,
            Command::Dml(_) | Command::Copy(_) => StatementClass::Write,
            Command::Ddl { .. } | Command::CreateProcedure(_) | Command::DropProcedure(_) => StatementClass::Ddl,
            Command::Call(_) => StatementClass::Call,
            _ => StatementClass::Other,
        }
    }

    /// Whether the statement runs as a transaction at the partitions, submitted as soon as
    /// it is executed and answered when the connection's pipeline gets to it.
    fn pipelines(&self) -> bool {
        match self {
            Command::Dml(_) => true,
            Command::Call(c) => matches!(c.target, CallTarget::Procedure(_)),
            _ => false,
        }
    }

    fn param_types(&self) -> Vec<Type> {
        match self {
            Command::Dml(d) => d.params.clone(),
            Command::Call(c) => c.params.clone(),
            _ => Vec::new(),
        }
    }

    fn columns(&self) -> Vec<(String, Type)> {
        match self {
            Command::Dml(d) => d.columns.clone(),
            Command::Call(c) => c.columns.clone(),
            Command::Version => vec![("version".into(), Type::TEXT)],
            Command::Show(name) => vec![(name.clone(), Type::TEXT)],
            Command::Stats => stats_columns(),
            Command::Catalog(l) => l.columns(),
            _ => Vec::new(),
        }
    }
}

fn first_words(sql: &str, n: usize) -> Vec<String> {
    sql.split_whitespace().take(n).map(|w| w.to_ascii_uppercase()).collect()
}

fn ddl_tag(sql: &str) -> String {
    let w = first_words(sql, 4);
    match w.first().map(String::as_str) {
        Some("CREATE") if w.iter().any(|x| x == "INDEX") => "CREATE INDEX".into(),
        Some("CREATE") => "CREATE TABLE".into(),
        Some("DROP") => format!("DROP {}", w.get(1).map_or("TABLE", |s| s.as_str())),
        _ => "OK".into(),
    }
}

/// The settings `SHOW` answers.
fn show_value(name: &str) -> Option<String> {
    Some(
        match name.to_ascii_lowercase().as_str() {
            "server_version" => PG_VERSION,
            "server_version_num" => "160006",
            "server_encoding" | "client_encoding" => "UTF8",
            "datestyle" => "ISO, MDY",
            "timezone" => "UTC",
            "standard_conforming_strings" | "integer_datetimes" => "on",
            "transaction_isolation" | "default_transaction_isolation" => "serializable",
            "transaction_read_only" | "default_transaction_read_only" => "off",
            "max_identifier_length" => "63",
            "search_path" => "public",
            "lc_collate" | "lc_ctype" => "C",
            "max_connections" => "10000",
            _ => return None,
        }
        .to_string(),
    )
}

/// Classifies the text of one statement.
pub fn classify_text(db: &Database, sql: &str) -> PgWireResult<Command> {
    // A long statement may nest deeply: its whole front end runs on a stack sized for it.
    permafrost_sql::limits::with_stack_for(sql, || classify_on_stack(db, sql))
}

fn classify_on_stack(db: &Database, sql: &str) -> PgWireResult<Command> {
    if permafrost_sql::script::is_create_procedure(sql) {
        // Checked now so that a bad definition fails at Parse, not later.
        permafrost_sql::script::parse_create_procedure(sql).map_err(sql_error)?;
        return Ok(Command::CreateProcedure(sql.to_string()));
    }
    if permafrost_sql::script::is_drop_procedure(sql) {
        permafrost_sql::script::parse_drop_procedure(sql).map_err(sql_error)?;
        return Ok(Command::DropProcedure(sql.to_string()));
    }
    if let Some(lookup) = pgcatalog::recognize(sql) {
        return Ok(Command::Catalog(lookup));
    }
    let words = first_words(sql, 3);
    match words.first().map(String::as_str).unwrap_or("") {
        "SET" | "RESET" => {
            return match crate::session::statement_timeout_setting(sql) {
                Some(ms) => ms.map(Command::SetStatementTimeout),
                None => Ok(Command::Set),
            };
        }
        "DISCARD" | "DEALLOCATE" => return Ok(Command::Set),
        "SHOW" => {
            let name = sql.split_whitespace().nth(1).unwrap_or("").trim_end_matches(';');
            if name.eq_ignore_ascii_case("permafrost_stats") {
                return Ok(Command::Stats);
            }
            return Ok(Command::Show(name.to_string()));
        }
        "BEGIN" | "START" => {
            return Err(client_error(
                "0A000",
                "interactive transactions (BEGIN ... COMMIT) are not supported: every statement commits \
                 on its own; put statements that must commit together in a procedure (CREATE PROCEDURE)",
            ));
        }
        "COMMIT" | "END" => return Ok(Command::EndTransaction("COMMIT")),
        "CHECKPOINT" | "CHECKPOINT;" if words.len() == 1 => return Ok(Command::Checkpoint),
        "ROLLBACK" | "ABORT" => return Ok(Command::EndTransaction("ROLLBACK")),
        _ => {}
    }
    let compact: String = sql.split_whitespace().collect::<String>().to_ascii_lowercase();
    match compact.trim_end_matches(';') {
        "selectversion()" | "selectpg_catalog.version()" => return Ok(Command::Version),
        "select*frompermafrost_stats" => return Ok(Command::Stats),
        _ => {}
    }
    if names_stats_view(sql) {
        // Not a table: the name is the server's figures, read whole.
        return Err(client_error(
            "0A000",
            "permafrost_stats is the server's figures and can only be read whole: SELECT * FROM \
             permafrost_stats or SHOW permafrost_stats (filter the rows in the client)",
        ));
    }
    let stmt = permafrost_sql::parse::parse_statement(sql).map_err(sql_error)?;
    classify(db, &stmt, sql)
}

/// Whether `sql` names `permafrost_stats` outside string literals (a statement other than
/// the two that read it).
fn names_stats_view(sql: &str) -> bool {
    let mut outside = String::with_capacity(sql.len());
    let mut in_literal = false;
    for c in sql.chars() {
        if c == '\'' {
            // '' inside a literal toggles twice: still inside.
            in_literal = !in_literal;
            outside.push(' ');
        } else if !in_literal {
            outside.push(c);
        }
    }
    outside
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| w.eq_ignore_ascii_case("permafrost_stats"))
}

/// Classifies one parsed statement (`sql` is its text).
fn classify(db: &Database, stmt: &Statement, sql: &str) -> PgWireResult<Command> {
    if permafrost_sql::ddl::is_ddl(stmt) {
        return Ok(Command::Ddl {
            sql: sql.to_string(),
            tag: ddl_tag(sql),
        });
    }
    match stmt {
        Statement::Call(f) => return call(db, f).map(|c| Command::Call(Arc::new(c))),
        Statement::Copy { .. } => {
            return copy::plan(db, stmt).map(|c| match c {
                copy::CopyPlan::In(c) => Command::Copy(Arc::new(c)),
                copy::CopyPlan::Out(c) => Command::CopyOut(Arc::new(c)),
            });
        }
        _ => {}
    }
    let prepared = permafrost_sql::prepare_statement(&db.catalog(), stmt, sql).map_err(sql_error)?;
    let d = DmlCommand {
        params: prepared.param_types().iter().map(|t| pg_type(t.as_ref())).collect(),
        columns: columns_of(prepared.columns()),
        kind: prepared.kind(),
        read_only: prepared.is_read_only(),
        stmt: db.ad_hoc(prepared),
    };
    Ok(Command::Dml(Arc::new(d)))
}

fn columns_of(cols: &[ColumnInfo]) -> Vec<(String, Type)> {
    cols.iter().map(|c| (c.name.clone(), pg_type(c.ty.as_ref()))).collect()
}

fn call(db: &Database, f: &ast::Function) -> PgWireResult<CallCommand> {
    let name = f
        .name
        .0
        .iter()
        .map(|p| p.to_string().trim_matches('"').to_string())
        .map(|p| {
            if p.chars().any(|c| c.is_uppercase()) {
                p.to_lowercase()
            } else {
                p
            }
        })
        .collect::<Vec<_>>()
        .join(".");
    let exprs: Vec<&ast::Expr> = match &f.args {
        ast::FunctionArguments::None => Vec::new(),
        ast::FunctionArguments::List(l) => l
            .args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                other => Err(client_error(
                    "0A000",
                    format!("CALL arguments must be values or parameters, not {other}"),
                )),
            })
            .collect::<PgWireResult<_>>()?,
        ast::FunctionArguments::Subquery(_) => {
            return Err(client_error("0A000", "CALL arguments must be values or parameters"));
        }
    };
    let (target, sig, columns) = match Builtin::lookup(&name) {
        Some(b) => (CallTarget::Builtin(b), b.signature(), b.columns()),
        None => {
            let h = db.procedure(&name).map_err(db_error)?;
            let sig = match h.signature() {
                Some(s) => s.iter().map(|(_, t)| pg_type(Some(t))).collect(),
                None => vec![Type::UNKNOWN; exprs.len()],
            };
            let columns = h.columns().map(|c| columns_of(c)).unwrap_or_default();
            (CallTarget::Procedure(h), sig, columns)
        }
    };
    if exprs.len() != sig.len() && !sig.iter().all(|t| *t == Type::UNKNOWN) {
        return Err(client_error(
            "42883",
            format!(
                "procedure {name} takes {} argument(s), {} given",
                sig.len(),
                exprs.len()
            ),
        ));
    }
    let catalog = db.catalog();
    let mut args = Vec::with_capacity(exprs.len());
    let mut params: Vec<Type> = Vec::new();
    for (i, e) in exprs.iter().enumerate() {
        match e {
            ast::Expr::Value(v) if matches!(&v.value, ast::Value::Placeholder(_)) => {
                let ast::Value::Placeholder(p) = &v.value else {
                    unreachable!()
                };
                let n: usize = p
                    .trim_start_matches('$')
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| client_error("42601", format!("bad parameter {p}")))?;
                if params.len() < n {
                    params.resize(n, Type::UNKNOWN);
                }
                params[n - 1] = sig.get(i).cloned().unwrap_or(Type::UNKNOWN);
                args.push(CallArg::Param(n - 1));
            }
            e => {
                let (x, _) = permafrost_sql::plan::bind_constant(&catalog, e).map_err(sql_error)?;
                let v = permafrost_sql::plan::eval_constant(&x).map_err(sql_error)?;
                args.push(CallArg::Value(v));
            }
        }
    }
    Ok(CallCommand {
        target,
        args,
        params,
        columns,
    })
}

fn fields(columns: &[(String, Type)], format: &Format) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, (name, ty))| FieldInfo::new(name.clone(), None, None, ty.clone(), format.format_for(i)))
        .collect()
}

/// A response of rows given as text (SHOW, catalog lookups, built-in procedures), in the
/// formats the client asked for: a binary column gets the binary form of its type.
pub(crate) fn text_rows(
    columns: &[(String, Type)],
    rows: Vec<Vec<Option<String>>>,
    format: &Format,
) -> PgWireResult<Response> {
    let schema = Arc::new(fields(columns, format));
    let mut enc = DataRowEncoder::new(schema.clone());
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        for (i, (v, (_, ty))) in row.into_iter().zip(columns).enumerate() {
            match format.format_for(i) {
                FieldFormat::Binary => encode_text(&mut enc, v, ty)?,
                FieldFormat::Text => enc.encode_field(&v)?,
            }
        }
        out.push(Ok(enc.take_row()));
    }
    Ok(Response::Query(QueryResponse::new(schema, stream::iter(out))))
}

/// Encodes a value given as text in the binary form of `ty`.
fn encode_text(enc: &mut DataRowEncoder, v: Option<String>, ty: &Type) -> PgWireResult<()> {
    let bad = |s: &str| client_error("XX000", format!("internal error: \"{s}\" is not a {}", ty.name()));
    let Some(s) = v else {
        return enc.encode_field(&None::<String>);
    };
    match *ty {
        Type::INT8 => enc.encode_field(&s.parse::<i64>().map_err(|_| bad(&s))?),
        Type::INT4 => enc.encode_field(&s.parse::<i32>().map_err(|_| bad(&s))?),
        Type::INT2 => enc.encode_field(&s.parse::<i16>().map_err(|_| bad(&s))?),
        Type::FLOAT8 => enc.encode_field(&s.parse::<f64>().map_err(|_| bad(&s))?),
        Type::BOOL => enc.encode_field(&matches!(s.as_str(), "t" | "true")),
        _ => enc.encode_field(&s),
    }
}

/// Turns a statement's result into the response: rows for queries and RETURNING, a
/// command tag with the row count otherwise.
///
/// A result whose rest follows its rows (a scan over evicted data, [`Rows::take_rest`]) is
/// streamed: the rest is read batch by batch on a blocking thread and encoded a batch or two
/// ahead of the socket, so a result larger than memory is never held whole. `stop` stops
/// it (a cancel request or the statement timeout, watched while it streams: the client gets
/// the rows sent so far, then 57014); a client that goes away stops it too.
fn respond(
    mut rows: Rows,
    described: &[(String, Type)],
    kind: Option<StatementKind>,
    format: &Format,
    stop: Option<(StopFlag, Option<(CancelToken, Instant)>)>,
) -> PgWireResult<Response> {
    if described.is_empty() && rows.columns().is_empty() {
        let n = rows.affected as usize;
        let tag = match kind {
            Some(StatementKind::Insert) => Tag::new("INSERT").with_oid(0).with_rows(n),
            Some(StatementKind::Update) => Tag::new("UPDATE").with_rows(n),
            Some(StatementKind::Delete) => Tag::new("DELETE").with_rows(n),
            Some(StatementKind::Select) => Tag::new("SELECT").with_rows(n),
            None => Tag::new("CALL"),
        };
        return Ok(Response::Execution(tag));
    }
    // The plan may have changed since it was described (DDL in between): the result's own
    // columns are what the rows hold.
    let columns = if described.len() == rows.columns().len() {
        described.to_vec()
    } else {
        columns_of(rows.columns())
    };
    let schema = Arc::new(fields(&columns, format));
    let types: Vec<(Type, bool)> = columns
        .iter()
        .zip(schema.iter())
        .map(|(c, f)| (c.1.clone(), f.format() == FieldFormat::Text))
        .collect();
    let mut enc = DataRowEncoder::new(schema.clone());
    let out = encode_rows(&rows, &mut enc, &types)?.into_iter().map(Ok);
    let rest = rows.take_rest();
    let mut resp = match rest {
        None => QueryResponse::new(schema, stream::iter(out).boxed()),
        Some(rest) => {
            let (flag, cancel) = stop.unwrap_or_default();
            let more = stream_rest(rest, move |rows| encode_rows(rows, &mut enc, &types), flag, cancel);
            QueryResponse::new(schema, stream::iter(out).chain(more).boxed())
        }
    };
    match kind {
        Some(StatementKind::Insert) => resp.set_command_tag("INSERT 0"),
        Some(StatementKind::Update) => resp.set_command_tag("UPDATE"),
        Some(StatementKind::Delete) => resp.set_command_tag("DELETE"),
        Some(StatementKind::Select) => {}
        None => resp.set_command_tag("CALL"),
    }
    Ok(Response::Query(resp))
}

/// The data rows of `rows`; `types`: each column's type and whether it is sent as text.
fn encode_rows(
    rows: &Rows,
    enc: &mut DataRowEncoder,
    types: &[(Type, bool)],
) -> PgWireResult<Vec<pgwire::messages::data::DataRow>> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows.iter() {
        for (v, (ty, text)) in row.values().zip(types) {
            encode(enc, v, ty, *text)?;
        }
        out.push(enc.take_row());
    }
    Ok(out)
}

/// Batches of encoded rows a streamed result keeps ready ahead of the socket.
const STREAM_AHEAD: usize = 2;

/// The messages of a result's rest ([`respond`], [`respond_copy_out`]): read on a blocking
/// thread and turned into messages by `encode`, batch by batch.
fn stream_rest<T: Send + 'static>(
    mut rest: Box<dyn permafrost_executor::MoreRows>,
    mut encode: impl FnMut(&Rows) -> PgWireResult<Vec<T>> + Send + 'static,
    stop: StopFlag,
    cancel: Option<(CancelToken, Instant)>,
) -> impl futures::Stream<Item = PgWireResult<T>> + Send + 'static {
    let (tx, rx) = tokio::sync::mpsc::channel::<PgWireResult<Vec<T>>>(STREAM_AHEAD);
    // Watches for a cancel request or the timeout until the producer ends (it drops
    // `_running`).
    let (_running, ended) = tokio::sync::oneshot::channel::<()>();
    if let Some((c, started)) = cancel {
        let flag = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = c.stopped(started) => flag.set(),
                _ = ended => {}
            }
        });
    }
    tokio::task::spawn_blocking(move || {
        let _running = _running;
        loop {
            let batch = match rest.next_rows() {
                Ok(Some(rows)) => encode(&rows),
                Ok(None) => break,
                Err(e) => Err(crate::error::sql_error(e)),
            };
            let failed = batch.is_err();
            if tx.blocking_send(batch).is_err() || failed {
                break;
            }
        }
        // Dropping `rest` here ends the scan (its blocks may be reused).
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) }).flat_map(|batch| {
        let items: Vec<PgWireResult<T>> = match batch {
            Ok(items) => items.into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e)],
        };
        stream::iter(items)
    })
}

/// The answer of `COPY ... TO STDOUT`: a CopyOutResponse, the rows as CopyData lines
/// (streamed as [`respond`] streams rows), CopyDone.
fn respond_copy_out(
    mut rows: Rows,
    c: &copy::CopyOut,
    stop: (StopFlag, Option<(CancelToken, Instant)>),
) -> PgWireResult<Response> {
    let schema = Arc::new(fields(&c.columns, &Format::UnifiedText));
    let types: Vec<Type> = c.columns.iter().map(|c| c.1.clone()).collect();
    let mut first = Vec::new();
    if c.format.header {
        let names: Vec<String> = c.columns.iter().map(|c| c.0.clone()).collect();
        let mut header = Rows::empty(Arc::from(
            names
                .iter()
                .map(|n| permafrost_executor::ColumnInfo {
                    name: n.clone(),
                    ty: None,
                })
                .collect::<Vec<_>>(),
        ));
        header.push_row(names.iter().map(|n| permafrost_executor::ValueRef::Text(n)));
        let text = vec![Type::TEXT; names.len()];
        first.extend(copy::copy_lines(
            &header,
            &mut DataRowEncoder::new(schema.clone()),
            &text,
            &c.format,
        )?);
    }
    let mut enc = DataRowEncoder::new(schema.clone());
    first.extend(copy::copy_lines(&rows, &mut enc, &types, &c.format)?);
    let ncols = c.columns.len();
    let first = stream::iter(first.into_iter().map(Ok));
    let data = match rows.take_rest() {
        None => first.boxed(),
        Some(rest) => {
            let format = c.format.clone();
            let more = stream_rest(
                rest,
                move |rows| copy::copy_lines(rows, &mut enc, &types, &format),
                stop.0,
                stop.1,
            );
            first.chain(more).boxed()
        }
    };
    Ok(Response::CopyOut(pgwire::api::results::CopyResponse::new(
        0, ncols, data,
    )))
}

/// Runs statements for the clients of one server.
pub struct Backend {
    db: Arc<Database>,
    parser: Arc<Parser>,
    cancels: Arc<Cancels>,
    metrics: Arc<ServerMetrics>,
    schema_log: Option<Arc<SchemaLog>>,
}

impl Backend {
    pub fn new(
        db: Arc<Database>,
        cancels: Arc<Cancels>,
        metrics: Arc<ServerMetrics>,
        schema_log: Option<Arc<SchemaLog>>,
    ) -> Backend {
        Backend {
            parser: Arc::new(Parser { db: db.clone() }),
            db,
            cancels,
            metrics,
            schema_log,
        }
    }

    /// Runs a schema change off the I/O threads (it waits for every partition) and
    /// records it in the schema log when it took effect.
    async fn schema_change<T: Send + 'static>(
        &self,
        sql: &str,
        f: impl FnOnce(&Database, &str) -> permafrost_executor::Result<T> + Send + 'static,
    ) -> PgWireResult<T> {
        let db = self.db.clone();
        let log = self.schema_log.clone();
        let text = sql.to_string();
        tokio::task::spawn_blocking(move || {
            let r = f(&db, &text).map_err(db_error)?;
            if let Some(log) = log {
                log.append(&text).map_err(|e| {
                    client_error(
                        "58030",
                        format!("the schema change took effect but could not be logged: {e}"),
                    )
                })?;
            }
            Ok(r)
        })
        .await
        .map_err(|e| client_error("XX000", format!("internal error: {e}")))?
    }

    async fn run(
        &self,
        cmd: &Command,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<Response> {
        let started = Instant::now();
        let r = self.run_inner(cmd, params, format, cancel).await;
        self.metrics.record(cmd.class(), started.elapsed(), outcome_of(&r));
        r
    }

    /// Submits a DML statement or a procedure call ([`Command::pipelines`]) to its
    /// partition(s) now and returns its result to come, for the connection's pipeline.
    fn submit(
        &self,
        cmd: &Command,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<CancelToken>,
    ) -> PgWireResult<PendingResult> {
        let started = Instant::now();
        let metrics = self.metrics.clone();
        let class = cmd.class();
        let format = format.clone();
        let fut: PendingResult = match cmd {
            Command::Dml(d) => {
                let stop = StopFlag::new();
                let fut = self.db.execute_ad_hoc_stoppable(&d.stmt, params, stop.clone());
                let d = d.clone();
                Box::pin(async move {
                    // As in `run_inner`.
                    let rows = match &cancel {
                        Some(c) => c.run_stoppable(&stop, fut).await?,
                        None => fut.await,
                    };
                    let watch = cancel.map(|c| (c, started));
                    let r = rows
                        .map_err(db_error)
                        .and_then(|rows| respond(rows, &d.columns, Some(d.kind), &format, Some((stop, watch))));
                    metrics.record(class, started.elapsed(), outcome_of(&r));
                    r
                })
            }
            Command::Call(c) => {
                let CallTarget::Procedure(h) = &c.target else {
                    return Err(client_error("XX000", "internal error: a built-in CALL submitted"));
                };
                let args = c.bind_args(&params)?;
                let fut = self.db.call_handle_async(h, args);
                let c = c.clone();
                Box::pin(async move {
                    let r = fut
                        .await
                        .map_err(db_error)
                        .and_then(|rows| respond(rows, &c.columns, None, &format, None));
                    metrics.record(class, started.elapsed(), outcome_of(&r));
                    r
                })
            }
            _ => {
                return Err(client_error(
                    "XX000",
                    "internal error: this statement cannot be pipelined",
                ));
            }
        };
        Ok(fut)
    }

    async fn run_inner(
        &self,
        cmd: &Command,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<Response> {
        match cmd {
            Command::Set => Ok(Response::Execution(Tag::new("SET"))),
            Command::SetStatementTimeout(ms) => {
                if let Some(c) = cancel {
                    c.set_statement_timeout(*ms);
                }
                Ok(Response::Execution(Tag::new("SET")))
            }
            Command::Show(name) if name.eq_ignore_ascii_case("statement_timeout") => {
                let ms = cancel
                    .and_then(|c| c.statement_timeout())
                    .map_or(0, |t| t.as_millis() as u64);
                text_rows(
                    &cmd.columns(),
                    vec![vec![Some(crate::session::show_statement_timeout(ms))]],
                    format,
                )
            }
            Command::EndTransaction(tag) => Ok(Response::Execution(Tag::new(tag))),
            Command::Checkpoint => {
                let db = self.db.clone();
                tokio::task::spawn_blocking(move || db.snapshot())
                    .await
                    .map_err(|e| client_error("XX000", format!("internal error: {e}")))?
                    .map_err(db_error)?;
                Ok(Response::Execution(Tag::new("CHECKPOINT")))
            }
            Command::Version => text_rows(
                &cmd.columns(),
                vec![vec![Some(format!(
                    "PostgreSQL {PG_VERSION} (Permafrost {}) on {}",
                    env!("CARGO_PKG_VERSION"),
                    std::env::consts::ARCH
                ))]],
                format,
            ),
            Command::Show(name) => match show_value(name) {
                Some(v) => text_rows(&cmd.columns(), vec![vec![Some(v)]], format),
                None => Err(client_error(
                    "42704",
                    format!("unrecognized configuration parameter \"{name}\""),
                )),
            },
            Command::Stats => self.stats_response(format).await,
            Command::Catalog(lookup) => text_rows(&lookup.columns(), lookup.answer(&self.db), format),
            Command::Ddl { sql, tag } => {
                self.schema_change(sql, |db, s| db.execute_ddl(s)).await?;
                Ok(Response::Execution(Tag::new(tag)))
            }
            Command::CreateProcedure(sql) => {
                self.schema_change(sql, |db, s| db.create_procedure(s).map(|_| ()))
                    .await?;
                Ok(Response::Execution(Tag::new("CREATE PROCEDURE")))
            }
            Command::DropProcedure(sql) => {
                self.schema_change(sql, |db, s| db.drop_procedure(s).map(|_| ()))
                    .await?;
                Ok(Response::Execution(Tag::new("DROP PROCEDURE")))
            }
            Command::Dml(d) => {
                let (rows, stop) = self.run_stoppable(&d.stmt, params, cancel).await?;
                respond(rows, &d.columns, Some(d.kind), format, Some(stop))
            }
            Command::Call(c) => {
                let args = c.bind_args(&params)?;
                match &c.target {
                    CallTarget::Procedure(h) => {
                        let rows = self.db.call_handle_async(h, args).await.map_err(db_error)?;
                        respond(rows, &c.columns, None, format, None)
                    }
                    CallTarget::Builtin(b) => self.builtin(*b, args, format).await,
                }
            }
            Command::CopyOut(c) => {
                let (rows, stop) = self.run_stoppable(&c.stmt, params, cancel).await?;
                respond_copy_out(rows, c, stop)
            }
            Command::Copy(_) => Err(client_error(
                "0A000",
                "COPY FROM STDIN runs through the COPY sub-protocol (psql \\copy, psycopg copy(), CopyManager)",
            )),
        }
    }

    /// Runs a statement that a cancel request or the statement timeout stops (rolled back:
    /// 57014; one that committed first answers as it would have). Returns its rows and
    /// what stops the rest of them, if they stream.
    async fn run_stoppable(
        &self,
        stmt: &AdHoc,
        params: Vec<Value>,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<(Rows, (StopFlag, Option<(CancelToken, Instant)>))> {
        let started = Instant::now();
        let stop = StopFlag::new();
        let fut = self.db.execute_ad_hoc_stoppable(stmt, params, stop.clone());
        let rows = match cancel {
            Some(c) => c.run_stoppable(&stop, fut).await?,
            None => fut.await,
        }
        .map_err(db_error)?;
        Ok((rows, (stop, cancel.map(|c| (c.clone(), started)))))
    }

    async fn stats_response(&self, format: &Format) -> PgWireResult<Response> {
        let db = self.db.clone();
        let m = self.metrics.clone();
        let rows = tokio::task::spawn_blocking(move || crate::metrics::rows(&db, &m))
            .await
            .map_err(|e| client_error("XX000", format!("internal error: {e}")))?;
        text_rows(
            &stats_columns(),
            rows.into_iter()
                .map(|r| vec![Some(r.name), Some(r.labels), Some(r.value.to_string())])
                .collect(),
            format,
        )
    }

    async fn builtin(&self, b: Builtin, args: Vec<Value>, format: &Format) -> PgWireResult<Response> {
        match b {
            Builtin::Stats => self.stats_response(format).await,
            Builtin::Evict => {
                let bytes = match args.first() {
                    Some(Value::Int(n)) if *n > 0 => *n as u64,
                    _ => {
                        return Err(client_error(
                            "22023",
                            "permafrost.evict(bytes) needs a positive byte count",
                        ));
                    }
                };
                let db = self.db.clone();
                let n = tokio::task::spawn_blocking(move || db.evict_now(bytes))
                    .await
                    .map_err(|e| client_error("XX000", format!("internal error: {e}")))?
                    .map_err(db_error)?;
                text_rows(&b.columns(), vec![vec![Some(n.to_string())]], format)
            }
            Builtin::Procedures => {
                let mut rows = Vec::new();
                for name in self.db.procedure_names() {
                    let Ok(h) = self.db.procedure(&name) else { continue };
                    let args = h.signature().map(|s| {
                        s.iter()
                            .map(|(n, t)| format!("{n} {}", t.sql_name()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    });
                    let part = match h.partitioning() {
                        permafrost_executor::Partitioning::Single { param } => {
                            format!("single (argument {})", param + 1)
                        }
                        permafrost_executor::Partitioning::Multi => "multi".into(),
                    };
                    rows.push(vec![Some(name), args, Some(part), h.source().map(str::to_string)]);
                }
                text_rows(&b.columns(), rows, format)
            }
        }
    }

    fn cancel_token<C: ClientInfo>(&self, client: &C) -> Option<CancelToken> {
        self.cancels.token(client)
    }
}

#[async_trait]
impl SimpleQueryHandler for Backend {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let texts = match permafrost_sql::script::split(query) {
            Ok(s) => s,
            Err(e) => return Ok(vec![Response::Error(Box::new(sql_error(e).into()))]),
        };
        let cancel = self.cancel_token(client);
        let mut out = Vec::with_capacity(texts.len());
        for (i, sql) in texts.iter().enumerate() {
            let r = match classify_text(&self.db, sql) {
                Ok(Command::Copy(c)) if i + 1 == texts.len() => {
                    // The rows follow as CopyData messages.
                    copy::begin(client, c.clone());
                    Ok(Response::CopyIn(c.response()))
                }
                Ok(Command::Copy(_)) => Err(client_error(
                    "0A000",
                    "COPY FROM STDIN must be the last statement of a query string",
                )),
                Ok(cmd) => self.run(&cmd, Vec::new(), &Format::UnifiedText, cancel.as_ref()).await,
                Err(e) => Err(e),
            };
            match r {
                Ok(resp) => out.push(resp),
                Err(e) => {
                    // As PostgreSQL: the statements before the error took effect, the
                    // rest of the string is skipped.
                    out.push(Response::Error(Box::new(e.into())));
                    break;
                }
            }
        }
        if out.is_empty() {
            out.push(Response::EmptyQuery);
        }
        Ok(out)
    }
}

/// A portal's parameters as values of the types the statement expects.
fn decode_params(portal: &Portal<Command>, cmd: &Command) -> PgWireResult<Vec<Value>> {
    let inferred = cmd.param_types();
    (0..portal.parameter_len())
        .map(|i| decode_param(portal, i, inferred.get(i)))
        .collect()
}

/// Parses statements of the extended protocol into [`Command`]s.
pub struct Parser {
    db: Arc<Database>,
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Command;

    async fn parse_sql<C>(&self, _client: &C, sql: &str, _types: &[Option<Type>]) -> PgWireResult<Option<Command>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let texts = permafrost_sql::script::split(sql).map_err(sql_error)?;
        match texts.as_slice() {
            [] => Ok(None),
            [one] => classify_text(&self.db, one).map(Some),
            _ => Err(client_error(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            )),
        }
    }

    fn get_parameter_types(&self, stmt: &Command) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_types())
    }

    fn get_result_schema(&self, stmt: &Command, format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        Ok(fields(&stmt.columns(), format.unwrap_or(&Format::UnifiedText)))
    }
}

#[async_trait]
impl ExtendedQueryHandler for Backend {
    type Statement = Command;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    /// As the library's, but a statement without result columns (with parameters or
    /// not) is described as NoData, as PostgreSQL does: pgjdbc takes an empty
    /// RowDescription for "returns rows".
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if message.target_type == TARGET_TYPE_BYTE_STATEMENT {
            let name = message.name.as_deref().unwrap_or(pgwire::api::DEFAULT_NAME);
            if let Some(pgwire::api::store::Entry::Value(stmt)) = client.portal_store().get_statement(name) {
                let described = self.do_describe_statement(client, &stmt).await?;
                if described.fields.is_empty() {
                    let oids = described.parameters.iter().map(|t| t.oid()).collect();
                    client
                        .feed(PgWireBackendMessage::ParameterDescription(ParameterDescription::new(
                            oids,
                        )))
                        .await?;
                    return send_describe_response(client, &DescribePortalResponse::no_data()).await;
                }
                return send_describe_response(client, &described).await;
            }
        }
        self._on_describe(client, message).await
    }

    /// As the library's, but a named statement that exists already is an error (42P05),
    /// as in PostgreSQL, instead of being replaced: the unnamed one is replaced.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.clone().unwrap_or_default();
        if !name.is_empty() && client.portal_store().get_statement(&name).is_some() {
            return Err(client_error(
                "42P05",
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let parser = self.query_parser();
        match pgwire::api::stmt::StoredStatement::parse(client, &message, parser).await? {
            Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
            None => client.portal_store().put_empty_statement(if name.is_empty() {
                pgwire::api::DEFAULT_NAME
            } else {
                &name
            }),
        }
        client
            .send(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    /// As the library's, but the BindComplete waits in the output buffer (or, behind
    /// statements in flight, in the connection's [`Pipeline`]) for the results.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(pgwire::api::DEFAULT_NAME);
        match client.portal_store().get_statement(statement_name) {
            Some(pgwire::api::store::Entry::Value(statement)) => {
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(pgwire::api::store::Entry::Empty) => {
                if !message.parameters.is_empty() {
                    return Err(client_error(
                        "08P01",
                        format!(
                            "bind message supplies {} parameters, but prepared statement \"{statement_name}\" requires 0",
                            message.parameters.len()
                        ),
                    ));
                }
                let portal_name = message.portal_name.as_deref().unwrap_or(pgwire::api::DEFAULT_NAME);
                client.portal_store().put_empty_portal(portal_name);
            }
            None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
        }
        Pipeline::of(client)
            .send_or_queue(client, PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await
    }

    /// ReadyForQuery, behind the outputs still queued; the connection's loop flushes when
    /// the client has sent everything it had.
    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        client.portal_store().rm_portal(pgwire::api::DEFAULT_NAME);
        Pipeline::of(client).sync(client).await
    }

    /// The common case — a whole result, no row limit — without the portal machinery:
    /// rows and CommandComplete go to the output buffer, flushed at Sync.
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(pgwire::api::DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(name) {
            Some(pgwire::api::store::Entry::Value(p)) => p,
            _ => return self._on_execute(client, message).await,
        };
        if message.max_rows != 0
            || !matches!(client.state(), PgWireConnectionState::ReadyForQuery)
            || matches!(portal.statement.statement, Command::Copy(_) | Command::CopyOut(_))
            || !matches!(
                *portal.state().lock().await,
                pgwire::api::portal::PortalExecutionState::Initial
            )
        {
            return self._on_execute(client, message).await;
        }
        let pipeline = Pipeline::of(client);
        // One statement in flight per Sync group: if the last one failed, this one is
        // skipped with the rest of the group.
        if pipeline.group_busy() && pipeline.drain(client).await? {
            return Ok(());
        }
        let cmd = &portal.statement.statement;
        let params = decode_params(&portal, cmd)?;
        let cancel = self.cancel_token(client);
        if cmd.pipelines() {
            pipeline.push_result(self.submit(cmd, params, &portal.result_column_format, cancel)?);
        } else {
            {
                // Runs now: what is queued goes first.
                if !pipeline.is_empty() {
                    pipeline.drain(client).await?;
                }
                let resp = self
                    .run(cmd, params, &portal.result_column_format, cancel.as_ref())
                    .await?;
                write_response(client, resp).await?;
            }
        }
        Ok(())
    }

    async fn do_query<C>(&self, client: &mut C, portal: &Portal<Command>, _max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let cmd = &portal.statement.statement;
        if let Command::Copy(c) = cmd {
            copy::begin(client, c.clone());
            return Ok(Response::CopyIn(c.response()));
        }
        let params = decode_params(portal, cmd)?;
        let cancel = self.cancel_token(client);
        // Text-only results (SHOW, version()) ignore a binary request: their type is text,
        // whose binary form is the same bytes.
        self.run(cmd, params, &portal.result_column_format, cancel.as_ref())
            .await
    }
}

#[async_trait]
impl CopyHandler for Backend {
    async fn on_copy_data<C>(&self, client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        copy::data(&self.db, client, &data.data).await
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let started = Instant::now();
        let r = copy::done(&self.db, client).await;
        let outcome = match &r {
            Ok(_) => Outcome::Ok,
            Err(PgWireError::UserError(e)) => Outcome::error(e.code.clone()),
            Err(_) => Outcome::error("XX000"),
        };
        self.metrics.record(StatementClass::Write, started.elapsed(), outcome);
        let n = r?;
        client
            .send(PgWireBackendMessage::CommandComplete(CommandComplete::from(
                Tag::new("COPY").with_rows(n as usize),
            )))
            .await?;
        Ok(())
    }

    /// As PostgreSQL: the rows read so far are dropped (nothing was applied) and the
    /// error is 57014, "COPY from stdin failed".
    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        copy::abandon(client);
        client_error("57014", format!("COPY from stdin failed: {}", fail.message))
    }
}

/// The handlers of one server (shared by its connections).
pub struct Handlers {
    backend: Arc<Backend>,
    startup: Arc<Startup>,
    cancels: Arc<Cancels>,
}

impl Handlers {
    pub fn new(backend: Arc<Backend>, startup: Arc<Startup>, cancels: Arc<Cancels>) -> Handlers {
        Handlers {
            backend,
            startup,
            cancels,
        }
    }
}

impl Handlers {
    /// The handlers themselves, for the connection loop ([`crate::pipeline`]).
    pub(crate) fn parts(&self) -> (Arc<Backend>, Arc<Startup>, Arc<Cancels>) {
        (self.backend.clone(), self.startup.clone(), self.cancels.clone())
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.backend.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.backend.clone()
    }

    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.startup.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.backend.clone()
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.cancels.clone()
    }
}
