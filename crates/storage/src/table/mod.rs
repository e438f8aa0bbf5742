//! One table at one partition: tuple heap, string heap, indexes, tombstones and the access
//! tracker, kept consistent with each other.
//!
//! Invariants (checked by [`Table::check_consistency`] in tests):
//! * every visible tuple has exactly one entry in each index whose key has no NULL;
//! * every index entry points at a visible tuple or at a live tombstone;
//! * a tuple is linked in the tracker iff the table is evictable and the tuple is visible.
//!
//! Mutations here are not logged; [`crate::store::PartitionStore`] wraps them with the undo
//! log. Every mutation checks constraints before it changes anything, so a failed insert or
//! update leaves the table as it was.

use std::ops::ControlFlow;
use std::sync::Arc;

use crate::access::AccessTracker;
use crate::error::{Result, StorageError};
use crate::heap::{FLAG_DELETED, FLAG_IN_CHAIN, FLAG_PINNED, HEADER_SIZE, Heap};
use crate::index::{IndexKey, IndexStore, KeyEncoder, TupleRef};
use crate::layout::TupleLayout;
use crate::memory::MemoryUsage;
use crate::schema::TableSchema;
use crate::tombstone::{Tombstone, Tombstones};

/// An index built over a table's tuples, not yet part of it ([`Table::build_primary_key`],
/// [`Table::install_index`]).
pub struct BuiltIndex {
    index: IndexStore,
    encoder: KeyEncoder,
}
use crate::varheap::{VarHandle, VarHeap};
use permafrost_types::{Value, ValueRef};

mod evicted_index;
mod unique;
mod upkeep;

pub use evicted_index::EvictedEntries;

/// Counters kept per table and partition.
#[derive(Debug, Default, Clone, Copy)]
pub struct TableStats {
    /// Tuple accesses by sampled transactions since the last eviction round (the seed's
    /// measure of how hot a table is, §3.2).
    pub sampled_accesses: u64,
    pub inserts: u64,
    pub updates: u64,
    pub deletes: u64,
}

/// A read-only view of one stored tuple.
#[derive(Clone, Copy)]
pub struct Row<'a> {
    layout: &'a TupleLayout,
    bytes: &'a [u8],
    var: &'a VarHeap,
}

impl<'a> Row<'a> {
    #[inline]
    pub fn get(&self, col: usize) -> ValueRef<'a> {
        self.layout.read(self.bytes, col, self.var)
    }

    pub fn len(&self) -> usize {
        self.layout.column_count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn to_values(&self) -> Vec<Value> {
        (0..self.len()).map(|c| self.get(c).to_owned()).collect()
    }

    /// The raw slot bytes (header included).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// A tuple decoded from its serialized (anti-cache block) form into memory of its own,
/// outside any table: what a scan reads from a block it does not merge back. Loading the
/// next tuple frees the previous one's out-of-line values, so one `DetachedRow` holds at
/// most one tuple.
pub struct DetachedRow {
    layout: TupleLayout,
    slot: Vec<u8>,
    var: VarHeap,
    held: Vec<crate::varheap::VarHandle>,
}

impl DetachedRow {
    pub fn new(layout: TupleLayout) -> DetachedRow {
        DetachedRow {
            slot: vec![0; layout.slot_size()],
            layout,
            var: VarHeap::new(),
            held: Vec::new(),
        }
    }

    /// Decodes `data` (checked as [`TupleLayout::deserialize_into`] checks it) and returns
    /// a view of it, valid until the next load.
    pub fn load(&mut self, data: &[u8]) -> Result<Row<'_>> {
        for h in self.held.drain(..) {
            self.var.free(h);
        }
        self.slot.fill(0);
        let r = self
            .layout
            .deserialize_tracked(data, &mut self.slot, &mut self.var, &mut self.held);
        if r.is_err() {
            for h in self.held.drain(..) {
                self.var.free(h);
            }
        }
        r?;
        Ok(Row {
            layout: &self.layout,
            bytes: &self.slot,
            var: &self.var,
        })
    }
}

pub struct Table {
    schema: Arc<TableSchema>,
    /// `schema.memory_bytes()`, kept with the schema (the memory check reads it often).
    schema_bytes: u64,
    layout: TupleLayout,
    heap: Heap,
    var: VarHeap,
    indexes: Vec<IndexStore>,
    encoders: Vec<KeyEncoder>,
    tombstones: Tombstones,
    tracker: Option<Box<dyn AccessTracker>>,
    /// The last value the table's sequence handed out at this partition (0: none yet).
    sequence: i64,
    /// Counts every change to the table's tuples or to where they are (writes and their
    /// undoing, eviction, merges, compaction): equal counts mean the table was left as it
    /// was (what a statement moved off its partitions checks before its changes apply).
    generation: u64,
    pub stats: TableStats,
}

