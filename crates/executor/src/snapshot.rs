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
use crate::mp::MpWork;
use crate::partition::Msg;

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

/// Runs in the coordinator while it holds every store: forks the writer process.
pub(crate) fn fork_writer(
    job: &SnapJob,
    cut_lsn: u64,
    partitions: u32,
    stores: &[(u32, &PartitionStore)],
    barrier_started: Instant,
) -> Result<Forked> {
    let header = SnapshotHeader {
        epoch: job.epoch,
        cut_lsn,
        partitions,
        created_micros: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0),
        base_epoch: job.base.unwrap_or(0),
    };
    let images = job
        .images
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    let listed = images
        .iter()
        .map(|(_, i)| (i.directory.added.len() + i.directory.removed.len()) as u64)
        .sum();
    let live = images.iter().map(|(_, i)| i.live as u64).sum();
    std::fs::create_dir_all(&job.dir)
        .map_err(|e| Error::Internal(format!("cannot create snapshot directory {}: {e}", job.dir.display())))?;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::Internal(format!(
            "cannot create a pipe for the snapshot writer: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: the child only reads memory that no thread was changing at the fork (every
    // partition is stopped at the barrier; the stores are held here), writes files and
    // exits with _exit, running no destructor and touching no lock another thread may
    // have held.
    let parent = unsafe { libc::getpid() };
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child: process-wide calls (death signal, parent id, priority) and
        // closing descriptors of this process only.
        unsafe {
            // The writer dies with the server: a snapshot finished by an orphan after a
            // new server started on the same directory would name blocks that server
            // may have reused.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                libc::_exit(3);
            }
            libc::close(fds[0]);
            close_inherited(fds[1]);
            // Lower priority: the partitions come first.
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            write_snapshot(&job.dir, &header, &job.history, stores, &images)
        }));
        let (code, msg) = match r {
            Ok(Ok(())) => (0, String::new()),
            Ok(Err(e)) => (1, e.to_string()),
            Err(_) => (2, "the snapshot writer panicked".to_string()),
        };
        // SAFETY: writing a local buffer to our own pipe, then leaving without running
        // destructors (the child must not touch state it shares with the parent's threads).
        unsafe {
            if !msg.is_empty() {
                libc::write(fds[1], msg.as_ptr() as *const libc::c_void, msg.len());
            }
            libc::_exit(code);
        }
    }
    // SAFETY: the pipe's write end is the child's; the parent closes its copy (and both
    // ends when the fork failed).
    unsafe { libc::close(fds[1]) };
    if pid < 0 {
        // SAFETY: as above.
        unsafe { libc::close(fds[0]) };
        return Err(Error::Internal(format!(
            "cannot fork the snapshot writer: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(Forked {
        pid,
        cut_lsn,
        listed,
        live,
        err_fd: fds[0],
        pause: barrier_started.elapsed(),
    })
}

/// In the writer process: closes every descriptor inherited from the server except stdio
/// and `keep` (the error pipe). The writer opens what it writes by path; what it must not
/// do is keep the server's descriptors alive while it runs: a command-log lock file (its
/// `flock` belongs to the open file, which the copy shares, so a database closed and
/// reopened meanwhile would find its log still locked), client sockets the server has
/// closed (the client would not see the connection end), listening sockets.
///
/// # Safety
/// Only in the child right after `fork`: it closes descriptors that other threads of a
/// live process could be using.
unsafe fn close_inherited(keep: libc::c_int) {
    let keep = keep.max(2) as libc::c_uint;
    for (lo, hi) in [(3, keep - 1), (keep + 1, libc::c_uint::MAX)] {
        if lo > hi {
            continue;
        }
        // SAFETY: closing descriptors of this (child) process only.
        let r = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0) };
        if r != 0 {
            // Kernels before 5.9: one by one, up to the descriptor limit.
            // SAFETY: a read-only query of a limit.
            let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
            let max = if max > 0 { max as libc::c_uint } else { 1 << 16 };
            for fd in lo..=hi.min(max) {
                // SAFETY: as above.
                unsafe { libc::close(fd as libc::c_int) };
            }
        }
    }
}

