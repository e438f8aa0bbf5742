//! How results get back to callers.
//!
//! A synchronous or `async` call waits on a one-shot channel. A pipelining [`crate::Session`]
//! instead gives each call a token and a shared sink; a partition collects the completions
//! for one sink while it works through a batch of messages and hands them over in one
//! channel send, so a client with thousands of calls in flight pays for a handful of
//! wake-ups per batch rather than one per call.

use std::sync::Arc;

use crossbeam_channel::Sender;
use permafrost_sql::Rows;
use permafrost_sql::exec::sequences::SessionSequences;
use permafrost_types::zone::Zone;

use crate::error::Result;

/// The outcome of one call submitted through a session.
#[derive(Debug)]
pub struct Completion {
    pub token: u64,
    pub result: Result<Rows>,
}

/// Where a session's completions go.
pub(crate) struct Sink {
    pub(crate) tx: Sender<Vec<Completion>>,
}

pub(crate) enum Reply {
    Oneshot(tokio::sync::oneshot::Sender<Result<Rows>>),
    /// A one-shot answer whose caller may ask the statement to stop ([`StopFlag`]).
    Stoppable(tokio::sync::oneshot::Sender<Result<Rows>>, StopFlag),
    Batch {
        sink: Arc<Sink>,
        token: u64,
    },
    /// Nobody waits (internal work).
    None,
}

impl Reply {
    /// Whether nobody waits for this answer any more (the one-shot receiver was dropped:
    /// the client cancelled, timed out or went away); the transaction may stop.
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Reply::Oneshot(s) => s.is_closed(),
            Reply::Stoppable(s, stop) => s.is_closed() || stop.is_set(),
            _ => false,
        }
    }

    /// Whether the caller takes a result whose rest follows it ([`permafrost_sql::Rows::take_rest`]):
    /// one-shot callers do (the database's futures, the server); batched sessions do not.
    pub(crate) fn takes_rest(&self) -> bool {
        matches!(self, Reply::Oneshot(_) | Reply::Stoppable(..))
    }

    /// Whether the caller's interactive transaction checks this answer again at COMMIT
    /// ([`StopFlag::in_block`]): a read answers at once, without waiting for the log.
    pub(crate) fn is_in_block(&self) -> bool {
        matches!(self, Reply::Stoppable(_, stop) if stop.is_in_block())
    }

    /// The `work_mem` the caller set for the statement ([`StopFlag::with_work_mem`]).
    pub(crate) fn work_mem(&self) -> Option<usize> {
        match self {
            Reply::Stoppable(_, stop) => stop.work_mem,
            _ => None,
        }
    }

    /// The session whose sequence values the statement reads and notes
    /// ([`StopFlag::with_sequences`]).
    pub(crate) fn session_sequences(&self) -> Option<Arc<SessionSequences>> {
        match self {
            Reply::Stoppable(_, stop) => stop.sequences.clone(),
            _ => None,
        }
    }

    /// The session TimeZone the statement runs in ([`StopFlag::with_zone`]); `None`: UTC.
    pub(crate) fn zone(&self) -> Option<Zone> {
        match self {
            Reply::Stoppable(_, stop) => stop.zone.clone(),
            _ => None,
        }
    }

    /// The caller's stop flag, if it may ask the statement to stop.
    pub(crate) fn stop_flag(&self) -> Option<StopFlag> {
        match self {
            Reply::Stoppable(_, stop) => Some(stop.clone()),
            _ => None,
        }
    }
}

/// Set by a caller that wants its statement to stop (a cancel request, a statement
/// timeout). The statement stops at its next look ([`permafrost_sql::Env::interrupted`])
/// and its transaction rolls back; the caller still waits for the answer, so it learns
/// whether the statement had committed before it looked (then the answer is its result)
/// or stopped (57014). It also carries the caller's `work_mem` for the statement
/// ([`StopFlag::with_work_mem`]).
#[derive(Clone, Debug, Default)]
pub struct StopFlag {
    bits: Arc<std::sync::atomic::AtomicU8>,
    /// The memory the statement may hold for its intermediate rows, if the caller set it
    /// (a session's `SET work_mem`); else the server's (`partition::txn::work_mem`).
    work_mem: Option<usize>,
    /// The caller's session's sequence values (`currval()`, `lastval()`), if it has a
    /// session.
    sequences: Option<Arc<SessionSequences>>,
    /// The caller's session TimeZone, when it is not UTC (permafrost_types::zone).
    zone: Option<Zone>,
}

/// [`StopFlag`]'s bits: the caller asked the statement to stop; the statement ended and
/// its answer waits only for the command log; the caller's interactive transaction checks
/// this answer again at its COMMIT ([`StopFlag::in_block`]).
const STOP: u8 = 1;
const AWAITING_LOG: u8 = 2;
const IN_BLOCK: u8 = 4;

