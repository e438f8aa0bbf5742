//! The command log's settings.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::error::{LogError, Result};

/// The `command_log` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogMode {
    /// Nothing is logged: a crash loses every transaction since the last snapshot.
    Off,
    /// Records are written and synced in the background; a commit is acknowledged before
    /// its record is durable (a crash may lose the last group commit window or so).
    Async,
    /// A commit is acknowledged only after its record is durable.
    Sync,
}

impl LogMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            LogMode::Off => "off",
            LogMode::Async => "async",
            LogMode::Sync => "sync",
        }
    }
}

impl std::fmt::Display for LogMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LogMode {
    type Err = LogError;

    fn from_str(s: &str) -> Result<LogMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(LogMode::Off),
            "async" => Ok(LogMode::Async),
            "sync" => Ok(LogMode::Sync),
            _ => Err(LogError::Config(format!(
                "invalid setting command_log: {s:?}; allowed: off, async, sync"
            ))),
        }
    }
}

/// Default group commit window: none. The writer writes as soon as its previous write and
/// `fdatasync` are done, and the records that arrived meanwhile make the next group, so a
/// group is as large as the load makes it and no commit waits for a timer. Measured (YCSB
/// write-heavy, embedded, 2 partitions, sync): 889 K txn/s with 0 against 835 K with 1 ms
/// and 843 K with 200 us (docs/results/durability.md).
pub const DEFAULT_GROUP_COMMIT_WINDOW: Duration = Duration::ZERO;
/// Longest group commit window accepted.
pub const MAX_GROUP_COMMIT_WINDOW: Duration = Duration::from_secs(1);
/// Default segment size.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;
/// Smallest and largest segment size accepted.
pub const MIN_SEGMENT_BYTES: u64 = 1 << 20;
pub const MAX_SEGMENT_BYTES: u64 = 4 << 30;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Directory of the segment files (created if missing).
    pub dir: PathBuf,
    pub mode: LogMode,
    /// How long the writer waits to gather a batch after its first record (0: it writes as
    /// soon as the queue is empty). Setting `group_commit_window`, 0..=1s, default 0.
    pub group_commit_window: Duration,
    /// A segment is closed and a new one started once it holds this many bytes (it may
    /// exceed it by one batch). Setting `log_segment_size`, 1MiB..=4GiB, default
    /// 64MiB.
    pub segment_bytes: u64,
    /// Whether segments after the first are preallocated (written full of zeros by a
    /// helper thread before the writer starts them), so that group commits overwrite
    /// allocated blocks instead of growing the file. Off only helps where overwriting
    /// does not spare the file system an allocation (copy-on-write file systems) or where
    /// a segment's worth of zeros per segment is too much extra writing. Default on.
    pub preallocate: bool,
}

impl LogConfig {
    /// Defaults (mode sync) for a log in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> LogConfig {
        LogConfig {
            dir: dir.into(),
            mode: LogMode::Sync,
            group_commit_window: DEFAULT_GROUP_COMMIT_WINDOW,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            preallocate: true,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.group_commit_window > MAX_GROUP_COMMIT_WINDOW {
            return Err(LogError::Config(format!(
                "invalid setting group_commit_window: must be between 0 and 1s, got {:?}",
                self.group_commit_window
            )));
        }
        if !(MIN_SEGMENT_BYTES..=MAX_SEGMENT_BYTES).contains(&self.segment_bytes) {
            return Err(LogError::Config(format!(
                "invalid setting log_segment_size: must be between 1MiB and 4GiB, got {} bytes",
                self.segment_bytes
            )));
        }
        if self.mode != LogMode::Off && self.dir.as_os_str().is_empty() {
            return Err(LogError::Config(
                "invalid setting command_log: a log directory is needed unless command_log is off".into(),
            ));
        }
        Ok(())
    }
}
