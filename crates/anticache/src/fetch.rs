//! Asynchronous block reads, off the partition threads (design.md invariant 4: with
//! abort-and-restart, no partition thread waits on a disk read).
//!
//! One fetcher thread serves every partition through io_uring, keeping up to `depth` reads
//! in flight so the device sees a deep queue. Where io_uring is unavailable (old kernels,
//! seccomp filters) or a file has no descriptor (tests), a small pool of threads does
//! blocking reads instead. Each request carries its own completion callback; the executor's
//! callback posts the block to the requesting partition's queue.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use crate::buf::AlignedBuf;
use crate::file::BlockFile;

/// Called with the outcome of a read.
pub type Done = Arc<dyn Fn(u32, io::Result<AlignedBuf>) + Send + Sync>;

/// One block read, into `buf` (whose length is the read's length).
pub struct FetchRequest {
    pub file: Arc<dyn BlockFile>,
    pub block: u32,
    pub offset: u64,
    pub buf: AlignedBuf,
    pub done: Done,
}

enum Job {
    Read(FetchRequest),
    Stop,
}

/// The shared block reader.
pub struct Fetcher {
    uring_tx: Option<Sender<Job>>,
    pool_tx: Sender<Job>,
    threads: Vec<JoinHandle<()>>,
    pool_size: usize,
    backend: &'static str,
}

impl Fetcher {
    /// Starts the reader threads. `depth` bounds the reads in flight through io_uring.
    pub fn start(depth: u32) -> Fetcher {
        let mut threads = Vec::new();
        let (pool_tx, pool_rx) = crossbeam_channel::unbounded::<Job>();
        let pool_size = 4;
        for i in 0..pool_size {
            let rx = pool_rx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("fetch-pool-{i}"))
                    .spawn(move || pool_loop(rx))
                    .expect("spawn fetch thread"),
            );
        }
        let mut uring_tx = None;
        let mut backend = "thread-pool";
        if let Ok(ring) = io_uring::IoUring::new(depth.next_power_of_two().max(8)) {
            let (tx, rx) = crossbeam_channel::unbounded::<Job>();
            let fallback = pool_tx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("fetch-uring".into())
                    .spawn(move || uring_loop(ring, depth as usize, rx, fallback))
                    .expect("spawn fetch thread"),
            );
            uring_tx = Some(tx);
            backend = "io_uring";
        }
        Fetcher {
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

    pub fn submit(&self, req: FetchRequest) {
        let job = Job::Read(req);
        let job = match (&self.uring_tx, job) {
            (Some(tx), Job::Read(r)) if r.file.raw_fd().is_some() => match tx.send(Job::Read(r)) {
                Ok(()) => return,
                Err(e) => e.0,
            },
            (_, j) => j,
        };
        if let Err(e) = self.pool_tx.send(job)
            && let Job::Read(r) = e.0
        {
            (r.done)(r.block, Err(io::Error::other("fetcher stopped")));
        }
    }
}

impl Drop for Fetcher {
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

fn blocking_read(r: FetchRequest) {
    let FetchRequest {
        file,
        block,
        offset,
        mut buf,
        done,
    } = r;
    let res = file.read_at(&mut buf, offset).map(|_| buf);
    done(block, res);
}

fn pool_loop(rx: Receiver<Job>) {
    while let Ok(job) = rx.recv() {
        match job {
            Job::Read(r) => blocking_read(r),
            Job::Stop => break,
        }
    }
}

fn uring_loop(mut ring: io_uring::IoUring, depth: usize, rx: Receiver<Job>, fallback: Sender<Job>) {
    let mut in_flight: HashMap<u64, FetchRequest> = HashMap::new();
    let mut next_id = 0u64;
    let mut stopping = false;
    loop {
        // Take new requests: wait for one only when nothing is in flight.
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
            let r = match job {
                Job::Read(r) => r,
                Job::Stop => {
                    stopping = true;
                    break;
                }
            };
            let Some(fd) = r.file.raw_fd() else {
                let _ = fallback.send(Job::Read(r));
                continue;
            };
            let mut r = r;
            let id = next_id;
            next_id += 1;
            let len = r.buf.len() as u32;
            let sqe = io_uring::opcode::Read::new(io_uring::types::Fd(fd), r.buf.as_mut_ptr(), len)
                .offset(r.offset)
                .build()
                .user_data(id);
            // SAFETY: the buffer (owned by the request) lives in `in_flight` until its
            // completion is reaped; moving the request moves only the pointer to it. The
            // file (kept alive by the request's Arc) outlives the read.
            let pushed = unsafe { ring.submission().push(&sqe).is_ok() };
            if !pushed {
                // Submission queue full: hand it to the pool rather than wait.
                let _ = fallback.send(Job::Read(r));
                continue;
            }
            in_flight.insert(id, r);
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
            for (_, r) in in_flight.drain() {
                (r.done)(r.block, Err(io::Error::new(e.kind(), e.to_string())));
            }
            while let Ok(j) = rx.try_recv() {
                let _ = fallback.send(j);
            }
            return;
        }
        let done: Vec<(u64, i32)> = ring.completion().map(|c| (c.user_data(), c.result())).collect();
        for (id, res) in done {
            let Some(r) = in_flight.remove(&id) else { continue };
            let FetchRequest { block, buf, done, .. } = r;
            let out = if res < 0 {
                Err(io::Error::from_raw_os_error(-res))
            } else if (res as usize) < buf.len() {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("short read of block {block}"),
                ))
            } else {
                Ok(buf)
            };
            done(block, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::{DiskFile, MemFile};

    fn check(file: Arc<dyn BlockFile>) {
        let (mut a, mut b) = (AlignedBuf::new(4096), AlignedBuf::new(4096));
        a.fill(7);
        b.fill(9);
        file.write_at(&[&a, &b], 0).unwrap();
        let f = Fetcher::start(8);
        let (tx, rx) = crossbeam_channel::unbounded();
        for (block, offset) in [(0u32, 0u64), (1, 4096), (2, 1 << 20)] {
            let tx = tx.clone();
            f.submit(FetchRequest {
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
    fn reads_through_io_uring_or_the_pool() {
        let dir = tempfile::tempdir().unwrap();
        check(Arc::new(DiskFile::create(&dir.path().join("b")).unwrap()));
        check(Arc::new(MemFile::default()));
    }
}
