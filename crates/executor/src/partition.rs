//! The partition executor: one thread owns one partition's storage and runs its
//! transactions one at a time, to completion, without locks or latches (design.md
//! invariant 1; oltp-looking-glass.txt on why).
//!
//! The executor is a state machine driven by [`Msg`]s from its queue:
//!
//! * `Batch`: single-partition calls, run in arrival order;
//! * `Mp`: this partition's turn in a multi-partition transaction (below);
//! * `Inspect`: read or change the store between transactions (statistics, tests);
//! * `Shutdown`.
//!
//! After each pass over the queue the executor hands the gathered completions to their
//! sessions and publishes its counters.
//!
//! **Multi-partition transactions.** A multi-partition transaction is put on the queue of
//! every partition it involves, by all submitters in one global order (the `mp_order`
//! lock hands out increasing timestamps and enqueues under it). When a participant reaches
//! it, it hands its store (the whole partition's data, moved, not shared) to the
//! coordinator, the lowest-numbered partition involved, and waits for it back. The
//! coordinator runs the procedure over all the stores, commits or rolls back each, and
//! returns them. Because every partition meets multi-partition transactions in the same
//! order, a coordinator only ever waits for partitions that will reach its transaction
//! next: no cycle of waits, hence no deadlock, and the transactions are serializable in
//! timestamp order (single-partition ones at a partition are ordered around them by the
//! queue).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, Sender};
use permafrost_sql::{Catalog, DdlChange, Env, EvictedRef, Rows, SqlError};
use permafrost_storage::{LruChain, MemoryUsage, PartitionStore, Value};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::procedure::{ProcContext, ProcError, Procedure};
use crate::reply::{Outbox, Reply};

/// A message to a partition executor.
pub(crate) enum Msg {
    Batch(Vec<Invocation>),
    Mp(Arc<MpTxn>),
    Inspect(Box<dyn FnOnce(&mut PartitionStore) + Send>),
    Shutdown,
}

/// One call of a single-partition procedure.
pub(crate) struct Invocation {
    pub proc: Arc<Procedure>,
    pub params: Vec<Value>,
    pub reply: Reply,
    /// Times this call was restarted (schema change, evicted data).
    pub restarts: u32,
}

/// What a multi-partition transaction does.
pub(crate) enum MpWork {
    Call {
        proc: Arc<Procedure>,
        params: Vec<Value>,
        restarts: u32,
    },
    /// Schema changes, applied at all partitions at one point of the serial order; on
    /// success `next` becomes the published schema state.
    Ddl {
        changes: Vec<DdlChange>,
        next: Arc<SchemaState>,
    },
}

type Channel<T> = (Sender<T>, Receiver<T>);

/// A multi-partition transaction, shared by the partitions it involves.
pub(crate) struct MpTxn {
    pub ts: u64,
    pub work: MpWork,
    /// Partitions involved, ascending; the first coordinates.
    pub parts: Vec<u32>,
    pub reply: Mutex<Option<Reply>>,
    handoff: Channel<(u32, Box<PartitionStore>)>,
    returns: Vec<Channel<Box<PartitionStore>>>,
}

impl MpTxn {
    pub(crate) fn new(ts: u64, work: MpWork, parts: Vec<u32>, reply: Reply) -> MpTxn {
        let n = parts.len();
        MpTxn {
            ts,
            work,
            returns: (0..n).map(|_| crossbeam_channel::bounded(1)).collect(),
            parts,
            reply: Mutex::new(Some(reply)),
            handoff: crossbeam_channel::bounded(n),
        }
    }

    fn take_reply(&self) -> Reply {
        self.reply
            .lock()
            .map(|mut r| r.take())
            .ok()
            .flatten()
            .unwrap_or(Reply::None)
    }
}

/// Catalog and procedures, published together so that they always agree.
pub(crate) struct SchemaState {
    pub catalog: Arc<Catalog>,
    pub procs: std::collections::HashMap<String, Arc<Procedure>>,
}

/// Counters a partition publishes after each pass over its queue.
#[derive(Debug, Default)]
pub struct PartitionStats {
    pub committed: AtomicU64,
    pub aborted_user: AtomicU64,
    pub failed: AtomicU64,
    pub restarts_evicted: AtomicU64,
    pub restarts_schema: AtomicU64,
    pub mp_coordinated: AtomicU64,
    pub tuple_bytes: AtomicU64,
    pub string_bytes: AtomicU64,
    pub index_bytes: AtomicU64,
    pub tombstone_bytes: AtomicU64,
    pub buffer_bytes: AtomicU64,
}

