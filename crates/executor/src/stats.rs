//! Per-table figures: what of each table is in memory (hot) and what is in the anti-cache's
//! blocks on disk (cold), summed over partitions.
//!
//! Every partition reads its own tables and block directory between transactions (one
//! message to each partition, answered in parallel); nothing is scanned: the counts come
//! from the heaps, out-of-line value heaps, indexes and tombstone tables, and from the
//! per-table tallies the block store keeps as blocks are written, merged and freed
//! ([`permafrost_anticache::store::TableBlocks`]).

use std::collections::BTreeMap;

use permafrost_anticache::AntiCache;
use permafrost_storage::{PartitionStore, TableId};

use crate::database::Database;
use crate::error::{Error, Result};
use crate::partition::msg::Msg;

/// One table's figures, summed over all partitions.
///
/// A replicated table has a full copy at every partition; its figures count every copy
/// (they are memory and disk actually used), so its tuple counts are the row count times the
/// number of partitions.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TableStats {
    /// The table's name.
    pub name: String,
    /// The table's id (the same at every partition).
    pub id: TableId,
    /// Whether cold tuples of the table may be evicted.
    pub evictable: bool,
    /// Whether the table is replicated at every partition.
    pub replicated: bool,
    /// Tuples in memory.
    pub hot_tuples: u64,
    /// Bytes of the tuple slots holding those tuples (fixed-size part, header included).
    pub tuple_bytes: u64,
    /// Bytes of their out-of-line values (long strings and byte arrays).
    pub string_bytes: u64,
    /// Bytes of the dynamic stage of the table's indexes: the entries of tuples in memory.
    pub index_bytes: u64,
    /// Bytes of the compact stage of the table's indexes: the entries of evicted tuples
    /// (indexes stay in memory whole; these entries are the compact part).
    pub compact_index_bytes: u64,
    /// Bytes of the tombstones of evicted tuples (the Evicted Table).
    pub tombstone_bytes: u64,
    /// Tuples evicted to the anti-cache (live tombstones).
    pub cold_tuples: u64,
    /// Live anti-cache blocks holding the table's evicted tuples.
    pub cold_blocks: u64,
    /// Bytes those blocks occupy in the block files (slots × slot size). Exact for the file
    /// space, and therefore an upper bound on the evicted tuples' own size: it includes block
    /// headers, padding at the end of each block, and the stale copies of tuples merged back
    /// by tuple-merge (counted in [`TableStats::stale_tuples`]) until their block is freed.
    pub cold_bytes: u64,
    /// Tuples merged back into memory whose stale copies still sit in live blocks.
    pub stale_tuples: u64,
    /// Statements that ran over several partitions because of the table's partitioning
    /// (`permafrost_sql::Prepared::crossing`), since the server started: a user sees here
    /// when the partitioning chosen for it is wrong.
    pub crossing_statements: u64,
}

impl TableStats {
    /// Bytes the table's tuples take in memory: tuple slots plus out-of-line values (indexes
    /// and tombstones not included).
    pub fn hot_bytes(&self) -> u64 {
        self.tuple_bytes + self.string_bytes
    }

    /// Everything the table holds in memory: tuples, out-of-line values, both stages of its
    /// indexes, tombstones.
    pub fn memory_bytes(&self) -> u64 {
        self.hot_bytes() + self.index_bytes + self.compact_index_bytes + self.tombstone_bytes
    }

    fn add(&mut self, o: &TableStats) {
        self.hot_tuples += o.hot_tuples;
        self.tuple_bytes += o.tuple_bytes;
        self.string_bytes += o.string_bytes;
        self.index_bytes += o.index_bytes;
        self.compact_index_bytes += o.compact_index_bytes;
        self.tombstone_bytes += o.tombstone_bytes;
        self.cold_tuples += o.cold_tuples;
        self.cold_blocks += o.cold_blocks;
        self.cold_bytes += o.cold_bytes;
        self.stale_tuples += o.stale_tuples;
    }
}

/// One partition's figures for each of its tables, in table id order.
fn partition_tables(store: &PartitionStore, ac: Option<&AntiCache>) -> Vec<TableStats> {
    store
        .tables()
        .map(|t| {
            let schema = t.schema();
            let m = t.memory_usage();
            let blocks = ac
                .map(|ac| ac.block_store().table_blocks(schema.id))
                .unwrap_or_default();
            let slot = ac.map_or(0, |ac| ac.block_store().slot_size() as u64);
            TableStats {
                name: schema.name.clone(),
                id: schema.id,
                evictable: schema.evictable,
                replicated: schema.is_replicated(),
                hot_tuples: t.live_tuples() as u64,
                tuple_bytes: m.tuple_used_bytes,
                string_bytes: m.string_used_bytes,
                index_bytes: m.index_bytes,
                compact_index_bytes: m.compact_index_bytes,
                tombstone_bytes: m.tombstone_bytes,
                cold_tuples: t.evicted_tuples() as u64,
                cold_blocks: blocks.blocks,
                cold_bytes: blocks.slots * slot,
                stale_tuples: blocks.holes,
                crossing_statements: 0,
            }
        })
        .collect()
}

impl Database {
    /// Hot and cold figures of every table, summed over partitions, ordered by table name.
    ///
    /// Each partition answers between two of its transactions, so this waits behind the
    /// work already queued at the partitions (call it off async executors, e.g. from
    /// `spawn_blocking`). The figures of different partitions are taken at slightly
    /// different moments.
    pub fn table_stats(&self) -> Result<Vec<TableStats>> {
        let senders = &self.shared().senders;
        let (tx, rx) = crossbeam_channel::bounded(senders.len());
        for s in senders {
            let tx = tx.clone();
            s.send(Msg::Observe(Box::new(move |store, ac| {
                let _ = tx.send(partition_tables(store, ac));
            })))
            .map_err(|_| Error::Shutdown)?;
        }
        drop(tx);
        let mut by_id: BTreeMap<TableId, TableStats> = BTreeMap::new();
        for _ in 0..senders.len() {
            for t in rx.recv().map_err(|_| Error::Shutdown)? {
                match by_id.get_mut(&t.id) {
                    Some(sum) => sum.add(&t),
                    None => {
                        by_id.insert(t.id, t);
                    }
                }
            }
        }
        let crossings = self
            .shared()
            .crossings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for (id, n) in crossings {
            if let Some(t) = by_id.get_mut(&id) {
                t.crossing_statements = n;
            }
        }
        let mut out: Vec<TableStats> = by_id.into_values().collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_add_every_figure() {
        let one = TableStats {
            name: "t".into(),
            hot_tuples: 1,
            tuple_bytes: 2,
            string_bytes: 3,
            index_bytes: 4,
            tombstone_bytes: 5,
            cold_tuples: 6,
            cold_blocks: 7,
            cold_bytes: 8,
            stale_tuples: 9,
            ..TableStats::default()
        };
        let mut sum = one.clone();
        sum.add(&one);
        assert_eq!(
            sum,
            TableStats {
                name: "t".into(),
                hot_tuples: 2,
                tuple_bytes: 4,
                string_bytes: 6,
                index_bytes: 8,
                tombstone_bytes: 10,
                cold_tuples: 12,
                cold_blocks: 14,
                cold_bytes: 16,
                stale_tuples: 18,
                ..TableStats::default()
            }
        );
        assert_eq!(sum.hot_bytes(), 10);
        assert_eq!(sum.memory_bytes(), 28);
    }
}
