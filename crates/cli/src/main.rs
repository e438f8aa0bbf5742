//! The `permafrost` command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod allocator;
mod config;
mod datadir;

use permafrost_bench::setup::{self, DbSettings};
use permafrost_bench::ycsb::{self, Mix, YcsbOptions};
use permafrost_executor::parse_size;

#[derive(Parser)]
#[command(
    name = "permafrost",
    version,
    about = "A main-memory OLTP database that keeps working when the data outgrows memory"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the database server: PostgreSQL clients connect to --listen.
    Serve(Box<ServeArgs>),
    /// Run a benchmark and print its figures.
    Bench {
        #[command(subcommand)]
        workload: Workload,
    },
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Settings file (TOML; keys as the flags, in snake_case). Flags and environment
    /// variables override it.
    #[arg(long, env = "PERMAFROST_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:5433] (other interfaces only when asked,
    /// e.g. 0.0.0.0:5433).
    #[arg(long, env = "PERMAFROST_LISTEN")]
    listen: Option<String>,
    /// Directory of the database's files [default: ./permafrost-data].
    #[arg(long, env = "PERMAFROST_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Address of the Prometheus endpoint (GET /metrics), or "off" [default: 127.0.0.1:9187].
    #[arg(long, env = "PERMAFROST_METRICS_LISTEN")]
    metrics_listen: Option<String>,
    /// TLS certificate chain (PEM); with --tls-key, clients may ask for TLS.
    #[arg(long, env = "PERMAFROST_TLS_CERT")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, env = "PERMAFROST_TLS_KEY")]
    tls_key: Option<PathBuf>,
    /// Client connections served at once (1 to 1000000); one more is refused with
    /// SQLSTATE 53300 [default: 10000].
    #[arg(long, env = "PERMAFROST_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// How long a new connection has to log in before it is closed (1s to 10m)
    /// [default: 60s].
    #[arg(long, env = "PERMAFROST_AUTHENTICATION_TIMEOUT")]
    authentication_timeout: Option<String>,
    #[command(flatten)]
    engine: EngineArgs,
}

/// The database's settings, shared by `serve` and the benchmarks (flags, environment, or
/// for `serve` the config file).
#[derive(Args, Debug)]
struct EngineArgs {
    /// Memory budget (e.g. 64MiB, 2GiB, plain bytes). Default: half of RAM.
    #[arg(long, env = "PERMAFROST_MEMORY_LIMIT", value_parser = parse_size_arg)]
    memory_limit: Option<u64>,
    /// Partitions (executor threads). Default: number of CPU cores.
    #[arg(long, env = "PERMAFROST_PARTITIONS")]
    partitions: Option<u32>,
    /// Anti-caching: on (evict cold data to disk past the memory limit) or off [default: on].
    #[arg(long, env = "PERMAFROST_ANTICACHE")]
    anticache: Option<String>,
    /// Bytes per eviction block, 1KiB to 4MiB [default: 4KiB].
    #[arg(long, env = "PERMAFROST_BLOCK_SIZE", value_parser = parse_size_arg)]
    block_size: Option<u64>,
    /// Merge policy for fetched blocks: tuple or block [default: tuple].
    #[arg(long, env = "PERMAFROST_MERGE")]
    merge: Option<String>,
    /// Tuple-merge: fraction of a block that may be holes before it is merged whole
    /// [default: 0.5].
    #[arg(long, env = "PERMAFROST_HOLE_THRESHOLD")]
    hole_threshold: Option<f64>,
    /// How evicted data is retrieved: abort-restart or synchronous [default: abort-restart].
    #[arg(long, env = "PERMAFROST_RETRIEVAL")]
    retrieval: Option<String>,
    /// Fraction of the memory limit at which eviction starts.
    #[arg(long, env = "PERMAFROST_EVICTION_THRESHOLD")]
    eviction_threshold: Option<f64>,
    /// Bytes evicted per round beyond what brings memory under the threshold.
    #[arg(long, env = "PERMAFROST_EVICTION_SIZE", value_parser = parse_size_arg)]
    eviction_size: Option<u64>,
    /// Cold-tuple policy: lru or clock [default: lru].
    #[arg(long, env = "PERMAFROST_COLD_POLICY")]
    cold_policy: Option<String>,
    /// Fraction of transactions that update the LRU chain (the paper's alpha).
    #[arg(long, env = "PERMAFROST_LRU_SAMPLE_RATE")]
    lru_sample_rate: Option<f64>,
    /// Restarts allowed per transaction for evicted data.
    #[arg(long, env = "PERMAFROST_MAX_RESTARTS")]
    max_restarts: Option<u32>,
    /// Command log: sync (a commit is acknowledged once its record is on disk), async
    /// (written in the background) or off [default: sync for serve, off for bench].
    #[arg(long, env = "PERMAFROST_COMMAND_LOG")]
    command_log: Option<String>,
    /// Group commit: how long the log writer gathers records before one write and
    /// fdatasync (e.g. 1ms, 200us, 0) [default: 0: the records that arrive while the
    /// previous group is written and synced make the next group].
    #[arg(long, env = "PERMAFROST_GROUP_COMMIT_WINDOW", value_parser = parse_duration_arg)]
    group_commit_window: Option<std::time::Duration>,
    /// Command log: bytes per segment file before a new one is started, 1MiB to 4GiB
    /// [default: 64MiB].
    #[arg(long, env = "PERMAFROST_LOG_SEGMENT_SIZE", value_parser = parse_size_arg)]
    log_segment_size: Option<u64>,
    /// Command log: on (the next segment is written full of zeros in the background, so
    /// group commits overwrite allocated blocks instead of growing the file) or off (for
    /// copy-on-write file systems, where that spares nothing) [default: on].
    #[arg(long, env = "PERMAFROST_LOG_PREALLOCATE")]
    log_preallocate: Option<String>,
    /// serve: time between snapshots (e.g. 5m, 30s), or off (only CHECKPOINT and
    /// --snapshot-log-size take them) [default: 5m]. Snapshots need the command log.
    #[arg(long, env = "PERMAFROST_SNAPSHOT_INTERVAL")]
    snapshot_interval: Option<String>,
    /// serve: also take a snapshot once the command log has grown by this much since the
    /// last one, bounding replay at restart; 0: off [default: 128MiB].
    #[arg(long, env = "PERMAFROST_SNAPSHOT_LOG_SIZE", value_parser = parse_size_arg)]
    snapshot_log_size: Option<u64>,
}

