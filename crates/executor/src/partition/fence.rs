//! Fences: a multi-partition transaction that an idle partition takes part in without its
//! thread.
//!
//! A participant of a queued multi-partition transaction normally meets it in its queue,
//! hands its store to the coordinator and waits for it back: two wake-ups of its thread,
//! which on a virtual machine cost more than the transaction's own work. When the
//! participant has handled every call and transaction ever sent to it (its queue is empty
//! and its thread is between messages), nothing it was sent must run before the new
//! transaction, so the submitter *fences* it instead of queueing there
//! ([`QueueState::fence`]): the coordinator takes the participant's token itself when it
//! reaches the transaction (partition/mp.rs), and the participant's thread, if a message
//! arrives meanwhile, handles nothing until the fence is lifted ([`QueueState::wait`]).
//!
//! Why the order stays what queueing gave:
//! - A caller's earlier call was counted as sent before it was sent, and is counted as
//!   handled only once handled; the submitter registers the fence first and then compares
//!   the two counts, so a fence is kept only when every earlier call has been handled.
//! - Anything sent after the fence was registered finds it when the partition's thread
//!   is about to handle it, and waits for the transaction: it runs after, as it would have
//!   behind it in the queue. What arrives while the fence is being registered was sent
//!   concurrently with the transaction, and either order is one a queue could have given.
//! - The participant's thread waits without its token, so the coordinator, which holds
//!   its own token and takes the others' in ascending order, never waits for a thread that
//!   waits for it.
//!
//! Only calls and multi-partition transactions are counted (`Msg::counts`): the other
//! messages (I/O completions, durability, administration) carry no caller's order.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// The order state of one partition's queue.
#[derive(Default)]
pub(crate) struct QueueState {
    /// Calls and multi-partition transactions sent to the partition's queue.
    sent: AtomicU64,
    /// Of those, the ones its thread has handled.
    handled: AtomicU64,
    /// Fences not lifted yet.
    fences: AtomicUsize,
    lock: Mutex<()>,
    lifted: Condvar,
}

impl QueueState {
    /// Counts a call or multi-partition transaction about to be sent.
    pub(crate) fn sending(&self) {
        self.sent.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts one handled by the partition's thread.
    pub(crate) fn handled(&self) {
        self.handled.fetch_add(1, Ordering::SeqCst);
    }

    /// Calls and multi-partition transactions sent and not yet handled (the one being
    /// handled included).
    pub(crate) fn pending(&self) -> u64 {
        let handled = self.handled.load(Ordering::SeqCst);
        self.sent.load(Ordering::SeqCst).saturating_sub(handled)
    }

    /// Fences the partition for a multi-partition transaction if every call and
    /// transaction sent to it has been handled; false (nothing registered) otherwise.
    pub(crate) fn fence(&self) -> bool {
        self.fences.fetch_add(1, Ordering::SeqCst);
        if self.sent.load(Ordering::SeqCst) == self.handled.load(Ordering::SeqCst) {
            return true;
        }
        self.lift();
        false
    }

    /// Whether a fence is up: the partition's thread handles nothing more until it is
    /// lifted.
    pub(crate) fn fenced(&self) -> bool {
        self.fences.load(Ordering::SeqCst) != 0
    }

    /// Lifts one fence (its transaction ran, or failed to be queued).
    pub(crate) fn lift(&self) {
        if self.fences.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.lifted.notify_all();
        }
    }

    /// Waits, without the partition's token, until no fence is up.
    pub(crate) fn wait(&self) {
        if !self.fenced() {
            return;
        }
        let mut g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        while self.fenced() {
            g = self.lifted.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}
