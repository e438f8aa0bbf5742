//! `permafrost serve`: its flags (and the engine settings it shares with the benchmarks)
//! and running the server on a data directory.

use super::*;

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Settings file (TOML; keys as the flags, in snake_case). Flags and environment
    /// variables override it.
    #[arg(long, env = "PERMAFROST_CONFIG")]
    pub(crate) config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:5433] (other interfaces only when asked,
    /// e.g. 0.0.0.0:5433).
    #[arg(long, env = "PERMAFROST_LISTEN")]
    pub(crate) listen: Option<String>,
    /// Directory of the database's files [default: ./permafrost-data].
    #[arg(long, env = "PERMAFROST_DATA_DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// Address of the Prometheus endpoint (GET /metrics), or "off" [default: 127.0.0.1:9187].
    #[arg(long, env = "PERMAFROST_METRICS_LISTEN")]
    pub(crate) metrics_listen: Option<String>,
    /// TLS certificate chain (PEM); with --tls-key, clients may ask for TLS.
    #[arg(long, env = "PERMAFROST_TLS_CERT")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, env = "PERMAFROST_TLS_KEY")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Client connections served at once (1 to 1000000); one more is refused with
    /// SQLSTATE 53300 [default: 10000].
    #[arg(long, env = "PERMAFROST_MAX_CONNECTIONS")]
    pub(crate) max_connections: Option<usize>,
    /// How long a new connection has to log in before it is closed (1s to 10m)
    /// [default: 60s].
    #[arg(long, env = "PERMAFROST_AUTHENTICATION_TIMEOUT")]
    pub(crate) authentication_timeout: Option<String>,
    #[command(flatten)]
    pub(crate) engine: EngineArgs,
}

/// The database's settings, shared by `serve` and the benchmarks (flags, environment, or
/// for `serve` the config file).
#[derive(Args, Debug)]
pub(crate) struct EngineArgs {
    /// Memory budget (e.g. 64MiB, 2GiB, plain bytes). Default: half of RAM.
    #[arg(long, env = "PERMAFROST_MEMORY_LIMIT", value_parser = parse_size_arg)]
    pub(crate) memory_limit: Option<u64>,
    /// Partitions (executor threads). Default: number of CPU cores.
    #[arg(long, env = "PERMAFROST_PARTITIONS")]
    pub(crate) partitions: Option<u32>,
    /// Anti-caching: on (evict cold data to disk past the memory limit) or off [default: on].
    #[arg(long, env = "PERMAFROST_ANTICACHE")]
    pub(crate) anticache: Option<String>,
    /// Bytes per eviction block, 1KiB to 4MiB [default: 4KiB].
    #[arg(long, env = "PERMAFROST_BLOCK_SIZE", value_parser = parse_size_arg)]
    pub(crate) block_size: Option<u64>,
    /// Merge policy for fetched blocks: tuple or block [default: tuple].
    #[arg(long, env = "PERMAFROST_MERGE")]
    pub(crate) merge: Option<String>,
    /// Tuple-merge: fraction of a block that may be holes before it is merged whole
    /// [default: 0.5].
    #[arg(long, env = "PERMAFROST_HOLE_THRESHOLD")]
    pub(crate) hole_threshold: Option<f64>,
    /// How evicted data is retrieved: abort-restart or synchronous [default: abort-restart].
    #[arg(long, env = "PERMAFROST_RETRIEVAL")]
    pub(crate) retrieval: Option<String>,
    /// Fraction of the memory limit at which eviction starts.
    #[arg(long, env = "PERMAFROST_EVICTION_THRESHOLD")]
    pub(crate) eviction_threshold: Option<f64>,
    /// Bytes evicted per round beyond what brings memory under the threshold.
    #[arg(long, env = "PERMAFROST_EVICTION_SIZE", value_parser = parse_size_arg)]
    pub(crate) eviction_size: Option<u64>,
    /// Cold-tuple policy: lru or clock [default: lru].
    #[arg(long, env = "PERMAFROST_COLD_POLICY")]
    pub(crate) cold_policy: Option<String>,
    /// Fraction of transactions that update the LRU chain (the paper's alpha).
    #[arg(long, env = "PERMAFROST_LRU_SAMPLE_RATE")]
    pub(crate) lru_sample_rate: Option<f64>,
    /// Restarts allowed per transaction for evicted data.
    #[arg(long, env = "PERMAFROST_MAX_RESTARTS")]
    pub(crate) max_restarts: Option<u32>,
    /// Command log: sync (a commit is acknowledged once its record is on disk), async
    /// (written in the background) or off [default: sync for serve, off for bench].
    #[arg(long, env = "PERMAFROST_COMMAND_LOG")]
    pub(crate) command_log: Option<String>,
    /// Group commit: how long the log writer gathers records before one write and
    /// fdatasync (e.g. 1ms, 200us, 0) [default: 0: the records that arrive while the
    /// previous group is written and synced make the next group].
    #[arg(long, env = "PERMAFROST_GROUP_COMMIT_WINDOW", value_parser = parse_duration_arg)]
    pub(crate) group_commit_window: Option<std::time::Duration>,
    /// Command log: bytes per segment file before a new one is started, 1MiB to 4GiB
    /// [default: 64MiB].
    #[arg(long, env = "PERMAFROST_LOG_SEGMENT_SIZE", value_parser = parse_size_arg)]
    pub(crate) log_segment_size: Option<u64>,
    /// Command log: on (the next segment is written full of zeros in the background, so
    /// group commits overwrite allocated blocks instead of growing the file) or off (for
    /// copy-on-write file systems, where that spares nothing) [default: on].
    #[arg(long, env = "PERMAFROST_LOG_PREALLOCATE")]
    pub(crate) log_preallocate: Option<String>,
    /// serve: time between snapshots (e.g. 5m, 30s), or off (only CHECKPOINT and
    /// --snapshot-log-size take them) [default: 5m]. Snapshots need the command log.
    #[arg(long, env = "PERMAFROST_SNAPSHOT_INTERVAL")]
    pub(crate) snapshot_interval: Option<String>,
    /// serve: also take a snapshot once the command log has grown by this much since the
    /// last one, bounding replay at restart; 0: off [default: 128MiB].
    #[arg(long, env = "PERMAFROST_SNAPSHOT_LOG_SIZE", value_parser = parse_size_arg)]
    pub(crate) snapshot_log_size: Option<u64>,
}

