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

/// A database of two partitions with a command log in `dir` (what a test replays).
pub fn logged_config(dir: &std::path::Path) -> Config {
    Config::builder()
        .partitions(2)
        .command_log(permafrost_executor::LogConfig::new(dir.join("log")))
        .build()
        .unwrap()
}

/// Stops `server` and waits until it has let go of `db` (its last other handle).
pub async fn stop_serving(server: Server, db: &Arc<Database>) {
    drop(server);
    let started = std::time::Instant::now();
    while Arc::strong_count(db) > 1 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the server still holds the database"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// What `sql` reads from the database in `config`'s directory, reopened and recovered
/// from its log.
pub async fn recovered_rows(config: Config, sql: &'static str) -> Vec<Vec<permafrost_types::Value>> {
    tokio::task::spawn_blocking(move || {
        let db = Database::open(config).unwrap();
        db.recover(vec![], &mut |_, _| {}).unwrap();
        db.execute_sql(sql, vec![]).unwrap().to_values()
    })
    .await
    .unwrap()
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

/// A server over a new database of two partitions logged in `dir` (what a test replays
/// afterwards), and a client of it.
pub async fn logged_server(dir: &std::path::Path) -> (Arc<Database>, Server, Client) {
    let db = Arc::new(Database::open(logged_config(dir)).unwrap());
    let server = server_over(db.clone(), ServerOptions::default()).await;
    let c = connect(server.port).await;
    (db, server, c)
}

/// The first column of the rows `sql` answers.
pub async fn first_column<T>(c: &Client, sql: &str, params: &[&(dyn tokio_postgres::types::ToSql + Sync)]) -> Vec<T>
where
    T: for<'a> tokio_postgres::types::FromSql<'a>,
{
    c.query(sql, params).await.unwrap().iter().map(|r| r.get(0)).collect()
}
