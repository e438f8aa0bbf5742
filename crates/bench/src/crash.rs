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
//!   transfers are multi-partition procedures of two UPDATEs, so half of one would show;
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
            "acknowledged: {} event inserts ({} checks of them after restarts), {} transfers ({} balance-sum checks), \
             {} reads verified; not acknowledged at the kill: {} present, {} absent after the restart; retries: {} \
             (53200), {} (40001)\n",
            a.events_acknowledged,
            a.acknowledged_event_checks,
            a.transfers_acknowledged,
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

async fn run_async(opts: &CrashOptions, previous: Option<CrashReport>) -> Result<CrashReport, BenchError> {
    let started = Instant::now();
    let mut report = CrashReport {
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
    };
    let (root, temp) = match &opts.data_dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| BenchError::Options(format!("cannot create --data-dir {}: {e}", d.display())))?;
            (d.clone(), None)
        }
        None => {
            let t = tempfile::Builder::new().prefix("permafrost-crash-").tempdir()?;
            (t.path().to_path_buf(), Some(t))
        }
    };
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
        check_resumable(opts, &p)?;
        // The data directories whose iterations all ran.
        let size = |c: u32| ((c + 1) * opts.fresh_every).min(opts.iterations) - c * opts.fresh_every;
        let ran = |c: u32| p.per_iteration.iter().filter(|i| i.data_directory == c).count() as u32;
        first_cycle = opts.cycle_of(p.first_iteration);
        while first_cycle <= opts.cycle_of(opts.iterations) && ran(first_cycle) == size(first_cycle) {
            first_cycle += 1;
        }
        report.command = p.command.clone();
        report.first_iteration = p.first_iteration;
        report.resumed = p.resumed.clone();
        report.resumed.push(opts.command.clone());
        seconds_before = p.seconds_total;
        for it in p.per_iteration.into_iter().filter(|i| i.data_directory < first_cycle) {
            if it.iteration_in_directory == 1 {
                report.data_directories += 1;
            }
            add_up(&mut report, &it);
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
    }
    let last_cycle = opts.cycle_of(opts.iterations);
    let mut violated = false;
    for cycle in first_cycle..=last_cycle {
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
            violated = true;
            break;
        }
        println!(
            "data directory {cycle} ({}): loaded {} accounts in {:.1}s",
            dir.display(),
            opts.accounts,
            c.load_seconds
        );
        for iteration in first..=last {
            let it = c.iteration(iteration).await?;
            println!("{}", iteration_line(opts, &it));
            add_up(&mut report, &it);
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
                finish(&mut so_far, &recoveries, started, seconds_before);
                let text = serde_json::to_string_pretty(&so_far).map_err(|e| BenchError::Client(e.to_string()))?;
                std::fs::write(path, text + "\n")?;
            }
            if bad {
                violated = true;
                break;
            }
        }
        c.stop();
        if violated {
            break;
        }
        std::fs::remove_dir_all(&dir)?;
    }
    if violated && let Some(t) = temp {
        // Kept for the reproduction.
        let _ = t.keep();
    }
    finish(&mut report, &recoveries, started, seconds_before);
    report.complete = !violated && report.iterations_run == opts.iterations - (report.first_iteration - 1);
    Ok(report)
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

fn initial_total(accounts: u64) -> i64 {
    accounts as i64 * INITIAL_BALANCE
}

