//! How the process's allocator gives memory back (part of keeping resident memory within
//! the budget, invariant 6).
//!
//! The engine's own data lives in chunks it maps itself (heaps, indexes, blocks), so the
//! allocator only holds what comes and goes: statements, result buffers, COPY batches,
//! log records. glibc's defaults keep much of that after it is freed: one arena per thread
//! that allocated (up to eight per core), each holding its freed memory, and a threshold
//! for mapping large buffers that rises with every large buffer freed, so that a COPY
//! batch of 10 MB, once freed, stays in the heap; and free pages inside a heap stay
//! resident until `malloc_trim` gives them back, which a background thread does every
//! [`TRIM_EVERY`]. Measured with a 32 MiB budget and 400,000 rows of 1 KB loaded by COPY
//! (engine memory 28 MB, nearly all of it the index entries and tombstones of evicted
//! rows): 139 MB resident with glibc's defaults, 66 MB with the settings below, 46 MB
//! after a trim; an empty server is 12 MB.

/// Arenas at most (per core, at least two): fewer arenas hold less freed memory.
const ARENAS_PER_CORE: usize = 1;
/// Allocations from this size up are mapped on their own and unmapped when freed (fixed:
/// glibc otherwise raises it as large buffers are freed).
const MMAP_THRESHOLD: i32 = 256 << 10;
/// Free memory at the top of a heap beyond which it is given back.
const TRIM_THRESHOLD: i32 = 1 << 20;

/// How often free heap pages are given back.
const TRIM_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Applies the settings above and starts the trimming thread; call first thing, before
/// other threads start.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let arenas = i32::try_from((cores * ARENAS_PER_CORE).max(2)).unwrap_or(i32::MAX);
        // SAFETY: mallopt only changes allocator parameters; called before any other
        // thread exists. A refused parameter (return value 0) leaves the default.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
        }
        let _ = std::thread::Builder::new().name("malloc-trim".into()).spawn(|| {
            loop {
                std::thread::sleep(TRIM_EVERY);
                // SAFETY: malloc_trim is thread-safe (it locks each arena in turn).
                unsafe {
                    libc::malloc_trim(0);
                }
            }
        });
    }
}
