//! Memory buffers aligned for direct I/O.
//!
//! Buffers are mapped straight from the OS (page-aligned, zeroed) and unmapped when
//! dropped, rather than taken from the general allocator: block buffers come and go in
//! bursts (an eviction round's writes, a wave of fetches), and memory the allocator keeps
//! after such a burst would sit in the process's resident set outside the budget. Steady
//! traffic reuses buffers through [`BufPool`], whose idle buffers are accounted.

use std::alloc::Layout;
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
    /// A zeroed buffer of `len` bytes (at least one page is mapped).
    pub fn new(len: usize) -> AlignedBuf {
        let size = mapped_size(len);
        // SAFETY: an anonymous private mapping of non-zero size; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            std::alloc::handle_alloc_error(Layout::from_size_align(size, BUF_ALIGN).expect("valid layout"));
        }
        let ptr = NonNull::new(p.cast::<u8>()).expect("mmap never returns null on success");
        AlignedBuf { ptr, len }
    }

    /// Bytes the buffer occupies (whole pages).
    pub fn mapped_len(&self) -> usize {
        mapped_size(self.len)
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

pub(crate) fn mapped_size(len: usize) -> usize {
    len.max(1).div_ceil(BUF_ALIGN) * BUF_ALIGN
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this size and not yet unmapped.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), mapped_size(self.len)) };
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
        self.free.len() * mapped_size(self.size)
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}
