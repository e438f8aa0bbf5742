//! Reading the log back (recovery) and finding its valid end (when the writer opens it).
//!
//! Every byte is checked: segment headers (magic, version, checksum, first LSN equal to the
//! file name's), record checksums, LSNs that follow each other without a gap within and
//! across segments, and record bodies (`decode_record`). The one tolerated defect is a
//! *torn tail*: damage in the last segment that a crash during the one unsynced write
//! explains, which the writer drops when it opens the log. Everything else is
//! [`LogError::Corrupt`] naming the file and offset: replaying past damage, or stopping at
//! it quietly, would both lose transactions that were acknowledged as durable.
//!
//! What a crash explains depends on the segment's version. In versions 3 and 4 every record
//! states the highest LSN that was durable when its write began (format.rs); the writer
//! never has more than one write unsynced, so a valid record after the damage that states
//! a durable LSN at or above the damaged record's proves the damaged record had been synced
//! (refused), while valid records that all state less are pages of that same unsynced
//! write (a torn tail, however far away they are). Versions 1 and 2, written by earlier
//! builds, carry no such LSN and are read with their own rules: no valid record may follow
//! the damage in an appended segment (1), none from [`MAX_UNSYNCED_SPAN`] bytes after it on
//! in a preallocated one (2).
//!
//! Files are read through the I/O seam (`permafrost_io::Fs::open_read`), as the writer
//! writes them, so that tests that inject faults into one see the other.

mod scan;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use permafrost_io::{Fs, FsRead, RealFs};

use super::error::{LogError, Result};
use super::format::{
    Layout, MAX_UNSYNCED_SPAN, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN, check_segment_header, legacy_record_crc,
    list_segments, parse_record_header, record_crc,
};
use super::record::{TxnRecord, decode_record};
use crate::codec::DecodeError;
pub(crate) use scan::nonzero_end;
use scan::{After, crc_matches_at, valid_records_after, zeros_to_end};

/// Bodies longer than this are checksummed in chunks before they are read into memory, so
/// that a corrupt length field never makes the reader allocate gigabytes.
const LARGE_BODY: u64 = 16 << 20;
/// Bytes read ahead for the sequential pass over a segment.
const READ_AHEAD: usize = 256 << 10;

/// A torn tail: damage at the end of the last segment that a crash during its one unsynced
/// write explains (its records were never acknowledged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    pub file: PathBuf,
    /// Where the torn record starts (the records before it are the log).
    pub offset: u64,
    /// Bytes dropped from there: to the end of the file, or in a preallocated segment to
    /// the end of its last nonzero byte.
    pub bytes: u64,
    /// The LSN the torn record would have had.
    pub lsn: u64,
    /// Valid records of the same unsynced write found after it (dropped with it).
    pub later_records: u64,
}

/// Damage a reader refused, as the trim (trim.rs) needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Damage {
    pub offset: u64,
    /// The LSN the damaged record has or would have had.
    pub first_lsn: u64,
    /// The highest LSN of the valid records found after it in the segment.
    pub last_lsn: Option<u64>,
}

/// What the next bytes of a segment hold.
pub(crate) enum Raw {
    Record {
        lsn: u64,
        offset: u64,
        body: Vec<u8>,
    },
    /// The end of the segment.
    End,
    /// A torn tail (only in the last segment).
    Torn(TornTail),
}

/// A segment opened for reading, with a read-ahead buffer for the sequential pass.
struct SegmentFile {
    file: Box<dyn FsRead>,
    len: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    buf_at: u64,
}

impl SegmentFile {
    /// Fills `out` from `at` (which with `out` lies inside the file).
    fn read(&mut self, at: u64, out: &mut [u8]) -> io::Result<()> {
        let end = at + out.len() as u64;
        if at >= self.buf_at && end <= self.buf_at + self.buf.len() as u64 {
            let i = (at - self.buf_at) as usize;
            out.copy_from_slice(&self.buf[i..i + out.len()]);
            return Ok(());
        }
        if out.len() >= READ_AHEAD {
            return self.file.read_exact_at(out, at);
        }
        let n = ((self.len - at) as usize).min(READ_AHEAD).max(out.len());
        self.buf.resize(n, 0);
        self.buf_at = at;
        if let Err(e) = self.file.read_exact_at(&mut self.buf, at) {
            self.buf.clear();
            return Err(e);
        }
        out.copy_from_slice(&self.buf[..out.len()]);
        Ok(())
    }
}

/// Reads one segment's records in order.
pub(crate) struct SegmentCursor {
    pub path: PathBuf,
    file: SegmentFile,
    /// Offset of the next record.
    pub offset: u64,
    pub len: u64,
    /// Whether this is the log's last segment (where a torn tail may be).
    last: bool,
    pub first_lsn: u64,
    pub layout: Layout,
    /// Version 4: the length the file was preallocated to.
    pub preallocated_len: u64,
    /// The records ended before the end of the file (only zeros follow).
    ended: bool,
    /// LSN the next record must have.
    pub expected: u64,
    /// The damage refused, once it was.
    pub damage: Option<Damage>,
}

