//! The embedded database: [`Database::open`] starts one executor thread per partition,
//! and the handle keeps what they share.
//!
//! What a database does is in files of their own: requests and their answers
//! ([`Database::submit`], request.rs), the registry of tables and procedures (DDL and
//! registration, registry.rs), interactive transactions (interactive.rs), pipelining
//! sessions (session.rs), looking into a running database (memory, counters, a closure at
//! a partition: inspect.rs), snapshots (snapshot/) and recovery (recovery.rs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, Sender};
use permafrost_anticache::{AntiCache, BlockIo, ReadDone, WriteDone};
use permafrost_sql::{Catalog, Rows};
use permafrost_types::{DataType, Value};

use crate::config::Config;
use crate::counters::PartitionStats;
use crate::error::{Error, Result};
use crate::partition::cell::PartitionCell;
use crate::partition::fence::QueueState;
use crate::partition::msg::{MpWork, Msg};
use crate::partition::state::Partition;
use crate::procedure::{Partitioning, Procedure, SchemaState};
use crate::reply::Reply;
use crate::schema_log::SchemaLog;
use crate::shared::Shared;
use crate::snapshot::job::{Periodic, Snapshots};

pub(crate) struct Inner {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Serializes schema changes and registrations (never held by partition threads).
    pub(crate) ddl: Mutex<()>,
    /// The last command-log record present at open: what [`Database::recover`] replays.
    recover_through: u64,
    /// The schema statements that built the current schema, in order (snapshots hold it).
    pub(crate) history: Mutex<Vec<String>>,
    pub(crate) snapshots: Snapshots,
    /// The data directory's lock and schema log, once the database is opened in one
    /// (datadir.rs): held until the database is dropped; every schema change from then on
    /// is appended to the schema log.
    pub(crate) data_dir: std::sync::OnceLock<(permafrost_io::DirLock, SchemaLog)>,
    /// The Rust procedures built into the program, which `CREATE PROCEDURE ... LANGUAGE
    /// internal` makes callable ([`Database::provide_internal`]).
    pub(crate) library: Mutex<crate::procedure::Library>,
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
/// ([`Request::statement`](crate::Request::statement)).
#[derive(Clone, Debug)]
pub struct AdHoc {
    /// The catalog it was planned against.
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) proc: Arc<Procedure>,
}

impl AdHoc {
    /// The catalog it was planned against.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

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

    /// The `CREATE PROCEDURE` text of a procedure made by one (SQL-defined, or `LANGUAGE
    /// internal`).
    pub fn source(&self) -> Option<&str> {
        self.proc.def.source.as_deref()
    }

    /// The statements of a SQL-defined procedure, in order (its arguments are `$1, $2,
    /// ...` in them); `None` for one written in Rust (the embedded API's, or one built in
    /// and named by `LANGUAGE internal`), whose body only it can run.
    pub fn sql_body(&self) -> Option<&[String]> {
        self.proc.def.sql_body.then_some(self.proc.def.statements.as_slice())
    }

    /// A call's arguments converted to the declared types, as a call converts them.
    pub fn coerce_args(&self, args: Vec<Value>) -> Result<Vec<Value>> {
        self.proc.coerce(args)
    }

    /// Where its transactions run.
    pub fn partitioning(&self) -> Partitioning {
        self.proc.partitioning
    }

    /// Columns of the rows it returns: those it declares ([`crate::ProcedureDef::returns`]),
    /// else its last statement's.
    pub fn columns(&self) -> Option<&Arc<[permafrost_sql::ColumnInfo]>> {
        self.proc
            .def
            .returns
            .as_ref()
            .or_else(|| self.proc.statements.last().map(|p| p.columns()))
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
        let block_io = config.anticache.as_ref().map(|ac| {
            Arc::new(BlockIo::start_with_stack(
                ac.fetch_depth,
                permafrost_sql::limits::EXECUTION_STACK,
            ))
        });
        let keep_blocks = match &config.snapshots {
            Some(s) => !permafrost_durability::snapshot::list(&*fs, &s.dir)?.is_empty(),
            None => false,
        };
        // The database, for the block reads' completions: set once it exists.
        let landing: Arc<std::sync::OnceLock<std::sync::Weak<Shared>>> = Arc::default();
        let mut caches = Vec::with_capacity(n);
        for (i, sender) in senders.iter().enumerate() {
            caches.push(match (&config.anticache, &block_io) {
                (Some(cfg), Some(io)) => {
                    let tx = sender.clone();
                    let here = landing.clone();
                    let read_done: ReadDone = Arc::new(move |block, result| {
                        // Merged on the thread the read completed on when the partition
                        // is free (partition/cell.rs), else queued.
                        let msg = Msg::Fetched { block, result };
                        let shared = here.get().and_then(std::sync::Weak::upgrade);
                        let msg = match shared.as_ref().and_then(|s| s.cells()).and_then(|c| c.get(i)) {
                            Some(cell) => match cell.try_handle(msg) {
                                Ok(()) => return,
                                Err(m) => m,
                            },
                            None => msg,
                        };
                        let _ = tx.send(msg);
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
        let statement_pool = permafrost_sql::workmem::MemoryPool::within_budget(
            Shared::statement_pool_limit(config.memory_limit),
            usize::try_from(config.memory_limit).unwrap_or(usize::MAX),
            config.partitions as usize,
        );
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
            sequences: Default::default(),
            crossings: Default::default(),
        });
        let _ = landing.set(Arc::downgrade(&shared));
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
                library: Mutex::new(crate::procedure::Library::default()),
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

    /// Bytes statements have written to temporary files since the process started (their
    /// sorts, groupings and results past `work_mem`).
    pub fn temp_bytes_written(&self) -> u64 {
        permafrost_io::temp_bytes_written()
    }

    pub fn partitions(&self) -> u32 {
        self.shared().config.partitions
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.shared().schema.load().catalog.clone()
    }

    /// What `f` reads of the current catalog, without taking a reference to it (for a
    /// look on every statement's path).
    pub fn with_catalog<R>(&self, f: impl FnOnce(&Catalog) -> R) -> R {
        f(&self.shared().schema.load().catalog)
    }

    pub(crate) fn run_mp_work(&self, work: MpWork, parts: Vec<u32>) -> Result<Rows> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.shared().submit_mp(work, parts, Reply::Oneshot(tx))?;
        rx.blocking_recv().unwrap_or(Err(Error::Shutdown))
    }

    /// Wraps a planned statement for running many times ([`Request::statement`](crate::Request::statement)).
    pub fn ad_hoc(&self, prepared: permafrost_sql::Prepared) -> AdHoc {
        self.ad_hoc_in(self.catalog(), prepared)
    }

    /// Wraps a statement planned against `catalog` (a transaction block's draft,
    /// `SchemaDraft::catalog`).
    pub fn ad_hoc_in(&self, catalog: Arc<Catalog>, prepared: permafrost_sql::Prepared) -> AdHoc {
        AdHoc {
            catalog,
            proc: Arc::new(Procedure::ad_hoc(prepared)),
        }
    }

    /// The bulk insert of rows of `columns` into `table` (what COPY FROM runs): a one-row
    /// INSERT whose parameters are the rows one after the other, run over all partitions
    /// as one transaction ([`Request::rows`](crate::Request::rows), or a statement of an interactive
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
