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

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use permafrost_executor::{Database, DatabaseStats, MemoryUsage, TableStats};
use tokio::net::TcpListener;

use crate::error::Result;

mod catalog;
mod http;
mod prometheus;
mod rows;

pub use catalog::*;
pub use http::*;
pub use prometheus::*;
pub use rows::*;

/// The content type of the Prometheus text exposition format.
pub const CONTENT_TYPE_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Latency quantiles cover the current and the previous window of this length.
pub const LATENCY_WINDOW: Duration = Duration::from_secs(60);

/// The quantiles reported for statement latencies.
pub const QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

/// Latencies are recorded in microseconds, from 1 µs to one hour, with two significant
/// digits (1% resolution).
const LATENCY_MAX_MICROS: u64 = 3_600_000_000;
const LATENCY_SIGFIGS: u8 = 2;

/// The class of a statement, for counting and timing statements separately (coarser than
/// the planner's [`permafrost_sql::StatementKind`], which converts into it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StatementClass {
    /// A query (SELECT).
    Query,
    /// INSERT, UPDATE, DELETE.
    Write,
    /// CREATE / DROP TABLE / INDEX.
    Ddl,
    /// A stored procedure call.
    Call,
    /// Everything else (SET, SHOW, empty statements, ...).
    Other,
}

impl StatementClass {
    /// Every kind, in label order.
    pub const ALL: [StatementClass; 5] = [
        StatementClass::Query,
        StatementClass::Write,
        StatementClass::Ddl,
        StatementClass::Call,
        StatementClass::Other,
    ];

    /// The `kind` label value.
    pub fn name(self) -> &'static str {
        match self {
            StatementClass::Query => "query",
            StatementClass::Write => "write",
            StatementClass::Ddl => "ddl",
            StatementClass::Call => "call",
            StatementClass::Other => "other",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl From<permafrost_sql::StatementKind> for StatementClass {
    fn from(k: permafrost_sql::StatementKind) -> StatementClass {
        match k {
            permafrost_sql::StatementKind::Select => StatementClass::Query,
            permafrost_sql::StatementKind::Insert
            | permafrost_sql::StatementKind::Update
            | permafrost_sql::StatementKind::Delete => StatementClass::Write,
        }
    }
}

/// How a statement ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// It failed with this SQLSTATE (five characters, e.g. `23505`; anything else is
    /// counted as `other`).
    Error(String),
}

impl Outcome {
    /// A failure with SQLSTATE `sqlstate`.
    pub fn error(sqlstate: impl Into<String>) -> Outcome {
        Outcome::Error(sqlstate.into())
    }

    /// The outcome of an engine call.
    pub fn of<T>(r: &std::result::Result<T, permafrost_executor::Error>) -> Outcome {
        match r {
            Ok(_) => Outcome::Ok,
            Err(e) => Outcome::Error(e.sqlstate().to_owned()),
        }
    }
}

/// Distinct (kind, SQLSTATE) error series kept at most; further codes count as `other`.
const MAX_ERROR_SERIES: usize = 256;

/// A SQLSTATE as a label value: five ASCII digits or upper-case letters, else `other`.
fn sqlstate_label(s: &str) -> [u8; 5] {
    let b = s.as_bytes();
    match <[u8; 5]>::try_from(b) {
        Ok(code) if code.iter().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()) => code,
        _ => *b"other",
    }
}

/// Two windows of one shard's latencies.
struct Window {
    cur: Histogram<u32>,
    prev: Histogram<u32>,
}

/// Counters and latencies of one statement kind.
struct KindMetrics {
    ok: AtomicU64,
    errors: AtomicU64,
    nanos: AtomicU64,
    shards: Box<[Mutex<Window>]>,
}

/// The server's own figures: connections, statements by kind and outcome, latencies.
/// Shared (in an `Arc`) by every connection; all methods take `&self`.
pub struct ServerMetrics {
    connections_open: AtomicI64,
    connections_total: AtomicU64,
    /// Simple-protocol statements run from a cached plan (0) or planned from their text (1).
    plan_cache: [AtomicU64; 2],
    kinds: [KindMetrics; 5],
    errors: Mutex<HashMap<(StatementClass, [u8; 5]), u64>>,
    window_start: Mutex<Instant>,
    window: Duration,
}

impl Default for ServerMetrics {
    fn default() -> Self {
        ServerMetrics::new()
    }
}

/// Locks a mutex, ignoring poisoning (the data are plain counters, never left half-updated
/// in a way that matters).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn new_histogram() -> Histogram<u32> {
    Histogram::new_with_bounds(1, LATENCY_MAX_MICROS, LATENCY_SIGFIGS).expect("constant histogram bounds are valid")
}

/// The histogram shard of the calling thread.
fn shard_index(shards: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    SHARD.with(|s| *s) % shards
}

impl ServerMetrics {
    /// Empty metrics, with one latency shard per available core (at most 16).
    pub fn new() -> ServerMetrics {
        Self::with_window(LATENCY_WINDOW)
    }

