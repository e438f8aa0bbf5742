//! Table and index definitions, as the catalog hands them to storage.

use crate::error::{Result, StorageError};
use permafrost_types::{DataType, Value};

/// Most columns a table may have (as in PostgreSQL).
pub const MAX_COLUMNS: usize = 1600;

/// Identifies a table within a database; the same at every partition.
pub type TableId = u32;

/// How a column gets a value when an INSERT does not name it.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnDefault {
    /// A constant.
    Value(Value),
    /// The transaction's timestamp (`DEFAULT CURRENT_TIMESTAMP`, or `now()` when `now`),
    /// taken from the transaction context so that replay reproduces it; shown as written.
    CurrentTimestamp { now: bool },
    /// The next value of the table's sequence (SERIAL, BIGSERIAL, identity columns).
    Sequence,
    /// `random()`: drawn from the statement's random state, which its log record keeps.
    Random,
    /// `gen_random_uuid()`: drawn likewise.
    RandomUuid,
    /// `nextval('s')` of a sequence of its own (`CREATE SEQUENCE`): its id, name and how it
    /// steps (a sequence does not change once created).
    NextVal {
        sequence: TableId,
        name: String,
        increment: i64,
        min: i64,
        max: i64,
    },
}

/// A column definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: DataType,
    pub nullable: bool,
    pub default: Option<ColumnDefault>,
    /// `COMMENT ON COLUMN`.
    pub comment: Option<String>,
    /// An identity column `GENERATED ALWAYS`: its values come from its sequence only (a
    /// write that gives one is refused, 428C9).
    pub generated_always: bool,
}

impl Column {
    pub fn new(name: impl Into<String>, ty: DataType) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable: true,
            default: None,
            comment: None,
            generated_always: false,
        }
    }

    pub fn not_null(mut self) -> Column {
        self.nullable = false;
        self
    }

    pub fn default(mut self, d: ColumnDefault) -> Column {
        self.default = Some(d);
        self
    }
}

/// The physical organisation of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// Equality lookups only; the fastest point access.
    Hash,
    /// Ordered by key: equality, prefix and range lookups, ordered scans.
    Ordered,
}

/// An index definition.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexDef {
    pub name: String,
    /// Column positions in key order.
    pub columns: Vec<usize>,
    pub unique: bool,
    pub kind: IndexKind,
    /// Whether this is the table's primary key.
    pub primary: bool,
    /// Whether it is a PRIMARY KEY or UNIQUE constraint's index (shown in pg_constraint,
    /// dropped with the constraint), not one of CREATE INDEX.
    pub constraint: bool,
}

/// What a foreign key does to the rows that reference a key being deleted or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FkAction {
    /// Refused if a referencing row remains (checked when the key's transaction ends, if
    /// the key is deferred, else when the statement ends).
    NoAction,
    /// Refused if a referencing row remains, at once.
    Restrict,
    /// The referencing rows are deleted (ON DELETE) or take the new key (ON UPDATE).
    Cascade,
    /// The referencing rows' key columns become NULL.
    SetNull,
}

impl FkAction {
    /// As SQL writes it.
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
        }
    }
}

/// A FOREIGN KEY of a table (the referencing one): wherever none of its columns is NULL,
/// their values are a key of the referenced table's unique index over `parent_columns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKey {
    pub name: String,
    /// The referencing columns, in key order.
    pub columns: Vec<usize>,
    /// The referenced table, and its columns in key order (those of a unique index).
    pub parent: TableId,
    pub parent_columns: Vec<usize>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
    /// DEFERRABLE, and INITIALLY DEFERRED: checked when the transaction ends.
    pub deferrable: bool,
    pub deferred: bool,
}

/// A CHECK constraint: every row's value of `expr` (SQL over the table's columns) is true
/// or NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckDef {
    pub name: String,
    /// The expression as SQL text, bound again by the statements that write the table.
    pub expr: String,
}

/// Where a column of a table rewritten by ALTER TABLE (ADD / DROP COLUMN, ALTER COLUMN
/// TYPE, SET NOT NULL) takes each row's value from: a column of the table as it was
/// (converted to the column's type), or one value for every row.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnFrom {
    Column(usize),
    Value(permafrost_types::Value),
}

/// A table definition.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    pub id: TableId,
    pub name: String,
    pub columns: Vec<Column>,
    pub indexes: Vec<IndexDef>,
    /// The column whose value picks the partition of a row; `None` for a replicated table
    /// (a full copy at every partition; writes to it are multi-partition transactions).
    pub partition_column: Option<usize>,
    /// Whether the partitioning was declared (`partition_by`) rather than derived from
    /// the primary key: ADD PRIMARY KEY then keeps it (a table replicated by default
    /// becomes partitioned by its new key).
    pub partition_declared: bool,
    /// Whether cold tuples of this table may be evicted to the anti-cache. Tables that are not
    /// evictable keep no LRU chain.
    pub evictable: bool,
    /// Its FOREIGN KEYs (the keys it references; the rows of the tables it references
    /// are checked and acted on by the statements that write them, `permafrost_sql`).
    pub foreign_keys: Vec<ForeignKey>,
    /// Its CHECK constraints (checked by the statements that write it, `permafrost_sql`).
    pub checks: Vec<CheckDef>,
    /// `COMMENT ON TABLE`.
    pub comment: Option<String>,
}

