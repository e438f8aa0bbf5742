//! Scans that read a partition's blocks without merging them back (the executor's
//! scan.rs): the hold that keeps block slots from being reused while such a scan runs
//! ([`ScanHold`]) and the bytes they read ([`BlockBytes`]). The reads themselves, adjacent
//! blocks together, are the anti-cache's (scan_read.rs, [`crate::AntiCache::read_for_scan`]).

use std::io;
use std::sync::Arc;

use crate::buf::AlignedBuf;

/// Most bytes one read of adjacent blocks for a scan takes
/// ([`crate::AntiCache::read_for_scan`]).
pub const SCAN_READ_BYTES: usize = 1 << 20;

/// The bytes of one block read for a scan: part of a buffer that adjacent blocks read
/// together share.
#[derive(Clone)]
pub struct BlockBytes {
    pub(crate) buf: Arc<AlignedBuf>,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

impl BlockBytes {
    pub(crate) fn whole(buf: Arc<AlignedBuf>) -> BlockBytes {
        let len = buf.len();
        BlockBytes { buf, start: 0, len }
    }
}

impl std::ops::Deref for BlockBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

/// Called (on the partition or the I/O thread) with each block a scan asked for.
pub type ScanDone = Arc<dyn Fn(u32, io::Result<BlockBytes>) + Send + Sync>;

/// Counts the scans that read a partition's blocks from outside the partition (a
/// statement's evicted tuples read after it ran, not merged back): such a scan reads the
/// blocks as they were when its statement ran, so while any is running the anti-cache
/// reuses no block's slots (a block merged back meanwhile keeps its bytes on disk). The
/// scan registers while its statement still holds the partition, and leaves when it is
/// done; then the partition is told ([`crate::AntiCache::scans_ended`]).
#[derive(Clone, Default, Debug)]
pub struct ScanHold(Arc<std::sync::atomic::AtomicUsize>);

impl ScanHold {
    /// A scan starts (call while holding the partition's store).
    pub fn enter(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// A scan is done.
    pub fn leave(&self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn active(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst) > 0
    }
}
