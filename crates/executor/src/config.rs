//! The engine's configuration ([`Config`]): the checked values a database runs with.
//!
//! Words used the same way in every crate: a *setting* is a value a user gives, by name
//! (a flag, an environment variable, a key of the configuration file: settings.rs declares
//! the engine's, the command line's server_settings.rs the server's); the *configuration*
//! is what the settings become once read and checked, the [`Config`] the engine is opened
//! with ([`DbSettings::config`](crate::settings::DbSettings::config), or a program's own
//! [`Config::builder`]). The configuration file (the command line's config_file.rs) is
//! one source of settings.
//!
//! Every setting has a default and a valid range, stated here and in the README; bad values
//! are rejected when the database opens, with an error naming the setting.
//!
//! | setting | default | range |
//! |---|---|---|
//! | `partitions` | number of CPU cores | 1 ..= 1024 |
//! | `memory_limit` | half of physical memory | >= 16 MiB |
//! | `lru_sample_rate` | 0.01 (1.0 with the CLOCK policy) | 0.0 ..= 1.0 |
//! | `max_restarts` | 16 | 1 ..= 1000 |
//! | `read_slice` | 50 ms | 1 ms ..= 1 h, or off |
//! | `memory_wait_timeout` | 10 s | 0 ..= 1 h |
//! | `anticache` | off | see [`permafrost_anticache::AntiCacheConfig`] |
//! | `command_log` | off | see [`permafrost_durability::LogConfig`] |

pub use permafrost_anticache::{AntiCacheConfig, ColdPolicy, MergePolicy, Retrieval};
pub use permafrost_durability::{LogConfig, LogMode, LogStats, SYNC_BUCKET_BOUNDS, SYNC_BUCKETS, sync_bucket_le};

use crate::error::{Error, Result};

/// The checked configuration a database runs with. Build with [`Config::builder`], or from
/// settings with [`DbSettings::config`](crate::settings::DbSettings::config).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Number of partitions, each with its own executor thread.
    pub partitions: u32,
    /// Bytes the database may use for tuples, strings, indexes, tombstones and buffers.
    pub memory_limit: u64,
    /// Fraction of transactions whose accesses update the LRU chain (the paper's alpha).
    pub lru_sample_rate: f64,
    /// How often one transaction may be restarted for evicted data before it fails.
    pub max_restarts: u32,
    /// Anti-caching: evict cold tuples to disk when memory passes the threshold. Off
    /// (`None`) means the database refuses writes once its data fills `memory_limit`.
    pub anticache: Option<AntiCacheConfig>,
    /// The command log: every committed transaction's request, written before it is
    /// acknowledged (sync) or in the background (async). `None`: no log.
    pub command_log: Option<LogConfig>,
    /// Snapshots: where they go and when they are taken. Recovery starts from the newest
    /// one and replays the command log after it. Needs the command log.
    pub snapshots: Option<SnapshotConfig>,
    /// How long an ad hoc statement runs on its partitions before it moves off them to a
    /// forked copy-on-write image (forked.rs), so that one long query or write does not
    /// keep its partitions from serving other transactions. `None`: it runs to its end in
    /// place.
    pub read_slice: Option<std::time::Duration>,
    /// How long a write refused by the memory budget waits for eviction to make room
    /// (partition/pacing.rs): it is run again once room is there, and fails with 53200 only
    /// when the budget's gate has stayed closed this long, or at once when eviction cannot
    /// free anything. Zero: it fails at once.
    pub memory_wait: std::time::Duration,
    /// Where a query's sort or result past its working memory spills (temporary files
    /// without names, `permafrost_io::temp`): the data directory's `tmp` folder. `None` (a
    /// database without a data directory): such a query fails with 54000.
    pub temp_dir: Option<std::path::PathBuf>,
}

/// The default [`Config::read_slice`].
pub const DEFAULT_READ_SLICE: std::time::Duration = std::time::Duration::from_millis(50);

/// The default [`Config::memory_wait`].
pub const DEFAULT_MEMORY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Snapshot settings (see `crate::snapshot`).
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotConfig {
    pub dir: std::path::PathBuf,
    /// `snapshot_interval`: a snapshot is taken this long after the last one; `None`: only
    /// on demand (and by `log_bytes`).
    pub interval: Option<std::time::Duration>,
    /// `snapshot_log_size`: a snapshot is also taken once the command log has grown by
    /// this many bytes since the last one (bounding replay at restart); 0: never.
    pub log_bytes: u64,
}

