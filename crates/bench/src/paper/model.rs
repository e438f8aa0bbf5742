//! What `bench experiment paper` runs and what it reports: the systems, the options (the
//! default size), each measured point, and the report written as JSON.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::BenchError;
use crate::report::Report;
use crate::ycsb::{Mix, YcsbOptions};

/// A part of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    Ycsb,
    Tpcc,
    Voter,
    Tatp,
}

impl Part {
    pub const ALL: [Part; 4] = [Part::Ycsb, Part::Tpcc, Part::Voter, Part::Tatp];

    pub fn name(self) -> &'static str {
        match self {
            Part::Ycsb => "ycsb",
            Part::Tpcc => "tpcc",
            Part::Voter => "voter",
            Part::Tatp => "tatp",
        }
    }

    /// What a size of this part counts (a point's or a refusal's `scale`).
    pub fn unit(self) -> &'static str {
        match self {
            Part::Ycsb => "records",
            Part::Tpcc => "orders per district",
            Part::Voter => "votes",
            Part::Tatp => "subscribers",
        }
    }

    /// The transactional parts (`oltp.rs`), in the order they run.
    pub const OLTP: [Part; 3] = [Part::Tpcc, Part::Voter, Part::Tatp];

    pub fn parse(s: &str) -> Result<Part, String> {
        Part::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| format!("unknown part \"{s}\" (one of: ycsb, tpcc, voter, tatp)"))
    }
}

/// Bytes of data per TATP subscriber (its SUBSCRIBER row, its 1-4 ACCESS_INFO and
/// SPECIAL_FACILITY rows, their CALL_FORWARDING rows, and the index entries of them all),
/// as Permafrost accounts them in memory: sizes the TATP part's populations. Measured
/// (2026-12-07): 100,000 subscribers loaded by `bench tatp` into `permafrost serve` hold
/// 45.2 MB of tuples and 72.7 MB of indexes (`permafrost_memory_bytes`).
pub const TATP_BYTES_PER_SUBSCRIBER: u64 = 1180;

/// Bytes of TPC-C's data as Permafrost accounts them in memory (`permafrost_memory_bytes`,
/// tuples, strings and indexes): they size the TPC-C part's populations. Measured
/// (2026-12-07) with `bench tpcc --load-only` against `permafrost serve`: one warehouse at
/// the specification's scale holds 167.4 MB, two 303.2 MB (so ITEM about 31.6 MB, and each
/// warehouse with its districts, customers, history, stock, 3,000 orders per district and
/// their lines 135.8 MB), and one warehouse with 13,000 orders per district 372.6 MB: 2,052
/// bytes per order past the 3,000th (its row, about ten lines, their index entries).
pub const TPCC_BYTES_OF_ITEMS: u64 = 31_600_000;
pub const TPCC_BYTES_PER_WAREHOUSE: u64 = 135_800_000;
pub const TPCC_BYTES_PER_ORDER: u64 = 2052;

/// Bytes per Voter vote as Permafrost accounts them: 1,000,000 votes loaded by
/// `bench voter --votes` hold 82.9 MB (measured 2026-12-07).
pub const VOTER_BYTES_PER_VOTE: u64 = 83;

/// The ways the transactional parts run: stored procedures and interactive transactions.
pub const OLTP_WAYS: usize = 2;

/// A skew as the paper writes it: 1.0, 0.5, 1.25.
pub fn skew_text(skew: f64) -> String {
    format!("{skew:?}")
}

/// A system the paper compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum System {
    #[serde(rename = "permafrost")]
    Permafrost,
    #[serde(rename = "mariadb")]
    MariaDb,
    #[serde(rename = "mariadb+memcached")]
    MariaDbMemcached,
}

impl System {
    pub const ALL: [System; 3] = [System::Permafrost, System::MariaDb, System::MariaDbMemcached];

    pub fn name(self) -> &'static str {
        match self {
            System::Permafrost => "permafrost",
            System::MariaDb => "mariadb",
            System::MariaDbMemcached => "mariadb+memcached",
        }
    }

    /// How a report's title names it.
    pub fn label(self) -> &'static str {
        match self {
            System::Permafrost => "Permafrost",
            System::MariaDb => "MariaDB",
            System::MariaDbMemcached => "MariaDB + memcached",
        }
    }

    pub fn parse(s: &str) -> Result<System, String> {
        System::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| format!("unknown system \"{s}\" (one of: permafrost, mariadb, mariadb+memcached)"))
    }
}