fn mix(x: u64) -> u64 {
    // splitmix64
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn iteration_seed(seed: u64, iteration: u32) -> u64 {
    mix(mix(seed) ^ u64::from(iteration))
}

/// `len` characters derived from `key` (hex digits, nothing to quote).
fn filler(prefix: String, key: u64, len: usize) -> String {
    let mut s = prefix;
    let mut x = key;
    while s.len() < len {
        x = mix(x);
        s += &format!("{x:016x}");
    }
    s.truncate(len);
    s
}

fn account_pad(id: i64) -> String {
    filler(format!("a{id}-"), id as u64, PAD_BYTES)
}

fn event_payload(id: i64) -> String {
    filler(format!("e{id}-"), (id as u64) ^ 0x5EED, PAYLOAD_BYTES)
}

/// The event ids of a data directory and what is known of each.
#[derive(Default)]
struct Events {
    /// Flags by id (the ids are handed out in order from 0).
    flags: Vec<u8>,
}

const ACKED: u8 = 1;
/// Found after a restart: must be there after every later one.
const FOUND: u8 = 2;
/// Not acknowledged and not found after a restart: must never come back.
const MISSING: u8 = 4;

impl Events {
    fn set(&mut self, id: u64, flag: u8) {
        let i = id as usize;
        if self.flags.len() <= i {
            self.flags.resize(i + 1, 0);
        }
        self.flags[i] |= flag;
    }
}

/// Per-iteration counters of the workload's tasks.
#[derive(Default)]
struct Counters {
    stop: AtomicBool,
    transfers: AtomicU64,
    inserts: AtomicU64,
    /// Event inserts begun (for the rate).
    inserts_started: AtomicU64,
    reads: AtomicU64,
    retries_53200: AtomicU64,
    retries_40001: AtomicU64,
    in_flight: [AtomicI64; 3],
    /// Unexpected answers: server errors other than the retryable ones, wrong rows.
    problems: Mutex<Vec<String>>,
    problem_count: AtomicU64,
}

impl Counters {
    fn problem(&self, m: String) {
        self.problem_count.fetch_add(1, Ordering::Relaxed);
        let mut p = self.problems.lock().unwrap();
        if p.len() < MAX_MESSAGES {
            p.push(m);
        }
    }
}

/// The events of ids lo..hi found after a restart.
type EventRows = (i64, i64, Vec<tokio_postgres::Row>);

/// The workload's prepared statements on one connection.
struct Stmts {
    transfer: Statement,
    insert: Statement,
    read: Statement,
}

/// Runs `f` again while it fails with 53200 (memory budget: eviction catching up) or
/// 40001 (retry).
async fn retrying<T, F, Fut>(ctr: &Counters, mut f: F) -> Result<T, tokio_postgres::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, tokio_postgres::Error>>,
{
    let mut since = None;
    loop {
        let e = match f().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let code = e.code().map(|c| c.code().to_string());
        let first = *since.get_or_insert_with(Instant::now);
        match code.as_deref() {
            Some("53200") if first.elapsed() < RETRY_STALL => {
                ctr.retries_53200.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Some("40001") if first.elapsed() < RETRY_STALL => {
                ctr.retries_40001.fetch_add(1, Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
            _ => return Err(e),
        }
    }
}

/// A `permafrost serve` process.
struct Server {
    child: Child,
    port: u16,
    started: Instant,
}

impl Server {
    fn kill(&mut self) {
        // SIGKILL: no shutdown of any kind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// One of the server's samples.
#[derive(Debug, Clone, Default)]
struct Sample {
    at: Option<Instant>,
    evictions: u64,
    unevicted: u64,
    cold: u64,
    segments: u64,
}

/// The log's segment files and their bytes.
/// Whether a snapshot is being written: a `.tmp` snapshot file changed in the last 200 ms.
fn snapshot_tmp_fresh(dir: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(dir.join("snapshots")) else {
        return false;
    };
    rd.flatten().any(|e| {
        e.file_name().to_str().is_some_and(|n| n.ends_with(".tmp"))
            && e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|d| d < Duration::from_millis(200)))
    })
}

fn log_files(dir: &Path) -> (u64, u64) {
    let (mut n, mut bytes) = (0, 0);
    if let Ok(rd) = std::fs::read_dir(dir.join("commandlog")) {
        for e in rd.flatten() {
            if e.file_name().to_str().is_some_and(|n| n.ends_with(".log")) {
                n += 1;
                bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    (n, bytes)
}

async fn sample(admin: &Client, dir: &Path) -> Option<Sample> {
    let rows = admin.query("SELECT * FROM permafrost_stats", &[]).await.ok()?;
    let get = |name: &str| {
        rows.iter()
            .filter(|r| r.get::<_, String>(0) == name)
            .map(|r| r.get::<_, f64>(2))
            .sum::<f64>() as u64
    };
    let (segments, _) = log_files(dir);
    Some(Sample {
        at: Some(Instant::now()),
        evictions: get("permafrost_evictions_total"),
        unevicted: get("permafrost_unevicted_tuples_total"),
        cold: get("permafrost_cold_tuples"),
        segments,
    })
}

/// The last lines of the server's stderr.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text[text.len().saturating_sub(4000)..]).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n    ")
}

/// The server's stderr from `offset` on.
fn log_since(path: &Path, offset: u64) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(path)
        && f.seek(SeekFrom::Start(offset)).is_ok()
    {
        let mut buf = Vec::new();
        let _ = f.read_to_end(&mut buf);
        s = String::from_utf8_lossy(&buf).into_owned();
    }
    s
}

/// Recovery figures from the server's stderr (its recovery report line).
#[derive(Debug, Default, PartialEq)]
struct Recovered {
    records: u64,
    /// How long replaying took, when anything was replayed.
    seconds: Option<f64>,
    torn: bool,
    /// A snapshot was loaded; the base it needed (0: none).
    snapshot: bool,
    base: u64,
}

fn parse_recovery(text: &str) -> Recovered {
    let Some(r) = permafrost_executor::RecoveryReport::from_lines(text) else {
        return Recovered::default();
    };
    Recovered {
        records: r.records,
        seconds: (r.records > 0).then_some(r.seconds),
        torn: r.torn_tail.is_some(),
        snapshot: r.snapshot.is_some(),
        base: r.snapshot.map_or(0, |s| s.base_epoch),
    }
}

/// One data directory: its server, its events, its iterations.
struct CycleRun<'a> {
    opts: &'a CrashOptions,
    cycle: u32,
    dir: PathBuf,
    stderr: PathBuf,
    server: Option<Server>,
    events: Arc<Mutex<Events>>,
    next_event: Arc<AtomicU64>,
    load_seconds: f64,
    setup_violation: Option<String>,
    /// Seconds the last restart took (to pick a moment inside the next recovery).
    last_recovery: f64,
}

enum Started {
    Up(Server, f64),
    Failed(String),
}

impl<'a> CycleRun<'a> {
    /// A fresh data directory: starts the server, creates the tables and the procedure,
    /// loads the accounts.
    async fn start(opts: &'a CrashOptions, cycle: u32, dir: &Path) -> Result<CycleRun<'a>, BenchError> {
        let mut c = CycleRun {
            opts,
            cycle,
            dir: dir.to_path_buf(),
            stderr: dir.join("server-stderr.log"),
            server: None,
            events: Arc::new(Mutex::new(Events::default())),
            next_event: Arc::new(AtomicU64::new(0)),
            load_seconds: 0.0,
            setup_violation: None,
            last_recovery: 0.5,
        };
        match c.spawn().await? {
            Started::Up(s, _) => c.server = Some(s),
            Started::Failed(m) => {
                c.setup_violation = Some(format!("the server did not start on a fresh data directory: {m}"));
                return Ok(c);
            }
        }
        let t = Instant::now();
        if let Err(m) = c.load().await {
            c.setup_violation = Some(format!("loading the accounts failed: {m}"));
        }
        c.load_seconds = t.elapsed().as_secs_f64();
        Ok(c)
    }

    fn stop(&mut self) {
        if let Some(mut s) = self.server.take() {
            s.kill();
        }
    }

    fn config(&self, port: u16) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host("127.0.0.1")
            .port(port)
            .user("crash")
            .dbname("permafrost")
            .application_name("permafrost-crash")
            .connect_timeout(Duration::from_secs(10));
        config
    }

    async fn connect(&self) -> Result<Client, String> {
        let port = self.server.as_ref().map(|s| s.port).unwrap_or(0);
        let (client, conn) = self
            .config(port)
            .connect(NoTls)
            .await
            .map_err(|e| format!("cannot connect to 127.0.0.1:{port}: {}", describe(&e)))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(client)
    }

    /// Starts the server on the data directory and waits until it accepts connections
    /// (after replaying its log).
    /// The server's command line.
    fn command(&self, port: u16, stderr: std::fs::File) -> Command {
        let mut cmd = Command::new(&self.opts.binary);
        // Settings of the environment would change the server's; the flags say all.
        for (k, _) in std::env::vars_os() {
            if k.to_str().is_some_and(|k| k.starts_with("PERMAFROST_")) {
                cmd.env_remove(k);
            }
        }
        cmd.arg("serve")
            .args(["--listen", &format!("127.0.0.1:{port}"), "--metrics-listen", "off"])
            .arg("--data-dir")
            .arg(&self.dir)
            .args(["--command-log", &self.opts.command_log])
            .args(["--memory-limit", &self.opts.memory_limit.to_string()])
            .args(["--log-segment-size", &self.opts.segment_bytes.to_string()])
            .args(["--partitions", &self.opts.partitions.to_string()])
            .args(["--snapshot-interval", &self.opts.snapshot_interval])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr));
        cmd
    }

    /// Starts the server and kills it `after` this long, whatever it is doing. Returns whether it was still
    /// recovering (not accepting connections) when killed, `None` if it exited by itself.
    async fn spawn_and_kill(&self, after: Duration) -> Result<Option<bool>, BenchError> {
        let port = free_port()?;
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.stderr)?;
        let child = self
            .command(port, stderr)
            .spawn()
            .map_err(|e| BenchError::Options(format!("cannot start the server {}: {e}", self.opts.binary.display())))?;
        let mut server = Server {
            child,
            port,
            started: Instant::now(),
        };
        tokio::time::sleep(after).await;
        if let Ok(Some(_)) = server.child.try_wait() {
            return Ok(None);
        }
        let up = tokio::time::timeout(Duration::from_millis(20), self.config(port).connect(NoTls))
            .await
            .is_ok_and(|r| r.is_ok());
        server.kill();
        Ok(Some(!up))
    }

    async fn spawn(&self) -> Result<Started, BenchError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let port = free_port()?;
            let offset = std::fs::metadata(&self.stderr).map(|m| m.len()).unwrap_or(0);
            let stderr = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.stderr)?;
            let mut cmd = self.command(port, stderr);
            let child = cmd.spawn().map_err(|e| {
                BenchError::Options(format!("cannot start the server {}: {e}", self.opts.binary.display()))
            })?;
            let mut server = Server {
                child,
                port,
                started: Instant::now(),
            };
            let deadline = server.started + self.opts.startup_timeout;
            loop {
                if self.config(port).connect(NoTls).await.is_ok() {
                    let secs = server.started.elapsed().as_secs_f64();
                    return Ok(Started::Up(server, secs));
                }
                if let Ok(Some(status)) = server.child.try_wait() {
                    let text = log_since(&self.stderr, offset);
                    if attempts < 3 && text.contains("Address already in use") {
                        break; // another process took the port: another one
                    }
                    return Ok(Started::Failed(format!(
                        "the server exited ({status}) before accepting connections; its stderr ({}) ends:\n    {}",
                        self.stderr.display(),
                        log_tail(&self.stderr)
                    )));
                }
                if Instant::now() > deadline {
                    server.kill();
                    return Ok(Started::Failed(format!(
                        "the server did not accept connections within {:?}; its stderr ({}) ends:\n    {}",
                        self.opts.startup_timeout,
                        self.stderr.display(),
                        log_tail(&self.stderr)
                    )));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }

    async fn load(&self) -> Result<(), String> {
        let c = self.connect().await?;
        c.batch_execute(
            "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, pad TEXT);
             CREATE TABLE events (id BIGINT PRIMARY KEY, payload TEXT);
             CREATE PROCEDURE transfer(src BIGINT, dst BIGINT, amount BIGINT) AS $$
               UPDATE accounts SET balance = balance - $3 WHERE id = $1;
               UPDATE accounts SET balance = balance + $3 WHERE id = $2
             $$",
        )
        .await
        .map_err(|e| format!("creating the schema: {}", describe(&e)))?;
        let mut clients = Vec::new();
        for _ in 0..LOAD_CONNECTIONS {
            clients.push(self.connect().await?);
        }
        let ctr = Counters::default();
        let n = self.opts.accounts;
        let statements: Vec<(u64, String)> = (0..n.div_ceil(LOAD_ROWS))
            .map(|b| {
                let lo = b * LOAD_ROWS;
                let rows: Vec<String> = (lo..(lo + LOAD_ROWS).min(n))
                    .map(|id| format!("({id}, {INITIAL_BALANCE}, '{}')", account_pad(id as i64)))
                    .collect();
                (lo, format!("INSERT INTO accounts VALUES {}", rows.join(", ")))
            })
            .collect();
        let results: Vec<Result<(), String>> = stream::iter(statements.iter().enumerate())
            .map(|(i, (lo, sql))| {
                let client = &clients[i % clients.len()];
                let ctr = &ctr;
                async move {
                    retrying(ctr, || client.batch_execute(sql))
                        .await
                        .map_err(|e| format!("inserting accounts {lo}..: {}", describe(&e)))
                }
            })
            .buffer_unordered(LOAD_CONNECTIONS * 2)
            .collect()
            .await;
        results.into_iter().collect()
    }

    /// One iteration: workload, kill, restart, checks.
    async fn iteration(&mut self, iteration: u32) -> Result<IterationReport, BenchError> {
        let opts = self.opts;
        let seed = iteration_seed(opts.seed, iteration);
        let mut rng = SmallRng::seed_from_u64(seed);
        let kill_after = opts.run_min + (opts.run_max - opts.run_min) * rng.random::<f64>();
        let mut it = IterationReport {
            iteration,
            data_directory: self.cycle,
            iteration_in_directory: iteration - self.cycle * opts.fresh_every,
            kill_after_seconds: kill_after,
            ..IterationReport::default()
        };
        // The workload.
        let ctr = Arc::new(Counters::default());
        let mut tasks = Vec::new();
        let workload_start = Instant::now();
        let admin = match self.connect().await {
            Ok(a) => a,
            Err(m) => {
                it.violations.push(format!("before the workload: {m}"));
                return Ok(it);
            }
        };
        for conn in 0..opts.connections {
            let client = match self.connect().await {
                Ok(c) => Arc::new(c),
                Err(m) => {
                    it.violations.push(format!("before the workload: {m}"));
                    return Ok(it);
                }
            };
            let stmts = match prepare(&client).await {
                Ok(s) => Arc::new(s),
                Err(e) => {
                    it.violations
                        .push(format!("preparing the workload's statements: {}", describe(&e)));
                    return Ok(it);
                }
            };
            for k in 0..opts.in_flight {
                let w = Worker {
                    client: client.clone(),
                    stmts: stmts.clone(),
                    ctr: ctr.clone(),
                    events: self.events.clone(),
                    next_event: self.next_event.clone(),
                    accounts: opts.accounts,
                    start: workload_start,
                    insert_rate: opts.insert_rate,
                    rng: SmallRng::seed_from_u64(mix(seed ^ ((conn * opts.in_flight + k) as u64 + 1))),
                };
                tasks.push(tokio::spawn(w.run()));
            }
        }
        let start = Instant::now();
        let deadline = start + Duration::from_secs_f64(kill_after);
        let mut samples: VecDeque<Sample> = VecDeque::new();
        if let Some(s) = sample(&admin, &self.dir).await {
            samples.push_back(s);
        }
        // Some iterations ask for a snapshot shortly before the kill.
        let checkpoint_kill = rng.random_range(0..100u32) < opts.checkpoint_kill_pct;
        // Inside the snapshot's own time (tens of ms for this database).
        let checkpoint_lead = Duration::from_millis(rng.random_range(0..60u64));
        let recovery_kill = rng.random_range(0..100u32) < opts.recovery_kill_pct;
        let recovery_kill_after = rng.random::<f64>();
        let checkpoint_pending = Arc::new(AtomicBool::new(false));
        let mut checkpoint_sent = !checkpoint_kill;
        let checkpoint_config = self.config(self.server.as_ref().map_or(0, |s| s.port));
        let server = self.server.as_mut().expect("a running server");
        let mut died = None;
        while Instant::now() < deadline {
            if !checkpoint_sent && Instant::now() + checkpoint_lead >= deadline {
                checkpoint_sent = true;
                if let Ok((c, conn)) = checkpoint_config.connect(NoTls).await {
                    tokio::spawn(conn);
                    let pending = checkpoint_pending.clone();
                    pending.store(true, Ordering::SeqCst);
                    tokio::spawn(async move {
                        if c.batch_execute("CHECKPOINT").await.is_ok() {
                            pending.store(false, Ordering::SeqCst);
                        }
                    });
                }
            }
            // Wake at the checkpoint's moment if it is still to come.
            let until = if checkpoint_sent {
                deadline
            } else {
                deadline - checkpoint_lead
            };
            let left = until.saturating_duration_since(Instant::now());
            tokio::time::sleep(left.min(SAMPLE_EVERY)).await;
            if let Ok(Some(status)) = server.child.try_wait() {
                died = Some(status);
                break;
            }
            if Instant::now() >= deadline {
                break;
            }
            if let Some(s) = sample(&admin, &self.dir).await {
                samples.push_back(s);
                if samples.len() > 64 {
                    samples.pop_front();
                }
            }
        }
        // The kill, right after one more sample.
        let last = sample(&admin, &self.dir).await;
        let in_flight = InFlight {
            transfers: ctr.in_flight[0].load(Ordering::SeqCst),
            inserts: ctr.in_flight[1].load(Ordering::SeqCst),
            reads: ctr.in_flight[2].load(Ordering::SeqCst),
        };
        let snapshot_writing = checkpoint_pending.load(Ordering::SeqCst) || snapshot_tmp_fresh(&self.dir);
        let killed_at = Instant::now();
        if died.is_none()
            && let Ok(Some(status)) = server.child.try_wait()
        {
            died = Some(status);
        }
        server.kill();
        self.server = None;
        let (segments, log_bytes) = log_files(&self.dir);
        ctr.stop.store(true, Ordering::SeqCst);
        let drained = tokio::time::timeout(DRAIN, async {
            for t in &mut tasks {
                let _ = t.await;
            }
        })
        .await;
        if drained.is_err() {
            for t in &tasks {
                t.abort();
            }
            it.violations.push(format!(
                "the workload's statements were not answered within {DRAIN:?} of the kill"
            ));
        }
        drop(admin);
        if let Some(status) = died {
            it.violations.push(format!(
                "the server exited by itself ({status}) during the workload; its stderr ({}) ends:\n    {}",
                self.stderr.display(),
                log_tail(&self.stderr)
            ));
        }
        // What it was doing: the growth since the latest sample at least one sampling
        // period before the kill (the earliest one if the run was shorter).
        let base = samples
            .iter()
            .rev()
            .find(|s| s.at.is_some_and(|a| killed_at.duration_since(a) >= SAMPLE_EVERY))
            .or(samples.front())
            .cloned()
            .unwrap_or_default();
        if let (Some(last), Some(at)) = (&last, base.at) {
            it.phase_window_ms = killed_at.duration_since(at).as_secs_f64() * 1e3;
            it.window_evictions = last.evictions.saturating_sub(base.evictions);
            it.window_unevicted_tuples = last.unevicted.saturating_sub(base.unevicted);
            it.cold_tuples_at_kill = last.cold;
        }
        it.window_new_segments = segments.saturating_sub(base.segments);
        it.phases = Phases {
            eviction: it.window_evictions > 0,
            merge: it.window_unevicted_tuples > 0,
            log_rotation: it.window_new_segments > 0,
            snapshot: snapshot_writing,
            recovery: false,
        };
        it.segments_at_kill = segments;
        it.log_bytes_at_kill = log_bytes;
        it.in_flight_at_kill = in_flight;
        it.events_acknowledged = ctr.inserts.load(Ordering::SeqCst);
        it.transfers_acknowledged = ctr.transfers.load(Ordering::SeqCst);
        it.reads_verified = ctr.reads.load(Ordering::SeqCst);
        it.retries_53200 = ctr.retries_53200.load(Ordering::SeqCst);
        it.retries_40001 = ctr.retries_40001.load(Ordering::SeqCst);
        let problems = ctr.problem_count.load(Ordering::SeqCst);
        if problems > 0 {
            let shown = ctr.problems.lock().unwrap().clone();
            it.violations.push(format!(
                "{problems} unexpected answer(s) during the workload: {}",
                shown.join("; ")
            ));
        }
        // Some restarts are killed too, during recovery.
        if recovery_kill {
            let budget = self.last_recovery.max(0.2);
            let after = Duration::from_secs_f64(budget * recovery_kill_after);
            match self.spawn_and_kill(after).await? {
                Some(true) => it.phases.recovery = true,
                Some(false) => {}
                None => {
                    it.violations
                        .push("the restart killed during recovery exited by itself".into());
                    return Ok(it);
                }
            }
        }
        // The restart.
        let offset = std::fs::metadata(&self.stderr).map(|m| m.len()).unwrap_or(0);
        match self.spawn().await? {
            Started::Up(s, secs) => {
                self.server = Some(s);
                it.recovery_seconds = secs;
                self.last_recovery = secs;
            }
            Started::Failed(m) => {
                it.violations.push(format!("restart after the kill: {m}"));
                return Ok(it);
            }
        }
        let rec = parse_recovery(&log_since(&self.stderr, offset));
        it.records_replayed = rec.records;
        it.replay_seconds = rec.seconds;
        it.torn_tail = rec.torn;
        it.snapshot_loaded = rec.snapshot;
        it.snapshot_base = rec.base;
        // The checks.
        let t = Instant::now();
        if let Err(m) = self.verify(&mut it).await {
            it.violations.push(m);
        }
        it.verify_seconds = t.elapsed().as_secs_f64();
        Ok(it)
    }

    /// Checks the restarted database against what the harness knows.
    async fn verify(&self, it: &mut IterationReport) -> Result<(), String> {
        let c = self.connect().await.map_err(|m| format!("after the restart: {m}"))?;
        let ctr = Counters::default();
        let r = self.check(it, &c, &ctr).await;
        it.verify_retries = ctr.retries_53200.load(Ordering::SeqCst) + ctr.retries_40001.load(Ordering::SeqCst);
        r
    }

    async fn check(&self, it: &mut IterationReport, c: &Client, ctr: &Counters) -> Result<(), String> {
        // Accounts: every one there, the balances adding up to the initial total.
        let n = self.opts.accounts;
        let ranges: Vec<(i64, i64)> = (0..n)
            .step_by(ACCOUNT_RANGE as usize)
            .map(|lo| (lo as i64, (lo + ACCOUNT_RANGE).min(n) as i64))
            .collect();
        let sql = "SELECT COUNT(*), COALESCE(SUM(balance), 0)::bigint FROM accounts WHERE id >= $1 AND id < $2";
        let counted: Vec<Result<(i64, i64, i64, i64), String>> = stream::iter(ranges)
            .map(|(lo, hi)| async move {
                let params: [&(dyn ToSql + Sync); 2] = [&lo, &hi];
                let row = retrying(ctr, || c.query_one(sql, &params))
                    .await
                    .map_err(|e| format!("summing accounts {lo}..{hi}: {}", describe(&e)))?;
                Ok((lo, hi, row.get::<_, i64>(0), row.get::<_, i64>(1)))
            })
            .buffered(VERIFY_DEPTH)
            .collect()
            .await;
        let (mut accounts, mut sum) = (0i64, 0i64);
        let mut short = Vec::new();
        for r in counted {
            let (lo, hi, count, s) = r?;
            if count != hi - lo && short.len() < 5 {
                short.push(format!("{lo}..{hi}: {count} rows"));
            }
            accounts += count;
            sum += s;
        }
        it.accounts = accounts as u64;
        it.balance_sum = sum;
        if accounts as u64 != n {
            it.violations.push(format!(
                "{accounts} accounts after the restart, {n} loaded ({})",
                short.join(", ")
            ));
        }
        let total = initial_total(n);
        if sum != total {
            it.violations.push(format!(
                "the balances add up to {sum} after the restart, not {total}{}",
                if accounts as u64 == n {
                    " (every account is there: a transfer was applied in part)"
                } else {
                    ""
                }
            ));
        }
        // Events: all acknowledged ones (and all found after an earlier restart) there
        // with their payloads, none found missing earlier back, no others.
        let issued = self.next_event.load(Ordering::SeqCst);
        let ranges: Vec<(i64, i64)> = (0..issued)
            .step_by(EVENT_RANGE as usize)
            .map(|lo| (lo as i64, (lo + EVENT_RANGE).min(issued) as i64))
            .collect();
        let sql = "SELECT id, payload FROM events WHERE id >= $1 AND id < $2";
        let found: Vec<Result<EventRows, String>> = stream::iter(ranges)
            .map(|(lo, hi)| async move {
                let params: [&(dyn ToSql + Sync); 2] = [&lo, &hi];
                let rows = retrying(ctr, || c.query(sql, &params))
                    .await
                    .map_err(|e| format!("reading events {lo}..{hi}: {}", describe(&e)))?;
                Ok((lo, hi, rows))
            })
            .buffered(VERIFY_DEPTH)
            .collect()
            .await;
        let mut events = self.events.lock().unwrap();
        events.set(issued.saturating_sub(1), 0);
        let mut bad = Vec::new();
        let mut bad_count = 0u64;
        let mut note = |m: String| {
            bad_count += 1;
            if bad.len() < MAX_MESSAGES {
                bad.push(m);
            }
        };
        for r in found {
            let (lo, hi, rows) = r?;
            let mut here = vec![false; (hi - lo) as usize];
            for row in rows {
                let id: i64 = row.get(0);
                let payload: Option<String> = row.get(1);
                if !(lo..hi).contains(&id) {
                    note(format!("event {id} returned for ids {lo}..{hi}"));
                    continue;
                }
                if std::mem::replace(&mut here[(id - lo) as usize], true) {
                    note(format!("event {id} is there twice"));
                }
                if payload.as_deref() != Some(event_payload(id).as_str()) {
                    note(format!("event {id} has the wrong payload {payload:?}"));
                }
            }
            for (i, &present) in here.iter().enumerate() {
                let id = lo as usize + i;
                let f = events.flags[id];
                match (present, f & ACKED != 0, f & FOUND != 0, f & MISSING != 0) {
                    (true, _, _, true) => note(format!(
                        "event {id} (never acknowledged) was missing after an earlier restart and is back"
                    )),
                    (true, acked, found, false) => {
                        if acked {
                            it.acknowledged_events_checked += 1;
                        } else if !found {
                            it.unacknowledged_present += 1;
                        }
                        events.flags[id] |= FOUND;
                    }
                    (false, true, _, _) => note(format!("acknowledged event {id} is missing after the restart")),
                    (false, false, true, _) => note(format!(
                        "event {id} was there after an earlier restart and is missing now"
                    )),
                    (false, false, false, missing) => {
                        if !missing {
                            it.unacknowledged_absent += 1;
                        }
                        events.flags[id] |= MISSING;
                    }
                }
            }
        }
        if bad_count > 0 {
            it.violations
                .push(format!("{bad_count} wrong event(s): {}", bad.join("; ")));
        }
        Ok(())
    }
}

async fn prepare(c: &Client) -> Result<Stmts, tokio_postgres::Error> {
    Ok(Stmts {
        transfer: c.prepare("CALL transfer($1, $2, $3)").await?,
        insert: c.prepare("INSERT INTO events (id, payload) VALUES ($1, $2)").await?,
        read: c.prepare("SELECT balance, pad FROM accounts WHERE id = $1").await?,
    })
}

/// One of the workload's tasks: a statement at a time, many tasks per connection.
struct Worker {
    client: Arc<Client>,
    stmts: Arc<Stmts>,
    ctr: Arc<Counters>,
    events: Arc<Mutex<Events>>,
    next_event: Arc<AtomicU64>,
    accounts: u64,
    /// When the workload started, and event inserts allowed per second since.
    start: Instant,
    insert_rate: u64,
    rng: SmallRng,
}

impl Worker {
    async fn run(mut self) {
        let (c, st, ctr) = (&*self.client, &*self.stmts, &*self.ctr);
        while !ctr.stop.load(Ordering::Relaxed) {
            let mut pick = self.rng.random_range(0..100u32);
            if (TRANSFER_PCT..TRANSFER_PCT + INSERT_PCT).contains(&pick) {
                let allowed = (self.start.elapsed().as_secs_f64() * self.insert_rate as f64) as u64;
                if ctr.inserts_started.fetch_add(1, Ordering::Relaxed) >= allowed {
                    ctr.inserts_started.fetch_sub(1, Ordering::Relaxed);
                    // Over the rate: a transfer or a read instead, in their proportion.
                    pick = self.rng.random_range(0..100 - INSERT_PCT);
                    if pick >= TRANSFER_PCT {
                        pick += INSERT_PCT;
                    }
                }
            }
            let r = if pick < TRANSFER_PCT {
                let src = self.rng.random_range(0..self.accounts) as i64;
                let mut dst = self.rng.random_range(0..self.accounts - 1) as i64;
                if dst >= src {
                    dst += 1;
                }
                let amount = self.rng.random_range(1..=100i64);
                let params: [&(dyn ToSql + Sync); 3] = [&src, &dst, &amount];
                ctr.in_flight[0].fetch_add(1, Ordering::SeqCst);
                let r = retrying(ctr, || c.execute(&st.transfer, &params)).await;
                ctr.in_flight[0].fetch_sub(1, Ordering::SeqCst);
                r.map(|_| {
                    ctr.transfers.fetch_add(1, Ordering::Relaxed);
                })
            } else if pick < TRANSFER_PCT + INSERT_PCT {
                let id = self.next_event.fetch_add(1, Ordering::SeqCst) as i64;
                let payload = event_payload(id);
                let params: [&(dyn ToSql + Sync); 2] = [&id, &payload];
                ctr.in_flight[1].fetch_add(1, Ordering::SeqCst);
                let r = retrying(ctr, || c.execute(&st.insert, &params)).await;
                ctr.in_flight[1].fetch_sub(1, Ordering::SeqCst);
                r.map(|n| {
                    if n == 1 {
                        self.events.lock().unwrap().set(id as u64, ACKED);
                        ctr.inserts.fetch_add(1, Ordering::Relaxed);
                    } else {
                        ctr.problem(format!("inserting event {id} answered {n} rows"));
                    }
                })
            } else {
                let id = self.rng.random_range(0..self.accounts) as i64;
                let params: [&(dyn ToSql + Sync); 1] = [&id];
                ctr.in_flight[2].fetch_add(1, Ordering::SeqCst);
                let r = retrying(ctr, || c.query_opt(&st.read, &params)).await;
                ctr.in_flight[2].fetch_sub(1, Ordering::SeqCst);
                r.map(|row| match row {
                    Some(row) => {
                        let pad: Option<String> = row.get(1);
                        if pad.as_deref() == Some(account_pad(id).as_str()) {
                            ctr.reads.fetch_add(1, Ordering::Relaxed);
                        } else {
                            ctr.problem(format!("account {id} read with the wrong padding {pad:?}"));
                        }
                    }
                    None => ctr.problem(format!("account {id} is missing")),
                })
            };
            if let Err(e) = r {
                if e.as_db_error().is_some() {
                    // The server answered with an error the workload does not expect.
                    ctr.problem(describe(&e));
                } else {
                    // The connection is gone: the server was killed.
                    break;
                }
            }
        }
    }
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
