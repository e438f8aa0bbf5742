//! Pipelined calls from one thread ([`Session`]): many calls in flight, sent to their
//! partitions in batches, their completions collected by token.

use std::sync::Arc;

use crossbeam_channel::Receiver;
use permafrost_types::Value;

use crate::database::{Database, ProcHandle};
use crate::error::{Error, Result};
use crate::partition::msg::{Invocation, Msg};
use crate::partition::router::{Dispatch, submit};
use crate::reply::{Completion, Reply, Sink};

impl Database {
    /// A pipelining session for many calls in flight from one thread.
    pub fn session(&self) -> Session {
        let (tx, rx) = crossbeam_channel::unbounded();
        let n = self.partitions() as usize;
        Session {
            db: self.clone(),
            sink: Arc::new(Sink { tx }),
            rx,
            buffers: (0..n).map(|_| Vec::new()).collect(),
            in_flight: 0,
            batch: 64,
        }
    }
}

/// Pipelined calls from one thread: submit many, flush, collect completions by token.
pub struct Session {
    db: Database,
    sink: Arc<Sink>,
    rx: Receiver<Vec<Completion>>,
    buffers: Vec<Vec<Invocation>>,
    in_flight: usize,
    batch: usize,
}

impl Session {
    /// Queues a call. It is sent when its partition's buffer fills or at [`Session::flush`].
    pub fn submit(&mut self, h: &ProcHandle, params: Vec<Value>, token: u64) -> Result<()> {
        let reply = Reply::Batch {
            sink: self.sink.clone(),
            token,
        };
        let routed = submit(
            self.db.shared(),
            &h.proc,
            params,
            reply,
            Dispatch::Buffer(&mut self.buffers),
        )?;
        self.in_flight += 1;
        if let Some(p) = routed
            && self.buffers[p as usize].len() >= self.batch
        {
            self.flush_partition(p as usize)?;
        }
        Ok(())
    }

    fn flush_partition(&mut self, p: usize) -> Result<()> {
        let batch = std::mem::take(&mut self.buffers[p]);
        if !batch.is_empty() {
            self.db
                .shared()
                .send(p as u32, Msg::Batch(batch))
                .map_err(|_| Error::Shutdown)?;
        }
        Ok(())
    }

    /// Sends every queued call.
    pub fn flush(&mut self) -> Result<()> {
        for p in 0..self.buffers.len() {
            self.flush_partition(p)?;
        }
        Ok(())
    }

    /// Sets how many calls per partition are buffered before they are sent (default 64).
    pub fn set_batch(&mut self, n: usize) {
        self.batch = n.max(1);
    }

    /// Calls submitted and not yet collected.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Flushes, then waits for at least one completion and appends all available ones to
    /// `out`. Returns how many were appended (0 only if nothing is in flight).
    pub fn wait(&mut self, out: &mut Vec<Completion>) -> Result<usize> {
        self.flush()?;
        if self.in_flight == 0 {
            return Ok(0);
        }
        let first = self.rx.recv().map_err(|_| Error::Shutdown)?;
        let mut n = first.len();
        out.extend(first);
        while let Ok(more) = self.rx.try_recv() {
            n += more.len();
            out.extend(more);
        }
        self.in_flight -= n;
        Ok(n)
    }

    /// Appends completions that are already available, without waiting.
    pub fn poll(&mut self, out: &mut Vec<Completion>) -> usize {
        let mut n = 0;
        while let Ok(more) = self.rx.try_recv() {
            n += more.len();
            out.extend(more);
        }
        self.in_flight -= n;
        n
    }
}
