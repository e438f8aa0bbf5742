//! The extended query protocol: Parse, Bind, Describe, Execute, Close and Sync.

use super::block::open_implicit_block;
use super::copy_in::copy_may_start;
use super::cursor::cursors;
use super::*;

impl Backend {
    /// Parse, as the library's but a named statement that exists already is an error
    /// (42P05), as in PostgreSQL, instead of being replaced: the unnamed one is replaced.
    pub(super) async fn parse_statement<C>(&self, client: &mut C, message: &Parse) -> PgWireResult<()>
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
}

/// A portal's parameters as values of the types the statement expects.
/// [`decode_params`] in the session's TimeZone (text read as a timestamp with time zone
/// without an offset is in it).
/// (The zone is the connection's, which its cancel token reads.)
fn zoned_params(cancel: Option<&CancelToken>, portal: &Portal<Command>, cmd: &Command) -> PgWireResult<Vec<Value>> {
    let zone = cancel.and_then(CancelToken::zone);
    let _zone = permafrost_types::zone::SessionZone::set(zone.as_ref());
    decode_params(portal, cmd)
}

pub(super) fn decode_params(portal: &Portal<Command>, cmd: &Command) -> PgWireResult<Vec<Value>> {
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
        if let Some(txn::State::Failed(open)) = implicit {
            let cancel = self.cancel_token(client);
            self.end_block_settings(client, open.settings, false, cancel.as_ref())
                .await?;
        } else if let Some(txn::State::Open(mut open)) = implicit {
            let pipeline = Pipeline::of(client);
            if !pipeline.is_empty() {
                pipeline.drain(client).await?;
            }
            let cancel = self.cancel_token(client);
            let settings = std::mem::take(&mut open.settings);
            let r = self.commit_block(open, cancel.as_ref()).await;
            self.end_block_settings(client, settings, r.is_ok(), cancel.as_ref())
                .await?;
            if let Err(e) = r {
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
        let cancel = self.cancel_token(client);
        let params = zoned_params(cancel.as_ref(), &portal, cmd)?;
        open_implicit_block(client, cmd);
        if cmd.pipelines() && matches!(*txn::lock(&txn::of(client)), txn::State::Idle) {
            if let Command::Dml(d) = cmd {
                super::route::refuse_hidden_schema(client, cmd, d.stmt.catalog(), cancel.as_ref())?;
            }
            // Alone in flight, a short statement may run on this thread.
            let place = if pipeline.is_empty() {
                Place::Here
            } else {
                Place::Partition
            };
            let who = self.log_errors.then(|| ClientTag::of(client));
            pipeline.push_result(self.submit(cmd, params, &portal.result_column_format, cancel, place, who)?);
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
        let cancel = self.cancel_token(client);
        let params = zoned_params(cancel.as_ref(), portal, cmd)?;
        open_implicit_block(client, cmd);
        // Text-only results (SHOW, version()) ignore a binary request: their type is text,
        // whose binary form is the same bytes.
        self.run_in_session(client, cmd, params, &portal.result_column_format, cancel.as_ref())
            .await
    }
}
