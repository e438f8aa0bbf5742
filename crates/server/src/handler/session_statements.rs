//! Statements answered by the session without the engine: SET, SHOW, DISCARD,
//! DEALLOCATE, PREPARE and EXECUTE, cursors, the system catalogs, the server's figures and
//! the built-in procedures.

use super::cursor::{current_block, cursors, no_cursor};
use super::*;

impl Backend {
    /// What the session answers alone: its settings (crate::session_settings), prepared
    /// statements (crate::prepared), cursors, DISCARD, VACUUM and ANALYZE (nothing to do
    /// here) and RELEASE.
    pub(super) async fn session_statement<C>(
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
        match cmd {
            Command::Set(_) | Command::SetConfig(_) | Command::Show(_) | Command::ShowAll => {
                self.setting_statement(client, cmd, format, cancel, cell).await
            }
            Command::Deallocate(_) | Command::Prepare { .. } => self.prepared_statement(client, cmd),
            Command::Discard(true) => {
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
                self.reset_all(client, cancel, cell).await?;
                Ok(Response::Execution(Tag::new("DISCARD ALL")))
            }
            Command::Discard(false) => Ok(Response::Execution(Tag::new("DISCARD"))),
            Command::Release(tag, notice) => {
                if let Some(n) = notice {
                    super::send_notice(client, "NOTICE", "00000", n).await?;
                }
                Ok(Response::Execution(Tag::new(tag)))
            }
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
            _ => Err(client_error("XX000", "internal error: not a session statement")),
        }
    }

    /// SET, RESET, set_config(), SET TRANSACTION, SHOW and SHOW ALL.
    async fn setting_statement<C>(
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
        match cmd {
            Command::Set(SetStatement::Assign { name, value, local })
            | Command::SetConfig(SetStatement::Assign { name, value, local }) => {
                let s = settings::setting(name).expect("checked when parsed");
                let in_block = matches!(&*txn::lock(cell), txn::State::Open(_));
                if *local && !in_block {
                    // As PostgreSQL: nothing changes past the statement; SET LOCAL warns,
                    // set_config(..., true) answers the value it had during it.
                    if let Some(v) = value.as_ref().filter(|_| matches!(cmd, Command::SetConfig(_))) {
                        let shown = settings::shown(s, v, self.db.statement_memory());
                        return text_rows(&cmd.columns(), vec![vec![Some(shown)]], format);
                    }
                    warn(client, "25P01", "SET LOCAL can only be used in transaction blocks").await?;
                    return Ok(Response::Execution(Tag::new("SET")));
                }
                if s.name == settings::TIME_ZONE
                    && matches!(&*txn::lock(cell), txn::State::Open(o) if !o.statements.is_empty())
                {
                    // Its COMMIT runs the block's statements again, all in one zone.
                    return Err(crate::error::client_error_explained(
                        "0A000",
                        "SET TimeZone inside a transaction block that has run statements",
                        None,
                        Some("Set it before BEGIN, or as the block's first statement.".into()),
                    ));
                }
                let server_work_mem = self.db.statement_memory();
                if s.name == "work_mem" {
                    settings::work_mem_within(value.as_deref(), server_work_mem)?;
                }
                let before = session.get(s);
                let now = self.apply_setting(client, s, value.clone(), cancel).await?;
                note_in_block(cell, s, &before, &now, *local);
                if matches!(cmd, Command::SetConfig(_)) {
                    // set_config() answers the value now in effect, as SHOW prints it.
                    return text_rows(
                        &cmd.columns(),
                        vec![vec![Some(settings::shown(s, &now, server_work_mem))]],
                        format,
                    );
                }
                Ok(Response::Execution(Tag::new(if value.is_some() {
                    "SET"
                } else {
                    "RESET"
                })))
            }
            Command::Set(SetStatement::ResetAll) => {
                self.reset_all(client, cancel, cell).await?;
                Ok(Response::Execution(Tag::new("RESET")))
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
            Command::Show(name) => {
                let n = name.to_ascii_lowercase();
                let v = match n.as_str() {
                    "transaction_isolation" => "serializable".to_string(),
                    "transaction_read_only" => match &*txn::lock(cell) {
                        txn::State::Open(o) if o.read_only => "on".into(),
                        _ => "off".into(),
                    },
                    _ => match (
                        settings::read_only_parameter(&n),
                        settings::setting(&n).filter(|s| session.knows(s)),
                    ) {
                        (Some(v), _) => v.to_string(),
                        (None, Some(s)) => settings::shown(s, &session.get(s), self.db.statement_memory()),
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
                            Some(settings::shown(s, &session.get(s), self.db.statement_memory())),
                            Some(s.description.to_string()),
                        ]
                    })
                    .collect();
                rows.sort();
                text_rows(&cmd.columns(), rows, format)
            }
            _ => Err(client_error("XX000", "internal error: not a setting statement")),
        }
    }

