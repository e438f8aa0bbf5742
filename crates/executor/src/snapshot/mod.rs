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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use permafrost_anticache::{BlockMeta, DirectoryImage};
use permafrost_durability::snapshot::{self as fmt, Dec, Enc, SECTION_TARGET, SnapshotHeader, SnapshotWriter, kind};
use permafrost_storage::{PartitionStore, Tombstone};

use crate::database::Database;
use crate::error::{Error, Result};
use crate::partition::Msg;
use crate::partition::mp::MpWork;

mod fork;
mod load;
mod write;

pub(crate) use fork::fork_writer;
use fork::wait_writer;
pub use load::LoadReport;
pub(crate) use load::{Restore, load};
use write::write_snapshot;

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
    /// Each partition's block directory at the barrier.
    pub images: Mutex<Vec<(u32, DirectoryImage)>>,
    pub forked: Mutex<Option<Result<Forked>>>,
}

pub(crate) struct Forked {
    pid: libc::pid_t,
    cut_lsn: u64,
    /// Directory entries the snapshot lists (blocks added and removed, or every block),
    /// and the blocks live in all partitions.
    listed: u64,
    live: u64,
    /// Read end of a pipe the child writes its error message into.
    err_fd: libc::c_int,
    pause: Duration,
}

impl Database {
    /// Takes a snapshot now and waits until it is durable; then removes the command-log
    /// segments and the older snapshots it makes unnecessary. Fails if snapshots are not
    /// configured, before recovery has finished, or if writing it fails (the database keeps
    /// running either way; the previous snapshot stays the one recovery uses).
    pub fn snapshot(&self) -> Result<SnapshotInfo> {
        let cfg = self.config().snapshots.clone().ok_or_else(|| Error::Config {
            setting: "snapshot_interval",
            message: "snapshots are not configured (start with a data directory and the command log on)".into(),
        })?;
        let snaps = &self.inner().snapshots;
        if !snaps.ready.load(Ordering::Acquire) {
            return Err(Error::Recovery(
                "a snapshot cannot be taken before recovery has finished".into(),
            ));
        }
        let _one = snaps
            .running
            .lock()
            .map_err(|_| Error::Internal("snapshot lock poisoned".into()))?;
        let started = Instant::now();
        let epoch = snaps.next_epoch.fetch_add(1, Ordering::AcqRel);
        // Blocks carry epochs in 32 bits (`BlockStore::set_epoch`): past that, whole
        // directories only.
        let base = snaps
            .directories
            .lock()
            .ok()
            .and_then(|d| d.base.filter(|_| !d.whole_next && epoch < u32::MAX as u64));
        let log_bytes = self.log_stats().map_or(0, |s| s.bytes);
        let job = {
            // No schema change between the history saved and the cut.
            let _ddl = self.lock_ddl()?;
            let history = self.history();
            let job = Arc::new(SnapJob {
                epoch,
                base,
                dir: cfg.dir.clone(),
                history,
                images: Mutex::new(Vec::new()),
                forked: Mutex::new(None),
            });
            self.run_mp_work(MpWork::Snapshot(job.clone()), self.shared().all_partitions())?;
            job
        };
        let forked = job
            .forked
            .lock()
            .ok()
            .and_then(|mut f| f.take())
            .ok_or_else(|| Error::Internal("the snapshot barrier did not run".into()))??;
        let r = wait_writer(&forked);
        if let Err(msg) = r {
            snaps.failed.fetch_add(1, Ordering::Relaxed);
            fmt::remove_unfinished(&cfg.dir, epoch);
            return Err(Error::Log {
                message: format!("snapshot {epoch} failed: {msg}"),
                sqlstate: "58030",
            });
        }
        // The cut must be durable in the log too (async mode), so that LSNs after a restart
        // continue past it.
        if let Some(log) = &self.shared().log {
            log.sync()?;
        }
        let path = cfg.dir.join(fmt::file_name(epoch));
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let whole = base.is_none();
        for tx in &self.shared().senders {
            let _ = tx.send(Msg::SnapshotDone { epoch, base: whole });
        }
        if let Ok(mut d) = snaps.directories.lock() {
            if whole {
                d.base = Some(epoch);
            }
            d.whole_next = !whole && forked.listed * 2 > forked.live;
        }
        if let Some(log) = &self.shared().log {
            log.truncate_through(forked.cut_lsn)?;
        }
        fmt::remove_older(&cfg.dir, epoch, base)?;
        let info = SnapshotInfo {
            epoch,
            cut_lsn: forked.cut_lsn,
            path,
            bytes,
            pause_micros: forked.pause.as_micros() as u64,
            seconds: started.elapsed().as_secs_f64(),
            base_epoch: base.unwrap_or(0),
            directory_entries: forked.listed,
            blocks_live: forked.live,
        };
        snaps.taken.fetch_add(1, Ordering::Relaxed);
        snaps.log_bytes_at_last.store(log_bytes, Ordering::Relaxed);
        if let Ok(mut l) = snaps.last.lock() {
            *l = Some(info.clone());
        }
        Ok(info)
    }

