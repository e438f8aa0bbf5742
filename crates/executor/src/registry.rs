//! The registry: the schema (tables and indexes, changed by DDL) and the procedures, both
//! published together as one [`SchemaState`] that every partition and caller reads.
//!
//! Changes are serialized by the database's schema lock. A DDL statement is applied at
//! every partition at one point of the transaction order (a multi-partition message,
//! `MpWork::Ddl`), with the registered procedures re-planned against the new schema; a
//! procedure's registration publishes a new state at once. Each change taking effect is
//! recorded in the command log (unless it is being replayed from there), in the history
//! that snapshots save, and in the data directory's schema log.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use permafrost_sql::SqlError;
use permafrost_sql::workmem::Reservation;
use permafrost_storage::StorageError;

use crate::database::{Database, ProcHandle};
use crate::error::{Error, Result};
use crate::partition::msg::{EvictedKeys, MpWork, Msg};
use crate::partition::repartition::MovingTuples;
use crate::procedure::{Procedure, ProcedureDef, SchemaState};
use crate::schema_log::SchemaLog;

/// How many times an index over evicted tuples is read and built (or a table's evicted
/// tuples read and moved) before its failure (tuples evicted meanwhile, each time) reaches
/// the caller.
const INDEX_BUILD_ATTEMPTS: u32 = 5;

/// What each partition read for a schema change (by partition), and the reservations
/// counting it in the statement pool.
type ReadAtPartitions<T> = (Vec<Mutex<Option<T>>>, Vec<Reservation>);

/// Whether the command log records a schema change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// It does: a change asked for now (by a caller, or replayed from the schema log of a
    /// data directory, whose command log starts after it).
    Logged,
    /// It does not: the change is replayed from the command log, which holds it already.
    Replayed,
}

impl Database {
    /// Applies one schema statement of any kind (CREATE or DROP of a table, index or
    /// procedure), its command-log record as `record` says: what the schema log's and the
    /// command log's replays run.
    pub(crate) fn apply_schema_statement(&self, sql: &str, record: Record) -> Result<()> {
        // Scanned once for both questions (a text that does not scan is the DDL path's to
        // refuse).
        let first = permafrost_sql::scan::scan(sql)
            .ok()
            .and_then(|s| s.statements.into_iter().next());
        match first {
            Some(st) if st.is_create_procedure() => self.create_procedure_as(sql, record).map(|_| ()),
            Some(st) if st.is_drop_procedure() => self.drop_procedure_as(sql, record).map(|_| ()),
            _ => self.apply_ddl(sql, record),
        }
    }

    /// Runs DDL (one or more `;`-separated CREATE/DROP TABLE/INDEX statements). Each
    /// statement is applied at every partition at one point of the transaction order,
    /// all or nothing; registered procedures are re-planned against the new schema.
    pub fn execute_ddl(&self, sql: &str) -> Result<()> {
        self.apply_ddl(sql, Record::Logged)
    }

    /// Checks that `texts` (schema changes, in order) would apply to the current schema,
    /// without applying them.
    pub fn check_ddl(&self, texts: &[String]) -> Result<()> {
        let joined = texts.join(";\n");
        permafrost_sql::limits::with_stack_for(&joined, || {
            let stmts = Self::parse_ddl(texts)?;
            let state = self.shared().schema.load_full();
            let mut catalog = (*state.catalog).clone();
            for s in &stmts {
                for c in &s.plan(&catalog)? {
                    catalog = catalog.apply(c)?;
                }
            }
            Ok(())
        })
    }

    /// Applies the schema changes `texts` as one: all of them, or none (a transaction
    /// block's CREATE, DROP and ALTER statements at its COMMIT). One record in the command
    /// log holds them all.
    pub fn execute_ddl_atomic(&self, texts: &[String]) -> Result<()> {
        let joined = texts.join(";\n");
        permafrost_sql::limits::with_stack_for(&joined, || {
            let stmts = Self::parse_ddl(texts)?;
            let _guard = self
                .inner()
                .ddl
                .lock()
                .map_err(|_| Error::Internal("ddl lock poisoned".into()))?;
            let state = self.shared().schema.load_full();
            let mut catalog = (*state.catalog).clone();
            let mut changes = Vec::new();
            for s in &stmts {
                for c in s.plan(&catalog)? {
                    catalog = catalog.apply(&c)?;
                    changes.push(c);
                }
            }
            if changes.is_empty() {
                return Ok(());
            }
            self.install_schema(&state, changes, Arc::new(catalog), joined.clone(), Record::Logged)?;
            // One record of the schema log too, so that a crash keeps all or none.
            self.push_history(&joined)
        })
    }

