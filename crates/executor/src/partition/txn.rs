//! Running one transaction: the procedure body over the stores the transaction holds,
//! then commit, or roll back.

use std::panic::{AssertUnwindSafe, catch_unwind};

use std::sync::Arc;

use permafrost_sql::exec::sequences::{Draws, Sequences};
use permafrost_sql::workmem::MemoryPool;
use permafrost_sql::{Deferred, Env, EvictedRefs, Rows, SqlError};
use permafrost_storage::{PartitionStore, Placement};
use permafrost_types::Value;

use crate::error::{Error, Result};
use crate::procedure::{Given, ProcContext, ProcError, Procedure};

/// How a transaction ended.
pub(crate) enum Outcome {
    /// Committed (`Ok`) or rolled back with an error for the caller; whether the committed
    /// transaction changed anything (what the command log records).
    Done(Result<Rows>, bool),
    /// Rolled back: a table it uses changed since its statements were planned.
    SchemaChanged,
    /// Rolled back after a pre-pass: it reached the evicted tuples now in `evicted`.
    NeedsData,
    /// A read-only statement answered the rows of the tuples in memory; its evicted tuples
    /// are read afterwards, without bringing them back (scan.rs).
    Deferred(Rows, Box<Deferred>),
    /// A read-only statement ran past its read slice and stopped, changing nothing; the
    /// caller moves it off the partitions it still holds (forked.rs) and gives the turn
    /// it took back if that fails.
    SliceOver,
}

/// What one run of a transaction leaves for the next run of the same call when it does
/// not commit (it is rolled back to run again: past its slice on a caller's thread, for
/// evicted data, a schema change, room in memory).
#[derive(Debug, Default)]
pub(crate) struct Attempt {
    /// The sequence values it drew, by table in order. The next run takes them before it
    /// draws ([`crate::procedure::Given::Values`]), so that a client's INSERT that ran
    /// twice leaves no gap in its SERIAL column: before, a multi-row INSERT given back
    /// past `INLINE_SLICE` skipped every value its first run drew, and sysbench's prepare
    /// left 41 % of the ids it later reads absent.
    pub drawn: Vec<(u32, i64)>,
}

impl Attempt {
    /// What the next run of a call that drew `drawn` before takes first (nothing for a
    /// replayed record, which has its own).
    pub(crate) fn given(drawn: &[(u32, i64)]) -> Option<crate::procedure::Given> {
        (!drawn.is_empty()).then(|| crate::procedure::Given::Values(drawn.into()))
    }
}

/// What a transaction runs with besides its stores.
#[derive(Clone)]
pub(crate) struct TxnInfo {
    pub total_partitions: u32,
    pub sampled: bool,
    pub now: i64,
    pub txn_id: u64,
    /// The seed of the procedure's random numbers ([`ProcContext::random_u64`]).
    pub seed: u64,
    /// The memory one statement may hold for its result and intermediate rows
    /// ([`work_mem`]).
    pub work_mem: usize,
    /// Set when the command log has failed: a transaction that wrote is rolled back with
    /// this error instead of committing (it could never be made durable).
    pub writes_refused: Option<Error>,
    /// Whether a scan may leave its evicted tuples to be read afterwards
    /// ([`permafrost_sql::Env::defer_scans`]).
    pub defer_scans: bool,
    /// The read slice of a statement that may move off its partitions when it runs past
    /// it ([`crate::Config::read_slice`], forked.rs); `None` for callers that cannot take a
    /// moved read's streamed result (replay, batched sessions).
    pub read_slice: Option<std::time::Duration>,
    /// How long a transaction run on its caller's thread may hold its partitions
    /// (`cell::INLINE_SLICE`): past it, any statement stops with `SqlError::SliceOver`, and
    /// the transaction is rolled back and queued instead.
    pub inline_slice: Option<std::time::Duration>,
    /// Where the transaction's query may spill past its working memory
    /// ([`permafrost_sql::Env::spill`]; the partition's own copy of [`crate::Config::temp_dir`]):
    /// `None` for callers that cannot take a result whose rest follows it, and in blocks.
    pub spill: Option<Arc<std::path::Path>>,
    /// A query of an open interactive transaction (`StopFlag::in_block`): its COMMIT checks
    /// what it read, and notes it, so its own commit notes no read
    /// (`permafrost_storage::Placement::reads`).
    pub block_read: bool,
    /// The sequence values it takes before drawing (a replayed record's).
    pub given: crate::procedure::Given,
    /// The session whose sequence values its `currval()` and `lastval()` read, and where
    /// what it draws is noted (a client's statement).
    pub session: Option<Arc<permafrost_sql::exec::sequences::SessionSequences>>,
    /// The session TimeZone its statements run in (permafrost_types::zone), and its
    /// command-log record keeps; `None`: UTC.
    pub zone: Option<permafrost_types::zone::Zone>,
}

