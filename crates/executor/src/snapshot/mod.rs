//! Snapshots: taking them (periodically and on demand) and loading one at recovery.
//!
//! Taking one is a multi-partition transaction over every partition ([`MpWork::Snapshot`]):
//! when the coordinator holds all the stores, each partition is at a transaction boundary
//! and has appended its commits to the command log, so the log's last LSN is the cut (the
//! snapshot holds exactly the transactions up to it). The coordinator then `fork`s: the
//! child process gets a copy-on-write image of the whole address space, serializes the
//! stores, the block directories and the blocks still being written into a snapshot file
//! (format: `permafrost_durability::snapshot`), syncs the block files and the snapshot, and
//! exits. The partitions get their stores back as soon as the fork returns: the pause is
//! the fork (copying page tables), not the serialization. Writes after that copy the pages
//! they touch (the kernel's copy-on-write), so the extra memory is what the database
//! changes while the child writes.
//!
//! Blocks are immutable, so the snapshot holds no block data, only the directory (and the
//! bytes of blocks whose write was still in flight). A block the newest complete snapshot
//! refers to is never reused: the anti-cache keeps retired blocks' slots until a later
//! snapshot completes (`AntiCache::snapshot_started` / `snapshot_completed`). When a
//! snapshot completes, the command-log segments it covers and older snapshots are removed.
//!
//! Loading ([`load`]): the schema statements are applied, then each partition gets its
//! block directory, tombstones, the index entries of its evicted tuples and its rows
//! (coldest first, so the LRU order survives), in messages handled by the partition
//! threads in parallel; then the log after the cut is replayed.

pub(crate) mod fork;
pub(crate) mod job;
pub(crate) mod load;
pub(crate) mod take;
mod write;

pub use job::SnapshotInfo;
pub use load::LoadReport;