impl Table {
    /// Creates an empty table. `tracker` is required for evictable tables and ignored for
    /// the others.
    /// The last value of the table's sequence handed out at this partition.
    pub fn sequence(&self) -> i64 {
        self.sequence
    }

    /// See the field: changes whenever the table's tuples or their places change.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Sets the sequence's last value (rollback, recovery).
    pub fn set_sequence(&mut self, v: i64) {
        self.generation += 1;
        self.sequence = v;
    }

    pub fn new(schema: Arc<TableSchema>, tracker: Option<Box<dyn AccessTracker>>) -> Table {
        let layout = TupleLayout::new(&schema);
        let heap = Heap::new(layout.slot_size());
        let encoders: Vec<KeyEncoder> = schema
            .indexes
            .iter()
            .map(|ix| KeyEncoder::new(ix.columns.iter().map(|&c| schema.columns[c].ty).collect()))
            .collect();
        let indexes = schema
            .indexes
            .iter()
            .zip(&encoders)
            .map(|(ix, enc)| IndexStore::new(ix.kind, enc.kind()))
            .collect();
        let tracker = if schema.evictable { tracker } else { None };
        Table {
            schema_bytes: schema.memory_bytes(),
            schema,
            layout,
            heap,
            var: VarHeap::new(),
            indexes,
            encoders,
            tombstones: Tombstones::new(),
            tracker,
            sequence: 0,
            generation: 0,
            stats: TableStats::default(),
        }
    }

    pub fn schema(&self) -> &Arc<TableSchema> {
        &self.schema
    }

    /// What the database keeps once for this table's schema ([`TableSchema::memory_bytes`]).
    pub fn schema_bytes(&self) -> u64 {
        self.schema_bytes
    }

    pub fn layout(&self) -> &TupleLayout {
        &self.layout
    }

    pub fn heap(&self) -> &Heap {
        &self.heap
    }

    pub fn var_heap(&self) -> &VarHeap {
        &self.var
    }

    pub fn index_store(&self, i: usize) -> &IndexStore {
        &self.indexes[i]
    }

    pub fn index_count(&self) -> usize {
        self.indexes.len()
    }

    pub fn encoder(&self, i: usize) -> &KeyEncoder {
        &self.encoders[i]
    }

    pub fn tombstones(&self) -> &Tombstones {
        &self.tombstones
    }

    pub fn tracker(&self) -> Option<&dyn AccessTracker> {
        self.tracker.as_deref()
    }

    /// Number of tuples in memory (visible or deleted by the running transaction).
    pub fn live_tuples(&self) -> u32 {
        self.heap.live()
    }

    /// Number of evicted tuples.
    pub fn evicted_tuples(&self) -> usize {
        self.tombstones.len()
    }

    #[inline]
    pub fn is_visible(&self, slot: u32) -> bool {
        self.heap.is_visible(slot)
    }

    /// Starts loading the tuple `r` points at into the CPU's caches (a hint: see
    /// `Heap::prefetch`); a tombstone's is not.
    #[inline]
    pub fn prefetch(&self, r: TupleRef) {
        if let Some(slot) = r.as_slot() {
            self.heap.prefetch(slot);
        }
    }

    #[inline]
    /// A tuple's values as they were in `image` (a copy of its slot's bytes taken while
    /// the values it references out of line are still alive: an undo image).
    pub fn image_row<'a>(&'a self, image: &'a [u8]) -> Row<'a> {
        Row {
            layout: &self.layout,
            bytes: image,
            var: &self.var,
        }
    }

