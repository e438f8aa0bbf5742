//! `permafrost bench device`: what the disk under the data directory can do, measured
//! through the anti-cache's own I/O path (an `O_DIRECT` block file, reads and writes
//! submitted through [`BlockIo`], io_uring where available).
//!
//! It writes a test file sequentially, then reads it at random offsets with each block size
//! for a fixed time at a fixed queue depth (and once at depth 1 for latency). The figures
//! are what the anti-cache's block size and retrieval defaults rest on, and what the
//! block-read rate of an anti-caching run is compared against.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use permafrost_anticache::file::{BlockFile, DiskFile};
use permafrost_anticache::{AlignedBuf, BlockIo, ReadRequest, WriteRequest};
use serde::Serialize;

use crate::BenchError;

/// What to measure.
#[derive(Debug, Clone)]
pub struct DeviceOptions {
    /// Size of the test file (reads fall anywhere in it).
    pub file_bytes: u64,
    pub block_sizes: Vec<usize>,
    /// Reads kept in flight.
    pub queue_depth: u32,
    /// Seconds per block size.
    pub seconds: f64,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        DeviceOptions {
            file_bytes: 2 << 30,
            block_sizes: vec![1 << 10, 4 << 10, 8 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20],
            queue_depth: 64,
            seconds: 3.0,
        }
    }
}

/// Random reads of one size.
#[derive(Debug, Clone, Serialize)]
pub struct ReadFigure {
    pub block_bytes: usize,
    pub queue_depth: u32,
    /// The best of the passes.
    pub iops: f64,
    pub passes_iops: Vec<f64>,
    pub mib_per_sec: f64,
    /// Mean latency of one read at queue depth 1, microseconds.
    pub qd1_latency_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceReport {
    pub path: String,
    pub direct_io: bool,
    pub io_backend: String,
    pub file_bytes: u64,
    pub sequential_write_mib_per_sec: f64,
    pub random_reads: Vec<ReadFigure>,
    /// The block size the measurements suggest (see [`recommend_block_size`]).
    pub recommended_block_bytes: usize,
}

impl DeviceReport {
    /// Random-read IOPS at `block_bytes`, if measured.
    pub fn iops(&self, block_bytes: usize) -> Option<f64> {
        self.random_reads
            .iter()
            .find(|r| r.block_bytes == block_bytes)
            .map(|r| r.iops)
    }

    pub fn summary(&self) -> String {
        let mut s = format!(
            "device under {} ({}, {}): sequential write {:.0} MiB/s\n{:>10} {:>10} {:>10} {:>14}\n",
            self.path,
            if self.direct_io { "direct I/O" } else { "buffered I/O" },
            self.io_backend,
            self.sequential_write_mib_per_sec,
            "block",
            "IOPS",
            "MiB/s",
            "QD1 latency us"
        );
        for r in &self.random_reads {
            s += &format!(
                "{:>10} {:>10.0} {:>10.1} {:>14.1}\n",
                fmt_size(r.block_bytes),
                r.iops,
                r.mib_per_sec,
                r.qd1_latency_us
            );
        }
        s += &format!(
            "recommended eviction block size: {}",
            fmt_size(self.recommended_block_bytes)
        );
        s
    }
}

pub fn fmt_size(b: usize) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{}KiB", b >> 10)
    } else {
        format!("{b}B")
    }
}

/// The largest block size that still reads at least 90% of the IOPS of the best size: up
/// to that point a bigger block costs the device nothing per fetch, and it holds more
/// tuples per directory entry and per write.
pub fn recommend_block_size(reads: &[ReadFigure]) -> usize {
    let best = reads.iter().map(|r| r.iops).fold(0.0, f64::max);
    reads
        .iter()
        .filter(|r| r.iops >= 0.9 * best)
        .map(|r| r.block_bytes)
        .max()
        .unwrap_or(permafrost_anticache::DEFAULT_BLOCK_SIZE)
}

/// Measures the device holding `dir`.
pub fn measure(dir: &Path, opts: &DeviceOptions) -> Result<DeviceReport, BenchError> {
    if opts.block_sizes.is_empty() || opts.queue_depth == 0 || opts.seconds <= 0.0 {
        return Err(BenchError::Options(
            "device: need at least one block size, a queue depth of at least 1 and a positive duration".into(),
        ));
    }
    let max_block = *opts.block_sizes.iter().max().expect("not empty");
    if opts.file_bytes < 16 * max_block as u64 {
        return Err(BenchError::Options(format!(
            "device: the test file ({} bytes) must hold at least 16 blocks of the largest size",
            opts.file_bytes
        )));
    }
    let path = dir.join("permafrost-device-test");
    let file: Arc<dyn BlockFile> = Arc::new(DiskFile::create(&path)?);
    let _cleanup = RemoveOnDrop(&path);
    let io = BlockIo::start(opts.queue_depth.max(8));
    let write_mib = fill(&io, &file, opts.file_bytes)?;
    let mut reads = Vec::new();
    for &bs in &opts.block_sizes {
        let align = file.alignment().max(1);
        if bs % align != 0 {
            return Err(BenchError::Options(format!(
                "device: block size {bs} is not a multiple of the device's alignment {align}"
            )));
        }
        // Three passes, the best kept: the machine is shared, and the question is what the
        // device can do.
        let mut passes = Vec::new();
        for _ in 0..3 {
            passes.push(random_reads(&io, &file, opts.file_bytes, bs, opts.queue_depth, opts.seconds / 3.0)?.0);
        }
        let iops = passes.iter().cloned().fold(0.0, f64::max);
        let (qd1, n) = random_reads(&io, &file, opts.file_bytes, bs, 1, (opts.seconds / 3.0).max(0.5))?;
        reads.push(ReadFigure {
            block_bytes: bs,
            queue_depth: opts.queue_depth,
            iops,
            passes_iops: passes,
            mib_per_sec: iops * bs as f64 / (1 << 20) as f64,
            qd1_latency_us: if n > 0 { 1e6 / qd1 } else { 0.0 },
        });
    }
    Ok(DeviceReport {
        path: dir.display().to_string(),
        direct_io: file.direct(),
        io_backend: io.backend().into(),
        file_bytes: opts.file_bytes,
        sequential_write_mib_per_sec: write_mib,
        recommended_block_bytes: recommend_block_size(&reads),
        random_reads: reads,
    })
}

