//! Long statements moved off their partitions, into a forked copy-on-write image.
//!
//! A partition runs one transaction at a time, so a statement that runs for seconds (a big
//! join, an aggregate over a large table, an UPDATE of every row) would keep every other
//! client of its partitions waiting that long. An ad hoc statement outside a transaction
//! block therefore gets a *slice* ([`Config::read_slice`](crate::Config::read_slice),
//! 50 ms by default): the statement looks at its deadline every
//! [`permafrost_sql::exec::INTERRUPT_EVERY`] tuples (or rows it writes), and once it is
//! past, it stops ([`SqlError::SliceOver`]) and is rolled back. Then, still holding its
//! partitions, the executor forks the process. The child is a copy-on-write image of the
//! partitions as they are at that point of the serial order; it runs the statement again
//! from the start over that image, to its end, and writes what it did to a pipe. The
//! parent releases the partitions at once.
//!
//! - **A read** ([`move_off`]) is answered at once with an empty result whose rest
//!   ([`ForkedRead`], a [`MoreRows`]) reads the child's rows from the pipe, so they stream
//!   to the client while the partitions serve others. It reads one committed state, at the
//!   point where it moved: serializable (HyPer's virtual-memory snapshots, Kemper and
//!   Neumann 2011, used for one query).
//! - **A write** ([`move_write`]): the child sends its changes (each insert, update, delete
//!   and sequence step, `PartitionStore::changes`) and its result; a thread of its own
//!   waits for them, then submits the statement again to the same partitions, as a
//!   procedure ([`applying`]) that applies those changes if no table the statement uses
//!   changed at those partitions since the fork (`Table::generation`): the statement reads
//!   nothing else, so running it there and then would make the same changes. If one did
//!   change, it runs the statement there, to its end, as usual. Either way the command log
//!   records the statement, with the timestamp and seed it first ran with
//!   (`Procedure::fixed`), so replay makes the same rows. The answer waits for that step.
//!
//! Which statements move (decided before the statement runs, `TxnInfo::read_slice` and
//! `may_move` in partition/txn.rs):
//! - only plain ad hoc statements (`Procedure::movable`) outside blocks, whose caller
//!   waits on a one-shot answer; never a procedure, a COPY, a replayed call or an
//!   interactive transaction's statement (they must change, or be checked against, the
//!   live partitions as they go);
//! - only when none of the tables the statement uses has evicted tuples at its partitions
//!   (a scan over evicted data streams anyway, scan.rs), with one exception:
//! - a read-only statement that reached more evicted tuples than its partitions may bring
//!   back at once (more than half a partition's share of the budget:
//!   `AntiCacheError::TooLarge`, 54000 before), or many of them
//!   (`MOVE_OVER_EVICTED_TUPLES`), or that kept reaching evicted data
//!   (`MOVE_AFTER_RESTARTS`, both in partition/txn.rs), moves off when its pre-pass ends
//!   ([`move_off_reading`], from partition/retrieval.rs at one partition, partition/mp.rs
//!   at several): its child keeps the block files' descriptors and reads each evicted
//!   tuple the statement meets from its block where it lies (block_rows.rs: nothing is
//!   merged, into the partition or the image). The partitions' memory stays as it was;
//!   what the child reads is its own, within its limit below;
//! - not a write once the command log has failed;
//! - only calls that run on a partition thread (never short calls run inline by a
//!   connection thread), so the thread that forked outlives the child, which dies with it
//!   (`PR_SET_PDEATHSIG`);
//! - at most [`MAX_MOVED`] at once; past that a long read runs to its end in place, and a
//!   long write is queued again to run to its end.
//!
//! The child shares nothing with the parent's threads: it runs the statement on its one
//! thread with the memory limit of one statement (`work_mem`, 54000 past it), writes
//! frames and leaves with `_exit`. Its memory is the pages the parent changes while it
//! runs (copy-on-write), as for the snapshot writer, and what it builds, which may map at
//! most `work_mem` plus 64 MiB beyond the image (`limit_memory`): a child that runs out
//! of that dies or fails alone, never the server, and a write then runs again in place.
//! A cancel, a statement timeout or a client that goes away kills it (`SIGKILL`), and
//! the parent reaps it. A write's changes are held until they apply, up to `work_mem`
//! bytes; past that it runs again in place.
//!
//! The pipe carries frames (docs/format.md, "Forked reader frames"): a tag byte, a u32
//! length, the payload. Rows: each row's length and its values in the result buffer's
//! encoding, checked before use ([`Rows::push_encoded_row`]); Changes; End; Error: its
//! SQLSTATE and message. Anything else, or the pipe ending before End, is an error for the
//! client.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use permafrost_anticache::view::BlockView;
use permafrost_sql::exec::EvictedRows;
use permafrost_sql::{Rows, SqlError};
use permafrost_storage::PartitionStore;
use permafrost_types::Value;