    /// The statements of schema-change texts, each with its own text and the session zone
    /// it was made in (`permafrost_sql::ddl_text::in_zone`).
    pub(crate) fn parse_ddl(texts: &[String]) -> Result<Vec<DdlStatement>> {
        let mut stmts = Vec::new();
        for t in texts {
            let (zone, body) = permafrost_sql::ddl_text::zone_of(t)?;
            for text in permafrost_sql::scan::scan(body)?.texts() {
                // (A block's changes, joined, each keep their mark.)
                let (own, text) = permafrost_sql::ddl_text::zone_of(&text)?;
                let zone = own.or_else(|| zone.clone());
                for stmt in permafrost_sql::ddl_text::parse(text)? {
                    stmts.push(DdlStatement {
                        text: permafrost_sql::ddl_text::in_zone(text, zone.as_ref()),
                        stmt,
                        zone: zone.clone(),
                    });
                }
            }
        }
        Ok(stmts)
    }

    /// The state after a schema change to `catalog`: `state`'s procedures planned
    /// against it. Procedures whose statements no longer plan (a table they use was
    /// dropped) are unregistered with the change.
    pub(crate) fn next_state(&self, state: &SchemaState, catalog: Arc<permafrost_sql::Catalog>) -> Arc<SchemaState> {
        let procs = state
            .procs
            .iter()
            .filter_map(|(name, p)| {
                Procedure::prepare(p.def.clone(), &catalog)
                    .ok()
                    .map(|p| (name.clone(), Arc::new(p)))
            })
            .collect();
        Arc::new(SchemaState { catalog, procs })
    }

    /// Installs a schema (`catalog`, reached by `changes`) at every partition, with the
    /// procedures that still plan against it; the command log records `sql` as `record` says.
    fn install_schema(
        &self,
        state: &SchemaState,
        changes: Vec<permafrost_sql::DdlChange>,
        catalog: Arc<permafrost_sql::Catalog>,
        sql: String,
        record: Record,
    ) -> Result<()> {
        let next = self.next_state(state, catalog);
        // A new sequence's counter, set before anyone can draw from it (a dropped one's is
        // forgotten once the drop took effect).
        for c in &changes {
            match c {
                permafrost_sql::DdlChange::CreateSequence(seq) => {
                    self.shared().sequences.set(seq.id, seq.before_start());
                }
                // (RESTART: set as the change takes effect, here and when recovery applies
                // it again in log order.)
                permafrost_sql::DdlChange::AlterSequence {
                    def,
                    restart: Some(last),
                    ..
                } => self.shared().sequences.set(def.id, *last),
                _ => {}
            }
        }
        let dropped: Vec<_> = changes
            .iter()
            .filter_map(|c| match c {
                permafrost_sql::DdlChange::DropSequence(id) => Some(*id),
                _ => None,
            })
            .collect();
        // An index over a table part of which is on disk is built with the keys of the
        // evicted tuples, read first at each partition while it goes on serving; tuples
        // evicted between that read and the change make it fail, and it is read again.
        let mut attempt = 1;
        loop {
            let work = MpWork::Ddl {
                changes: changes.clone(),
                next: next.clone(),
                sql: sql.clone(),
                log: record == Record::Logged,
                evicted: self.evicted_keys(&changes, attempt > 1)?,
                moving: self.evicted_moving(&changes)?,
            };
            match self.run_mp_work(work, self.shared().all_partitions()) {
                Err(Error::Sql(SqlError::Storage(
                    StorageError::EvictedDuringBuild { .. } | StorageError::EvictedDuringMove { .. },
                ))) if attempt < INDEX_BUILD_ATTEMPTS => {
                    attempt += 1;
                }
                r => {
                    if r.is_ok() {
                        for id in dropped {
                            self.shared().sequences.forget(id);
                        }
                    }
                    return r.map(|_| ());
                }
            }
        }
    }

