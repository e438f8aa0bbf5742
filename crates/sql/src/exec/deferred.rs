//! Scans that leave their evicted tuples to be read afterwards, from their blocks, without
//! bringing them back into memory ([`Deferred`]; the executor's scan.rs reads the blocks).

use std::ops::ControlFlow;
use std::sync::Arc;

use permafrost_storage::{PartitionStore, Row, Table, TableId};
use permafrost_types::{Value, ValueRef};

use crate::error::{Result, SqlError};
use crate::expr::{ColumnSource, Cx};
use crate::plan::Plan;
use crate::prepared::Prepared;
use crate::rows::Rows;
use crate::workmem::MemoryPool;

use super::gather::Gather;

pub(super) fn deferred_part(
    store: &PartitionStore,
    table: &Table,
    tombs: impl Iterator<Item = permafrost_storage::Tombstone>,
) -> Option<DeferredPart> {
    let mut blocks: std::collections::BTreeMap<u32, Vec<u64>> = std::collections::BTreeMap::new();
    let mut tuples = 0u64;
    for t in tombs {
        let bits = blocks.entry(t.block).or_default();
        let (word, bit) = ((t.offset / 64) as usize, t.offset % 64);
        if bits.len() <= word {
            bits.resize(word + 1, 0);
        }
        bits[word] |= 1 << bit;
        tuples += 1;
    }
    (tuples > 0).then(|| DeferredPart {
        partition: store.partition(),
        table: table.schema().id,
        layout: table.layout().clone(),
        tuples,
        blocks: blocks.into_iter().collect(),
    })
}

/// Evicted tuples a single-table read through an index may reach and still bring back
/// into memory (they are hot now); past this many it reads them from their blocks
/// afterwards ([`Deferred`]) and leaves them evicted. A full scan always does.
pub const DEFER_INDEX_READS: usize = 1024;

/// A single-table SELECT whose scan reached evicted tuples and left them for later: the
/// rows of the tuples in memory were gathered (the first part of the result); the evicted
/// ones are read from their blocks by the caller, without merging them back, and fed to
/// [`Deferred::feed`] — every one of them, in any order. The blocks must not change
/// meanwhile: the caller keeps them from being reused until it is done, so together the
/// two parts read the table as it was when the statement ran (one point in the serial
/// order).
pub struct Deferred {
    pub(super) gather: Gather,
    pub parts: Vec<DeferredPart>,
    pub(super) params: Vec<Value>,
    pub(super) now: i64,
    pub(super) pool: Option<Arc<MemoryPool>>,
}

/// One partition's evicted tuples a [`Deferred`] scan reads.
pub struct DeferredPart {
    pub partition: u32,
    pub table: TableId,
    /// The layout of the table's tuples (what decodes a block's entries).
    pub layout: permafrost_storage::layout::TupleLayout,
    /// The evicted tuples.
    pub tuples: u64,
    /// The blocks, each with a bitmap of the entries (by offset) that were live.
    pub blocks: Vec<(u32, Vec<u64>)>,
}

impl DeferredPart {
    /// Whether entry `offset` of a block with bitmap `bits` is one of the scan's tuples.
    pub fn wanted(bits: &[u64], offset: u32) -> bool {
        bits.get((offset / 64) as usize)
            .is_some_and(|w| w & (1 << (offset % 64)) != 0)
    }
}

/// A row of a tuple read outside its table (bound as relation `rel`).
pub(super) struct DetachedSource<'r> {
    rel: usize,
    row: Row<'r>,
}

impl ColumnSource for DetachedSource<'_> {
    fn column(&self, rel: usize, col: usize) -> ValueRef<'_> {
        if rel == self.rel {
            self.row.get(col)
        } else {
            ValueRef::Null
        }
    }
}

impl Deferred {
    /// Feeds one evicted tuple of the scan (`plan` is the statement's). `Break` when the
    /// result is complete (a LIMIT reached): the remaining tuples need not be read.
    pub fn feed(&mut self, stmt: &Prepared, row: Row<'_>) -> Result<ControlFlow<()>> {
        let Plan::Select(p) = stmt.plan() else {
            return Err(SqlError::Unsupported(
                "a deferred scan of a statement that is not a query".into(),
            ));
        };
        let cx = Cx::new(&self.params, self.now).with_budget(self.gather.budget(self.pool.as_deref()));
        let src = DetachedSource {
            rel: p.rels[0].rel,
            row,
        };
        for f in &p.rels[0].filters {
            if !f.test(&src, &cx)? {
                return Ok(ControlFlow::Continue(()));
            }
        }
        self.gather.add(p, &src, &cx, self.pool.as_ref())
    }

    /// The rows gathered since the last call, when they can be sent before the scan ends
    /// (no ORDER BY, DISTINCT or aggregate); `None` otherwise.
    pub fn take_rows(&mut self) -> Result<Option<Rows>> {
        self.gather.take_rows()
    }

    /// Whether a LIMIT has been reached.
    pub fn is_full(&self) -> bool {
        self.gather.is_full()
    }

    /// The rest of the result once every tuple was fed.
    pub fn finish(self, stmt: &Prepared) -> Result<Rows> {
        let columns = stmt.columns();
        let Plan::Select(p) = stmt.plan() else {
            return Err(SqlError::Unsupported(
                "a deferred scan of a statement that is not a query".into(),
            ));
        };
        let cx = Cx::new(&self.params, self.now).with_budget(self.gather.budget(self.pool.as_deref()));
        self.gather.finish(p, columns, &cx)
    }
}
