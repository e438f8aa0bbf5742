//! A [`Fs`] over the real file system that injects faults, for tests of the command log
//! and of the anti-cache's block files alike: a torn write (a prefix is written, then the
//! call fails), failed `fdatasync`, a full disk (`ENOSPC` once a byte budget is spent, after
//! writing what fits: segment and block writes draw on the same budget), failed block
//! writes and reads ([`FaultyFs::fail_block_writes`], [`FaultyFs::fail_block_reads`]), and
//! a simulated power loss that throws away every byte of a segment not yet synced.
//!
//! It also keeps, per file, how many bytes were written and how long a prefix of them is
//! synced, so that a test can check that nothing is acknowledged before it is durable. A
//! write into the file (over bytes it already has, as in a preallocated segment) makes the
//! file durable only up to where that write starts, until the next sync; a power loss
//! turns such overwritten bytes back into zeros (what the log only ever overwrites). Bytes a
//! write repeats (the same values the file holds there) are not lost: a sector written with
//! the bytes it has reads back the same whether or not the write reached it.
//!
//! Every file written through it can also take a flipped byte ([`FaultyFs::flip_next_write`]:
//! the next write lands whole and succeeds, one of its bytes changed, as a faulty device or
//! cable would leave it), so that a test can check that a reader refuses what it wrote.
//!
//! Reads go through it too ([`Fs::open_read`]: command-log segments, snapshots, the schema
//! log): they fail with EIO after a power loss, or while [`FaultyFs::fail_segment_reads`]
//! says so, and otherwise read the real file (which a test may have damaged). Listing,
//! creating directories and asking a file's length fail with EIO after a power loss.
//!
//! A process forked while it uses a `FaultyFs` (the snapshot writer) gets a copy of its
//! faults: a fault armed before the fork applies in both processes, and what the child
//! does is not counted in the parent. The copy of its lock is taken if another thread held
//! it at the fork (a write or sync under way): a test that forks keeps the other threads
//! off this file system meanwhile (no log preallocation, no commit in flight).
//!
//! Files can also take direct writes ([`FaultyFs::take_direct_writes`]): the file then
//! refuses, as `O_DIRECT` does, a write whose buffer address, offset or length is not a
//! multiple of 4096 (`EINVAL`), and counts them ([`FaultyFs::misaligned_writes`]).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::aligned::ALIGN;
use crate::fs::{BlockFile, Fs, FsFile, FsRead, RealFs};
use std::os::unix::io::RawFd;

#[derive(Debug, Default, Clone)]
struct FileState {
    /// Where the file is now (None: removed).
    path: Option<PathBuf>,
    len: u64,
    /// The file's bytes before this offset are durable.
    synced: u64,
    /// The file's length at its last sync.
    durable_len: u64,
    /// End of the furthest write since the last sync (0: none).
    dirty_end: u64,
    /// Where the last successful write started and ended.
    last_write: Option<(u64, u64)>,
}

#[derive(Debug)]
struct State {
    /// Every file opened or created, by id.
    files: Vec<FileState>,
    /// Keep this many bytes of the next write, then fail it with EIO.
    tear_next_write: Option<usize>,
    /// Flip the byte at this index of the next write (which succeeds).
    flip_next_write: Option<usize>,
    /// Syncs that still succeed before `sync_errno` applies (None: no sync failure planned).
    syncs_before_failure: Option<u64>,
    sync_errno: i32,
    /// Bytes that can still be written (a full disk past them).
    space: u64,
    /// After a simulated power loss every operation fails.
    frozen: bool,
    /// Files may be made direct; and if so, whether direct writes then fail with `EINVAL`
    /// anyway (a file system that takes the flag but not the writes).
    direct: bool,
    direct_refuses_writes: bool,
    /// Block writes fail with this errno (0: they succeed).
    block_write_errno: i32,
    /// Block reads fail with EIO.
    block_reads_fail: bool,
    /// Segment reads ([`Fs::open_read`]) fail with EIO.
    segment_reads_fail: bool,
    /// `sync_data` waits until this is cleared ([`FaultyFs::hold_syncs`]).
    syncs_held: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Wakes syncs waiting while they are held.
    released: std::sync::Condvar,
    writes: AtomicU64,
    syncs: AtomicU64,
    failed_syncs: AtomicU64,
    /// Bytes the writer let the kernel drop from the page cache, and how many of them were
    /// not yet synced when it did (which would be a writer bug).
    dropped: AtomicU64,
    dropped_unsynced: AtomicU64,
    direct_writes: AtomicU64,
    misaligned_writes: AtomicU64,
}

