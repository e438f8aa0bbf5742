//! The schema kept with the data: every schema change that took effect (CREATE/DROP
//! TABLE/INDEX, CREATE/DROP PROCEDURE), in order, in `DATA_DIR/schema.log`. The database
//! appends to it when a schema change takes effect (`Database::push_history`, where the
//! executor records every schema change besides the command log's own order), and
//! datadir.rs replays it at open when the command log holds no schema (a database that ran
//! without a command log). The format is in docs/format.md ("Schema log").
//!
//! The file goes through the database's file system (`permafrost_io::Fs`), so that tests
//! can tear or corrupt its writes. Records are written at the end of the valid records the
//! log knows: after a failed append (a torn write, a full disk) the next one is written
//! over the failed one's bytes, which are cut off first, so that a failed append never
//! leaves a damaged record before a later good one.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use permafrost_durability::codec::DecodeError;
use permafrost_io::{Fs, FsFile};

use crate::error::{Error, Result};

/// The schema log's file name in the data directory.
pub const FILE: &str = "schema.log";
const MAGIC: &[u8; 8] = b"PFSCHEMA";
const VERSION: u32 = 1;
const HEADER: usize = 12;
/// Longest statement a record may hold.
const MAX_RECORD: u32 = 16 << 20;

/// An open schema log.
pub struct SchemaLog {
    path: PathBuf,
    file: Mutex<Appender>,
    /// The torn last record cut off at open, described.
    dropped: Option<String>,
}

/// The file and where its valid records end.
struct Appender {
    file: Box<dyn FsFile>,
    end: u64,
    /// A failed append may have left bytes after `end`.
    dirty: bool,
}

fn header() -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..].copy_from_slice(&VERSION.to_le_bytes());
    h
}

fn io(path: &Path, what: &str) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.display().to_string();
    let what = what.to_string();
    move |source| Error::Log {
        message: format!("schema log: {what} {path}: {source}"),
        sqlstate: "58030",
    }
}

fn corrupt(path: &Path, m: String) -> Error {
    Error::Recovery(format!("schema log {}: {m}", path.display()))
}

/// Encodes one record.
pub fn record(sql: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(sql.len() + 8);
    out.extend_from_slice(&(sql.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(sql.as_bytes()).to_le_bytes());
    out.extend_from_slice(sql.as_bytes());
    out
}

/// Decodes the records of a log's bytes (after the header). Returns the statements and the
/// length of the valid prefix; a torn last record (cut short by a crash) ends the log, a
/// bad record before the end is an error.
pub fn decode(mut bytes: &[u8]) -> std::result::Result<(Vec<String>, usize), DecodeError> {
    let mut out = Vec::new();
    let mut valid = 0;
    while !bytes.is_empty() {
        if bytes.len() < 8 {
            break;
        }
        let len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
        if len > MAX_RECORD {
            return Err(DecodeError::Invalid {
                what: "record length",
                at: valid,
                problem: format!("is {len}, more than the {MAX_RECORD} bytes a record may hold"),
            });
        }
        let len = len as usize;
        if bytes.len() < 8 + len {
            break;
        }
        let body = &bytes[8..8 + len];
        if crc32c::crc32c(body) != crc {
            if bytes.len() == 8 + len {
                // The last record, written partly: a crash during the append.
                break;
            }
            return Err(DecodeError::Invalid {
                what: "record",
                at: valid,
                problem: "fails its checksum".into(),
            });
        }
        let text = std::str::from_utf8(body).map_err(|_| DecodeError::NotUtf8 {
            what: "record",
            at: valid,
        })?;
        out.push(text.to_string());
        valid += 8 + len;
        bytes = &bytes[8 + len..];
    }
    Ok((out, valid))
}

/// Reads the whole file at `path`; `None` if there is none.
fn read_all(fs: &dyn Fs, path: &Path) -> Result<Option<Vec<u8>>> {
    let file = match fs.open_read(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(path, "cannot open")(e)),
    };
    let len = file.len().map_err(io(path, "cannot read"))?;
    let len = usize::try_from(len).map_err(|_| corrupt(path, format!("{len} bytes is too long")))?;
    let mut bytes = vec![0u8; len];
    file.read_exact_at(&mut bytes, 0).map_err(io(path, "cannot read"))?;
    Ok(Some(bytes))
}

