//! Every metric family: its name, type, labels and meaning ([`METRICS`]).

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
