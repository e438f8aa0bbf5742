//! Routing: which partition(s) a call runs at, and how it gets into their queues. A call of
//! a single-partition procedure goes to the partition its partition parameter hashes to
//! ([`route`]); anything else is a multi-partition transaction, queued at every partition
//! it holds in one global order ([`Shared::submit_mp`]).

use std::sync::Arc;

use permafrost_sql::Route;
use permafrost_storage::partitioning::partition_of;
use permafrost_types::{Value, ValueRef};

use super::cell::run_mp;
use super::msg::{InPlace, Invocation, MpTxn, MpWork, Msg};
use crate::error::{Error, Result};
use crate::procedure::{Partitioning, Procedure};
use crate::reply::Reply;
use crate::shared::Shared;

/// Where a call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Routed {
    /// At one partition (a single-partition transaction).
    One(u32),
    /// At these partitions (a multi-partition transaction).
    Many(Vec<u32>),
}

/// Where a call runs: at the partition of its partition parameter, unless the values it
/// reaches ([`crate::ProcedureDef::partition_values`]) lie elsewhere too.
pub(crate) fn route(proc: &Procedure, params: &[Value], partitions: u32) -> Result<Routed> {
    let param = match proc.partitioning {
        Partitioning::Multi => return Ok(Routed::Many((0..partitions).collect())),
        Partitioning::Single { param } => param,
    };
    let v = params.get(param).ok_or_else(|| Error::BadCall {
        name: proc.name.clone(),
        message: format!(
            "partition parameter {param} is missing ({} parameters given)",
            params.len()
        ),
    })?;
    if v.is_null() {
        return Err(Error::BadCall {
            name: proc.name.clone(),
            message: format!("partition parameter {param} is NULL"),
        });
    }
    let home = partition_of_value(v, partitions).ok_or_else(|| Error::BadCall {
        name: proc.name.clone(),
        message: "a NUMERIC partition parameter is not supported".into(),
    })?;
    let Some(touches) = &proc.def.touches else {
        return Ok(Routed::One(home));
    };
    let mut parts = vec![home];
    for v in touches(params) {
        let Some(p) = partition_of_value(&v, partitions) else {
            return Ok(Routed::Many((0..partitions).collect()));
        };
        if !parts.contains(&p) {
            parts.push(p);
        }
    }
    Ok(match parts.len() {
        1 => Routed::One(home),
        _ => {
            parts.sort_unstable();
            Routed::Many(parts)
        }
    })
}

/// The partition a value of a partition column lies at, read with its own type (integers
/// of every width hash alike); `None` for NULL and NUMERIC, which do not route.
fn partition_of_value(v: &Value, partitions: u32) -> Option<u32> {
    let v = v.as_ref();
    match v {
        ValueRef::Null | ValueRef::Decimal(_) => None,
        _ => Some(partition_of(v, &v.kind_type(), partitions)),
    }
}

/// How a call is handed to its partition.
pub(crate) enum Dispatch<'a> {
    /// Queued straight to the partition.
    Queue,
    /// Buffered per partition (a session's batches).
    Buffer(&'a mut [Vec<Invocation>]),
    /// Run on this thread if it is short and its partition is free (the caller has no
    /// call of its own in flight), else queued.
    Inline,
}

