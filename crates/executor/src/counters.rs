//! The engine's counters, each declared once below: its field, how it is exported (the
//! metric family and labels of its sample, counter or gauge, the unit conversion) and what
//! it means. The declaration makes the atomics a partition publishes ([`PartitionStats`]),
//! their sum over partitions ([`DatabaseStats`]) and the list ([`COUNTERS`]) that the
//! server's metrics rows and `permafrost_stats` view, the step harness and the benchmark
//! reports iterate; adding a counter is one line here plus the code that counts it.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use permafrost_anticache::AntiCacheStats;
use permafrost_storage::MemoryUsage;

/// How a counter's samples behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterKind {
    /// Only goes up (from zero when the process starts).
    Counter,
    /// Goes up and down.
    Gauge,
}

/// One engine counter and how it is exported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterInfo {
    /// Its field in [`PartitionStats`] and [`DatabaseStats`].
    pub field: &'static str,
    /// The metric family its sample belongs to; empty for the memory figures, which are
    /// exported by component with the rest of the memory use
    /// ([`Database::memory_usage`](crate::Database::memory_usage)).
    pub metric: &'static str,
    /// The sample's labels (`reason="evicted"`), or empty.
    pub labels: &'static str,
    pub kind: CounterKind,
    /// Multiplies the stored value into the exported unit (nanoseconds to seconds: 1e-9).
    pub scale: f64,
    /// What the family means: given on the family's first counter, empty on the others.
    pub help: &'static str,
}

impl CounterInfo {
    /// The label names of its family (`reason`), comma-separated.
    pub fn label_names(&self) -> String {
        self.labels
            .split(',')
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
            .collect::<Vec<_>>()
            .join(",")
    }
}

