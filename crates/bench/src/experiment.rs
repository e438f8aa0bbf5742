//! `permafrost bench experiment NAME`: series of YCSB runs in one process, written as JSON
//! and a PNG chart (docs/results/ keeps the ones the docs cite, with their commands).
//!
//! - `fig8`: block-merge against tuple-merge across skews (DeBrabant et al. 2013 Fig. 8: YCSB
//!   read-only, data twice the memory), at the paper's 1 MiB blocks and at the default size.
//! - `fig9a`: eviction block size across skews (Fig. 9a: read-only, data twice the memory,
//!   tuple-merge).
//! - `fig10`: the cost of tracking accesses (Fig. 10): no chain (table not evictable),
//!   sampled LRU (alpha = 0.01) and exact LRU (alpha = 1), data in memory.
//! - `compare`: the figures the anti-cache is judged by, side by side in one process: data
//!   in memory with the anti-cache off and on, data eight times the memory at skews 1.0, 1.5
//!   and 0.5, and the device's random-read rate to set the block reads against.
//!
//! Runs are repeated `rounds` times, interleaved (each round runs every configuration, in
//! alternating order) so that a drift of the shared machine hits all of them alike; the
//! median of the rounds is reported with every run's full report.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::BenchError;
use crate::device::{self, DeviceOptions, DeviceReport, fmt_size};
use crate::plot::{self, Series};
use crate::report::Report;
use crate::setup::{DbSettings, Open};
use crate::ycsb::{self, Mix, YcsbOptions};
use permafrost_executor::LogMode;

/// One configuration of an experiment.
#[derive(Debug, Clone)]
pub struct Variant {
    pub series: String,
    /// Position on the x axis (skew, block size) or, for bar charts, the bar's index.
    pub x: f64,
    pub ycsb: YcsbOptions,
    pub db: DbSettings,
    /// The YCSB table's evictable flag (false: no access tracking at all).
    pub evictable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Throughput against x, one line per series; `sizes` labels x as byte sizes.
    Lines { sizes: bool },
    /// One bar per variant.
    Bars,
}

pub struct Spec {
    pub name: &'static str,
    pub title: String,
    pub x_label: &'static str,
    pub chart: Chart,
    pub variants: Vec<Variant>,
    /// Measure the device first (for `compare`).
    pub device: bool,
}

/// Knobs common to every experiment.
#[derive(Debug, Clone)]
pub struct Params {
    pub records: Option<u64>,
    pub tuple_size: usize,
    pub warmup: f64,
    pub duration: f64,
    pub rounds: usize,
    pub partitions: Option<u32>,
    pub clients: Option<usize>,
    pub in_flight: usize,
    /// For `compare`: the memory limit of the larger-than-memory runs.
    pub memory_limit: Option<u64>,
    /// The command log's group commit window (`None`: the setting's default).
    pub group_commit_window: Option<std::time::Duration>,
    pub data_dir: Option<PathBuf>,
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            records: None,
            tuple_size: 1008,
            warmup: 3.0,
            duration: 10.0,
            rounds: 1,
            partitions: None,
            clients: None,
            in_flight: 512,
            memory_limit: None,
            group_commit_window: None,
            data_dir: None,
            seed: 42,
        }
    }
}

pub const NAMES: &[&str] = &["fig8", "fig9a", "fig10", "compare", "durability"];

const SKEWS: [f64; 5] = [0.5, 0.75, 1.0, 1.25, 1.5];

impl Params {
    fn ycsb(&self, records: u64, mix: Mix, skew: f64) -> YcsbOptions {
        YcsbOptions {
            records,
            tuple_size: self.tuple_size,
            mix,
            skew,
            clients: self.clients.unwrap_or(0),
            in_flight: self.in_flight,
            warmup: self.warmup,
            duration: self.duration,
            seed: self.seed,
        }
    }

    fn db(&self) -> DbSettings {
        DbSettings {
            partitions: self.partitions,
            group_commit_window: self.group_commit_window,
            data_dir: self.data_dir.clone(),
            ..DbSettings::default()
        }
    }
}

