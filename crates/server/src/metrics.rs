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
    /// One entry per [`StatementClass`], in [`StatementClass::ALL`] order.
    pub kinds: [KindSnapshot; 5],
    /// Failed statements by kind and SQLSTATE.
    pub errors: Vec<(StatementClass, String, u64)>,
}

/// How Prometheus treats a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Only goes up (resets when the process restarts).
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// Quantiles (label `quantile`) plus `_sum` and `_count` samples.
    Summary,
    /// Cumulative `_bucket` samples (label `le`, the last `+Inf`) plus `_sum` and `_count`.
    Histogram,
}

impl MetricType {
    /// The name in `# TYPE` lines.
    pub fn name(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Summary => "summary",
            MetricType::Histogram => "histogram",
        }
    }
}

/// A metric family: name, type, labels and meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricInfo {
    pub name: &'static str,
    pub kind: MetricType,
    /// The labels of its samples (empty for none).
    pub labels: &'static str,
    pub help: &'static str,
}

const fn m(name: &'static str, kind: MetricType, labels: &'static str, help: &'static str) -> MetricInfo {
    MetricInfo {
        name,
        kind,
        labels,
        help,
    }
}

use MetricType::{Counter, Gauge, Summary};

/// Every metric family [`rows`] produces, in output order.
pub const METRICS: &[MetricInfo] = &[
    m(
        "permafrost_transactions_committed_total",
        Counter,
        "",
        "Transactions committed (procedure calls and ad hoc statements).",
    ),
    m(
        "permafrost_transactions_aborted_total",
        Counter,
        "",
        "Transactions aborted by their procedure (user aborts).",
    ),
    m(
        "permafrost_transactions_failed_total",
        Counter,
        "",
        "Transactions that failed with an error (constraint violation, bad call, too many restarts, ...).",
    ),
    m(
        "permafrost_transaction_restarts_total",
        Counter,
        "reason",
        "Transactions restarted: reason=\"evicted\" after the evicted data they touched was fetched and merged, reason=\"schema\" after a schema change.",
    ),
    m(
        "permafrost_multi_partition_transactions_total",
        Counter,
        "",
        "Multi-partition transactions coordinated (DDL included).",
    ),
    m(
        "permafrost_transactions_parked",
        Gauge,
        "",
        "Transactions waiting for evicted data to be fetched.",
    ),
    m(
        "permafrost_commandlog_records_total",
        Counter,
        "",
        "Command-log records written and synced (one per committed transaction that changed data).",
    ),
    m(
        "permafrost_commandlog_bytes_total",
        Counter,
        "",
        "Bytes written to the command log.",
    ),
    m(
        "permafrost_commandlog_group_commits_total",
        Counter,
        "",
        "Group commits: batches of records written with one write and one fdatasync.",
    ),
    m(
        "permafrost_commandlog_sync_seconds_total",
        Counter,
        "",
        "Time spent in fdatasync of the command log.",
    ),
    m(
        "permafrost_commandlog_sync_duration_seconds",
        MetricType::Histogram,
        "le",
        "How long the command log's fdatasync calls took: one per group commit, and the start of each segment.",
    ),
    m(
        "permafrost_commandlog_segments",
        Gauge,
        "",
        "Segment files of the command log.",
    ),
    m(
        "permafrost_commandlog_failed",
        Gauge,
        "",
        "1 once a write or sync of the command log failed: the database then refuses writes until restarted.",
    ),
    m(
        "permafrost_snapshots_total",
        Counter,
        "",
        "Snapshots this server completed (periodic and CHECKPOINT).",
    ),
    m(
        "permafrost_snapshots_failed_total",
        Counter,
        "",
        "Snapshots that failed (the previous one stays the one recovery uses).",
    ),
    m(
        "permafrost_snapshot_last_epoch",
        Gauge,
        "",
        "Number of the last snapshot completed.",
    ),
    m(
        "permafrost_snapshot_last_bytes",
        Gauge,
        "bytes",
        "Size of the last snapshot file.",
    ),
    m(
        "permafrost_snapshot_last_base_epoch",
        Gauge,
        "",
        "Snapshot whose block directories the last one records differences from (0: it records them whole).",
    ),
    m(
        "permafrost_snapshot_last_directory_entries",
        Gauge,
        "",
        "Block directory entries the last snapshot wrote (blocks added and removed since its base, or every block).",
    ),
    m(
        "permafrost_snapshot_last_pause_seconds",
        Gauge,
        "seconds",
        "How long the last snapshot stopped the partitions (barrier and fork).",
    ),
    m(
        "permafrost_snapshot_last_duration_seconds",
        Gauge,
        "seconds",
        "How long the last snapshot took until durable.",
    ),
    m(
        "permafrost_evictions_total",
        Counter,
        "",
        "Eviction rounds that evicted at least one tuple.",
    ),
    m(
        "permafrost_evicted_tuples_total",
        Counter,
        "",
        "Tuples evicted to the anti-cache.",
    ),
    m(
        "permafrost_evicted_bytes_total",
        Counter,
        "",
        "Bytes of tuple data evicted (serialized size).",
    ),
    m(
        "permafrost_unevicted_tuples_total",
        Counter,
        "",
        "Tuples merged back into memory from fetched blocks.",
    ),
    m(
        "permafrost_blocks_written_total",
        Counter,
        "",
        "Anti-cache blocks written.",
    ),
    m(
        "permafrost_blocks_read_total",
        Counter,
        "",
        "Anti-cache blocks read back (fetches).",
    ),
    m(
        "permafrost_blocks_live",
        Gauge,
        "",
        "Anti-cache blocks holding evicted tuples now.",
    ),
    m(
        "permafrost_block_file_bytes",
        Gauge,
        "",
        "Size of the block files: live blocks and free space kept for reuse.",
    ),
    m("permafrost_cold_tuples", Gauge, "", "Tuples evicted now (all tables)."),
    m(
        "permafrost_anticache_seconds_total",
        Counter,
        "activity",
        "Partition time spent on the anti-cache: activity=\"evict\" (building blocks), \"merge\" (merging fetched blocks), \"compact\" (compacting heaps).",
    ),
    m(
        "permafrost_memory_limit_bytes",
        Gauge,
        "",
        "The memory budget (memory_limit).",
    ),
    m(
        "permafrost_memory_bytes",
        Gauge,
        "component",
        "Memory taken, by component: tuple, string (out-of-line values), index, tombstone, buffer (undo log), anticache (block directory, free-space map, I/O buffers). The sum is everything the engine holds.",
    ),
    m(
        "permafrost_memory_used_bytes",
        Gauge,
        "component",
        "Of the tuple and string storage taken, the bytes holding live data (the rest is free for reuse). Eviction and the write gate compare these plus the other components with the budget.",
    ),
    m(
        "permafrost_anticache_directory_bytes",
        Gauge,
        "",
        "Of the anticache memory, the block directories and free-space maps.",
    ),
    m(
        "permafrost_process_resident_bytes",
        Gauge,
        "",
        "Resident memory of the server process now (VmRSS): the engine's memory plus the fixed overhead of the binary, thread stacks and allocator.",
    ),
    m(
        "permafrost_process_peak_resident_bytes",
        Gauge,
        "",
        "Peak resident memory of the server process since it started (VmHWM).",
    ),
    m(
        "permafrost_partitions",
        Gauge,
        "",
        "Partitions (one executor thread each).",
    ),
    m(
        "permafrost_table_hot_tuples",
        Gauge,
        "table",
        "Tuples of the table in memory (summed over partitions; a replicated table counts each copy).",
    ),
    m(
        "permafrost_table_hot_bytes",
        Gauge,
        "table",
        "Bytes of the table's tuples in memory: tuple slots and out-of-line values.",
    ),
    m(
        "permafrost_table_index_bytes",
        Gauge,
        "table",
        "Bytes of the table's indexes (always in memory, covering evicted tuples too).",
    ),
    m(
        "permafrost_table_tombstone_bytes",
        Gauge,
        "table",
        "Bytes of the tombstones of the table's evicted tuples.",
    ),
    m(
        "permafrost_table_cold_tuples",
        Gauge,
        "table",
        "Tuples of the table evicted to the anti-cache.",
    ),
    m(
        "permafrost_table_cold_bytes",
        Gauge,
        "table",
        "Bytes the table's live blocks occupy in the block files (headers, padding and stale copies included).",
    ),
    m(
        "permafrost_table_cold_blocks",
        Gauge,
        "table",
        "Live anti-cache blocks holding the table's tuples.",
    ),
    m(
        "permafrost_table_stale_tuples",
        Gauge,
        "table",
        "Tuples merged back whose stale copies still occupy live blocks (tuple-merge).",
    ),
    m("permafrost_connections_open", Gauge, "", "Client connections open."),
    m(
        "permafrost_connections_total",
        Counter,
        "",
        "Client connections accepted since the server started.",
    ),
    m(
        "permafrost_statements_total",
        Counter,
        "kind,outcome",
        "Statements run, by kind (query, write, ddl, call, other) and outcome (ok, error).",
    ),
    m(
        "permafrost_statement_errors_total",
        Counter,
        "kind,sqlstate",
        "Failed statements by kind and SQLSTATE.",
    ),
    m(
        "permafrost_statement_latency_seconds",
        Summary,
        "kind,quantile",
        "Statement latency by kind: quantiles over the last one to two minutes, _sum and _count since the server started.",
    ),
];

