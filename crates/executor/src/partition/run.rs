//! The partition's loop: it drains its queue, runs each message, and after each pass
//! appends its commits to the command log, answers what became durable and publishes its
//! counters; the commit gate and the durable waits are here too.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::Receiver;
use permafrost_anticache::AntiCache;
use permafrost_sql::workmem::{MemoryPool, Reservation};
use permafrost_sql::{Rows, SqlError};
use permafrost_storage::index::KeyEncoder;
use permafrost_storage::{EvictedEntries, PartitionStore, TableSchema};

use super::cell::PartitionCell;
use super::fence::QueueState;
use super::msg::{Answer, Invocation, LogWhat, Msg};
use super::parking::Waiter;
use super::state::Partition;
use super::txn::{Attempt, Outcome, TxnInfo, run_txn};
use crate::error::{Error, Result};
use crate::procedure::{Procedure, Replayed};
use crate::reply::Reply;
use crate::shared::Shared;

/// Within a pass over its queue, a partition looks for log records that became durable
/// every this many messages ([`Partition::release_if_durable`]).
const DURABLE_POLL: usize = 16;

/// A pass appends its log chunk early, in the middle of the pass, once a message brings it
/// to this many records: the writer writes and syncs them while the pass goes on, so the
/// answers of a long pass do not all wait for its end and then for one more group commit
/// (measured in sync mode: the machine idled 5% of the time waiting on that, and not
/// with early appends). Small enough that a partition's callers do not move in lockstep:
/// with 128 callers each waiting for its answer, a threshold of 128 made every pass one
/// chunk, and the partition ran dry while that chunk was synced and its callers answered
/// (embedded TPC-C, the Looking Glass mix, 128 callers per partition: 32 records and a
/// poll every 16 messages ran 16–44 % faster than 128 and 64 in three interleaved rounds, and
/// 16 and 8 gained less).
const EARLY_APPEND: u64 = 32;

/// The partition thread's loop: for each pass over its queue it takes the partition's
/// token (cell.rs), waiting for a caller running a short call inline to finish. Returns when
/// told to shut down, and then drops the partition.
pub(crate) fn run(cell: Arc<PartitionCell>, rx: Receiver<Msg>, shared: Arc<Shared>, id: u32) {
    let queue = &shared.queues[id as usize];
    // Replayed calls held back (recovery), or writes held for room (pacing.rs): retried
    // now and then, messages or not.
    let mut stalled = false;
    // A message a pass stopped at because a fence went up (fence.rs).
    let mut next = None;
    loop {
        let msg = match next.take() {
            Some(m) => m,
            None if !stalled => match rx.recv() {
                Ok(m) => m,
                Err(_) => break,
            },
            None => match rx.recv_timeout(std::time::Duration::from_millis(1)) {
                Ok(m) => m,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    queue.wait();
                    let Some(mut p) = cell.lock() else { break };
                    p.tick();
                    p.check_memory(true);
                    p.retry_stalled();
                    p.retry_paced();
                    p.flush_log();
                    p.outbox.flush();
                    stalled = !p.replay_stall.is_empty() || p.has_paced();
                    continue;
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            },
        };
        // A multi-partition transaction this partition takes part in without its thread
        // goes first: the message waits, without the token (fence.rs).
        queue.wait();
        let Some(mut p) = cell.lock() else { break };
        let (go_on, stopped_at) = p.pass(msg, &rx, queue);
        next = stopped_at;
        if p.has_paced() {
            p.retry_paced();
            p.end_pass(false);
        }
        stalled = !p.replay_stall.is_empty() || p.has_paced();
        if !go_on {
            break;
        }
    }
    if let Some(mut p) = cell.lock() {
        p.flush_log();
        p.outbox.flush();
    }
    drop(cell.take());
}

