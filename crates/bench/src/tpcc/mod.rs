//! TPC-C over the PostgreSQL wire protocol: the specification's nine tables and initial
//! population, its five transactions in the full mix (New-Order 45 %, Payment 43 %,
//! Order-Status, Delivery and Stock-Level 4 % each, dealt from a deck), each an interactive
//! transaction of one statement per round trip, and its consistency conditions checked after
//! every run. The same client code drives any server that speaks the protocol (Permafrost,
//! PostgreSQL), through tokio-postgres.
//!
//! Faithful where the H-Store implementations were not: 60 % of the customers of Payment and
//! Order-Status are chosen by last name; 1 % of New-Orders name an unused item and are rolled
//! back; with more than one warehouse, 1 % of order lines are supplied by another warehouse
//! and 15 % of payments are for a customer of another one. There are no keying or think
//! times: the throughput is reported as New-Orders per minute, "tpmC-equivalent", which is
//! not a TPC-C result. README, "TPC-C with `permafrost bench tpcc`", says what else differs.

pub mod calls;
pub mod check;
pub mod embedded;
pub mod inputs;
pub mod mariadb;
pub mod mariadb_procs;
pub mod options;
pub mod plpgsql;
pub mod procs;
pub mod random;
pub mod schema;
pub mod session;
pub mod sql;
pub mod txns;

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde::Serialize;
use tokio_postgres::Client;

use crate::BenchError;
use crate::report::Latency;
pub use crate::way::Mode;
use crate::way::{Flavor, MAX_ATTEMPTS};
use crate::ycsb::server::describe;
use check::CheckResult;
use inputs::Input;
use inputs::Inputs;
pub use options::{DISTRICTS, Mix, Scale, TpccOptions};
use random::{NuConstants, TxnType};
use session::Postgres;
use txns::{Done, Ended, Failure};

/// Distinct error messages kept for the report.
const ERRORS_KEPT: usize = 10;

/// A server to run against: `HOST:PORT`, a user and a database.
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: String,
    config: tokio_postgres::Config,
}

impl Target {
    pub fn new(addr: &str, user: &str, dbname: &str) -> Result<Target, BenchError> {
        let (host, port) = crate::ycsb::parse_addr(addr)?;
        let mut config = tokio_postgres::Config::new();
        config
            .host(&host)
            .port(port)
            .user(user)
            .dbname(dbname)
            .application_name("permafrost-bench")
            .connect_timeout(Duration::from_secs(10));
        Ok(Target {
            addr: addr.to_string(),
            config,
        })
    }

    pub(crate) async fn connect(&self) -> Result<Client, BenchError> {
        crate::ycsb::server::connect(&self.config, &self.addr).await
    }

    /// A connection for the load and the checks, and the server's `SELECT version()`.
    pub(crate) async fn connect_admin(&self) -> Result<(Client, String), BenchError> {
        let admin = self.connect().await?;
        let version: String = admin
            .query_one("SELECT version()", &[])
            .await
            .map_err(|e| BenchError::Client(format!("SELECT version(): {}", describe(&e))))?
            .get(0);
        Ok((admin, version))
    }

    /// The runtime a run's `clients` connections are driven from: a worker thread per
    /// core, no more than the connections.
    pub(crate) fn runtime(clients: usize) -> Result<tokio::runtime::Runtime, BenchError> {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(clients);
        Ok(tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?)
    }
}

/// One transaction type's figures over the measured seconds.
#[derive(Debug, Clone, Serialize)]
pub struct TypeReport {
    pub name: &'static str,
    /// Committed, or rolled back as the specification asks (New-Order's unused item).
    pub completed: u64,
    pub rolled_back: u64,
    /// Attempts refused with a serialization failure or a deadlock and run again.
    pub retries: u64,
    pub failed: u64,
    /// From the first attempt to the end of the last, microseconds.
    pub latency: Latency,
}

/// A run's report (the JSON `--json` writes).
#[derive(Debug, Clone, Serialize)]
pub struct TpccReport {
    pub benchmark: &'static str,
    pub mode: &'static str,
    pub target: String,
    pub server_version: String,
    pub warehouses: u32,
    pub clients: usize,
    pub seed: u64,
    pub scale: Scale,
    pub specification_scale: bool,
    pub load_seconds: Option<f64>,
    pub warmup_seconds: f64,
    pub measured_seconds: f64,
    /// Completed transactions of every type per second.
    pub transactions_per_sec: f64,
    /// Committed New-Orders per minute, without keying and think times: not a TPC-C tpmC.
    pub tpmc_equivalent: f64,
    /// Retries per completed transaction, in percent.
    pub retried_percent: f64,
    pub by_type: Vec<TypeReport>,
    pub skipped_deliveries: u64,
    pub failed: u64,
    pub errors: Vec<String>,
    pub checks: Vec<CheckResult>,
    pub checks_passed: usize,
}

