//! A connection's start: authentication (trust for loopback clients, SCRAM-SHA-256 when
//! users are configured), the parameters reported to the client, and cancel requests.

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::Sink;
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
use crate::handler::PG_VERSION;
use crate::metrics::ServerMetrics;

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
            ("TimeZone", "UTC"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("in_hot_standby", "off"),
            ("default_transaction_read_only", "off"),
            ("is_superuser", "on"),
            ("search_path", "public"),
        ] {
            p.insert(k.to_string(), v.to_string());
        }
        p.insert(
            "application_name".into(),
            meta.get("application_name").cloned().unwrap_or_default(),
        );
        p.insert(
            "session_authorization".into(),
            meta.get("user").cloned().unwrap_or_default(),
        );
        p.insert("scram_iterations".into(), SCRAM_ITERATIONS.to_string());
        Some(p)
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

/// The start-up handler: authentication, then cancel and connection bookkeeping.
pub struct Startup {
    auth: Auth,
    cancels: Arc<Cancels>,
    metrics: Arc<ServerMetrics>,
}

impl Startup {
    pub fn new(auth: Auth, cancels: Arc<Cancels>, metrics: Arc<ServerMetrics>) -> Startup {
        Startup { auth, cancels, metrics }
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
        match &self.auth {
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
                    save_startup_parameters_to_metadata(client, startup);
                    let (pid, key) = self.cancels.next_key();
                    client.set_pid_and_secret_key(pid, key);
                    finish_authentication(client, &ServerParams).await?;
                    self.logged_in(client);
                }
                Ok(())
            }
            Auth::Scram(h) => {
                h.on_startup(client, message).await?;
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
        client.session_extensions().insert(CancelEntry {
            cancels: self.clone(),
            pid,
            notify,
        });
    }

    /// The cancel token of a connection (none before it has logged in).
    pub fn token<C: ClientInfo>(&self, client: &C) -> Option<CancelToken> {
        client
            .session_extensions()
            .get::<CancelEntry>()
            .map(|e| CancelToken(e.notify.clone()))
    }

    /// Connections registered now.
    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

/// What a running statement of a connection waits on to hear of a cancel request.
#[derive(Clone)]
pub struct CancelToken(Arc<Notify>);

impl CancelToken {
    /// Runs `f` unless a cancel request for this connection arrives first (57014).
    pub async fn run<T>(&self, f: impl Future<Output = T>) -> PgWireResult<T> {
        tokio::select! {
            r = f => Ok(r),
            _ = self.0.notified() => Err(client_error("57014", "canceling statement due to user request")),
        }
    }
}
