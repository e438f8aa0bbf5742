//! The systems of `bench experiment paper` running in their cgroups, where a client
//! reaches them, and the progress shown while they run.

use std::path::{Path, PathBuf};

use super::model::{PaperOptions, System, SystemReport};
use crate::BenchError;
use crate::servers::{self, Cgroup, Process};

/// Where a client reaches a running system.
pub enum Endpoint {
    /// `permafrost serve` on this loopback address.
    Permafrost { addr: String },
    /// MariaDB at this URL (mysql_async's form), with memcached on this socket in front or not.
    MariaDb { url: String, memcached: Option<PathBuf> },
}

/// A system running in its cgroup.
pub struct Running {
    pub system: System,
    pub settings: String,
    cgroup: Cgroup,
    limit: u64,
    /// Stopped in this order before the cgroup goes.
    processes: Vec<Process>,
    pub endpoint: Endpoint,
    /// Seconds each load took.
    pub load_seconds: Vec<f64>,
    /// What it ran (a part and data size), for its report.
    what: String,
}

impl Running {
    /// An error if one of its processes has ended, with its log and the cgroup's OOM kills.
    pub fn check(&mut self) -> Result<(), BenchError> {
        for p in &mut self.processes {
            p.check_running().map_err(|e| {
                BenchError::Client(format!(
                    "{} (cgroup OOM kills: {}): {e}",
                    self.system.name(),
                    self.cgroup.oom_kills()
                ))
            })?;
        }
        Ok(())
    }

    /// What its cgroup saw, for the report.
    pub fn report(&self) -> SystemReport {
        SystemReport {
            system: self.system,
            part: self.what.clone(),
            settings: self.settings.clone(),
            cgroup_limit_bytes: self.limit,
            cgroup_peak_bytes: self.cgroup.peak_bytes(),
            oom_kills: self.cgroup.oom_kills(),
            load_seconds: self.load_seconds.clone(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for p in &mut self.processes {
            p.stop();
        }
    }
}

/// Starts `system` in its cgroup, its files under `dir`, its database (MariaDB's) named
/// `database`; `what` names the part it serves in the report.
pub fn start(
    system: System,
    o: &PaperOptions,
    binary: &Path,
    dir: &Path,
    database: &str,
    what: &str,
) -> Result<Running, BenchError> {
    let limit = o.memory_limit + o.cgroup_extra;
    let cgroup = Cgroup::create(&format!("permafrost-paper-{}", system.name().replace('+', "-")), limit)?;
    let mib = |b: u64| b >> 20;
    let budget = o.memory_limit;
    let (processes, endpoint, settings) = match system {
        System::Permafrost => {
            let port = servers::free_port()?;
            let p = servers::permafrost(binary, &dir.join("permafrost"), budget, port, &cgroup)?;
            let settings = format!(
                "permafrost serve --memory-limit {}MiB (built-in defaults: command log sync)",
                mib(budget)
            );
            let addr = format!("127.0.0.1:{port}");
            (vec![p], Endpoint::Permafrost { addr }, settings)
        }
        System::MariaDb => {
            let (p, url) = servers::mariadb(&dir.join("mariadb"), budget, database, &cgroup)?;
            let settings = format!(
                "MariaDB {}: innodb_buffer_pool_size={}M, O_DIRECT, flush_log_at_trx_commit=1",
                mariadb_version(&url),
                mib(budget)
            );
            (vec![p], Endpoint::MariaDb { url, memcached: None }, settings)
        }
        System::MariaDbMemcached => {
            let cache = budget * o.memcached_percent / 100;
            let pool = budget - cache;
            let d = dir.join("mariadb-memcached");
            let (db, url) = servers::mariadb(&d, pool, database, &cgroup)?;
            let sock = d.join("memcached.sock");
            let mc = servers::memcached(&sock, cache, &d.join("memcached.log"), &cgroup)?;
            let settings = format!(
                "MariaDB innodb_buffer_pool_size={}M (as above) + memcached -m {} in one cgroup; cache-aside reads, the key deleted after each update",
                mib(pool),
                mib(cache)
            );
            // memcached stops first: MariaDB may take a while to flush.
            let endpoint = Endpoint::MariaDb {
                url,
                memcached: Some(sock),
            };
            (vec![mc, db], endpoint, settings)
        }
    };
    Ok(Running {
        system,
        settings,
        cgroup,
        limit,
        processes,
        endpoint,
        load_seconds: Vec::new(),
        what: what.to_string(),
    })
}

/// The server's version, or what kept it from being read.
fn mariadb_version(url: &str) -> String {
    let version = || -> Result<String, BenchError> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async { crate::mariadb::version(&mut crate::mariadb::connect(url).await?).await })
    };
    version().unwrap_or_else(|e| format!("(version unknown: {e})"))
}

/// The progress bar (when on a terminal) and the lines printed above it.
pub struct Progress {
    bar: indicatif::ProgressBar,
    shown: bool,
}

impl Progress {
    pub fn new(steps: u64, shown: bool) -> Progress {
        let bar = if shown {
            let b = indicatif::ProgressBar::new(steps);
            b.set_style(
                indicatif::ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} {msg} (eta {eta})")
                    .expect("valid template"),
            );
            b
        } else {
            indicatif::ProgressBar::hidden()
        };
        Progress { bar, shown }
    }

    /// Prints a line (above the bar when there is one).
    pub fn say(&self, line: String) {
        if self.shown {
            self.bar.println(line);
        } else {
            println!("{line}");
        }
    }

    /// What is being done now.
    pub fn doing(&self, what: String) {
        self.bar.set_message(what);
    }

    /// A step is done.
    pub fn step(&self) {
        self.bar.inc(1);
    }

    /// `n` steps will not be done (a system sits out).
    pub fn skip(&self, n: usize) {
        self.bar.inc(n as u64);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
