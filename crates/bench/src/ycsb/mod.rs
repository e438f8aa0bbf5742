//! YCSB: one table of `records` rows (a BIGINT key and 10 text fields), read and updated
//! one row at a time with Zipfian skew (DeBrabant et al. 2013 §4.1).
//!
//! The driver is closed-loop: each client thread keeps a window of operations in flight
//! against its target and issues a new one whenever one completes. It runs a warm-up, then
//! measures for the requested duration; every read is verified ([`values`]), latencies go
//! into an HdrHistogram and throughput is sampled every second.

pub mod embedded;
pub mod keys;
pub mod mariadb;
pub mod server;
pub mod values;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::BenchError;
pub use crate::report::LogCounters;
use crate::report::{
    AnticacheReport, CommandLogReport, CpuReport, LoadReport, MemoryReport, Report, Sample, ServerCpuReport,
    ServerUsage, peak_rss_bytes, process_cpu_seconds, rss_bytes,
};

pub const FIELDS: usize = 10;
/// Bytes of the key column in the tuple-size arithmetic.
pub const KEY_BYTES: usize = 8;

/// The three workload mixes of the paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    ReadOnly,
    ReadHeavy,
    WriteHeavy,
}

impl Mix {
    pub fn parse(s: &str) -> Result<Mix, String> {
        match s {
            "read-only" => Ok(Mix::ReadOnly),
            "read-heavy" => Ok(Mix::ReadHeavy),
            "write-heavy" => Ok(Mix::WriteHeavy),
            _ => Err(format!("unknown mix \"{s}\" (read-only, read-heavy, write-heavy)")),
        }
    }

    /// The name `parse` takes.
    pub fn name(self) -> &'static str {
        match self {
            Mix::ReadOnly => "read-only",
            Mix::ReadHeavy => "read-heavy",
            Mix::WriteHeavy => "write-heavy",
        }
    }

    /// Fraction of operations that are reads.
    pub fn read_fraction(self) -> f64 {
        match self {
            Mix::ReadOnly => 1.0,
            Mix::ReadHeavy => 0.9,
            Mix::WriteHeavy => 0.5,
        }
    }
}

/// What `--target` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// The engine in this process.
    Embedded,
    /// A running `permafrost serve` at `HOST:PORT`, over the PostgreSQL protocol.
    Server(String),
    /// MariaDB through its own driver, at mysql_async's URL.
    MariaDb(String),
}

impl TargetSpec {
    pub fn parse(s: &str) -> Result<TargetSpec, BenchError> {
        if s == "embedded" {
            return Ok(TargetSpec::Embedded);
        }
        if let Some(addr) = s.strip_prefix("server=") {
            parse_addr(addr)?;
            return Ok(TargetSpec::Server(addr.to_string()));
        }
        if let Some(url) = s.strip_prefix("mariadb=")
            && url.starts_with("mysql://")
        {
            return Ok(TargetSpec::MariaDb(url.to_string()));
        }
        Err(BenchError::Options(format!(
            "invalid --target \"{s}\": expected embedded, server=HOST:PORT or mariadb=mysql://USER@HOST/DB[?socket=PATH]"
        )))
    }
}

/// Splits `HOST:PORT` (`[v6]:PORT` for an IPv6 address).
pub fn parse_addr(s: &str) -> Result<(String, u16), BenchError> {
    let bad = || {
        BenchError::Options(format!(
            "invalid --target server address \"{s}\": expected server=HOST:PORT"
        ))
    };
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

/// What to run.
#[derive(Debug, Clone, Serialize)]
pub struct YcsbOptions {
    pub records: u64,
    /// Bytes per tuple: the 8-byte key plus 10 equal fields.
    pub tuple_size: usize,
    pub mix: Mix,
    pub skew: f64,
    pub clients: usize,
    /// Operations each client keeps in flight.
    pub in_flight: usize,
    pub warmup: f64,
    pub duration: f64,
    pub seed: u64,
}

impl YcsbOptions {
    pub fn field_len(&self) -> usize {
        (self.tuple_size.saturating_sub(KEY_BYTES)) / FIELDS
    }

    pub fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: String| Err(BenchError::Options(m));
        if self.records == 0 {
            return bad("--records must be at least 1".into());
        }
        if self.field_len() < values::MIN_FIELD_LEN {
            return bad(format!(
                "--tuple-size must be at least {} bytes (key + 10 fields of {} bytes)",
                KEY_BYTES + FIELDS * values::MIN_FIELD_LEN,
                values::MIN_FIELD_LEN
            ));
        }
        if self.field_len() > 65_535 {
            return bad("--tuple-size is too large (fields of at most 65535 bytes)".into());
        }
        if !(self.skew >= 0.0 && self.skew.is_finite()) {
            return bad(format!("--skew must be >= 0, got {}", self.skew));
        }
        if self.clients == 0 || self.clients > 1024 {
            return bad("--clients must be between 1 and 1024".into());
        }
        if self.in_flight == 0 {
            return bad("--in-flight must be at least 1".into());
        }
        if self.warmup.is_nan() || self.warmup < 0.0 || self.duration.is_nan() || self.duration <= 0.0 {
            return bad("--warmup must be >= 0 and --duration > 0".into());
        }
        Ok(())
    }
}

