//! `permafrost serve`: its flags (the server's settings and the engine's, from their
//! tables in `settings`) and running the server on a data directory.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use permafrost_executor::datadir;
use permafrost_executor::settings::DbSettings;
use permafrost_executor::{Database, LogMode, RecoveryReport};
use permafrost_server::ServerOptions;

use crate::config_file::ConfigFile;
use crate::settings::{Flags, ServeEngine, Server, ServerSettings};

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Settings file (TOML; keys as the flags, in snake_case). Flags and environment
    /// variables override it.
    #[arg(long, env = "PERMAFROST_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) server: Flags<Server>,
    #[command(flatten)]
    pub(crate) engine: Flags<ServeEngine>,
}

/// Parses a duration: `1ms`, `200us`, `0.5s`, `5m`, `1h`, `0` (no unit: milliseconds).
pub(crate) fn parse_duration_arg(s: &str) -> Result<std::time::Duration, String> {
    permafrost_executor::settings::parse_duration(s)
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

/// What `permafrost serve` runs with: its settings from the flags, the environment and the
/// config file, and the server's options made from them.
struct Serve {
    server: ServerSettings,
    engine: DbSettings,
    options: ServerOptions,
}

pub(crate) fn run_serve(args: ServeArgs) -> Result<(), String> {
    let files = raise_open_file_limit();
    if files < 2048 {
        eprintln!(
            "note: the open-file limit is {files}: at most about {} client connections",
            files.saturating_sub(64)
        );
    }
    let serve = resolve(&args)?;
    let (db, report) = open_data_dir(&serve.server, &serve.engine)?;
    serve_clients(serve, db, &report)
}

/// The settings (flag, else environment, else config file, else default) and the
/// server's options: TLS loaded, users.
fn resolve(args: &ServeArgs) -> Result<Serve, String> {
    let file = match &args.config {
        Some(p) => ConfigFile::load(p)?,
        None => ConfigFile::default(),
    };
    let server = args.server.resolve(&file)?;
    let engine = args.engine.resolve(&file)?;
    let tls = match (&server.tls_cert, &server.tls_key) {
        (Some(c), Some(k)) => Some(permafrost_server::tls_acceptor(c, k).map_err(|e| e.to_string())?),
        (None, None) => None,
        _ => return Err("invalid settings tls_cert/tls_key: give both or neither".into()),
    };
    let users: Vec<permafrost_server::User> = file
        .users
        .iter()
        .map(|u| permafrost_server::User::new(u.name.clone(), &u.password))
        .collect();
    if users.is_empty() && !server.trust_remote && !server.listen.ip().is_loopback() {
        eprintln!(
            "note: listening on {} without users: only clients on this machine can log in (configure [[users]] \
             in the config file for password logins, or trust_remote = true)",
            server.listen
        );
    }
    let options = ServerOptions {
        users,
        trust_remote: server.trust_remote,
        tls,
        metrics: None,
        max_connections: server.max_connections,
        authentication_timeout: server.authentication_timeout,
        // An ordinary client's statement runs where its connection is read, with no
        // wake-up between threads; one thread per core by default (measured on 2 cores:
        // two beat one, and beat a multi-threaded runtime; docs/results/architecture-history.md).
        io_threads: server
            .io_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
        idle_poll: server.idle_poll,
        log_client_errors: server.log_client_errors,
    };
    Ok(Serve {
        server,
        engine,
        options,
    })
}

/// Opens the database in the data directory (`permafrost_executor::datadir::open`: the
/// lock, the layout, recovery from the command log, else the schema log) and says what
/// recovery did; a watchdog stops the server if the directory is taken from under it.
fn open_data_dir(server: &ServerSettings, engine: &DbSettings) -> Result<(Arc<Database>, RecoveryReport), String> {
    let data_dir = &server.data_dir;
    let started = std::time::Instant::now();
    let options = datadir::OpenOptions {
        trim_damaged_log: server.recovery_trim_damaged_log,
        // The benchmarks' stored procedures (README, "Stored procedures built into the
        // server").
        library: permafrost_bench::builtin::library(),
    };
    let (db, report) = datadir::open_with(engine, data_dir, options, &mut |done, of| {
        eprintln!("recovery: log replayed through LSN {done} of {of}")
    })
    .map_err(|e| {
        let hint = if e.sqlstate() == "XX001" {
            " (the command log holds damage to records that were durable: restore the data directory from a \
             copy, or start once with --recovery-trim-damaged-log on to drop them, which the recovery report \
             then lists)"
        } else {
            ""
        };
        format!("cannot open the database in {}: {e}{hint}", data_dir.display())
    })?;
    if let Some(lock) = db.data_dir_lock() {
        datadir::watch(lock, std::time::Duration::from_secs(1)).map_err(|e| e.to_string())?;
    }
    if engine.command_log == LogMode::Off {
        for w in &report.warnings {
            eprintln!("warning: {w}");
        }
    } else {
        print_recovery(&report, started.elapsed().as_secs_f64());
    }
    Ok((Arc::new(db), report))
}

/// What recovery from the command log did, as prose and as the report's line (which the
/// crash harness reads).
fn print_recovery(report: &RecoveryReport, seconds: f64) {
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
    if let Some(t) = &report.trimmed {
        let lost = match (t.last_lsn, t.records) {
            (Some(last), Some(n)) => format!("LSN {} to {last} ({n} records)", t.first_lsn),
            _ => format!("the records from LSN {} on (how many is unknown)", t.first_lsn),
        };
        eprintln!(
            "recovery: WARNING: the damaged command log was trimmed as asked (--recovery-trim-damaged-log): {lost} \
             were dropped, cutting {} at offset {} ({} bytes, {} later segment files moved out); they are kept in {}",
            t.file,
            t.offset,
            t.bytes,
            t.removed_segments.len(),
            t.kept_in
        );
    }
    if report.records > 0 {
        eprintln!(
            "recovery: {} records ({} schema changes) replayed in {seconds:.2}s",
            report.records, report.schema_changes,
        );
    }
    eprintln!("{}", report.to_line());
}

/// Serves clients (and the metrics endpoint) until SIGINT or SIGTERM.
fn serve_clients(serve: Serve, db: Arc<Database>, report: &RecoveryReport) -> Result<(), String> {
    let Serve {
        server,
        engine,
        mut options,
    } = serve;
    // Accepting, the metrics endpoint and the signals; connections run on the connection
    // threads (`io_threads` below).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .thread_name("permafrost-net")
        .thread_stack_size(permafrost_executor::limits::EXECUTION_STACK)
        .build()
        .map_err(|e| format!("cannot start the network runtime: {e}"))?;
    rt.block_on(async {
        let listener = permafrost_server::bind(server.listen)
            .await
            .map_err(|e| e.to_string())?;
        let metrics = Arc::new(permafrost_server::ServerMetrics::new());
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        if let Some(addr) = server.metrics_listen {
            let l = permafrost_server::bind(addr)
                .await
                .map_err(|e| format!("metrics_listen: {e}"))?;
            let (db, m) = (db.clone(), metrics.clone());
            let mut rx = stop_rx.clone();
            tokio::spawn(async move {
                let _ = permafrost_server::metrics::serve_metrics(db, m, l, async move {
                    let _ = rx.changed().await;
                })
                .await;
            });
        }
        print_banner(&server, &engine, &options, &db, report);
        options.metrics = Some(metrics);
        permafrost_server::serve_with(db.clone(), listener, options, shutdown_signal())
            .await
            .map_err(|e| e.to_string())?;
        let _ = stop_tx.send(true);
        eprintln!("shutting down");
        Ok::<(), String>(())
    })
}

/// What the server is, on standard error as it starts.
fn print_banner(
    server: &ServerSettings,
    engine: &DbSettings,
    options: &ServerOptions,
    db: &Database,
    report: &RecoveryReport,
) {
    let data_dir = &server.data_dir;
    eprintln!(
        "permafrost {} listening on {} (PostgreSQL protocol, server_version {}{}{}), {} partitions, memory limit {} MiB, data in {}",
        env!("CARGO_PKG_VERSION"),
        server.listen,
        permafrost_server::PG_VERSION,
        if options.tls.is_some() { ", TLS" } else { "" },
        if options.users.is_empty() {
            ", trust auth"
        } else {
            ", SCRAM-SHA-256 auth"
        },
        db.partitions(),
        db.config().memory_limit >> 20,
        data_dir.display()
    );
    if let Some(a) = server.metrics_listen {
        eprintln!("metrics at http://{a}/metrics");
    }
    let layout = datadir::Layout {
        root: data_dir.to_path_buf(),
    };
    if report.schema_log_changes > 0 {
        eprintln!(
            "schema: {} change(s) replayed from {}",
            report.schema_log_changes,
            layout.schema_log().display()
        );
    }
    match engine.command_log {
        LogMode::Off => eprintln!(
            "note: command log off: rows live in memory and on the anti-cache's disk blocks only until the \
             server stops; the schema is kept"
        ),
        mode => eprintln!(
            "command log: {} in {}",
            if mode == LogMode::Sync {
                "sync (commits are acknowledged once on disk)"
            } else {
                "async (commits may be lost in a crash)"
            },
            layout.command_log().display()
        ),
    }
}
