//! Transactions that need evicted data, and keeping memory within the budget.
//!
//! **Retrieval.** A transaction that reached evicted tuples has been rolled back after its
//! pre-pass (txn.rs). With the abort-restart policy it is *parked*: the partition asks the
//! fetcher for the blocks and goes on with other transactions. Each fetched block arrives
//! as a message; the partition merges it at once (between transactions, a safe point) and
//! restarts every parked transaction whose blocks are all in, before anything can evict
//! them again. With the synchronous policy the partition reads the blocks itself and
//! restarts right away. A transaction restarted more than `max_restarts` times fails with a
//! retryable error (reads that depend on evicted values can need several rounds).
//!
//! **Memory.** After each message the partition measures what its live data occupies
//! (at most every `eviction_check_interval`). Past `eviction_threshold` of its share of
//! `memory_limit` it runs an eviction round; if that cannot bring it under the full share
//! (nothing evictable left, a full disk), it closes the write gate: inserts and updates fail
//! with an error naming the budget until memory is available again. A write the gate
//! refuses waits for room while eviction can make it (pacing.rs).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use permafrost_anticache::{AntiCache, AntiCacheError, Need, Retrieval};
use permafrost_sql::EvictedRefs;
use permafrost_storage::{PartitionStore, StorageError, TableId};

use super::msg::{Invocation, Msg};
use super::parking::Waiter;
use super::state::Partition;
use super::txn::{TxnInfo, dry_run};
use crate::error::Error;

/// Free tuple (or string) memory beyond which a partition compacts its heaps (two huge
/// chunks).
const COMPACT_SLACK: u64 = 4 << 20;

/// The memory a partition's budget counts: its store's live memory, what its anti-cache
/// holds (directory, free-space map, I/O buffers), and its share of what running
/// statements hold (`statements`, the database's, split evenly).
fn memory_used(store: &PartitionStore, ac: Option<&AntiCache>, statements: u64) -> u64 {
    store.memory_usage().live() + ac.map_or(0, |a| a.memory_bytes()) + statements
}

/// Queued replayed calls whose blocks are read along with the one that needs data.
const LOOKAHEAD: usize = 256;

/// Restarts after which a replayed call that still reaches evicted data fails.
const REPLAY_RESTARTS: u32 = 32;

impl Partition {
    /// The transaction of `waiter` reached the evicted tuples `refs` (table, tombstone) of
    /// this partition: get them into memory and run it again.
    pub(crate) fn need_data(&mut self, waiter: Waiter, refs: EvictedRefs) {
        let share = self.shared.memory_share();
        // A read that reaches many evicted tuples, or keeps reaching evicted data (what it
        // brought back was evicted again before it ran), reads them where they lie instead.
        let many = refs.len() > super::txn::MOVE_OVER_EVICTED_TUPLES;
        let waiter = match waiter {
            Waiter::Single(inv) if many || inv.restarts >= super::txn::MOVE_AFTER_RESTARTS => {
                match self.move_to_reader(inv) {
                    None => return,
                    Some(inv) => Waiter::Single(inv),
                }
            }
            w => w,
        };
        let Some(ac) = self.ac.as_mut() else {
            let e = Error::Internal("transaction reached evicted data but the anti-cache is off".into());
            return self.resume(waiter, Some(e));
        };
        let store = self.store.as_deref_mut().expect("store is home between transactions");
        let needs = match ac.resolve(store, refs.iter().map(|r| (r.table, r.tombstone)), share) {
            Ok(n) => n,
            Err(e @ AntiCacheError::TooLarge { .. }) => return self.too_large(waiter, e),
            Err(e) => return self.resume(waiter, Some(e.into())),
        };
        if needs.is_empty() {
            // Everything it wanted was merged meanwhile.
            return self.resume(waiter, None);
        }
        // A replayed call must not fall behind the calls after it: it reads synchronously.
        let replaying = matches!(&waiter, Waiter::Single(inv) if inv.replay.is_some());
        match if replaying {
            Retrieval::Synchronous
        } else {
            ac.config().retrieval
        } {
            Retrieval::Synchronous => {
                let mut needs = needs;
                if replaying {
                    // The replayed calls queued behind this one will want their blocks too:
                    // read them all at once.
                    needs = self.with_lookahead(needs, share);
                }
                let (Some(ac), Some(store)) = (self.ac.as_mut(), self.store.as_deref_mut()) else {
                    return;
                };
                let r = ac.fetch_sync(store, &needs);
                self.resume(waiter, r.err().map(Error::from));
            }
            Retrieval::AbortRestart => {
                let blocks = ac.request(&needs);
                if blocks.is_empty() {
                    return self.resume(waiter, None);
                }
                self.parking.park(waiter, &blocks);
                // A block already staged (freed meanwhile) is handled at once.
                if ac.has_staged() {
                    self.merge_fetched();
                }
            }
        }
    }

