//! Memory buffers aligned for direct I/O, and the alignment every direct write respects.
//!
//! Buffers are mapped straight from the OS (page-aligned, zeroed) and unmapped when
//! dropped, rather than taken from the general allocator: block buffers come and go in
//! bursts (an eviction round's writes, a wave of fetches), and memory the allocator keeps
//! after such a burst would sit in the process's resident set outside the budget.

use std::alloc::Layout;
use std::ptr::NonNull;

/// Alignment of every buffer, and of the offsets and lengths of direct writes: a multiple
/// of any device's direct-I/O memory and logical block alignment in use.
pub const ALIGN: usize = 4096;

/// Bytes from `p` to the next address aligned for direct I/O (0 if `p` is aligned).
pub fn align_gap(p: *const u8) -> usize {
    (ALIGN - p.addr() % ALIGN) % ALIGN
}

/// A zeroed, `ALIGN`-aligned byte buffer of fixed length.
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
            std::alloc::handle_alloc_error(Layout::from_size_align(size, ALIGN).expect("valid layout"));
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

/// Bytes a buffer of `len` bytes occupies (whole pages).
pub fn mapped_size(len: usize) -> usize {
    len.max(1).div_ceil(ALIGN) * ALIGN
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this size and not yet unmapped.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), mapped_size(self.len)) };
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}
