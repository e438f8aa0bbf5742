//! The schema kept with the data: every schema change that took effect (CREATE/DROP
//! TABLE/INDEX, CREATE/DROP PROCEDURE), in order, in `DATA_DIR/schema.log`. The database
//! appends to it when a schema change takes effect (`Database::push_history`, where the
//! executor records every schema change besides the command log's own order), and
//! datadir.rs replays it at open when the command log holds no schema (a database that ran
//! without a command log). The format is in docs/format.md ("Schema log").

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use permafrost_durability::codec::DecodeError;

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
    file: Mutex<File>,
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

impl SchemaLog {
    /// Opens (or creates) the log in `dir`; returns it with the statements to replay.
    pub fn open(dir: &Path) -> Result<(SchemaLog, Vec<String>)> {
        let path = dir.join(FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path, "cannot open"))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io(&path, "cannot read"))?;
        let statements = if bytes.is_empty() {
            let mut h = Vec::with_capacity(HEADER);
            h.extend_from_slice(MAGIC);
            h.extend_from_slice(&VERSION.to_le_bytes());
            file.write_all(&h).map_err(io(&path, "cannot write"))?;
            file.sync_data().map_err(io(&path, "cannot sync"))?;
            Vec::new()
        } else {
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
            let (stmts, valid) = decode(&bytes[HEADER..]).map_err(|e| corrupt(&path, e.to_string()))?;
            if HEADER + valid < bytes.len() {
                eprintln!(
                    "warning: {}: dropping {} bytes of a schema change that was being written when the server stopped",
                    path.display(),
                    bytes.len() - HEADER - valid
                );
                file.set_len((HEADER + valid) as u64)
                    .map_err(io(&path, "cannot truncate"))?;
            }
            stmts
        };
        file.seek(SeekFrom::End(0)).map_err(io(&path, "cannot seek"))?;
        Ok((
            SchemaLog {
                path,
                file: Mutex::new(file),
            },
            statements,
        ))
    }

    /// Appends a statement that took effect and makes it durable.
    pub fn append(&self, sql: &str) -> Result<()> {
        let rec = record(sql);
        let mut f = self
            .file
            .lock()
            .map_err(|_| corrupt(&self.path, "schema log lock poisoned".into()))?;
        f.write_all(&rec).map_err(io(&self.path, "cannot write"))?;
        f.sync_data().map_err(io(&self.path, "cannot sync"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_come_back_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (log, s) = SchemaLog::open(dir.path()).unwrap();
            assert!(s.is_empty());
            log.append("CREATE TABLE a (x INT)").unwrap();
            log.append("CREATE PROCEDURE p() AS $$ SELECT 1 $$").unwrap();
        }
        let path = dir.path().join("schema.log");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&record("DROP TABLE a")[..10]);
        std::fs::write(&path, &bytes).unwrap();
        let (log, s) = SchemaLog::open(dir.path()).unwrap();
        assert_eq!(
            s,
            vec!["CREATE TABLE a (x INT)", "CREATE PROCEDURE p() AS $$ SELECT 1 $$"]
        );
        log.append("DROP TABLE a").unwrap();
        drop(log);
        let (_, s) = SchemaLog::open(dir.path()).unwrap();
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
