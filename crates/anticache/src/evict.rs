//! Eviction: cold tuples out of memory into blocks on disk (DeBrabant et al. 2013 §3.2).
//!
//! An eviction round runs on the partition thread between transactions, so it is a
//! transaction of its own that blocks only its partition. It
//!
//! 1. splits the bytes to evict among the evictable tables in proportion to what each has
//!    in memory, divided by how often sampled transactions touched it since the last round
//!    (a global LRU's take if every table were as cold; hot tables give up less);
//! 2. takes each table's coldest tuples from its access tracker and packs them, serialized
//!    as in memory, into blocks of the configured size, reserving a tombstone id for each;
//! 3. places the group in the block file (one run of consecutive slots when free space
//!    allows, so one sequential write), re-points every index entry of each tuple to its
//!    tombstone and frees the tuple's memory;
//! 4. returns the blocks for the caller to write asynchronously. Until a block's write
//!    completes the caller keeps its buffer and serves reads from it; if the write fails,
//!    the caller merges the block's tuples back into memory from that buffer, so no data
//!    is ever only in a block that did not reach the disk.

use std::sync::Arc;

use permafrost_storage::{PartitionStore, TableId, Tombstone};

use crate::block::{BlockWriter, ENTRY_OVERHEAD, HEADER_LEN};
use crate::buf::{AlignedBuf, BufPool};
use crate::error::Result;
use crate::store::{BlockMeta, BlockStore, MAX_TUPLES_PER_BLOCK};

/// What one eviction round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EvictStats {
    pub tuples: u64,
    /// Bytes of tuple data evicted (serialized size).
    pub bytes: u64,
    pub blocks: u64,
}

/// A tuple packed into a block, waiting for the write.
struct Packed {
    slot: u32,
    tombstone: u32,
    offset: u32,
}

struct Built {
    table: TableId,
    buf: AlignedBuf,
    meta: BlockMeta,
    tuples: Vec<Packed>,
}

/// Splits `target` bytes among tables in proportion to what each has in memory, divided
/// by its recent accesses plus one, capped by what it has. A table gives up what a global
/// LRU would take from it if its tuples were as cold as the others': an even split drained
/// small tables (TPC-C's ITEM kept 199 of its 200,000 tuples at a quarter of the data,
/// against 17,755 in proportion) while large ones kept theirs.
fn shares(tables: &[(TableId, u64, u64)], target: u64) -> Vec<(TableId, u64)> {
    let mut out: Vec<(TableId, u64)> = tables.iter().map(|t| (t.0, 0)).collect();
    let mut left = target;
    let mut open: Vec<usize> = (0..tables.len()).filter(|&i| tables[i].1 > 0).collect();
    while left > 0 && !open.is_empty() {
        let weights: Vec<f64> = open
            .iter()
            .map(|&i| tables[i].1 as f64 / (1.0 + tables[i].2 as f64))
            .collect();
        let total: f64 = weights.iter().sum();
        let mut given = 0;
        let mut still = Vec::new();
        for (k, &i) in open.iter().enumerate() {
            let want = ((left as f64 * weights[k] / total).ceil() as u64).max(1);
            let room = tables[i].1 - out[i].1;
            let take = want.min(room).min(left - given);
            out[i].1 += take;
            given += take;
            if out[i].1 < tables[i].1 {
                still.push(i);
            }
        }
        if given == 0 {
            break;
        }
        left -= given;
        open = still;
    }
    out
}

/// Consecutive blocks to write with one call, starting at slot `start`.
pub struct WriteGroup {
    pub start: u32,
    pub blocks: Vec<(u32, Arc<AlignedBuf>)>,
}

/// What an eviction round did, and the blocks it left to write.
pub struct Evicted {
    pub stats: EvictStats,
    pub groups: Vec<WriteGroup>,
}