impl SnapshotConfig {
    pub fn new(dir: impl Into<std::path::PathBuf>) -> SnapshotConfig {
        SnapshotConfig {
            dir: dir.into(),
            interval: Some(std::time::Duration::from_secs(300)),
            log_bytes: 128 << 20,
        }
    }
}

/// Builds a [`Config`]; unset settings take their defaults.
#[derive(Debug, Clone, Default)]
pub struct ConfigBuilder {
    partitions: Option<u32>,
    memory_limit: Option<u64>,
    lru_sample_rate: Option<f64>,
    max_restarts: Option<u32>,
    anticache: Option<AntiCacheConfig>,
    command_log: Option<LogConfig>,
    snapshots: Option<SnapshotConfig>,
    read_slice: Option<Option<std::time::Duration>>,
    memory_wait: Option<std::time::Duration>,
    temp_dir: Option<std::path::PathBuf>,
}

pub const MIN_MEMORY_LIMIT: u64 = 16 << 20;
pub const MAX_PARTITIONS: u32 = 1024;

impl Config {
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::default()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::builder().build().expect("defaults are valid")
    }
}

impl ConfigBuilder {
    pub fn partitions(mut self, n: u32) -> Self {
        self.partitions = Some(n);
        self
    }
    pub fn memory_limit(mut self, bytes: u64) -> Self {
        self.memory_limit = Some(bytes);
        self
    }
    pub fn lru_sample_rate(mut self, alpha: f64) -> Self {
        self.lru_sample_rate = Some(alpha);
        self
    }
    pub fn max_restarts(mut self, n: u32) -> Self {
        self.max_restarts = Some(n);
        self
    }
    pub fn anticache(mut self, ac: AntiCacheConfig) -> Self {
        self.anticache = Some(ac);
        self
    }

    /// Logs committed transactions ([`Database::recover`](crate::Database::recover) replays
    /// them); a config in [`LogMode::Off`] is the same as none.
    pub fn command_log(mut self, log: LogConfig) -> Self {
        self.command_log = Some(log);
        self
    }

    /// Takes snapshots (periodically and with [`Database::snapshot`](crate::Database::snapshot)).
    pub fn snapshots(mut self, s: SnapshotConfig) -> Self {
        self.snapshots = Some(s);
        self
    }

    /// [`Config::read_slice`]: `None` turns moving long reads off.
    pub fn read_slice(mut self, slice: Option<std::time::Duration>) -> Self {
        self.read_slice = Some(slice);
        self
    }

    /// [`Config::memory_wait`].
    pub fn memory_wait(mut self, wait: std::time::Duration) -> Self {
        self.memory_wait = Some(wait);
        self
    }

    /// [`Config::temp_dir`].
    pub fn temp_dir(mut self, dir: std::path::PathBuf) -> Self {
        self.temp_dir = Some(dir);
        self
    }

