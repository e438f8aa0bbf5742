//! Unique keys looked up from outside the table's own writes: an upsert's arbiter check
//! ([`Table::unique_holder`]), and a unique index without the partition column
//! ([`crate::TableSchema::is_global_unique`]), whose keys each partition's index holds for
//! its own rows and whose writes are checked against the other partitions' tables by the
//! statement that runs over all of them ([`Table::unique_violation_at`],
//! [`Table::check_unique_apart`]).

use super::*;

impl Table {
    /// The tuple whose key in unique index `i` is the one `values` (one per column, of the
    /// column types) would give it — in memory or evicted — or `None` (also for a key
    /// with a NULL, which never conflicts). Only live tuples have entries.
    pub fn unique_holder(&self, i: usize, values: &[Value]) -> Option<TupleRef> {
        let ix = self.schema.indexes.get(i)?;
        let key = self.encoders[i].encode(ix.columns.iter().map(|&c| values[c].as_ref()))?;
        let mut found = None;
        let _ = self.indexes[i].lookup(&key, |r| {
            found = Some(r);
            ControlFlow::Break(())
        });
        found
    }

    /// Calls `f` with every tuple — in memory and visible, or evicted — whose key in
    /// index `i` is the one `values` (one per column, of the column types) would give it;
    /// none for a key with a NULL (a foreign key's referencing rows, found by an index
    /// over its columns).
    pub fn index_holders(&self, i: usize, values: &[Value], mut f: impl FnMut(TupleRef) -> ControlFlow<()>) {
        let Some(ix) = self.schema.indexes.get(i) else { return };
        let Some(key) = self.encoders[i].encode(ix.columns.iter().map(|&c| values[c].as_ref())) else {
            return;
        };
        let _ = self.indexes[i].lookup(&key, |r| match r.as_slot() {
            Some(slot) if !self.heap.is_visible(slot) => ControlFlow::Continue(()),
            _ => f(r),
        });
    }

    /// The error a repeat of index `i`'s key is, the key being the one `values` (one per
    /// column) give it.
    pub fn unique_violation_at(&self, i: usize, values: &[Value]) -> StorageError {
        self.unique_violation(i, self.schema.indexes[i].columns.iter().map(|&c| values[c].as_ref()))
    }

    /// Fails with a unique violation when a key of unique index `i` here is held by
    /// `other` too (the same table at another partition): a global unique index built over
    /// rows already there.
    pub fn check_unique_apart(&self, other: &Table, i: usize) -> Result<()> {
        let (Some(mine), Some(theirs)) = (self.indexes.get(i), other.indexes.get(i)) else {
            return Ok(());
        };
        let mut repeat = None;
        mine.for_each(|k, r| {
            if repeat.is_none() && theirs.has_other(&k, None) {
                repeat = Some(r);
            }
        });
        let Some(r) = repeat else { return Ok(()) };
        let ix = &self.schema.indexes[i];
        // (An evicted tuple's key is known encoded only.)
        let key = match r.as_slot() {
            Some(slot) => {
                let bytes = self.heap.bytes(slot);
                crate::error::key_text(
                    ix.columns.iter().map(|&c| self.schema.columns[c].name.as_str()),
                    ix.columns.iter().map(|&c| self.layout.read(bytes, c, &self.var)),
                )
            }
            None => String::new(),
        };
        Err(StorageError::DuplicateInNewIndex {
            table: self.schema.name.clone(),
            index: ix.name.clone(),
            key,
        })
    }
}
