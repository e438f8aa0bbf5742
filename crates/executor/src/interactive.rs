//! Interactive transactions (BEGIN ... COMMIT from a client) without holding a partition
//! while the client thinks.
//!
//! A client's transaction is a list of statements with their parameters. While it is open,
//! each new statement runs as a *probe* ([`Database::probe`]): one short transaction, in
//! the serial order like any other, that runs the transaction's earlier writes (checking
//! that each still gives what the client was shown: 40001 at once if not), then the new
//! statement, answers its result and undoes everything. The client sees its own earlier
//! writes over the latest committed state, and no partition waits for it. Reads inside a
//! block are not re-checked until COMMIT, so two reads of a block that will fail may come
//! from different serial points (a block that commits read one point, see below); re-running
//! every earlier statement in each probe would give every read one point too, at a cost
//! quadratic in the block's length. At COMMIT ([`Database::commit_interactive`]) one transaction
//! runs all the statements again, in order, and checks that each gives what the client was
//! shown ([`Rows::digest`]: the rows, their number, the rows changed); if all do it commits
//! and is logged like any other, else it changes nothing and fails with 40001
//! (`SqlError::SerializationFailure`), and the client retries. The commit is what the
//! command log records ([`INTERACTIVE_MARK`]), so replay runs the same statements at the
//! same point of the order, with the same `now()`, and reaches the same state.
//!
//! Serializability: the commit runs every statement, reads included, at one point of the
//! serial order, and commits only if every result equals what the client saw; the client
//! thus saw exactly what a serial execution at that point shows. That point is the
//! commit's own, or an earlier one where every result is what the client saw ("Committing
//! at an earlier place" below). Two transactions that each read both rows and write one
//! (write skew) cannot both commit: the second's reads differ once the first has
//! committed, and no earlier place will do, since the first read the row the second
//! writes.
//!
//! A probe that reaches evicted tuples is a pre-pass like any transaction's: the tuples are
//! fetched and it runs again, so the client sees only latency; the commit likewise.
//!
//! # Committing at an earlier place
//!
//! A query that gives another result at COMMIT than it showed does not always fail the
//! block. Its client saw the rows as they were before some commit `U` changed them; the
//! block may still be serialized *before* `U`, if nothing that committed since then read or
//! wrote a row the block writes. The stamps of `permafrost_storage::recent` order every
//! commit; the block takes the place just after stamp `cut`, the stamp before the first
//! change to a range its changed queries read after they started ([`earlier_place`]). It
//! commits there when all of these hold, and fails with 40001 otherwise:
//!
//! 1. Every statement's reads are described by ranges of a partition column
//!    (`Prepared::read_ranges`, `Prepared::write_range`, or an INSERT of listed rows, which
//!    reads only the keys it inserts), and every query knows the write clock before it was
//!    submitted (`seen`) and after its result came back (`done`).
//! 2. Each query gives at the cut what it showed: no change to what it read is stamped
//!    between the cut and the stretch it ran in, `(min(seen, cut), max(done, cut)]`. A
//!    query may have seen any change stamped in `(seen, done]`, so none may touch its rows
//!    there either.
//! 3. Each write gives at the cut what it gives now: no change to the rows it picks is
//!    stamped after the cut (it ran again at COMMIT and gave what it showed).
//! 4. No transaction committed after the cut changed or read a row the block changes:
//!    committed interactive transactions note the ranges they read
//!    (`Placement::reads`, `Recent::read_after`); every other transaction counts as having
//!    read its whole partitions (`Recent::mark_opaque`), and so does a statement moved off
//!    its partitions (forked.rs). Queries of open blocks note nothing: their own COMMIT
//!    checks them, and a block that never commits promised its client nothing.
//!
//! Why that is serializable: order committed transactions by stamp, each placed block just
//! after its cut, several at one cut latest committed first. For any two transactions that
//! touch a common row, the one ordered first is the one whose effect the other saw (or
//! neither saw the other's): the earlier-placed block's reads are those of its cut (2), its
//! writes are those it would make there (3), and nothing ordered after it saw the rows
//! before its writes (4). A block placed at a cut notes its changes and reads over every
//! stamp from `cut + 1` to its own stamp (`Span`), since it is at the cut in the order but
//! its changes reached the partitions only at its stamp: a later check over any part of
//! that stretch finds them, and treats them as possibly unseen. The command log records it
//! at its stamp, where it ran: replay runs its writes over the same rows and makes the same
//! changes.
//!
//! In sysbench's `oltp_read_write` (four 100-row ranges and ten points read, four rows
//! written per block) this turns about 4 % of blocks failing into about 0.4 %: most changes
//! its ranges miss are to rows nothing after them touches
//! (`permafrost_commits_placed_earlier_total`).

