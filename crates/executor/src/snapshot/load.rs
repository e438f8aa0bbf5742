//! Loading a snapshot at recovery: each partition gets its block directory, tombstones,
//! the index entries of its evicted tuples and its rows, section by section. The bytes of
//! each section are decoded by `permafrost_durability::snapshot::decode_section`; this
//! file checks their order and what they refer to, and hands each part to its partition.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use crossbeam_channel::Receiver;
use permafrost_anticache::BlockMeta;
use permafrost_anticache::store::MAX_TUPLES_PER_BLOCK;
use permafrost_durability::snapshot::{self as fmt, BlockEntry, Section, SnapshotHeader, decode_section, kind};
use permafrost_storage::{PartitionStore, Tombstone};

use crate::database::Database;
use crate::error::{Error, Result};
use crate::partition::msg::{Msg, Restore};

/// What loading a snapshot did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadReport {
    pub epoch: u64,
    pub cut_lsn: u64,
    /// The base snapshot whose block directories it completed (0: it holds them whole).
    pub base_epoch: u64,
    pub rows: u64,
    pub evicted: u64,
    /// Blocks in the restored directories.
    pub blocks: u64,
    pub seconds: f64,
}

/// Parts sent to the partitions and not acknowledged yet, at most.
const IN_FLIGHT: usize = 64;

/// Table `t` of a partition being loaded.
fn table_of(store: &mut PartitionStore, t: u32) -> Result<&mut permafrost_storage::Table> {
    store
        .table_mut(t)
        .ok_or_else(|| Error::Recovery(format!("snapshot table {t} does not exist")))
}

fn meta(e: &BlockEntry) -> (u32, BlockMeta) {
    let m = BlockMeta {
        table: e.table,
        tuples: e.tuples,
        holes: 0,
        span: e.span,
    };
    (e.id, m)
}

/// The error for snapshot `file` being wrong at byte `offset`.
fn corrupt(file: &Path, offset: u64, detail: String) -> Error {
    Error::from(permafrost_durability::LogError::SnapshotCorrupt {
        file: file.to_path_buf(),
        offset,
        detail,
    })
}

/// The whole block directories of base snapshot `path` (which the caller has checked,
/// [`fmt::newest_valid`]), by partition.
fn read_base_directories(
    fs: &dyn permafrost_io::Fs,
    path: &Path,
    of: &SnapshotHeader,
) -> Result<Vec<Vec<(u32, BlockMeta)>>> {
    let (mut rd, h) = fmt::SnapshotReader::open(fs, path)?;
    if h.epoch != of.base_epoch || h.base_epoch != 0 || h.partitions != of.partitions {
        return Err(corrupt(
            path,
            0,
            format!(
                "not the whole-directory snapshot {} that snapshot {} needs",
                of.base_epoch, of.epoch
            ),
        ));
    }
    let mut dirs = vec![Vec::new(); of.partitions as usize];
    loop {
        let at = rd.offset();
        let Some((k, body)) = rd.next_section()? else { break };
        if k != kind::BLOCKS {
            continue;
        }
        let Section::Blocks { p, entries } =
            decode_section(k, &body, rd.version()).map_err(|e| corrupt(path, at, e.to_string()))?
        else {
            continue;
        };
        let Some(dir) = dirs.get_mut(p as usize) else {
            return Err(corrupt(path, at, format!("partition {p} of {}", of.partitions)));
        };
        dir.extend(entries.iter().map(meta));
    }
    Ok(dirs)
}

/// The directory of the partition being read, sent before its first table.
struct Dir {
    p: u32,
    slot_size: usize,
    file_slots: u32,
    /// Blocks in the whole directory (version 1 files do not say).
    live: Option<u32>,
    /// The base's entries (differences), the removed ids, the entries listed here.
    base: Vec<(u32, BlockMeta)>,
    removed: Vec<u32>,
    blocks: Vec<(u32, BlockMeta)>,
    pending: Vec<(u32, Vec<u8>)>,
}

