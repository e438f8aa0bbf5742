//! Long reads moved off their partitions: a forked reader.
//!
//! A partition runs one transaction at a time, so a query that runs for seconds (a big
//! join, an aggregate over a large table) would keep every other client of its partitions
//! waiting that long. A read-only statement (one ad hoc SELECT outside a transaction block,
//! whose caller takes a streamed result) therefore gets a *read slice*
//! ([`Config::read_slice`](crate::Config::read_slice), 50 ms by default): the statement
//! looks at its deadline every [`permafrost_sql::exec::INTERRUPT_EVERY`] tuples, and once
//! it is past, it stops ([`SqlError::SliceOver`]; it changed nothing). Then, still holding
//! its partitions, the executor forks the process. The child is a copy-on-write image of
//! the partitions as they are at that point of the serial order; it runs the statement
//! again from the start over that image, to its end, and writes the rows to a pipe. The
//! parent releases the partitions at once and answers with an empty result whose rest
//! ([`ForkedRead`], a [`MoreRows`]) reads the pipe, so the rows stream to the client while
//! the partitions serve others. The read is serializable: it reads one committed state, at
//! the point where it was moved (HyPer's virtual-memory snapshots, Kemper and Neumann 2011,
//! used for one query).
//!
//! Which statements move (decided before the statement runs, `TxnInfo::read_slice`):
//! - only ad hoc single-statement SELECTs outside blocks, never a write, a procedure, a
//!   replayed call or an interactive transaction's statement (they must change, or be
//!   checked against, the live partitions);
//! - only when none of the tables the statement reads has evicted tuples at its partitions
//!   (the image cannot fetch blocks; a scan over evicted data streams anyway, scan.rs);
//! - only calls that run on a partition thread (never short calls run inline by a
//!   connection thread), so the thread that forked outlives the child, which dies with it
//!   (`PR_SET_PDEATHSIG`);
//! - at most [`MAX_FORKED_READS`] at once; past that a long read runs to its end in place.
//!
//! The child shares nothing with the parent's threads: it runs the statement on its one
//! thread with the memory limit of one statement (`work_mem`, 54000 past it), writes
//! frames and leaves with `_exit`. Its memory is the pages the parent changes while it
//! runs (copy-on-write), as for the snapshot writer. A cancel, a statement timeout or a
//! client that goes away kills it (`SIGKILL`), and the parent reaps it.
//!
//! The pipe carries frames (docs/format.md, "Forked reader frames"): a tag byte, a u32
//! length, the payload. Rows: each row's length and its values in the result buffer's
//! encoding, checked before use ([`Rows::push_encoded_row`]); End; Error: its SQLSTATE and
//! message. Anything else, or the pipe ending before End, is an error for the client.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use permafrost_sql::{MoreRows, Rows, SqlError};
use permafrost_storage::{PartitionStore, Value};

use crate::child::{Side, fork_with_pipe};
use crate::partition::txn::{TxnInfo, run_body};
use crate::procedure::{ProcError, Procedure};
use crate::reply::StopFlag;
use crate::shared::Shared;

/// Forked readers that may run at once.
pub(crate) const MAX_FORKED_READS: usize = 4;

/// Bytes of rows a frame holds at most (the last row may take it past this).
const FRAME_BYTES: usize = 256 << 10;

/// The largest frame the parent accepts: a full frame plus one row of the largest size a
/// result holds (the result buffer addresses rows with 32-bit offsets).
const MAX_FRAME: usize = FRAME_BYTES + u32::MAX as usize;

const FRAME_ROWS: u8 = 1;
const FRAME_END: u8 = 2;
const FRAME_ERROR: u8 = 3;

/// How often a reader waiting for its child looks whether it was asked to stop.
const STOP_POLL: Duration = Duration::from_millis(50);