use std::sync::Arc;

use permafrost_anticache::AntiCacheError;
use permafrost_sql::{Prepared, Route, Rows, SqlError};
use permafrost_storage::KeyRange;
use permafrost_types::Value;

use crate::block_record::{COUNTED_MARK, INTERACTIVE_MARK, Logged, SCHEMA_MARK};
use crate::database::{AdHoc, Database};
use crate::error::{Error, Result};
use crate::partition::msg::MpWork;
use crate::partition::router::{Place, submit_invocation};
use crate::procedure::{Interactive, ProcContext, ProcError, Procedure, ProcedureDef};
use crate::reply::{Reply, StopFlag};

mod statement;

pub(crate) use statement::Expected;
pub use statement::{NewStatement, TxnStatement};

/// A transaction block's schema changes, for the probe or commit that runs its statements
/// (crate::schema_block builds it).
pub(crate) struct BlockSchema {
    pub steps: Arc<dyn crate::procedure::SchemaSteps>,
    /// The schema statements, in order (what the command log records).
    pub texts: Vec<String>,
    /// For each of `texts`, how many of the statements the record lists (the writes) come
    /// before it.
    pub logged_at: Vec<usize>,
}

/// Most statements one interactive transaction may run.
pub const MAX_STATEMENTS: usize = 10_000;

impl Interactive {
    /// The procedure that runs `statements` (with their parameters one after the other in
    /// the call, `counts[i]` of them for statement `i`) in order; each statement with an
    /// expected fingerprint must give it. A bulk insert runs once per row of its parameters.
    /// Earlier statements' failures and changed results are serialization failures; the
    /// last statement's own error is returned as it is in a probe.
    ///
    /// With `collect`, every statement's result is kept there (the statements before a
    /// failing one too) and every error is the statement's own: a block of statements
    /// run as one transaction ([`Database::run_block`]).
    fn procedure(
        statements: Vec<Arc<Prepared>>,
        counts: Vec<usize>,
        expected: Vec<Expected>,
        spec: Interactive,
        collect: Option<Collected>,
    ) -> Procedure {
        let bulk: Vec<Option<usize>> = statements.iter().map(|p| crate::procedure::bulk_width(p)).collect();
        let any_bulk = bulk.iter().any(Option::is_some);
        let n = statements.len();
        let probe = spec.probe;
        let own_draws = spec.own_draws;
        let schema = spec.schema.clone();
        // The definition holds only the body: its statements come planned, and an
        // interactive procedure is never planned again (`Procedure::replan` refuses).
        let def = ProcedureDef::new(crate::procedure::AD_HOC)
            .multi_partition()
            .body(move |ctx, params| {
                let mut at = 0;
                let mut last = Rows::default();
                // Queries that now give another result than they showed, while a COMMIT
                // may still commit at an earlier place where they give it.
                let mut later: Vec<usize> = Vec::new();
                // A commit's statements with what they read, described once for the
                // checks below and for what the commit notes (a probe needs none).
                let runs = if probe {
                    Vec::new()
                } else {
                    runs(ctx.statements, &counts, params, &expected)
                };
                if let Some(c) = &collect {
                    // A run after a pre-pass starts again.
                    lock(c).clear();
                }
                let mut writes_before: u64 = 0;
                for (i, &k) in counts.iter().enumerate() {
                    if let Some(s) = &schema {
                        s.apply_through(i, ctx.env.stores)?;
                    }
                    let p = params.get(at..at + k).ok_or_else(|| {
                        ProcError::Sql(SqlError::ParamCount {
                            expected: at + k,
                            got: params.len(),
                        })
                    })?;
                    at += k;
                    let expect = expected.get(i).cloned().unwrap_or_default();
                    if let (
                        Some(_),
                        Some(seen),
                        Some(Run {
                            reads: Some(ranges), ..
                        }),
                    ) = (expect.digest, expect.seen, runs.get(i))
                        && schema.is_none()
                        && ctx.statements[i].is_read_only()
                        && !ranges.is_empty()
                        && ranges.iter().all(|range| ctx.unchanged_since(range, seen))
                    {
                        // A query whose rows nothing committed since changed gives what
                        // it showed: not run again.
                        continue;
                    }
                    // A statement that drew random values in its probe draws from its own
                    // seed (the record keeps it); any other from the transaction's, by how
                    // many writes came before it: replay runs the writes only, and gives
                    // each the same state.
                    let seed = match expect.seed {
                        0 => permafrost_sql::splitmix64(
                            ctx.base_seed() ^ writes_before.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                        ),
                        s => s,
                    };
                    ctx.seed_statement(seed);
                    // A live probe's or COMMIT's statement takes the sequence values it
                    // took when it first ran (a replayed record gives the transaction's).
                    if own_draws {
                        ctx.env.draws.borrow_mut().give_statement(&expect.draws);
                    } else {
                        ctx.env.draws.borrow_mut().start_statement();
                    }
                    if !ctx.statements[i].is_read_only() {
                        writes_before += 1;
                    }
                    let own = (probe && i + 1 == n) || collect.is_some();
                    let run = match bulk[i] {
                        Some(width) => crate::procedure::run_bulk(ctx, i, width, p),
                        None => ctx.execute(i, p),
                    };
                    let rows = match run {
                        Ok(rows) => rows,
                        Err(e) if own || ctx.is_prepass() => return Err(e),
                        // A query whose tables changed since it ran (spilled, past its
                        // working memory) cannot spill here, holding the partitions: the
                        // client retries, as for one that needs its evicted rows back.
                        Err(ProcError::Sql(SqlError::OutOfWorkMem(_))) if expect.digest.is_some() => {
                            return Err(ProcError::Sql(SqlError::SerializationFailure(format!(
                                "statement {} of the transaction read tables that changed since, and running \
                                 it again at COMMIT needs more than its working memory; retry the transaction",
                                i + 1
                            ))));
                        }
                        Err(ProcError::Sql(e)) if !matters(&e) => return Err(ProcError::Sql(e)),
                        Err(e) => {
                            return Err(ProcError::Sql(SqlError::SerializationFailure(format!(
                                "statement {} of the transaction now fails ({e}); retry the transaction",
                                i + 1
                            ))));
                        }
                    };
                    if !probe && ctx.statements[i].is_read_only() {
                        // (Replay runs the writes only: what a query read of the clock
                        // is not the record's.)
                        ctx.env.draws.borrow_mut().forget_clock_reads();
                    }
                    if let Some(d) = expect.digest
                        && rows.digest() != d
                        && !ctx.is_prepass()
                    {
                        if !probe
                            && collect.is_none()
                            && schema.is_none()
                            && expect.window().is_some()
                            && ctx.statements[i].is_read_only()
                        {
                            later.push(i);
                            continue;
                        }
                        return Err(changed_result(i));
                    }
                    match &collect {
                        Some(c) => lock(c).push(rows),
                        None => last = rows,
                    }
                }
                if let Some(s) = &schema {
                    // The changes after the last statement.
                    s.apply_through(usize::MAX, ctx.env.stores)?;
                }
                if !probe && !ctx.is_prepass() {
                    if let Some(&first) = later.first() {
                        let cut = earlier_place(ctx, &runs, &later);
                        if let Some(s) = ctx.env.stores.first_mut() {
                            s.count_place(cut.is_some());
                        }
                        ctx.placement.cut = Some(cut.ok_or_else(|| changed_result(first))?);
                    }
                    ctx.placement.reads = described_reads(&runs);
                }
                Ok(last)
            });
        let mut p = Procedure::ad_hoc_over(statements, def, Some(spec));
        // A bulk insert runs its one-row statement once per row given: never short.
        p.short &= !any_bulk;
        p
    }
}

