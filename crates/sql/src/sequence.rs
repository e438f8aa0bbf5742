//! Sequences: those of their own (`CREATE SEQUENCE`, what Hibernate, SQLAlchemy's
//! `Sequence` and hand-written migrations declare; planned in sequence_ddl.rs) next to the
//! sequences of SERIAL, BIGSERIAL and identity columns, which belong to their tables.
//!
//! A sequence lives in the catalog only ([`SequenceDef`], an id from the tables' id space so
//! that the one counter map of crate::exec::sequences serves both kinds); its counter is
//! the last value handed out, drawn by every partition without a lock, and a snapshot keeps
//! it (docs/format.md, section SEQUENCES). Values go up: a sequence that counts down
//! (a negative INCREMENT) and CYCLE are refused (0A000). `OWNED BY t.c` ([`SeqOwner`]) makes
//! it go with its column: dropped by `DROP TABLE t` or `DROP COLUMN c`, found by
//! `pg_get_serial_sequence`, following a rename of the column (what pg_dump writes for a
//! SERIAL column: a sequence of its own, owned by the column that draws from it). `CACHE n`
//! is accepted and changes nothing: every session draws from the one counter, so values
//! are handed out in order with no per-session blocks (PostgreSQL's CACHE only allows
//! more gaps and disorder than this).

use permafrost_storage::{TableId, TableSchema};
use permafrost_types::DataType;

/// How a sequence steps: its increment and the bounds of its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqStep {
    pub increment: i64,
    pub min: i64,
    pub max: i64,
}

impl SeqStep {
    /// A SERIAL, BIGSERIAL or identity column's sequence: 1, 2, 3, ... (the column's type
    /// bounds what is stored).
    pub const SERIAL: SeqStep = SeqStep {
        increment: 1,
        min: 1,
        max: i64::MAX,
    };
}

/// A sequence created by `CREATE SEQUENCE`.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceDef {
    pub id: TableId,
    pub name: String,
    /// `smallint`, `integer` or `bigint` (`AS ...`; bigint by default): its values' range.
    pub ty: DataType,
    pub start: i64,
    pub step: SeqStep,
    /// `CACHE n` as declared (1 by default; see the module's docs).
    pub cache: i64,
    /// The column it belongs to (`OWNED BY`), if any.
    pub owned_by: Option<SeqOwner>,
}

/// The column a sequence belongs to (`OWNED BY table.column`).
#[derive(Debug, Clone, PartialEq)]
pub struct SeqOwner {
    pub table: TableId,
    pub column: String,
}

impl SequenceDef {
    /// The counter's value before the first `nextval()`: one step below START.
    pub fn before_start(&self) -> i64 {
        self.start.saturating_sub(self.step.increment)
    }
}

/// The name PostgreSQL gives the sequence of `schema`'s column `col` (SERIAL): what
/// `nextval('...')` takes, `pg_get_serial_sequence` gives, and the catalogs list.
pub fn sequence_name(schema: &TableSchema, col: usize) -> String {
    format!("{}_{}_seq", schema.name, schema.columns[col].name)
}