impl Partition {
    /// One pass: `first`, then what else is queued (up to 1,024 messages, to batch
    /// completions), then the end of the pass. False once told to shut down; the message
    /// it stopped at when a fence went up (fence.rs), not handled yet.
    fn pass(&mut self, first: Msg, rx: &Receiver<Msg>, queue: &QueueState) -> (bool, Option<Msg>) {
        if !self.handle_counted(first, queue) {
            return (false, None);
        }
        let mut go_on = true;
        let mut stopped_at = None;
        for i in 0..1024 {
            match rx.try_recv() {
                Ok(m) if queue.fenced() => {
                    stopped_at = Some(m);
                    break;
                }
                Ok(m) => {
                    if !self.handle_counted(m, queue) {
                        go_on = false;
                        break;
                    }
                }
                Err(_) => break,
            }
            if self.log_chunk.len() >= EARLY_APPEND {
                self.flush_log();
            }
            if i % DURABLE_POLL == DURABLE_POLL - 1 && self.release_if_durable() {
                self.outbox.flush();
            }
        }
        self.end_pass(false);
        (go_on, stopped_at)
    }

    /// Handles a message from the queue, counting it as handled if it carries a caller's
    /// order (fence.rs).
    fn handle_counted(&mut self, msg: Msg, queue: &QueueState) -> bool {
        let counted = msg.counts();
        let go_on = self.handle(msg);
        if counted {
            queue.handled();
        }
        go_on
    }

