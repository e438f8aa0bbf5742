//! The two caps on a statement that its errors quote: the longest text and the deepest
//! bound expression accepted. The `limits` module says why they are what they are and
//! enforces them; they live in this leaf so that the error type can name them without
//! depending on `limits`, which depends on it. Both are re-exported as
//! `permafrost_sql::limits::{MAX_EXPR_DEPTH, MAX_STATEMENT_BYTES}`.

/// The deepest bound expression a statement may hold.
pub const MAX_EXPR_DEPTH: usize = 4_000;

/// The longest statement text accepted (bytes).
pub const MAX_STATEMENT_BYTES: usize = 16 << 20;