use self::reader::{FRAME_BYTES, FRAME_CHANGES, FRAME_END, FRAME_ERROR, FRAME_ROWS, ForkedRead, Turn};
use crate::block_rows::BlockRows;
use crate::child::{Side, fork_with_pipe};
use crate::partition::router::Place;
use crate::partition::txn::{Outcome, TxnInfo, run_body, run_txn};
use crate::procedure::{ProcError, Procedure, Replayed};
use crate::reply::StopFlag;
use crate::shared::Shared;
use permafrost_storage::TableId;

mod reader;

/// Statements that may run moved off their partitions at once.
pub(crate) const MAX_MOVED: usize = 4;

/// Takes one of the [`MAX_MOVED`] turns; false if all are taken.
pub(crate) fn take_turn(shared: &Shared) -> bool {
    shared
        .moved_running
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < MAX_MOVED).then_some(n + 1)
        })
        .is_ok()
}

/// A read that ran past its slice, holding `stores`: moved to a forked reader if a turn is
/// free (forked.rs), else run again in place to its end (no slice, so it cannot stop for
/// that reason again; `interrupted` stops it as it stopped the first run).
pub(crate) fn move_read(
    shared: &Arc<crate::shared::Shared>,
    (proc, params): (&Arc<Procedure>, &[permafrost_types::Value]),
    stores: &mut [&mut PartitionStore],
    evicted: &mut permafrost_sql::EvictedRefs,
    info: &TxnInfo,
    (stop, interrupted): (Option<crate::reply::StopFlag>, &dyn Fn() -> bool),
    stats: &crate::counters::PartitionStats,
) -> crate::error::Result<Rows> {
    if take_turn(shared) {
        stats.reads_moved.fetch_add(1, Ordering::Relaxed);
        return move_off(shared.clone(), proc, params, stores, info, stop);
    }
    let info = TxnInfo {
        read_slice: None,
        inline_slice: None,
        ..info.clone()
    };
    // (A statement that draws sequence values never moves: `may_move`.)
    match run_txn(
        proc,
        params,
        stores,
        evicted,
        &info,
        &shared.sequences,
        interrupted,
        &shared.statement_pool,
        &mut Default::default(),
    ) {
        Outcome::Done(r, _) => r,
        // Not without a slice; and the statement's tables had no evicted tuples.
        _ => Err(crate::error::Error::Internal(
            "a long read run in place stopped unexpectedly".into(),
        )),
    }
}

/// Moves a read-only statement that ran past its slice off its partitions: forks the
/// reader (which runs it again over its image of `stores`) and returns the statement's
/// result, empty, with the reader as its rest. Call while still holding `stores`, right
/// after the statement stopped, and before anything else runs at them. The caller has
/// taken a turn ([`take_turn`]); it is given back when the reader ends.
pub(crate) fn move_off(
    shared: Arc<Shared>,
    proc: &Procedure,
    params: &[Value],
    stores: &mut [&mut PartitionStore],
    info: &TxnInfo,
    stop: Option<StopFlag>,
) -> crate::error::Result<Rows> {
    forked_rows(Turn(shared), (proc, params), stores, Vec::new(), info, stop)
}

