//! What `bench experiment paper` makes of its runs: the table of medians and ratios, the
//! paper's shape checked against them, the chart and the Markdown the README shows.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use super::model::{Finding, OltpPoint, PaperOptions, PaperReport, Part, Point, Row, System, skew_text};
use crate::BenchError;
use crate::plot::{self, Panel, Series};
use crate::ycsb::Mix;

fn tps(points: &[Point], system: System, mix: Mix, skew: f64, ratio: u32) -> Option<f64> {
    points
        .iter()
        .find(|p| p.system == system && p.mix == mix && p.skew == skew && p.ratio == ratio)
        .map(|p| p.median_tps)
        .filter(|t| *t > 0.0)
}

/// The rows, in the order the points were measured (size, mix, skew).
pub fn rows(points: &[Point]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for p in points {
        if rows
            .iter()
            .any(|r| r.mix == p.mix && r.skew == p.skew && r.ratio == p.ratio)
        {
            continue;
        }
        let mut row = Row {
            mix: p.mix,
            skew: p.skew,
            ratio: p.ratio,
            records: p.records,
            median_tps: BTreeMap::new(),
            permafrost_over: BTreeMap::new(),
        };
        for s in System::ALL {
            if let Some(t) = tps(points, s, p.mix, p.skew, p.ratio) {
                row.median_tps.insert(s.name(), t);
            }
        }
        if let Some(mine) = row.median_tps.get("permafrost").copied() {
            for peer in [System::MariaDb, System::MariaDbMemcached] {
                if let Some(t) = row.median_tps.get(peer.name()) {
                    row.permafrost_over.insert(peer.name(), mine / t);
                }
            }
        }
        rows.push(row);
    }
    rows
}

fn ratio_of(rows: &[Row], peer: System, mix: Mix, skew: f64, ratio: u32) -> Option<f64> {
    rows.iter()
        .find(|r| r.mix == mix && r.skew == skew && r.ratio == ratio)
        .and_then(|r| r.permafrost_over.get(peer.name()).copied())
}

/// The paper's shape (§4.3): against each peer, Permafrost's lead is larger at the
/// largest data size than at the smallest (each mix and skew), and larger at the highest
/// skew than at the lowest (each mix and size).
pub fn findings(points: &[Point], o: &PaperOptions) -> Vec<Finding> {
    let rows = rows(points);
    let mut out = Vec::new();
    let (small, large) = (o.ratios[0], o.ratios[o.ratios.len() - 1]);
    let (lo_skew, hi_skew) = o
        .skews
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &s| (a.min(s), b.max(s)));
    for peer in [System::MariaDb, System::MariaDbMemcached] {
        if !o.systems.contains(&peer) || !o.systems.contains(&System::Permafrost) {
            continue;
        }
        let at = |mix, skew, ratio| ratio_of(&rows, peer, mix, skew, ratio);
        if small < large {
            // Each mix and skew: the lead at the smallest size, then at the largest.
            let cells = o.mixes.iter().flat_map(|&mix| {
                o.skews.iter().map(move |&skew| {
                    let what = format!("{} skew {}", mix.name(), skew_text(skew));
                    (what, at(mix, skew, small), at(mix, skew, large))
                })
            });
            out.extend(finding(
                format!(
                    "Permafrost's lead over {} grows with the data ({small}x to {large}x memory)",
                    peer.name()
                ),
                cells,
                &format!("at {small}x"),
                &format!("at {large}x"),
            ));
        }
        if lo_skew < hi_skew {
            // Each mix and size: the lead at the lowest skew, then at the highest.
            let cells = o.mixes.iter().flat_map(|&mix| {
                o.ratios.iter().map(move |&ratio| {
                    (
                        format!("{} {ratio}x", mix.name()),
                        at(mix, lo_skew, ratio),
                        at(mix, hi_skew, ratio),
                    )
                })
            });
            out.extend(finding(
                format!(
                    "Permafrost's lead over {} grows with skew ({lo_skew} to {hi_skew})",
                    peer.name()
                ),
                cells,
                &format!("at skew {}", skew_text(lo_skew)),
                &format!("at skew {}", skew_text(hi_skew)),
            ));
        }
    }
    out
}