    /// Runs a call on its caller's thread (cell.rs), as one pass: it answers through its
    /// reply (at once, or in sync mode from the log writer once durable). A call that is
    /// not short runs for at most `INLINE_SLICE`: past it (or when its read leaves evicted
    /// tuples for later) it is rolled back and given back, to be queued.
    // (The call given back, to be queued instead, is moved once: its size does not matter.)
    #[allow(clippy::result_large_err)]
    pub(crate) fn run_inline(&mut self, inv: Invocation) -> Result<(), Invocation> {
        self.tick();
        let slice = (!inv.proc.short).then_some(super::cell::INLINE_SLICE);
        // (No replayed calls are held back here: the caller does not run inline then.)
        let back = self.run_one(inv, slice);
        // The memory check, as after a message: without it, writes run on callers' threads
        // (single-row INSERTs from one connection) filled memory past the budget unchecked
        // until a message reached the partition's thread.
        self.after_message();
        self.end_pass(false);
        match back {
            None => {
                self.stats.inline_calls.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Some(inv) => Err(inv),
        }
    }

    /// Handles a block read's completion on the block I/O thread (cell.rs,
    /// `PartitionCell::try_handle`), as one pass: the calls it restarts run there only if
    /// short (retrieval.rs).
    pub(crate) fn handle_on_io_thread(&mut self, msg: Msg) {
        self.on_io_thread = true;
        self.handle(msg);
        self.on_io_thread = false;
        self.after_message();
        self.end_pass(false);
    }

    /// The end of a pass over the queue: the pass's commits go to the log, the answers
    /// that may leave are sent, and the counters are published (at most every millisecond
    /// unless `force`).
    pub(crate) fn end_pass(&mut self, force: bool) {
        self.flush_log();
        self.release_if_durable();
        self.outbox.flush();
        self.publish(force);
    }

    /// Handles one message; `false` when it was the last (shutdown).
    pub(crate) fn handle(&mut self, msg: Msg) -> bool {
        self.tick();
        match msg {
            Msg::Batch(invs) => {
                for inv in invs {
                    if inv.replay.is_some() {
                        // Queued first, so that a call needing evicted data sees the calls
                        // behind it (their blocks are read along with its own).
                        self.replay_stall.push_back(inv);
                    } else {
                        self.run_single(inv);
                    }
                }
                self.retry_stalled();
            }
            Msg::Mp(t) => {
                if t.parts.first() == Some(&self.id) {
                    self.coordinate(&t);
                } else {
                    self.participate(&t);
                }
            }
            Msg::Fetched { block, result } => {
                let c = if self.on_io_thread {
                    &self.stats.fetched_on_io_thread
                } else {
                    &self.stats.fetched_on_partition_thread
                };
                c.fetch_add(1, Ordering::Relaxed);
                if let Some(ac) = self.ac.as_mut() {
                    ac.on_fetched(block, result);
                }
                self.merge_fetched();
            }
            Msg::Written { blocks, result } => {
                if let (Some(ac), Some(store)) = (self.ac.as_mut(), self.store.as_deref_mut()) {
                    // A failed write put the tuples back in memory; the memory check that
                    // follows closes the write gate if that leaves the partition over budget.
                    let _ = ac.on_written(store, &blocks, result);
                }
            }
            Msg::MpFetch { refs, ticket } => self.need_data(Waiter::Mp(ticket), refs),
            Msg::Inspect(f) => {
                if let Some(s) = self.store.as_deref_mut() {
                    f(s);
                }
            }
            Msg::EvictedKeys(schema, reply) => {
                let r = match (self.ac.as_mut(), self.store.as_deref()) {
                    (Some(ac), Some(store)) => evicted_entries(ac, store, &schema, &self.shared.statement_pool),
                    _ => Ok(None),
                };
                let _ = reply.send(r);
            }
            Msg::EvictedTuples(schema, reply) => {
                let r = match (self.ac.as_mut(), self.store.as_deref()) {
                    (Some(ac), Some(store)) => super::repartition::evicted_moving(
                        ac,
                        store,
                        self.id,
                        &schema,
                        self.shared.config.partitions,
                        &self.shared.statement_pool,
                    ),
                    _ => Ok(None),
                };
                let _ = reply.send(r);
            }
            Msg::Observe(f) => {
                if let Some(s) = self.store.as_deref() {
                    f(s, self.ac.as_ref());
                }
            }
            Msg::Evict(bytes, ack) => {
                let r = match (self.ac.as_mut(), self.store.as_deref_mut()) {
                    (Some(ac), Some(store)) => ac.evict(store, bytes, self.wall).map(|s| s.tuples).map_err(Error::from),
                    _ => Err(Error::Internal("the anti-cache is off".into())),
                };
                let _ = ack.send(r);
            }
            Msg::Publish(ack) => {
                self.publish(true);
                let _ = ack.send(());
            }
            Msg::Durable => self.release_durable(),
            Msg::Restore(f, ack) => {
                let r = match self.store.as_deref_mut() {
                    Some(s) => {
                        let r = f(s, self.ac.as_mut());
                        // Rows loaded so were not stamped as changed: reads from before
                        // count as changed.
                        s.forget_writes();
                        r
                    }
                    None => Err(Error::Internal("store away during a restore".into())),
                };
                let _ = ack.send(r);
            }
            Msg::SnapshotDone { epoch, base } => {
                if let Some(ac) = self.ac.as_mut() {
                    ac.snapshot_completed(epoch, base);
                }
            }
            Msg::ScanRead { blocks, done } => match self.ac.as_mut() {
                Some(ac) => ac.read_for_scan(&blocks, done),
                None => {
                    for b in blocks {
                        done(b, Err(std::io::Error::other("the anti-cache is off")));
                    }
                }
            },
            Msg::ScansEnded => {
                if let Some(ac) = self.ac.as_mut() {
                    ac.scans_ended();
                }
            }
            Msg::CheckMemory => self.check_memory(true),
            Msg::Shutdown => return false,
        }
        self.after_message();
        true
    }

    /// After each message (and each transaction run on a caller's thread), the memory
    /// check: eviction when over budget, the write gate.
    pub(crate) fn after_message(&mut self) {
        if self.store.is_some() {
            // A closed write gate is measured again at once when the message freed memory
            // (a delete), so that a write right after it is not refused for room that is
            // there already.
            let freed = self.memory_freed_since_gate_closed();
            self.check_memory(freed);
        }
    }

    pub(crate) fn publish(&mut self, force: bool) {
        if force || self.last_publish.elapsed().as_micros() >= 1000 {
            if let Some(s) = &self.store {
                let ac_bytes = self.ac.as_ref().map_or(0, |a| a.memory_bytes());
                let dir_bytes = self.ac.as_ref().map_or(0, |a| a.directory_bytes());
                self.stats.set_memory(&s.memory_usage(), ac_bytes, dir_bytes);
                let evicted: usize = s.tables().map(|t| t.evicted_tuples()).sum();
                self.stats.evicted_now.store(evicted as u64, Ordering::Relaxed);
                let (unchanged, changed) = s.unchanged_checks();
                self.stats.commit_reads_unchanged.store(unchanged, Ordering::Relaxed);
                self.stats.commit_reads_changed.store(changed, Ordering::Relaxed);
                let (placed, refused) = s.places();
                self.stats.commits_placed_earlier.store(placed, Ordering::Relaxed);
                self.stats.commits_refused_earlier.store(refused, Ordering::Relaxed);
            }
            if let Some(ac) = &self.ac {
                self.stats.set_anticache(&ac.stats());
            }
            self.stats.parked.store(self.parking.len() as u64, Ordering::Relaxed);
            self.last_publish = Instant::now();
        }
    }

    /// Reads the wall clock; done once per message rather than per transaction.
    pub(crate) fn tick(&mut self) {
        self.wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
    }

    /// A timestamp for the next transaction: wall-clock microseconds (as of the current
    /// message), strictly increasing at this partition.
    fn clock(&mut self) -> i64 {
        self.last_now = self.wall.max(self.last_now + 1);
        self.last_now
    }

    fn next_txn_id(&mut self) -> u64 {
        self.txn_seq += 1;
        (self.txn_seq << 10) | self.id as u64
    }

    /// Whether the next transaction updates the access trackers (xorshift64*).
    fn sample(&mut self) -> bool {
        if self.sample_threshold == 0 {
            return false;
        }
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) <= self.sample_threshold
    }