/// An I/O error with its context, formatted only if there is an error (this is on the
/// path of every record read).
fn io_err<'a>(path: &'a Path, what: &'a str) -> impl FnOnce(io::Error) -> LogError + 'a {
    move |source| LogError::Io {
        context: format!("{what} {}", path.display()),
        source,
    }
}

impl SegmentCursor {
    /// Opens a segment through `fs` and checks its header against its name's LSN.
    pub fn open(fs: &dyn Fs, path: &Path, name_lsn: u64, last: bool) -> Result<SegmentCursor> {
        let file = fs.open_read(path).map_err(io_err(path, "cannot open"))?;
        let len = file.len().map_err(io_err(path, "cannot stat"))?;
        let mut file = SegmentFile {
            file,
            len,
            buf: Vec::new(),
            buf_at: 0,
        };
        let mut h = [0u8; SEGMENT_HEADER_LEN];
        let n = (len as usize).min(SEGMENT_HEADER_LEN);
        file.read(0, &mut h[..n]).map_err(io_err(path, "cannot read"))?;
        let header = check_segment_header(&h[..n]).map_err(|d| {
            let detail = match d {
                DecodeError::Truncated { need, .. } => {
                    format!("file of {len} bytes is shorter than a segment header ({need} bytes)")
                }
                d => d.to_string(),
            };
            LogError::corrupt(path, 0, detail)
        })?;
        let first = header.first_lsn;
        if first != name_lsn {
            return Err(LogError::corrupt(
                path,
                0,
                format!("segment header states first LSN {first}, its name {name_lsn}"),
            ));
        }
        Ok(SegmentCursor {
            path: path.to_path_buf(),
            file,
            offset: header.layout.segment_header_len as u64,
            len,
            last,
            first_lsn: first,
            layout: header.layout,
            preallocated_len: header.preallocated_len,
            ended: false,
            expected: first,
            damage: None,
        })
    }

    /// The file's dropped part, if it is a preallocated segment shorter than it was
    /// preallocated to: no crash does that (its length was synced before its header was
    /// written), so it was cut after it was written.
    fn cut(&self) -> Option<String> {
        (self.len < self.preallocated_len).then(|| {
            format!(
                "the file is {} bytes, shorter than the {} it was preallocated to: it was cut short after it \
                 was written (a crash never shortens a preallocated segment), and the records after LSN {} \
                 may be lost",
                self.len,
                self.preallocated_len,
                self.expected - 1
            )
        })
    }

    /// The end of the records: the end of the segment, unless the file was cut.
    fn end(&mut self) -> Result<Raw> {
        if let Some(detail) = self.cut() {
            self.damage = Some(Damage {
                offset: self.len,
                first_lsn: self.expected,
                last_lsn: None,
            });
            return Err(LogError::corrupt(&self.path, self.len, detail));
        }
        Ok(Raw::End)
    }

    /// The next record, the end, or a torn tail.
    pub fn next_raw(&mut self) -> Result<Raw> {
        if self.offset == self.len || self.ended {
            return self.end();
        }
        let at = self.offset;
        let remaining = self.len - at;
        let rh = self.layout.record_header_len;
        let mut h = [0u8; RECORD_HEADER_LEN];
        let n = remaining.min(rh as u64) as usize;
        self.file
            .read(at, &mut h[..n])
            .map_err(io_err(&self.path, "cannot read"))?;
        if self.layout.preallocated
            && h[..n].iter().all(|&b| b == 0)
            && zeros_to_end(&*self.file.file, at + n as u64, self.len).map_err(io_err(&self.path, "cannot read"))?
        {
            // Preallocated space the writer has not reached: the records end here (the
            // offset stays, for the writer to continue at).
            self.ended = true;
            return self.end();
        }
        if remaining < rh as u64 {
            return self.bad(format!("incomplete record header ({remaining} bytes)"));
        }
        let rec = parse_record_header(&self.layout, &h[..rh]).expect("a whole header");
        let body_len = rec.len as u64;
        if body_len > remaining - rh as u64 {
            return self.bad(format!(
                "record of {body_len} bytes is cut short ({} bytes left in the file)",
                remaining - rh as u64
            ));
        }
        let body_at = at + rh as u64;
        if body_len > LARGE_BODY
            && !crc_matches_at(&*self.file.file, &self.layout, body_at, &rec)
                .map_err(io_err(&self.path, "cannot read"))?
        {
            return self.bad("record checksum mismatch".into());
        }
        let mut body = vec![0u8; rec.len as usize];
        self.file
            .read(body_at, &mut body)
            .map_err(io_err(&self.path, "cannot read"))?;
        let crc = if self.layout.durable_lsns {
            record_crc(rec.len, rec.lsn, rec.durable, &body)
        } else {
            legacy_record_crc(rec.len, rec.lsn, &body)
        };
        if crc != rec.crc {
            return self.bad("record checksum mismatch".into());
        }
        if rec.lsn != self.expected {
            return Err(LogError::corrupt(
                &self.path,
                at,
                format!(
                    "record has LSN {}, expected {} (a gap or a reordering)",
                    rec.lsn, self.expected
                ),
            ));
        }
        if self.layout.durable_lsns && rec.durable >= rec.lsn {
            return Err(LogError::corrupt(
                &self.path,
                at,
                format!(
                    "record {} states durable LSN {}: no record is durable before it is written",
                    rec.lsn, rec.durable
                ),
            ));
        }
        self.offset = body_at + body_len;
        self.expected += 1;
        Ok(Raw::Record {
            lsn: rec.lsn,
            offset: at,
            body,
        })
    }

