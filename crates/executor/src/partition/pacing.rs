//! Pacing writes to eviction: a write the memory budget refuses waits for room instead of
//! failing, as long as eviction can make that room.
//!
//! A partition closes its *write gate* when what it holds passes its share of
//! `memory_limit` (retrieval.rs, `check_memory`): inserts and updates then fail with the
//! budget's error (53200). Past the eviction threshold the partition evicts, but eviction
//! is not instant: its blocks are written asynchronously, and their buffers count in the
//! budget until the writes are done. A client that writes faster than the disk takes the
//! blocks (a COPY of many batches) would meet the closed gate now and then and be refused
//! for room that eviction was about to free — a second later the same batch goes through.
//!
//! So a write refused by the gate is held instead of answered (*paced*), when eviction can
//! free memory at every partition whose gate is closed (the anti-cache is on, has not failed,
//! and has evictable tuples in memory or blocks being written: `Gates`, gates.rs), or the gate is
//! closed only for what running statements hold (a COPY's rows as they arrive), which they
//! give back when they end. A paced
//! single-partition call waits at its partition and runs again once the gate opens; a paced
//! multi-partition transaction is submitted again after [`RETRY_STEP`]. Nothing of a
//! refused write took effect (the gate refuses at its first insert or update, and the
//! transaction is rolled back), so running it again is the same as running it later.
//!
//! The wait is bounded: once a gate has stayed closed for `memory_wait_timeout`
//! ([`crate::Config::memory_wait`]) the writes it refuses fail with 53200, as they do at
//! once when eviction can free nothing (every table in memory is non-evictable, or the
//! disk failed). Counters: `write_waits` (each time a write was held) and
//! `write_wait_nanos` (how long writes were held, in all).
//!
//! Schema changes take memory too (each table's structures at every partition, its catalog
//! entry: `permafrost_storage::MemoryUsage::schema_bytes`). One that adds a table, an index
//! or a key is refused with the budget's error when a gate among its partitions is closed
//! and eviction cannot open it ([`Shared::refuse_schema_growth`]); while eviction can, it
//! goes ahead (it is small, and eviction makes its room after it).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use permafrost_sql::SqlError;
use permafrost_storage::{PartitionStore, StorageError};

use super::msg::{Invocation, MpRetry, MpWork};
use super::state::Partition;
use crate::error::Error;
use crate::shared::Shared;

/// How long a paced write waits, at least, before it runs again (a partition's memory check
/// runs at most every `eviction_check_interval`, 1 ms by default).
pub(crate) const RETRY_STEP: Duration = Duration::from_millis(1);

/// Whether `e` is the write gate's refusal (the only source of
/// [`StorageError::MemoryLimit`]).
fn is_gate_refusal(e: &Error) -> bool {
    matches!(e, Error::Sql(SqlError::Storage(StorageError::MemoryLimit { .. })))
}

impl Shared {
    /// The budget's error for a schema change at `parts` that would take memory the budget
    /// has not got (see `Gates::refuse_growth`, gates.rs): the closed gate's error, from `stores`.
    pub(crate) fn refuse_schema_growth(&self, parts: &[u32], stores: &[&mut PartitionStore]) -> Option<Error> {
        if !self.gates.refuse_growth(parts, self.config.memory_wait) {
            return None;
        }
        stores.iter().find_map(|s| match s.write_gate() {
            Some(StorageError::MemoryLimit {
                needed, used, limit, ..
            }) => Some(Error::from(StorageError::MemoryLimit {
                what: "a schema change (a new table or index)".into(),
                needed: *needed,
                used: *used,
                limit: *limit,
            })),
            _ => None,
        })
    }

    /// Whether a write at `parts` that failed with `e` should wait for eviction and run
    /// again rather than fail.
    pub(crate) fn pace(&self, e: &Error, parts: &[u32]) -> bool {
        !self.config.memory_wait.is_zero()
            && self.config.anticache.is_some()
            && is_gate_refusal(e)
            && self.gates.may_wait(parts, self.config.memory_wait)
    }
}

impl Partition {
    /// Whether eviction can free memory here now: see the module documentation.
    pub(crate) fn eviction_can_free(&self) -> bool {
        let (Some(ac), Some(store)) = (self.ac.as_ref(), self.store.as_deref()) else {
            return false;
        };
        ac.write_error().is_none()
            && (ac.pending_write_bytes() > 0 || store.tables().any(|t| t.schema().evictable && t.live_tuples() > 0))
    }

    /// Holds a single-partition call the budget refused.
    pub(crate) fn pace_call(&mut self, inv: Invocation) {
        self.stats.write_waits.fetch_add(1, Ordering::Relaxed);
        self.paced.calls.push_back((Instant::now(), inv));
    }

    /// Holds a multi-partition transaction the budget refused, to be submitted again.
    pub(super) fn pace_mp(&mut self, retry: MpRetry) {
        self.stats.write_waits.fetch_add(1, Ordering::Relaxed);
        self.paced.mp.push((Instant::now(), retry));
        // Coordinated on a caller's thread, the partition's own thread must learn that it
        // holds a write: an empty batch wakes it, and it then retries on its timer.
        let _ = self.shared.send(self.id, super::msg::Msg::Batch(Vec::new()));
    }

    /// Whether writes are held here (the partition's loop then wakes every [`RETRY_STEP`]).
    pub(crate) fn has_paced(&self) -> bool {
        !self.paced.is_empty()
    }

    /// Runs again the held calls once the gate is open (or once they may wait no longer:
    /// they then fail with the budget's error), and submits again the held
    /// multi-partition transactions that waited [`RETRY_STEP`].
    pub(crate) fn retry_paced(&mut self) {
        if self.paced.is_empty() {
            return;
        }
        let gate_open = self.store.as_deref().is_some_and(|s| s.write_gate().is_none());
        if !self.paced.calls.is_empty() {
            // Past waiting, they run once more and fail with the budget's error.
            let give_up = !gate_open && !self.shared.gates.may_wait(&[self.id], self.shared.config.memory_wait);
            if gate_open || give_up {
                let calls = std::mem::take(&mut self.paced.calls);
                for (held, inv) in calls {
                    self.stats
                        .write_wait_nanos
                        .fetch_add(held.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    // Held again if the gate closes before it (its place kept: behind the
                    // calls held before it).
                    self.run_single(inv);
                }
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.paced.mp)
            .into_iter()
            .partition(|(held, _)| held.elapsed() >= RETRY_STEP);
        self.paced.mp = later;
        for (held, r) in due {
            self.stats
                .write_wait_nanos
                .fetch_add(held.elapsed().as_nanos() as u64, Ordering::Relaxed);
            let work = MpWork::Call {
                proc: r.proc,
                params: r.params,
                restarts: r.restarts,
                replay: r.replay,
            };
            if let Err(e) = self.shared.submit_mp(work, r.parts, r.reply) {
                self.record(&Err(e));
            }
        }
    }
}
