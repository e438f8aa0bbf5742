//! The protocol handlers: what a client's statement does. Both query protocols share one
//! classification of statements ([`Command`]) and one way of running them.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, stream};
use permafrost_executor::{Database, Rows, Value};
use permafrost_sql::{Prepared, StatementKind};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::{ClientInfo, ClientPortalStore, NoopHandler, PgWireServerHandlers, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use sqlparser::ast::Statement;

use crate::error::{client_error, db_error, sql_error};
use crate::types::{decode_param, encode, pg_type};

/// The PostgreSQL version clients are told they talk to (the protocol and catalog
/// behaviour they may rely on).
pub const PG_VERSION: &str = "16.6";

/// What one statement is, decided when it is parsed.
#[derive(Debug, Clone)]
pub enum Command {
    /// DML or a query, planned against the catalog; planned again when run, so a
    /// statement prepared before DDL sees the new schema.
    Dml {
        sql: String,
        params: Vec<Type>,
        columns: Vec<(String, Type)>,
        kind: StatementKind,
    },
    /// CREATE/DROP TABLE/INDEX, with its command tag.
    Ddl { sql: String, tag: String },
    /// SET: accepted (session settings do not change the engine's behaviour).
    Set,
    /// SHOW a setting.
    Show(String),
    /// `SELECT version()`.
    Version,
    /// COMMIT/ROLLBACK outside a transaction: nothing to do, as in PostgreSQL.
    EndTransaction(&'static str),
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
            "server_encoding" | "client_encoding" => "UTF8",
            "datestyle" => "ISO, MDY",
            "timezone" => "UTC",
            "standard_conforming_strings" | "integer_datetimes" => "on",
            "transaction_isolation" | "default_transaction_isolation" => "serializable",
            "transaction_read_only" | "default_transaction_read_only" => "off",
            "max_identifier_length" => "63",
            "search_path" => "public",
            _ => return None,
        }
        .to_string(),
    )
}

/// Classifies one parsed statement (`sql` is its text).
pub fn classify(db: &Database, stmt: &Statement, sql: &str) -> PgWireResult<Command> {
    let words = first_words(sql, 3);
    let first = words.first().map(String::as_str).unwrap_or("");
    match first {
        "SET" => return Ok(Command::Set),
        "SHOW" => {
            let name = sql.split_whitespace().nth(1).unwrap_or("").trim_end_matches(';');
            return Ok(Command::Show(name.to_string()));
        }
        "BEGIN" | "START" => {
            return Err(client_error(
                "0A000",
                "interactive transactions (BEGIN ... COMMIT) are not supported: every statement commits \
                 on its own; put statements that must commit together in a stored procedure",
            ));
        }
        "COMMIT" | "END" => return Ok(Command::EndTransaction("COMMIT")),
        "ROLLBACK" | "ABORT" => return Ok(Command::EndTransaction("ROLLBACK")),
        _ => {}
    }
    let compact: String = sql.split_whitespace().collect::<String>().to_ascii_lowercase();
    if compact.trim_end_matches(';') == "selectversion()" {
        return Ok(Command::Version);
    }
    if permafrost_sql::ddl::is_ddl(stmt) {
        return Ok(Command::Ddl {
            sql: sql.to_string(),
            tag: ddl_tag(sql),
        });
    }
    let prepared = permafrost_sql::prepare_statement(&db.catalog(), stmt, sql).map_err(sql_error)?;
    Ok(dml(&prepared))
}

fn dml(p: &Prepared) -> Command {
    Command::Dml {
        sql: p.sql.clone(),
        params: p.param_types().iter().map(|t| pg_type(t.as_ref())).collect(),
        columns: p
            .columns()
            .iter()
            .map(|c| (c.name.clone(), pg_type(c.ty.as_ref())))
            .collect(),
        kind: p.kind(),
    }
}

fn fields(columns: &[(String, Type)], format: &Format) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, (name, ty))| FieldInfo::new(name.clone(), None, None, ty.clone(), format.format_for(i)))
        .collect()
}

fn one_text_row(column: &str, value: String) -> PgWireResult<Response> {
    let schema = Arc::new(vec![FieldInfo::new(
        column.into(),
        None,
        None,
        Type::TEXT,
        FieldFormat::Text,
    )]);
    let mut enc = DataRowEncoder::new(schema.clone());
    enc.encode_field(&value)?;
    let row = enc.take_row();
    Ok(Response::Query(QueryResponse::new(schema, stream::iter(vec![Ok(row)]))))
}

/// Turns a statement's result into the response: rows for queries and RETURNING, a
/// command tag with the row count otherwise.
fn respond(rows: Rows, columns: &[(String, Type)], kind: StatementKind, format: &Format) -> PgWireResult<Response> {
    if columns.is_empty() {
        let n = rows.affected as usize;
        let tag = match kind {
            StatementKind::Insert => Tag::new("INSERT").with_oid(0).with_rows(n),
            StatementKind::Update => Tag::new("UPDATE").with_rows(n),
            StatementKind::Delete => Tag::new("DELETE").with_rows(n),
            StatementKind::Select => Tag::new("SELECT").with_rows(n),
        };
        return Ok(Response::Execution(tag));
    }
    let schema = Arc::new(fields(columns, format));
    let types: Vec<Type> = columns.iter().map(|c| c.1.clone()).collect();
    let mut enc = DataRowEncoder::new(schema.clone());
    let mut out = Vec::with_capacity(rows.len());
    for row in rows.iter() {
        for (v, ty) in row.values().zip(&types) {
            encode(&mut enc, v, ty)?;
        }
        out.push(Ok(enc.take_row()));
    }
    let mut resp = QueryResponse::new(schema, stream::iter(out));
    match kind {
        StatementKind::Insert => resp.set_command_tag("INSERT 0"),
        StatementKind::Update => resp.set_command_tag("UPDATE"),
        StatementKind::Delete => resp.set_command_tag("DELETE"),
        StatementKind::Select => {}
    }
    Ok(Response::Query(resp))
}