impl StopFlag {
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    /// The flag of a statement inside an interactive transaction (a probe, or a query
    /// before the block's first write): what it shows is checked again by the block's
    /// COMMIT, which is answered only once the command log has made everything it read
    /// durable. So this answer need not wait for the log in sync mode, as a read outside
    /// a block does: a client may see, inside an open block, a commit that a crash would
    /// take back, but then its block never commits (docs/architecture/interactive.md, "An interactive
    /// transaction (BEGIN ... COMMIT)").
    pub fn in_block() -> StopFlag {
        StopFlag {
            bits: Arc::new(std::sync::atomic::AtomicU8::new(IN_BLOCK)),
            work_mem: None,
            sequences: None,
            zone: None,
        }
    }

    /// The flag of a statement that may hold `bytes` for its intermediate rows (sorts,
    /// hash tables, groups) before it spills them or, where it cannot, fails with 54000;
    /// `None`: the server's `work_mem`. Set before the flag is shared.
    pub fn with_work_mem(mut self, bytes: Option<usize>) -> StopFlag {
        self.work_mem = bytes;
        self
    }

    /// The flag of a statement of a session whose sequence values are `sequences`: its
    /// `currval()` and `lastval()` read them, and what it draws is noted there. Set before
    /// the flag is shared.
    pub fn with_sequences(mut self, sequences: Option<Arc<SessionSequences>>) -> StopFlag {
        self.sequences = sequences;
        self
    }

    /// The flag of a statement of a session whose TimeZone is `zone` (`None`, or UTC:
    /// UTC): the statement runs in it, and its command-log record keeps it. Set before the
    /// flag is shared.
    pub fn with_zone(mut self, zone: Option<Zone>) -> StopFlag {
        self.zone = zone.filter(|z| !z.is_utc());
        self
    }

    /// The statement's session TimeZone ([`StopFlag::with_zone`]); `None`: UTC.
    pub fn zone(&self) -> Option<&Zone> {
        self.zone.as_ref()
    }

    /// The statement's `work_mem`, if its caller set one ([`StopFlag::with_work_mem`]).
    pub fn work_mem(&self) -> Option<usize> {
        self.work_mem
    }