/// The fault-injecting file system (cheap to clone: clones share their faults).
#[derive(Debug, Clone)]
pub struct FaultyFs {
    shared: Arc<Shared>,
}

impl Default for FaultyFs {
    fn default() -> Self {
        FaultyFs::new()
    }
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

impl FaultyFs {
    pub fn new() -> FaultyFs {
        FaultyFs {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    files: Vec::new(),
                    tear_next_write: None,
                    flip_next_write: None,
                    syncs_before_failure: None,
                    sync_errno: libc::EIO,
                    space: u64::MAX,
                    frozen: false,
                    direct: false,
                    direct_refuses_writes: false,
                    block_write_errno: 0,
                    block_reads_fail: false,
                    segment_reads_fail: false,
                    syncs_held: false,
                }),
                released: std::sync::Condvar::new(),
                writes: AtomicU64::new(0),
                syncs: AtomicU64::new(0),
                failed_syncs: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                dropped_unsynced: AtomicU64::new(0),
                direct_writes: AtomicU64::new(0),
                misaligned_writes: AtomicU64::new(0),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next write keeps only its first `keep` bytes and then fails with EIO.
    pub fn tear_next_write(&self, keep: usize) {
        self.state().tear_next_write = Some(keep);
    }

    /// The next write lands whole and succeeds, but with its byte at index `at` (counted
    /// from the start of the write, clamped to its last byte) changed: a corruption no
    /// error reports.
    pub fn flip_next_write(&self, at: usize) {
        self.state().flip_next_write = Some(at);
    }

    /// Disarms a torn or flipped next write that no write has taken yet (a fault armed for
    /// a forked process, which took it in its own copy).
    pub fn disarm_next_write(&self) {
        let mut s = self.state();
        s.tear_next_write = None;
        s.flip_next_write = None;
    }

    /// After `n` more successful `sync_data` calls, every later one fails with `errno`
    /// (and syncs nothing).
    pub fn fail_syncs_after(&self, n: u64, errno: i32) {
        let mut s = self.state();
        s.syncs_before_failure = Some(n);
        s.sync_errno = errno;
    }

    /// Syncs succeed again.
    pub fn heal_syncs(&self) {
        self.state().syncs_before_failure = None;
    }

    /// While `held`, every `sync_data` waits (the log's group commit stalls, as on a slow
    /// disk); cleared, the waiting syncs go on.
    pub fn hold_syncs(&self, held: bool) {
        self.state().syncs_held = held;
        if !held {
            self.shared.released.notify_all();
        }
    }

    /// Files may be made direct ([`FsFile::set_direct`]) from now on; `refuse_writes`:
    /// their direct writes then fail with `EINVAL` all the same.
    pub fn take_direct_writes(&self, refuse_writes: bool) {
        let mut s = self.state();
        s.direct = true;
        s.direct_refuses_writes = refuse_writes;
    }

    /// Successful writes to files made direct.
    pub fn direct_writes(&self) -> u64 {
        self.shared.direct_writes.load(Ordering::SeqCst)
    }

    /// Writes to files made direct refused for their alignment (a writer bug).
    pub fn misaligned_writes(&self) -> u64 {
        self.shared.misaligned_writes.load(Ordering::SeqCst)
    }

    /// Makes every block write fail with `errno` (0: they succeed again).
    pub fn fail_block_writes(&self, errno: i32) {
        self.state().block_write_errno = errno;
    }

    /// Makes every block read fail with EIO (or succeed again).
    pub fn fail_block_reads(&self, fail: bool) {
        self.state().block_reads_fail = fail;
    }

    /// Makes every read of a file opened with [`Fs::open_read`] (a segment, a snapshot, the
    /// schema log) fail with EIO (or succeed again).
    pub fn fail_segment_reads(&self, fail: bool) {
        self.state().segment_reads_fail = fail;
    }

    /// Only `bytes` more bytes fit on the "disk": a write past them writes what fits and
    /// fails with ENOSPC. `u64::MAX`: unlimited.
    pub fn set_space(&self, bytes: u64) {
        self.state().space = bytes;
    }

