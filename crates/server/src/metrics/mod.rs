//! Observability: the engine's and the server's figures, as Prometheus metrics over HTTP
//! (`GET /metrics`, [`serve_metrics`]) and as rows for SQL ([`rows`]: the
//! `permafrost_stats` view shows the same figures).
//!
//! ```text
//! connection / statement (handler) --record--> ServerMetrics (atomics + latency histograms)
//! scrape or SHOW --> rows(db, metrics): Database::stats_now, memory_usage, table_stats
//!                                       + ServerMetrics::snapshot
//!                --> render(rows): Prometheus text exposition format 0.0.4
//! ```
//!
//! The folder: this file records (ServerMetrics); catalog.rs lists every metric family;
//! rows.rs reads the figures as rows; prometheus.rs renders them; http.rs serves them.
//!
//! Every metric family is listed, with its type and meaning, in [`METRICS`]. Counters count
//! since the database (engine figures) or the server (connections, statements) started;
//! rates are left to Prometheus (`rate(permafrost_transactions_committed_total[1m])`).
//!
//! Statement latencies are a summary: quantiles 0.5, 0.9, 0.99 and 0.999 over a sliding
//! window (the current and the previous [`LATENCY_WINDOW`], so the last one to two minutes
//! when read at least once a minute), plus the `_sum` and `_count` since start. Recording a
//! statement costs two relaxed atomic additions and one histogram record under an
//! uncontended lock (histograms are sharded by thread).

mod catalog;
mod http;
mod prometheus;
mod record;
mod rows;

