//! A table's upkeep between transactions: a definition renamed or given other defaults
//! ([`Table::replace_schema`]) or its rows rewritten under another ([`Table::rewritten`]),
//! giving memory back after eviction ([`Table::compact`]), what it holds ([`Table::memory_usage`]), and the check of the
//! invariants listed in the module documentation of `table` ([`Table::check_consistency`]).

use super::*;
use crate::schema::ColumnFrom;

impl Table {
    /// Switches to `schema`, which differs from the table's only in names (of the table
    /// and its columns), column defaults, constraints checked by statements, and columns
    /// that may now be NULL: the tuples, their layout (every column has its NULL bit) and
    /// the indexes stay as they are. Anything else is refused, the table unchanged.
    pub fn replace_schema(&mut self, schema: Arc<TableSchema>) -> Result<()> {
        let old = &self.schema;
        let same_shape = schema.id == old.id
            && schema.columns.len() == old.columns.len()
            && schema
                .columns
                .iter()
                .zip(&old.columns)
                .all(|(a, b)| a.ty == b.ty && (a.nullable == b.nullable || a.nullable))
            && schema.indexes == old.indexes
            && schema.partition_column == old.partition_column
            && schema.evictable == old.evictable;
        if !same_shape {
            return Err(StorageError::Internal(format!(
                "replace_schema: the new definition of \"{}\" changes more than names and defaults",
                old.name
            )));
        }
        self.generation += 1;
        self.schema_bytes = schema.memory_bytes();
        // The same widths and key encodings, but an enum column's type may be a newer
        // version, with labels the rows now hold (ALTER TYPE ... ADD VALUE).
        self.layout = TupleLayout::new(&schema);
        for (enc, ix) in self.encoders.iter_mut().zip(&schema.indexes) {
            *enc = KeyEncoder::new(ix.columns.iter().map(|&c| schema.columns[c].ty).collect());
        }
        self.schema = schema;
        Ok(())
    }

    /// Gives memory back after eviction has emptied many slots: moves the tuples of the
    /// heap's last chunks into the lowest free slots below (re-pointing their index entries
    /// and tracker links), unmaps the chunks that become empty and gives back the pages of
    /// the last one past its last tuple (a table whose tuples are all evicted keeps no
    /// chunk: before, each kept one chunk of 2 MiB at each partition, touched whole);
    /// unmaps the string heap's chunks that hold nothing ([`VarHeap::trim`]). Must run
    /// between transactions. Returns the bytes released.
    pub fn compact(&mut self) -> usize {
        let strings = self.var.trim();
        let per = self.heap.per_chunk() as usize;
        let keep = (self.heap.live() as usize).div_ceil(per);
        if keep >= self.heap.chunk_count() && keep > 1 {
            // No chunk would empty: nothing to move, and no scan of every slot for it (a
            // table of one chunk is still trimmed past its last tuple, below).
            return strings;
        }
        self.generation += 1;
        let new_end = (keep * per) as u32;
        // Lowest first (popped from the end).
        let mut free: Vec<u32> = self.heap.free_below(new_end).into_iter().rev().collect();
        let movers: Vec<u32> = (new_end..self.heap.high_water())
            .filter(|&s| self.heap.is_live(s))
            .collect();
        let mut scratch = Vec::new();
        for s in movers {
            let t = free.pop().expect("the live tuples fit below the new end");
            self.heap.move_slot(s, t, &mut scratch);
            if let Some(tr) = self.tracker.as_mut() {
                tr.on_move(&mut self.heap, s, t);
            }
            for i in 0..self.indexes.len() {
                if let Some(k) = self.key_of_slot(i, t) {
                    let ok = self.indexes[i].replace(&k, TupleRef::slot(s), TupleRef::slot(t));
                    debug_assert!(ok, "index entry of a moved tuple is missing");
                }
            }
        }
        let before = self.heap.reserved_bytes();
        self.heap.truncate(keep, free);
        strings + before.saturating_sub(self.heap.reserved_bytes())
    }

    // -----------------------------------------------------------------------------------

