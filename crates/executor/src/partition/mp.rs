//! Multi-partition transactions and schema changes.
//!
//! A multi-partition transaction is put on the queue of every partition it involves, by
//! all submitters in one global order (`Shared::submit_mp` hands out increasing timestamps
//! and enqueues under the `mp_order` lock). When a participant reaches it, it hands its
//! store (the whole partition's data, moved, not shared) to the coordinator, the
//! lowest-numbered partition involved, and waits for it back. The coordinator runs the
//! procedure over all the stores, commits or rolls back each, and returns them. Because
//! every partition meets multi-partition transactions in the same order, a coordinator only
//! ever waits for partitions that will reach its transaction next: no cycle of waits, hence
//! no deadlock, and the transactions are serializable in timestamp order (single-partition
//! ones at a partition are ordered around them by the queue).
//!
//! A participant that had handled everything sent to it when the transaction was queued
//! is *fenced* instead (fence.rs): the coordinator takes its token and store itself, and
//! its thread is not woken.
//!
//! If the transaction reached evicted tuples, the coordinator rolls it back, returns the
//! stores and asks every partition whose tuples it needs to fetch them ([`MpFetch`]); the
//! last partition to finish resubmits the transaction (DeBrabant et al. 2013 §3.5). A
//! read-only ad hoc statement that reached more than its partitions may bring back
//! (54000), or that keeps reaching evicted data ([`super::txn::MOVE_AFTER_RESTARTS`]), is
//! resubmitted to run at once in a forked reader over every partition's image, which reads
//! the evicted tuples where they lie (`MpTxn::reads_in_place`, forked.rs, block_rows.rs).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use permafrost_sql::{DdlChange, EvictedRefs, Rows};
use permafrost_storage::{AccessTracker, PartitionStore, TableSchema};

use super::cell::{Held, INLINE_SLICE};
use super::msg::{Answer, EvictedKeys, InPlace, LogWhat, MpFetch, MpRetry, MpTxn, MpWork, Msg};
use super::repartition::MovingTuples;
use super::state::Partition;
use super::txn::{Attempt, Outcome, TxnInfo, run_txn};
use crate::error::{Error, Result};
use crate::reply::{Outbox, Reply};
use crate::shared::Shared;
use crate::snapshot::fork::fork_writer;
use crate::snapshot::job::SnapJob;

impl MpFetch {
    /// One partition has merged its part of the data (or failed to). The last one to
    /// finish resubmits the transaction, or reports the first error.
    pub(crate) fn part_done(&self, shared: &Shared, err: Option<Error>, outbox: &mut Outbox) {
        if let Some(e) = err
            && let Ok(mut slot) = self.error.lock()
            && slot.is_none()
        {
            *slot = Some(e);
        }
        if self.remaining.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let Some(r) = self.retry.lock().ok().and_then(|mut r| r.take()) else {
            return;
        };
        let err = self.error.lock().ok().and_then(|mut e| e.take());
        // A read-only statement that needs more evicted data than may come back, or that
        // keeps reaching more (what it brought back was evicted again before it ran), runs
        // in a forked reader that reads it where it lies instead.
        let in_place = r.replay.is_none() && super::txn::may_move_over_evicted(&r.proc);
        let fallback = match err {
            Some(e @ Error::AntiCache(permafrost_anticache::AntiCacheError::TooLarge { .. })) if in_place => Some(e),
            None if in_place && r.restarts >= super::txn::MOVE_AFTER_RESTARTS => {
                Some(Error::TooManyRestarts { restarts: r.restarts })
            }
            Some(e) => {
                outbox.send(r.reply, Err(e));
                return;
            }
            None => None,
        };
        if let Some(fallback) = fallback {
            r.read_in_place(shared, InPlace::OrFail(fallback));
        } else if r.restarts >= shared.config.max_restarts {
            outbox.send(r.reply, Err(Error::TooManyRestarts { restarts: r.restarts }));
        } else {
            let work = MpWork::Call {
                proc: r.proc,
                params: r.params,
                restarts: r.restarts + 1,
                replay: r.replay,
            };
            // Fails only when shutting down, and the reply goes with the queue then.
            let _ = shared.submit_mp(work, r.parts, r.reply);
        }
    }
}