/// The family a metric of this name belongs to (the `_sum` and `_count` samples of a
/// summary or histogram, and a histogram's `_bucket` samples, belong to it).
pub fn describe(name: &str) -> Option<&'static MetricInfo> {
    if let Some(info) = METRICS.iter().find(|i| i.name == name) {
        return Some(info);
    }
    if let Some(base) = name.strip_suffix("_bucket") {
        return METRICS
            .iter()
            .find(|i| i.name == base && i.kind == MetricType::Histogram);
    }
    let base = name.strip_suffix("_sum").or_else(|| name.strip_suffix("_count"))?;
    METRICS
        .iter()
        .find(|i| i.name == base && matches!(i.kind, Summary | MetricType::Histogram))
}

/// One figure: a sample of a metric family.
#[derive(Debug, Clone, PartialEq)]
pub struct StatRow {
    /// The sample's metric name (`permafrost_...`).
    pub name: String,
    /// Its labels as in the exposition format, without braces (`table="usertable"`), or empty.
    pub labels: String,
    pub value: f64,
}

/// Escapes a label value (backslash, double quote, line feed).
fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Builds the rows; labels are given as (name, value) pairs.
struct Rows(Vec<StatRow>);

impl Rows {
    fn add(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let mut l = String::new();
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                l.push(',');
            }
            let _ = write!(l, "{k}=\"{}\"", escape_label(v));
        }
        self.0.push(StatRow {
            name: name.to_owned(),
            labels: l,
            value,
        });
    }

    fn one(&mut self, name: &str, value: u64) {
        self.add(name, &[], value as f64);
    }
}