/// The statement's result, empty, with its forked reader as its rest (the reader forked
/// here over `stores`, reading the evicted tuples it meets from the blocks `views`),
/// holding `turn` until it ends, and the scan holds of the partitions `views` are of
/// (their blocks keep their bytes while it reads them: scan.rs).
fn forked_rows(
    turn: Turn,
    (proc, params): (&Procedure, &[Value]),
    stores: &mut [&mut PartitionStore],
    views: Vec<(u32, BlockView)>,
    info: &TxnInfo,
    stop: Option<StopFlag>,
) -> crate::error::Result<Rows> {
    let columns = proc.statements[0].columns().clone();
    let counted_at = match (views.first(), stores.first()) {
        (Some(_), Some(store)) => turn.0.stats.get(store.partition() as usize).cloned(),
        _ => None,
    };
    let holds = crate::scan::ScanHolds::enter(&turn.0, views.iter().map(|(p, _)| *p))?;
    let (pid, pipe) = fork_child(proc, params, stores, views, info)?;
    let mut rows = Rows::empty(columns.clone());
    rows.set_rest(Box::new(ForkedRead {
        pid: Some(pid),
        pipe,
        columns,
        stop,
        done: false,
        affected: 0,
        died: None,
        limit: info.work_mem,
        counted_at,
        _holds: holds,
        _turn: turn,
    }));
    Ok(rows)
}

/// Moves a read-only statement that reached more evicted tuples than its partitions may
/// bring back at once (`AntiCacheError::TooLarge`), or kept reaching evicted data, off
/// `stores` (held by the caller, between transactions): its forked reader runs it over
/// its image of them, reading the evicted tuples it meets from the blocks `views` (each
/// partition's, [`AntiCache::block_view`], taken while it is held) where they lie
/// (block_rows.rs), and streams its rows; nothing is merged, and the partitions' memory
/// stays as it is. `None` when every turn is taken ([`take_turn`]).
pub(crate) fn move_off_reading(
    shared: &Arc<Shared>,
    (proc, params): (&Procedure, &[Value]),
    stores: &mut [&mut PartitionStore],
    views: Vec<(u32, BlockView)>,
    info: &TxnInfo,
    stop: Option<StopFlag>,
) -> Option<crate::error::Result<Rows>> {
    if !take_turn(shared) {
        return None;
    }
    let turn = Turn(shared.clone());
    Some(forked_rows(turn, (proc, params), stores, views, info, stop))
}

/// Forks the child that runs the statement over its image of `stores` and writes what it
/// did to the pipe whose read end is returned. With `views` (of the stores' blocks), the
/// child reads the evicted tuples the statement meets where they lie.
fn fork_child(
    proc: &Procedure,
    params: &[Value],
    stores: &mut [&mut PartitionStore],
    views: Vec<(u32, BlockView)>,
    info: &TxnInfo,
) -> crate::error::Result<(libc::pid_t, std::fs::File)> {
    // The child reads these partitions as they are now: a reader whose reads are not
    // described (`permafrost_storage::Recent`: no COMMIT takes a place before it).
    for s in stores.iter_mut() {
        s.mark_read();
    }
    // SAFETY: the child reads only the stores this thread holds (no other thread can
    // change them until it releases them) and the statement's own plan and parameters; it
    // takes no lock another thread may hold, writes only its pipe and leaves with _exit,
    // running no destructor.
    // A reader that brings evicted tuples back reads the block file through the
    // descriptor its anti-cache holds.
    let keep: Vec<libc::c_int> = views.iter().filter_map(|(_, v)| v.file().raw_fd()).collect();
    let (pid, read) = match unsafe { fork_with_pipe("a reader", &keep)? } {
        Side::Child(fd) => {
            let code = run_child(proc, params, stores, views, info, fd);
            // SAFETY: leaving without running destructors (see above).
            unsafe { libc::_exit(code) };
        }
        Side::Parent { pid, read } => (pid, read),
    };
    // SAFETY: the read end is ours alone from here.
    let pipe = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(read) };
    Ok((pid, pipe))
}