impl PartitionStats {
    pub(crate) fn set_memory(&self, m: &MemoryUsage) {
        self.tuple_bytes.store(m.tuple_bytes, Ordering::Relaxed);
        self.string_bytes.store(m.string_bytes, Ordering::Relaxed);
        self.index_bytes.store(m.index_bytes, Ordering::Relaxed);
        self.tombstone_bytes.store(m.tombstone_bytes, Ordering::Relaxed);
        self.buffer_bytes.store(m.buffer_bytes, Ordering::Relaxed);
    }

    pub fn memory(&self) -> MemoryUsage {
        MemoryUsage {
            tuple_bytes: self.tuple_bytes.load(Ordering::Relaxed),
            tuple_used_bytes: 0,
            string_bytes: self.string_bytes.load(Ordering::Relaxed),
            string_used_bytes: 0,
            index_bytes: self.index_bytes.load(Ordering::Relaxed),
            tombstone_bytes: self.tombstone_bytes.load(Ordering::Relaxed),
            buffer_bytes: self.buffer_bytes.load(Ordering::Relaxed),
        }
    }
}

/// State shared by the database handle and all partition executors.
pub(crate) struct Shared {
    pub config: Config,
    pub senders: Vec<Sender<Msg>>,
    pub stats: Vec<Arc<PartitionStats>>,
    pub schema: ArcSwap<SchemaState>,
    /// The next multi-partition timestamp; held while enqueueing one.
    pub mp_order: Mutex<u64>,
}

impl Shared {
    /// Enqueues a multi-partition transaction at every partition in `parts`, in the global
    /// multi-partition order.
    pub(crate) fn submit_mp(&self, work: MpWork, parts: Vec<u32>, reply: Reply) -> Result<()> {
        let mut next = self
            .mp_order
            .lock()
            .map_err(|_| Error::Internal("mp order lock poisoned".into()))?;
        let ts = *next;
        *next += 1;
        let t = Arc::new(MpTxn::new(ts, work, parts, reply));
        for &p in &t.parts {
            self.senders[p as usize]
                .send(Msg::Mp(t.clone()))
                .map_err(|_| Error::Shutdown)?;
        }
        Ok(())
    }

    pub(crate) fn all_partitions(&self) -> Vec<u32> {
        (0..self.config.partitions).collect()
    }
}

enum Outcome {
    Done(Result<Rows>),
    SchemaChanged,
    NeedsData,
}

/// Runs a procedure as one transaction over `stores`, then commits or rolls back every
/// store. Panics in the body are caught and fail the transaction.
#[allow(clippy::too_many_arguments)]
fn run_txn(
    proc: &Procedure,
    params: &[Value],
    stores: &mut [&mut PartitionStore],
    evicted: &mut Vec<EvictedRef>,
    total: u32,
    sampled: bool,
    now: i64,
    txn_id: u64,
) -> Outcome {
    evicted.clear();
    let result = {
        let mut env = Env {
            stores: &mut *stores,
            total_partitions: total,
            sampled,
            now,
            evicted: &mut *evicted,
        };
        let mut ctx = ProcContext {
            env: &mut env,
            statements: &proc.statements,
            txn_id,
            rng: txn_id,
        };
        catch_unwind(AssertUnwindSafe(|| (proc.body())(&mut ctx, params)))
    };
    let finish = |stores: &mut [&mut PartitionStore], commit: bool| {
        for s in stores.iter_mut() {
            if commit { s.commit() } else { s.rollback() }
        }
    };
    if !evicted.is_empty() {
        finish(stores, false);
        return Outcome::NeedsData;
    }
    match result {
        Ok(Ok(rows)) => {
            finish(stores, true);
            Outcome::Done(Ok(rows))
        }
        Ok(Err(ProcError::Sql(SqlError::SchemaChanged(_)))) => {
            finish(stores, false);
            Outcome::SchemaChanged
        }
        Ok(Err(ProcError::Sql(e))) => {
            finish(stores, false);
            Outcome::Done(Err(Error::Sql(e)))
        }
        Ok(Err(ProcError::Abort(m))) => {
            finish(stores, false);
            Outcome::Done(Err(Error::Aborted(m)))
        }
        Err(panic) => {
            finish(stores, false);
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Outcome::Done(Err(Error::ProcedurePanicked {
                name: proc.name.clone(),
                message,
            }))
        }
    }
}