    /// The keys of the evicted tuples of the table of the first index or primary key
    /// `changes` create, read at every partition (at once); `None` without the anti-cache
    /// or such an index. While no partition has published an evicted tuple, none is read
    /// (`reread`: read anyway, the last build having met some). A primary key that
    /// partitions a replicated table is not read for: it is refused over evicted tuples.
    fn evicted_keys(&self, changes: &[permafrost_sql::DdlChange], reread: bool) -> Result<Option<Arc<EvictedKeys>>> {
        let catalog = self.shared().schema.load_full().catalog.clone();
        let index = changes.iter().find_map(|c| match c {
            permafrost_sql::DdlChange::CreateIndex(schema) => Some(schema),
            permafrost_sql::DdlChange::AddPrimaryKey(schema) => {
                let replicated = catalog
                    .table(&schema.name)
                    .is_some_and(|t| t.partition_column.is_none());
                (!replicated || schema.partition_column.is_none()).then_some(schema)
            }
            _ => None,
        });
        let (Some(schema), Some(_)) = (index, &self.config().anticache) else {
            return Ok(None);
        };
        let Some(def) = schema.indexes.last() else {
            return Ok(None);
        };
        let shared = self.shared();
        let none_evicted = shared.stats.iter().all(|s| s.evicted_now.load(Ordering::Relaxed) == 0);
        if none_evicted && !reread {
            return Ok(Some(Arc::new(EvictedKeys {
                table: schema.id,
                index: def.name.clone(),
                by_partition: (0..shared.senders.len()).map(|_| Mutex::new(None)).collect(),
                _held: Vec::new(),
            })));
        }
        let (by_partition, held) = self.read_at_every_partition(|tx| Msg::EvictedKeys(schema.clone(), tx))?;
        Ok(Some(Arc::new(EvictedKeys {
            table: schema.id,
            index: def.name.clone(),
            by_partition,
            _held: held,
        })))
    }

    /// The evicted tuples of the table the first `Repartition` of `changes` moves, read at
    /// every partition (at once), each with its destination (partition/repartition.rs);
    /// `None` without the anti-cache or such a change.
    fn evicted_moving(&self, changes: &[permafrost_sql::DdlChange]) -> Result<Option<Arc<MovingTuples>>> {
        let schema = changes.iter().find_map(|c| match c {
            permafrost_sql::DdlChange::Repartition(schema) => Some(schema),
            _ => None,
        });
        let (Some(schema), Some(_)) = (schema, &self.config().anticache) else {
            return Ok(None);
        };
        let (by_partition, held) = self.read_at_every_partition(|tx| Msg::EvictedTuples(schema.clone(), tx))?;
        Ok(Some(Arc::new(MovingTuples {
            table: schema.id,
            by_partition,
            _held: held,
        })))
    }

    /// Sends every partition the message `ask` makes (at once) and collects what each read
    /// for a schema change and the reservations counting it in the statement pool.
    fn read_at_every_partition<T>(
        &self,
        ask: impl Fn(crossbeam_channel::Sender<Result<Option<(T, Reservation)>>>) -> Msg,
    ) -> Result<ReadAtPartitions<T>> {
        let senders = &self.shared().senders;
        let mut answers = Vec::with_capacity(senders.len());
        for sender in senders {
            let (tx, rx) = crossbeam_channel::bounded(1);
            sender.send(ask(tx)).map_err(|_| Error::Shutdown)?;
            answers.push(rx);
        }
        let mut by_partition = Vec::with_capacity(answers.len());
        let mut held = Vec::with_capacity(answers.len());
        for rx in answers {
            let (read, reservation) = rx.recv().map_err(|_| Error::Shutdown)??.unzip();
            by_partition.push(Mutex::new(read));
            held.extend(reservation);
        }
        Ok((by_partition, held))
    }

    fn apply_ddl(&self, sql: &str, record: Record) -> Result<()> {
        permafrost_sql::limits::with_stack_for(sql, || self.apply_ddl_statements(sql, record))
    }