/// The error a write gets once the command log has failed (53100 for a full disk): the
/// change is not applied, reads go on, and the server must be restarted to write again,
/// since the transactions the failed write held took effect in memory only.
pub(crate) fn writes_refused(e: permafrost_durability::LogError) -> Error {
    Error::Log {
        sqlstate: e.sqlstate(),
        message: format!(
            "{e}; the database refuses writes until it is restarted (free space if the disk is full, then \
             restart: nothing acknowledged was lost); reads are answered meanwhile"
        ),
    }
}

/// The memory one statement may hold for its result and intermediate rows: a quarter of
/// the memory budget (at least 16 MiB). A statement that needs more fails with 54000
/// instead of taking the process past its budget; with a budget under 240 MiB that
/// includes reading back a row near the largest one accepted
/// (`permafrost_storage::table::MAX_ROW_BYTES`, 60 MiB) whole.
pub(crate) fn work_mem(memory_limit: u64) -> usize {
    usize::try_from(memory_limit / 4).unwrap_or(usize::MAX).max(16 << 20)
}

/// Runs a procedure over `stores` and rolls it back whatever happened, leaving the evicted
/// tuples it reached in `evicted`: a look-ahead pre-pass (recovery prefetches the blocks
/// of queued replayed calls with it). Its result is not used.
pub(crate) fn dry_run(
    proc: &Procedure,
    params: &[Value],
    stores: &mut [&mut PartitionStore],
    evicted: &mut EvictedRefs,
    info: &TxnInfo,
    sequences: &Sequences,
) {
    let _ = run_body(
        proc,
        params,
        stores,
        evicted,
        info,
        sequences,
        &permafrost_sql::exec::never_interrupted,
        None,
        None,
    );
    for s in stores.iter_mut() {
        s.rollback();
    }
}

/// Whether a statement about to run may be moved off its partitions when it runs past its
/// slice: see forked.rs's module docs. `stores` are the partitions the transaction holds.
fn may_move(proc: &Procedure, stores: &[&mut PartitionStore], info: &TxnInfo) -> bool {
    if !movable(proc) {
        return false;
    }
    if !proc.statements[0].is_read_only() && info.writes_refused.is_some() {
        return false;
    }
    let tables = proc.statements[0].tables();
    let inserts = proc.statements[0].kind() == permafrost_sql::StatementKind::Insert;
    let draws = |t: &permafrost_storage::Table| {
        inserts
            && t.schema().columns.iter().any(|c| {
                matches!(
                    c.default,
                    Some(
                        permafrost_storage::ColumnDefault::Sequence | permafrost_storage::ColumnDefault::NextVal { .. }
                    )
                )
            })
    };
    stores.iter().all(|s| {
        tables
            .iter()
            .all(|t| s.table(*t).is_none_or(|t| t.tombstones().is_empty() && !draws(t)))
    })
}

/// Whether a statement may run in a forked image at all: a plain ad hoc statement that is
/// not short, and takes no sequence value (nextval(), an insert into a table with a
/// sequence) nor reads its session's (currval()): a forked image cannot draw from the
/// database's counters, nor read the session.
fn movable(proc: &Procedure) -> bool {
    proc.movable
        && !proc.short
        && !proc.statements[0].draws_sequences()
        && !proc.statements[0].reads_session_sequences()
}

/// Restarts for evicted data after which a read that may move off its partitions
/// ([`may_move_over_evicted`]) and still reaches evicted tuples moves to a forked reader
/// that reads them where they lie, instead of going round again. Two rounds bring in a
/// join's outer tuples, then its inner ones; a read that needs a third brought back more
/// than stayed (what it brought back was evicted again before it ran: sysbench-tpcc's
/// consistency checks at a quarter of the data merged and evicted again 435,000 tuples in
/// four rounds of one query), which `max_restarts` rounds would not change.
pub(crate) const MOVE_AFTER_RESTARTS: u32 = 2;

/// Evicted tuples reached in one round beyond which a read that may move off its
/// partitions ([`may_move_over_evicted`]) reads them where they lie at once instead of
/// bringing them back: a read of that many cold tuples is a report, not the hot set, and
/// bringing them in evicts what the transactions use (sysbench-tpcc's consistency checks
/// at a quarter of the data: the rounds before the move grew the server by 50 MB in a
/// cgroup with 70 MB to spare, and two readers forked beside it were killed).
pub(crate) const MOVE_OVER_EVICTED_TUPLES: usize = 1024;

/// Whether a read that reached more evicted data than the partition may bring back at once
/// may run in a forked image that brings it back there instead (forked.rs,
/// [`crate::forked::move_off_reading`]).
pub(crate) fn may_move_over_evicted(proc: &Procedure) -> bool {
    movable(proc) && proc.statements[0].is_read_only()
}

