//! Segment files and record framing (docs/format.md, "Command log, version 2").
//!
//! A log is a directory of segment files `<first LSN as 20 digits>.log`:
//!
//! ```text
//! segment header, 24 bytes
//!  0  8  magic "PFCMDLOG"
//!  8  4  format version: 1 appended segment, 2 preallocated segment
//! 12  8  LSN of the segment's first record (the same number as the file name)
//! 20  4  CRC-32C of bytes [0, 20)
//! then records, back to back:
//!  0  4  body length L
//!  4  4  CRC-32C of the length field, the LSN and the body (bytes [0, 4) and [8, 16 + L))
//!  8  8  LSN
//! 16  L  body (record.rs)
//! ```
//!
//! A version 2 segment is *preallocated*: written full of zeros before its first record,
//! so that the writer overwrites blocks the file system has already allocated instead of
//! growing the file (an `fdatasync` then has no metadata to commit). Its records end where a
//! record header of 16 zero bytes starts and every byte after it to the end of the file is
//! zero (no record has LSN 0). Where a segment is overwritten rather than appended, a crash
//! can keep any pages of the one write that was not yet synced, not only a prefix of it;
//! the writer therefore starts no record of a write [`MAX_UNSYNCED_SPAN`] or more bytes
//! after the write's start (it syncs larger batches in pieces), and the reader tolerates
//! valid records that close behind a damaged one (see reader.rs).
//!
//! All integers are little-endian.

use std::io;
use std::path::{Path, PathBuf};

use crate::codec::{DecodeError, Decoder};

pub const SEGMENT_MAGIC: [u8; 8] = *b"PFCMDLOG";
/// The newest segment format this build writes and reads.
pub const FORMAT_VERSION: u32 = PREALLOCATED_VERSION;
/// The oldest segment format this build reads.
pub const OLDEST_FORMAT_VERSION: u32 = APPENDED_VERSION;
/// A segment that is appended to: a crash keeps a prefix of what was not yet synced.
pub const APPENDED_VERSION: u32 = 1;
/// A preallocated segment, written over: see the module documentation.
pub const PREALLOCATED_VERSION: u32 = 2;
/// In a version 2 segment, every record of one unsynced write but its first starts less
/// than this many bytes after the write's first byte: records found this close after a
/// damaged record may be pages of that write that reached the disk before a crash.
pub const MAX_UNSYNCED_SPAN: u64 = 4 << 20;
pub const SEGMENT_HEADER_LEN: usize = 24;
pub const RECORD_HEADER_LEN: usize = 16;
/// Longest record body a segment can hold (the length field is 32 bits).
pub const MAX_BODY_LEN: usize = u32::MAX as usize;

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

/// The header of a segment that is appended to (version 1).
pub fn segment_header(first_lsn: u64) -> [u8; SEGMENT_HEADER_LEN] {
    header(first_lsn, APPENDED_VERSION)
}

/// The header of a preallocated segment (version 2).
pub fn preallocated_segment_header(first_lsn: u64) -> [u8; SEGMENT_HEADER_LEN] {
    header(first_lsn, PREALLOCATED_VERSION)
}

fn header(first_lsn: u64, version: u32) -> [u8; SEGMENT_HEADER_LEN] {
    let mut h = [0u8; SEGMENT_HEADER_LEN];
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
    pub version: u32,
}

/// Checks a segment header; returns the first LSN and version it states.
pub fn check_segment_header(h: &[u8]) -> Result<SegmentHeader, DecodeError> {
    let bad = |at: usize, problem: String| DecodeError::Invalid {
        what: "segment header",
        at,
        problem,
    };
    if h.len() < SEGMENT_HEADER_LEN {
        return Err(DecodeError::Truncated {
            what: "segment header",
            at: 0,
            need: SEGMENT_HEADER_LEN,
            left: h.len(),
        });
    }
    let mut d = Decoder::new(h);
    let magic = d.take(8, "segment magic")?;
    if magic != SEGMENT_MAGIC {
        return Err(bad(0, "is not a Permafrost command log segment's (bad magic)".into()));
    }
    let version = d.u32("segment format version")?;
    if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(bad(
            8,
            format!(
                "states format version {version}; this build reads versions {OLDEST_FORMAT_VERSION} to \
                 {FORMAT_VERSION}"
            ),
        ));
    }
    let first = d.u64("first LSN")?;
    let stored = d.u32("segment header checksum")?;
    if crc32c::crc32c(&h[..20]) != stored {
        return Err(bad(20, "has a checksum mismatch".into()));
    }
    if first == 0 {
        return Err(bad(12, "states first LSN 0".into()));
    }
    Ok(SegmentHeader {
        first_lsn: first,
        version,
    })
}