/// Applies schema changes to every store, all or nothing.
fn apply_ddl(stores: &mut [&mut PartitionStore], changes: &[DdlChange]) -> Result<()> {
    for change in changes {
        let mut done = 0;
        let mut failure = None;
        for s in stores.iter_mut() {
            let r = match change {
                DdlChange::CreateTable(schema) => {
                    let tracker = schema
                        .evictable
                        .then(|| Box::new(LruChain::new()) as Box<dyn permafrost_storage::AccessTracker>);
                    s.create_table(schema.clone(), tracker)
                }
                DdlChange::CreateIndex(schema) => s.add_index(schema.clone()),
                DdlChange::DropTable(id) => s.drop_table(*id),
                DdlChange::DropIndex { schema, dropped } => s.drop_index(schema.clone(), *dropped),
            };
            if let Err(e) = r {
                failure = Some(e);
                break;
            }
            done += 1;
        }
        if let Some(e) = failure {
            // Undo this change where it was applied. Drops cannot fail half-way, so only
            // creations need undoing.
            for s in stores.iter_mut().take(done) {
                match change {
                    DdlChange::CreateTable(schema) => {
                        let _ = s.drop_table(schema.id);
                    }
                    DdlChange::CreateIndex(schema) => {
                        let mut prev = (**schema).clone();
                        let i = prev.indexes.len() - 1;
                        prev.indexes.pop();
                        let _ = s.drop_index(Arc::new(prev), i);
                    }
                    _ => {}
                }
            }
            return Err(e.into());
        }
    }
    Ok(())
}

/// One partition executor.
pub(crate) struct Partition {
    id: u32,
    store: Option<Box<PartitionStore>>,
    shared: Arc<Shared>,
    stats: Arc<PartitionStats>,
    outbox: Outbox,
    evicted: Vec<EvictedRef>,
    rng: u64,
    sample_threshold: u64,
    txn_seq: u64,
    last_now: i64,
    wall: i64,
    last_publish: Instant,
}

impl Partition {
    pub(crate) fn new(id: u32, shared: Arc<Shared>) -> Partition {
        let stats = shared.stats[id as usize].clone();
        let alpha = shared.config.lru_sample_rate;
        let sample_threshold = if alpha >= 1.0 {
            u64::MAX
        } else {
            (alpha * u64::MAX as f64) as u64
        };
        Partition {
            id,
            store: Some(Box::new(PartitionStore::new(id))),
            shared,
            stats,
            outbox: Outbox::default(),
            evicted: Vec::new(),
            rng: 0x2545_F491_4F6C_DD1D ^ (id as u64 + 1),
            sample_threshold,
            txn_seq: 0,
            last_now: 0,
            wall: 0,
            last_publish: Instant::now(),
        }
    }

