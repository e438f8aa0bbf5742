//! Permafrost execution: partitions, transactions, stored procedures and the embedded API.
//!
//! ```text
//! Database::submit(Request) / Session::submit
//!   -> route by the partition parameter (or all partitions)
//!   -> partition queue -> partition executor thread (one per partition, owns its data)
//!        runs the procedure body; its statements execute against the partition's store
//!        commit, or roll back through the undo log
//!   -> reply (one-shot, or batched per session)
//! ```
//!
//! See [`partition`] for the executor and how multi-partition transactions are ordered,
//! [`procedure`] for writing procedures.

mod block_record;
mod block_rows;
mod child;
pub mod config;
mod counters;
mod database;
pub mod datadir;
pub mod error;
mod forked;
mod inspect;
mod interactive;
mod partition;
pub mod procedure;
mod recovery;
mod registry;
mod reply;
mod request;
mod scan;
mod schema_block;
pub mod schema_log;
mod session;
pub mod settings;
mod shared;
mod snapshot;
mod stats;
#[cfg(test)]
mod stepper;

pub use config::{
    AntiCacheConfig, ColdPolicy, Config, ConfigBuilder, LogConfig, LogMode, LogStats, MergePolicy, Retrieval,
    SYNC_BUCKET_BOUNDS, SYNC_BUCKETS, SnapshotConfig, parse_size, sync_bucket_le,
};
pub use counters::{COUNTERS, CounterInfo, CounterKind, DatabaseStats, PartitionStats};
pub use database::{AdHoc, Database, ProcHandle};
pub use error::{Error, Result};
pub use interactive::{MAX_STATEMENTS as MAX_TXN_STATEMENTS, NewStatement, TxnStatement};
pub use permafrost_sql::{ColumnInfo, MoreRows, Prepared, RowRef, Rows, SqlError, StatementKind, limits};
pub use permafrost_storage::MemoryUsage;
pub use procedure::{Library, Partitioning, ProcContext, ProcError, ProcedureDef};
pub use recovery::RecoveryReport;
pub use reply::{Completion, StopFlag};
pub use request::{Pending, Place, Request};
pub use schema_block::SchemaDraft;
pub use session::Session;
pub use snapshot::{LoadReport, SnapshotInfo};
pub use stats::TableStats;
