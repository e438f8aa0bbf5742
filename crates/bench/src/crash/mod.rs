//! The crash harness: `permafrost bench crash`.
//!
//! Runs `permafrost serve` with the command log in sync mode, a small memory budget (so
//! that eviction and the merging of fetched blocks run all the time) and small log
//! segments (so that they rotate often), drives a concurrent workload at it over the
//! PostgreSQL protocol, kills it with SIGKILL at a random moment, starts it again on the
//! same data directory and checks what came back:
//!
//! - every event insert the server acknowledged is there with its payload, and so is
//!   every event found after an earlier restart; an event never acknowledged may or may
//!   not be there (counted), but one found missing after a restart never comes back;
//! - the accounts are all there and their balances add up to the initial total:
//!   transfers are multi-partition procedures of two UPDATEs, or BEGIN ... COMMIT blocks
//!   of a read and two UPDATEs on connections of their own (interactive transactions,
//!   replayed from the log as one record), so half of one would show;
//! - reads during the workload return the account's own padding.
//!
//! The workload of an iteration runs on the database the previous iterations left; the
//! server takes snapshots (every `--snapshot-interval`, and a CHECKPOINT shortly before
//! some kills), so a restart loads the newest snapshot and replays the log after it. A
//! fresh data directory every `fresh_every` iterations keeps the database within what the
//! small memory budget can index (every event keeps index entries or a tombstone).
//!
//! Some restarts are themselves killed during recovery (after a random fraction of the
//! previous restart's time) before the restart that is checked.
//!
//! What the server was doing when it was killed comes from its figures
//! (`permafrost_stats`), sampled every [`SAMPLE_EVERY`] and once more just before the
//! kill, and from the segment files in its log directory: an eviction round, a merge of
//! fetched tuples, or a new log segment since the latest sample at least one sampling
//! period before the kill (a window of 50 ms and a little more: sampling takes time).
//!
//! Everything random (kill times, the workload's choices) comes from the seed, but the
//! interleaving of the workload's connections does not: a seed reproduces the kill
//! times and the workload's mix, not the exact state at the kill.

use std::collections::VecDeque;
use std::future::Future;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Statement};

use crate::BenchError;
use crate::ycsb::server::describe;

mod cycle;
mod server;
mod workload;

use cycle::*;
use server::*;
use workload::*;

/// Bytes of padding per account (the accounts outgrow a small memory budget).
const PAD_BYTES: usize = 900;
/// Bytes of payload per event.
const PAYLOAD_BYTES: usize = 100;
/// Every account's balance at the start.
const INITIAL_BALANCE: i64 = 1_000;
/// Accounts per statement while loading.
const LOAD_ROWS: u64 = 100;
/// Connections loading the accounts.
const LOAD_CONNECTIONS: usize = 4;
/// Connections that run transfers as BEGIN ... COMMIT blocks, one block at a time each.
const BLOCK_CONNECTIONS: usize = 2;
/// Accounts per verification query (a range of keys: one statement over the whole table
/// would need all of it in memory at once).
const ACCOUNT_RANGE: u64 = 1_000;
/// Events per verification query.
const EVENT_RANGE: u64 = 2_000;
/// Verification queries in flight (pipelined on one connection).
const VERIFY_DEPTH: usize = 4;
/// How often the server's figures are sampled during the workload.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// How long a statement refused for the memory budget (or a retry) may keep failing
/// before the harness gives up.
const RETRY_STALL: Duration = Duration::from_secs(120);
/// How long the workload's tasks get to notice that the server is gone.
const DRAIN: Duration = Duration::from_secs(30);
/// Unexpected events described in full per iteration (the rest are counted).
const MAX_MESSAGES: usize = 20;

/// Percentages of the workload's operations (the rest are reads).
const TRANSFER_PCT: u32 = 40;
const INSERT_PCT: u32 = 40;

