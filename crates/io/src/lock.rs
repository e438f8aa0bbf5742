//! The lock that gives a directory to one process at a time ([`DirLock`]): an exclusive
//! `flock` on a lock file in it, which holds this process's id (for the error message of
//! the process refused). The data directory and the command log's directory each hold one.
//!
//! A `flock` belongs to the open file: it ends when the last descriptor of that file is
//! closed, and another open of the same file, even in the same process, is refused. A child
//! process shares its parent's descriptors; the snapshot writer a partition forks closes
//! every descriptor it inherits at once (and dies with its parent), so no lock outlives
//! the process that took it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Why a lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// Another open file holds it; `owner` is what the lock file says (its process id),
    /// if anything.
    Busy {
        owner: Option<String>,
    },
    Io {
        what: String,
        source: io::Error,
    },
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::Busy { owner: Some(o) } => write!(f, "locked by process {o}"),
            LockError::Busy { owner: None } => write!(f, "locked by another process"),
            LockError::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for LockError {}

/// A held lock, released when it is dropped (or the process ends).
#[derive(Debug)]
pub struct DirLock {
    file: File,
    path: PathBuf,
}

impl DirLock {
    /// Locks the lock file `path` (created if missing) for this open, and writes this
    /// process's id into it.
    pub fn acquire(path: &Path) -> Result<DirLock, LockError> {
        let io_err = |what: &str, source| LockError::Io {
            what: format!("{what} {}", path.display()),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io_err("cannot open", e))?;
        // SAFETY: flock on a descriptor we own; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let owner = std::fs::read_to_string(path).unwrap_or_default();
                let owner = owner.trim();
                return Err(LockError::Busy {
                    owner: (!owner.is_empty()).then(|| owner.to_string()),
                });
            }
            return Err(io_err("cannot lock", e));
        }
        file.set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .and_then(|()| file.sync_all())
            .map_err(|e| io_err("cannot write", e))?;
        Ok(DirLock {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the lock file at the path is still the one this lock holds (not removed or
    /// replaced).
    pub fn still_ours(&self) -> bool {
        let (Ok(held), Ok(now)) = (self.file.metadata(), std::fs::metadata(&self.path)) else {
            return false;
        };
        held.dev() == now.dev() && held.ino() == now.ino()
    }

    /// Another handle on the same lock (a duplicate descriptor of the same open file: the
    /// lock lasts until both are dropped).
    pub fn try_clone(&self) -> io::Result<DirLock> {
        Ok(DirLock {
            file: self.file.try_clone()?,
            path: self.path.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_a_replaced_file_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let lock = DirLock::acquire(&path).unwrap();
        assert!(lock.still_ours());
        match DirLock::acquire(&path) {
            Err(LockError::Busy { owner }) => assert_eq!(owner, Some(std::process::id().to_string())),
            other => panic!("{other:?}"),
        }
        drop(lock);
        let lock = DirLock::acquire(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(!lock.still_ours());
        std::fs::write(&path, "1\n").unwrap();
        assert!(!lock.still_ours(), "a new file at the same path is not ours");
    }
}