/// Every figure of the database and the server, as rows in [`METRICS`] order: what
/// `GET /metrics` shows ([`render`]) and what the `permafrost_stats` view returns.
///
/// Blocks until every partition has answered (it waits behind the work queued there): call
/// it from `spawn_blocking`, or use [`collect`]. If the database is shutting down, the
/// figures the partitions can no longer report (memory, tables) are left out and the
/// counters are those last published.
pub fn rows(db: &Database, m: &ServerMetrics) -> Vec<StatRow> {
    let st = db.stats_now().unwrap_or_else(|_| db.stats());
    let memory = db.memory_usage().ok();
    let tables = db.table_stats().unwrap_or_default();
    engine_rows(db, &st, memory.as_ref(), &tables, &m.snapshot())
}

/// [`rows`] on the blocking thread pool (for async callers; empty if collecting panicked).
pub async fn collect(db: Arc<Database>, m: Arc<ServerMetrics>) -> Vec<StatRow> {
    tokio::task::spawn_blocking(move || rows(&db, &m))
        .await
        .unwrap_or_default()
}

fn engine_rows(
    db: &Database,
    st: &DatabaseStats,
    memory: Option<&MemoryUsage>,
    tables: &[TableStats],
    s: &ServerSnapshot,
) -> Vec<StatRow> {
    let mut r = Rows(Vec::with_capacity(64 + 8 * tables.len()));
    r.one("permafrost_transactions_committed_total", st.committed);
    r.one("permafrost_transactions_aborted_total", st.aborted_user);
    r.one("permafrost_transactions_failed_total", st.failed);
    let restarts = "permafrost_transaction_restarts_total";
    r.add(restarts, &[("reason", "evicted")], st.restarts_evicted as f64);
    r.add(restarts, &[("reason", "schema")], st.restarts_schema as f64);
    r.one("permafrost_multi_partition_transactions_total", st.mp_txns);
    r.one("permafrost_transactions_parked", st.parked);
    if let Some(l) = db.log_stats() {
        r.one("permafrost_commandlog_records_total", l.records);
        r.one("permafrost_commandlog_bytes_total", l.bytes);
        r.one("permafrost_commandlog_group_commits_total", l.batches);
        r.add("permafrost_commandlog_sync_seconds_total", &[], l.sync_seconds_total);
        let family = "permafrost_commandlog_sync_duration_seconds";
        let mut below = 0;
        for (i, n) in l.sync_buckets.iter().enumerate() {
            below += n;
            let le = permafrost_executor::sync_bucket_le(i);
            r.add(&format!("{family}_bucket"), &[("le", &le)], below as f64);
        }
        r.add(&format!("{family}_sum"), &[], l.sync_seconds_total);
        r.one(&format!("{family}_count"), below);
        r.one("permafrost_commandlog_segments", l.segments);
        r.one("permafrost_commandlog_failed", u64::from(l.failed));
    }
    {
        let (last, taken, failed) = db.snapshot_stats();
        r.one("permafrost_snapshots_total", taken);
        r.one("permafrost_snapshots_failed_total", failed);
        let l = last.unwrap_or_default();
        r.one("permafrost_snapshot_last_epoch", l.epoch);
        r.one("permafrost_snapshot_last_bytes", l.bytes);
        r.one("permafrost_snapshot_last_base_epoch", l.base_epoch);
        r.one("permafrost_snapshot_last_directory_entries", l.directory_entries);
        r.add(
            "permafrost_snapshot_last_pause_seconds",
            &[],
            l.pause_micros as f64 / 1e6,
        );
        r.add("permafrost_snapshot_last_duration_seconds", &[], l.seconds);
    }
    r.one("permafrost_evictions_total", st.evictions);
    r.one("permafrost_evicted_tuples_total", st.evicted_tuples);
    r.one("permafrost_evicted_bytes_total", st.evicted_bytes);
    r.one("permafrost_unevicted_tuples_total", st.unevicted_tuples);
    r.one("permafrost_blocks_written_total", st.blocks_written);
    r.one("permafrost_blocks_read_total", st.blocks_read);
    r.one("permafrost_blocks_live", st.blocks_live);
    r.one("permafrost_block_file_bytes", st.block_file_bytes);
    r.one("permafrost_cold_tuples", st.evicted_now);
    let ac = "permafrost_anticache_seconds_total";
    r.add(ac, &[("activity", "evict")], st.evict_seconds);
    r.add(ac, &[("activity", "merge")], st.merge_seconds);
    r.add(ac, &[("activity", "compact")], st.compact_seconds);
    r.one("permafrost_memory_limit_bytes", db.config().memory_limit);
    if let Some(mem) = memory {
        let taken = "permafrost_memory_bytes";
        r.add(taken, &[("component", "tuple")], mem.tuple_bytes as f64);
        r.add(taken, &[("component", "string")], mem.string_bytes as f64);
        r.add(taken, &[("component", "index")], mem.index_bytes as f64);
        r.add(taken, &[("component", "tombstone")], mem.tombstone_bytes as f64);
        r.add(taken, &[("component", "buffer")], mem.buffer_bytes as f64);
        r.add(taken, &[("component", "anticache")], st.anticache_bytes as f64);
        let used = "permafrost_memory_used_bytes";
        r.add(used, &[("component", "tuple")], mem.tuple_used_bytes as f64);
        r.add(used, &[("component", "string")], mem.string_used_bytes as f64);
    }
    r.one("permafrost_anticache_directory_bytes", st.directory_bytes);
    r.one("permafrost_partitions", db.partitions() as u64);
    let (rss, peak) = process_resident();
    r.one("permafrost_process_resident_bytes", rss);
    r.one("permafrost_process_peak_resident_bytes", peak);
    type Figure = fn(&TableStats) -> u64;
    let per_table: [(&str, Figure); 8] = [
        ("permafrost_table_hot_tuples", |t| t.hot_tuples),
        ("permafrost_table_hot_bytes", |t| t.hot_bytes()),
        ("permafrost_table_index_bytes", |t| t.index_bytes),
        ("permafrost_table_tombstone_bytes", |t| t.tombstone_bytes),
        ("permafrost_table_cold_tuples", |t| t.cold_tuples),
        ("permafrost_table_cold_bytes", |t| t.cold_bytes),
        ("permafrost_table_cold_blocks", |t| t.cold_blocks),
        ("permafrost_table_stale_tuples", |t| t.stale_tuples),
    ];
    for (name, figure) in per_table {
        for t in tables {
            r.add(name, &[("table", &t.name)], figure(t) as f64);
        }
    }
    r.one("permafrost_connections_open", s.connections_open);
    r.one("permafrost_connections_total", s.connections_total);
    for k in &s.kinds {
        let kind = k.kind.name();
        r.add(
            "permafrost_statements_total",
            &[("kind", kind), ("outcome", "ok")],
            k.ok as f64,
        );
        r.add(
            "permafrost_statements_total",
            &[("kind", kind), ("outcome", "error")],
            k.errors as f64,
        );
    }
    for (kind, code, n) in &s.errors {
        r.add(
            "permafrost_statement_errors_total",
            &[("kind", kind.name()), ("sqlstate", code)],
            *n as f64,
        );
    }
    let latency = "permafrost_statement_latency_seconds";
    for k in &s.kinds {
        let kind = k.kind.name();
        for (q, v) in QUANTILES.iter().zip(k.quantiles) {
            r.add(latency, &[("kind", kind), ("quantile", &q.to_string())], v);
        }
        r.add("permafrost_statement_latency_seconds_sum", &[("kind", kind)], k.seconds);
        r.add(
            "permafrost_statement_latency_seconds_count",
            &[("kind", kind)],
            (k.ok + k.errors) as f64,
        );
    }
    r.0
}