    /// A record that is incomplete or fails its checksum at the current offset: a torn tail
    /// if this segment's rules say a crash explains it, else corruption.
    fn bad(&mut self, detail: String) -> Result<Raw> {
        let at = self.offset;
        let e = self.expected;
        let read_err = io_err(&self.path, "cannot read");
        // Version 2: valid records closer than MAX_UNSYNCED_SPAN behind the damaged one may
        // be pages of the same unsynced write that reached the disk out of order.
        let legacy_from = if self.layout.preallocated && !self.layout.durable_lsns {
            at.saturating_add(MAX_UNSYNCED_SPAN - 1)
        } else {
            at
        };
        let file = &*self.file.file;
        let after = valid_records_after(file, &self.layout, at, at, self.len, e).map_err(read_err)?;
        let refuse = |this: &mut SegmentCursor, why: String| {
            this.damage = Some(Damage {
                offset: at,
                first_lsn: e,
                last_lsn: after.last_lsn,
            });
            Err(LogError::corrupt(
                &this.path,
                at,
                format!("{detail} at record {e}, {why}"),
            ))
        };
        if !self.last {
            let why = format!("in a segment that is not the last{}", following(&after));
            return refuse(self, why);
        }
        if let Some(cut) = self.cut() {
            return refuse(self, format!("and {cut}"));
        }
        if self.layout.durable_lsns {
            if let Some((p, lsn, durable)) = after.vouching {
                let why = format!(
                    "which was durable: record {lsn} at offset {p} states that LSN {durable} was synced before it \
                     was written{}",
                    following(&after)
                );
                return refuse(self, why);
            }
        } else {
            let legacy = valid_records_after(file, &self.layout, at, legacy_from, self.len, e)
                .map_err(io_err(&self.path, "cannot read"))?;
            if let Some((p, lsn)) = legacy.first {
                return refuse(
                    self,
                    format!(
                        "and a valid record follows at offset {p} (LSN {lsn}){}",
                        following(&after)
                    ),
                );
            }
        }
        let end = if self.layout.preallocated {
            nonzero_end(file, at, self.len).map_err(io_err(&self.path, "cannot read"))?
        } else {
            self.len
        };
        Ok(Raw::Torn(TornTail {
            file: self.path.clone(),
            offset: at,
            bytes: end - at,
            lsn: e,
            later_records: after.count,
        }))
    }
}

/// The valid records after damage, for a message: which LSNs are at stake.
fn following(after: &After) -> String {
    match (after.first, after.last_lsn) {
        (Some((p, first)), Some(last)) => format!(
            "; {} valid record(s) follow it in this segment, LSN {first} to {last}, the first at offset {p}",
            after.count
        ),
        _ => String::new(),
    }
}

/// What the writer needs to know about the last segment to append to it.
pub(crate) struct Tail {
    /// LSN the next record gets.
    pub next_lsn: u64,
    /// Bytes of the segment up to the end of its last valid record.
    pub valid_len: u64,
    /// The torn tail dropped from there, if any.
    pub torn: Option<TornTail>,
    pub layout: Layout,
}

/// Checks the last segment's header and records (checksums and LSNs; bodies are not
/// decoded) and finds where its valid records end.
pub(crate) fn scan_tail(fs: &dyn Fs, path: &Path, name_lsn: u64) -> Result<Tail> {
    let mut c = SegmentCursor::open(fs, path, name_lsn, true)?;
    loop {
        let torn = match c.next_raw()? {
            Raw::Record { .. } => continue,
            Raw::End => None,
            Raw::Torn(t) => Some(t),
        };
        return Ok(Tail {
            next_lsn: c.expected,
            valid_len: c.offset,
            torn,
            layout: c.layout,
        });
    }
}