macro_rules! engine_counters {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident: $kind:ident $metric:literal [$labels:literal] * $scale:literal, $help:literal;
    )*) => {
        /// Counters a partition publishes after each pass over its queue.
        #[derive(Debug, Default)]
        pub struct PartitionStats {
            $( $(#[doc = $doc])* pub $field: AtomicU64, )*
        }

        /// The counters of every partition, summed ([`Database::stats`](crate::Database::stats)).
        #[derive(Debug, Default, Clone, Copy, PartialEq)]
        pub struct DatabaseStats {
            $( $(#[doc = $doc])* pub $field: u64, )*
        }

        /// Every engine counter, in the order the metrics show them.
        pub const COUNTERS: &[CounterInfo] = &[
            $( CounterInfo {
                field: stringify!($field),
                metric: $metric,
                labels: $labels,
                kind: CounterKind::$kind,
                scale: $scale,
                help: $help,
            }, )*
        ];

        impl DatabaseStats {
            /// Adds a partition's counters.
            pub(crate) fn add(&mut self, p: &PartitionStats) {
                $( self.$field += p.$field.load(Relaxed); )*
            }

            /// The counters read back from their exported samples (a server's metrics):
            /// `sample(metric, labels)` is a sample's value in the exported unit, 0 when
            /// absent. The memory figures, which are not exported as counters, stay 0.
            pub fn from_samples(sample: impl Fn(&str, &str) -> f64) -> DatabaseStats {
                let mut d = DatabaseStats::default();
                $( if !$metric.is_empty() {
                    d.$field = (sample($metric, $labels) / $scale).round() as u64;
                } )*
                d
            }

            /// Each counter with its value (in the stored unit), in [`COUNTERS`] order.
            pub fn values(&self) -> impl Iterator<Item = (&'static CounterInfo, u64)> {
                COUNTERS.iter().zip([$( self.$field ),*])
            }
        }
    };
}

engine_counters! {
    committed: Counter "permafrost_transactions_committed_total" [""] * 1.0,
        "Transactions committed (procedure calls and ad hoc statements).";
    aborted_user: Counter "permafrost_transactions_aborted_total" [""] * 1.0,
        "Transactions aborted by their procedure (user aborts).";
    failed: Counter "permafrost_transactions_failed_total" [""] * 1.0,
        "Transactions that failed with an error (constraint violation, bad call, too many restarts, ...).";
    restarts_evicted: Counter "permafrost_transaction_restarts_total" ["reason=\"evicted\""] * 1.0,
        "Transactions restarted: reason=\"evicted\" after the evicted data they touched was fetched and merged, reason=\"schema\" after a schema change.";
    restarts_schema: Counter "permafrost_transaction_restarts_total" ["reason=\"schema\""] * 1.0, "";
    /// Writes the memory budget refused that were held until eviction made room, each
    /// time one was held (partition/pacing.rs).
    write_waits: Counter "permafrost_write_waits_total" [""] * 1.0,
        "Writes refused by the memory budget's gate that waited for eviction to make room instead of failing (each time one was held).";
    /// How long writes were held for room, in all.
    write_wait_nanos: Counter "permafrost_write_wait_seconds_total" [""] * 1e-9,
        "Time writes spent held until eviction made room, summed over writes.";
    /// Multi-partition transactions this partition coordinated.
    mp_coordinated: Counter "permafrost_multi_partition_transactions_total" [""] * 1.0,
        "Multi-partition transactions coordinated (DDL included).";
    /// Short single-partition calls run on their caller's thread (partition/cell.rs).
    inline_calls: Counter "permafrost_transactions_inline_total" [""] * 1.0,
        "Short single-partition calls run on the caller's thread while their partition was free, instead of on the partition's thread.";
    /// Block reads whose completion was handled (the block merged, the calls that waited
    /// for it restarted) on the block I/O thread, the partition being free (partition/cell.rs).
    fetched_on_io_thread: Counter "permafrost_fetched_blocks_total" ["handled_on=\"io_thread\""] * 1.0,
        "Blocks read back for transactions that needed evicted data, by where the read's completion was handled: handled_on=\"io_thread\" (the block I/O thread merged it and restarted the calls waiting for it, their partition being free), \"partition_thread\" (queued to the partition's thread).";
    fetched_on_partition_thread: Counter "permafrost_fetched_blocks_total" ["handled_on=\"partition_thread\""] * 1.0, "";
    /// Participants of multi-partition transactions that took part without their thread
    /// (partition/fence.rs).
    mp_idle_participants: Counter "permafrost_multi_partition_idle_participants_total" [""] * 1.0,
        "Partitions that took part in a queued multi-partition transaction without their thread: they had handled everything sent to them, so the coordinator took their token instead of waking them.";
    /// Multi-partition transactions run on their caller's thread (partition/cell.rs).
    inline_mp: Counter "permafrost_multi_partition_transactions_inline_total" [""] * 1.0,
        "Multi-partition ad hoc statements and interactive transactions (probes, commits) run on the caller's thread while all their partitions were free, instead of on the partitions' threads (included in permafrost_multi_partition_transactions_total).";
    /// Checks of an interactive COMMIT's queries against this partition's recent writes
    /// (interactive.rs, `permafrost_storage::Recent`).
    commit_reads_unchanged: Counter "permafrost_commit_read_checks_total" ["result=\"unchanged\""] * 1.0,
        "Checks of an interactive transaction's queries at its COMMIT against a partition's recent commits: result=\"unchanged\" (nothing the query read changed there since it ran), \"changed\" (something did, or it cannot be told; the COMMIT runs the query again unless another partition already said so).";
    commit_reads_changed: Counter "permafrost_commit_read_checks_total" ["result=\"changed\""] * 1.0, "";
    /// Interactive COMMITs whose queries gave other results than they showed, which looked
    /// for an earlier place of the serial order (interactive.rs).
    commits_placed_earlier: Counter "permafrost_commits_placed_earlier_total" ["result=\"placed\""] * 1.0,
        "Interactive transactions whose queries no longer gave what their client was shown at COMMIT, which looked for an earlier place of the serial order where they did: result=\"placed\" (committed there), \"refused\" (none was found: 40001). Counted at the first partition the COMMIT held.";
    commits_refused_earlier: Counter "permafrost_commits_placed_earlier_total" ["result=\"refused\""] * 1.0, "";
    /// Long statements moved off their partitions to a forked image (forked.rs).
    reads_moved: Counter "permafrost_statements_moved_total" ["kind=\"read\""] * 1.0,
        "Statements that ran past read_slice and finished off their partitions in a forked copy-on-write image: kind=\"read\" (its rows stream from there), \"write\" (its changes are applied afterwards).";
    writes_moved: Counter "permafrost_statements_moved_total" ["kind=\"write\""] * 1.0, "";
    /// Evicted tuples read where they lie by forked readers (forked.rs, block_rows.rs).
    moved_reads_in_place: Counter "permafrost_moved_read_evicted_tuples_total" [""] * 1.0,
        "Evicted tuples decoded from their blocks where they lie, nothing merged back, by the forked readers of statements that reached more evicted data than their partitions may bring back at once or kept reaching evicted data (each time one was met; counted when the reader ends, at the first of its partitions).";
    /// Moved writes run again in place (forked.rs).
    moved_writes_run_again: Counter "permafrost_moved_writes_run_again_total" ["reason=\"changed\""] * 1.0,
        "Moved writes run again in place instead of applying their changes: reason=\"changed\" (a table they use changed at their partitions meanwhile), \"resources\" (their image ran out of the memory it may use, or their changes of what they may hold).";
    moved_writes_resources: Counter "permafrost_moved_writes_run_again_total" ["reason=\"resources\""] * 1.0, "";
    /// Transactions waiting for evicted data now.
    parked: Gauge "permafrost_transactions_parked" [""] * 1.0,
        "Transactions waiting for evicted data to be fetched.";
    /// Eviction rounds.
    evictions: Counter "permafrost_evictions_total" [""] * 1.0,
        "Eviction rounds that evicted at least one tuple.";
    evicted_tuples: Counter "permafrost_evicted_tuples_total" [""] * 1.0,
        "Tuples evicted to the anti-cache.";
    evicted_bytes: Counter "permafrost_evicted_bytes_total" [""] * 1.0,
        "Bytes of tuple data evicted (serialized size).";
    /// Tuples merged back from blocks.
    unevicted_tuples: Counter "permafrost_unevicted_tuples_total" [""] * 1.0,
        "Tuples merged back into memory from fetched blocks.";
    blocks_written: Counter "permafrost_blocks_written_total" [""] * 1.0,
        "Anti-cache blocks written.";
    blocks_read: Counter "permafrost_blocks_read_total" [""] * 1.0,
        "Anti-cache blocks read back (fetches).";
    blocks_live: Gauge "permafrost_blocks_live" [""] * 1.0,
        "Anti-cache blocks holding evicted tuples now.";
    block_file_bytes: Gauge "permafrost_block_file_bytes" [""] * 1.0,
        "Size of the block files: live blocks and free space kept for reuse.";
    /// Tuples evicted now.
    evicted_now: Gauge "permafrost_cold_tuples" [""] * 1.0,
        "Tuples evicted now (all tables).";
    /// Time spent evicting (building and writing blocks), merging fetched blocks and
    /// compacting heaps, in nanoseconds.
    evict_nanos: Counter "permafrost_anticache_seconds_total" ["activity=\"evict\""] * 1e-9,
        "Partition time spent on the anti-cache: activity=\"evict\" (building blocks), \"merge\" (merging fetched blocks), \"compact\" (compacting heaps).";
    merge_nanos: Counter "permafrost_anticache_seconds_total" ["activity=\"merge\""] * 1e-9, "";
    compact_nanos: Counter "permafrost_anticache_seconds_total" ["activity=\"compact\""] * 1e-9, "";
    /// The block directory and free-space map alone (the per-block bookkeeping).
    directory_bytes: Gauge "permafrost_anticache_directory_bytes" [""] * 1.0,
        "Of the anticache memory, the block directories and free-space maps.";
    tuple_bytes: Gauge "" [""] * 1.0, "";
    tuple_used_bytes: Gauge "" [""] * 1.0, "";
    string_bytes: Gauge "" [""] * 1.0, "";
    index_bytes: Gauge "" [""] * 1.0, "";
    compact_index_bytes: Gauge "" [""] * 1.0, "";
    tombstone_bytes: Gauge "" [""] * 1.0, "";
    buffer_bytes: Gauge "" [""] * 1.0, "";
    schema_bytes: Gauge "" [""] * 1.0, "";
    /// Everything the anti-cache holds: block directory, free-space map, I/O buffers.
    anticache_bytes: Gauge "" [""] * 1.0, "";
}

impl DatabaseStats {
    /// Seconds partitions spent evicting (summed over partitions).
    pub fn evict_seconds(&self) -> f64 {
        self.evict_nanos as f64 / 1e9
    }

    /// Seconds partitions spent merging fetched blocks.
    pub fn merge_seconds(&self) -> f64 {
        self.merge_nanos as f64 / 1e9
    }

    /// Seconds partitions spent compacting heaps.
    pub fn compact_seconds(&self) -> f64 {
        self.compact_nanos as f64 / 1e9
    }
}

impl PartitionStats {
    pub(crate) fn set_memory(&self, m: &MemoryUsage, anticache_bytes: u64, directory_bytes: u64) {
        self.tuple_bytes.store(m.tuple_bytes, Relaxed);
        self.tuple_used_bytes.store(m.tuple_used_bytes, Relaxed);
        self.string_bytes.store(m.string_bytes, Relaxed);
        self.index_bytes.store(m.index_bytes, Relaxed);
        self.compact_index_bytes.store(m.compact_index_bytes, Relaxed);
        self.tombstone_bytes.store(m.tombstone_bytes, Relaxed);
        self.buffer_bytes.store(m.buffer_bytes, Relaxed);
        self.schema_bytes.store(m.schema_bytes, Relaxed);
        self.anticache_bytes.store(anticache_bytes, Relaxed);
        self.directory_bytes.store(directory_bytes, Relaxed);
    }

    pub(crate) fn set_anticache(&self, s: &AntiCacheStats) {
        self.evictions.store(s.evictions, Relaxed);
        self.evicted_tuples.store(s.evicted_tuples, Relaxed);
        self.evicted_bytes.store(s.evicted_bytes, Relaxed);
        self.unevicted_tuples.store(s.unevicted_tuples, Relaxed);
        self.blocks_written.store(s.blocks_written, Relaxed);
        self.blocks_read.store(s.blocks_read, Relaxed);
        self.blocks_live.store(s.blocks_live, Relaxed);
        self.block_file_bytes.store(s.file_bytes, Relaxed);
    }

    pub fn memory(&self) -> MemoryUsage {
        MemoryUsage {
            tuple_bytes: self.tuple_bytes.load(Relaxed),
            tuple_used_bytes: self.tuple_used_bytes.load(Relaxed),
            string_bytes: self.string_bytes.load(Relaxed),
            string_used_bytes: 0,
            index_bytes: self.index_bytes.load(Relaxed),
            compact_index_bytes: self.compact_index_bytes.load(Relaxed),
            tombstone_bytes: self.tombstone_bytes.load(Relaxed),
            buffer_bytes: self.buffer_bytes.load(Relaxed),
            schema_bytes: self.schema_bytes.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exported_family_is_described_once_and_counters_end_in_total() {
        for (i, c) in COUNTERS.iter().enumerate() {
            if c.metric.is_empty() {
                continue;
            }
            let first = COUNTERS[..i].iter().all(|o| o.metric != c.metric);
            assert_eq!(
                first,
                !c.help.is_empty(),
                "{}: help on the family's first counter only",
                c.field
            );
            assert_eq!(
                c.kind == CounterKind::Counter,
                c.metric.ends_with("_total"),
                "{}",
                c.field
            );
            assert!(
                COUNTERS[..i]
                    .iter()
                    .all(|o| (o.metric, o.labels) != (c.metric, c.labels)),
                "{} repeats a sample",
                c.field
            );
        }
        assert_eq!(COUNTERS[3].label_names(), "reason");
    }

    #[test]
    fn values_follow_the_declaration() {
        let p = PartitionStats::default();
        p.restarts_schema.store(7, Relaxed);
        p.compact_nanos.store(2_000_000_000, Relaxed);
        let mut d = DatabaseStats::default();
        d.add(&p);
        d.add(&p);
        let v: Vec<(&str, u64)> = d.values().map(|(c, v)| (c.field, v)).collect();
        assert_eq!(v.len(), COUNTERS.len());
        assert!(v.contains(&("restarts_schema", 14)));
        assert_eq!(d.compact_seconds(), 4.0);
        // Exported and read back, the counters come back (the memory figures are not exported).
        let samples: Vec<(&str, &str, f64)> = d
            .values()
            .filter(|(c, _)| !c.metric.is_empty())
            .map(|(c, v)| (c.metric, c.labels, v as f64 * c.scale))
            .collect();
        let back =
            DatabaseStats::from_samples(|m, l| samples.iter().filter(|s| (s.0, s.1) == (m, l)).map(|s| s.2).sum());
        assert_eq!(back, d);
    }
}
