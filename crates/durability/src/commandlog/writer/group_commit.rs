//! The writer thread: it gathers appended records into batches, writes them (direct I/O,
//! aligned), syncs once per batch (the group commit) and completes the callbacks of what
//! became durable.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};

use crate::commandlog::error::{LogError, Result};
use crate::commandlog::format::{
    MAX_UNSYNCED_SPAN, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN, frame_record, preallocated_segment_header, put_header,
    record_crc_start,
};
use crate::commandlog::record::StreamedCall;
use permafrost_io::{ALIGN, FsFile, align_gap};

use super::chunk::Chunk;
use super::segments::{create_segment, start_preallocation, start_segment};
use super::shared::{
    BATCH_BYTES, DROP_CACHED_BYTES, Done, KEEP_BUFFER, KEPT_BUFFER_BYTES, Msg, PAGE, SPARE_BUFFER_BYTES, SPARE_BUFFERS,
    SPARE_FILE, Shared, WINDOW_BYTES, lock,
};

pub(super) struct Pending {
    /// The LSN of the (last) record.
    pub(super) lsn: u64,
    /// One record's body, or (`count` > 1 or `chunked`) a [`Chunk`]'s bytes.
    pub(super) body: Vec<u8>,
    /// Records in `body`, and whether it is a chunk.
    pub(super) count: u64,
    pub(super) chunked: bool,
    /// A chunk's last record, encoded as it is written (then not in `body`).
    pub(super) streamed: Option<StreamedCall>,
    pub(super) done: Option<Done>,
}

impl Pending {
    /// The LSN of the first record.
    pub(super) fn first_lsn(&self) -> u64 {
        self.lsn + 1 - self.count
    }

    /// The record bodies, in LSN order.
    pub(super) fn bodies(&self) -> impl Iterator<Item = &[u8]> {
        let single = (!self.chunked).then_some(&self.body[..]);
        let chunk = self.chunked.then(|| Chunk::bodies(&self.body));
        single.into_iter().chain(chunk.into_iter().flatten())
    }

    /// The length of its largest record, framed.
    fn largest(&self) -> usize {
        self.bodies().map(|b| b.len() + RECORD_HEADER_LEN).max().unwrap_or(0)
    }
}

pub(super) struct Writer {
    pub(super) shared: Arc<Shared>,
    pub(super) rx: Receiver<Msg>,
    pub(super) file: Box<dyn FsFile>,
    /// Length of the segment being written.
    pub(super) offset: u64,
    /// The segment's bytes before this offset were dropped from the page cache.
    pub(super) uncached: u64,
    /// Writes are padded with zeros to the end of their last page (in a preallocated
    /// segment, where those bytes are zeros already and mark the end of the records): a
    /// write that ends inside a page the page cache does not hold (the zeros were dropped
    /// from it once synced, and the writer drops what it synced) made the kernel read that
    /// page from disk first, inside the group commit's `pwrite`. The next write starts at
    /// the end of the records, in that page, which stays cached.
    pub(super) pad_pages: bool,
    /// The segment's writes go around the page cache (`O_DIRECT`): in a preallocated
    /// segment the writer started, where the file system takes it. Each write then starts
    /// at the beginning of the page where the records end, repeating [`Writer::tail`], and
    /// ends at a page boundary, from a page-aligned address in `buf`.
    pub(super) direct: bool,
    /// Direct segments: the segment's bytes from the start of the page where the records
    /// end up to that end (the header, in a new segment).
    pub(super) tail: Vec<u8>,
    /// Bytes of `buf` before the piece's first record: an alignment gap of `gap` bytes,
    /// then (direct) `tail`.
    pub(super) lead: usize,
    pub(super) gap: usize,
    /// LSN of the next record to write.
    pub(super) next_lsn: u64,
    pub(super) buf: Vec<u8>,
    /// The callbacks of the batch being acknowledged (kept for its allocation).
    pub(super) dones: Vec<Done>,
    /// The next segment's file, being preallocated (or ready) on a helper thread.
    pub(super) spare: Option<JoinHandle<io::Result<Box<dyn FsFile>>>>,
}

