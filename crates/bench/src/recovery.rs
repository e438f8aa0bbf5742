//! `permafrost bench recovery`: what a restart costs.
//!
//! Loads YCSB records into an embedded database (command log async, snapshots on demand),
//! takes a snapshot, runs YCSB updates (logged after the snapshot), closes the database and
//! opens it again on the same directory, timing the recovery: the snapshot's load (tables,
//! tombstones, index entries of evicted tuples, block directory) and the replay of the
//! updates after it. Then checks a sample of records against what they were before.
//!
//! The judged figures (issue 5): the replay rate of updates, and the time a database of 1M
//! records, most of them evicted, takes to restart.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use permafrost_executor::{Completion, Database, LogMode};
use permafrost_types::Value;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::BenchError;
use crate::setup::{DbSettings, Open};
use crate::ycsb::keys::KeyChooser;
use crate::ycsb::{FIELDS, Mix, YcsbOptions, YcsbTarget, embedded, values};

/// Settings of a recovery run.
#[derive(Debug, Clone, Serialize)]
pub struct RecoveryOptions {
    pub records: u64,
    pub tuple_size: usize,
    pub memory_limit: u64,
    pub partitions: u32,
    /// Updates run after the snapshot (logged, replayed at the restart).
    pub updates: u64,
    pub skew: f64,
    pub seed: u64,
    /// Updates each of the two client threads keeps in flight.
    pub in_flight: usize,
    /// Records read before and after the restart and compared.
    pub check_sample: u64,
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RecoveryReport {
    pub options: Option<RecoveryOptions>,
    pub load_seconds: f64,
    pub evicted_after_load: u64,
    pub snapshot_seconds: f64,
    pub snapshot_pause_ms: f64,
    pub snapshot_bytes: u64,
    pub updates_seconds: f64,
    pub updates_per_second: f64,
    pub log_bytes_after_snapshot: u64,
    /// From opening the database until `recover` returned (what a server start waits).
    pub restart_seconds: f64,
    pub snapshot_load_seconds: f64,
    pub snapshot_rows: u64,
    pub snapshot_evicted: u64,
    pub snapshot_blocks: u64,
    pub records_replayed: u64,
    pub replay_seconds: f64,
    pub replay_records_per_second: f64,
    pub evicted_after_restart: u64,
    pub checked: u64,
    pub mismatches: u64,
}

impl RecoveryReport {
    pub fn summary(&self) -> String {
        let o = self.options.as_ref();
        format!(
            "recovery: {} records ({} evicted after the load), snapshot {:.2}s ({:.1} ms pause, {} MiB); {} updates \
             after it at {:.0}/s ({} MiB of log)\nrestart: {:.2}s in all: snapshot loaded in {:.2}s ({} rows, {} \
             evicted, {} blocks), {} log records replayed in {:.2}s = {:.0} records/s; {} records checked, {} \
             mismatches",
            o.map_or(0, |o| o.records),
            self.evicted_after_load,
            self.snapshot_seconds,
            self.snapshot_pause_ms,
            self.snapshot_bytes >> 20,
            o.map_or(0, |o| o.updates),
            self.updates_per_second,
            self.log_bytes_after_snapshot >> 20,
            self.restart_seconds,
            self.snapshot_load_seconds,
            self.snapshot_rows,
            self.snapshot_evicted,
            self.snapshot_blocks,
            self.records_replayed,
            self.replay_seconds,
            self.replay_records_per_second,
            self.checked,
            self.mismatches
        )
    }
}

fn settings(opts: &RecoveryOptions, dir: &std::path::Path) -> DbSettings {
    DbSettings {
        partitions: Some(opts.partitions),
        memory_limit: Some(opts.memory_limit),
        anticache: true,
        data_dir: Some(dir.join("blocks")),
        command_log: LogMode::Async,
        log_dir: Some(dir.join("commandlog")),
        snapshot_dir: Some(dir.join("snapshots")),
        snapshot_interval: None,
        snapshot_log_bytes: 0,
        ..DbSettings::default()
    }
}

/// Reads records `keys` (their ten fields).
fn read_all(db: &Database, keys: &[u64]) -> Result<Vec<Vec<Value>>, BenchError> {
    let read = db.procedure("YcsbRead")?;
    let mut session = db.session();
    for &k in keys {
        session.submit(&read, vec![Value::Int(k as i64)], k)?;
    }
    let mut out: std::collections::BTreeMap<u64, Vec<Value>> = std::collections::BTreeMap::new();
    let mut done = Vec::new();
    while session.in_flight() > 0 {
        done.clear();
        session.wait(&mut done)?;
        for c in done.drain(..) {
            let rows = c
                .result
                .map_err(|e| BenchError::Client(format!("reading record {}: {e}", c.token)))?;
            out.insert(c.token, rows.to_values().into_iter().next().unwrap_or_default());
        }
    }
    Ok(keys.iter().map(|k| out.remove(k).unwrap_or_default()).collect())
}

/// Runs the benchmark: a first life of the database (`before_restart`), then its restart,
/// timed, and the check of the sample of records read before it.
pub fn run(opts: &RecoveryOptions, progress: &dyn Fn(&str)) -> Result<RecoveryReport, BenchError> {
    // A temporary directory is removed when `_tmp` drops, after everything else.
    let (dir, _tmp) = data_dir(opts)?;
    let mut report = RecoveryReport {
        options: Some(opts.clone()),
        ..RecoveryReport::default()
    };
    let ycsb = YcsbOptions {
        records: opts.records,
        tuple_size: opts.tuple_size,
        mix: Mix::WriteHeavy,
        skew: opts.skew,
        clients: 2,
        in_flight: opts.in_flight,
        warmup: 0.0,
        duration: 1.0,
        seed: opts.seed,
    };
    ycsb.validate()?;
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    let sample: Vec<u64> = (0..opts.check_sample.min(opts.records))
        .map(|_| rng.random_range(0..opts.records))
        .collect();
    let before = before_restart(opts, &dir, &ycsb, &sample, &mut report, progress)?;
    progress("restarting");
    let t = Instant::now();
    let (db, _keep) = settings(opts, &dir).open()?;
    let r = db.recover(embedded::procedure_defs(), &mut |_, _| {})?;
    report.restart_seconds = t.elapsed().as_secs_f64();
    if let Some(s) = &r.snapshot {
        report.snapshot_load_seconds = s.seconds;
        report.snapshot_rows = s.rows;
        report.snapshot_evicted = s.evicted;
        report.snapshot_blocks = s.blocks;
    }
    report.records_replayed = r.records;
    report.replay_seconds = (r.seconds - report.snapshot_load_seconds).max(0.0);
    report.replay_records_per_second = r.records as f64 / report.replay_seconds.max(1e-9);
    report.evicted_after_restart = db.stats_now()?.evicted_now;
    progress("checking the sample");
    let after = read_all(&db, &sample)?;
    report.checked = sample.len() as u64;
    report.mismatches = before.iter().zip(&after).filter(|(a, b)| a != b).count() as u64;
    Ok(report)
}

/// The run's data directory: `--data-dir` (created if need be; it must be empty), else a
/// new temporary directory, returned too so that the caller keeps it while it runs.
fn data_dir(opts: &RecoveryOptions) -> Result<(PathBuf, Option<tempfile::TempDir>), BenchError> {
    match &opts.data_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            if std::fs::read_dir(d)?.next().is_some() {
                return Err(BenchError::Options(format!(
                    "--data-dir {} must be empty (the run creates a database there)",
                    d.display()
                )));
            }
            Ok((d.clone(), None))
        }
        None => {
            let tmp = tempfile::Builder::new().prefix("permafrost-recovery-").tempdir()?;
            Ok((tmp.path().to_path_buf(), Some(tmp)))
        }
    }
}

