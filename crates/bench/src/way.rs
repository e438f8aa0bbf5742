//! How a benchmark reaches the system it measures, shared by TPC-C and Voter: the three
//! ways of running a transaction ([`Mode`]) and whose stored procedures a call over the
//! wire runs ([`Flavor`]).

use tokio_postgres::error::SqlState;

/// Attempts of one transaction refused for a serialization failure or a deadlock before it
/// counts as failed.
pub(crate) const MAX_ATTEMPTS: u32 = 100;

/// Whether an attempt refused over the PostgreSQL protocol is run again: a serialization
/// failure or a deadlock.
pub(crate) fn retryable(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) || e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED)
}

/// How the transactions are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Interactive blocks over the wire, one statement per round trip.
    Interactive,
    /// One call of a stored procedure per transaction, over the wire.
    Procedures,
    /// The stored procedures called in this process.
    Embedded,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Interactive => "interactive transactions over the wire",
            Mode::Procedures => "stored procedures over the wire",
            Mode::Embedded => "stored procedures, embedded",
        }
    }
}

/// Which server is at the other end of the wire, so whose procedures are called and which
/// of its own statements a transaction needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Permafrost: its built-in procedures, by CALL.
    Permafrost,
    /// PostgreSQL: its PL/pgSQL functions, by SELECT.
    Postgres,
}

impl Flavor {
    /// The flavor of the server whose `SELECT version()` is `version`.
    pub fn of(version: &str) -> Flavor {
        if version.contains("Permafrost") {
            Flavor::Permafrost
        } else {
            Flavor::Postgres
        }
    }
}
