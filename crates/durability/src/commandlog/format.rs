//! Segment files and record framing (docs/format.md, "Command log, version 4").
//!
//! A log is a directory of segment files `<first LSN as 20 digits>.log`. This build writes
//! versions 3 (appended to) and 4 (preallocated, written over):
//!
//! ```text
//! segment header, 32 bytes
//!  0  8  magic "PFCMDLOG"
//!  8  4  format version: 3 appended segment, 4 preallocated segment
//! 12  8  LSN of the segment's first record (the same number as the file name)
//! 20  8  version 4: the length the file was preallocated to (it is never shorter); 3: 0
//! 28  4  CRC-32C of bytes [0, 28)
//! then records, back to back:
//!  0  4  body length L
//!  4  4  CRC-32C of the length field, the LSNs and the body (bytes [0, 4) and [8, 24 + L))
//!  8  8  LSN
//! 16  8  durable LSN: the highest LSN synced before the write carrying this record began
//! 24  L  body (record.rs)
//! ```
//!
//! and reads versions 1 and 2 as well, written by earlier builds: the same with a 24-byte
//! segment header (no preallocated length; CRC at 20 over [0, 20)) and a 16-byte record
//! header (no durable LSN).
//!
//! Why the durable LSN. A preallocated segment is written full of zeros before its first
//! record, so that the writer overwrites blocks the file system has already allocated
//! instead of growing the file (an `fdatasync` then has no metadata to commit); its records
//! end where a record header of zero bytes starts and every byte after it to the end of
//! the file is zero (no record has LSN 0). Where a segment is overwritten rather than
//! appended, a crash can keep any pages of the one write that was not yet synced, not only a
//! prefix of it, so a damaged record followed by valid ones may be a torn write. Version 2
//! guessed from the distance (valid records within [`MAX_UNSYNCED_SPAN`] of the damage were
//! taken for pages of that write) and so dropped acknowledged records when damage hit a
//! synced one near the end. Each record now says which records were durable when it was
//! written: a valid record after the damage that states a durable LSN at or above the
//! damaged record's proves the damaged one was synced (refused), and valid records that
//! all state less belong to the one unsynced write (a torn tail). The preallocated length
//! lets a reader tell a preallocated file cut short (no crash does that) from one that
//! ends where its writer stopped.
//!
//! All integers are little-endian.

use std::io;
use std::path::{Path, PathBuf};

use crate::codec::{DecodeError, Decoder};

pub const SEGMENT_MAGIC: [u8; 8] = *b"PFCMDLOG";
/// The newest segment format this build writes and reads.
pub const FORMAT_VERSION: u32 = PREALLOCATED_VERSION;
/// The oldest segment format this build reads.
pub const OLDEST_FORMAT_VERSION: u32 = LEGACY_APPENDED_VERSION;
/// An appended segment of earlier builds: records without a durable LSN.
pub const LEGACY_APPENDED_VERSION: u32 = 1;
/// A preallocated segment of earlier builds: records without a durable LSN.
pub const LEGACY_PREALLOCATED_VERSION: u32 = 2;
/// A segment that is appended to: a crash keeps a prefix of what was not yet synced.
pub const APPENDED_VERSION: u32 = 3;
/// A preallocated segment, written over: see the module documentation.
pub const PREALLOCATED_VERSION: u32 = 4;
/// In one write, every record but its first starts less than this many bytes after the
/// write's first byte (the writer syncs larger batches in pieces). Version 2 segments are
/// read with it: records found this close after a damaged record may be pages of the
/// unsynced write that reached the disk before a crash.
pub const MAX_UNSYNCED_SPAN: u64 = 4 << 20;
/// Header lengths of the versions this build writes (3 and 4).
pub const SEGMENT_HEADER_LEN: usize = 32;
pub const RECORD_HEADER_LEN: usize = 24;
/// Header lengths of versions 1 and 2.
pub const LEGACY_SEGMENT_HEADER_LEN: usize = 24;
pub const LEGACY_RECORD_HEADER_LEN: usize = 16;
/// Longest record body a segment can hold (the length field is 32 bits).
pub const MAX_BODY_LEN: usize = u32::MAX as usize;

/// What a segment version's bytes look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub version: u32,
    /// Preallocated and written over (2, 4): the records end at zeros.
    pub preallocated: bool,
    /// Records carry a durable LSN (3, 4).
    pub durable_lsns: bool,
    pub segment_header_len: usize,
    pub record_header_len: usize,
}

