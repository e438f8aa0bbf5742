//! The log writer: [`CommandLog::append`] assigns LSNs and queues records; one writer thread
//! gathers them into batches (group commit), writes each batch with one write call,
//! `fdatasync`s it and then calls the records' `done` callbacks, in order.
//!
//! Segments after the first are *preallocated*: a helper thread writes the next segment's
//! file full of zeros and syncs it while the current one fills, and the writer starts the
//! next segment in it. Writes into blocks the file already has make `fdatasync` flush data
//! only; appending to a file also commits its new size and blocks to the file system's
//! journal on every sync, which doubled the writer's time per group commit (measured:
//! 65 KiB write + `fdatasync` 39.5 µs of CPU and 103 µs of wall time into a preallocated
//! file, 79 and 208 µs appending). The helper writes its zeros around the page cache where
//! the file system allows ([`FsFile::write_zeros`]), a quarter MiB at a time, so that they
//! neither cost the CPUs a copy nor queue up in front of the group commits' writes.
//!
//! The group commits' writes into a preallocated segment go around the page cache too
//! (`O_DIRECT`, where the file system takes it): each starts at the beginning of the page
//! where the records end, repeating that page's bytes ([`Writer::tail`]), and ends at a page
//! boundary, from a page-aligned address in the batch buffer. The kernel then neither
//! copies the batch into page-cache pages nor has them written back by `fdatasync`, which
//! only has the device's cache to flush.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::config::{LogConfig, LogMode};
use super::error::{LogError, Result};
use super::format::{MAX_BODY_LEN, SEGMENT_HEADER_LEN, list_segments};
use super::reader::{TornTail, scan_tail};
use permafrost_io::{Fs, RealFs};

mod chunk;
mod group_commit;
mod segments;
mod shared;

pub use chunk::Chunk;
use group_commit::*;
pub(crate) use segments::zero_range;
use segments::*;
use shared::*;
pub use shared::{DoneFn, SYNC_BUCKET_BOUNDS, SYNC_BUCKETS, sync_bucket_le};

/// What the log has done since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LogStats {
    /// Records written and synced.
    pub records: u64,
    /// Bytes written (records with their framing, and segment headers).
    pub bytes: u64,
    /// Group commits: batches written with one write call and one `fdatasync`.
    pub batches: u64,
    /// `fdatasync` calls (one per batch and one per new segment).
    pub syncs: u64,
    /// Time in the syncs counted by `sync_buckets`.
    pub sync_seconds_total: f64,
    /// How long each group commit's `fdatasync` (and each start of a segment: header
    /// written and synced, file renamed, directory synced) took: how many took at most
    /// [`SYNC_BUCKET_BOUNDS`]`[i]` and more than the bound before, the last bucket those
    /// over a second. A slow or shared disk shows here before it shows in throughput.
    pub sync_buckets: [u64; SYNC_BUCKETS],
    /// Segment files in the directory.
    pub segments: u64,
    /// Whether a write or sync failed (the log takes no more records).
    pub failed: bool,
    /// LSN of the last appended record.
    pub last_lsn: u64,
    /// LSN of the last record known to be durable.
    pub durable_lsn: u64,
}

/// The log writer. `append` is called from many threads (the partition executors), in
/// commit order on each; it is cheap (a short lock and a channel send) and never waits for
/// the disk unless 65,536 records are already queued.
pub struct CommandLog {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
    torn_tail: Option<TornTail>,
    _lock: Option<permafrost_io::DirLock>,
}

impl CommandLog {
    /// Opens (creating) the log in `cfg.dir` for appending after the records that are
    /// there; LSNs continue after the last valid record. A torn tail (see [`super::LogReader`])
    /// is truncated away; any other damage to the last segment is an error. With mode
    /// `off` nothing on disk is touched and LSNs start at 1.
    pub fn open(cfg: LogConfig) -> Result<CommandLog> {
        CommandLog::open_with(cfg, Arc::new(RealFs))
    }