/// Whether a statement about to run may be moved off its partitions when it runs past its
/// slice: see the module docs. `stores` are the partitions the transaction holds.
pub(crate) fn may_move(proc: &Procedure, stores: &[&mut PartitionStore]) -> bool {
    if !proc.defers_scans() || proc.short {
        return false;
    }
    let tables = proc.statements[0].tables();
    stores.iter().all(|s| {
        tables
            .iter()
            .all(|t| s.table(*t).is_none_or(|t| t.tombstones().is_empty()))
    })
}

/// Takes one of the [`MAX_FORKED_READS`] turns; false if all are taken.
pub(crate) fn take_turn(shared: &Shared) -> bool {
    shared
        .forked_reads
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < MAX_FORKED_READS).then_some(n + 1)
        })
        .is_ok()
}

/// Moves a read-only statement that ran past its slice off its partitions: forks the
/// reader (which runs it again over its image of `stores`) and returns the statement's
/// result, empty, with the reader as its rest. Call while still holding `stores`, right
/// after the statement stopped, and before anything else runs at them. The caller has
/// taken a turn ([`take_turn`]); it is given back when the reader ends.
pub(crate) fn move_off(
    shared: Arc<Shared>,
    proc: &Procedure,
    params: &[Value],
    stores: &mut [&mut PartitionStore],
    info: &TxnInfo,
    stop: Option<StopFlag>,
) -> crate::error::Result<Rows> {
    let turn = Turn(shared);
    let columns = proc.statements[0].columns().clone();
    // SAFETY: the child reads only the stores this thread holds (no other thread can
    // change them until it releases them) and the statement's own plan and parameters; it
    // takes no lock another thread may hold, writes only its pipe and leaves with _exit,
    // running no destructor.
    let (pid, read) = match unsafe { fork_with_pipe("a reader")? } {
        Side::Child(fd) => {
            let code = run_child(proc, params, stores, info, fd);
            // SAFETY: leaving without running destructors (see above).
            unsafe { libc::_exit(code) };
        }
        Side::Parent { pid, read } => (pid, read),
    };
    // SAFETY: the read end is ours alone from here.
    let pipe = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(read) };
    let mut rows = Rows::empty(columns.clone());
    rows.set_rest(Box::new(ForkedRead {
        pid: Some(pid),
        pipe,
        columns,
        stop,
        done: false,
        _turn: turn,
    }));
    Ok(rows)
}

/// In the child: runs the statement to its end over the image and writes its result to
/// `fd`. Returns the exit code.
fn run_child(
    proc: &Procedure,
    params: &[Value],
    stores: &mut [&mut PartitionStore],
    info: &TxnInfo,
    fd: libc::c_int,
) -> libc::c_int {
    let mut evicted = Vec::new();
    let info = TxnInfo {
        read_slice: None,
        sampled: false,
        defer_scans: false,
        ..info.clone()
    };
    let (result, _) = run_body(
        proc,
        params,
        stores,
        &mut evicted,
        &info,
        &permafrost_sql::exec::never_interrupted,
        None,
    );
    let result = match result {
        _ if !evicted.is_empty() => Err(("XX000", "a moved read reached evicted data".to_string())),
        Ok(Ok(rows)) => Ok(rows),
        Ok(Err(ProcError::Sql(e))) => Err((e.sqlstate(), e.to_string())),
        Ok(Err(ProcError::Abort(m))) => Err(("P0001", m)),
        Err(_) => Err(("XX000", "the forked reader panicked".to_string())),
    };
    let ok = match result {
        Ok(rows) => write_rows(fd, &rows),
        Err((code, message)) => {
            let mut payload = code.as_bytes().to_vec();
            payload.extend_from_slice(message.as_bytes());
            write_frame(fd, FRAME_ERROR, &payload)
        }
    };
    if ok { 0 } else { 1 }
}