/// A sample value in the exposition format.
fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        v.to_string()
    }
}

/// Escapes HELP text (backslash and line feed).
fn escape_help(h: &str) -> String {
    h.replace('\\', "\\\\").replace('\n', "\\n")
}

/// Renders rows in the Prometheus text exposition format (version 0.0.4): the samples of
/// each family together, after its `# HELP` and `# TYPE` lines. Families are output in the
/// order of their first row; names not in [`METRICS`] are rendered as `untyped`.
pub fn render(rows: &[StatRow]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: HashMap<&str, Vec<&StatRow>> = HashMap::new();
    for row in rows {
        let family = describe(&row.name).map_or(row.name.as_str(), |i| i.name);
        groups
            .entry(family)
            .or_insert_with(|| {
                order.push(family);
                Vec::new()
            })
            .push(row);
    }
    let mut out = String::with_capacity(rows.len() * 64);
    for family in order {
        match describe(family) {
            Some(info) => {
                let _ = writeln!(out, "# HELP {family} {}", escape_help(info.help));
                let _ = writeln!(out, "# TYPE {family} {}", info.kind.name());
            }
            None => {
                let _ = writeln!(out, "# TYPE {family} untyped");
            }
        }
        for row in groups.get(family).into_iter().flatten() {
            out.push_str(&row.name);
            if !row.labels.is_empty() {
                out.push('{');
                out.push_str(&row.labels);
                out.push('}');
            }
            out.push(' ');
            out.push_str(&format_value(row.value));
            out.push('\n');
        }
    }
    out
}

