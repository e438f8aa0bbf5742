//! Merging fetched blocks back into memory (DeBrabant et al. 2013 §3.4).
//!
//! * **Block-merge**: every live tuple of the block comes back; the ones a transaction asked
//!   for go to the hot end of the LRU chain, the others to the cold end (so they are the
//!   first to leave again). The block is freed.
//! * **Tuple-merge**: only the requested tuples come back; the block stays on disk with
//!   holes where they were (stale copies that are never read again, because their tombstones
//!   are gone). Once more than `hole_threshold` of a block is holes, the next fetch of it
//!   merges all its remaining tuples (lazy compaction) and frees it.
//!
//! A tuple in a block is live only if its table's tombstone still names this block and
//! offset; anything else is a hole.

use permafrost_storage::{PartitionStore, Tombstone};

use crate::block::BlockReader;
use crate::error::{AntiCacheError, Result};
use crate::store::BlockStore;

/// How much of a fetched block comes back into memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MergePolicy {
    Block,
    Tuple {
        /// Fraction of a block's tuples that may be holes before the block is merged whole.
        hole_threshold: f64,
    },
}

impl MergePolicy {
    pub fn name(&self) -> &'static str {
        match self {
            MergePolicy::Block => "block",
            MergePolicy::Tuple { .. } => "tuple",
        }
    }
}

/// What a merge did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MergeStats {
    pub merged: u32,
    pub requested_merged: u32,
    /// No live tuple is left in the block: the caller retires it.
    pub retire: bool,
}

/// Merges the tuples of fetched block `block` (its bytes in `data`) that `policy` wants
/// back; `requested` are the tombstone ids transactions asked for.
pub fn merge_block(
    store: &mut PartitionStore,
    blocks: &mut BlockStore,
    block: u32,
    data: &[u8],
    requested: &[u32],
    policy: MergePolicy,
) -> Result<MergeStats> {
    let mut stats = MergeStats::default();
    let Some(meta) = blocks.meta(block) else {
        // Already merged whole and freed by an earlier fetch.
        return Ok(stats);
    };
    let reader = BlockReader::open(data, block)?;
    if reader.header.table != meta.table as u32 || reader.header.tuples != meta.tuples as u32 {
        return Err(AntiCacheError::Corrupt {
            block,
            what: "header does not match the directory".into(),
        });
    }
    let Some(table) = store.table_mut(meta.table as u32) else {
        stats.retire = true;
        return Ok(stats);
    };
    let (tuples, holes) = (meta.tuples as u32, meta.holes as u32);
    let mut entries = Vec::with_capacity(tuples as usize);
    for e in reader.entries() {
        let (offset, tomb, bytes) = e.map_err(|err| match err {
            AntiCacheError::Corrupt { what, .. } => AntiCacheError::Corrupt { block, what },
            other => other,
        })?;
        let live = table.tombstone_is(tomb, Tombstone { block, offset });
        entries.push((tomb, bytes, live, requested.contains(&tomb)));
    }
    let whole = match policy {
        MergePolicy::Block => true,
        MergePolicy::Tuple { hole_threshold } => {
            let wanted = entries.iter().filter(|e| e.2 && e.3).count() as u32;
            (holes + wanted) as f64 > hole_threshold * tuples as f64
        }
    };
    for (tomb, bytes, live, wanted) in entries {
        if !live || !(wanted || whole) {
            continue;
        }
        table.unevict(tomb, bytes, wanted).map_err(|e| match e {
            permafrost_storage::StorageError::Corrupt(what) => AntiCacheError::Corrupt { block, what },
            other => AntiCacheError::Storage(other),
        })?;
        stats.merged += 1;
        if wanted {
            stats.requested_merged += 1;
        }
    }
    let live_left = tuples.saturating_sub(holes + stats.merged);
    stats.retire = live_left == 0 || whole || blocks.add_holes(block, stats.merged);
    Ok(stats)
}
