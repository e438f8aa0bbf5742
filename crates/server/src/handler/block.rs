//! The transaction block (BEGIN ... COMMIT): a statement inside it runs at once as a probe
//! over the committed state and the block's earlier writes, and again with all of them at
//! COMMIT (crate::txn); an extended-protocol group that goes on past a statement is an
//! implicit block; DDL in a block waits for COMMIT.

use permafrost_executor::NewStatement;
use permafrost_sql::MoreRows;

use super::engine::run_with;
use super::*;

impl Backend {
    /// Commits an open block: its statements at one point of the serial order, each
    /// checked against what its client was shown, then its schema changes.
    pub(super) async fn commit_block(&self, open: txn::Open, cancel: Option<&CancelToken>) -> PgWireResult<()> {
        let started = Instant::now();
        let stop = crate::session::stop_flag(cancel, false);
        // Nothing else of this connection is in flight (a pipeline is drained before a
        // COMMIT or a Sync that ends a block): the commit may run on this thread.
        let r = match open.draft() {
            // Schema changes (and the statements after them): one transaction, applied
            // off the connection's thread (it takes the schema lock).
            Some(draft) => {
                let (draft, statements, now) = (draft.clone(), open.statements.clone(), open.now);
                self.schema_change("", move |db, _| db.commit_draft(&draft, &statements, now, stop))
                    .await
            }
            None => {
                let fut = self
                    .db
                    .commit_interactive(&open.statements, open.now, stop.clone(), Place::Here);
                match cancel {
                    Some(c) => c.run_stoppable(&stop, fut).await,
                    None => Ok(fut.await),
                }
                .and_then(|r| r.map_err(db_error))
            }
        };
        let class = if !open.wrote() {
            StatementClass::Query
        } else {
            StatementClass::Write
        };
        self.metrics.record(class, started.elapsed(), outcome_of(&r));
        r
    }

