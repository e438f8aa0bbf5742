//! Permafrost durability.
//!
//! The [`commandlog`]: one record per committed transaction holding what the transaction
//! was asked to do (a procedure call, an ad hoc statement or a schema change, with its
//! parameters, partitions, timestamp and random seed), never row images, written with
//! group commit. Recovery replays it on top of the newest [`snapshot`].
//!
//! The on-disk formats are specified in docs/format.md ("Command log, version 4",
//! "Snapshot, version 2").

pub mod codec;
pub mod commandlog;
pub mod fuzzing;
pub mod snapshot;

pub use commandlog::*;
