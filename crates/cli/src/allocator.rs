//! The process's allocator: jemalloc, with freed pages given back in bulk off the hot path
//! (part of keeping resident memory within the budget, invariant 6).
//!
//! The engine's own data lives in chunks it maps itself (heaps, indexes, blocks), so the
//! allocator only holds what comes and goes: statements, result buffers, COPY batches,
//! log records. Two costs pull against each other:
//!
//! - Handing freed pages back at once (`dirty_decay_ms:0`, the setting before the
//!   sixteenth session) keeps resident memory closest to what is live, but every free that
//!   empties a page calls `madvise` on the thread that freed it, and the next allocation
//!   faults the page in again and has it cleared: the embedded YCSB
//!   (`bench ycsb --records 500000 --mix read-heavy --skew 0.99 --partitions 2`) ran at
//!   less than half its speed (about 0.3–0.5 M txn/s against 0.9–1.2 M), with the time in
//!   page clearing and TLB-shootdown interrupts; the server's point selects lost about
//!   10 %.
//! - jemalloc's own default (pages kept for ten seconds) is fast, but a load that frees
//!   much at once (a COPY's batches, their log records) keeps what it freed resident for
//!   seconds, past the budget's bound.
//!
//! So: jemalloc's background threads give dirty pages back over about a second
//! ([`malloc_conf`]: `background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0`), off the
//! threads that run transactions, and [`start_purger`]'s thread bounds what may wait for
//! that: every [`PURGE_INTERVAL`] it reads how many dirty pages the arenas hold and purges
//! them all once they pass [`MAX_DIRTY`]. Steady work reuses its pages from the arenas and
//! rarely reaches that bound; a burst of frees is given back within milliseconds. Figures
//! (interleaved rounds, the COPY scenario of README's "Memory budget") are in
//! docs/results/memory.md.
//!
//! `_RJEM_MALLOC_CONF` in the environment overrides [`malloc_conf`] (jemalloc's option syntax).

use std::time::Duration;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at start-up from its `malloc_conf` (a C string; the crate's
/// build prefixes jemalloc's symbols with `_rjem_`): background threads purge dirty pages
/// over about a second, muzzy (lazily freed) pages are not kept.
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &[u8; 60] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

/// How often [`start_purger`]'s thread looks at the arenas' dirty pages.
pub const PURGE_INTERVAL: Duration = Duration::from_millis(10);

/// Dirty pages (bytes) past which [`start_purger`]'s thread gives them all back.
pub const MAX_DIRTY: usize = 8 << 20;

/// Starts the thread that bounds the dirty pages the arenas keep (see the module
/// documentation). Called once, when the process starts.
pub fn start_purger() {
    let spawned = std::thread::Builder::new().name("allocator-purge".into()).spawn(|| {
        loop {
            std::thread::sleep(PURGE_INTERVAL);
            if dirty_bytes().is_some_and(|d| d > MAX_DIRTY) {
                purge();
            }
        }
    });
    if let Err(e) = spawned {
        eprintln!(
            "warning: the allocator's purging thread did not start ({e}): freed memory is given back over a second"
        );
    }
}

/// The unused dirty pages all arenas hold, in bytes, as of now; `None` if jemalloc does
/// not say.
pub fn dirty_bytes() -> Option<usize> {
    let mut epoch: u64 = 1;
    let mut epoch_len = std::mem::size_of::<u64>();
    let mut pages: usize = 0;
    let mut pages_len = std::mem::size_of::<usize>();
    // SAFETY: writing `epoch` (a u64, as `epoch_len` says) refreshes jemalloc's figures and
    // reads the epoch back into it; `stats.arenas.<MALLCTL_ARENAS_ALL>.pdirty` writes a
    // size_t into `pages`, as `pages_len` says.
    let r = unsafe {
        tikv_jemalloc_sys::mallctl(
            c"epoch".as_ptr(),
            (&raw mut epoch).cast(),
            &mut epoch_len,
            (&raw mut epoch).cast(),
            std::mem::size_of::<u64>(),
        );
        tikv_jemalloc_sys::mallctl(
            c"stats.arenas.4096.pdirty".as_ptr(),
            (&raw mut pages).cast(),
            &mut pages_len,
            std::ptr::null_mut(),
            0,
        )
    };
    (r == 0).then(|| pages * page_size())
}

/// Gives every arena's unused dirty pages back to the system now.
pub fn purge() {
    // SAFETY: `arena.<MALLCTL_ARENAS_ALL>.purge` reads and writes nothing.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"arena.4096.purge".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}

/// jemalloc's page size.
fn page_size() -> usize {
    let mut size: usize = 4096;
    let mut len = std::mem::size_of::<usize>();
    // SAFETY: `arenas.page` writes a size_t into `size`, as `len` says.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"arenas.page".as_ptr(),
            (&raw mut size).cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        );
    }
    size
}

#[cfg(test)]
mod tests {
    fn opt<T: Default>(name: &std::ffi::CStr) -> T {
        let mut v = T::default();
        let mut len = std::mem::size_of::<T>();
        // SAFETY: `v` has room for the option's value (`len` says how much); nothing is
        // written to jemalloc.
        let r = unsafe {
            tikv_jemalloc_sys::mallctl(name.as_ptr(), (&raw mut v).cast(), &mut len, std::ptr::null_mut(), 0)
        };
        assert_eq!(r, 0, "{name:?}");
        v
    }

    /// jemalloc took [`super::malloc_conf`]: a wrong symbol name would leave its defaults
    /// (no background threads, freed pages kept for ten seconds) without a word.
    #[test]
    fn jemalloc_took_the_options() {
        assert!(opt::<bool>(c"opt.background_thread"));
        assert_eq!(opt::<isize>(c"opt.dirty_decay_ms"), 1000);
        assert_eq!(opt::<isize>(c"opt.muzzy_decay_ms"), 0);
    }

    /// Freed pages wait as dirty pages (the decay keeps them), and a purge gives them back.
    #[test]
    fn a_purge_gives_dirty_pages_back() {
        let blocks: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 1 << 20]).collect();
        drop(std::hint::black_box(blocks));
        let before = super::dirty_bytes().expect("jemalloc reports dirty pages");
        super::purge();
        let after = super::dirty_bytes().expect("jemalloc reports dirty pages");
        assert!(after < before, "dirty before {before}, after {after}");
        assert!(after < super::MAX_DIRTY, "{after}");
    }
}
