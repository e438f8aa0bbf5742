//! The log's files: the directory lock, segments (created, started, preallocated in the
//! background) and leftover temporary files.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::commandlog::error::{LogError, Result};
use crate::commandlog::format::{SEGMENT_HEADER_LEN, segment_file_name, segment_header};
use crate::commandlog::reader::TornTail;
use permafrost_io::{DirLock, Fs, FsFile, LockError};

use super::shared::{LOCK_FILE, SPARE_FILE, Shared};

/// Takes the directory's lock (`permafrost_io::DirLock`): one writer per log.
pub(super) fn lock_dir(dir: &Path) -> Result<DirLock> {
    DirLock::acquire(&dir.join(LOCK_FILE)).map_err(|e| match e {
        LockError::Busy { .. } => LogError::io(
            format!("the command log in {} is in use by another writer", dir.display()),
            std::io::Error::from_raw_os_error(libc::EWOULDBLOCK),
        ),
        LockError::Io { what, source } => LogError::io(what, source),
    })
}

/// Removes segments that were being created when the process stopped (`*.log.tmp`).
pub(super) fn remove_temporary_files(fs: &dyn Fs, dir: &Path) -> Result<()> {
    let entries = fs
        .list_dir(dir)
        .map_err(|e| LogError::io(format!("cannot list {}", dir.display()), e))?;
    for p in entries {
        if p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".log.tmp"))
        {
            fs.remove(&p)
                .map_err(|e| LogError::io(format!("cannot remove {}", p.display()), e))?;
        }
    }
    Ok(())
}

/// Creates the (version 3, appended) segment starting at `first_lsn`, empty but for its
/// header (replacing a file of that name: an empty segment of an earlier build).
pub(super) fn create_segment(fs: &dyn Fs, dir: &Path, first_lsn: u64) -> Result<(Box<dyn FsFile>, PathBuf)> {
    let tmp = dir.join(format!("{}.tmp", segment_file_name(first_lsn)));
    let file = fs
        .create(&tmp)
        .map_err(|e| LogError::io(format!("cannot create {}", tmp.display()), e))?;
    start_segment(fs, dir, file, &tmp, segment_header(first_lsn), first_lsn)
}

/// Makes `file`, open at the temporary path `tmp`, the segment starting at `first_lsn`:
/// `header` written and synced, the file renamed to the segment's name and the directory
/// synced, so that a segment file always has a complete header. On failure `tmp` is
/// removed.
pub(super) fn start_segment(
    fs: &dyn Fs,
    dir: &Path,
    mut file: Box<dyn FsFile>,
    tmp: &Path,
    header: [u8; SEGMENT_HEADER_LEN],
    first_lsn: u64,
) -> Result<(Box<dyn FsFile>, PathBuf)> {
    let path = dir.join(segment_file_name(first_lsn));
    let ctx = |what: &str| format!("cannot {what} {}", tmp.display());
    let written = file
        .write_all_at(&header, 0)
        .map_err(|e| LogError::io(ctx("write"), e))
        .and_then(|()| file.sync_data().map_err(|e| LogError::io(ctx("sync"), e)))
        .and_then(|()| {
            fs.rename(tmp, &path)
                .map_err(|e| LogError::io(format!("cannot rename {} to {}", tmp.display(), path.display()), e))
        });
    if let Err(e) = written {
        let _ = fs.remove(tmp);
        return Err(e);
    }
    fs.sync_dir(dir)
        .map_err(|e| LogError::io(format!("cannot sync directory {}", dir.display()), e))?;
    Ok((file, path))
}

/// Starts preallocating the next segment on a helper thread (None if no thread could be
/// started: the next segment is then created empty).
pub(super) fn start_preallocation(sh: &Arc<Shared>) -> Option<JoinHandle<io::Result<Box<dyn FsFile>>>> {
    let (fs, dir, len) = (sh.fs.clone(), sh.cfg.dir.clone(), sh.cfg.segment_bytes);
    std::thread::Builder::new()
        .name("permafrost-log-prealloc".into())
        .spawn(move || {
            let path = dir.join(SPARE_FILE);
            let r = preallocate(&*fs, &path, len);
            if r.is_err() {
                let _ = fs.remove(&path);
            }
            r
        })
        .ok()
}

/// Writes `path` full of zeros, `len` bytes, and syncs it (a leftover is replaced).
pub(super) fn preallocate(fs: &dyn Fs, path: &Path, len: u64) -> io::Result<Box<dyn FsFile>> {
    match fs.remove(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = fs.create(path)?;
    file.write_zeros(len)?;
    file.sync_data()?;
    file.drop_cached(0, len);
    Ok(file)
}

/// Cuts a torn tail off the last segment before the writer continues there, and syncs:
/// an appended segment is truncated at it; a preallocated one (`zero`) gets its zeros
/// back instead, so that it keeps the length its header states and the blocks it has.
pub(super) fn drop_torn_tail(file: &mut dyn FsFile, zero: bool, t: &TornTail) -> Result<()> {
    let ctx = |e| LogError::io(format!("cannot cut the torn tail off {}", t.file.display()), e);
    if zero {
        zero_range(file, t.offset, t.offset + t.bytes).map_err(ctx)?;
    } else {
        file.set_len(t.offset).map_err(ctx)?;
    }
    file.sync_data().map_err(ctx)
}

/// Writes zeros over `[from, to)` (not synced).
pub(crate) fn zero_range(file: &mut dyn FsFile, from: u64, to: u64) -> io::Result<()> {
    let zeros = vec![0u8; (to.saturating_sub(from)).min(1 << 20) as usize];
    let mut at = from;
    while at < to {
        let n = ((to - at) as usize).min(zeros.len());
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}
