//! The embedded database API.
//!
//! [`Database::open`] starts one executor thread per partition. DDL and procedure
//! registration change the published schema state; calls are routed to the partition of
//! their partition parameter (or to all partitions for multi-partition procedures) and
//! answered synchronously ([`Database::call`]), as futures ([`Database::call_async`]) or in
//! batches through a pipelining [`Session`](crate::Session) (session.rs). Looking into a
//! running database (memory, counters, a closure at a partition) is in inspect.rs.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, Sender};
use permafrost_anticache::{AntiCache, BlockIo, ReadDone, WriteDone};
use permafrost_sql::{Catalog, Rows, SqlError};
use permafrost_storage::{DataType, Value};

use crate::config::Config;
use crate::counters::PartitionStats;
use crate::error::{Error, Result};
use crate::partition::cell::PartitionCell;
use crate::partition::fence::QueueState;
use crate::partition::msg::{MpWork, Msg};
use crate::partition::router::{Dispatch, submit, submit_statement};
use crate::partition::state::Partition;
use crate::procedure::{Partitioning, Procedure, ProcedureDef, SchemaState};
use crate::reply::{Reply, StopFlag};
use crate::schema_log::SchemaLog;
use crate::shared::Shared;
use crate::snapshot::job::{Periodic, Snapshots};

pub(crate) struct Inner {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Serializes schema changes and registrations (never held by partition threads).
    ddl: Mutex<()>,
    /// The last command-log record present at open: what [`Database::recover`] replays.
    recover_through: u64,
    /// The schema statements that built the current schema, in order (snapshots hold it).
    history: Mutex<Vec<String>>,
    pub(crate) snapshots: Snapshots,
    /// The data directory's lock and schema log, once the database is opened in one
    /// (datadir.rs): held until the database is dropped; every schema change from then on
    /// is appended to the schema log.
    data_dir: std::sync::OnceLock<(permafrost_io::DirLock, SchemaLog)>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for s in &self.shared.senders {
            let _ = s.send(Msg::Shutdown);
        }
        if let Ok(mut threads) = self.threads.lock() {
            for t in threads.drain(..) {
                let _ = t.join();
            }
        }
    }
}

/// An open database. Cloning gives another handle to the same database; it shuts down
/// when the last handle is dropped, in that handle's drop (its partitions stopped, its
/// command log synced and closed), so that the same directories can be opened again at once.
#[derive(Clone)]
pub struct Database {
    /// Shared by the application's handles, not by the periodic snapshot thread's: the last
    /// one stops that thread before `inner` goes (declared first, so dropped first), so the
    /// thread is never the one left to shut the database down.
    owner: Option<Arc<Owner>>,
    inner: Arc<Inner>,
}

/// What the application's handles own besides the database: the periodic snapshot thread.
struct Owner {
    periodic: Mutex<Option<Periodic>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        let periodic = self.periodic.get_mut().map_or(None, |p| p.take());
        if let Some(p) = periodic {
            p.stop();
        }
    }
}

/// An ad hoc statement planned once, for running it many times
/// ([`Database::execute_ad_hoc`]).
#[derive(Clone, Debug)]
pub struct AdHoc {
    /// The catalog it was planned against.
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) proc: Arc<Procedure>,
}

impl AdHoc {
    /// The planned statement.
    pub fn prepared(&self) -> &permafrost_sql::Prepared {
        &self.proc.statements[0]
    }
}

/// A procedure looked up once, for calling it many times.
#[derive(Clone, Debug)]
pub struct ProcHandle {
    pub(crate) proc: Arc<Procedure>,
}

impl ProcHandle {
    pub fn name(&self) -> &str {
        &self.proc.name
    }

    /// The declared arguments, when the procedure has a signature (SQL-defined ones do).
    pub fn signature(&self) -> Option<&[(String, DataType)]> {
        self.proc.def.signature.as_deref()
    }

    /// The `CREATE PROCEDURE` text of a SQL-defined procedure.
    pub fn source(&self) -> Option<&str> {
        self.proc.def.source.as_deref()
    }

    /// Where its transactions run.
    pub fn partitioning(&self) -> Partitioning {
        self.proc.partitioning
    }

    /// Columns of the rows it returns, when known from its last statement.
    pub fn columns(&self) -> Option<&Arc<[permafrost_sql::ColumnInfo]>> {
        self.proc.statements.last().map(|p| p.columns())
    }
}