/// Runs statements for the clients of one server.
pub struct Backend {
    db: Arc<Database>,
    parser: Arc<Parser>,
}

impl Backend {
    pub fn new(db: Arc<Database>) -> Backend {
        Backend {
            parser: Arc::new(Parser { db: db.clone() }),
            db,
        }
    }

    async fn run(&self, cmd: &Command, params: Vec<Value>, format: &Format) -> PgWireResult<Response> {
        match cmd {
            Command::Set => Ok(Response::Execution(Tag::new("SET"))),
            Command::EndTransaction(tag) => Ok(Response::Execution(Tag::new(tag))),
            Command::Version => one_text_row(
                "version",
                format!(
                    "PostgreSQL {PG_VERSION} (Permafrost {}) on {}",
                    env!("CARGO_PKG_VERSION"),
                    std::env::consts::ARCH
                ),
            ),
            Command::Show(name) => match show_value(name) {
                Some(v) => one_text_row(name, v),
                None => Err(client_error(
                    "42704",
                    format!("unrecognized configuration parameter \"{name}\""),
                )),
            },
            Command::Ddl { sql, tag } => {
                // Schema changes wait for every partition: keep them off the I/O threads.
                let db = self.db.clone();
                let text = sql.clone();
                tokio::task::spawn_blocking(move || db.execute_ddl(&text))
                    .await
                    .map_err(|e| client_error("XX000", format!("internal error: {e}")))?
                    .map_err(db_error)?;
                Ok(Response::Execution(Tag::new(tag)))
            }
            Command::Dml { sql, columns, kind, .. } => {
                let prepared = permafrost_sql::prepare(&self.db.catalog(), sql).map_err(sql_error)?;
                // The schema may have changed since the statement was described.
                let now = dml(&prepared);
                let columns = match &now {
                    Command::Dml { columns: c, .. } if c.len() == columns.len() => columns.clone(),
                    Command::Dml { columns: c, .. } => c.clone(),
                    _ => columns.clone(),
                };
                let rows = self.db.execute_prepared(prepared, params).await.map_err(db_error)?;
                respond(rows, &columns, *kind, format)
            }
        }
    }
}

#[async_trait]
impl SimpleQueryHandler for Backend {
    async fn do_query<C>(&self, _client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let stmts = match permafrost_sql::parse::parse_statements(query) {
            Ok(s) => s,
            Err(e) => return Ok(vec![Response::Error(Box::new(sql_error(e).into()))]),
        };
        let mut out = Vec::with_capacity(stmts.len());
        for stmt in &stmts {
            let sql = stmt.to_string();
            let r = match classify(&self.db, stmt, &sql) {
                Ok(cmd) => self.run(&cmd, Vec::new(), &Format::UnifiedText).await,
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
        let stmts = permafrost_sql::parse::parse_statements(sql).map_err(sql_error)?;
        match stmts.as_slice() {
            [] => Ok(None),
            [one] => classify(&self.db, one, &one.to_string()).map(Some),
            _ => Err(client_error(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            )),
        }
    }

    fn get_parameter_types(&self, stmt: &Command) -> PgWireResult<Vec<Type>> {
        Ok(match stmt {
            Command::Dml { params, .. } => params.clone(),
            _ => Vec::new(),
        })
    }

    fn get_result_schema(&self, stmt: &Command, format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        let format = format.unwrap_or(&Format::UnifiedText);
        Ok(match stmt {
            Command::Dml { columns, .. } => fields(columns, format),
            Command::Version => fields(&[("version".into(), Type::TEXT)], format),
            Command::Show(name) => fields(&[(name.clone(), Type::TEXT)], format),
            _ => Vec::new(),
        })
    }
}

#[async_trait]
impl ExtendedQueryHandler for Backend {
    type Statement = Command;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    async fn do_query<C>(&self, _client: &mut C, portal: &Portal<Command>, _max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let cmd = &portal.statement.statement;
        let inferred = self.parser.get_parameter_types(cmd)?;
        let mut params = Vec::with_capacity(portal.parameter_len());
        for i in 0..portal.parameter_len() {
            params.push(decode_param(portal, i, inferred.get(i))?);
        }
        // Text-only results (SHOW, version()) ignore a binary request: their type is text,
        // whose binary form is the same bytes.
        self.run(cmd, params, &portal.result_column_format).await
    }
}

/// The handlers of one server (shared by its connections).
pub struct Handlers {
    backend: Arc<Backend>,
}

impl Handlers {
    pub fn new(db: Arc<Database>) -> Handlers {
        Handlers {
            backend: Arc::new(Backend::new(db)),
        }
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
        Arc::new(NoopHandler)
    }
}