impl Layout {
    /// The layout of `version`, if this build reads it.
    pub fn of(version: u32) -> Option<Layout> {
        let legacy = matches!(version, LEGACY_APPENDED_VERSION | LEGACY_PREALLOCATED_VERSION);
        if !legacy && !matches!(version, APPENDED_VERSION | PREALLOCATED_VERSION) {
            return None;
        }
        Some(Layout {
            version,
            preallocated: matches!(version, LEGACY_PREALLOCATED_VERSION | PREALLOCATED_VERSION),
            durable_lsns: !legacy,
            segment_header_len: if legacy {
                LEGACY_SEGMENT_HEADER_LEN
            } else {
                SEGMENT_HEADER_LEN
            },
            record_header_len: if legacy {
                LEGACY_RECORD_HEADER_LEN
            } else {
                RECORD_HEADER_LEN
            },
        })
    }
}

/// `<first_lsn as 20 digits>.log`
pub fn segment_file_name(first_lsn: u64) -> String {
    format!("{first_lsn:020}.log")
}

/// The first LSN a segment file's name states, if `name` is a segment file's name.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".log")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The header of a segment that is appended to (version 3).
pub fn segment_header(first_lsn: u64) -> [u8; SEGMENT_HEADER_LEN] {
    header(first_lsn, APPENDED_VERSION, 0)
}

/// The header of a segment whose file was preallocated to `len` bytes of zeros (version 4).
pub fn preallocated_segment_header(first_lsn: u64, len: u64) -> [u8; SEGMENT_HEADER_LEN] {
    header(first_lsn, PREALLOCATED_VERSION, len)
}

fn header(first_lsn: u64, version: u32, len: u64) -> [u8; SEGMENT_HEADER_LEN] {
    let mut h = [0u8; SEGMENT_HEADER_LEN];
    h[0..8].copy_from_slice(&SEGMENT_MAGIC);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    h[12..20].copy_from_slice(&first_lsn.to_le_bytes());
    h[20..28].copy_from_slice(&len.to_le_bytes());
    let crc = crc32c::crc32c(&h[..28]);
    h[28..32].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The header of a version 1 or 2 segment, as earlier builds wrote it (tests of reading
/// old logs).
pub fn legacy_segment_header(first_lsn: u64, version: u32) -> [u8; LEGACY_SEGMENT_HEADER_LEN] {
    let mut h = [0u8; LEGACY_SEGMENT_HEADER_LEN];
    h[0..8].copy_from_slice(&SEGMENT_MAGIC);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    h[12..20].copy_from_slice(&first_lsn.to_le_bytes());
    let crc = crc32c::crc32c(&h[..20]);
    h[20..24].copy_from_slice(&crc.to_le_bytes());
    h
}

/// A checked segment header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    pub first_lsn: u64,
    pub layout: Layout,
    /// Version 4: the length the file was preallocated to (0 otherwise).
    pub preallocated_len: u64,
}

/// Checks a segment header (the file's first bytes: 24 are enough for versions 1 and 2,
/// 32 are needed for 3 and 4); returns the fields it states.
pub fn check_segment_header(h: &[u8]) -> Result<SegmentHeader, DecodeError> {
    let bad = |at: usize, problem: String| DecodeError::Invalid {
        what: "segment header",
        at,
        problem,
    };
    let short = |need: usize| DecodeError::Truncated {
        what: "segment header",
        at: 0,
        need,
        left: h.len(),
    };
    if h.len() < LEGACY_SEGMENT_HEADER_LEN {
        return Err(short(LEGACY_SEGMENT_HEADER_LEN));
    }
    let mut d = Decoder::new(h);
    let magic = d.take(8, "segment magic")?;
    if magic != SEGMENT_MAGIC {
        return Err(bad(0, "is not a Permafrost command log segment's (bad magic)".into()));
    }
    let version = d.u32("segment format version")?;
    let Some(layout) = Layout::of(version) else {
        return Err(bad(
            8,
            format!(
                "states format version {version}; this build reads versions {OLDEST_FORMAT_VERSION} to \
                 {FORMAT_VERSION}"
            ),
        ));
    };
    let n = layout.segment_header_len;
    if h.len() < n {
        return Err(short(n));
    }
    let first = d.u64("first LSN")?;
    let preallocated_len = if layout.durable_lsns {
        d.u64("preallocated length")?
    } else {
        0
    };
    let stored = d.u32("segment header checksum")?;
    if crc32c::crc32c(&h[..n - 4]) != stored {
        return Err(bad(n - 4, "has a checksum mismatch".into()));
    }
    if first == 0 {
        return Err(bad(12, "states first LSN 0".into()));
    }
    if layout.version == APPENDED_VERSION && preallocated_len != 0 {
        return Err(bad(
            20,
            format!("states a preallocated length ({preallocated_len}) in an appended segment"),
        ));
    }
    Ok(SegmentHeader {
        first_lsn: first,
        layout,
        preallocated_len,
    })
}

/// The checksum of a record of versions 3 and 4: over its length field, LSN, durable
/// LSN and body.
pub fn record_crc(len: u32, lsn: u64, durable: u64, body: &[u8]) -> u32 {
    let c = crc32c::crc32c_append(record_crc_start(len, lsn), &durable.to_le_bytes());
    crc32c::crc32c_append(c, body)
}

/// The checksum of a record of versions 1 and 2: over its length field, LSN and body.
pub fn legacy_record_crc(len: u32, lsn: u64, body: &[u8]) -> u32 {
    crc32c::crc32c_append(record_crc_start(len, lsn), body)
}

/// The checksum over a record's length field and LSN (what every version's starts with).
pub fn record_crc_start(len: u32, lsn: u64) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&len.to_le_bytes()), &lsn.to_le_bytes())
}

