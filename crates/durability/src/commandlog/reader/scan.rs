//! Looking past damage: what the bytes after a damaged record hold.
//!
//! When a record fails its checksum or is cut short, the reader has to decide between a
//! torn tail (the one write that was not yet synced, never acknowledged: dropped) and
//! damage to records that were durable (refused: dropping them would lose acknowledged
//! transactions). The evidence is in the valid records that follow: this module finds them
//! at any byte offset (the damage may have destroyed the length that says where the next
//! record starts), checking each candidate's checksum, and gathers what they state. It
//! also measures zeros, which end a preallocated segment's records.

use std::io;

use permafrost_io::FsRead;

use super::super::format::{Layout, MAX_BODY_LEN, RecordHeader, parse_record_header, record_crc_start};

/// Bodies are checksummed this many bytes at a time when they are not held in memory.
pub(super) const SCAN_CHUNK: usize = 1 << 20;

/// The valid records found after a damaged one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct After {
    /// The first one: (offset, LSN).
    pub first: Option<(u64, u64)>,
    /// The highest LSN among them.
    pub last_lsn: Option<u64>,
    pub count: u64,
    /// The first one that states a durable LSN at or above the damaged record's expected
    /// LSN (versions 3 and 4): (offset, LSN, durable LSN). It proves the damaged record was
    /// synced before it was written.
    pub vouching: Option<(u64, u64, u64)>,
}

/// Whether the body at `at` of the record with header `h` has the checksum `h` states,
/// read `SCAN_CHUNK` bytes at a time.
pub(super) fn crc_matches_at(file: &dyn FsRead, layout: &Layout, at: u64, h: &RecordHeader) -> io::Result<bool> {
    let mut c = record_crc_start(h.len, h.lsn);
    if layout.durable_lsns {
        c = crc32c::crc32c_append(c, &h.durable.to_le_bytes());
    }
    let mut buf = vec![0u8; (h.len as usize).min(SCAN_CHUNK)];
    let mut done = 0u64;
    while done < h.len as u64 {
        let n = (h.len as u64 - done).min(SCAN_CHUNK as u64) as usize;
        file.read_exact_at(&mut buf[..n], at + done)?;
        c = crc32c::crc32c_append(c, &buf[..n]);
        done += n as u64;
    }
    Ok(c == h.crc)
}

/// The valid records (checksum correct, LSN at least `expected`, and in versions 3 and 4
/// a durable LSN below their own) starting anywhere in `(from, len)`; `bad` is where the
/// damaged record starts (at most `from`). A valid record's own bytes are not searched
/// for further ones.
pub(super) fn valid_records_after(
    file: &dyn FsRead,
    layout: &Layout,
    bad: u64,
    from: u64,
    len: u64,
    expected: u64,
) -> io::Result<After> {
    let mut after = After::default();
    let rh = layout.record_header_len;
    if from >= len {
        return Ok(after);
    }
    // Records after the bad one have LSNs from `expected` to at most one per header's
    // worth of the bytes left.
    let max_lsn = expected.saturating_add((len - bad) / rh as u64 + 1);
    let mut buf = vec![0u8; SCAN_CHUNK + rh];
    let mut start = from + 1;
    let mut skip_until = start;
    while start + rh as u64 <= len {
        let n = ((len - start) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..n], start)?;
        let candidates = n + 1 - rh;
        for i in 0..candidates {
            let p = start + i as u64;
            if p < skip_until {
                continue;
            }
            let Some(h) = parse_record_header(layout, &buf[i..]) else {
                break;
            };
            if h.lsn < expected
                || h.lsn > max_lsn
                || (layout.durable_lsns && h.durable >= h.lsn)
                || h.len as usize > MAX_BODY_LEN
                || p + rh as u64 + h.len as u64 > len
            {
                continue;
            }
            if !crc_matches_at(file, layout, p + rh as u64, &h)? {
                continue;
            }
            after.first.get_or_insert((p, h.lsn));
            after.last_lsn = Some(after.last_lsn.map_or(h.lsn, |l| l.max(h.lsn)));
            after.count += 1;
            if layout.durable_lsns && h.durable >= expected && after.vouching.is_none() {
                after.vouching = Some((p, h.lsn, h.durable));
            }
            skip_until = p + rh as u64 + h.len as u64;
        }
        start = (start + candidates as u64).max(skip_until);
    }
    Ok(after)
}

/// Whether every byte of the file from `from` to `len` is zero.
pub(super) fn zeros_to_end(file: &dyn FsRead, from: u64, len: u64) -> io::Result<bool> {
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

/// Where the file's last nonzero byte in `[from, len)` ends (`from` if there is none):
/// how far the bytes a torn tail or a trim drops reach in a preallocated segment.
pub(crate) fn nonzero_end(file: &dyn FsRead, from: u64, len: u64) -> io::Result<u64> {
    let mut buf = vec![0u8; SCAN_CHUNK.min(len.saturating_sub(from) as usize)];
    let mut end = len;
    while end > from {
        let n = ((end - from) as usize).min(buf.len());
        let at = end - n as u64;
        file.read_exact_at(&mut buf[..n], at)?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b != 0) {
            return Ok(at + i as u64 + 1);
        }
        end = at;
    }
    Ok(from)
}