    fn apply_ddl_statements(&self, sql: &str, record: Record) -> Result<()> {
        let stmts = Self::parse_ddl(&[sql.to_string()])?;
        let _guard = self
            .inner()
            .ddl
            .lock()
            .map_err(|_| Error::Internal("ddl lock poisoned".into()))?;
        for s in &stmts {
            let state = self.shared().schema.load_full();
            let changes = s.plan(&state.catalog)?;
            if changes.is_empty() {
                continue;
            }
            let mut catalog = (*state.catalog).clone();
            for c in &changes {
                catalog = catalog.apply(c)?;
            }
            self.install_schema(&state, changes, Arc::new(catalog), s.text.clone(), record)?;
            self.push_history(&s.text)?;
        }
        Ok(())
    }

    /// Registers a procedure, planning its statements against the current schema.
    pub fn register(&self, def: ProcedureDef) -> Result<ProcHandle> {
        self.register_inner(def, false)
    }

    /// Runs `CREATE [OR REPLACE] PROCEDURE ... AS $$ ... $$` (see
    /// [`permafrost_sql::script`]): registers a SQL-defined procedure.
    pub fn create_procedure(&self, sql: &str) -> Result<ProcHandle> {
        self.create_procedure_as(sql, Record::Logged)
    }

    fn create_procedure_as(&self, sql: &str, record: Record) -> Result<ProcHandle> {
        let src = permafrost_sql::script::parse_create_procedure(sql)?;
        let replace = src.or_replace;
        // Under the schema lock from registration to the log record, so that a snapshot
        // holds the procedure exactly when its record is before the snapshot's cut.
        let _guard = self.lock_ddl()?;
        let def = match &src.internal {
            Some(symbol) => self.library().define(&src, symbol, sql)?,
            None => ProcedureDef::from_sql(src, sql),
        };
        let h = self.register_locked(def, replace)?;
        if record == Record::Logged {
            self.log_schema(sql)?;
        }
        self.push_history(sql)?;
        Ok(h)
    }

    /// Makes the Rust procedures `defs` available to `CREATE PROCEDURE ... LANGUAGE
    /// internal AS 'name'` ([`crate::procedure::Library`]), adding to those given before
    /// (a later one of the same name wins). Give them before recovery, which runs the
    /// CREATE statements of the log again.
    pub fn provide_internal(&self, defs: crate::procedure::Library) {
        if let Ok(mut lib) = self.inner().library.lock() {
            *lib = lib.with(&defs);
        }
    }

    fn library(&self) -> crate::procedure::Library {
        self.inner().library.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub(crate) fn lock_ddl(&self) -> Result<std::sync::MutexGuard<'_, ()>> {
        self.inner()
            .ddl
            .lock()
            .map_err(|_| Error::Internal("ddl lock poisoned".into()))
    }

    /// Remembers a schema statement that took effect (snapshots save the list; called under
    /// the schema lock) and, once the database has a data directory, appends it to the
    /// schema log. Fails if the change took effect but could not be recorded there.
    pub(crate) fn push_history(&self, sql: &str) -> Result<()> {
        if let Ok(mut h) = self.inner().history.lock() {
            h.push(sql.to_string());
        }
        match self.inner().data_dir.get() {
            Some((_, log)) => log.append(sql).map_err(|e| Error::Log {
                message: format!("the schema change took effect but could not be recorded: {e}"),
                sqlstate: "58030",
            }),
            None => Ok(()),
        }
    }

    /// Keeps the data directory's lock and schema log with the database (datadir.rs).
    pub(crate) fn attach_data_dir(&self, lock: permafrost_io::DirLock, log: SchemaLog) {
        let _ = self.inner().data_dir.set((lock, log));
    }

    /// The data directory's lock, if the database was opened in one.
    pub fn data_dir_lock(&self) -> Option<&permafrost_io::DirLock> {
        self.inner().data_dir.get().map(|(l, _)| l)
    }

    /// Runs `DROP PROCEDURE [IF EXISTS] name`; returns whether one was dropped.
    pub fn drop_procedure(&self, sql: &str) -> Result<bool> {
        self.drop_procedure_as(sql, Record::Logged)
    }

