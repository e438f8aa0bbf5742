//! A connection's start: authentication (trust for loopback clients, SCRAM-SHA-256 when
//! users are configured), the parameters reported to the client, and cancel requests.

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::Sink;
use permafrost_executor::StopFlag;
use permafrost_sql::exec::sequences::SessionSequences;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::sasl::scram::{ScramAuth, gen_salted_password};
use pgwire::api::auth::{
    AuthSource, LoginInfo, Password, ServerParameterProvider, StartupHandler, finish_authentication,
    protocol_negotiation, save_startup_parameters_to_metadata,
};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tokio::sync::Notify;

use crate::error::client_error;
use crate::metrics::ServerMetrics;
use crate::session_settings::PG_VERSION;

/// Iterations of the SCRAM key derivation (PostgreSQL's default).
pub const SCRAM_ITERATIONS: usize = 4096;

/// A user who may log in with SCRAM-SHA-256.
#[derive(Clone)]
pub struct User {
    pub name: String,
    salt: Vec<u8>,
    salted_password: Vec<u8>,
}

impl Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User").field("name", &self.name).finish_non_exhaustive()
    }
}

impl User {
    /// A user with a password (kept only as its salted SCRAM key).
    pub fn new(name: impl Into<String>, password: &str) -> User {
        let salt: [u8; 16] = rand::random();
        User {
            name: name.into(),
            salted_password: gen_salted_password(password, &salt, SCRAM_ITERATIONS),
            salt: salt.to_vec(),
        }
    }
}

#[derive(Debug)]
struct Users(HashMap<String, User>);

#[async_trait]
impl AuthSource for Users {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let name = login.user().unwrap_or("");
        match self.0.get(name) {
            Some(u) => Ok(Password::new(Some(u.salt.clone()), u.salted_password.clone())),
            None => Err(PgWireError::InvalidPassword(name.to_string())),
        }
    }
}

/// The parameters reported to every client after it logs in.
#[derive(Debug, Default)]
pub struct ServerParams;