impl TpccReport {
    pub fn summary(&self) -> String {
        let mut s = format!(
            "TPC-C ({}) against {} ({}): {} warehouses, {} clients\n",
            self.mode, self.target, self.server_version, self.warehouses, self.clients,
        );
        if self.specification_scale && self.scale.orders > Scale::SPEC.orders {
            s.push_str(&format!(
                "grown: {} orders per district at load (the specification's 3,000 and older delivered ones)\n",
                self.scale.orders
            ));
        }
        if self.measured_seconds > 0.0 {
            s.push_str(&format!(
                "{:.0} s measured: {:.1} transactions/s, {:.0} New-Orders/min (tpmC-equivalent: no think \
                 times), {:.2} % retried, {} failed\n",
                self.measured_seconds,
                self.transactions_per_sec,
                self.tpmc_equivalent,
                self.retried_percent,
                self.failed,
            ));
        }
        if !self.specification_scale {
            s.push_str("population smaller than the specification's: not TPC-C\n");
        }
        if let Some(l) = self.load_seconds {
            s.push_str(&format!("load: {l:.1} s\n"));
        }
        for t in self.by_type.iter().filter(|_| self.measured_seconds > 0.0) {
            s.push_str(&format!(
                "  {:<12} {:>8} done {:>6} rolled back {:>6} retries {:>4} failed   p50 {:>7.1} ms  p95 {:>7.1} ms  p99 {:>7.1} ms\n",
                t.name,
                t.completed,
                t.rolled_back,
                t.retries,
                t.failed,
                t.latency.p50 as f64 / 1000.0,
                t.latency.p95 as f64 / 1000.0,
                t.latency.p99 as f64 / 1000.0,
            ));
        }
        if self.skipped_deliveries > 0 {
            s.push_str(&format!(
                "  deliveries skipped for want of an undelivered order: {}\n",
                self.skipped_deliveries
            ));
        }
        for e in &self.errors {
            s.push_str(&format!("  error: {e}\n"));
        }
        s.push_str(&CheckResult::summary(&self.checks, "consistency conditions"));
        s
    }

    /// Whether every condition held and no transaction failed.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.checks_passed == self.checks.len()
    }
}

/// A terminal's figures, by transaction type (TPC-C's and TATP's).
pub(crate) struct Tally {
    pub(crate) completed: Vec<u64>,
    pub(crate) rolled_back: Vec<u64>,
    pub(crate) retries: Vec<u64>,
    pub(crate) failed: Vec<u64>,
    pub(crate) latency: Vec<Histogram<u64>>,
    pub(crate) skipped_deliveries: u64,
    pub(crate) errors: Vec<String>,
}

impl Tally {
    fn new() -> Tally {
        Tally::with_kinds(TxnType::ALL.len())
    }