impl EngineArgs {
    /// The settings; `log_default` is the command log's mode when none is given.
    fn settings(&self, data_dir: Option<PathBuf>, log_default: &str) -> Result<DbSettings, String> {
        let anticache = on_off(self.anticache.as_deref(), true, "anticache")?;
        let log_preallocate = on_off(self.log_preallocate.as_deref(), true, "log_preallocate")?;
        if let Some(bytes) = self.log_segment_size {
            // The log's own check ("invalid setting log_segment_size: ..."), with the flag.
            let mut log = permafrost_executor::LogConfig::new("commandlog");
            log.segment_bytes = bytes;
            log.validate().map_err(|e| {
                let e = e.to_string();
                let detail = e.strip_prefix("invalid setting log_segment_size: ").unwrap_or(&e);
                format!("invalid setting log_segment_size (--log-segment-size): {detail}")
            })?;
        }
        Ok(DbSettings {
            partitions: self.partitions,
            memory_limit: self.memory_limit,
            anticache,
            data_dir,
            block_size: self.block_size,
            merge: setup::parse_merge(
                self.merge.as_deref().unwrap_or("tuple"),
                self.hole_threshold.unwrap_or(0.5),
            )?,
            retrieval: setup::parse_retrieval(self.retrieval.as_deref().unwrap_or("abort-restart"))?,
            cold_policy: setup::parse_cold_policy(self.cold_policy.as_deref().unwrap_or("lru"))?,
            eviction_threshold: self.eviction_threshold,
            eviction_size: self.eviction_size,
            max_restarts: self.max_restarts,
            lru_sample_rate: self.lru_sample_rate,
            command_log: self
                .command_log
                .as_deref()
                .unwrap_or(log_default)
                .parse::<permafrost_executor::LogMode>()
                .map_err(|e| e.to_string())?,
            group_commit_window: self.group_commit_window,
            segment_bytes: self.log_segment_size,
            log_preallocate,
            log_dir: None,
            snapshot_dir: None,
            snapshot_interval: match self.snapshot_interval.as_deref().unwrap_or("5m") {
                "off" | "0" => None,
                s => Some(parse_duration_arg(s).map_err(|e| format!("invalid setting snapshot_interval: {e}"))?),
            },
            snapshot_log_bytes: self.snapshot_log_size.unwrap_or(128 << 20),
        })
    }

