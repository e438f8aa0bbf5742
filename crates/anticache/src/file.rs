//! The file a partition's blocks live in, behind a small trait so that tests can put
//! blocks in memory and inject faults (failed writes, full disks, corrupted reads).
//!
//! [`DiskFile`] opens the file with `O_DIRECT` so that evicted data does not sit in the
//! OS page cache (it would then still occupy memory, only outside the budget). File systems
//! without direct I/O (tmpfs) fall back to buffered I/O; [`DiskFile::direct`] says which.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Positioned I/O on one file.
pub trait BlockFile: Send + Sync {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes the buffers back to back starting at `offset`.
    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()>;
    fn sync(&self) -> io::Result<()>;
    /// The descriptor, for asynchronous reads through io_uring (None: read with `read_at`).
    fn raw_fd(&self) -> Option<RawFd>;
    fn path(&self) -> &Path;
    /// Alignment that offsets, lengths and buffers of I/O must respect.
    fn alignment(&self) -> usize;
    fn direct(&self) -> bool;
}

pub struct DiskFile {
    file: File,
    path: PathBuf,
    direct: bool,
    alignment: usize,
}

impl DiskFile {
    /// Creates (or truncates) `path` for blocks.
    pub fn create(path: &Path) -> io::Result<DiskFile> {
        DiskFile::open_with(path, true)
    }

    /// Opens `path` for blocks, keeping what it holds (created if missing): the blocks a
    /// snapshot refers to.
    pub fn open(path: &Path) -> io::Result<DiskFile> {
        DiskFile::open_with(path, false)
    }

    fn open_with(path: &Path, truncate: bool) -> io::Result<DiskFile> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create(true).truncate(truncate);
        let (file, direct) = match opts.clone().custom_flags(libc::O_DIRECT).open(path) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (opts.open(path)?, false),
            Err(e) => return Err(e),
        };
        let alignment = if direct {
            dio_alignment(&file).unwrap_or(4096)
        } else {
            1
        };
        Ok(DiskFile {
            file,
            path: path.to_path_buf(),
            direct,
            alignment,
        })
    }
}

/// The device's direct-I/O offset alignment (statx STATX_DIOALIGN), at least 512.
fn dio_alignment(file: &File) -> Option<usize> {
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

impl BlockFile for DiskFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
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
                    self.file.as_raw_fd(),
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

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn raw_fd(&self) -> Option<RawFd> {
        Some(self.file.as_raw_fd())
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn alignment(&self) -> usize {
        self.alignment
    }

    fn direct(&self) -> bool {
        self.direct
    }
}

/// Blocks kept in memory (tests).
pub struct MemFile {
    data: Mutex<Vec<u8>>,
    path: PathBuf,
}

impl Default for MemFile {
    fn default() -> Self {
        MemFile {
            data: Mutex::new(Vec::new()),
            path: PathBuf::from("<memory>"),
        }
    }
}

impl MemFile {
    /// Changes one stored byte (corruption tests).
    pub fn flip_byte(&self, offset: u64) {
        let mut d = self.data.lock().expect("not poisoned");
        if let Some(b) = d.get_mut(offset as usize) {
            *b ^= 0x5A;
        }
    }
}

impl BlockFile for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let d = self.data.lock().map_err(|_| io::Error::other("poisoned"))?;
        let src = d
            .get(offset as usize..offset as usize + buf.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past end"))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        let mut d = self.data.lock().map_err(|_| io::Error::other("poisoned"))?;
        let mut at = offset as usize;
        for b in bufs {
            if d.len() < at + b.len() {
                d.resize(at + b.len(), 0);
            }
            d[at..at + b.len()].copy_from_slice(b);
            at += b.len();
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn raw_fd(&self) -> Option<RawFd> {
        None
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn alignment(&self) -> usize {
        512
    }

    fn direct(&self) -> bool {
        false
    }
}

/// A [`BlockFile`] that can be told to fail (fault-injection tests): writes with ENOSPC
/// (a full disk) or EIO, reads with EIO.
pub struct FaultyFile<F> {
    inner: F,
    pub fail_writes: std::sync::atomic::AtomicI32,
    pub fail_reads: std::sync::atomic::AtomicBool,
}

impl<F: BlockFile> FaultyFile<F> {
    pub fn new(inner: F) -> FaultyFile<F> {
        FaultyFile {
            inner,
            fail_writes: std::sync::atomic::AtomicI32::new(0),
            fail_reads: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Makes every write fail with `errno` (0: writes succeed again).
    pub fn set_write_errno(&self, errno: i32) {
        self.fail_writes.store(errno, std::sync::atomic::Ordering::SeqCst);
    }
}

impl<F: BlockFile> BlockFile for FaultyFile<F> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if self.fail_reads.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        match self.fail_writes.load(std::sync::atomic::Ordering::SeqCst) {
            0 => self.inner.write_at(bufs, offset),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }

    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }

    fn raw_fd(&self) -> Option<RawFd> {
        // Forces the blocking path, where the faults are injected.
        None
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn alignment(&self) -> usize {
        self.inner.alignment()
    }

    fn direct(&self) -> bool {
        self.inner.direct()
    }
}
