//! Memory buffers aligned for direct I/O.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

/// Alignment of every buffer: enough for any device's direct-I/O memory alignment.
pub const BUF_ALIGN: usize = 4096;

/// A zeroed, `BUF_ALIGN`-aligned byte buffer of fixed length.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer is exclusively owned.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only yields shared slices.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (at least one byte is allocated).
    pub fn new(len: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len.max(1), BUF_ALIGN).expect("valid layout");
        // SAFETY: the layout has non-zero size.
        let p = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialized bytes owned by us.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len.max(1), BUF_ALIGN).expect("valid layout");
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

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

    /// Bytes of idle buffers held.
    pub fn memory_bytes(&self) -> usize {
        self.free.len() * self.size
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}