impl EngineArgs {
    /// The settings; `log_default` is the command log's mode when none is given.
    pub(crate) fn settings(&self, data_dir: Option<PathBuf>, log_default: &str) -> Result<DbSettings, String> {
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
    pub(crate) fn fill_from(&mut self, f: &config::FileConfig) -> Result<(), String> {
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
pub(crate) fn on_off(value: Option<&str>, default: bool, name: &str) -> Result<bool, String> {
    match value {
        None => Ok(default),
        Some("on" | "true") => Ok(true),
        Some("off" | "false") => Ok(false),
        Some(other) => Err(format!("invalid setting {name}: \"{other}\" (expected on or off)")),
    }
}

/// Parses a duration: `1ms`, `200us`, `0.5s`, `5m`, `1h`, `0` (no unit: milliseconds).
pub(crate) fn parse_duration_arg(s: &str) -> Result<std::time::Duration, String> {
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

pub(crate) fn parse_addr(setting: &str, v: &str) -> Result<std::net::SocketAddr, String> {
    v.parse()
        .map_err(|e| format!("invalid setting {setting}: \"{v}\" is not an address like 127.0.0.1:5433 ({e})"))
}

/// Raises the open-file limit to its hard limit: each client connection is a socket.
pub(crate) fn raise_open_file_limit() -> u64 {
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

pub(crate) fn run_serve(mut args: ServeArgs) -> Result<(), String> {
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
    // The block files live in `anticache/anticache` under the data directory (the layout
    // since the first release: keep it, existing data directories depend on it).
    let blocks = settings.data_dir.as_ref().map(|d| d.join("anticache"));
    let db = settings.open_in(blocks.as_deref()).map_err(|e| e.to_string())?;
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
