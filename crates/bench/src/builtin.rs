//! The benchmarks' stored procedures that `permafrost serve` has built in
//! (`permafrost_executor::Library`): a client makes them callable with `CREATE PROCEDURE
//! ... LANGUAGE internal AS 'name'`. TPC-C's five (`crate::tpcc::procs`), Voter's Vote (`crate::voter::procs`) and TATP's seven
//! (`crate::tatp::procs`).

use permafrost_executor::Library;

use crate::{tatp, tpcc, voter};

/// Every built-in procedure.
pub fn library() -> Library {
    let mut procedures = tpcc::procs::library();
    procedures.push(voter::procs::vote());
    procedures.extend(tatp::procs::library());
    Library::new(procedures)
}
