//! One request to the engine and its answer: what to run ([`Request::call`],
//! [`Request::statement`], [`Request::rows`]) with its parameters, how it may be stopped
//! ([`Request::stop`]), where it may run ([`Request::place`]) and how its rows come back
//! ([`Request::streamed`]); [`Database::submit`] hands it to its partitions and returns a
//! [`Pending`] answer, a future that a thread outside a runtime waits on with
//! [`Pending::wait`].
//!
//! ```text
//! Request ──submit──> route: one partition (by the partition parameter) or all
//!                     ├─ Place::Here and short and the partition free: run on this thread
//!                     └─ else queued to the partition's thread (or the multi-partition order)
//!         <──Pending── the one-shot answer (after the command log in sync mode)
//! ```
//!
//! A pipelining [`Session`](crate::Session) (session.rs) is the other way in: many calls from
//! one thread, batched per partition and answered by token.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use permafrost_sql::{Rows, SqlError};
use permafrost_types::Value;

use crate::database::{AdHoc, Database, ProcHandle};
use crate::error::{Error, Result};
use crate::partition::msg::MpWork;
pub use crate::partition::router::Place;
use crate::partition::router::{Dispatch, submit, submit_statement};
use crate::procedure::Procedure;
use crate::reply::{Reply, StopFlag};

/// What one request runs, with what, and how: built by [`Request::call`],
/// [`Request::statement`] or [`Request::rows`], then run by [`Database::submit`].
#[derive(Debug)]
pub struct Request {
    work: Work,
    params: Vec<Value>,
    stop: Option<StopFlag>,
    place: Place,
    streamed: bool,
}

#[derive(Debug)]
enum Work {
    /// A registered procedure, as one transaction.
    Call(Arc<Procedure>),
    /// An ad hoc statement, as its own transaction.
    Statement(AdHoc),
    /// Rows inserted into a table as one transaction over all partitions (COPY FROM): the
    /// parameters are the rows' values, one row after the other.
    Rows { table: String, columns: Vec<String> },
}

impl Request {
    /// A call of a procedure looked up once ([`Database::procedure`]).
    pub fn call(procedure: &ProcHandle, params: Vec<Value>) -> Request {
        Request::new(Work::Call(procedure.proc.clone()), params)
    }

    /// An ad hoc statement planned once ([`Database::ad_hoc`]), run as its own transaction
    /// at the one partition its parameters pin, else at all partitions. A plan made
    /// before a schema change is planned again against the current catalog.
    pub fn statement(statement: &AdHoc, params: Vec<Value>) -> Request {
        Request::new(Work::Statement(statement.clone()), params)
    }

    /// Inserts rows into `table` as one transaction over all partitions: every row is
    /// stored, or (on any error: a constraint, the memory budget, a shutdown) none is.
    /// `rows` holds the values of `columns` for each row, one row after the other;
    /// columns left out get their defaults. The answer's `affected` is the number of rows
    /// inserted. This is what COPY FROM runs.
    pub fn rows(table: &str, columns: &[String], rows: Vec<Value>) -> Request {
        let work = Work::Rows {
            table: table.to_string(),
            columns: columns.to_vec(),
        };
        Request::new(work, rows)
    }

    fn new(work: Work, params: Vec<Value>) -> Request {
        Request {
            work,
            params,
            stop: None,
            place: Place::Partition,
            streamed: false,
        }
    }

    /// Lets the caller stop the request with `stop` (a cancel request, a statement
    /// timeout, a client gone): its statements stop at their next look, the transaction
    /// rolls back and the answer is 57014; a request that committed first answers with its
    /// result.
    pub fn stop(mut self, stop: StopFlag) -> Request {
        self.stop = Some(stop);
        self
    }

    /// Where the request may run (by default on its partition's thread).
    pub fn place(mut self, place: Place) -> Request {
        self.place = place;
        self
    }

    /// The answer of a scan that reached evicted data comes back with its first rows, and
    /// the caller reads the rest with [`Rows::take_rest`] (a [`permafrost_sql::MoreRows`],
    /// which blocks while it reads blocks and stops with the request's stop flag). Without
    /// this, the answer holds every row: the rest is read before it is given, within one
    /// statement's working memory (54000 past it).
    pub fn streamed(mut self) -> Request {
        self.streamed = true;
        self
    }
}

/// The answer to a submitted request: a future of its rows, or [`Pending::wait`] on a
/// thread outside a runtime. Dropping it tells the engine nobody waits any more: a
/// transaction still running may stop.
#[must_use = "a request's answer says whether it committed"]
pub struct Pending {
    state: State,
    /// The limit within which the rest of a scan is read before the answer is given; `None`
    /// for a streamed request.
    whole: Option<usize>,
}

enum State {
    Waiting(tokio::sync::oneshot::Receiver<Result<Rows>>),
    Refused(Option<Error>),
}

impl Pending {
    /// Blocks this thread until the answer comes (not to be called within an async runtime).
    pub fn wait(self) -> Result<Rows> {
        let rows = match self.state {
            State::Waiting(rx) => rx.blocking_recv().unwrap_or(Err(Error::Shutdown))?,
            State::Refused(e) => return Err(e.unwrap_or(Error::Shutdown)),
        };
        whole(rows, self.whole)
    }
}