impl SchemaLog {
    /// Opens (or creates) the log in `dir` through `fs`; returns it with the statements to
    /// replay.
    pub fn open(fs: &dyn Fs, dir: &Path) -> Result<(SchemaLog, Vec<String>)> {
        let path = dir.join(FILE);
        let existing = read_all(fs, &path)?;
        let fresh = match &existing {
            None => true,
            // A crash while the header of a new log was written: no record was appended
            // (records follow a synced header), so the log starts again.
            Some(b) => b.len() < HEADER && header().starts_with(b),
        };
        if fresh {
            let mut file = match existing {
                None => fs.create(&path).map_err(io(&path, "cannot create"))?,
                Some(_) => fs.open(&path).map_err(io(&path, "cannot open"))?,
            };
            file.write_all_at(&header(), 0).map_err(io(&path, "cannot write"))?;
            file.sync_data().map_err(io(&path, "cannot sync"))?;
            // The file's name must survive a crash too, or so would not the records synced
            // into it.
            fs.sync_dir(dir).map_err(io(dir, "cannot sync the directory"))?;
            let file = Mutex::new(Appender {
                file,
                end: HEADER as u64,
                dirty: false,
            });
            let log = SchemaLog {
                path,
                file,
                dropped: None,
            };
            return Ok((log, Vec::new()));
        }
        let bytes = existing.unwrap_or_default();
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(corrupt(&path, "not a Permafrost schema log".into()));
        }
        let v = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if v != VERSION {
            return Err(corrupt(
                &path,
                format!("schema log version {v}; this build reads {VERSION}"),
            ));
        }
        let (statements, valid) =
            decode(&bytes[HEADER..]).map_err(|e| corrupt(&path, at_file_offset(e).to_string()))?;
        let end = (HEADER + valid) as u64;
        let mut file = fs.open(&path).map_err(io(&path, "cannot open"))?;
        let mut dropped = None;
        if end < bytes.len() as u64 {
            let what = format!(
                "schema log {}: dropped {} bytes at byte {end}, the last record, cut short or failing its checksum \
                 (a schema change that was being written when the server stopped)",
                path.display(),
                bytes.len() as u64 - end
            );
            eprintln!("warning: {what}");
            dropped = Some(what);
            file.set_len(end)
                .and_then(|()| file.sync_data())
                .map_err(io(&path, "cannot truncate"))?;
        }
        let file = Mutex::new(Appender {
            file,
            end,
            dirty: false,
        });
        Ok((SchemaLog { path, file, dropped }, statements))
    }

    /// The torn last record cut off when the log was opened, described (for the recovery
    /// report).
    pub fn dropped_tail(&self) -> Option<&str> {
        self.dropped.as_deref()
    }

    /// Appends a statement that took effect and makes it durable. If it fails, the record
    /// does not count (the next append is written over it).
    pub fn append(&self, sql: &str) -> Result<()> {
        let rec = record(sql);
        let mut guard = self
            .file
            .lock()
            .map_err(|_| corrupt(&self.path, "schema log lock poisoned".into()))?;
        let a = &mut *guard;
        if a.dirty {
            a.file.set_len(a.end).map_err(io(&self.path, "cannot truncate"))?;
            a.dirty = false;
        }
        let written = a
            .file
            .write_all_at(&rec, a.end)
            .map_err(io(&self.path, "cannot write"))
            .and_then(|()| a.file.sync_data().map_err(io(&self.path, "cannot sync")));
        match written {
            Ok(()) => a.end += rec.len() as u64,
            Err(_) => a.dirty = true,
        }
        written
    }
}

/// A decoding error with its offset counted from the start of the file, not of the records.
fn at_file_offset(e: DecodeError) -> DecodeError {
    match e {
        DecodeError::Invalid { what, at, problem } => DecodeError::Invalid {
            what,
            at: at + HEADER,
            problem,
        },
        DecodeError::NotUtf8 { what, at } => DecodeError::NotUtf8 { what, at: at + HEADER },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_come_back_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (log, s) = SchemaLog::open(&permafrost_io::RealFs, dir.path()).unwrap();
            assert!(s.is_empty());
            log.append("CREATE TABLE a (x INT)").unwrap();
            log.append("CREATE PROCEDURE p() AS $$ SELECT 1 $$").unwrap();
        }
        let path = dir.path().join("schema.log");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&record("DROP TABLE a")[..10]);
        std::fs::write(&path, &bytes).unwrap();
        let (log, s) = SchemaLog::open(&permafrost_io::RealFs, dir.path()).unwrap();
        assert_eq!(
            s,
            vec!["CREATE TABLE a (x INT)", "CREATE PROCEDURE p() AS $$ SELECT 1 $$"]
        );
        log.append("DROP TABLE a").unwrap();
        drop(log);
        let (_, s) = SchemaLog::open(&permafrost_io::RealFs, dir.path()).unwrap();
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn corruption_in_the_middle_is_an_error_and_bad_bytes_never_panic() {
        let mut bytes = record("CREATE TABLE a (x INT)");
        bytes.extend(record("CREATE TABLE b (x INT)"));
        bytes[10] ^= 1;
        assert!(matches!(
            decode(&bytes),
            Err(DecodeError::Invalid {
                what: "record",
                at: 0,
                ..
            })
        ));
        for n in 0..bytes.len() {
            let _ = decode(&bytes[..n]);
        }
        assert!(matches!(
            decode(&[0xff; 12]),
            Err(DecodeError::Invalid {
                what: "record length",
                ..
            })
        ));
    }
}
