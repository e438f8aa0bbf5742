//! Scans that leave their evicted tuples to be read afterwards, from their blocks, without
//! bringing them back into memory ([`Deferred`]; the executor's scan.rs reads the blocks).

use std::ops::ControlFlow;
use std::sync::Arc;

use permafrost_storage::{PartitionStore, Row, Table, TableId, TableSchema};
use permafrost_types::zone::SessionZone;
use permafrost_types::{Value, ValueRef};

use crate::error::{Result, SqlError};
use crate::expr::{ColumnSource, Cx};
use crate::plan::{Plan, SelectPlan, SetTree};
use crate::prepared::Prepared;
use crate::rows::{ColumnInfo, Rows};
use crate::workmem::MemoryPool;

use super::gather::Gather;
use super::reached::EvictedRefs;
use super::walk::{Bindings, Copies, Reach, Walker, checked_table};

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
        if bits[word] & (1 << bit) == 0 {
            bits[word] |= 1 << bit;
            tuples += 1;
        }
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
///
/// Only what is hot is merged back: a read that meets many cold tuples at once is a range
/// over cold data, and merging it made each such read evict as many other tuples as it
/// brought in. Measured (sysbench `oltp_read_only`, 2 M rows in 128 MiB, 16 threads,
/// docs/results/miss-path.md, 2026-12-06): with 1,024 each transaction merged back and
/// evicted again 240-290 tuples and ran at 390 transactions/s (uniform) and 630
/// (pareto); with 16, about 6 tuples and 850-950 and 1,000. 4 and 64 gave the same as
/// 16; point selects did not move.
pub const DEFER_INDEX_READS: usize = 16;

/// A single-table SELECT whose scan reached evicted tuples and left them for later: the
/// rows of the tuples in memory were gathered (the first part of the result); the evicted
/// ones are read from their blocks by the caller, without merging them back, and fed to
/// [`Deferred::feed`] — every one of them, in any order. The blocks must not change
/// meanwhile: the caller keeps them from being reused until it is done, so together the
/// two parts read the table as it was when the statement ran (one point in the serial
/// order).
pub struct Deferred {
    pub(super) gather: Gather,
    /// When the scan is that of the one subquery in the statement's FROM
    /// (`SELECT ... FROM (SELECT ... FROM t) s`): the statement's own gather, which the
    /// subquery's rows are walked into as they come ([`super::walk_detached`]).
    pub(super) outer: Option<Gather>,
    /// `Env::work_mem` of the statement.
    pub(super) work_mem: usize,
    pub parts: Vec<DeferredPart>,
    pub(super) params: Vec<Value>,
    pub(super) now: i64,
    /// The session TimeZone the statement runs in (permafrost_types::zone): its evicted
    /// part is read later, on another thread, in the same zone.
    pub(super) zone: Option<permafrost_types::zone::Zone>,
    /// The statement's random state (`Env::random`).
    pub(super) random: Arc<std::sync::atomic::AtomicU64>,
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
        let _zone = SessionZone::set(self.zone.as_ref());
        let (p, _) = scanned(stmt, self.outer.is_some())?;
        let cx = Cx::new(&self.params, self.now)
            .with_random(self.random.clone())
            .with_budget(self.gather.budget(self.pool.as_deref()));
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
    /// (no ORDER BY, DISTINCT or aggregate, in the subquery and in the query reading it);
    /// `None` otherwise.
    pub fn take_rows(&mut self, stmt: &Prepared) -> Result<Option<Rows>> {
        let _zone = SessionZone::set(self.zone.as_ref());
        let Some(outer) = &mut self.outer else {
            return self.gather.take_rows();
        };
        if let Some(rows) = self.gather.take_rows()? {
            let (p, _) = scanned(stmt, false)?;
            let cx = Cx::new(&self.params, self.now)
                .with_random(self.random.clone())
                .with_budget(outer.budget(self.pool.as_deref()));
            walk_detached(p, &cx, rows, outer, self.pool.as_ref(), self.work_mem)?;
        }
        outer.take_rows()
    }

    /// Whether a LIMIT has been reached (the subquery's, or the query's reading it).
    pub fn is_full(&self) -> bool {
        self.gather.is_full() || self.outer.as_ref().is_some_and(Gather::is_full)
    }

