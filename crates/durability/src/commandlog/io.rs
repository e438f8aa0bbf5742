//! The file operations the log writer performs, behind two small traits so that tests can
//! inject faults (torn writes, failed `fdatasync`, a full disk): see [`super::fault`].
//! Reading ([`super::LogReader`], the tail scan at open) uses `std::fs` directly.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// One open segment file.
pub trait LogFile: Send {
    /// Writes all of `buf` at `offset` (a short write is an error).
    fn write_all_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// `fdatasync`: the file's data and size are durable when this returns Ok.
    fn sync_data(&mut self) -> io::Result<()>;
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// Tells the kernel that the `len` bytes at `offset`, written and synced, will not be
    /// read while the log runs, so their page-cache pages can be freed now (and reused for
    /// the next writes) instead of piling up. Advice only: nothing fails if it is ignored.
    fn drop_cached(&mut self, offset: u64, len: u64);
}

/// Creating, opening, renaming and removing segment files.
pub trait LogFs: Send + Sync {
    /// Creates `path`, which must not exist, for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn LogFile>>;
    /// Opens an existing file for writing.
    fn open(&self, path: &Path) -> io::Result<Box<dyn LogFile>>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the directory's entries (created, renamed, removed files) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealFile(File);

impl LogFile for RealFile {
    fn write_all_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn drop_cached(&mut self, offset: u64, len: u64) {
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return;
        };
        // SAFETY: advice on a descriptor we own; no memory is passed. Its result does not
        // matter (the pages stay cached if the kernel declines).
        unsafe { libc::posix_fadvise(self.0.as_raw_fd(), offset, len, libc::POSIX_FADV_DONTNEED) };
    }
}

impl LogFs for RealFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn LogFile>> {
        let f = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(RealFile(f)))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn LogFile>> {
        let f = OpenOptions::new().write(true).open(path)?;
        Ok(Box::new(RealFile(f)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}
