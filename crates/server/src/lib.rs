//! Permafrost's PostgreSQL wire-protocol server: ordinary PostgreSQL clients (psql, libpq,
//! psycopg, JDBC, tokio-postgres) connect, run DDL, ad hoc SQL and procedures, each
//! statement as its own transaction (single-partition when its parameters pin the
//! partition key).
//!
//! The protocol itself (start-up, simple and extended query, framing, TLS) is the pgwire
//! crate's; this crate decides what each statement does ([`handler`]), who may connect
//! ([`session`]), how values are typed on the wire ([`types`]), bulk loads ([`copy`]), the
//! system catalogs clients read ([`syscat`]) and the figures it reports ([`metrics`]).

pub mod command;
pub mod connection;
pub mod copy;
mod copy_binary;
mod cork;
pub mod error;
pub mod fuzzing;
pub mod handler;
mod message_memory;
pub mod metrics;
mod pg_datetime;
pub mod pg_types;
mod pipeline;
pub mod plancache;
mod prepared;
mod respond;
mod row_locks;
pub mod session;
pub mod session_settings;
mod setting_values;
pub mod syscat;
mod temp_tables;
mod threads;
mod txn;
mod wire_check;

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use permafrost_executor::Database;
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::tokio_rustls::rustls;
use tokio::net::TcpListener;

pub use error::{Result, ServerError};
pub use metrics::ServerMetrics;
pub use session::User;
pub use session_settings::PG_VERSION;

/// Connections served at once unless configured otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// How long a new connection has to log in unless configured otherwise (PostgreSQL's
/// `authentication_timeout`).
pub const DEFAULT_AUTHENTICATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How a server runs, beyond its database.
pub struct ServerOptions {
    /// Users who log in with SCRAM-SHA-256; none means trust (loopback clients only,
    /// unless `trust_remote`).
    pub users: Vec<User>,
    /// Trust clients on other machines too when no users are configured.
    pub trust_remote: bool,
    /// TLS for clients that ask for it (the SSL request); without it the server answers
    /// "no TLS" and the client continues in the clear or gives up, as it chooses.
    pub tls: Option<TlsAcceptor>,
    /// The server's figures; a fresh set when `None`.
    pub metrics: Option<Arc<ServerMetrics>>,
    /// Connections served at once; the next is refused with 53300.
    pub max_connections: usize,
    /// How long a new connection has to log in before it is closed.
    pub authentication_timeout: std::time::Duration,
    /// Threads that each own the connections given to them, one single-threaded runtime
    /// each (threads.rs): a connection's reads, its statements (run inline when short) and its
    /// writes stay on one thread, with no wake-ups between threads. 0: connections run on
    /// the caller's runtime.
    pub io_threads: usize,
    /// How long a connection thread watches its connections for work before it sleeps
    /// (threads.rs, `IdlePoll`); zero: it sleeps at once.
    pub idle_poll: std::time::Duration,
    /// Log each error a client is answered with to standard error (error.rs,
    /// `log_client_error`).
    pub log_client_errors: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            users: Vec::new(),
            trust_remote: false,
            tls: None,
            metrics: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            authentication_timeout: DEFAULT_AUTHENTICATION_TIMEOUT,
            io_threads: 0,
            idle_poll: std::time::Duration::ZERO,
            log_client_errors: false,
        }
    }
}

/// Binds the listening socket (errors name the address).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|source| ServerError::Listen {
        addr: addr.to_string(),
        source,
    })
}