    /// The last snapshot this process took, and counts of those taken and failed.
    pub fn snapshot_stats(&self) -> (Option<SnapshotInfo>, u64, u64) {
        let s = &self.inner().snapshots;
        (
            s.last.lock().ok().and_then(|l| l.clone()),
            s.taken.load(Ordering::Relaxed),
            s.failed.load(Ordering::Relaxed),
        )
    }

    /// Whether a periodic snapshot is due.
    fn snapshot_due(&self, since_last: Duration) -> bool {
        let Some(cfg) = &self.config().snapshots else {
            return false;
        };
        if !self.inner().snapshots.ready.load(Ordering::Acquire) {
            return false;
        }
        // Nothing committed since the last snapshot: nothing to take.
        let last_cut = self
            .inner()
            .snapshots
            .last
            .lock()
            .ok()
            .and_then(|l| l.as_ref().map(|i| i.cut_lsn));
        let lsn = self.shared().log.as_ref().map_or(0, |l| l.last_lsn());
        if last_cut.is_some_and(|c| c >= lsn) {
            return false;
        }
        let bytes = self.log_stats().map_or(0, |s| s.bytes);
        let grown = bytes.saturating_sub(self.inner().snapshots.log_bytes_at_last.load(Ordering::Relaxed));
        cfg.interval.is_some_and(|i| since_last >= i) || (cfg.log_bytes > 0 && grown >= cfg.log_bytes)
    }
}

/// How long the periodic snapshot thread waits after a failed snapshot before it tries
/// again.
const RETRY_FAILED_SNAPSHOT: Duration = Duration::from_secs(10);

/// The periodic snapshot thread: checks every 100 ms whether one is due; ends when
/// [`Periodic::stop`] is called or the database is gone.
pub(crate) fn start_periodic(db: std::sync::Weak<crate::database::Inner>) -> Result<Periodic> {
    let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
    let thread = std::thread::Builder::new()
        .name("snapshots".into())
        .spawn(move || {
            let mut last = Instant::now();
            let mut failed_at: Option<Instant> = None;
            // Disconnected (or sent to) when it is to stop.
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_millis(100))
            {
                let Some(db) = Database::from_weak(&db) else { return };
                // After a failure (a full disk, say) the next try waits a while, whatever
                // triggers it (the log's growth would every 100 ms).
                if failed_at.is_some_and(|t| t.elapsed() < RETRY_FAILED_SNAPSHOT) {
                    continue;
                }
                if db.snapshot_due(last.elapsed()) {
                    match db.snapshot() {
                        Ok(_) => failed_at = None,
                        Err(e) => {
                            eprintln!(
                                "permafrost: periodic snapshot failed (tried again in {}s): {e}",
                                RETRY_FAILED_SNAPSHOT.as_secs()
                            );
                            failed_at = Some(Instant::now());
                        }
                    }
                    last = Instant::now();
                }
            }
        })
        .map_err(|e| Error::Internal(format!("cannot start the periodic snapshot thread: {e}")))?;
    Ok(Periodic { stop, thread })
}

/// The running periodic snapshot thread.
pub(crate) struct Periodic {
    stop: crossbeam_channel::Sender<()>,
    thread: std::thread::JoinHandle<()>,
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