impl MpRetry {
    /// Resubmits the (read-only, not replayed) call to run in a forked reader that reads
    /// the evicted tuples where they lie, doing as `fallback` says when no reader may start.
    fn read_in_place(self, shared: &Shared, fallback: InPlace) {
        let work = MpWork::Call {
            proc: self.proc,
            params: self.params,
            restarts: self.restarts + 1,
            replay: None,
        };
        // Fails only when shutting down, and the reply goes with the queue then.
        let _ = shared.submit_mp_reading_in_place(work, self.parts, self.reply, fallback);
    }
}

/// What a schema change read at the partitions before it ran: the keys of the evicted
/// tuples of a table an index is built over, the evicted tuples of a table that moves.
#[derive(Clone, Copy, Default)]
pub(crate) struct DdlReads<'a> {
    pub(crate) keys: Option<&'a EvictedKeys>,
    pub(crate) tuples: Option<&'a MovingTuples>,
}

/// Applies schema changes to every store (the database's `partitions`), each all or
/// nothing. An index or primary key is built with each partition's keys of the evicted
/// tuples, and a table's rows move with its evicted tuples, when `read` has them. New
/// evictable tables get a tracker from `tracker`. Each store then forgets its recent
/// commits (`permafrost_storage::Recent::forget`).
pub(crate) fn apply_ddl(
    stores: &mut [&mut PartitionStore],
    changes: &[DdlChange],
    read: DdlReads<'_>,
    tracker: &dyn Fn() -> Box<dyn AccessTracker>,
    partitions: u32,
) -> Result<()> {
    let evicted = read.keys;
    for change in changes {
        if let DdlChange::Repartition(schema) = change {
            // Moved at every store at once; the old tables are not needed past it.
            super::repartition::repartition(stores, schema, read.tuples, tracker, partitions)?;
            continue;
        }
        // A primary key is prepared everywhere first: adding it may remove rows (a
        // replicated table becoming partitioned), which could not be undone; then it does
        // not fail.
        let mut keys = match change {
            DdlChange::AddPrimaryKey(schema) => stores
                .iter()
                .map(|s| {
                    let entries = evicted.and_then(|e| e.take(schema, s.partition()));
                    s.prepare_primary_key(schema, partitions, entries)
                })
                .collect::<std::result::Result<Vec<_>, _>>()?,
            _ => Vec::new(),
        }
        .into_iter();
        // The schemas an index's undo puts back: the very ones plans were made for.
        let before: Vec<Option<Arc<TableSchema>>> = match change {
            DdlChange::CreateIndex(schema) => stores
                .iter()
                .map(|s| s.table(schema.id).map(|t| t.schema().clone()))
                .collect(),
            _ => Vec::new(),
        };
        // Foreign keys added: the rows there must hold them.
        if let DdlChange::AlterSchema(next) = change
            && let Some(before) = stores
                .first()
                .and_then(|s| s.table(next.id))
                .map(|t| t.schema().clone())
        {
            let held: &[&mut PartitionStore] = stores;
            permafrost_sql::exec::foreign::validate_added(held, &before, next)?;
            permafrost_sql::exec::check::validate_added(held, &before, next)?;
        }
        let mut done = 0;
        let mut failure = None;
        // The tables as they were before a rewrite, kept until it holds everywhere.
        let mut rewritten = Vec::new();
        for s in stores.iter_mut() {
            let r = match change {
                DdlChange::CreateTable(schema) => s.create_table(schema.clone(), schema.evictable.then(tracker)),
                DdlChange::CreateIndex(schema) => {
                    let entries = evicted.and_then(|e| e.take(schema, s.partition()));
                    s.add_index(schema.clone(), entries)
                }
                DdlChange::DropTable(id) => s.drop_table(*id),
                DdlChange::AlterSchema(schema) => s.replace_schema(schema.clone()),
                DdlChange::RewriteTable { schema, from } => s
                    .rewrite_table(schema.clone(), from, schema.evictable.then(tracker))
                    .map(|old| rewritten.push(old)),
                DdlChange::DropIndex { schema, dropped } => s.drop_index(schema.clone(), *dropped),
                DdlChange::AddPrimaryKey(schema) => match keys.next() {
                    Some(key) => s.add_primary_key(schema.clone(), key),
                    None => Err(permafrost_storage::StorageError::Internal(
                        "a primary key prepared for fewer partitions".into(),
                    )),
                },
                // Views, sequences, enum types and schemas live in the catalog only.
                DdlChange::CreateView { .. }
                | DdlChange::CreateSchema { .. }
                | DdlChange::DropSchema(_)
                | DdlChange::DropView(_)
                | DdlChange::CreateSequence(_)
                | DdlChange::DropSequence(_)
                | DdlChange::AlterSequence { .. }
                | DdlChange::CreateType(_)
                | DdlChange::AlterType(_)
                | DdlChange::DropType(_) => Ok(()),
                // (Moved above, at every store at once.)
                DdlChange::Repartition(_) => Ok(()),
            };
            if let Err(e) = r {
                failure = Some(Error::from(e));
                break;
            }
            done += 1;
        }
        if failure.is_none()
            && let DdlChange::CreateIndex(schema) = change
        {
            failure = unique_apart(stores, schema).err().map(Error::from);
        }
        // The foreign keys and checks a rewrite adds hold over the rewritten rows.
        if failure.is_none()
            && let DdlChange::RewriteTable { schema, .. } = change
            && let Some(before) = rewritten.first().map(|t| t.schema().clone())
        {
            let held: &[&mut PartitionStore] = stores;
            failure = permafrost_sql::exec::foreign::validate_added(held, &before, schema)
                .and_then(|()| permafrost_sql::exec::check::validate_added(held, &before, schema))
                .err()
                .map(Error::from);
        }
        if let Some(e) = failure {
            // Undo this change where it was applied. Drops cannot fail half-way, so only
            // creations (and rewrites) need undoing.
            let mut olds = std::mem::take(&mut rewritten).into_iter();
            for (k, s) in stores.iter_mut().take(done).enumerate() {
                match change {
                    DdlChange::CreateTable(schema) => {
                        let _ = s.drop_table(schema.id);
                    }
                    DdlChange::CreateIndex(schema) => {
                        let prev = before.get(k).cloned().flatten().unwrap_or_else(|| {
                            let mut prev = (**schema).clone();
                            prev.indexes.pop();
                            Arc::new(prev)
                        });
                        let _ = s.drop_index(prev, schema.indexes.len() - 1);
                    }
                    DdlChange::RewriteTable { schema, .. } => {
                        if let Some(old) = olds.next() {
                            let _ = s.take_table(schema.id);
                            let _ = s.restore_table(old);
                        }
                    }
                    _ => {}
                }
            }
            return Err(e);
        }
    }
    // What committed transactions read and changed was noted against the old schema:
    // no COMMIT takes a place before this change.
    for s in stores.iter_mut() {
        s.forget_writes();
    }
    Ok(())
}

