//! Direct I/O on Linux: opening a file around the page cache (`O_DIRECT`, with a fallback
//! where the file system refuses it), the device's alignment, switching a descriptor in and
//! out of direct mode, vectored positioned writes, and page-cache advice.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// Opens `path` for reading and writing, created if missing and truncated if `truncate`,
/// with `O_DIRECT` where the file system allows it (not tmpfs); returns the file and
/// whether it is direct.
pub fn open_direct(path: &Path, truncate: bool) -> io::Result<(File, bool)> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(truncate);
    match opts.clone().custom_flags(libc::O_DIRECT).open(path) {
        Ok(f) => Ok((f, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok((opts.open(path)?, false)),
        Err(e) => Err(e),
    }
}

/// The device's direct-I/O offset alignment (statx STATX_DIOALIGN), at least 512.
pub fn dio_alignment(file: &File) -> Option<usize> {
    // SAFETY: statx with AT_EMPTY_PATH on an open descriptor fills `stx`.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if r != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 || stx.stx_dio_offset_align == 0 {
        return None;
    }
    Some(
        (stx.stx_dio_offset_align as usize)
            .max(stx.stx_dio_mem_align as usize)
            .max(512),
    )
}

/// Sets or clears `O_DIRECT` on the file's descriptor; false if the file system refuses it.
pub fn set_direct(file: &File, on: bool) -> bool {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return false;
    }
    let flags = if on {
        flags | libc::O_DIRECT
    } else {
        flags & !libc::O_DIRECT
    };
    // SAFETY: as above.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) == 0 }
}

/// Whether the file's descriptor is direct now.
pub fn is_direct(file: &File) -> bool {
    // SAFETY: fcntl on a descriptor we own; no memory is passed.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_DIRECT != 0
}

/// Writes the buffers back to back at `offset` with `pwritev`, at most 1,024 buffers per
/// call (Linux's IOV_MAX), until all are written.
pub fn pwritev_all(file: &File, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
    let mut iov: Vec<libc::iovec> = bufs
        .iter()
        .map(|b| libc::iovec {
            iov_base: b.as_ptr() as *mut _,
            iov_len: b.len(),
        })
        .collect();
    let total: usize = bufs.iter().map(|b| b.len()).sum();
    let mut done = 0usize;
    let mut first = 0usize;
    while done < total {
        let n = iov.len() - first;
        // SAFETY: the iovecs point into live buffers for the duration of the call.
        let r = unsafe {
            libc::pwritev(
                file.as_raw_fd(),
                iov[first..].as_ptr(),
                n.min(1024) as i32,
                (offset + done as u64) as i64,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "pwritev wrote nothing"));
        }
        let mut r = r as usize;
        done += r;
        // Skip what was written.
        while r > 0 && first < iov.len() {
            if r >= iov[first].iov_len {
                r -= iov[first].iov_len;
                first += 1;
            } else {
                iov[first].iov_base = (iov[first].iov_base as usize + r) as *mut _;
                iov[first].iov_len -= r;
                r = 0;
            }
        }
    }
    Ok(())
}

/// Tells the kernel that the `len` bytes at `offset` will not be read soon, so their
/// page-cache pages can be freed. Advice only: nothing fails if it is ignored.
pub fn drop_cached(file: &File, offset: u64, len: u64) {
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return;
    };
    // SAFETY: advice on a descriptor we own; no memory is passed. Its result does not
    // matter (the pages stay cached if the kernel declines).
    unsafe { libc::posix_fadvise(file.as_raw_fd(), offset, len, libc::POSIX_FADV_DONTNEED) };
}
