//! Benchmark reports: the JSON object the CLI writes (its fields are a contract: README,
//! "Running the benchmark"), and a short human summary.

use hdrhistogram::Histogram;
use permafrost_executor::SYNC_BUCKET_BOUNDS;
use serde::Serialize;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latency {
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

impl Latency {
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            p50: h.value_at_quantile(0.50),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
        }
    }
}

/// Anti-cache activity. The counters cover the measured run (warm-up excluded); the
/// `*_now` figures are the state at its end.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AnticacheReport {
    pub evicted_tuples: u64,
    pub evicted_bytes: u64,
    pub unevicted_tuples: u64,
    pub blocks_written: u64,
    pub blocks_read: u64,
    pub evictions: u64,
    pub block_reads_per_sec: f64,
    /// Tuples evicted at the end of the run.
    pub evicted_now: u64,
    /// Blocks on disk at the end of the run, and the size of the block files.
    pub blocks_live: u64,
    pub block_file_bytes: u64,
    /// Memory of the block directories and free-space maps at the end of the run.
    pub directory_bytes: u64,
    /// Memory of block buffers (reads in flight, writes pending, idle pool) at the end.
    pub io_buffer_bytes: u64,
    /// (tombstones + directory) / evicted tuples, at the end of the run.
    pub bytes_per_evicted_tuple: f64,
    /// Partition time spent in eviction rounds, merges and heap compaction during the run
    /// (seconds, summed over partitions).
    pub evict_seconds: f64,
    pub merge_seconds: f64,
    pub compact_seconds: f64,
}

impl AnticacheReport {
    /// The figures of the engine's counters (`s`, from the database or read back from a
    /// server's samples with `DatabaseStats::from_samples`) and the tombstones' memory.
    pub fn from_stats(s: &permafrost_executor::DatabaseStats, tombstone_bytes: u64) -> AnticacheReport {
        AnticacheReport {
            evicted_tuples: s.evicted_tuples,
            evicted_bytes: s.evicted_bytes,
            unevicted_tuples: s.unevicted_tuples,
            blocks_written: s.blocks_written,
            blocks_read: s.blocks_read,
            evictions: s.evictions,
            block_reads_per_sec: 0.0,
            evicted_now: s.evicted_now,
            blocks_live: s.blocks_live,
            block_file_bytes: s.block_file_bytes,
            directory_bytes: s.directory_bytes,
            io_buffer_bytes: s.anticache_bytes.saturating_sub(s.directory_bytes),
            evict_seconds: s.evict_seconds(),
            merge_seconds: s.merge_seconds(),
            compact_seconds: s.compact_seconds(),
            bytes_per_evicted_tuple: if s.evicted_now > 0 {
                (tombstone_bytes + s.directory_bytes) as f64 / s.evicted_now as f64
            } else {
                0.0
            },
        }
    }

    /// The figures of an embedded database's counters as they are now.
    pub fn now(db: &permafrost_executor::Database) -> AnticacheReport {
        let tombstones = db.memory_usage().unwrap_or_default().tombstone_bytes;
        AnticacheReport::from_stats(&db.stats_now().unwrap_or_default(), tombstones)
    }

    /// One line for a seeds' benchmark's summary.
    pub fn summary_line(&self) -> String {
        format!(
            "anti-cache: {} tuples evicted ({:.1} MB), {} blocks read back, {} evicted at the end\n",
            self.evicted_tuples,
            self.evicted_bytes as f64 / 1e6,
            self.blocks_read,
            self.evicted_now
        )
    }

    /// The counters accumulated since `earlier` (gauges are kept as they are now).
    pub fn since(&self, earlier: &AnticacheReport) -> AnticacheReport {
        AnticacheReport {
            evicted_tuples: self.evicted_tuples - earlier.evicted_tuples,
            evicted_bytes: self.evicted_bytes - earlier.evicted_bytes,
            unevicted_tuples: self.unevicted_tuples - earlier.unevicted_tuples,
            blocks_written: self.blocks_written - earlier.blocks_written,
            blocks_read: self.blocks_read - earlier.blocks_read,
            evictions: self.evictions - earlier.evictions,
            evict_seconds: self.evict_seconds - earlier.evict_seconds,
            merge_seconds: self.merge_seconds - earlier.merge_seconds,
            compact_seconds: self.compact_seconds - earlier.compact_seconds,
            ..self.clone()
        }
    }
}

