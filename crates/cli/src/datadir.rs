//! The data directory belongs to one server at a time.
//!
//! `permafrost serve` holds an exclusive POSIX record lock (`fcntl(F_SETLK)`) on
//! `DATA_DIR/permafrost.lock` (which names its process id) for as long as it runs (a lock of
//! the process: the snapshot writer it forks does not inherit it, so the lock never outlives
//! the server), so a second server on the same directory stops at
//! start with a clear error instead of writing over the first one's log, snapshots and
//! block files. A lock cannot stop the other accident: the directory removed (or replaced)
//! under a running server, which then keeps writing snapshots and log segments by path into
//! whatever directory now has that name, possibly one a new server uses. So a watchdog
//! thread checks every second that the lock file at the path is still the file locked; if
//! it is not, the server stops at once (what is durable stays durable; nothing more is
//! written there).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LOCK_FILE: &str = "permafrost.lock";

/// The held lock (released when the process ends).
pub struct DataDirLock {
    file: File,
    path: PathBuf,
}

impl DataDirLock {
    /// Locks `dir` (which exists) for this process, or says which process has it.
    pub fn acquire(dir: &Path) -> Result<DataDirLock, String> {
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        // SAFETY: a zeroed flock struct is valid; fcntl on a descriptor we own.
        let mut lk: libc::flock = unsafe { std::mem::zeroed() };
        lk.l_type = libc::F_WRLCK as libc::c_short;
        lk.l_whence = libc::SEEK_SET as libc::c_short;
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lk) } != 0 {
            let e = std::io::Error::last_os_error();
            let owner = std::fs::read_to_string(&path).unwrap_or_default();
            let owner = owner.trim();
            return Err(if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EAGAIN)) {
                format!(
                    "data directory {} is in use by another permafrost server{} (one server per data directory)",
                    dir.display(),
                    if owner.is_empty() {
                        String::new()
                    } else {
                        format!(" (process {owner})")
                    }
                )
            } else {
                format!("cannot lock {}: {e}", path.display())
            });
        }
        file.set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(DataDirLock { file, path })
    }

    /// Whether the lock file at the path is still the one this process locked.
    pub fn still_ours(&self) -> bool {
        let (Ok(held), Ok(now)) = (self.file.metadata(), std::fs::metadata(&self.path)) else {
            return false;
        };
        held.dev() == now.dev() && held.ino() == now.ino()
    }

    /// Starts the watchdog: every `every`, if the lock file was removed or replaced, prints
    /// why and ends the process with status 70.
    pub fn watch(self, every: Duration) {
        let _ = std::thread::Builder::new().name("datadir-watch".into()).spawn(move || {
            loop {
                std::thread::sleep(every);
                if !self.still_ours() {
                    eprintln!(
                        "fatal: {} was removed or replaced while this server ran: the data directory is no \
                         longer this server's; stopping at once so as to write nothing more into it",
                        self.path.display()
                    );
                    std::process::exit(70);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_or_replaced_lock_file_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let lock = DataDirLock::acquire(dir.path()).unwrap();
        assert!(lock.still_ours());
        // A second server being refused is checked in crates/cli/tests/restart.rs (record
        // locks are per process).
        std::fs::remove_file(dir.path().join(LOCK_FILE)).unwrap();
        assert!(!lock.still_ours());
        std::fs::write(dir.path().join(LOCK_FILE), "1\n").unwrap();
        assert!(!lock.still_ours(), "a new file at the same path is not ours");
    }
}