    /// The transaction of `waiter` needs more evicted data than may come back into this
    /// partition at once (`e`): a read-only ad hoc statement moves to a forked reader that
    /// reads it from its blocks ([`Partition::move_to_reader`]); anything else, or with
    /// every reader's turn taken, fails with `e` (54000).
    fn too_large(&mut self, waiter: Waiter, e: AntiCacheError) {
        let Waiter::Single(inv) = waiter else {
            return self.resume(waiter, Some(e.into()));
        };
        if let Some(inv) = self.move_to_reader(inv) {
            self.resume(Waiter::Single(inv), Some(e.into()));
        }
    }

    /// Moves the read-only ad hoc statement of `inv`, which reached evicted data, to a
    /// forked reader that reads that data from its blocks where it lies
    /// (crate::forked::move_off_reading) and answers it (on the block I/O thread, it is
    /// queued to run again on the partition's thread, which may move it). `Some(inv)`: it
    /// may not move (not such a statement, a replayed call, every reader's turn taken).
    fn move_to_reader(&mut self, inv: Invocation) -> Option<Invocation> {
        if inv.replay.is_some() || !super::txn::may_move_over_evicted(&inv.proc) {
            return Some(inv);
        }
        if self.on_io_thread {
            // Forks happen on partition threads (forked.rs): it runs again there.
            // (Fails only when shutting down, and the reply goes with the queue.)
            let _ = self.shared.send(self.id, Msg::Batch(vec![inv]));
            return None;
        }
        // Evicted (and compacted) down to the budget first: the rounds before may have
        // brought back more than stays, and every page the partition writes while the
        // reader runs is copied once for it (copy-on-write), so an eviction right after
        // the fork took the reader past what the machine had left.
        self.check_memory(true);
        let info = self.txn_info(None, inv.proc.fixed.as_ref(), Some(&inv.reply));
        let (Some(ac), Some(store)) = (self.ac.as_mut(), self.store.as_deref_mut()) else {
            return Some(inv);
        };
        let views = vec![(self.id, ac.block_view())];
        let moved = crate::forked::move_off_reading(
            &self.shared,
            (&inv.proc, &inv.params),
            &mut [store],
            views,
            &info,
            inv.reply.stop_flag(),
        );
        let Some(r) = moved else {
            return Some(inv);
        };
        self.stats.reads_moved.fetch_add(1, Ordering::Relaxed);
        self.record(&r);
        self.answer(super::msg::Answer::read(&info), inv.reply, r);
        None
    }

