//! Trimming a damaged log, at the operator's explicit request.
//!
//! A log whose damage a crash does not explain (reader.rs) is refused: starting would
//! replay it only up to the damage and silently lose the acknowledged transactions after
//! it. Sometimes the operator has no better copy and wants the database back with what is
//! readable; [`trim_damaged_log`] (the server's `recovery_trim_damaged_log`) does that and
//! says exactly what it cost: the file and offset of the damage, the first and last LSN
//! dropped and how many records that is. It never destroys evidence: the damaged segment is
//! copied, and the later segments are moved, into a directory `trimmed-<LSN>-<seconds>` of
//! the log directory (not part of the log), before the damaged segment is cut at the
//! damage. The log then ends there, and LSNs continue from the first one dropped.

use std::path::{Path, PathBuf};

use permafrost_io::Fs;

use super::error::{LogError, Result};
use super::format::list_segments;
use super::reader::{Raw, SegmentCursor, nonzero_end};
use super::writer::zero_range;

/// What [`trim_damaged_log`] dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trimmed {
    /// The segment the damage is in.
    pub file: PathBuf,
    /// Where in it the damage starts (the log now ends there).
    pub offset: u64,
    /// Bytes dropped from that file (0 when the damage is a file cut short: what was cut
    /// is gone already).
    pub bytes: u64,
    /// The first LSN dropped: the damaged record's.
    pub first_lsn: u64,
    /// The highest LSN of a valid record found after the damage (in its segment and the
    /// later ones), all dropped with it; None if none was found (how many records the
    /// damage destroyed is then unknown).
    pub last_lsn: Option<u64>,
    /// Records dropped, `last_lsn - first_lsn + 1`, when `last_lsn` is known.
    pub records: Option<u64>,
    /// Later segments moved out of the log (into `kept_in`).
    pub removed_segments: Vec<PathBuf>,
    /// The directory holding a copy of the damaged segment and the removed segments.
    pub kept_in: PathBuf,
    /// Why the log was refused (the reader's error).
    pub reason: String,
}

/// The first damage a reader refuses, found.
struct Found {
    segment: usize,
    offset: u64,
    first_lsn: u64,
    last_lsn: Option<u64>,
    reason: String,
}

/// Finds the first damage in the log in `dir` that recovery would refuse (a torn tail is
/// not: the writer drops it when it opens the log) and trims the log there: see the module
/// documentation. Returns None, touching nothing, if there is no such damage. A log that
/// cannot be trimmed into shape (a body that does not decode though its checksum holds, a
/// first segment that starts after what a snapshot covers) is left to recovery, which
/// refuses it.
pub fn trim_damaged_log(dir: &Path, fs: &dyn Fs) -> Result<Option<Trimmed>> {
    let segments = list_segments(fs, dir).map_err(|e| LogError::io(format!("cannot list {}", dir.display()), e))?;
    let mut expected = 0u64;
    for (i, (name_lsn, path)) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        let found = |offset, first_lsn, last_lsn, reason: &LogError| Found {
            segment: i,
            offset,
            first_lsn,
            last_lsn,
            reason: reason.to_string(),
        };
        let lsn_here = if expected == 0 { *name_lsn } else { expected };
        let mut c = match SegmentCursor::open(fs, path, *name_lsn, last) {
            Ok(c) => c,
            Err(e @ LogError::Corrupt { .. }) => return trim_at(dir, fs, &segments, found(0, lsn_here, None, &e)),
            Err(e) => return Err(e),
        };
        if expected != 0 && c.first_lsn != expected {
            let e = LogError::corrupt(
                path,
                0,
                format!(
                    "segment starts at LSN {}, but the previous one ended before LSN {expected} (a gap: a segment \
                     is missing)",
                    c.first_lsn
                ),
            );
            return trim_at(dir, fs, &segments, found(0, expected, None, &e));
        }
        loop {
            match c.next_raw() {
                Ok(Raw::Record { .. }) => {}
                Ok(Raw::End | Raw::Torn(_)) => break,
                Err(e @ LogError::Corrupt { .. }) => {
                    let (offset, first, last_lsn) = match &c.damage {
                        Some(d) => (d.offset, d.first_lsn, d.last_lsn),
                        None => (c.offset, c.expected, None),
                    };
                    return trim_at(dir, fs, &segments, found(offset, first, last_lsn, &e));
                }
                Err(e) => return Err(e),
            }
        }
        expected = c.expected;
    }
    Ok(None)
}