    /// TRUNCATE: inside a block each of its DELETEs as a statement of the block; outside,
    /// all of them as one transaction.
    pub(super) async fn truncate(
        &self,
        deletes: &[Arc<crate::command::DmlCommand>],
        format: &Format,
        cancel: Option<&CancelToken>,
        cell: &Arc<txn::Cell>,
    ) -> PgWireResult<Response> {
        if matches!(*txn::lock(cell), txn::State::Open(_)) {
            // Inside a block: each DELETE as the block's statement.
            for d in deletes {
                self.probe(d, Vec::new(), format, cancel, cell).await?;
            }
        } else {
            // Outside: all of them as one transaction.
            let stop = crate::session::stop_flag(cancel, false);
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

    /// A schema change inside a transaction block: planned now against the schema as the
    /// block's earlier changes leave it, applied with the block's statements (crate::txn).
    pub(super) async fn block_ddl(&self, sql: &str, tag: &str, cell: &txn::Cell) -> PgWireResult<Response> {
        let (after, at) = {
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
            (o.draft().cloned(), o.statements.len())
        };
        let draft = self
            .schema_change(sql, move |db, sql| {
                let draft = db.draft_ddl(after.as_deref(), at, sql)?;
                if at > 0 {
                    // The block's statements run with its changes, in one transaction.
                    draft.check_runnable()?;
                }
                Ok(draft)
            })
            .await?;
        if let txn::State::Open(o) = &mut *txn::lock(cell) {
            o.ddl.push(sql.to_string());
            o.drafts.push(Arc::new(draft));
        }
        Ok(Response::Execution(Tag::new(tag)))
    }

    /// A query string of several DML statements and queries, outside a block: one
    /// transaction, as PostgreSQL's implicit one (all applied, or none). `None` when a
    /// statement is of another kind (or does not plan): then they run one by one.
    pub(super) async fn implicit_block(
        &self,
        texts: &[StatementText<'_>],
        cancel: Option<&CancelToken>,
    ) -> Option<Vec<Response>> {
        let mut dmls = Vec::with_capacity(texts.len());
        for t in texts {
            match classify_statement(&self.db, t) {
                Ok(Command::Dml(d)) => dmls.push(d),
                _ => return None,
            }
        }
        let started = Instant::now();
        let stop = crate::session::stop_flag(cancel, false);
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
                cancel.and_then(CancelToken::zone),
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
    pub(super) async fn probe(
        &self,
        d: &Arc<crate::command::DmlCommand>,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
        cell: &Arc<txn::Cell>,
    ) -> PgWireResult<Response> {
        let started = Instant::now();
        let r = self
            .probe_rows(d, params, cancel, cell)
            .await
            .and_then(|(rows, watch)| {
                respond(
                    rows,
                    &d.columns,
                    Some(d.kind),
                    format,
                    watch,
                    self.db.statement_pool(),
                    cancel.and_then(CancelToken::zone),
                )
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

    /// [`Backend::probe`]'s statement run and kept in the block: its rows (a rest
    /// streamed after them completes the fingerprint the COMMIT checks) and what stops
    /// that rest.
    async fn probe_rows(
        &self,
        d: &Arc<crate::command::DmlCommand>,
        params: Vec<Value>,
        cancel: Option<&CancelToken>,
        cell: &Arc<txn::Cell>,
    ) -> PgWireResult<(Rows, Option<(StopFlag, Option<(CancelToken, Instant)>)>)> {
        let (block, wrote, read_only, n, draft) = match &*txn::lock(cell) {
            txn::State::Open(o) => (o.id, o.wrote(), o.read_only, o.statements.len(), o.draft().cloned()),
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
        // A locking read first takes its row locks, waiting for the blocks that hold them
        // (docs/architecture/interactive.md, "Row locks").
        let targets = d.stmt.prepared().lock_targets(&params);
        if !targets.is_empty() {
            self.take_locks(block, &targets, cancel, cell).await?;
        }
        // Read before the statement is submitted: COMMIT need not run a query again whose
        // rows no later commit changed (`TxnStatement::seen`).
        let seen = self.db.write_clock();
        // A query before the block's first write sees the committed state only: it runs as
        // an ordinary statement (its plan cached, no procedure to build) unless its result
        // depends on the block's clock: then it runs as a probe. Its evicted rows and
        // what it spilled stream after it as outside a block; the fingerprint the COMMIT
        // checks is completed as they pass ([`Fingerprinted`]).
        let mut rows = None;
        let mut stop = None;
        if !wrote && d.read_only && !d.reads_clock && draft.is_none() {
            let flag = crate::session::stop_flag(cancel, true);
            stop = Some(flag.clone());
            let stop = flag;
            // A read of every partition runs one partition at a time (the COMMIT checks
            // it at one point), else as one statement.
            let got = match self.db.read_in_parts(&d.stmt, params.clone(), stop.clone()) {
                Some(fut) => run_with(cancel, &stop, fut).await,
                None => {
                    let fut = self.db.submit(super::engine::here(
                        Request::statement(&d.stmt, params.clone()),
                        stop.clone(),
                    ));
                    run_with(cancel, &stop, fut).await
                }
            };
            rows = Some(got);
        }
        let rows = match rows {
            Some(r) => r,
            None => self.probe_block(&d.stmt, params.clone(), cancel, cell).await,
        };
        rows.map(|mut rows| {
            // And after it: what a COMMIT placed earlier knows of when it read.
            let done = self.db.write_clock();
            let rest = rows.take_rest();
            keep_in_block(cell, d.stmt.clone(), params, &rows, Some((seen, done)));
            if let Some(rest) = rest {
                let mut digest = permafrost_sql::Digest::default();
                digest.add(&rows);
                rows.set_rest(Box::new(Fingerprinted {
                    rest,
                    first: digest.finish(),
                    digest,
                    cell: cell.clone(),
                    block,
                    statement: n,
                }));
            }
            let watch = stop.map(|s| (s, cancel.map(|c| (c.clone(), started))));
            (rows, watch)
        })
    }

    /// Takes row locks for block `block` (crate::row_locks), the wait stoppable like a
    /// statement; the block holds them from then on ([`txn::Open::locks`]).
    async fn take_locks(
        &self,
        block: u64,
        targets: &[permafrost_sql::LockTarget],
        cancel: Option<&CancelToken>,
        cell: &Arc<txn::Cell>,
    ) -> PgWireResult<()> {
        let wait = async { Ok::<_, permafrost_executor::Error>(self.locks.acquire(block, targets).await) };
        match cancel {
            Some(c) => c
                .run_stoppable(&crate::session::stop_flag(cancel, true), wait)
                .await?
                .map_err(db_error)??,
            None => wait.await.map_err(db_error)??,
        }
        match &mut *txn::lock(cell) {
            txn::State::Open(o) if o.id == block => {
                o.locks
                    .get_or_insert_with(|| crate::row_locks::Owner::new(self.locks.clone(), block));
            }
            // (The block is gone: nothing holds them.)
            _ => self.locks.release(block),
        }
        Ok(())
    }

    /// `COPY ... TO STDOUT` inside the connection's open block: its query as a statement
    /// of the block (what it wrote is what the COMMIT checks), written as COPY writes it.
    pub(super) async fn copy_out_in_block(
        &self,
        c: &Arc<crate::copy::CopyOut>,
        params: Vec<Value>,
        cancel: Option<&CancelToken>,
        cell: &Arc<txn::Cell>,
    ) -> PgWireResult<Response> {
        if let Some(draft) = block_draft(cell)
            && !Arc::ptr_eq(c.stmt.catalog(), draft.catalog())
        {
            // (Planned against the schema before the block's changes: prepared before them.)
            return Err(client_error(
                "0A000",
                "COPY TO prepared before a schema change in the same transaction block is not supported: prepare it again",
            ));
        }
        let started = Instant::now();
        let d = Arc::new(crate::command::classify::dml_command(c.stmt.clone()));
        let r = match self.probe_rows(&d, params, cancel, cell).await {
            Ok((rows, watch)) => {
                let stop = watch.unwrap_or_else(|| (crate::session::stop_flag(cancel, true), None));
                respond_copy_out(rows, c, stop, self.db.statement_pool())
            }
            Err(e) => Err(e),
        };
        self.metrics
            .record(StatementClass::Query, started.elapsed(), outcome_of(&r));
        r
    }

    /// `CALL` of a SQL-defined procedure inside the connection's open block: its
    /// statements, with the call's arguments, as statements of the block (each a probe
    /// now, all run again at COMMIT), answered with the last one's rows as a CALL. One
    /// written in Rust runs only as a transaction of its own (0A000).
    pub(super) async fn call_in_block(
        &self,
        c: &crate::command::CallCommand,
        h: &permafrost_executor::ProcHandle,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
        cell: &Arc<txn::Cell>,
    ) -> PgWireResult<Response> {
        let Some(body) = h.sql_body() else {
            return Err(crate::error::client_error_explained(
                "0A000",
                format!(
                    "procedure \"{}\" is written in Rust: it cannot run inside a transaction block",
                    h.name()
                ),
                None,
                Some("CALL it outside BEGIN ... COMMIT, where it is a transaction of its own.".into()),
            ));
        };
        let started = Instant::now();
        let r = self.call_body(c, h, body, params, format, cancel, cell).await;
        self.metrics
            .record(StatementClass::Call, started.elapsed(), outcome_of(&r));
        r
    }

    /// [`Backend::call_in_block`]'s statements, `body`.
    #[allow(clippy::too_many_arguments)]
    async fn call_body(
        &self,
        c: &crate::command::CallCommand,
        h: &permafrost_executor::ProcHandle,
        body: &[String],
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
        cell: &Arc<txn::Cell>,
    ) -> PgWireResult<Response> {
        let args = {
            // (An argument's text read as a timestamptz is read in the session's zone.)
            let zone = cancel.and_then(CancelToken::zone);
            let _zone = permafrost_types::zone::SessionZone::set(zone.as_ref());
            h.coerce_args(c.bind_args(&params)?).map_err(db_error)?
        };
        let catalog = block_draft(cell).map_or_else(|| self.db.catalog(), |d| d.catalog().clone());
        let mut last = Rows::default();
        for (i, sql) in body.iter().enumerate() {
            let stmt = permafrost_sql::parse::parse_statement(sql).map_err(crate::error::sql_error)?;
            let Command::Dml(d) = crate::command::classify::classify_in(&self.db, &catalog, &stmt, sql)? else {
                return Err(client_error(
                    "XX000",
                    format!(
                        "internal error: statement {} of procedure \"{}\" is not a query or write",
                        i + 1,
                        h.name()
                    ),
                ));
            };
            // Each statement takes the arguments up to the highest `$n` it uses, as its
            // own planning typed them.
            let types = d.stmt.prepared().param_types();
            let mut bound = Vec::with_capacity(types.len());
            let zone = cancel.and_then(CancelToken::zone);
            let in_zone = permafrost_types::zone::SessionZone::set(zone.as_ref());
            for (v, ty) in args.iter().zip(types.iter()) {
                bound.push(match ty {
                    Some(ty) => v.clone().coerce_to(ty).map_err(|e| crate::error::sql_error(e.into()))?,
                    None => v.clone(),
                });
            }
            drop(in_zone);
            let (mut rows, _) = self.probe_rows(&d, bound, cancel, cell).await?;
            if i + 1 < body.len() {
                // What an earlier statement returns is not shown: read to its end, so
                // that the fingerprint the COMMIT checks is complete.
                if let Some(mut rest) = rows.take_rest() {
                    tokio::task::spawn_blocking(move || {
                        while rest.next_rows()?.is_some() {}
                        Ok::<_, permafrost_sql::SqlError>(())
                    })
                    .await
                    .map_err(|e| client_error("XX000", format!("internal error: {e}")))?
                    .map_err(crate::error::sql_error)?;
                }
            } else {
                last = rows;
            }
        }
        self.call_rows(last, c, format, cancel)
    }

    /// Statement `d` planned against `draft` (the schema the open block's changes lead
    /// to): as it is when it was, else planned again from its text.
    pub(super) fn in_draft(
        &self,
        draft: &permafrost_executor::SchemaDraft,
        d: &Arc<crate::command::DmlCommand>,
    ) -> PgWireResult<Arc<crate::command::DmlCommand>> {
        if Arc::ptr_eq(d.stmt.catalog(), draft.catalog()) {
            return Ok(d.clone());
        }
        let sql = &d.stmt.prepared().sql;
        let stmt = permafrost_sql::parse::parse_statement(sql).map_err(crate::error::sql_error)?;
        match crate::command::classify::classify_in(&self.db, draft.catalog(), &stmt, sql)? {
            Command::Dml(d) => Ok(d),
            _ => Err(client_error(
                "XX000",
                "internal error: a statement changed kind when planned again",
            )),
        }
    }

    /// Runs `stmt` with `params` as a probe of the connection's open block: over the
    /// committed state and the block's earlier writes, undone (crate::txn); what it gives
    /// inside the block.
    pub(super) async fn probe_block(
        &self,
        stmt: &permafrost_executor::AdHoc,
        params: Vec<Value>,
        cancel: Option<&CancelToken>,
        cell: &txn::Cell,
    ) -> PgWireResult<Rows> {
        let stop = crate::session::stop_flag(cancel, true);
        // Submitted while the block is locked (its statements are read in place); nothing
        // else of this connection is in flight: a short probe may run here.
        // The parameters kept for a second probe (below): only a block that has written
        // may need one.
        let (fut, again) = match &*txn::lock(cell) {
            txn::State::Open(o) => match o.draft() {
                // After the block's schema changes: over all partitions, with them.
                Some(d) => {
                    let next = NewStatement {
                        stmt,
                        params,
                        seed: o.next_seed(),
                    };
                    let fut = self.db.probe_draft(d, &o.statements, next, o.now, stop.clone());
                    (futures::future::Either::Left(fut), None)
                }
                None => {
                    let before = o.statements.iter().filter(|s| s.writes()).collect::<Vec<_>>();
                    let again = (!before.is_empty()).then(|| params.clone());
                    let next = NewStatement {
                        stmt,
                        params,
                        seed: o.next_seed(),
                    };
                    let fut = self.db.probe(&before, next, o.now, stop.clone(), Place::Here);
                    (futures::future::Either::Right(fut), again)
                }
            },
            _ => return Err(txn::aborted()),
        };
        let got = run_with(cancel, &stop, fut).await;
        match (got, again) {
            // The probe ran only the earlier writes of the rows the statement reaches; an
            // error that depends on the data is answered only if the block's other writes
            // still give what they showed (`Database::probe_whole`: 40001 otherwise).
            (Err(e), Some(params)) if depends_on_data(&e) => {
                let stop = crate::session::stop_flag(cancel, true);
                let fut = match &*txn::lock(cell) {
                    txn::State::Open(o) if o.draft().is_none() => {
                        let next = NewStatement {
                            stmt,
                            params,
                            seed: o.next_seed(),
                        };
                        let before = o.statements.iter().filter(|s| s.writes()).collect::<Vec<_>>();
                        self.db.probe_whole(&before, next, o.now, stop.clone())
                    }
                    _ => return Err(e),
                };
                run_with(cancel, &stop, fut).await
            }
            (got, _) => got,
        }
    }
}

/// Whether an error is one the rows could cause: a cardinality violation (class 21), a data
/// exception (22) or an integrity constraint's (23).
fn depends_on_data(e: &PgWireError) -> bool {
    match e {
        PgWireError::UserError(info) => ["21", "22", "23"].iter().any(|c| info.code.starts_with(c)),
        _ => false,
    }
}

/// The rest of a query's result inside a block, streamed after its first rows: each batch
/// is added to the fingerprint of what the client is shown, which replaces the block's
/// statement's ([`TxnStatement::digest`](permafrost_executor::TxnStatement)) once the
/// rest has ended, so that the COMMIT checks every row. A rest that fails aborts the block,
/// as an error inside it does; one the client stops reading leaves the fingerprint of its
/// first rows, which the COMMIT finds changed if it runs the query again (40001).
struct Fingerprinted {
    rest: Box<dyn MoreRows>,
    digest: permafrost_sql::Digest,
    cell: Arc<txn::Cell>,
    /// The block ([`txn::Open::id`]) and its statement that gave these rows.
    block: u64,
    statement: usize,
    /// The fingerprint of the first rows, kept with the statement until the rest ends.
    first: u64,
}

impl MoreRows for Fingerprinted {
    fn next_rows(&mut self) -> permafrost_sql::Result<Option<Rows>> {
        let got = self.rest.next_rows();
        match &got {
            Ok(Some(rows)) => self.digest.add(rows),
            Ok(None) => {
                if let txn::State::Open(o) = &mut *txn::lock(&self.cell)
                    && o.id == self.block
                    && let Some(s) = o.statements.get_mut(self.statement)
                    && s.digest == self.first
                {
                    s.digest = self.digest.finish();
                }
            }
            Err(_) => {
                let mut st = txn::lock(&self.cell);
                if matches!(&*st, txn::State::Open(o) if o.id == self.block) {
                    txn::fail(&mut st);
                }
            }
        }
        got
    }
}

/// Adds a statement that ran in the connection's open block, with the fingerprint of what
/// it showed, to the block's list (what COMMIT runs and checks again).
pub(super) fn keep_in_block(
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
            // (Kept only for a statement that drew random values: the others draw
            // from the COMMIT's own seed, which its record keeps anyway.)
            seed: if rows.drew_random { o.next_seed() } else { 0 },
            draws: rows.draws.clone(),
            reach: Default::default(),
        });
    }
}

/// The schema the connection's open block's changes lead to, if it changed the schema.
pub(super) fn block_draft(cell: &txn::Cell) -> Option<Arc<permafrost_executor::SchemaDraft>> {
    match &*txn::lock(cell) {
        txn::State::Open(o) => o.draft().cloned(),
        _ => None,
    }
}

/// A statement of an extended-protocol group that goes on past it, outside a block: the
/// group is one implicit transaction, committed at its Sync (crate::txn).
pub(super) fn open_implicit_block<C: ClientInfo>(client: &C, cmd: &Command) {
    // (The mark is this Execute's: taken whatever the statement.)
    if txn::group_goes_on(client).take() && matches!(cmd, Command::Dml(_)) {
        let cell = txn::of(client);
        let mut st = txn::lock(&cell);
        if matches!(*st, txn::State::Idle) {
            *st = txn::State::Open(txn::Open::implicit());
        }
    }
}