    /// A power loss now: from here on every operation fails with EIO, and every file loses
    /// what was written to it since its last successful sync, except for the first
    /// `keep_unsynced` such bytes (a torn tail when not zero): bytes past the length the
    /// file had at its last sync are cut off, bytes before it become zeros again.
    pub fn power_loss(&self, keep_unsynced: u64) -> io::Result<()> {
        let mut s = self.state();
        s.frozen = true;
        for f in s.files.iter_mut() {
            let Some(path) = &f.path else { continue };
            let written = f.dirty_end.max(f.synced);
            let keep = f.synced + (written - f.synced).min(keep_unsynced);
            if keep >= written {
                continue;
            }
            let file = match std::fs::OpenOptions::new().write(true).open(path) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let zero_to = written.min(f.durable_len);
            if keep < zero_to {
                use std::os::unix::fs::FileExt;
                file.write_all_at(&vec![0u8; (zero_to - keep) as usize], keep)?;
            }
            let len = keep.max(f.durable_len).min(f.len);
            file.set_len(len)?;
            f.len = len;
        }
        Ok(())
    }

    /// Bytes written to files (the ones opened through this file system) and not yet
    /// synced.
    pub fn unsynced_bytes(&self) -> u64 {
        self.state()
            .files
            .iter()
            .filter(|f| f.path.is_some())
            .map(|f| f.dirty_end.saturating_sub(f.synced))
            .sum()
    }

    /// Bytes of `path` known to be durable (0 for an unknown file).
    pub fn synced_len(&self, path: &Path) -> u64 {
        self.state()
            .files
            .iter()
            .find(|f| f.path.as_deref() == Some(path))
            .map_or(0, |f| f.synced)
    }

    /// Where the last successful write to `path` started and ended.
    pub fn last_write(&self, path: &Path) -> Option<(u64, u64)> {
        self.state()
            .files
            .iter()
            .find(|f| f.path.as_deref() == Some(path))
            .and_then(|f| f.last_write)
    }

    /// Successful write calls.
    pub fn writes(&self) -> u64 {
        self.shared.writes.load(Ordering::SeqCst)
    }

    /// Successful `sync_data` calls.
    pub fn syncs(&self) -> u64 {
        self.shared.syncs.load(Ordering::SeqCst)
    }

    pub fn failed_syncs(&self) -> u64 {
        self.shared.failed_syncs.load(Ordering::SeqCst)
    }

    /// Bytes given to [`FsFile::drop_cached`], and how many of them were not synced then.
    pub fn dropped_from_cache(&self) -> (u64, u64) {
        (
            self.shared.dropped.load(Ordering::SeqCst),
            self.shared.dropped_unsynced.load(Ordering::SeqCst),
        )
    }