    /// Fills the settings not given as flags or environment from the config file.
    fn fill_from(&mut self, f: &config::FileConfig) -> Result<(), String> {
        fn size(v: &Option<config::Size>, name: &str) -> Result<Option<u64>, String> {
            v.as_ref().map(|s| s.bytes(name)).transpose()
        }
        if self.memory_limit.is_none() {
            self.memory_limit = size(&f.memory_limit, "memory_limit")?;
        }
        if self.block_size.is_none() {
            self.block_size = size(&f.block_size, "block_size")?;
        }
        if self.eviction_size.is_none() {
            self.eviction_size = size(&f.eviction_size, "eviction_size")?;
        }
        if self.log_segment_size.is_none() {
            self.log_segment_size = size(&f.log_segment_size, "log_segment_size")?;
        }
        if self.snapshot_log_size.is_none() {
            self.snapshot_log_size = size(&f.snapshot_log_size, "snapshot_log_size")?;
        }
        self.snapshot_interval = self.snapshot_interval.take().or_else(|| f.snapshot_interval.clone());
        self.partitions = self.partitions.or(f.partitions);
        self.anticache = self.anticache.take().or_else(|| f.anticache.as_ref().map(|a| a.text()));
        self.log_preallocate = self
            .log_preallocate
            .take()
            .or_else(|| f.log_preallocate.as_ref().map(|a| a.text()));
        self.merge = self.merge.take().or_else(|| f.merge.clone());
        self.hole_threshold = self.hole_threshold.or(f.hole_threshold);
        self.retrieval = self.retrieval.take().or_else(|| f.retrieval.clone());
        self.eviction_threshold = self.eviction_threshold.or(f.eviction_threshold);
        self.cold_policy = self.cold_policy.take().or_else(|| f.cold_policy.clone());
        self.lru_sample_rate = self.lru_sample_rate.or(f.lru_sample_rate);
        self.max_restarts = self.max_restarts.or(f.max_restarts);
        self.command_log = self.command_log.take().or_else(|| f.command_log.clone());
        if self.group_commit_window.is_none()
            && let Some(w) = &f.group_commit_window
        {
            self.group_commit_window =
                Some(parse_duration_arg(w).map_err(|e| format!("invalid setting group_commit_window: {e}"))?);
        }
        Ok(())
    }
}

/// An on/off setting's value (`true`/`false` accepted too); `default` when not given.
fn on_off(value: Option<&str>, default: bool, name: &str) -> Result<bool, String> {
    match value {
        None => Ok(default),
        Some("on" | "true") => Ok(true),
        Some("off" | "false") => Ok(false),
        Some(other) => Err(format!("invalid setting {name}: \"{other}\" (expected on or off)")),
    }
}

/// Parses a duration: `1ms`, `200us`, `0.5s`, `5m`, `1h`, `0` (no unit: milliseconds).
fn parse_duration_arg(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("\"{s}\" is not a duration (examples: 1ms, 200us, 0)"))?;
    let secs = match unit.trim() {
        "h" => n * 3600.0,
        "m" | "min" => n * 60.0,
        "s" => n,
        "ms" | "" => n / 1e3,
        "us" | "µs" => n / 1e6,
        other => {
            return Err(format!(
                "\"{s}\" has an unknown unit \"{other}\" (use h, m, s, ms or us)"
            ));
        }
    };
    std::time::Duration::try_from_secs_f64(secs).map_err(|_| format!("\"{s}\" is out of range"))
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

fn parse_addr(setting: &str, v: &str) -> Result<std::net::SocketAddr, String> {
    v.parse()
        .map_err(|e| format!("invalid setting {setting}: \"{v}\" is not an address like 127.0.0.1:5433 ({e})"))
}

/// Raises the open-file limit to its hard limit: each client connection is a socket.
fn raise_open_file_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a pointer to a valid rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            let want = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                r = want;
            }
        }
    }
    r.rlim_cur
}