/// Routes a call and hands it over as `dispatch` says; returns the partition of a
/// single-partition call.
pub(crate) fn submit(
    shared: &Shared,
    proc: &Arc<Procedure>,
    params: Vec<Value>,
    reply: Reply,
    dispatch: Dispatch<'_>,
) -> Result<Option<u32>> {
    let params = {
        // (An argument's text read as a timestamptz is read in the call's zone.)
        let _zone = permafrost_types::zone::SessionZone::set(reply.zone().as_ref());
        proc.coerce(params)?
    };
    match route(proc, &params, shared.config.partitions)? {
        Routed::One(p) => {
            let inv = Invocation {
                proc: proc.clone(),
                params,
                reply,
                restarts: 0,
                replay: None,
                drawn: Vec::new(),
            };
            let inv = match dispatch {
                Dispatch::Buffer(b) => {
                    b[p as usize].push(inv);
                    return Ok(Some(p));
                }
                Dispatch::Inline if proc.short => match shared.try_inline(p, inv) {
                    Ok(()) => return Ok(Some(p)),
                    Err(inv) => inv,
                },
                Dispatch::Inline | Dispatch::Queue => inv,
            };
            shared.send(p, Msg::Batch(vec![inv])).map_err(|_| Error::Shutdown)?;
            Ok(Some(p))
        }
        Routed::Many(parts) => {
            shared.submit_mp(
                MpWork::Call {
                    proc: proc.clone(),
                    params: params.into(),
                    restarts: 0,
                    replay: None,
                },
                parts,
                reply,
            )?;
            Ok(None)
        }
    }
}

/// Where a request may run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Place {
    /// Handed to its partition's thread (and the answer handed back).
    #[default]
    Partition,
    /// On the calling thread when it is short and single-partition (a procedure whose
    /// every statement is a point access; a statement by exact key or a few rows of
    /// VALUES) and its partition is free, else as [`Place::Partition`]
    /// (partition/cell.rs). For a caller with nothing else of its own in flight (an
    /// ordinary client's connection): its [`Pending`] is then ready at once, or in sync
    /// mode once its group commit is durable.
    Here,
}

/// Queues an ad hoc statement (a one-statement procedure) where its plan routes it: the
/// partition its key pins, any partition (it reads only replicated tables, or inserts rows
/// keyed by the table's sequence), or all of them.
///
/// At [`Place::Here`] (the caller has no statement of its own in flight), a short statement
/// runs on this thread when its partition is free ([`Shared::try_inline`]), and a statement
/// over all partitions when they all are ([`Shared::submit_mp_at`]).
pub(crate) fn submit_statement(
    shared: &Shared,
    proc: Arc<Procedure>,
    params: Vec<Value>,
    reply: Reply,
    place: Place,
) -> Result<()> {
    let route = {
        // (A key read from text as a timestamptz is read in the statement's zone.)
        let _zone = permafrost_types::zone::SessionZone::set(reply.zone().as_ref());
        proc.statements[0].route(&params, shared.config.partitions)
    };
    let single = match shared.sequence_route(&proc.statements[0], route, &[]) {
        Route::Single(p) => Some(p),
        Route::Any => Some(shared.any_partition()),
        Route::All => None,
    };
    if single.is_none() {
        shared.note_crossing(&proc.statements[0], &params);
    }
    match single {
        Some(p) => submit_invocation(shared, proc, params, reply, p, place),
        None => {
            let work = MpWork::Call {
                proc,
                params: params.into(),
                restarts: 0,
                replay: None,
            };
            shared.submit_mp_at(work, shared.all_partitions(), reply, place)
        }
    }
}

/// Hands a call to partition `p`: run on this thread when `place` allows it and the
/// partition is free ([`Shared::try_inline`]), else queued. Besides short calls, ad hoc
/// statements and interactive transactions' probes and commits may run here: they stop
/// past `INLINE_SLICE` and are then queued (cell.rs).
pub(crate) fn submit_invocation(
    shared: &Shared,
    proc: Arc<Procedure>,
    params: Vec<Value>,
    reply: Reply,
    p: u32,
    place: Place,
) -> Result<()> {
    let here = place == Place::Here && (proc.short || proc.adhoc);
    let inv = Invocation {
        proc,
        params,
        reply,
        restarts: 0,
        replay: None,
        drawn: Vec::new(),
    };
    let inv = match here {
        true => match shared.try_inline(p, inv) {
            Ok(()) => return Ok(()),
            Err(inv) => inv,
        },
        false => inv,
    };
    shared.send(p, Msg::Batch(vec![inv])).map_err(|_| Error::Shutdown)
}