/// Moves a write that ran past its slice (and was rolled back) off its partitions: its
/// child runs it over the image and sends its changes and result; a thread of its own
/// waits for them and then submits the statement again to `parts` as a procedure that
/// applies those changes if no table the statement uses changed at its partitions since
/// the fork ([`applying`]), and otherwise runs it there as usual. The answer goes to
/// `reply` from that procedure. With every turn taken, the statement is submitted again
/// at once, to run to its end in place. Call while holding `stores`, before anything else
/// runs at them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn move_write(
    shared: &Arc<Shared>,
    proc: &Arc<Procedure>,
    params: Arc<[Value]>,
    stores: &mut [&mut PartitionStore],
    info: &TxnInfo,
    parts: Vec<u32>,
    reply: crate::reply::Reply,
    stats: &crate::counters::PartitionStats,
) {
    let fixed = Replayed {
        now: proc.fixed_now().unwrap_or(info.now),
        seed: info.seed,
        zone: info.zone.clone(),
        draws: crate::procedure::Given::Nothing,
    };
    if !take_turn(shared) {
        resubmit(shared, Arc::new(in_place(proc, fixed)), params, parts, reply);
        return;
    }
    let turn = Turn(shared.clone());
    let tables = proc.statements[0].tables();
    let generations: Vec<(u32, TableId, u64)> = stores
        .iter()
        .flat_map(|s| {
            let p = s.partition();
            tables
                .iter()
                .filter_map(move |&t| s.table(t).map(|tb| (p, t, tb.generation())))
        })
        .collect();
    let (pid, pipe) = match fork_child(proc, &params, stores, Vec::new(), info) {
        Ok(x) => x,
        Err(e) => {
            crate::reply::Outbox::send_now(reply, Err(e));
            return;
        }
    };
    stats.writes_moved.fetch_add(1, Ordering::Relaxed);
    let reader = ForkedRead {
        pid: Some(pid),
        pipe,
        columns: proc.statements[0].columns().clone(),
        stop: None,
        done: false,
        affected: 0,
        died: None,
        limit: info.work_mem,
        counted_at: None,
        _holds: crate::scan::ScanHolds::default(),
        _turn: turn,
    };
    let job = MovedWrite {
        shared: shared.clone(),
        proc: proc.clone(),
        params,
        parts,
        reply,
        fixed,
        generations,
        limit: info.work_mem,
    };
    let spawned = std::thread::Builder::new()
        .name("permafrost-moved".into())
        .spawn(move || job.finish(reader));
    if let Err(e) = spawned {
        // The job (and its reply) went with the closure: the caller learns the statement
        // had no answer.
        eprintln!("permafrost: cannot start a thread for a moved write: {e}");
    }
}

/// The statement as a procedure that runs it in place, to its end, with `fixed`'s
/// timestamp and seed (a moved write that cannot apply what its child did).
fn in_place(proc: &Procedure, fixed: Replayed) -> Procedure {
    proc.pinned(fixed, |ctx, p| ctx.execute(0, p))
}

/// A moved write waiting for its child ([`move_write`]).
struct MovedWrite {
    shared: Arc<Shared>,
    proc: Arc<Procedure>,
    params: Arc<[Value]>,
    parts: Vec<u32>,
    reply: crate::reply::Reply,
    fixed: Replayed,
    generations: Vec<(u32, TableId, u64)>,
    /// The bytes of changes it may hold (`work_mem`): past them it runs again in place.
    limit: usize,
}

impl MovedWrite {
    /// Reads the child's changes and result, then submits what applies them.
    fn finish(self, mut reader: ForkedRead) {
        let MovedWrite {
            shared,
            proc,
            params,
            parts,
            reply,
            fixed,
            generations,
            limit,
        } = self;
        let mut changes: Vec<(u32, Vec<permafrost_storage::Change>)> = Vec::new();
        let mut rows = Rows::empty(reader.columns.clone());
        let mut held = 0usize;
        let mut reservation = permafrost_sql::workmem::Reservation::default();
        let outcome: Result<bool, SqlError> = (|| loop {
            let (tag, payload) = reader.read_frame(&|| reply.is_closed())?;
            if tag == FRAME_CHANGES {
                let Some(c) = read_changes(&payload) else {
                    return Err(reader.broken("a change is malformed"));
                };
                // The changes are held until they apply: within one statement's memory
                // and drawn from the pool running statements share; past either, the
                // statement runs again in place instead.
                held += c.1.iter().map(change_size).sum::<usize>();
                if held > limit || reservation.cover(held, Some(&shared.statement_pool)).is_err() {
                    reader.reap(true);
                    return Ok(false);
                }
                changes.push(c);
                continue;
            }
            match reader.result_frame(tag, &payload)? {
                Some(more) => rows.append(&more),
                None => return Ok(true),
            }
        })();
        rows.affected = reader.affected;
        let died = reader.died.is_some();
        drop(reader);
        let resources = || {
            if let Some(s) = shared.stats.get(parts[0] as usize) {
                s.moved_writes_resources.fetch_add(1, Ordering::Relaxed);
            }
        };
        let pinned = match outcome {
            // A child that died without its result, or failed for want of resources (the
            // memory it may map, `limit_memory`, or another internal failure): run it in
            // place instead, as if it had not moved. Its other errors (a duplicate key, an
            // overflow, 54000 past `work_mem` ...) are the statement's own: answered.
            Err(e) if died || e.sqlstate() == "XX000" || e.sqlstate().starts_with("53") => {
                resources();
                in_place(&proc, fixed)
            }
            Err(e) => {
                crate::reply::Outbox::send_now(reply, Err(crate::error::Error::Sql(e)));
                return;
            }
            Ok(false) => {
                resources();
                in_place(&proc, fixed)
            }
            Ok(true) => {
                let moved = Arc::new(Moved {
                    generations,
                    changes,
                    rows,
                    _memory: reservation,
                });
                let stats = shared.stats.clone();
                proc.pinned(fixed, move |ctx, p| applying(ctx, p, &moved, &stats))
            }
        };
        resubmit(&shared, Arc::new(pinned), params, parts, reply);
    }
}