/// The error of a COMMIT whose statement `i` no longer gives what it showed.
fn changed_result(i: usize) -> ProcError {
    ProcError::Sql(SqlError::SerializationFailure(format!(
        "statement {} of the transaction now gives another result than it showed, since a concurrent \
         transaction changed what it read; retry the transaction",
        i + 1
    )))
}

/// One statement of a COMMIT: what it must give, and what it reads ([`reads_of`]).
struct Run {
    expect: Expected,
    reads: Option<Vec<permafrost_sql::ReadRange>>,
}

/// The statements of a COMMIT, with their parameters (`counts[i]` of them for statement
/// `i`, one after the other in `params`).
fn runs(statements: &[Arc<Prepared>], counts: &[usize], params: &[Value], expected: &[Expected]) -> Vec<Run> {
    let mut at = 0;
    statements
        .iter()
        .zip(counts)
        .enumerate()
        .map(|(i, (s, &k))| {
            let p = params.get(at..at + k).unwrap_or_default();
            at += k;
            Run {
                expect: expected.get(i).cloned().unwrap_or_default(),
                reads: reads_of(s, p),
            }
        })
        .collect()
}

/// What a statement of an interactive transaction reads, described by partition-column
/// ranges ([`Prepared::read_ranges`], [`Prepared::write_range`]): none for an INSERT of
/// listed rows (it reads only the keys it inserts, which its changes list), `None` when
/// it cannot be described.
fn reads_of(p: &Prepared, params: &[Value]) -> Option<Vec<permafrost_sql::ReadRange>> {
    if p.is_read_only() {
        p.read_ranges(params)
    } else if p.inserts_keyed_rows() {
        Some(Vec::new())
    } else {
        p.write_range(params).map(|r| vec![r])
    }
}