    /// `needs` plus what the next replayed calls in the queue need (found by running each
    /// once and rolling it back; a call that would fail or finds other data once the calls
    /// before it ran only costs a useless read).
    fn with_lookahead(&mut self, mut needs: Vec<Need>, share: u64) -> Vec<Need> {
        let (Some(ac), Some(store)) = (self.ac.as_ref(), self.store.as_deref_mut()) else {
            return needs;
        };
        let mut refs = Vec::new();
        let mut evicted = EvictedRefs::new();
        for inv in self.replay_stall.iter().take(LOOKAHEAD) {
            let Some(r) = &inv.replay else { continue };
            let info = TxnInfo {
                total_partitions: self.shared.config.partitions,
                sampled: false,
                now: r.now,
                txn_id: 0,
                seed: r.seed,
                work_mem: crate::partition::txn::work_mem(self.shared.config.memory_limit),
                writes_refused: None,
                defer_scans: false,
                spill: None,
                read_slice: None,
                inline_slice: None,
                block_read: false,
                given: r.draws.clone(),
                session: None,
                zone: r.zone.clone(),
            };
            dry_run(
                &inv.proc,
                &inv.params,
                &mut [&mut *store],
                &mut evicted,
                &info,
                &self.shared.sequences,
            );
            refs.extend(evicted.iter().map(|e| (e.table, e.tombstone)));
        }
        if refs.is_empty() {
            return needs;
        }
        // Within the usual bound on what one fetch brings back (half the memory share).
        if let Ok(more) = ac.resolve(
            store,
            refs.into_iter().chain(needs.iter().map(|n| (n.table, n.tombstone))),
            share,
        ) {
            needs = more;
        }
        needs
    }

    /// Merges every fetched block and restarts the transactions that were waiting for them.
    pub(crate) fn merge_fetched(&mut self) {
        let Some(ac) = self.ac.as_mut() else { return };
        let store = self.store.as_deref_mut().expect("store is home between transactions");
        let t0 = Instant::now();
        let merged = ac.merge_staged(store);
        self.stats
            .merge_nanos
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let mut ready = Vec::new();
        for (block, r) in merged {
            let err = r.err().map(Error::from);
            ready.extend(self.parking.block_done(block, err.as_ref()));
        }
        for (waiter, err) in ready {
            self.resume(waiter, err);
        }
    }

    /// Runs a waiter again now that its data is in memory, or fails it.
    fn resume(&mut self, waiter: Waiter, err: Option<Error>) {
        match waiter {
            Waiter::Mp(ticket) => ticket.part_done(&self.shared, err, &mut self.outbox),
            Waiter::Single(mut inv) => {
                let r = match err {
                    Some(e) => Err(e),
                    None if inv.restarts >= self.shared.config.max_restarts && inv.replay.is_none() => {
                        Err(Error::TooManyRestarts { restarts: inv.restarts })
                    }
                    // A replayed call reads synchronously, so it needs a restart or two; one
                    // that keeps missing its tuples reads blocks that do not hold them.
                    None if inv.restarts >= REPLAY_RESTARTS && inv.replay.is_some() => Err(Error::Recovery(format!(
                        "a replayed transaction still misses evicted tuples after {} reads of their blocks \
                         (the block file does not match the tombstones)",
                        inv.restarts
                    ))),
                    None => {
                        inv.restarts += 1;
                        self.stats.restarts_evicted.fetch_add(1, Ordering::Relaxed);
                        if !self.on_io_thread {
                            return self.run_single(inv);
                        }
                        // On the block I/O thread: a short call runs here, for at most a
                        // slice; anything else (or a short call past its slice, or one
                        // held for room) goes to the partition's queue.
                        let back = if inv.proc.short {
                            self.run_one(inv, Some(super::cell::INLINE_SLICE))
                        } else {
                            Some(inv)
                        };
                        if let Some(inv) = back {
                            // Fails only when shutting down, and the reply goes with the queue.
                            let _ = self.shared.send(self.id, Msg::Batch(vec![inv]));
                        }
                        return;
                    }
                };
                self.record(&r);
                self.outbox.send(inv.reply, r);
            }
        }
    }

    /// This partition's share of the memory running statements hold.
    fn statements_share(&self) -> u64 {
        (self.shared.statement_pool.used() / self.shared.config.partitions.max(1) as usize) as u64
    }

    /// Whether the write gate is closed and the partition uses less memory than when it
    /// closed.
    pub(crate) fn memory_freed_since_gate_closed(&self) -> bool {
        let Some(store) = self.store.as_deref() else {
            return false;
        };
        match store.write_gate() {
            Some(StorageError::MemoryLimit { used, .. }) => {
                memory_used(store, self.ac.as_ref(), self.statements_share()) < *used
            }
            _ => false,
        }
    }

