//! Permafrost SQL: the OLTP subset of SQL, planned once and executed many times.
//!
//! ```text
//! text --parse--> sqlparser AST --bind/plan--> Prepared { Plan } --execute(Env, params)--> Rows
//! ```
//!
//! Stored procedures prepare their statements when they are registered and execute them
//! with parameters inside transactions; DDL goes through [`ddl::plan_ddl`] and produces
//! [`catalog::DdlChange`]s for every partition to apply.
//!
//! Supported: SELECT with inner joins, WHERE, GROUP BY, HAVING, aggregates (COUNT, SUM,
//! MIN, MAX, AVG, with DISTINCT), ORDER BY, LIMIT/OFFSET, DISTINCT; INSERT (VALUES or
//! SELECT), UPDATE and DELETE, all with RETURNING; parameters as `$n` or `?`.

pub mod alter_column;
pub mod array;
pub mod bind;
mod caps;
pub mod catalog;
pub mod check;
mod comment;
pub mod ddl;
pub mod ddl_text;
pub mod enum_ddl;
pub mod error;
pub mod exec;
mod explain;
pub mod expr;
pub mod foreign;
pub mod fuzzing;
pub mod limits;
pub mod long_insert;
pub mod parse;
mod placement;
pub mod plan;
mod prepared;
pub mod privileges;
pub mod rows;
pub mod scan;
mod schema_ddl;
pub mod script;
pub mod search_path;
pub mod sequence;
mod sequence_alter;
mod sequence_ddl;
pub mod shape;
mod storage_options;
pub mod temp;
pub mod value_budget;
pub mod workmem;

pub use catalog::{Catalog, DdlChange};
pub use error::{Result, SqlError};
pub use exec::{Deferred, DeferredPart, Env, EvictedRef, EvictedRefs, PartialSelect};
pub use expr::splitmix64;
pub use long_insert::prepare;
pub use permafrost_storage::namespace;
pub use prepared::blocks::{LockTarget, Reach, needed_before};
pub use prepared::{BULK_MARK, Prepared, ReadRange, Route, StatementKind, prepare_statement};
pub use rows::{ColumnInfo, Digest, MoreRows, RowRef, Rows, decode_row, encode_row};