/// What to run. [`PaperOptions::default`] is the default size: a 256 MiB budget, so the
/// largest data set (8×) is 2 GiB.
#[derive(Debug, Clone, Serialize)]
pub struct PaperOptions {
    /// Every system's memory budget: Permafrost's `--memory-limit`, MariaDB's buffer pool,
    /// MariaDB + memcached's buffer pool and cache together.
    pub memory_limit: u64,
    /// What each cgroup holds beyond the budget: the servers' own code, connections and
    /// the page cache their files pass through.
    pub cgroup_extra: u64,
    /// memcached's share of the budget, in percent, in MariaDB + memcached.
    pub memcached_percent: u64,
    /// YCSB's and TPC-C's data sizes as multiples of the budget, smallest first.
    pub ratios: Vec<u32>,
    pub mixes: Vec<Mix>,
    pub skews: Vec<f64>,
    pub systems: Vec<System>,
    /// The parts to run, in this order.
    pub parts: Vec<Part>,
    /// Voter's and TATP's data sizes, as multiples of the budget.
    pub oltp_ratios: Vec<u32>,
    /// TPC-C's, Voter's and TATP's terminals (each a connection with one transaction at a
    /// time).
    pub oltp_clients: usize,
    /// TPC-C's warehouses: its data grows by the orders each district has taken
    /// ([`PaperOptions::tpcc_orders`]), as the paper's grew while it ran. Two, so that
    /// both of `permafrost serve`'s partitions on this 2-core machine hold data (each has
    /// half the budget); their specification population is 1.13× a 256 MiB budget.
    pub tpcc_warehouses: u32,
    pub tuple_size: usize,
    pub warmup: f64,
    pub duration: f64,
    pub rounds: usize,
    /// Client threads.
    pub clients: usize,
    /// Connections in all (each client thread has its share).
    pub connections: usize,
    /// Statements each client thread keeps in flight (one per connection: a client that
    /// waits for each answer, as the paper's did).
    pub in_flight: usize,
    pub seed: u64,
    /// The servers' data directories go under it (default: a temporary directory).
    #[serde(skip)]
    pub work_dir: Option<PathBuf>,
    /// The `permafrost` binary that serves (default: this one).
    #[serde(skip)]
    pub binary: Option<PathBuf>,
}

impl Default for PaperOptions {
    fn default() -> Self {
        PaperOptions {
            memory_limit: 256 << 20,
            cgroup_extra: 128 << 20,
            memcached_percent: 50,
            ratios: vec![1, 2, 4, 8],
            mixes: vec![Mix::ReadOnly, Mix::ReadHeavy, Mix::WriteHeavy],
            skews: vec![1.5, 1.0, 0.5],
            systems: System::ALL.to_vec(),
            parts: Part::ALL.to_vec(),
            oltp_ratios: vec![1, 4],
            oltp_clients: 8,
            tpcc_warehouses: 2,
            tuple_size: 1008,
            warmup: 10.0,
            duration: 20.0,
            rounds: 1,
            clients: 2,
            connections: 16,
            in_flight: 8,
            seed: 42,
            work_dir: None,
            binary: None,
        }
    }
}