    /// Like [`ServerMetrics::new`], with latency windows of `window` (tests).
    pub fn with_window(window: Duration) -> ServerMetrics {
        let shards = std::thread::available_parallelism().map_or(4, |n| n.get()).clamp(1, 16);
        let kind = || KindMetrics {
            ok: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            nanos: AtomicU64::new(0),
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Window {
                        cur: new_histogram(),
                        prev: new_histogram(),
                    })
                })
                .collect(),
        };
        ServerMetrics {
            connections_open: AtomicI64::new(0),
            connections_total: AtomicU64::new(0),
            plan_cache: [AtomicU64::new(0), AtomicU64::new(0)],
            kinds: [kind(), kind(), kind(), kind(), kind()],
            errors: Mutex::new(HashMap::new()),
            window_start: Mutex::new(Instant::now()),
            window,
        }
    }

    /// A client connected.
    pub fn connection_opened(&self) {
        self.connections_open.fetch_add(1, Ordering::Relaxed);
        self.connections_total.fetch_add(1, Ordering::Relaxed);
    }

    /// A simple-protocol statement of one statement ran from a cached plan (`hit`) or was
    /// planned from its text.
    pub fn plan_cache_lookup(&self, hit: bool) {
        self.plan_cache[usize::from(!hit)].fetch_add(1, Ordering::Relaxed);
    }

    /// A client's connection ended.
    pub fn connection_closed(&self) {
        self.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts a connection as open until the returned guard is dropped (also when the
    /// connection's task panics or is cancelled).
    pub fn track_connection(self: &Arc<Self>) -> ConnectionGuard {
        self.connection_opened();
        ConnectionGuard { metrics: self.clone() }
    }

    /// Records one statement: its kind, how long it took and how it ended.
    pub fn record(&self, kind: StatementClass, elapsed: Duration, outcome: Outcome) {
        let k = &self.kinds[kind.index()];
        match &outcome {
            Outcome::Ok => k.ok.fetch_add(1, Ordering::Relaxed),
            Outcome::Error(_) => k.errors.fetch_add(1, Ordering::Relaxed),
        };
        k.nanos
            .fetch_add(elapsed.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
        let micros = elapsed.as_micros().min(LATENCY_MAX_MICROS as u128) as u64;
        lock(&k.shards[shard_index(k.shards.len())])
            .cur
            .saturating_record(micros.max(1));
        if let Outcome::Error(code) = outcome {
            let mut code = sqlstate_label(&code);
            let mut errors = lock(&self.errors);
            if errors.len() >= MAX_ERROR_SERIES && !errors.contains_key(&(kind, code)) {
                code = *b"other";
            }
            *errors.entry((kind, code)).or_insert(0) += 1;
        }
    }

    /// The figures now. Reading rotates the latency window when it is due.
    pub fn snapshot(&self) -> ServerSnapshot {
        let rotate = {
            let mut start = lock(&self.window_start);
            let due = start.elapsed() >= self.window;
            if due {
                *start = Instant::now();
            }
            due
        };
        let kinds = StatementClass::ALL.map(|kind| {
            let k = &self.kinds[kind.index()];
            let mut merged = new_histogram();
            for shard in k.shards.iter() {
                let mut w = lock(shard);
                if rotate {
                    let w = &mut *w;
                    std::mem::swap(&mut w.cur, &mut w.prev);
                    w.cur.reset();
                }
                // Same bounds everywhere: adding cannot fail.
                let _ = merged.add(&w.cur);
                let _ = merged.add(&w.prev);
            }
            KindSnapshot {
                kind,
                ok: k.ok.load(Ordering::Relaxed),
                errors: k.errors.load(Ordering::Relaxed),
                seconds: k.nanos.load(Ordering::Relaxed) as f64 / 1e9,
                quantiles: QUANTILES.map(|q| {
                    if merged.is_empty() {
                        f64::NAN
                    } else {
                        merged.value_at_quantile(q) as f64 / 1e6
                    }
                }),
            }
        });
        let mut errors: Vec<(StatementClass, String, u64)> = lock(&self.errors)
            .iter()
            .map(|(&(kind, code), &n)| (kind, String::from_utf8_lossy(&code).into_owned(), n))
            .collect();
        errors.sort();
        ServerSnapshot {
            connections_open: self.connections_open.load(Ordering::Relaxed).max(0) as u64,
            connections_total: self.connections_total.load(Ordering::Relaxed),
            plan_cache_hits: self.plan_cache[0].load(Ordering::Relaxed),
            plan_cache_misses: self.plan_cache[1].load(Ordering::Relaxed),
            kinds,
            errors,
        }
    }
}

/// Keeps a connection counted as open; see [`ServerMetrics::track_connection`].
pub struct ConnectionGuard {
    metrics: Arc<ServerMetrics>,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.metrics.connection_closed();
    }
}

/// One statement kind's figures at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct KindSnapshot {
    pub kind: StatementClass,
    /// Statements that succeeded, since start.
    pub ok: u64,
    /// Statements that failed, since start.
    pub errors: u64,
    /// Total time spent in statements of this kind, since start.
    pub seconds: f64,
    /// Latency in seconds at each of [`QUANTILES`] over the recent window (NaN if none).
    pub quantiles: [f64; 4],
}

/// The server's figures at one moment ([`ServerMetrics::snapshot`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSnapshot {
    pub connections_open: u64,
    pub connections_total: u64,
    /// Simple-protocol statements run from a cached plan, and planned from their text.
    pub plan_cache_hits: u64,
    pub plan_cache_misses: u64,
    /// One entry per [`StatementClass`], in [`StatementClass::ALL`] order.
    pub kinds: [KindSnapshot; 5],
    /// Failed statements by kind and SQLSTATE.
    pub errors: Vec<(StatementClass, String, u64)>,
}

#[cfg(test)]
mod tests {
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
