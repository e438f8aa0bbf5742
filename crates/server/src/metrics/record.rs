//! What the server records as it serves: connections and statements (counts, errors by
//! SQLSTATE, latency summaries), read back as snapshots.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

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