impl PaperOptions {
    pub fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: &str| Err(BenchError::Options(m.to_string()));
        if self.memory_limit < 16 << 20 {
            return bad("--memory-limit must be at least 16MiB");
        }
        for (flag, ratios) in [("--ratios", &self.ratios), ("--oltp-ratios", &self.oltp_ratios)] {
            if ratios.is_empty() || ratios.contains(&0) || !ratios.windows(2).all(|w| w[0] < w[1]) {
                return Err(BenchError::Options(format!(
                    "{flag} must be increasing multiples of the memory, at least 1 (as 1,2,4,8)"
                )));
            }
        }
        if self.parts.is_empty() {
            return bad("--parts must name at least one of ycsb, tpcc, voter, tatp");
        }
        if !(1..=4096).contains(&self.oltp_clients) {
            return bad("--oltp-clients must be between 1 and 4096");
        }
        let largest = self.oltp_ratios[self.oltp_ratios.len() - 1];
        if self.parts.contains(&Part::Tatp) && self.tatp_subscribers(largest) > 100_000_000 {
            return bad("TATP at the largest --oltp-ratios would exceed 100,000,000 subscribers");
        }
        if self.parts.contains(&Part::Voter) && self.voter_votes(largest) > 1_000_000_000 {
            return bad("Voter at the largest --oltp-ratios would exceed 1,000,000,000 votes");
        }
        let largest = self.ratios[self.ratios.len() - 1];
        if self.parts.contains(&Part::Tpcc) && self.tpcc_orders(largest) > 10_000_000 {
            return bad("TPC-C at the largest --ratios would exceed 10,000,000 orders per district");
        }
        if self.mixes.is_empty() || self.skews.is_empty() || self.systems.is_empty() {
            return bad("--mixes, --skews and --systems must name at least one each");
        }
        if self.memcached_percent == 0 || self.memcached_percent >= 100 {
            return bad("--memcached-percent must be between 1 and 99");
        }
        if self.rounds == 0 {
            return bad("--rounds must be at least 1");
        }
        self.ycsb(1, Mix::ReadOnly, self.skews[0]).validate()
    }

    /// Records at `ratio` times the memory budget.
    pub fn records(&self, ratio: u32) -> u64 {
        u64::from(ratio) * self.memory_limit / self.tuple_size as u64
    }

    /// The YCSB options of one run.
    pub fn ycsb(&self, records: u64, mix: Mix, skew: f64) -> YcsbOptions {
        YcsbOptions {
            records,
            tuple_size: self.tuple_size,
            mix,
            skew,
            clients: self.clients,
            in_flight: self.in_flight,
            warmup: self.warmup,
            duration: self.duration,
            seed: self.seed,
        }
    }

    /// TATP subscribers at `ratio` times the memory budget.
    pub fn tatp_subscribers(&self, ratio: u32) -> u32 {
        let n = u64::from(ratio) * self.memory_limit / TATP_BYTES_PER_SUBSCRIBER;
        u32::try_from(n.max(1)).unwrap_or(u32::MAX)
    }

    /// TPC-C's orders per district at `ratio` times the memory budget: the specification's
    /// 3,000, and as many more as make that much data (none when its population is more
    /// already).
    pub fn tpcc_orders(&self, ratio: u32) -> u32 {
        let w = u64::from(self.tpcc_warehouses);
        let base = TPCC_BYTES_OF_ITEMS + w * TPCC_BYTES_PER_WAREHOUSE;
        let more = (u64::from(ratio) * self.memory_limit).saturating_sub(base)
            / (w * u64::from(crate::tpcc::DISTRICTS) * TPCC_BYTES_PER_ORDER);
        u32::try_from(3000 + more).unwrap_or(u32::MAX)
    }

    /// The bytes of data (as Permafrost accounts them) of `part` with `scale` of its
    /// units: what a size's population holds, which may be more than its ratio asks when
    /// the smallest population is larger (TPC-C's).
    pub fn data_bytes(&self, part: Part, scale: u64) -> u64 {
        match part {
            Part::Ycsb => scale * self.tuple_size as u64,
            Part::Tpcc => {
                let w = u64::from(self.tpcc_warehouses);
                TPCC_BYTES_OF_ITEMS
                    + w * TPCC_BYTES_PER_WAREHOUSE
                    + w * u64::from(crate::tpcc::DISTRICTS) * scale.saturating_sub(3000) * TPCC_BYTES_PER_ORDER
            }
            Part::Voter => scale * VOTER_BYTES_PER_VOTE,
            Part::Tatp => scale * TATP_BYTES_PER_SUBSCRIBER,
        }
    }

    /// Voter's votes loaded before the runs at `ratio` times the memory budget.
    pub fn voter_votes(&self, ratio: u32) -> i64 {
        i64::try_from(u64::from(ratio) * self.memory_limit / VOTER_BYTES_PER_VOTE).unwrap_or(i64::MAX)
    }

    /// The data sizes of `part`.
    pub fn part_ratios(&self, part: Part) -> &[u32] {
        match part {
            Part::Ycsb | Part::Tpcc => &self.ratios,
            Part::Voter | Part::Tatp => &self.oltp_ratios,
        }
    }

    /// Measured YCSB runs.
    pub fn ycsb_runs(&self) -> usize {
        if !self.parts.contains(&Part::Ycsb) {
            return 0;
        }
        self.ratios.len() * self.rounds * self.mixes.len() * self.skews.len() * self.systems.len()
    }

    /// Measured runs of the transactional parts (two ways on each system but MariaDB +
    /// memcached).
    pub fn oltp_runs(&self) -> usize {
        Part::OLTP.iter().map(|&p| self.part_runs(p)).sum()
    }

    /// The systems of the transactional parts (memcached has no part in them: the paper
    /// put it in front of MySQL for YCSB only).
    pub fn oltp_systems(&self) -> Vec<System> {
        self.systems
            .iter()
            .copied()
            .filter(|s| *s != System::MariaDbMemcached)
            .collect()
    }

    /// Measured runs of a transactional part: each size, round, way ([`OLTP_WAYS`]) and
    /// system.
    pub fn part_runs(&self, part: Part) -> usize {
        if !self.parts.contains(&part) || part == Part::Ycsb {
            return 0;
        }
        self.part_ratios(part).len() * self.rounds * OLTP_WAYS * self.oltp_systems().len()
    }

    /// A lower bound of the time the runs take (loads and starts come on top).
    pub fn seconds(&self) -> f64 {
        (self.ycsb_runs() + self.oltp_runs()) as f64 * (self.warmup + self.duration)
    }
}