/// Memory figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MemoryReport {
    /// The configured memory budget (0 when the target has none).
    pub limit_bytes: u64,
    /// Peak resident set size of the benchmark process (VmHWM), when the target runs in it.
    pub peak_rss_bytes: u64,
    /// Resident set size before the load and after it.
    pub rss_before_load_bytes: u64,
    pub rss_after_load_bytes: u64,
    /// Accounted by the engine at the end of the run.
    pub tuple_bytes: u64,
    /// Of which holding live tuples (the rest are free slots, reused first).
    pub tuple_used_bytes: u64,
    pub string_bytes: u64,
    /// Indexes' dynamic stages (entries of tuples in memory).
    pub index_bytes: u64,
    /// Indexes' compact stages (entries of evicted tuples).
    pub compact_index_bytes: u64,
    pub tombstone_bytes: u64,
    pub buffer_bytes: u64,
    /// Everything the engine accounts, measured right after the load.
    pub accounted_after_load_bytes: u64,
    /// Accounted bytes divided by the resident memory the load added (1.0 = exact).
    pub accounted_to_rss_growth: f64,
    /// Peak resident memory of the process (whole run) minus resident memory before the load.
    pub peak_rss_growth_bytes: u64,
    /// Largest per-second resident sample minus resident memory before the load.
    pub max_rss_growth_during_run_bytes: u64,
}

impl MemoryReport {
    /// Bytes the engine accounts for (tuples, strings, indexes, tombstones, buffers).
    pub fn accounted(&self) -> u64 {
        self.tuple_bytes
            + self.string_bytes
            + self.index_bytes
            + self.compact_index_bytes
            + self.tombstone_bytes
            + self.buffer_bytes
    }
}

/// One second of the measured run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Sample {
    /// Seconds since the start of the measured run (warm-up samples have t < 0).
    pub t: f64,
    pub tps: f64,
    pub evicting: bool,
    pub resident_bytes: u64,
    /// Tuples evicted at that moment.
    pub evicted_tuples: u64,
    /// Blocks read so far.
    pub blocks_read: u64,
}

/// The load phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadReport {
    /// The rows this run loaded (fewer than the table holds when it grew from an earlier
    /// run's rows, as `bench experiment paper` does).
    pub records: u64,
    pub seconds: f64,
    pub records_per_sec: f64,
}

/// CPU time of the benchmark process during the measured run (warm-up excluded): the
/// client's cost for server targets; client and engine together for the embedded one.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CpuReport {
    pub user_seconds: f64,
    pub system_seconds: f64,
    /// CPU seconds per second of the run (1.0 = one core busy).
    pub cores: f64,
    /// CPU microseconds per committed transaction.
    pub us_per_txn: f64,
}

/// CPU time and context switches of a server process so far (its `permafrost_process_*`
/// figures).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerUsage {
    pub cpu_seconds: f64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

/// What the server process spent during the measured run, per transaction: the figures an
/// ordinary client's statement costs the server (CPU time, and context switches, each a
/// thread going to sleep or being woken).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServerCpuReport {
    pub cpu_seconds: f64,
    /// CPU seconds per second of the run (1.0 = one core busy).
    pub cores: f64,
    pub us_per_txn: f64,
    pub context_switches_per_txn: f64,
    pub voluntary_per_txn: f64,
    pub involuntary_per_txn: f64,
}

impl ServerCpuReport {
    /// Between two readings, over `committed` transactions in `seconds`.
    pub fn between(a: &ServerUsage, b: &ServerUsage, committed: u64, seconds: f64) -> ServerCpuReport {
        let n = committed.max(1) as f64;
        let cpu = (b.cpu_seconds - a.cpu_seconds).max(0.0);
        let vol = b.voluntary_switches.saturating_sub(a.voluntary_switches) as f64;
        let invol = b.involuntary_switches.saturating_sub(a.involuntary_switches) as f64;
        ServerCpuReport {
            cpu_seconds: cpu,
            cores: cpu / seconds.max(1e-9),
            us_per_txn: cpu * 1e6 / n,
            context_switches_per_txn: (vol + invol) / n,
            voluntary_per_txn: vol / n,
            involuntary_per_txn: invol / n,
        }
    }
}

