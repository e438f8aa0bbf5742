//! A partition's ownership token ([`PartitionCell`]): whoever holds it runs inside the
//! partition, one thread at a time, and nothing inside is locked or latched.
//!
//! The partition's own thread takes the token for each pass over its queue. A caller whose
//! statement is short (a point read or write, a single-partition procedure of such
//! statements) may take the token itself when it is free, run the statement on its own
//! thread and release it ("run where it arrived"): no message to the partition thread, no
//! wake-up of it, and the answer is ready when the call returns (in sync mode, once the
//! group commit is durable, from the log writer). Otherwise the call is queued as before.
//!
//! Order and fairness:
//! - A caller runs inline only when the partition's queue is empty (so nothing sent
//!   earlier is overtaken) and when it has no statement of its own in flight (the server
//!   passes that: a pipelining connection's statements stay in order in the queue).
//! - When the partition thread wants the token (it has taken a message off its queue), it
//!   says so ([`PartitionCell::lock`]) and callers queue instead of running inline until it
//!   has had its turn, so a caller hammering one partition cannot starve the queue:
//!   multi-partition transactions, block I/O completions, eviction.
//! - Multi-partition transactions, snapshots (whose writer process must be forked by a
//!   thread that outlives it) and everything else that is not a short call stay on the
//!   partition thread.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::msg::{InlineRunner, Invocation};
use super::state::Partition;

/// A partition and its ownership token.
pub(crate) struct PartitionCell {
    part: Mutex<Option<Partition>>,
    /// The partition thread waits for the token: callers queue instead.
    wanted: AtomicBool,
    /// Threads inside the partition now: 0 or 1 (checked on every entry).
    inside: AtomicUsize,
}

/// The token, held: the partition, for one thread.
pub(crate) struct Held<'a> {
    guard: MutexGuard<'a, Option<Partition>>,
    cell: &'a PartitionCell,
}

impl PartitionCell {
    pub(crate) fn new(part: Partition) -> PartitionCell {
        PartitionCell {
            part: Mutex::new(Some(part)),
            wanted: AtomicBool::new(false),
            inside: AtomicUsize::new(0),
        }
    }

    fn enter<'a>(&'a self, guard: MutexGuard<'a, Option<Partition>>) -> Option<Held<'a>> {
        guard.as_ref()?;
        let before = self.inside.fetch_add(1, Ordering::AcqRel);
        assert_eq!(before, 0, "two threads inside one partition");
        Some(Held { guard, cell: self })
    }

    /// The partition thread's turn: waits for a caller running inline to finish. `None`
    /// once the partition has been shut down.
    pub(crate) fn lock(&self) -> Option<Held<'_>> {
        self.wanted.store(true, Ordering::Release);
        let guard = self.part.lock().unwrap_or_else(|p| p.into_inner());
        self.wanted.store(false, Ordering::Release);
        self.enter(guard)
    }

    /// A caller's try: the partition, if no one holds it and its thread does not want it.
    pub(crate) fn try_inline(&self) -> Option<Held<'_>> {
        if self.wanted.load(Ordering::Acquire) {
            return None;
        }
        let guard = match self.part.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        self.enter(guard)
    }

    /// Takes the partition out (shutdown): later tries find nothing.
    pub(crate) fn take(&self) -> Option<Partition> {
        self.part.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl InlineRunner for PartitionCell {
    fn try_run(&self, inv: Invocation) -> Result<(), Invocation> {
        let Some(mut p) = self.try_inline() else {
            return Err(inv);
        };
        if !p.replay_stall.is_empty() {
            // Recovery's replayed calls go first, in order.
            return Err(inv);
        }
        p.run_inline(inv);
        Ok(())
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.cell.inside.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Deref for Held<'_> {
    type Target = Partition;
    fn deref(&self) -> &Partition {
        self.guard.as_ref().expect("checked on entry")
    }
}

impl DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Partition {
        self.guard.as_mut().expect("checked on entry")
    }
}
