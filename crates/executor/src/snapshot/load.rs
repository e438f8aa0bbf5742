//! Loading a snapshot at recovery: each partition gets its block directory, tombstones,
//! the index entries of its evicted tuples and its rows, section by section.

use permafrost_durability::codec::DecodeError;

use super::*;

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

/// A part of a snapshot for one partition to load ([`Msg::Restore`]).
pub(crate) type Restore =
    Box<dyn FnOnce(&mut PartitionStore, Option<&mut permafrost_anticache::AntiCache>) -> Result<()> + Send>;

/// Table `t` of a partition being loaded.
pub(super) fn table_of(store: &mut PartitionStore, t: u32) -> Result<&mut permafrost_storage::Table> {
    store
        .table_mut(t)
        .ok_or_else(|| Error::Recovery(format!("snapshot table {t} does not exist")))
}

/// A BLOCKS section's entries after its partition: count, then per entry id, table,
/// tuples, span (`v1`: and holes before the span, ignored: they are recounted at load).
pub(super) fn directory_entries(d: &mut Dec<'_>, v1: bool) -> std::result::Result<Vec<(u32, BlockMeta)>, DecodeError> {
    let count = d.count(if v1 { 12 } else { 10 }, "block count")?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let id = d.u32("block id")?;
        let (table, tuples) = (d.u16("block table")?, d.u16("block tuples")?);
        if v1 {
            d.u16("block holes")?;
        }
        let meta = BlockMeta {
            table,
            tuples,
            holes: 0,
            span: d.u16("block span")?,
        };
        out.push((id, meta));
    }
    Ok(out)
}

