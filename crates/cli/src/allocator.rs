//! The process's allocator: jemalloc, set to give freed pages back at once (part of
//! keeping resident memory within the budget, invariant 6).
//!
//! The engine's own data lives in chunks it maps itself (heaps, indexes, blocks), so the
//! allocator only holds what comes and goes: statements, result buffers, COPY batches,
//! log records. What it costs shows in both directions, measured on 2 cores
//! (docs/results/sysbench.md, fourteenth session):
//!
//! - Speed: on sysbench `oltp_read_write` at 16 threads the server spent 9 to 11 % less
//!   CPU per transaction than with glibc's malloc (457 and 462 µs against 503 and 485 in
//!   interleaved rounds; glibc's `_int_malloc`, `_int_free`, `malloc_consolidate` and the
//!   arena locks were about 5 % of the server's samples).
//! - Memory: with a 32 MiB budget and 400,000 rows of 1 KB loaded by 40 COPYs, resident
//!   memory at its peak / after the load / 8 s later was 106 / 59 / 51 MB, against 111 /
//!   71 / 47 MB with glibc tuned for it (one arena per core, a fixed mmap threshold and a
//!   thread calling `malloc_trim` every 5 s); an empty server holds 20 MB (16 MB with
//!   glibc). Under the anti-cache (YCSB, 64 MiB budget) the peak growth was the same.
//!   jemalloc's own defaults keep freed pages for seconds (148 / 98 / 78 MB), and
//!   mimalloc kept more still (185 / 164 / 95 MB; 122 / 68 / 66 MB when told to purge at
//!   once, which cost its speed): hence [`malloc_conf`].
//!
//! `_RJEM_MALLOC_CONF` in the environment overrides [`malloc_conf`] (jemalloc's option syntax,
//! e.g. `dirty_decay_ms:1000` to trade memory for fewer `madvise` calls).

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at start-up from its `malloc_conf` (a C string; the crate's
/// build prefixes jemalloc's symbols with `_rjem_`): dirty and muzzy pages go back to the
/// system as soon as they are free, so freed batches do not stay resident.
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &[u8; 34] = b"dirty_decay_ms:0,muzzy_decay_ms:0\0";

#[cfg(test)]
mod tests {
    /// jemalloc took [`super::malloc_conf`]: a wrong symbol name would leave its defaults
    /// (freed pages kept for ten seconds) without a word.
    #[test]
    fn freed_pages_go_back_at_once() {
        for name in [c"opt.dirty_decay_ms", c"opt.muzzy_decay_ms"] {
            let mut ms: isize = -2;
            let mut len = std::mem::size_of::<isize>();
            // SAFETY: `ms` has room for the option's value (a C ssize_t) and `len` says
            // so; nothing is written to jemalloc.
            let r = unsafe {
                tikv_jemalloc_sys::mallctl(name.as_ptr(), (&raw mut ms).cast(), &mut len, std::ptr::null_mut(), 0)
            };
            assert_eq!(r, 0, "{name:?}");
            assert_eq!(ms, 0, "{name:?}");
        }
    }
}