impl ServerParameterProvider for ServerParams {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let meta = client.metadata();
        let mut p = HashMap::with_capacity(16);
        for (k, v) in [
            ("server_version", PG_VERSION),
            ("server_encoding", "UTF8"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("IntervalStyle", "postgres"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("in_hot_standby", "off"),
            ("default_transaction_read_only", "off"),
            ("is_superuser", "on"),
            ("search_path", "public"),
        ] {
            p.insert(k.to_string(), v.to_string());
        }
        // The start-up packet's settings (checked when it came: `Startup::on_startup`) are
        // the session's defaults, as in PostgreSQL (RESET goes back to them): pgjdbc's
        // TimeZone, `options=-c statement_timeout=5s`, ...; the reported settings' values
        // are the client's to know.
        let settings = crate::session_settings::of(client);
        if let Some(StartupValues(values)) = client.session_extensions().get::<StartupValues>().as_deref() {
            for (s, v) in values {
                settings.set_startup(s, v.clone());
            }
        }
        for s in crate::session_settings::SETTINGS.iter().filter(|s| s.reported) {
            p.insert(s.spelled.to_string(), settings.get(s));
        }
        p.insert(
            "session_authorization".into(),
            meta.get("user").cloned().unwrap_or_default(),
        );
        p.insert("scram_iterations".into(), SCRAM_ITERATIONS.to_string());
        Some(p)
    }
}

/// The settings a start-up packet gave, checked ([`crate::session_settings::startup_values`]),
/// kept with the connection until it has logged in.
struct StartupValues(Vec<(&'static crate::session_settings::Setting, String)>);

/// Checks the settings of a start-up packet and keeps them with the connection; what
/// PostgreSQL would refuse ends the start-up with its error, FATAL.
fn check_startup<C: ClientInfo>(
    client: &C,
    params: &std::collections::BTreeMap<String, String>,
    server_work_mem: usize,
) -> PgWireResult<()> {
    match crate::session_settings::startup_values(params, server_work_mem) {
        Ok(values) => {
            client.session_extensions().insert(StartupValues(values));
            Ok(())
        }
        Err(PgWireError::UserError(mut info)) => {
            info.severity = "FATAL".into();
            Err(PgWireError::UserError(info))
        }
        Err(e) => Err(e),
    }
}

/// Who may connect.
pub enum Auth {
    /// No password; only clients on loopback addresses unless `remote` is set.
    Trust { remote: bool },
    /// SCRAM-SHA-256 against the configured users.
    Scram(Box<SASLAuthStartupHandler<ServerParams>>),
}

impl Auth {
    /// SCRAM-SHA-256 for `users`.
    pub fn scram(users: Vec<User>) -> Auth {
        let source = Users(users.into_iter().map(|u| (u.name.clone(), u)).collect());
        let mut scram = ScramAuth::new(Arc::new(source));
        scram.set_iterations(SCRAM_ITERATIONS);
        Auth::Scram(Box::new(
            SASLAuthStartupHandler::new(Arc::new(ServerParams)).with_scram(scram),
        ))
    }
}

/// The start-up handler: authentication, then cancel and connection bookkeeping. A clone
/// shares everything ([`crate::handler::Handlers::parts`]).
#[derive(Clone)]
pub struct Startup {
    auth: Arc<Auth>,
    cancels: Arc<Cancels>,
    /// The most `work_mem` a session may set (bytes: the server's statement memory).
    server_work_mem: usize,
    metrics: Arc<ServerMetrics>,
}

impl Startup {
    pub fn new(auth: Auth, cancels: Arc<Cancels>, metrics: Arc<ServerMetrics>, server_work_mem: usize) -> Startup {
        Startup {
            auth: Arc::new(auth),
            cancels,
            server_work_mem,
            metrics,
        }
    }

    /// Registers a connection that has just logged in.
    fn logged_in<C: ClientInfo>(&self, client: &mut C) {
        self.cancels.register(client);
        let guard = self.metrics.track_connection();
        client.session_extensions().insert(guard);
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match &*self.auth {
            Auth::Trust { remote } => {
                if let PgWireFrontendMessage::Startup(startup) = &message {
                    let peer = client.socket_addr().ip();
                    if !remote && !peer.to_canonical().is_loopback() {
                        return Err(PgWireError::UserError(Box::new(pgwire::error::ErrorInfo::new(
                            "FATAL".into(),
                            "28000".into(),
                            format!(
                                "no password authentication is configured, so only clients on this machine may \
                                 connect (this one is {peer}): configure users (see README, Authentication)"
                            ),
                        ))));
                    }
                    protocol_negotiation(client, startup).await?;
                    check_startup(client, &startup.parameters, self.server_work_mem)?;
                    save_startup_parameters_to_metadata(client, startup);
                    let (pid, key) = self.cancels.next_key();
                    client.set_pid_and_secret_key(pid, key);
                    finish_authentication(client, &ServerParams).await?;
                    self.logged_in(client);
                }
                Ok(())
            }
            Auth::Scram(h) => {
                if let PgWireFrontendMessage::Startup(startup) = &message {
                    check_startup(client, &startup.parameters, self.server_work_mem)?;
                }
                if let Err(e) = h.on_startup(client, message).await {
                    // pgwire names the user of the SCRAM message, which libpq leaves empty
                    // (the user is in the startup packet): name that one, as PostgreSQL.
                    return Err(match e {
                        PgWireError::InvalidPassword(u) if u.is_empty() => PgWireError::InvalidPassword(
                            client
                                .metadata()
                                .get(pgwire::api::METADATA_USER)
                                .cloned()
                                .unwrap_or_default(),
                        ),
                        e => e,
                    });
                }
                if matches!(client.state(), PgWireConnectionState::ReadyForQuery)
                    && client.session_extensions().get::<CancelEntry>().is_none()
                {
                    self.logged_in(client);
                }
                Ok(())
            }
        }
    }
}

/// A connection's entry in the cancel registry; removes itself when the connection ends.
struct CancelEntry {
    cancels: Arc<Cancels>,
    pid: i32,
    notify: Arc<Notify>,
    /// The connection's `statement_timeout`, in milliseconds (0: none).
    timeout_ms: Arc<AtomicU64>,
    /// The connection's `work_mem`, in bytes (0: the server's).
    work_mem: Arc<AtomicU64>,
    /// What the connection's sequences last gave it (`currval()`, `lastval()`).
    sequences: Arc<SessionSequences>,
    /// The connection's settings (its TimeZone, which each statement runs in).
    settings: Arc<crate::session_settings::SessionSettings>,
}

impl Drop for CancelEntry {
    fn drop(&mut self) {
        if let Ok(mut m) = self.cancels.map.lock() {
            m.remove(&self.pid);
        }
    }
}

/// The open connections by process id, for cancel requests.
pub struct Cancels {
    map: Mutex<HashMap<i32, (SecretKey, Arc<Notify>)>>,
    next_pid: AtomicI32,
}

impl Default for Cancels {
    fn default() -> Self {
        Cancels {
            map: Mutex::new(HashMap::new()),
            next_pid: AtomicI32::new(1000),
        }
    }
}

impl Cancels {
    fn next_key(&self) -> (i32, SecretKey) {
        (
            self.next_pid.fetch_add(1, Ordering::Relaxed),
            SecretKey::I32(rand::random()),
        )
    }

    fn register<C: ClientInfo>(self: &Arc<Self>, client: &mut C) {
        let (pid, key) = client.pid_and_secret_key();
        let notify = Arc::new(Notify::new());
        if let Ok(mut m) = self.map.lock() {
            m.insert(pid, (key, notify.clone()));
        }
        let settings = crate::session_settings::of(client);
        // (What the start-up packet set: statement_timeout in ms, work_mem in kB.)
        let value = |name: &str| {
            crate::session_settings::setting(name).map_or(0, |s| settings.get(s).parse::<u64>().unwrap_or(0))
        };
        client.session_extensions().insert(CancelEntry {
            cancels: self.clone(),
            pid,
            notify,
            timeout_ms: Arc::new(AtomicU64::new(value("statement_timeout"))),
            work_mem: Arc::new(AtomicU64::new(value("work_mem") * 1024)),
            sequences: Arc::default(),
            settings,
        });
    }

    /// The cancel token of a connection (none before it has logged in).
    pub fn token<C: ClientInfo>(&self, client: &C) -> Option<CancelToken> {
        let peer = client.session_extensions().get::<PeerFd>().map(|p| p.0);
        client.session_extensions().get::<CancelEntry>().map(|e| CancelToken {
            notify: e.notify.clone(),
            timeout_ms: e.timeout_ms.clone(),
            work_mem: e.work_mem.clone(),
            sequences: e.sequences.clone(),
            settings: e.settings.clone(),
            peer,
        })
    }

    /// Connections registered now.
    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A connection's own handle on the server's [`Cancels`], as the cancel handler its loop
/// passes with every message ([`crate::handler::Handlers::parts`]).
pub(crate) struct CancelsOf(pub(crate) Arc<Cancels>);

#[async_trait]
impl CancelHandler for CancelsOf {
    async fn on_cancel_request(&self, req: CancelRequest) {
        self.0.on_cancel_request(req).await
    }
}

#[async_trait]
impl CancelHandler for Cancels {
    async fn on_cancel_request(&self, req: CancelRequest) {
        let notify = self.map.lock().ok().and_then(|m| {
            m.get(&req.pid)
                .filter(|(key, _)| key.eq_value(&req.secret_key))
                .map(|(_, n)| n.clone())
        });
        // As in PostgreSQL: a cancel for an idle connection does nothing, and the
        // requester hears nothing either way.
        if let Some(n) = notify {
            n.notify_waiters();
        }
    }
}

/// The descriptor of a connection's TCP socket, kept in its session to notice the client
/// going away while a statement runs ([`CancelToken::client_gone`]). Only used while the
/// connection's task, which owns the socket, awaits the statement.
#[derive(Clone, Copy, Debug)]
pub struct PeerFd(pub std::os::fd::RawFd);

/// How long a statement runs before its client is watched for going away (most statements
/// end sooner, and watching costs a descriptor).
const WATCH_CLIENT_AFTER: Duration = Duration::from_secs(1);

/// How often a watched client with messages already waiting is looked at again.
const WATCH_CLIENT_EVERY: Duration = Duration::from_millis(200);

/// What a running statement of a connection waits on to hear of a cancel request, the
/// connection's `statement_timeout`, and its client going away.
#[derive(Clone)]
pub struct CancelToken {
    notify: Arc<Notify>,
    timeout_ms: Arc<AtomicU64>,
    work_mem: Arc<AtomicU64>,
    sequences: Arc<SessionSequences>,
    settings: Arc<crate::session_settings::SessionSettings>,
    peer: Option<std::os::fd::RawFd>,
}

/// The flag a statement of the connection `cancel` belongs to (if any) is stopped with,
/// carrying the connection's `work_mem` and sequence values; `in_block` for a statement of an open
/// transaction block ([`StopFlag::in_block`]).
pub fn stop_flag(cancel: Option<&CancelToken>, in_block: bool) -> StopFlag {
    let flag = if in_block {
        StopFlag::in_block()
    } else {
        StopFlag::new()
    };
    flag.with_work_mem(cancel.and_then(CancelToken::work_mem))
        .with_sequences(cancel.map(|c| c.sequences.clone()))
        .with_zone(cancel.and_then(CancelToken::zone))
}

impl CancelToken {
    /// Runs a statement that stops when asked (`stop`): on a cancel request or once the
    /// statement timeout passes, `stop` is set and the statement's own outcome awaited: an
    /// error 57014 naming the reason if it stopped (and rolled back), its result if it
    /// had committed before it looked.
    pub async fn run_stoppable<T>(
        &self,
        stop: &StopFlag,
        f: impl Future<Output = Result<T, permafrost_executor::Error>>,
    ) -> PgWireResult<Result<T, permafrost_executor::Error>> {
        tokio::pin!(f);
        // A statement run inline has ended by its first poll; one that wrote may then wait
        // only for its group commit, which nothing can stop: no watch is armed for it
        // (arming the first timer of an idle runtime writes its eventfd).
        let first = std::future::poll_fn(|cx| std::task::Poll::Ready(f.as_mut().poll(cx))).await;
        if let std::task::Poll::Ready(r) = first {
            return Ok(r);
        }
        if stop.is_awaiting_log() {
            let _waiting = crate::threads::AwaitingLog::new();
            return Ok(f.await);
        }
        let timeout = self.statement_timeout();
        let reason = tokio::select! {
            // The statement first: when it ends as a reason to stop comes, its result wins.
            // (One done at once returned above, before any timer was armed.)
            biased;
            r = &mut f => return Ok(r),
            _ = self.notify.notified() => "user request",
            _ = self.client_gone() => "the client going away",
            _ = async {
                match timeout {
                    Some(t) => tokio::time::sleep(t).await,
                    None => std::future::pending().await,
                }
            } => "statement timeout",
        };
        stop.set();
        match f.await {
            Err(e) if e.sqlstate() == "57014" => {
                Err(client_error("57014", format!("canceling statement due to {reason}")))
            }
            other => Ok(other),
        }
    }

    /// Resolves on a cancel request, or once the statement timeout has passed since
    /// `started` (never without one).
    pub async fn stopped(&self, started: std::time::Instant) {
        let timeout = self.statement_timeout();
        tokio::select! {
            _ = self.notify.notified() => {}
            _ = self.client_gone() => {}
            _ = async {
                match timeout {
                    Some(t) => tokio::time::sleep(t.saturating_sub(started.elapsed())).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
    }

    /// Resolves once the client has closed its connection or it broke (a statement it
    /// waits for runs more than [`WATCH_CLIENT_AFTER`]; then its socket is looked at
    /// without reading from it: end of stream or an error means gone; messages waiting
    /// mean it is there, and it is looked at again later). Never without a socket.
    pub async fn client_gone(&self) {
        let Some(fd) = self.peer else {
            return std::future::pending().await;
        };
        tokio::time::sleep(WATCH_CLIENT_AFTER).await;
        // SAFETY: `fd` is the connection's socket, open while its task awaits the
        // statement this watches (the only time this runs); it is duplicated, and the
        // duplicate is owned and closed here.
        let owned = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }.try_clone_to_owned();
        let Ok(owned) = owned else {
            return std::future::pending().await;
        };
        let std_stream = std::net::TcpStream::from(owned);
        if std_stream.set_nonblocking(true).is_err() {
            return std::future::pending().await;
        }
        let Ok(watch) = tokio::net::TcpStream::from_std(std_stream) else {
            return std::future::pending().await;
        };
        let mut byte = [0u8; 1];
        loop {
            match watch.peek(&mut byte).await {
                Ok(0) => return,
                Ok(_) => tokio::time::sleep(WATCH_CLIENT_EVERY).await,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => {
                }
                Err(_) => return,
            }
        }
    }

    /// The connection's `statement_timeout` (none when 0).
    pub fn statement_timeout(&self) -> Option<Duration> {
        match self.timeout_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    pub fn set_statement_timeout(&self, ms: u64) {
        self.timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// The connection's `work_mem` in bytes, if it SET one.
    pub fn work_mem(&self) -> Option<usize> {
        match self.work_mem.load(Ordering::Relaxed) {
            0 => None,
            bytes => usize::try_from(bytes).ok(),
        }
    }

    /// Sets the connection's `work_mem` (0: back to the server's).
    pub fn set_work_mem(&self, bytes: u64) {
        self.work_mem.store(bytes, Ordering::Relaxed);
    }

    /// The connection's settings.
    pub fn settings(&self) -> &crate::session_settings::SessionSettings {
        &self.settings
    }

    /// The connection's TimeZone (`None`: UTC), which its statements run in and its rows
    /// are written in.
    pub fn zone(&self) -> Option<permafrost_types::zone::Zone> {
        self.settings.zone()
    }
}