/// One operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read {
        key: u64,
    },
    /// Write field `field` of `key` with the value of version `version`.
    Update {
        key: u64,
        field: u32,
        version: u32,
    },
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// A read returned a value that is not a value of that record and field.
    VerifyFailed,
    /// The record was not found.
    Missing,
    Aborted,
    Failed(String),
}

/// A connection (or session) of a benchmark client to a target.
pub trait YcsbClient: Send {
    /// Starts an operation; `token` comes back with its outcome.
    fn submit(&mut self, token: u64, op: Op) -> Result<(), BenchError>;
    /// Waits until at least one operation completes and appends the completed ones.
    fn wait(&mut self, out: &mut Vec<(u64, Outcome)>) -> Result<(), BenchError>;
}

/// Engine-side figures a target can report.
#[derive(Debug, Clone, Default)]
pub struct TargetStats {
    pub restarts_evicted: u64,
    /// Resident and peak resident bytes of the database's process, when it is another
    /// process than the benchmark's (the server target).
    pub resident: Option<(u64, u64)>,
    pub anticache: AnticacheReport,
    pub memory: MemoryReport,
    /// The command log's counters, when the target has one.
    pub log: Option<LogCounters>,
    /// The server process's CPU time and context switches (server targets).
    pub server: Option<ServerUsage>,
}