/// About the bytes a change holds.
fn change_size(c: &permafrost_storage::Change) -> usize {
    use permafrost_storage::Change;
    std::mem::size_of::<Change>()
        + match c {
            Change::Insert { values, .. } | Change::Update { values, .. } => {
                values.iter().map(permafrost_sql::exec::value_size).sum()
            }
            _ => 0,
        }
}

/// What a moved write's child did, and what it found ([`applying`]).
struct Moved {
    /// (partition, table, generation) of every table the statement uses, at the fork.
    generations: Vec<(u32, TableId, u64)>,
    /// Its changes, per partition.
    changes: Vec<(u32, Vec<permafrost_storage::Change>)>,
    /// Its result (a row count, RETURNING rows).
    rows: Rows,
    /// What the changes hold of the statements' memory pool, until they are dropped.
    _memory: permafrost_sql::workmem::Reservation,
}

/// The body that applies a moved write: its changes, if none of the tables it uses changed
/// at its partitions since the fork (then running it now gives the same changes and
/// result: it reads nothing else), else the statement itself, run here to its end.
fn applying(
    ctx: &mut crate::procedure::ProcContext<'_, '_, '_>,
    params: &[Value],
    moved: &Moved,
    stats: &[Arc<crate::counters::PartitionStats>],
) -> Result<Rows, ProcError> {
    let Moved {
        generations,
        changes,
        rows,
        ..
    } = moved;
    let stores = &mut *ctx.env.stores;
    let unchanged = generations.iter().all(|&(p, t, g)| {
        stores
            .iter()
            .find(|s| s.partition() == p)
            .and_then(|s| s.table(t))
            .is_some_and(|tb| tb.generation() == g)
    });
    if !unchanged {
        if let Some(s) = stats.get(stores.first().map_or(0, |s| s.partition()) as usize) {
            s.moved_writes_run_again.fetch_add(1, Ordering::Relaxed);
        }
        return ctx.execute(0, params);
    }
    for (p, list) in changes {
        let Some(s) = stores.iter_mut().find(|s| s.partition() == *p) else {
            return Err(ProcError::Sql(SqlError::relayed(
                "XX000",
                format!("a moved write changed partition {p}, which it does not hold"),
            )));
        };
        s.apply(list).map_err(|e| ProcError::Sql(SqlError::Storage(e)))?;
    }
    Ok(rows.clone())
}

/// Submits a statement again to the partitions it ran at: one, or several in the
/// multi-partition order.
fn resubmit(
    shared: &Arc<Shared>,
    proc: Arc<Procedure>,
    params: Arc<[Value]>,
    parts: Vec<u32>,
    reply: crate::reply::Reply,
) {
    let r = match parts[..] {
        [p] => crate::partition::router::submit_invocation(shared, proc, params.to_vec(), reply, p, Place::Partition),
        _ => {
            let work = crate::partition::msg::MpWork::Call {
                proc,
                params,
                restarts: 0,
                replay: None,
            };
            shared.submit_mp(work, parts, reply)
        }
    };
    // Fails only when shutting down; the reply goes with the queue then.
    let _ = r;
}

