//! Taking a snapshot: a multi-partition transaction over every partition
//! ([`MpWork::Snapshot`]) whose coordinator forks the writer (fork.rs), then the wait for
//! the file, the log truncation and the periodic snapshot thread.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use permafrost_durability::snapshot as fmt;

use super::fork::wait_writer;
use super::job::{Periodic, SnapJob, SnapshotInfo};
use crate::database::Database;
use crate::error::{Error, Result};
use crate::partition::msg::{MpWork, Msg};

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
            let sequences = self.shared().schema.load().catalog.sequences().map(|s| s.id).collect();
            let job = Arc::new(SnapJob {
                epoch,
                base,
                dir: cfg.dir.clone(),
                history,
                sequences,
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
            fmt::remove_unfinished(&*self.shared().fs, &cfg.dir, epoch);
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
        let bytes = self.shared().fs.file_len(&path).unwrap_or(0);
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
        fmt::remove_older(&*self.shared().fs, &cfg.dir, epoch, base)?;
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

impl Database {
    /// Starts the thread that takes snapshots when they are due ([`start_periodic`]).
    pub(crate) fn start_periodic_snapshots(&self) -> Result<Periodic> {
        start_periodic(self.weak())
    }
}

/// How long the periodic snapshot thread waits after a failed snapshot before it tries
/// again.
const RETRY_FAILED_SNAPSHOT: Duration = Duration::from_secs(10);

/// The periodic snapshot thread: checks every 100 ms whether one is due; ends when
/// [`Periodic::stop`] is called or the database is gone.
fn start_periodic(db: std::sync::Weak<crate::database::Inner>) -> Result<Periodic> {
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