    /// Starts tracking a file (of `len` durable bytes) opened at `path`.
    fn track(&self, s: &mut State, inner: Box<dyn FsFile>, path: &Path, len: u64) -> Box<dyn FsFile> {
        for f in s.files.iter_mut() {
            if f.path.as_deref() == Some(path) {
                f.path = None;
            }
        }
        s.files.push(FileState {
            path: Some(path.to_path_buf()),
            len,
            synced: len,
            durable_len: len,
            dirty_end: 0,
            last_write: None,
        });
        Box::new(FaultyFile {
            inner,
            id: s.files.len() - 1,
            fs: self.clone(),
            direct: false,
        })
    }
}

struct FaultyFile {
    inner: Box<dyn FsFile>,
    /// Index in `State::files`.
    id: usize,
    fs: FaultyFs,
    /// Made direct: writes must be aligned (the real file underneath stays buffered).
    direct: bool,
}

/// How many of `new`'s first bytes the file at `path` already holds at `offset`.
fn repeated_prefix(path: Option<&Path>, new: &[u8], offset: u64) -> usize {
    use std::os::unix::fs::FileExt;
    let Some(file) = path.and_then(|p| std::fs::File::open(p).ok()) else {
        return 0;
    };
    let mut old = vec![0u8; new.len()];
    let mut got = 0;
    while got < old.len() {
        match file.read_at(&mut old[got..], offset + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    old[..got].iter().zip(new).take_while(|(a, b)| a == b).count()
}

impl FsFile for FaultyFile {
    fn write_all_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut s = self.fs.state();
        if s.frozen {
            return Err(eio());
        }
        if self.direct {
            let aligned = |n: usize| n.is_multiple_of(ALIGN);
            if !aligned(buf.as_ptr().addr()) || !aligned(buf.len()) || !(offset as usize).is_multiple_of(ALIGN) {
                self.fs.shared.misaligned_writes.fetch_add(1, Ordering::SeqCst);
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            if s.direct_refuses_writes {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
        }
        let (keep, err) = match s.tear_next_write.take() {
            Some(keep) => (keep.min(buf.len()), Some(eio())),
            None => (buf.len(), None),
        };
        let (keep, err) = if keep as u64 > s.space {
            (s.space as usize, Some(io::Error::from_raw_os_error(libc::ENOSPC)))
        } else {
            (keep, err)
        };
        let flipped;
        let buf = match s.flip_next_write.take() {
            Some(at) if !buf.is_empty() => {
                let mut b = buf.to_vec();
                let i = at.min(b.len() - 1);
                b[i] ^= 0x5A;
                flipped = b;
                &flipped[..]
            }
            _ => buf,
        };
        let repeated = repeated_prefix(s.files[self.id].path.as_deref(), &buf[..keep], offset);
        if keep > 0 {
            self.inner.write_all_at(&buf[..keep], offset)?;
        }
        if s.space != u64::MAX {
            s.space -= keep as u64;
        }
        let f = &mut s.files[self.id];
        let end = offset + keep as u64;
        f.len = f.len.max(end);
        if keep > repeated {
            f.synced = f.synced.min(offset + repeated as u64);
            f.dirty_end = f.dirty_end.max(end);
        }
        match err {
            Some(e) => Err(e),
            None => {
                if self.direct {
                    self.fs.shared.direct_writes.fetch_add(1, Ordering::SeqCst);
                }
                f.last_write = Some((offset, end));
                self.fs.shared.writes.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        }
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut s = self.fs.state();
        while s.syncs_held {
            s = self.fs.shared.released.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.frozen {
            return Err(eio());
        }
        match s.syncs_before_failure {
            Some(0) => {
                self.fs.shared.failed_syncs.fetch_add(1, Ordering::SeqCst);
                return Err(io::Error::from_raw_os_error(s.sync_errno));
            }
            Some(n) => s.syncs_before_failure = Some(n - 1),
            None => {}
        }
        self.inner.sync_data()?;
        let f = &mut s.files[self.id];
        f.synced = f.len;
        f.durable_len = f.len;
        f.dirty_end = 0;
        self.fs.shared.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut s = self.fs.state();
        if s.frozen {
            return Err(eio());
        }
        self.inner.set_len(len)?;
        let f = &mut s.files[self.id];
        f.len = len;
        f.synced = f.synced.min(len);
        f.durable_len = f.durable_len.min(len);
        f.dirty_end = f.dirty_end.min(len);
        Ok(())
    }

    fn set_direct(&mut self, on: bool) -> bool {
        self.direct = on && self.fs.state().direct;
        self.direct
    }

    fn drop_cached(&mut self, offset: u64, len: u64) {
        let s = self.fs.state();
        let synced = s.files[self.id].synced;
        let unsynced = (offset + len).saturating_sub(synced.max(offset));
        self.fs.shared.dropped.fetch_add(len, Ordering::SeqCst);
        self.fs.shared.dropped_unsynced.fetch_add(unsynced, Ordering::SeqCst);
        drop(s);
        self.inner.drop_cached(offset, len);
    }
}

impl Fs for FaultyFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let mut s = self.state();
        if s.frozen {
            return Err(eio());
        }
        let inner = RealFs.create(path)?;
        Ok(self.track(&mut s, inner, path, 0))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let mut s = self.state();
        if s.frozen {
            return Err(eio());
        }
        let inner = RealFs.open(path)?;
        let len = std::fs::metadata(path)?.len();
        Ok(self.track(&mut s, inner, path, len))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn FsRead>> {
        let s = self.state();
        if s.frozen || s.segment_reads_fail {
            return Err(eio());
        }
        drop(s);
        Ok(Box::new(FaultyRead {
            inner: RealFs.open_read(path)?,
            fs: self.clone(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.state();
        if s.frozen {
            return Err(eio());
        }
        RealFs.rename(from, to)?;
        for f in s.files.iter_mut() {
            if f.path.as_deref() == Some(to) {
                f.path = None;
            }
        }
        for f in s.files.iter_mut() {
            if f.path.as_deref() == Some(from) {
                f.path = Some(to.to_path_buf());
            }
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.state();
        if s.frozen {
            return Err(eio());
        }
        RealFs.remove(path)?;
        for f in s.files.iter_mut() {
            if f.path.as_deref() == Some(path) {
                f.path = None;
            }
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.state().frozen {
            return Err(eio());
        }
        RealFs.sync_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        if self.state().frozen {
            return Err(eio());
        }
        RealFs.create_dir_all(dir)
    }

    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        if self.state().frozen {
            return Err(eio());
        }
        RealFs.create_dir(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        if self.state().frozen {
            return Err(eio());
        }
        RealFs.list_dir(dir)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        if self.state().frozen {
            return Err(eio());
        }
        RealFs.file_len(path)
    }

    fn block_file(&self, path: &Path, keep: bool) -> io::Result<Arc<dyn BlockFile>> {
        if self.state().frozen {
            return Err(eio());
        }
        let inner = RealFs.block_file(path, keep)?;
        Ok(Arc::new(FaultyBlockFile {
            inner,
            fs: self.clone(),
        }))
    }
}

/// A segment opened for reading through a [`FaultyFs`]: its reads fail as told.
struct FaultyRead {
    inner: Box<dyn FsRead>,
    fs: FaultyFs,
}

impl FsRead for FaultyRead {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let s = self.fs.state();
        if s.frozen || s.segment_reads_fail {
            return Err(eio());
        }
        drop(s);
        self.inner.read_exact_at(buf, offset)
    }

    fn len(&self) -> io::Result<u64> {
        if self.fs.state().frozen {
            return Err(eio());
        }
        self.inner.len()
    }
}

/// A block file of a [`FaultyFs`]: its writes draw on the disk's space and fail as told,
/// its reads fail as told. It gives no descriptor, so block I/O takes the blocking path,
/// where the faults are injected.
struct FaultyBlockFile {
    inner: Arc<dyn BlockFile>,
    fs: FaultyFs,
}

impl BlockFile for FaultyBlockFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let s = self.fs.state();
        if s.frozen || s.block_reads_fail {
            return Err(eio());
        }
        drop(s);
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        let mut s = self.fs.state();
        if s.frozen {
            return Err(eio());
        }
        if s.block_write_errno != 0 {
            return Err(io::Error::from_raw_os_error(s.block_write_errno));
        }
        let total: u64 = bufs.iter().map(|b| b.len() as u64).sum();
        if total > s.space {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        if s.space != u64::MAX {
            s.space -= total;
        }
        drop(s);
        self.fs.shared.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.write_at(bufs, offset)
    }

    fn sync(&self) -> io::Result<()> {
        if self.fs.state().frozen {
            return Err(eio());
        }
        self.inner.sync()
    }

    fn raw_fd(&self) -> Option<RawFd> {
        None
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn len(&self) -> io::Result<u64> {
        if self.fs.state().frozen {
            return Err(eio());
        }
        self.inner.len()
    }

    fn alignment(&self) -> usize {
        self.inner.alignment()
    }

    fn direct(&self) -> bool {
        self.inner.direct()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flipped_write_lands_whole_with_one_byte_changed_and_a_disarmed_fault_takes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let fs = FaultyFs::new();
        let mut f = fs.create(&path).unwrap();
        fs.flip_next_write(3);
        f.write_all_at(b"abcdef", 0).unwrap();
        f.write_all_at(b"gh", 6).unwrap();
        let mut want = b"abcdefgh".to_vec();
        want[3] ^= 0x5A;
        assert_eq!(std::fs::read(&path).unwrap(), want);
        // Past the end of a write: its last byte.
        fs.flip_next_write(100);
        f.write_all_at(b"xy", 8).unwrap();
        assert_eq!(std::fs::read(&path).unwrap()[8..], [b'x', b'y' ^ 0x5A]);
        fs.flip_next_write(0);
        fs.tear_next_write(1);
        fs.disarm_next_write();
        f.write_all_at(b"zz", 10).unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[10..], b"zz");
    }
}