/// A snapshot being loaded: what it has read so far, and the parts in flight to the
/// partitions (which apply them in parallel, in order per partition).
struct Loader<'a> {
    db: &'a Database,
    path: &'a Path,
    header: &'a SnapshotHeader,
    partitions: u32,
    ack_tx: crossbeam_channel::Sender<Result<()>>,
    ack_rx: Receiver<Result<()>>,
    outstanding: usize,
    /// The base snapshot's whole directories by partition, if this one lists differences.
    base_dirs: Vec<Vec<(u32, BlockMeta)>>,
    dir: Option<Dir>,
    /// The tombstones of the table being read: partition, table, entries.
    tombs: Option<(u32, u32, Vec<Option<Tombstone>>)>,
    report: LoadReport,
}

impl Loader<'_> {
    fn bad(&self, at: u64, detail: String) -> Error {
        corrupt(self.path, at, detail)
    }

    /// Hands `f` to partition `p`, first waiting while too many parts are in flight.
    fn send(&mut self, p: u32, f: Restore) -> Result<()> {
        while self.outstanding >= IN_FLIGHT {
            self.ack_rx.recv().map_err(|_| Error::Shutdown)??;
            self.outstanding -= 1;
        }
        self.db.shared().senders[p as usize]
            .send(Msg::Restore(f, self.ack_tx.clone()))
            .map_err(|_| Error::Shutdown)?;
        self.outstanding += 1;
        Ok(())
    }

    fn check_partition(&self, at: u64, p: u32) -> Result<()> {
        if p >= self.partitions {
            return Err(self.bad(at, format!("partition {p} of {}", self.partitions)));
        }
        Ok(())
    }

    /// Sends the directory of the partition read so far, completed from the base.
    fn flush_dir(&mut self) -> Result<()> {
        let Some(mut d) = self.dir.take() else { return Ok(()) };
        let p = d.p;
        if !d.removed.is_empty() {
            let removed: HashSet<u32> = d.removed.iter().copied().collect();
            let before = d.base.len();
            d.base.retain(|(id, _)| !removed.contains(id));
            if before - d.base.len() != removed.len() || removed.len() != d.removed.len() {
                return Err(self.bad(
                    0,
                    format!("partition {p}: the blocks removed since the base are not all in the base's directory"),
                ));
            }
        }
        d.base.append(&mut d.blocks);
        if let Some(live) = d.live
            && d.base.len() != live as usize
        {
            return Err(self.bad(
                0,
                format!(
                    "partition {p}: the block directory has {} blocks, its PARTITION section says {live}",
                    d.base.len(),
                ),
            ));
        }
        let epoch = self.header.epoch;
        self.send(
            p,
            Box::new(move |_store, ac| match ac {
                Some(ac) => ac
                    .restore(epoch, d.slot_size, d.file_slots, &d.base, &d.pending)
                    .map_err(Error::from),
                None if d.base.is_empty() => Ok(()),
                None => Err(Error::Recovery(
                    "the snapshot holds evicted data but the anti-cache is off: start with it on".into(),
                )),
            }),
        )
    }

    /// Sends the tombstones of the table read so far.
    fn flush_tombs(&mut self) -> Result<()> {
        let Some((p, t, entries)) = self.tombs.take() else {
            return Ok(());
        };
        self.send(
            p,
            Box::new(move |store, _| {
                table_of(store, t)?.restore_tombstones(entries.into_iter());
                Ok(())
            }),
        )
    }

    /// Takes one section (read at byte `at`) after the schema.
    fn section(&mut self, at: u64, s: Section) -> Result<()> {
        match s {
            Section::Schema(_) => return Err(self.bad(at, "a second schema section".into())),
            Section::Sequences(seqs) => {
                let catalog = self.db.shared().schema.load_full().catalog.clone();
                for (id, last) in seqs {
                    if !catalog.sequences().any(|s| s.id == id) {
                        return Err(self.bad(at, format!("sequence {id} is not in the snapshot's schema")));
                    }
                    // The last value at the cut (a setval() may have lowered it below
                    // where the schema's CREATE left it).
                    self.db.shared().sequences.set(id, last);
                }
            }
            Section::Partition {
                p,
                slot_size,
                file_slots,
                live,
            } => {
                self.flush_tombs()?;
                self.flush_dir()?;
                self.report.blocks += live.unwrap_or(0) as u64;
                self.check_partition(at, p)?;
                let base = self
                    .base_dirs
                    .get_mut(p as usize)
                    .map(std::mem::take)
                    .unwrap_or_default();
                self.dir = Some(Dir {
                    p,
                    slot_size: slot_size as usize,
                    file_slots,
                    live,
                    base,
                    removed: Vec::new(),
                    blocks: Vec::new(),
                    pending: Vec::new(),
                });
            }
            Section::Blocks { p, entries } => {
                if self.dir.as_ref().is_some_and(|d| d.live.is_none()) {
                    // Version 1: no live count, the listed entries are the directory.
                    self.report.blocks += entries.len() as u64;
                }
                self.current_dir(at, p)?.blocks.extend(entries.iter().map(meta));
            }
            Section::BlocksRemoved { p, ids } => {
                if self.header.base_epoch == 0 {
                    return Err(self.bad(at, "blocks removed in a snapshot without a base".into()));
                }
                self.current_dir(at, p)?.removed.extend(ids);
            }
            Section::PendingBlock { p, id, bytes } => self.current_dir(at, p)?.pending.push((id, bytes)),
            Section::Table {
                p,
                t,
                name,
                sequence,
                bound,
                indexes,
            } => self.table(at, p, t, name, sequence, bound, indexes as usize)?,
            Section::Tombstones { p, t, from, entries } => {
                if let Some((_, offset)) = entries.iter().flatten().find(|(_, o)| *o > MAX_TUPLES_PER_BLOCK) {
                    return Err(self.bad(
                        at,
                        format!("a tombstone names entry {offset} of a block, past the most a block holds"),
                    ));
                }
                let Some((_, _, tombs)) = self
                    .tombs
                    .as_mut()
                    .filter(|(q, u, e)| *q == p && *u == t && e.len() == from as usize)
                else {
                    return Err(self.bad(at, "tombstones out of order".into()));
                };
                for e in entries {
                    tombs.push(e.map(|(block, offset)| Tombstone { block, offset }));
                    self.report.evicted += e.is_some() as u64;
                }
            }
            Section::EvictedKeys { p, t, index, keys } => {
                self.flush_tombs()?;
                self.check_partition(at, p)?;
                let index = index as usize;
                self.send(
                    p,
                    Box::new(move |store, _| {
                        let table = table_of(store, t)?;
                        for (id, key) in keys {
                            table.restore_evicted_key(index, key, id)?;
                        }
                        Ok(())
                    }),
                )?;
            }
            Section::Rows { p, t, rows } => {
                self.flush_tombs()?;
                self.check_partition(at, p)?;
                self.report.rows += rows.len() as u64;
                self.send(
                    p,
                    Box::new(move |store, _| {
                        let table = table_of(store, t)?;
                        for r in rows {
                            table.load_tuple(&r)?;
                        }
                        Ok(())
                    }),
                )?;
            }
        }
        Ok(())
    }

    /// The directory being read, which a BLOCKS, BLOCKS_REMOVED or PENDING_BLOCK section
    /// of partition `p` belongs to.
    fn current_dir(&mut self, at: u64, p: u32) -> Result<&mut Dir> {
        match self.dir.as_mut().filter(|c| c.p == p) {
            Some(d) => Ok(d),
            None => Err(corrupt(self.path, at, "block directory outside its partition".into())),
        }
    }

    /// A TABLE section: checks it against the schema, sets its sequence (and raises the
    /// database's counter to it), and starts
    /// gathering its tombstones.
    #[allow(clippy::too_many_arguments)]
    fn table(&mut self, at: u64, p: u32, t: u32, name: String, seq: i64, bound: u32, indexes: usize) -> Result<()> {
        self.flush_tombs()?;
        self.flush_dir()?;
        self.check_partition(at, p)?;
        // The database's counter hands out values above every partition's highest.
        self.db.shared().sequences.raise(t, seq);
        self.send(
            p,
            Box::new(move |store, _| {
                let table = store.table_mut(t).ok_or_else(|| {
                    Error::Recovery(format!("snapshot table \"{name}\" (id {t}) is not in its schema"))
                })?;
                if table.schema().name != name || table.index_count() != indexes {
                    return Err(Error::Recovery(format!(
                        "snapshot table \"{name}\" (id {t}) does not match the schema's \"{}\"",
                        table.schema().name
                    )));
                }
                table.set_sequence(seq);
                Ok(())
            }),
        )?;
        self.tombs = Some((p, t, Vec::with_capacity((bound as usize).min(1 << 24))));
        Ok(())
    }

    /// After the last section: the last directory and tombstones, the holes recounted,
    /// and every part acknowledged.
    fn finish(mut self) -> Result<LoadReport> {
        self.flush_tombs()?;
        self.flush_dir()?;
        // Every tombstone is back: count the merged-back tuples of each block (the
        // snapshot does not save them).
        for p in 0..self.partitions {
            self.send(
                p,
                Box::new(|store, ac| match ac {
                    Some(ac) => ac.recount_holes(store).map_err(Error::from),
                    None => Ok(()),
                }),
            )?;
        }
        let mut first_err = None;
        while self.outstanding > 0 {
            match self.ack_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => return Err(Error::Shutdown),
            }
            self.outstanding -= 1;
        }
        if let Some(e) = first_err {
            return Err(Error::Recovery(format!(
                "loading snapshot {}: {e}",
                self.path.display()
            )));
        }
        Ok(self.report)
    }
}