/// The highest LSN of the valid records of a segment (read until its end or damage).
fn last_lsn_in(fs: &dyn Fs, path: &Path, name_lsn: u64) -> Option<u64> {
    let mut c = SegmentCursor::open(fs, path, name_lsn, false).ok()?;
    while let Ok(Raw::Record { .. }) = c.next_raw() {}
    (c.expected > c.first_lsn).then(|| c.expected - 1)
}

fn trim_at(dir: &Path, fs: &dyn Fs, segments: &[(u64, PathBuf)], f: Found) -> Result<Option<Trimmed>> {
    let io = |what: String| move |e| LogError::io(what, e);
    let (_, path) = &segments[f.segment];
    let later = &segments[f.segment + 1..];
    let mut last_lsn = f.last_lsn;
    for (name_lsn, p) in later {
        if let Some(l) = last_lsn_in(fs, p, *name_lsn) {
            last_lsn = Some(last_lsn.map_or(l, |m| m.max(l)));
        }
    }
    let last_lsn = last_lsn.filter(|&l| l >= f.first_lsn);
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let kept_in = dir.join(format!("trimmed-{}-{secs}", f.first_lsn));
    fs.create_dir(&kept_in)
        .map_err(io(format!("cannot create {}", kept_in.display())))?;
    let name = |p: &Path| kept_in.join(p.file_name().unwrap_or_default());
    let mut removed = Vec::new();
    let bytes;
    if f.offset == 0 {
        // The segment's header is bad, or it comes after a gap: all of it goes.
        bytes = fs.file_len(path).unwrap_or(0);
        fs.rename(path, &name(path))
            .map_err(io(format!("cannot move {} aside", path.display())))?;
        removed.push(path.clone());
    } else {
        permafrost_io::copy_file(fs, path, &name(path)).map_err(io(format!("cannot copy {} aside", path.display())))?;
        let c = SegmentCursor::open(fs, path, segments[f.segment].0, true)?;
        let (preallocated, len) = (c.layout.preallocated && c.layout.durable_lsns, c.len);
        let end = if preallocated {
            let r = fs
                .open_read(path)
                .and_then(|r| nonzero_end(&*r, f.offset.min(len), len));
            r.map_err(io(format!("cannot read {}", path.display())))?
        } else {
            len
        };
        bytes = end.saturating_sub(f.offset);
        let mut file = fs.open(path).map_err(io(format!("cannot open {}", path.display())))?;
        let cut = if preallocated {
            // Keep the length the header states (a file cut short gets it back).
            let extend = if c.preallocated_len > len {
                file.set_len(c.preallocated_len)
            } else {
                Ok(())
            };
            extend.and_then(|()| zero_range(&mut *file, f.offset, end))
        } else {
            file.set_len(f.offset)
        };
        cut.and_then(|()| file.sync_data())
            .map_err(io(format!("cannot trim {}", path.display())))?;
    }
    for (_, p) in later {
        fs.rename(p, &name(p))
            .map_err(io(format!("cannot move {} aside", p.display())))?;
        removed.push(p.clone());
    }
    fs.sync_dir(dir)
        .map_err(io(format!("cannot sync directory {}", dir.display())))?;
    let t = Trimmed {
        file: path.clone(),
        offset: f.offset,
        bytes,
        first_lsn: f.first_lsn,
        last_lsn,
        records: last_lsn.map(|l| l - f.first_lsn + 1),
        removed_segments: removed,
        kept_in,
        reason: f.reason,
    };
    eprintln!("permafrost: command log: {}", t.describe());
    Ok(Some(t))
}

impl Trimmed {
    /// What was dropped, in one sentence.
    pub fn describe(&self) -> String {
        let lost = match (self.last_lsn, self.records) {
            (Some(last), Some(n)) => format!("LSN {} to {last} ({n} records)", self.first_lsn),
            _ => format!(
                "the records from LSN {} on (how many is unknown: no valid record was found after the damage)",
                self.first_lsn
            ),
        };
        let removed = match self.removed_segments.len() {
            0 => String::new(),
            n => format!(" and {n} segment file(s) from there on"),
        };
        format!(
            "trimmed the damaged log at the operator's request (recovery_trim_damaged_log): dropped {lost}, cutting \
             {} at offset {} ({} bytes){removed}; the dropped files and bytes are kept in {}; the damage: {}",
            self.file.display(),
            self.offset,
            self.bytes,
            self.kept_in.display(),
            self.reason
        )
    }
}
