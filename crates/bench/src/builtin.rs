//! The benchmarks' stored procedures that `permafrost serve` has built in
//! (`permafrost_executor::Library`): a client makes them callable with `CREATE PROCEDURE
//! ... LANGUAGE internal AS 'name'`. TPC-C's five (`crate::tpcc::procs`) and Voter's Vote (`crate::voter::procs`).

use permafrost_executor::Library;

use crate::{tpcc, voter};

/// Every built-in procedure.
pub fn library() -> Library {
    let mut procedures = tpcc::procs::library();
    procedures.push(voter::procs::vote());
    Library::new(procedures)
}
