//! The crash harness: `permafrost bench crash`.
//!
//! Runs `permafrost serve` with the command log in sync mode, a small memory budget (so
//! that eviction and the merging of fetched blocks run all the time) and small log
//! segments (so that they rotate often), drives a concurrent workload at it over the
//! PostgreSQL protocol, kills it with SIGKILL at a random moment, starts it again on the
//! same data directory and checks what came back:
//!
//! - every event insert the server acknowledged is there with its payload and with the
//!   values its column defaults drew (`gen_random_uuid()`, `random()`, `now()`, its
//!   BIGSERIAL column's sequence, or for every other event an explicit `nextval()` of it,
//!   and `nextval()` of a sequence of its own, CREATE SEQUENCE's, stepping by 7)
//!   as the insert's RETURNING answered them, and so is
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

use std::path::{Path, PathBuf};
use std::time::Instant;

use permafrost_bench::BenchError;

mod cycle;
mod report;
mod server;
mod workload;

use cycle::*;
pub use report::*;
use workload::*;

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
    use super::server::{Recovered, parse_recovery};
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
