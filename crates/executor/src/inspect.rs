//! Looking into a running database and steering its memory from outside the partitions:
//! the memory statements may hold and their pool, asking the partitions to check the
//! budget, running a closure at a partition, the memory accounted, eviction on demand and
//! the counters.

use std::sync::Arc;

use permafrost_storage::{MemoryUsage, PartitionStore};

use crate::counters::DatabaseStats;
use crate::database::Database;
use crate::error::{Error, Result};
use crate::partition::msg::Msg;

impl Database {
    /// The memory one statement may hold for its result and intermediate rows (a quarter
    /// of `memory_limit`, at least 16 MiB); what a COPY may buffer before it is applied.
    pub fn statement_memory(&self) -> usize {
        crate::partition::txn::work_mem(self.shared().config.memory_limit)
    }

    /// The memory running statements hold together ([`permafrost_sql::workmem`]): what a
    /// COPY buffers draws from it too.
    pub fn statement_pool(&self) -> &Arc<permafrost_sql::workmem::MemoryPool> {
        &self.shared().statement_pool
    }

    /// Has every partition check the memory budget now, counting the statement pool as it
    /// is: to be called when memory held off the partitions changed by much (a COPY's
    /// rows taken from the pool as they arrive, and given back before they are inserted),
    /// so that eviction makes room for them ahead and a write gate closed for them opens
    /// again before the next write meets it.
    pub fn check_memory(&self) {
        for p in 0..self.partitions() {
            let _ = self.shared().send(p, crate::partition::msg::Msg::CheckMemory);
        }
    }

    /// Long statements running now moved off their partitions, in forked images
    /// (forked.rs): each is counted until its process has been reaped.
    pub fn moved_running(&self) -> usize {
        self.shared().moved_running.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Runs `f` on partition `p`'s store between transactions and returns its result
    /// (statistics, consistency checks, tests).
    pub fn with_partition<R: Send + 'static>(
        &self,
        p: u32,
        f: impl FnOnce(&mut PartitionStore) -> R + Send + 'static,
    ) -> Result<R> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let sender = self
            .shared()
            .senders
            .get(p as usize)
            .ok_or_else(|| Error::Internal(format!("no partition {p}")))?;
        sender
            .send(Msg::Inspect(Box::new(move |s| {
                let _ = tx.send(f(s));
            })))
            .map_err(|_| Error::Shutdown)?;
        rx.recv().map_err(|_| Error::Shutdown)
    }

    /// Memory accounted at every partition, measured now.
    pub fn memory_usage(&self) -> Result<MemoryUsage> {
        let mut total = MemoryUsage::default();
        for p in 0..self.partitions() {
            total += self.with_partition(p, |s| s.memory_usage())?;
        }
        Ok(total)
    }

    /// Runs an eviction round of about `bytes` at every partition now, whatever the memory
    /// use; returns the number of tuples evicted. Fails if the anti-cache is off.
    pub fn evict_now(&self, bytes: u64) -> Result<u64> {
        let mut total = 0;
        for s in &self.shared().senders {
            let (tx, rx) = crossbeam_channel::bounded(1);
            s.send(Msg::Evict(bytes, tx)).map_err(|_| Error::Shutdown)?;
            total += rx.recv().map_err(|_| Error::Shutdown)??;
        }
        Ok(total)
    }

    /// Like [`Database::stats`], but asks every partition to publish first, so the figures
    /// include everything done before the call.
    pub fn stats_now(&self) -> Result<DatabaseStats> {
        for s in &self.shared().senders {
            let (tx, rx) = crossbeam_channel::bounded(1);
            s.send(Msg::Publish(tx)).map_err(|_| Error::Shutdown)?;
            rx.recv().map_err(|_| Error::Shutdown)?;
        }
        Ok(self.stats())
    }

    /// Counters summed over partitions (published after each pass over a partition's queue).
    pub fn stats(&self) -> DatabaseStats {
        let mut d = DatabaseStats::default();
        for s in &self.shared().stats {
            d.add(s);
        }
        d
    }
}