/// The database's first life: loads the records, takes a snapshot, runs the updates
/// (logged after it, replayed at the restart) and reads the records of `sample`, which it
/// returns; the figures go in `report`. The database closes at the end (its log is synced;
/// recovery does not depend on how it stopped).
fn before_restart(
    opts: &RecoveryOptions,
    dir: &Path,
    ycsb: &YcsbOptions,
    sample: &[u64],
    report: &mut RecoveryReport,
    progress: &dyn Fn(&str),
) -> Result<Vec<Vec<Value>>, BenchError> {
    let (db, _keep) = settings(opts, dir).open()?;
    let target = embedded::Embedded::new(db.clone(), true);
    progress("loading");
    let t = Instant::now();
    target.load(ycsb, 0, &|_| {})?;
    report.load_seconds = t.elapsed().as_secs_f64();
    report.evicted_after_load = db.stats_now()?.evicted_now;
    progress("snapshot");
    let info = db.snapshot()?;
    report.snapshot_seconds = info.seconds;
    report.snapshot_pause_ms = info.pause_micros as f64 / 1e3;
    report.snapshot_bytes = info.bytes;
    let log_before = db.log_stats().map_or(0, |s| s.bytes);
    progress("updates");
    let t = Instant::now();
    run_updates(&db, opts, ycsb.field_len())?;
    report.updates_seconds = t.elapsed().as_secs_f64();
    report.updates_per_second = opts.updates as f64 / report.updates_seconds.max(1e-9);
    report.log_bytes_after_snapshot = db.log_stats().map_or(0, |s| s.bytes) - log_before;
    progress("reading the sample");
    let before = read_all(&db, sample)?;
    progress("closing");
    Ok(before)
}