    pub fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            tuple_bytes: self.heap.reserved_bytes() as u64,
            tuple_used_bytes: self.heap.used_bytes() as u64,
            string_bytes: self.var.reserved_bytes() as u64,
            string_used_bytes: self.var.used_bytes() as u64,
            index_bytes: self.indexes.iter().map(|i| i.hot_bytes() as u64).sum(),
            compact_index_bytes: self.indexes.iter().map(|i| i.cold_bytes() as u64).sum(),
            tombstone_bytes: self.tombstones.memory_bytes() as u64,
            buffer_bytes: 0,
            schema_bytes: 0,
        }
    }

    /// Checks the invariants listed in the module docs; returns a description of the first
    /// violation.
    pub fn check_consistency(&self) -> std::result::Result<(), String> {
        let mut visible = 0usize;
        for slot in 0..self.heap.high_water() {
            if !self.heap.is_visible(slot) {
                continue;
            }
            visible += 1;
            for i in 0..self.indexes.len() {
                if let Some(k) = self.key_of_slot(i, slot) {
                    let mut found = 0;
                    let _ = self.indexes[i].lookup(&k, |r| {
                        if r == TupleRef::slot(slot) {
                            found += 1;
                        }
                        ControlFlow::Continue(())
                    });
                    if found != 1 {
                        return Err(format!("slot {slot} has {found} entries in index {i}"));
                    }
                }
            }
        }
        for (i, ix) in self.indexes.iter().enumerate() {
            let mut err = None;
            ix.for_each(|_, r| {
                let ok = match (r.as_slot(), r.as_tombstone()) {
                    (Some(s), _) => self.heap.is_visible(s),
                    (_, Some(t)) => self.tombstones.get(t).is_some(),
                    _ => false,
                };
                if !ok && err.is_none() {
                    err = Some(format!("index {i} has a dangling entry {r:?}"));
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
        if let Some(t) = &self.tracker
            && t.len() != visible
        {
            return Err(format!("tracker holds {} tuples, {} are visible", t.len(), visible));
        }
        Ok(())
    }

    /// The table as `schema` defines it, its rows' values taken as `from` says (one entry
    /// per column of `schema`) and converted to the new columns' types, its indexes built
    /// over them and its sequence kept (ALTER TABLE ADD / DROP COLUMN, ALTER COLUMN TYPE,
    /// SET NOT NULL). Refused while tuples are evicted (their values are on disk); a row
    /// that fails the new definition (a NULL in a NOT NULL column, a value that does not
    /// convert) fails it, this table unchanged.
    pub fn rewritten(
        &self,
        schema: Arc<TableSchema>,
        from: &[ColumnFrom],
        tracker: Option<Box<dyn AccessTracker>>,
    ) -> Result<Table> {
        if self.evicted_tuples() > 0 {
            return Err(StorageError::EvictedRewrite {
                table: self.schema.name.clone(),
                evicted: self.evicted_tuples(),
            });
        }
        if from.len() != schema.columns.len() {
            return Err(StorageError::Internal("rewritten: one source per column".into()));
        }
        let mut next = Table::new(schema.clone(), tracker);
        next.sequence = self.sequence;
        let mut failure = None;
        let _ = self.scan(|slot| {
            let row = self.row(slot);
            let values: std::result::Result<Vec<Value>, StorageError> = from
                .iter()
                .zip(&schema.columns)
                .map(|(f, col)| {
                    let v = match f {
                        ColumnFrom::Column(c) => row.get(*c).to_owned(),
                        ColumnFrom::Value(v) => v.clone(),
                    };
                    if v.is_null() && !col.nullable {
                        return Err(StorageError::ColumnHasNulls {
                            table: schema.name.clone(),
                            column: col.name.clone(),
                        });
                    }
                    Ok(v.coerce_to(&col.ty)?)
                })
                .collect();
            match values.and_then(|v| next.insert(&v)) {
                Ok(_) => ControlFlow::Continue(()),
                Err(e) => {
                    failure = Some(e);
                    ControlFlow::Break(())
                }
            }
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(next),
        }
    }

    /// A new table under `schema` (the same columns, another partitioning) holding the
    /// serialized tuples `tuples` (in [`Table::serialize_tuple`]'s form; a table's
    /// evicted tuples are in that form in their blocks), keeping the table's sequence.
    /// Nothing of this table is in it: its tuples that stay here come in `tuples` too.
    pub fn rebuilt_from<'a>(
        &self,
        schema: Arc<TableSchema>,
        tracker: Option<Box<dyn AccessTracker>>,
        tuples: impl Iterator<Item = &'a [u8]>,
    ) -> Result<Table> {
        if schema.columns != self.schema.columns {
            return Err(StorageError::Internal("rebuilt_from: the columns changed".into()));
        }
        let mut next = Table::new(schema, tracker);
        next.sequence = self.sequence;
        for t in tuples {
            next.load_tuple(t)?;
        }
        Ok(next)
    }
}