/// The ranges a committing interactive transaction read, to be noted at its partitions
/// (`Placement::reads`); `None` when a statement's reads cannot be described.
fn described_reads(runs: &[Run]) -> Option<Vec<KeyRange>> {
    let mut out = Vec::with_capacity(runs.len());
    for run in runs {
        for r in run.reads.as_ref()? {
            out.push(KeyRange {
                table: r.schema.id,
                lo: r.lo.clone(),
                hi: r.hi.clone(),
            });
        }
    }
    Some(out)
}

/// The place of the serial order where a COMMIT whose queries `later` no longer give what
/// they showed may still commit, if there is one: its cut, the stamp after which it
/// commits ("Committing at an earlier place" in this module's documentation). Called
/// after every statement ran again (or was found unchanged), holding the changes.
fn earlier_place(ctx: &mut ProcContext<'_, '_, '_>, runs: &[Run], later: &[usize]) -> Option<u64> {
    let statements = ctx.statements;
    let stores = &ctx.env.stores;
    // Every statement's reads, described, on the tables the partitions hold.
    let mut reads = Vec::with_capacity(runs.len());
    for run in runs {
        let ranges = run.reads.as_ref()?;
        let held = |r: &permafrost_sql::ReadRange| {
            stores
                .iter()
                .all(|s| s.table(r.schema.id).is_some_and(|t| Arc::ptr_eq(t.schema(), &r.schema)))
        };
        if !ranges.iter().all(held) {
            return None;
        }
        reads.push(ranges);
    }
    let recent: Vec<&permafrost_storage::Recent> = stores.iter().map(|s| s.recent()).collect::<Option<_>>()?;
    // The cut: just before the first change a changed query did not see.
    let mut cut = u64::MAX;
    for &i in later {
        let (ranges, Some((seen, _))) = (reads.get(i)?, runs.get(i)?.expect.window()) else {
            return None;
        };
        let mut first = None;
        for (r, rc) in ranges.iter().flat_map(|r| recent.iter().map(move |rc| (r, rc))) {
            if let Some(f) = rc
                .first_change_after(seen, r.schema.id, r.lo.as_ref(), r.hi.as_ref())
                .ok()?
            {
                first = Some(first.map_or(f, |g: u64| g.min(f)));
            }
        }
        // A result that changed with no change found: something not noted changed it.
        cut = cut.min(first?.checked_sub(1)?);
    }
    // Each query gives at the cut what it showed: nothing it read changed between the cut
    // and when it ran. Each write gives there what it gives now: nothing it read changed
    // since the cut.
    for (p, (ranges, run)) in statements.iter().zip(reads.iter().zip(runs)) {
        if ranges.is_empty() {
            continue;
        }
        let (after, upto) = if p.is_read_only() {
            let (seen, done) = run.expect.window()?;
            (seen.min(cut), done.max(cut))
        } else {
            (cut, u64::MAX)
        };
        for r in ranges.iter() {
            if recent
                .iter()
                .any(|rc| rc.changed_between(after, upto, r.schema.id, r.lo.as_ref(), r.hi.as_ref()))
            {
                return None;
            }
        }
    }
    // Nothing committed after the cut wrote or read a row this commit changes.
    for (s, rc) in stores.iter().zip(&recent) {
        for (table, key) in s.changed_keys() {
            let key = key?;
            if rc.changed_between(cut, u64::MAX, table, Some(&key), Some(&key)) || rc.read_after(cut, table, &key) {
                return None;
            }
        }
    }
    Some(cut)
}

