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
    /// Writes `len` zero bytes from the start of the file (preallocating a segment). The
    /// default writes them as any other bytes, `ZERO_PIECE` at a time.
    fn write_zeros(&mut self, len: u64) -> io::Result<()> {
        write_zeros_from(0, len, |buf, at| self.write_all_at(buf, at))
    }
    /// Makes the file's later writes go around the page cache (`O_DIRECT`) or through it
    /// again; returns whether the file is direct now. Direct writes need their buffer's
    /// address, their offset and their length to be multiples of [`DIRECT_ALIGN`] (else
    /// they fail with `EINVAL`). The default takes no direct writes (fault-injecting files
    /// in tests stay buffered).
    fn set_direct(&mut self, on: bool) -> bool {
        let _ = on;
        false
    }
}

/// Writes zeros over `[from, len)` with `write`, [`ZERO_PIECE`] bytes at a time.
fn write_zeros_from(from: u64, len: u64, mut write: impl FnMut(&[u8], u64) -> io::Result<()>) -> io::Result<()> {
    let zeros = vec![0u8; ZERO_PIECE.min(len.saturating_sub(from) as usize)];
    let mut at = from;
    while at < len {
        let n = (len - at).min(ZERO_PIECE as u64) as usize;
        write(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// Bytes per write when a file is filled with zeros. Written around the page cache (see
/// [`RealFile::write_zeros`]), each such write holds the device for about 0.1 ms on a
/// 2 GB/s disk, the longest a group commit's write waits behind one.
pub(crate) const ZERO_PIECE: usize = 256 << 10;
/// Alignment of the buffer, offsets and lengths of writes that bypass the page cache
/// (a multiple of any logical block size in use).
pub(crate) const DIRECT_ALIGN: usize = 4096;

/// Bytes from `p` to the next address aligned for direct I/O (0 if `p` is aligned).
pub(crate) fn align_gap(p: *const u8) -> usize {
    (DIRECT_ALIGN - p.addr() % DIRECT_ALIGN) % DIRECT_ALIGN
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
    fn set_direct(&mut self, on: bool) -> bool {
        if self.fcntl_direct(on) { on } else { !on }
    }

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

    /// Writes the zeros around the page cache (`O_DIRECT`) where the file system allows,
    /// one [`ZERO_PIECE`] at a time, and the rest (an unaligned end, or all of it) through
    /// the page cache. Through the page cache, a segment's zeros were copied into memory,
    /// and the `fdatasync` that ends preallocation queued all of them for the device at
    /// once: the group commits meanwhile waited behind 64 MiB of writes (measured: 18
    /// group commits of 16-32 ms in a 10-second run, each of them stalling the clients).
    /// The descriptor is buffered again when this returns.
    fn write_zeros(&mut self, len: u64) -> io::Result<()> {
        let done = self.write_zeros_direct(len)?;
        write_zeros_from(done, len, |buf, at| self.0.write_all_at(buf, at))
    }
}

impl RealFile {
    /// Sets or clears `O_DIRECT` on the descriptor; false if the file system refuses it.
    fn fcntl_direct(&self, on: bool) -> bool {
        let fd = self.0.as_raw_fd();
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

    /// Writes zeros over `[0, len)` rounded down to [`DIRECT_ALIGN`] with `O_DIRECT`, one
    /// [`ZERO_PIECE`] per write; returns how many bytes it wrote (0 if the file system does
    /// not take direct writes: the caller writes them through the page cache).
    fn write_zeros_direct(&mut self, len: u64) -> io::Result<u64> {
        let aligned = len / DIRECT_ALIGN as u64 * DIRECT_ALIGN as u64;
        if aligned == 0 {
            return Ok(0);
        }
        // A piece of zeros at an aligned address inside a larger buffer.
        let buf = vec![0u8; ZERO_PIECE + DIRECT_ALIGN];
        let skip = align_gap(buf.as_ptr());
        let Some(zeros) = buf.get(skip..skip + ZERO_PIECE) else {
            return Ok(0);
        };
        if !self.fcntl_direct(true) {
            return Ok(0);
        }
        let mut at = 0;
        let mut result = Ok(());
        while at < aligned {
            let n = (aligned - at).min(ZERO_PIECE as u64) as usize;
            match self.0.write_all_at(&zeros[..n], at) {
                Ok(()) => at += n as u64,
                // Refused for alignment or by the file system: the rest goes buffered.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if !self.fcntl_direct(false) {
            return Err(io::Error::other("cannot clear O_DIRECT after writing zeros"));
        }
        result.map(|()| at)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn is_direct(f: &RealFile) -> bool {
        // SAFETY: fcntl on a descriptor we own.
        let flags = unsafe { libc::fcntl(f.0.as_raw_fd(), libc::F_GETFL) };
        flags & libc::O_DIRECT != 0
    }

    #[test]
    fn write_zeros_fills_an_unaligned_length_and_leaves_the_file_buffered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zeros");
        let len = 3 * ZERO_PIECE as u64 + 4096 + 100;
        std::fs::write(&path, vec![0xAB; len as usize + 10]).unwrap();
        let mut f = RealFile(OpenOptions::new().write(true).open(&path).unwrap());
        f.write_zeros(len).unwrap();
        assert!(!is_direct(&f), "O_DIRECT is cleared again");
        // An unaligned buffered write works (with O_DIRECT it would fail).
        f.write_all_at(b"xyz", 5).unwrap();
        f.sync_data().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), len as usize + 10);
        assert_eq!(&bytes[5..8], b"xyz");
        assert!(bytes[..5].iter().chain(&bytes[8..len as usize]).all(|&b| b == 0));
        assert!(
            bytes[len as usize..].iter().all(|&b| b == 0xAB),
            "nothing past len is written"
        );
    }

    #[test]
    fn write_zeros_of_less_than_a_block_goes_through_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small");
        let mut f = RealFile(OpenOptions::new().write(true).create_new(true).open(&path).unwrap());
        f.write_zeros(1000).unwrap();
        assert!(!is_direct(&f));
        assert_eq!(std::fs::read(&path).unwrap(), vec![0u8; 1000]);
    }
}
