//! `permafrost bench experiment paper`: the anti-caching paper's comparison (DeBrabant et
//! al. 2013, §4) run on this machine with one command. Permafrost (`permafrost serve`, over
//! the PostgreSQL protocol), MariaDB (InnoDB, through its own driver) and MariaDB +
//! memcached (cache-aside reads, invalidate on write, both sharing one budget) each run in
//! a memory cgroup of the same size, started and stopped here ([`systems`]).
//!
//! - YCSB ([`ycsb`], the paper's Fig. 6): the same client drives all three, the read-only,
//!   read-heavy and write-heavy mixes at each skew, with the data at 1, 2, 4 and 8 times
//!   the memory budget. The data grows between sizes: each size loads only the records it
//!   adds to the one before.
//! - TPC-C, Voter and TATP ([`oltp`]) on Permafrost and MariaDB, both ways (stored
//!   procedures, interactive), their consistency conditions or invariants checked after
//!   every run: TPC-C (the paper's Fig. 7) as its data grows from 1 to 8 times the budget
//!   (one warehouse that has taken more and more orders: its population's older orders are
//!   delivered ones, loaded), Voter with VOTES and TATP with its subscribers at 1 and 4
//!   times the budget.
//!
//! Rounds are interleaved: within a size, each round runs every configuration on every
//! system, the systems' order reversed every other round, so a drift of the shared machine
//! reaches all of them alike; the median of the rounds is reported, with each run's full
//! report. What is measured is written as `paper.json`, `paper.png` (one chart per mix and
//! skew: throughput against the data-to-memory ratio; and one per transactional workload
//! and way) and `paper.md` (the tables the README shows, with the command that made them).

mod model;
mod oltp;
mod summary;
mod systems;
mod ycsb;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::BenchError;
pub use model::{
    Finding, OltpPoint, PaperOptions, PaperReport, Part, Point, Refusal, Row, System, SystemReport,
    TATP_BYTES_PER_SUBSCRIBER, TPCC_BYTES_OF_ITEMS, TPCC_BYTES_PER_ORDER, TPCC_BYTES_PER_WAREHOUSE,
    VOTER_BYTES_PER_VOTE,
};
use systems::Progress;

/// Runs the experiment, with a progress bar on the terminal when `progress_bar`.
pub fn run(o: &PaperOptions, command: &str, progress_bar: bool) -> Result<PaperReport, BenchError> {
    o.validate()?;
    let started = Instant::now();
    let binary = match &o.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe()?,
    };
    let dir = match &o.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            tempfile::Builder::new().prefix("paper-").tempdir_in(d)?
        }
        None => tempfile::Builder::new().prefix("permafrost-paper-").tempdir()?,
    };
    let oltp_steps: usize = Part::OLTP.iter().map(|&p| oltp::steps(o, p)).sum();
    let progress = Progress::new((ycsb::steps(o) + oltp_steps) as u64, progress_bar);
    let sizes = |r: &[u32]| r.iter().map(u32::to_string).collect::<Vec<_>>().join("/");
    let parts: Vec<String> = o
        .parts
        .iter()
        .map(|&p| {
            let runs = if p == Part::Ycsb { o.ycsb_runs() } else { o.part_runs(p) };
            format!("{} at {}x: {runs} runs", p.name(), sizes(o.part_ratios(p)))
        })
        .collect();
    progress.say(format!(
        "paper: {} MiB budget; {}; {}+{} s each (at least {:.0} min)",
        o.memory_limit >> 20,
        parts.join("; "),
        o.warmup,
        o.duration,
        o.seconds() / 60.0
    ));
    progress.say(format!(
        "the servers' files: {} (removed at the end; an interrupted run leaves them)",
        dir.path().display()
    ));
    let mut points = Vec::new();
    let mut oltp = Vec::new();
    let mut refusals = Vec::new();
    let mut systems = Vec::new();
    for part in &o.parts {
        match part {
            Part::Ycsb => {
                let (p, s) = ycsb::run(o, &binary, dir.path(), &progress)?;
                points = p;
                systems.extend(s);
            }
            Part::Tpcc | Part::Voter | Part::Tatp => {
                let (p, s, r) = oltp::run(o, *part, &binary, dir.path(), &progress)?;
                oltp.extend(p);
                systems.extend(s);
                refusals.extend(r);
            }
        }
    }
    progress.finish();
    let table = summary::rows(&points);
    let mut findings = summary::findings(&points, o);
    findings.extend(summary::oltp_findings(&oltp, o));
    Ok(PaperReport {
        experiment: "paper",
        title: if o.ycsb_runs() > 0 {
            format!(
                "Data at {}x a {} MiB memory budget: {}",
                sizes(&o.ratios),
                o.memory_limit >> 20,
                labels(&o.systems)
            )
        } else {
            let parts: Vec<String> = o
                .parts
                .iter()
                .map(|&p| format!("{} at {}x", summary::title(p), sizes(o.part_ratios(p))))
                .collect();
            format!(
                "{} a {} MiB memory budget: {}",
                parts.join(", "),
                o.memory_limit >> 20,
                labels(&o.oltp_systems())
            )
        },
        command: command.to_string(),
        machine: crate::experiment::machine(),
        options: o.clone(),
        seconds: started.elapsed().as_secs_f64(),
        systems,
        points,
        oltp,
        refusals,
        table,
        findings,
    })
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

/// The systems a report's title names, in the order given.
fn labels(systems: &[System]) -> String {
    systems.iter().map(|s| s.label()).collect::<Vec<_>>().join(", ")
}
