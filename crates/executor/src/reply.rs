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
                    None => self.pending.push((sink, vec![c])),
                }
            }
            Reply::None => {}
        }
    }

    /// Hands every gathered completion to its sink.
    pub(crate) fn flush(&mut self) {
        for (sink, batch) in self.pending.drain(..) {
            // A session that went away no longer wants its results.
            let _ = sink.tx.send(batch);
        }
    }
}