    pub fn row(&self, slot: u32) -> Row<'_> {
        Row {
            layout: &self.layout,
            bytes: self.heap.bytes(slot),
            var: &self.var,
        }
    }

    #[inline]
    pub fn value(&self, slot: u32, col: usize) -> ValueRef<'_> {
        self.layout.read(self.heap.bytes(slot), col, &self.var)
    }

    /// The key tuple `slot` has in index `i` (`None` if a key column is NULL).
    pub fn key_of_slot(&self, i: usize, slot: u32) -> Option<IndexKey> {
        self.key_of_bytes(i, self.heap.bytes(slot))
    }

    fn key_of_bytes(&self, i: usize, bytes: &[u8]) -> Option<IndexKey> {
        let cols = &self.schema.indexes[i].columns;
        let enc = &self.encoders[i];
        if enc.kind() == crate::index::KeyKind::Int {
            return self
                .layout
                .read_int(bytes, cols[0])
                .map(IndexKey::Int)
                .or_else(|| enc.encode(std::iter::once(self.layout.read(bytes, cols[0], &self.var))));
        }
        enc.encode(cols.iter().map(|&c| self.layout.read(bytes, c, &self.var)))
    }

    /// Visits the visible tuples in slot order.
    pub fn scan(&self, mut f: impl FnMut(u32) -> ControlFlow<()>) -> ControlFlow<()> {
        for slot in 0..self.heap.high_water() {
            if self.heap.is_visible(slot) {
                f(slot)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// Records a sampled access to a tuple.
    #[inline]
    pub fn touch(&mut self, slot: u32) {
        self.stats.sampled_accesses += 1;
        if let Some(t) = self.tracker.as_mut() {
            t.on_access(&mut self.heap, slot);
        }
    }

    /// Marks a tuple as not evictable (or evictable again).
    pub fn set_pinned(&mut self, slot: u32, pinned: bool) {
        if self.heap.is_live(slot) {
            let f = self.heap.flags(slot);
            self.heap
                .set_flags(slot, if pinned { f | FLAG_PINNED } else { f & !FLAG_PINNED });
        }
    }

    /// Fails if `v` is NULL and column `col` may not be; `row` gives the row as it would
    /// have been, for the error's DETAIL.
    fn check_not_null<'v>(&self, col: usize, v: &Value, row: impl FnOnce() -> Vec<ValueRef<'v>>) -> Result<()> {
        let c = &self.schema.columns[col];
        if v.is_null() && !c.nullable {
            return Err(StorageError::NotNullViolation {
                table: self.schema.name.clone(),
                column: c.name.clone(),
                row: crate::error::row_text(row()),
            });
        }
        Ok(())
    }

    /// A repeat of index `i`'s key, whose columns hold `values` (in the index's order).
    fn unique_violation<'v>(&self, i: usize, values: impl Iterator<Item = ValueRef<'v>>) -> StorageError {
        let ix = &self.schema.indexes[i];
        StorageError::UniqueViolation {
            table: self.schema.name.clone(),
            index: ix.name.clone(),
            key: crate::error::key_text(ix.columns.iter().map(|&c| self.schema.columns[c].name.as_str()), values),
        }
    }

    /// Inserts a tuple. `values` holds one value per column, already converted to the
    /// column types with defaults applied.
    pub fn insert(&mut self, values: &[Value]) -> Result<u32> {
        self.generation += 1;
        if values.len() != self.schema.columns.len() {
            return Err(StorageError::Internal(format!(
                "insert into \"{}\" with {} values for {} columns",
                self.schema.name,
                values.len(),
                self.schema.columns.len()
            )));
        }
        for (c, v) in values.iter().enumerate() {
            self.check_not_null(c, v, || values.iter().map(Value::as_ref).collect())?;
        }
        check_row_size(values.iter().map(|v| v.as_ref()))?;
        let mut keys = Vec::with_capacity(self.indexes.len());
        for (i, ix) in self.schema.indexes.iter().enumerate() {
            let key = self.encoders[i].encode(ix.columns.iter().map(|&c| values[c].as_ref()));
            if ix.unique
                && let Some(k) = &key
                && self.indexes[i].has_other(k, None)
            {
                return Err(self.unique_violation(i, ix.columns.iter().map(|&c| values[c].as_ref())));
            }
            keys.push(key);
        }
        let slot = self.heap.alloc().map_err(|e| self.name_table_full(e))?;
        if let Err(e) = self.write_values(slot, values.iter().enumerate()) {
            self.free_tuple(slot);
            return Err(e);
        }
        for (i, key) in keys.into_iter().enumerate() {
            if let Some(k) = key {
                self.indexes[i].insert(k, TupleRef::slot(slot));
            }
        }
        if let Some(t) = self.tracker.as_mut() {
            t.on_insert(&mut self.heap, slot);
        }
        self.stats.inserts += 1;
        Ok(slot)
    }

    fn name_table_full(&self, e: StorageError) -> StorageError {
        match e {
            StorageError::TableFull { limit, .. } => StorageError::TableFull {
                table: self.schema.name.clone(),
                limit,
            },
            e => e,
        }
    }

    fn write_values<'v>(&mut self, slot: u32, values: impl Iterator<Item = (usize, &'v Value)>) -> Result<()> {
        let bytes = self.heap.bytes_mut(slot);
        for (c, v) in values {
            self.layout.write(bytes, c, v.as_ref(), &mut self.var)?;
        }
        Ok(())
    }

    /// Updates columns of a visible tuple. Constraints are checked first; index entries
    /// follow key changes. `image` is the tuple's bytes before the update (the undo
    /// image); if writing fails part-way the tuple is put back from it and the error
    /// returned, with the table unchanged.
    pub fn update(&mut self, slot: u32, changes: &[(usize, Value)], image: &[u8]) -> Result<()> {
        self.generation += 1;
        // The row as it will be.
        let after = |c: usize| match changes.iter().rev().find(|(cc, _)| *cc == c) {
            Some((_, v)) => v.as_ref(),
            None => self.layout.read(self.heap.bytes(slot), c, &self.var),
        };
        for (c, v) in changes {
            self.check_not_null(*c, v, || (0..self.schema.columns.len()).map(after).collect())?;
        }
        if changes.iter().map(|(_, v)| var_len(v.as_ref())).sum::<usize>() > ROW_CHECK_ABOVE {
            // Large values come in: the whole row, as it will be, must stay in bounds.
            check_row_size((0..self.schema.columns.len()).map(after))?;
        }
        // Index keys that change, with unique checks before any write.
        let mut moves: Vec<(usize, Option<IndexKey>, Option<IndexKey>)> = Vec::new();
        for (i, ix) in self.schema.indexes.iter().enumerate() {
            if !ix.columns.iter().any(|c| changes.iter().any(|(cc, _)| cc == c)) {
                continue;
            }
            let old = self.key_of_slot(i, slot);
            let bytes = self.heap.bytes(slot);
            let new =
                self.encoders[i].encode(ix.columns.iter().map(
                    |&c| match changes.iter().rev().find(|(cc, _)| *cc == c) {
                        Some((_, v)) => v.as_ref(),
                        None => self.layout.read(bytes, c, &self.var),
                    },
                ));
            if old == new {
                continue;
            }
            if ix.unique
                && let Some(k) = &new
                && self.indexes[i].has_other(k, Some(TupleRef::slot(slot)))
            {
                let bytes = self.heap.bytes(slot);
                let values = ix
                    .columns
                    .iter()
                    .map(|&c| match changes.iter().rev().find(|(cc, _)| *cc == c) {
                        Some((_, v)) => v.as_ref(),
                        None => self.layout.read(bytes, c, &self.var),
                    });
                return Err(self.unique_violation(i, values));
            }
            moves.push((i, old, new));
        }
        if let Err(e) = self.write_values(slot, changes.iter().map(|(c, v)| (*c, v))) {
            // Indexes are untouched so far: only the bytes and new out-of-line values go.
            self.free_handles_not_in(slot, image);
            self.heap.bytes_mut(slot)[HEADER_SIZE..].copy_from_slice(&image[HEADER_SIZE..]);
            return Err(e);
        }
        for (i, old, new) in moves {
            if let Some(k) = old {
                self.indexes[i].remove(&k, TupleRef::slot(slot));
            }
            if let Some(k) = new {
                self.indexes[i].insert(k, TupleRef::slot(slot));
            }
        }
        self.stats.updates += 1;
        Ok(())
    }

    /// Puts back a tuple's bytes from an undo image taken before an update: index entries
    /// return to the image's keys, out-of-line values written since are freed.
    pub fn restore(&mut self, slot: u32, image: &[u8]) {
        self.generation += 1;
        for i in 0..self.indexes.len() {
            let cur = self.key_of_slot(i, slot);
            let old = self.key_of_bytes(i, image);
            if cur != old {
                if let Some(k) = cur {
                    self.indexes[i].remove(&k, TupleRef::slot(slot));
                }
                if let Some(k) = old {
                    self.indexes[i].insert(k, TupleRef::slot(slot));
                }
            }
        }
        self.free_handles_not_in(slot, image);
        self.heap.bytes_mut(slot)[HEADER_SIZE..].copy_from_slice(&image[HEADER_SIZE..]);
    }

    /// After a committed update: frees out-of-line values of the image that the tuple no
    /// longer references.
    pub fn release_image(&mut self, slot: u32, image: &[u8]) {
        if !self.layout.has_var_columns() {
            return;
        }
        let mut old = Vec::new();
        self.layout.for_each_out_of_line(image, |h| old.push(h));
        if old.is_empty() {
            return;
        }
        let cur = self.handles(self.heap.bytes(slot));
        for h in old {
            if !cur.contains(&h) {
                self.var.free(h);
            }
        }
    }

    fn handles(&self, bytes: &[u8]) -> Vec<VarHandle> {
        let mut v = Vec::new();
        self.layout.for_each_out_of_line(bytes, |h| v.push(h));
        v
    }

    /// Frees out-of-line values of the current tuple that `image` does not reference.
    fn free_handles_not_in(&mut self, slot: u32, image: &[u8]) {
        if !self.layout.has_var_columns() {
            return;
        }
        let keep = self.handles(image);
        let cur = self.handles(self.heap.bytes(slot));
        for h in cur {
            if !keep.contains(&h) {
                self.var.free(h);
            }
        }
    }

    /// Hides a tuple deleted by the running transaction: its index entries go, it leaves
    /// the tracker, and its memory stays until [`Table::free_tuple`] at commit.
    pub fn mark_deleted(&mut self, slot: u32) {
        self.generation += 1;
        self.unindex(slot);
        if let Some(t) = self.tracker.as_mut() {
            t.on_remove(&mut self.heap, slot);
        }
        let f = self.heap.flags(slot);
        self.heap.set_flags(slot, f | FLAG_DELETED);
        self.stats.deletes += 1;
    }

    /// Reverses [`Table::mark_deleted`] (abort).
    pub fn unmark_deleted(&mut self, slot: u32) {
        self.generation += 1;
        let f = self.heap.flags(slot);
        self.heap.set_flags(slot, f & !FLAG_DELETED);
        for i in 0..self.indexes.len() {
            if let Some(k) = self.key_of_slot(i, slot) {
                self.indexes[i].insert(k, TupleRef::slot(slot));
            }
        }
        if let Some(t) = self.tracker.as_mut() {
            t.on_insert(&mut self.heap, slot);
        }
    }

    /// Removes an inserted tuple entirely (abort of its insert).
    pub fn remove_inserted(&mut self, slot: u32) {
        self.generation += 1;
        self.unindex(slot);
        if let Some(t) = self.tracker.as_mut() {
            t.on_remove(&mut self.heap, slot);
        }
        self.free_tuple(slot);
    }

    fn unindex(&mut self, slot: u32) {
        for i in 0..self.indexes.len() {
            if let Some(k) = self.key_of_slot(i, slot) {
                self.indexes[i].remove(&k, TupleRef::slot(slot));
            }
        }
    }

    /// Gives a tuple's memory back (out-of-line values and slot).
    pub fn free_tuple(&mut self, slot: u32) {
        self.generation += 1;
        if self.layout.has_var_columns() {
            for h in self.handles(self.heap.bytes(slot)) {
                self.var.free(h);
            }
        }
        self.heap.free(slot);
    }

    /// Starts the entries the last index of `schema` (this table's schema with one index
    /// appended) gives the evicted tuples; the caller reads their keys from the blocks,
    /// adding each ([`EvictedEntries::add`]) before the tombstones change.
    pub fn evicted_entries(&self, schema: &TableSchema) -> Result<EvictedEntries> {
        EvictedEntries::new(schema, self.tombstones.changes())
    }

    /// Switches to `schema`, which must be this table's schema with one index appended, and
    /// builds that index from the tuples in memory and, for the evicted ones, the entries
    /// `evicted` read from their blocks ([`Table::evicted_entries`]). Fails, changing
    /// nothing, if a unique index would be violated, or if the evicted tuples are not
    /// those the entries were read from (none read while some are evicted, or some evicted
    /// or merged back since): [`StorageError::EvictedDuringBuild`].
    pub fn add_index(&mut self, schema: Arc<TableSchema>, evicted: Option<EvictedEntries>) -> Result<()> {
        if schema.columns != self.schema.columns {
            return Err(StorageError::Internal(
                "add_index: schema does not extend the table's".into(),
            ));
        }
        let built = self.build_last_index(&schema, &|_| true, evicted)?;
        self.install_index(schema, built);
        Ok(())
    }

    /// The index of the primary key that is `schema`'s last index, built over the tuples
    /// in memory that `keep` keeps, changing nothing: `schema` must be this table's with
    /// the key appended and its columns NOT NULL (its partitioning may differ), and
    /// `evicted` the key's entries for the evicted tuples (read from their blocks, NULLs
    /// refused there). Fails if a kept tuple's key is NULL or repeated, or if `evicted` are
    /// not the entries of the tuples evicted now ([`StorageError::EvictedDuringBuild`]).
    pub fn build_primary_key(
        &self,
        schema: &TableSchema,
        keep: &dyn Fn(u32) -> bool,
        evicted: Option<EvictedEntries>,
    ) -> Result<BuiltIndex> {
        let Some(def) = schema.indexes.last().filter(|d| d.primary) else {
            return Err(StorageError::Internal(
                "add_primary_key: the last index is not a primary key".into(),
            ));
        };
        let same_columns = schema.columns.len() == self.schema.columns.len()
            && schema
                .columns
                .iter()
                .zip(&self.schema.columns)
                .enumerate()
                .all(|(i, (new, old))| {
                    new.name == old.name
                        && new.ty == old.ty
                        && new.default == old.default
                        && (new.nullable == old.nullable || def.columns.contains(&i) && !new.nullable)
                });
        if !same_columns {
            return Err(StorageError::Internal(
                "add_primary_key: schema does not extend the table's".into(),
            ));
        }
        for &c in &def.columns {
            if !self.schema.columns[c].nullable {
                continue;
            }
            for slot in 0..self.heap.high_water() {
                if self.heap.is_live(slot)
                    && keep(slot)
                    && self.layout.read(self.heap.bytes(slot), c, &self.var).is_null()
                {
                    return Err(StorageError::NotNullViolation {
                        table: schema.name.clone(),
                        column: schema.columns[c].name.clone(),
                        row: String::new(),
                    });
                }
            }
        }
        self.build_last_index(schema, keep, evicted)
    }

    /// Switches to `schema` with its last index `built` ([`Table::build_primary_key`]
    /// over the tuples this table still holds).
    pub fn install_index(&mut self, schema: Arc<TableSchema>, built: BuiltIndex) {
        self.indexes.push(built.index);
        self.encoders.push(built.encoder);
        self.schema_bytes = schema.memory_bytes();
        self.schema = schema;
    }

    /// The last index of `schema` (this table's indexes and one more), built from the
    /// tuples in memory that `keep` keeps and the entries `evicted` of the evicted ones;
    /// fails if it is unique and a key repeats, or if `evicted` are not the entries of the
    /// tuples evicted now.
    fn build_last_index(
        &self,
        schema: &TableSchema,
        keep: &dyn Fn(u32) -> bool,
        evicted: Option<EvictedEntries>,
    ) -> Result<BuiltIndex> {
        let n = self.schema.indexes.len();
        if schema.indexes.len() != n + 1 || schema.indexes[..n] != self.schema.indexes[..] {
            return Err(StorageError::Internal(
                "add_index: schema does not extend the table's".into(),
            ));
        }
        let def = &schema.indexes[n];
        let enc = KeyEncoder::new(def.columns.iter().map(|&c| schema.columns[c].ty).collect());
        let current = match evicted {
            Some(e) => e.into_index_if_current(self.tombstones.changes(), self.tombstones.len()),
            None if self.tombstones.is_empty() => Some(IndexStore::new(def.kind, enc.kind())),
            None => None,
        };
        let Some(mut index) = current else {
            return Err(StorageError::EvictedDuringBuild {
                table: schema.name.clone(),
                index: def.name.clone(),
            });
        };
        for slot in 0..self.heap.high_water() {
            if !self.heap.is_live(slot) || !keep(slot) {
                continue;
            }
            let bytes = self.heap.bytes(slot);
            if let Some(k) = enc.encode(def.columns.iter().map(|&c| self.layout.read(bytes, c, &self.var))) {
                if def.unique && index.has_other(&k, None) {
                    let columns = def.columns.iter().map(|&c| schema.columns[c].name.as_str());
                    let values = def.columns.iter().map(|&c| self.layout.read(bytes, c, &self.var));
                    return Err(StorageError::DuplicateInNewIndex {
                        table: schema.name.clone(),
                        index: def.name.clone(),
                        key: crate::error::key_text(columns, values),
                    });
                }
                index.insert(k, TupleRef::slot(slot));
            }
        }
        Ok(BuiltIndex { index, encoder: enc })
    }

    /// Switches to `schema`, which is this table's schema without index `dropped`.
    pub fn drop_index(&mut self, schema: Arc<TableSchema>, dropped: usize) -> Result<()> {
        if dropped >= self.indexes.len() || schema.indexes.len() + 1 != self.indexes.len() {
            return Err(StorageError::Internal(
                "drop_index: schema does not match the table's".into(),
            ));
        }
        self.indexes.remove(dropped);
        self.encoders.remove(dropped);
        self.schema_bytes = schema.memory_bytes();
        self.schema = schema;
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // Anti-cache operations. They run between transactions (eviction and merge are
    // transactions of their own at the partition), never inside one.

    /// Up to `n` eviction candidates, coldest first.
    pub fn eviction_candidates(&mut self, n: usize, out: &mut Vec<u32>) {
        if let Some(t) = self.tracker.as_mut() {
            t.victims(&mut self.heap, n, out);
        }
    }

    /// Appends the serialized tuple in `slot` (see [`TupleLayout::serialize`]).
    pub fn serialize_tuple(&self, slot: u32, out: &mut Vec<u8>) {
        self.layout.serialize(self.heap.bytes(slot), &self.var, out);
    }

    /// Visits the visible tuples from coldest to hottest: the tracker's order where it keeps
    /// one (tuples outside it, pinned ones, follow in slot order), else slot order.
    pub fn for_each_cold_to_hot(&self, mut f: impl FnMut(u32)) {
        let mut in_order = false;
        if let Some(t) = &self.tracker {
            in_order = t.cold_to_hot(&self.heap, &mut |s| f(s));
        }
        for slot in 0..self.heap.high_water() {
            if self.heap.is_visible(slot) && !(in_order && self.heap.flags(slot) & FLAG_IN_CHAIN != 0) {
                f(slot);
            }
        }
    }

    /// Loads a tuple from its serialized form (a snapshot) at the hot end of the tracker.
    /// The bytes are validated and the unique indexes checked; on error nothing changes.
    pub fn load_tuple(&mut self, data: &[u8]) -> Result<u32> {
        self.generation += 1;
        let slot = self.heap.alloc().map_err(|e| self.name_table_full(e))?;
        let bytes = self.heap.bytes_mut(slot);
        if let Err(e) = self.layout.deserialize_into(data, bytes, &mut self.var) {
            self.heap.free(slot);
            return Err(e);
        }
        let mut keys = Vec::with_capacity(self.indexes.len());
        for i in 0..self.indexes.len() {
            let key = self.key_of_slot(i, slot);
            if self.schema.indexes[i].unique
                && let Some(k) = &key
                && self.indexes[i].has_other(k, None)
            {
                self.free_tuple(slot);
                return Err(StorageError::Corrupt(format!(
                    "a saved tuple of \"{}\" repeats a key of unique index \"{}\"",
                    self.schema.name, self.schema.indexes[i].name
                )));
            }
            keys.push(key);
        }
        for (i, key) in keys.into_iter().enumerate() {
            if let Some(k) = key {
                self.indexes[i].insert(k, TupleRef::slot(slot));
            }
        }
        if let Some(t) = self.tracker.as_mut() {
            t.on_insert(&mut self.heap, slot);
        }
        Ok(slot)
    }

    /// Replaces the tombstones (loading a snapshot; the table holds no evicted tuple yet).
    pub fn restore_tombstones(&mut self, entries: impl ExactSizeIterator<Item = Option<Tombstone>>) {
        self.tombstones.restore(entries);
    }

    /// Adds the index entry `key` of index `index` for the evicted tuple of tombstone `id`
    /// (loading a snapshot). Fails if the tombstone is not live, the index does not exist,
    /// or the key is taken in a unique index.
    pub fn restore_evicted_key(&mut self, index: usize, key: IndexKey, id: u32) -> Result<()> {
        let corrupt = |what: String| Err(StorageError::Corrupt(what));
        if index >= self.indexes.len() {
            return corrupt(format!("table \"{}\" has no index number {index}", self.schema.name));
        }
        if self.tombstones.get(id).is_none() {
            return corrupt(format!(
                "an index entry of \"{}\" names tombstone {id}, which is not live",
                self.schema.name
            ));
        }
        let kind_ok = matches!(
            (&key, self.encoders[index].kind()),
            (IndexKey::Int(_), crate::index::KeyKind::Int) | (IndexKey::Bytes(_), crate::index::KeyKind::Bytes)
        );
        if !kind_ok {
            return corrupt(format!(
                "a saved key of \"{}\" has the wrong representation",
                self.schema.name
            ));
        }
        if self.schema.indexes[index].unique && self.indexes[index].has_other(&key, None) {
            return corrupt(format!(
                "a saved key of \"{}\" repeats a key of unique index \"{}\"",
                self.schema.name, self.schema.indexes[index].name
            ));
        }
        self.indexes[index].insert(key, TupleRef::tombstone(id));
        Ok(())
    }

    /// Visits the entries of index `i` that point at evicted tuples, as (key, tombstone).
    pub fn for_each_evicted_key(&self, i: usize, mut f: impl FnMut(IndexKey, u32)) {
        if let Some(ix) = self.indexes.get(i) {
            ix.for_each(|k, r| {
                if let Some(id) = r.as_tombstone() {
                    f(k, id)
                }
            });
        }
    }

    /// Reserves a tombstone id for a tuple about to be written to a block.
    pub fn reserve_tombstone(&mut self) -> u32 {
        self.tombstones.reserve()
    }

    /// Gives back a reserved tombstone id (the block write failed).
    pub fn cancel_tombstone(&mut self, id: u32) {
        self.tombstones.remove(id);
    }

    /// Whether tombstone `id` is live and says the tuple is at `at`.
    pub fn tombstone_is(&self, id: u32, at: Tombstone) -> bool {
        self.tombstones.get(id) == Some(at)
    }

    /// Replaces an in-memory tuple by its tombstone once its block is on disk: the reserved
    /// tombstone `id` gets the location, every index entry is re-pointed to it, and the
    /// tuple's memory is freed.
    pub fn evict_to(&mut self, slot: u32, id: u32, at: Tombstone) {
        self.generation += 1;
        self.tombstones.set(id, at);
        for i in 0..self.indexes.len() {
            if let Some(k) = self.key_of_slot(i, slot) {
                let ok = self.indexes[i].replace(&k, TupleRef::slot(slot), TupleRef::tombstone(id));
                debug_assert!(ok, "index entry of an evicted tuple is missing");
            }
        }
        if let Some(t) = self.tracker.as_mut() {
            t.on_remove(&mut self.heap, slot);
        }
        self.free_tuple(slot);
    }

    /// Brings an evicted tuple back from its serialized form (read from a block). The
    /// bytes are validated; the tombstone's index entries are re-pointed to the new slot and
    /// the tombstone is freed. `hot` puts the tuple at the hot end of the tracker, otherwise
    /// at the cold end. Fails with `Corrupt`, changing nothing, if the bytes are not a valid
    /// tuple of this table or do not match the tombstone's index entries.
    pub fn unevict(&mut self, tombstone: u32, data: &[u8], hot: bool) -> Result<u32> {
        self.generation += 1;
        if self.tombstones.get(tombstone).is_none() {
            return Err(StorageError::Internal(format!(
                "tombstone {tombstone} of table \"{}\" is not live",
                self.schema.name
            )));
        }
        let slot = self.heap.alloc().map_err(|e| self.name_table_full(e))?;
        let bytes = self.heap.bytes_mut(slot);
        if let Err(e) = self.layout.deserialize_into(data, bytes, &mut self.var) {
            self.heap.free(slot);
            return Err(e);
        }
        for i in 0..self.indexes.len() {
            let ok = match self.key_of_slot(i, slot) {
                Some(k) => self.indexes[i].replace(&k, TupleRef::tombstone(tombstone), TupleRef::slot(slot)),
                None => true,
            };
            if !ok {
                // The block does not hold the tuple the tombstone names: undo and report.
                for j in 0..i {
                    if let Some(k) = self.key_of_slot(j, slot) {
                        self.indexes[j].replace(&k, TupleRef::slot(slot), TupleRef::tombstone(tombstone));
                    }
                }
                self.free_tuple(slot);
                return Err(StorageError::Corrupt(format!(
                    "evicted tuple of \"{}\" does not match its index entries",
                    self.schema.name
                )));
            }
        }
        self.tombstones.remove(tombstone);
        if let Some(t) = self.tracker.as_mut() {
            if hot {
                t.on_insert(&mut self.heap, slot);
            } else {
                t.on_insert_cold(&mut self.heap, slot);
            }
        }
        Ok(slot)
    }
}

/// The largest row accepted (the bytes of its values): snapshots write rows in sections of
/// at most `permafrost_durability::snapshot::MAX_SECTION` (64 MiB), so a row must fit in
/// one with room for its framing. PostgreSQL accepts values up to 1 GiB; here a larger row
/// is refused at insert or update (54000) rather than making every later snapshot fail.
pub const MAX_ROW_BYTES: usize = 60 << 20;

/// Updates that bring in fewer bytes of variable-length values than this cannot make a
/// row too big (only the changed columns are measured, not the whole row).
const ROW_CHECK_ABOVE: usize = 1 << 20;

/// The bytes of a variable-length value (text, bytea); 0 for the others.
fn var_len(v: ValueRef<'_>) -> usize {
    match v {
        ValueRef::Text(t) => t.len(),
        ValueRef::Bytes(b) => b.len(),
        _ => 0,
    }
}

fn check_row_size<'a>(values: impl Iterator<Item = ValueRef<'a>>) -> Result<()> {
    let size: usize = values.map(|v| var_len(v) + 8).sum();
    if size > MAX_ROW_BYTES {
        return Err(StorageError::RowTooBig {
            size,
            max: MAX_ROW_BYTES,
        });
    }
    Ok(())
}
