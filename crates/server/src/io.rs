//! Connection threads, one per core (`ServerOptions::io_threads`): each runs a
//! single-threaded tokio runtime that owns the connections handed to it. A connection's
//! reads, its statements (a point statement runs inline on this thread when its partition
//! is free: `Database::execute_ad_hoc_here`) and its writes stay on one thread, so an
//! ordinary client's statement costs no wake-up between threads (a multi-threaded runtime
//! moves tasks between its workers and wakes them through an eventfd). Accepted sockets
//! are dealt out in turn.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::error::{Result, ServerError};

/// The running connection threads; they stop (and their connections close) when this is
/// dropped.
pub(crate) struct IoThreads {
    handles: Vec<Handle>,
    next: AtomicUsize,
    /// Dropped with this: each thread's runtime then returns.
    _stop: Vec<oneshot::Sender<()>>,
}

impl IoThreads {
    pub(crate) fn start(n: usize) -> Result<IoThreads> {
        let mut handles = Vec::with_capacity(n);
        let mut stops = Vec::with_capacity(n);
        for i in 0..n {
            let (handle_tx, handle_rx) = std::sync::mpsc::channel();
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            std::thread::Builder::new()
                .name(format!("permafrost-io-{i}"))
                .stack_size(permafrost_executor::limits::EXECUTION_STACK)
                .spawn(move || {
                    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                        Ok(rt) => rt,
                        Err(e) => {
                            let _ = handle_tx.send(Err(e.to_string()));
                            return;
                        }
                    };
                    let _ = handle_tx.send(Ok(rt.handle().clone()));
                    rt.block_on(async {
                        let _ = stop_rx.await;
                    });
                })
                .map_err(|e| ServerError::Threads(format!("cannot start one: {e}")))?;
            let handle = handle_rx
                .recv()
                .map_err(|_| ServerError::Threads("one ended at start".into()))?
                .map_err(ServerError::Threads)?;
            handles.push(handle);
            stops.push(stop_tx);
        }
        Ok(IoThreads {
            handles,
            next: AtomicUsize::new(0),
            _stop: stops,
        })
    }

    /// Runs `fut` (a connection) on the next thread in turn.
    pub(crate) fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        self.handles[i].spawn(fut);
    }
}