    /// [`CommandLog::open`] doing its file I/O through `fs` (tests inject faults with
    /// [`permafrost_io::FaultyFs`]).
    pub fn open_with(cfg: LogConfig, fs: Arc<dyn Fs>) -> Result<CommandLog> {
        cfg.validate()?;
        let (tx, rx) = crossbeam_channel::bounded(QUEUE_CAPACITY);
        let mut shared = Shared {
            cfg: cfg.clone(),
            fs: fs.clone(),
            queue: Mutex::new(Queue {
                last_lsn: 0,
                tx: Some(tx),
            }),
            last_lsn: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            segments: Mutex::new(Vec::new()),
            counters: Counters::default(),
            spare: Mutex::new(Vec::with_capacity(SPARE_BUFFERS)),
        };
        if cfg.mode == LogMode::Off {
            return Ok(CommandLog {
                shared: Arc::new(shared),
                writer: None,
                torn_tail: None,
                _lock: None,
            });
        }
        let dir = &cfg.dir;
        fs.create_dir_all(dir)
            .map_err(|e| LogError::io(format!("cannot create {}", dir.display()), e))?;
        let lock_file = lock_dir(dir)?;
        remove_temporary_files(&*fs, dir)?;
        let mut segments =
            list_segments(&*fs, dir).map_err(|e| LogError::io(format!("cannot list {}", dir.display()), e))?;
        let mut torn_tail = None;
        let (file, offset, next_lsn, pad_pages) = match segments.last() {
            None => {
                let (file, path) = create_segment(&*fs, dir, 1)?;
                segments.push((1, path));
                shared.counters.syncs.store(1, Ordering::Relaxed);
                shared
                    .counters
                    .bytes
                    .store(SEGMENT_HEADER_LEN as u64, Ordering::Relaxed);
                (file, SEGMENT_HEADER_LEN as u64, 1, false)
            }
            Some((name_lsn, path)) => {
                let tail = scan_tail(&*fs, path, *name_lsn)?;
                let mut file = fs
                    .open(path)
                    .map_err(|e| LogError::io(format!("cannot open {}", path.display()), e))?;
                if let Some(t) = &tail.torn {
                    drop_torn_tail(&mut *file, tail.layout.preallocated && tail.layout.durable_lsns, t)?;
                    eprintln!(
                        "permafrost: command log: dropped a torn tail of {} bytes at offset {} of {} (record {} and \
                         {} valid record(s) of the same unsynced write after it: never acknowledged)",
                        t.bytes,
                        t.offset,
                        t.file.display(),
                        t.lsn,
                        t.later_records
                    );
                    torn_tail = Some(t.clone());
                }
                // The records there are durable before the next write's records say so
                // (a restarted process may find them in the page cache only).
                file.sync_data()
                    .map_err(|e| LogError::io(format!("cannot sync {}", path.display()), e))?;
                if tail.layout.durable_lsns {
                    (file, tail.valid_len, tail.next_lsn, tail.layout.preallocated)
                } else {
                    // A segment of an earlier build (version 1 or 2): new records go to a
                    // new segment of this build's format, which replaces an empty one.
                    let (file, new) = create_segment(&*fs, dir, tail.next_lsn)?;
                    if tail.next_lsn == *name_lsn {
                        segments.pop();
                    }
                    segments.push((tail.next_lsn, new));
                    shared.counters.syncs.store(1, Ordering::Relaxed);
                    (file, SEGMENT_HEADER_LEN as u64, tail.next_lsn, false)
                }
            }
        };
        let last = next_lsn - 1;
        shared.queue.get_mut().unwrap_or_else(|e| e.into_inner()).last_lsn = last;
        *shared.last_lsn.get_mut() = last;
        *shared.counters.durable_lsn.get_mut() = last;
        *shared.segments.get_mut().unwrap_or_else(|e| e.into_inner()) = segments;
        let shared = Arc::new(shared);
        let writer = Writer {
            shared: shared.clone(),
            rx,
            file,
            offset,
            uncached: 0,
            pad_pages,
            // A segment the writer continues after a restart stays buffered (the records'
            // last page would have to be read back first); the next one is direct.
            direct: false,
            tail: Vec::new(),
            lead: 0,
            gap: 0,
            next_lsn,
            buf: Vec::new(),
            dones: Vec::new(),
            spare: None,
        };
        let handle = std::thread::Builder::new()
            .name("permafrost-command-log".into())
            .spawn(move || writer.run())
            .map_err(|e| LogError::io("cannot start the command log writer thread", e))?;
        Ok(CommandLog {
            shared,
            writer: Some(handle),
            torn_tail,
            _lock: Some(lock_file),
        })
    }

