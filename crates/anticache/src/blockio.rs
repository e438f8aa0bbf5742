//! Block I/O off the partition threads (with abort-and-restart no
//! partition thread waits on a disk read; and, as in DeBrabant et al. 2013 §5.6, eviction writes
//! go to disk asynchronously once the blocks are built).
//!
//! One I/O thread serves every partition through io_uring, keeping up to `depth`
//! operations in flight so the device sees a deep queue. Where io_uring is unavailable (old
//! kernels, seccomp filters) or a file has no descriptor (tests), a small pool of threads
//! does blocking I/O instead. Each request carries its completion callback; the executor's
//! callbacks post results to the requesting partition's queue.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use crate::buf::AlignedBuf;
use crate::file::BlockFile;

/// Called with the outcome of a read.
pub type ReadDone = Arc<dyn Fn(u32, io::Result<AlignedBuf>) + Send + Sync>;
/// Called with the outcome of a write (the blocks it carried).
pub type WriteDone = Arc<dyn Fn(Vec<u32>, io::Result<()>) + Send + Sync>;

/// One block read into `buf` (whose length is the read's length).
pub struct ReadRequest {
    pub file: Arc<dyn BlockFile>,
    pub block: u32,
    pub offset: u64,
    pub buf: AlignedBuf,
    pub done: ReadDone,
}

/// Consecutive blocks written with one call.
pub struct WriteRequest {
    pub file: Arc<dyn BlockFile>,
    pub offset: u64,
    /// The blocks, in order; shared with the partition, which serves reads from them until
    /// the write completes.
    pub blocks: Vec<(u32, Arc<AlignedBuf>)>,
    pub done: WriteDone,
}

enum Job {
    Read(ReadRequest),
    Write(WriteRequest),
    Stop,
}

impl Job {
    fn fd(&self) -> Option<i32> {
        match self {
            Job::Read(r) => r.file.raw_fd(),
            Job::Write(w) => w.file.raw_fd(),
            Job::Stop => None,
        }
    }
}

/// The shared block I/O thread(s).
pub struct BlockIo {
    uring_tx: Option<Sender<Job>>,
    pool_tx: Sender<Job>,
    threads: Vec<JoinHandle<()>>,
    pool_size: usize,
    backend: &'static str,
}

impl BlockIo {
    /// Starts the I/O threads. `depth` bounds the operations in flight through io_uring.
    pub fn start(depth: u32) -> BlockIo {
        BlockIo::start_with_stack(depth, 2 << 20)
    }

    /// [`BlockIo::start`] with threads of `stack` bytes of stack: the completion callbacks
    /// run on them, and the executor's may run transactions there.
    pub fn start_with_stack(depth: u32, stack: usize) -> BlockIo {
        let mut threads = Vec::new();
        let (pool_tx, pool_rx) = crossbeam_channel::unbounded::<Job>();
        let pool_size = 4;
        for i in 0..pool_size {
            let rx = pool_rx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("blockio-pool-{i}"))
                    .stack_size(stack)
                    .spawn(move || pool_loop(rx))
                    .expect("spawn block I/O thread"),
            );
        }
        let mut uring_tx = None;
        let mut backend = "thread-pool";
        if let Ok(ring) = io_uring::IoUring::new(depth.next_power_of_two().max(8)) {
            let (tx, rx) = crossbeam_channel::unbounded::<Job>();
            let fallback = pool_tx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("blockio-uring".into())
                    .stack_size(stack)
                    .spawn(move || uring_loop(ring, depth as usize, rx, fallback))
                    .expect("spawn block I/O thread"),
            );
            uring_tx = Some(tx);
            backend = "io_uring";
        }
        BlockIo {
            uring_tx,
            pool_tx,
            threads,
            pool_size,
            backend,
        }
    }

    /// "io_uring" or "thread-pool".
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    fn submit(&self, job: Job) {
        let job = match &self.uring_tx {
            Some(tx) if job.fd().is_some() => match tx.send(job) {
                Ok(()) => return,
                Err(e) => e.0,
            },
            _ => job,
        };
        if let Err(e) = self.pool_tx.send(job) {
            fail(e.0, io::Error::other("block I/O stopped"));
        }
    }

    pub fn read(&self, r: ReadRequest) {
        self.submit(Job::Read(r));
    }

    pub fn write(&self, w: WriteRequest) {
        self.submit(Job::Write(w));
    }
}

fn fail(job: Job, e: io::Error) {
    match job {
        Job::Read(r) => (r.done)(r.block, Err(e)),
        Job::Write(w) => (w.done)(w.blocks.into_iter().map(|b| b.0).collect(), Err(e)),
        Job::Stop => {}
    }
}