/// Settings of a crash run.
#[derive(Debug, Clone, Serialize)]
pub struct CrashOptions {
    /// Kill-and-restart iterations.
    pub iterations: u32,
    /// First iteration to run (rounded down to the start of its data directory's cycle),
    /// to reproduce a late iteration without running the ones before its cycle.
    pub first_iteration: u32,
    pub seed: u64,
    /// The `permafrost` binary that serves.
    pub binary: PathBuf,
    /// Directory for the data directories (`cycle-<n>`); a temporary directory if unset.
    pub data_dir: Option<PathBuf>,
    /// A fresh data directory every this many iterations.
    pub fresh_every: u32,
    /// The server is killed after a time uniform in [run_min, run_max] seconds of workload.
    pub run_min: f64,
    pub run_max: f64,
    /// Accounts in the table.
    pub accounts: u64,
    /// Workload connections, and operations each keeps in flight (pipelined).
    pub connections: usize,
    pub in_flight: usize,
    /// Event inserts per second at most. Every row costs the budget memory that eviction
    /// cannot free (its index entries, then its tombstone), so a data directory's events
    /// must stay within what the small budget can index over `fresh_every` iterations.
    pub insert_rate: u64,
    /// The server's settings.
    pub memory_limit: u64,
    pub segment_bytes: u64,
    pub partitions: u32,
    /// The server's command log: `sync` (what is checked). `async` or `off` lose
    /// acknowledged changes in a crash: with them the harness checks itself (it must find
    /// violations).
    pub command_log: String,
    /// The server's `--snapshot-interval` (e.g. `2s`, `off`).
    pub snapshot_interval: String,
    /// Percent of iterations that send CHECKPOINT shortly before the kill (a kill while
    /// the snapshot is being written).
    pub checkpoint_kill_pct: u32,
    /// Percent of iterations whose restart is killed too, during recovery, before the
    /// restart that is checked.
    pub recovery_kill_pct: u32,
    /// How long a restart (recovery) may take before it counts as failed.
    pub startup_timeout: Duration,
    /// The command line, for the report.
    pub command: String,
    /// Where the report so far is written (JSON) after every iteration, so that a run cut
    /// short leaves its figures.
    pub progress: Option<PathBuf>,
}

impl CrashOptions {
    /// The defaults, serving with `binary`.
    pub fn new(binary: PathBuf) -> CrashOptions {
        CrashOptions {
            iterations: 200,
            first_iteration: 1,
            seed: 42,
            binary,
            data_dir: None,
            fresh_every: 20,
            run_min: 0.3,
            run_max: 3.0,
            accounts: 20_000,
            connections: 16,
            in_flight: 8,
            insert_rate: 2_000,
            memory_limit: 16 << 20,
            segment_bytes: 1 << 20,
            partitions: 2,
            command_log: "sync".into(),
            snapshot_interval: "2s".into(),
            checkpoint_kill_pct: 30,
            recovery_kill_pct: 25,
            startup_timeout: Duration::from_secs(600),
            command: String::new(),
            progress: None,
        }
    }

    pub fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: &str| Err(BenchError::Options(m.into()));
        if self.iterations == 0 {
            return bad("--iterations must be at least 1");
        }
        if self.first_iteration == 0 || self.first_iteration > self.iterations {
            return bad("--first-iteration must be between 1 and --iterations");
        }
        if self.fresh_every == 0 {
            return bad("--fresh-every must be at least 1");
        }
        if !(self.run_min.is_finite() && self.run_max.is_finite() && 0.0 < self.run_min && self.run_min <= self.run_max)
        {
            return bad("--min-run and --max-run must be positive seconds, --min-run <= --max-run");
        }
        if self.checkpoint_kill_pct > 100 || self.recovery_kill_pct > 100 {
            return bad("--checkpoint-kill-pct and --recovery-kill-pct are percentages (0..=100)");
        }
        if self.run_max > 3600.0 {
            return bad("--max-run must be at most 3600 seconds");
        }
        if !(2..=100_000_000).contains(&self.accounts) {
            return bad("--accounts must be between 2 and 100000000");
        }
        if !(1..=1_000_000).contains(&self.insert_rate) {
            return bad("--insert-rate must be between 1 and 1000000 per second");
        }
        if !(1..=1024).contains(&self.connections) || !(1..=1024).contains(&self.in_flight) {
            return bad("--connections and --in-flight must be between 1 and 1024");
        }
        if !["sync", "async", "off"].contains(&self.command_log.as_str()) {
            return bad("--command-log must be sync, async or off");
        }
        if !self.binary.exists() {
            return Err(BenchError::Options(format!(
                "the server binary {} does not exist",
                self.binary.display()
            )));
        }
        Ok(())
    }

    fn cycle_of(&self, iteration: u32) -> u32 {
        (iteration - 1) / self.fresh_every
    }
}