    pub fn build(self) -> Result<Config> {
        let partitions = self.partitions.unwrap_or_else(default_partitions);
        if !(1..=MAX_PARTITIONS).contains(&partitions) {
            return Err(Error::Config {
                setting: "partitions",
                message: format!("must be between 1 and {MAX_PARTITIONS}, got {partitions}"),
            });
        }
        let memory_limit = self.memory_limit.unwrap_or_else(default_memory_limit);
        if memory_limit < MIN_MEMORY_LIMIT {
            return Err(Error::Config {
                setting: "memory_limit",
                message: format!("must be at least {} (16MiB), got {memory_limit}", MIN_MEMORY_LIMIT),
            });
        }
        // A sampled LRU update relinks three tuple headers; a CLOCK update sets a bit in the
        // header the access has just read, cheap enough for every transaction.
        let clock = self
            .anticache
            .as_ref()
            .is_some_and(|a| a.cold_policy == ColdPolicy::Clock);
        let lru_sample_rate = self.lru_sample_rate.unwrap_or(if clock { 1.0 } else { 0.01 });
        if !(0.0..=1.0).contains(&lru_sample_rate) || lru_sample_rate.is_nan() {
            return Err(Error::Config {
                setting: "lru_sample_rate",
                message: format!("must be between 0.0 and 1.0, got {lru_sample_rate}"),
            });
        }
        let max_restarts = self.max_restarts.unwrap_or(16);
        if !(1..=1000).contains(&max_restarts) {
            return Err(Error::Config {
                setting: "max_restarts",
                message: format!("must be between 1 and 1000, got {max_restarts}"),
            });
        }
        if let Some(ac) = &self.anticache {
            ac.validate().map_err(|e| match e {
                permafrost_anticache::AntiCacheError::Config { setting, message } => Error::Config { setting, message },
                other => Error::AntiCache(other),
            })?;
        }
        if let Some(log) = &self.command_log {
            log.validate().map_err(|e| Error::Config {
                setting: "command_log",
                message: e.to_string(),
            })?;
        }
        let command_log = self.command_log.filter(|l| l.mode != LogMode::Off);
        if let Some(s) = &self.snapshots {
            if command_log.is_none() {
                return Err(Error::Config {
                    setting: "snapshot_interval",
                    message: "snapshots need the command log (command_log async or sync)".into(),
                });
            }
            if let Some(i) = s.interval
                && !(std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(7 * 86_400)).contains(&i)
            {
                return Err(Error::Config {
                    setting: "snapshot_interval",
                    message: format!("must be between 1s and 7 days (or off), got {i:?}"),
                });
            }
            if s.log_bytes != 0 && s.log_bytes < (1 << 20) {
                return Err(Error::Config {
                    setting: "snapshot_log_size",
                    message: format!("must be at least 1MiB (or 0: off), got {}", s.log_bytes),
                });
            }
        }
        let read_slice = self.read_slice.unwrap_or(Some(DEFAULT_READ_SLICE));
        if let Some(s) = read_slice
            && !(std::time::Duration::from_millis(1)..=std::time::Duration::from_secs(3600)).contains(&s)
        {
            return Err(Error::Config {
                setting: "read_slice",
                message: format!("must be between 1ms and 1h (or off), got {s:?}"),
            });
        }
        let memory_wait = self.memory_wait.unwrap_or(DEFAULT_MEMORY_WAIT);
        if memory_wait > std::time::Duration::from_secs(3600) {
            return Err(Error::Config {
                setting: "memory_wait_timeout",
                message: format!("must be between 0 and 1h, got {memory_wait:?}"),
            });
        }
        Ok(Config {
            partitions,
            memory_limit,
            lru_sample_rate,
            max_restarts,
            anticache: self.anticache,
            command_log,
            snapshots: self.snapshots,
            read_slice,
            memory_wait,
            temp_dir: self.temp_dir,
        })
    }
}

fn default_partitions() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
        .min(MAX_PARTITIONS)
}

/// Half of physical memory, or 1 GiB if that cannot be read.
pub fn default_memory_limit() -> u64 {
    physical_memory()
        .map(|m| m / 2)
        .unwrap_or(1 << 30)
        .max(MIN_MEMORY_LIMIT)
}

/// Total physical memory from /proc/meminfo.
pub fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Parses a size: plain bytes (`1048576`) or a number with a unit (`64MiB`, `2GiB`, `512KiB`,
/// `1TiB`; `KB`/`MB`/`GB` are read as powers of 1024 too, as memory sizes usually are).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("\"{s}\" is not a size (examples: 64MiB, 2GiB, 1048576)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(format!("\"{s}\" has an unknown unit (use B, KiB, MiB, GiB or TiB)"));
        }
    };
    let bytes = n * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("\"{s}\" is out of range"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
    }

    #[test]
    fn bad_settings_name_themselves() {
        let e = Config::builder().partitions(0).build().unwrap_err();
        assert!(e.to_string().contains("partitions"), "{e}");
        let e = Config::builder().lru_sample_rate(1.5).build().unwrap_err();
        assert!(e.to_string().contains("lru_sample_rate"), "{e}");
        let e = Config::builder().memory_limit(1000).build().unwrap_err();
        assert!(e.to_string().contains("memory_limit"), "{e}");
        assert!(Config::builder().partitions(2).build().is_ok());
    }
}