    pub fn config(&self) -> &LogConfig {
        &self.shared.cfg
    }

    pub fn mode(&self) -> LogMode {
        self.shared.cfg.mode
    }

    /// The torn tail `open` cut off (file, offset, bytes, LSN), if it did.
    pub fn truncated_tail(&self) -> Option<&TornTail> {
        self.torn_tail.as_ref()
    }

    /// The file system the log is written through (recovery reads it through the same:
    /// [`super::LogReader::open_with`]).
    pub fn fs(&self) -> Arc<dyn Fs> {
        self.shared.fs.clone()
    }

    /// Queues an encoded record body ([`super::encode_record`]); returns its LSN (assigned in
    /// append order, strictly increasing, gap-free across restarts). `done` is called
    /// exactly once:
    /// - sync: from the writer thread after the batch holding the record was written and
    ///   `fdatasync`'ed (Ok), or with the error if that failed;
    /// - async: immediately (Ok) inside `append`; the record is written in the background;
    /// - off: immediately (Ok); nothing is written.
    ///
    /// After a write or sync failure the log is failed: every later append's `done` gets
    /// the error at once. A body longer than 4GiB cannot be framed: its `done` gets an
    /// error at once and `append` returns 0 (no LSN is used).
    ///
    /// `done` runs on the writer thread in sync mode: it must be quick and must not append
    /// to this log (the queue may be full) or wait for it.
    pub fn append(&self, body: Vec<u8>, done: DoneFn) -> u64 {
        let done = Done(Some(done));
        if body.len() > MAX_BODY_LEN {
            done.call(Err(LogError::Failed(format!(
                "a record of {} bytes is larger than the 4GiB a record may hold",
                body.len()
            ))));
            return 0;
        }
        self.enqueue(1, done, |lsn, done| Msg::Record { lsn, body, done })
    }