/// The experiment called `name`.
pub fn spec(name: &str, p: &Params) -> Result<Spec, BenchError> {
    match name {
        "fig8" => merge_spec(true, p),
        "fig9a" => merge_spec(false, p),
        "fig10" => fig10_spec(p),
        "compare" => compare_spec(p),
        "durability" => durability_spec(p),
        other => Err(BenchError::Options(format!(
            "unknown experiment \"{other}\" (one of: {})",
            NAMES.join(", ")
        ))),
    }
}

/// `fig8` when `fig8` (the merge policies, at the paper's 1 MiB blocks and at the default
/// size), else `fig9a` (eviction block sizes, tuple-merge): YCSB read-only across skews,
/// data twice the memory.
fn merge_spec(fig8: bool, p: &Params) -> Result<Spec, BenchError> {
    let tuple_merge = permafrost_executor::MergePolicy::Tuple { hole_threshold: 0.5 };
    let default_block = permafrost_anticache::DEFAULT_BLOCK_SIZE as u64;
    let records = p.records.unwrap_or(500_000);
    // Data twice the memory, as in the paper.
    let memory = records * p.tuple_size as u64 / 2;
    let mut variants = Vec::new();
    let configs: Vec<(String, u64, permafrost_executor::MergePolicy)> = if fig8 {
        let mut v = Vec::new();
        for bs in [1u64 << 20, default_block] {
            v.push((
                format!("block-merge, {} blocks", fmt_size(bs as usize)),
                bs,
                permafrost_executor::MergePolicy::Block,
            ));
            v.push((
                format!("tuple-merge, {} blocks", fmt_size(bs as usize)),
                bs,
                tuple_merge,
            ));
        }
        v
    } else {
        [4u64 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
            .into_iter()
            .map(|bs| (format!("{} blocks", fmt_size(bs as usize)), bs, tuple_merge))
            .collect()
    };
    for (series, bs, merge) in configs {
        for skew in SKEWS {
            variants.push(Variant {
                series: series.clone(),
                x: skew,
                ycsb: p.ycsb(records, Mix::ReadOnly, skew),
                db: DbSettings {
                    memory_limit: Some(memory),
                    block_size: Some(bs),
                    merge,
                    ..p.db()
                },
                evictable: true,
            });
        }
    }
    let title = if fig8 {
        "Merge policies: YCSB read-only, data = 2x memory"
    } else {
        "Eviction block size: YCSB read-only, data = 2x memory, tuple-merge"
    };
    Ok(Spec {
        name: if fig8 { "fig8" } else { "fig9a" },
        title: format!("{title} ({records} records)"),
        x_label: "Zipfian skew",
        chart: Chart::Lines { sizes: false },
        variants,
        device: false,
    })
}

/// `fig10`: the cost of tracking accesses (none, sampled LRU, exact LRU, CLOCK), YCSB
/// read-heavy across skews, data in memory.
fn fig10_spec(p: &Params) -> Result<Spec, BenchError> {
    let records = p.records.unwrap_or(500_000);
    let mut variants = Vec::new();
    use permafrost_executor::ColdPolicy;
    for (series, alpha, policy, evictable) in [
        ("no tracking (not evictable)", None, ColdPolicy::Lru, false),
        ("sampled LRU, alpha = 0.01", Some(0.01), ColdPolicy::Lru, true),
        ("exact LRU, alpha = 1", Some(1.0), ColdPolicy::Lru, true),
        ("CLOCK bit, every access", Some(1.0), ColdPolicy::Clock, true),
    ] {
        for skew in SKEWS {
            variants.push(Variant {
                series: series.into(),
                x: skew,
                ycsb: p.ycsb(records, Mix::ReadHeavy, skew),
                db: DbSettings {
                    lru_sample_rate: alpha,
                    cold_policy: policy,
                    ..p.db()
                },
                evictable,
            });
        }
    }
    Ok(Spec {
        name: "fig10",
        title: format!("Cost of access tracking: YCSB read-heavy, data in memory ({records} records)"),
        x_label: "Zipfian skew",
        chart: Chart::Lines { sizes: false },
        variants,
        device: false,
    })
}

/// `compare`: the anti-cache's figures side by side (data in memory with it off and on,
/// data larger than the memory limit at three skews), YCSB read-heavy, one bar each.
fn compare_spec(p: &Params) -> Result<Spec, BenchError> {
    let records = p.records.unwrap_or(1_000_000);
    let limit = p.memory_limit.unwrap_or(128 << 20);
    let ratio = records as f64 * p.tuple_size as f64 / limit as f64;
    let mut variants = Vec::new();
    let mut add = |series: String, skew: f64, anticache: bool, limit: Option<u64>| {
        let x = variants.len() as f64;
        variants.push(Variant {
            series,
            x,
            ycsb: p.ycsb(records, Mix::ReadHeavy, skew),
            db: DbSettings {
                anticache,
                memory_limit: limit,
                ..p.db()
            },
            evictable: true,
        });
    };
    add("in memory, anti-cache off, s=1.0".into(), 1.0, false, None);
    add("in memory, anti-cache on, s=1.0".into(), 1.0, true, None);
    add(format!("{ratio:.1}x memory, s=1.0"), 1.0, true, Some(limit));
    add("in memory, anti-cache off, s=1.5".into(), 1.5, false, None);
    add(format!("{ratio:.1}x memory, s=1.5"), 1.5, true, Some(limit));
    add(format!("{ratio:.1}x memory, s=0.5"), 0.5, true, Some(limit));
    Ok(Spec {
        name: "compare",
        title: format!(
            "YCSB read-heavy, {records} records, memory limit {}",
            fmt_size(limit as usize)
        ),
        x_label: "",
        chart: Chart::Bars,
        variants,
        device: true,
    })
}

/// `durability`: YCSB write-heavy in memory with the command log off, async and sync.
fn durability_spec(p: &Params) -> Result<Spec, BenchError> {
    let records = p.records.unwrap_or(500_000);
    // A sync commit waits for a group commit (about a millisecond): the clients keep
    // enough operations in flight for the partitions to stay busy meanwhile.
    let in_flight = p.in_flight.max(4096);
    let mut variants = Vec::new();
    for (series, mode) in [
        ("command log off", LogMode::Off),
        ("command log async", LogMode::Async),
        ("command log sync", LogMode::Sync),
    ] {
        let x = variants.len() as f64;
        variants.push(Variant {
            series: series.into(),
            x,
            ycsb: YcsbOptions {
                in_flight,
                ..p.ycsb(records, Mix::WriteHeavy, 0.99)
            },
            db: DbSettings {
                anticache: false,
                command_log: mode,
                ..p.db()
            },
            evictable: true,
        });
    }
    Ok(Spec {
        name: "durability",
        title: format!("YCSB write-heavy, {records} records in memory, s=0.99: command log modes"),
        x_label: "",
        chart: Chart::Bars,
        variants,
        device: false,
    })
}

/// The runs of one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub series: String,
    pub x: f64,
    pub throughput_tps: Vec<f64>,
    pub median_tps: f64,
    pub runs: Vec<Report>,
}