/// In the child: runs the statement to its end over the image and writes its result to
/// `fd`. Returns the exit code.
fn run_child(
    proc: &Procedure,
    params: &[Value],
    stores: &mut [&mut PartitionStore],
    views: Vec<(u32, BlockView)>,
    info: &TxnInfo,
    fd: libc::c_int,
) -> libc::c_int {
    crate::child::limit_memory(info.work_mem);
    let mut evicted = permafrost_sql::EvictedRefs::new();
    let info = TxnInfo {
        read_slice: None,
        inline_slice: None,
        sampled: false,
        defer_scans: false,
        ..info.clone()
    };
    // The evicted tuples it meets are read from their blocks where they lie
    // (block_rows.rs), never brought back.
    let in_place = (!views.is_empty()).then(|| BlockRows::new(views));
    let (result, _, _, _) = run_body(
        proc,
        params,
        stores,
        &mut evicted,
        &info,
        // Never drawn from: a statement that may draw is not moved (partition/txn.rs).
        &permafrost_sql::exec::sequences::Sequences::default(),
        &permafrost_sql::exec::never_interrupted,
        None,
        in_place.as_ref().map(|r| r as &dyn EvictedRows),
    );
    let read = in_place.as_ref().map_or(0, BlockRows::tuples_read);
    let result = match result {
        // (A statement over evicted data moves with its blocks; one that did not, found
        // some since: the image cannot bring it back.)
        _ if !evicted.is_empty() => Err(("XX000", "a moved read reached evicted data".to_string())),
        Ok(Ok(rows)) => Ok(rows),
        Ok(Err(ProcError::Sql(e))) => Err((e.sqlstate(), e.to_string())),
        Ok(Err(ProcError::Abort(m))) => Err(("P0001", m)),
        Err(_) => Err(("XX000", "the forked reader panicked".to_string())),
    };
    let error = |code: &str, message: &str| {
        let mut payload = code.as_bytes().to_vec();
        payload.extend_from_slice(message.as_bytes());
        write_frame(fd, FRAME_ERROR, &payload)
    };
    let ok = match result {
        Ok(rows) if !proc.statements[0].is_read_only() => match write_changes(fd, stores) {
            Ok(true) => write_rows(fd, &rows, read),
            Ok(false) => false,
            Err(e) => error(e.sqlstate(), &e.to_string()),
        },
        Ok(rows) => write_rows(fd, &rows, read),
        Err((code, message)) => error(code, &message),
    };
    if ok { 0 } else { 1 }
}

/// Writes each store's changes (a write's) as Changes frames: the partition (u32 LE), then
/// changes, each a kind (1 insert, 2 update, 3 delete, 4 sequence), the table (u32 LE), and
/// for an update or delete its target (0 and a slot, or 1 and the transaction's insert
/// number: u8, u32 LE), for an insert or update the column count (u16 LE) and the row (u32
/// LE length and the values in the result buffer's encoding), for a sequence its last value
/// (i64 LE). `Ok(false)`: the reader went away.
fn write_changes(fd: libc::c_int, stores: &[&mut PartitionStore]) -> Result<bool, permafrost_storage::StorageError> {
    use permafrost_storage::{Change, Target};
    for s in stores {
        let changes = s.changes()?;
        let mut frame = Vec::with_capacity(FRAME_BYTES + 1024);
        frame.extend_from_slice(&s.partition().to_le_bytes());
        let row = |frame: &mut Vec<u8>, values: &[Value]| {
            frame.extend_from_slice(&(values.len() as u16).to_le_bytes());
            let at = frame.len();
            frame.extend_from_slice(&[0; 4]);
            permafrost_sql::encode_row(values.iter().map(Value::as_ref), frame);
            let len = (frame.len() - at - 4) as u32;
            frame[at..at + 4].copy_from_slice(&len.to_le_bytes());
        };
        let target = |frame: &mut Vec<u8>, t: &Target| {
            let (k, n) = match *t {
                Target::Slot(n) => (0u8, n),
                Target::Inserted(n) => (1u8, n),
            };
            frame.push(k);
            frame.extend_from_slice(&n.to_le_bytes());
        };
        for c in &changes {
            match c {
                Change::Insert { table, values } => {
                    frame.push(1);
                    frame.extend_from_slice(&table.to_le_bytes());
                    row(&mut frame, values);
                }
                Change::Update {
                    table,
                    target: t,
                    values,
                } => {
                    frame.push(2);
                    frame.extend_from_slice(&table.to_le_bytes());
                    target(&mut frame, t);
                    row(&mut frame, values);
                }
                Change::Delete { table, target: t } => {
                    frame.push(3);
                    frame.extend_from_slice(&table.to_le_bytes());
                    target(&mut frame, t);
                }
                Change::Sequence { table, last } => {
                    frame.push(4);
                    frame.extend_from_slice(&table.to_le_bytes());
                    frame.extend_from_slice(&last.to_le_bytes());
                }
            }
            if frame.len() >= FRAME_BYTES {
                if !write_frame(fd, FRAME_CHANGES, &frame) {
                    return Ok(false);
                }
                frame.clear();
                frame.extend_from_slice(&s.partition().to_le_bytes());
            }
        }
        if frame.len() > 4 && !write_frame(fd, FRAME_CHANGES, &frame) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Reads the changes of one Changes frame ([`write_changes`]); `None` if it is malformed.
fn read_changes(p: &[u8]) -> Option<(u32, Vec<permafrost_storage::Change>)> {
    use permafrost_durability::codec::Decoder;
    use permafrost_storage::{Change, Target};
    let target = |c: &mut Decoder<'_>| match (c.u8("target").ok()?, c.u32("target").ok()?) {
        (0, n) => Some(Target::Slot(n)),
        (1, n) => Some(Target::Inserted(n)),
        _ => None,
    };
    let row = |c: &mut Decoder<'_>| {
        let ncols = c.u16("column count").ok()? as usize;
        permafrost_sql::decode_row(c.bytes("row").ok()?, ncols)
    };
    let mut c = Decoder::new(p);
    let partition = c.u32("partition").ok()?;
    let mut out = Vec::new();
    while !c.is_done() {
        let kind = c.u8("change").ok()?;
        let table = c.u32("table").ok()?;
        out.push(match kind {
            1 => Change::Insert {
                table,
                values: row(&mut c)?,
            },
            2 => Change::Update {
                table,
                target: target(&mut c)?,
                values: row(&mut c)?,
            },
            3 => Change::Delete {
                table,
                target: target(&mut c)?,
            },
            4 => Change::Sequence {
                table,
                last: c.i64("sequence").ok()?,
            },
            _ => return None,
        });
    }
    Some((partition, out))
}

