//! A table's evicted tuples read in place, for a schema change over a table part of which is
//! on disk: their keys for an index built over the table (`CREATE INDEX`; the index points
//! at the tombstones, as the table's other indexes do), their bytes for rows that move to
//! other partitions (`ALTER TABLE ... SET (partition_by = ...)`). The live tombstones are
//! grouped by block, each block is read once, in file order, on this thread, and each tuple
//! is handed to the caller at once (nothing is collected here, nothing merged back).

use std::collections::BTreeSet;

use permafrost_storage::index::{IndexKey, KeyEncoder};
use permafrost_storage::{DetachedRow, Table, Tombstone};

use crate::AntiCache;
use crate::block::BlockReader;
use crate::buf::AlignedBuf;
use crate::error::{AntiCacheError, Result};

impl AntiCache {
    /// Calls `f` with the tombstone and the key `enc` makes of `columns` of every evicted
    /// tuple of `table` (`Err(column)` naming a NULL one of them, or `Err(usize::MAX)` for
    /// a value the key cannot hold), block by block in file order (the blocks are read
    /// here: call between transactions); stops at the first error `f` returns.
    pub fn evicted_keys<E: From<AntiCacheError>>(
        &mut self,
        table: &Table,
        columns: &[usize],
        enc: &KeyEncoder,
        mut f: impl FnMut(u32, std::result::Result<IndexKey, usize>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut row = DetachedRow::new(table.layout().clone());
        self.evicted_tuples(table, |tombstone, bytes| -> std::result::Result<(), E> {
            let r = row.load(bytes).map_err(AntiCacheError::Storage)?;
            let key = enc.encode(columns.iter().map(|&c| r.get(c))).ok_or_else(|| {
                columns
                    .iter()
                    .copied()
                    .find(|&c| r.get(c).is_null())
                    .unwrap_or(usize::MAX)
            });
            f(tombstone, key)
        })
    }

    /// Calls `f` with the tombstone and the serialized bytes (as `Table::serialize_tuple`
    /// writes them) of every evicted tuple of `table`, block by block in file order (the
    /// blocks are read here: call between transactions); stops at the first error `f`
    /// returns. Nothing is merged back.
    pub fn evicted_tuples<E: From<AntiCacheError>>(
        &mut self,
        table: &Table,
        mut f: impl FnMut(u32, &[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let blocks: BTreeSet<u32> = table.tombstones().iter().map(|(_, t)| t.block).collect();
        for block in blocks {
            let buf = self.read_block(block)?;
            let r = tuples_of_block(&buf, block, table, &mut f);
            self.pool.give(buf);
            r?;
        }
        Ok(())
    }

    /// Block `b`'s bytes, read on this thread: from its write buffer while it is being
    /// written, else from the file.
    fn read_block(&mut self, b: u32) -> Result<AlignedBuf> {
        if let Some(w) = self.writing.get(&b) {
            let mut copy = self.pool.take(w.len());
            copy.copy_from_slice(w);
            return Ok(copy);
        }
        let (off, len) = self.store.location(b).ok_or_else(|| AntiCacheError::Corrupt {
            block: b,
            what: "a tombstone names a block the directory does not hold".into(),
        })?;
        let mut buf = self.pool.take(len);
        if buf.len() != len {
            buf = AlignedBuf::new(len);
        }
        let file = self.store.file().clone();
        match file.read_at(&mut buf, off) {
            Ok(()) => {
                self.store.note_read(len);
                Ok(buf)
            }
            Err(e) => {
                self.pool.give(buf);
                Err(AntiCacheError::io("read", file.path(), &e))
            }
        }
    }
}

/// Calls `f` with the tombstone and bytes of each tuple of `block` (its bytes `buf`, of the
/// table `table`) that is still evicted there.
fn tuples_of_block<E: From<AntiCacheError>>(
    buf: &[u8],
    block: u32,
    table: &Table,
    f: &mut impl FnMut(u32, &[u8]) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let table_id = table.schema().id;
    let reader = BlockReader::open(buf, block)?;
    if reader.header.table != table_id {
        return Err(AntiCacheError::Corrupt {
            block,
            what: format!(
                "holds table {} where table {table_id} was expected",
                reader.header.table
            ),
        }
        .into());
    }
    for e in reader.entries() {
        let (offset, tombstone, bytes) = e?;
        let at = Tombstone { block, offset };
        if table.tombstone_is(tombstone, at) {
            f(tombstone, bytes)?;
        }
    }
    Ok(())
}
