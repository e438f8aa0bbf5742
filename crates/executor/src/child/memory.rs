//! The memory forked children hold, counted in the budget.
//!
//! A forked reader or writer (forked.rs) begins as a copy-on-write image of the server.
//! What it holds of its own is what it builds and every page the server changes while it
//! runs (the server writes a new copy; the child keeps the old one). None of that is in
//! the partitions' counts, yet a memory cgroup charges it to the server's group: TPC-C's
//! consistency checks at 8x a 256 MiB budget, in a 384 MiB cgroup, lost three forked
//! readers to the cgroup's OOM killer. So once a child is forked, a thread of its own
//! ([`watch`]) reads every living child's private memory every [`POLL`]
//! (`Private_Clean` + `Private_Dirty` in /proc/PID/smaps_rollup) and holds the sum in the
//! statement pool ([`Reservation::set_held`]): the partitions count it as they count what
//! running statements hold, and evict to make room for it; statements find that much
//! less room. A reader's private memory is mostly its own (the blocks it reads, its
//! groupings); what the server changes while it runs is counted too, and evicting for that
//! frees nothing until the child ends (so the snapshot writer, whose private memory is
//! almost all of that kind, is not counted: snapshot/fork.rs).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use permafrost_sql::workmem::{MemoryPool, Reservation};

/// How often the children's memory is read while any lives.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// The children whose memory the budget counts.
pub(crate) struct ChildMemory {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Arc<MemoryPool>,
    /// The living children, and whether the watching thread runs.
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    pids: Vec<libc::pid_t>,
    watching: bool,
    /// What the watcher holds in the pool now.
    held: usize,
}

/// A child counted until this is dropped (before the child is reaped, so that its pid
/// is never read once it may name another process).
pub(crate) struct Counted {
    inner: Arc<Inner>,
    pid: libc::pid_t,
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut s = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        s.pids.retain(|&p| p != self.pid);
    }
}

impl ChildMemory {
    pub(crate) fn new(pool: Arc<MemoryPool>) -> ChildMemory {
        ChildMemory {
            inner: Arc::new(Inner {
                pool,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Counts child `pid`'s memory from now until the guard is dropped; starts the
    /// watching thread the first time.
    pub(crate) fn count(&self, pid: libc::pid_t) -> Counted {
        let mut s = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        s.pids.push(pid);
        if !s.watching {
            let weak = Arc::downgrade(&self.inner);
            let started = std::thread::Builder::new()
                .name("permafrost-children".into())
                .spawn(move || watch(weak));
            match started {
                Ok(_) => s.watching = true,
                // Counted on the next fork; the child still runs within its own limit.
                Err(e) => eprintln!("permafrost: cannot start the thread that counts forked children's memory: {e}"),
            }
        }
        Counted {
            inner: self.inner.clone(),
            pid,
        }
    }

    /// The bytes the children held at the last reading.
    pub(crate) fn held(&self) -> usize {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner()).held
    }
}

/// Reads the children's memory every [`POLL`] and holds it in the pool, until the
/// database is gone.
fn watch(inner: Weak<Inner>) {
    let mut held = Reservation::default();
    loop {
        let Some(inner) = inner.upgrade() else { return };
        let pids = inner.state.lock().unwrap_or_else(|e| e.into_inner()).pids.clone();
        let total: usize = pids.iter().map(|&p| private_bytes(p)).sum();
        held.set_held(total, &inner.pool);
        inner.state.lock().unwrap_or_else(|e| e.into_inner()).held = total;
        drop(inner);
        std::thread::sleep(POLL);
    }
}

/// The private memory of process `pid` (0 if it cannot be read: gone, or a zombie).
fn private_bytes(pid: libc::pid_t) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .map(|t| private_in(&t))
        .unwrap_or(0)
}

/// `Private_Clean` + `Private_Dirty` of a smaps_rollup text, in bytes.
fn private_in(rollup: &str) -> usize {
    rollup
        .lines()
        .filter_map(|l| {
            l.strip_prefix("Private_Clean:")
                .or_else(|| l.strip_prefix("Private_Dirty:"))
        })
        .filter_map(|v| v.trim().strip_suffix("kB")?.trim().parse::<usize>().ok())
        .sum::<usize>()
        * 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_private_memory_from_a_rollup() {
        let t = "55a2-7ffc ---p 00000000 00:00 0 [rollup]\nRss: 1708 kB\nPss: 793 kB\n\
                 Shared_Clean: 900 kB\nPrivate_Clean: 12 kB\nPrivate_Dirty: 100 kB\nSwap: 4 kB\n";
        assert_eq!(private_in(t), 112 * 1024);
        assert_eq!(private_in("nonsense\nPrivate_Dirty: x kB\n"), 0);
    }

    #[test]
    fn a_child_that_writes_memory_is_counted_in_the_pool_until_it_is_dropped() {
        let pool = MemoryPool::new(1 << 30);
        let children = ChildMemory::new(pool.clone());
        // SAFETY: the child touches only its own fresh allocation and leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let mut v = vec![0u8; 32 << 20];
            for b in v.iter_mut().step_by(4096) {
                *b = 1;
            }
            std::hint::black_box(&v);
            // SAFETY: sleeping then leaving without destructors, in the child.
            unsafe {
                libc::sleep(30);
                libc::_exit(0)
            };
        }
        let counted = children.count(pid);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.used() < 32 << 20 && std::time::Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        let used = pool.used();
        assert_eq!(children.held(), used);
        drop(counted);
        // SAFETY: ending and reaping our own child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        assert!(
            used >= 32 << 20,
            "the pool held {used} bytes for a child that wrote 32 MiB"
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.used() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        assert_eq!(pool.used(), 0, "given back once the child is no longer counted");
    }
}
