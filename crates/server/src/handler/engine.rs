//! Statements handed to the engine: submitted to their partitions (a future the
//! connection awaits, or a pipelined submission), stopped by a cancel request, the
//! statement timeout or the client going away, and recorded in the metrics.

use super::*;

impl Backend {
    /// Runs a schema change off the I/O threads (it waits for every partition); the
    /// database records it in its schema log when it takes effect.
    pub(super) async fn schema_change<T: Send + 'static>(
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

    /// A CALL's answer: the rows of its procedure's last statement (in a block or out).
    pub(super) fn call_rows(
        &self,
        rows: Rows,
        c: &crate::command::CallCommand,
        format: &Format,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<Response> {
        let zone = cancel.and_then(CancelToken::zone);
        respond(rows, &c.columns, None, format, None, self.db.statement_pool(), zone)
    }

    pub(super) async fn run(
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
    /// `place`: [`Place::Here`] when the connection has nothing else in flight, so that a
    /// short statement may run on this thread when its partition is free.
    pub(super) fn submit(
        &self,
        cmd: &Command,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<CancelToken>,
        place: Place,
        who: Option<ClientTag>,
    ) -> PgWireResult<PendingResult> {
        let started = Instant::now();
        let metrics = self.metrics.clone();
        let class = cmd.class();
        let format = format.clone();
        let pool = self.db.statement_pool().clone();
        let fut: PendingResult = match cmd {
            Command::Dml(d) => {
                let stop = crate::session::stop_flag(cancel.as_ref(), false);
                let fut = self.db.submit(
                    Request::statement(&d.stmt, params)
                        .stop(stop.clone())
                        .place(place)
                        .streamed(),
                );
                let d = d.clone();
                Box::pin(async move {
                    // As in `run_inner`.
                    let rows = match &cancel {
                        Some(c) => c.run_stoppable(&stop, fut).await?,
                        None => fut.await,
                    };
                    let watch = cancel.map(|c| (c, started));
                    let zone = stop.zone().cloned();
                    let r = rows.map_err(db_error).and_then(|rows| {
                        respond(
                            rows,
                            &d.columns,
                            Some(d.kind),
                            &format,
                            Some((stop, watch)),
                            &pool,
                            zone,
                        )
                    });
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
                let stop = crate::session::stop_flag(cancel.as_ref(), false);
                let fut = self
                    .db
                    .submit(Request::call(h, args).stop(stop.clone()).place(place).streamed());
                let c = c.clone();
                Box::pin(async move {
                    let rows = match &cancel {
                        Some(t) => t.run_stoppable(&stop, fut).await?,
                        None => fut.await,
                    };
                    let r = rows
                        .map_err(db_error)
                        .and_then(|rows| respond(rows, &c.columns, None, &format, None, &pool, stop.zone().cloned()));
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

    pub(super) async fn run_inner(
        &self,
        cmd: &Command,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<Response> {
        match cmd {
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
                vec![vec![Some(crate::session_settings::version_text())]],
                format,
            ),
            Command::Stats => self.stats_response(format).await,
            Command::Ddl { sql, tag } => {
                // (Marked with the session's zone, in which its literals are read, when it
                // is not UTC: the logs keep it.)
                let sql = permafrost_sql::ddl_text::in_zone(sql, cancel.and_then(CancelToken::zone).as_ref());
                self.schema_change(&sql, |db, s| db.execute_ddl(s)).await?;
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
                respond(
                    rows,
                    &d.columns,
                    Some(d.kind),
                    format,
                    Some(stop),
                    self.db.statement_pool(),
                    cancel.and_then(CancelToken::zone),
                )
            }
            Command::Call(c) => {
                let args = c.bind_args(&params)?;
                match &c.target {
                    CallTarget::Procedure(h) => {
                        // Nothing else of this connection is in flight.
                        let (rows, _) =
                            stoppable(|stop| self.db.submit(here(Request::call(h, args), stop)), cancel).await?;
                        self.call_rows(rows, c, format, cancel)
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
            // (Command::route sends every other statement elsewhere.)
            _ => Err(client_error("XX000", "internal error: not a statement for the engine")),
        }
    }

    /// Runs a statement that a cancel request or the statement timeout stops (rolled back:
    /// 57014; one that committed first answers as it would have). Returns its rows and
    /// what stops the rest of them, if they stream.
    pub(super) async fn run_stoppable(
        &self,
        stmt: &AdHoc,
        params: Vec<Value>,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<(Rows, (StopFlag, Option<(CancelToken, Instant)>))> {
        // Nothing else of this connection is in flight: a point statement may run here.
        stoppable(
            |stop| self.db.submit(here(Request::statement(stmt, params), stop)),
            cancel,
        )
        .await
    }
}

/// Runs a statement's future, stopped by a cancel request, the statement timeout or the
/// client going away.
pub(super) async fn run_with(
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

/// A request of a connection that has nothing else in flight (so it may run on this
/// thread), stopped by `stop`, its rows streamed to the client.
pub(super) fn here(request: Request, stop: StopFlag) -> Request {
    request.stop(stop).place(Place::Here).streamed()
}

/// Runs what `start` submits with a stop flag that a cancel request, the statement
/// timeout or the client going away sets (the statement rolls back: 57014; one that
/// committed first answers as it would have). Returns its rows and what stops the rest of
/// them, if they stream.
pub(super) async fn stoppable<F>(
    start: impl FnOnce(StopFlag) -> F,
    cancel: Option<&CancelToken>,
) -> PgWireResult<(Rows, (StopFlag, Option<(CancelToken, Instant)>))>
where
    F: Future<Output = permafrost_executor::Result<Rows>>,
{
    let started = Instant::now();
    let stop = crate::session::stop_flag(cancel, false);
    let fut = start(stop.clone());
    let rows = match cancel {
        Some(c) => c.run_stoppable(&stop, fut).await?,
        None => fut.await,
    }
    .map_err(db_error)?;
    Ok((rows, (stop, cancel.map(|c| (c.clone(), started)))))
}