    /// Marks the statement as one of an interactive transaction ([`StopFlag::in_block`]).
    pub(crate) fn mark_in_block(&self) {
        self.bits.fetch_or(IN_BLOCK, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the statement belongs to an interactive transaction ([`StopFlag::in_block`]).
    pub fn is_in_block(&self) -> bool {
        self.bits.load(std::sync::atomic::Ordering::Relaxed) & IN_BLOCK != 0
    }

    /// Asks the statement to stop.
    pub fn set(&self) {
        self.bits.fetch_or(STOP, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn is_set(&self) -> bool {
        self.bits.load(std::sync::atomic::Ordering::Relaxed) & STOP != 0
    }

    /// Whether the statement has ended and its answer waits only for its command-log
    /// record to be durable (sync mode): asking it to stop would change nothing, so a
    /// caller need not watch for reasons to (the server's cancel watch arms timers).
    pub fn is_awaiting_log(&self) -> bool {
        self.bits.load(std::sync::atomic::Ordering::Acquire) & AWAITING_LOG != 0
    }

    fn awaiting_log(&self) {
        self.bits.fetch_or(AWAITING_LOG, std::sync::atomic::Ordering::Release);
    }
}

/// Room for this many completions when a pass gathers its first for a sink (fewer
/// reallocations while a busy session's batch grows).
const FIRST_BATCH: usize = 32;

/// Completions gathered during one pass over a partition's queue.
pub(crate) struct Outbox {
    pending: Vec<(Arc<Sink>, Vec<Completion>)>,
    /// Room for this many completions in a sink's first batch.
    first_batch: usize,
}

impl Default for Outbox {
    fn default() -> Self {
        Outbox::with_first_batch(FIRST_BATCH)
    }
}

impl Outbox {
    fn with_first_batch(first_batch: usize) -> Outbox {
        Outbox {
            pending: Vec::new(),
            first_batch,
        }
    }

    /// Answers `reply` now, from any thread.
    pub(crate) fn send_now(reply: Reply, result: Result<Rows>) {
        let mut o = Outbox::default();
        o.send(reply, result);
        o.flush();
    }

    pub(crate) fn send(&mut self, reply: Reply, result: Result<Rows>) {
        match reply {
            Reply::Oneshot(tx) | Reply::Stoppable(tx, _) => {
                let _ = tx.send(result);
            }
            Reply::Batch { sink, token } => {
                let c = Completion { token, result };
                match self.pending.iter_mut().find(|(s, _)| Arc::ptr_eq(s, &sink)) {
                    Some((_, v)) => v.push(c),
                    None => {
                        let mut v = Vec::with_capacity(self.first_batch);
                        v.push(c);
                        self.pending.push((sink, v));
                    }
                }
            }
            Reply::None => {}
        }
    }

    fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Completions in the largest batch gathered for one sink.
    fn largest_batch(&self) -> usize {
        self.pending.iter().map(|(_, v)| v.len()).max().unwrap_or(0)
    }

    /// Hands every gathered completion to its sink.
    pub(crate) fn flush(&mut self) {
        for (sink, batch) in self.pending.drain(..) {
            // A session that went away no longer wants its results.
            let _ = sink.tx.send(batch);
        }
    }
}

/// Answers held back until the command log has made their transactions' records durable
/// (sync mode). The partition gathers them per sink, as an [`Outbox`] does, while it runs
/// the transactions; whoever learns that the records are durable (the log's writer thread)
/// then only sends one message per sink, and the completions are freed by the sessions
/// that receive them, as in the other modes.
#[derive(Default)]
pub(crate) struct Held {
    batches: Outbox,
    oneshots: Vec<(tokio::sync::oneshot::Sender<Result<Rows>>, Result<Rows>)>,
}

/// Held batches start with room for as many completions as the largest batch of the
/// previous [`Held`], within these bounds.
const HELD_BATCH_BOUNDS: (usize, usize) = (FIRST_BATCH, 1024);

impl Held {
    /// An empty `Held` to take over from `self` (whose answers are about to leave with a
    /// log chunk): its batches start as large as `self`'s largest grew. A partition
    /// gathers a chunk's answers per sink, usually a few hundred from a pipelining
    /// session; growing each batch from 32 again cost three reallocations and copies of
    /// every held answer (`Outbox::send` took 22 ns more per transaction in sync mode
    /// than in off, half of it after this change).
    pub(crate) fn successor(&self) -> Held {
        let n = self
            .batches
            .largest_batch()
            .clamp(HELD_BATCH_BOUNDS.0, HELD_BATCH_BOUNDS.1);
        Held {
            batches: Outbox::with_first_batch(n),
            oneshots: Vec::new(),
        }
    }

    pub(crate) fn hold(&mut self, reply: Reply, result: Result<Rows>) {
        match reply {
            Reply::Oneshot(tx) => self.oneshots.push((tx, result)),
            Reply::Stoppable(tx, stop) => {
                stop.awaiting_log();
                self.oneshots.push((tx, result));
            }
            batch => self.batches.send(batch, result),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.oneshots.is_empty() && self.batches.is_empty()
    }

    /// Sends every held answer.
    pub(crate) fn release(self) {
        let Held { mut batches, oneshots } = self;
        for (tx, r) in oneshots {
            let _ = tx.send(r);
        }
        batches.flush();
    }

    /// Answers every held call with `err` instead of its result (their records could not
    /// be made durable).
    pub(crate) fn fail(self, err: &crate::error::Error) {
        let Held { mut batches, oneshots } = self;
        for (tx, _) in oneshots {
            let _ = tx.send(Err(err.clone()));
        }
        for (_, completions) in &mut batches.pending {
            for c in completions {
                c.result = Err(err.clone());
            }
        }
        batches.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink() -> (Arc<Sink>, crossbeam_channel::Receiver<Vec<Completion>>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        (Arc::new(Sink { tx }), rx)
    }

    fn hold_n(h: &mut Held, sink: &Arc<Sink>, n: usize) {
        for token in 0..n as u64 {
            h.hold(
                Reply::Batch {
                    sink: sink.clone(),
                    token,
                },
                Ok(Rows::default()),
            );
        }
    }

    /// Capacity of the first batch a successor gathers.
    fn next_capacity(largest: usize, other: usize) -> usize {
        let (a, _ra) = sink();
        let (b, _rb) = sink();
        let mut h = Held::default();
        hold_n(&mut h, &a, other);
        hold_n(&mut h, &b, largest);
        let mut next = h.successor();
        hold_n(&mut next, &a, 1);
        next.batches.pending[0].1.capacity()
    }

    #[test]
    fn a_successor_starts_its_batches_as_large_as_the_largest_before_it_within_bounds() {
        assert!(next_capacity(300, 10) >= 300);
        assert!(next_capacity(300, 10) < 600, "{}", next_capacity(300, 10));
        assert!((FIRST_BATCH..2 * FIRST_BATCH).contains(&next_capacity(1, 0)));
        let top = HELD_BATCH_BOUNDS.1;
        assert!((top..2 * top).contains(&next_capacity(5000, 0)));
    }

    #[test]
    fn released_answers_reach_their_sinks_in_order_and_complete() {
        let (a, ra) = sink();
        let (b, rb) = sink();
        let mut h = Held::default();
        hold_n(&mut h, &a, 3);
        hold_n(&mut h, &b, 2);
        let next = h.successor();
        assert!(next.is_empty());
        h.release();
        let got: Vec<u64> = ra.try_recv().unwrap().iter().map(|c| c.token).collect();
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(rb.try_recv().unwrap().len(), 2);
        assert!(ra.try_recv().is_err() && rb.try_recv().is_err());
    }
}
