//! Where a statement runs: the one place a [`Command`] is routed to the session, the
//! transaction block or the engine, for both query protocols.

use permafrost_sql::search_path::Hidden;

use super::block::block_draft;
use super::cursor::fetch;
use super::*;
use crate::command::Route;

impl Backend {
    /// Runs a statement as the connection's transaction state says: on its own outside a
    /// transaction block, as a probe inside one (crate::txn), or as the block's BEGIN,
    /// COMMIT or ROLLBACK. Warnings go to `client` as notices.
    pub(super) async fn run_in_session<C>(
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
        let route = cmd.route();
        if matches!(route, Route::Engine | Route::Either) && !matches!(cmd, Command::System(_)) {
            // (A query or write reads the catalog it was planned against, which it holds.)
            match cmd {
                Command::Dml(d) => refuse_hidden_schema(client, cmd, d.stmt.catalog(), cancel)?,
                _ => refuse_hidden_schema(client, cmd, &self.db.catalog(), cancel)?,
            }
        }
        if route == Route::Block {
            return self.block_statement(client, cmd, cancel, &cell).await;
        }
        // In an aborted block every other statement is refused as such.
        let inside = match &*txn::lock(&cell) {
            txn::State::Idle => false,
            txn::State::Open(_) => true,
            txn::State::Failed(_) => return Err(txn::aborted()),
        };
        let r = match route {
            Route::Either => Box::pin(self.in_or_out_of_block(client, cmd, params, format, cancel, &cell)).await,
            Route::Session => self.session_statement(client, cmd, format, cancel, &cell).await,
            Route::Engine if !inside => {
                let skipped = self.ddl_skipped(cmd);
                let r = self.run(cmd, params, format, cancel).await;
                if r.is_ok() {
                    for (code, message) in &skipped {
                        send_notice(client, "NOTICE", code, message).await?;
                    }
                }
                return r;
            }
            Route::Block => Err(client_error("XX000", "internal error: a block statement routed twice")),
            Route::Engine => match cmd {
                Command::Ddl { sql, tag } => {
                    let sql = permafrost_sql::ddl_text::in_zone(sql, cancel.and_then(CancelToken::zone).as_ref());
                    self.block_ddl(&sql, tag, &cell).await
                }
                Command::Dml(d) => match block_draft(&cell) {
                    // After the block's schema changes: planned against them (a plan made
                    // before them, or cached, is made again).
                    Some(draft) => match self.in_draft(&draft, d) {
                        Ok(d) => self.probe(&d, params, format, cancel, &cell).await,
                        Err(e) => Err(e),
                    },
                    None => self.probe(d, params, format, cancel, &cell).await,
                },
                Command::Version | Command::Stats => self.run(cmd, params, format, cancel).await,
                Command::CopyOut(c) => self.copy_out_in_block(c, params, cancel, &cell).await,
                Command::Call(c) => match &c.target {
                    CallTarget::Procedure(h) => self.call_in_block(c, h, params, format, cancel, &cell).await,
                    // The built-ins read or move no rows of the block's.
                    CallTarget::Builtin(_) => self.run(cmd, params, format, cancel).await,
                },
                _ => Err(client_error(
                    "0A000",
                    "only queries, INSERT, UPDATE, DELETE, CALL, COPY, schema changes, SET and SHOW may run \
                     inside a transaction block (CREATE PROCEDURE and CHECKPOINT run outside BEGIN ... COMMIT)",
                )),
            },
        };
        // An error inside a block aborts it (outside one there is nothing to abort).
        if r.is_err() {
            txn::fail(&mut txn::lock(&cell));
        }
        r
    }

