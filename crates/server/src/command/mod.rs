//! What a client's statement is: each statement is classified once ([`Command`]), when it
//! is parsed (simple query) or prepared (extended query, [`Parser`]). DML and queries are
//! planned then and the plan is kept with the prepared statement, so executing it again
//! costs no parsing or planning (the executor plans again only if the schema changed in
//! between).

use std::sync::Arc;

use async_trait::async_trait;
use permafrost_executor::{AdHoc, Database, ProcHandle, StatementKind};
use permafrost_sql::scan::StatementText;
use permafrost_sql::shape::ConstantKind;
use permafrost_types::{Numeric, Value};
use pgwire::api::portal::Format;
use pgwire::api::results::FieldInfo;
use pgwire::api::stmt::QueryParser;
use pgwire::api::{ClientInfo, Type};
use pgwire::error::PgWireResult;
use sqlparser::ast::{self, Statement};

use crate::copy::{self, CopyCommand};
use crate::error::{client_error, db_error, sql_error, sql_error_in};
use crate::metrics::StatementClass;
use crate::pg_types::{columns_of, fields, pg_type};

pub(crate) mod classify;

/// Where a statement runs ([`Command::route`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// BEGIN, COMMIT, ROLLBACK and savepoints: they open, end or change the block.
    Block,
    /// Inside a block or outside one alike (TRUNCATE, cursors, EXECUTE, catalog queries);
    /// an error aborts the block.
    Either,
    /// Answered by the session alone (its settings, prepared statements, cursors; VACUUM
    /// and ANALYZE have nothing to do), inside a block too.
    Session,
    /// The engine: outside a block on its own, inside one as the block's statement (where
    /// a block allows it).
    Engine,
}

/// A DML statement or query, planned.
#[derive(Debug)]
pub struct DmlCommand {
    pub(crate) stmt: AdHoc,
    pub(crate) params: Vec<Type>,
    pub(crate) columns: Vec<(String, Type)>,
    pub(crate) kind: StatementKind,
    pub(crate) read_only: bool,
    /// Its text may read the clock (`now()` and its kin), whose value inside a transaction
    /// block is the block's start ([`mentions_clock`]; found once, when it is prepared).
    pub(crate) reads_clock: bool,
}

/// One argument of a CALL: a constant or a parameter of the statement.
#[derive(Debug, Clone)]
pub(crate) enum CallArg {
    Value(Value),
    Param(usize),
}

/// What a CALL runs.
#[derive(Debug, Clone)]
pub(crate) enum CallTarget {
    Procedure(ProcHandle),
    Builtin(Builtin),
}

/// Procedures every server has (schema `permafrost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    /// `permafrost.evict(bytes)`: an eviction round of about `bytes` at every partition.
    Evict,
    /// `permafrost.stats()`: the figures of `/metrics` as rows.
    Stats,
    /// `permafrost.procedures()`: the procedures and their signatures.
    Procedures,
}

impl Builtin {
    pub(crate) fn lookup(name: &str) -> Option<Builtin> {
        match name {
            "permafrost.evict" => Some(Builtin::Evict),
            "permafrost.stats" => Some(Builtin::Stats),
            "permafrost.procedures" => Some(Builtin::Procedures),
            _ => None,
        }
    }

    pub(crate) fn signature(self) -> Vec<Type> {
        match self {
            Builtin::Evict => vec![Type::INT8],
            Builtin::Stats | Builtin::Procedures => vec![],
        }
    }