    /// The rest of the result once every tuple was fed.
    pub fn finish(self, stmt: &Prepared) -> Result<Rows> {
        let Deferred {
            gather,
            outer,
            params,
            now,
            random,
            pool,
            work_mem,
            zone,
            ..
        } = self;
        let _zone = SessionZone::set(zone.as_ref());
        let (p, columns) = scanned(stmt, outer.is_some())?;
        let cx = Cx::new(&params, now)
            .with_random(random.clone())
            .with_budget(gather.budget(pool.as_deref()));
        let rows = gather.finish(p, columns, &cx)?;
        let Some(mut outer) = outer else {
            return Ok(rows);
        };
        let (p, columns) = scanned(stmt, false)?;
        let cx = Cx::new(&params, now)
            .with_random(random.clone())
            .with_budget(outer.budget(pool.as_deref()));
        walk_detached(p, &cx, rows, &mut outer, pool.as_ref(), work_mem)?;
        outer.finish(p, columns, &cx)
    }
}

/// The query of statement `stmt` whose scan was deferred, with its result's columns: the
/// statement's own, or with `nested` the one subquery its FROM reads.
fn scanned(stmt: &Prepared, nested: bool) -> Result<(&SelectPlan, &Arc<[ColumnInfo]>)> {
    let unsupported = || SqlError::Unsupported("a deferred scan of a statement that is not a query".into());
    let Plan::Select(p) = stmt.plan() else {
        return Err(unsupported());
    };
    if !nested {
        return Ok((p, stmt.columns()));
    }
    match p.derived.first().map(|d| &d.query) {
        Some(SetTree::Select { plan, columns }) => Ok((plan, columns)),
        _ => Err(unsupported()),
    }
}

/// Calls `f` with `rows` of relation `rel`, then with each batch of the rest they carry,
/// until `f` breaks or none is left.
pub(super) fn each_batch(
    rel: usize,
    mut rows: Rows,
    mut f: impl FnMut(&[(usize, Rows)]) -> Result<ControlFlow<()>>,
) -> Result<()> {
    let mut rest = rows.take_rest();
    loop {
        if f(&[(rel, rows)])?.is_break() {
            return Ok(());
        }
        match rest.as_mut().map(|m| m.next_rows()).transpose()?.flatten() {
            Some(more) => rows = more,
            None => return Ok(()),
        }
    }
}

/// Walks `rows` (and the rest they carry), the rows of the one subquery in `p`'s FROM, into
/// `gather` outside any partition: a deferred scan's, once read from its blocks.
fn walk_detached(
    p: &SelectPlan,
    cx: &Cx<'_>,
    rows: Rows,
    gather: &mut Gather,
    pool: Option<&Arc<MemoryPool>>,
    work_mem: usize,
) -> Result<()> {
    let rel = p.derived[0].rel;
    each_batch(rel, rows, |batch| {
        let reach = Reach {
            stores: &[],
            total: 1,
            interrupted: &|| false,
            deadline: None,
            work_mem,
            evicted_rows: None,
        };
        let mut evicted = EvictedRefs::new();
        let mut walker = Walker::over(&p.rels, reach, &mut evicted, cx, None, Copies::One, false).reading(batch);
        let mut b = Bindings::new();
        walker.walk_all(&mut b, &mut |b| gather.add(p, b, cx, pool))
    })
}

/// The evicted tuples of the table `schema` a scan read at the held partitions (`stores`)
/// `locals` marks: per partition, the blocks they are in and which entries of each block.
pub(super) fn deferred_parts(
    schema: &Arc<TableSchema>,
    stores: &[&mut PartitionStore],
    locals: u64,
) -> Result<Vec<DeferredPart>> {
    let mut parts = Vec::new();
    for (li, store) in stores.iter().enumerate() {
        if li >= 64 || locals & (1 << li) == 0 {
            continue;
        }
        let table = checked_table(store, schema)?;
        if let Some(part) = deferred_part(store, table, table.tombstones().iter().map(|(_, t)| t)) {
            parts.push(part);
        }
    }
    Ok(parts)
}

/// The evicted tuples a single-table read reached through an index (`evicted`, emptied),
/// as [`deferred_parts`] gives them.
pub(super) fn deferred_parts_of_refs(
    schema: &Arc<TableSchema>,
    stores: &[&mut PartitionStore],
    evicted: &mut EvictedRefs,
) -> Result<Vec<DeferredPart>> {
    let refs = std::mem::take(evicted);
    let mut parts = Vec::new();
    for store in stores {
        let table = checked_table(store, schema)?;
        let tombs = refs
            .iter()
            .filter(|r| r.partition == store.partition())
            .filter_map(|r| table.tombstones().get(r.tombstone));
        if let Some(part) = deferred_part(store, table, tombs) {
            parts.push(part);
        }
    }
    Ok(parts)
}
