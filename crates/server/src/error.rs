//! The server's error type. Every error a client can cause reaches it as an ErrorResponse
//! with a SQLSTATE; errors of the server itself (the listener) are reported at start-up.

use pgwire::error::{ErrorInfo, PgWireError, SEVERITY_ERROR};
use thiserror::Error;

pub type Result<T, E = ServerError> = std::result::Result<T, E>;

#[derive(Debug, Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Database(#[from] permafrost_executor::Error),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("metrics endpoint: {0}")]
    Metrics(String),
    #[error("connection threads: {0}")]
    Threads(String),
}

/// An error for the client, with its SQLSTATE.
pub(crate) fn client_error(sqlstate: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        SEVERITY_ERROR.to_owned(),
        sqlstate.to_owned(),
        message.into(),
    )))
}

/// An engine error for the client: its own SQLSTATE and message.
pub(crate) fn db_error(e: permafrost_executor::Error) -> PgWireError {
    client_error(e.sqlstate(), e.to_string())
}

/// A SQL error (parse, plan) for the client.
pub(crate) fn sql_error(e: permafrost_sql::SqlError) -> PgWireError {
    client_error(e.sqlstate(), e.to_string())
}
