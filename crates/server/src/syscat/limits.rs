//! What a catalog query may take of memory: the same statement budget as the engine's
//! queries ([`permafrost_sql::value_budget`]), applied to the engine that answers catalog
//! queries.
//!
//! A catalog query is SQL that clients write, and SQLite, like any engine, builds what it
//! is asked to: `lpad('a', 2147483647, 'b')` or `string_agg` over a catalog took the
//! server's memory past any budget. So each query runs under its statement's budget
//! ([`QueryBudget`], set from the database's `work_mem` and statement pool before each
//! query):
//!
//! - SQLite's own builders (`||`, `replace`, `group_concat`, which `string_agg` becomes,
//!   `substr`, the results of our functions) are held by `SQLITE_LIMIT_LENGTH`, set to what
//!   the budget leaves for one value; SQLite's "string or blob too big" is answered as
//!   PostgreSQL answers a value past its limit (54000, `super::error_of`).
//! - The functions defined here (`super::functions`: `lpad`, `rpad`, `repeat`,
//!   `regexp_replace` ...) build through the budget's [`ValueBudget`] before allocating,
//!   and answer its errors with their SQLSTATEs (54000, 53200) and messages ("requested
//!   length too large", as PostgreSQL).
//! - `array_agg` is an aggregate of ours ([`ArrayAgg`]): SQLite's `json_group_array`
//!   checks its length only once it has built the whole array.
//! - The rows of the result count against the statement's `work_mem` and draw from the
//!   pool as the engine's results do (`super::query`).
//!
//! rusqlite has no per-connection heap limit (SQLite's heap limits are the process's),
//! so what SQLite holds besides values (its sorter, its parse) is bounded by the size of
//! the catalogs, which are small.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use permafrost_sql::SqlError;
use permafrost_sql::value_budget::{MAX_VALUE_BYTES, ValueBudget};
use permafrost_sql::workmem::{MemoryPool, POOL_STEP};
use rusqlite::functions::{Aggregate, Context, FunctionFlags, SubType};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Error};

/// The budget of the query a catalog database runs now: what its functions may build.
#[derive(Debug, Default)]
pub(super) struct QueryBudget {
    /// The statement's `work_mem` (0: not set, the least a statement has) and pool.
    limits: Mutex<(usize, Option<Arc<MemoryPool>>)>,
    /// What the query holds of its result so far.
    held: AtomicUsize,
}

impl QueryBudget {
    /// The next query's budget: `work_mem` bytes and room in `pool`; applied to SQLite's
    /// own builders at once (`SQLITE_LIMIT_LENGTH`).
    pub(super) fn set(&self, conn: &Connection, work_mem: usize, pool: Arc<MemoryPool>) -> rusqlite::Result<()> {
        let room = pool.limit().saturating_sub(pool.used()).saturating_add(POOL_STEP);
        *self.limits.lock().unwrap_or_else(|p| p.into_inner()) = (work_mem, Some(pool));
        self.held.store(0, Ordering::Relaxed);
        let longest = work_mem.min(room).min(MAX_VALUE_BYTES);
        conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, i32::try_from(longest).unwrap_or(i32::MAX))?;
        Ok(())
    }

    /// The query holds `bytes` of its result now.
    pub(super) fn set_held(&self, bytes: usize) {
        self.held.store(bytes, Ordering::Relaxed);
    }

    /// The query's `work_mem` ([`ValueBudget::default`]'s when none was set).
    pub(super) fn work_mem(&self) -> usize {
        self.with(|b| b.limit())
    }

    /// The statement pool the query draws from (None: not set).
    pub(super) fn pool(&self) -> Option<Arc<MemoryPool>> {
        self.limits.lock().unwrap_or_else(|p| p.into_inner()).1.clone()
    }

    /// Runs `f` with the query's budget.
    pub(super) fn with<T>(&self, f: impl FnOnce(&ValueBudget<'_>) -> T) -> T {
        let (work_mem, pool) = self.limits.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let budget = match work_mem {
            0 => ValueBudget::default(),
            n => ValueBudget::new(n, pool.as_deref()),
        };
        budget.set_held(self.held.load(Ordering::Relaxed));
        f(&budget)
    }

    /// Builds a value with `f` under the query's budget, its error raised as the
    /// function's (with its SQLSTATE).
    pub(super) fn build<T>(
        &self,
        f: impl FnOnce(&ValueBudget<'_>) -> permafrost_sql::Result<T>,
    ) -> rusqlite::Result<T> {
        self.with(f).map_err(raise)
    }
}

/// An error a function raises, with its SQLSTATE: the message SQLite carries is
/// `SQLSTATE <code>: <message>` (read back by `super::error_of`).
#[derive(Debug)]
pub(super) struct PgError(pub &'static str, pub String);

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SQLSTATE {}: {}", self.0, self.1)
    }
}