/// A figure measured, with the target it is judged by where there is one.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub name: String,
    pub value: f64,
    pub target: Option<String>,
    pub met: Option<bool>,
    pub note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub memory_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExperimentReport {
    pub experiment: String,
    pub title: String,
    pub command: String,
    pub machine: Machine,
    pub rounds: usize,
    pub device: Option<DeviceReport>,
    pub points: Vec<Point>,
    pub findings: Vec<Finding>,
}

/// The median of `v` (0 for none).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

pub fn machine() -> Machine {
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<u64>().ok()))
        })
        .map_or(0, |k| k * 1024);
    Machine {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes,
    }
}

/// Removes `dir` and everything in it, if it exists.
fn remove_dir(dir: &Path) -> Result<(), BenchError> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(BenchError::Io(std::io::Error::new(
            e.kind(),
            format!("cannot remove the run directory {}: {e}", dir.display()),
        ))),
        _ => Ok(()),
    }
}

/// Runs `spec`, printing a line per run; `command` is recorded in the report. With
/// `data_dir`, each run keeps its files in a fresh `run-<k>` under it, removed after the
/// run; without, in a temporary directory.
pub fn run(spec: &Spec, rounds: usize, command: &str, data_dir: Option<&Path>) -> Result<ExperimentReport, BenchError> {
    let rounds = rounds.max(1);
    let device = if spec.device {
        let dir = data_dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
        std::fs::create_dir_all(&dir)?;
        let opts = DeviceOptions {
            block_sizes: vec![permafrost_anticache::DEFAULT_BLOCK_SIZE],
            ..DeviceOptions::default()
        };
        let d = device::measure(&dir, &opts)?;
        println!("{}", d.summary());
        Some(d)
    } else {
        None
    };
    let mut runs: Vec<Vec<Report>> = vec![Vec::new(); spec.variants.len()];
    let total = rounds * spec.variants.len();
    let mut k = 0;
    for round in 0..rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..spec.variants.len()).collect()
        } else {
            (0..spec.variants.len()).rev().collect()
        };
        for i in order {
            k += 1;
            let v = &spec.variants[i];
            // Every run starts empty: a run in the directory a former one used would
            // find its command log and blocks (and the disk would fill with them).
            let run_dir = data_dir.map(|d| d.join(format!("run-{k}")));
            let mut settings = v.db.clone();
            if let Some(d) = &run_dir {
                remove_dir(d)?;
                settings.data_dir = Some(d.clone());
            }
            let (db, dir) = settings.open()?;
            let mut opts = v.ycsb.clone();
            if opts.clients == 0 {
                opts.clients = db.partitions() as usize;
            }
            let target = ycsb::embedded::Embedded::new(db, v.evictable);
            let report = ycsb::run(&target, &opts, false)?;
            drop(target);
            drop(dir);
            if let Some(d) = &run_dir {
                remove_dir(d)?;
            }
            println!(
                "[{k}/{total}] {} @ {}: {:.0} txn/s, {} block reads/s, {} verify errors",
                v.series, v.x, report.throughput_tps, report.anticache.block_reads_per_sec as u64, report.verify_errors
            );
            runs[i].push(report);
        }
    }
    let points: Vec<Point> = spec
        .variants
        .iter()
        .zip(runs)
        .map(|(v, runs)| {
            let tps: Vec<f64> = runs.iter().map(|r| r.throughput_tps).collect();
            Point {
                series: v.series.clone(),
                x: v.x,
                median_tps: median(&tps),
                throughput_tps: tps,
                runs,
            }
        })
        .collect();
    let findings = match spec.name {
        "compare" => compare_findings(&points, device.as_ref()),
        "durability" => durability_findings(&points),
        _ => Vec::new(),
    };
    Ok(ExperimentReport {
        experiment: spec.name.into(),
        title: spec.title.clone(),
        command: command.into(),
        machine: machine(),
        rounds,
        device,
        points,
        findings,
    })
}