/// Permafrost's median over MariaDB's, the same workload, way and size.
fn oltp_over(oltp: &[OltpPoint], p: &OltpPoint) -> Option<f64> {
    let peer = oltp
        .iter()
        .find(|q| q.system == System::MariaDb && q.workload == p.workload && q.mode == p.mode && q.ratio == p.ratio)
        .map(|q| q.median_tps)
        .filter(|t| *t > 0.0)?;
    (p.system == System::Permafrost).then(|| p.median_tps / peer)
}

/// The paper's shape for TPC-C, Voter and TATP: Permafrost's lead over MariaDB is larger at
/// the largest data size than at the smallest, each workload and way.
pub fn oltp_findings(oltp: &[OltpPoint], o: &PaperOptions) -> Vec<Finding> {
    let mut out = Vec::new();
    for part in Part::OLTP {
        let ratios = o.part_ratios(part);
        let (small, large) = (ratios[0], ratios[ratios.len() - 1]);
        if small == large {
            continue;
        }
        let mut ways: Vec<&str> = Vec::new();
        for p in oltp.iter().filter(|p| p.workload == part.name()) {
            if !ways.contains(&p.mode) {
                ways.push(p.mode);
            }
        }
        let at = |way: &str, ratio: u32| {
            oltp.iter()
                .find(|p| {
                    p.workload == part.name() && p.system == System::Permafrost && p.mode == way && p.ratio == ratio
                })
                .and_then(|p| oltp_over(oltp, p))
        };
        let cells = ways.iter().map(|w| (w.to_string(), at(w, small), at(w, large)));
        out.extend(finding(
            format!(
                "{}: Permafrost's lead over mariadb grows with the data ({small}x to {large}x memory)",
                title(part)
            ),
            cells,
            &format!("at {small}x"),
            &format!("at {large}x"),
        ));
    }
    out
}

/// A part's name as the text writes it.
pub fn title(part: Part) -> &'static str {
    match part {
        Part::Ycsb => "YCSB",
        Part::Tpcc => "TPC-C",
        Part::Voter => "Voter",
        Part::Tatp => "TATP",
    }
}

/// A claim that the lead (`from`, then `to`) grows, checked in each cell measured both ways
/// (none when no cell was).
fn finding(
    claim: String,
    cells: impl Iterator<Item = (String, Option<f64>, Option<f64>)>,
    from: &str,
    to: &str,
) -> Option<Finding> {
    let mut f = Finding {
        claim,
        agree: 0,
        cells: 0,
        exceptions: Vec::new(),
    };
    for (what, a, b) in cells {
        let (Some(a), Some(b)) = (a, b) else { continue };
        f.cells += 1;
        if b > a {
            f.agree += 1;
        } else {
            f.exceptions.push(format!("{what}: {a:.2}x {from}, {b:.2}x {to}"));
        }
    }
    (f.cells > 0).then_some(f)
}

/// One chart per mix and skew (a row per mix, a column per skew): each system's median
/// throughput against the data-to-memory ratio.
pub fn chart(report: &PaperReport, png: &Path) -> Result<(), BenchError> {
    let o = &report.options;
    let mut panels = Vec::new();
    for &mix in &o.mixes {
        if report.points.is_empty() {
            break;
        }
        for &skew in &o.skews {
            let series = o
                .systems
                .iter()
                .map(|&s| Series {
                    label: s.name().to_string(),
                    points: report
                        .points
                        .iter()
                        .filter(|p| p.system == s && p.mix == mix && p.skew == skew)
                        .map(|p| (f64::from(p.ratio), p.median_tps))
                        .collect(),
                })
                .collect();
            panels.push(Panel {
                title: format!("{}, skew {}", mix.name(), skew_text(skew)),
                series,
            });
        }
    }
    // TPC-C, Voter, TATP: a chart per workload and way, each system's transactions/s
    // against the data size.
    for part in Part::OLTP {
        let mut ways: Vec<&str> = Vec::new();
        for p in report.oltp.iter().filter(|p| p.workload == part.name()) {
            if !ways.contains(&p.mode) {
                ways.push(p.mode);
            }
        }
        for way in ways {
            let mut series: Vec<Series> = Vec::new();
            for p in report
                .oltp
                .iter()
                .filter(|p| p.workload == part.name() && p.mode == way)
            {
                let label = p.system.name().to_string();
                match series.iter_mut().find(|s| s.label == label) {
                    Some(s) => s.points.push((f64::from(p.ratio), p.median_tps)),
                    None => series.push(Series {
                        label,
                        points: vec![(f64::from(p.ratio), p.median_tps)],
                    }),
                }
            }
            panels.push(Panel {
                title: format!("{}, {way}", title(part)),
                series,
            });
        }
    }
    plot::grid_chart(
        png,
        &report.title,
        o.skews.len().max(2),
        &panels,
        "data / memory",
        "operations or transactions/s",
        &|x| format!("{x}x"),
    )
}

