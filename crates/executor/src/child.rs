//! Child processes of the server (the snapshot writer, a long read's reader): forked by a
//! thread that holds the partitions the child reads, with a pipe from the child back to
//! it. A child dies with the thread that forked it (`PR_SET_PDEATHSIG`), so only threads
//! that outlive their children fork: partition threads.

use crate::error::{Error, Result};

/// Which side of [`fork_with_pipe`] a process is on.
pub(crate) enum Side {
    /// The child, with the pipe's write end (every other inherited descriptor closed).
    Child(libc::c_int),
    /// The parent, with the child's pid and the pipe's read end (its own to close).
    Parent { pid: libc::pid_t, read: libc::c_int },
}

/// Forks a child with a pipe from it to the parent. In the child it sets the death signal
/// (`SIGKILL` when the forking thread ends), leaves at once with status 3 if the parent is
/// already gone, and closes every inherited descriptor but stdio, the pipe's write end and
/// `keep` (a reader's block file, which it reads through the same descriptor). `what`
/// names the child in errors.
///
/// # Safety
/// The child shares the parent's memory image but none of its other threads: it must read
/// only memory no other thread was changing at the fork, take no lock another thread may
/// have held, and leave with `_exit`, running no destructor.
pub(crate) unsafe fn fork_with_pipe(what: &str, keep: &[libc::c_int]) -> Result<Side> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::Internal(format!(
            "cannot create a pipe for {what}: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: process-wide queries; the fork's child obeys the caller's contract.
    let parent = unsafe { libc::getpid() };
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child: process-wide calls (death signal, parent id) and closing
        // descriptors of this process only.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                libc::_exit(3);
            }
            libc::close(fds[0]);
            let mut kept = keep.to_vec();
            kept.push(fds[1]);
            close_inherited(&mut kept);
        }
        return Ok(Side::Child(fds[1]));
    }
    // SAFETY: the pipe's write end is the child's; the parent closes its copy (and both
    // ends when the fork failed).
    unsafe { libc::close(fds[1]) };
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: as above.
        unsafe { libc::close(fds[0]) };
        return Err(Error::Internal(format!("cannot fork {what}: {e}")));
    }
    Ok(Side::Parent { pid, read: fds[0] })
}

/// In a child that the server can do without (a forked reader, the snapshot writer):
/// tells the kernel to kill it first when memory runs out (`oom_score_adj` 1000), so that
/// a reader which brought evicted data back into its image, or a writer whose image the
/// server kept changing, dies alone rather than the server beside it in a memory cgroup
/// (the statement fails, the snapshot is taken again later). Best effort.
pub(crate) fn expendable() {
    let _ = std::fs::write("/proc/self/oom_score_adj", "1000");
}

/// In a child: closes every descriptor inherited from the server except stdio and `keep`
/// (its pipe, a block file it reads). A child opens what it writes by path; what it must not do is keep the
/// server's descriptors alive while it runs: a command-log lock file (its
/// `flock` belongs to the open file, which the copy shares, so a database closed and
/// reopened meanwhile would find its log still locked), client sockets the server has
/// closed (the client would not see the connection end), listening sockets.
///
/// # Safety
/// Only in the child right after `fork`: it closes descriptors that other threads of a
/// live process could be using.
unsafe fn close_inherited(keep: &mut [libc::c_int]) {
    keep.sort_unstable();
    // The ranges between the descriptors kept, from 3 up.
    let mut lo: libc::c_uint = 3;
    let mut ranges = Vec::with_capacity(keep.len() + 1);
    for &k in keep.iter() {
        let k = k.max(2) as libc::c_uint;
        if k >= lo {
            ranges.push((lo, k - 1));
            lo = k + 1;
        }
    }
    ranges.push((lo, libc::c_uint::MAX));
    for (lo, hi) in ranges {
        if lo > hi {
            continue;
        }
        // SAFETY: closing descriptors of this (child) process only.
        let r = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0) };
        if r != 0 {
            // Kernels before 5.9: one by one, up to the descriptor limit.
            // SAFETY: a read-only query of a limit.
            let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
            let max = if max > 0 { max as libc::c_uint } else { 1 << 16 };
            for fd in lo..=hi.min(max) {
                // SAFETY: as above.
                unsafe { libc::close(fd as libc::c_int) };
            }
        }
    }
}

/// In the child: lets it map at most `work_mem` (and 64 MiB for its frames) beyond what
/// the image has mapped, so that a statement that needs more dies alone (its allocation
/// fails: it aborts), and makes it the first the kernel kills when memory runs out (never
/// the server: [`expendable`]). A write then runs again in place; a read gets 54000.
pub(crate) fn limit_memory(work_mem: usize) {
    expendable();
    let mapped = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()));
    // SAFETY: a read-only query of the page size.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let (Some(pages), true) = (mapped, page > 0) else {
        return;
    };
    let cap = pages * page as u64 + work_mem as u64 + (64 << 20);
    let lim = libc::rlimit {
        rlim_cur: cap,
        rlim_max: cap,
    };
    // SAFETY: sets this (child) process's own limit from a valid struct.
    unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) };
}