/// A partition not given a thread yet, with its queue ([`Database::open_parts`]).
pub(crate) type Unstarted = (Partition, Receiver<Msg>);

impl Database {
    /// Opens an empty database with `config`. With the anti-cache on, each partition gets
    /// a fresh block file in the anti-cache directory.
    pub fn open(config: Config) -> Result<Database> {
        Database::open_with_fs(config, Arc::new(permafrost_io::RealFs))
    }

    /// [`Database::open`] with the file I/O of the command log, the block files and the
    /// snapshots done through `fs` (tests inject faults with [`permafrost_io::FaultyFs`]).
    pub fn open_with_fs(config: Config, fs: Arc<dyn permafrost_io::Fs>) -> Result<Database> {
        let (db, parts) = Database::open_parts(config, fs)?;
        let mut threads = Vec::with_capacity(parts.len());
        let mut cells = Vec::with_capacity(parts.len());
        for (i, (part, rx)) in parts.into_iter().enumerate() {
            let cell = Arc::new(PartitionCell::new(part, db.inner.shared.queues[i].clone()));
            cells.push(cell.clone());
            let shared = db.inner.shared.clone();
            let t = std::thread::Builder::new()
                .name(format!("partition-{i}"))
                .stack_size(permafrost_sql::limits::EXECUTION_STACK)
                .spawn(move || crate::partition::run::run(cell, rx, shared, i as u32))
                .map_err(|e| Error::Internal(format!("cannot start partition thread: {e}")))?;
            threads.push(t);
        }
        db.shared().set_cells(cells);
        if let Ok(mut t) = db.inner.threads.lock() {
            *t = threads;
        }
        Ok(db)
    }

    /// Opens a database whose partitions are returned, with their queues, instead of
    /// started: [`Database::open_with_fs`] gives each a thread, the step harness
    /// (stepper.rs) runs their messages one at a time.
    pub(crate) fn open_parts(config: Config, fs: Arc<dyn permafrost_io::Fs>) -> Result<(Database, Vec<Unstarted>)> {
        let n = config.partitions as usize;
        let (senders, receivers): (Vec<Sender<Msg>>, Vec<Receiver<Msg>>) =
            (0..n).map(|_| crossbeam_channel::unbounded()).unzip();
        let block_io = config
            .anticache
            .as_ref()
            .map(|ac| Arc::new(BlockIo::start(ac.fetch_depth)));
        let keep_blocks = match &config.snapshots {
            Some(s) => !permafrost_durability::snapshot::list(&*fs, &s.dir)?.is_empty(),
            None => false,
        };
        let mut caches = Vec::with_capacity(n);
        for (i, sender) in senders.iter().enumerate() {
            caches.push(match (&config.anticache, &block_io) {
                (Some(cfg), Some(io)) => {
                    let tx = sender.clone();
                    let read_done: ReadDone = Arc::new(move |block, result| {
                        let _ = tx.send(Msg::Fetched { block, result });
                    });
                    let tx = sender.clone();
                    let write_done: WriteDone = Arc::new(move |blocks, result| {
                        let _ = tx.send(Msg::Written { blocks, result });
                    });
                    // Block files are kept when a snapshot may refer to them.
                    let open = if keep_blocks {
                        AntiCache::open_existing
                    } else {
                        AntiCache::new
                    };
                    Some(open(i as u32, cfg.clone(), &*fs, io.clone(), read_done, write_done)?)
                }
                _ => None,
            });
        }
        let log = match &config.command_log {
            Some(cfg) => Some(Arc::new(permafrost_durability::CommandLog::open_with(
                cfg.clone(),
                fs.clone(),
            )?)),
            None => None,
        };
        let recover_through = log.as_ref().map_or(0, |l| l.last_lsn());
        let scan_holds = caches.iter().map(|c| c.as_ref().map(AntiCache::scan_hold)).collect();
        let statement_pool =
            permafrost_sql::workmem::MemoryPool::new(Shared::statement_pool_limit(config.memory_limit));
        let gates = crate::partition::gates::Gates::new(config.partitions);
        let shared = Arc::new(Shared {
            scan_holds,
            statement_pool,
            moved_running: Default::default(),
            inline: std::sync::OnceLock::new(),
            log,
            fs,
            config,
            senders,
            queues: (0..n).map(|_| Arc::new(QueueState::default())).collect(),
            stats: (0..n).map(|_| Arc::new(PartitionStats::default())).collect(),
            schema: ArcSwap::from_pointee(SchemaState {
                catalog: Arc::new(Catalog::new()),
                procs: HashMap::new(),
            }),
            mp_order: Mutex::new(1),
            any_turn: std::sync::atomic::AtomicU32::new(0),
            write_clock: Arc::default(),
            gates,
        });
        let parts: Vec<Unstarted> = receivers
            .into_iter()
            .enumerate()
            .zip(caches)
            .map(|((i, rx), ac)| (Partition::new(i as u32, shared.clone(), ac), rx))
            .collect();
        let db = Database {
            owner: Some(Arc::new(Owner {
                periodic: Mutex::new(None),
            })),
            inner: Arc::new(Inner {
                shared,
                threads: Mutex::new(Vec::new()),
                ddl: Mutex::new(()),
                recover_through,
                history: Mutex::new(Vec::new()),
                snapshots: Snapshots::default(),
                data_dir: std::sync::OnceLock::new(),
            }),
        };
        // Nothing to recover: snapshots may start at once (else `recover` allows them).
        let ready = recover_through == 0 && !keep_blocks;
        db.inner
            .snapshots
            .ready
            .store(ready, std::sync::atomic::Ordering::Release);
        // Numbered after every snapshot file present, loadable or not, so that a new one
        // never takes the name of an old one.
        let first_epoch = db
            .config()
            .snapshots
            .as_ref()
            .and_then(|s| permafrost_durability::snapshot::list(&*db.shared().fs, &s.dir).ok())
            .and_then(|l| l.last().map(|(e, _)| e + 1))
            .unwrap_or(1);
        db.inner
            .snapshots
            .next_epoch
            .store(first_epoch, std::sync::atomic::Ordering::Release);
        if db.config().snapshots.is_some() {
            let periodic = db.start_periodic_snapshots()?;
            if let Some(owner) = &db.owner
                && let Ok(mut p) = owner.periodic.lock()
            {
                *p = Some(periodic);
            }
        }
        Ok((db, parts))
    }