/// For a new unique index without the partition column (its last index), built at every
/// partition over the rows there: fails if two partitions hold the same key.
fn unique_apart(stores: &[&mut PartitionStore], schema: &TableSchema) -> permafrost_storage::Result<()> {
    let i = schema.indexes.len() - 1;
    if !schema.is_global_unique(i) {
        return Ok(());
    }
    let tables: Vec<_> = stores.iter().filter_map(|s| s.table(schema.id)).collect();
    for (a, mine) in tables.iter().enumerate() {
        for theirs in &tables[a + 1..] {
            mine.check_unique_apart(theirs, i)?;
        }
    }
    Ok(())
}

impl Partition {
    pub(crate) fn participate(&mut self, t: &MpTxn) {
        self.flush_log();
        self.outbox.flush();
        self.publish(true);
        if let (MpWork::Snapshot(job), Some(ac)) = (&t.work, &self.ac)
            && let Ok(mut images) = job.images.lock()
        {
            images.push((self.id, ac.directory_image(job.base)));
        }
        if let (Ok(true), Some(ac)) = (t.reads_in_place.lock().map(|f| f.is_some()), &self.ac)
            && let Ok(mut views) = t.views.lock()
        {
            views.push((self.id, ac.block_view()));
        }
        let store = self.store.take().expect("store is home between transactions");
        let idx = t
            .parts
            .iter()
            .position(|&p| p == self.id)
            .expect("participant of its own transaction");
        if t.handoff.0.send((self.id, store)).is_err() {
            return;
        }
        match t.returns[idx].1.recv() {
            Ok(s) => {
                self.store = Some(s);
                if let (MpWork::Snapshot(job), Some(ac)) = (&t.work, self.ac.as_mut()) {
                    ac.snapshot_started(job.epoch);
                }
            }
            Err(_) => panic!(
                "coordinator of multi-partition transaction {} lost partition {}",
                t.ts, self.id
            ),
        }
        self.after_schema_change();
    }

