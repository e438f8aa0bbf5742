//! Evicted tuples read where they lie instead of brought back ([`EvictedRows`]).

use std::rc::Rc;

use permafrost_storage::Table;
use permafrost_types::Value;

use crate::error::Result;

/// Reads an evicted tuple's values from its block, for a statement that reads evicted data
/// where it lies instead of bringing it back (in a forked reader's image: the executor's
/// forked.rs and block_rows.rs). Given to the walks through [`super::Env::evicted_rows`].
pub trait EvictedRows {
    /// The values of the evicted tuple `tombstone` of `table` at partition `partition`.
    fn row(&self, partition: u32, table: &Table, tombstone: u32) -> Result<Rc<[Value]>>;
}
