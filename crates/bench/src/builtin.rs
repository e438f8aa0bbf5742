//! The benchmarks' stored procedures that `permafrost serve` has built in
//! (`permafrost_executor::Library`): a client makes them callable with `CREATE PROCEDURE
//! ... LANGUAGE internal AS 'name'`. TPC-C's five (`crate::tpcc::procs`).

use permafrost_executor::Library;

use crate::tpcc::procs;

/// Every built-in procedure.
pub fn library() -> Library {
    Library::new(procs::library())
}