/// Appends one framed record of versions 3 and 4 (length, checksum, LSN, durable LSN,
/// body) to `out`. The body must not be longer than [`MAX_BODY_LEN`]; `durable` is the
/// highest LSN synced before the write that carries the record starts (less than `lsn`).
pub fn frame_record(lsn: u64, durable: u64, body: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(body.len()).expect("record body longer than MAX_BODY_LEN");
    put_header(len, record_crc(len, lsn, durable, body), lsn, durable, out);
    out.extend_from_slice(body);
}

/// Appends a record header of versions 3 and 4 whose checksum `crc` was computed over its
/// body already (as [`record_crc`] computes it).
pub fn put_header(len: u32, crc: u32, lsn: u64, durable: u64, out: &mut Vec<u8>) {
    debug_assert!(
        durable < lsn,
        "record {lsn} cannot have been durable before it was written"
    );
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(&durable.to_le_bytes());
}

/// Appends one framed record of versions 1 and 2 (length, checksum, LSN, body), as earlier
/// builds wrote them (tests of reading old logs).
pub fn frame_legacy_record(lsn: u64, body: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(body.len()).expect("record body longer than MAX_BODY_LEN");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&legacy_record_crc(len, lsn, body).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(body);
}

/// A record header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub len: u32,
    pub crc: u32,
    pub lsn: u64,
    /// Versions 3 and 4; 0 in versions 1 and 2.
    pub durable: u64,
}

/// Parses a record header of `layout` from the first `layout.record_header_len` bytes of
/// `h` (None if `h` is shorter).
pub fn parse_record_header(layout: &Layout, h: &[u8]) -> Option<RecordHeader> {
    let h = h.get(..layout.record_header_len)?;
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
    Some(RecordHeader {
        len: u32::from_le_bytes(h[0..4].try_into().expect("4 bytes")),
        crc: u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")),
        lsn: u64_at(8),
        durable: if layout.durable_lsns { u64_at(16) } else { 0 },
    })
}