/// A command log's counters so far (from `Database::log_stats`, or the server's
/// `permafrost_commandlog_*` figures).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LogCounters {
    pub records: u64,
    pub bytes: u64,
    pub group_commits: u64,
    pub sync_seconds: f64,
    /// Syncs by duration, in the buckets of [`permafrost_executor::SYNC_BUCKET_BOUNDS`]
    /// (not cumulative; the last one over a second).
    pub sync_buckets: [u64; permafrost_executor::SYNC_BUCKETS],
}

/// What the command log did while measuring (absent when the target has no log).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CommandLogReport {
    pub records_per_sec: f64,
    /// Group commits (one write and one `fdatasync` each) per second.
    pub group_commits_per_sec: f64,
    pub records_per_group_commit: f64,
    /// Bytes written per record, framing included.
    pub bytes_per_record: f64,
    /// Mean time in `fdatasync` per group commit.
    pub sync_us_per_group_commit: f64,
    /// The bound of the duration bucket that holds the 99th percentile of the log's syncs
    /// (so the percentile is at most this), in µs; None without syncs, or past a second.
    pub sync_p99_us_at_most: Option<f64>,
    /// Syncs that took more than 10 ms: each held up every commit behind it.
    pub syncs_over_10ms: u64,
}

impl CommandLogReport {
    /// The figures between two readings of the counters `seconds` apart.
    pub fn between(a: &LogCounters, b: &LogCounters, seconds: f64) -> CommandLogReport {
        let records = b.records.saturating_sub(a.records) as f64;
        let commits = b.group_commits.saturating_sub(a.group_commits) as f64;
        let per = |x: f64, n: f64| if n > 0.0 { x / n } else { 0.0 };
        CommandLogReport {
            records_per_sec: per(records, seconds),
            group_commits_per_sec: per(commits, seconds),
            records_per_group_commit: per(records, commits),
            bytes_per_record: per(b.bytes.saturating_sub(a.bytes) as f64, records),
            sync_us_per_group_commit: per((b.sync_seconds - a.sync_seconds).max(0.0) * 1e6, commits),
            sync_p99_us_at_most: sync_p99_bound(&a.sync_buckets, &b.sync_buckets),
            syncs_over_10ms: {
                let over = SYNC_BUCKET_BOUNDS.partition_point(|&b| b <= 0.01);
                (over..b.sync_buckets.len())
                    .map(|i| b.sync_buckets[i].saturating_sub(a.sync_buckets[i]))
                    .sum()
            },
        }
    }
}

/// The bound (µs) of the first duration bucket by which 99% of the syncs between the
/// readings `a` and `b` are counted; None without syncs, or past the last bound.
fn sync_p99_bound(a: &[u64], b: &[u64]) -> Option<f64> {
    let n: Vec<u64> = a.iter().zip(b).map(|(a, b)| b.saturating_sub(*a)).collect();
    let total: u64 = n.iter().sum();
    if total == 0 {
        return None;
    }
    let need = total - total / 100;
    let mut seen = 0;
    let at = n.iter().position(|&k| {
        seen += k;
        seen >= need
    })?;
    SYNC_BUCKET_BOUNDS.get(at).map(|b| b * 1e6)
}

/// User and system CPU seconds this process has used so far (getrusage).
pub fn process_cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// A whole benchmark run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub benchmark: String,
    pub target: String,
    pub throughput_tps: f64,
    pub committed: u64,
    pub aborted_user: u64,
    /// Operations that failed with an error other than a user abort.
    pub failed: u64,
    pub restarts_evicted: u64,
    pub latency_us: Latency,
    pub verify_errors: u64,
    pub reads: u64,
    pub updates: u64,
    pub anticache: AnticacheReport,
    pub memory: MemoryReport,
    pub load: LoadReport,
    pub timeseries: Vec<Sample>,
    /// CPU used by the benchmark process while measuring.
    pub process_cpu: CpuReport,
    /// CPU and context switches of the server process while measuring (server targets).
    pub server_cpu: Option<ServerCpuReport>,
    pub command_log: Option<CommandLogReport>,
    pub settings: serde_json::Value,
    /// Errors seen (first few), for diagnosis.
    pub errors: Vec<String>,
}