    /// Timestamp, id, random seed and sampling decision for the next transaction (a
    /// replayed one gets back the timestamp and seed it first ran with, and so does a
    /// procedure whose are `fixed`: a statement moved off its partitions, forked.rs).
    pub(crate) fn txn_info(
        &mut self,
        replay: Option<&Replayed>,
        fixed: Option<&Replayed>,
        reply: Option<&Reply>,
    ) -> TxnInfo {
        let txn_id = self.next_txn_id();
        let given = replay.map(|r| r.draws.clone()).unwrap_or_default();
        let (now, seed) = match replay.or(fixed) {
            Some(r) => (r.now, r.seed),
            None => (self.clock(), txn_id),
        };
        TxnInfo {
            total_partitions: self.shared.config.partitions,
            now,
            txn_id,
            seed,
            sampled: self.sample(),
            work_mem: reply
                .and_then(Reply::work_mem)
                .unwrap_or_else(|| crate::partition::txn::work_mem(self.shared.config.memory_limit)),
            writes_refused: match (&self.shared.log, replay) {
                (Some(log), None) => log.failure().map(crate::partition::txn::writes_refused),
                _ => None,
            },
            defer_scans: self.ac.is_some() && replay.is_none() && reply.is_some_and(Reply::takes_rest),
            spill: if replay.is_none() && reply.is_some_and(Reply::takes_rest) {
                self.spill_dir.clone()
            } else {
                None
            },
            read_slice: self
                .shared
                .config
                .read_slice
                .filter(|_| replay.is_none() && reply.is_some_and(Reply::takes_rest)),
            inline_slice: None,
            block_read: reply.is_some_and(Reply::is_in_block),
            given,
            session: reply.and_then(Reply::session_sequences),
            zone: match replay.or(fixed) {
                Some(r) => r.zone.clone(),
                None => reply.and_then(Reply::zone),
            },
        }
    }