/// Evicts about `target` bytes of the coldest tuples of `store`'s evictable tables. Block
/// buffers come from `pool`.
pub fn evict(
    store: &mut PartitionStore,
    blocks: &mut BlockStore,
    pool: &mut BufPool,
    target: u64,
    now_micros: i64,
) -> Result<Evicted> {
    // The directory names tables in 16 bits; a table beyond that is not evicted.
    let candidates: Vec<(TableId, u64, u64)> = store
        .tables()
        .filter(|t| t.tracker().is_some_and(|tr| !tr.is_empty()) && t.schema().id <= u16::MAX as u32)
        .map(|t| {
            let per_tuple =
                t.heap().slot_size() as u64 + t.var_heap().used_bytes() as u64 / t.live_tuples().max(1) as u64;
            (
                t.schema().id,
                t.live_tuples() as u64 * per_tuple,
                t.stats.sampled_accesses,
            )
        })
        .collect();
    let mut built: Vec<Built> = Vec::new();
    let mut stats = EvictStats::default();
    let slot_size = blocks.slot_size();
    let mut scratch = Vec::new();
    let mut victims = Vec::new();
    for (table_id, bytes) in shares(&candidates, target) {
        if bytes == 0 {
            continue;
        }
        let table = store.table_mut(table_id).expect("listed above");
        let per_tuple = (table.heap().slot_size() as u64).max(1);
        victims.clear();
        table.eviction_candidates(bytes.div_ceil(per_tuple) as usize, &mut victims);
        let mut cur: Option<(BlockWriter, Vec<Packed>)> = None;
        let finish = |w: BlockWriter, tuples: Vec<Packed>, span: u16, built: &mut Vec<Built>| {
            let n = w.tuples() as u16;
            let buf = w.finish(span, table_id, now_micros);
            let meta = BlockMeta {
                table: table_id as u16,
                tuples: n,
                holes: 0,
                span,
            };
            built.push(Built {
                table: table_id,
                buf,
                meta,
                tuples,
            });
        };
        for &slot in &victims {
            scratch.clear();
            table.serialize_tuple(slot, &mut scratch);
            let tombstone = table.reserve_tombstone();
            stats.tuples += 1;
            stats.bytes += scratch.len() as u64;
            if HEADER_LEN + ENTRY_OVERHEAD + scratch.len() > slot_size {
                // Larger than a slot: a block of its own, spanning several slots.
                let span = blocks.span_for(HEADER_LEN + ENTRY_OVERHEAD + scratch.len());
                let mut w = BlockWriter::new(span as usize * slot_size);
                let offset = w.push(tombstone, &scratch);
                finish(
                    w,
                    vec![Packed {
                        slot,
                        tombstone,
                        offset,
                    }],
                    span,
                    &mut built,
                );
                continue;
            }
            if cur
                .as_ref()
                .is_some_and(|(w, _)| !w.fits(scratch.len()) || w.tuples() >= MAX_TUPLES_PER_BLOCK)
            {
                let (w, t) = cur.take().expect("checked");
                finish(w, t, 1, &mut built);
            }
            let (w, t) = cur.get_or_insert_with(|| (BlockWriter::with_buf(pool.take(slot_size)), Vec::new()));
            let offset = w.push(tombstone, &scratch);
            t.push(Packed {
                slot,
                tombstone,
                offset,
            });
        }
        if let Some((w, t)) = cur.take() {
            finish(w, t, 1, &mut built);
        }
    }
    if built.is_empty() {
        return Ok(Evicted {
            stats,
            groups: Vec::new(),
        });
    }
    let spans: Vec<u16> = built.iter().map(|b| b.meta.span).collect();
    let runs = blocks.allocate(&spans);
    let mut groups = Vec::with_capacity(runs.len());
    let mut built = built.into_iter();
    for run in runs {
        let mut group = Vec::with_capacity(run.ids.len());
        for &id in &run.ids {
            let b = built.next().expect("one id per block");
            let table = store.table_mut(b.table).expect("listed above");
            for p in &b.tuples {
                table.evict_to(
                    p.slot,
                    p.tombstone,
                    Tombstone {
                        block: id,
                        offset: p.offset,
                    },
                );
            }
            blocks.set_live(id, b.meta, b.buf.len());
            group.push((id, Arc::new(b.buf)));
            stats.blocks += 1;
        }
        groups.push(WriteGroup {
            start: run.start,
            blocks: group,
        });
    }
    for t in store.tables_mut() {
        t.stats.sampled_accesses = 0;
    }
    Ok(Evicted { stats, groups })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_tables_give_up_less() {
        let s = shares(&[(0, 1000, 0), (1, 1000, 99)], 202);
        assert_eq!(s.iter().map(|x| x.1).sum::<u64>(), 202);
        assert!(s[0].1 > 50 * s[1].1 / 2, "{s:?}");
        // Tables alike but for their size give up in proportion to it.
        let s = shares(&[(0, 1000, 0), (1, 9000, 0)], 500);
        assert_eq!(s, vec![(0, 50), (1, 450)]);
        // A table that runs out of tuples leaves the rest to the others.
        let s = shares(&[(0, 10, 0), (1, 20, 0), (2, 1000, 0)], 1000);
        assert_eq!(s, vec![(0, 10), (1, 20), (2, 970)]);
        assert_eq!(shares(&[(0, 10, 0)], 500), vec![(0, 10)]);
    }
}