/// Loads snapshot `path` into this fresh database; `schema` applies each schema statement
/// (the recovery's replayer, so that the application's procedures get registered).
pub(crate) fn load(
    db: &Database,
    path: &Path,
    header: &SnapshotHeader,
    schema: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<LoadReport> {
    let started = Instant::now();
    let n = db.partitions();
    if header.partitions != n {
        return Err(Error::Recovery(format!(
            "snapshot {} was taken with {} partitions, the database has {n}: start it with --partitions {}",
            path.display(),
            header.partitions,
            header.partitions
        )));
    }
    let fs = &*db.shared().fs;
    let (mut rd, _) = fmt::SnapshotReader::open(fs, path)?;
    let base_dirs = match header.base_epoch {
        0 => Vec::new(),
        _ => read_base_directories(fs, &base_path(path, header), header)?,
    };
    let (ack_tx, ack_rx) = crossbeam_channel::unbounded::<Result<()>>();
    let mut loader = Loader {
        db,
        path,
        header,
        partitions: n,
        ack_tx,
        ack_rx,
        outstanding: 0,
        base_dirs,
        dir: None,
        tombs: None,
        report: LoadReport {
            epoch: header.epoch,
            cut_lsn: header.cut_lsn,
            base_epoch: header.base_epoch,
            ..LoadReport::default()
        },
    };
    let mut first = true;
    loop {
        let at = rd.offset();
        let Some((k, body)) = rd.next_section()? else { break };
        let section = decode_section(k, &body, rd.version()).map_err(|e| corrupt(path, at, e.to_string()))?;
        match (first, section) {
            (true, Section::Schema(stmts)) => {
                for sql in stmts {
                    schema(&sql)?;
                }
            }
            (true, _) => return Err(corrupt(path, at, "the snapshot does not start with its schema".into())),
            (false, s) => loader.section(at, s)?,
        }
        first = false;
    }
    let mut report = loader.finish()?;
    db.inner()
        .snapshots
        .next_epoch
        .fetch_max(header.epoch + 1, Ordering::AcqRel);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The base snapshot of `path` (in the same directory).
fn base_path(path: &Path, header: &SnapshotHeader) -> PathBuf {
    fmt::base_path(path.parent().unwrap_or(Path::new(".")), header)
}