/// What [`run_body`] gives: the body's result (a panic caught), a scan left for later, how
/// its commit is to be noted, and the sequence values it drew when its rows do not keep
/// them (it failed).
pub(crate) type BodyRun = (
    std::thread::Result<std::result::Result<Rows, ProcError>>,
    Option<Box<Deferred>>,
    Placement,
    Vec<(u32, i64)>,
);

/// Runs the procedure's body (panics caught), leaving the evicted tuples it reached in
/// `evicted`; commits nothing. Its statements' memory past their first step comes from
/// `pool`. A statement that may move off its partitions ([`may_move`]) gets
/// its read slice. With `evicted_rows` (a forked reader's), the evicted tuples its
/// statements meet are read from their blocks instead (`Env::evicted_rows`). Also returns how its commit is to be noted ([`ProcContext::placement`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_body(
    proc: &Procedure,
    params: &[Value],
    stores: &mut [&mut PartitionStore],
    evicted: &mut EvictedRefs,
    info: &TxnInfo,
    sequences: &Sequences,
    interrupted: &dyn Fn() -> bool,
    pool: Option<&Arc<MemoryPool>>,
    evicted_rows: Option<&dyn permafrost_sql::exec::EvictedRows>,
) -> BodyRun {
    evicted.clear();
    let _zone = permafrost_types::zone::SessionZone::set(info.zone.as_ref());
    let deadline = match info.read_slice {
        Some(slice) if may_move(proc, stores, info) => Some(std::time::Instant::now() + slice),
        _ => info.inline_slice.map(|slice| std::time::Instant::now() + slice),
    };
    let mut draws = match &info.given {
        Given::Values(v) => Draws::replaying(sequences, v),
        Given::Legacy => Draws::legacy(sequences),
        Given::Nothing => Draws::live(sequences),
    };
    draws.session = info.session.clone();
    let draws = std::cell::RefCell::new(draws);
    let mut env = Env {
        stores,
        total_partitions: info.total_partitions,
        sampled: info.sampled,
        now: proc.fixed_now().unwrap_or(info.now),
        evicted,
        interrupted,
        work_mem: info.work_mem,
        spill: if proc.defers_scans() && !proc.is_probe() {
            info.spill.clone()
        } else {
            None
        },
        defer_scans: info.defer_scans && proc.defers_scans(),
        deferred: None,
        pool,
        deadline,
        draws: &draws,
        sequence_home: proc.interactive.as_ref().and_then(|i| i.sequence_home),
        undone: proc.is_probe(),
        analyze: None,
        deferred_fk: Vec::new(),
        random: Default::default(),
        evicted_rows,
    };
    // What the statements' random states derive from: the seed and timestamp the
    // transaction's log record keeps (a moved statement's fixed ones), so that replay
    // draws the same values; the timestamp keeps runs after a restart apart.
    let seed = proc.fixed.as_ref().map_or(info.seed, |f| f.seed);
    let random_seed = permafrost_sql::splitmix64(seed ^ (env.now as u64).rotate_left(32));
    let mut ctx = ProcContext {
        env: &mut env,
        statements: &proc.statements,
        random_seed,
        executed: 0,
        base_seed: random_seed,
        txn_id: info.txn_id,
        rng: info.seed,
        placement: Placement::default(),
    };
    let r = catch_unwind(AssertUnwindSafe(|| {
        let r = (proc.body())(&mut ctx, params);
        // The foreign keys checked when the transaction ends (a probe's never ends).
        match r {
            Ok(rows) if !proc.is_probe() => {
                let pending = std::mem::take(&mut ctx.env.deferred_fk);
                permafrost_sql::exec::foreign::check_deferred(ctx.env.stores, ctx.env.total_partitions, pending)
                    .map(|()| rows)
                    .map_err(ProcError::Sql)
            }
            other => other,
        }
    }));
    let placement = std::mem::take(&mut ctx.placement);
    let r = r.map(|r| r.and_then(|rows| took_sequences(&mut env, rows, proc.is_probe())));
    // What a body that ended without its rows drew (its rows keep them otherwise).
    let left = std::mem::take(&mut draws.borrow_mut().taken);
    (r, env.deferred.take(), placement, left)
}

