//! The transactional parts of `bench experiment paper`: TPC-C as its data grows from 1× to
//! 8× the memory budget (`ratios`), Voter and TATP at `oltp_ratios` times it, on Permafrost
//! and MariaDB (memcached has no part in them: the paper put it in front of MySQL for YCSB
//! only). At each size both systems are started afresh, loaded with the population that
//! makes that much data, and run both ways (one stored-procedure call per transaction, and
//! interactive transactions) in interleaved rounds, their invariants or consistency
//! conditions checked after every run.
//!
//! A system that cannot load a size (Permafrost answering 53200 because what must stay in
//! memory no longer fits its budget, a server killed by its cgroup) is a finding, not the
//! end of the experiment: the refusal is reported ([`Refusal`]) and that system sits out
//! the part's larger sizes. A failed run or check still stops the experiment.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::model::{OLTP_WAYS, OltpPoint, PaperOptions, Part, Refusal, System, SystemReport};
use super::systems::{self, Endpoint, Progress};
use crate::BenchError;
use crate::tatp::{self, TatpOptions};
use crate::tpcc::{self, Target, TpccOptions};
use crate::voter::{self, VoterOptions};
use crate::way::Mode;

/// The ways each system runs the transactions.
const MODES: [Mode; OLTP_WAYS] = [Mode::Procedures, Mode::Interactive];

/// Steps the progress bar counts for `part`: a load per size and system, and the runs.
pub fn steps(o: &PaperOptions, part: Part) -> usize {
    if o.part_runs(part) == 0 {
        return 0;
    }
    o.part_ratios(part).len() * o.oltp_systems().len() + o.part_runs(part)
}

/// One part's options at one size.
#[derive(Clone)]
enum Workload {
    Tpcc(TpccOptions),
    Voter(VoterOptions),
    Tatp(TatpOptions),
}

impl Workload {
    /// The workload of `part` at `ratio` times the budget, loading only.
    fn at(o: &PaperOptions, part: Part, ratio: u32) -> Workload {
        match part {
            Part::Tpcc => Workload::Tpcc(TpccOptions {
                warehouses: o.tpcc_warehouses,
                clients: o.oltp_clients,
                warmup: o.warmup,
                duration: o.duration,
                seed: o.seed,
                scale: tpcc::Scale::grown(o.tpcc_orders(ratio)),
                mix: tpcc::Mix::Full,
                load: true,
                run: false,
            }),
            Part::Voter => Workload::Voter(VoterOptions {
                clients: o.oltp_clients,
                warmup: o.warmup,
                duration: o.duration,
                seed: o.seed,
                votes: o.voter_votes(ratio),
                load: true,
                run: false,
                ..VoterOptions::default()
            }),
            Part::Tatp => Workload::Tatp(TatpOptions {
                subscribers: o.tatp_subscribers(ratio),
                clients: o.oltp_clients,
                warmup: o.warmup,
                duration: o.duration,
                seed: o.seed,
                load: true,
                run: false,
            }),
            Part::Ycsb => unreachable!("YCSB is not a transactional part"),
        }
    }

    /// The same workload, run on the loaded tables.
    fn running(&self) -> Workload {
        match self.clone() {
            Workload::Tpcc(o) => Workload::Tpcc(TpccOptions {
                load: false,
                run: true,
                ..o
            }),
            Workload::Voter(o) => Workload::Voter(VoterOptions {
                load: false,
                run: true,
                ..o
            }),
            Workload::Tatp(o) => Workload::Tatp(TatpOptions {
                load: false,
                run: true,
                ..o
            }),
        }
    }

    /// The population, and what it counts.
    fn scale(&self) -> (u64, &'static str) {
        match self {
            Workload::Tpcc(o) => (u64::from(o.scale.orders), Part::Tpcc.unit()),
            Workload::Voter(o) => (o.votes as u64, Part::Voter.unit()),
            Workload::Tatp(o) => (u64::from(o.subscribers), Part::Tatp.unit()),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Workload::Tpcc(_) => "TPC-C",
            Workload::Voter(_) => "Voter",
            Workload::Tatp(_) => "TATP",
        }
    }

    /// Runs it against `e` in `mode`.
    fn run(&self, e: &Endpoint, mode: Mode) -> Result<Outcome, BenchError> {
        let target = |addr: &str| Target::new(addr, "postgres", "postgres");
        match (self, e) {
            (Workload::Tpcc(o), Endpoint::Permafrost { addr }) => {
                Outcome::of(&tpcc::run(&target(addr)?, o, mode, false)?)
            }
            (Workload::Tpcc(o), Endpoint::MariaDb { url, .. }) => {
                Outcome::of(&tpcc::mariadb::run(url, o, mode, false)?)
            }
            (Workload::Voter(o), Endpoint::Permafrost { addr }) => {
                Outcome::of(&voter::run(&target(addr)?, o, mode, false)?)
            }
            (Workload::Voter(o), Endpoint::MariaDb { url, .. }) => {
                Outcome::of(&voter::mariadb::run(url, o, mode, false)?)
            }
            (Workload::Tatp(o), Endpoint::Permafrost { addr }) => {
                Outcome::of(&tatp::run(&target(addr)?, o, mode, false)?)
            }
            (Workload::Tatp(o), Endpoint::MariaDb { url, .. }) => {
                Outcome::of(&tatp::mariadb::run(url, o, mode, false)?)
            }
        }
    }
}