/// The checksum of a record: over its length field, LSN and body.
pub fn record_crc(len: u32, lsn: u64, body: &[u8]) -> u32 {
    let c = crc32c::crc32c(&len.to_le_bytes());
    let c = crc32c::crc32c_append(c, &lsn.to_le_bytes());
    crc32c::crc32c_append(c, body)
}

/// Appends one framed record (length, checksum, LSN, body) to `out`. The body must not be
/// longer than [`MAX_BODY_LEN`].
pub fn frame_record(lsn: u64, body: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(body.len()).expect("record body longer than MAX_BODY_LEN");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&record_crc(len, lsn, body).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(body);
}

/// A record header's fields: (body length, stored checksum, LSN).
pub fn parse_record_header(h: &[u8; RECORD_HEADER_LEN]) -> (u32, u32, u64) {
    let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    let lsn = u64::from_le_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    (len, crc, lsn)
}

/// The segment files of `dir`, by first LSN (from their names), ascending. A missing
/// directory has none.
pub fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        if let Some(lsn) = name.to_str().and_then(parse_segment_file_name) {
            out.push((lsn, entry.path()));
        }
    }
    out.sort_unstable();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_header() {
        assert_eq!(segment_file_name(1), "00000000000000000001.log");
        assert_eq!(parse_segment_file_name("00000000000000000001.log"), Some(1));
        assert_eq!(parse_segment_file_name(&segment_file_name(u64::MAX)), Some(u64::MAX));
        assert_eq!(parse_segment_file_name("1.log"), None);
        assert_eq!(parse_segment_file_name("00000000000000000001.log.tmp"), None);
        assert_eq!(parse_segment_file_name("99999999999999999999.log"), None);
        let h = segment_header(7);
        assert_eq!(&h[..12], b"PFCMDLOG\x01\x00\x00\x00");
        assert_eq!(
            check_segment_header(&h),
            Ok(SegmentHeader {
                first_lsn: 7,
                version: 1
            })
        );
        assert_eq!(
            check_segment_header(&preallocated_segment_header(7)),
            Ok(SegmentHeader {
                first_lsn: 7,
                version: 2
            })
        );
        // Versions 1 and 2 are read; 0 and 3 are not.
        for (version, ok) in [(0u32, false), (1, true), (3, false)] {
            let mut v = h;
            v[8..12].copy_from_slice(&version.to_le_bytes());
            let crc = crc32c::crc32c(&v[..20]);
            v[20..24].copy_from_slice(&crc.to_le_bytes());
            assert_eq!(check_segment_header(&v).is_ok(), ok, "version {version}");
        }
        for i in 0..SEGMENT_HEADER_LEN {
            let mut bad = h;
            bad[i] ^= 0x10;
            assert!(check_segment_header(&bad).is_err(), "byte {i}");
        }
        assert!(check_segment_header(&h[..23]).is_err());
    }

    /// The test vectors of docs/format.md.
    #[test]
    fn documented_test_vectors() {
        assert_eq!(
            segment_header(1),
            [
                0x50, 0x46, 0x43, 0x4D, 0x44, 0x4C, 0x4F, 0x47, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xCA, 0x83, 0xAF,
                0xD0
            ]
        );
        let rec = crate::TxnRecord {
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
        let mut out = Vec::new();
        frame_record(1, &body, &mut out);
        assert_eq!(
            &out[..16],
            &[0x1D, 0, 0, 0, 0x6E, 0x41, 0x06, 0xDA, 1, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(&out[16..], &body[..]);
    }

    #[test]
    fn record_framing() {
        let mut out = Vec::new();
        frame_record(9, b"abc", &mut out);
        assert_eq!(out.len(), RECORD_HEADER_LEN + 3);
        let (len, crc, lsn) = parse_record_header(out[..16].try_into().unwrap());
        assert_eq!((len, lsn), (3, 9));
        let mut covered = out[0..4].to_vec();
        covered.extend_from_slice(&out[8..]);
        assert_eq!(crc, crc32c::crc32c(&covered));
    }
}