fn finding(name: &str, value: f64, target: Option<(&str, bool)>, note: String) -> Finding {
    Finding {
        name: name.into(),
        value,
        target: target.map(|t| t.0.to_string()),
        met: target.map(|t| t.1),
        note,
    }
}

/// The judged ratio of `durability`: what sync logging costs against none.
fn durability_findings(p: &[Point]) -> Vec<Finding> {
    let [off, asynchronous, sync] = p else {
        return Vec::new();
    };
    let mut f = Vec::new();
    for (name, on, target) in [
        ("sync_log_cost", sync, Some(0.15)),
        ("async_log_cost", asynchronous, None),
    ] {
        let cost = 1.0 - on.median_tps / off.median_tps;
        let t = target.map(|t| (format!("<= {t}"), cost <= t));
        f.push(finding(
            name,
            cost,
            t.as_ref().map(|(s, m)| (s.as_str(), *m)),
            format!(
                "1 - ({:.0} / {:.0}) txn/s, medians{}",
                on.median_tps,
                off.median_tps,
                round_costs(off, on)
            ),
        ));
    }
    f
}

/// The cost of `on` against `off` within each round (they ran minutes apart at most), as
/// "; per round A% to B%" when there are several rounds: how far the machine's noise
/// moves the figure.
fn round_costs(off: &Point, on: &Point) -> String {
    let mut c: Vec<f64> = off
        .throughput_tps
        .iter()
        .zip(&on.throughput_tps)
        .filter(|(o, _)| **o > 0.0)
        .map(|(o, n)| 1.0 - n / o)
        .collect();
    if c.len() < 2 {
        return String::new();
    }
    c.sort_by(f64::total_cmp);
    format!("; per round {:.1}% to {:.1}%", c[0] * 100.0, c[c.len() - 1] * 100.0)
}

