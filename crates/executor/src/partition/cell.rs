//! A partition's ownership token ([`PartitionCell`]): whoever holds it runs inside the
//! partition, one thread at a time, and nothing inside is locked or latched.
//!
//! The partition's own thread takes the token for each pass over its queue. A caller whose
//! statement is short (a point read or write, a single-partition procedure of such
//! statements) may take the token itself when it is free, run the statement on its own
//! thread and release it ("run where it arrived"): no message to the partition thread, no
//! wake-up of it, and the answer is ready when the call returns (in sync mode, once the
//! group commit is durable, from the log writer). Otherwise the call is queued as before.
//! An ad hoc statement or interactive probe or COMMIT at one partition that is not short
//! runs here too, for at most [`INLINE_SLICE`]: past it, it is rolled back and queued.
//!
//! Order and fairness:
//! - A caller runs inline only when it has no statement of its own in flight (the server
//!   passes that: a pipelining connection's statements stay in order in the queue). It
//!   does not look at the queue: what the queue holds is other callers' work, concurrent
//!   with its call, so either order is one they could have met, and the partition thread
//!   keeps its turn through the rule below. (Single-partition calls used to queue
//!   whenever the queue held anything; since one queued call keeps its partition's queue
//!   busy until the thread wakes, every call behind it then queued too, and about one in
//!   eight of sysbench `oltp_read_write`'s calls went through the partition thread. Not
//!   looking: 2,894, 2,763 and 2,593 blocks/s against 2,426, 2,359 and 2,173 in
//!   interleaved rounds, server CPU per block 426 to 483 µs against 479 to 545.)
//! - When the partition thread wants the token (it has taken a message off its queue), it
//!   says so ([`PartitionCell::lock`]) and callers queue instead of running inline until it
//!   has had its turn, so a caller hammering one partition cannot starve the queue:
//!   multi-partition transactions, block I/O completions, eviction.
//! - A caller that finds the token held by another caller's short call spins for it a
//!   little ([`SPIN_FOR`]) instead of queueing at once: with several connection threads
//!   and few partitions such collisions are common, and a queued call costs a wake-up of
//!   the partition thread and then one of the caller's thread. It spins for the
//!   partition thread's pass too, for less ([`SPIN_FOR_PASS`]), but only while that pass
//!   handles its last message (nothing queued behind it: [`QueueState::pending`]); when
//!   more is queued it queues, and that pass handles its call too. It never spins once the
//!   partition thread wants the token.
//! - A multi-partition ad hoc statement or interactive transaction (a probe, a COMMIT) of
//!   such a caller runs on its thread too when every partition it involves is free
//!   ([`run_mp`]): the caller takes their tokens in ascending order, without
//!   waiting for one while it holds another (no cycle of waits), and runs it as their
//!   coordinator would, holding them all. That makes it atomic with respect to every other
//!   transaction, which holds its partitions' tokens too, as queued multi-partition
//!   transactions do. It may hold them for [`INLINE_SLICE`]; past that it stops, is rolled
//!   back and is queued as usual, so a long one never holds up the caller's thread (and
//!   the connections it serves) for long.
//! - Snapshots (whose writer process must be forked by a thread that outlives it), schema
//!   changes, stored procedures' multi-partition calls and everything else stay on the
//!   partition thread.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use std::sync::Arc;

use super::fence::QueueState;
use super::msg::{Invocation, MpTxn, MpWork, Msg};
use super::state::Partition;
use crate::shared::Shared;

/// How long a caller waits, spinning, for another caller's short call to release the
/// token before it queues its own call instead. A point read takes a few microseconds, a
/// block's range read at one partition or its COMMIT tens; queueing costs two thread
/// wake-ups (the partition thread's, then the caller's), each tens of microseconds on a
/// virtual machine. Measured (sysbench oltp_read_write with its transactions, 16
/// threads, 2 cores, three interleaved rounds of 20 s): 40 µs against 10 µs, 2,496, 2,278
/// and 2,375 blocks/s against 2,008, 2,157 and 2,112, server CPU per block 475 to 511 µs
/// against 533 to 582; 100 µs gained nothing more; point selects and single-row updates
/// moved within the noise.
pub(crate) const SPIN_FOR: Duration = Duration::from_micros(40);