fn run_serve(mut args: ServeArgs) -> Result<(), String> {
    let files = raise_open_file_limit();
    if files < 2048 {
        eprintln!(
            "note: the open-file limit is {files}: at most about {} client connections",
            files.saturating_sub(64)
        );
    }
    let file = match &args.config {
        Some(p) => config::FileConfig::load(p)?,
        None => config::FileConfig::default(),
    };
    args.engine.fill_from(&file)?;
    let listen = parse_addr(
        "listen",
        args.listen
            .as_deref()
            .or(file.listen.as_deref())
            .unwrap_or("127.0.0.1:5433"),
    )?;
    let metrics_listen = match args
        .metrics_listen
        .as_deref()
        .or(file.metrics_listen.as_deref())
        .unwrap_or("127.0.0.1:9187")
    {
        "off" => None,
        a => Some(parse_addr("metrics_listen", a)?),
    };
    let data_dir = args
        .data_dir
        .clone()
        .or(file.data_dir.clone())
        .unwrap_or_else(|| PathBuf::from("./permafrost-data"));
    let tls = match (
        args.tls_cert.as_ref().or(file.tls_cert.as_ref()),
        args.tls_key.as_ref().or(file.tls_key.as_ref()),
    ) {
        (Some(c), Some(k)) => Some(permafrost_server::tls_acceptor(c, k).map_err(|e| e.to_string())?),
        (None, None) => None,
        _ => return Err("invalid settings tls_cert/tls_key: give both or neither".into()),
    };
    let users: Vec<permafrost_server::User> = file
        .users
        .iter()
        .map(|u| permafrost_server::User::new(u.name.clone(), &u.password))
        .collect();
    let trust_remote = file.trust_remote.unwrap_or(false);
    let max_connections = args
        .max_connections
        .or(file.max_connections)
        .unwrap_or(permafrost_server::DEFAULT_MAX_CONNECTIONS);
    if !(1..=1_000_000).contains(&max_connections) {
        return Err(format!(
            "invalid setting max_connections: {max_connections} (allowed: 1 to 1000000)"
        ));
    }
    let authentication_timeout = match args
        .authentication_timeout
        .as_deref()
        .or(file.authentication_timeout.as_deref())
    {
        None => permafrost_server::DEFAULT_AUTHENTICATION_TIMEOUT,
        Some(t) => {
            let d = parse_duration_arg(t).map_err(|e| format!("invalid setting authentication_timeout: {e}"))?;
            if !(std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(600)).contains(&d) {
                return Err(format!(
                    "invalid setting authentication_timeout: {t} (allowed: 1s to 10m)"
                ));
            }
            d
        }
    };
    if users.is_empty() && !trust_remote && !listen.ip().is_loopback() {
        eprintln!(
            "note: listening on {listen} without users: only clients on this machine can log in (configure [[users]] \
             in the config file for password logins, or trust_remote = true)"
        );
    }
    std::fs::create_dir_all(&data_dir)
        .map_err(|e| format!("invalid setting data_dir: cannot create {}: {e}", data_dir.display()))?;
    datadir::DataDirLock::acquire(&data_dir)?.watch(std::time::Duration::from_secs(1));
    let mut settings = args.engine.settings(Some(data_dir.join("anticache")), "sync")?;
    settings.log_dir = Some(data_dir.join("commandlog"));
    let logged = settings.command_log != permafrost_executor::LogMode::Off;
    if logged {
        settings.snapshot_dir = Some(data_dir.join("snapshots"));
    }
    let (db, _dir) = settings.open().map_err(|e| e.to_string())?;
    let db = std::sync::Arc::new(db);
    let (schema_log, statements) = permafrost_server::SchemaLog::open(&data_dir).map_err(|e| e.to_string())?;
    if logged {
        // The command log holds the schema changes with the data changes, in order.
        let started = std::time::Instant::now();
        let report = db
            .recover(Vec::new(), &mut |done, of| {
                eprintln!("recovery: log replayed through LSN {done} of {of}")
            })
            .map_err(|e| format!("recovery from {} failed: {e}", data_dir.join("commandlog").display()))?;
        for w in &report.warnings {
            eprintln!("recovery: {w}");
        }
        if let Some(s) = &report.snapshot {
            let base = match s.base_epoch {
                0 => String::new(),
                b => format!("; block directories as differences from snapshot {b}"),
            };
            eprintln!(
                "recovery: snapshot {} loaded in {:.2}s ({} rows in memory, {} evicted, {} blocks{base}), log after LSN {}",
                s.epoch, s.seconds, s.rows, s.evicted, s.blocks, s.cut_lsn
            );
        }
        if let Some(t) = &report.torn_tail {
            eprintln!("recovery: dropped a torn record at the end of the log ({t}): it was never acknowledged");
        }
        if report.records > 0 {
            eprintln!(
                "recovery: {} records ({} schema changes) replayed in {:.2}s",
                report.records,
                report.schema_changes,
                started.elapsed().as_secs_f64()
            );
        }
        // The same as data, for tools (the crash harness reads it).
        eprintln!("{}", report.to_line());
        if report.records == 0 && report.snapshot.is_none() && !statements.is_empty() {
            // A database created without a command log: its schema comes from the schema
            // log (and goes into the command log from now on).
            permafrost_server::replay_schema(&db, &statements).map_err(|e| e.to_string())?;
        }
    } else {
        let log_dir = data_dir.join("commandlog");
        let has_log = std::fs::read_dir(&log_dir)
            .map(|d| d.flatten().any(|e| e.path().extension().is_some_and(|x| x == "log")))
            .unwrap_or(false);
        if has_log {
            eprintln!(
                "warning: command_log is off, so the command log in {} is not replayed: the rows it holds are not \
                 loaded (start with --command-log sync to recover them)",
                log_dir.display()
            );
        }
        permafrost_server::replay_schema(&db, &statements).map_err(|e| e.to_string())?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("permafrost-net")
        .thread_stack_size(permafrost_executor::limits::EXECUTION_STACK)
        .build()
        .map_err(|e| format!("cannot start the network runtime: {e}"))?;
    rt.block_on(async {
        let listener = permafrost_server::bind(listen).await.map_err(|e| e.to_string())?;
        let metrics = std::sync::Arc::new(permafrost_server::ServerMetrics::new());
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        if let Some(addr) = metrics_listen {
            let l = permafrost_server::bind(addr).await.map_err(|e| format!("metrics_listen: {e}"))?;
            let (db, m) = (db.clone(), metrics.clone());
            let mut rx = stop_rx.clone();
            tokio::spawn(async move {
                let _ = permafrost_server::metrics::serve_metrics(db, m, l, async move {
                    let _ = rx.changed().await;
                })
                .await;
            });
        }
        eprintln!(
            "permafrost {} listening on {listen} (PostgreSQL protocol, server_version {}{}{}), {} partitions, memory limit {} MiB, data in {}",
            env!("CARGO_PKG_VERSION"),
            permafrost_server::PG_VERSION,
            if tls.is_some() { ", TLS" } else { "" },
            if users.is_empty() { ", trust auth" } else { ", SCRAM-SHA-256 auth" },
            db.partitions(),
            db.config().memory_limit >> 20,
            data_dir.display()
        );
        if let Some(a) = metrics_listen {
            eprintln!("metrics at http://{a}/metrics");
        }
        if !statements.is_empty() {
            eprintln!("schema: {} change(s) replayed from {}", statements.len(), data_dir.join("schema.log").display());
        }
        if logged {
            eprintln!(
                "command log: {} in {}",
                if settings.command_log == permafrost_executor::LogMode::Sync {
                    "sync (commits are acknowledged once on disk)"
                } else {
                    "async (commits may be lost in a crash)"
                },
                data_dir.join("commandlog").display()
            );
        } else {
            eprintln!(
                "note: command log off: rows live in memory and on the anti-cache's disk blocks only until the \
                 server stops; the schema is kept"
            );
        }
        let options = permafrost_server::ServerOptions {
            users,
            trust_remote,
            tls,
            // With a command log the schema changes are in it.
            schema_log: (!logged).then(|| std::sync::Arc::new(schema_log)),
            metrics: Some(metrics),
            max_connections,
            authentication_timeout,
        };
        permafrost_server::serve_with(db.clone(), listener, options, shutdown_signal())
            .await
            .map_err(|e| e.to_string())?;
        let _ = stop_tx.send(true);
        eprintln!("shutting down");
        Ok::<(), String>(())
    })
}

#[derive(Subcommand)]
enum Workload {
    /// YCSB: point reads and updates of one table with Zipfian skew.
    Ycsb(Box<YcsbArgs>),
    /// The disk under the data directory: sequential writes and random reads per block
    /// size, through the anti-cache's I/O path.
    Device(DeviceArgs),
    /// A series of YCSB runs in one process, written as JSON and a PNG chart: fig8 (merge
    /// policies), fig9a (block sizes), fig10 (access tracking), compare (anti-cache
    /// against in-memory, the judged ratios).
    Experiment(ExperimentArgs),
    /// Kill-and-restart: runs `permafrost serve` (command log sync) under a concurrent
    /// workload, kills it with SIGKILL at random moments, restarts it on its data directory
    /// and checks that every acknowledged change came back and that no transfer was
    /// applied in part.
    Crash(Box<CrashArgs>),
    /// Restart cost: loads YCSB records, takes a snapshot, runs updates after it, closes
    /// the database and times its recovery (snapshot load, then log replay).
    Recovery(RecoveryArgs),
}

#[derive(Args, Debug)]
struct RecoveryArgs {
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    #[arg(long, default_value_t = 1008)]
    tuple_size: usize,
    /// The memory budget (small: most records evicted).
    #[arg(long, default_value = "128MiB", value_parser = parse_size_arg)]
    memory_limit: u64,
    #[arg(long, default_value_t = 2)]
    partitions: u32,
    /// YCSB updates after the snapshot (replayed at the restart).
    #[arg(long, default_value_t = 2_000_000)]
    updates: u64,
    #[arg(long, default_value_t = 0.99)]
    skew: f64,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Updates each of the two clients keeps in flight.
    #[arg(long, default_value_t = 4096)]
    in_flight: usize,
    /// Records compared before and after the restart.
    #[arg(long, default_value_t = 10_000)]
    check_sample: u64,
    /// An empty directory for the database (default: a temporary one).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct CrashArgs {
    /// Kill-and-restart iterations.
    #[arg(long, default_value_t = 200)]
    iterations: u32,
    /// Seed of the kill times and the workload's choices.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// The permafrost binary to serve with. Default: this one.
    #[arg(long)]
    binary: Option<PathBuf>,
    /// Directory for the data directories (cycle-<n>, each removed once its iterations
    /// pass). Default: a temporary directory. Kept when a violation is found.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Write all the figures as JSON to this file (after every iteration, and at the end).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Start from a fresh data directory every K iterations (every event keeps index
    /// entries or a tombstone in the small memory budget).
    #[arg(long, default_value_t = 20)]
    fresh_every: u32,
    /// Continue the run whose report is --json (cut short: "complete": false), from the
    /// first data directory it did not finish; the other flags must be the run's.
    #[arg(long, requires = "json")]
    resume: bool,
    /// Run from this iteration (rounded down to the first of its data directory), to
    /// reproduce a late one.
    #[arg(long, default_value_t = 1)]
    first_iteration: u32,
    /// Seconds of workload before the kill: uniform between --min-run and --max-run.
    #[arg(long, default_value_t = 0.3)]
    min_run: f64,
    #[arg(long, default_value_t = 3.0)]
    max_run: f64,
    /// Accounts (each with about 900 bytes of padding).
    #[arg(long, default_value_t = 20_000)]
    accounts: u64,
    /// Workload connections.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Statements each connection keeps in flight (pipelined).
    #[arg(long, default_value_t = 8)]
    in_flight: usize,
    /// Event inserts per second at most: every row keeps index entries (then a tombstone)
    /// in memory, so the events of a data directory must fit what the memory limit can
    /// index.
    #[arg(long, default_value_t = 2000)]
    insert_rate: u64,
    /// The server's memory limit (small: eviction and merging run all the time).
    #[arg(long, default_value = "16MiB", value_parser = parse_size_arg)]
    memory_limit: u64,
    /// The server's command-log segment size (small: segments rotate often).
    #[arg(long, default_value = "1MiB", value_parser = parse_size_arg)]
    log_segment_size: u64,
    /// The server's partitions.
    #[arg(long, default_value_t = 2)]
    partitions: u32,
    /// The server's command log. sync is what is checked; async or off lose acknowledged
    /// changes in a crash, so with them the harness must report violations (a check of
    /// the harness itself).
    #[arg(long, default_value = "sync")]
    command_log: String,
    /// The server's --snapshot-interval.
    #[arg(long, default_value = "2s")]
    snapshot_interval: String,
    /// Percent of iterations that send CHECKPOINT shortly before the kill.
    #[arg(long, default_value_t = 30)]
    checkpoint_kill_pct: u32,
    /// Percent of iterations whose restart is also killed during recovery.
    #[arg(long, default_value_t = 25)]
    recovery_kill_pct: u32,
}

#[derive(Args, Debug)]
struct ExperimentArgs {
    /// fig8, fig9a, fig10, compare or durability.
    name: String,
    /// Directory for <name>.json and <name>.png.
    #[arg(long, default_value = "docs/results")]
    out: PathBuf,
    /// Records (default: 500000; 1000000 for compare).
    #[arg(long)]
    records: Option<u64>,
    /// Bytes per tuple.
    #[arg(long, default_value_t = 1008)]
    tuple_size: usize,
    /// Seconds of warm-up before each measured run.
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Seconds measured per run.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Times every configuration runs (interleaved); the median is plotted.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Partitions (default: number of CPU cores).
    #[arg(long)]
    partitions: Option<u32>,
    /// Client threads (default: one per partition).
    #[arg(long)]
    clients: Option<usize>,
    /// Operations each client keeps in flight.
    #[arg(long, default_value_t = 512)]
    in_flight: usize,
    /// compare: memory limit of the larger-than-memory runs.
    #[arg(long, value_parser = parse_size_arg)]
    memory_limit: Option<u64>,
    /// durability: the command log's group commit window (default: the setting's default).
    #[arg(long, value_parser = parse_duration_arg)]
    group_commit_window: Option<std::time::Duration>,
    /// Directory for the runs' block files and command logs: each run gets a fresh
    /// run-<k> in it, removed after the run (default: temporary directories).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Seed of the workload's random choices.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Run nothing: draw <out>/<name>.png again from <out>/<name>.json.
    #[arg(long)]
    replot: bool,
}

#[derive(Args, Debug)]
struct DeviceArgs {
    /// Directory on the disk to measure. Default: the system's temporary directory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Size of the test file (reads fall anywhere in it).
    #[arg(long, default_value = "2GiB", value_parser = parse_size_arg)]
    file_size: u64,
    /// Block sizes to read, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_size_arg,
          default_value = "1KiB,4KiB,8KiB,16KiB,64KiB,256KiB,1MiB")]
    block_sizes: Vec<u64>,
    /// Reads kept in flight.
    #[arg(long, default_value_t = 64)]
    queue_depth: u32,
    /// Seconds of reads per block size.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s)
}