/// The judged ratios of `compare` (variants in the order `spec` adds them).
fn compare_findings(p: &[Point], device: Option<&DeviceReport>) -> Vec<Finding> {
    let [mem_off, mem_on, big10, mem_off15, big15, big05] = p else {
        return Vec::new();
    };
    let mut f = Vec::new();
    let cost = 1.0 - mem_on.median_tps / mem_off.median_tps;
    f.push(finding(
        "anticache_cost_in_memory",
        cost,
        Some(("<= 0.03", cost <= 0.03)),
        format!(
            "1 - ({:.0} / {:.0}) txn/s: data in memory, anti-cache on against off",
            mem_on.median_tps, mem_off.median_tps
        ),
    ));
    for (name, big, mem, target, bound) in [
        ("larger_than_memory_ratio_s1.0", big10, mem_off, 0.8, "80%"),
        ("larger_than_memory_ratio_s1.5", big15, mem_off15, 0.9, "90%"),
    ] {
        let r = big.median_tps / mem.median_tps;
        let target_text = format!(">= {target} ({bound} of in-memory)");
        f.push(finding(
            name,
            r,
            Some((&target_text, r >= target)),
            format!("{:.0} / {:.0} txn/s", big.median_tps, mem.median_tps),
        ));
    }
    if let Some(d) = device
        && let Some(iops) = d.iops(permafrost_anticache::DEFAULT_BLOCK_SIZE)
    {
        let reads = median(
            &big05
                .runs
                .iter()
                .map(|r| r.anticache.block_reads_per_sec)
                .collect::<Vec<_>>(),
        );
        let r = reads / iops;
        f.push(finding(
            "block_reads_vs_device_iops_s0.5",
            r,
            Some((">= 0.5", r >= 0.5)),
            format!("{reads:.0} block reads/s against {iops:.0} random 4 KiB reads/s of the device"),
        ));
        // The ceiling the device puts on throughput: each transaction that needs a block
        // costs one random read.
        for (name, big) in [("device_bound_tps_s1.0", big10), ("device_bound_tps_s1.5", big15)] {
            let (c, b): (u64, u64) = big
                .runs
                .iter()
                .fold((0, 0), |a, r| (a.0 + r.committed, a.1 + r.anticache.blocks_read));
            if b > 0 {
                let bound = iops * c as f64 / b as f64;
                f.push(finding(
                    name,
                    bound,
                    None,
                    format!(
                        "device IOPS x transactions per block read ({:.2} block reads per transaction): no run can go faster",
                        b as f64 / c as f64
                    ),
                ));
            }
        }
    }
    for (name, big) in [("s1.0", big10), ("s1.5", big15), ("s0.5", big05)] {
        let worst_rss = big
            .runs
            .iter()
            .map(|r| r.memory.peak_rss_growth_bytes)
            .max()
            .unwrap_or(0);
        let limit = big.runs.first().map_or(0, |r| r.memory.limit_bytes);
        f.push(finding(
            &format!("peak_rss_growth_over_limit_{name}"),
            worst_rss as f64 / limit.max(1) as f64,
            Some(("<= 1.1", worst_rss as f64 <= limit as f64 * 1.1)),
            format!(
                "peak resident growth {} MiB, limit {} MiB",
                worst_rss >> 20,
                limit >> 20
            ),
        ));
        let bpt = big
            .runs
            .iter()
            .map(|r| r.anticache.bytes_per_evicted_tuple)
            .fold(0.0, f64::max);
        f.push(finding(
            &format!("bytes_per_evicted_tuple_{name}"),
            bpt,
            Some(("<= 16", bpt <= 16.0)),
            "tombstone and block-directory memory per evicted tuple, at the end of the run".into(),
        ));
    }
    let verify: u64 = p.iter().flat_map(|x| &x.runs).map(|r| r.verify_errors).sum();
    f.push(finding(
        "verify_errors",
        verify as f64,
        Some(("== 0", verify == 0)),
        "over every run".into(),
    ));
    f
}

