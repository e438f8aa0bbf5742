//! The protocol handlers: what a client's statement does. Both query protocols share one
//! classification of statements ([`Command`], command.rs) and one way of running them
//! ([`Backend`]); results become messages in respond.rs; the connection loop that calls
//! these handlers is pipeline.rs.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use permafrost_executor::{AdHoc, Database, Rows, StopFlag, Value};
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{
    ExtendedQueryHandler, SimpleQueryHandler, send_describe_response, send_execution_response, send_query_response,
    send_ready_for_query,
};
use pgwire::api::results::{DescribePortalResponse, DescribeResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::ParameterDescription;
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete, Sync as PgSync,
    TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::CommandComplete;
use pgwire::messages::response::{EmptyQueryResponse, TransactionStatus};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::ParameterStatus;

use crate::command::{Builtin, CallTarget, Command, Parser, classify_text, stats_columns};
use crate::copy::{self};
use crate::error::{ClientTag, client_error, db_error, sql_error};
use crate::metrics::{Outcome, ServerMetrics, StatementClass};
use crate::outputs::{PendingResult, Pipeline, write_response};
use crate::plancache::{Lookup, PlanCache};
use crate::prepared::{no_statement, prepared_names, sql_prepared, statement_memory, statement_size};
use crate::respond::{respond, respond_copy_out, text_rows};
use crate::session::{CancelToken, Cancels, CancelsOf, Startup};
use crate::session_settings::{self as settings, SetStatement};
use crate::txn;
use crate::types::decode_param;

/// A cursor: its query's rows (as sent, in text), waiting for FETCH.
struct Cursor {
    schema: Arc<Vec<pgwire::api::results::FieldInfo>>,
    rows: std::collections::VecDeque<pgwire::messages::data::DataRow>,
    /// WITH HOLD: it outlives its block.
    hold: bool,
    /// The block it was declared in (`txn::Open::id`); 0 outside one.
    block: u64,
}

/// A connection's cursors by name.
#[derive(Default)]
struct Cursors(std::sync::Mutex<std::collections::HashMap<String, Cursor>>);

impl Cursors {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Cursor>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops the cursors of blocks that have ended (those without HOLD).
    fn prune(&self, current: Option<u64>) {
        self.lock().retain(|_, c| c.hold || Some(c.block) == current);
    }
}

fn cursors<C: ClientInfo>(client: &C) -> Arc<Cursors> {
    client.session_extensions().get_or_insert_with(Cursors::default)
}

/// The block the connection is in, if any.
fn current_block(cell: &txn::Cell) -> Option<u64> {
    match &*txn::lock(cell) {
        txn::State::Open(o) | txn::State::Failed(o) => Some(o.id),
        txn::State::Idle => None,
    }
}

fn no_cursor(name: &str) -> PgWireError {
    client_error("34000", format!("cursor \"{name}\" does not exist"))
}

/// Runs a statement's future, stopped by a cancel request, the statement timeout or the
/// client going away.
async fn run_with(
    cancel: Option<&CancelToken>,
    stop: &StopFlag,
    fut: impl Future<Output = permafrost_executor::Result<Rows>>,
) -> PgWireResult<Rows> {
    match cancel {
        Some(c) => c.run_stoppable(stop, fut).await,
        None => Ok(fut.await),
    }
    .and_then(|r| r.map_err(db_error))
}

/// Sends a warning (a NoticeResponse of severity WARNING) to the client.
async fn warn<C>(client: &mut C, code: &str, message: &str) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let info = ErrorInfo::new("WARNING".to_owned(), code.to_owned(), message.to_owned());
    client.feed(PgWireBackendMessage::NoticeResponse(info.into())).await?;
    Ok(())
}

/// How a statement ended, for the metrics.
fn outcome_of<T>(r: &PgWireResult<T>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(PgWireError::UserError(e)) => Outcome::error(e.code.clone()),
        Err(_) => Outcome::error("XX000"),
    }
}

/// Runs what `start` submits with a stop flag that a cancel request, the statement
/// timeout or the client going away sets (the statement rolls back: 57014; one that
/// committed first answers as it would have). Returns its rows and what stops the rest of
/// them, if they stream.
async fn stoppable<F>(
    start: impl FnOnce(StopFlag) -> F,
    cancel: Option<&CancelToken>,
) -> PgWireResult<(Rows, (StopFlag, Option<(CancelToken, Instant)>))>
where
    F: Future<Output = permafrost_executor::Result<Rows>>,
{
    let started = Instant::now();
    let stop = StopFlag::new();
    let fut = start(stop.clone());
    let rows = match cancel {
        Some(c) => c.run_stoppable(&stop, fut).await?,
        None => fut.await,
    }
    .map_err(db_error)?;
    Ok((rows, (stop, cancel.map(|c| (c.clone(), started)))))
}

/// Runs statements for the clients of one server. A clone shares everything (its fields are
/// shared handles): each connection works with a copy of its own
/// ([`Handlers::parts`]).
#[derive(Clone)]
pub struct Backend {
    db: Arc<Database>,
    parser: Arc<Parser>,
    cancels: Arc<Cancels>,
    metrics: Arc<ServerMetrics>,
    /// Plans of simple-protocol statements by shape.
    plans: Arc<PlanCache>,
    /// Log the errors clients are answered with (`ServerOptions::log_client_errors`).
    log_errors: bool,
}

impl Backend {
    pub fn new(db: Arc<Database>, cancels: Arc<Cancels>, metrics: Arc<ServerMetrics>) -> Backend {
        Backend {
            parser: Arc::new(Parser { db: db.clone() }),
            db,
            cancels,
            metrics,
            plans: Arc::new(PlanCache::new()),
            log_errors: false,
        }
    }

    /// Logs the errors clients are answered with.
    pub fn with_error_log(mut self, on: bool) -> Backend {
        self.log_errors = on;
        self
    }

    /// Whether errors are logged.
    pub(crate) fn db(&self) -> &Arc<Database> {
        &self.db
    }

    pub(crate) fn logs_errors(&self) -> bool {
        self.log_errors
    }

