//! The log's files: the directory lock, segments (created, started, preallocated in the
//! background) and leftover temporary files.

use super::*;

/// Takes an exclusive `flock` on the directory's lock file: one writer per log.
pub(super) fn lock_dir(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| LogError::io(format!("cannot open {}", path.display()), e))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(LogError::io(
            format!("the command log in {} is in use by another writer", dir.display()),
            e,
        ));
    }
    Ok(f)
}

/// Removes segments that were being created when the process stopped (`*.log.tmp`).
pub(super) fn remove_temporary_files(fs: &dyn LogFs, dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| LogError::io(format!("cannot list {}", dir.display()), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| LogError::io(format!("cannot list {}", dir.display()), e))?;
        if entry.file_name().to_str().is_some_and(|n| n.ends_with(".log.tmp")) {
            let p = entry.path();
            fs.remove(&p)
                .map_err(|e| LogError::io(format!("cannot remove {}", p.display()), e))?;
        }
    }
    Ok(())
}

/// Creates the (version 1) segment starting at `first_lsn`, empty but for its header.
pub(super) fn create_segment(fs: &dyn LogFs, dir: &Path, first_lsn: u64) -> Result<(Box<dyn LogFile>, PathBuf)> {
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
    fs: &dyn LogFs,
    dir: &Path,
    mut file: Box<dyn LogFile>,
    tmp: &Path,
    header: [u8; SEGMENT_HEADER_LEN],
    first_lsn: u64,
) -> Result<(Box<dyn LogFile>, PathBuf)> {
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
pub(super) fn start_preallocation(sh: &Arc<Shared>) -> Option<JoinHandle<io::Result<Box<dyn LogFile>>>> {
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
pub(super) fn preallocate(fs: &dyn LogFs, path: &Path, len: u64) -> io::Result<Box<dyn LogFile>> {
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