/// How long a caller waits, spinning, for the partition thread's pass to end when that
/// pass is handling its last message. Queueing instead made each message that woke the
/// partition thread gather a queue behind it: the calls that found its token held during
/// the pass queued, were answered by the pass, and woke their callers' threads (sysbench
/// `oltp_read_write` with its transactions, 16 threads: about one call per block).
/// Shorter than [`SPIN_FOR`]: the partition thread may be descheduled in its pass, and
/// then every spinner loses the whole wait. Measured in interleaved rounds against no
/// spin: `oltp_read_write` 16 threads +13 % blocks/s in two rounds, 4 threads +24 %;
/// point selects and single-row updates at 16 threads within the noise (40 µs had cost
/// point selects at 16 threads about 9 % over five rounds).
pub(crate) const SPIN_FOR_PASS: Duration = Duration::from_micros(15);

/// How long a multi-partition transaction run on its caller's thread may hold its
/// partitions: past it, it stops, is rolled back and is queued ([`run_mp`]). A range read
/// of a hundred rows or the COMMIT of a block of twenty statements takes tens to a few
/// hundred microseconds.
pub(crate) const INLINE_SLICE: Duration = Duration::from_millis(1);

/// A partition and its ownership token.
pub(crate) struct PartitionCell {
    part: Mutex<Option<Partition>>,
    /// The partition thread waits for the token: callers queue instead.
    wanted: AtomicBool,
    /// Threads inside the partition now: 0 or 1 (checked on every entry).
    inside: AtomicUsize,
    /// The holder is a caller running a short call inline (not the partition thread).
    inline_holder: AtomicBool,
    /// The partition's queue: what its thread has left to handle.
    queue: Arc<QueueState>,
}

/// The token, held: the partition, for one thread.
pub(crate) struct Held<'a> {
    guard: MutexGuard<'a, Option<Partition>>,
    cell: &'a PartitionCell,
}

