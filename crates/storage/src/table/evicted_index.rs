//! The entries an index being created gives a table's evicted tuples
//! ([`EvictedEntries`]): read from their blocks before the index is added, straight into
//! the index's compact stage, so a build over a table mostly on disk takes about what the
//! index will take, not a list of keys besides.

use crate::error::{Result, StorageError};
use crate::index::{IndexKey, IndexStore, KeyEncoder, TupleRef};
use crate::schema::TableSchema;

/// An index under construction holding only the entries of a table's evicted tuples,
/// and what it was read from ([`super::Table::add_index`] completes it with the tuples in
/// memory).
pub struct EvictedEntries {
    index: IndexStore,
    /// Evicted tuples read (a tuple whose key is NULL has no entry, unless the index is a
    /// primary key, which refuses it).
    read: usize,
    /// The table's [`crate::tombstone::Tombstones::changes`] when the reading began.
    changes: u64,
    table: String,
    name: String,
    unique: bool,
    /// For a primary key, the names of the table's columns (a NULL in a key column is
    /// refused, naming it); `None` for any other index (NULL keys get no entry).
    primary: Option<Vec<String>>,
}

impl EvictedEntries {
    /// Adds the entry of the evicted tuple under `tombstone` whose key is `key`, or
    /// `Err(column)` when the key's column `column` (of the table) is NULL; fails with a
    /// unique violation if the index is unique and the key is already there, and with a
    /// not-null violation for a NULL in a primary key.
    pub fn add(&mut self, tombstone: u32, key: std::result::Result<IndexKey, usize>) -> Result<()> {
        self.read += 1;
        let k = match (key, &self.primary) {
            (Ok(k), _) => k,
            (Err(_), None) => return Ok(()),
            (Err(c), Some(names)) => {
                return Err(StorageError::NotNullViolation {
                    table: self.table.clone(),
                    column: names.get(c).cloned().unwrap_or_default(),
                    row: String::new(),
                });
            }
        };
        if self.unique && self.index.has_other(&k, None) {
            // (Only the encoded key is known here.)
            return Err(StorageError::DuplicateInNewIndex {
                table: self.table.clone(),
                index: self.name.clone(),
                key: String::new(),
            });
        }
        self.index.insert(k, TupleRef::tombstone(tombstone));
        Ok(())
    }

    /// What the entries take.
    pub fn memory_bytes(&self) -> usize {
        self.index.memory_bytes()
    }
}

impl EvictedEntries {
    /// No entries yet for the last index of `schema`, read while the table's tombstones
    /// have changed `changes` times.
    pub(super) fn new(schema: &TableSchema, changes: u64) -> Result<EvictedEntries> {
        let Some(def) = schema.indexes.last() else {
            return Err(StorageError::Internal(
                "evicted_entries: the schema has no index".into(),
            ));
        };
        let kind = KeyEncoder::new(def.columns.iter().map(|&c| schema.columns[c].ty).collect()).kind();
        Ok(EvictedEntries {
            index: IndexStore::new(def.kind, kind),
            read: 0,
            changes,
            table: schema.name.clone(),
            name: def.name.clone(),
            unique: def.unique,
            primary: def
                .primary
                .then(|| schema.columns.iter().map(|c| c.name.clone()).collect()),
        })
    }

    /// The index, if these are the entries of exactly the tuples evicted now: the
    /// tombstones changed `changes` times and `evicted` are live.
    pub(super) fn into_index_if_current(self, changes: u64, evicted: usize) -> Option<IndexStore> {
        (self.changes == changes && self.read == evicted).then_some(self.index)
    }
}
