//! `permafrost bench experiment paper`: the anti-caching paper's comparison (DeBrabant et
//! al. 2013, §4, Fig. 6) run on this machine with one command. Permafrost (`permafrost
//! serve`, over the PostgreSQL protocol), MariaDB (InnoDB, through its own driver) and
//! MariaDB + memcached (cache-aside reads, invalidate on write, both sharing one budget)
//! each run in a memory cgroup of the same size; the same YCSB client drives all three:
//! the read-only, read-heavy and write-heavy mixes at each skew, with the data at 1, 2, 4
//! and 8 times the memory budget. The data grows between sizes: each size loads only the
//! records it adds to the one before (every system holds the same records at each step).
//!
//! Rounds are interleaved: within a size, each round runs every mix and skew on every
//! system, the systems' order reversed every other round, so a drift of the shared
//! machine reaches all of them alike; the median of the rounds is reported, with each
//! run's full report. What is measured is written as `paper.json`, `paper.png` (one chart
//! per mix and skew: throughput against the data-to-memory ratio) and `paper.md` (the table
//! the README shows, with the command that made it).
//!
//! TPC-C as its data grows, Voter and TATP are not part of this experiment yet: their
//! comparisons with the same peers run through `scripts/tpcc-compare.sh` (see
//! docs/results/tpcc.md, tatp.md).

mod model;
mod summary;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::BenchError;
use crate::servers::{self, Cgroup, Process};
use crate::ycsb::{self, Mix, YcsbOptions, YcsbTarget};

pub use model::{Finding, PaperOptions, PaperReport, Point, Row, System, SystemReport};

/// A system running in its cgroup, and the client that drives it.
struct Running {
    system: System,
    settings: String,
    cgroup: Cgroup,
    limit: u64,
    /// Stopped in this order before the cgroup goes.
    processes: Vec<Process>,
    target: Box<dyn YcsbTarget>,
    load_seconds: Vec<f64>,
}

impl Running {
    fn check(&mut self) -> Result<(), BenchError> {
        for p in &mut self.processes {
            p.check_running().map_err(|e| {
                BenchError::Client(format!(
                    "{} (cgroup OOM kills: {}): {e}",
                    self.system.name(),
                    self.cgroup.oom_kills()
                ))
            })?;
        }
        Ok(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for p in &mut self.processes {
            p.stop();
        }
    }
}

/// Starts `system` in its cgroup under `dir`.
fn start(system: System, o: &PaperOptions, binary: &Path, dir: &Path) -> Result<Running, BenchError> {
    let limit = o.memory_limit + o.cgroup_extra;
    let cgroup = Cgroup::create(&format!("permafrost-paper-{}", system.name().replace('+', "-")), limit)?;
    let mib = |b: u64| b >> 20;
    let budget = o.memory_limit;
    let (processes, target, settings): (Vec<Process>, Box<dyn YcsbTarget>, String) = match system {
        System::Permafrost => {
            let port = servers::free_port()?;
            let p = servers::permafrost(binary, &dir.join("permafrost"), budget, port, &cgroup)?;
            let target = ycsb::server::Server::new(&format!("127.0.0.1:{port}"), o.connections)?;
            let settings = format!(
                "permafrost serve --memory-limit {}MiB (built-in defaults: command log sync)",
                mib(budget)
            );
            (vec![p], Box::new(target), settings)
        }
        System::MariaDb => {
            let (p, url) = servers::mariadb(&dir.join("mariadb"), budget, "ycsb", &cgroup)?;
            let target = ycsb::mariadb::MariaDb::new(&url, None, o.connections)?;
            let settings = format!(
                "MariaDB {}: innodb_buffer_pool_size={}M, O_DIRECT, flush_log_at_trx_commit=1",
                mariadb_version(&url),
                mib(budget)
            );
            (vec![p], Box::new(target), settings)
        }
        System::MariaDbMemcached => {
            let cache = budget * o.memcached_percent / 100;
            let pool = budget - cache;
            let d = dir.join("mariadb-memcached");
            let (db, url) = servers::mariadb(&d, pool, "ycsb", &cgroup)?;
            let sock = d.join("memcached.sock");
            let mc = servers::memcached(&sock, cache, &d.join("memcached.log"), &cgroup)?;
            let target = ycsb::mariadb::MariaDb::new(&url, Some(&sock.to_string_lossy()), o.connections)?;
            let settings = format!(
                "MariaDB innodb_buffer_pool_size={}M (as above) + memcached -m {} in one cgroup; cache-aside reads, the key deleted after each update",
                mib(pool),
                mib(cache)
            );
            // memcached stops first: MariaDB may take a while to flush.
            (vec![mc, db], Box::new(target), settings)
        }
    };
    Ok(Running {
        system,
        settings,
        cgroup,
        limit,
        processes,
        target,
        load_seconds: Vec::new(),
    })
}

/// The server's version, or what kept it from being read.
fn mariadb_version(url: &str) -> String {
    let version = || -> Result<String, BenchError> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async { crate::mariadb::version(&mut crate::mariadb::connect(url).await?).await })
    };
    version().unwrap_or_else(|e| format!("(version unknown: {e})"))
}