impl Report {
    pub fn summary(&self) -> String {
        let mut s = self.main_summary();
        if let Some(c) = &self.server_cpu {
            s.push_str(&format!(
                "\nserver process: {:.2} cores, {:.1} us CPU and {:.2} context switches ({:.2} voluntary) per transaction",
                c.cores, c.us_per_txn, c.context_switches_per_txn, c.voluntary_per_txn
            ));
        }
        if let Some(c) = &self.command_log {
            s.push_str(&format!(
                "\ncommand log: {:.0} records/s, {:.0} group commits/s of {:.0} records ({:.1} KiB; {:.0} bytes per record), {:.0} us in fdatasync per group commit",
                c.records_per_sec,
                c.group_commits_per_sec,
                c.records_per_group_commit,
                c.records_per_group_commit * c.bytes_per_record / 1024.0,
                c.bytes_per_record,
                c.sync_us_per_group_commit,
            ));
            if let Some(p99) = c.sync_p99_us_at_most {
                s.push_str(&format!(
                    " (99% of syncs within {p99:.0} us, {} over 10 ms)",
                    c.syncs_over_10ms
                ));
            }
        }
        s
    }

    fn main_summary(&self) -> String {
        let l = &self.latency_us;
        format!(
            "{} on {}: {:.0} txn/s ({} committed, {} aborted, {} failed, {} restarts for evicted data, {} verify errors)\n\
             latency us: p50 {} p95 {} p99 {} p99.9 {} max {}\n\
                          load: {} records in {:.1}s ({:.0}/s); accounted {:.1} MiB for {:.1} MiB of RSS growth ({:.3}); peak RSS {:.1} MiB\n\
                          anti-cache: {} evicted now, {} evicted / {} merged back in the run, {} blocks written, {} read ({:.0}/s), {:.1} bytes per evicted tuple; peak RSS growth {:.1} MiB\n\
                          bench process CPU: {:.2} cores ({:.1} us/txn)",
            self.benchmark,
            self.target,
            self.throughput_tps,
            self.committed,
            self.aborted_user,
            self.failed,
            self.restarts_evicted,
            self.verify_errors,
            l.p50,
            l.p95,
            l.p99,
            l.p999,
            l.max,
            self.load.records,
            self.load.seconds,
            self.load.records_per_sec,
            self.memory.accounted_after_load_bytes as f64 / (1 << 20) as f64,
            self.memory
                .rss_after_load_bytes
                .saturating_sub(self.memory.rss_before_load_bytes) as f64
                / (1 << 20) as f64,
            self.memory.accounted_to_rss_growth,
            self.memory.peak_rss_bytes as f64 / (1 << 20) as f64,
            self.anticache.evicted_now,
            self.anticache.evicted_tuples,
            self.anticache.unevicted_tuples,
            self.anticache.blocks_written,
            self.anticache.blocks_read,
            self.anticache.block_reads_per_sec,
            self.anticache.bytes_per_evicted_tuple,
            self.memory.peak_rss_growth_bytes as f64 / (1 << 20) as f64,
            self.process_cpu.cores,
            self.process_cpu.us_per_txn,
        )
    }
}

/// Resident set size of this process, from /proc/self/statm.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

/// Peak resident set size of this process (VmHWM), from /proc/self/status.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<u64>().ok()))
        })
        .map(|kib| kib * 1024)
        .unwrap_or(0)
}

/// Resets the peak resident set size (VmHWM) to the current one, so that a run's peak is
/// its own when one process runs several (Linux: writing 5 to /proc/self/clear_refs).
/// Returns whether the kernel accepted it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sync_percentile_and_slow_count_come_from_the_buckets_measured() {
        let before = LogCounters {
            sync_buckets: [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7],
            ..LogCounters::default()
        };
        // 100 syncs while measuring: 99 of them within 10 ms, one at 25-50 ms.
        let mut after = before;
        for (b, n) in after
            .sync_buckets
            .iter_mut()
            .zip([0, 50, 30, 10, 5, 3, 1, 0, 1, 0, 0, 0, 0])
        {
            *b += n;
        }
        let r = CommandLogReport::between(&before, &after, 1.0);
        assert_eq!(r.sync_p99_us_at_most, Some(10_000.0));
        assert_eq!(r.syncs_over_10ms, 1);
        // Two more over a second: the 99th percentile passes the last bound.
        after.sync_buckets[12] += 2;
        let r = CommandLogReport::between(&before, &after, 1.0);
        assert_eq!((r.sync_p99_us_at_most, r.syncs_over_10ms), (None, 3));
        // No syncs: no percentile.
        let r = CommandLogReport::between(&before, &before, 1.0);
        assert_eq!((r.sync_p99_us_at_most, r.syncs_over_10ms), (None, 0));
    }
}