    /// Answers a finished transaction: through the command log when it committed changes
    /// (the reply leaves when the log says so: after the record is durable in sync mode),
    /// directly otherwise. Called before the partitions it held run anything else, so the
    /// log's order is the commit order.
    pub(crate) fn answer(&mut self, done: Answer, reply: Reply, r: Result<Rows>) {
        if self.log_chunk.is_sealed() {
            // It ends with a record the writer encodes (below): what follows goes after it.
            self.flush_log();
        }
        match (&self.shared.log, done.log) {
            (Some(log), Some(what)) if r.is_ok() && done.wrote => {
                // Appended with the pass's other records (`flush_log`).
                let own = [self.id];
                let parts: &[u32] = done.partitions.as_deref().unwrap_or(&own);
                let (now, seed) = (done.info_now, done.info_seed);
                let zone = done.info_zone.as_ref().map(|z| z.name());
                // The sequence values it took (kept in its result, partition/txn.rs).
                let draws: &[(u32, i64)] = r.as_ref().map_or(&[], |rows| &rows.draws);
                let pushed = match &what {
                    // A multi-partition call's parameters (a COPY batch's rows) are shared
                    // with the record, which the writer encodes as it writes it if it is
                    // large: a COPY batch is not held twice.
                    LogWhat::SharedCall(proc, params) if proc.log_params().is_none() => {
                        let (ad_hoc, text) = proc.log_text();
                        let call = permafrost_durability::StreamedCall::new(
                            ad_hoc,
                            text,
                            params.clone(),
                            parts,
                            (now, seed, zone),
                            draws,
                        );
                        self.log_chunk.push_call(call)
                    }
                    what => self.log_chunk.push_with(|out| match what {
                        LogWhat::Call(proc, params) => encode_call(proc, params, parts, (now, seed, zone, draws), out),
                        LogWhat::SharedCall(proc, params) => {
                            encode_call(proc, params, parts, (now, seed, zone, draws), out)
                        }
                        LogWhat::Schema(sql) => permafrost_durability::encode_record(
                            &permafrost_durability::TxnRecord {
                                zone: None,
                                draws: None,
                                partitions: parts.to_vec(),
                                now,
                                seed,
                                request: permafrost_durability::Request::Schema { sql: sql.clone() },
                            },
                            out,
                        ),
                    }),
                };
                if let Err(e) = pushed {
                    // Too large to log (over 4 GiB): it took effect but cannot be made
                    // durable; its caller hears so.
                    self.outbox.send(reply, Err(e.into()));
                    return;
                }
                if log.mode() == permafrost_durability::LogMode::Sync {
                    // Answered when the record is durable (`flush_log`).
                    self.log_replies.hold(reply, r);
                } else {
                    self.outbox.send(reply, r);
                }
            }
            (Some(log), _) if log.mode() == permafrost_durability::LogMode::Sync && !reply.is_in_block() => {
                // It wrote nothing, but it may have seen writes not durable yet: it is
                // answered once they are, so that no client sees a change that a crash
                // could still take back. (A statement inside an interactive transaction is
                // not held: its block's COMMIT is, `StopFlag::in_block`.)
                if !self.log_chunk.is_empty() {
                    // Behind this partition's commits of this pass.
                    self.log_replies.hold(reply, r);
                    return;
                }
                let need = log.last_lsn();
                if need <= log.durable_lsn() || log.failure().is_some() {
                    // (A failed log makes nothing durable any more: reads are answered as
                    // they are, over what is in memory.)
                    return self.outbox.send(reply, r);
                }
                if need > self.barrier_lsn {
                    // Those records may be other partitions': ask the log to say when.
                    self.barrier_lsn = need;
                    let signal = self.durable_signal.clone();
                    log.barrier(Box::new(move |res| signal.notify(res)));
                }
                self.durable_wait.push_back((need, reply, r));
            }
            _ => self.outbox.send(reply, r),
        }
    }

