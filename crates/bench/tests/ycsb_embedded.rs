//! YCSB in this process: what the report counts.

use permafrost_bench::ycsb::{self, Mix, YcsbOptions};
use permafrost_executor::{Config, Database};

/// A short run on 2,000 records with one client.
fn small(mix: Mix, in_flight: usize, warmup: f64, duration: f64, seed: u64) -> YcsbOptions {
    YcsbOptions {
        records: 2_000,
        tuple_size: 1008,
        mix,
        skew: 0.5,
        clients: 1,
        in_flight,
        warmup,
        duration,
        seed,
    }
}

/// Operations completed over the whole run, warm-up included, from the per-second samples.
fn completed(report: &permafrost_bench::report::Report, warmup: f64) -> f64 {
    let mut last = -warmup;
    let mut n = 0.0;
    for s in &report.timeseries {
        n += s.tps * (s.t - last);
        last = s.t;
    }
    n
}

#[test]
fn the_measured_phase_starts_when_the_warmup_ends_even_within_the_first_second() {
    for warmup in [0.0, 0.3] {
        let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
        let target = ycsb::embedded::Embedded::new(db, false);
        let opts = small(Mix::ReadHeavy, 16, warmup, 0.5, 3);
        let report = ycsb::run(&target, &opts, false).unwrap();
        let all = completed(&report, warmup);
        // The clients count what completes between the end of the warm-up and the end
        // of the run: about duration / (warmup + duration) of everything (not the few
        // operations of the last moments, as when the warm-up was only noticed at the
        // first one-second sample).
        let expected = all * opts.duration / (warmup + opts.duration);
        assert!(
            report.committed as f64 > expected * 0.25,
            "warm-up {warmup}: {} committed of {all:.0} completed in all",
            report.committed
        );
        assert!(report.committed as f64 <= all * 1.01 + 64.0, "{}", report.summary());
    }
}

#[test]
fn the_report_says_what_the_command_log_did_while_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let log = permafrost_executor::LogConfig::new(dir.path().join("log"));
    let db = Database::open(Config::builder().partitions(2).command_log(log).build().unwrap()).unwrap();
    let target = ycsb::embedded::Embedded::new(db, false);
    let opts = small(Mix::WriteHeavy, 64, 0.3, 0.7, 5);
    let report = ycsb::run(&target, &opts, false).unwrap();
    let c = report.command_log.as_ref().expect("a database with a command log");
    // One record per update measured (the load and the warm-up are not counted).
    let logged = c.records_per_sec * opts.duration;
    assert!(
        (logged - report.updates as f64).abs() <= 64.0 + report.updates as f64 * 0.02,
        "{logged:.0} records logged while measuring, {} updates: {}",
        report.updates,
        report.summary()
    );
    assert!(c.group_commits_per_sec > 0.0 && c.records_per_group_commit >= 1.0);
    // An update's record: procedure name, key, field number and a 100-byte value, framed.
    assert!((120.0..400.0).contains(&c.bytes_per_record), "{}", report.summary());
    assert!(c.sync_us_per_group_commit > 0.0);
    // Every sync took at least a microsecond, so the p99's bucket bound is at least the
    // smallest one.
    let p99 = c.sync_p99_us_at_most.expect("syncs while measuring");
    assert!(p99 >= 100.0, "{}", report.summary());
    assert!(report.summary().contains("command log:"), "{}", report.summary());
    assert!(report.summary().contains("99% of syncs within"), "{}", report.summary());

    let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
    let target = ycsb::embedded::Embedded::new(db, false);
    let report = ycsb::run(&target, &opts, false).unwrap();
    assert!(report.command_log.is_none());
    assert!(!report.summary().contains("command log:"));
}
