//! The command log's error type.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum LogError {
    /// Reading or writing the log failed (a full disk is `ENOSPC` here, SQLSTATE 53100).
    #[error("command log I/O error ({context}): {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// Bytes read back from the log failed verification.
    #[error("command log is corrupt: {}, offset {offset}: {detail}", file.display())]
    Corrupt { file: PathBuf, offset: u64, detail: String },
    /// A snapshot file failed verification (torn, partial, corrupt, another version).
    #[error("snapshot {} is unusable at offset {offset}: {detail}", file.display())]
    SnapshotCorrupt { file: PathBuf, offset: u64, detail: String },
    /// The log cannot take records (its writer stopped, or a record is too large).
    #[error("command log failed: {0}")]
    Failed(String),
    /// A setting is out of range; the message names it.
    #[error("{0}")]
    Config(String),
}

pub type Result<T, E = LogError> = std::result::Result<T, E>;

impl LogError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> LogError {
        LogError::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn corrupt(file: impl Into<PathBuf>, offset: u64, detail: impl Into<String>) -> LogError {
        LogError::Corrupt {
            file: file.into(),
            offset,
            detail: detail.into(),
        }
    }

    /// The PostgreSQL error code: 58030 (io_error) for I/O and a failed log, 53100
    /// (disk_full) when the device is full, XX001 (data_corrupted) for corruption, 22023
    /// (invalid_parameter_value) for settings.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            _ if self.is_disk_full() => "53100",
            LogError::Io { .. } | LogError::Failed(_) => "58030",
            LogError::Corrupt { .. } | LogError::SnapshotCorrupt { .. } => "XX001",
            LogError::Config(_) => "22023",
        }
    }

    /// Whether the error is a full device (`ENOSPC`).
    pub fn is_disk_full(&self) -> bool {
        matches!(self, LogError::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC))
    }

    /// A copy of this error, for handing one failure to every waiting record
    /// (`std::io::Error` is not `Clone`: the copy keeps its errno or kind and message).
    pub fn duplicate(&self) -> LogError {
        match self {
            LogError::Io { context, source } => LogError::Io {
                context: context.clone(),
                source: match source.raw_os_error() {
                    Some(errno) => io::Error::from_raw_os_error(errno),
                    None => io::Error::new(source.kind(), source.to_string()),
                },
            },
            LogError::Corrupt { file, offset, detail } => LogError::Corrupt {
                file: file.clone(),
                offset: *offset,
                detail: detail.clone(),
            },
            LogError::SnapshotCorrupt { file, offset, detail } => LogError::SnapshotCorrupt {
                file: file.clone(),
                offset: *offset,
                detail: detail.clone(),
            },
            LogError::Failed(m) => LogError::Failed(m.clone()),
            LogError::Config(m) => LogError::Config(m.clone()),
        }
    }
}