/// Memory a table takes at each partition however few rows it holds: the table's own
/// structures (heap and index roots, layout, tracker, counters) and the allocator's rounding
/// of them. Measured: `permafrost serve` grew by 6.3, 8.7 and 13.8 KB per empty table of two
/// columns and a primary key with 1, 2 and 4 partitions (2,000 tables created one after
/// another), about 2.5 KB per table at each partition and 3.8 KB once.
pub const TABLE_BYTES_PER_PARTITION: u64 = 2560;
/// Memory the database keeps once per table beyond its partitions (its catalog entry, the
/// schema log's and the system catalogs' copies, plans), besides its names: see
/// [`TABLE_BYTES_PER_PARTITION`].
pub const TABLE_BYTES_ONCE: u64 = 3072;
/// The same, per column and per index (their definitions and names' copies).
pub const COLUMN_BYTES: u64 = 192;
pub const INDEX_BYTES: u64 = 256;

impl TableSchema {
    /// What the database keeps once for this table (its definitions and their copies),
    /// estimated from its shape: [`TABLE_BYTES_ONCE`] and the like, plus its names. Each
    /// partition counts its share of it, and [`TABLE_BYTES_PER_PARTITION`] of its own, in its
    /// memory budget ([`crate::MemoryUsage::schema_bytes`]).
    pub fn memory_bytes(&self) -> u64 {
        let columns: u64 = self
            .columns
            .iter()
            .map(|c| COLUMN_BYTES + 2 * c.name.len() as u64 + 2 * c.comment.as_ref().map_or(0, |t| t.len() as u64))
            .sum();
        let indexes: u64 = self
            .indexes
            .iter()
            .map(|i| INDEX_BYTES + 2 * i.name.len() as u64 + 8 * i.columns.len() as u64)
            .sum();
        let comment = 2 * self.comment.as_ref().map_or(0, |t| t.len() as u64);
        TABLE_BYTES_ONCE + 2 * self.name.len() as u64 + columns + indexes + comment
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name.eq_ignore_ascii_case(name))
    }

    pub fn index_by_name(&self, name: &str) -> Option<usize> {
        self.indexes.iter().position(|i| i.name.eq_ignore_ascii_case(name))
    }

    pub fn primary_key(&self) -> Option<&IndexDef> {
        self.indexes.iter().find(|i| i.primary)
    }

    pub fn is_replicated(&self) -> bool {
        self.partition_column.is_none()
    }

    /// Whether index `i` is unique across partitions without holding the partition column:
    /// each partition's index holds its own rows' keys, and a key is checked at every
    /// partition before it is written (a write of such a key runs over all partitions).
    pub fn is_global_unique(&self, i: usize) -> bool {
        self.indexes
            .get(i)
            .is_some_and(|ix| ix.unique && self.partition_column.is_some_and(|p| !ix.columns.contains(&p)))
    }

    /// The first index (a unique one, with `unique`) whose columns are exactly `columns`, in
    /// any order: the one a foreign key's referenced or referencing columns are looked up in.
    pub fn index_over(&self, columns: &[usize], unique: bool) -> Option<usize> {
        self.indexes.iter().position(|ix| {
            (ix.unique || !unique)
                && ix.columns.len() == columns.len()
                && columns.iter().all(|c| ix.columns.contains(c))
        })
    }

    /// The indexes [`TableSchema::is_global_unique`] holds for, by position.
    pub fn global_unique_indexes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.indexes.len()).filter(|&i| self.is_global_unique(i))
    }

    /// The first global unique index (by position) holding a column `written` selects: a
    /// write of those columns must run over every partition, where its key is checked.
    pub fn global_unique_over(&self, written: impl Fn(usize) -> bool) -> Option<usize> {
        self.global_unique_indexes()
            .find(|&i| self.indexes[i].columns.iter().any(|&c| written(c)))
    }

    /// Checks the definition for mistakes a user can make in DDL.
    pub fn validate(&self) -> Result<()> {
        if self.columns.is_empty() {
            return Err(StorageError::Schema(format!("table \"{}\" has no columns", self.name)));
        }
        if self.columns.len() > MAX_COLUMNS {
            return Err(StorageError::Schema(format!(
                "table \"{}\" has {} columns; at most {MAX_COLUMNS} are allowed",
                self.name,
                self.columns.len()
            )));
        }
        for (i, c) in self.columns.iter().enumerate() {
            if self.columns[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&c.name)) {
                return Err(StorageError::DuplicateColumn(c.name.clone()));
            }
            if let DataType::Varchar(Some(0)) = c.ty {
                return Err(StorageError::Schema(format!(
                    "length for type varchar of column \"{}\" must be at least 1",
                    c.name
                )));
            }
        }
        if self.indexes.iter().filter(|i| i.primary).count() > 1 {
            return Err(StorageError::Schema(format!(
                "multiple primary keys for table \"{}\" are not allowed",
                self.name
            )));
        }
        for (i, idx) in self.indexes.iter().enumerate() {
            if self.indexes[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&idx.name)) {
                return Err(StorageError::Schema(format!("index \"{}\" already exists", idx.name)));
            }
            if idx.columns.is_empty() {
                return Err(StorageError::Schema(format!("index \"{}\" has no columns", idx.name)));
            }
            for &c in &idx.columns {
                let col = self
                    .columns
                    .get(c)
                    .ok_or_else(|| StorageError::Schema(format!("index \"{}\" names a missing column", idx.name)))?;
                if let DataType::Decimal { precision: 0, .. } = col.ty {
                    return Err(StorageError::Schema(format!(
                        "index \"{}\": column \"{}\" is an unconstrained numeric; declare \
                         NUMERIC(precision, scale) to index it",
                        idx.name, col.name
                    )));
                }
            }
        }
        // (A unique index without the partition column is checked at every partition:
        // `is_global_unique`.)
        if self.partition_column.is_some_and(|p| p >= self.columns.len()) {
            return Err(StorageError::Schema(format!(
                "partition column of \"{}\" is missing",
                self.name
            )));
        }
        Ok(())
    }
}