/// What the experiment reads of a benchmark's report.
trait Figures: Serialize {
    /// Transactions per second, whether it held, its summary, the checks passed and made.
    fn figures(&self) -> (f64, bool, String, usize, usize);
}

macro_rules! figures {
    ($($report:ty),*) => {
        $(impl Figures for $report {
            fn figures(&self) -> (f64, bool, String, usize, usize) {
                (self.transactions_per_sec, self.ok(), self.summary(), self.checks_passed, self.checks.len())
            }
        })*
    };
}

figures!(tpcc::TpccReport, voter::VoterReport, tatp::TatpReport);

/// What a run gave: its throughput, whether it held, and its whole report.
struct Outcome {
    tps: f64,
    ok: bool,
    summary: String,
    checks_passed: usize,
    checks: usize,
    report: serde_json::Value,
}

impl Outcome {
    fn of(r: &impl Figures) -> Result<Outcome, BenchError> {
        let (tps, ok, summary, checks_passed, checks) = r.figures();
        Ok(Outcome {
            tps,
            ok,
            summary,
            checks_passed,
            checks,
            report: serde_json::to_value(r).map_err(|e| BenchError::Client(e.to_string()))?,
        })
    }

    /// A run whose checks failed, or in which a transaction failed, stops the experiment.
    fn checked(self, system: System, what: &str) -> Result<Outcome, BenchError> {
        if self.ok {
            Ok(self)
        } else {
            Err(BenchError::Client(format!(
                "{what} on {}: a transaction failed or a check does not hold:\n{}",
                system.name(),
                self.summary
            )))
        }
    }
}

/// What a part gave: its points, how each system was started, and the loads refused.
pub type PartResult = (Vec<OltpPoint>, Vec<SystemReport>, Vec<Refusal>);

/// Runs `part`, the servers' files under `dir`.
pub fn run(
    o: &PaperOptions,
    part: Part,
    binary: &Path,
    dir: &Path,
    progress: &Progress,
) -> Result<PartResult, BenchError> {
    let mut points = Vec::new();
    let mut reports = Vec::new();
    let mut refusals: Vec<Refusal> = Vec::new();
    for &ratio in o.part_ratios(part) {
        let load = Workload::at(o, part, ratio);
        let name = load.name();
        let (scale, unit) = load.scale();
        let mut running = Vec::new();
        for s in o.oltp_systems() {
            if refusals.iter().any(|r| r.system == s) {
                // It sits out the larger sizes; their steps are counted done.
                progress.skip(1 + o.rounds * MODES.len());
                continue;
            }
            progress.doing(format!("{name} {ratio}x: starting {}", s.name()));
            let what = format!("{} {ratio}x", part.name());
            let files = dir.join(format!("{}-{ratio}x-{}", part.name(), s.name().replace('+', "-")));
            let mut r = systems::start(s, o, binary, &files, part.name(), &what)?;
            progress.doing(format!("{name} {ratio}x: loading {scale} {unit} into {}", s.name()));
            let started = Instant::now();
            let loaded = load
                .run(&r.endpoint, Mode::Procedures)
                .and_then(|out| out.checked(s, &format!("{name} load")))
                .and_then(|_| r.check());
            if let Err(e) = loaded {
                progress.say(format!("{name}: {} could not load {ratio}x memory: {e}", s.name()));
                let report = r.report();
                refusals.push(Refusal {
                    part,
                    system: s,
                    ratio,
                    scale,
                    oom_kills: report.oom_kills,
                    error: e.to_string(),
                });
                reports.push(report);
                progress.skip(1 + o.rounds * MODES.len());
                continue;
            }
            let seconds = started.elapsed().as_secs_f64();
            r.load_seconds.push(seconds);
            progress.say(format!(
                "{name}: {scale} {unit} ({ratio}x memory) loaded into {} in {seconds:.0} s",
                s.name()
            ));
            progress.step();
            running.push(r);
        }
        let first = points.len();
        for r in &running {
            for mode in MODES {
                points.push(OltpPoint::new(part.name(), r.system, mode, ratio, (scale, unit)));
            }
        }
        let workload = load.running();
        for round in 0..o.rounds {
            let mut order: Vec<usize> = (0..running.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for mode in MODES {
                for &i in &order {
                    let r = &mut running[i];
                    let system = r.system.name();
                    progress.doing(format!("{name} {ratio}x: {system}, {}", mode.name()));
                    let out = workload
                        .run(&r.endpoint, mode)?
                        .checked(r.system, &format!("{name} {}", mode.name()))?;
                    r.check()?;
                    progress.say(format!(
                        "{name} {ratio}x {system:<18} {:<40} {:>9.0} transactions/s  {}/{} checks",
                        mode.name(),
                        out.tps,
                        out.checks_passed,
                        out.checks
                    ));
                    let sys = r.system;
                    let p = points[first..]
                        .iter_mut()
                        .find(|p| p.system == sys && p.mode == mode.name())
                        .expect("every system and mode has its point");
                    p.add(out.tps, out.report);
                    progress.step();
                }
            }
        }
        reports.extend(running.iter().map(|r| r.report()));
    }
    Ok((points, reports, refusals))
}