/// YCSB's table: each system's median throughput at each mix, skew and size, and
/// Permafrost's over each peer's.
fn ycsb_markdown(report: &PaperReport, s: &mut String) {
    if report.table.is_empty() {
        return;
    }
    let o = &report.options;
    let names: Vec<&str> = o.systems.iter().map(|s| s.name()).collect();
    let peers: Vec<&str> = names.iter().copied().filter(|n| *n != "permafrost").collect();
    let _ = write!(s, "\n| mix | skew | data | {} |", names.join(" | "));
    for p in &peers {
        let _ = write!(s, " permafrost / {p} |");
    }
    let _ = write!(s, "\n|---|---|---|{}", "---|".repeat(names.len() + peers.len()));
    for r in &report.table {
        let _ = write!(
            s,
            "\n| {} | {} | {}x ({} records) |",
            r.mix.name(),
            skew_text(r.skew),
            r.ratio,
            r.records
        );
        for n in &names {
            let _ = write!(
                s,
                " {} |",
                r.median_tps.get(n).map_or("-".into(), |t| format!("{t:.0}"))
            );
        }
        for p in &peers {
            let _ = write!(
                s,
                " {} |",
                r.permafrost_over.get(p).map_or("-".into(), |x| format!("{x:.2}x"))
            );
        }
    }
}

/// TPC-C's, Voter's and TATP's tables: each system's median transactions/s each way at
/// each size, and Permafrost's over MariaDB's the same way.
fn oltp_markdown(report: &PaperReport, s: &mut String) {
    for part in Part::OLTP {
        let points: Vec<&OltpPoint> = report.oltp.iter().filter(|p| p.workload == part.name()).collect();
        let Some(first) = points.first() else { continue };
        let _ = write!(
            s,
            "\n{} ({} terminals, each one transaction at a time):\n\n| data | {} | system | way | transactions/s | permafrost / mariadb |\n|---|---|---|---|---|---|",
            title(part),
            report.options.oltp_clients,
            first.unit
        );
        for p in points {
            let over = oltp_over(&report.oltp, p).map_or(String::new(), |x| format!("{x:.2}x"));
            // The data the population holds, over the budget, where it is not the ratio
            // asked for (TPC-C's smallest population may be larger).
            let held = report.options.data_bytes(part, p.scale) as f64 / report.options.memory_limit as f64;
            let data = if (held / f64::from(p.ratio) - 1.0).abs() > 0.05 {
                format!("{}x (holds {held:.2}x)", p.ratio)
            } else {
                format!("{}x", p.ratio)
            };
            let _ = write!(
                s,
                "\n| {data} | {} | {} | {} | {:.0} | {over} |",
                p.scale,
                p.system.name(),
                p.mode,
                p.median_tps
            );
        }
        s.push('\n');
    }
}