type Body = Full<Bytes>;

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

async fn answer(db: Arc<Database>, m: Arc<ServerMetrics>, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() != "/metrics" {
        return plain(StatusCode::NOT_FOUND, "not found; try /metrics\n");
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let text = match tokio::task::spawn_blocking(move || render(&rows(&db, &m))).await {
        Ok(t) => t,
        Err(_) => return plain(StatusCode::INTERNAL_SERVER_ERROR, "collecting the metrics failed\n"),
    };
    let mut r = Response::new(Body::new(Bytes::from(text)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_TEXT));
    r
}

/// Serves `GET /metrics` over HTTP/1.1 from `listener` until `shutdown` resolves: 200 with
/// the Prometheus text format, 405 for other methods, 404 for other paths. Collecting the
/// figures waits for every partition, so it runs on the blocking thread pool.
pub async fn serve_metrics(
    db: Arc<Database>,
    metrics: Arc<ServerMetrics>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10));
    let http = Arc::new(http);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((socket, _peer)) => {
                    let (db, metrics, http) = (db.clone(), metrics.clone(), http.clone());
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let (db, metrics) = (db.clone(), metrics.clone());
                            async move { Ok::<_, Infallible>(answer(db, metrics, req).await) }
                        });
                        // A connection's errors (client gone, bad request) end that connection only.
                        let _ = http.serve_connection(TokioIo::new(socket), service).await;
                    });
                }
                // Out of file descriptors and the like: keep serving the others.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

/// Resident and peak resident bytes of this process (VmRSS, VmHWM); zeros where /proc
/// does not tell.
fn process_resident() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|k| k.parse::<u64>().ok())
            .map_or(0, |k| k * 1024)
    };
    (kib("VmRSS:"), kib("VmHWM:"))
}

#[cfg(test)]
mod tests {
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