/// The runs of one system at one mix, skew and data size.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub system: System,
    pub mix: Mix,
    pub skew: f64,
    /// Data size over the memory budget.
    pub ratio: u32,
    pub records: u64,
    pub throughput_tps: Vec<f64>,
    pub median_tps: f64,
    pub runs: Vec<Report>,
}

/// The runs of one system one way at one size, of TPC-C, Voter or TATP.
#[derive(Debug, Clone, Serialize)]
pub struct OltpPoint {
    /// The part (`Part::name`).
    pub workload: &'static str,
    pub system: System,
    /// How the transactions ran (`Mode::name`).
    pub mode: &'static str,
    /// Data size over the memory budget.
    pub ratio: u32,
    /// The population, in `unit`s.
    pub scale: u64,
    /// What `scale` counts: TPC-C's orders per district, Voter's votes loaded, TATP's
    /// subscribers.
    pub unit: &'static str,
    pub throughput_tps: Vec<f64>,
    pub median_tps: f64,
    /// Each run's full report.
    pub runs: Vec<serde_json::Value>,
}

impl OltpPoint {
    pub fn new(
        workload: &'static str,
        system: System,
        mode: crate::way::Mode,
        ratio: u32,
        (scale, unit): (u64, &'static str),
    ) -> OltpPoint {
        OltpPoint {
            workload,
            system,
            mode: mode.name(),
            ratio,
            scale,
            unit,
            throughput_tps: Vec::new(),
            median_tps: 0.0,
            runs: Vec::new(),
        }
    }

    /// Adds a run: its throughput, and its report.
    pub fn add(&mut self, tps: f64, report: serde_json::Value) {
        self.runs.push(report);
        self.throughput_tps.push(tps);
        self.median_tps = crate::experiment::median(&self.throughput_tps);
    }
}

/// A size of a part that a system could not load.
#[derive(Debug, Clone, Serialize)]
pub struct Refusal {
    pub part: Part,
    pub system: System,
    pub ratio: u32,
    /// The population asked for (`OltpPoint::unit`s).
    pub scale: u64,
    /// Processes its cgroup's OOM killer ended (the budget + `cgroup_extra` was exceeded).
    pub oom_kills: u64,
    pub error: String,
}

impl Refusal {
    /// The error in a line: its first, and the first that names a check that failed.
    pub fn reason(&self) -> String {
        let mut lines = self.error.lines().map(str::trim).filter(|l| !l.is_empty());
        let mut out = lines.next().unwrap_or("").to_string();
        if let Some(check) = lines.find(|l| l.contains("could not check") || l.contains("violations")) {
            out = format!("{out} {check}");
        }
        if self.oom_kills > 0 {
            out = format!(
                "its cgroup's OOM killer ended a process ({} kills); {out}",
                self.oom_kills
            );
        }
        out
    }
}

/// How a system was started and what its cgroup saw.
#[derive(Debug, Clone, Serialize)]
pub struct SystemReport {
    pub system: System,
    /// The part and size it served.
    pub part: String,
    pub settings: String,
    pub cgroup_limit_bytes: u64,
    pub cgroup_peak_bytes: Option<u64>,
    pub oom_kills: u64,
    /// Seconds each load (one per data size) took.
    pub load_seconds: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PaperReport {
    pub experiment: &'static str,
    pub title: String,
    pub command: String,
    pub machine: crate::experiment::Machine,
    pub options: PaperOptions,
    pub seconds: f64,
    pub systems: Vec<SystemReport>,
    /// YCSB's points.
    pub points: Vec<Point>,
    /// TPC-C's, Voter's and TATP's points.
    pub oltp: Vec<OltpPoint>,
    /// The loads a system could not do (it sat out the larger sizes of that part).
    pub refusals: Vec<Refusal>,
    /// Permafrost's median throughput over each peer's, per mix, skew and size.
    pub table: Vec<Row>,
    /// The paper's shape: whether Permafrost's lead grows with the data and with skew.
    pub findings: Vec<Finding>,
}

/// One mix, skew and data size: every system's median throughput, and Permafrost's over
/// each peer's.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub mix: Mix,
    pub skew: f64,
    pub ratio: u32,
    pub records: u64,
    pub median_tps: BTreeMap<&'static str, f64>,
    pub permafrost_over: BTreeMap<&'static str, f64>,
}

/// One claim of the paper, checked against this run's rows.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub claim: String,
    /// Cells (mix and skew, or mix and size) that agree, out of `cells`.
    pub agree: usize,
    pub cells: usize,
    /// The cells that do not agree, with their ratios.
    pub exceptions: Vec<String>,
}