impl PartitionCell {
    pub(crate) fn new(part: Partition, queue: Arc<QueueState>) -> PartitionCell {
        PartitionCell {
            part: Mutex::new(Some(part)),
            wanted: AtomicBool::new(false),
            inside: AtomicUsize::new(0),
            inline_holder: AtomicBool::new(false),
            queue,
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

    /// A caller's try: the partition, if its thread does not want it and no one holds it,
    /// or another caller holds it for a short call that ends within [`SPIN_FOR`], or its
    /// thread for the last message of a pass that ends within [`SPIN_FOR_PASS`].
    pub(crate) fn try_inline(&self) -> Option<Held<'_>> {
        let mut since = None;
        loop {
            if self.wanted.load(Ordering::Acquire) {
                return None;
            }
            if let Some(guard) = self.try_lock_now() {
                return self.enter_inline(guard);
            }
            let limit = if self.inline_holder.load(Ordering::Acquire) {
                SPIN_FOR
            } else if self.queue.pending() > 1 {
                // The partition thread's pass has more to handle after its current
                // message: join it.
                return None;
            } else {
                SPIN_FOR_PASS
            };
            let start = *since.get_or_insert_with(Instant::now);
            if start.elapsed() >= limit {
                return None;
            }
            std::hint::spin_loop();
        }
    }

    /// The token's lock if it is free now (a poisoned lock is taken too: the partition's
    /// state is kept consistent by its transactions' undo, not by the lock).
    fn try_lock_now(&self) -> Option<MutexGuard<'_, Option<Partition>>> {
        match self.part.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    fn enter_inline<'a>(&'a self, guard: MutexGuard<'a, Option<Partition>>) -> Option<Held<'a>> {
        let held = self.enter(guard)?;
        self.inline_holder.store(true, Ordering::Release);
        Some(held)
    }

    /// Handles a message about a block read (its completion) on the thread it completed
    /// on, the block I/O thread, when the partition is free: nobody holds it, its thread
    /// does not want it, no fence is up and no replayed call is held back. Gives the
    /// message back otherwise, to be queued. No spinning: that thread has other
    /// completions to reap.
    ///
    /// The merge and the restarts of the calls that waited for the block then cost no
    /// wake-up of the partition's thread (a futex wake and two context switches per miss,
    /// on a virtual machine as much as the merge itself): see docs/results/miss-path.md.
    pub(crate) fn try_handle(&self, msg: Msg) -> Result<(), Msg> {
        if self.wanted.load(Ordering::Acquire) || self.queue.fenced() {
            return Err(msg);
        }
        let Some(mut p) = self.try_lock_now().and_then(|g| self.enter(g)) else {
            return Err(msg);
        };
        if !p.replay_stall.is_empty() {
            return Err(msg);
        }
        permafrost_sql::limits::on_execution_stack(|| p.handle_on_io_thread(msg));
        Ok(())
    }

    /// Takes the partition out (shutdown): later tries find nothing.
    pub(crate) fn take(&self) -> Option<Partition> {
        self.part.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl PartitionCell {
    /// Runs a call inside the partition on the caller's thread when the partition is free;
    /// gives the call back when it is not, or when a call that is not short ran past
    /// [`INLINE_SLICE`] (then nothing of it took effect).
    // (The call given back, to be queued instead, is moved once: its size does not matter.)
    #[allow(clippy::result_large_err)]
    pub(crate) fn try_run(&self, inv: Invocation) -> Result<(), Invocation> {
        let Some(mut p) = self.try_inline() else {
            return Err(inv);
        };
        if !p.replay_stall.is_empty() {
            // Recovery's replayed calls go first, in order.
            return Err(inv);
        }
        permafrost_sql::limits::on_execution_stack(|| p.run_inline(inv))
    }
}

/// Runs a multi-partition transaction on the caller's thread when every partition it
/// involves is free, holding them all. False, to be queued, when one is not, or when it
/// ran past [`INLINE_SLICE`] (then nothing of it took effect). Only ad hoc statements and
/// interactive transactions, whose bodies let a stop past the slice through, run here.
///
/// Other multi-partition transactions queued or running do not keep it from running
/// here: those queued come after it at every partition (it holds all its partitions'
/// tokens at once), and a participant that has handed its store to a coordinator keeps
/// its token until the store is back. (A gate that kept it queued while others were, from
/// before fences, is gone: docs/results/architecture-history.md has the figures.)
pub(crate) fn run_mp(cells: &[Arc<PartitionCell>], t: &MpTxn) -> bool {
    let eligible = match &t.work {
        MpWork::Call { proc, replay, .. } => proc.adhoc && replay.is_none(),
        MpWork::Ddl { .. } | MpWork::Snapshot(_) => false,
    };
    if !eligible {
        return false;
    }
    let mut held = Vec::with_capacity(t.parts.len());
    for &p in &t.parts {
        let Some(h) = cells.get(p as usize).and_then(|c| c.try_inline()) else {
            return false;
        };
        if !h.replay_stall.is_empty() {
            // Recovery's replayed calls go first, in order.
            return false;
        }
        held.push(h);
    }
    let Some((coordinator, others)) = held.split_first_mut() else {
        return false;
    };
    permafrost_sql::limits::on_execution_stack(|| coordinator.coordinate_inline(others, t))
}

impl Shared {
    /// Keeps the partitions' tokens (once: the partition threads start once).
    pub(crate) fn set_cells(&self, cells: Vec<Arc<PartitionCell>>) {
        let _ = self.inline.set(Box::new(cells));
    }

    /// Every partition's token, whether calls may run on their callers' threads or not;
    /// none without partition threads (the step harness).
    pub(crate) fn all_cells(&self) -> &[Arc<PartitionCell>] {
        self.inline
            .get()
            .and_then(|c| c.downcast_ref::<Vec<Arc<PartitionCell>>>())
            .map_or(&[], Vec::as_slice)
    }

    /// Runs `inv` at partition `p` on this thread if the partition is free (whatever its
    /// queue holds: other callers' work, partition/cell.rs); else gives it back, to be
    /// queued. Not with the synchronous retrieval policy, whose block reads would block the
    /// caller's thread.
    // (The call given back, to be queued instead, is moved once: its size does not matter.)
    #[allow(clippy::result_large_err)]
    pub(crate) fn try_inline(&self, p: u32, inv: Invocation) -> std::result::Result<(), Invocation> {
        match self.cells().and_then(|c| c.get(p as usize)) {
            Some(c) => c.try_run(inv),
            _ => Err(inv),
        }
    }

    /// The partitions' tokens, when calls may run on their callers' threads: the
    /// partitions have threads of their own, and block reads do not block the thread that
    /// runs a transaction (not with the synchronous retrieval policy).
    pub(crate) fn cells(&self) -> Option<&[Arc<PartitionCell>]> {
        let synchronous = self
            .config
            .anticache
            .as_ref()
            .is_some_and(|a| a.retrieval == permafrost_anticache::Retrieval::Synchronous);
        self.inline.get().filter(|_| !synchronous).map(|_| self.all_cells())
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.cell.inline_holder.store(false, Ordering::Release);
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