    /// Figures of `kinds` transaction types, all zero.
    pub(crate) fn with_kinds(kinds: usize) -> Tally {
        Tally {
            completed: vec![0; kinds],
            rolled_back: vec![0; kinds],
            retries: vec![0; kinds],
            failed: vec![0; kinds],
            latency: (0..kinds)
                .map(|_| Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds"))
                .collect(),
            skipped_deliveries: 0,
            errors: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, other: Tally) {
        for i in 0..self.completed.len() {
            self.completed[i] += other.completed[i];
            self.rolled_back[i] += other.rolled_back[i];
            self.retries[i] += other.retries[i];
            self.failed[i] += other.failed[i];
            self.latency[i].add(&other.latency[i]).expect("same bounds");
        }
        self.skipped_deliveries += other.skipped_deliveries;
        for e in other.errors {
            note_error(&mut self.errors, e);
        }
    }

    /// Each type's figures, its name from `names` (in the tally's order).
    pub(crate) fn by_type(&self, names: &[&'static str]) -> Vec<TypeReport> {
        names
            .iter()
            .enumerate()
            .map(|(i, name)| TypeReport {
                name,
                completed: self.completed[i],
                rolled_back: self.rolled_back[i],
                retries: self.retries[i],
                failed: self.failed[i],
                latency: Latency::from_histogram(&self.latency[i]),
            })
            .collect()
    }

    /// Completed, retried and failed transactions of every type.
    pub(crate) fn totals(&self) -> (u64, u64, u64) {
        (
            self.completed.iter().sum(),
            self.retries.iter().sum(),
            self.failed.iter().sum(),
        )
    }
}

pub(crate) fn note_error(errors: &mut Vec<String>, e: String) {
    if errors.len() < ERRORS_KEPT && !errors.contains(&e) {
        errors.push(e);
    }
}

/// Loads (when asked), runs the terminals through the warm-up and the measured seconds, and
/// checks the consistency conditions.
pub fn run(target: &Target, opts: &TpccOptions, mode: Mode, progress_bar: bool) -> Result<TpccReport, BenchError> {
    opts.validate()?;
    Target::runtime(opts.clients)?.block_on(run_async(target, opts, mode, progress_bar))
}

async fn run_async(
    target: &Target,
    opts: &TpccOptions,
    mode: Mode,
    progress_bar: bool,
) -> Result<TpccReport, BenchError> {
    let (admin, server_version) = target.connect_admin().await?;
    let nu = NuConstants::draw(&mut SmallRng::seed_from_u64(opts.seed));
    let flavor = Flavor::of(&server_version);
    let load_seconds = if opts.load {
        Some(load(target, (&admin, flavor), opts, nu.c_last, progress_bar).await?)
    } else {
        None
    };
    if mode == Mode::Procedures && opts.run {
        calls::create(&admin, flavor).await?;
    }
    let (tally, measured_seconds) = if opts.run {
        (
            run_terminals(opts, nu, progress_bar, |inputs, measure_from, end| {
                let target = target.clone();
                async move { terminal(&target, (mode, flavor), inputs, measure_from, end).await }
            })
            .await?,
            opts.duration,
        )
    } else {
        (Tally::new(), 0.0)
    };
    let checks = check::check(&admin).await;
    Ok(report(
        opts,
        mode,
        (target.addr.clone(), server_version),
        load_seconds,
        measured_seconds,
        tally,
        checks,
    ))
}

/// Runs the terminals through the warm-up and the measured seconds, each the future
/// `terminal` makes of its inputs and window; their figures summed.
pub(crate) async fn run_terminals<F, T>(
    opts: &TpccOptions,
    nu: NuConstants,
    progress_bar: bool,
    terminal: F,
) -> Result<Tally, BenchError>
where
    F: Fn(Inputs, Instant, Instant) -> T,
    T: Future<Output = Result<Tally, BenchError>> + Send + 'static,
{
    if progress_bar {
        eprintln!(
            "running {} terminals: {:.0} s warm-up, {:.0} s measured",
            opts.clients, opts.warmup, opts.duration
        );
    }
    let measure_from = Instant::now() + Duration::from_secs_f64(opts.warmup);
    let end = measure_from + Duration::from_secs_f64(opts.duration);
    let handles: Vec<_> = (0..opts.clients)
        .map(|n| tokio::spawn(terminal(Inputs::for_terminal(opts, nu, n), measure_from, end)))
        .collect();
    let mut tally = Tally::new();
    for h in handles {
        let t = h
            .await
            .map_err(|e| BenchError::Client(format!("a terminal stopped: {e}")))??;
        tally.add(t);
    }
    Ok(tally)
}

/// Creates the tables and loads the population over several connections; the seconds taken.
async fn load(
    target: &Target,
    (admin, flavor): (&Client, Flavor),
    opts: &TpccOptions,
    c_last_c: u32,
    progress_bar: bool,
) -> Result<f64, BenchError> {
    let started = Instant::now();
    schema::create(admin, flavor).await?;
    let (jobs, bar) = schema::planned_jobs(opts, progress_bar);
    let jobs = Arc::new(Mutex::new(jobs));
    let loaded = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for _ in 0..schema::LOAD_CONNECTIONS {
        let (target, opts, jobs, loaded, bar) =
            (target.clone(), opts.clone(), jobs.clone(), loaded.clone(), bar.clone());
        handles.push(tokio::spawn(async move {
            let client = target.connect().await?;
            schema::loader(&client, &opts, c_last_c, &jobs, &loaded, &|n| bar.set_position(n)).await
        }));
    }
    for h in handles {
        h.await
            .map_err(|e| BenchError::Client(format!("a loader stopped: {e}")))??;
    }
    bar.finish_and_clear();
    Ok(started.elapsed().as_secs_f64())
}

/// A terminal's connection, running one attempt of a transaction at a time.
pub(crate) trait Attempt: Send {
    fn attempt(&mut self, input: &Input) -> impl Future<Output = Result<Done, Failure>> + Send;
}

/// What a terminal's PostgreSQL-protocol connection runs a transaction with.
enum Way {
    Blocks(Box<Postgres>),
    Calls(Client, calls::Calls),
}

impl Attempt for Way {
    async fn attempt(&mut self, input: &Input) -> Result<Done, Failure> {
        match self {
            Way::Blocks(session) => txns::run(session.as_mut(), input).await,
            Way::Calls(client, calls) => calls::run(client, calls, input).await,
        }
    }
}

/// One terminal: its connection runs transactions until `end`, those begun after
/// `measure_from` counted.
async fn terminal(
    target: &Target,
    (mode, flavor): (Mode, Flavor),
    inputs: Inputs,
    measure_from: Instant,
    end: Instant,
) -> Result<Tally, BenchError> {
    let client = target.connect().await?;
    let prepared = match mode {
        Mode::Procedures => match calls::Calls::prepare(&client, flavor).await {
            Ok(calls) => Ok(Way::Calls(client, calls)),
            Err(e) => Err(e),
        },
        _ => Postgres::prepare(client).await.map(|s| Way::Blocks(Box::new(s))),
    };
    let way = prepared
        .map_err(|e| BenchError::Client(format!("preparing the transactions' statements: {}", describe(&e))))?;
    drive(way, inputs, measure_from, end).await
}

/// Runs transactions through `way` until `end`, those begun after `measure_from` counted;
/// a refused attempt is retried when the refusal says so.
pub(crate) async fn drive(
    mut way: impl Attempt,
    mut inputs: Inputs,
    measure_from: Instant,
    end: Instant,
) -> Result<Tally, BenchError> {
    let mut tally = Tally::new();
    loop {
        let began = Instant::now();
        if began >= end {
            return Ok(tally);
        }
        let input = inputs.draw();
        let kind = input.kind().index();
        let mut retries = 0;
        let outcome = loop {
            match way.attempt(&input).await {
                Err(f) if f.retryable() && retries + 1 < MAX_ATTEMPTS => retries += 1,
                other => break other,
            }
        };
        if began < measure_from {
            continue;
        }
        tally.retries[kind] += retries as u64;
        match outcome {
            Ok(done) => {
                tally.completed[kind] += 1;
                if done.ended == Some(Ended::RolledBack) {
                    tally.rolled_back[kind] += 1;
                }
                tally.skipped_deliveries += done.skipped_deliveries as u64;
                let micros = began.elapsed().as_micros() as u64;
                tally.latency[kind].saturating_record(micros.max(1));
            }
            Err(f) => {
                tally.failed[kind] += 1;
                let message = f.message();
                let name = input.kind().name();
                note_error(&mut tally.errors, format!("{name}: {message}"));
                if f.closed() {
                    return Err(BenchError::Client(format!("{name}: the connection closed: {message}")));
                }
            }
        }
    }
}

fn per_sec(n: f64, seconds: f64) -> f64 {
    if seconds > 0.0 { n / seconds } else { 0.0 }
}

/// The report of a run in `mode` against `(target, server_version)`.
fn report(
    opts: &TpccOptions,
    mode: Mode,
    (target, server_version): (String, String),
    load_seconds: Option<f64>,
    measured_seconds: f64,
    tally: Tally,
    checks: Vec<CheckResult>,
) -> TpccReport {
    let (completed, retries, failed) = tally.totals();
    let new_orders = tally.completed[TxnType::NewOrder.index()] - tally.rolled_back[TxnType::NewOrder.index()];
    let names: Vec<&'static str> = TxnType::ALL.iter().map(|t| t.name()).collect();
    let by_type = tally.by_type(&names);
    let checks_passed = checks.iter().filter(|c| c.passed()).count();
    TpccReport {
        benchmark: "tpcc",
        mode: mode.name(),
        target,
        server_version,
        warehouses: opts.warehouses,
        clients: opts.clients,
        seed: opts.seed,
        scale: opts.scale,
        specification_scale: opts.scale == Scale::grown(opts.scale.orders) && opts.scale.orders >= Scale::SPEC.orders,
        load_seconds,
        warmup_seconds: opts.warmup,
        measured_seconds,
        transactions_per_sec: per_sec(completed as f64, measured_seconds),
        tpmc_equivalent: per_sec(new_orders as f64 * 60.0, measured_seconds),
        retried_percent: if completed == 0 {
            0.0
        } else {
            100.0 * retries as f64 / completed as f64
        },
        by_type,
        skipped_deliveries: tally.skipped_deliveries,
        failed,
        errors: tally.errors,
        checks,
        checks_passed,
    }
}
