//! The harness's constants, its settings ([`CrashOptions`]) and its figures
//! ([`CrashReport`] and the rows it adds up), which the driver (mod.rs), one data
//! directory's cycle (cycle.rs) and the workload (workload.rs) share.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use permafrost_bench::BenchError;

/// Bytes of padding per account (the accounts outgrow a small memory budget).
pub(super) const PAD_BYTES: usize = 900;
/// Bytes of payload per event.
pub(super) const PAYLOAD_BYTES: usize = 100;
/// Every account's balance at the start.
pub(super) const INITIAL_BALANCE: i64 = 1_000;
/// Accounts per statement while loading.
pub(super) const LOAD_ROWS: u64 = 100;
/// Connections loading the accounts.
pub(super) const LOAD_CONNECTIONS: usize = 4;
/// Connections that run transfers as BEGIN ... COMMIT blocks, one block at a time each.
pub(super) const BLOCK_CONNECTIONS: usize = 2;
/// Accounts per verification query (a range of keys: one statement over the whole table
/// would need all of it in memory at once).
pub(super) const ACCOUNT_RANGE: u64 = 1_000;
/// Events per verification query.
pub(super) const EVENT_RANGE: u64 = 2_000;
/// Verification queries in flight (pipelined on one connection).
pub(super) const VERIFY_DEPTH: usize = 4;
/// How often the server's figures are sampled during the workload.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// How long a statement refused for the memory budget (or a retry) may keep failing
/// before the harness gives up.
pub(super) const RETRY_STALL: Duration = Duration::from_secs(120);
/// How long the workload's tasks get to notice that the server is gone.
pub(super) const DRAIN: Duration = Duration::from_secs(30);
/// Unexpected events described in full per iteration (the rest are counted).
pub(super) const MAX_MESSAGES: usize = 20;

/// Percentages of the workload's operations (the rest are reads).
pub(super) const TRANSFER_PCT: u32 = 40;
pub(super) const INSERT_PCT: u32 = 40;

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

    pub(super) fn cycle_of(&self, iteration: u32) -> u32 {
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