impl Future for Pending {
    type Output = Result<Rows>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Rows>> {
        let limit = self.whole;
        match &mut self.state {
            State::Refused(e) => Poll::Ready(Err(e.take().unwrap_or(Error::Shutdown))),
            // A scan's evicted rest is read here (this waits for block reads).
            State::Waiting(rx) => Pin::new(rx)
                .poll(cx)
                .map(|answer| whole(answer.unwrap_or(Err(Error::Shutdown))?, limit)),
        }
    }
}

/// The rows of an answer, their rest read into them when `limit` says so.
fn whole(rows: Rows, limit: Option<usize>) -> Result<Rows> {
    match limit {
        Some(limit) => crate::scan::complete(rows, limit),
        None => Ok(rows),
    }
}

impl Database {
    /// Hands `request` to its partitions; the answer comes through the returned
    /// [`Pending`]. The partition threads are never blocked on the caller: many requests
    /// may be in flight.
    pub fn submit(&self, request: Request) -> Pending {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reply = match request.stop {
            Some(stop) => Reply::Stoppable(tx, stop),
            None => Reply::Oneshot(tx),
        };
        let place = request.place;
        let shared = self.shared();
        let submitted = match request.work {
            Work::Call(proc) => {
                let dispatch = match place {
                    Place::Here => Dispatch::Inline,
                    Place::Partition => Dispatch::Queue,
                };
                submit(shared, &proc, request.params, reply, dispatch).map(|_| ())
            }
            Work::Statement(stmt) => self
                .current_plan(stmt)
                .and_then(|proc| submit_statement(shared, proc, request.params, reply, place)),
            Work::Rows { table, columns } => self.insert_rows(&table, &columns, request.params, reply),
        };
        Pending {
            state: match submitted {
                Ok(()) => State::Waiting(rx),
                Err(e) => State::Refused(Some(e)),
            },
            whole: (!request.streamed).then(|| self.statement_memory()),
        }
    }

    /// Calls a procedure by name and waits for its result: a shorthand for
    /// [`Request::call`] of [`Database::procedure`], submitted and waited for.
    pub fn call(&self, name: &str, params: Vec<Value>) -> Result<Rows> {
        let h = self.procedure(name)?;
        self.submit(Request::call(&h, params)).wait()
    }

    /// Runs one SQL statement as its own transaction and waits for the result. DDL is
    /// applied as by [`Database::execute_ddl`]; other statements are planned
    /// ([`Database::ad_hoc`]) and run as [`Request::statement`].
    pub fn execute_sql(&self, sql: &str, params: Vec<Value>) -> Result<Rows> {
        if permafrost_sql::ddl_text::is_alter_sequence(sql) {
            self.execute_ddl(sql)?;
            return Ok(Rows::default());
        }
        // A loader's long INSERT of listed rows, planned a chunk of rows at a time.
        if let Some(prepared) = permafrost_sql::long_insert::prepare_long_insert(&self.catalog(), sql) {
            return self.submit(Request::statement(&self.ad_hoc(prepared), params)).wait();
        }
        let prepared = permafrost_sql::limits::with_stack_for(sql, || -> Result<_> {
            let stmts = permafrost_sql::parse::parse_statements(sql)?;
            let stmt = match stmts.as_slice() {
                [one] => one,
                [] => return Err(SqlError::Syntax("syntax error: empty statement".into()).into()),
                _ => return Err(SqlError::Syntax("syntax error: execute one statement at a time".into()).into()),
            };
            if permafrost_sql::ddl::is_ddl(stmt) {
                return Ok(None);
            }
            Ok(Some(permafrost_sql::prepare_statement(&self.catalog(), stmt, sql)?))
        })?;
        let Some(prepared) = prepared else {
            self.execute_ddl(sql)?;
            return Ok(Rows::default());
        };
        self.submit(Request::statement(&self.ad_hoc(prepared), params)).wait()
    }

    /// The plan of an ad hoc statement against the current catalog: its own (moved out,
    /// no reference count touched), or planned again after a schema change.
    fn current_plan(&self, stmt: AdHoc) -> Result<Arc<Procedure>> {
        let state = self.shared().schema.load();
        if Arc::ptr_eq(&state.catalog, &stmt.catalog) {
            Ok(stmt.proc)
        } else {
            Ok(Arc::new(stmt.proc.replan(&state.catalog)?))
        }
    }

    /// Submits [`Request::rows`]: the bulk insert over all partitions.
    fn insert_rows(&self, table: &str, columns: &[String], rows: Vec<Value>, reply: Reply) -> Result<()> {
        if columns.is_empty() || !rows.len().is_multiple_of(columns.len()) {
            return Err(Error::Internal(format!(
                "{} values are not rows of {} columns",
                rows.len(),
                columns.len()
            )));
        }
        let stmt = self.bulk_insert(table, columns)?;
        let work = MpWork::Call {
            proc: stmt.proc,
            params: rows.into(),
            restarts: 0,
            replay: None,
        };
        self.shared().submit_mp(work, self.shared().all_partitions(), reply)
    }
}