/// Flags every benchmark takes.
#[derive(Args, Debug)]
struct CommonArgs {
    #[command(flatten)]
    engine: EngineArgs,
    /// What to run against: embedded (in this process) or server=HOST:PORT (a running
    /// `permafrost serve`, over the PostgreSQL protocol; the engine flags then do not apply).
    #[arg(long, default_value = "embedded")]
    target: String,
    /// Client threads driving the load. Default: one per partition (embedded), 2 (server).
    #[arg(long)]
    clients: Option<usize>,
    /// Server targets: connections in all, spread evenly over the client threads, each
    /// client's --in-flight operations pipelined over its connections. Default: 8 per client.
    #[arg(long)]
    connections: Option<usize>,
    /// Operations each client keeps in flight.
    #[arg(long, default_value_t = 512)]
    in_flight: usize,
    /// Seconds of warm-up before measuring.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Directory for the anti-cache's block files and the command log (DIR/anticache,
    /// which must be empty or absent). Default: a temporary directory, removed at exit.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
    /// Seed of the workload's random choices.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Args, Debug)]
struct YcsbArgs {
    /// Records in the table.
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// Bytes per tuple: an 8-byte key and 10 equal text fields.
    #[arg(long, default_value_t = 1008)]
    tuple_size: usize,
    /// read-only (100% reads), read-heavy (90/10) or write-heavy (50/50).
    #[arg(long, default_value = "read-heavy", value_parser = Mix::parse)]
    mix: Mix,
    /// Zipfian constant s of the key distribution (0 = uniform).
    #[arg(long, default_value_t = 0.99)]
    skew: f64,
    #[command(flatten)]
    common: CommonArgs,
}

impl CommonArgs {
    /// The engine settings; refuses a data directory that holds an earlier run's files
    /// (its command log would be appended to, its block files found at start).
    fn settings(&self) -> Result<DbSettings, String> {
        if let Some(d) = &self.data_dir {
            let files = d.join("anticache");
            let used = std::fs::read_dir(&files).map(|mut e| e.next().is_some());
            if used.unwrap_or(false) {
                return Err(format!(
                    "--data-dir {}: {} holds the files of an earlier run; give an empty or new directory (or remove that one)",
                    d.display(),
                    files.display()
                ));
            }
        }
        self.engine.settings(self.data_dir.clone(), "off")
    }
}

fn run_ycsb(args: YcsbArgs) -> Result<(), String> {
    let c = &args.common;
    let opts = YcsbOptions {
        records: args.records,
        tuple_size: args.tuple_size,
        mix: args.mix,
        skew: args.skew,
        clients: 1,
        in_flight: c.in_flight,
        warmup: c.warmup,
        duration: c.duration,
        seed: c.seed,
    };
    let report = match ycsb::TargetSpec::parse(&c.target).map_err(|e| e.to_string())? {
        ycsb::TargetSpec::Embedded => {
            if c.connections.is_some() {
                return Err("--connections applies to --target server=HOST:PORT only".into());
            }
            let (db, _data_dir) = c.settings()?.open().map_err(|e| e.to_string())?;
            let opts = YcsbOptions {
                clients: c.clients.unwrap_or(db.partitions() as usize),
                ..opts
            };
            opts.validate().map_err(|e| e.to_string())?;
            let target = ycsb::embedded::Embedded::new(db, true);
            ycsb::run(&target, &opts, !c.quiet).map_err(|e| e.to_string())?
        }
        ycsb::TargetSpec::Server(addr) => {
            let opts = YcsbOptions {
                clients: c.clients.unwrap_or(2),
                ..opts
            };
            opts.validate().map_err(|e| e.to_string())?;
            let connections = c.connections.unwrap_or(8 * opts.clients);
            let target = ycsb::server::Server::new(&addr, connections).map_err(|e| e.to_string())?;
            ycsb::run(&target, &opts, !c.quiet).map_err(|e| e.to_string())?
        }
    };
    println!("{}", report.summary());
    write_json(c.json.as_deref(), &report)?;
    if report.verify_errors > 0 {
        return Err(format!("{} reads failed verification", report.verify_errors));
    }
    Ok(())
}

fn run_device(a: DeviceArgs) -> Result<(), String> {
    let dir = a.data_dir.unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let opts = permafrost_bench::device::DeviceOptions {
        file_bytes: a.file_size,
        block_sizes: a.block_sizes.iter().map(|&b| b as usize).collect(),
        queue_depth: a.queue_depth,
        seconds: a.seconds,
    };
    let report = permafrost_bench::device::measure(&dir, &opts).map_err(|e| e.to_string())?;
    println!("{}", report.summary());
    write_json(a.json.as_deref(), &report)
}

fn run_experiment(a: ExperimentArgs) -> Result<(), String> {
    use permafrost_bench::experiment;
    let params = experiment::Params {
        records: a.records,
        tuple_size: a.tuple_size,
        warmup: a.warmup,
        duration: a.duration,
        rounds: a.rounds,
        partitions: a.partitions,
        clients: a.clients,
        in_flight: a.in_flight,
        memory_limit: a.memory_limit,
        group_commit_window: a.group_commit_window,
        data_dir: a.data_dir.clone(),
        seed: a.seed,
    };
    let spec = experiment::spec(&a.name, &params).map_err(|e| e.to_string())?;
    if a.replot {
        let png = experiment::replot(&spec, &a.out).map_err(|e| e.to_string())?;
        println!("wrote {}", png.display());
        return Ok(());
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let report = experiment::run(&spec, a.rounds, &command, a.data_dir.as_deref()).map_err(|e| e.to_string())?;
    for f in &report.findings {
        let verdict = match f.met {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "",
        };
        println!(
            "{}: {:.4} {} {} ({})",
            f.name,
            f.value,
            f.target.as_deref().unwrap_or(""),
            verdict,
            f.note
        );
    }
    let (json, png) = experiment::write(&report, &spec, &a.out).map_err(|e| e.to_string())?;
    println!("wrote {} and {}", json.display(), png.display());
    Ok(())
}

fn run_crash(a: CrashArgs) -> Result<(), String> {
    use permafrost_bench::crash;
    let binary = match a.binary {
        Some(b) => b,
        None => std::env::current_exe().map_err(|e| format!("cannot find this binary (give --binary): {e}"))?,
    };
    let opts = crash::CrashOptions {
        iterations: a.iterations,
        first_iteration: a.first_iteration,
        seed: a.seed,
        binary,
        data_dir: a.data_dir,
        fresh_every: a.fresh_every,
        run_min: a.min_run,
        run_max: a.max_run,
        accounts: a.accounts,
        connections: a.connections,
        in_flight: a.in_flight,
        insert_rate: a.insert_rate,
        memory_limit: a.memory_limit,
        segment_bytes: a.log_segment_size,
        partitions: a.partitions,
        command_log: a.command_log,
        snapshot_interval: a.snapshot_interval,
        checkpoint_kill_pct: a.checkpoint_kill_pct,
        recovery_kill_pct: a.recovery_kill_pct,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        progress: a.json.clone(),
        ..crash::CrashOptions::new(PathBuf::new())
    };
    let previous = match (&a.json, a.resume) {
        (Some(path), true) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("--resume: cannot read {}: {e}", path.display()))?;
            Some(serde_json::from_str(&text).map_err(|e| format!("--resume: {}: {e}", path.display()))?)
        }
        _ => None,
    };
    let report = crash::resume(&opts, previous).map_err(|e| e.to_string())?;
    println!("{}", report.summary());
    write_json(a.json.as_deref(), &report)?;
    if !report.violations.is_empty() {
        return Err(format!(
            "{} violation(s), the first at iteration {} (seed {})",
            report.violations.len(),
            report.violations[0].iteration,
            report.violations[0].seed
        ));
    }
    Ok(())
}