/// After a body that ran to its end: the sequence values it took go with its rows (its
/// command-log record keeps them; a transaction block keeps a probe's), and the first
/// partition it holds notes the highest per table, so that a snapshot keeps them.
fn took_sequences(env: &mut Env<'_, '_>, mut rows: Rows, probe: bool) -> std::result::Result<Rows, ProcError> {
    let mut draws = env.draws.borrow_mut();
    if draws.taken.is_empty() {
        return Ok(rows);
    }
    // What the client saw, as PostgreSQL's currval() has it, whether or not it commits.
    draws.note_session();
    if let Some(store) = env.stores.first_mut() {
        // (A sequence of its own, CREATE SEQUENCE's, has no table: the snapshot reads its
        // counter.)
        for (table, v) in draws.highest() {
            if store.table(table).is_some() {
                store.note_sequence(table, v).map_err(|e| ProcError::Sql(e.into()))?;
            }
        }
    }
    rows.draws = std::mem::take(&mut draws.taken);
    draws.called.clear();
    if probe {
        // What its last statement, the one probed, took (the block keeps them).
        rows.draws.drain(..draws.statement_start.min(rows.draws.len()));
    }
    Ok(rows)
}

/// Runs a procedure as one transaction over `stores`, then commits or rolls back every
/// store. Panics in the body are caught and fail the transaction. If the body reached
/// evicted tuples (they are left in `evicted`), whatever it did is rolled back, since it
/// ran without them: that run was the pre-pass. `interrupted` tells its statements that
/// nobody waits for the result any more (they stop with 57014 and it rolls back). Its
/// statements draw their memory from `pool` ([`permafrost_sql::workmem`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_txn(
    proc: &Procedure,
    params: &[Value],
    stores: &mut [&mut PartitionStore],
    evicted: &mut EvictedRefs,
    info: &TxnInfo,
    sequences: &Sequences,
    interrupted: &dyn Fn() -> bool,
    pool: &Arc<MemoryPool>,
    attempt: &mut Attempt,
) -> Outcome {
    let (result, deferred, mut placement, left) = run_body(
        proc,
        params,
        stores,
        evicted,
        info,
        sequences,
        interrupted,
        Some(pool),
        None,
    );
    // The values this run drew, kept for the next if it does not commit.
    attempt.drawn = match &result {
        Ok(Ok(rows)) => rows.draws.clone(),
        _ => left,
    };
    let mut finish = |stores: &mut [&mut PartitionStore], commit: bool| {
        if commit && stores.iter().any(|s| s.has_changes()) {
            // One stamp for every partition it holds: stamp order is a serial order
            // (permafrost_storage::recent).
            placement.stamp = stores.first().and_then(|s| s.take_stamp());
        } else if commit && info.block_read && placement.reads.is_none() {
            placement.reads = Some(Vec::new());
        }
        for s in stores.iter_mut() {
            if commit {
                s.commit_placed(&placement)
            } else {
                s.rollback()
            }
        }
    };
    // A statement stopped at its slice met only part of what it reads: it runs again (in
    // place, or moved off its partitions), and that run decides what it needs. (A read
    // through an index that reached many evicted tuples leaves them for later only once
    // it has met them all: fetching what the first part met would bring them back.)
    if matches!(result, Ok(Err(ProcError::Sql(SqlError::SliceOver)))) {
        evicted.clear();
    }
    if !evicted.is_empty() {
        finish(stores, false);
        return Outcome::NeedsData;
    }
    if matches!(result, Ok(Ok(_))) && (deferred.is_some() || !proc.is_probe()) {
        // It commits (or answers, a read): its values are its own.
        attempt.drawn.clear();
    }
    match result {
        Ok(Ok(rows)) if deferred.is_some() => {
            // One read-only statement: nothing to commit.
            finish(stores, true);
            Outcome::Deferred(rows, deferred.expect("checked"))
        }
        Ok(Ok(rows)) if proc.is_probe() => {
            // What the statement gives inside its interactive transaction; undone.
            finish(stores, false);
            Outcome::Done(Ok(rows), false)
        }
        Ok(Ok(rows)) => {
            // Sequence values taken are a change too (a sequence of its own leaves nothing
            // in the stores): the log keeps them.
            let wrote = stores.iter().any(|s| s.has_changes()) || Draws::changed(&rows.draws);
            if wrote && let Some(e) = &info.writes_refused {
                finish(stores, false);
                return Outcome::Done(Err(e.clone()), false);
            }
            finish(stores, true);
            Outcome::Done(Ok(rows), wrote)
        }
        Ok(Err(ProcError::Sql(SqlError::SliceOver))) => {
            finish(stores, false);
            Outcome::SliceOver
        }
        Ok(Err(ProcError::Sql(SqlError::SchemaChanged(_)))) => {
            finish(stores, false);
            Outcome::SchemaChanged
        }
        Ok(Err(ProcError::Sql(e))) => {
            finish(stores, false);
            Outcome::Done(Err(Error::Sql(e)), false)
        }
        Ok(Err(ProcError::Abort(m))) => {
            finish(stores, false);
            Outcome::Done(Err(Error::Aborted(m)), false)
        }
        Err(panic) => {
            finish(stores, false);
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Outcome::Done(
                Err(Error::ProcedurePanicked {
                    name: proc.name.clone(),
                    message,
                }),
                false,
            )
        }
    }
}
