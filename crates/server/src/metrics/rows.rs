//! The figures as rows (name, labels, value): the engine's, the server's and the
//! process's, read together ([`rows`], [`collect`]); what both the Prometheus endpoint and
//! the `permafrost_stats` view show.

use std::fmt::Write as _;
use std::sync::Arc;

use permafrost_executor::{Database, DatabaseStats, MemoryUsage, TableStats};

use super::record::*;

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
pub(crate) fn escape_label(v: &str) -> String {
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
pub(crate) struct Rows(pub(crate) Vec<StatRow>);

impl Rows {
    pub(crate) fn add(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
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

    pub(crate) fn one(&mut self, name: &str, value: u64) {
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

pub(crate) fn engine_rows(
    db: &Database,
    st: &DatabaseStats,
    memory: Option<&MemoryUsage>,
    tables: &[TableStats],
    s: &ServerSnapshot,
) -> Vec<StatRow> {
    let mut r = Rows(Vec::with_capacity(64 + 8 * tables.len()));
    // The engine's counters, as declared (permafrost_executor::COUNTERS).
    for (c, v) in st.values().filter(|(c, _)| !c.metric.is_empty()) {
        r.0.push(StatRow {
            name: c.metric.to_owned(),
            labels: c.labels.to_owned(),
            value: v as f64 * c.scale,
        });
    }
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
    r.one("permafrost_memory_limit_bytes", db.config().memory_limit);
    r.one("permafrost_statement_memory_bytes", db.statement_pool().used() as u64);
    r.one(
        "permafrost_statement_memory_limit_bytes",
        db.statement_pool().limit() as u64,
    );
    if let Some(mem) = memory {
        let taken = "permafrost_memory_bytes";
        r.add(taken, &[("component", "tuple")], mem.tuple_bytes as f64);
        r.add(taken, &[("component", "string")], mem.string_bytes as f64);
        r.add(taken, &[("component", "index")], mem.index_bytes as f64);
        r.add(taken, &[("component", "index_compact")], mem.compact_index_bytes as f64);
        r.add(taken, &[("component", "tombstone")], mem.tombstone_bytes as f64);
        r.add(taken, &[("component", "buffer")], mem.buffer_bytes as f64);
        r.add(taken, &[("component", "schema")], mem.schema_bytes as f64);
        r.add(taken, &[("component", "anticache")], st.anticache_bytes as f64);
        let used = "permafrost_memory_used_bytes";
        r.add(used, &[("component", "tuple")], mem.tuple_used_bytes as f64);
        r.add(used, &[("component", "string")], mem.string_used_bytes as f64);
    }
    r.one("permafrost_partitions", db.partitions() as u64);
    r.one("permafrost_temp_bytes_total", db.temp_bytes_written());
    let (rss, peak) = process_resident();
    r.one("permafrost_process_resident_bytes", rss);
    r.one("permafrost_process_peak_resident_bytes", peak);
    let u = process_usage();
    let cpu = "permafrost_process_cpu_seconds_total";
    r.add(cpu, &[("mode", "user")], u.user_seconds);
    r.add(cpu, &[("mode", "system")], u.system_seconds);
    let switches = "permafrost_process_context_switches_total";
    r.add(switches, &[("kind", "voluntary")], u.voluntary_switches as f64);
    r.add(switches, &[("kind", "involuntary")], u.involuntary_switches as f64);
    r.one("permafrost_process_id", u64::from(std::process::id()));
    type Figure = fn(&TableStats) -> u64;
    let per_table: [(&str, Figure); 10] = [
        ("permafrost_table_hot_tuples", |t| t.hot_tuples),
        ("permafrost_table_hot_bytes", |t| t.hot_bytes()),
        ("permafrost_table_index_bytes", |t| t.index_bytes),
        ("permafrost_table_compact_index_bytes", |t| t.compact_index_bytes),
        ("permafrost_table_tombstone_bytes", |t| t.tombstone_bytes),
        ("permafrost_table_cold_tuples", |t| t.cold_tuples),
        ("permafrost_table_cold_bytes", |t| t.cold_bytes),
        ("permafrost_table_cold_blocks", |t| t.cold_blocks),
        ("permafrost_table_stale_tuples", |t| t.stale_tuples),
        ("permafrost_table_crossing_statements_total", |t| t.crossing_statements),
    ];
    for (name, figure) in per_table {
        for t in tables {
            r.add(name, &[("table", &t.name)], figure(t) as f64);
        }
    }
    r.one("permafrost_connections_open", s.connections_open);
    r.one("permafrost_connections_total", s.connections_total);
    r.add(
        "permafrost_plan_cache_lookups_total",
        &[("outcome", "hit")],
        s.plan_cache_hits as f64,
    );
    r.add(
        "permafrost_plan_cache_lookups_total",
        &[("outcome", "miss")],
        s.plan_cache_misses as f64,
    );
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

/// CPU time and context switches of this process, all its threads (those that ended
/// included), from `getrusage(RUSAGE_SELF)`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ProcessUsage {
    pub user_seconds: f64,
    pub system_seconds: f64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

pub(crate) fn process_usage() -> ProcessUsage {
    // SAFETY: getrusage writes only the struct it is given, which is valid zeroed.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return ProcessUsage::default();
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    ProcessUsage {
        user_seconds: secs(ru.ru_utime),
        system_seconds: secs(ru.ru_stime),
        voluntary_switches: ru.ru_nvcsw as u64,
        involuntary_switches: ru.ru_nivcsw as u64,
    }
}

/// Resident and peak resident bytes of this process (VmRSS, VmHWM); zeros where /proc
/// does not tell.
pub(crate) fn process_resident() -> (u64, u64) {
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
