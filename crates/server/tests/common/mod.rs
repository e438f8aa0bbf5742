//! What the server's test files share: a server on a free loopback port, and a client.

#![allow(dead_code)] // each test file uses part of it

use std::sync::Arc;

use permafrost_executor::{Config, Database};
use permafrost_server::ServerOptions;
use tokio_postgres::{Client, NoTls};

/// A server that runs until this is dropped.
pub struct Server {
    pub port: u16,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// A database of two partitions, in memory.
pub fn database() -> Arc<Database> {
    Arc::new(Database::open(Config::builder().partitions(2).build().unwrap()).unwrap())
}

/// A server over `db` with `options`.
pub async fn server_over(db: Arc<Database>, options: ServerOptions) -> Server {
    let listener = permafrost_server::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(permafrost_server::serve_with(db, listener, options, async {
        let _ = stopped.await;
    }));
    Server { port, _stop: stop }
}

/// A server over a fresh [`database`] with the default options.
pub async fn server() -> Server {
    server_over(database(), ServerOptions::default()).await
}

/// A client of the server on `port` (its connection runs on a task of its own).
pub async fn connect(port: u16) -> Client {
    let (client, conn) = tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=test"), NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

/// A fresh server and a client of it.
pub async fn start() -> (Client, Server) {
    let s = server().await;
    (connect(s.port).await, s)
}

/// The SQLSTATE of an error (or why there is none).
pub fn code(e: &tokio_postgres::Error) -> String {
    e.code()
        .map(|c| c.code().to_string())
        .unwrap_or_else(|| format!("no SQLSTATE: {e}"))
}