impl Drop for BlockIo {
    fn drop(&mut self) {
        if let Some(tx) = &self.uring_tx {
            let _ = tx.send(Job::Stop);
        }
        for _ in 0..self.pool_size {
            let _ = self.pool_tx.send(Job::Stop);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn blocking(job: Job) {
    match job {
        Job::Read(r) => {
            let ReadRequest {
                file,
                block,
                offset,
                mut buf,
                done,
            } = r;
            let res = file.read_at(&mut buf, offset).map(|_| buf);
            done(block, res);
        }
        Job::Write(w) => {
            let bufs: Vec<&[u8]> = w.blocks.iter().map(|b| &b.1[..]).collect();
            let res = w.file.write_at(&bufs, w.offset);
            (w.done)(w.blocks.iter().map(|b| b.0).collect(), res);
        }
        Job::Stop => {}
    }
}

fn pool_loop(rx: Receiver<Job>) {
    while let Ok(job) = rx.recv() {
        if matches!(job, Job::Stop) {
            break;
        }
        blocking(job);
    }
}

/// An operation in flight: the job keeps its buffers alive; `iov` backs a vectored write.
struct InFlight {
    job: Job,
    iov: Vec<libc::iovec>,
    len: usize,
}

fn uring_loop(mut ring: io_uring::IoUring, depth: usize, rx: Receiver<Job>, fallback: Sender<Job>) {
    let mut in_flight: HashMap<u64, InFlight> = HashMap::new();
    let mut next_id = 0u64;
    let mut stopping = false;
    loop {
        // Take new jobs: wait for one only when nothing is in flight.
        while in_flight.len() < depth && !stopping {
            let job = if in_flight.is_empty() {
                match rx.recv() {
                    Ok(j) => j,
                    Err(_) => {
                        stopping = true;
                        break;
                    }
                }
            } else {
                match rx.try_recv() {
                    Ok(j) => j,
                    Err(_) => break,
                }
            };
            if matches!(job, Job::Stop) {
                stopping = true;
                break;
            }
            let Some(fd) = job.fd() else {
                let _ = fallback.send(job);
                continue;
            };
            let id = next_id;
            next_id += 1;
            let mut op = InFlight {
                job,
                iov: Vec::new(),
                len: 0,
            };
            let sqe = match &mut op.job {
                Job::Read(r) => {
                    op.len = r.buf.len();
                    io_uring::opcode::Read::new(io_uring::types::Fd(fd), r.buf.as_mut_ptr(), op.len as u32)
                        .offset(r.offset)
                        .build()
                }
                Job::Write(w) => {
                    op.iov = w
                        .blocks
                        .iter()
                        .map(|b| libc::iovec {
                            iov_base: b.1.as_ptr() as *mut _,
                            iov_len: b.1.len(),
                        })
                        .collect();
                    op.len = op.iov.iter().map(|v| v.iov_len).sum();
                    io_uring::opcode::Writev::new(io_uring::types::Fd(fd), op.iov.as_ptr(), op.iov.len() as u32)
                        .offset(w.offset)
                        .build()
                }
                Job::Stop => unreachable!("handled above"),
            }
            .user_data(id);
            // SAFETY: the buffers and the iovec array are owned by `op`, which stays in
            // `in_flight` (moving it moves only pointers to heap memory) until the completion
            // is reaped; the file (kept alive by the job's Arc) outlives the operation.
            let pushed = unsafe { ring.submission().push(&sqe).is_ok() };
            if !pushed {
                // Submission queue full: hand it to the pool rather than wait.
                let _ = fallback.send(op.job);
                continue;
            }
            in_flight.insert(id, op);
        }
        if in_flight.is_empty() {
            if stopping {
                return;
            }
            continue;
        }
        if let Err(e) = ring.submit_and_wait(1)
            && e.kind() != io::ErrorKind::Interrupted
        {
            // The ring is broken: fail what is in flight and let the pool take over.
            for (_, op) in in_flight.drain() {
                fail(op.job, io::Error::new(e.kind(), e.to_string()));
            }
            while let Ok(j) = rx.try_recv() {
                let _ = fallback.send(j);
            }
            return;
        }
        let done: Vec<(u64, i32)> = ring.completion().map(|c| (c.user_data(), c.result())).collect();
        for (id, res) in done {
            let Some(op) = in_flight.remove(&id) else { continue };
            let outcome = if res < 0 {
                Err(io::Error::from_raw_os_error(-res))
            } else if (res as usize) < op.len {
                Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short transfer"))
            } else {
                Ok(())
            };
            match op.job {
                Job::Read(r) => (r.done)(r.block, outcome.map(|_| r.buf)),
                Job::Write(w) => (w.done)(w.blocks.iter().map(|b| b.0).collect(), outcome),
                Job::Stop => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::{DiskFile, MemFile};

    fn check(file: Arc<dyn BlockFile>) {
        let io = BlockIo::start(8);
        let (a, b) = (AlignedBuf::new(4096), AlignedBuf::new(4096));
        let (mut a, mut b) = (a, b);
        a.fill(7);
        b.fill(9);
        let (wtx, wrx) = crossbeam_channel::unbounded();
        io.write(WriteRequest {
            file: file.clone(),
            offset: 0,
            blocks: vec![(0, Arc::new(a)), (1, Arc::new(b))],
            done: Arc::new(move |blocks, r| {
                let _ = wtx.send((blocks, r.is_ok()));
            }),
        });
        assert_eq!(wrx.recv().unwrap(), (vec![0, 1], true));
        let (tx, rx) = crossbeam_channel::unbounded();
        for (block, offset) in [(0u32, 0u64), (1, 4096), (2, 1 << 20)] {
            let tx = tx.clone();
            io.read(ReadRequest {
                file: file.clone(),
                block,
                offset,
                buf: AlignedBuf::new(4096),
                done: Arc::new(move |b, r: io::Result<AlignedBuf>| {
                    let _ = tx.send((b, r.map(|buf| buf[0])));
                }),
            });
        }
        let mut got: Vec<(u32, Option<u8>)> = (0..3).map(|_| rx.recv().unwrap()).map(|(b, r)| (b, r.ok())).collect();
        got.sort();
        assert_eq!(
            got,
            vec![(0, Some(7)), (1, Some(9)), (2, None)],
            "past the end is an error"
        );
    }

    #[test]
    fn reads_and_writes_through_io_uring_or_the_pool() {
        let dir = tempfile::tempdir().unwrap();
        check(Arc::new(DiskFile::create(&dir.path().join("b")).unwrap()));
        check(Arc::new(MemFile::default()));
    }
}
