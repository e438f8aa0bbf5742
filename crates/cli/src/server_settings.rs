//! `permafrost serve`'s own settings ([`ServerSettings`]: where it listens, TLS, connection
//! limits), declared once each as the engine's are in `permafrost_executor::settings`; the
//! command line (settings.rs) and the configuration file (config_file.rs) read them from the table.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use permafrost_executor::declare_settings;
use permafrost_executor::settings::{Kind, Sources, Toml, kind};

/// An address: `127.0.0.1:5433`.
pub(crate) struct Addr;

impl Kind for Addr {
    type Value = SocketAddr;
    const VALUE_NAME: &'static str = "ADDR";
    const TOML: &'static [Toml] = &[Toml::String];
    fn parse(text: &str) -> Result<SocketAddr, String> {
        text.parse()
            .map_err(|e| format!("\"{text}\" is not an address like 127.0.0.1:5433 ({e})"))
    }
    fn show(value: &SocketAddr) -> String {
        value.to_string()
    }
}

/// An address, or `off`: `None`.
pub(crate) struct AddrOrOff;

impl Kind for AddrOrOff {
    type Value = Option<SocketAddr>;
    const VALUE_NAME: &'static str = "ADDR|off";
    const TOML: &'static [Toml] = &[Toml::String];
    fn parse(text: &str) -> Result<Option<SocketAddr>, String> {
        match text {
            "off" => Ok(None),
            a => Addr::parse(a).map(Some),
        }
    }
    fn show(value: &Option<SocketAddr>) -> String {
        value.as_ref().map_or_else(|| "off".into(), Addr::show)
    }
}

fn max_connections_in_range(n: &usize) -> Result<(), String> {
    if (1..=1_000_000).contains(n) {
        Ok(())
    } else {
        Err(format!("{n} (allowed: 1 to 1000000)"))
    }
}

fn io_threads_in_range(n: &usize) -> Result<(), String> {
    if (1..=1024).contains(n) {
        Ok(())
    } else {
        Err(format!("{n} (allowed: 1 to 1024)"))
    }
}

fn idle_poll_in_range(d: &Duration) -> Result<(), String> {
    if *d <= MAX_IDLE_POLL {
        Ok(())
    } else {
        Err(format!("{} (allowed: 0 to 1ms)", kind::Duration::show(d)))
    }
}

/// The longest `idle_poll`: past it a thread would spend more watching than a sleep and
/// a wake-up cost.
const MAX_IDLE_POLL: Duration = Duration::from_millis(1);

fn authentication_timeout_in_range(d: &Duration) -> Result<(), String> {
    if (Duration::from_secs(1)..=Duration::from_secs(600)).contains(d) {
        Ok(())
    } else {
        Err(format!("{} (allowed: 1s to 10m)", kind::Duration::show(d)))
    }
}

declare_settings! {
    /// `permafrost serve`'s own settings (the engine's are [`DbSettings`]).
    #[derive(Debug, Clone)]
    pub(crate) struct ServerSettings {}

    /// The server's settings, in the order the help lists them (before the engine's).
    pub(crate) static SERVER_SETTINGS {
        /// Address to listen on (other interfaces only when asked, e.g. 0.0.0.0:5433).
        listen: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 5433)) => Addr;
        /// Directory of the database's files.
        data_dir: PathBuf = PathBuf::from("./permafrost-data") => kind::Path;
        /// Address of the Prometheus endpoint (GET /metrics), or "off".
        metrics_listen: Option<SocketAddr> = Some(SocketAddr::from(([127, 0, 0, 1], 9187))) => AddrOrOff;
        /// TLS certificate chain (PEM); with --tls-key, clients may ask for TLS.
        tls_cert: Option<PathBuf> = None => kind::Path, unset "none (no TLS)";
        /// TLS private key (PEM).
        tls_key: Option<PathBuf> = None => kind::Path, unset "none (no TLS)";
        /// Without [[users]]: trust clients on other machines too (not only this one's).
        trust_remote: bool = false => kind::Boolean, sources Sources::FileOnly;
        /// Client connections served at once (1 to 1000000); one more is refused with
        /// SQLSTATE 53300.
        max_connections: usize = permafrost_server::DEFAULT_MAX_CONNECTIONS => kind::Number<usize>,
            check max_connections_in_range;
        /// Connection threads (1 to 1024): each owns the connections dealt to it and runs
        /// their short statements itself.
        io_threads: Option<usize> = None => kind::Number<usize>, unset "the number of CPU cores",
            check io_threads_in_range;
        /// How long a connection thread that has run out of work watches its connections
        /// before it sleeps (0 to 1ms; 0: it sleeps at once). A client that answers within
        /// it finds the thread awake, which spares both sides a wake-up; the cost is up to
        /// this much CPU time each time the thread runs out of work, and the thread stops
        /// watching while it is preempted (other threads want its CPU).
        idle_poll: Duration = Duration::from_micros(50) => kind::Duration,
            check idle_poll_in_range;
        /// How long a new connection has to log in before it is closed (1s to 10m).
        authentication_timeout: Duration = permafrost_server::DEFAULT_AUTHENTICATION_TIMEOUT => kind::Duration,
            check authentication_timeout_in_range;
        /// Log every error a client is answered with (its SQLSTATE, message, connection and
        /// statement) to standard error, as PostgreSQL's log_min_error_statement = error.
        log_client_errors: bool = true => kind::OnOff;
        /// Start even if the command log is damaged where a crash does not explain it
        /// (records that were durable, and so acknowledged, would be lost): cut the log at
        /// the damage, keep the dropped files and bytes in the log directory's
        /// trimmed-<LSN>-<time> directory, and report what was lost (file, offset, first and
        /// last LSN, records) on stderr and in the recovery report. Off: such a log refuses
        /// the start (SQLSTATE XX001, naming the file and offset). Give it for the one start
        /// that needs it, not in a config file kept for every start.
        recovery_trim_damaged_log: bool = false => kind::OnOff;
    }
}
