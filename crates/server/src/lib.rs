//! Permafrost's PostgreSQL wire-protocol server: ordinary PostgreSQL clients (psql, libpq,
//! psycopg, JDBC, tokio-postgres) connect, run DDL and ad hoc SQL, each statement as its
//! own transaction (single-partition when its parameters pin the partition key).
//!
//! The protocol itself (start-up, simple and extended query, framing) is the pgwire
//! crate's; this crate decides what each statement does ([`handler`]) and how values are
//! typed on the wire ([`types`]).

pub mod error;
pub mod handler;
pub mod types;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use permafrost_executor::Database;
use tokio::net::TcpListener;

pub use error::{Result, ServerError};
pub use handler::PG_VERSION;

/// Binds the listening socket (errors name the address).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|source| ServerError::Listen {
        addr: addr.to_string(),
        source,
    })
}

/// Serves connections from `listener` until `shutdown` resolves; then stops accepting and
/// returns (connections still open are closed when the runtime stops).
pub async fn serve(db: Arc<Database>, listener: TcpListener, shutdown: impl Future<Output = ()>) -> Result<()> {
    let handlers = Arc::new(handler::Handlers::new(db));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => {
                match accepted {
                    Ok((socket, _peer)) => {
                        let h = handlers.clone();
                        tokio::spawn(async move {
                            // A connection's protocol errors end that connection only.
                            let _ = pgwire::tokio::process_socket(socket, None, h).await;
                        });
                    }
                    // Out of file descriptors and the like: keep serving the others.
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
                }
            }
        }
    }
}