impl std::error::Error for PgError {}

/// The engine's error as a function's.
pub(super) fn raise(e: SqlError) -> Error {
    Error::UserFunctionError(Box::new(PgError(e.sqlstate(), e.to_string())))
}

/// SQLite's subtype of JSON values (`'J'`): an element with it is an array or object,
/// embedded as it is, as `json_group_array` embeds it.
const JSON_SUBTYPE: u32 = 74;

/// `array_agg(x)`: the JSON array of the values (arrays are JSON here, `super::relations`),
/// as SQLite's `json_group_array` builds it, but built under the query's budget.
pub(super) struct ArrayAgg(pub Arc<QueryBudget>);

impl Aggregate<String, (Option<String>, SubType)> for ArrayAgg {
    fn init(&self, _: &mut Context<'_>) -> rusqlite::Result<String> {
        Ok(String::new())
    }

    fn step(&self, ctx: &mut Context<'_>, acc: &mut String) -> rusqlite::Result<()> {
        let element = match ctx.get_raw(0) {
            ValueRef::Null => "null".to_string(),
            ValueRef::Integer(n) => n.to_string(),
            ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or("null".to_string(), |n| n.to_string()),
            ValueRef::Text(t) if ctx.get_subtype(0) == JSON_SUBTYPE => String::from_utf8_lossy(t).into_owned(),
            ValueRef::Text(t) => serde_json::Value::String(String::from_utf8_lossy(t).into_owned()).to_string(),
            ValueRef::Blob(_) => {
                return Err(raise(SqlError::Unsupported(
                    "array_agg of bytes on the system catalogs".into(),
                )));
            }
        };
        self.0.build(|b| {
            b.append(acc, if acc.is_empty() { "[" } else { "," })?;
            b.append(acc, &element)
        })
    }

    fn finalize(&self, _: &mut Context<'_>, acc: Option<String>) -> rusqlite::Result<(Option<String>, SubType)> {
        Ok(match acc {
            // No rows: an empty array, as `json_group_array` gave and as PostgreSQL's
            // `ARRAY(subquery)` gives (psql's `\du` shows it as `{}`); PostgreSQL's
            // `array_agg` would give NULL.
            None => (Some("[]".to_string()), Some(JSON_SUBTYPE)),
            Some(a) if a.is_empty() => (Some("[]".to_string()), Some(JSON_SUBTYPE)),
            Some(mut a) => {
                self.0.build(|b| b.append(&mut a, "]"))?;
                (Some(a), Some(JSON_SUBTYPE))
            }
        })
    }
}

/// Defines `pf_array_agg` (what `array_agg` is translated to) on `conn`.
pub(super) fn define_array_agg(conn: &Connection, budget: &Arc<QueryBudget>) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8
        | FunctionFlags::SQLITE_DETERMINISTIC
        | FunctionFlags::SQLITE_SUBTYPE
        | FunctionFlags::SQLITE_RESULT_SUBTYPE;
    conn.create_aggregate_function("pf_array_agg", 1, flags, ArrayAgg(budget.clone()))
}
