//! Temporary files: where a statement puts what passes its working memory (the runs of a
//! sort, a result larger than `work_mem`) until it reads it back, once, front to back.
//!
//! A [`TempFile`] has no name: it is opened with `O_TMPFILE` in the data directory's `tmp`
//! folder (or, on a file system without it, created under a unique name and removed at
//! once), so it disappears when it is closed or the process dies, and a crash leaves
//! nothing to clean up. It lives in the data directory rather than in `/tmp`, which is
//! often a tmpfs: spilling there would hold the bytes in memory after all.
//!
//! Writes are buffered ([`TEMP_BUFFER`] bytes) and go through the page cache; a reader
//! reads positioned ranges ([`TempFile::read_exact_at`]) of what was flushed. The bytes
//! are framed and checksummed by whoever writes them (docs/format.md, "Spill files").

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes a [`TempFile`] gathers before it writes them.
pub const TEMP_BUFFER: usize = 64 << 10;

/// Bytes written to temporary files by this process since it started (a counter for the
/// statistics; they are gone once read).
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// Bytes written to temporary files by this process so far.
pub fn temp_bytes_written() -> u64 {
    WRITTEN.load(Ordering::Relaxed)
}

/// A file without a name, written at its end and read back at any offset it reached.
#[derive(Debug)]
pub struct TempFile {
    file: File,
    /// Bytes written to the file (not counting `buf`).
    flushed: u64,
    buf: Vec<u8>,
}

impl TempFile {
    /// A new empty file in `dir` (created if missing).
    pub fn create(dir: &Path) -> io::Result<TempFile> {
        std::fs::create_dir_all(dir)?;
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_TMPFILE)
            .open(dir)
        {
            Ok(f) => f,
            // No O_TMPFILE here (an older kernel, a file system without it): a unique
            // name, removed at once.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
                ) =>
            {
                named_then_removed(dir)?
            }
            Err(e) => return Err(e),
        };
        Ok(TempFile {
            file,
            flushed: 0,
            buf: Vec::with_capacity(TEMP_BUFFER),
        })
    }

    /// Appends `b`; returns the offset where it starts.
    pub fn append(&mut self, b: &[u8]) -> io::Result<u64> {
        let at = self.len();
        if self.buf.len() + b.len() > TEMP_BUFFER {
            self.flush()?;
        }
        if b.len() >= TEMP_BUFFER {
            self.write_out(b)?;
        } else {
            self.buf.extend_from_slice(b);
        }
        Ok(at)
    }

    /// Writes what is buffered: everything appended can be read back after this.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            let buf = std::mem::take(&mut self.buf);
            let r = self.write_out(&buf);
            self.buf = buf;
            self.buf.clear();
            r?;
        }
        Ok(())
    }

    fn write_out(&mut self, b: &[u8]) -> io::Result<()> {
        self.file.write_all_at(b, self.flushed)?;
        self.flushed += b.len() as u64;
        WRITTEN.fetch_add(b.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Bytes appended so far (flushed or not).
    pub fn len(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads exactly `buf.len()` bytes at `offset`, which must have been flushed (an
    /// `UnexpectedEof` error past what was).
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.flushed)
        {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "temporary file: {} bytes at {offset} read past the {} written",
                    buf.len(),
                    self.flushed
                ),
            ));
        }
        self.file.read_exact_at(buf, offset)
    }
}

/// A file created under a name no other may have, then removed (its descriptor keeps it).
fn named_then_removed(dir: &Path) -> io::Result<File> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("spill-{}-{n}.tmp", std::process::id()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => {
                std::fs::remove_file(&path)?;
                return Ok(f);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_appended_reads_back_and_leaves_no_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = TempFile::create(&dir.path().join("tmp")).unwrap();
        assert_eq!(f.append(b"hello").unwrap(), 0);
        let big = vec![7u8; TEMP_BUFFER + 3];
        assert_eq!(f.append(&big).unwrap(), 5);
        assert_eq!(f.append(b"!").unwrap(), 5 + big.len() as u64);
        // Not flushed yet: the last byte cannot be read.
        let mut one = [0u8; 1];
        assert!(f.read_exact_at(&mut one, 5 + big.len() as u64).is_err());
        f.flush().unwrap();
        let mut back = vec![0u8; 5];
        f.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(&back, b"hello");
        let mut back = vec![0u8; big.len()];
        f.read_exact_at(&mut back, 5).unwrap();
        assert_eq!(back, big);
        f.read_exact_at(&mut one, 5 + big.len() as u64).unwrap();
        assert_eq!(&one, b"!");
        assert_eq!(f.len(), 6 + big.len() as u64);
        // The folder holds no file for it.
        assert_eq!(std::fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn the_fallback_removes_its_name_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let f = named_then_removed(dir.path()).unwrap();
        f.write_all_at(b"x", 0).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