    /// An empty [`Chunk`], in a buffer an earlier chunk used when the writer has one to
    /// spare.
    pub fn chunk(&self) -> Chunk {
        Chunk {
            bytes: lock(&self.shared.spare)
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(FIRST_CHUNK_BYTES)),
            count: 0,
            streamed: None,
        }
    }

    /// Appends the records of a [`Chunk`] at once (a partition's commits of one pass over
    /// its queue): consecutive LSNs, one queue operation, one buffer, and one `done` for
    /// them all, called as [`CommandLog::append`] calls it for the last of them (the
    /// records of a chunk become durable together). Returns the LSN of the last record
    /// (the first is that minus `chunk.len() - 1`), or 0 for an empty chunk.
    pub fn append_chunk(&self, chunk: Chunk, done: DoneFn) -> u64 {
        let done = Done(Some(done));
        let count = chunk.count;
        if count == 0 {
            done.call(Ok(()));
            return 0;
        }
        self.enqueue(count, done, |last_lsn, done| Msg::Chunk {
            last_lsn,
            count,
            bytes: chunk.bytes,
            streamed: chunk.streamed,
            done,
        })
    }

    /// Numbers `count` records and queues them for the writer as the message `make`
    /// builds from the last LSN and the `done` the writer is to call (sync mode; in the
    /// other modes `done` is called here). Returns the last LSN.
    fn enqueue(&self, count: u64, done: Done, make: impl FnOnce(u64, Option<Done>) -> Msg) -> u64 {
        let sh = &*self.shared;
        if sh.cfg.mode == LogMode::Off {
            let last = sh.last_lsn.fetch_add(count, Ordering::Relaxed) + count;
            done.call(Ok(()));
            return last;
        }
        let sync = sh.cfg.mode == LogMode::Sync;
        let mut q = lock(&sh.queue);
        q.last_lsn += count;
        let last = q.last_lsn;
        sh.last_lsn.store(last, Ordering::Release);
        if let Some(e) = sh.failure() {
            drop(q);
            done.call(Err(e));
            return last;
        }
        let (queued, now) = if sync { (Some(done), None) } else { (None, Some(done)) };
        let msg = make(last, queued);
        let refused = match &q.tx {
            Some(tx) => tx.send(msg).err().map(|e| e.into_inner()),
            None => Some(msg),
        };
        drop(q);
        match (refused, now) {
            (None, Some(d)) => d.call(Ok(())),
            (None, None) => {}
            (Some(msg), now) => {
                // The writer is gone: the record's Done (in `msg`, or `now`) reports it.
                drop(msg);
                if let Some(d) = now {
                    d.call(Err(writer_gone()));
                }
            }
        }
        last
    }

    /// Blocks until every record appended so far is durable (async mode at shutdown,
    /// tests). Returns the log's failure if it failed.
    pub fn sync(&self) -> Result<()> {
        let sh = &*self.shared;
        if sh.cfg.mode == LogMode::Off {
            return Ok(());
        }
        if let Some(e) = sh.failure() {
            return Err(e);
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        {
            let q = lock(&sh.queue);
            match &q.tx {
                Some(t) if t.send(Msg::Flush(tx)).is_ok() => {}
                _ => return Err(writer_gone()),
            }
        }
        rx.recv().unwrap_or_else(|_| Err(writer_gone()))
    }

    /// Calls `done` (on the writer thread) once every record appended so far is durable,
    /// without writing anything or cutting a group commit short; at once in async and off
    /// modes, and with the error if the log failed.
    pub fn barrier(&self, done: DoneFn) {
        let done = Done(Some(done));
        let sh = &*self.shared;
        if sh.cfg.mode != LogMode::Sync {
            return done.call(Ok(()));
        }
        if let Some(e) = sh.failure() {
            return done.call(Err(e));
        }
        let q = lock(&sh.queue);
        if let Some(t) = &q.tx
            && let Err(e) = t.send(Msg::Barrier(done))
        {
            drop(q);
            // Dropping the Done reports that the writer is gone.
            drop(e.into_inner());
        }
    }

    /// LSN of the last appended record (0 if none).
    pub fn last_lsn(&self) -> u64 {
        self.shared.last_lsn.load(Ordering::Acquire)
    }

    /// The error that failed the log (a write or sync that failed: a full disk, an I/O
    /// error), if it failed: it takes no more records.
    pub fn failure(&self) -> Option<LogError> {
        self.shared.failure()
    }

    /// LSN of the last record known to be durable.
    pub fn durable_lsn(&self) -> u64 {
        self.shared.counters.durable_lsn.load(Ordering::Acquire)
    }

    /// Deletes whole segments whose records all have LSN <= `lsn` (a snapshot covers
    /// them). The segment being written is never deleted, so LSNs continue across restarts.
    pub fn truncate_through(&self, lsn: u64) -> Result<()> {
        let sh = &*self.shared;
        if sh.cfg.mode == LogMode::Off {
            return Ok(());
        }
        let mut segs = lock(&sh.segments);
        let mut removed = false;
        // A segment's records end just before the next segment's first LSN.
        while segs.len() >= 2 && segs[1].0 - 1 <= lsn {
            let path = &segs[0].1;
            match sh.fs.remove(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(format!("cannot remove {}", path.display()), e)),
            }
            segs.remove(0);
            removed = true;
        }
        if removed {
            sh.fs
                .sync_dir(&sh.cfg.dir)
                .map_err(|e| LogError::io(format!("cannot sync directory {}", sh.cfg.dir.display()), e))?;
        }
        Ok(())
    }

    /// The segment files, by first LSN.
    pub fn segments(&self) -> Vec<(u64, PathBuf)> {
        lock(&self.shared.segments).clone()
    }

    pub fn stats(&self) -> LogStats {
        let sh = &*self.shared;
        let c = &sh.counters;
        LogStats {
            records: c.records.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
            batches: c.batches.load(Ordering::Relaxed),
            syncs: c.syncs.load(Ordering::Relaxed),
            sync_seconds_total: c.sync_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            sync_buckets: c.sync_buckets.each_ref().map(|b| b.load(Ordering::Relaxed)),
            segments: lock(&sh.segments).len() as u64,
            failed: sh.failed.load(Ordering::Acquire),
            last_lsn: sh.last_lsn.load(Ordering::Acquire),
            durable_lsn: c.durable_lsn.load(Ordering::Acquire),
        }
    }
}