/// The figures of a crash run (`--json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CrashReport {
    pub command: String,
    /// False while the run is going on (the report of `progress`), or if it stopped early.
    pub complete: bool,
    /// Commands that continued the run after it was cut short (`--resume`).
    pub resumed: Vec<String>,
    pub seed: u64,
    pub iterations_planned: u32,
    pub iterations_run: u32,
    pub first_iteration: u32,
    /// A fresh data directory every this many iterations.
    pub fresh_every: u32,
    pub data_directories: u32,
    pub settings: RunSettings,
    pub kills: KillCounts,
    pub acknowledged: AckCounts,
    pub recovery: RecoverySummary,
    pub seconds_total: f64,
    pub violations: Vec<Violation>,
    pub per_iteration: Vec<IterationReport>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSettings {
    pub server: String,
    pub memory_limit_bytes: u64,
    pub log_segment_bytes: u64,
    pub partitions: u32,
    pub command_log: String,
    pub accounts: u64,
    pub initial_total: i64,
    pub connections: usize,
    pub in_flight_per_connection: usize,
    /// Event inserts per second at most (the workload's other operations take the rest).
    pub insert_rate_per_second: u64,
    pub run_seconds_min: f64,
    pub run_seconds_max: f64,
    pub workload_percent: WorkloadMix,
    pub phase_sample_ms: u64,
    pub snapshot_interval: String,
    pub checkpoint_kill_percent: u32,
    pub recovery_kill_percent: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadMix {
    pub transfers: u32,
    pub inserts: u32,
    pub reads: u32,
}

/// Kills by what the server was doing (a kill may count under several phases).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct KillCounts {
    pub total: u32,
    pub eviction: u32,
    pub merge: u32,
    pub log_rotation: u32,
    pub snapshot: u32,
    /// Restarts killed during recovery (an extra kill in the iteration).
    pub recovery: u32,
    /// None of eviction, merge, log rotation and snapshot in the window before the kill.
    pub none: u32,
    /// Kills with a multi-partition transfer in flight (sent, not answered).
    pub transfer_in_flight: u32,
    /// Kills during the first iteration of a data directory.
    pub first_of_directory: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AckCounts {
    /// Event inserts acknowledged (distinct ids).
    pub events_acknowledged: u64,
    /// Acknowledged events found after a restart, summed over restarts (each is checked
    /// after every restart of its data directory).
    pub acknowledged_event_checks: u64,
    /// Transfers acknowledged (their effect is checked through the balance sum).
    pub transfers_acknowledged: u64,
    /// Of those, transfers committed as BEGIN ... COMMIT blocks.
    pub block_transfers_acknowledged: u64,
    /// Balance-sum and account-count checks (one per restart).
    pub balance_checks: u64,
    /// Reads of an account during the workload whose padding was checked.
    pub reads_verified: u64,
    /// Events sent but not acknowledged when the server was killed: present, absent
    /// after the restart.
    pub unacknowledged_present: u64,
    pub unacknowledged_absent: u64,
    /// Statements retried: refused for the memory budget (53200), or for a conflict or
    /// too many restarts (40001).
    pub retries_53200: u64,
    pub retries_40001: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RecoverySummary {
    /// Restarts timed: from starting the process until it accepted a connection (the
    /// server replays its log before it listens).
    pub restarts: u32,
    pub min_seconds: f64,
    pub median_seconds: f64,
    pub p90_seconds: f64,
    pub max_seconds: f64,
    /// The server's own figure for the replay (its "replayed in" line), largest.
    pub max_replay_seconds: f64,
    /// Log records replayed at a restart: largest, and summed.
    pub max_records: u64,
    pub records_total: u64,
    /// Restarts that dropped a torn record at the end of the log.
    pub torn_tails: u32,
    /// Restarts that loaded a snapshot, and of those, snapshots that record their block
    /// directories as differences from a base snapshot (both files read).
    pub from_snapshot: u32,
    pub from_snapshot_with_base: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Violation {
    pub iteration: u32,
    pub seed: u64,
    pub data_directory: u32,
    pub what: String,
    /// A command that runs the iteration's data directory again.
    pub reproduce: String,
    /// The data directory, kept.
    pub data_dir: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Phases {
    pub eviction: bool,
    pub merge: bool,
    pub log_rotation: bool,
    /// A snapshot was being written (its `.tmp` file written to within the window, or a
    /// CHECKPOINT not answered yet).
    pub snapshot: bool,
    /// The restart was killed during its recovery (before it accepted connections), and
    /// started again.
    pub recovery: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct InFlight {
    pub transfers: i64,
    pub inserts: i64,
    pub reads: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct IterationReport {
    pub iteration: u32,
    pub data_directory: u32,
    /// 1 for the first iteration on a fresh data directory.
    pub iteration_in_directory: u32,
    /// Seconds of workload before the kill (drawn from the seed).
    pub kill_after_seconds: f64,
    pub phases: Phases,
    /// Length of the window the phases were read over (ms before the kill).
    pub phase_window_ms: f64,
    /// Growth in the window: eviction rounds, tuples merged, segment files.
    pub window_evictions: u64,
    pub window_unevicted_tuples: u64,
    pub window_new_segments: u64,
    /// Statements sent and not answered at the kill.
    pub in_flight_at_kill: InFlight,
    /// The log at the kill: segment files and bytes.
    pub segments_at_kill: u64,
    pub log_bytes_at_kill: u64,
    /// The server's figures at the kill: tuples evicted now, eviction rounds and tuples
    /// merged since its start.
    pub cold_tuples_at_kill: u64,
    pub events_acknowledged: u64,
    pub transfers_acknowledged: u64,
    pub block_transfers_acknowledged: u64,
    pub reads_verified: u64,
    pub retries_53200: u64,
    pub retries_40001: u64,
    pub recovery_seconds: f64,
    pub replay_seconds: Option<f64>,
    pub records_replayed: u64,
    pub torn_tail: bool,
    /// The restart loaded a snapshot; its base snapshot's epoch if it had one (0: none).
    pub snapshot_loaded: bool,
    pub snapshot_base: u64,
    /// After the restart: acknowledged events found (all of them unless violated), events
    /// never acknowledged found and not found, accounts and their balance sum.
    pub acknowledged_events_checked: u64,
    pub unacknowledged_present: u64,
    pub unacknowledged_absent: u64,
    pub accounts: u64,
    pub balance_sum: i64,
    pub verify_seconds: f64,
    /// Verification queries retried (53200, 40001: a range of evicted rows fetched while
    /// memory is tight may run out of restarts).
    pub verify_retries: u64,
    pub violations: Vec<String>,
}

impl CrashReport {
    /// The figures in a few lines.
    pub fn summary(&self) -> String {
        let k = &self.kills;
        let a = &self.acknowledged;
        let r = &self.recovery;
        let mut s = format!(
            "crash: {} iterations (seed {}), a fresh data directory every {} iterations ({} directories); restarts load \
             the newest snapshot and replay the log after it\n",
            self.iterations_run, self.seed, self.fresh_every, self.data_directories
        );
        s += &format!(
            "kills: {} (SIGKILL); in the window before the kill (from the latest sample at least {} ms before it): \
             eviction {}, merge {}, log rotation {}, snapshot {}, none of these {}; restarts also killed during \
             recovery {}; a transfer in flight {}\n",
            k.total + k.recovery,
            SAMPLE_EVERY.as_millis(),
            k.eviction,
            k.merge,
            k.log_rotation,
            k.snapshot,
            k.none,
            k.recovery,
            k.transfer_in_flight
        );
        s += &format!(
            "acknowledged: {} event inserts ({} checks of them after restarts), {} transfers ({} of them BEGIN ... \
             COMMIT blocks; {} balance-sum checks), \
             {} reads verified; not acknowledged at the kill: {} present, {} absent after the restart; retries: {} \
             (53200), {} (40001)\n",
            a.events_acknowledged,
            a.acknowledged_event_checks,
            a.transfers_acknowledged,
            a.block_transfers_acknowledged,
            a.balance_checks,
            a.reads_verified,
            a.unacknowledged_present,
            a.unacknowledged_absent,
            a.retries_53200,
            a.retries_40001
        );
        s += &format!(
            "recovery (start until accepting connections): {} restarts, min {:.2}s, median {:.2}s, p90 {:.2}s, max \
             {:.2}s; up to {} records replayed ({} in all), {} torn tails dropped; {} from a snapshot, {} of them \
             with block directories as differences from a base snapshot\n",
            r.restarts,
            r.min_seconds,
            r.median_seconds,
            r.p90_seconds,
            r.max_seconds,
            r.max_records,
            r.records_total,
            r.torn_tails,
            r.from_snapshot,
            r.from_snapshot_with_base
        );
        s += &format!("violations: {}", self.violations.len());
        for v in &self.violations {
            s += &format!("\n  iteration {} (seed {}): {}", v.iteration, v.seed, v.what);
        }
        if let Some(v) = self.violations.first() {
            s += &format!(
                "\n  the data directory is kept at {}\n  reproduce (from the first iteration of that directory): {}",
                v.data_dir, v.reproduce
            );
        }
        s
    }
}

/// Runs the harness. Violations are in the report (the run stops at the first iteration
/// with one); an `Err` is a failure of the harness itself.
pub fn run(opts: &CrashOptions) -> Result<CrashReport, BenchError> {
    resume(opts, None)
}

/// Runs the harness, continuing `previous` (the report of a run with the same settings
/// that was cut short) if given: its data directories whose iterations all ran are kept,
/// the rest run again from the first one missing (every data directory starts fresh, and
/// an iteration's kill time and choices come from the seed and its number, so the result
/// is the run that was cut short, completed).
pub fn resume(opts: &CrashOptions, previous: Option<CrashReport>) -> Result<CrashReport, BenchError> {
    opts.validate()?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(run_async(opts, previous))
}

/// Whether `previous` is a run `opts` may continue.
fn check_resumable(opts: &CrashOptions, p: &CrashReport) -> Result<(), BenchError> {
    let s = &p.settings;
    let same = p.seed == opts.seed
        && p.fresh_every == opts.fresh_every
        && p.iterations_planned == opts.iterations
        && s.accounts == opts.accounts
        && s.command_log == opts.command_log
        && s.memory_limit_bytes == opts.memory_limit
        && s.log_segment_bytes == opts.segment_bytes
        && s.partitions == opts.partitions
        && s.connections == opts.connections
        && s.in_flight_per_connection == opts.in_flight
        && s.insert_rate_per_second == opts.insert_rate
        && s.run_seconds_min == opts.run_min
        && s.run_seconds_max == opts.run_max;
    if !same {
        return Err(BenchError::Options(format!(
            "--resume: the report is of a run with other settings (its command: {})",
            p.command
        )));
    }
    if !p.violations.is_empty() {
        return Err(BenchError::Options(
            "--resume: the report has violations; run it again instead".into(),
        ));
    }
    if p.complete {
        return Err(BenchError::Options("--resume: the run is complete".into()));
    }
    Ok(())
}

/// Runs the iterations, data directory by data directory (after those of `previous` that
/// are kept), until the last one or the first violation.
async fn run_async(opts: &CrashOptions, previous: Option<CrashReport>) -> Result<CrashReport, BenchError> {
    let started = Instant::now();
    let mut report = new_report(opts);
    let (root, temp) = data_root(opts)?;
    println!(
        "crash: {} iterations from seed {}, server {} (command log {}, memory limit {} MiB, log segments of {} MiB, \
         {} partitions, snapshots every {}), a fresh data directory every {} iterations, data in {}",
        opts.iterations,
        opts.seed,
        opts.binary.display(),
        opts.command_log,
        opts.memory_limit >> 20,
        opts.segment_bytes >> 20,
        opts.partitions,
        opts.snapshot_interval,
        opts.fresh_every,
        root.display()
    );
    let mut recoveries: Vec<f64> = Vec::new();
    let mut first_cycle = opts.cycle_of(opts.first_iteration);
    let mut seconds_before = 0.0;
    if let Some(p) = previous {
        (first_cycle, seconds_before) = keep_previous(opts, p, &mut report, &mut recoveries)?;
    }
    let last_cycle = opts.cycle_of(opts.iterations);
    let mut violated = false;
    for cycle in first_cycle..=last_cycle {
        let clock = (started, seconds_before);
        if run_cycle(opts, cycle, &root, &mut report, &mut recoveries, clock).await? {
            violated = true;
            break;
        }
    }
    if violated && let Some(t) = temp {
        // Kept for the reproduction.
        let _ = t.keep();
    }
    finish(&mut report, &recoveries, started, seconds_before);
    report.complete = !violated && report.iterations_run == opts.iterations - (report.first_iteration - 1);
    Ok(report)
}

/// An empty report of a run with `opts`: its settings.
fn new_report(opts: &CrashOptions) -> CrashReport {
    CrashReport {
        command: opts.command.clone(),
        seed: opts.seed,
        iterations_planned: opts.iterations,
        first_iteration: opts.first_iteration,
        fresh_every: opts.fresh_every,
        settings: RunSettings {
            server: opts.binary.display().to_string(),
            memory_limit_bytes: opts.memory_limit,
            log_segment_bytes: opts.segment_bytes,
            partitions: opts.partitions,
            command_log: opts.command_log.clone(),
            snapshot_interval: opts.snapshot_interval.clone(),
            checkpoint_kill_percent: opts.checkpoint_kill_pct,
            recovery_kill_percent: opts.recovery_kill_pct,
            accounts: opts.accounts,
            initial_total: initial_total(opts.accounts),
            connections: opts.connections,
            in_flight_per_connection: opts.in_flight,
            insert_rate_per_second: opts.insert_rate,
            run_seconds_min: opts.run_min,
            run_seconds_max: opts.run_max,
            workload_percent: WorkloadMix {
                transfers: TRANSFER_PCT,
                inserts: INSERT_PCT,
                reads: 100 - TRANSFER_PCT - INSERT_PCT,
            },
            phase_sample_ms: SAMPLE_EVERY.as_millis() as u64,
        },
        ..CrashReport::default()
    }
}

/// The directory for the data directories: `--data-dir` (created if need be), else a new
/// temporary directory, returned too (the caller keeps it when a violation is found).
fn data_root(opts: &CrashOptions) -> Result<(PathBuf, Option<tempfile::TempDir>), BenchError> {
    Ok(match &opts.data_dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| BenchError::Options(format!("cannot create --data-dir {}: {e}", d.display())))?;
            (d.clone(), None)
        }
        None => {
            let t = tempfile::Builder::new().prefix("permafrost-crash-").tempdir()?;
            (t.path().to_path_buf(), Some(t))
        }
    })
}

/// Takes over the iterations of the data directories of `p` (a run cut short) that all
/// ran into `report` and `recoveries`. The first data directory to run, and the seconds
/// `p` took.
fn keep_previous(
    opts: &CrashOptions,
    p: CrashReport,
    report: &mut CrashReport,
    recoveries: &mut Vec<f64>,
) -> Result<(u32, f64), BenchError> {
    check_resumable(opts, &p)?;
    // The data directories whose iterations all ran.
    let size = |c: u32| ((c + 1) * opts.fresh_every).min(opts.iterations) - c * opts.fresh_every;
    let ran = |c: u32| p.per_iteration.iter().filter(|i| i.data_directory == c).count() as u32;
    let mut first_cycle = opts.cycle_of(p.first_iteration);
    while first_cycle <= opts.cycle_of(opts.iterations) && ran(first_cycle) == size(first_cycle) {
        first_cycle += 1;
    }
    report.command = p.command.clone();
    report.first_iteration = p.first_iteration;
    report.resumed = p.resumed.clone();
    report.resumed.push(opts.command.clone());
    let seconds_before = p.seconds_total;
    for it in p.per_iteration.into_iter().filter(|i| i.data_directory < first_cycle) {
        if it.iteration_in_directory == 1 {
            report.data_directories += 1;
        }
        add_up(report, &it);
        recoveries.push(it.recovery_seconds);
        report.iterations_run += 1;
        report.per_iteration.push(it);
    }
    println!(
        "resuming: {} iterations in {} data directories kept, going on from iteration {}",
        report.iterations_run,
        report.data_directories,
        first_cycle * opts.fresh_every + 1
    );
    Ok((first_cycle, seconds_before))
}

/// Runs the iterations of data directory `cycle` (a fresh one under `root`) into `report`
/// and `recoveries`, writing the report so far after each to `--progress` (`clock`: when
/// the run started, and the seconds of the run it continues). True when one had a
/// violation: the data directory is then kept; otherwise it is removed.
async fn run_cycle(
    opts: &CrashOptions,
    cycle: u32,
    root: &Path,
    report: &mut CrashReport,
    recoveries: &mut Vec<f64>,
    clock: (Instant, f64),
) -> Result<bool, BenchError> {
    let first = cycle * opts.fresh_every + 1;
    let last = ((cycle + 1) * opts.fresh_every).min(opts.iterations);
    let dir = root.join(format!("cycle-{cycle:04}"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    report.data_directories += 1;
    let mut c = CycleRun::start(opts, cycle, &dir).await?;
    if let Some(v) = c.setup_violation.take() {
        report.violations.push(violation(opts, first, cycle, &dir, v));
        return Ok(true);
    }
    println!(
        "data directory {cycle} ({}): loaded {} accounts in {:.1}s",
        dir.display(),
        opts.accounts,
        c.load_seconds
    );
    let mut violated = false;
    for iteration in first..=last {
        let it = c.iteration(iteration).await?;
        println!("{}", iteration_line(opts, &it));
        add_up(report, &it);
        if it.recovery_seconds > 0.0 {
            recoveries.push(it.recovery_seconds);
        }
        report.iterations_run += 1;
        let bad = !it.violations.is_empty();
        for v in &it.violations {
            report
                .violations
                .push(violation(opts, iteration, cycle, &dir, v.clone()));
        }
        report.per_iteration.push(it);
        if let Some(path) = &opts.progress {
            let mut so_far = report.clone();
            finish(&mut so_far, recoveries, clock.0, clock.1);
            let text = serde_json::to_string_pretty(&so_far).map_err(|e| BenchError::Client(e.to_string()))?;
            std::fs::write(path, text + "\n")?;
        }
        if bad {
            violated = true;
            break;
        }
    }
    c.stop();
    if !violated {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(violated)
}

/// The recovery-time distribution and the run's duration.
fn finish(report: &mut CrashReport, recoveries: &[f64], started: Instant, seconds_before: f64) {
    let mut sorted = recoveries.to_vec();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        if sorted.is_empty() {
            0.0
        } else {
            sorted[((sorted.len() - 1) as f64 * p).round() as usize]
        }
    };
    report.recovery.restarts = sorted.len() as u32;
    report.recovery.min_seconds = pct(0.0);
    report.recovery.median_seconds = pct(0.5);
    report.recovery.p90_seconds = pct(0.9);
    report.recovery.max_seconds = pct(1.0);
    report.seconds_total = seconds_before + started.elapsed().as_secs_f64();
}

fn violation(opts: &CrashOptions, iteration: u32, cycle: u32, dir: &Path, what: String) -> Violation {
    let cycle_start = cycle * opts.fresh_every + 1;
    let mut reproduce = format!(
        "permafrost bench crash --seed {} --iterations {iteration} --first-iteration {cycle_start} --fresh-every {} \
         --min-run {} --max-run {} --accounts {} --connections {} --in-flight {} --insert-rate {}",
        opts.seed,
        opts.fresh_every,
        opts.run_min,
        opts.run_max,
        opts.accounts,
        opts.connections,
        opts.in_flight,
        opts.insert_rate
    );
    if opts.command_log != "sync" {
        reproduce += &format!(" --command-log {}", opts.command_log);
    }
    if opts.memory_limit != 16 << 20 || opts.segment_bytes != 1 << 20 || opts.partitions != 2 {
        reproduce += &format!(
            " --memory-limit {} --log-segment-size {} --partitions {}",
            opts.memory_limit, opts.segment_bytes, opts.partitions
        );
    }
    Violation {
        iteration,
        seed: opts.seed,
        data_directory: cycle,
        what,
        reproduce,
        data_dir: dir.display().to_string(),
    }
}

fn add_up(report: &mut CrashReport, it: &IterationReport) {
    let k = &mut report.kills;
    k.total += 1;
    k.eviction += u32::from(it.phases.eviction);
    k.merge += u32::from(it.phases.merge);
    k.log_rotation += u32::from(it.phases.log_rotation);
    k.snapshot += u32::from(it.phases.snapshot);
    k.recovery += u32::from(it.phases.recovery);
    k.none += u32::from(!(it.phases.eviction || it.phases.merge || it.phases.log_rotation || it.phases.snapshot));
    k.transfer_in_flight += u32::from(it.in_flight_at_kill.transfers > 0);
    k.first_of_directory += u32::from(it.iteration_in_directory == 1);
    let a = &mut report.acknowledged;
    a.events_acknowledged += it.events_acknowledged;
    a.acknowledged_event_checks += it.acknowledged_events_checked;
    a.transfers_acknowledged += it.transfers_acknowledged;
    a.block_transfers_acknowledged += it.block_transfers_acknowledged;
    a.balance_checks += u64::from(it.accounts > 0);
    a.reads_verified += it.reads_verified;
    a.unacknowledged_present += it.unacknowledged_present;
    a.unacknowledged_absent += it.unacknowledged_absent;
    a.retries_53200 += it.retries_53200;
    a.retries_40001 += it.retries_40001;
    let r = &mut report.recovery;
    r.max_records = r.max_records.max(it.records_replayed);
    r.records_total += it.records_replayed;
    r.torn_tails += u32::from(it.torn_tail);
    r.from_snapshot += u32::from(it.snapshot_loaded);
    r.from_snapshot_with_base += u32::from(it.snapshot_base != 0);
    if let Some(s) = it.replay_seconds {
        r.max_replay_seconds = r.max_replay_seconds.max(s);
    }
}

fn iteration_line(opts: &CrashOptions, it: &IterationReport) -> String {
    let mut phases: Vec<&str> = Vec::new();
    if it.phases.eviction {
        phases.push("eviction");
    }
    if it.phases.merge {
        phases.push("merge");
    }
    if it.phases.snapshot {
        phases.push("snapshot");
    }
    if it.phases.recovery {
        phases.push("recovery");
    }
    if it.phases.log_rotation {
        phases.push("log rotation");
    }
    if phases.is_empty() {
        phases.push("-");
    }
    let mut s = format!(
        "[{:>4}/{}] dir {} #{:<2} killed after {:.2}s [{}] in flight {}t/{}i/{}r; acked +{} events +{} transfers, \
         {} reads ok; restart {:.2}s ({} records); found {} acked events ({} unacked present, {} absent), {} accounts, \
         sum {}",
        it.iteration,
        opts.iterations,
        it.data_directory,
        it.iteration_in_directory,
        it.kill_after_seconds,
        phases.join(" "),
        it.in_flight_at_kill.transfers,
        it.in_flight_at_kill.inserts,
        it.in_flight_at_kill.reads,
        it.events_acknowledged,
        it.transfers_acknowledged,
        it.reads_verified,
        it.recovery_seconds,
        it.records_replayed,
        it.acknowledged_events_checked,
        it.unacknowledged_present,
        it.unacknowledged_absent,
        it.accounts,
        it.balance_sum
    );
    if it.violations.is_empty() {
        s += " ok";
    } else {
        s += &format!(" VIOLATION: {}", it.violations.join("; "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fillers_are_deterministic_and_sized() {
        assert_eq!(account_pad(7), account_pad(7));
        assert_ne!(account_pad(7), account_pad(8));
        assert_eq!(account_pad(123).len(), PAD_BYTES);
        assert_eq!(event_payload(5).len(), PAYLOAD_BYTES);
        assert!(account_pad(1).chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }

    #[test]
    fn recovery_report_lines_parse() {
        let report = permafrost_executor::RecoveryReport {
            records: 1234,
            schema_changes: 3,
            seconds: 1.5,
            torn_tail: Some("x".into()),
            ..Default::default()
        };
        let text = format!(
            "recovery: log replayed through LSN 10 of 20\n{}\nlistening\n",
            report.to_line()
        );
        let r = parse_recovery(&text);
        assert_eq!(
            (r.records, r.seconds, r.torn, r.snapshot),
            (1234, Some(1.5), true, false)
        );
        assert_eq!(parse_recovery("permafrost listening\n"), Recovered::default());
        let report = permafrost_executor::RecoveryReport {
            snapshot: Some(permafrost_executor::LoadReport {
                epoch: 12,
                base_epoch: 9,
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = parse_recovery(&report.to_line());
        assert_eq!((r.snapshot, r.base, r.seconds), (true, 9, None));
    }

    #[test]
    fn cycles_and_seeds() {
        let mut o = CrashOptions::new(PathBuf::from("/bin/true"));
        o.fresh_every = 20;
        assert_eq!(o.cycle_of(1), 0);
        assert_eq!(o.cycle_of(20), 0);
        assert_eq!(o.cycle_of(21), 1);
        assert_ne!(iteration_seed(1, 1), iteration_seed(1, 2));
        assert_eq!(iteration_seed(1, 3), iteration_seed(1, 3));
        o.run_min = 0.0;
        assert!(o.validate().is_err());
    }
}