/// Runs `opts.updates` updates (one field of a record chosen with the run's skew, values
/// of `len` bytes) from two client threads.
fn run_updates(db: &Database, opts: &RecoveryOptions, len: usize) -> Result<(), BenchError> {
    let chooser = KeyChooser::new(opts.records, opts.skew).map_err(BenchError::Options)?;
    let next = AtomicU64::new(0);
    std::thread::scope(|s| -> Result<(), BenchError> {
        let mut hs = Vec::new();
        for client in 0..2u64 {
            let (chooser, next) = (&chooser, &next);
            hs.push(s.spawn(move || update_client(db, opts, chooser, next, client, len)));
        }
        for h in hs {
            h.join()
                .map_err(|_| BenchError::Client("update client panicked".into()))??;
        }
        Ok(())
    })
}

/// One update client: takes update numbers from `next` until `opts.updates`, keeping
/// `opts.in_flight` in flight in one session; an update the memory budget refused
/// (eviction catching up) or that gave up restarting is sent again, for two minutes of
/// such failures at most.
fn update_client(
    db: &Database,
    opts: &RecoveryOptions,
    chooser: &KeyChooser,
    next: &AtomicU64,
    client: u64,
    len: usize,
) -> Result<(), BenchError> {
    let update = db.procedure("YcsbUpdate")?;
    let mut session = db.session();
    session.set_batch(256);
    let mut rng = SmallRng::seed_from_u64(opts.seed ^ (client + 1).wrapping_mul(0x9E37_79B9));
    let mut buf = String::new();
    let mut done: Vec<Completion> = Vec::new();
    // In flight: token -> (key, field, version), to send again what the
    // memory budget refused (eviction catching up) or that gave up
    // restarting.
    let mut ops: std::collections::HashMap<u64, (u64, u32, u32)> = std::collections::HashMap::new();
    let mut again: Vec<(u64, (u64, u32, u32))> = Vec::new();
    let submit = |session: &mut permafrost_executor::Session,
                  token: u64,
                  op: (u64, u32, u32),
                  buf: &mut String|
     -> Result<(), BenchError> {
        values::fill(op.0, op.1, op.2, len, buf);
        session.submit(
            &update,
            vec![
                Value::Int(op.0 as i64),
                Value::Int(op.1 as i64),
                Value::from(buf.as_str()),
            ],
            token,
        )?;
        Ok(())
    };
    let mut stalled_since: Option<Instant> = None;
    loop {
        let next_op = if let Some((t, op)) = again.pop() {
            Some((t, op))
        } else {
            let i = next.fetch_add(1, Ordering::Relaxed);
            (i < opts.updates).then(|| {
                let key = chooser.next(&mut rng);
                let field = rng.random_range(0..FIELDS as u32);
                (i, (key, field, (i % 1_000_000) as u32 + 1))
            })
        };
        match next_op {
            Some((t, op)) => {
                submit(&mut session, t, op, &mut buf)?;
                ops.insert(t, op);
            }
            None if session.in_flight() == 0 => break,
            None => {}
        }
        while session.in_flight() >= opts.in_flight || (next_op.is_none() && session.in_flight() > 0) {
            done.clear();
            session.wait(&mut done)?;
            for c in &done {
                let op = ops.remove(&c.token);
                match &c.result {
                    Ok(_) => stalled_since = None,
                    Err(e) if e.is_retryable() => {
                        let since = *stalled_since.get_or_insert_with(Instant::now);
                        if since.elapsed().as_secs() > 120 {
                            return Err(BenchError::Client(format!("updates stalled: {e}")));
                        }
                        if let Some(op) = op {
                            again.push((c.token, op));
                        }
                    }
                    Err(e) => return Err(BenchError::Client(format!("update failed: {e}"))),
                }
            }
            if !again.is_empty() {
                break;
            }
        }
    }
    Ok(())
}