/// Loads a TLS certificate chain and private key (PEM files).
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let tls_err = |m: String| ServerError::Tls(m);
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| tls_err(format!("tls_cert {}: {e}", cert.display())))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| tls_err(format!("tls_cert {}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(tls_err(format!(
            "tls_cert {}: no certificate in the file",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| tls_err(format!("tls_key {}: {e}", key.display())))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_err(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| tls_err(format!("tls_cert/tls_key: {e}")))?;
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves connections from `listener` until `shutdown` resolves; then stops accepting and
/// returns (connections still open are closed when the runtime stops).
pub async fn serve(db: Arc<Database>, listener: TcpListener, shutdown: impl Future<Output = ()>) -> Result<()> {
    serve_with(db, listener, ServerOptions::default(), shutdown).await
}

/// [`serve`] with options (authentication, TLS, schema log, metrics).
pub async fn serve_with(
    db: Arc<Database>,
    listener: TcpListener,
    options: ServerOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    temp_tables::drop_leftovers(&db).await?;
    let metrics = options.metrics.unwrap_or_else(|| Arc::new(ServerMetrics::new()));
    let cancels = Arc::new(session::Cancels::default());
    let auth = if options.users.is_empty() {
        session::Auth::Trust {
            remote: options.trust_remote,
        }
    } else {
        session::Auth::scram(options.users)
    };
    let startup = Arc::new(session::Startup::new(
        auth,
        cancels.clone(),
        metrics.clone(),
        db.statement_memory(),
    ));
    let pool = db.statement_pool().clone();
    let backend =
        Arc::new(handler::Backend::new(db, cancels.clone(), metrics).with_error_log(options.log_client_errors));
    let handlers = Arc::new(handler::Handlers::new(backend, startup, cancels));
    let tls = options.tls.clone();
    let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let io = match options.io_threads {
        0 => None,
        n => Some(threads::IoThreads::start(n, options.idle_poll)?),
    };
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => {
                match accepted {
                    Ok((socket, _peer)) => {
                        let _ = socket.set_nodelay(true);
                        let Some(slot) = ConnectionSlot::take(&open, options.max_connections) else {
                            tokio::spawn(connection::refuse(
                                socket,
                                "53300",
                                "sorry, too many clients already".into(),
                            ));
                            continue;
                        };
                        let h = handlers.clone();
                        let tls = tls.clone();
                        let timeout = options.authentication_timeout;
                        let pool = pool.clone();
                        let Some(io) = &io else {
                            tokio::spawn(async move {
                                serve_connection(socket, tls, h, timeout, &pool).await;
                                drop(slot);
                            });
                            continue;
                        };
                        // Moved to its thread's runtime (registered with its reactor there).
                        let Ok(socket) = socket.into_std() else { continue };
                        let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
                        io.spawn(fd, async move {
                            let Ok(socket) = tokio::net::TcpStream::from_std(socket) else { return };
                            serve_connection(socket, tls, h, timeout, &pool).await;
                            drop(slot);
                        });
                    }
                    // Out of file descriptors and the like: keep serving the others.
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
                }
            }
        }
    }
}

/// Serves one connection once it has its memory ([`message_memory::admit_connection`]);
/// refuses it with 53300 when there is none.
async fn serve_connection(
    socket: tokio::net::TcpStream,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    handlers: Arc<handler::Handlers>,
    timeout: std::time::Duration,
    pool: &Arc<permafrost_sql::workmem::MemoryPool>,
) {
    let Some(_held) = message_memory::admit_connection(pool).await else {
        let message = format!(
            "sorry, too many clients already: running statements and connections hold {} of the {} bytes they \
             may hold together (part of memory_limit)",
            pool.used(),
            pool.limit()
        );
        connection::refuse(socket, "53300", message).await;
        return;
    };
    // A connection's protocol errors end that connection only.
    let _ = connection::process_socket(socket, tls, handlers, timeout).await;
}

/// One of the `max_connections` a server serves at once, given back when dropped.
struct ConnectionSlot(Arc<std::sync::atomic::AtomicUsize>);

impl ConnectionSlot {
    fn take(open: &Arc<std::sync::atomic::AtomicUsize>, max: usize) -> Option<ConnectionSlot> {
        use std::sync::atomic::Ordering;
        open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1))
            .ok()
            .map(|_| ConnectionSlot(open.clone()))
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}
