//! An allocator for big index structures.
//!
//! Hash index tables grow by doubling; from the general allocator, each retired table
//! would stay resident in the allocator's caches, outside the memory accounting. Tables of
//! 64 KiB and more are therefore mapped straight from the OS (and returned to it when
//! freed), tables of 2 MiB and more aligned and advised as huge pages (a lookup is a random
//! access into the table; huge pages spare it a TLB miss). Small tables use the global
//! allocator.

use std::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator, Global, Layout};

use crate::chunk::{HUGE_PAGE, PAGE_SIZE, round_to_page};

const MAP_THRESHOLD: usize = 64 << 10;

/// See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct MapAlloc;

/// A vector whose buffer, once large, lives in its own mapping: growing it returns the old
/// buffer to the OS at once instead of leaving it in the allocator's caches. For the big,
/// steadily growing arrays of bookkeeping (tombstones, the block directory).
pub type BigVec<T> = allocator_api2::vec::Vec<T, MapAlloc>;

/// An empty [`BigVec`].
pub fn big_vec<T>() -> BigVec<T> {
    allocator_api2::vec::Vec::new_in(MapAlloc)
}

fn mapped(layout: &Layout) -> bool {
    layout.size() >= MAP_THRESHOLD && layout.align() <= PAGE_SIZE
}

fn map_len(size: usize) -> usize {
    if size >= HUGE_PAGE {
        size.next_multiple_of(HUGE_PAGE)
    } else {
        round_to_page(size)
    }
}

// SAFETY: memory returned is valid for the layout until deallocated with the same layout;
// `deallocate` unmaps exactly what `allocate` mapped.
unsafe impl Allocator for MapAlloc {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if !mapped(&layout) {
            return Global.allocate(layout);
        }
        let len = map_len(layout.size());
        let align = if len >= HUGE_PAGE { HUGE_PAGE } else { PAGE_SIZE };
        let over = len + align - PAGE_SIZE;
        // SAFETY: an anonymous private mapping has no preconditions.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                over,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(AllocError);
        }
        let addr = p as usize;
        let aligned = addr.next_multiple_of(align);
        // SAFETY: unmapping the unused head and tail of our own mapping.
        unsafe {
            if aligned > addr {
                libc::munmap(p, aligned - addr);
            }
            let tail = addr + over - (aligned + len);
            if tail > 0 {
                libc::munmap((aligned + len) as *mut libc::c_void, tail);
            }
            if len >= HUGE_PAGE {
                libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            }
        }
        let ptr = NonNull::new(aligned as *mut u8).ok_or(AllocError)?;
        Ok(NonNull::slice_from_raw_parts(ptr, layout.size()))
    }

    // SAFETY (of the impl's contract): `deallocate` is called with a pointer `allocate`
    // returned for the same layout, as `Allocator` requires of its callers.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if !mapped(&layout) {
            // SAFETY: allocated by `Global` with this layout.
            return unsafe { Global.deallocate(ptr, layout) };
        }
        // SAFETY: `ptr` and the length are exactly what `allocate` kept mapped.
        unsafe {
            libc::munmap(ptr.as_ptr().cast(), map_len(layout.size()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_allocations_round_trip() {
        for size in [16usize, 100_000, 3 << 20] {
            let layout = Layout::from_size_align(size, 16).unwrap();
            let p = MapAlloc.allocate(layout).unwrap();
            // SAFETY: `size` bytes just allocated for this test.
            let bytes = unsafe { std::slice::from_raw_parts_mut(p.as_ptr() as *mut u8, size) };
            bytes.fill(0xAB);
            assert_eq!(bytes[size - 1], 0xAB);
            if size >= HUGE_PAGE {
                assert_eq!(p.as_ptr() as *mut u8 as usize % HUGE_PAGE, 0);
            }
            // SAFETY: allocated above with this layout.
            unsafe { MapAlloc.deallocate(p.cast(), layout) };
        }
    }
}