    /// PostgreSQL's NOTICEs for a schema change that leaves an object alone (`DROP TABLE
    /// IF EXISTS` of a missing table, ...), against the schema before it runs. (Inside a
    /// block, where the block's own earlier changes would count, none are sent.)
    fn ddl_skipped(&self, cmd: &Command) -> Vec<(&'static str, String)> {
        let Command::Ddl { sql, .. } = cmd else {
            return Vec::new();
        };
        let catalog = self.db.catalog();
        if permafrost_sql::ddl_text::is_alter_sequence(sql) {
            return permafrost_sql::ddl_text::skipped_alter_sequence(&catalog, sql);
        }
        permafrost_sql::parse::parse_statements(sql)
            .map(|stmts| {
                stmts
                    .iter()
                    .flat_map(|s| permafrost_sql::ddl::skipped(&catalog, s))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// BEGIN, COMMIT, ROLLBACK and savepoints ([`Route::Block`]).
    async fn block_statement<C>(
        &self,
        client: &mut C,
        cmd: &Command,
        cancel: Option<&CancelToken>,
        cell: &txn::Cell,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match cmd {
            Command::Begin { read_only } => {
                let opened = {
                    let mut st = txn::lock(cell);
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
                let taken = std::mem::replace(&mut *txn::lock(cell), txn::State::Idle);
                match taken {
                    txn::State::Idle => {
                        warn(client, "25P01", "there is no transaction in progress").await?;
                        Ok(Response::TransactionEnd(Tag::new("COMMIT")))
                    }
                    txn::State::Failed(open) => {
                        self.end_block_settings(client, open.settings, false, cancel).await?;
                        Ok(Response::TransactionEnd(Tag::new("ROLLBACK")))
                    }
                    txn::State::Open(mut open) => {
                        let settings = std::mem::take(&mut open.settings);
                        let r = self.commit_block(open, cancel).await;
                        self.end_block_settings(client, settings, r.is_ok(), cancel).await?;
                        r.map(|()| Response::TransactionEnd(Tag::new("COMMIT")))
                    }
                }
            }
            Command::Savepoint(sp) => {
                let r = txn::savepoint(&mut txn::lock(cell), sp);
                let (tag, back) = r?;
                // (A ROLLBACK TO puts back the settings changed since the savepoint.)
                self.put_settings(client, back.into_iter().map(|u| (u.setting, u.now)), cancel)
                    .await?;
                Ok(Response::Execution(Tag::new(tag)))
            }
            Command::Rollback => {
                let taken = std::mem::replace(&mut *txn::lock(cell), txn::State::Idle);
                match taken {
                    txn::State::Idle => warn(client, "25P01", "there is no transaction in progress").await?,
                    txn::State::Open(open) | txn::State::Failed(open) => {
                        self.end_block_settings(client, open.settings, false, cancel).await?
                    }
                }
                Ok(Response::TransactionEnd(Tag::new("ROLLBACK")))
            }
            _ => Err(client_error("XX000", "internal error: not a block statement")),
        }
    }

    /// TRUNCATE, cursors, EXECUTE and catalog queries (`run_in_session` aborts the block
    /// when one fails).
    pub(super) async fn in_or_out_of_block<C>(
        &self,
        client: &mut C,
        cmd: &Command,
        params: Vec<Value>,
        format: &Format,
        cancel: Option<&CancelToken>,
        cell: &Arc<txn::Cell>,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match cmd {
            Command::Truncate(deletes) => self.truncate(deletes, format, cancel, cell).await,
            Command::Declare { name, query, hold } => {
                self.declare(client, name, query, *hold, params, cancel, cell).await
            }
            Command::Fetch { name, count, moving } => fetch(client, name, *count, *moving, cell),
            Command::Execute { name, args, explain } => {
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
                    .map(|(i, (a, t))| crate::command::classify::execute_value(a, t, i))
                    .collect::<PgWireResult<Vec<_>>>()?;
                if let Some(explain) = explain {
                    let cmd = explained(&self.db, explain, &inner)?;
                    return self.run_in_session(client, &cmd, params, format, cancel).await;
                }
                self.run_in_session(client, &inner, params, format, cancel).await
            }
            Command::System(q) => self.system_query(client, q.clone(), params, format, cancel).await,
            _ => Err(client_error("XX000", "internal error: not a statement of this kind")),
        }
    }
}

/// `EXPLAIN [ANALYZE] [(options)] EXECUTE name (...)` (`explain`): that EXPLAIN of the
/// prepared statement `inner` (a query, INSERT, UPDATE or DELETE), planned from its text.
fn explained(db: &Database, explain: &sqlparser::ast::Statement, inner: &Command) -> PgWireResult<Command> {
    let Some(sql) = inner.sql() else {
        return Err(client_error(
            "0A000",
            "EXPLAIN EXECUTE of a prepared CALL (EXPLAIN takes a query, INSERT, UPDATE or DELETE)",
        ));
    };
    let body = permafrost_sql::parse::parse_statement(sql).map_err(crate::error::sql_error)?;
    let mut stmt = explain.clone();
    if let sqlparser::ast::Statement::Explain { statement, .. } = &mut stmt {
        **statement = body;
    }
    let text = stmt.to_string();
    crate::command::classify::classify(db, &stmt, &text)
}

/// Refuses a statement whose unqualified names would mean something else in PostgreSQL
/// under the session's search_path (permafrost_sql::search_path): 0A000 where PostgreSQL
/// would reach another object, PostgreSQL's own error where it would find nothing. No
/// answer is taken from the wrong schema.
pub(super) fn refuse_hidden_schema<C: ClientInfo>(
    client: &C,
    cmd: &Command,
    catalog: &permafrost_sql::Catalog,
    cancel: Option<&CancelToken>,
) -> PgWireResult<()> {
    let owned;
    let session = match cancel {
        Some(c) => c.settings(),
        None => {
            owned = settings::of(client);
            &owned
        }
    };
    if catalog.schemas().next().is_none() && !session.public_unsearched() {
        return Ok(());
    }
    let user = client
        .metadata()
        .get(pgwire::api::METADATA_USER)
        .cloned()
        .unwrap_or_default();
    let (ahead, public) = session.path_schemas(&user, |s| catalog.has_schema(s));
    let path = permafrost_sql::search_path::SearchPath { ahead: &ahead, public };
    if path.is_plain() {
        return Ok(());
    }
    let hidden = |c: &Command| match c {
        Command::Copy(copy) => copy.unqualified_table().and_then(|t| path.found(catalog, t)),
        Command::CopyOut(out) => path.hidden_in(catalog, &out.stmt.prepared().sql),
        c => c.sql().and_then(|sql| path.hidden_in(catalog, sql)),
    };
    let found = match cmd {
        Command::Declare { query, .. } => hidden(query),
        c => hidden(c),
    };
    let shadowed = |key: &str| {
        let (schema, bare) = permafrost_sql::namespace::split(key);
        crate::error::client_error_explained(
            "0A000",
            format!(
                "search_path puts schema \"{schema}\" before public, and this server looks unqualified names up in public only"
            ),
            Some(format!("PostgreSQL would use {key} here.")),
            Some(format!(
                "Qualify the name ({key} or public.{bare}), or SET search_path = public."
            )),
        )
    };
    match found {
        None => Ok(()),
        Some(Hidden::Shadowed(key) | Hidden::CreatedIn(key)) => Err(shadowed(&key)),
        // (PostgreSQL's error, pointing where it points.)
        Some(Hidden::Unsearched(name)) => {
            let e = permafrost_sql::SqlError::UnknownTable(name);
            Err(match cmd.sql() {
                Some(text) => crate::error::sql_error_in(e, text),
                None => crate::error::sql_error(e),
            })
        }
        Some(Hidden::NoSchema) => Err(client_error("3F000", "no schema has been selected to create in")),
    }
}