/// Writes `rows` as Rows frames, then End (with `read`, the evicted tuples read from their
/// blocks).
fn write_rows(fd: libc::c_int, rows: &Rows, read: u64) -> bool {
    let mut frame = Vec::with_capacity(FRAME_BYTES + 1024);
    let mut part = rows.clone();
    // A result that spilled past its working memory follows its first rows (read from
    // temporary files, batch by batch).
    let mut rest = part.take_rest();
    loop {
        for i in 0..part.len() {
            let row = part.encoded_row(i);
            frame.extend_from_slice(&(row.len() as u32).to_le_bytes());
            frame.extend_from_slice(row);
            if frame.len() >= FRAME_BYTES {
                if !write_frame(fd, FRAME_ROWS, &frame) {
                    return false;
                }
                frame.clear();
            }
        }
        match rest.as_mut().map(|r| r.next_rows()) {
            None | Some(Ok(None)) => break,
            Some(Ok(Some(more))) => part = more,
            Some(Err(e)) => {
                let mut payload = e.sqlstate().as_bytes().to_vec();
                payload.extend_from_slice(e.to_string().as_bytes());
                return write_frame(fd, FRAME_ERROR, &payload);
            }
        }
    }
    if !frame.is_empty() && !write_frame(fd, FRAME_ROWS, &frame) {
        return false;
    }
    let mut end = rows.affected.to_le_bytes().to_vec();
    end.extend_from_slice(&read.to_le_bytes());
    write_frame(fd, FRAME_END, &end)
}

fn write_frame(fd: libc::c_int, tag: u8, payload: &[u8]) -> bool {
    let Ok(len) = u32::try_from(payload.len()) else {
        return false;
    };
    let mut head = [0u8; 5];
    head[0] = tag;
    head[1..].copy_from_slice(&len.to_le_bytes());
    write_all(fd, &head) && write_all(fd, payload)
}

fn write_all(fd: libc::c_int, mut b: &[u8]) -> bool {
    while !b.is_empty() {
        // SAFETY: writing a live buffer to our own descriptor.
        let n = unsafe { libc::write(fd, b.as_ptr() as *const libc::c_void, b.len()) };
        if n > 0 {
            b = &b[n as usize..];
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        } else {
            // The reader went away (EPIPE): nobody waits for the rows.
            return false;
        }
    }
    true
}
