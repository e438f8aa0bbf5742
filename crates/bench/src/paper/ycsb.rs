//! The YCSB part of `bench experiment paper` (the anti-caching paper's Fig. 6): every
//! system started once, the data grown from the smallest size to the largest, and at each
//! size every mix and skew run on every system in interleaved rounds.

use std::path::Path;
use std::time::Instant;

use super::model::{PaperOptions, Point, SystemReport, skew_text};
use super::systems::{self, Endpoint, Progress};
use crate::BenchError;
use crate::ycsb::{self, Mix, YcsbTarget};

/// The YCSB client of a running system.
fn target(e: &Endpoint, connections: usize) -> Result<Box<dyn YcsbTarget>, BenchError> {
    Ok(match e {
        Endpoint::Permafrost { addr } => Box::new(ycsb::server::Server::new(addr, connections)?),
        Endpoint::MariaDb { url, memcached } => {
            let cache = memcached.as_ref().map(|p| p.to_string_lossy().into_owned());
            Box::new(ycsb::mariadb::MariaDb::new(url, cache.as_deref(), connections)?)
        }
    })
}

/// Steps the progress bar counts for this part: a load per size and system, and the runs.
pub fn steps(o: &PaperOptions) -> usize {
    if o.ycsb_runs() == 0 {
        return 0;
    }
    o.ratios.len() * o.systems.len() + o.ycsb_runs()
}

/// Runs the part, the servers' files under `dir`.
pub fn run(
    o: &PaperOptions,
    binary: &Path,
    dir: &Path,
    progress: &Progress,
) -> Result<(Vec<Point>, Vec<SystemReport>), BenchError> {
    let mut running = Vec::new();
    let mut targets = Vec::new();
    for &s in &o.systems {
        progress.doing(format!("starting {}", s.name()));
        let r = systems::start(s, o, binary, &dir.join("ycsb"), "ycsb", "ycsb")?;
        progress.say(format!("{}: {}", s.name(), r.settings));
        targets.push(target(&r.endpoint, o.connections)?);
        running.push(r);
    }
    let mut points: Vec<Point> = Vec::new();
    let mut loaded = 0u64;
    for &ratio in &o.ratios {
        let records = o.records(ratio);
        for (r, t) in running.iter_mut().zip(&targets) {
            progress.doing(format!("{}: loading to {records} records ({ratio}x)", r.system.name()));
            let started = Instant::now();
            let opts = o.ycsb(records, Mix::ReadOnly, o.skews[0]);
            t.load(&opts, loaded, &|_| {})?;
            r.check()?;
            let seconds = started.elapsed().as_secs_f64();
            r.load_seconds.push(seconds);
            progress.say(format!(
                "{}: {records} records ({ratio}x memory) loaded in {seconds:.0} s",
                r.system.name()
            ));
            progress.step();
        }
        loaded = records;
        let first = points.len();
        for &mix in &o.mixes {
            for &skew in &o.skews {
                for &system in &o.systems {
                    points.push(Point {
                        system,
                        mix,
                        skew,
                        ratio,
                        records,
                        throughput_tps: Vec::new(),
                        median_tps: 0.0,
                        runs: Vec::new(),
                    });
                }
            }
        }
        for round in 0..o.rounds {
            for &mix in &o.mixes {
                for &skew in &o.skews {
                    let mut order: Vec<usize> = (0..running.len()).collect();
                    if round % 2 == 1 {
                        order.reverse();
                    }
                    for i in order {
                        let r = &mut running[i];
                        let name = r.system.name();
                        progress.doing(format!("{name} {} skew {} {ratio}x", mix.name(), skew_text(skew)));
                        let opts = o.ycsb(records, mix, skew);
                        let report = ycsb::grow_and_run(targets[i].as_ref(), &opts, records, false)?;
                        r.check()?;
                        progress.say(format!(
                            "{ratio}x {:<11} skew {:<4} {name:<18} {:>9.0} ops/s  p99 {:>6} us  verify_errors {}  failed {}",
                            mix.name(),
                            skew_text(skew),
                            report.throughput_tps,
                            report.latency_us.p99,
                            report.verify_errors,
                            report.failed
                        ));
                        if report.verify_errors > 0 {
                            return Err(BenchError::Client(format!(
                                "{name}: {} reads failed verification",
                                report.verify_errors
                            )));
                        }
                        let p = points[first..]
                            .iter_mut()
                            .find(|p| p.system == r.system && p.mix == mix && p.skew == skew)
                            .expect("every system, mix and skew has its point");
                        p.throughput_tps.push(report.throughput_tps);
                        p.runs.push(report);
                        progress.step();
                    }
                }
            }
        }
    }
    for p in &mut points {
        p.median_tps = crate::experiment::median(&p.throughput_tps);
    }
    // The clients go before their servers.
    drop(targets);
    Ok((points, running.iter().map(|r| r.report()).collect()))
}
