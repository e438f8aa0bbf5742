//! Reading the log back (recovery) and finding its valid end (when the writer opens it).
//!
//! Every byte is checked: segment headers (magic, version, checksum, first LSN equal to the
//! file name's), record checksums, LSNs that follow each other without a gap within and
//! across segments, and record bodies (`decode_record`). The one tolerated defect is a
//! *torn tail*: the last record of the last segment cut short or failing its checksum, with
//! no valid record after it — what a crash during a write leaves. In a version 1 segment
//! (appended to, so a crash keeps a prefix of the unsynced write) "after it" is anywhere;
//! in a version 2 segment (preallocated and overwritten, so a crash may keep any pages of
//! the unsynced write) it is from [`MAX_UNSYNCED_SPAN`] bytes after it on. Anything else is
//! [`LogError::Corrupt`] naming the file and offset. A version 2 segment's records end
//! where only zero bytes are left (its unused preallocated space).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::error::{LogError, Result};
use super::format::{
    MAX_BODY_LEN, MAX_UNSYNCED_SPAN, PREALLOCATED_VERSION, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN, check_segment_header,
    list_segments, parse_record_header, record_crc,
};
use super::record::{TxnRecord, decode_record};

/// Bodies longer than this are checksummed in chunks before they are read into memory, so
/// that a corrupt length field never makes the reader allocate gigabytes.
const LARGE_BODY: u64 = 16 << 20;
const SCAN_CHUNK: usize = 1 << 20;

/// What the next bytes of a segment hold.
pub(crate) enum Raw {
    Record {
        lsn: u64,
        offset: u64,
        body: Vec<u8>,
    },
    /// The end of the segment.
    End,
    /// A torn tail starting at this offset (only in the last segment).
    Torn(u64),
}