/// Runs the experiment, with a progress bar on the terminal when `progress_bar`.
pub fn run(o: &PaperOptions, command: &str, progress_bar: bool) -> Result<PaperReport, BenchError> {
    o.validate()?;
    let started = Instant::now();
    let binary = match &o.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe()?,
    };
    let tmp;
    let dir = match &o.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            tempfile::Builder::new().prefix("paper-").tempdir_in(d)?
        }
        None => {
            tmp = tempfile::Builder::new().prefix("permafrost-paper-").tempdir()?;
            tmp
        }
    };
    let steps = (o.runs() + o.ratios.len() * o.systems.len()) as u64;
    let bar = if progress_bar {
        let b = indicatif::ProgressBar::new(steps);
        b.set_style(
            indicatif::ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} {msg} (eta {eta})")
                .expect("valid template"),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let say = |line: String| {
        if progress_bar {
            bar.println(line);
        } else {
            println!("{line}");
        }
    };
    say(format!(
        "paper: YCSB at {} x {}MiB, {} mixes x {} skews x {} systems x {} rounds = {} runs of {}+{} s (at least {:.0} min)",
        o.ratios.iter().map(u32::to_string).collect::<Vec<_>>().join("/"),
        o.memory_limit >> 20,
        o.mixes.len(),
        o.skews.len(),
        o.systems.len(),
        o.rounds,
        o.runs(),
        o.warmup,
        o.duration,
        o.seconds() / 60.0
    ));
    let mut running = Vec::new();
    for &s in &o.systems {
        bar.set_message(format!("starting {}", s.name()));
        let r = start(s, o, &binary, dir.path())?;
        say(format!("{}: {}", s.name(), r.settings));
        running.push(r);
    }
    let mut points: Vec<Point> = Vec::new();
    let mut loaded = 0u64;
    for &ratio in &o.ratios {
        let records = o.records(ratio);
        for r in &mut running {
            bar.set_message(format!("{}: loading to {records} records ({ratio}x)", r.system.name()));
            let t = Instant::now();
            let opts = o.ycsb(records, Mix::ReadOnly, o.skews[0]);
            ycsb_load(r.target.as_ref(), &opts, loaded)?;
            r.check()?;
            r.load_seconds.push(t.elapsed().as_secs_f64());
            say(format!(
                "{}: {} records ({ratio}x memory) loaded in {:.0} s",
                r.system.name(),
                records,
                t.elapsed().as_secs_f64()
            ));
            bar.inc(1);
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
                    let order: Vec<usize> = if round % 2 == 0 {
                        (0..running.len()).collect()
                    } else {
                        (0..running.len()).rev().collect()
                    };
                    for i in order {
                        let r = &mut running[i];
                        bar.set_message(format!(
                            "{} {} skew {} {ratio}x",
                            r.system.name(),
                            mix.name(),
                            summary::skew_text(skew)
                        ));
                        let opts = o.ycsb(records, mix, skew);
                        let report = ycsb::grow_and_run(r.target.as_ref(), &opts, records, false)?;
                        r.check()?;
                        say(format!(
                            "{ratio}x {:<11} skew {:<4} {:<18} {:>9.0} ops/s  p99 {:>6} us  verify_errors {}  failed {}",
                            mix.name(),
                            summary::skew_text(skew),
                            r.system.name(),
                            report.throughput_tps,
                            report.latency_us.p99,
                            report.verify_errors,
                            report.failed
                        ));
                        if report.verify_errors > 0 {
                            return Err(BenchError::Client(format!(
                                "{}: {} reads failed verification",
                                r.system.name(),
                                report.verify_errors
                            )));
                        }
                        let p = points[first..]
                            .iter_mut()
                            .find(|p| p.system == r.system && p.mix == mix && p.skew == skew)
                            .expect("every system, mix and skew has its point");
                        p.throughput_tps.push(report.throughput_tps);
                        p.runs.push(report);
                        bar.inc(1);
                    }
                }
            }
        }
    }
    bar.finish_and_clear();
    for p in &mut points {
        p.median_tps = crate::experiment::median(&p.throughput_tps);
    }
    let systems: Vec<SystemReport> = running
        .iter()
        .map(|r| SystemReport {
            system: r.system,
            settings: r.settings.clone(),
            cgroup_limit_bytes: r.limit,
            cgroup_peak_bytes: r.cgroup.peak_bytes(),
            oom_kills: r.cgroup.oom_kills(),
            load_seconds: r.load_seconds.clone(),
        })
        .collect();
    drop(running);
    let table = summary::rows(&points);
    let findings = summary::findings(&points, o);
    Ok(PaperReport {
        experiment: "paper",
        title: format!(
            "YCSB, data at {}x a {} MiB memory budget: Permafrost, MariaDB, MariaDB + memcached",
            o.ratios.iter().map(u32::to_string).collect::<Vec<_>>().join("/"),
            o.memory_limit >> 20
        ),
        command: command.to_string(),
        machine: crate::experiment::machine(),
        options: o.clone(),
        seconds: started.elapsed().as_secs_f64(),
        systems,
        points,
        table,
        findings,
    })
}

/// Grows the table to `opts.records` from `from` rows, without running the workload.
fn ycsb_load(target: &dyn YcsbTarget, opts: &YcsbOptions, from: u64) -> Result<(), BenchError> {
    target.load(opts, from, &|_| {})
}

/// Writes `<dir>/paper.json`, `<dir>/paper.png` and `<dir>/paper.md`.
pub fn write(report: &PaperReport, dir: &Path) -> Result<[PathBuf; 3], BenchError> {
    std::fs::create_dir_all(dir)?;
    let json = dir.join("paper.json");
    let text = serde_json::to_string_pretty(report).map_err(|e| BenchError::Client(e.to_string()))?;
    std::fs::write(&json, text + "\n")?;
    let png = dir.join("paper.png");
    summary::chart(report, &png)?;
    let md = dir.join("paper.md");
    std::fs::write(&md, summary::markdown(report))?;
    Ok([json, png, md])
}
