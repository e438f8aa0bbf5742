//! Every metric family: its name, type, labels and meaning ([`METRICS`]).

use std::sync::LazyLock;

use permafrost_executor::{COUNTERS, CounterKind};

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

pub(crate) const fn m(name: &'static str, kind: MetricType, labels: &'static str, help: &'static str) -> MetricInfo {
    MetricInfo {
        name,
        kind,
        labels,
        help,
    }
}

use MetricType::{Counter, Gauge, Summary};

/// Every metric family [`rows`](super::rows) produces, in output order: the engine's
/// counters (each declared once, in `permafrost_executor::COUNTERS`), then the server's own.
pub static METRICS: LazyLock<Vec<MetricInfo>> = LazyLock::new(|| {
    let mut all: Vec<MetricInfo> = COUNTERS
        .iter()
        .filter(|c| !c.metric.is_empty() && !c.help.is_empty())
        .map(|c| MetricInfo {
            name: c.metric,
            kind: match c.kind {
                CounterKind::Counter => Counter,
                CounterKind::Gauge => Gauge,
            },
            // Built once for the life of the process.
            labels: Box::leak(c.label_names().into_boxed_str()),
            help: c.help,
        })
        .collect();
    all.extend_from_slice(SERVER_METRICS);
    all
});

/// The families of the server's own figures (the log, snapshots, memory, the process,
/// tables, connections, statements), in output order after the engine's counters.
const SERVER_METRICS: &[MetricInfo] = &[
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
        "permafrost_memory_limit_bytes",
        Gauge,
        "",
        "The memory budget (memory_limit).",
    ),
    m(
        "permafrost_memory_bytes",
        Gauge,
        "component",
        "Memory taken, by component: tuple, string (out-of-line values), index (the entries of tuples in memory), index_compact (the compact stage holding the entries of evicted tuples), tombstone (the evicted-tuple directory), buffer (undo log), schema (tables' fixed structures and the catalog's share, estimated per table), anticache (block directory, free-space map, I/O buffers). The sum is everything the engine holds.",
    ),
    m(
        "permafrost_statement_memory_bytes",
        Gauge,
        "",
        "Memory running statements hold together (results, sort buffers, groups, COPY rows being read), taken from their pool; the partitions count it in the budget and evict to make room for it.",
    ),
    m(
        "permafrost_temp_bytes_total",
        Counter,
        "",
        "Bytes written to temporary files by statements whose sorts, groupings or results outgrew their working memory (PostgreSQL's pg_stat_database.temp_bytes).",
    ),
    m(
        "permafrost_statement_memory_limit_bytes",
        Gauge,
        "",
        "What running statements may hold together: half of memory_limit, at least one statement's working memory (past it they fail with 53200).",
    ),
    m(
        "permafrost_memory_used_bytes",
        Gauge,
        "component",
        "Of the tuple and string storage taken, the bytes holding live data (the rest is free for reuse). Eviction and the write gate compare these plus the other components with the budget.",
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
        "permafrost_process_cpu_seconds_total",
        Counter,
        "mode",
        "CPU time of the server process since it started, all threads: mode=\"user\" or \"system\".",
    ),
    m(
        "permafrost_process_context_switches_total",
        Counter,
        "kind",
        "Context switches of the server process's threads since it started: kind=\"voluntary\" (it waited) or \"involuntary\" (preempted).",
    ),
    m(
        "permafrost_process_id",
        Gauge,
        "",
        "The server's process id (for tools such as perf).",
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
        "Bytes of the dynamic stage of the table's indexes: the entries of its tuples in memory.",
    ),
    m(
        "permafrost_table_compact_index_bytes",
        Gauge,
        "table",
        "Bytes of the compact stage of the table's indexes: the entries of its evicted tuples (indexes stay in memory whole).",
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
    m(
        "permafrost_table_crossing_statements_total",
        Counter,
        "table",
        "Statements that ran over several partitions because of the table's partitioning: its key at another partition than another relation's, a referenced row elsewhere, or a write of a replicated table.",
    ),
    m("permafrost_connections_open", Gauge, "", "Client connections open."),
    m(
        "permafrost_connections_total",
        Counter,
        "",
        "Client connections accepted since the server started.",
    ),
    m(
        "permafrost_plan_cache_lookups_total",
        Counter,
        "outcome",
        "Simple-protocol statements (one per query string) run from the plan cached for their shape (hit) or parsed and planned from their text (miss).",
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