struct RemoveOnDrop<'a>(&'a Path);

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

/// Writes the file with 1 MiB writes, eight in flight; returns MiB/s (synced).
fn fill(io: &BlockIo, file: &Arc<dyn BlockFile>, bytes: u64) -> Result<f64, BenchError> {
    const CHUNK: usize = 1 << 20;
    let (tx, rx) = crossbeam_channel::unbounded();
    let done: permafrost_anticache::WriteDone = Arc::new(move |_, r| {
        let _ = tx.send(r);
    });
    let mut buf = AlignedBuf::new(CHUNK);
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i * 31 % 251) as u8;
    }
    let buf = Arc::new(buf);
    let start = Instant::now();
    let chunks = bytes.div_ceil(CHUNK as u64);
    let (mut sent, mut got) = (0u64, 0u64);
    while got < chunks {
        while sent < chunks && sent - got < 8 {
            io.write(WriteRequest {
                file: file.clone(),
                offset: sent * CHUNK as u64,
                blocks: vec![(sent as u32, buf.clone())],
                done: done.clone(),
            });
            sent += 1;
        }
        rx.recv()
            .map_err(|_| BenchError::Client("block I/O stopped".into()))??;
        got += 1;
    }
    file.sync()?;
    Ok((chunks * CHUNK as u64) as f64 / (1 << 20) as f64 / start.elapsed().as_secs_f64())
}

/// Random aligned reads of `bs` bytes at depth `qd` for `secs`; returns (reads/s, reads).
fn random_reads(
    io: &BlockIo,
    file: &Arc<dyn BlockFile>,
    file_bytes: u64,
    bs: usize,
    qd: u32,
    secs: f64,
) -> Result<(f64, u64), BenchError> {
    let (tx, rx) = crossbeam_channel::unbounded();
    let done: permafrost_anticache::ReadDone = Arc::new(move |_, r| {
        let _ = tx.send(r);
    });
    let slots = file_bytes / bs as u64;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next_offset = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % slots) * bs as u64
    };
    let mut spare: Vec<AlignedBuf> = (0..qd).map(|_| AlignedBuf::new(bs)).collect();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let (mut in_flight, mut completed) = (0u32, 0u64);
    loop {
        let more = Instant::now() < deadline;
        while more && let Some(buf) = spare.pop() {
            io.read(ReadRequest {
                file: file.clone(),
                block: 0,
                offset: next_offset(),
                buf,
                done: done.clone(),
            });
            in_flight += 1;
        }
        if in_flight == 0 {
            break;
        }
        let buf = rx
            .recv()
            .map_err(|_| BenchError::Client("block I/O stopped".into()))??;
        in_flight -= 1;
        completed += 1;
        spare.push(buf);
    }
    Ok((completed as f64 / start.elapsed().as_secs_f64(), completed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_small_file() {
        let dir = tempfile::tempdir().unwrap();
        let opts = DeviceOptions {
            file_bytes: 8 << 20,
            block_sizes: vec![4 << 10, 64 << 10],
            queue_depth: 4,
            seconds: 0.2,
        };
        let r = measure(dir.path(), &opts).unwrap();
        assert_eq!(r.random_reads.len(), 2);
        assert!(r.random_reads.iter().all(|f| f.iops > 0.0 && f.qd1_latency_us > 0.0));
        assert!(r.sequential_write_mib_per_sec > 0.0);
        assert!(opts.block_sizes.contains(&r.recommended_block_bytes));
        assert!(!dir.path().join("permafrost-device-test").exists(), "test file removed");
    }

    #[test]
    fn recommends_the_largest_size_within_ten_percent_of_the_best() {
        let f = |b, iops| ReadFigure {
            block_bytes: b,
            queue_depth: 1,
            iops,
            passes_iops: vec![],
            mib_per_sec: 0.0,
            qd1_latency_us: 0.0,
        };
        assert_eq!(
            recommend_block_size(&[f(4096, 100.0), f(8192, 95.0), f(16384, 80.0)]),
            8192
        );
        assert_eq!(recommend_block_size(&[f(4096, 100.0), f(8192, 50.0)]), 4096);
    }

    #[test]
    fn bad_options_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let opts = DeviceOptions {
            block_sizes: vec![],
            ..DeviceOptions::default()
        };
        assert!(matches!(measure(dir.path(), &opts), Err(BenchError::Options(_))));
        let opts = DeviceOptions {
            file_bytes: 1 << 20,
            block_sizes: vec![1 << 20],
            ..DeviceOptions::default()
        };
        assert!(matches!(measure(dir.path(), &opts), Err(BenchError::Options(_))));
    }
}