    pub(crate) fn coordinate(&mut self, t: &MpTxn) {
        let barrier_started = std::time::Instant::now();
        // Fenced participants (fence.rs): their tokens, taken here, in ascending order.
        let shared = self.shared.clone();
        let cells = shared.all_cells();
        let mut fenced: Vec<Held<'_>> = Vec::new();
        for (i, &p) in t.parts.iter().enumerate() {
            if t.fenced[i] {
                let h = cells.get(p as usize).and_then(|c| c.lock()).unwrap_or_else(|| {
                    panic!(
                        "fenced participant {p} of multi-partition transaction {} vanished",
                        t.ts
                    )
                });
                fenced.push(h);
            }
        }
        self.stats
            .mp_idle_participants
            .fetch_add(fenced.len() as u64, Ordering::Relaxed);
        if t.reads_in_place.lock().is_ok_and(|f| f.is_some())
            && let Ok(mut views) = t.views.lock()
        {
            let own = self.ac.as_ref().map(|ac| (self.id, ac.block_view()));
            views.extend(own);
            views.extend(
                fenced
                    .iter()
                    .filter_map(|o| o.ac.as_ref().map(|ac| (o.id, ac.block_view()))),
            );
        }
        let mut held = self.take_stores(&mut fenced);
        self.gather_stores(t, &mut held);
        let outcome = self.run_held(t, &mut held, barrier_started, None);
        self.put_stores_back(t, held, &mut fenced);
        done_with(&mut fenced);
        drop(fenced);
        // Their tokens are back: their threads may go on.
        t.lift_fences();
        self.after_schema_change();
        self.after_coordinating(t, outcome);
    }

