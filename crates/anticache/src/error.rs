//! The anti-cache's error type.

use permafrost_storage::StorageError;
use thiserror::Error;

pub type Result<T, E = AntiCacheError> = std::result::Result<T, E>;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum AntiCacheError {
    /// A block read back from disk failed verification.
    #[error("anti-cache block {block} is corrupt: {what}")]
    Corrupt { block: u32, what: String },
    /// Reading or writing the block file failed.
    #[error("anti-cache I/O error ({op} {path}): {message}")]
    Io {
        op: &'static str,
        path: String,
        message: String,
    },
    /// The device has no room for more blocks.
    #[error("anti-cache disk full ({path}): cannot write evicted data; the memory budget can no longer be kept")]
    DiskFull { path: String },
    /// A transaction needs more evicted data than fits in memory at once.
    #[error(
        "transaction needs {tuples} evicted tuples ({bytes} bytes) back in memory, more than half of this \
         partition's memory budget ({budget} bytes); anti-caching serves transactions whose data fits in memory"
    )]
    TooLarge { tuples: usize, bytes: u64, budget: u64 },
    #[error("invalid anti-cache setting {setting}: {message}")]
    Config { setting: &'static str, message: String },
    #[error("{0}")]
    Storage(#[from] StorageError),
}

impl AntiCacheError {
    pub fn io(op: &'static str, path: &std::path::Path, e: &std::io::Error) -> AntiCacheError {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            return AntiCacheError::DiskFull {
                path: path.display().to_string(),
            };
        }
        AntiCacheError::Io {
            op,
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }

    pub fn sqlstate(&self) -> &'static str {
        match self {
            AntiCacheError::Corrupt { .. } => "XX001",
            AntiCacheError::Io { .. } => "58030",
            AntiCacheError::DiskFull { .. } => "53100",
            AntiCacheError::TooLarge { .. } => "54000",
            AntiCacheError::Config { .. } => "22023",
            AntiCacheError::Storage(e) => e.sqlstate(),
        }
    }
}
