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
    Batch {
        sink: Arc<Sink>,
        token: u64,
    },
    /// Nobody waits (internal work).
    None,
}

/// Room for this many completions when a pass gathers its first for a sink (fewer
/// reallocations while a busy session's batch grows).
const FIRST_BATCH: usize = 32;

/// Completions gathered during one pass over a partition's queue.
#[derive(Default)]
pub(crate) struct Outbox {
    pending: Vec<(Arc<Sink>, Vec<Completion>)>,
}

impl Outbox {
    pub(crate) fn send(&mut self, reply: Reply, result: Result<Rows>) {
        match reply {
            Reply::Oneshot(tx) => {
                let _ = tx.send(result);
            }
            Reply::Batch { sink, token } => {
                let c = Completion { token, result };
                match self.pending.iter_mut().find(|(s, _)| Arc::ptr_eq(s, &sink)) {
                    Some((_, v)) => v.push(c),
                    None => {
                        let mut v = Vec::with_capacity(FIRST_BATCH);
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

impl Held {
    pub(crate) fn hold(&mut self, reply: Reply, result: Result<Rows>) {
        match reply {
            Reply::Oneshot(tx) => self.oneshots.push((tx, result)),
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
    pub(crate) fn fail(self, err: &crate::Error) {
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
