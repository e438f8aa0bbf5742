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

/// Who a client is, for the log: its address and backend process id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientTag {
    pub addr: std::net::SocketAddr,
    pub pid: i32,
}

impl ClientTag {
    pub(crate) fn of<C: pgwire::api::ClientInfo>(client: &C) -> ClientTag {
        ClientTag {
            addr: client.socket_addr(),
            pid: client.pid_and_secret_key().0,
        }
    }
}

/// Longest statement text a logged error quotes.
const LOGGED_STATEMENT: usize = 1000;

/// Logs an error a client is answered with (`log_client_errors`): its SQLSTATE and
/// message, the connection, and the statement when known. A client that went away is not
/// an error of its own.
pub(crate) fn log_client_error(who: ClientTag, statement: Option<&str>, e: &PgWireError) {
    match e {
        PgWireError::UserError(info) => log_error_info(who, statement, info),
        PgWireError::IoError(_) => {}
        other => log_error(who, statement, "08P01", &other.to_string()),
    }
}

/// [`log_client_error`] of an error already made an ErrorResponse's fields.
pub(crate) fn log_error_info(who: ClientTag, statement: Option<&str>, info: &ErrorInfo) {
    log_error(who, statement, &info.code, &info.message);
}

fn log_error(who: ClientTag, statement: Option<&str>, code: &str, message: &str) {
    eprintln!("{}", error_line(who, statement, code, message));
}

/// The log line of a client's error.
fn error_line(who: ClientTag, statement: Option<&str>, code: &str, message: &str) -> String {
    let statement = match statement {
        Some(s) if s.len() > LOGGED_STATEMENT => {
            let mut end = LOGGED_STATEMENT;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            format!("; statement: {}...", &s[..end])
        }
        Some(s) => format!("; statement: {s}"),
        None => String::new(),
    };
    format!(
        "client error {code}: {message} (client {}, pid {}){statement}",
        who.addr, who.pid
    )
}

/// An error for the client, with its SQLSTATE.
pub(crate) fn client_error(sqlstate: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        SEVERITY_ERROR.to_owned(),
        sqlstate.to_owned(),
        message.into(),
    )))
}

/// An error for the client with PostgreSQL's DETAIL and HINT.
pub(crate) fn client_error_explained(
    sqlstate: &str,
    message: impl Into<String>,
    detail: Option<String>,
    hint: Option<String>,
) -> PgWireError {
    let mut info = ErrorInfo::new(SEVERITY_ERROR.to_owned(), sqlstate.to_owned(), message.into());
    info.detail = detail;
    info.hint = hint;
    PgWireError::UserError(Box::new(info))
}

/// An engine error for the client: its own SQLSTATE and message.
pub(crate) fn db_error(e: permafrost_executor::Error) -> PgWireError {
    let mut info = ErrorInfo::new(SEVERITY_ERROR.to_owned(), e.sqlstate().to_owned(), e.to_string());
    info.detail = e.detail();
    info.hint = e.hint();
    PgWireError::UserError(Box::new(info))
}

/// A SQL error (parse, plan) for the client, with its DETAIL.
pub(crate) fn sql_error(e: permafrost_sql::SqlError) -> PgWireError {
    let mut info = ErrorInfo::new(SEVERITY_ERROR.to_owned(), e.sqlstate().to_owned(), e.to_string());
    info.detail = e.detail();
    info.hint = e.hint();
    PgWireError::UserError(Box::new(info))
}

/// A SQL error raised over statement `text`, with its DETAIL and where in `text` it lies
/// (PostgreSQL's error cursor: 1-based, in characters); [`at_statement`] makes the place
/// one in the whole query string.
pub(crate) fn sql_error_in(e: permafrost_sql::SqlError, text: &str) -> PgWireError {
    let position = e
        .offset_in(text)
        .and_then(|at| text.get(..at))
        .map(|before| before.chars().count() + 1);
    let mut out = sql_error(e);
    if let (PgWireError::UserError(info), Some(p)) = (&mut out, position) {
        info.position = Some(p.to_string());
    }
    out
}

/// Makes the error cursor of an error over a statement ([`sql_error_in`]) one in the whole
/// query string, `before` characters preceding the statement there.
pub(crate) fn at_statement(mut e: PgWireError, before: usize) -> PgWireError {
    if let PgWireError::UserError(info) = &mut e
        && let Some(p) = info.position.as_deref().and_then(|p| p.parse::<usize>().ok())
    {
        info.position = Some((p + before).to_string());
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_error_names_its_code_connection_and_statement() {
        let who = ClientTag {
            addr: "127.0.0.1:5000".parse().unwrap(),
            pid: 7,
        };
        assert_eq!(
            error_line(who, Some("select 1/0"), "22012", "division by zero"),
            "client error 22012: division by zero (client 127.0.0.1:5000, pid 7); statement: select 1/0"
        );
        assert_eq!(
            error_line(who, None, "08P01", "bad message"),
            "client error 08P01: bad message (client 127.0.0.1:5000, pid 7)"
        );
        let long = "é".repeat(LOGGED_STATEMENT);
        let line = error_line(who, Some(&long), "54000", "too long");
        assert!(line.ends_with("...") && line.len() < LOGGED_STATEMENT + 100, "{line}");
    }
}
