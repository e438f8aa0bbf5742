//! The files Permafrost writes and reads, behind small traits so that tests can keep files
//! in memory and inject faults (fault.rs): the file system ([`Fs`]: creating, opening,
//! renaming, removing and listing files, creating and syncing directories, opening block
//! files), a file written ([`FsFile`]: command-log segments, snapshots, the schema log) or
//! read back ([`FsRead`]: recovery reads every file through the same seam that wrote it,
//! so that a test's file system sees both), and a block file ([`BlockFile`]: positioned
//! vectored I/O, its descriptor for io_uring, its direct-I/O alignment). [`RealFs`] is the
//! real file system.
//!
//! Block files ([`DiskFile`]) are opened with `O_DIRECT` so that evicted data does not sit
//! in the OS page cache (it would then still occupy memory, only outside the budget); file
//! systems without direct I/O (tmpfs) fall back to buffered I/O. Segment files are written
//! through the page cache, and preallocated around it ([`FsFile::write_zeros`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::aligned::{ALIGN, align_gap};
use crate::direct;

/// One open segment file.
pub trait FsFile: Send {
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
    /// address, their offset and their length to be multiples of [`ALIGN`] (else
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

/// One segment file opened for reading (recovery, and the writer finding where the
/// records it continues after end). Positioned reads only: the reader buffers.
pub trait FsRead: Send {
    /// Fills `buf` from `offset` (reading past the end is an error, `UnexpectedEof`).
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The file's length now.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        self.len().map(|n| n == 0)
    }
}

/// A file of the real file system opened for reading.
struct RealRead(File);

impl FsRead for RealRead {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

/// Opens `path` of the real file system for reading.
pub fn open_real_read(path: &Path) -> io::Result<Box<dyn FsRead>> {
    Ok(Box::new(RealRead(File::open(path)?)))
}

/// Bytes per write when a file is filled with zeros. Written around the page cache (see
/// [`RealFile::write_zeros`]), each such write holds the device for about 0.1 ms on a
/// 2 GB/s disk, the longest a group commit's write waits behind one.
pub const ZERO_PIECE: usize = 256 << 10;
/// Creating, opening, renaming and removing files.
pub trait Fs: Send + Sync {
    /// Creates `path`, which must not exist, for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens an existing file for writing.
    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens an existing file for reading (the real file system's unless overridden).
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn FsRead>> {
        open_real_read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the directory's entries (created, renamed, removed files) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates `dir` and its missing parents (the real file system's unless overridden).
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
    /// Creates `dir`, which must not exist, in an existing directory.
    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir(dir)
    }
    /// The paths of the entries of `dir`, in no order (`NotFound` if it is missing).
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect()
    }
    /// The length of the file at `path`.
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }
    /// Opens `path` for blocks, created if missing (with its directory): as it is if
    /// `keep` (the blocks a snapshot refers to), else truncated.
    fn block_file(&self, path: &Path, keep: bool) -> io::Result<Arc<dyn BlockFile>> {
        Ok(Arc::new(if keep {
            DiskFile::open(path)?
        } else {
            DiskFile::create(path)?
        }))
    }
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

/// A segment file of the real file system.
struct RealFile(File);

impl FsFile for RealFile {
    fn set_direct(&mut self, on: bool) -> bool {
        if direct::set_direct(&self.0, on) { on } else { !on }
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
        direct::drop_cached(&self.0, offset, len)
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
    /// Writes zeros over `[0, len)` rounded down to [`ALIGN`] with `O_DIRECT`, one
    /// [`ZERO_PIECE`] per write; returns how many bytes it wrote (0 if the file system does
    /// not take direct writes: the caller writes them through the page cache).
    fn write_zeros_direct(&mut self, len: u64) -> io::Result<u64> {
        let aligned = len / ALIGN as u64 * ALIGN as u64;
        if aligned == 0 {
            return Ok(0);
        }
        // A piece of zeros at an aligned address inside a larger buffer.
        let buf = vec![0u8; ZERO_PIECE + ALIGN];
        let skip = align_gap(buf.as_ptr());
        let Some(zeros) = buf.get(skip..skip + ZERO_PIECE) else {
            return Ok(0);
        };
        if !direct::set_direct(&self.0, true) {
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
        if !direct::set_direct(&self.0, false) {
            return Err(io::Error::other("cannot clear O_DIRECT after writing zeros"));
        }
        result.map(|()| at)
    }
}

impl Fs for RealFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(RealFile(f)))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
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

/// Copies the file `from` to `to` (which must not exist) through `fs`, [`ZERO_PIECE`]
/// bytes at a time, and syncs the copy.
pub fn copy_file(fs: &dyn Fs, from: &Path, to: &Path) -> io::Result<u64> {
    let src = fs.open_read(from)?;
    let len = src.len()?;
    let mut dst = fs.create(to)?;
    let mut buf = vec![0u8; ZERO_PIECE.min(len as usize)];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(ZERO_PIECE as u64) as usize;
        src.read_exact_at(&mut buf[..n], at)?;
        dst.write_all_at(&buf[..n], at)?;
        at += n as u64;
    }
    dst.sync_data()?;
    Ok(len)
}

/// Positioned I/O on one file.
pub trait BlockFile: Send + Sync {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes the buffers back to back starting at `offset`.
    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()>;
    fn sync(&self) -> io::Result<()>;
    /// The descriptor, for asynchronous reads through io_uring (None: read with `read_at`).
    fn raw_fd(&self) -> Option<RawFd>;
    fn path(&self) -> &Path;
    /// The file's length now.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        self.len().map(|n| n == 0)
    }
    /// Alignment that offsets, lengths and buffers of I/O must respect.
    fn alignment(&self) -> usize;
    fn direct(&self) -> bool;
}

/// A block file on disk.
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
        let (file, direct) = direct::open_direct(path, truncate)?;
        let alignment = if direct {
            direct::dio_alignment(&file).unwrap_or(ALIGN)
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

impl BlockFile for DiskFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        direct::pwritev_all(&self.file, bufs, offset)
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

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
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

    fn len(&self) -> io::Result<u64> {
        let d = self.data.lock().map_err(|_| io::Error::other("poisoned"))?;
        Ok(d.len() as u64)
    }

    fn alignment(&self) -> usize {
        512
    }

    fn direct(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_direct(f: &RealFile) -> bool {
        direct::is_direct(&f.0)
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