/// The table of the run as Markdown, with the command that made it and the findings.
pub fn markdown(report: &PaperReport) -> String {
    let o = &report.options;
    let mut s = String::new();
    let _ = writeln!(s, "{}\n", report.title);
    let _ = writeln!(s, "`{}`\n", report.command);
    // Who drove each part: YCSB's client threads and connections, the others' terminals.
    let mut clients = Vec::new();
    if o.ycsb_runs() > 0 {
        clients.push(format!(
            "YCSB: {} client threads, {} connections, one statement in flight per connection",
            o.clients, o.connections
        ));
    }
    if o.oltp_runs() > 0 {
        clients.push(format!(
            "{}: {} terminals, one transaction at a time each",
            o.parts
                .iter()
                .filter(|p| **p != Part::Ycsb)
                .map(|p| title(*p))
                .collect::<Vec<_>>()
                .join(", "),
            o.oltp_clients
        ));
    }
    let _ = writeln!(
        s,
        "{} CPUs, {:.0} GiB; {} round(s) of {} s measured after {} s of warm-up; {}; {:.1} minutes in all.\n",
        report.machine.cpus,
        report.machine.memory_bytes as f64 / f64::from(1u32 << 30),
        o.rounds,
        o.duration,
        o.warmup,
        clients.join("; "),
        report.seconds / 60.0
    );
    for sys in &report.systems {
        let _ = writeln!(
            s,
            "- {} ({}): {}; cgroup {} MiB, peak {} MiB, OOM kills {}",
            sys.system.name(),
            sys.part,
            sys.settings,
            sys.cgroup_limit_bytes >> 20,
            sys.cgroup_peak_bytes.map_or("?".to_string(), |b| (b >> 20).to_string()),
            sys.oom_kills
        );
    }
    ycsb_markdown(report, &mut s);
    s.push('\n');
    oltp_markdown(report, &mut s);
    s.push('\n');
    for r in &report.refusals {
        let _ = writeln!(
            s,
            "- {} could not load {} at {}x memory ({} {}), and sat out its larger sizes: {}",
            r.system.name(),
            title(r.part),
            r.ratio,
            r.scale,
            r.part.unit(),
            r.reason()
        );
    }
    for f in &report.findings {
        let _ = writeln!(s, "- {}: {} of {} cells", f.claim, f.agree, f.cells);
        for e in &f.exceptions {
            let _ = writeln!(s, "  - not in {e}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(system: System, skew: f64, ratio: u32, tps: f64) -> Point {
        Point {
            system,
            mix: Mix::ReadHeavy,
            skew,
            ratio,
            records: u64::from(ratio) * 1000,
            throughput_tps: vec![tps],
            median_tps: tps,
            runs: Vec::new(),
        }
    }

    fn options() -> PaperOptions {
        PaperOptions {
            ratios: vec![1, 8],
            mixes: vec![Mix::ReadHeavy],
            skews: vec![1.5, 0.5],
            ..PaperOptions::default()
        }
    }

    #[test]
    fn rows_divide_permafrost_by_each_peer() {
        let points = vec![
            point(System::Permafrost, 1.5, 1, 300.0),
            point(System::MariaDb, 1.5, 1, 100.0),
            point(System::MariaDbMemcached, 1.5, 1, 150.0),
            point(System::Permafrost, 1.5, 8, 90.0),
        ];
        let rows = rows(&points);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].permafrost_over["mariadb"], 3.0);
        assert_eq!(rows[0].permafrost_over["mariadb+memcached"], 2.0);
        // A size the peers did not reach has throughputs but no ratios.
        assert_eq!(rows[1].median_tps["permafrost"], 90.0);
        assert!(rows[1].permafrost_over.is_empty());
    }

    #[test]
    fn findings_name_the_cells_against_the_shape() {
        let o = PaperOptions {
            systems: vec![System::Permafrost, System::MariaDb],
            ..options()
        };
        // Lead over MariaDB: skew 1.5: 2x at 1x, 4x at 8x (grows); skew 0.5: 1.5x at 1x,
        // 1.2x at 8x (shrinks).
        let points = vec![
            point(System::Permafrost, 1.5, 1, 200.0),
            point(System::MariaDb, 1.5, 1, 100.0),
            point(System::Permafrost, 1.5, 8, 400.0),
            point(System::MariaDb, 1.5, 8, 100.0),
            point(System::Permafrost, 0.5, 1, 150.0),
            point(System::MariaDb, 0.5, 1, 100.0),
            point(System::Permafrost, 0.5, 8, 120.0),
            point(System::MariaDb, 0.5, 8, 100.0),
        ];
        let f = findings(&points, &o);
        assert_eq!(f.len(), 2, "{f:?}");
        let data = &f[0];
        assert!(data.claim.contains("grows with the data"));
        assert_eq!((data.agree, data.cells), (1, 2));
        assert_eq!(
            data.exceptions,
            vec!["read-heavy skew 0.5: 1.50x at 1x, 1.20x at 8x".to_string()]
        );
        // Higher skew, larger lead at both sizes.
        let skew = &f[1];
        assert!(skew.claim.contains("grows with skew"));
        assert_eq!((skew.agree, skew.cells), (2, 2));
        let md = markdown(&PaperReport {
            experiment: "paper",
            title: "t".into(),
            command: "permafrost bench experiment paper".into(),
            machine: crate::experiment::machine(),
            options: o,
            seconds: 60.0,
            systems: Vec::new(),
            table: rows(&points),
            points,
            oltp: Vec::new(),
            refusals: Vec::new(),
            findings: f,
        });
        assert!(
            md.contains("| read-heavy | 1.5 | 8x (8000 records) | 400 | 100 | 4.00x |"),
            "{md}"
        );
        assert!(md.contains("1 of 2 cells"), "{md}");
    }

    fn oltp(workload: &'static str, system: System, mode: crate::way::Mode, ratio: u32, tps: f64) -> OltpPoint {
        let orders = u64::from(PaperOptions::default().tpcc_orders(ratio));
        let mut p = OltpPoint::new(workload, system, mode, ratio, (orders, "orders per district"));
        p.add(tps, serde_json::Value::Null);
        p
    }

    #[test]
    fn oltp_findings_compare_the_lead_at_the_smallest_and_largest_size_each_way() {
        use crate::way::Mode::{Interactive, Procedures};
        let o = PaperOptions {
            ratios: vec![1, 2, 8],
            parts: vec![Part::Tpcc],
            ..PaperOptions::default()
        };
        // Procedures: 2x at 1x, 3x at 8x (grows); interactive: 1.5x at 1x, 0.5x at 8x.
        let points = vec![
            oltp("tpcc", System::Permafrost, Procedures, 1, 200.0),
            oltp("tpcc", System::MariaDb, Procedures, 1, 100.0),
            oltp("tpcc", System::Permafrost, Interactive, 1, 150.0),
            oltp("tpcc", System::MariaDb, Interactive, 1, 100.0),
            oltp("tpcc", System::Permafrost, Procedures, 8, 150.0),
            oltp("tpcc", System::MariaDb, Procedures, 8, 50.0),
            oltp("tpcc", System::Permafrost, Interactive, 8, 25.0),
            oltp("tpcc", System::MariaDb, Interactive, 8, 50.0),
        ];
        let f = oltp_findings(&points, &o);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].claim.starts_with("TPC-C: "), "{f:?}");
        assert_eq!((f[0].agree, f[0].cells), (1, 2));
        assert_eq!(
            f[0].exceptions,
            vec!["interactive transactions over the wire: 1.50x at 1x, 0.50x at 8x".to_string()]
        );
        let md = markdown(&PaperReport {
            experiment: "paper",
            title: "t".into(),
            command: "permafrost bench experiment paper --parts tpcc".into(),
            machine: crate::experiment::machine(),
            options: o,
            seconds: 60.0,
            systems: Vec::new(),
            table: Vec::new(),
            points: Vec::new(),
            oltp: points,
            refusals: vec![super::super::model::Refusal {
                part: Part::Tpcc,
                system: System::Permafrost,
                ratio: 16,
                scale: 1600,
                oom_kills: 1,
                error: "TPC-C load on permafrost: a check does not hold:\nTPC-C (stored procedures) ...\n  3.3.2.4 sum: could not check: connection closed\n".into(),
            }],
            findings: f,
        });
        assert!(md.contains("TPC-C (8 terminals"), "{md}");
        assert!(
            md.contains("; TPC-C: 8 terminals, one transaction at a time each;"),
            "{md}"
        );
        assert!(!md.contains("YCSB:"), "{md}");
        assert!(md.contains("| data | orders per district | system |"), "{md}");
        let orders = PaperOptions::default().tpcc_orders(8);
        assert!(
            md.contains(&format!("| 8x | {orders} | permafrost | stored procedures")),
            "{md}"
        );
        // The smallest population holds more than the budget: the table says how much.
        assert!(md.contains("| 1x (holds 1.13x) | 3000 | permafrost |"), "{md}");
        assert!(md.contains("| 150 | 3.00x |"), "{md}");
        assert!(
            md.contains(
                "- permafrost could not load TPC-C at 16x memory (1600 orders per district), and sat out its larger sizes: \
                 its cgroup's OOM killer ended a process (1 kills); TPC-C load on permafrost: a check does not hold: \
                 3.3.2.4 sum: could not check: connection closed\n"
            ),
            "{md}"
        );
    }
}
