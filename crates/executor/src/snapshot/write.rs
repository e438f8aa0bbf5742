//! Serializing the stores, the block directories and the blocks still being written into a
//! snapshot file (in the writer process; the bytes' format is
//! `permafrost_durability::snapshot`).

use std::path::Path;

use permafrost_anticache::DirectoryImage;
use permafrost_durability::snapshot::{Enc, SECTION_TARGET, SnapshotHeader, SnapshotWriter, kind};
use permafrost_io::Fs;
use permafrost_storage::PartitionStore;

pub(super) type LogResult<T> = std::result::Result<T, permafrost_durability::LogError>;

/// Items of one kind cut into sections of about [`SECTION_TARGET`] bytes, each section
/// `prefix`, a u32 count and the items.
pub(super) struct Counted<'w, 'f> {
    w: &'w mut SnapshotWriter<'f>,
    kind: u32,
    prefix: Enc,
    body: Enc,
    count: u32,
    res: LogResult<()>,
}

impl<'w, 'f> Counted<'w, 'f> {
    fn new(w: &'w mut SnapshotWriter<'f>, kind: u32, prefix: Enc) -> Counted<'w, 'f> {
        Counted {
            w,
            kind,
            prefix,
            body: Enc::default(),
            count: 0,
            res: Ok(()),
        }
    }

    /// Adds an item written by `f` (nothing once a write failed).
    fn item(&mut self, f: impl FnOnce(&mut Enc)) {
        if self.res.is_err() {
            return;
        }
        f(&mut self.body);
        self.count += 1;
        if self.body.len() >= SECTION_TARGET {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.count == 0 || self.res.is_err() {
            return;
        }
        let mut e = Enc(self.prefix.0.clone());
        e.u32(self.count);
        e.0.extend_from_slice(&self.body.0);
        self.body.0.clear();
        self.count = 0;
        self.res = self.w.section(self.kind, &e.0);
    }

    fn finish(mut self) -> LogResult<()> {
        self.flush();
        self.res
    }
}

pub(super) fn part_table_prefix(p: u32, t: u32) -> Enc {
    let mut e = Enc::default();
    e.u32(p);
    e.u32(t);
    e
}

/// The child's work: everything into one file, through `fs`. `schema`: the statements that
/// made the schema, and the last value of each of its sequences of their own.
pub(super) fn write_snapshot(
    fs: &dyn Fs,
    dir: &Path,
    header: &SnapshotHeader,
    (history, sequences): (&[String], &[(u32, i64)]),
    stores: &[(u32, &PartitionStore)],
    images: &[(u32, DirectoryImage)],
) -> LogResult<()> {
    // Blocks the snapshot refers to must be on disk before it counts. The child closed the
    // descriptors it inherited, so it opens each block file again (one kept in memory, in
    // tests, has no file to open).
    for (_, img) in images {
        let Some(path) = &img.file_path else { continue };
        let synced = match fs.open(path) {
            Ok(mut f) => f.sync_data(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        synced.map_err(|e| permafrost_durability::LogError::Failed(format!("cannot sync {}: {e}", path.display())))?;
    }
    let mut w = SnapshotWriter::create(fs, dir, header)?;
    let mut e = Enc::default();
    e.u32(history.len() as u32);
    for h in history {
        e.bytes(h.as_bytes());
    }
    w.section(kind::SCHEMA, &e.0)?;
    if !sequences.is_empty() {
        let mut e = Enc::default();
        e.u32(sequences.len() as u32);
        for &(id, last) in sequences {
            e.u32(id);
            e.i64(last);
        }
        w.section(kind::SEQUENCES, &e.0)?;
    }
    for &(p, store) in stores {
        let img = images.iter().find(|(q, _)| *q == p).map(|(_, i)| i);
        let mut e = Enc::default();
        e.u32(p);
        e.u32(img.map_or(0, |i| i.slot_size as u32));
        e.u32(img.map_or(0, |i| i.file_slots));
        e.u32(img.map_or(0, |i| i.live));
        w.section(kind::PARTITION, &e.0)?;
        if let Some(img) = img {
            let mut prefix = Enc::default();
            prefix.u32(p);
            let mut removed = Counted::new(&mut w, kind::BLOCKS_REMOVED, Enc(prefix.0.clone()));
            for id in &img.directory.removed {
                removed.item(|e| e.u32(*id));
            }
            removed.finish()?;
            let mut added = Counted::new(&mut w, kind::BLOCKS, prefix);
            for (id, m) in &img.directory.added {
                added.item(|e| {
                    e.u32(*id);
                    e.u16(m.table);
                    e.u16(m.tuples);
                    e.u16(m.span);
                });
            }
            added.finish()?;
            for (id, span, buf) in &img.pending {
                let len = (*span as usize * img.slot_size).min(buf.len());
                let mut e = Enc::default();
                e.u32(p);
                e.u32(*id);
                e.bytes(&buf[..len]);
                w.section(kind::PENDING_BLOCK, &e.0)?;
            }
        }
        for t in store.tables() {
            let schema = t.schema();
            let tid = schema.id;
            let tombs = t.tombstones();
            let bound = tombs.id_bound();
            let mut e = part_table_prefix(p, tid);
            e.bytes(schema.name.as_bytes());
            e.i64(t.sequence());
            e.u32(bound);
            e.u32(t.index_count() as u32);
            w.section(kind::TABLE, &e.0)?;
            // Tombstones by id, free ones as u32::MAX.
            let mut first = 0u32;
            while first < bound {
                let n = (bound - first).min(128 * 1024);
                let mut e = part_table_prefix(p, tid);
                e.u32(first);
                e.u32(n);
                for id in first..first + n {
                    match tombs.get(id) {
                        Some(ts) => {
                            e.u32(ts.block);
                            e.u32(ts.offset);
                        }
                        None => {
                            e.u32(u32::MAX);
                            e.u32(0);
                        }
                    }
                }
                w.section(kind::TOMBSTONES, &e.0)?;
                first += n;
            }
            for i in 0..t.index_count() {
                let mut prefix = part_table_prefix(p, tid);
                prefix.u32(i as u32);
                let mut keys = Counted::new(&mut w, kind::EVICTED_KEYS, prefix);
                t.for_each_evicted_key(i, |k, id| {
                    keys.item(|e| {
                        e.u32(id);
                        e.key(&k);
                    })
                });
                keys.finish()?;
            }
            let mut rows = Counted::new(&mut w, kind::ROWS, part_table_prefix(p, tid));
            let mut tuple = Vec::new();
            t.for_each_cold_to_hot(|slot| {
                rows.item(|e| {
                    tuple.clear();
                    t.serialize_tuple(slot, &mut tuple);
                    e.bytes(&tuple);
                })
            });
            rows.finish()?;
        }
    }
    w.finish()?;
    Ok(())
}