    /// Runs a schema change off the I/O threads (it waits for every partition); the
    /// database records it in its schema log when it takes effect.
    async fn schema_change<T: Send + 'static>(
        &self,
        sql: &str,
        f: impl FnOnce(&Database, &str) -> permafrost_executor::Result<T> + Send + 'static,
    ) -> PgWireResult<T> {
        let db = self.db.clone();
        let text = sql.to_string();
        tokio::task::spawn_blocking(move || f(&db, &text).map_err(db_error))
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

    /// Parse, as the library's but a named statement that exists already is an error
    /// (42P05), as in PostgreSQL, instead of being replaced: the unnamed one is replaced.
    async fn parse_statement<C>(&self, client: &mut C, message: &Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Command>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.clone().unwrap_or_default();
        if !name.is_empty() && prepared_names(client).take_dropped(&name) {
            client.portal_store().rm_statement(&name);
        }
        if !name.is_empty() && client.portal_store().get_statement(&name).is_some() {
            return Err(client_error(
                "42P05",
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let parser = self.parser.clone();
        match pgwire::api::stmt::StoredStatement::parse(client, message, parser).await? {
            Some(stmt) => {
                // Counted while it is kept (crate::prepared); refused when there is no room.
                statement_memory(client).charge(self.db.statement_pool(), &name, statement_size(&message.query))?;
                client.portal_store().put_statement(Arc::new(stmt))
            }
            None => client.portal_store().put_empty_statement(if name.is_empty() {
                pgwire::api::DEFAULT_NAME
            } else {
                &name
            }),
        }
        if !name.is_empty() {
            prepared_names(client).add(&name);
        }
        client
            .send(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    /// Runs a statement as the connection's transaction state says: on its own outside a
    /// transaction block, as a probe inside one (crate::txn), or as the block's BEGIN,
    /// COMMIT or ROLLBACK. Warnings go to `client` as notices.
    async fn run_in_session<C>(
        &self,
        client: &mut C,
        cmd: &Command,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let cell = txn::of(client);
        match cmd {
            Command::Begin { read_only } => {
                let opened = {
                    let mut st = txn::lock(&cell);
                    match &mut *st {
                        txn::State::Idle => {
                            *st = txn::State::Open(txn::Open::new(*read_only));
                            true
                        }
                        // BEGIN inside an extended-protocol group's implicit block: the
                        // block becomes the client's.
                        txn::State::Open(o) if o.implicit => {
                            o.implicit = false;
                            o.read_only = *read_only;
                            true
                        }
                        txn::State::Open(_) => false,
                        txn::State::Failed(_) => return Err(txn::aborted()),
                    }
                };
                if opened {
                    return Ok(Response::TransactionStart(Tag::new("BEGIN")));
                }
                warn(client, "25001", "there is already a transaction in progress").await?;
                Ok(Response::Execution(Tag::new("BEGIN")))
            }
            Command::Commit => {
                let taken = std::mem::replace(&mut *txn::lock(&cell), txn::State::Idle);
                match taken {
                    txn::State::Idle => {
                        warn(client, "25P01", "there is no transaction in progress").await?;
                        Ok(Response::TransactionEnd(Tag::new("COMMIT")))
                    }
                    txn::State::Failed(_) => Ok(Response::TransactionEnd(Tag::new("ROLLBACK"))),
                    txn::State::Open(open) => self
                        .commit_block(open, cancel)
                        .await
                        .map(|()| Response::TransactionEnd(Tag::new("COMMIT"))),
                }
            }
            Command::Savepoint(sp) => {
                let r = txn::savepoint(&mut txn::lock(&cell), sp);
                r.map(|tag| Response::Execution(Tag::new(tag)))
            }
            Command::Rollback => {
                let taken = std::mem::replace(&mut *txn::lock(&cell), txn::State::Idle);
                if matches!(taken, txn::State::Idle) {
                    warn(client, "25P01", "there is no transaction in progress").await?;
                }
                Ok(Response::TransactionEnd(Tag::new("ROLLBACK")))
            }
            // Statements that run inside a block or outside one; an error aborts the block.
            Command::Truncate(_)
            | Command::Declare { .. }
            | Command::Fetch { .. }
            | Command::Execute { .. }
            | Command::System(_) => {
                if matches!(*txn::lock(&cell), txn::State::Failed(_)) {
                    return Err(txn::aborted());
                }
                let r = Box::pin(self.in_or_out_of_block(client, cmd, params, format, cancel, &cell)).await;
                if r.is_err() {
                    txn::fail(&mut txn::lock(&cell));
                }
                r
            }
            _ => {
                let inside = match &*txn::lock(&cell) {
                    txn::State::Idle => false,
                    txn::State::Open(_) => true,
                    txn::State::Failed(_) => return Err(txn::aborted()),
                };
                if cmd.is_session_statement() {
                    let r = self.session_statement(client, cmd, format, cancel, &cell).await;
                    if r.is_err() && inside {
                        txn::fail(&mut txn::lock(&cell));
                    }
                    return r;
                }
                if !inside {
                    return self.run(cmd, params, format, cancel).await;
                }
                let r = match cmd {
                    Command::Ddl { sql, tag } => self.block_ddl(sql, tag, &cell).await,
                    Command::Dml(_) if block_changed_schema(&cell) => Err(client_error(
                        "0A000",
                        "tables cannot be read or written after a schema change in the same transaction block \
                         (the change applies at COMMIT): COMMIT first",
                    )),
                    Command::Dml(d) => self.probe(d, params, format, cancel, &cell).await,
                    Command::Version | Command::Stats => self.run(cmd, params, format, cancel).await,
                    _ => Err(client_error(
                        "0A000",
                        "only queries, INSERT, UPDATE, DELETE, COPY FROM STDIN, schema changes, SET and SHOW may run \
                         inside a transaction block (CALL, COPY TO, CREATE PROCEDURE and CHECKPOINT run outside \
                         BEGIN ... COMMIT)",
                    )),
                };
                if r.is_err() {
                    txn::fail(&mut txn::lock(&cell));
                }
                r
            }
        }
    }

    /// Commits an open block: its statements at one point of the serial order, each
    /// checked against what its client was shown, then its schema changes.
    async fn commit_block(&self, open: txn::Open, cancel: Option<&CancelToken>) -> PgWireResult<()> {
        let started = Instant::now();
        let stop = StopFlag::new();
        // Nothing else of this connection is in flight (a pipeline is drained before a
        // COMMIT or a Sync that ends a block): the commit may run on this thread.
        let fut = self
            .db
            .commit_interactive(&open.statements, open.now, stop.clone(), true);
        let mut r = match cancel {
            Some(c) => c.run_stoppable(&stop, fut).await,
            None => Ok(fut.await),
        }
        .and_then(|r| r.map_err(db_error));
        // The block's schema changes, once what it read still holds (it wrote nothing:
        // writes and schema changes do not share a block).
        if r.is_ok() && !open.ddl.is_empty() {
            let texts = open.ddl.clone();
            r = self.schema_change("", move |db, _| db.execute_ddl_atomic(&texts)).await;
        }
        let class = if !open.wrote() {
            StatementClass::Query
        } else {
            StatementClass::Write
        };
        self.metrics.record(class, started.elapsed(), outcome_of(&r));
        r
    }

    /// TRUNCATE, cursors, EXECUTE and catalog queries (`run_in_session` aborts the block
    /// when one fails).
    async fn in_or_out_of_block<C>(
        &self,
        client: &mut C,
        cmd: &Command,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
        cell: &txn::Cell,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match cmd {
            Command::Truncate(deletes) => {
                if matches!(*txn::lock(cell), txn::State::Open(_)) {
                    // Inside a block: each DELETE as the block's statement.
                    for d in deletes {
                        self.probe(d, Vec::new(), format, cancel, cell).await?;
                    }
                } else {
                    // Outside: all of them as one transaction.
                    let stop = StopFlag::new();
                    let statements = deletes.iter().map(|d| (d.stmt.clone(), Vec::new())).collect();
                    let fut = self.db.run_block(statements, txn::now_micros(), stop.clone());
                    let fut = async move { fut.await.1 };
                    match cancel {
                        Some(c) => c.run_stoppable(&stop, fut).await?.map_err(db_error)?,
                        None => fut.await.map_err(db_error)?,
                    }
                }
                Ok(Response::Execution(Tag::new("TRUNCATE TABLE")))
            }
            Command::Declare { name, query, hold } => {
                let block = current_block(cell);
                let all = cursors(client);
                all.prune(block);
                if block.is_none() && !*hold {
                    return Err(client_error(
                        "25P01",
                        "DECLARE CURSOR can only be used in transaction blocks",
                    ));
                }
                if all.lock().contains_key(name) {
                    return Err(client_error("42P03", format!("cursor \"{name}\" already exists")));
                }
                let resp = self
                    .run_in_session(client, query, params, &Format::UnifiedText, cancel)
                    .await?;
                let Response::Query(mut q) = resp else {
                    return Err(client_error("XX000", "internal error: a cursor's query gave no rows"));
                };
                let mut rows = std::collections::VecDeque::new();
                while let Some(row) = futures::StreamExt::next(&mut q.data_rows).await {
                    rows.push_back(row?);
                }
                all.lock().insert(
                    name.clone(),
                    Cursor {
                        schema: q.row_schema.clone(),
                        rows,
                        hold: *hold,
                        block: block.unwrap_or(0),
                    },
                );
                Ok(Response::Execution(Tag::new("DECLARE CURSOR")))
            }
            Command::Fetch { name, count, moving } => {
                let all = cursors(client);
                all.prune(current_block(cell));
                let (schema, rows) = {
                    let mut map = all.lock();
                    let c = map.get_mut(name).ok_or_else(|| no_cursor(name))?;
                    let n = count.map_or(c.rows.len(), |n| (n as usize).min(c.rows.len()));
                    (c.schema.clone(), c.rows.drain(..n).collect::<Vec<_>>())
                };
                if *moving {
                    return Ok(Response::Execution(Tag::new("MOVE").with_rows(rows.len())));
                }
                // (The library appends the row count: FETCH n.)
                let mut q =
                    pgwire::api::results::QueryResponse::new(schema, futures::stream::iter(rows.into_iter().map(Ok)));
                q.set_command_tag("FETCH");
                Ok(Response::Query(q))
            }
            Command::Execute { name, args } => {
                let (inner, types) = sql_prepared(client)
                    .lock()
                    .get(name)
                    .cloned()
                    .ok_or_else(|| no_statement(name))?;
                if types.len() != args.len() {
                    return Err(client_error(
                        "42601",
                        format!(
                            "wrong number of parameters for prepared statement \"{name}\": {} expected, {} given",
                            types.len(),
                            args.len()
                        ),
                    ));
                }
                let params = args
                    .iter()
                    .zip(&types)
                    .enumerate()
                    .map(|(i, (a, t))| crate::command::execute_value(a, t, i))
                    .collect::<PgWireResult<Vec<_>>>()?;
                self.run_in_session(client, &inner, params, format, cancel).await
            }
            Command::System(q) => self.system_query(client, q.clone(), params, format, cancel).await,
            _ => Err(client_error("XX000", "internal error: not a statement of this kind")),
        }
    }

    /// A schema change inside a transaction block: checked now against the schema as the
    /// block's earlier changes leave it, applied at COMMIT with them (crate::txn).
    async fn block_ddl(&self, sql: &str, tag: &str, cell: &txn::Cell) -> PgWireResult<Response> {
        let texts = {
            let st = txn::lock(cell);
            let txn::State::Open(o) = &*st else {
                return Err(txn::aborted());
            };
            if o.read_only {
                return Err(client_error(
                    "25006",
                    "cannot change the schema in a read-only transaction",
                ));
            }
            if o.wrote() {
                return Err(client_error(
                    "0A000",
                    "a schema change cannot follow writes in the same transaction block: COMMIT the writes first",
                ));
            }
            let mut texts = o.ddl.clone();
            texts.push(sql.to_string());
            texts
        };
        self.schema_change("", move |db, _| db.check_ddl(&texts)).await?;
        if let txn::State::Open(o) = &mut *txn::lock(cell) {
            o.ddl.push(sql.to_string());
        }
        Ok(Response::Execution(Tag::new(tag)))
    }

    /// A query on the system catalogs (crate::syscat), on a blocking thread: it stops on a
    /// cancel request or at the statement timeout.
    async fn system_query<C>(
        &self,
        client: &mut C,
        q: Arc<crate::syscat::SystemQuery>,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = settings::of(client);
        let meta = client.metadata();
        let user = meta.get("user").cloned().unwrap_or_default();
        let info = crate::syscat::SessionInfo {
            database: meta.get("database").cloned().unwrap_or_else(|| user.clone()),
            user,
            pid: client.pid_and_secret_key().0,
            settings: settings::SETTINGS
                .iter()
                .map(|s| {
                    (
                        s.spelled.to_string(),
                        settings::shown(s, &session.get(s)),
                        s.description.to_string(),
                    )
                })
                .collect(),
        };
        let flag = StopFlag::new();
        let db = self.db.clone();
        let (query, stop) = (q.clone(), flag.clone());
        let mut work =
            tokio::task::spawn_blocking(move || crate::syscat::run(&db, &query, &params, &info, move || stop.is_set()));
        let started = std::time::Instant::now();
        let joined = match cancel {
            None => (&mut work).await,
            Some(c) => tokio::select! {
                r = &mut work => r,
                _ = c.stopped(started) => {
                    flag.set();
                    work.await
                }
            },
        };
        let rows = joined.map_err(|e| client_error("XX000", format!("internal error: {e}")))??;
        crate::syscat::respond(&q, rows, format)
    }

    /// SET, RESET, SHOW, DISCARD and DEALLOCATE: the connection's settings
    /// (crate::session_settings) and prepared statements.
    async fn session_statement<C>(
        &self,
        client: &mut C,
        cmd: &Command,
        format: &Format,
        cancel: Option<&CancelToken>,
        cell: &txn::Cell,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = settings::of(client);
        let timeout = |value: &str| {
            if let Some(c) = cancel {
                c.set_statement_timeout(value.parse().unwrap_or(0));
            }
        };
        match cmd {
            Command::Set(SetStatement::Assign { name, value })
            | Command::SetConfig(SetStatement::Assign { name, value }) => {
                let s = settings::setting(name).expect("checked when parsed");
                let before = session.get(s);
                let now = session.set(s, value.clone());
                if s.name == "statement_timeout" {
                    timeout(&now);
                }
                if s.reported && now != before {
                    client
                        .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                            s.spelled.to_string(),
                            now.clone(),
                        )))
                        .await?;
                }
                if matches!(cmd, Command::SetConfig(_)) {
                    // set_config() answers the value now in effect, as SHOW prints it.
                    return text_rows(&cmd.columns(), vec![vec![Some(settings::shown(s, &now))]], format);
                }
                Ok(Response::Execution(Tag::new(if value.is_some() {
                    "SET"
                } else {
                    "RESET"
                })))
            }
            Command::Set(SetStatement::ResetAll) | Command::Discard(true) => {
                if matches!(cmd, Command::Discard(true)) {
                    if !matches!(*txn::lock(cell), txn::State::Idle) {
                        return Err(client_error(
                            "25001",
                            "DISCARD ALL cannot run inside a transaction block",
                        ));
                    }
                    statement_memory(client).forget_named(self.db.statement_pool());
                    prepared_names(client).drop_all();
                    sql_prepared(client).lock().clear();
                    cursors(client).lock().clear();
                }
                for name in session.reset_all() {
                    let s = settings::setting(name).expect("a setting");
                    if s.name == "statement_timeout" {
                        timeout("0");
                    }
                    if s.reported {
                        client
                            .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                                s.spelled.to_string(),
                                s.default.to_string(),
                            )))
                            .await?;
                    }
                }
                Ok(Response::Execution(Tag::new(if matches!(cmd, Command::Discard(_)) {
                    "DISCARD ALL"
                } else {
                    "RESET"
                })))
            }
            Command::Set(SetStatement::Transaction { session: true, .. }) => Ok(Response::Execution(Tag::new("SET"))),
            Command::Set(SetStatement::Transaction { read_only, .. }) => {
                let in_block = match &mut *txn::lock(cell) {
                    txn::State::Open(o) => {
                        if *read_only && o.wrote() {
                            return Err(client_error(
                                "25001",
                                "transaction read-write mode must be set before any query",
                            ));
                        }
                        o.read_only |= *read_only;
                        true
                    }
                    _ => false,
                };
                if !in_block {
                    warn(
                        client,
                        "25P01",
                        "SET TRANSACTION can only be used in transaction blocks",
                    )
                    .await?;
                }
                Ok(Response::Execution(Tag::new("SET")))
            }
            Command::Discard(false) => Ok(Response::Execution(Tag::new("DISCARD"))),
            Command::Release(tag) => Ok(Response::Execution(Tag::new(tag))),
            Command::Maintenance(true) if matches!(*txn::lock(cell), txn::State::Open(_)) => {
                Err(client_error("25001", "VACUUM cannot run inside a transaction block"))
            }
            Command::Maintenance(vacuum) => Ok(Response::Execution(Tag::new(if *vacuum {
                "VACUUM"
            } else {
                "ANALYZE"
            }))),
            Command::CloseCursor(None) => {
                cursors(client).lock().clear();
                Ok(Response::Execution(Tag::new("CLOSE CURSOR ALL")))
            }
            Command::CloseCursor(Some(name)) => {
                let all = cursors(client);
                all.prune(current_block(cell));
                if all.lock().remove(name).is_none() {
                    return Err(no_cursor(name));
                }
                Ok(Response::Execution(Tag::new("CLOSE CURSOR")))
            }
            Command::Deallocate(None) => {
                statement_memory(client).forget_named(self.db.statement_pool());
                prepared_names(client).drop_all();
                sql_prepared(client).lock().clear();
                Ok(Response::Execution(Tag::new("DEALLOCATE ALL")))
            }
            Command::Deallocate(Some(name)) => {
                if sql_prepared(client).lock().remove(name).is_none() && !prepared_names(client).deallocate(name) {
                    return Err(no_statement(name));
                }
                statement_memory(client).forget(self.db.statement_pool(), name);
                Ok(Response::Execution(Tag::new("DEALLOCATE")))
            }
            Command::Prepare { name, cmd, types } => {
                if prepared_names(client).has(name) || sql_prepared(client).lock().contains_key(name) {
                    return Err(client_error(
                        "42P05",
                        format!("prepared statement \"{name}\" already exists"),
                    ));
                }
                statement_memory(client).charge(
                    self.db.statement_pool(),
                    name,
                    statement_size(cmd.sql().unwrap_or_default()),
                )?;
                sql_prepared(client)
                    .lock()
                    .insert(name.clone(), (cmd.clone(), types.clone()));
                Ok(Response::Execution(Tag::new("PREPARE")))
            }
            Command::Show(name) => {
                let n = name.to_ascii_lowercase();
                let v = match n.as_str() {
                    "transaction_isolation" => "serializable".to_string(),
                    "transaction_read_only" => match &*txn::lock(cell) {
                        txn::State::Open(o) if o.read_only => "on".into(),
                        _ => "off".into(),
                    },
                    _ => match (settings::read_only_parameter(&n), settings::setting(&n)) {
                        (Some(v), _) => v.to_string(),
                        (None, Some(s)) => settings::shown(s, &session.get(s)),
                        (None, None) => {
                            return Err(client_error(
                                "42704",
                                format!("unrecognized configuration parameter \"{name}\""),
                            ));
                        }
                    },
                };
                text_rows(&cmd.columns(), vec![vec![Some(v)]], format)
            }
            Command::ShowAll => {
                let mut rows: Vec<Vec<Option<String>>> = settings::SETTINGS
                    .iter()
                    .map(|s| {
                        vec![
                            Some(s.spelled.to_string()),
                            Some(settings::shown(s, &session.get(s))),
                            Some(s.description.to_string()),
                        ]
                    })
                    .collect();
                rows.sort();
                text_rows(&cmd.columns(), rows, format)
            }
            _ => Err(client_error("XX000", "internal error: not a session statement")),
        }
    }

    /// A query string of several DML statements and queries, outside a block: one
    /// transaction, as PostgreSQL's implicit one (all applied, or none). `None` when a
    /// statement is of another kind (or does not plan): then they run one by one.
    async fn implicit_block(&self, texts: &[String], cancel: Option<&CancelToken>) -> Option<Vec<Response>> {
        let mut dmls = Vec::with_capacity(texts.len());
        for t in texts {
            match classify_text(&self.db, t) {
                Ok(Command::Dml(d)) => dmls.push(d),
                _ => return None,
            }
        }
        let started = Instant::now();
        let stop = StopFlag::new();
        let statements = dmls.iter().map(|d| (d.stmt.clone(), Vec::new())).collect();
        let fut = self.db.run_block(statements, txn::now_micros(), stop.clone());
        let fut = async move { Ok::<_, permafrost_executor::Error>(fut.await) };
        let (rows, r) = match cancel {
            Some(c) => match c.run_stoppable(&stop, fut).await {
                Ok(Ok(done)) => done,
                Ok(Err(e)) => (Vec::new(), Err(e)),
                Err(e) => return Some(vec![Response::Error(Box::new(e.into()))]),
            },
            None => fut.await.unwrap_or_else(|e| (Vec::new(), Err(e))),
        };
        let mut out = Vec::with_capacity(dmls.len());
        for (rows, d) in rows.into_iter().zip(&dmls) {
            match respond(
                rows,
                &d.columns,
                Some(d.kind),
                &Format::UnifiedText,
                None,
                self.db.statement_pool(),
            ) {
                Ok(resp) => out.push(resp),
                Err(e) => {
                    out.push(Response::Error(Box::new(e.into())));
                    return Some(out);
                }
            }
        }
        let r = r.map_err(db_error);
        let class = if dmls.iter().all(|d| d.read_only) {
            StatementClass::Query
        } else {
            StatementClass::Write
        };
        self.metrics.record(class, started.elapsed(), outcome_of(&r));
        if let Err(e) = r {
            out.push(Response::Error(Box::new(e.into())));
        }
        Some(out)
    }

    /// Runs a DML statement inside the connection's open transaction: a probe over the
    /// committed state and the transaction's earlier writes, remembered with what it
    /// showed for the commit to check.
    async fn probe(
        &self,
        d: &Arc<crate::command::DmlCommand>,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
        cell: &txn::Cell,
    ) -> PgWireResult<Response> {
        let (wrote, read_only, n) = match &*txn::lock(cell) {
            txn::State::Open(o) => (o.wrote(), o.read_only, o.statements.len()),
            _ => return Err(txn::aborted()),
        };
        if read_only && !d.read_only {
            return Err(client_error(
                "25006",
                "cannot execute a write in a read-only transaction",
            ));
        }
        if n >= permafrost_executor::MAX_TXN_STATEMENTS {
            return Err(client_error(
                "54000",
                format!(
                    "a transaction block may run at most {} statements; commit in smaller transactions",
                    permafrost_executor::MAX_TXN_STATEMENTS
                ),
            ));
        }
        let started = Instant::now();
        // Read before the statement is submitted: COMMIT need not run a query again whose
        // rows no later commit changed (`TxnStatement::seen`).
        let seen = self.db.write_clock();
        // A query before the block's first write sees the committed state only: it runs as
        // an ordinary statement (its plan cached, no procedure to build) unless its result
        // depends on the block's clock, or its evicted rest would come afterwards (the
        // digest must cover every row): then it runs as a probe.
        let mut rows = None;
        if !wrote && d.read_only && !d.reads_clock {
            let stop = StopFlag::in_block();
            // A read of every partition runs one partition at a time (the COMMIT checks
            // it at one point), else as one statement.
            let got = match self.db.read_in_parts(&d.stmt, params.clone(), stop.clone()) {
                Some(fut) => run_with(cancel, &stop, fut).await,
                None => {
                    let fut = self.db.execute_ad_hoc_here(&d.stmt, params.clone(), stop.clone(), true);
                    run_with(cancel, &stop, fut).await
                }
            };
            match got {
                Ok(r) if r.has_rest() => {}
                other => rows = Some(other),
            }
        }
        let rows = match rows {
            Some(r) => r,
            None => self.probe_block(&d.stmt, params.clone(), cancel, cell).await,
        };
        let r = rows.and_then(|rows| {
            // And after it: what a COMMIT placed earlier knows of when it read.
            let done = self.db.write_clock();
            keep_in_block(cell, d.stmt.clone(), params, &rows, Some((seen, done)));
            respond(rows, &d.columns, Some(d.kind), format, None, self.db.statement_pool())
        });
        self.metrics.record(
            if d.read_only {
                StatementClass::Query
            } else {
                StatementClass::Write
            },
            started.elapsed(),
            outcome_of(&r),
        );
        r
    }

    /// Runs `stmt` with `params` as a probe of the connection's open block: over the
    /// committed state and the block's earlier writes, undone (crate::txn); what it gives
    /// inside the block.
    async fn probe_block(
        &self,
        stmt: &permafrost_executor::AdHoc,
        params: Vec<Value>,
        cancel: Option<&CancelToken>,
        cell: &txn::Cell,
    ) -> PgWireResult<Rows> {
        let stop = StopFlag::in_block();
        // Submitted while the block is locked (its statements are read in place); nothing
        // else of this connection is in flight: a short probe may run here.
        let fut = match &*txn::lock(cell) {
            txn::State::Open(o) => self.db.probe(
                &o.statements.iter().filter(|s| s.writes()).collect::<Vec<_>>(),
                stmt,
                params,
                o.now,
                stop.clone(),
                true,
            ),
            _ => return Err(txn::aborted()),
        };
        run_with(cancel, &stop, fut).await
    }

    /// Submits a DML statement or a procedure call ([`Command::pipelines`]) to its
    /// partition(s) now and returns its result to come, for the connection's pipeline.
    /// `here`: the connection has nothing else in flight, so a short statement may run on
    /// this thread when its partition is free (`Database::execute_ad_hoc_here`).
    fn submit(
        &self,
        cmd: &Command,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<CancelToken>,
        here: bool,
        who: Option<ClientTag>,
    ) -> PgWireResult<PendingResult> {
        let started = Instant::now();
        let metrics = self.metrics.clone();
        let class = cmd.class();
        let format = format.clone();
        let pool = self.db.statement_pool().clone();
        let fut: PendingResult = match cmd {
            Command::Dml(d) => {
                let stop = StopFlag::new();
                let fut = self.db.execute_ad_hoc_here(&d.stmt, params, stop.clone(), here);
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
                        .and_then(|rows| respond(rows, &d.columns, Some(d.kind), &format, Some((stop, watch)), &pool));
                    metrics.record(class, started.elapsed(), outcome_of(&r));
                    if let (Err(e), Some(who)) = (&r, who) {
                        crate::error::log_client_error(who, Some(&d.stmt.prepared().sql), e);
                    }
                    r
                })
            }
            Command::Call(c) => {
                let CallTarget::Procedure(h) = &c.target else {
                    return Err(client_error("XX000", "internal error: a built-in CALL submitted"));
                };
                let args = c.bind_args(&params)?;
                // Stopped as a DML statement is (a cancel, the timeout, a client gone).
                let stop = StopFlag::new();
                let fut = self.db.call_handle_here(h, args, stop.clone(), here);
                let c = c.clone();
                Box::pin(async move {
                    let rows = match &cancel {
                        Some(t) => t.run_stoppable(&stop, fut).await?,
                        None => fut.await,
                    };
                    let r = rows
                        .map_err(db_error)
                        .and_then(|rows| respond(rows, &c.columns, None, &format, None, &pool));
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
            Command::System(_) => Err(client_error(
                "XX000",
                "internal error: a catalog query outside the session handling",
            )),
            Command::Begin { .. }
            | Command::Commit
            | Command::Rollback
            | Command::Savepoint(_)
            // (Command::is_session_statement: listed here for the match to be exhaustive.)
            | Command::Set(_)
            | Command::SetConfig(_)
            | Command::Prepare { .. }
            | Command::Execute { .. }
            | Command::Declare { .. }
            | Command::Truncate(_)
            | Command::Fetch { .. }
            | Command::CloseCursor(_)
            | Command::Show(_)
            | Command::ShowAll
            | Command::Discard(_)
            | Command::Deallocate(_)
            | Command::Release(_)
            | Command::Maintenance(_) => Err(client_error(
                "XX000",
                "internal error: a session statement outside the session handling",
            )),
            Command::Checkpoint => {
                let db = self.db.clone();
                tokio::task::spawn_blocking(move || db.snapshot())
                    .await
                    .map_err(|e| client_error("XX000", format!("internal error: {e}")))?
                    .map_err(db_error)?;
                Ok(Response::Execution(Tag::new("CHECKPOINT")))
            }
            Command::Version => text_rows(&cmd.columns(), vec![vec![Some(crate::command::version_text())]], format),
            Command::Stats => self.stats_response(format).await,
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
                respond(rows, &d.columns, Some(d.kind), format, Some(stop), self.db.statement_pool())
            }
            Command::Call(c) => {
                let args = c.bind_args(&params)?;
                match &c.target {
                    CallTarget::Procedure(h) => {
                        // Nothing else of this connection is in flight.
                        let (rows, _) = stoppable(|stop| self.db.call_handle_here(h, args, stop, true), cancel).await?;
                        respond(rows, &c.columns, None, format, None, self.db.statement_pool())
                    }
                    CallTarget::Builtin(b) => self.builtin(*b, args, format).await,
                }
            }
            Command::CopyOut(c) => {
                let (rows, stop) = self.run_stoppable(&c.stmt, params, cancel).await?;
                respond_copy_out(rows, c, stop, self.db.statement_pool())
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
        // Nothing else of this connection is in flight: a point statement may run here.
        stoppable(|stop| self.db.execute_ad_hoc_here(stmt, params, stop, true), cancel).await
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
    /// As the library's, but ReadyForQuery tells the connection's transaction state
    /// (crate::txn) rather than what the responses suggest: a COMMIT that fails leaves no
    /// transaction open (I), an error inside a block aborts it (E).
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        if query.query.chars().all(|c| c == ';' || c.is_whitespace()) {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                .await?;
        } else {
            for r in SimpleQueryHandler::do_query(self, client, &query.query).await? {
                match r {
                    Response::EmptyQuery => {
                        client
                            .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                            .await?;
                    }
                    Response::Query(results) => send_query_response(client, results, true).await?,
                    Response::Execution(tag) | Response::TransactionStart(tag) | Response::TransactionEnd(tag) => {
                        send_execution_response(client, tag).await?
                    }
                    Response::Error(e) => {
                        if self.log_errors {
                            crate::error::log_error_info(ClientTag::of(client), Some(&query.query), &e);
                        }
                        client.feed(PgWireBackendMessage::ErrorResponse((*e).into())).await?;
                    }
                    Response::CopyIn(result) => {
                        pgwire::api::copy::send_copy_in_response(client, result).await?;
                        client.set_state(PgWireConnectionState::CopyInProgress(false));
                    }
                    Response::CopyOut(result) => pgwire::api::copy::send_copy_out_response(client, result).await?,
                    Response::CopyBoth(result) => {
                        pgwire::api::copy::send_copy_both_response(client, result).await?;
                        client.set_state(PgWireConnectionState::CopyInProgress(false));
                    }
                }
            }
        }
        if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            client.set_state(PgWireConnectionState::ReadyForQuery);
            let status = txn::status(&txn::of(client));
            client.set_transaction_status(status);
            send_ready_for_query(client, status).await?;
        }
        Ok(())
    }

    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let cancel = self.cancel_token(client);
        // One statement whose shape's plan is cached runs without parsing or planning.
        let mut learn = match self.plans.lookup(&self.db, query) {
            Lookup::Hit(cmd, params) => {
                self.metrics.plan_cache_lookup(true);
                let r = self
                    .run_in_session(client, &cmd, params, &Format::UnifiedText, cancel.as_ref())
                    .await;
                return Ok(vec![r.unwrap_or_else(|e| Response::Error(Box::new(e.into())))]);
            }
            Lookup::Learn(shape) => Some(shape),
            Lookup::Plan => None,
        };
        let texts = match permafrost_sql::script::split(query) {
            Ok(s) => s,
            Err(e) => return Ok(vec![Response::Error(Box::new(sql_error(e).into()))]),
        };
        if texts.len() == 1 {
            self.metrics.plan_cache_lookup(false);
        }
        if texts.len() > 1
            && matches!(*txn::lock(&txn::of(client)), txn::State::Idle)
            && let Some(out) = self.implicit_block(&texts, cancel.as_ref()).await
        {
            return Ok(out);
        }
        let mut out = Vec::with_capacity(texts.len());
        for (i, sql) in texts.iter().enumerate() {
            let classified = classify_text(&self.db, sql);
            if let (Some(shape), Ok(cmd), 1) = (learn.take(), &classified, texts.len()) {
                self.plans.learn(&self.db, &shape, cmd);
            }
            let r = match classified {
                Ok(Command::Copy(c)) if i + 1 == texts.len() => copy_may_start(client).map(|()| {
                    // The rows follow as CopyData messages.
                    copy::begin(client, c.clone());
                    Response::CopyIn(c.response())
                }),
                Ok(Command::Copy(_)) => Err(client_error(
                    "0A000",
                    "COPY FROM STDIN must be the last statement of a query string",
                )),
                Ok(cmd) => {
                    self.run_in_session(client, &cmd, Vec::new(), &Format::UnifiedText, cancel.as_ref())
                        .await
                }
                Err(e) => {
                    // An error inside a transaction block aborts it; in an aborted block
                    // every statement is refused as such.
                    let cell = txn::of(client);
                    let e = txn::explain_pending_ddl(&cell, e);
                    let mut st = txn::lock(&cell);
                    match *st {
                        txn::State::Open(_) => {
                            txn::fail(&mut st);
                            Err(e)
                        }
                        txn::State::Failed(_) => Err(txn::aborted()),
                        txn::State::Idle => Err(e),
                    }
                }
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
            if prepared_names(client).take_dropped(name) {
                client.portal_store().rm_statement(name);
                return Err(no_statement(name));
            }
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
        if message.target_type == TARGET_TYPE_BYTE_PORTAL {
            // A FETCH's rows are its cursor's; a DECLAREd cursor is a portal by its name
            // (psycopg describes its server-side cursors so).
            let name = message.name.as_deref().unwrap_or(pgwire::api::DEFAULT_NAME);
            let cursor = match client.portal_store().get_portal(name) {
                Some(pgwire::api::store::Entry::Value(p)) => match &p.statement.statement {
                    Command::Fetch {
                        name, moving: false, ..
                    } => Some(name.clone()),
                    _ => None,
                },
                _ => Some(name.to_string()),
            };
            let schema = cursor.and_then(|c| cursors(client).lock().get(&c).map(|c| c.schema.clone()));
            if let Some(schema) = schema {
                return send_describe_response(client, &DescribePortalResponse::new((*schema).clone())).await;
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
        let r = self.parse_statement(client, &message).await;
        if let Err(e) = &r
            && self.log_errors
        {
            // Logged here, where the text is at hand (the connection loop does not log a
            // Parse's error again).
            crate::error::log_client_error(ClientTag::of(client), Some(&message.query), e);
        }
        r
    }

    /// As the library's, and a statement or portal closed gives back its memory (and a
    /// statement its name: crate::prepared).
    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(pgwire::api::DEFAULT_NAME);
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                client.portal_store().rm_statement(name);
                prepared_names(client).closed(name);
                statement_memory(client).forget(self.db.statement_pool(), name);
            }
            TARGET_TYPE_BYTE_PORTAL => {
                client.portal_store().rm_portal(name);
                statement_memory(client).charge_portal(self.db.statement_pool(), name, 0)?;
            }
            _ => {}
        }
        client
            .send(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
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
        if prepared_names(client).take_dropped(statement_name) {
            client.portal_store().rm_statement(statement_name);
            return Err(no_statement(statement_name));
        }
        match client.portal_store().get_statement(statement_name) {
            Some(pgwire::api::store::Entry::Value(statement)) => {
                let portal = Portal::try_new(&message, statement)?;
                // Its parameters are counted while it is kept (crate::prepared).
                let bytes = message.parameters.iter().flatten().map(|p| p.len()).sum();
                statement_memory(client).charge_portal(self.db.statement_pool(), &portal.name, bytes)?;
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
        // ReadyForQuery tells the transaction state: an error in this group (reported by
        // the connection loop, which marks the status E) aborts an open block.
        let cell = txn::of(client);
        let implicit = {
            let mut st = txn::lock(&cell);
            if client.transaction_status() == TransactionStatus::Error {
                txn::fail(&mut st);
            }
            match &*st {
                txn::State::Open(o) | txn::State::Failed(o) if o.implicit => {
                    Some(std::mem::replace(&mut *st, txn::State::Idle))
                }
                _ => None,
            }
        };
        // The group's implicit block ends here: committed, or (after an error, already
        // reported) rolled back.
        if let Some(txn::State::Open(open)) = implicit {
            let pipeline = Pipeline::of(client);
            if !pipeline.is_empty() {
                pipeline.drain(client).await?;
            }
            let cancel = self.cancel_token(client);
            if let Err(e) = self.commit_block(open, cancel.as_ref()).await {
                if self.log_errors {
                    crate::error::log_client_error(
                        ClientTag::of(client),
                        Some("(the Sync of an implicit transaction)"),
                        &e,
                    );
                }
                if let PgWireError::UserError(info) = e {
                    client.feed(PgWireBackendMessage::ErrorResponse((*info).into())).await?;
                } else {
                    return Err(e);
                }
            }
        }
        client.set_transaction_status(txn::status(&cell));
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
        open_implicit_block(client, cmd);
        if cmd.pipelines() && matches!(*txn::lock(&txn::of(client)), txn::State::Idle) {
            let here = pipeline.is_empty();
            let who = self.log_errors.then(|| ClientTag::of(client));
            pipeline.push_result(self.submit(cmd, params, &portal.result_column_format, cancel, here, who)?);
        } else {
            {
                // Runs now: what is queued goes first.
                if !pipeline.is_empty() {
                    pipeline.drain(client).await?;
                }
                let resp = self
                    .run_in_session(client, cmd, params, &portal.result_column_format, cancel.as_ref())
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
            copy_may_start(client)?;
            copy::begin(client, c.clone());
            return Ok(Response::CopyIn(c.response()));
        }
        let params = decode_params(portal, cmd)?;
        let cancel = self.cancel_token(client);
        open_implicit_block(client, cmd);
        // Text-only results (SHOW, version()) ignore a binary request: their type is text,
        // whose binary form is the same bytes.
        self.run_in_session(client, cmd, params, &portal.result_column_format, cancel.as_ref())
            .await
    }
}

/// Whether COPY FROM STDIN may start: outside a transaction block (its rows are applied as
/// one transaction at CopyDone), or inside an open one that may write and has no schema
/// change waiting (its rows are then a statement of the block, [`Backend::copy_in_block`]).
/// In an aborted block, 25P02; a refusal inside a block aborts it.
fn copy_may_start<C: ClientInfo>(client: &C) -> PgWireResult<()> {
    let cell = txn::of(client);
    let mut st = txn::lock(&cell);
    let refused = match &*st {
        txn::State::Idle => return Ok(()),
        txn::State::Failed(_) => return Err(txn::aborted()),
        txn::State::Open(o) if o.read_only => {
            client_error("25006", "cannot execute COPY FROM in a read-only transaction")
        }
        txn::State::Open(o) if !o.ddl.is_empty() => client_error(
            "0A000",
            "tables cannot be read or written after a schema change in the same transaction block \
             (the change applies at COMMIT): COMMIT first",
        ),
        txn::State::Open(o) if o.statements.len() >= permafrost_executor::MAX_TXN_STATEMENTS => client_error(
            "54000",
            format!(
                "a transaction block may run at most {} statements; commit in smaller transactions",
                permafrost_executor::MAX_TXN_STATEMENTS
            ),
        ),
        txn::State::Open(_) => return Ok(()),
    };
    txn::fail(&mut st);
    Err(refused)
}

impl Backend {
    /// Ends a COPY FROM STDIN inside the connection's open block: its rows become a
    /// statement of the block (a bulk insert), run at once as a probe over the committed
    /// state and the block's earlier writes, and again at COMMIT with the rest, so they
    /// are stored with the block or not at all. Returns the number of rows.
    async fn copy_in_block<C: ClientInfo>(&self, client: &C, cancel: Option<&CancelToken>) -> PgWireResult<u64> {
        let cell = txn::of(client);
        let loaded = copy::finish(&self.db, client)?;
        if loaded.rows.is_empty() {
            return Ok(0);
        }
        // The block keeps every statement's parameters until it ends (and each later probe
        // runs them again): with a COPY's rows they may hold at most what one statement may.
        let size = |values: &[Value]| values.iter().map(permafrost_sql::exec::value_size).sum::<usize>();
        let held = match &*txn::lock(&cell) {
            txn::State::Open(o) => o.statements.iter().map(|s| size(&s.params)).sum::<usize>(),
            _ => return Err(txn::aborted()),
        };
        let limit = self.db.statement_memory();
        if held + size(&loaded.rows) > limit {
            return Err(client_error(
                "54000",
                format!(
                    "COPY {}: this transaction block would hold more than the {limit} bytes of rows one statement \
                     may (a quarter of memory_limit, at least 16 MiB); nothing was loaded: commit in smaller \
                     transactions",
                    loaded.table
                ),
            ));
        }
        let stmt = self
            .db
            .bulk_insert(&loaded.table, &loaded.columns)
            .map_err(|e| copy::not_loaded(&loaded.table, db_error(e)))?;
        let rows = self
            .probe_block(&stmt, loaded.rows.clone(), cancel, &cell)
            .await
            .map_err(|e| copy::not_loaded(&loaded.table, e))?;
        keep_in_block(&cell, stmt, loaded.rows, &rows, None);
        Ok(rows.affected)
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
        let cell = txn::of(client);
        let in_block = matches!(*txn::lock(&cell), txn::State::Open(_));
        let r = if in_block {
            let cancel = self.cancel_token(client);
            let r = self.copy_in_block(client, cancel.as_ref()).await;
            if r.is_err() {
                txn::fail(&mut txn::lock(&cell));
            }
            client.set_transaction_status(txn::status(&cell));
            r
        } else {
            copy::done(&self.db, client).await
        };
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
        copy::abandon(&self.db, client);
        // Inside a block the COPY's failure aborts it, as any statement's.
        let cell = txn::of(client);
        txn::fail(&mut txn::lock(&cell));
        client.set_transaction_status(txn::status(&cell));
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
    /// The handlers for one connection's loop ([`crate::pipeline`]): copies of its own,
    /// sharing the server's state. pgwire's `process_message` takes its handlers by value,
    /// so the loop clones them for every message (five reference counts up and down); the
    /// counts of the connection's own copies stay in its thread's cache, where those of
    /// the server's single handlers went back and forth between every connection thread's
    /// core (on 2 cores, sysbench oltp_read_write: those counts' share of the server's CPU
    /// time went from 0.78 % to 0.61 %; the shared line costs more the more cores share it).
    pub(crate) fn parts(&self) -> (Arc<Backend>, Arc<Startup>, Arc<CancelsOf>) {
        (
            Arc::new(Backend::clone(&self.backend)),
            Arc::new(Startup::clone(&self.startup)),
            Arc::new(CancelsOf(self.cancels.clone())),
        )
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

/// Adds a statement that ran in the connection's open block, with the fingerprint of what
/// it showed, to the block's list (what COMMIT runs and checks again).
fn keep_in_block(
    cell: &txn::Cell,
    stmt: permafrost_executor::AdHoc,
    params: Vec<Value>,
    rows: &Rows,
    window: Option<(u64, u64)>,
) {
    if let txn::State::Open(o) = &mut *txn::lock(cell) {
        o.statements.push(permafrost_executor::TxnStatement {
            stmt,
            params,
            digest: rows.digest(),
            seen: window.map(|w| w.0),
            done: window.map(|w| w.1),
        });
    }
}

/// Whether the connection's open block has a schema change waiting for COMMIT.
fn block_changed_schema(cell: &txn::Cell) -> bool {
    matches!(&*txn::lock(cell), txn::State::Open(o) if !o.ddl.is_empty())
}

/// A statement of an extended-protocol group that goes on past it, outside a block: the
/// group is one implicit transaction, committed at its Sync (crate::txn).
fn open_implicit_block<C: ClientInfo>(client: &C, cmd: &Command) {
    // (The mark is this Execute's: taken whatever the statement.)
    if txn::group_goes_on(client).take() && matches!(cmd, Command::Dml(_)) {
        let cell = txn::of(client);
        let mut st = txn::lock(&cell);
        if matches!(*st, txn::State::Idle) {
            *st = txn::State::Open(txn::Open::implicit());
        }
    }
}
