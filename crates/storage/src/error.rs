//! The storage layer's error type.
//!
//! Every variant knows the SQLSTATE a PostgreSQL client should see for it, so the wire layer
//! never has to guess from message text.

use thiserror::Error;

/// Result alias for the storage crate.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Errors raised by tables, indexes and value conversion.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StorageError {
    /// `key`: the key's columns and values as PostgreSQL's DETAIL shows them,
    /// `(a, b)=(1, x)` ([`key_text`]); empty when not known.
    #[error("duplicate key value violates unique constraint \"{index}\"")]
    UniqueViolation { table: String, index: String, key: String },

    /// A unique index built over rows already there found a key twice; `key` as in
    /// `UniqueViolation`.
    #[error("could not create unique index \"{index}\"")]
    DuplicateInNewIndex { table: String, index: String, key: String },

    /// `row`: the row as it would have been, as PostgreSQL's DETAIL shows it
    /// ([`row_text`]); empty when not known.
    #[error(
        "null value in column \"{column}\" of relation \"{}\" violates not-null constraint",
        crate::namespace::bare(table)
    )]
    NotNullViolation { table: String, column: String, row: String },

    /// A value that does not fit its type, or text that does not read as one.
    #[error(transparent)]
    Value(#[from] permafrost_types::ValueError),

    #[error("the sequence of table \"{table}\" reached its maximum value")]
    SequenceExhausted { table: String },

    #[error(
        "memory budget exhausted: {what} needs {needed} bytes but the database uses {used} of its \
         memory_limit of {limit} bytes (eviction cannot free enough; raise memory_limit or mark \
         more tables evictable)"
    )]
    MemoryLimit {
        what: String,
        needed: u64,
        used: u64,
        limit: u64,
    },

    #[error("table \"{table}\" is full at this partition ({limit} tuples)")]
    TableFull { table: String, limit: u64 },

    #[error("{0}")]
    Schema(String),

    /// A column named twice in a table's definition (42701).
    #[error("column \"{0}\" specified more than once")]
    DuplicateColumn(String),

    /// An index built over evicted tuples met tuples evicted after their keys were read
    /// (the executor reads them again and retries).
    #[error("table \"{table}\" evicted tuples while index \"{index}\" was being built; try again")]
    EvictedDuringBuild { table: String, index: String },

    /// A primary key added to a replicated table partitions it, which removes from each
    /// partition the rows of the others; evicted rows cannot be removed unread.
    #[error(
        "cannot add a primary key that partitions replicated table \"{table}\": {evicted} of its \
         tuples are evicted at a partition (declare the key in CREATE TABLE, or add it before \
         the table outgrows memory)"
    )]
    EvictedRowsWouldMove { table: String, evicted: usize },

    #[error("data corrupted: {0}")]
    Corrupt(String),

    #[error(
        "row is too big: size {size}, maximum size {max} (a row must fit in one snapshot section; \
         keep values this large outside the database)"
    )]
    RowTooBig { size: usize, max: usize },
    #[error("internal storage error: {0}")]
    Internal(String),
    /// A rewrite of a table (ALTER TABLE) that would make a NOT NULL column hold NULLs.
    #[error("column \"{column}\" of relation \"{table}\" contains null values")]
    ColumnHasNulls { table: String, column: String },
    /// A rewrite of a table part of which is evicted: its evicted rows are not in memory.
    #[error(
        "table \"{table}\" has {evicted} evicted tuples; ALTER TABLE that rewrites its rows (ADD / DROP \
         COLUMN, ALTER COLUMN TYPE, SET NOT NULL) works over tuples in memory only"
    )]
    EvictedRewrite { table: String, evicted: usize },
    /// A table's partitioning changed where its evicted rows were not read first (in a
    /// transaction block that also runs statements).
    #[error(
        "table \"{table}\" has {evicted} evicted tuples; its partitioning changes over evicted rows only in a \
         statement of its own or a transaction block of schema changes only"
    )]
    EvictedRepartition { table: String, evicted: usize },
    /// A table being repartitioned evicted tuples after its evicted rows were read (the
    /// executor reads them again and retries).
    #[error("table \"{table}\" evicted tuples while its rows were being moved; try again")]
    EvictedDuringMove { table: String },
}

impl StorageError {
    /// The SQLSTATE code a client sees for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            StorageError::UniqueViolation { .. } | StorageError::DuplicateInNewIndex { .. } => "23505",
            StorageError::NotNullViolation { .. } => "23502",
            StorageError::Value(e) => e.sqlstate(),
            StorageError::SequenceExhausted { .. } => "2200H",
            StorageError::MemoryLimit { .. } => "53200",
            StorageError::RowTooBig { .. } => "54000",
            StorageError::TableFull { .. } => "54000",
            StorageError::Schema(_) => "42P16",
            StorageError::DuplicateColumn(_) => "42701",
            StorageError::EvictedDuringBuild { .. } => "40001",
            StorageError::EvictedRowsWouldMove { .. } => "0A000",
            StorageError::Corrupt(_) => "XX001",
            StorageError::Internal(_) => "XX000",
            StorageError::ColumnHasNulls { .. } => "23502",
            StorageError::EvictedRewrite { .. } => "0A000",
            StorageError::EvictedRepartition { .. } => "0A000",
            StorageError::EvictedDuringMove { .. } => "40001",
        }
    }

    /// PostgreSQL's DETAIL for the error, where there is more to say than its message.
    pub fn detail(&self) -> Option<String> {
        match self {
            StorageError::UniqueViolation { key, .. } if !key.is_empty() => Some(format!("Key {key} already exists.")),
            StorageError::DuplicateInNewIndex { key, .. } if !key.is_empty() => {
                Some(format!("Key {key} is duplicated."))
            }
            StorageError::NotNullViolation { row, .. } if !row.is_empty() => {
                Some(format!("Failing row contains {row}."))
            }
            StorageError::Value(v) => v.detail(),
            _ => None,
        }
    }

    /// Whether retrying the same request later may succeed (the budget may be freed by
    /// eviction in the meantime).
    pub fn is_retryable(&self) -> bool {
        matches!(self, StorageError::MemoryLimit { .. })
    }
}

/// A row as PostgreSQL's DETAIL shows it: its values in text form, `null` for a NULL, each
/// cut to 64 bytes (then `...`), `(1, null, x)`.
pub fn row_text<'v>(values: impl IntoIterator<Item = permafrost_types::ValueRef<'v>>) -> String {
    const SHOWN: usize = 64;
    let shown = values.into_iter().map(|v| {
        if v.is_null() {
            return "null".to_string();
        }
        let mut t = v.to_string();
        if t.len() > SHOWN {
            let cut = (0..=SHOWN).rev().find(|&i| t.is_char_boundary(i)).unwrap_or(0);
            t.truncate(cut);
            t.push_str("...");
        }
        t
    });
    format!("({})", shown.collect::<Vec<_>>().join(", "))
}

/// A key as PostgreSQL's DETAIL shows it: its columns, then its values in text form,
/// `(a, b)=(1, x)`.
pub fn key_text<'c, 'v>(
    columns: impl IntoIterator<Item = &'c str>,
    values: impl IntoIterator<Item = permafrost_types::ValueRef<'v>>,
) -> String {
    let columns: Vec<&str> = columns.into_iter().collect();
    let values: Vec<String> = values.into_iter().map(|v| v.to_string()).collect();
    format!("({})=({})", columns.join(", "), values.join(", "))
}