/// Writes `<dir>/<name>.json` and `<dir>/<name>.png`.
pub fn write(report: &ExperimentReport, spec: &Spec, dir: &Path) -> Result<(PathBuf, PathBuf), BenchError> {
    std::fs::create_dir_all(dir)?;
    let json = dir.join(format!("{}.json", spec.name));
    let png = dir.join(format!("{}.png", spec.name));
    let text = serde_json::to_string_pretty(report).map_err(|e| BenchError::Client(e.to_string()))?;
    std::fs::write(&json, text + "\n")?;
    let points: Vec<(String, f64, f64)> = report
        .points
        .iter()
        .map(|p| (p.series.clone(), p.x, p.median_tps))
        .collect();
    chart(spec, &report.title, &points, &png)?;
    Ok((json, png))
}

/// Draws the chart of `spec` again from a report written earlier (`<dir>/<name>.json`).
pub fn replot(spec: &Spec, dir: &Path) -> Result<PathBuf, BenchError> {
    let json = dir.join(format!("{}.json", spec.name));
    let text = std::fs::read_to_string(&json)?;
    let bad = |what: &str| BenchError::Options(format!("{}: {what}", json.display()));
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
    let title = v["title"].as_str().ok_or_else(|| bad("no title"))?;
    let points = v["points"]
        .as_array()
        .ok_or_else(|| bad("no points"))?
        .iter()
        .map(|p| {
            Some((
                p["series"].as_str()?.to_string(),
                p["x"].as_f64()?,
                p["median_tps"].as_f64()?,
            ))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad("a point lacks series, x or median_tps"))?;
    let png = dir.join(format!("{}.png", spec.name));
    chart(spec, title, &points, &png)?;
    Ok(png)
}

/// The chart of an experiment from its (series, x, median throughput) points.
fn chart(spec: &Spec, title: &str, points: &[(String, f64, f64)], png: &Path) -> Result<(), BenchError> {
    match spec.chart {
        Chart::Lines { sizes } => {
            let mut series: Vec<Series> = Vec::new();
            for (label, x, y) in points {
                match series.iter_mut().find(|s| &s.label == label) {
                    Some(s) => s.points.push((*x, *y)),
                    None => series.push(Series {
                        label: label.clone(),
                        points: vec![(*x, *y)],
                    }),
                }
            }
            for s in &mut series {
                s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            let fmt: &dyn Fn(f64) -> String = if sizes {
                &|x: f64| fmt_size(x.round() as usize)
            } else {
                &|x: f64| format!("{x}")
            };
            plot::line_chart(png, title, spec.x_label, "transactions per second", &series, fmt)
        }
        Chart::Bars => {
            let bars: Vec<(String, f64)> = points.iter().map(|p| (p.0.clone(), p.2)).collect();
            plot::bar_chart(png, title, "transactions per second", &bars)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_is_defined() {
        let p = Params::default();
        for name in NAMES {
            let s = spec(name, &p).unwrap();
            assert!(!s.variants.is_empty(), "{name}");
            for v in &s.variants {
                let opts = YcsbOptions {
                    clients: 2,
                    ..v.ycsb.clone()
                };
                opts.validate().unwrap();
            }
        }
        assert!(matches!(spec("fig99", &p), Err(BenchError::Options(_))));
    }

    #[test]
    fn the_durability_finding_gives_the_spread_of_the_rounds() {
        let point = |series: &str, tps: &[f64]| Point {
            series: series.into(),
            x: 0.0,
            throughput_tps: tps.to_vec(),
            median_tps: median(tps),
            runs: Vec::new(),
        };
        let off = point("off", &[1000.0, 1200.0, 800.0]);
        let asynchronous = point("async", &[950.0, 1100.0, 760.0]);
        let sync = point("sync", &[900.0, 840.0, 720.0]);
        let f = durability_findings(&[off.clone(), asynchronous, sync]);
        assert_eq!(f[0].name, "sync_log_cost");
        // Medians 1000 and 840; rounds 10%, 30%, 10%.
        assert!((f[0].value - 0.16).abs() < 1e-9, "{}", f[0].value);
        assert_eq!(f[0].met, Some(false));
        assert!(
            f[0].note.ends_with("medians; per round 10.0% to 30.0%"),
            "{}",
            f[0].note
        );
        // One round: no spread to give.
        let one = |p: &Point| point(&p.series, &p.throughput_tps[..1]);
        let f = durability_findings(&[one(&off), one(&off), one(&off)]);
        assert!(f[0].note.ends_with("medians"), "{}", f[0].note);
    }

    #[test]
    fn median_of_rounds() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0]), 2.5);
    }

    /// With a data directory, every run starts in a fresh one under it (no run finds the
    /// command log of the one before) and leaves nothing behind.
    #[test]
    fn runs_in_a_given_data_directory_start_empty_and_are_removed() {
        let p = Params {
            records: Some(2_000),
            warmup: 0.0,
            // (Long enough that a loaded machine still commits something in each run:
            // 0.3 s once gave an asynchronous run nothing while a build ran beside it.)
            duration: 1.0,
            partitions: Some(2),
            in_flight: 16,
            ..Params::default()
        };
        let s = spec("durability", &p).unwrap();
        let dir = tempfile::tempdir().unwrap();
        // Left by an earlier run: removed, not appended to.
        let stale = dir.path().join("run-3/anticache/commandlog");
        std::fs::create_dir_all(&stale).unwrap();
        std::fs::write(stale.join("0000000000000001.log"), b"not a log segment").unwrap();
        let r = run(&s, 1, "test", Some(dir.path())).unwrap();
        for p in &r.points {
            assert_eq!(p.runs[0].verify_errors, 0, "{}", p.series);
            assert!(p.median_tps > 0.0, "{}: nothing committed", p.series);
        }
        let sync = &r.points[2].runs[0];
        assert!(sync.command_log.as_ref().is_some_and(|l| l.records_per_sec > 0.0));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    /// A tiny experiment end to end: runs, JSON and chart.
    #[test]
    fn a_small_experiment_runs_and_writes_its_files() {
        let p = Params {
            records: Some(2_000),
            warmup: 0.0,
            duration: 0.5,
            partitions: Some(2),
            in_flight: 16,
            ..Params::default()
        };
        let mut s = spec("fig10", &p).unwrap();
        s.variants.retain(|v| v.x == 1.0 || v.x == 0.5);
        let r = run(&s, 1, "test", None).unwrap();
        assert_eq!(r.points.len(), 8);
        for p in &r.points {
            assert_eq!(p.runs[0].verify_errors, 0, "{} at {}", p.series, p.x);
            assert!(p.median_tps > 0.0, "{} at {}: nothing committed", p.series, p.x);
        }
        let dir = tempfile::tempdir().unwrap();
        let (json, png) = write(&r, &s, dir.path()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        assert_eq!(v["experiment"], "fig10");
        assert_eq!(v["points"].as_array().unwrap().len(), 8);
        assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
        std::fs::remove_file(&png).unwrap();
        assert_eq!(replot(&s, dir.path()).unwrap(), png);
        assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    }
}