/// Reads records in LSN order, starting after `after_lsn`, across segments: yields
/// `(lsn, record)`.
///
/// A torn tail (see the module documentation) ends the iteration cleanly and is reported
/// by [`LogReader::torn_tail`]; [`super::CommandLog::open`] cuts it off. Anything bad
/// elsewhere (damage a crash does not explain, a bad segment header, a gap in LSNs, an
/// unknown version, a body that does not decode) is an error naming the file and offset,
/// after which the iteration ends. Records up to `after_lsn` are checked (checksum, LSN)
/// but not decoded.
pub struct LogReader {
    fs: Arc<dyn Fs>,
    segments: Vec<(u64, PathBuf)>,
    next_segment: usize,
    cur: Option<SegmentCursor>,
    after: u64,
    /// LSN the next record must have (0: not known before the first segment is opened).
    expected: u64,
    last_lsn: u64,
    torn: Option<TornTail>,
    finished: bool,
}

impl LogReader {
    /// Opens the log in `dir` (a missing directory is an empty log) on the real file
    /// system. Fails if records after `after_lsn` were removed: the first segment starts
    /// later than `after_lsn + 1`.
    pub fn open(dir: &Path, after_lsn: u64) -> Result<LogReader> {
        LogReader::open_with(dir, after_lsn, Arc::new(RealFs))
    }

    /// [`LogReader::open`] reading through `fs` (the one the log was written through:
    /// [`super::CommandLog::fs`]).
    pub fn open_with(dir: &Path, after_lsn: u64, fs: Arc<dyn Fs>) -> Result<LogReader> {
        let mut segments = list_segments(&*fs, dir).map_err(io_err(dir, "cannot list"))?;
        if let Some(&(first, ref path)) = segments.first()
            && first > after_lsn.saturating_add(1)
        {
            return Err(LogError::corrupt(
                path,
                0,
                format!(
                    "the log starts at LSN {first}, but records from LSN {} on are needed (removed before a snapshot covered them?)",
                    after_lsn.saturating_add(1)
                ),
            ));
        }
        // Start at the last segment whose first LSN is at most after_lsn + 1.
        let start = segments.partition_point(|(first, _)| *first <= after_lsn.saturating_add(1));
        segments.drain(..start.saturating_sub(1));
        Ok(LogReader {
            fs,
            segments,
            next_segment: 0,
            cur: None,
            after: after_lsn,
            expected: 0,
            last_lsn: 0,
            torn: None,
            finished: false,
        })
    }

    /// Where a torn tail was found (file, offset), once the iteration reached it.
    pub fn torn_tail(&self) -> Option<(PathBuf, u64)> {
        self.torn.as_ref().map(|t| (t.file.clone(), t.offset))
    }

    /// The torn tail found, with what it held, once the iteration reached it.
    pub fn torn(&self) -> Option<&TornTail> {
        self.torn.as_ref()
    }

    /// LSN of the last valid record read so far (including records up to `after_lsn`; 0 if
    /// none).
    pub fn last_lsn(&self) -> u64 {
        self.last_lsn
    }

    fn step(&mut self) -> Result<Option<(u64, TxnRecord)>> {
        loop {
            if self.cur.is_none() {
                let Some((name_lsn, path)) = self.segments.get(self.next_segment) else {
                    return Ok(None);
                };
                let last = self.next_segment + 1 == self.segments.len();
                let c = SegmentCursor::open(&*self.fs, path, *name_lsn, last)?;
                if self.expected != 0 && c.first_lsn != self.expected {
                    return Err(LogError::corrupt(
                        path,
                        0,
                        format!(
                            "segment starts at LSN {}, but the previous one ended before LSN {} (a gap: a \
                             segment is missing)",
                            c.first_lsn, self.expected
                        ),
                    ));
                }
                self.expected = c.first_lsn;
                self.next_segment += 1;
                self.cur = Some(c);
            }
            let c = self.cur.as_mut().expect("a segment is open");
            match c.next_raw()? {
                Raw::End => self.cur = None,
                Raw::Torn(t) => {
                    self.torn = Some(t);
                    return Ok(None);
                }
                Raw::Record { lsn, offset, body } => {
                    self.expected = lsn + 1;
                    self.last_lsn = lsn;
                    if lsn <= self.after {
                        continue;
                    }
                    let rec = decode_record(&body).map_err(|d| {
                        LogError::corrupt(&c.path, offset, format!("record {lsn} does not decode: {d}"))
                    })?;
                    return Ok(Some((lsn, rec)));
                }
            }
        }
    }
}

impl Iterator for LogReader {
    type Item = Result<(u64, TxnRecord)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        match self.step() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.finished = true;
                None
            }
            Err(e) => {
                self.finished = true;
                Some(Err(e))
            }
        }
    }
}