impl Shared {
    /// Enqueues a multi-partition transaction at every partition in `parts`, in the global
    /// multi-partition order.
    pub(crate) fn submit_mp(&self, work: MpWork, parts: Vec<u32>, reply: Reply) -> Result<()> {
        self.enqueue_mp(MpTxn::new(work, parts, reply))
    }

    /// [`Shared::submit_mp`] of a read-only statement that runs in a forked reader reading
    /// the evicted tuples where they lie ([`MpTxn::reads_in_place`]), doing as `fallback`
    /// says when no reader may start.
    pub(crate) fn submit_mp_reading_in_place(
        &self,
        work: MpWork,
        parts: Vec<u32>,
        reply: Reply,
        fallback: InPlace,
    ) -> Result<()> {
        let t = MpTxn::new(work, parts, reply);
        if let Ok(mut f) = t.reads_in_place.lock() {
            *f = Some(fallback);
        }
        self.enqueue_mp(t)
    }

    /// [`Shared::submit_mp`], but at [`Place::Here`] (the caller has nothing of its own in
    /// flight) an ad hoc statement or interactive transaction runs on this thread when
    /// every partition it involves is free (`cell::run_mp`).
    pub(crate) fn submit_mp_at(&self, work: MpWork, parts: Vec<u32>, reply: Reply, place: Place) -> Result<()> {
        let t = MpTxn::new(work, parts, reply);
        if let Some(cells) = self.cells().filter(|_| place == Place::Here)
            && run_mp(cells, &t)
        {
            return Ok(());
        }
        self.enqueue_mp(t)
    }

    /// Gives `t` its place in the global multi-partition order and enqueues it at each of
    /// its partitions, under the `mp_order` lock.
    fn enqueue_mp(&self, mut t: MpTxn) -> Result<()> {
        let mut next = self
            .mp_order
            .lock()
            .map_err(|_| Error::Internal("mp order lock poisoned".into()))?;
        t.ts = *next;
        *next += 1;
        // Participants that have handled all they were sent take part without their
        // threads (fence.rs); not when replaying the log, whose calls keep their queues'
        // order through held-back replays.
        let fenceable = matches!(&t.work, MpWork::Call { replay: None, .. }) && self.inline.get().is_some();
        if fenceable {
            let mut fences = Vec::new();
            for i in 1..t.parts.len() {
                let queue = &self.queues[t.parts[i] as usize];
                t.fenced[i] = queue.fence();
                if t.fenced[i] {
                    fences.push(queue.clone());
                }
            }
            // Lifted by its coordinator, or when it is dropped unrun.
            t.fences = std::sync::Mutex::new(fences);
        }
        let t = Arc::new(t);
        for (i, &p) in t.parts.iter().enumerate() {
            if !t.fenced[i] {
                self.send(p, Msg::Mp(t.clone())).map_err(|_| Error::Shutdown)?;
            }
        }
        Ok(())
    }

    /// A partition for a statement that any partition can run (round robin).
    /// `route`, the plan's route of `p`, or for an INSERT whose rows' partition key
    /// their table's sequence draws ([`permafrost_sql::Prepared::sequence_key`]), the
    /// partitions of the values it `drawn` when it first ran (a transaction block's
    /// statement run again), else of the sequence's next values.
    pub(crate) fn sequence_route(&self, p: &permafrost_sql::Prepared, route: Route, drawn: &[(u32, i64)]) -> Route {
        let (Route::Any, Some((schema, rows))) = (route, p.sequence_key()) else {
            return route;
        };
        let n = self.config.partitions;
        if drawn.is_empty() {
            return self.sequences.route_next(schema, rows, n);
        }
        let mine = drawn.iter().filter(|d| d.0 == schema.id).map(|d| d.1);
        permafrost_sql::exec::sequences::route_values(schema, mine.clone(), mine.count(), n)
    }

    pub(crate) fn any_partition(&self) -> u32 {
        self.any_turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % self.config.partitions.max(1)
    }

    pub(crate) fn all_partitions(&self) -> Vec<u32> {
        (0..self.config.partitions).collect()
    }
}
