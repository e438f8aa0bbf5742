//! The executor's error type: what a caller of the embedded API (and, through the server, a
//! client) gets back. Every variant maps to a SQLSTATE and says whether retrying may help.

use permafrost_sql::SqlError;
use permafrost_storage::StorageError;
use thiserror::Error;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// A statement failed (bad SQL, constraint violation, type error, ...).
    #[error("{0}")]
    Sql(#[from] SqlError),
    /// The procedure aborted itself with this message.
    #[error("transaction aborted by procedure: {0}")]
    Aborted(String),
    #[error("procedure \"{0}\" does not exist")]
    UnknownProcedure(String),
    #[error("procedure \"{0}\" already exists")]
    DuplicateProcedure(String),
    #[error("procedure \"{name}\": {message}")]
    BadCall { name: String, message: String },
    /// A call's argument is not a value of its declared type (its own SQLSTATE: 22P02,
    /// 22003, ...).
    #[error("procedure \"{name}\": argument \"{arg}\": {source}")]
    BadArgument {
        name: String,
        arg: String,
        source: permafrost_types::ValueError,
    },
    #[error("invalid setting {setting}: {message}")]
    Config { setting: &'static str, message: String },
    #[error("procedure \"{name}\" panicked: {message}")]
    ProcedurePanicked { name: String, message: String },
    #[error("transaction restarted {restarts} times for evicted data and gave up; retry it")]
    TooManyRestarts { restarts: u32 },
    #[error("{0}")]
    AntiCache(#[from] permafrost_anticache::AntiCacheError),
    /// The command log could not make a committed transaction durable (I/O error, full
    /// disk); the database refuses further writes.
    #[error("command log: {message}")]
    Log { message: String, sqlstate: &'static str },
    /// Replaying the command log went wrong (a record that does not replay as it ran).
    #[error("recovery: {0}")]
    Recovery(String),
    #[error("the database is shutting down")]
    Shutdown,
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<permafrost_durability::LogError> for Error {
    fn from(e: permafrost_durability::LogError) -> Error {
        Error::Log {
            sqlstate: e.sqlstate(),
            message: e.to_string(),
        }
    }
}

impl From<StorageError> for Error {
    fn from(e: StorageError) -> Error {
        Error::Sql(SqlError::Storage(e))
    }
}

impl Error {
    pub fn sqlstate(&self) -> &'static str {
        match self {
            Error::Sql(e) => e.sqlstate(),
            Error::Aborted(_) => "P0001",
            Error::UnknownProcedure(_) => "42883",
            Error::DuplicateProcedure(_) => "42723",
            Error::BadCall { .. } => "22023",
            Error::BadArgument { source, .. } => source.sqlstate(),
            Error::Config { .. } => "22023",
            Error::ProcedurePanicked { .. } => "XX000",
            Error::TooManyRestarts { .. } => "40001",
            Error::AntiCache(e) => e.sqlstate(),
            Error::Log { sqlstate, .. } => sqlstate,
            Error::Recovery(_) => "XX000",
            Error::Shutdown => "57P01",
            Error::Internal(_) => "XX000",
        }
    }

    /// PostgreSQL's DETAIL for the error, where there is more to say than its message.
    pub fn detail(&self) -> Option<String> {
        match self {
            Error::Sql(e) => e.detail(),
            _ => None,
        }
    }

    /// PostgreSQL's HINT for the error: what to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Sql(e) => e.hint(),
            _ => None,
        }
    }

    /// Whether the same request may succeed if retried.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Sql(e) => e.is_retryable(),
            Error::TooManyRestarts { .. } => true,
            _ => false,
        }
    }
}