impl Writer {
    pub(super) fn run(mut self) {
        let window = self.shared.cfg.group_commit_window;
        let mut batch: Vec<Pending> = Vec::new();
        loop {
            let Ok(first) = self.rx.recv() else { break };
            let mut flushes = Vec::new();
            let mut barriers = Vec::new();
            let mut stop = false;
            let mut bytes = 0usize;
            let mut open = self.take(first, &mut batch, &mut flushes, &mut barriers, &mut stop, &mut bytes);
            let deadline = Instant::now() + window;
            while open {
                let next = if window.is_zero() {
                    match self.rx.try_recv() {
                        Ok(m) => m,
                        Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                    }
                } else {
                    match self.rx.recv_deadline(deadline) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                    }
                };
                open = self.take(next, &mut batch, &mut flushes, &mut barriers, &mut stop, &mut bytes);
            }
            self.commit(&mut batch);
            let outcome = self.shared.failure();
            for f in flushes {
                let _ = f.send(match &outcome {
                    Some(e) => Err(e.duplicate()),
                    None => Ok(()),
                });
            }
            for b in barriers {
                b.call(match &outcome {
                    Some(e) => Err(e.duplicate()),
                    None => Ok(()),
                });
            }
            if stop {
                break;
            }
        }
        if let Some(spare) = self.spare.take() {
            // Closed before it is removed; its preparation is at most one segment's zeros.
            drop(spare.join());
            let _ = self.shared.fs.remove(&self.shared.cfg.dir.join(SPARE_FILE));
        }
    }

    /// Adds a message to the batch being gathered; returns whether the batch takes more.
    pub(super) fn take(
        &self,
        msg: Msg,
        batch: &mut Vec<Pending>,
        flushes: &mut Vec<Sender<Result<()>>>,
        barriers: &mut Vec<Done>,
        stop: &mut bool,
        bytes: &mut usize,
    ) -> bool {
        match msg {
            Msg::Record { lsn, body, done } => {
                *bytes += RECORD_HEADER_LEN + body.len();
                batch.push(Pending {
                    lsn,
                    body,
                    count: 1,
                    chunked: false,
                    streamed: None,
                    done,
                });
                *bytes < BATCH_BYTES
            }
            Msg::Chunk {
                last_lsn,
                count,
                bytes: chunk,
                streamed,
                done,
            } => {
                *bytes += chunk.len() + count as usize * RECORD_HEADER_LEN + streamed.as_ref().map_or(0, |c| c.len());
                batch.push(Pending {
                    lsn: last_lsn,
                    body: chunk,
                    count,
                    chunked: true,
                    streamed,
                    done,
                });
                *bytes < BATCH_BYTES
            }
            Msg::Flush(reply) => {
                flushes.push(reply);
                false
            }
            Msg::Barrier(done) => {
                barriers.push(done);
                true
            }
            Msg::Stop => {
                *stop = true;
                false
            }
        }
    }

    /// Writes, syncs and acknowledges a batch (or fails its records).
    pub(super) fn commit(&mut self, batch: &mut Vec<Pending>) {
        if batch.is_empty() {
            return;
        }
        let sh = self.shared.clone();
        let result = match sh.failure() {
            Some(e) => Err(e),
            None => self.write_batch(batch),
        };
        let mut dones = std::mem::take(&mut self.dones);
        for p in batch.drain(..) {
            dones.extend(p.done);
            if p.chunked && p.body.capacity() <= SPARE_BUFFER_BYTES {
                let mut b = p.body;
                b.clear();
                // Dropped if enough are spare already.
                let mut spare = lock(&sh.spare);
                if spare.len() < SPARE_BUFFERS {
                    spare.push(b);
                }
            }
        }
        match result {
            Ok(()) => {
                for d in dones.drain(..) {
                    d.call(Ok(()));
                }
                if self.offset >= sh.cfg.segment_bytes {
                    if let Err(e) = self.rotate() {
                        sh.fail(&e);
                    }
                } else if sh.cfg.preallocate && self.offset >= sh.cfg.segment_bytes / 2 && self.spare.is_none() {
                    self.spare = start_preallocation(&sh);
                }
            }
            Err(e) => {
                sh.fail(&e);
                for d in dones.drain(..) {
                    d.call(Err(e.duplicate()));
                }
            }
        }
        self.dones = dones;
        if self.buf.capacity() > KEEP_BUFFER {
            self.buf = Vec::new();
        }
    }

    /// Writes and syncs a batch: with one write and one `fdatasync`, or, if its records
    /// reach further than [`MAX_UNSYNCED_SPAN`] from its start, in pieces, each written and
    /// synced before the next (the bound the reader relies on for preallocated segments).
    pub(super) fn write_batch(&mut self, batch: &[Pending]) -> Result<()> {
        let end = match self.write_records(batch) {
            Ok(end) => end,
            Err(e) => {
                // Best effort: take the batch's bytes back out, so that records whose
                // callers were told they failed are not replayed after a restart.
                if self.file.set_len(self.offset).is_ok() {
                    let _ = self.file.sync_data();
                }
                return Err(e);
            }
        };
        let sh = &*self.shared;
        let last = batch.last().map_or(self.next_lsn - 1, |p| p.lsn);
        let records = batch.iter().map(|p| p.count).sum();
        let c = &sh.counters;
        c.records.fetch_add(records, Ordering::Relaxed);
        c.bytes.fetch_add(end - self.offset, Ordering::Relaxed);
        c.batches.fetch_add(1, Ordering::Relaxed);
        c.durable_lsn.store(last, Ordering::Release);
        self.offset = end;
        self.next_lsn = last + 1;
        self.drop_synced_pages();
        Ok(())
    }

    /// Frames the batch's records and writes and syncs them at the segment's end, a piece
    /// whenever the next record would start [`MAX_UNSYNCED_SPAN`] or more after the piece's
    /// start; returns where the records end.
    pub(super) fn write_records(&mut self, batch: &[Pending]) -> Result<u64> {
        // At least the batch's framed records (a chunk's body holds a 4-byte length per
        // record), and a page of padding: a direct piece's buffer never moves.
        // Bodies past a window are written through one (`write_large`), not framed here.
        let reserve = batch
            .iter()
            .flat_map(|p| p.bodies())
            .map(|b| {
                if b.len() > WINDOW_BYTES {
                    0
                } else {
                    b.len() + RECORD_HEADER_LEN
                }
            })
            .sum::<usize>()
            .min(MAX_UNSYNCED_SPAN as usize + batch.iter().map(|p| p.largest()).max().unwrap_or(0))
            + PAGE as usize;
        self.begin_piece(reserve);
        // Where in the segment the piece's first record goes.
        let mut at = self.offset;
        // Every record before the piece is synced: its records say so (what tells damage
        // to them from a torn write of this piece, reader.rs).
        let mut durable = self.next_lsn - 1;
        for p in batch {
            let large = p.streamed.as_ref().map(|c| (p.lsn, Large::Streamed(c)));
            let records = (p.first_lsn()..).zip(p.bodies()).map(|(lsn, b)| (lsn, Large::Bytes(b)));
            for (lsn, body) in records.chain(large) {
                if body.len() > WINDOW_BYTES || matches!(body, Large::Streamed(_)) {
                    // The records before it are written and synced first: it is written
                    // in several writes, and what they say of it is that every record
                    // before it is durable.
                    if self.piece_len() > 0 {
                        self.write_piece(at)?;
                        at += self.piece_len();
                    }
                    at = self.write_large(lsn, lsn - 1, body, at)?;
                    durable = lsn;
                    self.begin_piece(reserve);
                    continue;
                }
                if self.piece_len() >= MAX_UNSYNCED_SPAN {
                    self.write_piece(at)?;
                    at += self.piece_len();
                    durable = lsn - 1;
                    self.begin_piece(reserve);
                }
                let Large::Bytes(body) = body else {
                    unreachable!("a streamed record is written through the window")
                };
                frame_record(lsn, durable, body, &mut self.buf);
            }
        }
        self.write_piece(at)?;
        let end = at + self.piece_len();
        if self.buf.capacity() > KEPT_BUFFER_BYTES {
            // One large record (a COPY batch) made it that large: not kept for the small
            // batches that follow, whose memory nobody counts.
            self.buf = Vec::new();
        }
        Ok(end)
    }

    /// Writes one record whose body is longer than a window at `at`, in windows of
    /// [`WINDOW_BYTES`] (the framing buffer never holds more, where a copy of the whole
    /// body would double a COPY batch's memory for the moment of its write), then syncs
    /// it; returns where it ends. Direct segments: every write but the last is of whole
    /// pages, and what is left of a page goes with the next.
    pub(super) fn write_large(&mut self, lsn: u64, durable: u64, body: Large<'_>, at: u64) -> Result<u64> {
        let len = u32::try_from(body.len()).map_err(|_| LogError::Failed("a record longer than 4GiB".into()))?;
        let end = at + (RECORD_HEADER_LEN + body.len()) as u64;
        let mut crc = crc32c::crc32c_append(record_crc_start(len, lsn), &durable.to_le_bytes());
        body.for_each_piece(|b| {
            crc = crc32c::crc32c_append(crc, b);
            Ok(())
        })?;
        self.begin_piece(WINDOW_BYTES + RECORD_HEADER_LEN + 2 * PAGE as usize);
        put_header(len, crc, lsn, durable, &mut self.buf);
        // Where in the segment the bytes of `buf` from `self.lead` on go.
        let mut pos = at;
        body.for_each_piece(|part| {
            self.buf.extend_from_slice(part);
            if self.buf.len() - self.lead >= WINDOW_BYTES / 2 {
                pos = self.spill(pos)?;
            }
            Ok(())
        })?;
        self.write_piece(pos)?;
        debug_assert_eq!(pos + self.piece_len(), end, "the record's bytes, all written");
        Ok(end)
    }

    /// Writes what `buf` holds of a large record from `self.lead` on, which goes at `pos`,
    /// without syncing it (a direct segment: its whole pages, with the tail before them),
    /// and keeps the rest at the start of the piece; returns where the rest goes.
    fn spill(&mut self, pos: u64) -> Result<u64> {
        let (from, start) = if self.direct {
            (self.gap, pos - self.tail.len() as u64)
        } else {
            (self.lead, pos)
        };
        let mut n = self.buf.len() - from;
        if self.direct {
            n -= n % PAGE as usize;
        }
        let bytes = &self.buf[from..from + n];
        let w = match self.file.write_all_at(bytes, start) {
            Err(e) if self.direct && e.raw_os_error() == Some(libc::EINVAL) => {
                // As in `write_piece`: on through the page cache.
                self.direct = self.file.set_direct(false);
                self.file.write_all_at(bytes, start)
            }
            w => w,
        };
        w.map_err(|e| {
            let path = lock(&self.shared.segments)
                .last()
                .map_or_else(String::new, |s| s.1.display().to_string());
            LogError::io(format!("cannot write to {path}"), e)
        })?;
        self.buf.copy_within(from + n.., from);
        self.buf.truncate(self.buf.len() - n);
        self.tail.clear();
        self.lead = from;
        Ok(start + n as u64)
    }

    /// Empties `buf` for the next piece, with room for `reserve` bytes of records (at most
    /// what one piece holds: [`MAX_UNSYNCED_SPAN`] and the record that passes it) and
    /// padding; for a direct segment it starts with an alignment gap and [`Writer::tail`].
    pub(super) fn begin_piece(&mut self, reserve: usize) {
        if self.direct {
            self.gap = start_aligned(&mut self.buf, reserve, &self.tail);
        } else {
            self.buf.clear();
            self.gap = 0;
        }
        self.lead = self.buf.len();
    }

    /// Bytes of records in the piece being framed.
    pub(super) fn piece_len(&self) -> u64 {
        (self.buf.len() - self.lead) as u64
    }

    /// Writes the piece in `buf`, whose records go at `at`, and syncs it.
    pub(super) fn write_piece(&mut self, at: u64) -> Result<()> {
        let sh = &*self.shared;
        let path = || {
            lock(&sh.segments)
                .last()
                .map_or_else(String::new, |s| s.1.display().to_string())
        };
        let records = self.piece_len();
        let end = at + records;
        if self.pad_pages {
            let pad = (PAGE - end % PAGE) % PAGE;
            self.buf.resize(self.buf.len() + pad as usize, 0);
        }
        let w = if self.direct {
            // Were it not (the reservation short), the write would fail with EINVAL and go
            // through the page cache below.
            debug_assert_eq!(align_gap(self.buf[self.gap..].as_ptr()), 0, "reserved for the piece");
            let start = at - self.tail.len() as u64;
            let aligned = &self.buf[self.gap..];
            match self.file.write_all_at(aligned, start) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    // The file system took O_DIRECT but refuses this write: the segment
                    // goes on through the page cache (the same bytes at the same place).
                    self.direct = self.file.set_direct(false);
                    self.file.write_all_at(aligned, start)
                }
                w => w,
            }
        } else {
            self.file.write_all_at(&self.buf[self.lead..], at)
        };
        w.map_err(|e| LogError::io(format!("cannot write to {}", path()), e))?;
        if self.direct {
            let records_end = self.lead + records as usize;
            let keep = (end % PAGE) as usize;
            self.tail.clear();
            self.tail.extend_from_slice(&self.buf[records_end - keep..records_end]);
        }
        self.buf.truncate(self.lead + records as usize);
        let t = Instant::now();
        let r = self.file.sync_data();
        let c = &sh.counters;
        c.timed_sync(t.elapsed());
        r.map_err(|e| LogError::io(format!("cannot sync {}", path()), e))?;
        c.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Lets the kernel free the page-cache pages of the segment's synced records: the log
    /// is never read back while it is written, and freshly freed pages make the next
    /// writes cheaper than new ones (measured: write + `fdatasync` of 30 KiB took 65 µs of
    /// CPU instead of 95). The page the next batch continues stays cached.
    pub(super) fn drop_synced_pages(&mut self) {
        let end = self.offset / PAGE * PAGE;
        if self.direct {
            // Nothing of the segment but its header went through the page cache.
            self.uncached = end;
        } else if end >= self.uncached + DROP_CACHED_BYTES {
            self.file.drop_cached(self.uncached, end - self.uncached);
            self.uncached = end;
        }
    }

    /// Starts a new segment at the next LSN (between batches): in the preallocated file
    /// if it is ready, else (still being written, or its preparation failed) a new,
    /// empty one.
    pub(super) fn rotate(&mut self) -> Result<()> {
        let sh = &*self.shared;
        let t = Instant::now();
        let spare = match self.spare.take() {
            Some(h) if h.is_finished() => h.join().ok().and_then(|r| r.ok()),
            waiting => {
                self.spare = waiting;
                None
            }
        };
        let dir = &sh.cfg.dir;
        let header = preallocated_segment_header(self.next_lsn, sh.cfg.segment_bytes);
        // A preallocated file that cannot be started is removed, and an empty one tried.
        let started =
            spare.and_then(|f| start_segment(&*sh.fs, dir, f, &dir.join(SPARE_FILE), header, self.next_lsn).ok());
        let pad_pages = started.is_some();
        let (file, path) = match started {
            Some(s) => s,
            None => create_segment(&*sh.fs, &sh.cfg.dir, self.next_lsn)?,
        };
        self.pad_pages = pad_pages;
        let mut file = file;
        self.direct = pad_pages && file.set_direct(true);
        self.tail.clear();
        if self.direct {
            self.tail.extend_from_slice(&header);
        }
        let c = &sh.counters;
        c.timed_sync(t.elapsed());
        c.syncs.fetch_add(1, Ordering::Relaxed);
        c.bytes.fetch_add(SEGMENT_HEADER_LEN as u64, Ordering::Relaxed);
        lock(&sh.segments).push((self.next_lsn, path));
        self.file = file;
        self.offset = SEGMENT_HEADER_LEN as u64;
        self.uncached = 0;
        Ok(())
    }
}