    pub(crate) fn columns(self) -> Vec<(String, Type)> {
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

pub(crate) fn stats_columns() -> Vec<(String, Type)> {
    vec![
        ("name".into(), Type::TEXT),
        ("labels".into(), Type::TEXT),
        ("value".into(), Type::FLOAT8),
    ]
}

/// A CALL, resolved.
#[derive(Debug)]
pub struct CallCommand {
    pub(crate) target: CallTarget,
    pub(crate) args: Vec<CallArg>,
    /// Types of the statement's parameters (from the procedure's signature).
    pub(crate) params: Vec<Type>,
    pub(crate) columns: Vec<(String, Type)>,
}

impl CallCommand {
    /// The procedure's arguments: constants, and the statement's bound parameters.
    pub(crate) fn bind_args(&self, params: &[Value]) -> PgWireResult<Vec<Value>> {
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

/// An argument of EXECUTE: a constant, as it is written (None: NULL).
pub type ExecuteArg = Option<(permafrost_sql::shape::ConstantKind, String)>;

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
    /// A query on the system catalogs as relations (crate::syscat).
    System(Arc<crate::syscat::SystemQuery>),
    /// The server's figures (`SHOW permafrost_stats`, `SELECT * FROM permafrost_stats`).
    Stats,
    /// SET or RESET of a session setting (crate::session_settings).
    Set(crate::session_settings::SetStatement),
    /// `SELECT set_config('name', 'value', false)`: SET, answered with the value in effect.
    SetConfig(crate::session_settings::SetStatement),
    /// SHOW a setting.
    Show(String),
    /// `SHOW ALL`.
    ShowAll,
    /// `DISCARD ALL` (true) or `DISCARD PLANS | SEQUENCES | TEMP` (false: nothing of
    /// theirs is kept per session here).
    Discard(bool),
    /// `DEALLOCATE [PREPARE] name` (None: ALL).
    Deallocate(Option<String>),
    /// `PREPARE name [(types)] AS statement`: the statement, planned now, kept by name for
    /// the session (with the parameter types declared, else inferred).
    Prepare {
        name: String,
        cmd: Arc<Command>,
        types: Vec<Type>,
    },
    /// `EXECUTE name [(constants)]`: runs a statement PREPAREd by name. Under `EXPLAIN
    /// [ANALYZE] [(options)]` (`explain`, that statement with the EXECUTE in it), runs the
    /// EXPLAIN of the prepared statement instead, with those values.
    Execute {
        name: String,
        args: Vec<ExecuteArg>,
        explain: Option<Box<sqlparser::ast::Statement>>,
    },
    /// `VACUUM` (true) or `ANALYZE` (false) of tables that exist: nothing else to do here
    /// ([`maintenance`]).
    Maintenance(bool),
    /// A statement with nothing to do here, with its command tag: `UNLISTEN` (nothing
    /// listens; poolers and drivers send it to clean a connection), and `OWNER TO` and
    /// `GRANT`, which give what every client holds (permafrost_sql::privileges).
    /// With the NOTICE it sends (`IF EXISTS` of a missing object).
    Release(&'static str, Option<String>),
    /// `DECLARE name [BINARY] [NO SCROLL] CURSOR [WITH[OUT] HOLD] FOR query`: the query runs
    /// now (inside the block, as its statements do) and its rows wait for FETCH.
    Declare {
        name: String,
        query: Arc<Command>,
        hold: bool,
    },
    /// `FETCH` / `MOVE [FORWARD] [n | ALL | NEXT] [FROM | IN] name` (`count` None: all).
    Fetch {
        name: String,
        count: Option<u64>,
        moving: bool,
    },
    /// `CLOSE name` / `CLOSE ALL` (None).
    CloseCursor(Option<String>),
    /// `TRUNCATE [TABLE] t1, t2 [CONTINUE IDENTITY] [CASCADE | RESTRICT]`: the rows of each
    /// table deleted, in one transaction (a `DELETE FROM` each; sequences continue).
    Truncate(Vec<Arc<DmlCommand>>),
    /// `SELECT version()`.
    Version,
    /// `BEGIN` / `START TRANSACTION`: opens an interactive transaction (crate::txn).
    Begin { read_only: bool },
    /// `COMMIT` / `END`.
    Commit,
    /// `ROLLBACK` / `ABORT`.
    Rollback,
    /// `SAVEPOINT`, `ROLLBACK TO SAVEPOINT`, `RELEASE SAVEPOINT`.
    Savepoint(crate::txn::Savepoint),
    /// `CHECKPOINT`: take a snapshot now and answer once it is durable.
    Checkpoint,
}

impl Command {
    pub(crate) fn class(&self) -> StatementClass {
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
    pub(crate) fn pipelines(&self) -> bool {
        match self {
            // (Not one that calls a sequence function: what it reads or notes of the
            // session's sequences follows the statements before it.)
            Command::Dml(d) => {
                let p = d.stmt.prepared();
                !p.draws_sequences() && !p.reads_session_sequences()
            }
            Command::Call(c) => matches!(c.target, CallTarget::Procedure(_)),
            _ => false,
        }
    }

    /// Where it runs (handler/route.rs follows this): the one list of every variant's
    /// route.
    pub(crate) fn route(&self) -> Route {
        match self {
            Command::Begin { .. } | Command::Commit | Command::Rollback | Command::Savepoint(_) => Route::Block,
            Command::Truncate(_)
            | Command::Declare { .. }
            | Command::Fetch { .. }
            | Command::Execute { .. }
            | Command::System(_) => Route::Either,
            Command::Set(_)
            | Command::SetConfig(_)
            | Command::Prepare { .. }
            | Command::CloseCursor(_)
            | Command::Show(_)
            | Command::ShowAll
            | Command::Discard(_)
            | Command::Deallocate(_)
            | Command::Release(..)
            | Command::Maintenance(_) => Route::Session,
            Command::Dml(_)
            | Command::Ddl { .. }
            | Command::CreateProcedure(_)
            | Command::DropProcedure(_)
            | Command::Call(_)
            | Command::Copy(_)
            | Command::CopyOut(_)
            | Command::Stats
            | Command::Version
            | Command::Checkpoint => Route::Engine,
        }
    }

    /// The statement's text, when it is kept (queries and DML).
    pub(crate) fn sql(&self) -> Option<&str> {
        match self {
            Command::Dml(d) => Some(&d.stmt.prepared().sql),
            Command::Ddl { sql, .. } | Command::CreateProcedure(sql) | Command::DropProcedure(sql) => Some(sql),
            _ => None,
        }
    }

    pub(crate) fn param_types(&self) -> Vec<Type> {
        match self {
            Command::Dml(d) => d.params.clone(),
            Command::Call(c) => c.params.clone(),
            // As the text compares them, else text (crate::syscat).
            Command::System(q) => q.params.clone(),
            Command::Declare { query, .. } => query.param_types(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn columns(&self) -> Vec<(String, Type)> {
        match self {
            Command::Dml(d) => d.columns.clone(),
            Command::Call(c) => c.columns.clone(),
            Command::Version => vec![("version".into(), Type::TEXT)],
            Command::SetConfig(_) => vec![("set_config".into(), Type::TEXT)],
            // (Named as the setting is spelled, as PostgreSQL names it: `TimeZone`.)
            Command::Show(name) => {
                let n = name.to_ascii_lowercase();
                let spelled = crate::session_settings::setting(&n).map_or(n, |s| s.spelled.to_string());
                vec![(spelled, Type::TEXT)]
            }
            Command::ShowAll => vec![
                ("name".into(), Type::TEXT),
                ("setting".into(), Type::TEXT),
                ("description".into(), Type::TEXT),
            ],
            Command::Stats => stats_columns(),
            Command::System(q) => q.columns.clone(),
            _ => Vec::new(),
        }
    }
}
