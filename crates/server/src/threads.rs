//! Connection threads, one per core (`ServerOptions::io_threads`): each runs a
//! single-threaded tokio runtime that owns the connections handed to it. A connection's
//! reads, its statements (a point statement runs inline on this thread when its partition
//! is free: `Place::Here`, crates/executor/src/request.rs) and its writes stay on one thread, so an
//! ordinary client's statement costs no wake-up between threads (a multi-threaded runtime
//! moves tasks between its workers and wakes them through an eventfd). Accepted sockets
//! are dealt out in turn.
//!
//! Before a thread sleeps it watches its connections for up to `idle_poll`
//! (`ServerOptions::idle_poll`, [`IdlePoll`]): a client that answers within that time
//! finds the thread awake, and neither side pays for waking a sleeping CPU.

use std::future::Future;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::error::{Result, ServerError};

/// The running connection threads; they stop (and their connections close) when this is
/// dropped.
pub(crate) struct IoThreads {
    threads: Vec<(Handle, Arc<IdlePoll>)>,
    next: AtomicUsize,
    /// Dropped with this: each thread's runtime then returns.
    _stop: Vec<oneshot::Sender<()>>,
}

impl IoThreads {
    pub(crate) fn start(n: usize, idle_poll: Duration) -> Result<IoThreads> {
        let mut threads = Vec::with_capacity(n);
        let mut stops = Vec::with_capacity(n);
        for i in 0..n {
            let idle = Arc::new(
                IdlePoll::new(idle_poll).map_err(|e| ServerError::Threads(format!("cannot watch connections: {e}")))?,
            );
            let (handle_tx, handle_rx) = std::sync::mpsc::channel();
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            let watch = idle.clone();
            std::thread::Builder::new()
                .name(format!("permafrost-io-{i}"))
                .stack_size(permafrost_executor::limits::EXECUTION_STACK)
                .spawn(move || {
                    let built = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .on_thread_park(move || watch.before_sleep())
                        .build();
                    let rt = match built {
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
            threads.push((handle, idle));
            stops.push(stop_tx);
        }
        Ok(IoThreads {
            threads,
            next: AtomicUsize::new(0),
            _stop: stops,
        })
    }

    /// Runs `fut` (the connection of `socket`) on the next thread in turn, which watches
    /// `socket` before it sleeps.
    pub(crate) fn spawn(&self, socket: RawFd, fut: impl Future<Output = ()> + Send + 'static) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.threads.len();
        let (handle, idle) = &self.threads[i];
        idle.watch(socket);
        handle.spawn(fut);
    }
}

/// What a connection thread looks at before it sleeps: its connections' sockets (an epoll
/// set of its own, level-triggered, beside the runtime's) and tasks woken from other
/// threads (the runtime's queue of them; a partition thread's answer, for one).
///
/// Why: on a virtual machine whose idle CPUs halt at once, putting a thread to sleep and
/// waking it costs each side of a round trip several microseconds, more than a point
/// select's work. Watching for a while first is what the kernel's halt polling and
/// Seastar's idle polling do; a client that answers within the window finds the thread
/// awake. The cost is at most the window's CPU time each time the thread runs out of
/// work.
///
/// Watching only pays when the CPU would otherwise idle. When other threads (clients on
/// the same machine, say) wait for it, watching takes their time, and the scheduler shows
/// it by preempting this thread. So every [`ADAPT_EVERY`] sleeps the thread counts how
/// often it was preempted (`getrusage`, involuntary context switches) and watches over the
/// next ones only if that happened at most [`PREEMPTED_AT_MOST`] times.
pub(crate) struct IdlePoll {
    epoll: OwnedFd,
    window: Duration,
    /// Sleeps since the last count, and whether to watch until the next (touched by the
    /// connection thread only).
    sleeps: AtomicU32,
    watching: AtomicBool,
    /// Involuntary context switches of the thread at the last count.
    preempted: AtomicU64,
}

thread_local! {
    /// Statements of this thread's connections that wait for their group commit
    /// ([`AwaitingLog`]): while one does, the thread sleeps without watching, since the
    /// log's sync takes longer than a window and its answer is a wake-up anyway.
    static AWAITING_LOG: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Counts a statement that waits for its group commit on this thread while it lives. A
/// connection thread's tasks never move to another thread; on a multi-threaded runtime
/// (`io_threads` 0, no watching) the count may be off, and nothing reads it there.
pub(crate) struct AwaitingLog(());

impl AwaitingLog {
    pub(crate) fn new() -> AwaitingLog {
        AWAITING_LOG.with(|n| n.set(n.get() + 1));
        AwaitingLog(())
    }
}

impl Drop for AwaitingLog {
    fn drop(&mut self) {
        AWAITING_LOG.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// Sleeps between two counts of preemptions.
const ADAPT_EVERY: u32 = 64;
/// Preemptions over [`ADAPT_EVERY`] sleeps past which the thread stops watching.
const PREEMPTED_AT_MOST: u64 = 4;

impl IdlePoll {
    fn new(window: Duration) -> std::io::Result<IdlePoll> {
        // SAFETY: epoll_create1 takes no pointers; a valid descriptor is owned from here.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by epoll_create1 and nothing else owns it.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(IdlePoll {
            epoll,
            window,
            sleeps: AtomicU32::new(0),
            watching: AtomicBool::new(true),
            preempted: AtomicU64::new(0),
        })
    }

    /// Adds a connection's socket. It leaves the set by itself when the socket is closed;
    /// a socket that cannot be added is only not watched.
    fn watch(&self, socket: RawFd) {
        if self.window.is_zero() {
            return;
        }
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
            u64: 0,
        };
        // SAFETY: both descriptors are open (the socket's owner is the caller) and `ev`
        // is a valid event for the duration of the call.
        unsafe {
            libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, socket, &mut ev);
        }
    }

    /// Called by the runtime when it has nothing to run, before it sleeps: returns when a
    /// watched socket has bytes to read (or was closed), a task was woken from another
    /// thread, or the window has passed. The runtime then looks for its events without
    /// sleeping when one came.
    fn before_sleep(&self) {
        if self.window.is_zero() || !self.adapt() || AWAITING_LOG.with(|n| n.get()) > 0 {
            return;
        }
        let Ok(handle) = Handle::try_current() else { return };
        let metrics = handle.metrics();
        let start = Instant::now();
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }];
        loop {
            if metrics.global_queue_depth() > 0 {
                return;
            }
            // SAFETY: the epoll descriptor is open and `ev` has room for the one event
            // asked for; a timeout of 0 never blocks.
            let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), ev.as_mut_ptr(), 1, 0) };
            if n != 0 || start.elapsed() >= self.window {
                return;
            }
            std::hint::spin_loop();
        }
    }

    /// Whether to watch before this sleep: recounts the thread's preemptions every
    /// [`ADAPT_EVERY`] sleeps.
    fn adapt(&self) -> bool {
        let n = self.sleeps.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= ADAPT_EVERY {
            self.sleeps.store(0, Ordering::Relaxed);
            let now = involuntary_switches();
            let before = self.preempted.swap(now, Ordering::Relaxed);
            self.watching
                .store(now.saturating_sub(before) <= PREEMPTED_AT_MOST, Ordering::Relaxed);
        }
        self.watching.load(Ordering::Relaxed)
    }
}