/// The segment files of `dir`, by first LSN (from their names), ascending. A missing
/// directory has none.
pub fn list_segments(fs: &dyn permafrost_io::Fs, dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let entries = match fs.list_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out: Vec<(u64, PathBuf)> = entries
        .into_iter()
        .filter_map(|p| Some((p.file_name()?.to_str().and_then(parse_segment_file_name)?, p)))
        .collect();
    out.sort_unstable();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reheader(mut h: Vec<u8>, version: u32) -> Vec<u8> {
        h[8..12].copy_from_slice(&version.to_le_bytes());
        let n = h.len();
        let crc = crc32c::crc32c(&h[..n - 4]);
        h[n - 4..].copy_from_slice(&crc.to_le_bytes());
        h
    }

    #[test]
    fn names_and_headers() {
        assert_eq!(segment_file_name(1), "00000000000000000001.log");
        assert_eq!(parse_segment_file_name("00000000000000000001.log"), Some(1));
        assert_eq!(parse_segment_file_name(&segment_file_name(u64::MAX)), Some(u64::MAX));
        assert_eq!(parse_segment_file_name("1.log"), None);
        assert_eq!(parse_segment_file_name("00000000000000000001.log.tmp"), None);
        assert_eq!(parse_segment_file_name("99999999999999999999.log"), None);
        let h = segment_header(7);
        assert_eq!(&h[..12], b"PFCMDLOG\x03\x00\x00\x00");
        let got = check_segment_header(&h).unwrap();
        assert_eq!((got.first_lsn, got.layout.version, got.preallocated_len), (7, 3, 0));
        assert!(!got.layout.preallocated && got.layout.durable_lsns);
        let got = check_segment_header(&preallocated_segment_header(7, 1 << 20)).unwrap();
        assert_eq!(
            (got.first_lsn, got.layout.version, got.preallocated_len),
            (7, 4, 1 << 20)
        );
        assert!(got.layout.preallocated);
        for v in [1, 2] {
            let got = check_segment_header(&legacy_segment_header(7, v)).unwrap();
            assert_eq!((got.layout.version, got.layout.record_header_len), (v, 16));
            assert_eq!(got.layout.preallocated, v == 2);
            assert!(!got.layout.durable_lsns);
        }
        // Versions 1 to 4 are read; 0 and 5 are not.
        for (version, ok) in [(0u32, false), (1, true), (2, true), (3, true), (4, true), (5, false)] {
            let long = reheader(h.to_vec(), version);
            let short = reheader(legacy_segment_header(7, 1).to_vec(), version);
            let v = if version <= 2 { short } else { long };
            assert_eq!(check_segment_header(&v).is_ok(), ok, "version {version}");
        }
        // An appended segment states no preallocated length.
        let mut odd = h.to_vec();
        odd[20] = 1;
        assert!(check_segment_header(&reheader(odd, 3)).is_err());
        for i in 0..SEGMENT_HEADER_LEN {
            let mut bad = h;
            bad[i] ^= 0x10;
            assert!(check_segment_header(&bad).is_err(), "byte {i}");
        }
        for n in 0..SEGMENT_HEADER_LEN {
            assert!(check_segment_header(&h[..n]).is_err(), "{n} bytes");
        }
        assert!(check_segment_header(&legacy_segment_header(7, 2)[..23]).is_err());
    }

    /// The test vectors of docs/format.md.
    #[test]
    fn documented_test_vectors() {
        let magic = [0x50, 0x46, 0x43, 0x4D, 0x44, 0x4C, 0x4F, 0x47];
        let mut v1 = magic.to_vec();
        v1.extend_from_slice(&[1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xCA, 0x83, 0xAF, 0xD0]);
        assert_eq!(legacy_segment_header(1, 1).to_vec(), v1);
        let mut v2 = magic.to_vec();
        v2.extend_from_slice(&[2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x9A, 0xFF, 0x3D, 0x83]);
        assert_eq!(legacy_segment_header(1, 2).to_vec(), v2);
        let mut v3 = magic.to_vec();
        v3.extend_from_slice(&[3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        v3.extend_from_slice(&[0x56, 0x1E, 0xE4, 0xF8]);
        assert_eq!(segment_header(1).to_vec(), v3);
        let mut v4 = magic.to_vec();
        v4.extend_from_slice(&[4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0]);
        v4.extend_from_slice(&[0x5B, 0xE8, 0x23, 0xBC]);
        assert_eq!(preallocated_segment_header(1, 1 << 20).to_vec(), v4);

        let rec = crate::TxnRecord {
            zone: None,
            draws: None,
            partitions: vec![0],
            now: 0,
            seed: 0,
            request: crate::Request::Schema { sql: String::new() },
        };
        let mut body = Vec::new();
        crate::encode_record(&rec, &mut body);
        let mut expect_body = vec![3u8];
        expect_body.extend_from_slice(&[0; 16]);
        expect_body.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(body, expect_body);
        // Version 1 and 2: record LSN 1.
        let mut out = Vec::new();
        frame_legacy_record(1, &body, &mut out);
        assert_eq!(
            &out[..16],
            &[0x1D, 0, 0, 0, 0x6E, 0x41, 0x06, 0xDA, 1, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(&out[16..], &body[..]);
        // Version 3 and 4: record LSN 2, written once LSN 1 was durable.
        let mut out = Vec::new();
        frame_record(2, 1, &body, &mut out);
        assert_eq!(
            &out[..24],
            &[
                0x1D, 0, 0, 0, 0x43, 0x26, 0x0B, 0x21, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0
            ]
        );
        assert_eq!(&out[24..], &body[..]);
    }

    #[test]
    fn record_framing() {
        let layout = Layout::of(PREALLOCATED_VERSION).unwrap();
        let mut out = Vec::new();
        frame_record(9, 4, b"abc", &mut out);
        assert_eq!(out.len(), RECORD_HEADER_LEN + 3);
        let h = parse_record_header(&layout, &out).unwrap();
        assert_eq!((h.len, h.lsn, h.durable), (3, 9, 4));
        let mut covered = out[0..4].to_vec();
        covered.extend_from_slice(&out[8..]);
        assert_eq!(h.crc, crc32c::crc32c(&covered));
        assert!(parse_record_header(&layout, &out[..23]).is_none());

        let legacy = Layout::of(LEGACY_APPENDED_VERSION).unwrap();
        let mut out = Vec::new();
        frame_legacy_record(9, b"abc", &mut out);
        assert_eq!(out.len(), LEGACY_RECORD_HEADER_LEN + 3);
        let h = parse_record_header(&legacy, &out).unwrap();
        assert_eq!((h.len, h.lsn, h.durable), (3, 9, 0));
        assert_eq!(h.crc, legacy_record_crc(3, 9, b"abc"));
    }
}
