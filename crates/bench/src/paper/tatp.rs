//! The TATP part of `bench experiment paper`: TATP at each of `oltp_ratios` times the
//! memory budget, on Permafrost and MariaDB (memcached has no part in it: the paper put it
//! in front of MySQL for YCSB only). At each size both are started afresh, loaded with the
//! subscribers that make that much data, and run both ways (one stored-procedure call per
//! transaction, and interactive transactions) in interleaved rounds, their invariants
//! checked after every run.

use std::path::Path;
use std::time::Instant;

use super::model::{OltpPoint, PaperOptions, System, SystemReport};
use super::systems::{self, Endpoint, Progress};
use crate::BenchError;
use crate::tatp::{self, TatpOptions, TatpReport};
use crate::tpcc::Target;
use crate::way::Mode;

/// The ways each system runs the transactions.
const MODES: [Mode; 2] = [Mode::Procedures, Mode::Interactive];

/// The systems of this part.
fn systems(o: &PaperOptions) -> Vec<System> {
    o.systems
        .iter()
        .copied()
        .filter(|s| *s != System::MariaDbMemcached)
        .collect()
}

/// Steps the progress bar counts for this part: a load per size and system, and the runs.
pub fn steps(o: &PaperOptions) -> usize {
    if o.tatp_runs() == 0 {
        return 0;
    }
    o.oltp_ratios.len() * systems(o).len() + o.tatp_runs()
}

fn run_one(e: &Endpoint, opts: &TatpOptions, mode: Mode) -> Result<TatpReport, BenchError> {
    match e {
        Endpoint::Permafrost { addr } => tatp::run(&Target::new(addr, "postgres", "postgres")?, opts, mode, false),
        Endpoint::MariaDb { url, .. } => tatp::mariadb::run(url, opts, mode, false),
    }
}

/// A run whose invariants failed, or in which a transaction failed, stops the experiment.
fn checked(system: System, what: &str, r: TatpReport) -> Result<TatpReport, BenchError> {
    if r.ok() {
        Ok(r)
    } else {
        Err(BenchError::Client(format!(
            "TATP {what} on {}: {} failed transactions, {} of {} invariants held:\n{}",
            system.name(),
            r.failed,
            r.checks_passed,
            r.checks.len(),
            r.summary()
        )))
    }
}

/// Runs the part, the servers' files under `dir`.
pub fn run(
    o: &PaperOptions,
    binary: &Path,
    dir: &Path,
    progress: &Progress,
) -> Result<(Vec<OltpPoint>, Vec<SystemReport>), BenchError> {
    let mut points = Vec::new();
    let mut reports = Vec::new();
    for &ratio in &o.oltp_ratios {
        let subscribers = o.tatp_subscribers(ratio);
        let opts = TatpOptions {
            subscribers,
            clients: o.oltp_clients,
            warmup: o.warmup,
            duration: o.duration,
            seed: o.seed,
            load: true,
            run: false,
        };
        let mut running = Vec::new();
        for s in systems(o) {
            progress.doing(format!("TATP {ratio}x: starting {}", s.name()));
            let what = format!("tatp {ratio}x");
            let mut r = systems::start(s, o, binary, &dir.join(format!("tatp-{ratio}x")), "tatp", &what)?;
            progress.doing(format!(
                "TATP {ratio}x: loading {subscribers} subscribers into {}",
                s.name()
            ));
            let started = Instant::now();
            checked(s, "load", run_one(&r.endpoint, &opts, Mode::Procedures)?)?;
            r.check()?;
            let seconds = started.elapsed().as_secs_f64();
            r.load_seconds.push(seconds);
            progress.say(format!(
                "TATP: {subscribers} subscribers ({ratio}x memory) loaded into {} in {seconds:.0} s",
                s.name()
            ));
            progress.step();
            running.push(r);
        }
        let first = points.len();
        for r in &running {
            for mode in MODES {
                points.push(OltpPoint::new("tatp", r.system, mode, ratio, u64::from(subscribers)));
            }
        }
        let run_opts = TatpOptions {
            load: false,
            run: true,
            ..opts
        };
        for round in 0..o.rounds {
            let mut order: Vec<usize> = (0..running.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for mode in MODES {
                for &i in &order {
                    let r = &mut running[i];
                    let name = r.system.name();
                    progress.doing(format!("TATP {ratio}x: {name}, {}", mode.name()));
                    let report = checked(r.system, mode.name(), run_one(&r.endpoint, &run_opts, mode)?)?;
                    r.check()?;
                    progress.say(format!(
                        "TATP {ratio}x {name:<18} {:<40} {:>9.0} transactions/s  {}/{} invariants",
                        mode.name(),
                        report.transactions_per_sec,
                        report.checks_passed,
                        report.checks.len()
                    ));
                    let system = r.system;
                    let p = points[first..]
                        .iter_mut()
                        .find(|p| p.system == system && p.mode == mode.name())
                        .expect("every system and mode has its point");
                    p.add(report.transactions_per_sec, &report)?;
                    progress.step();
                }
            }
        }
        reports.extend(running.iter().map(|r| r.report()));
    }
    Ok((points, reports))
}