impl Drop for CommandLog {
    /// Writes and syncs what is queued (calling its callbacks) and stops the writer.
    fn drop(&mut self) {
        if let Some(handle) = self.writer.take() {
            if let Some(tx) = lock(&self.shared.queue).tx.take() {
                let _ = tx.send(Msg::Stop);
            }
            let _ = handle.join();
        }
    }
}

fn writer_gone() -> LogError {
    LogError::Failed("the command log writer has stopped".into())
}

// The log is shared between the partition threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<CommandLog>();
};

#[cfg(test)]
mod tests {
    use super::*;
    use permafrost_io::{ALIGN, align_gap};
    use std::time::Duration;

    #[test]
    fn a_timed_sync_lands_in_the_first_bucket_whose_bound_it_does_not_pass() {
        let c = Counters::default();
        for us in [50, 100, 101, 999, 1_000, 1_001, 2_000_000] {
            c.timed_sync(Duration::from_micros(us));
        }
        let b = c.sync_buckets.each_ref().map(|b| b.load(Ordering::Relaxed));
        // <= 100 µs: 50 and 100; <= 250 µs: 101; <= 1 ms: 999 and 1,000; <= 2.5 ms:
        // 1,001; over a second: 2 s.
        assert_eq!(b, [2, 1, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(c.sync_nanos.load(Ordering::Relaxed), 2_003_251_000);
    }

    #[test]
    fn a_piece_started_aligned_keeps_its_address_while_its_reservation_is_filled() {
        for tail_len in [0usize, 24, 100, 4095] {
            let tail: Vec<u8> = (0..tail_len).map(|i| (i % 7) as u8).collect();
            let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
            let mut buf = vec![0xEE; 10];
            let gap = start_aligned(&mut buf, data.len() + PAGE as usize, &tail);
            assert!(gap < ALIGN);
            assert_eq!(align_gap(buf[gap..].as_ptr()), 0, "tail of {tail_len}");
            let p = buf.as_ptr();
            buf.extend_from_slice(&data);
            let end = buf.len() - gap;
            buf.resize(buf.len() + (ALIGN - end % ALIGN) % ALIGN, 0);
            assert_eq!(buf.as_ptr(), p, "the records and padding fit the reservation");
            assert_eq!(&buf[gap..gap + tail_len], &tail[..]);
            assert_eq!(&buf[gap + tail_len..gap + tail_len + data.len()], &data[..]);
            assert_eq!((buf.len() - gap) % ALIGN, 0);
        }
    }
}
