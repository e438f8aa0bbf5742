//! Permafrost benchmarks.
//!
//! Workloads are programs that print figures (speed is measured by benchmarks,
//! never asserted in tests). Each workload drives a *target* — the embedded engine now;
//! later the server and the peer systems — through one trait, so every system runs the
//! same client code, data and distribution.

pub mod builtin;
pub mod device;
pub mod experiment;
pub mod mariadb;
pub mod paper;
pub mod plot;
pub mod recovery;
pub mod report;
pub mod servers;
pub mod setup;
pub mod tatp;
pub mod tpcc;
pub mod voter;
pub mod way;
pub mod wire_floor;
pub mod ycsb;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum BenchError {
    #[error("invalid option: {0}")]
    Options(String),
    #[error("database error: {0}")]
    Database(#[from] permafrost_executor::Error),
    #[error("client error: {0}")]
    Client(String),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
