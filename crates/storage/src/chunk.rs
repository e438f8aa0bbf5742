//! Large memory chunks taken straight from the operating system.
//!
//! Tuple and string storage is carved out of anonymous memory maps rather than the general
//! allocator, for two reasons: the bytes we account are exactly the bytes the process maps
//! (page-rounded), and a chunk given back is returned to the OS at once, so resident memory
//! follows the accounting instead of the allocator's retention heuristics.
//!
//! Chunks of [`HUGE_PAGE`] bytes are aligned to it and can be advised as transparent huge
//! pages: a big table then costs one TLB entry per 2 MiB instead of 512, which matters
//! because a point lookup is two dependent random memory accesses (index bucket, tuple).

use std::ptr::NonNull;

use crate::error::{Result, StorageError};

/// The page size used for rounding chunk sizes.
pub const PAGE_SIZE: usize = 4096;
/// The huge page size (x86-64, arm64 with 4 KiB pages).
pub const HUGE_PAGE: usize = 2 << 20;

/// One anonymous mapping, exclusively owned.
pub(crate) struct Chunk {
    ptr: NonNull<u8>,
    len: usize,
    huge: bool,
}

// SAFETY: a chunk owns its mapping; nothing else points into it.
unsafe impl Send for Chunk {}
// SAFETY: shared access only hands out shared slices.
unsafe impl Sync for Chunk {}

fn map(len: usize) -> Result<*mut u8> {
    // SAFETY: an anonymous private mapping with no address hint has no preconditions.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(StorageError::Internal(format!(
            "cannot map {len} bytes of memory: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(p.cast())
}

impl Chunk {
    /// Maps `len` bytes (rounded up to whole pages) of zeroed memory.
    pub(crate) fn new(len: usize) -> Result<Chunk> {
        let len = round_to_page(len.max(1));
        let p = map(len)?;
        Ok(Chunk {
            ptr: NonNull::new(p).expect("mmap never returns null on success"),
            len,
            huge: false,
        })
    }

    /// Maps [`HUGE_PAGE`] bytes aligned to [`HUGE_PAGE`], so that the kernel can back it
    /// with one huge page once advised ([`Chunk::advise_huge`]).
    pub(crate) fn new_huge_aligned() -> Result<Chunk> {
        let over = map(2 * HUGE_PAGE)?;
        let addr = over as usize;
        let aligned = addr.next_multiple_of(HUGE_PAGE);
        let head = aligned - addr;
        let tail = 2 * HUGE_PAGE - head - HUGE_PAGE;
        // SAFETY: both ranges lie inside the mapping just made and are not used.
        unsafe {
            if head > 0 {
                libc::munmap(over.cast(), head);
            }
            if tail > 0 {
                libc::munmap((aligned + HUGE_PAGE) as *mut libc::c_void, tail);
            }
        }
        Ok(Chunk {
            ptr: NonNull::new(aligned as *mut u8).expect("non-null"),
            len: HUGE_PAGE,
            huge: false,
        })
    }

    /// Asks the kernel to back the chunk with transparent huge pages. Best effort: without
    /// THP support the chunk simply stays on small pages.
    pub(crate) fn advise_huge(&mut self) {
        if self.huge {
            return;
        }
        // SAFETY: the range is exactly our mapping.
        unsafe {
            libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_HUGEPAGE);
        }
        self.huge = true;
    }

    /// Gives back to the operating system the pages past the first `used` bytes (they
    /// read as zeros when touched again, as a new mapping's do), and takes the chunk off
    /// huge pages (else the kernel may fill them in again to make one): a chunk whose slots
    /// past `used` are free and will be handed out afresh.
    pub(crate) fn release_after(&mut self, used: usize) {
        let from = round_to_page(used);
        if from >= self.len {
            return;
        }
        // SAFETY: the range lies inside our mapping, and nothing points into it (the slots
        // there are free and handed out afresh, zeroed, when needed).
        unsafe {
            if self.huge {
                libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_NOHUGEPAGE);
            }
            libc::madvise(self.ptr.as_ptr().add(from).cast(), self.len - from, libc::MADV_DONTNEED);
        }
        self.huge = false;
    }

    pub(crate) fn is_huge(&self) -> bool {
        self.huge
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Bytes mapped (what the chunk costs when all its pages are touched).
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping this chunk owns.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

pub(crate) fn round_to_page(len: usize) -> usize {
    len.div_ceil(PAGE_SIZE) * PAGE_SIZE
}