    fn drop_procedure_as(&self, sql: &str, record: Record) -> Result<bool> {
        let (name, if_exists) = permafrost_sql::script::parse_drop_procedure(sql)?;
        let _guard = self.lock_ddl()?;
        match self.unregister_locked(&name) {
            Ok(()) => {
                if record == Record::Logged {
                    self.log_schema(sql)?;
                }
                self.push_history(sql)?;
                Ok(true)
            }
            Err(Error::UnknownProcedure(_)) if if_exists => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Records a procedure definition or removal in the command log and waits until it is
    /// durable (sync mode).
    fn log_schema(&self, sql: &str) -> Result<()> {
        let Some(log) = &self.shared().log else { return Ok(()) };
        let mut body = Vec::new();
        permafrost_durability::encode_record(
            &permafrost_durability::TxnRecord {
                zone: None,
                draws: None,
                partitions: self.shared().all_partitions(),
                now: 0,
                seed: 0,
                request: permafrost_durability::Request::Schema { sql: sql.to_string() },
            },
            &mut body,
        );
        let (tx, rx) = std::sync::mpsc::channel();
        log.append(
            body,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.recv().map_err(|_| Error::Shutdown)?.map_err(Error::from)
    }

    fn register_inner(&self, def: ProcedureDef, replace: bool) -> Result<ProcHandle> {
        let _guard = self.lock_ddl()?;
        self.register_locked(def, replace)
    }

    fn register_locked(&self, def: ProcedureDef, replace: bool) -> Result<ProcHandle> {
        let state = self.shared().schema.load_full();
        if state.procs.contains_key(&def.name) && !replace {
            return Err(Error::DuplicateProcedure(def.name));
        }
        let proc = Arc::new(Procedure::prepare(def, &state.catalog)?);
        let mut procs = state.procs.clone();
        procs.insert(proc.name.clone(), proc.clone());
        self.shared().schema.store(Arc::new(SchemaState {
            catalog: state.catalog.clone(),
            procs,
        }));
        Ok(ProcHandle { proc })
    }

    /// Removes a procedure. Calls already submitted still run.
    pub fn unregister(&self, name: &str) -> Result<()> {
        let _guard = self.lock_ddl()?;
        self.unregister_locked(name)
    }

    fn unregister_locked(&self, name: &str) -> Result<()> {
        let state = self.shared().schema.load_full();
        if !state.procs.contains_key(name) {
            return Err(Error::UnknownProcedure(name.into()));
        }
        let mut procs = state.procs.clone();
        procs.remove(name);
        self.shared().schema.store(Arc::new(SchemaState {
            catalog: state.catalog.clone(),
            procs,
        }));
        Ok(())
    }

    /// Looks a procedure up for repeated calls.
    pub fn procedure(&self, name: &str) -> Result<ProcHandle> {
        self.shared()
            .schema
            .load()
            .procs
            .get(name)
            .map(|p| ProcHandle { proc: p.clone() })
            .ok_or_else(|| Error::UnknownProcedure(name.into()))
    }

    /// Names of the registered procedures.
    pub fn procedure_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.shared().schema.load().procs.keys().cloned().collect();
        v.sort();
        v
    }
}

/// A schema statement of a text ([`Database::parse_ddl`]).
pub(crate) struct DdlStatement {
    /// Its own text, marked with its zone: what the logs keep.
    pub text: String,
    pub stmt: permafrost_sql::ddl_text::DdlStatement,
    /// The session TimeZone it was made in (`None`: UTC).
    zone: Option<permafrost_types::zone::Zone>,
}

impl DdlStatement {
    /// Its changes to `catalog`, planned in its zone (a DEFAULT's `timestamptz` literal is
    /// read there).
    pub(crate) fn plan(&self, catalog: &permafrost_sql::Catalog) -> Result<Vec<permafrost_sql::catalog::DdlChange>> {
        let _zone = permafrost_types::zone::SessionZone::set(self.zone.as_ref());
        Ok(permafrost_sql::ddl_text::plan(catalog, &self.stmt)?)
    }
}
