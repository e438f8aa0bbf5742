//! The engine's settings as one value ([`DbSettings`]: the memory budget, anti-caching, the
//! command log, snapshots), filled by the command line (`permafrost serve`, the benchmarks)
//! or a program, and the database they open. `None` means the engine's default.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::{AntiCacheConfig, ColdPolicy, Config, Database, Error, LogConfig, LogMode, MergePolicy, Result, Retrieval};

/// The engine's settings. `None` means the engine's default.
#[derive(Debug, Clone, Serialize)]
pub struct DbSettings {
    pub partitions: Option<u32>,
    pub memory_limit: Option<u64>,
    /// Anti-caching on (evict past the memory limit) or off.
    pub anticache: bool,
    /// Directory for block files; a temporary directory (removed afterwards) if unset.
    pub data_dir: Option<PathBuf>,
    pub block_size: Option<u64>,
    #[serde(serialize_with = "ser_merge")]
    pub merge: MergePolicy,
    #[serde(serialize_with = "ser_retrieval")]
    pub retrieval: Retrieval,
    #[serde(serialize_with = "ser_cold")]
    pub cold_policy: ColdPolicy,
    pub eviction_threshold: Option<f64>,
    pub eviction_size: Option<u64>,
    pub max_restarts: Option<u32>,
    pub lru_sample_rate: Option<f64>,
    /// The command log's mode (off, async, sync).
    #[serde(serialize_with = "ser_log")]
    pub command_log: LogMode,
    pub group_commit_window: Option<std::time::Duration>,
    /// Bytes per command-log segment file (`LogConfig::segment_bytes`, 1MiB..=4GiB).
    pub segment_bytes: Option<u64>,
    /// `LogConfig::preallocate` (`log_preallocate`).
    pub log_preallocate: bool,
    /// Where the command log goes (default: `commandlog` beside the blocks).
    pub log_dir: Option<PathBuf>,
    /// Where snapshots go; `None`: no snapshots (they need the command log).
    pub snapshot_dir: Option<PathBuf>,
    /// `snapshot_interval` (`None`: only on demand and by log size).
    pub snapshot_interval: Option<std::time::Duration>,
    /// `snapshot_log_size`: bytes of command log that trigger a snapshot (0: never).
    pub snapshot_log_bytes: u64,
}

fn ser_log<S: serde::Serializer>(m: &LogMode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match m {
        LogMode::Off => "off",
        LogMode::Async => "async",
        LogMode::Sync => "sync",
    })
}

fn ser_merge<S: serde::Serializer>(m: &MergePolicy, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.name())
}

fn ser_retrieval<S: serde::Serializer>(r: &Retrieval, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(r.name())
}

fn ser_cold<S: serde::Serializer>(c: &ColdPolicy, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.name())
}

impl Default for DbSettings {
    fn default() -> Self {
        let ac = AntiCacheConfig::new("");
        DbSettings {
            partitions: None,
            memory_limit: None,
            anticache: true,
            data_dir: None,
            block_size: None,
            merge: ac.merge,
            retrieval: ac.retrieval,
            cold_policy: ac.cold_policy,
            eviction_threshold: None,
            eviction_size: None,
            max_restarts: None,
            lru_sample_rate: None,
            command_log: LogMode::Off,
            group_commit_window: None,
            segment_bytes: None,
            log_preallocate: true,
            log_dir: None,
            snapshot_dir: None,
            snapshot_interval: None,
            snapshot_log_bytes: 0,
        }
    }
}

/// Parses `tuple` or `block` (with the tuple policy's hole threshold).
pub fn parse_merge(s: &str, hole_threshold: f64) -> Result<MergePolicy, String> {
    match s {
        "tuple" => Ok(MergePolicy::Tuple { hole_threshold }),
        "block" => Ok(MergePolicy::Block),
        other => Err(format!("--merge must be tuple or block, got \"{other}\"")),
    }
}

pub fn parse_retrieval(s: &str) -> Result<Retrieval, String> {
    match s {
        "abort-restart" => Ok(Retrieval::AbortRestart),
        "synchronous" => Ok(Retrieval::Synchronous),
        other => Err(format!(
            "--retrieval must be abort-restart or synchronous, got \"{other}\""
        )),
    }
}

pub fn parse_cold_policy(s: &str) -> Result<ColdPolicy, String> {
    match s {
        "lru" => Ok(ColdPolicy::Lru),
        "clock" => Ok(ColdPolicy::Clock),
        other => Err(format!("--cold-policy must be lru or clock, got \"{other}\"")),
    }
}

impl DbSettings {
    /// The configuration these settings make, with the block files (and, unless given, the
    /// command log) in `dir`, which anti-caching and the command log need.
    pub fn config(&self, dir: Option<&Path>) -> Result<Config> {
        let mut b = Config::builder();
        let logged = self.command_log != LogMode::Off;
        let dir = match dir {
            Some(d) => Some(d.to_path_buf()),
            None if self.anticache || logged => {
                return Err(Error::Config {
                    setting: "data_dir",
                    message: "anti-caching and the command log need a directory".into(),
                });
            }
            None => None,
        };
        if logged {
            let root = dir.clone().unwrap_or_default();
            let mut log = LogConfig::new(self.log_dir.clone().unwrap_or_else(|| root.join("commandlog")));
            log.mode = self.command_log;
            if let Some(w) = self.group_commit_window {
                log.group_commit_window = w;
            }
            if let Some(s) = self.segment_bytes {
                log.segment_bytes = s;
            }
            log.preallocate = self.log_preallocate;
            b = b.command_log(log);
            if let Some(sd) = &self.snapshot_dir {
                let mut sc = crate::SnapshotConfig::new(sd.clone());
                sc.interval = self.snapshot_interval;
                sc.log_bytes = self.snapshot_log_bytes;
                b = b.snapshots(sc);
            }
        }
        if let (true, Some(dir)) = (self.anticache, &dir) {
            let mut ac = AntiCacheConfig::new(dir);
            if let Some(b) = self.block_size {
                ac.block_size = b as usize;
            }
            ac.merge = self.merge;
            ac.retrieval = self.retrieval;
            ac.cold_policy = self.cold_policy;
            if let Some(t) = self.eviction_threshold {
                ac.eviction_threshold = t;
            }
            if let Some(s) = self.eviction_size {
                ac.eviction_size = s;
            }
            b = b.anticache(ac);
        }
        if let Some(n) = self.max_restarts {
            b = b.max_restarts(n);
        }
        if let Some(p) = self.partitions {
            b = b.partitions(p);
        }
        if let Some(m) = self.memory_limit {
            b = b.memory_limit(m);
        }
        if let Some(a) = self.lru_sample_rate {
            b = b.lru_sample_rate(a);
        }
        b.build()
    }

    /// Opens an empty database with these settings in `dir` ([`DbSettings::config`]).
    pub fn open_in(&self, dir: Option<&Path>) -> Result<Database> {
        Database::open(self.config(dir)?)
    }
}