/// Writes `rows` as Rows frames, then End.
fn write_rows(fd: libc::c_int, rows: &Rows) -> bool {
    let mut frame = Vec::with_capacity(FRAME_BYTES + 1024);
    for i in 0..rows.len() {
        let row = rows.encoded_row(i);
        frame.extend_from_slice(&(row.len() as u32).to_le_bytes());
        frame.extend_from_slice(row);
        if frame.len() >= FRAME_BYTES {
            if !write_frame(fd, FRAME_ROWS, &frame) {
                return false;
            }
            frame.clear();
        }
    }
    if !frame.is_empty() && !write_frame(fd, FRAME_ROWS, &frame) {
        return false;
    }
    write_frame(fd, FRAME_END, &rows.affected.to_le_bytes())
}

fn write_frame(fd: libc::c_int, tag: u8, payload: &[u8]) -> bool {
    let Ok(len) = u32::try_from(payload.len()) else {
        return false;
    };
    let mut head = [0u8; 5];
    head[0] = tag;
    head[1..].copy_from_slice(&len.to_le_bytes());
    write_all(fd, &head) && write_all(fd, payload)
}

fn write_all(fd: libc::c_int, mut b: &[u8]) -> bool {
    while !b.is_empty() {
        // SAFETY: writing a live buffer to our own descriptor.
        let n = unsafe { libc::write(fd, b.as_ptr() as *const libc::c_void, b.len()) };
        if n > 0 {
            b = &b[n as usize..];
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        } else {
            // The reader went away (EPIPE): nobody waits for the rows.
            return false;
        }
    }
    true
}

/// Gives a forked reader's turn back when dropped.
struct Turn(Arc<Shared>);

impl Drop for Turn {
    fn drop(&mut self) {
        self.0.forked_reads.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The rest of a moved read's result: the rows its forked reader writes.
pub(crate) struct ForkedRead {
    /// The child, until it is reaped.
    pid: Option<libc::pid_t>,
    pipe: std::fs::File,
    columns: Arc<[permafrost_sql::ColumnInfo]>,
    stop: Option<StopFlag>,
    done: bool,
    _turn: Turn,
}

impl ForkedRead {
    /// Reads exactly `buf.len()` bytes; `Ok(false)` at the end of the pipe before any.
    fn read_exact(&mut self, buf: &mut [u8]) -> Result<bool, SqlError> {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let mut got = 0;
        while got < buf.len() {
            if self.stop.as_ref().is_some_and(StopFlag::is_set) {
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
    fn broken(&mut self, what: &str) -> SqlError {
        let status = self.reap(true);
        SqlError::relayed(
            "XX000",
            format!("the forked reader of a long query failed: {what}{status}"),
        )
    }

    /// Reaps the child (killing it first if `kill`); a description of how it ended when
    /// that was not a clean exit.
    fn reap(&mut self, kill: bool) -> String {
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
        if libc::WIFSIGNALED(status) && !kill {
            format!(" (killed by signal {})", libc::WTERMSIG(status))
        } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 0 {
            format!(" (exit status {})", libc::WEXITSTATUS(status))
        } else {
            String::new()
        }
    }

    fn next_frame(&mut self) -> Result<Option<Rows>, SqlError> {
        let mut head = [0u8; 5];
        if !self.read_exact(&mut head)? {
            let status = self.reap(false);
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
        if !self.read_exact(&mut payload)? {
            return Err(self.broken("its output ends in the middle of a frame"));
        }
        match head[0] {
            FRAME_ROWS => {
                let mut rows = Rows::with_capacity(self.columns.clone(), len);
                let mut p = &payload[..];
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
            FRAME_END if len == 8 => {
                self.done = true;
                let status = self.reap(false);
                if !status.is_empty() {
                    return Err(SqlError::relayed(
                        "XX000",
                        format!("the forked reader of a long query failed{status}"),
                    ));
                }
                Ok(None)
            }
            FRAME_ERROR if len >= 5 => {
                self.done = true;
                self.reap(false);
                let code = String::from_utf8_lossy(&payload[..5]).into_owned();
                let message = String::from_utf8_lossy(&payload[5..]).into_owned();
                Err(SqlError::relayed(&code, message))
            }
            _ => Err(self.broken("a frame has an unknown tag")),
        }
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