/// Empties `buf` and, with room for `reserve` more bytes that keep them at the same
/// address, fills it with the bytes from `buf`'s start to an address aligned for direct
/// I/O and then `tail`; returns that gap's length.
pub(super) fn start_aligned(buf: &mut Vec<u8>, reserve: usize, tail: &[u8]) -> usize {
    buf.clear();
    // The gap is less than an alignment.
    buf.reserve(ALIGN + tail.len() + reserve);
    let gap = align_gap(buf.as_ptr());
    buf.resize(gap, 0);
    buf.extend_from_slice(tail);
    gap
}

/// A record written through the window ([`Writer::write_large`]): a body longer than the
/// window, or a call the writer encodes ([`StreamedCall`]).
#[derive(Clone, Copy)]
pub(super) enum Large<'a> {
    Bytes(&'a [u8]),
    Streamed(&'a StreamedCall),
}

impl Large<'_> {
    fn len(&self) -> usize {
        match self {
            Large::Bytes(b) => b.len(),
            Large::Streamed(c) => c.len(),
        }
    }

    /// Calls `f` with the body's bytes in order, in pieces of at most about half a window.
    fn for_each_piece(&self, f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        match self {
            Large::Bytes(b) => b.chunks(WINDOW_BYTES / 2).try_for_each(f),
            Large::Streamed(c) => c.for_each_piece(WINDOW_BYTES / 2, f),
        }
    }
}
