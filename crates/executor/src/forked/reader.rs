//! The server's side of a forked reader: the turn it holds and the frames it reads from the
//! child's pipe ([`ForkedRead`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use permafrost_sql::{MoreRows, Rows, SqlError};

use crate::reply::StopFlag;
use crate::shared::Shared;

/// The frames (docs/format.md, "Forked reader frames").
/// Bytes of rows a frame holds at most (the last row may take it past this).
pub(super) const FRAME_BYTES: usize = 256 << 10;

/// The largest frame the parent accepts: a full frame plus one row of up to 1 GiB (a row
/// holds at most `permafrost_storage::table::MAX_ROW_BYTES` of stored values, 60 MiB; a
/// computed one is bounded by the statement's memory).
pub(super) const MAX_FRAME: usize = FRAME_BYTES + (1 << 30);

pub(super) const FRAME_ROWS: u8 = 1;
pub(super) const FRAME_END: u8 = 2;
pub(super) const FRAME_ERROR: u8 = 3;
pub(super) const FRAME_CHANGES: u8 = 4;

/// How often a reader waiting for its child looks whether it was asked to stop.
pub(super) const STOP_POLL: Duration = Duration::from_millis(50);

/// Gives a forked reader's turn back when dropped.
pub(super) struct Turn(pub(super) Arc<Shared>);

impl Drop for Turn {
    fn drop(&mut self) {
        self.0.moved_running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The rest of a moved read's result: the rows its forked reader writes.
pub(crate) struct ForkedRead {
    /// The child, until it is reaped.
    pub(super) pid: Option<libc::pid_t>,
    pub(super) pipe: std::fs::File,
    pub(super) columns: Arc<[permafrost_sql::ColumnInfo]>,
    pub(super) stop: Option<StopFlag>,
    pub(super) done: bool,
    /// The statement's row count, from End.
    pub(super) affected: u64,
    /// The child ended without its result, not killed by us; `Some(signal)` if a signal
    /// ended it (SIGABRT: it ran out of the memory it may map, `child::limit_memory`;
    /// SIGKILL: the kernel killed it, short of memory).
    pub(super) died: Option<Option<i32>>,
    /// The memory one statement may hold (`work_mem`), for the error of a child that
    /// ran out of it.
    pub(super) limit: usize,
    /// The counters of the first partition whose evicted tuples the reader may read (the
    /// tuples End says it read).
    pub(super) counted_at: Option<Arc<crate::counters::PartitionStats>>,
    /// The scan holds of the partitions whose blocks it reads.
    pub(super) _holds: crate::scan::ScanHolds,
    pub(super) _turn: Turn,
}

impl ForkedRead {
    /// Reads exactly `buf.len()` bytes; `Ok(false)` at the end of the pipe before any.
    pub(super) fn read_exact(&mut self, buf: &mut [u8], stopped: &dyn Fn() -> bool) -> Result<bool, SqlError> {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let mut got = 0;
        while got < buf.len() {
            if stopped() {
                return Err(SqlError::Cancelled);
            }
            let mut pfd = libc::pollfd {
                fd: self.pipe.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: polling one descriptor we own.
            let r = unsafe { libc::poll(&mut pfd, 1, STOP_POLL.as_millis() as libc::c_int) };
            if r == 0 || (r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted) {
                continue;
            }
            match self.pipe.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => return Err(self.broken("its output ends in the middle of a frame")),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.broken(&format!("cannot read its output: {e}"))),
            }
        }
        Ok(true)
    }

    /// The error for a reader whose output cannot be used; the child is killed and reaped.
    pub(super) fn broken(&mut self, what: &str) -> SqlError {
        let status = self.reap(true);
        SqlError::relayed(
            "XX000",
            format!("the forked reader of a long query failed: {what}{status}"),
        )
    }

    /// Reaps the child (killing it first if `kill`); a description of how it ended when
    /// that was not a clean exit.
    pub(super) fn reap(&mut self, kill: bool) -> String {
        let Some(pid) = self.pid.take() else {
            return String::new();
        };
        if kill {
            // SAFETY: signalling our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let mut status = 0;
        loop {
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            if r == pid || (r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted) {
                break;
            }
        }
        let failed = libc::WIFSIGNALED(status) || (libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 0);
        if !kill && failed {
            self.died = Some(libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)));
        }
        if libc::WIFSIGNALED(status) && !kill {
            format!(" (killed by signal {})", libc::WTERMSIG(status))
        } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 0 {
            format!(" (exit status {})", libc::WEXITSTATUS(status))
        } else {
            String::new()
        }
    }