pub use catalog::*;
pub use http::*;
pub use prometheus::*;
pub use record::*;
pub use rows::*;

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::MetricType::Counter;
    use super::*;

    fn row(name: &str, labels: &str, value: f64) -> StatRow {
        StatRow {
            name: name.into(),
            labels: labels.into(),
            value,
        }
    }

    #[test]
    fn families_are_grouped_after_their_help_and_type() {
        let rows = [
            row("permafrost_table_hot_tuples", "table=\"a\"", 1.0),
            row("permafrost_connections_open", "", 2.0),
            row("permafrost_table_hot_tuples", "table=\"b\"", 3.0),
            row(
                "permafrost_statement_latency_seconds",
                "kind=\"query\",quantile=\"0.5\"",
                0.25,
            ),
            row("permafrost_statement_latency_seconds_sum", "kind=\"query\"", 1.5),
            row("permafrost_statement_latency_seconds_count", "kind=\"query\"", 6.0),
            row("something_else", "", f64::NAN),
        ];
        let text = render(&rows);
        let want = "\
# HELP permafrost_table_hot_tuples Tuples of the table in memory (summed over partitions; a replicated table counts each copy).
# TYPE permafrost_table_hot_tuples gauge
permafrost_table_hot_tuples{table=\"a\"} 1
permafrost_table_hot_tuples{table=\"b\"} 3
# HELP permafrost_connections_open Client connections open.
# TYPE permafrost_connections_open gauge
permafrost_connections_open 2
";
        assert!(text.starts_with(want), "{text}");
        let summary = text
            .lines()
            .skip_while(|l| !l.starts_with("# TYPE permafrost_statement_latency_seconds"))
            .take(4)
            .collect::<Vec<_>>();
        assert_eq!(
            summary,
            [
                "# TYPE permafrost_statement_latency_seconds summary",
                "permafrost_statement_latency_seconds{kind=\"query\",quantile=\"0.5\"} 0.25",
                "permafrost_statement_latency_seconds_sum{kind=\"query\"} 1.5",
                "permafrost_statement_latency_seconds_count{kind=\"query\"} 6",
            ]
        );
        assert!(
            text.ends_with("# TYPE something_else untyped\nsomething_else NaN\n"),
            "{text}"
        );
    }

    #[test]
    fn label_values_and_special_floats_are_escaped() {
        let mut r = Rows(Vec::new());
        r.add("x", &[("table", "we\"ird\\na\nme"), ("k", "v")], f64::INFINITY);
        assert_eq!(r.0[0].labels, "table=\"we\\\"ird\\\\na\\nme\",k=\"v\"");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(1e20), "100000000000000000000");
        assert_eq!(format_value(0.000015), "0.000015");
        assert_eq!(escape_help("a\\b\nc"), "a\\\\b\\nc");
    }

    #[test]
    fn counters_are_named_total_and_every_family_is_described_once() {
        for (i, info) in METRICS.iter().enumerate() {
            assert!(info.name.starts_with("permafrost_"), "{}", info.name);
            assert_eq!(info.kind == Counter, info.name.ends_with("_total"), "{}", info.name);
            assert!(METRICS[..i].iter().all(|o| o.name != info.name), "{} twice", info.name);
            assert!(!info.help.contains('\n'));
        }
        assert_eq!(
            describe("permafrost_statement_latency_seconds_count").map(|i| i.name),
            Some("permafrost_statement_latency_seconds")
        );
        assert_eq!(describe("permafrost_blocks_live_count"), None);
        for sample in ["_bucket", "_sum", "_count"] {
            assert_eq!(
                describe(&format!("permafrost_commandlog_sync_duration_seconds{sample}")).map(|i| i.kind),
                Some(MetricType::Histogram)
            );
        }
        assert_eq!(describe("permafrost_statement_latency_seconds_bucket"), None);
    }

    #[test]
    fn statements_are_counted_by_kind_and_outcome_with_latency_quantiles() {
        let m = ServerMetrics::new();
        for i in 1..=100u64 {
            m.record(StatementClass::Query, Duration::from_micros(i * 10), Outcome::Ok);
        }
        m.record(StatementClass::Write, Duration::from_millis(2), Outcome::error("23505"));
        m.record(
            StatementClass::Write,
            Duration::from_millis(2),
            Outcome::error("bad code"),
        );
        m.record(StatementClass::Other, Duration::from_secs(7200), Outcome::Ok);
        let s = m.snapshot();
        let q = &s.kinds[StatementClass::Query as usize];
        assert_eq!((q.ok, q.errors), (100, 0));
        assert!((q.seconds - 0.0505).abs() < 1e-9, "{}", q.seconds);
        // Two significant digits: within 1%.
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.01;
        assert!(near(q.quantiles[0], 500e-6), "{:?}", q.quantiles);
        assert!(near(q.quantiles[1], 900e-6), "{:?}", q.quantiles);
        assert!(near(q.quantiles[3], 1000e-6), "{:?}", q.quantiles);
        let w = &s.kinds[StatementClass::Write as usize];
        assert_eq!((w.ok, w.errors), (0, 2));
        assert_eq!(
            s.errors,
            vec![
                (StatementClass::Write, "23505".to_string(), 1),
                (StatementClass::Write, "other".to_string(), 1)
            ]
        );
        // Beyond an hour: clamped, not lost.
        let o = &s.kinds[StatementClass::Other as usize];
        assert!(near(o.quantiles[0], 3600.0), "{:?}", o.quantiles);
        assert!(s.kinds[StatementClass::Ddl as usize].quantiles[0].is_nan());
    }

    #[test]
    fn latency_quantiles_slide_while_totals_stay() {
        let m = ServerMetrics::with_window(Duration::from_millis(30));
        m.record(StatementClass::Call, Duration::from_millis(5), Outcome::Ok);
        std::thread::sleep(Duration::from_millis(40));
        // First rotation: the statement moves to the previous window and still counts.
        assert!(!m.snapshot().kinds[StatementClass::Call as usize].quantiles[0].is_nan());
        std::thread::sleep(Duration::from_millis(40));
        // Second rotation: it has left the window; the totals keep it.
        let k = m.snapshot().kinds[StatementClass::Call as usize].clone();
        assert!(k.quantiles[0].is_nan(), "{k:?}");
        assert_eq!(k.ok, 1);
        assert!((k.seconds - 0.005).abs() < 1e-9);
    }

    #[test]
    fn connections_are_counted_and_guards_close_them() {
        let m = Arc::new(ServerMetrics::new());
        m.connection_opened();
        let g = m.track_connection();
        assert_eq!(m.snapshot().connections_open, 2);
        drop(g);
        m.connection_closed();
        let s = m.snapshot();
        assert_eq!((s.connections_open, s.connections_total), (0, 2));
    }

    #[test]
    fn sql_statement_kinds_map_to_query_and_write() {
        assert_eq!(
            StatementClass::from(permafrost_sql::StatementKind::Select),
            StatementClass::Query
        );
        assert_eq!(
            StatementClass::from(permafrost_sql::StatementKind::Delete),
            StatementClass::Write
        );
        let r: std::result::Result<(), _> = Err(permafrost_executor::Error::Aborted("x".into()));
        assert_eq!(Outcome::of(&r), Outcome::error("P0001"));
    }
}