    /// Appends the records of the transactions committed since the last call, in commit
    /// order, as one batch. Called at the end of every pass over the queue, and before
    /// the partition takes part in a multi-partition transaction (so that its records
    /// precede that transaction's in the log).
    pub(crate) fn flush_log(&mut self) {
        if self.log_chunk.is_empty() {
            return;
        }
        let Some(log) = &self.shared.log else { return };
        let chunk = std::mem::replace(&mut self.log_chunk, log.chunk());
        if self.log_replies.is_empty() {
            log.append_chunk(chunk, Box::new(|_| {}));
            return;
        }
        // The answers travel with the chunk: the writer sends them as soon as the group
        // commit holding it is durable, without waking this partition for it (a partition
        // that has run dry would otherwise be woken once more per group commit, only to
        // pass the answers on).
        let next = self.log_replies.successor();
        let replies = std::mem::replace(&mut self.log_replies, next);
        let signal = self.durable_signal.clone();
        log.append_chunk(
            chunk,
            Box::new(move |res| match res {
                Ok(()) => replies.release(),
                Err(e) => {
                    // They took effect in memory but were never acknowledged; the
                    // partition's later answers that wait for the log fail too.
                    let err = Error::from(e.duplicate());
                    signal.notify(Err(e));
                    replies.fail(&err);
                }
            }),
        );
    }

    /// Answers the transactions waiting for log records that became durable, without
    /// waiting for the [`Msg::Durable`] queued behind the calls that arrived meanwhile (a
    /// full queue of them in sync mode under load: the clients would wait that much longer
    /// for their answers, and the partition could run dry meanwhile). Returns whether it
    /// answered any.
    fn release_if_durable(&mut self) -> bool {
        let Some(log) = &self.shared.log else { return false };
        match self.durable_wait.front() {
            Some((lsn, _, _)) if *lsn != 0 && *lsn <= log.durable_lsn() => {
                self.release_ready();
                true
            }
            _ => false,
        }
    }

    /// Answers the transactions whose log records are durable now; if the log failed, the
    /// ones after fail with its error (they took effect in memory, but were never
    /// acknowledged, and the log takes nothing more).
    fn release_durable(&mut self) {
        self.durable_signal.scheduled.store(false, Ordering::Release);
        self.release_ready();
    }

    /// [`Partition::release_durable`] without taking note that the queued
    /// [`Msg::Durable`] was handled (so that at most one stays queued).
    fn release_ready(&mut self) {
        let Some(log) = &self.shared.log else { return };
        let durable = log.durable_lsn();
        let failed = self.durable_signal.error.lock().ok().and_then(|e| e.clone());
        while let Some((lsn, _, _)) = self.durable_wait.front() {
            let ok = *lsn != 0 && *lsn <= durable;
            if !ok && failed.is_none() {
                break;
            }
            let (_, reply, r) = self.durable_wait.pop_front().expect("checked");
            match (ok, &failed) {
                (true, _) => self.outbox.send(reply, r),
                (false, Some(e)) => self.outbox.send(reply, Err(e.clone())),
                (false, None) => unreachable!("checked above"),
            }
        }
    }