fn run_recovery(a: RecoveryArgs) -> Result<(), String> {
    use permafrost_bench::recovery;
    let opts = recovery::RecoveryOptions {
        records: a.records,
        tuple_size: a.tuple_size,
        memory_limit: a.memory_limit,
        partitions: a.partitions,
        updates: a.updates,
        skew: a.skew,
        seed: a.seed,
        in_flight: a.in_flight.max(1),
        check_sample: a.check_sample,
        data_dir: a.data_dir,
    };
    let started = std::time::Instant::now();
    let report = recovery::run(&opts, &|phase| {
        eprintln!("[{:7.1}s] {phase}", started.elapsed().as_secs_f64())
    })
    .map_err(|e| e.to_string())?;
    println!("{}", report.summary());
    write_json(a.json.as_deref(), &report)?;
    if report.mismatches > 0 {
        return Err(format!("{} records differ after the restart", report.mismatches));
    }
    Ok(())
}

fn write_json(path: Option<&std::path::Path>, value: &impl serde::Serialize) -> Result<(), String> {
    if let Some(path) = path {
        let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    allocator::tune();
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Serve(a) => run_serve(*a),
        Command::Bench {
            workload: Workload::Ycsb(a),
        } => run_ycsb(*a),
        Command::Bench {
            workload: Workload::Device(a),
        } => run_device(a),
        Command::Bench {
            workload: Workload::Experiment(a),
        } => run_experiment(a),
        Command::Bench {
            workload: Workload::Crash(a),
        } => run_crash(*a),
        Command::Bench {
            workload: Workload::Recovery(a),
        } => run_recovery(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
