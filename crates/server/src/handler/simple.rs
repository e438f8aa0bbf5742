//! The simple query protocol (Query): the text is scanned once (its statements, their
//! first words and its shape: permafrost_sql::scan); a statement whose shape's plan is
//! cached runs without parsing; otherwise each statement is classified and run in turn
//! ([`Backend::run_in_session`]). A text of blanks and comments is an empty query.

use super::copy_in::copy_may_start;
use super::*;

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
        let query = match crate::temp_tables::qualify(&self.db, client, query) {
            Ok(q) => q,
            Err(e) => return Ok(vec![Response::Error(Box::new(refused(client, e).into()))]),
        };
        let query = query.as_ref();
        // The text is read once, here: its statements, what they start with and name, and
        // its shape (permafrost_sql::scan).
        let scan = match permafrost_sql::scan::scan(query) {
            Ok(scan) => scan,
            Err(e) => return Ok(vec![Response::Error(Box::new(refused(client, sql_error(e)).into()))]),
        };
        // One statement whose shape's plan is cached runs without parsing or planning.
        let mut learn = match self.plans.lookup(&self.db, &scan) {
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
        let texts = scan.statements;
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
        for (i, st) in texts.iter().enumerate() {
            let draft = txn::draft_catalog(&txn::of(client));
            let classified = match i {
                0 => classify_statement_in(&self.db, draft.as_ref(), st),
                _ => classify_requalified(&self.db, client, draft.as_ref(), st),
            };
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
                Err(e) => Err(refused(client, e)),
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

/// The error of a statement that could not be read or planned: inside a transaction block
/// it aborts the block, and in an aborted block every statement is refused as such.
fn refused<C: ClientInfo>(client: &C, e: PgWireError) -> PgWireError {
    let cell = txn::of(client);
    let mut st = txn::lock(&cell);
    match *st {
        txn::State::Open(_) => {
            txn::fail(&mut st);
            e
        }
        txn::State::Failed(_) => txn::aborted(),
        txn::State::Idle => e,
    }
}

/// A statement after the first of a query string, classified with its names qualified
/// anew (crate::temp_tables): it may name a temporary table made by one before it, and the
/// string as a whole was qualified before any of it ran.
fn classify_requalified<C: ClientInfo>(
    db: &Arc<Database>,
    client: &C,
    draft: Option<&Arc<permafrost_sql::Catalog>>,
    st: &permafrost_sql::scan::StatementText<'_>,
) -> PgWireResult<Command> {
    match crate::temp_tables::qualify(db, client, st.text)? {
        std::borrow::Cow::Borrowed(_) => classify_statement_in(db, draft, st),
        std::borrow::Cow::Owned(text) => {
            let scan = permafrost_sql::scan::scan(&text).map_err(sql_error)?;
            classify_statement_in(db, draft, scan.statements.first().unwrap_or(st))
        }
    }
}