    /// The executor loop; returns when told to shut down.
    pub(crate) fn run(mut self, rx: Receiver<Msg>) {
        while let Ok(msg) = rx.recv() {
            if !self.handle(msg) {
                break;
            }
            // Drain what else is queued before flushing, to batch completions.
            let mut stop = false;
            for _ in 0..1024 {
                match rx.try_recv() {
                    Ok(m) => {
                        if !self.handle(m) {
                            stop = true;
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
            self.outbox.flush();
            self.publish(false);
            if stop {
                break;
            }
        }
        self.outbox.flush();
    }

    fn handle(&mut self, msg: Msg) -> bool {
        self.tick();
        match msg {
            Msg::Batch(invs) => {
                for inv in invs {
                    self.run_single(inv);
                }
            }
            Msg::Mp(t) => {
                if t.parts.first() == Some(&self.id) {
                    self.coordinate(&t);
                } else {
                    self.participate(&t);
                }
            }
            Msg::Inspect(f) => {
                if let Some(s) = self.store.as_deref_mut() {
                    f(s);
                }
            }
            Msg::Shutdown => return false,
        }
        true
    }

    fn publish(&mut self, force: bool) {
        if force || self.last_publish.elapsed().as_micros() >= 1000 {
            if let Some(s) = &self.store {
                self.stats.set_memory(&s.memory_usage());
            }
            self.last_publish = Instant::now();
        }
    }

    /// Reads the wall clock; done once per message rather than per transaction.
    fn tick(&mut self) {
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

    fn record(&self, r: &Result<Rows>) {
        let c = match r {
            Ok(_) => &self.stats.committed,
            Err(Error::Aborted(_)) => &self.stats.aborted_user,
            Err(_) => &self.stats.failed,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    fn run_single(&mut self, mut inv: Invocation) {
        let now = self.clock();
        let txn_id = self.next_txn_id();
        let sampled = self.sample();
        let total = self.shared.config.partitions;
        let store: &mut PartitionStore = self.store.as_deref_mut().expect("store is home between transactions");
        let mut stores = [store];
        let outcome = run_txn(
            &inv.proc,
            &inv.params,
            &mut stores,
            &mut self.evicted,
            total,
            sampled,
            now,
            txn_id,
        );
        match outcome {
            Outcome::Done(r) => {
                self.record(&r);
                self.outbox.send(inv.reply, r);
            }
            Outcome::SchemaChanged => {
                self.stats.restarts_schema.fetch_add(1, Ordering::Relaxed);
                match self.refresh(&inv.proc, inv.restarts) {
                    Ok(p) => {
                        inv.proc = p;
                        inv.restarts += 1;
                        // Behind whatever is queued (the schema change may still be on its
                        // way to this partition).
                        let _ = self.shared.senders[self.id as usize].send(Msg::Batch(vec![inv]));
                    }
                    Err(e) => {
                        self.record(&Err(e.clone()));
                        self.outbox.send(inv.reply, Err(e));
                    }
                }
            }
            Outcome::NeedsData => {
                let e = Error::Internal("transaction reached evicted data, but this build has no anti-cache".into());
                self.record(&Err(e.clone()));
                self.outbox.send(inv.reply, Err(e));
            }
        }
    }

    /// The current version of a procedure after a schema change.
    fn refresh(&self, proc: &Procedure, restarts: u32) -> Result<Arc<Procedure>> {
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

    fn participate(&mut self, t: &MpTxn) {
        self.outbox.flush();
        self.publish(true);
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
            Ok(s) => self.store = Some(s),
            Err(_) => panic!(
                "coordinator of multi-partition transaction {} lost partition {}",
                t.ts, self.id
            ),
        }
    }

    fn coordinate(&mut self, t: &MpTxn) {
        self.outbox.flush();
        let mut held: Vec<(u32, Box<PartitionStore>)> = Vec::with_capacity(t.parts.len());
        held.push((self.id, self.store.take().expect("store is home between transactions")));
        for _ in 1..t.parts.len() {
            match t.handoff.1.recv() {
                Ok(x) => held.push(x),
                Err(_) => panic!("participant of multi-partition transaction {} vanished", t.ts),
            }
        }
        held.sort_by_key(|(p, _)| *p);
        let now = self.clock();
        let txn_id = self.next_txn_id();
        let sampled = self.sample();
        let total = self.shared.config.partitions;
        let outcome = {
            let mut refs: Vec<&mut PartitionStore> = held.iter_mut().map(|(_, s)| &mut **s).collect();
            match &t.work {
                MpWork::Call { proc, params, .. } => {
                    run_txn(proc, params, &mut refs, &mut self.evicted, total, sampled, now, txn_id)
                }
                MpWork::Ddl { changes, next } => {
                    let r = apply_ddl(&mut refs, changes);
                    if r.is_ok() {
                        // Published while every partition is still held, so no
                        // transaction can run between the change and its plans.
                        self.shared.schema.store(next.clone());
                    }
                    Outcome::Done(r.map(|_| Rows::default()))
                }
            }
        };
        for (p, s) in held {
            if p == self.id {
                self.store = Some(s);
            } else {
                let idx = t.parts.iter().position(|&q| q == p).expect("known participant");
                let _ = t.returns[idx].0.send(s);
            }
        }
        self.stats.mp_coordinated.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Outcome::Done(r) => {
                self.record(&r);
                self.outbox.send(t.take_reply(), r);
            }
            Outcome::SchemaChanged => {
                self.stats.restarts_schema.fetch_add(1, Ordering::Relaxed);
                let MpWork::Call { proc, params, restarts } = &t.work else {
                    unreachable!("only calls re-plan")
                };
                let reply = t.take_reply();
                match self.refresh(proc, *restarts) {
                    Ok(p) => {
                        let work = MpWork::Call {
                            proc: p,
                            params: params.clone(),
                            restarts: restarts + 1,
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
            Outcome::NeedsData => {
                let e = Error::Internal("transaction reached evicted data, but this build has no anti-cache".into());
                self.record(&Err(e.clone()));
                self.outbox.send(t.take_reply(), Err(e));
            }
        }
    }
}