    /// Measures memory; evicts past the threshold; opens or closes the write gate.
    pub(crate) fn check_memory(&mut self, force: bool) {
        let interval = self
            .shared
            .config
            .anticache
            .as_ref()
            .map(|c| c.eviction_check_interval)
            .unwrap_or_default();
        // As of the current message or call (`tick`); a clock that went back checks.
        let since = self.wall - self.last_check;
        if !force && (0..interval.as_micros() as i64).contains(&since) {
            return;
        }
        self.last_check = self.wall;
        let share = self.shared.memory_share();
        let now = self.wall;
        let statements = self.statements_share();
        let Some(store) = self.store.as_deref_mut() else { return };
        let mut used = memory_used(store, self.ac.as_ref(), statements);
        let mut failure = None;
        if let Some(ac) = self.ac.as_mut() {
            let t0 = Instant::now();
            match ac.maybe_evict(store, used, share, now) {
                Ok(Some(_)) => {
                    used = memory_used(store, Some(ac), statements);
                    self.stats
                        .evict_nanos
                        .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                }
                Ok(None) => {}
                Err(e) => failure = Some(e.to_string()),
            }
            if let Some(e) = ac.write_error() {
                failure = Some(e.to_string());
            }
        }
        // Eviction frees slots, not chunks: give whole chunks back once enough are empty,
        // so that resident memory follows the live data.
        let mem = store.memory_usage();
        // Compaction runs again only once the slack has grown past what the last one left
        // (each table's last chunk stays, part empty): from a floor of zero it ran at every
        // check, scanning every heap for nothing (TPC-C at 2x memory: 43 s of 50 in 25 s).
        let string_slack = mem.string_bytes.saturating_sub(mem.string_used_bytes);
        let tuple_slack = mem.tuple_bytes.saturating_sub(mem.tuple_used_bytes);
        // Free slots taken again lower the floors.
        self.string_slack = self.string_slack.min(string_slack);
        self.tuple_slack = self.tuple_slack.min(tuple_slack);
        if tuple_slack > self.tuple_slack + COMPACT_SLACK || string_slack > self.string_slack + COMPACT_SLACK {
            let t0 = Instant::now();
            store.compact();
            let after = store.memory_usage();
            self.string_slack = after.string_bytes.saturating_sub(after.string_used_bytes);
            self.tuple_slack = after.tuple_bytes.saturating_sub(after.tuple_used_bytes);
            self.stats
                .compact_nanos
                .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        if used > share
            && let Some(ac) = self.ac.as_mut()
        {
            // Idle block buffers are kept for the next rounds' I/O, not at the budget's
            // expense.
            used = used.saturating_sub(ac.release_idle_buffers());
        }
        self.shared
            .statement_pool
            .set_data(self.id as usize, used.saturating_sub(statements) as usize);
        let gate = (used > share).then(|| StorageError::MemoryLimit {
            what: match &failure {
                Some(f) => format!("a write at partition {} (eviction failed: {f})", self.id),
                None => format!("a write at partition {}", self.id),
            },
            needed: used.saturating_sub(share),
            used,
            limit: share,
        });
        let closed = gate.is_some();
        store.set_write_gate(gate);
        // Closed only for what running statements hold (a COPY's rows being read), it opens
        // when they give it back: writes wait for that as they wait for eviction (the COPY's
        // own insert among them, should it meet the gate before this partition has counted
        // again: a coordinator may hold this store before it has).
        let can_free = closed && (self.eviction_can_free() || used.saturating_sub(statements) <= share);
        self.shared.gates.set(self.id, closed, can_free);
    }

    /// Frees the blocks of tables a schema change dropped.
    pub(crate) fn after_schema_change(&mut self) {
        let catalog = self.shared.schema.load().catalog.clone();
        if Arc::ptr_eq(&catalog, &self.last_catalog) {
            return;
        }
        self.last_catalog = catalog;
        let (Some(ac), Some(store)) = (self.ac.as_mut(), self.store.as_deref()) else {
            return;
        };
        let tables: Vec<TableId> = store
            .tables()
            .filter(|t| t.evicted_tuples() > 0)
            .map(|t| t.schema().id)
            .collect();
        ac.drop_missing_tables(&tables);
    }
}