/// Waits for the writer process; returns its error message on failure.
fn wait_writer(f: &Forked) -> std::result::Result<(), String> {
    let mut msg = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        // SAFETY: reading into a local buffer from our own pipe descriptor.
        let n = unsafe { libc::read(f.err_fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n > 0 {
            msg.extend_from_slice(&buf[..n as usize]);
        } else if n == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    // SAFETY: our own pipe descriptor, read to its end above and closed once.
    unsafe { libc::close(f.err_fd) };
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(f.pid, &mut status, 0) };
        if r == f.pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(format!(
                "cannot wait for the snapshot writer: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    let text = String::from_utf8_lossy(&msg).into_owned();
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else if libc::WIFSIGNALED(status) {
        Err(format!(
            "the snapshot writer was killed by signal {}",
            libc::WTERMSIG(status)
        ))
    } else if text.is_empty() {
        Err(format!("the snapshot writer failed (status {status})"))
    } else {
        Err(text)
    }
}

type LogResult<T> = std::result::Result<T, permafrost_durability::LogError>;

/// Items of one kind cut into sections of about [`SECTION_TARGET`] bytes, each section
/// `prefix`, a u32 count and the items.
struct Counted<'w> {
    w: &'w mut SnapshotWriter,
    kind: u32,
    prefix: Enc,
    body: Enc,
    count: u32,
    res: LogResult<()>,
}

impl<'w> Counted<'w> {
    fn new(w: &'w mut SnapshotWriter, kind: u32, prefix: Enc) -> Counted<'w> {
        Counted {
            w,
            kind,
            prefix,
            body: Enc::default(),
            count: 0,
            res: Ok(()),
        }
    }

    /// Adds an item written by `f` (nothing once a write failed).
    fn item(&mut self, f: impl FnOnce(&mut Enc)) {
        if self.res.is_err() {
            return;
        }
        f(&mut self.body);
        self.count += 1;
        if self.body.len() >= SECTION_TARGET {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.count == 0 || self.res.is_err() {
            return;
        }
        let mut e = Enc(self.prefix.0.clone());
        e.u32(self.count);
        e.0.extend_from_slice(&self.body.0);
        self.body.0.clear();
        self.count = 0;
        self.res = self.w.section(self.kind, &e.0);
    }

    fn finish(mut self) -> LogResult<()> {
        self.flush();
        self.res
    }
}

fn part_table_prefix(p: u32, t: u32) -> Enc {
    let mut e = Enc::default();
    e.u32(p);
    e.u32(t);
    e
}

/// The child's work: everything into one file.
fn write_snapshot(
    dir: &Path,
    header: &SnapshotHeader,
    history: &[String],
    stores: &[(u32, &PartitionStore)],
    images: &[(u32, DirectoryImage)],
) -> LogResult<()> {
    // Blocks the snapshot refers to must be on disk before it counts.
    for (_, img) in images {
        if let Some(path) = &img.file_path
            && let Ok(f) = std::fs::OpenOptions::new().write(true).open(path)
        {
            f.sync_data()
                .map_err(|e| permafrost_durability::LogError::Failed(format!("cannot sync {}: {e}", path.display())))?;
        }
    }
    let mut w = SnapshotWriter::create(dir, header)?;
    let mut e = Enc::default();
    e.u32(history.len() as u32);
    for h in history {
        e.bytes(h.as_bytes());
    }
    w.section(kind::SCHEMA, &e.0)?;
    for &(p, store) in stores {
        let img = images.iter().find(|(q, _)| *q == p).map(|(_, i)| i);
        let mut e = Enc::default();
        e.u32(p);
        e.u32(img.map_or(0, |i| i.slot_size as u32));
        e.u32(img.map_or(0, |i| i.file_slots));
        e.u32(img.map_or(0, |i| i.live));
        w.section(kind::PARTITION, &e.0)?;
        if let Some(img) = img {
            let mut prefix = Enc::default();
            prefix.u32(p);
            let mut removed = Counted::new(&mut w, kind::BLOCKS_REMOVED, Enc(prefix.0.clone()));
            for id in &img.directory.removed {
                removed.item(|e| e.u32(*id));
            }
            removed.finish()?;
            let mut added = Counted::new(&mut w, kind::BLOCKS, prefix);
            for (id, m) in &img.directory.added {
                added.item(|e| {
                    e.u32(*id);
                    e.u16(m.table);
                    e.u16(m.tuples);
                    e.u16(m.span);
                });
            }
            added.finish()?;
            for (id, span, buf) in &img.pending {
                let len = (*span as usize * img.slot_size).min(buf.len());
                let mut e = Enc::default();
                e.u32(p);
                e.u32(*id);
                e.bytes(&buf[..len]);
                w.section(kind::PENDING_BLOCK, &e.0)?;
            }
        }
        for t in store.tables() {
            let schema = t.schema();
            let tid = schema.id;
            let tombs = t.tombstones();
            let bound = tombs.id_bound();
            let mut e = part_table_prefix(p, tid);
            e.bytes(schema.name.as_bytes());
            e.i64(t.sequence());
            e.u32(bound);
            e.u32(t.index_count() as u32);
            w.section(kind::TABLE, &e.0)?;
            // Tombstones by id, free ones as u32::MAX.
            let mut first = 0u32;
            while first < bound {
                let n = (bound - first).min(128 * 1024);
                let mut e = part_table_prefix(p, tid);
                e.u32(first);
                e.u32(n);
                for id in first..first + n {
                    match tombs.get(id) {
                        Some(ts) => {
                            e.u32(ts.block);
                            e.u32(ts.offset);
                        }
                        None => {
                            e.u32(u32::MAX);
                            e.u32(0);
                        }
                    }
                }
                w.section(kind::TOMBSTONES, &e.0)?;
                first += n;
            }
            for i in 0..t.index_count() {
                let mut prefix = part_table_prefix(p, tid);
                prefix.u32(i as u32);
                let mut keys = Counted::new(&mut w, kind::EVICTED_KEYS, prefix);
                t.for_each_evicted_key(i, |k, id| {
                    keys.item(|e| {
                        e.u32(id);
                        e.key(&k);
                    })
                });
                keys.finish()?;
            }
            let mut rows = Counted::new(&mut w, kind::ROWS, part_table_prefix(p, tid));
            let mut tuple = Vec::new();
            t.for_each_cold_to_hot(|slot| {
                rows.item(|e| {
                    tuple.clear();
                    t.serialize_tuple(slot, &mut tuple);
                    e.bytes(&tuple);
                })
            });
            rows.finish()?;
        }
    }
    w.finish()?;
    Ok(())
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

/// What loading a snapshot did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadReport {
    pub epoch: u64,
    pub cut_lsn: u64,
    /// The base snapshot whose block directories it completed (0: it holds them whole).
    pub base_epoch: u64,
    pub rows: u64,
    pub evicted: u64,
    /// Blocks in the restored directories.
    pub blocks: u64,
    pub seconds: f64,
}

/// A part of a snapshot for one partition to load ([`Msg::Restore`]).
pub(crate) type Restore =
    Box<dyn FnOnce(&mut PartitionStore, Option<&mut permafrost_anticache::AntiCache>) -> Result<()> + Send>;

/// Table `t` of a partition being loaded.
fn table_of(store: &mut PartitionStore, t: u32) -> Result<&mut permafrost_storage::Table> {
    store
        .table_mut(t)
        .ok_or_else(|| Error::Recovery(format!("snapshot table {t} does not exist")))
}

/// A BLOCKS section's entries after its partition: count, then per entry id, table,
/// tuples, span (`v1`: and holes before the span, ignored: they are recounted at load).
fn directory_entries(d: &mut Dec<'_>, v1: bool) -> std::result::Result<Vec<(u32, BlockMeta)>, String> {
    let count = d.count(if v1 { 12 } else { 10 })?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let id = d.u32()?;
        let (table, tuples) = (d.u16()?, d.u16()?);
        if v1 {
            d.u16()?;
        }
        let meta = BlockMeta {
            table,
            tuples,
            holes: 0,
            span: d.u16()?,
        };
        out.push((id, meta));
    }
    Ok(out)
}

/// The whole block directories of base snapshot `path` (which the caller has checked,
/// [`fmt::newest_valid`]), by partition.
fn read_base_directories(path: &Path, of: &SnapshotHeader) -> Result<Vec<Vec<(u32, BlockMeta)>>> {
    let (mut rd, h) = fmt::SnapshotReader::open(path)?;
    let bad = |at: u64, detail: String| {
        Error::from(permafrost_durability::LogError::SnapshotCorrupt {
            file: path.to_path_buf(),
            offset: at,
            detail,
        })
    };
    if h.epoch != of.base_epoch || h.base_epoch != 0 || h.partitions != of.partitions {
        return Err(bad(
            0,
            format!(
                "not the whole-directory snapshot {} that snapshot {} needs",
                of.base_epoch, of.epoch
            ),
        ));
    }
    let mut dirs = vec![Vec::new(); of.partitions as usize];
    loop {
        let at = rd.offset();
        let Some((k, body)) = rd.next_section()? else { break };
        if k != kind::BLOCKS {
            continue;
        }
        let mut d = Dec::new(&body);
        let bad_at = |e: String| bad(at, e);
        let p = d.u32().map_err(bad_at)?;
        let Some(dir) = dirs.get_mut(p as usize) else {
            return Err(bad(at, format!("partition {p} of {}", of.partitions)));
        };
        dir.extend(directory_entries(&mut d, rd.version() == 1).map_err(bad_at)?);
        d.finish().map_err(bad_at)?;
    }
    Ok(dirs)
}

/// Loads snapshot `path` into this fresh database; `schema` applies each schema statement
/// (the recovery's replayer, so that the application's procedures get registered).
pub(crate) fn load(
    db: &Database,
    path: &Path,
    header: &SnapshotHeader,
    schema: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<LoadReport> {
    let started = Instant::now();
    let n = db.partitions();
    if header.partitions != n {
        return Err(Error::Recovery(format!(
            "snapshot {} was taken with {} partitions, the database has {n}: start it with --partitions {}",
            path.display(),
            header.partitions,
            header.partitions
        )));
    }
    let (mut rd, _) = fmt::SnapshotReader::open(path)?;
    let v1 = rd.version() == 1;
    let (ack_tx, ack_rx) = crossbeam_channel::unbounded::<Result<()>>();
    let mut outstanding = 0usize;
    let mut report = LoadReport {
        epoch: header.epoch,
        cut_lsn: header.cut_lsn,
        base_epoch: header.base_epoch,
        ..LoadReport::default()
    };
    let bad = |at: u64, detail: String| {
        Error::from(permafrost_durability::LogError::SnapshotCorrupt {
            file: path.to_path_buf(),
            offset: at,
            detail,
        })
    };
    let mut send = |p: u32, f: Restore, outstanding: &mut usize| -> Result<()> {
        while *outstanding >= 64 {
            ack_rx.recv().map_err(|_| Error::Shutdown)??;
            *outstanding -= 1;
        }
        db.shared().senders[p as usize]
            .send(Msg::Restore(f, ack_tx.clone()))
            .map_err(|_| Error::Shutdown)?;
        *outstanding += 1;
        Ok(())
    };
    // The whole directories of the base snapshot, by partition, if this one lists
    // differences from it.
    let mut base_dirs: Vec<Vec<(u32, BlockMeta)>> = match header.base_epoch {
        0 => Vec::new(),
        _ => read_base_directories(&fmt::base_path(path.parent().unwrap_or(Path::new(".")), header), header)?,
    };
    // The directory of the partition being read, sent before its first table.
    struct Dir {
        p: u32,
        slot_size: usize,
        file_slots: u32,
        /// Blocks in the whole directory (version 1 files do not say).
        live: Option<u32>,
        /// The base's entries (differences), the removed ids, the entries listed here.
        base: Vec<(u32, BlockMeta)>,
        removed: Vec<u32>,
        blocks: Vec<(u32, BlockMeta)>,
        pending: Vec<(u32, Vec<u8>)>,
    }
    let mut dir: Option<Dir> = None;
    // The tombstones of the table being read.
    let mut tombs: Option<(u32, u32, Vec<Option<Tombstone>>)> = None;
    let epoch = header.epoch;
    let flush_dir = |dir: &mut Option<Dir>,
                     outstanding: &mut usize,
                     send: &mut dyn FnMut(u32, Restore, &mut usize) -> Result<()>|
     -> Result<()> {
        if let Some(mut d) = dir.take() {
            let p = d.p;
            if !d.removed.is_empty() {
                let removed: std::collections::HashSet<u32> = d.removed.iter().copied().collect();
                let before = d.base.len();
                d.base.retain(|(id, _)| !removed.contains(id));
                if before - d.base.len() != removed.len() || removed.len() != d.removed.len() {
                    return Err(bad(
                        0,
                        format!("partition {p}: the blocks removed since the base are not all in the base's directory"),
                    ));
                }
            }
            d.base.append(&mut d.blocks);
            if let Some(live) = d.live
                && d.base.len() != live as usize
            {
                return Err(bad(
                    0,
                    format!(
                        "partition {p}: the block directory has {} blocks, its PARTITION section says {live}",
                        d.base.len(),
                    ),
                ));
            }
            send(
                p,
                Box::new(move |_store, ac| match ac {
                    Some(ac) => ac
                        .restore(epoch, d.slot_size, d.file_slots, &d.base, &d.pending)
                        .map_err(Error::from),
                    None if d.base.is_empty() => Ok(()),
                    None => Err(Error::Recovery(
                        "the snapshot holds evicted data but the anti-cache is off: start with it on".into(),
                    )),
                }),
                outstanding,
            )?;
        }
        Ok(())
    };
    let flush_tombs = |tombs: &mut Option<(u32, u32, Vec<Option<Tombstone>>)>,
                       outstanding: &mut usize,
                       send: &mut dyn FnMut(u32, Restore, &mut usize) -> Result<()>|
     -> Result<()> {
        if let Some((p, t, entries)) = tombs.take() {
            send(
                p,
                Box::new(move |store, _| {
                    let table = table_of(store, t)?;
                    table.restore_tombstones(entries.into_iter());
                    Ok(())
                }),
                outstanding,
            )?;
        }
        Ok(())
    };
    let mut first = true;
    loop {
        let at = rd.offset();
        let Some((k, body)) = rd.next_section()? else { break };
        let mut d = Dec::new(&body);
        let bad_at = |e: String| bad(at, e);
        if first {
            if k != kind::SCHEMA {
                return Err(bad(at, "the snapshot does not start with its schema".into()));
            }
            first = false;
            let count = d.count(4).map_err(bad_at)?;
            for _ in 0..count {
                let sql = d.string().map_err(bad_at)?;
                schema(&sql)?;
            }
            d.finish().map_err(bad_at)?;
            continue;
        }
        match k {
            kind::PARTITION => {
                flush_tombs(&mut tombs, &mut outstanding, &mut send)?;
                flush_dir(&mut dir, &mut outstanding, &mut send)?;
                let p = d.u32().map_err(bad_at)?;
                let slot_size = d.u32().map_err(bad_at)? as usize;
                let file_slots = d.u32().map_err(bad_at)?;
                // Version 1 has no live count: the directory is whole, its length is it.
                let live = if v1 { None } else { Some(d.u32().map_err(bad_at)?) };
                d.finish().map_err(bad_at)?;
                report.blocks += live.unwrap_or(0) as u64;
                if p >= n {
                    return Err(bad(at, format!("partition {p} of {n}")));
                }
                let base = match base_dirs.get_mut(p as usize) {
                    Some(b) => std::mem::take(b),
                    None => Vec::new(),
                };
                dir = Some(Dir {
                    p,
                    slot_size,
                    file_slots,
                    live,
                    base,
                    removed: Vec::new(),
                    blocks: Vec::new(),
                    pending: Vec::new(),
                });
            }
            kind::BLOCKS | kind::BLOCKS_REMOVED | kind::PENDING_BLOCK => {
                let p = d.u32().map_err(bad_at)?;
                let Some(cur) = dir.as_mut().filter(|c| c.p == p) else {
                    return Err(bad(at, "block directory outside its partition".into()));
                };
                if k == kind::BLOCKS {
                    let entries = directory_entries(&mut d, v1).map_err(bad_at)?;
                    if v1 {
                        report.blocks += entries.len() as u64;
                    }
                    cur.blocks.extend(entries);
                } else if k == kind::BLOCKS_REMOVED {
                    if header.base_epoch == 0 || v1 {
                        return Err(bad(at, "blocks removed in a snapshot without a base".into()));
                    }
                    let count = d.count(4).map_err(bad_at)?;
                    for _ in 0..count {
                        cur.removed.push(d.u32().map_err(bad_at)?);
                    }
                } else {
                    let id = d.u32().map_err(bad_at)?;
                    let bytes = d.bytes().map_err(bad_at)?.to_vec();
                    cur.pending.push((id, bytes));
                }
                d.finish().map_err(bad_at)?;
            }
            kind::TABLE => {
                flush_tombs(&mut tombs, &mut outstanding, &mut send)?;
                flush_dir(&mut dir, &mut outstanding, &mut send)?;
                let p = d.u32().map_err(bad_at)?;
                let t = d.u32().map_err(bad_at)?;
                let name = d.string().map_err(bad_at)?;
                let seq = d.i64().map_err(bad_at)?;
                let bound = d.u32().map_err(bad_at)?;
                let indexes = d.u32().map_err(bad_at)? as usize;
                d.finish().map_err(bad_at)?;
                if p >= n {
                    return Err(bad(at, format!("partition {p} of {n}")));
                }
                send(
                    p,
                    Box::new(move |store, _| {
                        let table = store.table_mut(t).ok_or_else(|| {
                            Error::Recovery(format!("snapshot table \"{name}\" (id {t}) is not in its schema"))
                        })?;
                        if table.schema().name != name || table.index_count() != indexes {
                            return Err(Error::Recovery(format!(
                                "snapshot table \"{name}\" (id {t}) does not match the schema's \"{}\"",
                                table.schema().name
                            )));
                        }
                        table.set_sequence(seq);
                        Ok(())
                    }),
                    &mut outstanding,
                )?;
                tombs = Some((p, t, Vec::with_capacity((bound as usize).min(1 << 24))));
            }
            kind::TOMBSTONES => {
                let p = d.u32().map_err(bad_at)?;
                let t = d.u32().map_err(bad_at)?;
                let from = d.u32().map_err(bad_at)?;
                let count = d.count(8).map_err(bad_at)?;
                let Some((_, _, entries)) = tombs
                    .as_mut()
                    .filter(|(q, u, e)| *q == p && *u == t && e.len() == from as usize)
                else {
                    return Err(bad(at, "tombstones out of order".into()));
                };
                for _ in 0..count {
                    let block = d.u32().map_err(bad_at)?;
                    let offset = d.u32().map_err(bad_at)?;
                    if block == u32::MAX {
                        entries.push(None);
                    } else {
                        entries.push(Some(Tombstone { block, offset }));
                        report.evicted += 1;
                    }
                }
                d.finish().map_err(bad_at)?;
            }
            kind::EVICTED_KEYS | kind::ROWS => {
                flush_tombs(&mut tombs, &mut outstanding, &mut send)?;
                let p = d.u32().map_err(bad_at)?;
                let t = d.u32().map_err(bad_at)?;
                if p >= n {
                    return Err(bad(at, format!("partition {p} of {n}")));
                }
                if k == kind::EVICTED_KEYS {
                    let index = d.u32().map_err(bad_at)? as usize;
                    let count = d.count(9).map_err(bad_at)?;
                    let mut keys = Vec::with_capacity(count);
                    for _ in 0..count {
                        let id = d.u32().map_err(bad_at)?;
                        keys.push((id, d.key().map_err(bad_at)?));
                    }
                    d.finish().map_err(bad_at)?;
                    send(
                        p,
                        Box::new(move |store, _| {
                            let table = table_of(store, t)?;
                            for (id, key) in keys {
                                table.restore_evicted_key(index, key, id)?;
                            }
                            Ok(())
                        }),
                        &mut outstanding,
                    )?;
                } else {
                    let count = d.count(4).map_err(bad_at)?;
                    let mut rows = Vec::with_capacity(count);
                    for _ in 0..count {
                        rows.push(d.bytes().map_err(bad_at)?.to_vec());
                    }
                    d.finish().map_err(bad_at)?;
                    report.rows += count as u64;
                    send(
                        p,
                        Box::new(move |store, _| {
                            let table = table_of(store, t)?;
                            for r in rows {
                                table.load_tuple(&r)?;
                            }
                            Ok(())
                        }),
                        &mut outstanding,
                    )?;
                }
            }
            other => return Err(bad(at, format!("unknown section kind {other}"))),
        }
    }
    flush_tombs(&mut tombs, &mut outstanding, &mut send)?;
    flush_dir(&mut dir, &mut outstanding, &mut send)?;
    // Every tombstone is back: count the merged-back tuples of each block (the snapshot does
    // not save them).
    for p in 0..n {
        send(
            p,
            Box::new(|store, ac| match ac {
                Some(ac) => ac.recount_holes(store).map_err(Error::from),
                None => Ok(()),
            }),
            &mut outstanding,
        )?;
    }
    let mut first_err = None;
    while outstanding > 0 {
        match ack_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => return Err(Error::Shutdown),
        }
        outstanding -= 1;
    }
    if let Some(e) = first_err {
        return Err(Error::Recovery(format!("loading snapshot {}: {e}", path.display())));
    }
    let snaps = &db.inner().snapshots;
    snaps.next_epoch.fetch_max(header.epoch + 1, Ordering::AcqRel);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
