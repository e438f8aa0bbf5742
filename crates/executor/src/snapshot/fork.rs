//! The snapshot writer process: forked by the coordinator while it holds every store
//! (the pause, crate::child), it writes the snapshot from its copy-on-write image and
//! reports through a pipe; the parent waits for it.

use std::time::Instant;

use permafrost_durability::snapshot::SnapshotHeader;
use permafrost_storage::PartitionStore;

use super::job::{Forked, SnapJob};
use super::write::write_snapshot;
use crate::child::{Side, fork_with_pipe};
use crate::error::{Error, Result};
use crate::shared::Shared;

/// Runs in the coordinator while it holds every store: forks the writer process, which
/// writes through the database's file system.
///
/// Its memory (the pages the server changes while it writes: the writer keeps the old
/// copies) is not counted in the budget: evicting to make room for it would change more
/// pages, each copied once more. Short of memory it is the process the kernel kills
/// first.
pub(crate) fn fork_writer(
    shared: &Shared,
    job: &SnapJob,
    sequences: &[(u32, i64)],
    cut_lsn: u64,
    stores: &[(u32, &PartitionStore)],
    barrier_started: Instant,
) -> Result<Forked> {
    let (fs, partitions) = (&*shared.fs, shared.config.partitions);
    let header = SnapshotHeader {
        epoch: job.epoch,
        cut_lsn,
        partitions,
        created_micros: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0),
        base_epoch: job.base.unwrap_or(0),
    };
    let images = job
        .images
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    let listed = images
        .iter()
        .map(|(_, i)| (i.directory.added.len() + i.directory.removed.len()) as u64)
        .sum();
    let live = images.iter().map(|(_, i)| i.live as u64).sum();
    fs.create_dir_all(&job.dir)
        .map_err(|e| Error::Internal(format!("cannot create snapshot directory {}: {e}", job.dir.display())))?;
    // SAFETY: the child only reads memory that no thread was changing at the fork (every
    // partition is stopped at the barrier; the stores are held here), writes files and
    // exits with _exit, running no destructor and touching no lock another thread may
    // have held. It dies with the server: a snapshot finished by an orphan after a new
    // server started on the same directory would name blocks that server may have reused.
    let (pid, err_fd) = match unsafe { fork_with_pipe("the snapshot writer", &[])? } {
        Side::Child(fd) => {
            // SAFETY: a process-wide call of the child. Lower priority: the partitions
            // come first.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
            // Short of memory, a snapshot fails (and is taken again later) rather than
            // the server be killed beside it.
            crate::child::expendable();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                write_snapshot(fs, &job.dir, &header, (&job.history, sequences), stores, &images)
            }));
            let (code, msg) = match r {
                Ok(Ok(())) => (0, String::new()),
                Ok(Err(e)) => (1, e.to_string()),
                Err(_) => (2, "the snapshot writer panicked".to_string()),
            };
            // SAFETY: writing a local buffer to our own pipe, then leaving without running
            // destructors (the child must not touch state it shares with the parent's
            // threads).
            unsafe {
                if !msg.is_empty() {
                    libc::write(fd, msg.as_ptr() as *const libc::c_void, msg.len());
                }
                libc::_exit(code);
            }
        }
        Side::Parent { pid, read } => (pid, read),
    };
    Ok(Forked {
        pid,
        cut_lsn,
        listed,
        live,
        err_fd,
        pause: barrier_started.elapsed(),
    })
}

/// Waits for the writer process; returns its error message on failure.
pub(super) fn wait_writer(f: &Forked) -> std::result::Result<(), String> {
    let mut msg = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        // SAFETY: reading into a local buffer from our own pipe descriptor.
        let n = unsafe { libc::read(f.err_fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n > 0 {
            msg.extend_from_slice(&buf[..n as usize]);
        } else if n == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    // SAFETY: our own pipe descriptor, read to its end above and closed once.
    unsafe { libc::close(f.err_fd) };
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(f.pid, &mut status, 0) };
        if r == f.pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(format!(
                "cannot wait for the snapshot writer: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    let text = String::from_utf8_lossy(&msg).into_owned();
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else if libc::WIFSIGNALED(status) {
        Err(format!(
            "the snapshot writer was killed by signal {}",
            libc::WTERMSIG(status)
        ))
    } else if text.is_empty() {
        Err(format!("the snapshot writer failed (status {status})"))
    } else {
        Err(text)
    }
}
