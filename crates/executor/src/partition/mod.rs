//! The partition executor: one thread owns one partition's storage and runs its
//! transactions one at a time, to completion, without locks or latches (one thread at a
//! time owns a partition's data; Harizopoulos et al. 2008 on why).
//!
//! The executor is a state machine driven by [`Msg`]s from its queue:
//!
//! * `Batch`: single-partition calls, run in arrival order;
//! * `Mp`: this partition's turn in a multi-partition transaction (mp.rs);
//! * `Fetched`: an evicted block the fetcher read; merged at once, and the transactions
//!   waiting for it restarted (retrieval.rs);
//! * `MpFetch`: evicted tuples of this partition a multi-partition transaction needs;
//! * `Inspect`: read or change the store between transactions (statistics, tests);
//! * `Observe`: read the store and the anti-cache between transactions (per-table figures);
//! * `ScanRead`, `ScansEnded`: blocks read for a scan that does not merge them
//!   (`crate::scan`);
//! * `Shutdown`.
//!
//! After each message the executor checks its memory (evicting when over the threshold);
//! after each pass over the queue it hands the gathered completions to their sessions and
//! publishes its counters.
//!
//! The folder: this file is the loop, the commit gate and the durable waits; msg.rs the
//! messages; txn.rs one transaction (run, commit or roll back, the pre-pass); retrieval.rs
//! evicted data (parking, fetch and merge, restarts) and the memory checks; mp.rs the
//! multi-partition coordinator and participants; fence.rs how an idle participant takes
//! part without its thread; gates.rs and pacing.rs writes paced to eviction; cell.rs the
//! ownership token; router.rs which partitions a call
//! or a statement runs at and how it is queued.

pub(crate) mod cell;
pub(crate) mod fence;
pub(crate) mod gates;
mod mp;
pub(crate) mod msg;
pub(crate) mod pacing;
mod parking;
pub(crate) mod repartition;
mod retrieval;
pub(crate) mod router;
pub(crate) mod run;
pub(crate) mod state;
pub(crate) mod txn;

pub(crate) use mp::{DdlReads, apply_ddl};