    pub(crate) fn record(&self, r: &Result<Rows>) {
        let c = match r {
            Ok(_) => &self.stats.committed,
            Err(Error::Aborted(_)) => &self.stats.aborted_user,
            Err(_) => &self.stats.failed,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn run_single(&mut self, inv: Invocation) {
        let back = self.run_one(inv, None);
        debug_assert!(back.is_none(), "only a sliced run gives its call back");
    }

    /// Runs a single-partition call. With `slice` (it runs on its caller's thread), it
    /// stops past that slice instead of moving off the partition, and a read that would
    /// leave evicted tuples for later does not start that scan here: either way it is
    /// rolled back (nothing took effect) and given back, to be queued.
    pub(super) fn run_one(&mut self, mut inv: Invocation, slice: Option<std::time::Duration>) -> Option<Invocation> {
        let mut info = self.txn_info(inv.replay.as_ref(), inv.proc.fixed.as_ref(), Some(&inv.reply));
        if slice.is_some() {
            info.read_slice = None;
            info.inline_slice = slice;
        }
        if inv.replay.is_none()
            && let Some(given) = Attempt::given(&inv.drawn)
        {
            info.given = given;
        }
        let mut attempt = Attempt::default();
        let store: &mut PartitionStore = self.store.as_deref_mut().expect("store is home between transactions");
        let mut stores = [store];
        let outcome = {
            let reply = &inv.reply;
            let interrupted = || reply.is_closed();
            let pool = &self.shared.statement_pool;
            run_txn(
                &inv.proc,
                &inv.params,
                &mut stores,
                &mut self.evicted,
                &info,
                &self.shared.sequences,
                &interrupted,
                pool,
                &mut attempt,
            )
        };
        if inv.replay.is_none() {
            inv.drawn = attempt.drawn;
        }
        match outcome {
            Outcome::Done(Err(e), _) if inv.replay.is_some() && e.is_retryable() => {
                // Replay keeps the log's order: hold it (and the replayed calls after it)
                // until eviction makes room.
                let _ = e;
                self.replay_stall.push_front(inv);
            }
            Outcome::Done(Err(e), _) if inv.replay.is_none() && self.shared.pace(&e, &[self.id]) => {
                if slice.is_some() {
                    // On a caller's thread: queued, it is held by the partition's thread.
                    return Some(inv);
                }
                self.pace_call(inv);
            }
            Outcome::Done(r, wrote) => {
                self.record(&r);
                let done = Answer {
                    wrote,
                    partitions: None,
                    info_now: info.now,
                    info_seed: info.seed,
                    info_zone: info.zone.clone(),
                    log: (wrote && inv.replay.is_none() && self.shared.log.is_some())
                        .then(|| LogWhat::Call(inv.proc, inv.params)),
                };
                self.answer(done, inv.reply, r);
            }
            Outcome::SchemaChanged => {
                self.stats.restarts_schema.fetch_add(1, Ordering::Relaxed);
                match self.refresh(&inv.proc, inv.restarts) {
                    Ok(p) => {
                        inv.proc = p;
                        inv.restarts += 1;
                        // Behind whatever is queued (the schema change may still be on its
                        // way to this partition).
                        let _ = self.shared.send(self.id, Msg::Batch(vec![inv]));
                    }
                    Err(e) => {
                        self.record(&Err(e.clone()));
                        self.outbox.send(inv.reply, Err(e));
                    }
                }
            }
            Outcome::NeedsData => {
                let refs = std::mem::take(&mut self.evicted);
                self.need_data(Waiter::Single(inv), refs);
            }
            Outcome::SliceOver | Outcome::Deferred(..) if slice.is_some() => return Some(inv),
            Outcome::SliceOver if !inv.proc.statements[0].is_read_only() => {
                // A write past its slice: it finishes off the partition (forked.rs) and
                // is answered by what applies its changes later.
                let store: &mut PartitionStore = self.store.as_deref_mut().expect("store is home between transactions");
                crate::forked::move_write(
                    &self.shared,
                    &inv.proc,
                    inv.params.into(),
                    &mut [store],
                    &info,
                    vec![self.id],
                    inv.reply,
                    &self.stats,
                );
            }
            o @ (Outcome::SliceOver | Outcome::Deferred(..)) => {
                // A read whose rest comes after it: read from blocks, or moved off.
                let r = match o {
                    Outcome::Deferred(rows, deferred) => {
                        self.with_scan(&inv.proc, rows, deferred, inv.reply.stop_flag())
                    }
                    _ => {
                        let reply = &inv.reply;
                        let interrupted = || reply.is_closed();
                        self.move_off(&inv.proc, &inv.params, &info, reply.stop_flag(), &interrupted)
                    }
                };
                self.record(&r);
                self.answer(Answer::read(&info), inv.reply, r);
            }
        }
        None
    }

    /// The answer of a scan that left its evicted tuples for later: the rows of the tuples
    /// in memory, followed by the scan of the rest (scan.rs). Called while the statement
    /// still holds its partitions.
    pub(crate) fn with_scan(
        &self,
        proc: &Arc<Procedure>,
        mut rows: Rows,
        deferred: Box<permafrost_sql::Deferred>,
        stop: Option<crate::reply::StopFlag>,
    ) -> Result<Rows> {
        let scan = crate::scan::BlockScan::start(self.shared.clone(), proc.clone(), deferred, stop)?;
        rows.set_rest(Box::new(scan));
        Ok(rows)
    }

    /// Moves a read that ran past its slice off this partition, or runs it again here to
    /// its end ([`crate::forked::move_read`]). Called while the statement still holds the
    /// partition.
    fn move_off(
        &mut self,
        proc: &Arc<Procedure>,
        params: &[permafrost_types::Value],
        info: &TxnInfo,
        stop: Option<crate::reply::StopFlag>,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<Rows> {
        let store: &mut PartitionStore = self.store.as_deref_mut().expect("store is home between transactions");
        let mut stores = [store];
        crate::forked::move_read(
            &self.shared,
            (proc, params),
            &mut stores,
            &mut self.evicted,
            info,
            (stop, interrupted),
            &self.stats,
        )
    }

    /// Runs the replayed calls held back, in order, until one is refused again.
    fn retry_stalled(&mut self) {
        while let Some(inv) = self.replay_stall.pop_front() {
            let before = self.replay_stall.len();
            self.run_single(inv);
            if self.replay_stall.len() > before {
                // Refused again (it is back at the front).
                break;
            }
        }
    }

    /// The current version of a procedure after a schema change.
    pub(crate) fn refresh(&self, proc: &Procedure, restarts: u32) -> Result<Arc<Procedure>> {
        if restarts >= self.shared.config.max_restarts {
            return Err(Error::Sql(SqlError::SchemaChanged(format!(
                "used by procedure \"{}\" kept changing",
                proc.name
            ))));
        }
        let state = self.shared.schema.load();
        if proc.adhoc {
            return proc.replan(&state.catalog).map(Arc::new);
        }
        state
            .procs
            .get(&proc.name)
            .cloned()
            .ok_or_else(|| Error::UnknownProcedure(proc.name.clone()))
    }
}

/// Encodes a call's command-log record into `out`: the procedure's name (or an ad hoc
/// statement's text) and its parameters, or what it logs instead of them.
fn encode_call(
    proc: &Procedure,
    params: &[permafrost_types::Value],
    parts: &[u32],
    (now, seed, zone, draws): (i64, u64, Option<&str>, &[(u32, i64)]),
    out: &mut Vec<u8>,
) {
    let (ad_hoc, text) = proc.log_text();
    let params = proc.log_params().unwrap_or(params);
    permafrost_durability::encode_call(ad_hoc, text, params, parts, (now, seed, zone), draws, out)
}

/// How many entries an index build adds between two looks at the statement pool.
const POOL_CHECK_EVERY: usize = 4096;

/// The entries that `schema`'s last index gives the evicted tuples of its table at this
/// partition ([`Msg::EvictedKeys`]), counted in the statement pool `pool` as they are
/// built (53200 when it cannot hold them); `None` without the table.
fn evicted_entries(
    ac: &mut AntiCache,
    store: &PartitionStore,
    schema: &TableSchema,
    pool: &Arc<MemoryPool>,
) -> Result<Option<(EvictedEntries, Reservation)>> {
    let mut held = Reservation::default();
    let (Some(table), Some(def)) = (store.table(schema.id), schema.indexes.last()) else {
        return Ok(None);
    };
    let mut entries = table.evicted_entries(schema)?;
    let enc = KeyEncoder::new(def.columns.iter().map(|&c| schema.columns[c].ty).collect());
    let mut added = 0usize;
    ac.evicted_keys(table, &def.columns, &enc, |tombstone, key| -> Result<()> {
        entries.add(tombstone, key)?;
        added += 1;
        if added.is_multiple_of(POOL_CHECK_EVERY) {
            held.set_exact(entries.memory_bytes(), pool)?;
        }
        Ok(())
    })?;
    held.set_exact(entries.memory_bytes(), pool)?;
    Ok(Some((entries, held)))
}
