//! What a snapshot is while it is taken and after ([`SnapJob`], [`SnapshotInfo`]), and the
//! database's snapshot state ([`Snapshots`], the periodic thread's handle).

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use permafrost_anticache::DirectoryImage;

use crate::error::Result;

/// What one completed snapshot was.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapshotInfo {
    pub epoch: u64,
    /// The last command-log LSN it holds.
    pub cut_lsn: u64,
    pub path: PathBuf,
    pub bytes: u64,
    /// How long the partitions were stopped (the barrier and the fork), microseconds.
    pub pause_micros: u64,
    /// From the request to the file being durable.
    pub seconds: f64,
    /// The snapshot whose block directories this one's are differences from (kept until a
    /// snapshot with whole directories completes); 0: this one lists them whole.
    pub base_epoch: u64,
    /// Block directory entries written: every live block, or the blocks added and removed
    /// since the base.
    pub directory_entries: u64,
    /// Blocks live when it was taken.
    pub blocks_live: u64,
}

/// A database's snapshot state.
#[derive(Default)]
pub(crate) struct Snapshots {
    /// One snapshot at a time.
    pub running: Mutex<()>,
    pub next_epoch: AtomicU64,
    pub last: Mutex<Option<SnapshotInfo>>,
    pub taken: AtomicU64,
    pub failed: AtomicU64,
    /// Command-log bytes written when the last snapshot was taken (for `log_bytes`).
    pub log_bytes_at_last: AtomicU64,
    /// Set once recovery is done (or there was nothing to recover): a snapshot before
    /// that would claim records not replayed yet.
    pub ready: std::sync::atomic::AtomicBool,
    pub directories: Mutex<Directories>,
}

/// Whether the next snapshot lists whole block directories or differences.
#[derive(Default)]
pub(crate) struct Directories {
    /// The last complete snapshot taken by this process with whole directories: the next
    /// one's differences are from it. `None` until one completes (after a restart the
    /// first snapshot is whole).
    pub base: Option<u64>,
    /// The last snapshot's differences outgrew half of the whole directories: the next one
    /// lists them whole (and becomes the base).
    pub whole_next: bool,
}

/// A snapshot being taken: handed to every partition with [`MpWork::Snapshot`].
pub(crate) struct SnapJob {
    pub epoch: u64,
    /// The snapshot the directories are differences from; `None`: whole directories.
    pub base: Option<u64>,
    pub dir: PathBuf,
    pub history: Vec<String>,
    /// The sequences of their own (`CREATE SEQUENCE`) the history makes: their counters
    /// are read at the barrier.
    pub sequences: Vec<permafrost_storage::TableId>,
    /// Each partition's block directory at the barrier.
    pub images: Mutex<Vec<(u32, DirectoryImage)>>,
    pub forked: Mutex<Option<Result<Forked>>>,
}

pub(crate) struct Forked {
    pub(super) pid: libc::pid_t,
    pub(super) cut_lsn: u64,
    /// Directory entries the snapshot lists (blocks added and removed, or every block),
    /// and the blocks live in all partitions.
    pub(super) listed: u64,
    pub(super) live: u64,
    /// Read end of a pipe the child writes its error message into.
    pub(super) err_fd: libc::c_int,
    pub(super) pause: Duration,
}

/// The running periodic snapshot thread.
pub(crate) struct Periodic {
    pub(super) stop: crossbeam_channel::Sender<()>,
    pub(super) thread: std::thread::JoinHandle<()>,
}

impl Periodic {
    /// Stops the thread and waits for it (and for a snapshot it is taking).
    pub(crate) fn stop(self) {
        drop(self.stop);
        if self.thread.thread().id() != std::thread::current().id() {
            let _ = self.thread.join();
        }
    }
}
