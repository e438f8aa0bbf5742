//! What the appending threads and the writer thread share ([`Shared`]: the queue, the
//! segments, the counters, the failure), the messages on the queue ([`Msg`]), the
//! callbacks' wrapper ([`Done`]) and the writer's sizes and file names.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crossbeam_channel::Sender;

use crate::commandlog::config::LogConfig;
use crate::commandlog::error::{LogError, Result};
use crate::commandlog::record::StreamedCall;
use permafrost_io::Fs;

/// A record's completion callback.
pub type DoneFn = Box<dyn FnOnce(Result<(), LogError>) + Send>;

/// Records queued and not yet taken by the writer, at most (appends block beyond).
pub(super) const QUEUE_CAPACITY: usize = 1 << 16;
/// A batch ends once it holds this many bytes (or one record, if larger).
pub(super) const BATCH_BYTES: usize = 4 << 20;
/// The writer keeps a batch buffer up to this size between batches.
pub(super) const KEEP_BUFFER: usize = 2 * BATCH_BYTES;
/// Chunk buffers the writer hands back for reuse ([`super::CommandLog::chunk`]), at most, and the
/// largest it keeps: reused buffers spare the appending threads a buffer's growth and the
/// allocator a free on another thread than the one that allocated.
pub(super) const SPARE_BUFFERS: usize = 16;
pub(super) const SPARE_BUFFER_BYTES: usize = 1 << 20;
/// The writer keeps its framing buffer between batches up to this size: past it (a batch
/// with a record of many megabytes, such as a COPY's) it is given back.
pub(super) const KEPT_BUFFER_BYTES: usize = 8 << 20;
/// A record body longer than this (a COPY batch's) is not copied whole into the framing
/// buffer: it is written through a window of this many bytes, one write per window, and
/// synced once at its end (`Writer::write_large`).
pub(super) const WINDOW_BYTES: usize = 1 << 20;
/// A new chunk buffer (none to spare yet) starts with room for this many bytes, so that a
/// partition's chunk of a busy pass does not grow through a series of reallocations.
pub(super) const FIRST_CHUNK_BYTES: usize = 256 << 10;
/// Written and synced bytes of the segment are dropped from the page cache once this many
/// have gathered (whole pages only; see [`permafrost_io::FsFile::drop_cached`]).
pub(super) const DROP_CACHED_BYTES: u64 = 256 << 10;
/// Page size assumed for dropping cached pages (a larger real page only means that the
/// last partial one of a range stays cached).
pub(super) const PAGE: u64 = 4096;
/// Name of the file whose lock keeps a second writer out of the directory.
pub(super) const LOCK_FILE: &str = "command-log.lock";
/// The next segment while it is being preallocated, and until the writer starts it (a
/// `*.log.tmp`, so a crash leaves nothing that [`super::CommandLog::open`] does not remove).
pub(super) const SPARE_FILE: &str = "preallocated.log.tmp";

/// A `done` callback that is called exactly once: with a result, or with an error if it is
/// dropped uncalled (the writer stopped). A panic inside it is caught and reported.
pub(super) struct Done(pub(super) Option<DoneFn>);

impl Done {
    pub(super) fn call(mut self, r: Result<()>) {
        if let Some(f) = self.0.take() {
            run_callback(f, r);
        }
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            run_callback(
                f,
                Err(LogError::Failed(
                    "the command log stopped before the record was written".into(),
                )),
            );
        }
    }
}

pub(super) fn run_callback(f: DoneFn, r: Result<()>) {
    if catch_unwind(AssertUnwindSafe(|| f(r))).is_err() {
        eprintln!("permafrost: a command log completion callback panicked");
    }
}

pub(super) enum Msg {
    Record {
        lsn: u64,
        body: Vec<u8>,
        /// Sync mode: called once the record is durable.
        done: Option<Done>,
    },
    /// Several records in one buffer ([`super::Chunk`]); `last_lsn` is the last one's.
    Chunk {
        last_lsn: u64,
        count: u64,
        bytes: Vec<u8>,
        /// The chunk's last record, encoded as it is written.
        streamed: Option<StreamedCall>,
        done: Option<Done>,
    },
    /// Reply once everything queued before is durable (or failed).
    Flush(Sender<Result<()>>),
    /// Call back once everything queued before is durable (or failed), without cutting the
    /// group commit short.
    Barrier(Done),
    Stop,
}

pub(super) struct Queue {
    pub(super) last_lsn: u64,
    pub(super) tx: Option<Sender<Msg>>,
}

/// Upper bounds (seconds) of the buckets of [`super::LogStats::sync_buckets`]; a last bucket
/// takes the longer ones.
pub const SYNC_BUCKET_BOUNDS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];
/// Buckets of [`super::LogStats::sync_buckets`].
pub const SYNC_BUCKETS: usize = SYNC_BUCKET_BOUNDS.len() + 1;

/// The upper bound of bucket `i` as a Prometheus `le` label value (`+Inf` for the last).
pub fn sync_bucket_le(i: usize) -> String {
    SYNC_BUCKET_BOUNDS
        .get(i)
        .map_or_else(|| "+Inf".to_owned(), |b| b.to_string())
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) records: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) batches: AtomicU64,
    pub(super) syncs: AtomicU64,
    pub(super) sync_nanos: AtomicU64,
    pub(super) sync_buckets: [AtomicU64; SYNC_BUCKETS],
    pub(super) durable_lsn: AtomicU64,
}

impl Counters {
    /// Counts a timed sync (a group commit's `fdatasync`, or the start of a segment).
    pub(super) fn timed_sync(&self, took: std::time::Duration) {
        self.sync_nanos.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        let secs = took.as_secs_f64();
        let i = SYNC_BUCKET_BOUNDS.partition_point(|&b| b < secs);
        self.sync_buckets[i].fetch_add(1, Ordering::Relaxed);
    }
}

pub(super) struct Shared {
    pub(super) cfg: LogConfig,
    pub(super) fs: Arc<dyn Fs>,
    pub(super) queue: Mutex<Queue>,
    pub(super) last_lsn: AtomicU64,
    pub(super) failed: AtomicBool,
    pub(super) failure: Mutex<Option<LogError>>,
    /// Segment files by first LSN, ascending; the last is the one being written.
    pub(super) segments: Mutex<Vec<(u64, PathBuf)>>,
    pub(super) counters: Counters,
    /// Emptied chunk buffers, the most recently used last: the next chunk takes the one
    /// most likely still in the caches.
    pub(super) spare: Mutex<Vec<Vec<u8>>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves consistent data (plain fields).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// The error that failed the log, if it failed.
    pub(super) fn failure(&self) -> Option<LogError> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.failure).as_ref().map(LogError::duplicate)
    }

    pub(super) fn fail(&self, e: &LogError) {
        let mut f = lock(&self.failure);
        if f.is_none() {
            *f = Some(e.duplicate());
        }
        self.failed.store(true, Ordering::Release);
    }
}
