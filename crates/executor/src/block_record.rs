//! The command-log record of a committed transaction block (docs/format.md, "Interactive
//! transactions"): the marks its text starts with, then the JSON of [`Logged`]. Written by
//! crate::interactive when a block commits, read back by it and by crate::recovery.

use serde::{Deserialize, Serialize};

/// The start of a committed interactive transaction's text in the command log: a comment,
/// then the JSON of [`Logged`] (docs/format.md, "Interactive transactions").
pub(crate) const INTERACTIVE_MARK: &str = "/* permafrost: interactive transaction */ ";

/// The start of a committed interactive transaction's text whose JSON says how many
/// parameters each statement takes ([`Logged::counts`]: it holds a COPY's rows). Another
/// mark, so that a reader that knows only [`INTERACTIVE_MARK`] stops at it with an error
/// rather than splitting the parameters wrongly.
pub(crate) const COUNTED_MARK: &str = "/* permafrost: interactive transaction, counted */ ";

/// The start of the text of a committed block that changed the schema: a comment, then
/// the JSON of [`Logged`] with its `schema` and `schema_at` (docs/format.md, "Interactive
/// transactions"). A reader that does not know it stops at it with an error rather than
/// replaying the writes without the changes.
pub(crate) const SCHEMA_MARK: &str = "/* permafrost: interactive transaction with schema changes */ ";

/// Whether a logged statement text is a committed interactive transaction.
pub(crate) fn is_logged(sql: &str) -> bool {
    sql.starts_with(INTERACTIVE_MARK) || sql.starts_with(COUNTED_MARK)
}

/// What the command log records of a committed interactive transaction, besides the
/// parameters of its statements one after the other.
#[derive(Serialize, Deserialize)]
pub(crate) struct Logged {
    /// `now()` inside the transaction (its start), in microseconds since the epoch.
    pub(crate) now: i64,
    /// The statements' texts, in order.
    pub(crate) statements: Vec<String>,
    /// The partition whose sequences gave its new keys (`Interactive::sequence_home`);
    /// absent in records written before it was kept (their keys came from the first
    /// partition held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) home: Option<u32>,
    /// How many of the record's parameters each statement takes, when a statement is a
    /// bulk insert (a COPY inside the block: its parameters are its rows); absent
    /// otherwise, and then each statement takes as many as its text uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) counts: Option<Vec<usize>>,
    /// The schema statements of a block that changed the schema, applied before its
    /// statements (only under [`SCHEMA_MARK`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) schema: Vec<String>,
    /// For each of `schema`, how many of `statements` come before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) schema_at: Vec<usize>,
    /// Each statement's random seed (`TxnStatement::seed`, crate::interactive) as 16 hex digits (so that a
    /// record's length does not depend on them); absent in records written before they
    /// were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) seeds: Vec<String>,
}
