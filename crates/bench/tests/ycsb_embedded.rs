//! YCSB in this process: what the report counts.

use permafrost_bench::ycsb::{self, Mix, YcsbOptions};
use permafrost_executor::{Config, Database};

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
        let opts = YcsbOptions {
            records: 2_000,
            tuple_size: 1008,
            mix: Mix::ReadHeavy,
            skew: 0.5,
            clients: 1,
            in_flight: 16,
            warmup,
            duration: 0.5,
            seed: 3,
        };
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
