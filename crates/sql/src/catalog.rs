//! The catalog: the schemas, tables, views, sequences and enum types the database knows, by
//! name (a key: `name` in public, `schema.name` in another, crate::namespace).
//!
//! A catalog value is immutable once built; DDL produces a new catalog
//! ([`Catalog::apply`]), so statements planned against an old catalog keep a consistent
//! view and readers never need a lock.

use std::collections::BTreeMap;
use std::sync::Arc;

use permafrost_storage::{TableId, TableSchema};
use permafrost_types::EnumRef;

use crate::error::{Result, SqlError};

/// A schema change, as every partition must apply it.
#[derive(Debug, Clone, PartialEq)]
pub enum DdlChange {
    CreateTable(Arc<TableSchema>),
    /// The table's schema with the new index appended (its position is the last).
    CreateIndex(Arc<TableSchema>),
    /// The table's schema with a primary key appended as its last index (ALTER TABLE ...
    /// ADD PRIMARY KEY): the key's columns NOT NULL, and a table that was replicated by
    /// default partitioned by the key's first column (each partition then keeps only the
    /// rows of its keys).
    AddPrimaryKey(Arc<TableSchema>),
    DropTable(TableId),
    /// The table's schema with other names (of the table, of columns) or column defaults,
    /// and nothing else changed (`ALTER TABLE ... RENAME`, `ALTER COLUMN ... SET / DROP
    /// DEFAULT`): its rows and indexes stay as they are.
    AlterSchema(Arc<TableSchema>),
    /// The table's schema with columns added, dropped, of another type or made NOT NULL
    /// (ALTER TABLE): its rows are rewritten, each new column's values taken as `from`
    /// says, and its indexes built again.
    RewriteTable {
        schema: Arc<TableSchema>,
        from: Arc<[permafrost_storage::ColumnFrom]>,
    },
    /// The table's schema with another partitioning and nothing else changed (`ALTER TABLE
    /// ... SET (partition_by = ..., replicated = ...)`, or a choice refined by a CREATE TABLE:
    /// crate::placement): its rows move to the partitions of their new key, or are copied to
    /// every partition for a replicated table; the evicted ones are read from their blocks.
    Repartition(Arc<TableSchema>),
    /// The table's schema with index `dropped` removed.
    DropIndex {
        schema: Arc<TableSchema>,
        dropped: usize,
    },
    /// A view (`replace`: `CREATE OR REPLACE VIEW`). Views live in the catalog only: the
    /// partitions hold nothing of them.
    CreateView {
        view: Arc<View>,
        replace: bool,
    },
    DropView(String),
    /// A sequence (`CREATE SEQUENCE`, crate::sequence): in the catalog only, like a view;
    /// the database sets its counter below its START.
    CreateSequence(Arc<crate::sequence::SequenceDef>),
    DropSequence(TableId),
    /// `ALTER SEQUENCE` of a sequence of its own: its new definition (the same id), and the
    /// counter's new value (the last one handed out) for `RESTART`, which the database sets.
    AlterSequence {
        def: Arc<crate::sequence::SequenceDef>,
        restart: Option<i64>,
    },
    /// An enum type (`CREATE TYPE ... AS ENUM`, crate::enum_ddl): in the catalog only.
    CreateType(EnumRef),
    /// A new version of an enum type (`ALTER TYPE`): the same id. The tables with columns
    /// of the type come as `AlterSchema` changes after it, their columns of the new version.
    AlterType(EnumRef),
    DropType(TableId),
    /// A schema (`CREATE SCHEMA`): in the catalog only.
    CreateSchema {
        name: String,
        id: TableId,
    },
    DropSchema(String),
}

/// A view: a named query, read as a subquery in FROM wherever it is named.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub name: String,
    /// Its query, as written.
    pub query: Arc<sqlparser::ast::Query>,
    /// The names `CREATE VIEW v (a, b)` gives its first columns (the query's own names
    /// past them).
    pub columns: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tables: BTreeMap<String, Arc<TableSchema>>,
    views: BTreeMap<String, Arc<View>>,
    sequences: BTreeMap<String, Arc<crate::sequence::SequenceDef>>,
    types: BTreeMap<String, EnumRef>,
    /// The schemas besides public, with their ids (from the tables' id space).
    schemas: BTreeMap<String, TableId>,
    next_id: TableId,
}

impl Catalog {
    pub fn new() -> Catalog {
        Catalog::default()
    }

    /// Looks a table up by its (already case-folded) name.
    pub fn table(&self, name: &str) -> Option<&Arc<TableSchema>> {
        self.tables.get(name)
    }