/// The calling thread's involuntary context switches so far (0 when unknown).
fn involuntary_switches() -> u64 {
    // SAFETY: getrusage writes one rusage into the zeroed value it is given.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut usage) != 0 {
            return 0;
        }
        u64::try_from(usage.ru_nivcsw).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_watch_ends_when_a_socket_has_bytes_or_the_window_passes() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let short = IdlePoll::new(Duration::from_millis(100)).unwrap();
            short.watch(server.as_raw_fd());
            let t = Instant::now();
            short.before_sleep();
            assert!(
                t.elapsed() >= Duration::from_millis(100),
                "nothing to read: the whole window"
            );

            let long = IdlePoll::new(Duration::from_secs(30)).unwrap();
            long.watch(server.as_raw_fd());
            client.write_all(b"x").unwrap();
            let t = Instant::now();
            long.before_sleep();
            assert!(t.elapsed() < Duration::from_secs(30), "bytes to read end the watch");
        });
        // A task woken from another thread (a partition's answer) ends it too.
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let handle = rt.handle().clone();
        rt.block_on(async {
            let long = IdlePoll::new(Duration::from_secs(30)).unwrap();
            let waker = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                handle.spawn(async {});
            });
            let t = Instant::now();
            long.before_sleep();
            assert!(t.elapsed() < Duration::from_secs(30), "a remote wake-up ends the watch");
            waker.join().unwrap();
        });
        let off = IdlePoll::new(Duration::ZERO).unwrap();
        off.watch(server.as_raw_fd());
        let t = Instant::now();
        off.before_sleep();
        assert!(t.elapsed() < Duration::from_secs(30), "a zero window does not watch");
    }
}