    /// The next frame's tag and payload; the child's end (after End or Error) is reaped.
    /// `stopped` is asked while it waits: then 57014.
    pub(super) fn read_frame(&mut self, stopped: &dyn Fn() -> bool) -> Result<(u8, Vec<u8>), SqlError> {
        let mut head = [0u8; 5];
        if !self.read_exact(&mut head, stopped)? {
            let status = self.reap(false);
            self.died.get_or_insert(None);
            match self.died {
                Some(Some(libc::SIGABRT)) => return Err(SqlError::OutOfWorkMem(self.limit)),
                // Killed, not by us: by the kernel, short of memory (readers go first).
                Some(Some(libc::SIGKILL)) => {
                    return Err(SqlError::relayed(
                        "53200",
                        "out of memory: the kernel killed the forked reader of a long query, which needed more memory than the system had left".into(),
                    ));
                }
                _ => {}
            }
            return Err(SqlError::relayed(
                "XX000",
                format!("the forked reader of a long query ended without its result{status}"),
            ));
        }
        let len = u32::from_le_bytes(head[1..].try_into().expect("4 bytes")) as usize;
        if len > MAX_FRAME {
            return Err(self.broken("a frame is too long"));
        }
        let mut payload = vec![0u8; len];
        if !self.read_exact(&mut payload, stopped)? {
            return Err(self.broken("its output ends in the middle of a frame"));
        }
        Ok((head[0], payload))
    }

    /// What a Rows, End or Error frame says: rows, the end (with the row count), or the
    /// child's error; anything else is an error.
    pub(super) fn result_frame(&mut self, tag: u8, payload: &[u8]) -> Result<Option<Rows>, SqlError> {
        match tag {
            FRAME_ROWS => {
                let mut rows = Rows::with_capacity(self.columns.clone(), payload.len());
                let mut p = payload;
                while !p.is_empty() {
                    let row = p
                        .get(..4)
                        .map(|n| u32::from_le_bytes(n.try_into().expect("4 bytes")) as usize)
                        .and_then(|n| p.get(4..4 + n));
                    match row {
                        Some(row) if rows.push_encoded_row(row) => p = &p[4 + row.len()..],
                        _ => return Err(self.broken("a row is malformed")),
                    }
                }
                Ok(Some(rows))
            }
            FRAME_END if payload.len() == 16 => {
                self.done = true;
                let word = |i: usize| u64::from_le_bytes(payload[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
                self.affected = word(0);
                if let Some(stats) = &self.counted_at {
                    stats.moved_reads_in_place.fetch_add(word(1), Ordering::Relaxed);
                }
                let status = self.reap(false);
                if !status.is_empty() {
                    return Err(SqlError::relayed(
                        "XX000",
                        format!("the forked reader of a long query failed{status}"),
                    ));
                }
                Ok(None)
            }
            FRAME_ERROR if payload.len() >= 5 => {
                self.done = true;
                self.reap(false);
                let code = String::from_utf8_lossy(&payload[..5]).into_owned();
                let message = String::from_utf8_lossy(&payload[5..]).into_owned();
                Err(SqlError::relayed(&code, message))
            }
            _ => Err(self.broken("a frame has an unknown tag")),
        }
    }

    pub(super) fn next_frame(&mut self) -> Result<Option<Rows>, SqlError> {
        let stop = self.stop.clone();
        let stopped = move || stop.as_ref().is_some_and(StopFlag::is_set);
        let (tag, payload) = self.read_frame(&stopped)?;
        self.result_frame(tag, &payload)
    }
}

impl MoreRows for ForkedRead {
    fn next_rows(&mut self) -> Result<Option<Rows>, SqlError> {
        if self.done {
            return Ok(None);
        }
        let r = self.next_frame();
        if r.is_err() {
            self.done = true;
            self.reap(true);
        }
        r
    }
}

impl Drop for ForkedRead {
    fn drop(&mut self) {
        // A reader dropped before its end (a cancel, a client that went away) is killed.
        self.reap(true);
    }
}