/// Reads one segment's records in order.
pub(crate) struct SegmentCursor {
    pub path: PathBuf,
    file: BufReader<File>,
    /// Offset of the next record.
    pub offset: u64,
    len: u64,
    /// Whether this is the log's last segment (where a torn tail may be).
    last: bool,
    pub first_lsn: u64,
    /// The segment's format version (2 may end in preallocated zeros).
    version: u32,
    /// The records ended before the end of the file (only zeros follow).
    ended: bool,
    /// LSN the next record must have.
    pub expected: u64,
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
    /// Opens a segment and checks its header against its name's LSN.
    pub fn open(path: &Path, name_lsn: u64, last: bool) -> Result<SegmentCursor> {
        let file = File::open(path).map_err(io_err(path, "cannot open"))?;
        let len = file.metadata().map_err(io_err(path, "cannot stat"))?.len();
        let mut file = BufReader::with_capacity(256 << 10, file);
        let mut h = [0u8; SEGMENT_HEADER_LEN];
        if len < SEGMENT_HEADER_LEN as u64 {
            return Err(LogError::corrupt(
                path,
                0,
                format!("file of {len} bytes is shorter than a segment header"),
            ));
        }
        file.read_exact(&mut h).map_err(io_err(path, "cannot read"))?;
        let header = check_segment_header(&h).map_err(|d| LogError::corrupt(path, 0, d.to_string()))?;
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
            offset: SEGMENT_HEADER_LEN as u64,
            len,
            last,
            first_lsn: first,
            version: header.version,
            ended: false,
            expected: first,
        })
    }

    /// The next record, the end, or a torn tail.
    pub fn next_raw(&mut self) -> Result<Raw> {
        if self.offset == self.len || self.ended {
            return Ok(Raw::End);
        }
        let at = self.offset;
        let remaining = self.len - at;
        let mut h = [0u8; RECORD_HEADER_LEN];
        let n = remaining.min(RECORD_HEADER_LEN as u64) as usize;
        self.file
            .read_exact(&mut h[..n])
            .map_err(io_err(&self.path, "cannot read"))?;
        if self.version == PREALLOCATED_VERSION
            && h[..n].iter().all(|&b| b == 0)
            && zeros_to_end(self.file.get_ref(), at + n as u64, self.len).map_err(io_err(&self.path, "cannot read"))?
        {
            // Preallocated space the writer has not reached: the records end here (the
            // offset stays, for the writer to continue at).
            self.ended = true;
            return Ok(Raw::End);
        }
        if remaining < RECORD_HEADER_LEN as u64 {
            return self.bad(format!("incomplete record header ({remaining} bytes)"));
        }
        let (len, crc, lsn) = parse_record_header(&h);
        let body_len = len as u64;
        if body_len > remaining - RECORD_HEADER_LEN as u64 {
            return self.bad(format!(
                "record of {body_len} bytes is cut short ({} bytes left in the file)",
                remaining - RECORD_HEADER_LEN as u64
            ));
        }
        let body_at = at + RECORD_HEADER_LEN as u64;
        if body_len > LARGE_BODY
            && !crc_matches_at(self.file.get_ref(), body_at, len, lsn, crc)
                .map_err(io_err(&self.path, "cannot read"))?
        {
            return self.bad("record checksum mismatch".into());
        }
        let mut body = vec![0u8; len as usize];
        self.file
            .read_exact(&mut body)
            .map_err(io_err(&self.path, "cannot read"))?;
        if record_crc(len, lsn, &body) != crc {
            return self.bad("record checksum mismatch".into());
        }
        if lsn != self.expected {
            return Err(LogError::corrupt(
                &self.path,
                at,
                format!(
                    "record has LSN {lsn}, expected {} (a gap or a reordering)",
                    self.expected
                ),
            ));
        }
        self.offset = body_at + body_len;
        self.expected += 1;
        Ok(Raw::Record { lsn, offset: at, body })
    }

    /// A record that is incomplete or fails its checksum at the current offset: a torn tail
    /// if it is in the last segment and no valid record follows it, else corruption.
    fn bad(&mut self, detail: String) -> Result<Raw> {
        let at = self.offset;
        if !self.last {
            return Err(LogError::corrupt(
                &self.path,
                at,
                format!("{detail}, in a segment that is not the last"),
            ));
        }
        // Version 2: valid records closer than MAX_UNSYNCED_SPAN behind the damaged one may
        // be pages of the same unsynced write that reached the disk out of order.
        let from = if self.version == PREALLOCATED_VERSION {
            at.saturating_add(MAX_UNSYNCED_SPAN - 1)
        } else {
            at
        };
        if let Some(p) = valid_record_after(self.file.get_ref(), at, from, self.len, self.expected)
            .map_err(io_err(&self.path, "cannot read"))?
        {
            return Err(LogError::corrupt(
                &self.path,
                at,
                format!("{detail}, and a valid record follows at offset {p}"),
            ));
        }
        Ok(Raw::Torn(at))
    }
}

/// Whether every byte of the file from `from` to `len` is zero.
fn zeros_to_end(file: &File, from: u64, len: u64) -> io::Result<bool> {
    let mut buf = vec![0u8; SCAN_CHUNK.min(len.saturating_sub(from) as usize)];
    let mut at = from;
    while at < len {
        let n = ((len - at) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..n], at)?;
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        at += n as u64;
    }
    Ok(true)
}

/// Whether the record body at `at` (of `len` bytes) has checksum `crc`, read in chunks.
fn crc_matches_at(file: &File, at: u64, len: u32, lsn: u64, crc: u32) -> io::Result<bool> {
    let mut c = crc32c::crc32c(&len.to_le_bytes());
    c = crc32c::crc32c_append(c, &lsn.to_le_bytes());
    let mut buf = vec![0u8; (len as usize).min(SCAN_CHUNK)];
    let mut done = 0u64;
    while done < len as u64 {
        let n = (len as u64 - done).min(SCAN_CHUNK as u64) as usize;
        file.read_exact_at(&mut buf[..n], at + done)?;
        c = crc32c::crc32c_append(c, &buf[..n]);
        done += n as u64;
    }
    Ok(c == crc)
}