/// The whole block directories of base snapshot `path` (which the caller has checked,
/// [`fmt::newest_valid`]), by partition.
pub(super) fn read_base_directories(path: &Path, of: &SnapshotHeader) -> Result<Vec<Vec<(u32, BlockMeta)>>> {
    let (mut rd, h) = fmt::SnapshotReader::open(path)?;
    let bad = |at: u64, detail: String| {
        Error::from(permafrost_durability::LogError::SnapshotCorrupt {
            file: path.to_path_buf(),
            offset: at,
            detail,
        })
    };
    if h.epoch != of.base_epoch || h.base_epoch != 0 || h.partitions != of.partitions {
        return Err(bad(
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
        let mut d = Dec::new(&body);
        let bad_at = |e: DecodeError| bad(at, e.to_string());
        let p = d.u32("partition").map_err(bad_at)?;
        let Some(dir) = dirs.get_mut(p as usize) else {
            return Err(bad(at, format!("partition {p} of {}", of.partitions)));
        };
        dir.extend(directory_entries(&mut d, rd.version() == 1).map_err(bad_at)?);
        d.finish().map_err(bad_at)?;
    }
    Ok(dirs)
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
    let (mut rd, _) = fmt::SnapshotReader::open(path)?;
    let v1 = rd.version() == 1;
    let (ack_tx, ack_rx) = crossbeam_channel::unbounded::<Result<()>>();
    let mut outstanding = 0usize;
    let mut report = LoadReport {
        epoch: header.epoch,
        cut_lsn: header.cut_lsn,
        base_epoch: header.base_epoch,
        ..LoadReport::default()
    };
    let bad = |at: u64, detail: String| {
        Error::from(permafrost_durability::LogError::SnapshotCorrupt {
            file: path.to_path_buf(),
            offset: at,
            detail,
        })
    };
    let mut send = |p: u32, f: Restore, outstanding: &mut usize| -> Result<()> {
        while *outstanding >= 64 {
            ack_rx.recv().map_err(|_| Error::Shutdown)??;
            *outstanding -= 1;
        }
        db.shared().senders[p as usize]
            .send(Msg::Restore(f, ack_tx.clone()))
            .map_err(|_| Error::Shutdown)?;
        *outstanding += 1;
        Ok(())
    };
    // The whole directories of the base snapshot, by partition, if this one lists
    // differences from it.
    let mut base_dirs: Vec<Vec<(u32, BlockMeta)>> = match header.base_epoch {
        0 => Vec::new(),
        _ => read_base_directories(&fmt::base_path(path.parent().unwrap_or(Path::new(".")), header), header)?,
    };
    // The directory of the partition being read, sent before its first table.
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
    let mut dir: Option<Dir> = None;
    // The tombstones of the table being read.
    let mut tombs: Option<(u32, u32, Vec<Option<Tombstone>>)> = None;
    let epoch = header.epoch;
    let flush_dir = |dir: &mut Option<Dir>,
                     outstanding: &mut usize,
                     send: &mut dyn FnMut(u32, Restore, &mut usize) -> Result<()>|
     -> Result<()> {
        if let Some(mut d) = dir.take() {
            let p = d.p;
            if !d.removed.is_empty() {
                let removed: std::collections::HashSet<u32> = d.removed.iter().copied().collect();
                let before = d.base.len();
                d.base.retain(|(id, _)| !removed.contains(id));
                if before - d.base.len() != removed.len() || removed.len() != d.removed.len() {
                    return Err(bad(
                        0,
                        format!("partition {p}: the blocks removed since the base are not all in the base's directory"),
                    ));
                }
            }
            d.base.append(&mut d.blocks);
            if let Some(live) = d.live
                && d.base.len() != live as usize
            {
                return Err(bad(
                    0,
                    format!(
                        "partition {p}: the block directory has {} blocks, its PARTITION section says {live}",
                        d.base.len(),
                    ),
                ));
            }
            send(
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
                outstanding,
            )?;
        }
        Ok(())
    };
    let flush_tombs = |tombs: &mut Option<(u32, u32, Vec<Option<Tombstone>>)>,
                       outstanding: &mut usize,
                       send: &mut dyn FnMut(u32, Restore, &mut usize) -> Result<()>|
     -> Result<()> {
        if let Some((p, t, entries)) = tombs.take() {
            send(
                p,
                Box::new(move |store, _| {
                    let table = table_of(store, t)?;
                    table.restore_tombstones(entries.into_iter());
                    Ok(())
                }),
                outstanding,
            )?;
        }
        Ok(())
    };
    let mut first = true;
    loop {
        let at = rd.offset();
        let Some((k, body)) = rd.next_section()? else { break };
        let mut d = Dec::new(&body);
        let bad_at = |e: DecodeError| bad(at, e.to_string());
        if first {
            if k != kind::SCHEMA {
                return Err(bad(at, "the snapshot does not start with its schema".into()));
            }
            first = false;
            let count = d.count(4, "count").map_err(bad_at)?;
            for _ in 0..count {
                let sql = d.string("schema statement").map_err(bad_at)?;
                schema(&sql)?;
            }
            d.finish().map_err(bad_at)?;
            continue;
        }
        match k {
            kind::PARTITION => {
                flush_tombs(&mut tombs, &mut outstanding, &mut send)?;
                flush_dir(&mut dir, &mut outstanding, &mut send)?;
                let p = d.u32("partition").map_err(bad_at)?;
                let slot_size = d.u32("slot size").map_err(bad_at)? as usize;
                let file_slots = d.u32("file slots").map_err(bad_at)?;
                // Version 1 has no live count: the directory is whole, its length is it.
                let live = if v1 {
                    None
                } else {
                    Some(d.u32("live blocks").map_err(bad_at)?)
                };
                d.finish().map_err(bad_at)?;
                report.blocks += live.unwrap_or(0) as u64;
                if p >= n {
                    return Err(bad(at, format!("partition {p} of {n}")));
                }
                let base = match base_dirs.get_mut(p as usize) {
                    Some(b) => std::mem::take(b),
                    None => Vec::new(),
                };
                dir = Some(Dir {
                    p,
                    slot_size,
                    file_slots,
                    live,
                    base,
                    removed: Vec::new(),
                    blocks: Vec::new(),
                    pending: Vec::new(),
                });
            }
            kind::BLOCKS | kind::BLOCKS_REMOVED | kind::PENDING_BLOCK => {
                let p = d.u32("partition").map_err(bad_at)?;
                let Some(cur) = dir.as_mut().filter(|c| c.p == p) else {
                    return Err(bad(at, "block directory outside its partition".into()));
                };
                if k == kind::BLOCKS {
                    let entries = directory_entries(&mut d, v1).map_err(bad_at)?;
                    if v1 {
                        report.blocks += entries.len() as u64;
                    }
                    cur.blocks.extend(entries);
                } else if k == kind::BLOCKS_REMOVED {
                    if header.base_epoch == 0 || v1 {
                        return Err(bad(at, "blocks removed in a snapshot without a base".into()));
                    }
                    let count = d.count(4, "count").map_err(bad_at)?;
                    for _ in 0..count {
                        cur.removed.push(d.u32("removed block").map_err(bad_at)?);
                    }
                } else {
                    let id = d.u32("block id").map_err(bad_at)?;
                    let bytes = d.bytes("block bytes").map_err(bad_at)?.to_vec();
                    cur.pending.push((id, bytes));
                }
                d.finish().map_err(bad_at)?;
            }
            kind::TABLE => {
                flush_tombs(&mut tombs, &mut outstanding, &mut send)?;
                flush_dir(&mut dir, &mut outstanding, &mut send)?;
                let p = d.u32("partition").map_err(bad_at)?;
                let t = d.u32("table").map_err(bad_at)?;
                let name = d.string("table name").map_err(bad_at)?;
                let seq = d.i64("sequence").map_err(bad_at)?;
                let bound = d.u32("sequence bound").map_err(bad_at)?;
                let indexes = d.u32("index count").map_err(bad_at)? as usize;
                d.finish().map_err(bad_at)?;
                if p >= n {
                    return Err(bad(at, format!("partition {p} of {n}")));
                }
                send(
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
                    &mut outstanding,
                )?;
                tombs = Some((p, t, Vec::with_capacity((bound as usize).min(1 << 24))));
            }
            kind::TOMBSTONES => {
                let p = d.u32("partition").map_err(bad_at)?;
                let t = d.u32("table").map_err(bad_at)?;
                let from = d.u32("first item").map_err(bad_at)?;
                let count = d.count(8, "count").map_err(bad_at)?;
                let Some((_, _, entries)) = tombs
                    .as_mut()
                    .filter(|(q, u, e)| *q == p && *u == t && e.len() == from as usize)
                else {
                    return Err(bad(at, "tombstones out of order".into()));
                };
                for _ in 0..count {
                    let block = d.u32("block").map_err(bad_at)?;
                    let offset = d.u32("offset").map_err(bad_at)?;
                    if block == u32::MAX {
                        entries.push(None);
                    } else {
                        entries.push(Some(Tombstone { block, offset }));
                        report.evicted += 1;
                    }
                }
                d.finish().map_err(bad_at)?;
            }
            kind::EVICTED_KEYS | kind::ROWS => {
                flush_tombs(&mut tombs, &mut outstanding, &mut send)?;
                let p = d.u32("partition").map_err(bad_at)?;
                let t = d.u32("table").map_err(bad_at)?;
                if p >= n {
                    return Err(bad(at, format!("partition {p} of {n}")));
                }
                if k == kind::EVICTED_KEYS {
                    let index = d.u32("u32").map_err(bad_at)? as usize;
                    let count = d.count(9, "count").map_err(bad_at)?;
                    let mut keys = Vec::with_capacity(count);
                    for _ in 0..count {
                        let id = d.u32("block id").map_err(bad_at)?;
                        keys.push((id, d.key("key").map_err(bad_at)?));
                    }
                    d.finish().map_err(bad_at)?;
                    send(
                        p,
                        Box::new(move |store, _| {
                            let table = table_of(store, t)?;
                            for (id, key) in keys {
                                table.restore_evicted_key(index, key, id)?;
                            }
                            Ok(())
                        }),
                        &mut outstanding,
                    )?;
                } else {
                    let count = d.count(4, "count").map_err(bad_at)?;
                    let mut rows = Vec::with_capacity(count);
                    for _ in 0..count {
                        rows.push(d.bytes("bytes").map_err(bad_at)?.to_vec());
                    }
                    d.finish().map_err(bad_at)?;
                    report.rows += count as u64;
                    send(
                        p,
                        Box::new(move |store, _| {
                            let table = table_of(store, t)?;
                            for r in rows {
                                table.load_tuple(&r)?;
                            }
                            Ok(())
                        }),
                        &mut outstanding,
                    )?;
                }
            }
            other => return Err(bad(at, format!("unknown section kind {other}"))),
        }
    }
    flush_tombs(&mut tombs, &mut outstanding, &mut send)?;
    flush_dir(&mut dir, &mut outstanding, &mut send)?;
    // Every tombstone is back: count the merged-back tuples of each block (the snapshot does
    // not save them).
    for p in 0..n {
        send(
            p,
            Box::new(|store, ac| match ac {
                Some(ac) => ac.recount_holes(store).map_err(Error::from),
                None => Ok(()),
            }),
            &mut outstanding,
        )?;
    }
    let mut first_err = None;
    while outstanding > 0 {
        match ack_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => return Err(Error::Shutdown),
        }
        outstanding -= 1;
    }
    if let Some(e) = first_err {
        return Err(Error::Recovery(format!("loading snapshot {}: {e}", path.display())));
    }
    let snaps = &db.inner().snapshots;
    snaps.next_epoch.fetch_max(header.epoch + 1, Ordering::AcqRel);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