    /// Sets `s` to `value` (`None`: its default) with what follows from it: the
    /// connection's statement timeout and work_mem, and a ParameterStatus to the client
    /// when a reported setting changes. Returns the value now in effect.
    async fn apply_setting<C>(
        &self,
        client: &mut C,
        s: &'static settings::Setting,
        value: Option<String>,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<String>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = settings::of(client);
        let before = session.get(s);
        let now = session.set(s, value);
        if s.name == "statement_timeout" {
            statement_timeout(cancel, &now);
        }
        if let (Some(c), "work_mem") = (cancel, s.name) {
            c.set_work_mem(now.parse::<u64>().unwrap_or(0) * 1024);
        }
        if s.reported && now != before {
            client
                .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                    s.spelled.to_string(),
                    now.clone(),
                )))
                .await?;
        }
        Ok(now)
    }

    /// When a transaction block ends: the settings it changed (`undo`) become what its
    /// COMMIT keeps (`committed`), or what they were before it (a ROLLBACK, a failed
    /// COMMIT), as in PostgreSQL.
    pub(super) async fn end_block_settings<C>(
        &self,
        client: &mut C,
        undo: Vec<txn::SettingUndo>,
        committed: bool,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if undo.is_empty() {
            // (Most blocks: every COMMIT comes here.)
            return Ok(());
        }
        let back = undo
            .into_iter()
            .map(|u| (u.setting, if committed { u.kept } else { u.before }));
        self.put_settings(client, back, cancel).await
    }

    /// Gives each setting its value (those that have it already are left alone).
    pub(super) async fn put_settings<C>(
        &self,
        client: &mut C,
        values: impl IntoIterator<Item = (&'static settings::Setting, String)>,
        cancel: Option<&CancelToken>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = settings::of(client);
        for (s, want) in values {
            if session.get(s) != want {
                self.apply_setting(client, s, Some(want), cancel).await?;
            }
        }
        Ok(())
    }

    /// RESET ALL: every setting back to its default, reported to the client as it changes
    /// (inside a block, undone by its ROLLBACK).
    async fn reset_all<C>(&self, client: &mut C, cancel: Option<&CancelToken>, cell: &txn::Cell) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = settings::of(client);
        for name in session.changed() {
            let s = settings::setting(name).expect("a setting");
            let before = session.get(s);
            let now = self.apply_setting(client, s, None, cancel).await?;
            note_in_block(cell, s, &before, &now, false);
        }
        Ok(())
    }

    /// PREPARE and DEALLOCATE (crate::prepared).
    fn prepared_statement<C: ClientInfo>(&self, client: &C, cmd: &Command) -> PgWireResult<Response> {
        match cmd {
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
            _ => Err(client_error(
                "XX000",
                "internal error: not a prepared-statement statement",
            )),
        }
    }

    /// A query on the system catalogs (crate::syscat), on a blocking thread: it stops on a
    /// cancel request or at the statement timeout.
    pub(super) async fn system_query<C>(
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
                .chain(session.customs())
                .map(|s| {
                    (
                        s.spelled.to_string(),
                        settings::shown(s, &session.get(s), self.db.statement_memory()),
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

    pub(super) async fn stats_response(&self, format: &Format) -> PgWireResult<Response> {
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

    pub(super) async fn builtin(&self, b: Builtin, args: Vec<Value>, format: &Format) -> PgWireResult<Response> {
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
                            .map(|(n, t)| format!("{n} {}", t.sql_name()).trim_start().to_string())
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
}

/// The connection's `statement_timeout` is now `value` (milliseconds as SET gives them):
/// its cancel token enforces it.
/// Inside an open block, notes that `s` went from `before` to `now` (`local`: by SET
/// LOCAL), for the block's end to put back (crate::txn::SettingUndo: the first value
/// before the block, the one a COMMIT keeps).
fn note_in_block(cell: &txn::Cell, s: &'static settings::Setting, before: &str, now: &str, local: bool) {
    let mut st = txn::lock(cell);
    let txn::State::Open(o) = &mut *st else { return };
    let at = match o.settings.iter().position(|u| u.setting.name == s.name) {
        Some(at) => at,
        None => {
            o.settings.push(txn::SettingUndo {
                setting: s,
                before: before.to_string(),
                kept: before.to_string(),
                now: before.to_string(),
            });
            o.settings.len() - 1
        }
    };
    if !local {
        o.settings[at].kept = now.to_string();
    }
    o.settings[at].now = now.to_string();
}

fn statement_timeout(cancel: Option<&CancelToken>, value: &str) {
    if let Some(c) = cancel {
        c.set_statement_timeout(value.parse().unwrap_or(0));
    }
}