    pub fn views(&self) -> impl Iterator<Item = &Arc<View>> {
        self.views.values()
    }

    /// Looks a view up by its (already case-folded) name.
    pub fn view(&self, name: &str) -> Option<&Arc<View>> {
        self.views.get(name)
    }

    /// Looks a sequence of its own (`CREATE SEQUENCE`) up by its (already case-folded) name.
    pub fn sequence(&self, name: &str) -> Option<&Arc<crate::sequence::SequenceDef>> {
        self.sequences.get(name)
    }

    pub fn sequences(&self) -> impl Iterator<Item = &Arc<crate::sequence::SequenceDef>> {
        self.sequences.values()
    }

    /// Looks an enum type up by its (already case-folded) name.
    pub fn enum_type(&self, name: &str) -> Option<EnumRef> {
        self.types.get(name).copied()
    }

    pub fn enum_types(&self) -> impl Iterator<Item = EnumRef> + '_ {
        self.types.values().copied()
    }

    /// The schemas besides public, by name, with their ids.
    pub fn schemas(&self) -> impl Iterator<Item = (&str, TableId)> + '_ {
        self.schemas.iter().map(|(n, id)| (n.as_str(), *id))
    }

    /// Whether schema `name` exists (public always does).
    pub fn has_schema(&self, name: &str) -> bool {
        name == crate::namespace::PUBLIC || self.schemas.contains_key(name)
    }

    /// Refuses (3F000) a new object's key whose schema does not exist.
    pub fn check_schema_of(&self, key: &str) -> Result<()> {
        let (schema, _) = crate::namespace::split(key);
        match self.has_schema(schema) {
            true => Ok(()),
            false => Err(SqlError::UnknownSchema(schema.to_string())),
        }
    }

    /// The keys of the objects in schema `name` (tables, views, sequences, types), each
    /// with its kind.
    pub fn objects_in_schema<'a>(&'a self, name: &'a str) -> impl Iterator<Item = (&'static str, &'a str)> + 'a {
        let mine = move |k: &&String| crate::namespace::split(k).0 == name;
        (self.tables.keys().filter(mine).map(|k| ("table", k.as_str())))
            .chain(self.views.keys().filter(mine).map(|k| ("view", k.as_str())))
            .chain(self.sequences.keys().filter(mine).map(|k| ("sequence", k.as_str())))
            .chain(self.types.keys().filter(mine).map(|k| ("type", k.as_str())))
    }

    /// Whether `name` is taken as a type's: an enum type's, or a relation's (whose row
    /// type has its name, in PostgreSQL).
    pub fn has_type_name(&self, name: &str) -> bool {
        self.types.contains_key(name) || self.has_relation(name)
    }

    /// Whether `name` is taken by a relation: a table, a view, a sequence, an index, or a
    /// SERIAL column's sequence (all one namespace in PostgreSQL).
    pub fn has_relation(&self, name: &str) -> bool {
        self.table(name).is_some()
            || self.view(name).is_some()
            || self.sequence(name).is_some()
            || self.index_owner(name).is_some()
            || self.tables().any(|t| {
                t.columns.iter().enumerate().any(|(c, col)| {
                    col.default == Some(permafrost_storage::ColumnDefault::Sequence)
                        && crate::sequence::sequence_name(t, c) == name
                })
            })
    }

    pub fn table_by_id(&self, id: TableId) -> Option<&Arc<TableSchema>> {
        self.tables.values().find(|t| t.id == id)
    }

    pub fn tables(&self) -> impl Iterator<Item = &Arc<TableSchema>> {
        self.tables.values()
    }

    /// The id the next created table gets.
    pub fn next_table_id(&self) -> TableId {
        self.next_id
    }

    /// Finds the table that owns index `name` (a key: the index is in its table's schema).
    pub fn index_owner(&self, name: &str) -> Option<(&Arc<TableSchema>, usize)> {
        let (schema, bare) = crate::namespace::split(name);
        self.tables
            .values()
            .filter(|t| crate::namespace::split(&t.name).0 == schema)
            .find_map(|t| t.index_by_name(bare).map(|i| (t, i)))
    }

    /// The catalog after `change`.
    pub fn apply(&self, change: &DdlChange) -> Result<Catalog> {
        let mut next = self.clone();
        match change {
            DdlChange::CreateTable(s) => {
                if next.tables.contains_key(&s.name)
                    || next.views.contains_key(&s.name)
                    || next.sequences.contains_key(&s.name)
                {
                    return Err(SqlError::DuplicateTable(s.name.clone()));
                }
                if next.types.contains_key(&s.name) {
                    return Err(SqlError::TypeOfRelationTaken(s.name.clone()));
                }
                next.next_id = next.next_id.max(s.id + 1);
                next.tables.insert(s.name.clone(), s.clone());
            }
            DdlChange::CreateIndex(s) | DdlChange::AddPrimaryKey(s) | DdlChange::DropIndex { schema: s, .. } => {
                let slot = next
                    .tables
                    .get_mut(&s.name)
                    .ok_or_else(|| SqlError::UnknownTable(s.name.clone()))?;
                *slot = s.clone();
            }
            DdlChange::AlterSchema(s) | DdlChange::RewriteTable { schema: s, .. } | DdlChange::Repartition(s) => {
                let old = self
                    .table_by_id(s.id)
                    .map(|t| t.name.clone())
                    .ok_or_else(|| SqlError::UnknownTable(s.name.clone()))?;
                if old != s.name && (next.tables.contains_key(&s.name) || next.views.contains_key(&s.name)) {
                    return Err(SqlError::DuplicateTable(s.name.clone()));
                }
                next.tables.remove(&old);
                next.tables.insert(s.name.clone(), s.clone());
            }
            DdlChange::DropTable(id) => {
                let name = self
                    .table_by_id(*id)
                    .map(|t| t.name.clone())
                    .ok_or_else(|| SqlError::UnknownTable(id.to_string()))?;
                next.tables.remove(&name);
            }
            DdlChange::CreateView { view, replace } => {
                if next.tables.contains_key(&view.name) || (!replace && next.views.contains_key(&view.name)) {
                    return Err(SqlError::DuplicateTable(view.name.clone()));
                }
                next.views.insert(view.name.clone(), view.clone());
            }
            DdlChange::DropView(name) => {
                if next.views.remove(name).is_none() {
                    return Err(SqlError::UnknownTable(name.clone()));
                }
            }
            DdlChange::CreateSequence(seq) => {
                if self.has_relation(&seq.name) {
                    return Err(SqlError::DuplicateTable(seq.name.clone()));
                }
                next.next_id = next.next_id.max(seq.id + 1);
                next.sequences.insert(seq.name.clone(), seq.clone());
            }
            DdlChange::AlterSequence { def: seq, .. } => {
                let old = self
                    .sequences
                    .values()
                    .find(|s| s.id == seq.id)
                    .map(|s| s.name.clone())
                    .ok_or_else(|| SqlError::UnknownSequence(seq.id.to_string()))?;
                if old != seq.name && self.has_relation(&seq.name) {
                    return Err(SqlError::DuplicateTable(seq.name.clone()));
                }
                next.sequences.remove(&old);
                next.sequences.insert(seq.name.clone(), seq.clone());
            }
            DdlChange::CreateType(ty) => {
                // A table's name is its row type's too, in PostgreSQL.
                if self.has_type_name(&ty.name) {
                    return Err(SqlError::DuplicateObject(format!(
                        "type \"{}\" already exists",
                        ty.name
                    )));
                }
                next.next_id = next.next_id.max(ty.id + 1);
                next.types.insert(ty.name.clone(), *ty);
            }
            DdlChange::AlterType(ty) => {
                let old = self.types.values().find(|t| t.id == ty.id).map(|t| t.name.clone());
                let old = old.ok_or_else(|| SqlError::UnknownType(ty.name.clone()))?;
                if old != ty.name && self.has_type_name(&ty.name) {
                    return Err(SqlError::DuplicateObject(format!(
                        "type \"{}\" already exists",
                        ty.name
                    )));
                }
                next.types.remove(&old);
                next.types.insert(ty.name.clone(), *ty);
            }
            DdlChange::DropType(id) => {
                let name = self.types.values().find(|t| t.id == *id).map(|t| t.name.clone());
                next.types
                    .remove(&name.ok_or_else(|| SqlError::UnknownType(id.to_string()))?);
            }
            DdlChange::CreateSchema { name, id } => {
                if next.schemas.contains_key(name) || name == crate::namespace::PUBLIC {
                    return Err(SqlError::DuplicateSchema(name.clone()));
                }
                next.next_id = next.next_id.max(id + 1);
                next.schemas.insert(name.clone(), *id);
            }
            DdlChange::DropSchema(name) => {
                next.schemas
                    .remove(name)
                    .ok_or_else(|| SqlError::UnknownSchema(name.clone()))?;
            }
            DdlChange::DropSequence(id) => {
                let name = self
                    .sequences
                    .values()
                    .find(|s| s.id == *id)
                    .map(|s| s.name.clone())
                    .ok_or_else(|| SqlError::UnknownSequence(id.to_string()))?;
                next.sequences.remove(&name);
            }
        }
        Ok(next)
    }
}
