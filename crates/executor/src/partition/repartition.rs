//! A table's partitioning changed after its rows arrived ([`DdlChange::Repartition`]:
//! `ALTER TABLE ... SET (partition_by = ..., replicated = ...)`, or a choice refined by a
//! CREATE TABLE, permafrost_sql's placement): every row moves to the partition of its new
//! key, or to every partition for a replicated table.
//!
//! The change is a schema change like any other: one multi-partition transaction holding
//! every store, all or nothing. Rows in memory are serialized from the stores that hold them
//! (every partition of a partitioned table; the first of a replicated one, whose rows are the
//! same everywhere) and loaded into a new table at each partition, the old tables kept until
//! every partition has its new one. Evicted rows are read from their blocks before, at each
//! partition while it goes on serving ([`Msg::EvictedTuples`], `evicted_moving`), counted
//! in the statement pool until the change is done, and loaded like the others (in memory, at
//! the hot end: the anti-cache evicts them again as memory requires); the old blocks are
//! freed with the old table (`AntiCache::drop_missing_tables`). Tuples evicted between that
//! read and the change make it fail with `EvictedDuringMove`, and the registry reads again.
//!
//! [`Msg::EvictedTuples`]: super::msg::Msg::EvictedTuples

use std::sync::{Arc, Mutex};

use permafrost_anticache::AntiCache;
use permafrost_sql::workmem::{MemoryPool, Reservation};
use permafrost_storage::partitioning::partition_of;
use permafrost_storage::{DetachedRow, PartitionStore, StorageError, Table, TableId, TableSchema};

use crate::error::Result;

/// How many tuples are read between two looks at the statement pool.
const POOL_CHECK_EVERY: usize = 4096;

/// One partition's evicted tuples of the table being moved, read before the change.
pub(crate) struct Moving {
    /// Its evicted tuples when they were read (the change checks none came since).
    pub(crate) evicted: usize,
    /// Each tuple serialized, with the partition it goes to (`None`: every partition).
    pub(crate) tuples: Vec<(Option<u32>, Vec<u8>)>,
}

/// The evicted tuples of a table being moved, by partition ([`MpWork::Ddl`]).
///
/// [`MpWork::Ddl`]: super::msg::MpWork::Ddl
pub(crate) struct MovingTuples {
    pub(crate) table: TableId,
    /// `None` where nothing was read (nothing evicted there, or not needed: a replicated
    /// table's rows are read at its first partition).
    pub(crate) by_partition: Vec<Mutex<Option<Moving>>>,
    /// What they take, counted in the statement pool while they are held.
    pub(crate) _held: Vec<Reservation>,
}

/// The partition of a row of `schema` whose serialized bytes `row` holds (`None`: every one).
fn destination(schema: &TableSchema, row: &permafrost_storage::Row<'_>, partitions: u32) -> Option<u32> {
    schema
        .partition_column
        .map(|c| partition_of(row.get(c), &schema.columns[c].ty, partitions))
}

/// At partition `p`, between transactions: its evicted tuples of the table of `schema` (the
/// table's next definition), read from their blocks, each with its destination under
/// `schema`, counted in `pool` as they are read (53200 when it cannot hold them). `None`
/// when the partition has no such table, or the table is replicated and `p` is not the
/// first partition (the first has every row).
pub(crate) fn evicted_moving(
    ac: &mut AntiCache,
    store: &PartitionStore,
    p: u32,
    schema: &TableSchema,
    partitions: u32,
    pool: &Arc<MemoryPool>,
) -> Result<Option<(Moving, Reservation)>> {
    let Some(table) = store.table(schema.id) else {
        return Ok(None);
    };
    if table.schema().partition_column.is_none() && p > 0 {
        return Ok(None);
    }
    let mut held = Reservation::default();
    let mut moving = Moving {
        evicted: table.evicted_tuples(),
        tuples: Vec::with_capacity(table.evicted_tuples()),
    };
    let mut row = DetachedRow::new(table.layout().clone());
    let mut bytes = 0usize;
    ac.evicted_tuples(table, |_, data| -> Result<()> {
        let to = destination(schema, &row.load(data)?, partitions);
        moving.tuples.push((to, data.to_vec()));
        bytes += data.len() + 32;
        if moving.tuples.len().is_multiple_of(POOL_CHECK_EVERY) {
            held.set_exact(bytes, pool)?;
        }
        Ok(())
    })?;
    held.set_exact(bytes, pool)?;
    Ok(Some((moving, held)))
}

/// Gives the table of `schema` its new partitioning at every store (`stores`: all
/// `partitions` of them, in order), with the evicted tuples read before (`evicted`); all or
/// nothing. Returns each store's table as it was, to put back if the transaction does not
/// end well (a transaction block).
pub(crate) fn repartition(
    stores: &mut [&mut PartitionStore],
    schema: &Arc<TableSchema>,
    evicted: Option<&MovingTuples>,
    tracker: &dyn Fn() -> Box<dyn permafrost_storage::AccessTracker>,
    partitions: u32,
) -> Result<Vec<Table>> {
    if stores.len() != partitions as usize {
        return Err(StorageError::Internal("a table repartitioned without every partition".into()).into());
    }
    let old = stores[0]
        .table(schema.id)
        .ok_or_else(|| StorageError::Schema(format!("table id {} does not exist", schema.id)))?
        .schema()
        .clone();
    // A replicated table's rows are the same at every partition: its first has them all.
    let sources = if old.partition_column.is_none() {
        1
    } else {
        stores.len()
    };
    let column = schema.partition_column.map(|c| (c, &schema.columns[c].ty));
    let mut tuples: Vec<(Option<u32>, Vec<u8>)> = Vec::new();
    for (p, s) in stores.iter().enumerate().take(sources) {
        let t = s.table(schema.id).expect("the table is at every partition");
        let now = t.evicted_tuples();
        if now > 0 {
            let read = evicted
                .filter(|e| e.table == schema.id)
                .and_then(|e| e.by_partition.get(p))
                .and_then(|m| m.lock().unwrap_or_else(|e| e.into_inner()).take());
            match read {
                Some(m) if m.evicted == now => tuples.extend(m.tuples),
                Some(_) => {
                    return Err(StorageError::EvictedDuringMove {
                        table: old.name.clone(),
                    }
                    .into());
                }
                None => {
                    return Err(StorageError::EvictedRepartition {
                        table: old.name.clone(),
                        evicted: now,
                    }
                    .into());
                }
            }
        }
        s.tuples_by_partition(schema.id, column, partitions, &mut tuples)?;
    }
    let evictable = schema.evictable;
    let mut olds = Vec::with_capacity(stores.len());
    for (p, s) in stores.iter_mut().enumerate() {
        let mine = tuples
            .iter()
            .filter(|(to, _)| to.is_none_or(|to| to as usize == p))
            .map(|(_, t)| t.as_slice());
        match s.repartition_table(schema.clone(), mine, evictable.then(tracker)) {
            Ok(old) => olds.push(old),
            Err(e) => {
                undo(stores, schema.id, olds);
                return Err(e.into());
            }
        }
    }
    Ok(olds)
}

/// Puts back the tables `repartition` replaced (the first `olds.len()` stores').
pub(crate) fn undo(stores: &mut [&mut PartitionStore], id: TableId, olds: Vec<Table>) {
    for (s, old) in stores.iter_mut().zip(olds) {
        let _ = s.take_table(id);
        let _ = s.restore_table(old);
    }
}