/// The partition an interactive transaction's new keys come from, by its start time
/// (`now`): the same for each of its probes and its commit
/// ([`Interactive::sequence_home`]), and spread over the partitions.
fn home_partition(now: i64, partitions: u32) -> u32 {
    let spread = (now as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    (spread % u64::from(partitions.max(1))) as u32
}

/// A query run partition by partition ([`Database::read_in_parts`]): what its parts
/// gathered, and whether one of them spoiled the run.
struct Parts {
    partial: Option<permafrost_sql::PartialSelect>,
    spoiled: bool,
}

fn lock_parts(p: &std::sync::Mutex<Parts>) -> std::sync::MutexGuard<'_, Parts> {
    p.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where [`Database::run_block`] keeps each statement's result.
type Collected = Arc<std::sync::Mutex<Vec<Rows>>>;

fn lock(c: &Collected) -> std::sync::MutexGuard<'_, Vec<Rows>> {
    c.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether an earlier statement's error means the transaction's view changed (a
/// serialization failure), rather than the server refusing work (memory, a cancel, a stop
/// past its slice, ...).
fn matters(e: &SqlError) -> bool {
    !matches!(
        e,
        SqlError::Cancelled
            | SqlError::StatementMemory { .. }
            | SqlError::OutOfWorkMem(_)
            | SqlError::SchemaChanged(_)
            | SqlError::SliceOver
    )
}

impl Database {
    /// Runs `stmt` with `params` after the transaction's earlier writes `before` (each
    /// checked against what it showed: 40001 if one no longer gives it), over the committed
    /// state, and undoes everything: what `stmt` gives inside the transaction.
    /// At [`Place::Here`] (the caller has nothing else in flight) a short probe may run on
    /// the caller's thread.
    pub fn probe(
        &self,
        before: &[&TxnStatement],
        next: NewStatement<'_>,
        now: i64,
        stop: StopFlag,
        place: Place,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        self.probe_scoped(before, next, now, stop, place, false)
    }

    /// [`Database::probe`] with every earlier write run first, wherever it is pinned and
    /// whatever rows it reaches, each checked against what it showed. For a statement
    /// that failed in its probe: the earlier writes its probe left out may no longer give
    /// what they showed (a concurrent block committed since), and then the block cannot
    /// commit and must hear 40001, not the error, which a serial order would not have
    /// given it (two New-Orders that both took the same `d_next_o_id` and insert the same
    /// order: the second's INSERT fails on the first's row). Runs over every partition
    /// when the writes are pinned to several.
    pub fn probe_whole(
        &self,
        before: &[&TxnStatement],
        next: NewStatement<'_>,
        now: i64,
        stop: StopFlag,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        self.probe_scoped(before, next, now, stop, Place::Here, true)
    }

    fn probe_scoped(
        &self,
        before: &[&TxnStatement],
        next: NewStatement<'_>,
        now: i64,
        stop: StopFlag,
        place: Place,
        whole: bool,
    ) -> impl Future<Output = Result<Rows>> + Send + 'static + use<> {
        // A statement whose key pins one partition sees only that partition: earlier
        // writes pinned to another one cannot change what it gives, and are left out (they
        // are checked at COMMIT), so the probe stays at one partition.
        let partitions = self.shared().config.partitions;
        // An INSERT whose key a sequence draws runs at the block's home partition (its row
        // is there), and so does a statement that reads and writes replicated tables only:
        // writes pinned elsewhere cannot change what it gives either.
        let home = home_partition(now, partitions);
        let shared = self.shared();
        // (A key read from text as a timestamptz is read in the statement's zone.)
        let _zone = permafrost_types::zone::SessionZone::set(stop.zone());
        let pinned = match shared.block_route(next.stmt.prepared(), &next.params, true, &[]) {
            Route::Single(p) => Some(p),
            Route::Any => Some(home),
            Route::All => {
                if !whole {
                    shared.note_crossing(next.stmt.prepared(), &next.params);
                }
                None
            }
        };
        let elsewhere = |s: &TxnStatement| {
            !whole
                && pinned.is_some_and(|p| match s.probe_route(shared) {
                    Route::Single(q) => q != p,
                    Route::Any => home != p,
                    Route::All => false,
                })
        };
        // Nor can earlier writes of rows that neither the statement nor a write kept after
        // it reads or writes: of other tables, or of other primary keys
        // (`permafrost_sql::needed_before`).
        // (A block's first write has nothing before it to weigh.)
        let kept = if before.is_empty() || whole {
            Vec::new()
        } else {
            let reaches: Vec<&permafrost_sql::Reach> = before.iter().map(|s| s.reach()).collect();
            permafrost_sql::needed_before(&reaches, &next.stmt.prepared().reach(&next.params))
        };
        let mut kept = kept.into_iter();
        let mut all: Vec<(&AdHoc, Vec<Value>, Expected)> = before
            .iter()
            .filter(|s| kept.next().unwrap_or(true) && !elsewhere(s))
            .map(|s| {
                let expect = Expected {
                    digest: Some(s.digest),
                    seen: None,
                    done: None,
                    seed: s.seed,
                    draws: s.draws.clone(),
                };
                (&s.stmt, s.params.clone(), expect)
            })
            .collect();
        all.push(next.into_run());
        // Answered without waiting for the log: the COMMIT does.
        stop.mark_in_block();
        let submitted = self.submit_interactive(all, now, true, stop, place, None, None);
        async move {
            match submitted {
                Ok(rx) => rx.await.unwrap_or(Err(Error::Shutdown)),
                Err(e) => Err(e),
            }
        }
    }

    /// Runs query `stmt` with `params` inside an interactive transaction, one partition at
    /// a time, when its plan reads one partitioned table at every partition
    /// ([`Prepared::partial`]): each part holds one partition's token (inline when it is
    /// free), never two at once, which a multi-partition read does and which makes it
    /// collide with every other caller. The parts see the partitions at different points
    /// of the serial order: that is allowed only because the block's COMMIT checks the
    /// result again at one point (`TxnStatement::seen` must be read before this is
    /// called). A part that reaches evicted tuples or is stopped past its slice spoils the
    /// run, which then runs as one statement over all partitions (`Request::statement` at `Place::Here`).
    /// `None` when the query is not one to run so. Its `now()` would read 0 where it is
    /// computed off the partitions: for queries that do not read the clock (the server
    /// runs those as probes, with the block's clock).
    pub fn read_in_parts(
        &self,
        stmt: &AdHoc,
        params: Vec<Value>,
        stop: StopFlag,
    ) -> Option<impl Future<Output = Result<Rows>> + Send + 'static + use<>> {
        // (Cheapest refusals first: this is asked of every query in a block. A query that
        // reads one partitioned table at every partition routes to all of them.)
        let config = &self.shared().config;
        let partitions = config.partitions;
        if partitions < 2 {
            return None;
        }
        let prepared = &stmt.proc.statements[0];
        let partial = prepared
            .partial(
                &params,
                stop.work_mem()
                    .unwrap_or_else(|| crate::partition::txn::work_mem(config.memory_limit)),
            )
            .ok()??;
        if !Arc::ptr_eq(&self.catalog(), &stmt.catalog) {
            return None;
        }
        let (shared, prepared) = (self.shared_arc(), prepared.clone());
        stop.mark_in_block();
        let state = Arc::new(std::sync::Mutex::new(Parts {
            partial: Some(partial),
            spoiled: false,
        }));
        let body_state = state.clone();
        let def = ProcedureDef::new(crate::procedure::AD_HOC).body(move |ctx, _| {
            let mut st = lock_parts(&body_state);
            let Parts { partial, spoiled } = &mut *st;
            let Some(partial) = partial.as_mut().filter(|_| !*spoiled) else {
                return Ok(Rows::default());
            };
            let r = ctx.execute_part(0, partial);
            // Its rows are then missing, or counted twice if it runs again.
            *spoiled |= r.is_err() || ctx.is_prepass();
            r.map(|()| Rows::default())
        });
        let proc = Arc::new(Procedure::ad_hoc_over(vec![prepared.clone()], def, None));
        let whole = stmt.proc.clone();
        Some(async move {
            for p in 0..partitions {
                let (tx, rx) = tokio::sync::oneshot::channel();
                submit_invocation(
                    &shared,
                    proc.clone(),
                    Vec::new(),
                    Reply::Stoppable(tx, stop.clone()),
                    p,
                    Place::Here,
                )?;
                match rx.await.unwrap_or(Err(Error::Shutdown)) {
                    Err(e @ (Error::Sql(SqlError::Cancelled) | Error::Shutdown)) => return Err(e),
                    // Any other error spoiled the run: the whole statement gives it again.
                    _ if lock_parts(&state).spoiled => break,
                    Err(e) => return Err(e),
                    Ok(_) => {}
                }
            }
            let partial = {
                let mut st = lock_parts(&state);
                if st.spoiled { None } else { st.partial.take() }
            };
            match partial {
                // (No part reads the clock: `now` is not needed to finish.)
                Some(partial) => Ok(prepared.finish_part(partial, 0)?),
                None => {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    crate::partition::router::submit_statement(
                        &shared,
                        whole,
                        params,
                        Reply::Stoppable(tx, stop),
                        Place::Here,
                    )?;
                    rx.await.unwrap_or(Err(Error::Shutdown))
                }
            }
        })
    }

    /// Commits an interactive transaction: runs `statements` again at one point of the
    /// serial order and applies them if each gives what its client was shown, else fails
    /// with 40001 and applies nothing. At [`Place::Here`] (the caller has nothing else in
    /// flight) the commit may run on its thread when its partitions are free.
    pub fn commit_interactive(
        &self,
        statements: &[TxnStatement],
        now: i64,
        stop: StopFlag,
        place: Place,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        // A block that ran nothing commits nothing.
        let submitted = (!statements.is_empty()).then(|| {
            let all = statements.iter().map(TxnStatement::to_commit).collect();
            self.submit_interactive(all, now, false, stop, place, None, None)
        });
        async move {
            match submitted {
                None => Ok(()),
                Some(Ok(rx)) => match rx.await.unwrap_or(Err(Error::Shutdown)) {
                    Ok(_) => Ok(()),
                    // A query that read evicted rows where they lay (streamed) and whose
                    // table changed since must run again, and cannot bring them all back.
                    Err(Error::AntiCache(AntiCacheError::TooLarge { tuples, bytes, .. })) => {
                        Err(Error::Sql(SqlError::SerializationFailure(format!(
                            "a query of the transaction read a table that changed since, and running it \
                             again at COMMIT would need {tuples} evicted tuples ({bytes} bytes) back in memory \
                             at once; retry the transaction"
                        ))))
                    }
                    Err(e) => Err(e),
                },
                Some(Err(e)) => Err(e),
            }
        }
    }

    /// Runs `statements` in order as one transaction (what PostgreSQL does with the
    /// statements of one query string): every statement's result, and how it ended. When
    /// a statement fails, the results of those before it come with its error, and nothing
    /// is applied. Logged like a committed interactive transaction.
    pub fn run_block(
        &self,
        statements: Vec<(AdHoc, Vec<Value>)>,
        now: i64,
        stop: StopFlag,
    ) -> impl Future<Output = (Vec<Rows>, Result<()>)> + Send + 'static + use<> {
        let collect: Collected = Arc::default();
        let all = statements
            .iter()
            .map(|(s, p)| (s, p.clone(), Expected::default()))
            .collect();
        let submitted = self.submit_interactive(all, now, false, stop, Place::Partition, Some(collect.clone()), None);
        async move {
            let r = match submitted {
                Ok(rx) => rx.await.unwrap_or(Err(Error::Shutdown)).map(|_| ()),
                Err(e) => Err(e),
            };
            let rows = std::mem::take(&mut *lock(&collect));
            (rows, r)
        }
    }

    /// Submits the procedure of an interactive transaction's probe or commit. With
    /// `schema` (a block that changed the schema, `draft`), its statements were planned
    /// against the draft and it runs at every partition.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn submit_interactive(
        &self,
        statements: Vec<(&AdHoc, Vec<Value>, Expected)>,
        now: i64,
        probe: bool,
        stop: StopFlag,
        place: Place,
        collect: Option<Collected>,
        schema: Option<BlockSchema>,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<Rows>>> {
        if statements.len() > MAX_STATEMENTS {
            return Err(Error::Sql(SqlError::Unsupported(format!(
                "a transaction of more than {MAX_STATEMENTS} statements; commit in smaller transactions"
            ))));
        }
        let catalog = self.catalog();
        let partitions = self.shared().config.partitions;
        // (Keys read from text as timestamptz values are read in the statements' zone.)
        let _zone = permafrost_types::zone::SessionZone::set(stop.zone());
        let mut prepared = Vec::with_capacity(statements.len());
        let mut expected = Vec::with_capacity(statements.len());
        let mut counts = Vec::with_capacity(statements.len());
        let mut params = Vec::new();
        // Where it runs: the one partition every statement's key pins, else all of them.
        let mut single: Option<Option<u32>> = Some(None);
        let changes_schema = schema.is_some();
        // A COMMIT's statements pinned to partitions by their keys: tables and partition.
        let mut pins: Vec<(usize, u32)> = Vec::new();
        for (stmt, p, digest) in statements {
            // (A block that changed the schema was checked against its draft.)
            if !changes_schema && !Arc::ptr_eq(&catalog, &stmt.catalog) {
                return Err(Error::Sql(SqlError::SerializationFailure(
                    "the schema changed during the transaction; retry the transaction".into(),
                )));
            }
            let s = &stmt.proc.statements[0];
            let r = self.shared().block_route(s, &p, probe, &digest.draws);
            if let Route::Single(q) = r
                && !probe
            {
                pins.push((prepared.len(), q));
            }
            single = match (single, r) {
                _ if changes_schema => None,
                (Some(None), Route::Single(q)) => Some(Some(q)),
                (Some(Some(a)), Route::Single(q)) if a == q => Some(Some(a)),
                (Some(x), Route::Any) => Some(x),
                _ => None,
            };
            prepared.push(s.clone());
            expected.push(digest);
            counts.push(p.len());
            params.extend(p);
        }
        // Pinned to several partitions: a crossing for each table of those statements.
        if pins.iter().any(|&(_, q)| q != pins[0].1) && !changes_schema {
            let tables = pins.iter().flat_map(|&(i, _)| prepared[i].tables()).collect();
            self.shared().note_crossed(tables);
        }
        let home = home_partition(now, partitions);
        let mut log_params = None;
        let log_text: Arc<str> = if probe {
            Arc::from("")
        } else {
            // Only the statements that may write are logged: the queries were checked at
            // commit and change nothing, so replay reaches the same state without them.
            // Their parameters are copied only when some are left out (a block's COPY may
            // hold many rows).
            let mut statements = Vec::new();
            let mut logged_counts = Vec::new();
            let mut seeds = Vec::new();
            let queries = prepared.iter().any(|p| p.is_read_only());
            let mut logged_params = Vec::new();
            let mut at = 0;
            for ((p, &k), e) in prepared.iter().zip(&counts).zip(&expected) {
                if !p.is_read_only() {
                    statements.push(p.sql.clone());
                    logged_counts.push(k);
                    seeds.push(e.seed);
                    if queries {
                        logged_params.extend_from_slice(&params[at..at + k]);
                    }
                }
                at += k;
            }
            if queries {
                log_params = Some(logged_params);
            }
            let logged = Logged {
                now,
                statements,
                home: Some(home),
                // (Always for a block that changed the schema: replay splits its
                // parameters between the runs of writes around its changes.)
                counts: (changes_schema || prepared.iter().any(|p| crate::procedure::bulk_width(p).is_some()))
                    .then_some(logged_counts),
                schema: schema.as_ref().map(|b| b.texts.clone()).unwrap_or_default(),
                schema_at: schema.as_ref().map(|b| b.logged_at.clone()).unwrap_or_default(),
                seeds: if seeds.iter().all(|&s| s == 0) {
                    Vec::new()
                } else {
                    seeds.iter().map(|s| format!("{s:016x}")).collect()
                },
            };
            let json = serde_json::to_string(&logged).map_err(|e| Error::Internal(e.to_string()))?;
            let mark = if changes_schema {
                SCHEMA_MARK
            } else if logged.counts.is_some() {
                COUNTED_MARK
            } else {
                INTERACTIVE_MARK
            };
            format!("{mark}{json}").into()
        };
        let proc = Arc::new(Interactive::procedure(
            prepared,
            counts,
            expected,
            Interactive {
                probe,
                now,
                log_text,
                log_params,
                sequence_home: None,
                own_draws: true,
                schema: schema.map(|b| b.steps),
            },
            collect,
        ));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reply = Reply::Stoppable(tx, stop);
        let shared = self.shared();
        match single {
            Some(p) => {
                // Statements that may run anywhere (an INSERT whose key its table's sequence
                // draws) run at the block's home partition: each probe and the commit then
                // draw the same keys, which depend on the partition that draws them (and a
                // probe or commit over all partitions draws them there too).
                let p = p.unwrap_or(home);
                submit_invocation(shared, proc, params, reply, p, place)?;
            }
            None => shared.submit_mp_at(
                MpWork::Call {
                    proc,
                    params: params.into(),
                    restarts: 0,
                    replay: None,
                },
                shared.all_partitions(),
                reply,
                place,
            )?,
        }
        Ok(rx)
    }
}

