//! The command log: one checksummed record per committed transaction, in commit order,
//! written by one writer thread with group commit into preallocated segments (docs/format.md,
//! "Command log, version 4").
//!
//! - [`CommandLog`] appends records ([`encode_record`] on the partition threads, framing,
//!   batching, `fdatasync` and rotation on the writer thread) and calls each record's
//!   `done` callback when it is durable (sync mode) or at once (async, off).
//! - [`LogReader`] reads the records back for recovery, checking every byte, and tells a
//!   torn tail (a crash during the one unsynced write: dropped) from damage to records
//!   that were durable (refused).
//! - [`trim_damaged_log`] cuts a refused log at its damage when the operator asks for it,
//!   saying what was lost.
//! - The writer's and the reader's file I/O goes through the I/O seam (`permafrost_io::Fs`), with
//!   `permafrost_io::FaultyFs` for tests (torn writes, failed `fdatasync`, a full disk, a
//!   simulated power loss).

mod config;
mod error;
pub mod format;
mod reader;
mod record;
mod trim;
mod writer;

pub use config::{LogConfig, LogMode};
pub use error::LogError;
pub use reader::{LogReader, TornTail};
pub use record::{Request, StreamedCall, TxnRecord, decode_record, encode_call, encode_record};
pub use trim::{Trimmed, trim_damaged_log};
pub use writer::{Chunk, CommandLog, DoneFn, LogStats, SYNC_BUCKET_BOUNDS, SYNC_BUCKETS, sync_bucket_le};
