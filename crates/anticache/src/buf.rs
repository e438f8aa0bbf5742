//! The anti-cache's pool of block buffers ([`BufPool`]); the buffers themselves
//! ([`AlignedBuf`]) are the I/O seam's (`permafrost_io::aligned`). Steady traffic reuses
//! buffers through the pool, whose idle buffers are accounted.

pub(crate) use permafrost_io::aligned::mapped_size;
pub use permafrost_io::aligned::{ALIGN as BUF_ALIGN, AlignedBuf};

/// Reusable buffers of one size (a block slot): eviction and fetches take buffers from it
/// and give them back, so block I/O does not churn the general allocator. At most `max`
/// idle buffers are kept.
pub struct BufPool {
    size: usize,
    max: usize,
    free: Vec<AlignedBuf>,
}

impl BufPool {
    pub fn new(size: usize, max: usize) -> BufPool {
        BufPool {
            size,
            max,
            free: Vec::new(),
        }
    }

    /// A buffer of `len` bytes: from the pool when `len` is the pool's size.
    pub fn take(&mut self, len: usize) -> AlignedBuf {
        if len == self.size
            && let Some(b) = self.free.pop()
        {
            return b;
        }
        AlignedBuf::new(len)
    }

    pub fn give(&mut self, buf: AlignedBuf) {
        if buf.len() == self.size && self.free.len() < self.max {
            self.free.push(buf);
        }
    }

    /// Gives every idle buffer back to the system; the bytes freed.
    pub fn release_idle(&mut self) -> usize {
        let freed = self.memory_bytes();
        self.free = Vec::new();
        freed
    }

    /// Bytes of idle buffers held.
    pub fn memory_bytes(&self) -> usize {
        self.free.len() * mapped_size(self.size)
    }
}