    /// A handle that does not keep the database open.
    pub(crate) fn weak(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    pub(crate) fn from_weak(w: &std::sync::Weak<Inner>) -> Option<Database> {
        w.upgrade().map(|inner| Database { owner: None, inner })
    }

    /// The schema statements that built the current schema.
    pub(crate) fn history(&self) -> Vec<String> {
        self.inner.history.lock().map(|h| h.clone()).unwrap_or_default()
    }

    pub(crate) fn recover_through(&self) -> u64 {
        self.inner.recover_through
    }

    /// The command log's figures, when there is one.
    pub fn log_stats(&self) -> Option<permafrost_durability::LogStats> {
        self.shared().log.as_ref().map(|l| l.stats())
    }

    /// The write clock now ([`Shared::write_clock`]): what an interactive transaction
    /// notes before it submits a read ([`crate::TxnStatement::seen`]).
    pub fn write_clock(&self) -> u64 {
        self.shared().write_clock.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// The shared state, to keep in a future that outlives this borrow.
    pub(crate) fn shared_arc(&self) -> Arc<Shared> {
        self.inner.shared.clone()
    }

    pub fn config(&self) -> &Config {
        &self.shared().config
    }

    pub fn partitions(&self) -> u32 {
        self.shared().config.partitions
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.shared().schema.load().catalog.clone()
    }

    /// Runs DDL (one or more `;`-separated CREATE/DROP TABLE/INDEX statements). Each
    /// statement is applied at every partition at one point of the transaction order,
    /// all or nothing; registered procedures are re-planned against the new schema.
    pub fn execute_ddl(&self, sql: &str) -> Result<()> {
        self.execute_ddl_logged(sql, true)
    }

    /// [`Database::execute_ddl`]; `log`: whether the command log records the statements
    /// (not when they are replayed from it).
    pub(crate) fn execute_ddl_logged(&self, sql: &str, log: bool) -> Result<()> {
        permafrost_sql::limits::with_stack_for(sql, || self.apply_ddl(sql, log))
    }

    /// Checks that `texts` (schema changes, in order) would apply to the current schema,
    /// without applying them.
    pub fn check_ddl(&self, texts: &[String]) -> Result<()> {
        let joined = texts.join(";\n");
        permafrost_sql::limits::with_stack_for(&joined, || {
            let stmts = Self::parse_ddl(texts)?;
            let state = self.shared().schema.load_full();
            let mut catalog = (*state.catalog).clone();
            for (_, stmt) in &stmts {
                for c in &permafrost_sql::ddl::plan_ddl(&catalog, stmt)? {
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
                .inner
                .ddl
                .lock()
                .map_err(|_| Error::Internal("ddl lock poisoned".into()))?;
            let state = self.shared().schema.load_full();
            let mut catalog = (*state.catalog).clone();
            let mut changes = Vec::new();
            for (_, stmt) in &stmts {
                for c in permafrost_sql::ddl::plan_ddl(&catalog, stmt)? {
                    catalog = catalog.apply(&c)?;
                    changes.push(c);
                }
            }
            if changes.is_empty() {
                return Ok(());
            }
            self.install_schema(&state, changes, Arc::new(catalog), joined.clone(), true)?;
            // One record of the schema log too, so that a crash keeps all or none.
            self.push_history(&joined)
        })
    }

    /// The statements of schema-change texts, each with its own text.
    fn parse_ddl(texts: &[String]) -> Result<Vec<(String, permafrost_sql::parse::Statement)>> {
        let mut stmts = Vec::new();
        for t in texts {
            for text in permafrost_sql::script::split(t)? {
                for stmt in permafrost_sql::parse::parse_statements(&text)? {
                    stmts.push((text.clone(), stmt));
                }
            }
        }
        Ok(stmts)
    }

    /// Installs a schema (`catalog`, reached by `changes`) at every partition, with the
    /// procedures that still plan against it; `log`: the command log records `sql`.
    fn install_schema(
        &self,
        state: &SchemaState,
        changes: Vec<permafrost_sql::DdlChange>,
        catalog: Arc<permafrost_sql::Catalog>,
        sql: String,
        log: bool,
    ) -> Result<()> {
        // Procedures whose statements no longer plan (a table they use was dropped) are
        // unregistered with the schema change.
        let procs = state
            .procs
            .iter()
            .filter_map(|(name, p)| {
                Procedure::prepare(p.def.clone(), &catalog)
                    .ok()
                    .map(|p| (name.clone(), Arc::new(p)))
            })
            .collect();
        let next = Arc::new(SchemaState { catalog, procs });
        let work = MpWork::Ddl {
            changes,
            next,
            sql,
            log,
        };
        self.run_mp_work(work, self.shared().all_partitions())?;
        Ok(())
    }

    fn apply_ddl(&self, sql: &str, log: bool) -> Result<()> {
        let stmts = Self::parse_ddl(&[sql.to_string()])?;
        let _guard = self
            .inner
            .ddl
            .lock()
            .map_err(|_| Error::Internal("ddl lock poisoned".into()))?;
        for (text, stmt) in &stmts {
            let state = self.shared().schema.load_full();
            let changes = permafrost_sql::ddl::plan_ddl(&state.catalog, stmt)?;
            if changes.is_empty() {
                continue;
            }
            let mut catalog = (*state.catalog).clone();
            for c in &changes {
                catalog = catalog.apply(c)?;
            }
            self.install_schema(&state, changes, Arc::new(catalog), text.clone(), log)?;
            self.push_history(text)?;
        }
        Ok(())
    }

    pub(crate) fn run_mp_work(&self, work: MpWork, parts: Vec<u32>) -> Result<Rows> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.shared().submit_mp(work, parts, Reply::Oneshot(tx))?;
        rx.blocking_recv().unwrap_or(Err(Error::Shutdown))
    }

    /// Registers a procedure, planning its statements against the current schema.
    pub fn register(&self, def: ProcedureDef) -> Result<ProcHandle> {
        self.register_inner(def, false)
    }

    /// Runs `CREATE [OR REPLACE] PROCEDURE ... AS $$ ... $$` (see
    /// [`permafrost_sql::script`]): registers a SQL-defined procedure.
    pub fn create_procedure(&self, sql: &str) -> Result<ProcHandle> {
        self.create_procedure_logged(sql, true)
    }

    pub(crate) fn create_procedure_logged(&self, sql: &str, log: bool) -> Result<ProcHandle> {
        let src = permafrost_sql::script::parse_create_procedure(sql)?;
        let replace = src.or_replace;
        // Under the schema lock from registration to the log record, so that a snapshot
        // holds the procedure exactly when its record is before the snapshot's cut.
        let _guard = self.lock_ddl()?;
        let h = self.register_locked(ProcedureDef::from_sql(src, sql), replace)?;
        if log {
            self.log_schema(sql)?;
        }
        self.push_history(sql)?;
        Ok(h)
    }

    pub(crate) fn lock_ddl(&self) -> Result<std::sync::MutexGuard<'_, ()>> {
        self.inner
            .ddl
            .lock()
            .map_err(|_| Error::Internal("ddl lock poisoned".into()))
    }

    /// Remembers a schema statement that took effect (snapshots save the list; called under
    /// the schema lock) and, once the database has a data directory, appends it to the
    /// schema log. Fails if the change took effect but could not be recorded there.
    pub(crate) fn push_history(&self, sql: &str) -> Result<()> {
        if let Ok(mut h) = self.inner.history.lock() {
            h.push(sql.to_string());
        }
        match self.inner.data_dir.get() {
            Some((_, log)) => log.append(sql).map_err(|e| Error::Log {
                message: format!("the schema change took effect but could not be recorded: {e}"),
                sqlstate: "58030",
            }),
            None => Ok(()),
        }
    }

    /// Keeps the data directory's lock and schema log with the database (datadir.rs).
    pub(crate) fn attach_data_dir(&self, lock: permafrost_io::DirLock, log: SchemaLog) {
        let _ = self.inner.data_dir.set((lock, log));
    }

    /// The data directory's lock, if the database was opened in one.
    pub fn data_dir_lock(&self) -> Option<&permafrost_io::DirLock> {
        self.inner.data_dir.get().map(|(l, _)| l)
    }

    /// Runs `DROP PROCEDURE [IF EXISTS] name`; returns whether one was dropped.
    pub fn drop_procedure(&self, sql: &str) -> Result<bool> {
        self.drop_procedure_logged(sql, true)
    }

    pub(crate) fn drop_procedure_logged(&self, sql: &str, log: bool) -> Result<bool> {
        let (name, if_exists) = permafrost_sql::script::parse_drop_procedure(sql)?;
        let _guard = self.lock_ddl()?;
        match self.unregister_locked(&name) {
            Ok(()) => {
                if log {
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

    fn submit(&self, h: &ProcHandle, params: Vec<Value>, reply: Reply) -> Result<()> {
        submit(self.shared(), &h.proc, params, reply, Dispatch::Queue).map(|_| ())
    }

    /// Calls a procedure and waits for its result.
    pub fn call(&self, name: &str, params: Vec<Value>) -> Result<Rows> {
        let h = self.procedure(name)?;
        self.call_handle(&h, params)
    }

    /// Calls a procedure through a handle and waits for its result.
    pub fn call_handle(&self, h: &ProcHandle, params: Vec<Value>) -> Result<Rows> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(h, params, Reply::Oneshot(tx))?;
        rx.blocking_recv().unwrap_or(Err(Error::Shutdown))
    }

    /// Calls a procedure through a handle; the future resolves to its result.
    pub fn call_handle_async(
        &self,
        h: &ProcHandle,
        params: Vec<Value>,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let submitted = self.submit(h, params, Reply::Oneshot(tx));
        async move {
            submitted?;
            rx.await.unwrap_or(Err(Error::Shutdown))
        }
    }

    /// [`Database::call_handle_async`] for a caller that may ask the call to stop (`stop`:
    /// a cancel request, a statement timeout, a client gone): its statements stop at their
    /// next look, the transaction rolls back and the future resolves to 57014; a call that
    /// committed first resolves to its result.
    pub fn call_handle_stoppable(
        &self,
        h: &ProcHandle,
        params: Vec<Value>,
        stop: StopFlag,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        self.call_stoppable_with(h, params, stop, Dispatch::Queue)
    }

    /// [`Database::call_handle_stoppable`] where `here` says the caller has no call of its
    /// own in flight (an ordinary client's connection): a short single-partition call
    /// (every statement a point access) then runs on the calling thread when its partition
    /// is free, instead of being handed to the partition's thread and back
    /// (partition/cell.rs). The future is then ready at once, or in sync mode once its
    /// group commit is durable.
    pub fn call_handle_here(
        &self,
        h: &ProcHandle,
        params: Vec<Value>,
        stop: StopFlag,
        here: bool,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        let dispatch = if here { Dispatch::Inline } else { Dispatch::Queue };
        self.call_stoppable_with(h, params, stop, dispatch)
    }

    fn call_stoppable_with(
        &self,
        h: &ProcHandle,
        params: Vec<Value>,
        stop: StopFlag,
        dispatch: Dispatch<'_>,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let submitted = submit(self.shared(), &h.proc, params, Reply::Stoppable(tx, stop), dispatch).map(|_| ());
        async move {
            submitted?;
            rx.await.unwrap_or(Err(Error::Shutdown))
        }
    }

    /// Calls a procedure; the future resolves to its result. Many calls may be in flight.
    pub fn call_async(&self, name: &str, params: Vec<Value>) -> impl Future<Output = Result<Rows>> + Send + 'static {
        let submitted = self.procedure(name).and_then(|h| {
            let (tx, rx) = tokio::sync::oneshot::channel();
            self.submit(&h, params, Reply::Oneshot(tx)).map(|_| rx)
        });
        async move {
            match submitted {
                Ok(rx) => rx.await.unwrap_or(Err(Error::Shutdown)),
                Err(e) => Err(e),
            }
        }
    }

    /// Runs one SQL statement as its own transaction and waits for the result. DDL is
    /// applied as by [`Database::execute_ddl`]. Other statements run at the one partition
    /// their parameters pin (a single-partition transaction) or else at all partitions.
    pub fn execute_sql(&self, sql: &str, params: Vec<Value>) -> Result<Rows> {
        let prepared = permafrost_sql::limits::with_stack_for(sql, || -> Result<_> {
            let stmts = permafrost_sql::parse::parse_statements(sql)?;
            let stmt = match stmts.as_slice() {
                [one] => one,
                [] => return Err(SqlError::Syntax("empty statement".into()).into()),
                _ => return Err(SqlError::Syntax("execute one statement at a time".into()).into()),
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
        let rx = self.submit_ad_hoc(&self.ad_hoc(prepared), params)?;
        crate::scan::complete(
            rx.blocking_recv().unwrap_or(Err(Error::Shutdown))?,
            self.statement_memory(),
        )
    }

    /// Runs a planned DML or query statement as its own transaction; the future resolves
    /// to its result. The partition thread is never blocked on the caller; many may be in
    /// flight.
    pub fn execute_prepared(
        &self,
        prepared: permafrost_sql::Prepared,
        params: Vec<Value>,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static {
        self.execute_ad_hoc(&self.ad_hoc(prepared), params)
    }

    /// Wraps a planned statement for running many times ([`Database::execute_ad_hoc`]).
    pub fn ad_hoc(&self, prepared: permafrost_sql::Prepared) -> AdHoc {
        AdHoc {
            catalog: self.catalog(),
            proc: Arc::new(Procedure::ad_hoc(prepared)),
        }
    }

    /// Runs an ad hoc statement planned once (the server's prepared statements): like
    /// [`Database::execute_prepared`] without planning or allocating the plan again. A plan
    /// made before a schema change is planned again against the current catalog.
    pub fn execute_ad_hoc(
        &self,
        stmt: &AdHoc,
        params: Vec<Value>,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        let submitted = self.submit_ad_hoc(stmt, params);
        let limit = self.statement_memory();
        async move {
            match submitted {
                // A scan's evicted rest is read here (this waits for block reads).
                Ok(rx) => crate::scan::complete(rx.await.unwrap_or(Err(Error::Shutdown))?, limit),
                Err(e) => Err(e),
            }
        }
    }

    /// [`Database::execute_ad_hoc`] for a caller that may ask the statement to stop
    /// (`stop`): it then stops at its next look, rolls back, and the future resolves to
    /// 57014; a statement that committed first resolves to its result. The result of a
    /// scan over evicted data may go on after its rows: the caller reads the rest with
    /// [`Rows::take_rest`] (a [`permafrost_sql::MoreRows`], which blocks while it reads
    /// blocks; `stop` stops it too).
    pub fn execute_ad_hoc_stoppable(
        &self,
        stmt: &AdHoc,
        params: Vec<Value>,
        stop: StopFlag,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        self.execute_stoppable_with(stmt, params, stop, false)
    }

    /// [`Database::execute_ad_hoc_stoppable`] where `here` says the caller has no
    /// statement of its own in flight (an ordinary client's connection): a point statement
    /// (a read or write by exact key, a few rows of VALUES) at a single partition then runs
    /// on the calling thread when its partition is free, instead of being handed to the
    /// partition's thread and back (partition/cell.rs). The future is then ready at once,
    /// or in sync mode once its group commit is durable.
    pub fn execute_ad_hoc_here(
        &self,
        stmt: &AdHoc,
        params: Vec<Value>,
        stop: StopFlag,
        here: bool,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        self.execute_stoppable_with(stmt, params, stop, here)
    }

    fn execute_stoppable_with(
        &self,
        stmt: &AdHoc,
        params: Vec<Value>,
        stop: StopFlag,
        inline: bool,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        let submitted = self.submit_ad_hoc_with(stmt, params, Some(stop), inline);
        async move {
            match submitted {
                Ok(rx) => rx.await.unwrap_or(Err(Error::Shutdown)),
                Err(e) => Err(e),
            }
        }
    }

    fn submit_ad_hoc(&self, stmt: &AdHoc, params: Vec<Value>) -> Result<tokio::sync::oneshot::Receiver<Result<Rows>>> {
        self.submit_ad_hoc_with(stmt, params, None, false)
    }

    fn submit_ad_hoc_with(
        &self,
        stmt: &AdHoc,
        params: Vec<Value>,
        stop: Option<StopFlag>,
        inline: bool,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<Rows>>> {
        let current = self.catalog();
        let proc = if Arc::ptr_eq(&current, &stmt.catalog) {
            stmt.proc.clone()
        } else {
            Arc::new(stmt.proc.replan(&current)?)
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reply = match stop {
            Some(stop) => Reply::Stoppable(tx, stop),
            None => Reply::Oneshot(tx),
        };
        submit_statement(self.shared(), proc, params, reply, inline)?;
        Ok(rx)
    }

    /// Inserts rows into `table` as one transaction over all partitions: every row is
    /// stored, or (on any error: a constraint, the memory budget, a shutdown) none is.
    /// `rows` holds the values of `columns` for each row, one row after the other; columns
    /// left out get their defaults. The future resolves to the number of rows inserted.
    /// This is what COPY FROM runs.
    pub fn insert_rows(
        &self,
        table: &str,
        columns: &[String],
        rows: Vec<Value>,
    ) -> impl Future<Output = Result<u64>> + Send + 'static + use<> {
        let submitted = self.submit_rows(table, columns, rows);
        async move {
            match submitted {
                Ok(rx) => rx.await.unwrap_or(Err(Error::Shutdown)).map(|r| r.affected),
                Err(e) => Err(e),
            }
        }
    }

    fn submit_rows(
        &self,
        table: &str,
        columns: &[String],
        rows: Vec<Value>,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<Rows>>> {
        if columns.is_empty() || !rows.len().is_multiple_of(columns.len()) {
            return Err(Error::Internal(format!(
                "{} values are not rows of {} columns",
                rows.len(),
                columns.len()
            )));
        }
        let stmt = self.bulk_insert(table, columns)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let work = MpWork::Call {
            proc: stmt.proc,
            params: rows.into(),
            restarts: 0,
            replay: None,
        };
        self.shared()
            .submit_mp(work, self.shared().all_partitions(), Reply::Oneshot(tx))?;
        Ok(rx)
    }

    /// The bulk insert of rows of `columns` into `table` (what COPY FROM runs): a one-row
    /// INSERT whose parameters are the rows one after the other, run over all partitions
    /// as one transaction ([`Database::insert_rows`], or a statement of an interactive
    /// transaction, [`TxnStatement`](crate::TxnStatement)).
    pub fn bulk_insert(&self, table: &str, columns: &[String]) -> Result<AdHoc> {
        let quote = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
        let cols: Vec<String> = columns.iter().map(|c| quote(c)).collect();
        let params: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "{}INSERT INTO {} ({}) VALUES ({})",
            crate::procedure::BULK_MARK,
            quote(table),
            cols.join(", "),
            params.join(", ")
        );
        let catalog = self.catalog();
        let prepared = permafrost_sql::prepare(&catalog, &sql)?;
        Ok(AdHoc {
            catalog,
            proc: Arc::new(Procedure::bulk_insert(prepared)),
        })
    }
}