    /// Coordinates `t` on a caller's thread that holds this partition and `others`, the
    /// rest of its partitions in ascending order (cell.rs, `run_mp`): their stores are
    /// taken from them instead of handed over. False when it ran past `INLINE_SLICE`:
    /// then it was rolled back, nothing was answered, and it is to be queued.
    pub(crate) fn coordinate_inline(&mut self, others: &mut [Held<'_>], t: &MpTxn) -> bool {
        self.tick();
        let mut held = self.take_stores(others);
        let outcome = self.run_held(t, &mut held, std::time::Instant::now(), Some(INLINE_SLICE));
        self.put_stores_back(t, held, others);
        if matches!(outcome, Some(Outcome::SliceOver)) {
            return false;
        }
        self.stats.inline_mp.fetch_add(1, Ordering::Relaxed);
        self.after_coordinating(t, outcome);
        done_with(others);
        self.after_message();
        self.end_pass(false);
        true
    }

    /// The coordinator's first step: its own store and those of the partitions it holds
    /// the tokens of (`others`), by partition. What each committed before goes to the log
    /// ahead of this transaction (a pass ends with its chunk appended, so theirs are
    /// empty).
    fn take_stores(&mut self, others: &mut [Held<'_>]) -> Vec<(u32, Box<PartitionStore>)> {
        self.flush_log();
        self.outbox.flush();
        let mut held = Vec::with_capacity(1 + others.len());
        held.push((self.id, self.store.take().expect("store is home between transactions")));
        for o in others.iter_mut() {
            o.flush_log();
            o.outbox.flush();
            held.push((o.id, o.store.take().expect("store is home between transactions")));
        }
        held
    }

    /// Gives every store back: to this partition, to the partitions whose tokens it holds
    /// (`others`), or through its channel to a participant that handed it over.
    fn put_stores_back(&mut self, t: &MpTxn, held: Vec<(u32, Box<PartitionStore>)>, others: &mut [Held<'_>]) {
        for (p, s) in held {
            if p == self.id {
                self.store = Some(s);
            } else if let Some(o) = others.iter_mut().find(|o| o.id == p) {
                o.store = Some(s);
            } else {
                let idx = t.parts.iter().position(|&q| q == p).expect("known participant");
                let _ = t.returns[idx].0.send(s);
            }
        }
    }

    /// Runs `t` over the stores `held` and answers it (and logs it) when it is done, before
    /// the stores go back, so that the log holds this transaction after what each
    /// partition committed before it and before what they commit after. What is left to
    /// do once the stores are back comes out (`None`: nothing). With `inline_slice` (run
    /// on a caller's thread) it stops past that slice, and `SliceOver` comes out
    /// unanswered.
    fn run_held(
        &mut self,
        t: &MpTxn,
        held: &mut [(u32, Box<PartitionStore>)],
        barrier_started: std::time::Instant,
        inline_slice: Option<std::time::Duration>,
    ) -> Option<Outcome> {
        let (replay, fixed) = match &t.work {
            MpWork::Call { replay, proc, .. } => (replay.as_ref(), proc.fixed.as_ref()),
            MpWork::Ddl { .. } | MpWork::Snapshot(_) => (None, None),
        };
        let mut info = {
            let reply = t.reply.lock().ok();
            self.txn_info(replay, fixed, reply.as_ref().and_then(|r| r.as_ref()))
        };
        if inline_slice.is_some() {
            // Never moved off a caller's thread: queued, it may move from its partitions'.
            info.read_slice = None;
            info.inline_slice = inline_slice;
        }
        if replay.is_none()
            && let Some(given) = t.drawn.lock().ok().and_then(|d| Attempt::given(&d))
        {
            info.given = given;
        }
        if let Some(fallback) = t.reads_in_place.lock().ok().and_then(|mut f| f.take())
            && let MpWork::Call { proc, params, .. } = &t.work
        {
            // Run at once in a forked reader that reads the evicted tuples where they lie.
            let views = t.views.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
            let stop = t.reply.lock().ok().and_then(|r| r.as_ref().and_then(Reply::stop_flag));
            let mut refs: Vec<&mut PartitionStore> = held.iter_mut().map(|(_, s)| &mut **s).collect();
            let r = crate::forked::move_off_reading(&self.shared, (proc, params), &mut refs, views, &info, stop);
            match (r, fallback) {
                (Some(r), _) => {
                    self.stats.reads_moved.fetch_add(1, Ordering::Relaxed);
                    self.answer_mp(t, r, false, &info);
                    return None;
                }
                (None, InPlace::OrFail(e)) => {
                    self.answer_mp(t, Err(e), false, &info);
                    return None;
                }
                (None, InPlace::OrRun) => t.no_reader.store(true, Ordering::Relaxed),
            }
        }
        let outcome = self.run_work(t, held, &info, barrier_started);
        if inline_slice.is_some() && matches!(outcome, Outcome::SliceOver) {
            return Some(Outcome::SliceOver);
        }
        // A scan that left its evicted tuples for later holds their blocks before the
        // participants get their stores back (scan.rs); a read past its slice moves off
        // them (forked.rs).
        let outcome = match (outcome, &t.work) {
            (Outcome::Deferred(rows, deferred), MpWork::Call { proc, .. }) => {
                let stop = t.reply.lock().ok().and_then(|r| r.as_ref().and_then(Reply::stop_flag));
                Outcome::Done(self.with_scan(proc, rows, deferred, stop), false)
            }
            (Outcome::SliceOver, MpWork::Call { proc, params, .. }) if !proc.statements[0].is_read_only() => {
                let mut refs: Vec<&mut PartitionStore> = held.iter_mut().map(|(_, s)| &mut **s).collect();
                crate::forked::move_write(
                    &self.shared,
                    proc,
                    params.clone(),
                    &mut refs,
                    &info,
                    t.parts.clone(),
                    t.take_reply(),
                    &self.stats,
                );
                // Answered later, by what applies its changes.
                Outcome::SliceOver
            }
            (Outcome::SliceOver, MpWork::Call { proc, params, .. }) => {
                let stop = t.reply.lock().ok().and_then(|r| r.as_ref().and_then(Reply::stop_flag));
                let interrupted = || t.reply.lock().is_ok_and(|r| r.as_ref().is_some_and(Reply::is_closed));
                let mut refs: Vec<&mut PartitionStore> = held.iter_mut().map(|(_, s)| &mut **s).collect();
                let r = crate::forked::move_read(
                    &self.shared,
                    (proc, params),
                    &mut refs,
                    &mut self.evicted,
                    &info,
                    (stop, &interrupted),
                    &self.stats,
                );
                Outcome::Done(r, false)
            }
            (o, _) => o,
        };
        match (outcome, &t.work) {
            (
                Outcome::Done(Err(e), _),
                MpWork::Call {
                    proc,
                    params,
                    restarts,
                    replay: None,
                },
            ) if self.shared.pace(&e, &t.parts) => {
                self.pace_mp(MpRetry {
                    proc: proc.clone(),
                    params: params.clone(),
                    restarts: *restarts,
                    replay: None,
                    parts: t.parts.clone(),
                    reply: t.take_reply(),
                });
                None
            }
            (Outcome::Done(r, wrote), _) => {
                self.answer_mp(t, r, wrote, &info);
                None
            }
            (other, _) => Some(other),
        }
    }

    /// What a coordinated transaction leaves to do once its stores are back: run again
    /// after a schema change, or fetch the evicted data it reached and run again.
    fn after_coordinating(&mut self, t: &MpTxn, outcome: Option<Outcome>) {
        self.stats.mp_coordinated.fetch_add(1, Ordering::Relaxed);
        let MpWork::Call {
            proc,
            params,
            restarts,
            replay,
        } = &t.work
        else {
            // Only calls re-plan, read evicted data or scan.
            return;
        };
        match outcome {
            // Deferred scans were answered above.
            None | Some(Outcome::Done(..)) | Some(Outcome::Deferred(..)) | Some(Outcome::SliceOver) => {}
            Some(Outcome::SchemaChanged) => {
                self.stats.restarts_schema.fetch_add(1, Ordering::Relaxed);
                let reply = t.take_reply();
                match self.refresh(proc, *restarts) {
                    Ok(p) => {
                        let work = MpWork::Call {
                            proc: p,
                            params: params.clone(),
                            restarts: restarts + 1,
                            replay: replay.clone(),
                        };
                        if let Err(e) = self.shared.submit_mp(work, t.parts.clone(), reply) {
                            self.record(&Err(e));
                        }
                    }
                    Err(e) => {
                        self.record(&Err(e.clone()));
                        self.outbox.send(reply, Err(e));
                    }
                }
            }
            Some(Outcome::NeedsData) => {
                self.stats.restarts_evicted.fetch_add(1, Ordering::Relaxed);
                let retry = MpRetry {
                    proc: proc.clone(),
                    params: params.clone(),
                    restarts: *restarts,
                    replay: replay.clone(),
                    parts: t.parts.clone(),
                    reply: t.take_reply(),
                };
                self.fetch_for_mp(retry, !t.no_reader.load(Ordering::Relaxed));
            }
        }
    }

    /// The stores the participants hand over (those not fenced), added to `held`, which
    /// then goes by partition.
    fn gather_stores(&mut self, t: &MpTxn, held: &mut Vec<(u32, Box<PartitionStore>)>) {
        for _ in held.len()..t.parts.len() {
            match t.handoff.1.recv() {
                Ok(x) => held.push(x),
                Err(_) => panic!("participant of multi-partition transaction {} vanished", t.ts),
            }
        }
        held.sort_by_key(|(p, _)| *p);
    }

    /// Runs the transaction's work over every store held.
    fn run_work(
        &mut self,
        t: &MpTxn,
        held: &mut [(u32, Box<PartitionStore>)],
        info: &TxnInfo,
        barrier_started: std::time::Instant,
    ) -> Outcome {
        let mut refs: Vec<&mut PartitionStore> = held.iter_mut().map(|(_, s)| &mut **s).collect();
        match &t.work {
            MpWork::Call { proc, params, .. } => {
                // A transaction block that changed the schema (crate::schema_block).
                let schema = proc.interactive.as_ref().and_then(|i| i.schema.clone());
                if let Some(s) = &schema {
                    let refused = s
                        .refused(&t.parts, &refs)
                        .or_else(|| s.commits().then(|| info.writes_refused.clone()).flatten());
                    if let Some(e) = refused {
                        return Outcome::Done(Err(e), false);
                    }
                }
                let interrupted = || t.reply.lock().is_ok_and(|r| r.as_ref().is_some_and(Reply::is_closed));
                let pool = &self.shared.statement_pool;
                let mut attempt = Attempt::default();
                let outcome = run_txn(
                    proc,
                    params,
                    &mut refs,
                    &mut self.evicted,
                    info,
                    &self.shared.sequences,
                    &interrupted,
                    pool,
                    &mut attempt,
                );
                if let MpWork::Call { replay: None, .. } = &t.work
                    && let Ok(mut d) = t.drawn.lock()
                {
                    *d = attempt.drawn;
                }
                match (schema, outcome) {
                    (Some(s), Outcome::Done(Ok(rows), _)) if s.commits() => {
                        // Published while every partition is still held; logged as a
                        // write even when no row changed.
                        s.publish();
                        Outcome::Done(Ok(rows), true)
                    }
                    (Some(s), outcome) => {
                        s.undo(&mut refs);
                        outcome
                    }
                    (None, outcome) => outcome,
                }
            }
            MpWork::Ddl { .. } if info.writes_refused.is_some() => {
                Outcome::Done(Err(info.writes_refused.clone().expect("checked")), false)
            }
            MpWork::Ddl { changes, .. }
                if changes.iter().any(takes_memory)
                    && let Some(e) = self.shared.refuse_schema_growth(&t.parts, &refs) =>
            {
                Outcome::Done(Err(e), false)
            }
            MpWork::Ddl {
                changes,
                next,
                evicted,
                moving,
                ..
            } => {
                let shared = self.shared.clone();
                let r = apply_ddl(
                    &mut refs,
                    changes,
                    DdlReads {
                        keys: evicted.as_deref(),
                        tuples: moving.as_deref(),
                    },
                    &|| shared.tracker(),
                    shared.config.partitions,
                );
                if r.is_ok() {
                    // Published while every partition is still held, so no transaction
                    // can run between the change and its plans.
                    self.shared.schema.store(next.clone());
                }
                Outcome::Done(r.map(|_| Rows::default()), true)
            }
            MpWork::Snapshot(job) => {
                drop(refs);
                self.snapshot_barrier(job, held, barrier_started)
            }
        }
    }

    /// A snapshot's barrier: every store is held, so the log's last LSN is the cut; the
    /// writer is forked from here.
    fn snapshot_barrier(
        &mut self,
        job: &SnapJob,
        held: &[(u32, Box<PartitionStore>)],
        barrier_started: std::time::Instant,
    ) -> Outcome {
        if let (Some(ac), Ok(mut images)) = (&self.ac, job.images.lock()) {
            images.push((self.id, ac.directory_image(job.base)));
        }
        // Every partition has appended its commits before handing its store.
        let cut = self.shared.log.as_ref().map_or(0, |l| l.last_lsn());
        let stores: Vec<(u32, &PartitionStore)> = held.iter().map(|(p, s)| (*p, &**s)).collect();
        // Every partition is stopped: each counter is at least the last value a
        // transaction up to the cut took.
        let sequences: Vec<(u32, i64)> = job
            .sequences
            .iter()
            .map(|&id| (id, self.shared.sequences.last(id)))
            .collect();
        let r = fork_writer(&self.shared, job, &sequences, cut, &stores, barrier_started);
        let out = match &r {
            Ok(_) => Ok(Rows::default()),
            Err(e) => Err(e.clone()),
        };
        if let Ok(mut f) = job.forked.lock() {
            *f = Some(r);
        }
        if let Some(ac) = self.ac.as_mut() {
            ac.snapshot_started(job.epoch);
        }
        Outcome::Done(out, false)
    }

    /// Answers a finished multi-partition transaction, and logs it if it wrote.
    fn answer_mp(&mut self, t: &MpTxn, r: Result<Rows>, wrote: bool, info: &TxnInfo) {
        self.record(&r);
        let logging = self.shared.log.is_some() && r.is_ok();
        let request = match &t.work {
            MpWork::Call {
                proc, params, replay, ..
            } => (logging && wrote && replay.is_none()).then(|| LogWhat::SharedCall(proc.clone(), params.clone())),
            MpWork::Ddl { sql, log, .. } => (logging && *log).then(|| LogWhat::Schema(sql.clone())),
            MpWork::Snapshot(_) => None,
        };
        let done = Answer {
            wrote,
            partitions: Some(t.parts.clone()),
            info_now: info.now,
            info_seed: info.seed,
            info_zone: info.zone.clone(),
            log: request,
        };
        self.answer(done, t.take_reply(), r);
        self.flush_log();
    }

    /// The transaction reached evicted tuples (in `self.evicted`): each partition holding
    /// some fetches them, and the last to finish resubmits `retry` ([`MpFetch`]); or, with
    /// many of them and `may_move`, it is resubmitted to read them where they lie.
    fn fetch_for_mp(&mut self, retry: MpRetry, may_move: bool) {
        if may_move
            && self.evicted.len() > super::txn::MOVE_OVER_EVICTED_TUPLES
            && retry.replay.is_none()
            && super::txn::may_move_over_evicted(&retry.proc)
        {
            // Many evicted tuples: read where they lie at once (as need_data does).
            return retry.read_in_place(&self.shared, InPlace::OrRun);
        }
        let mut by_part: BTreeMap<u32, EvictedRefs> = BTreeMap::new();
        for r in self.evicted.iter() {
            by_part.entry(r.partition).or_default().push(r);
        }
        let ticket = Arc::new(MpFetch {
            remaining: AtomicUsize::new(by_part.len()),
            error: Mutex::new(None),
            retry: Mutex::new(Some(retry)),
        });
        for (p, refs) in by_part {
            let _ = self.shared.senders[p as usize].send(Msg::MpFetch {
                refs,
                ticket: ticket.clone(),
            });
        }
    }
}

/// Whether a schema change adds structures that take memory at every partition (a new
/// table, index or key), which the budget may refuse.
fn takes_memory(c: &DdlChange) -> bool {
    matches!(
        c,
        DdlChange::CreateTable(_)
            | DdlChange::CreateIndex(_)
            | DdlChange::AddPrimaryKey(_)
            | DdlChange::RewriteTable { .. }
            | DdlChange::Repartition(_)
    )
}

/// After a transaction ran over partitions whose tokens the coordinator held: their
/// memory checks and counters, as after a message of their own. Each partition's clock is
/// read first: an idle partition's thread does not tick it, and a check measured against
/// a clock that has not moved since the last one is skipped as too soon, so a stream of
/// multi-partition writes would never evict there nor close its write gate.
fn done_with(others: &mut [Held<'_>]) {
    for o in others.iter_mut() {
        o.tick();
        o.after_message();
        o.publish(false);
    }
}