/// The offset of a valid record (checksum correct, LSN at least `expected`) starting
/// anywhere in `(from, len)`, if there is one: what tells corruption in the middle of a
/// segment from a torn tail. `bad` is where the damaged record starts (at most `from`).
fn valid_record_after(file: &File, bad: u64, from: u64, len: u64, expected: u64) -> io::Result<Option<u64>> {
    if from >= len {
        return Ok(None);
    }
    // Records after the bad one have LSNs from `expected` to at most one per header's
    // worth of the bytes left.
    let max_lsn = expected.saturating_add((len - bad) / RECORD_HEADER_LEN as u64 + 1);
    let mut buf = vec![0u8; SCAN_CHUNK + RECORD_HEADER_LEN];
    let mut start = from + 1;
    while start + RECORD_HEADER_LEN as u64 <= len {
        let n = ((len - start) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..n], start)?;
        let candidates = n + 1 - RECORD_HEADER_LEN;
        for i in 0..candidates {
            let h: &[u8; RECORD_HEADER_LEN] = buf[i..i + RECORD_HEADER_LEN].try_into().expect("16 bytes");
            let (body_len, crc, lsn) = parse_record_header(h);
            let p = start + i as u64;
            if lsn < expected
                || lsn > max_lsn
                || body_len as usize > MAX_BODY_LEN
                || p + (RECORD_HEADER_LEN as u64) + body_len as u64 > len
            {
                continue;
            }
            if crc_matches_at(file, p + RECORD_HEADER_LEN as u64, body_len, lsn, crc)? {
                return Ok(Some(p));
            }
        }
        start += candidates as u64;
    }
    Ok(None)
}

/// What the writer needs to know about the last segment to append to it.
pub(crate) struct Tail {
    /// LSN the next record gets.
    pub next_lsn: u64,
    /// Bytes of the segment up to the end of its last valid record.
    pub valid_len: u64,
    /// Where a torn tail starts (then `valid_len` equals it).
    pub torn: Option<u64>,
    /// Whether the segment is preallocated (format version 2).
    pub preallocated: bool,
}

/// Checks the last segment's header and records (checksums and LSNs; bodies are not
/// decoded) and finds where its valid records end.
pub(crate) fn scan_tail(path: &Path, name_lsn: u64) -> Result<Tail> {
    let mut c = SegmentCursor::open(path, name_lsn, true)?;
    loop {
        match c.next_raw()? {
            Raw::Record { .. } => {}
            Raw::End => {
                return Ok(Tail {
                    next_lsn: c.expected,
                    valid_len: c.offset,
                    torn: None,
                    preallocated: c.version == PREALLOCATED_VERSION,
                });
            }
            Raw::Torn(at) => {
                return Ok(Tail {
                    next_lsn: c.expected,
                    valid_len: at,
                    torn: Some(at),
                    preallocated: c.version == PREALLOCATED_VERSION,
                });
            }
        }
    }
}

/// Reads records in LSN order, starting after `after_lsn`, across segments: yields
/// `(lsn, record)`.
///
/// A torn tail (an incomplete or checksum-failing record at the end of the last segment,
/// with no valid record after it: a crash during a write) ends the iteration cleanly and is
/// reported by [`LogReader::torn_tail`]; [`super::CommandLog::open`] truncates it away.
/// Anything bad elsewhere (a bad record followed by a valid one, a bad segment header, a
/// gap in LSNs, an unknown version, a body that does not decode) is an error naming the
/// file and offset, after which the iteration ends. Records up to `after_lsn` are checked
/// (checksum, LSN) but not decoded.
pub struct LogReader {
    segments: Vec<(u64, PathBuf)>,
    next_segment: usize,
    cur: Option<SegmentCursor>,
    after: u64,
    /// LSN the next record must have (0: not known before the first segment is opened).
    expected: u64,
    last_lsn: u64,
    torn: Option<(PathBuf, u64)>,
    finished: bool,
}

impl LogReader {
    /// Opens the log in `dir` (a missing directory is an empty log). Fails if records after
    /// `after_lsn` were removed: the first segment starts later than `after_lsn + 1`.
    pub fn open(dir: &Path, after_lsn: u64) -> Result<LogReader> {
        let all = list_segments(dir).map_err(io_err(dir, "cannot list"))?;
        let mut segments = all;
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
        self.torn.clone()
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
                let c = SegmentCursor::open(path, *name_lsn, last)?;
                if self.expected != 0 && c.first_lsn != self.expected {
                    return Err(LogError::corrupt(
                        path,
                        0,
                        format!(
                            "segment starts at LSN {}, but the previous one ended before LSN {} (a gap)",
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
                Raw::Torn(at) => {
                    self.torn = Some((c.path.clone(), at));
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
