//! The protocol handlers: what a client's statement does. Both query protocols share one
//! classification of statements ([`Command`], command/) and one way of running them
//! ([`Backend`]); results become messages in respond.rs; the connection loop that calls
//! these handlers is connection.rs.
//!
//! A statement's path through this folder, in order:
//! - `simple.rs` (Query) or `extended.rs` (Parse, Bind, Describe, Execute, Close, Sync)
//!   take it from the client;
//! - `route.rs` (`run_in_session`) is the one place a [`Command`] is routed: to the
//!   session, to the transaction block, or to the engine;
//! - `session_statements.rs` answers what the session knows alone (SET, SHOW, DISCARD,
//!   PREPARE, the catalogs, the server's figures), `cursor.rs` DECLARE and FETCH;
//! - `block.rs` runs a statement inside BEGIN ... COMMIT (probes, COMMIT, DDL waiting
//!   for COMMIT, implicit blocks), `engine.rs` one outside a block (submitted to its
//!   partitions, stoppable, measured);
//! - `copy_in.rs` takes COPY FROM STDIN's rows and ends it.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use permafrost_executor::{AdHoc, Database, Place, Request, Rows, StopFlag};
use permafrost_sql::scan::StatementText;
use permafrost_types::Value;
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

use crate::command::classify::{Parser, classify_statement, classify_statement_in};
use crate::command::{Builtin, CallTarget, Command, stats_columns};
use crate::copy::{self};
use crate::error::{ClientTag, client_error, db_error, sql_error};
use crate::metrics::{Outcome, ServerMetrics, StatementClass};
use crate::pg_types::decode_param;
use crate::pipeline::{PendingResult, Pipeline, write_response};
use crate::plancache::{Lookup, PlanCache};
use crate::prepared::{no_statement, prepared_names, sql_prepared, statement_memory, statement_size};
use crate::respond::{respond, respond_copy_out, text_rows};
use crate::session::{CancelToken, Cancels, CancelsOf, Startup};
use crate::session_settings::{self as settings, SetStatement};
use crate::txn;

mod block;
mod copy_in;
mod cursor;
mod engine;
mod extended;
mod route;
mod session_statements;
mod simple;

/// Sends a warning (a NoticeResponse of severity WARNING) to the client.
pub(super) async fn warn<C>(client: &mut C, code: &str, message: &str) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    send_notice(client, "WARNING", code, message).await
}

/// Sends a NoticeResponse of `severity` (WARNING, NOTICE) to the client, unless its
/// `client_min_messages` asks only for more severe ones.
pub(super) async fn send_notice<C>(client: &mut C, severity: &str, code: &str, message: &str) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if !settings::of(client).sends(severity) {
        return Ok(());
    }
    let info = ErrorInfo::new(severity.to_owned(), code.to_owned(), message.to_owned());
    client.feed(PgWireBackendMessage::NoticeResponse(info.into())).await?;
    Ok(())
}

/// How a statement ended, for the metrics.
pub(super) fn outcome_of<T>(r: &PgWireResult<T>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(PgWireError::UserError(e)) => Outcome::error(e.code.clone()),
        Err(_) => Outcome::error("XX000"),
    }
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
    /// The row locks of the connections' transaction blocks (FOR UPDATE / FOR SHARE).
    locks: Arc<crate::row_locks::RowLocks>,
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
            locks: Arc::default(),
        }
    }

    /// Logs the errors clients are answered with.
    pub fn with_error_log(mut self, on: bool) -> Backend {
        self.log_errors = on;
        self
    }

    pub(crate) fn db(&self) -> &Arc<Database> {
        &self.db
    }

    /// Whether errors are logged.
    pub(crate) fn logs_errors(&self) -> bool {
        self.log_errors
    }

    pub(super) fn cancel_token<C: ClientInfo>(&self, client: &C) -> Option<CancelToken> {
        self.cancels.token(client)
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
    /// The handlers for one connection's loop ([`crate::connection`]): copies of its own,
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