/// A system YCSB runs against.
pub trait YcsbTarget: Send + Sync {
    fn name(&self) -> String;
    /// Loads the rows `from..records` at version 0, calling `progress` with the number of
    /// rows the table holds so far. With `from` 0 it creates the table (and procedures)
    /// first, dropping one a former load left; with more, the table holds `0..from` already
    /// and grows.
    fn load(&self, opts: &YcsbOptions, from: u64, progress: &(dyn Fn(u64) + Sync)) -> Result<(), BenchError>;
    fn client(&self, opts: &YcsbOptions) -> Result<Box<dyn YcsbClient>, BenchError>;
    fn stats(&self) -> TargetStats;
    /// Settings of the target worth recording in the report.
    fn settings(&self) -> serde_json::Value;
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

struct ClientResult {
    hist: Histogram<u64>,
    committed: u64,
    aborted: u64,
    failed: u64,
    verify_errors: u64,
    reads: u64,
    updates: u64,
    errors: Vec<String>,
}

impl ClientResult {
    fn new() -> ClientResult {
        ClientResult {
            hist: Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds"),
            committed: 0,
            aborted: 0,
            failed: 0,
            verify_errors: 0,
            reads: 0,
            updates: 0,
            errors: Vec::new(),
        }
    }
}

/// Loads the target and runs the workload: the load (`load`), the warm-up and measured run
/// (`measure`), then the report of both (`report`).
pub fn run(target: &dyn YcsbTarget, opts: &YcsbOptions, progress_bar: bool) -> Result<Report, BenchError> {
    grow_and_run(target, opts, 0, progress_bar)
}

/// Like [`run`] on a table that already holds the rows `0..from` (loaded by a former run
/// with fewer records): it loads `from..records`, then runs on all of them.
pub fn grow_and_run(
    target: &dyn YcsbTarget,
    opts: &YcsbOptions,
    from: u64,
    progress_bar: bool,
) -> Result<Report, BenchError> {
    opts.validate()?;
    if from > opts.records {
        return Err(BenchError::Options(format!(
            "the table holds {from} records already, more than the {} asked for",
            opts.records
        )));
    }
    crate::report::reset_peak_rss();
    let loaded = load(target, opts, from, progress_bar)?;
    let (results, measured) = measure(target, opts)?;
    Ok(report(target, opts, &loaded, results, measured))
}

/// Resident memory of the database: this process, or the server's.
fn resident(target: &dyn YcsbTarget) -> u64 {
    target.stats().resident.map_or_else(rss_bytes, |r| r.0)
}

/// Peak resident memory of the database: this process, or the server's.
fn peak_resident(target: &dyn YcsbTarget) -> u64 {
    target.stats().resident.map_or_else(peak_rss_bytes, |r| r.1)
}

/// What the load measured.
struct Loaded {
    rss_before: u64,
    rss_after: u64,
    /// The bytes the database accounts for after the load.
    accounted: u64,
    /// The rows this load added (`records` less those the table held before).
    rows: u64,
    seconds: f64,
}

/// Loads the target's records (with a progress bar when asked), measuring memory before
/// and after.
fn load(target: &dyn YcsbTarget, opts: &YcsbOptions, from: u64, progress_bar: bool) -> Result<Loaded, BenchError> {
    let rss_before = resident(target);
    let bar = if progress_bar {
        let b = indicatif::ProgressBar::new(opts.records);
        b.set_style(
            indicatif::ProgressStyle::with_template("loading {bar:40} {pos}/{len} records ({per_sec}, eta {eta})")
                .expect("valid template"),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let load_start = Instant::now();
    target.load(opts, from, &|n| bar.set_position(n))?;
    bar.finish_and_clear();
    let seconds = load_start.elapsed().as_secs_f64();
    let rss_after = resident(target);
    let accounted = target.stats().memory.accounted();
    Ok(Loaded {
        rss_before,
        rss_after,
        accounted,
        rows: opts.records - from,
        seconds,
    })
}

/// What was sampled during the run, besides the clients' results.
struct Measured {
    /// The target's anti-cache figures before the run.
    before: AnticacheReport,
    /// One sample a second.
    timeseries: Vec<Sample>,
    /// The largest resident size sampled.
    max_rss: u64,
    /// The process's CPU seconds (user, system) when the measured phase began and ended.
    cpu_start: (f64, f64),
    cpu_end: (f64, f64),
    /// The command log's counters when the measured phase began.
    log_start: Option<LogCounters>,
    /// The server process's usage when the measured phase began and ended.
    server_start: Option<ServerUsage>,
    server_end: Option<ServerUsage>,
}

/// Runs the clients through the warm-up and the measured phase, sampling every second, and
/// collects their results.
fn measure(target: &dyn YcsbTarget, opts: &YcsbOptions) -> Result<(Vec<ClientResult>, Measured), BenchError> {
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let done = Arc::new(AtomicU64::new(0));
    let failed_hard = Arc::new(AtomicBool::new(false));
    let keys = keys::KeyChooser::new(opts.records, opts.skew).map_err(BenchError::Options)?;
    let mut measured = Measured {
        before: target.stats().anticache,
        timeseries: Vec::new(),
        max_rss: 0,
        cpu_start: (0.0, 0.0),
        cpu_end: (0.0, 0.0),
        log_start: None,
        server_start: None,
        server_end: None,
    };
    let results: Vec<ClientResult> = std::thread::scope(|scope| -> Result<Vec<ClientResult>, BenchError> {
        let mut handles = Vec::new();
        for c in 0..opts.clients {
            let client = target.client(opts)?;
            let (phase, done, failed_hard, keys) = (phase.clone(), done.clone(), failed_hard.clone(), keys.clone());
            handles.push(scope.spawn(move || {
                let r = client_loop(c, client, opts, &keys, &phase, &done);
                if r.is_err() {
                    failed_hard.store(true, Ordering::Relaxed);
                }
                r
            }));
        }
        sample_run(target, opts, &phase, &done, &failed_hard, &mut measured);
        measured.cpu_end = process_cpu_seconds();
        measured.server_end = target.stats().server;
        phase.store(STOP, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| BenchError::Client("client thread panicked".into()))?
            })
            .collect()
    })?;
    Ok((results, measured))
}

/// Samples the run every second (throughput, resident memory, anti-cache activity) and
/// switches the clients' `phase` on time: to the measured phase after the warm-up (noting
/// the CPU and log figures then), to the end after the duration or when a client failed.
fn sample_run(
    target: &dyn YcsbTarget,
    opts: &YcsbOptions,
    phase: &AtomicU8,
    done: &AtomicU64,
    failed_hard: &AtomicBool,
    m: &mut Measured,
) {
    let start = Instant::now();
    let warmup = Duration::from_secs_f64(opts.warmup);
    let total = warmup + Duration::from_secs_f64(opts.duration);
    let mut last = (0u64, start);
    let mut last_evictions = target.stats().anticache.evictions;
    let mut tick = 1u64;
    loop {
        let next = start + Duration::from_secs(tick);
        let warming = phase.load(Ordering::Relaxed) == WARMUP;
        // While warming up, wake at its end too (a warm-up of 0 or of a fraction of a
        // second ends before the first sample): the clients count from then on.
        let mut until = next.min(start + total);
        if warming {
            until = until.min(start + warmup);
        }
        let now = Instant::now();
        if until > now {
            std::thread::sleep(until - now);
        }
        let now = Instant::now();
        if warming && now >= start + warmup {
            phase.store(MEASURE, Ordering::Relaxed);
            m.cpu_start = process_cpu_seconds();
            let s = target.stats();
            m.log_start = s.log;
            m.server_start = s.server;
            if now < next && now < start + total {
                continue;
            }
        }
        let d = done.load(Ordering::Relaxed);
        let last_sample = now >= start + total || failed_hard.load(Ordering::Relaxed);
        if last_sample {
            // The measured phase ends with the last sample, before the target's
            // figures are gathered (which takes a while on a loaded machine, while the
            // clients would go on counting).
            phase.store(STOP, Ordering::Relaxed);
        }
        let secs = now.duration_since(last.1).as_secs_f64();
        if secs > 0.0 {
            let t = now.duration_since(start).as_secs_f64() - opts.warmup;
            let s = target.stats();
            let rss = s.resident.map_or_else(rss_bytes, |r| r.0);
            m.max_rss = m.max_rss.max(rss);
            m.timeseries.push(Sample {
                t: (t * 1000.0).round() / 1000.0,
                tps: (d - last.0) as f64 / secs,
                evicting: s.anticache.evictions > last_evictions,
                resident_bytes: rss,
                evicted_tuples: s.anticache.evicted_now,
                blocks_read: s.anticache.blocks_read,
            });
            last_evictions = s.anticache.evictions;
        }
        last = (d, now);
        tick += 1;
        if last_sample {
            break;
        }
    }
}

/// The report of a run: the clients' results added up, the target's figures since the
/// run began, memory, load, samples, CPU and the settings.
fn report(
    target: &dyn YcsbTarget,
    opts: &YcsbOptions,
    loaded: &Loaded,
    results: Vec<ClientResult>,
    m: Measured,
) -> Report {
    let mut report = Report {
        benchmark: "ycsb".into(),
        target: target.name(),
        ..Report::default()
    };
    let hist = add_results(&mut report, results);
    report.throughput_tps = report.committed as f64 / opts.duration;
    report.latency_us = crate::report::Latency::from_histogram(&hist);
    let stats = target.stats();
    report.restarts_evicted = stats.restarts_evicted;
    report.command_log = match (m.log_start, stats.log) {
        (Some(a), Some(b)) => Some(CommandLogReport::between(&a, &b, opts.duration)),
        _ => None,
    };
    report.anticache = stats.anticache.since(&m.before);
    report.anticache.block_reads_per_sec = report.anticache.blocks_read as f64 / opts.duration;
    let (rss_before, rss_after, accounted) = (loaded.rss_before, loaded.rss_after, loaded.accounted);
    report.memory = MemoryReport {
        peak_rss_bytes: peak_resident(target),
        rss_before_load_bytes: rss_before,
        rss_after_load_bytes: rss_after,
        accounted_after_load_bytes: accounted,
        accounted_to_rss_growth: accounted as f64 / (rss_after.saturating_sub(rss_before).max(1)) as f64,
        peak_rss_growth_bytes: peak_resident(target).saturating_sub(rss_before),
        max_rss_growth_during_run_bytes: m.max_rss.saturating_sub(rss_before),
        ..stats.memory
    };
    report.load = LoadReport {
        records: loaded.rows,
        seconds: loaded.seconds,
        records_per_sec: loaded.rows as f64 / loaded.seconds.max(1e-9),
    };
    report.timeseries = m.timeseries;
    let (user, system) = (m.cpu_end.0 - m.cpu_start.0, m.cpu_end.1 - m.cpu_start.1);
    report.process_cpu = CpuReport {
        user_seconds: user,
        system_seconds: system,
        cores: (user + system) / opts.duration,
        us_per_txn: (user + system) * 1e6 / report.committed.max(1) as f64,
    };
    report.server_cpu = match (m.server_start, m.server_end) {
        (Some(a), Some(b)) => Some(ServerCpuReport::between(&a, &b, report.committed, opts.duration)),
        _ => None,
    };
    let mut settings = serde_json::to_value(opts).expect("serializable");
    if let (Some(s), serde_json::Value::Object(extra)) = (settings.as_object_mut(), target.settings()) {
        s.extend(extra);
    }
    report.settings = settings;
    report
}

/// Adds the clients' counts and first errors (10 at most) to `report`; their latencies,
/// merged.
fn add_results(report: &mut Report, results: Vec<ClientResult>) -> Histogram<u64> {
    let mut hist = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("valid bounds");
    for r in results {
        hist.add(&r.hist).expect("same bounds");
        report.committed += r.committed;
        report.aborted_user += r.aborted;
        report.failed += r.failed;
        report.verify_errors += r.verify_errors;
        report.reads += r.reads;
        report.updates += r.updates;
        for e in r.errors {
            if report.errors.len() < 10 {
                report.errors.push(e);
            }
        }
    }
    hist
}

fn client_loop(
    id: usize,
    mut client: Box<dyn YcsbClient>,
    opts: &YcsbOptions,
    keys: &keys::KeyChooser,
    phase: &AtomicU8,
    done: &AtomicU64,
) -> Result<ClientResult, BenchError> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(opts.seed ^ (id as u64).wrapping_mul(0x9E37_79B9));
    let read_fraction = opts.read_fraction();
    let mut version: u32 = ((id as u32) + 1) << 22;
    let mut res = ClientResult::new();
    // Per token: when it was submitted and whether it is a read.
    let mut started: Vec<(Instant, bool)> = vec![(Instant::now(), true); opts.in_flight];
    let mut free: Vec<u64> = (0..opts.in_flight as u64).rev().collect();
    let mut completed = Vec::with_capacity(opts.in_flight);
    let mut measuring = false;
    loop {
        let p = phase.load(Ordering::Relaxed);
        if p == MEASURE && !measuring {
            measuring = true;
            // Warm-up figures are dropped; errors seen so far are kept.
            res = ClientResult {
                errors: std::mem::take(&mut res.errors),
                ..ClientResult::new()
            };
        }
        if p == STOP {
            break;
        }
        let now = Instant::now();
        while let Some(token) = free.pop() {
            let key = keys.next(&mut rng);
            let read = rng.random::<f64>() < read_fraction;
            let op = if read {
                Op::Read { key }
            } else {
                version = version.wrapping_add(1);
                Op::Update {
                    key,
                    field: rng.random_range(0..FIELDS as u32),
                    version,
                }
            };
            started[token as usize] = (now, read);
            client.submit(token, op)?;
        }
        completed.clear();
        client.wait(&mut completed)?;
        let now = Instant::now();
        done.fetch_add(completed.len() as u64, Ordering::Relaxed);
        for (token, outcome) in completed.drain(..) {
            let (t0, read) = started[token as usize];
            free.push(token);
            if !measuring {
                continue;
            }
            let us = now.duration_since(t0).as_micros().max(1) as u64;
            let _ = res.hist.record(us.min(600_000_000));
            match outcome {
                Outcome::Ok => {
                    res.committed += 1;
                    if read { res.reads += 1 } else { res.updates += 1 }
                }
                Outcome::VerifyFailed => {
                    res.verify_errors += 1;
                    res.committed += 1;
                    if res.errors.len() < 5 {
                        res.errors.push("read returned a value that fails verification".into());
                    }
                }
                Outcome::Missing => {
                    res.verify_errors += 1;
                    if res.errors.len() < 5 {
                        res.errors.push("record not found".into());
                    }
                }
                Outcome::Aborted => res.aborted += 1,
                Outcome::Failed(e) => {
                    res.failed += 1;
                    if res.errors.len() < 5 {
                        res.errors.push(e);
                    }
                }
            }
        }
    }
    Ok(res)
}

impl YcsbOptions {
    fn read_fraction(&self) -> f64 {
        self.mix.read_fraction()
    }
}