/// The procedure a logged interactive transaction replays: its statements, planned
/// against `catalog`, with its `now()`; no results are checked (they were, when it
/// committed).
pub(crate) fn replayed(sql: &str, catalog: &permafrost_sql::Catalog) -> Result<Procedure> {
    let json = sql
        .strip_prefix(INTERACTIVE_MARK)
        .or_else(|| sql.strip_prefix(COUNTED_MARK))
        .ok_or_else(|| Error::Internal("not an interactive transaction".into()))?;
    let logged: Logged =
        serde_json::from_str(json).map_err(|e| Error::Recovery(format!("interactive transaction record: {e}")))?;
    let mut prepared = Vec::with_capacity(logged.statements.len());
    for s in &logged.statements {
        prepared.push(Arc::new(permafrost_sql::limits::with_stack_for(s, || {
            let stmt = permafrost_sql::parse::parse_statement(s)?;
            permafrost_sql::prepare_statement(catalog, &stmt, s)
        })?));
    }
    let counts = match logged.counts {
        Some(c) if c.len() == prepared.len() => c,
        Some(c) => {
            return Err(Error::Recovery(format!(
                "interactive transaction record: {} parameter counts for {} statements",
                c.len(),
                prepared.len()
            )));
        }
        None => prepared.iter().map(|p| p.param_types().len()).collect(),
    };
    let mut expected = vec![Expected::default(); prepared.len()];
    if logged.seeds.len() == prepared.len() {
        for (e, seed) in expected.iter_mut().zip(&logged.seeds) {
            e.seed = u64::from_str_radix(seed, 16)
                .map_err(|_| Error::Recovery(format!("interactive transaction record: bad random seed {seed:?}")))?;
        }
    } else if !logged.seeds.is_empty() {
        return Err(Error::Recovery(format!(
            "interactive transaction record: {} random seeds for {} statements",
            logged.seeds.len(),
            prepared.len()
        )));
    }
    Ok(Interactive::procedure(
        prepared,
        counts,
        expected,
        Interactive {
            probe: false,
            now: logged.now,
            log_text: sql.into(),
            log_params: None,
            sequence_home: logged.home,
            own_draws: false,
            schema: None,
        },
        None,
    ))
}
