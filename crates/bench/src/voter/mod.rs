//! Voter, H-Store's phone-in election: callers vote for one of a few contestants; a vote is
//! refused when it names no contestant or when its caller has reached the vote limit, and
//! otherwise recorded with the state of the caller's area code. Many short transactions
//! that insert rows never read again: VOTES grows, and on Permafrost it is evictable, as in
//! the anti-caching paper.
//!
//! Run three ways, as TPC-C is ([`Mode`]): one `CALL` of a stored procedure per vote over
//! the wire (PostgreSQL: its PL/pgSQL function), an interactive transaction of one
//! statement per round trip, or embedded. H-Store's settings are the defaults: 6
//! contestants, a limit of 1,000 votes per caller, ten million numbers per area code. The
//! invariants (check.rs) are checked after every run.

pub mod check;
pub mod data;
pub mod embedded;
pub mod mariadb;
pub mod procs;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde::Serialize;
use tokio_postgres::{Client, Statement};

use crate::BenchError;
use crate::report::{AnticacheReport, Latency};
use crate::tpcc::check::CheckResult;
use crate::tpcc::{Target, note_error};
use crate::way::Flavor;
pub use crate::way::Mode;
use crate::way::{MAX_ATTEMPTS, retryable};
use crate::ycsb::server::describe;
use data::{Call, Caller, NUMBERS_PER_AREA, VOTES_PER_INSERT, area_codes, contestant_name};
use procs::{ACCEPTED, INVALID_CONTESTANT, OVER_LIMIT};

/// What to run.
#[derive(Debug, Clone)]
pub struct VoterOptions {
    /// Terminals, each with one call in flight.
    pub clients: usize,
    pub warmup: f64,
    pub duration: f64,
    pub seed: u64,
    pub contestants: i32,
    /// Votes a caller may cast.
    pub max_votes: i32,
    /// Phone numbers per area code (fewer than the ten million make callers vote again,
    /// and the limit fire).
    pub numbers: i64,
    /// Votes loaded with the tables (a VOTES table that has taken calls before: what makes
    /// it larger than memory).
    pub votes: i64,
    /// Create the tables and load the contestants, the area codes and `votes` first.
    pub load: bool,
    pub run: bool,
}

impl Default for VoterOptions {
    fn default() -> Self {
        VoterOptions {
            clients: 8,
            warmup: 10.0,
            duration: 60.0,
            seed: 42,
            contestants: 6,
            max_votes: 1000,
            numbers: NUMBERS_PER_AREA,
            votes: 0,
            load: true,
            run: true,
        }
    }
}

impl VoterOptions {
    pub fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: &str| Err(BenchError::Options(m.into()));
        if !(1..=4096).contains(&self.clients) {
            return bad("--clients must be between 1 and 4096");
        }
        if !(1..data::INVALID_CONTESTANT).contains(&self.contestants) {
            return bad("--contestants must be between 1 and 998");
        }
        if self.max_votes < 1 {
            return bad("--max-votes must be at least 1");
        }
        if !(1..=NUMBERS_PER_AREA).contains(&self.numbers) {
            return bad("--numbers-per-area must be between 1 and 10000000");
        }
        if !(0..=1_000_000_000).contains(&self.votes) {
            return bad("--votes must be between 0 and 1000000000");
        }
        let callers = area_codes().count() as i64 * self.numbers;
        if (self.votes + callers - 1) / callers > i64::from(self.max_votes) {
            return bad(
                "--votes would give a caller more votes than --max-votes: load fewer, or more --numbers-per-area",
            );
        }
        if !self.load && !self.run {
            return bad("nothing to do: neither load nor run");
        }
        if !(self.duration > 0.0 && self.warmup >= 0.0) {
            return bad("--duration must be positive and --warmup not negative");
        }
        Ok(())
    }

    /// The first vote id of a run started now: microseconds since 1970 times 1,000, so a
    /// later run's ids start past every id of an earlier one (no run records a thousand
    /// votes a microsecond) without reading VOTES.
    fn first_vote_id() -> i64 {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        micros.saturating_mul(1000)
    }
}

/// A run's report (the JSON `--json` writes).
#[derive(Debug, Clone, Serialize)]
pub struct VoterReport {
    pub benchmark: &'static str,
    pub mode: &'static str,
    pub target: String,
    pub server_version: String,
    pub clients: usize,
    pub seed: u64,
    pub contestants: i32,
    pub max_votes: i32,
    pub numbers_per_area: i64,
    pub load_seconds: Option<f64>,
    pub warmup_seconds: f64,
    pub measured_seconds: f64,
    /// Calls answered per second (accepted or refused).
    pub transactions_per_sec: f64,
    pub accepted: u64,
    pub invalid_contestant: u64,
    pub over_limit: u64,
    /// Attempts refused with a serialization failure or a deadlock and run again.
    pub retries: u64,
    pub failed: u64,
    /// From a call's first attempt to the end of its last, microseconds.
    pub latency: Latency,
    pub errors: Vec<String>,
    /// Rows of VOTES before the run and after it.
    pub votes_before: i64,
    pub votes_after: Option<i64>,
    /// Embedded: the anti-cache's counters at the end of the run, before the checks.
    pub anticache: Option<AnticacheReport>,
    pub checks: Vec<CheckResult>,
    pub checks_passed: usize,
}

impl VoterReport {
    pub fn summary(&self) -> String {
        let mut s = format!(
            "Voter ({}) against {} ({}): {} clients, {} contestants, at most {} votes per caller\n",
            self.mode, self.target, self.server_version, self.clients, self.contestants, self.max_votes,
        );
        if self.measured_seconds > 0.0 {
            s.push_str(&format!(
                "{:.0} s measured: {:.1} calls/s ({} accepted, {} for no contestant, {} over the limit), \
                 {} retries, {} failed\n  latency p50 {:.2} ms  p95 {:.2} ms  p99 {:.2} ms\n",
                self.measured_seconds,
                self.transactions_per_sec,
                self.accepted,
                self.invalid_contestant,
                self.over_limit,
                self.retries,
                self.failed,
                self.latency.p50 as f64 / 1000.0,
                self.latency.p95 as f64 / 1000.0,
                self.latency.p99 as f64 / 1000.0,
            ));
        }
        if let Some(l) = self.load_seconds {
            s.push_str(&format!("load: {l:.1} s\n"));
        }
        if let Some(after) = self.votes_after {
            s.push_str(&format!("votes: {} before the run, {after} after\n", self.votes_before));
        }
        if let Some(a) = &self.anticache {
            s.push_str(&a.summary_line());
        }
        for e in &self.errors {
            s.push_str(&format!("  error: {e}\n"));
        }
        s.push_str(&CheckResult::summary(&self.checks, "invariants"));
        s
    }

    /// Whether every invariant held and no call failed.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.checks_passed == self.checks.len()
    }
}

/// The figures of a terminal, or of all.
pub(crate) struct Tally {
    /// Answers by code over the measured seconds: accepted, no contestant, over the limit.
    answered: [u64; 3],
    retries: u64,
    failed: u64,
    latency: Histogram<u64>,
    errors: Vec<String>,
    /// Votes recorded over the whole run, warm-up included (what VOTES gains).
    recorded: u64,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            answered: [0; 3],
            retries: 0,
            failed: 0,
            latency: Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds"),
            errors: Vec::new(),
            recorded: 0,
        }
    }

    fn add(&mut self, other: Tally) {
        for (a, b) in self.answered.iter_mut().zip(other.answered) {
            *a += b;
        }
        self.retries += other.retries;
        self.failed += other.failed;
        self.latency.add(&other.latency).expect("same bounds");
        for e in other.errors {
            note_error(&mut self.errors, e);
        }
        self.recorded += other.recorded;
    }

    /// Notes a call's end: its code or its error, counted when it began after `measure_from`.
    fn note(&mut self, outcome: Result<i64, String>, retries: u32, began: Instant, measured: bool) {
        if outcome == Ok(ACCEPTED) {
            self.recorded += 1;
        }
        if !measured {
            return;
        }
        self.retries += retries as u64;
        match outcome {
            Ok(code @ (ACCEPTED | INVALID_CONTESTANT | OVER_LIMIT)) => self.answered[code as usize] += 1,
            Ok(other) => {
                self.failed += 1;
                note_error(&mut self.errors, format!("Vote answered code {other}"));
            }
            Err(e) => {
                self.failed += 1;
                note_error(&mut self.errors, format!("Vote: {e}"));
            }
        }
        self.latency
            .saturating_record((began.elapsed().as_micros() as u64).max(1));
    }
}

/// The report of a run in `mode` against `(target, server_version)`.
fn report(
    opts: &VoterOptions,
    mode: Mode,
    (target, server_version): (String, String),
    (load_seconds, measured_seconds): (Option<f64>, f64),
    tally: Tally,
    (votes_before, votes_after): (i64, Option<i64>),
    checks: Vec<CheckResult>,
) -> VoterReport {
    let answered: u64 = tally.answered.iter().sum();
    let checks_passed = checks.iter().filter(|c| c.passed()).count();
    VoterReport {
        benchmark: "voter",
        mode: mode.name(),
        target,
        server_version,
        clients: opts.clients,
        seed: opts.seed,
        contestants: opts.contestants,
        max_votes: opts.max_votes,
        numbers_per_area: opts.numbers,
        load_seconds,
        warmup_seconds: opts.warmup,
        measured_seconds,
        transactions_per_sec: if measured_seconds > 0.0 {
            answered as f64 / measured_seconds
        } else {
            0.0
        },
        accepted: tally.answered[ACCEPTED as usize],
        invalid_contestant: tally.answered[INVALID_CONTESTANT as usize],
        over_limit: tally.answered[OVER_LIMIT as usize],
        retries: tally.retries,
        failed: tally.failed,
        latency: Latency::from_histogram(&tally.latency),
        errors: tally.errors,
        votes_before,
        votes_after,
        anticache: None,
        checks,
        checks_passed,
    }
}

/// The statements that load the contestants, the area codes and the votes loaded before a
/// run (made as they are taken: a billion votes are not held at once), on one connection.
pub fn load_statements(opts: &VoterOptions) -> impl Iterator<Item = String> + use<> {
    let votes = VoteChunks::new(opts);
    small_tables(opts.contestants)
        .into_iter()
        .chain(std::iter::from_fn(move || votes.take()))
}

/// The INSERTs of the votes loaded before a run, taken in turn by the connections loading
/// them in parallel.
pub(crate) struct VoteChunks {
    next: std::sync::atomic::AtomicI64,
    chunks: i64,
    votes: i64,
    seed: u64,
    contestants: i32,
    numbers: i64,
}

impl VoteChunks {
    pub(crate) fn new(opts: &VoterOptions) -> VoteChunks {
        VoteChunks {
            next: std::sync::atomic::AtomicI64::new(0),
            chunks: (opts.votes + VOTES_PER_INSERT - 1) / VOTES_PER_INSERT,
            votes: opts.votes,
            seed: opts.seed,
            contestants: opts.contestants,
            numbers: opts.numbers,
        }
    }

    /// The next INSERT not yet taken, if any is left.
    pub(crate) fn take(&self) -> Option<String> {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (n < self.chunks).then(|| {
            let first = n * VOTES_PER_INSERT + 1;
            let last = (first + VOTES_PER_INSERT - 1).min(self.votes);
            data::loaded_votes(self.seed, self.contestants, self.numbers, first, last)
        })
    }
}

/// Connections (or threads) that load the votes.
pub(crate) const LOAD_CONNECTIONS: usize = 2;

/// The rows that load the contestants and the area codes, as two INSERTs.
pub(crate) fn small_tables(contestants: i32) -> [String; 2] {
    let people: Vec<String> = (1..=contestants)
        .map(|n| format!("({n}, '{}')", contestant_name(n)))
        .collect();
    let areas: Vec<String> = area_codes().map(|(c, s)| format!("({c}, '{s}')")).collect();
    [
        format!(
            "INSERT INTO contestants (contestant_number, contestant_name) VALUES {}",
            people.join(", ")
        ),
        format!(
            "INSERT INTO area_code_state (area_code, state) VALUES {}",
            areas.join(", ")
        ),
    ]
}

async fn exec(client: &Client, sql: &str) -> Result<(), BenchError> {
    client
        .batch_execute(sql)
        .await
        .map_err(|e| BenchError::Client(format!("{sql}: {}", describe(&e))))
}

/// Loads (when asked), runs the terminals, and checks the invariants, over the wire.
pub fn run(target: &Target, opts: &VoterOptions, mode: Mode, progress_bar: bool) -> Result<VoterReport, BenchError> {
    opts.validate()?;
    Target::runtime(opts.clients.max(LOAD_CONNECTIONS))?.block_on(run_async(target, opts, mode, progress_bar))
}

async fn run_async(
    target: &Target,
    opts: &VoterOptions,
    mode: Mode,
    progress_bar: bool,
) -> Result<VoterReport, BenchError> {
    let (admin, server_version) = target.connect_admin().await?;
    let flavor = Flavor::of(&server_version);
    let load_seconds = if opts.load {
        let started = Instant::now();
        for t in procs::TABLES.iter().rev() {
            exec(&admin, &format!("DROP TABLE IF EXISTS {t}")).await?;
        }
        for sql in procs::ddl(flavor).into_iter().chain(small_tables(opts.contestants)) {
            exec(&admin, &sql).await?;
        }
        let votes = std::sync::Arc::new(VoteChunks::new(opts));
        let loaders: Vec<_> = (0..LOAD_CONNECTIONS)
            .map(|_| {
                let (target, votes) = (target.clone(), votes.clone());
                tokio::spawn(async move {
                    let client = target.connect().await?;
                    while let Some(sql) = votes.take() {
                        exec(&client, &sql).await?;
                    }
                    Ok::<(), BenchError>(())
                })
            })
            .collect();
        for l in loaders {
            l.await
                .map_err(|e| BenchError::Client(format!("a loader stopped: {e}")))??;
        }
        Some(started.elapsed().as_secs_f64())
    } else {
        None
    };
    if mode == Mode::Procedures && opts.run {
        match flavor {
            Flavor::Permafrost => {
                exec(&admin, &format!("DROP PROCEDURE IF EXISTS {}", procs::NAME)).await?;
                exec(&admin, procs::CREATE).await?;
            }
            Flavor::Postgres => exec(&admin, procs::FUNCTION).await?,
        }
    }
    let before = check::rows_over_wire(&admin).await.map_err(BenchError::Client)?;
    let tally = if opts.run {
        run_terminals(target, opts, (mode, flavor), progress_bar).await?
    } else {
        Tally::new()
    };
    let expected = before + tally.recorded as i64;
    let checks = check::over_wire(&admin, opts.max_votes as i64, expected).await;
    let after = check::rows_over_wire(&admin).await.ok();
    let measured = if opts.run { opts.duration } else { 0.0 };
    Ok(report(
        opts,
        mode,
        (target.addr.clone(), server_version),
        (load_seconds, measured),
        tally,
        (before, after),
        checks,
    ))
}

async fn run_terminals(
    target: &Target,
    opts: &VoterOptions,
    way: (Mode, Flavor),
    progress_bar: bool,
) -> Result<Tally, BenchError> {
    let max = opts.max_votes;
    spawn_terminals(opts, progress_bar, |caller, times| {
        let target = target.clone();
        async move { terminal(&target, way, caller, max, times).await }
    })
    .await
}

/// Runs `opts.clients` terminals, each `terminal(its caller, (measure_from, end))` on a task
/// of its own, through the warm-up and the measured seconds; their figures summed.
pub(crate) async fn spawn_terminals<F, T>(
    opts: &VoterOptions,
    progress_bar: bool,
    terminal: F,
) -> Result<Tally, BenchError>
where
    F: Fn(Caller, (Instant, Instant)) -> T,
    T: std::future::Future<Output = Result<Tally, BenchError>> + Send + 'static,
{
    if progress_bar {
        eprintln!(
            "running {} terminals: {:.0} s warm-up, {:.0} s measured",
            opts.clients, opts.warmup, opts.duration
        );
    }
    let measure_from = Instant::now() + Duration::from_secs_f64(opts.warmup);
    let end = measure_from + Duration::from_secs_f64(opts.duration);
    let first_id = VoterOptions::first_vote_id();
    let handles: Vec<_> = (0..opts.clients)
        .map(|n| {
            let caller = Caller::new(opts.seed, n, opts.clients, opts.contestants, opts.numbers, first_id);
            tokio::spawn(terminal(caller, (measure_from, end)))
        })
        .collect();
    let mut tally = Tally::new();
    for h in handles {
        tally.add(
            h.await
                .map_err(|e| BenchError::Client(format!("a terminal stopped: {e}")))??,
        );
    }
    Ok(tally)
}

/// A connection's statements: the interactive transaction's, or the call.
enum Prepared {
    Interactive {
        /// PostgreSQL only: the caller's advisory lock (procs::FUNCTION says why).
        lock: Option<Statement>,
        contestant: Statement,
        votes: Statement,
        state: Statement,
        insert: Statement,
    },
    Call(Statement),
}

impl Prepared {
    async fn new(c: &Client, (mode, flavor): (Mode, Flavor)) -> Result<Prepared, tokio_postgres::Error> {
        if mode == Mode::Procedures {
            let call = match flavor {
                Flavor::Permafrost => format!("CALL {}($1, $2, $3, $4)", procs::NAME),
                Flavor::Postgres => format!("SELECT {}($1, $2, $3, $4)", procs::NAME),
            };
            return Ok(Prepared::Call(c.prepare(&call).await?));
        }
        let lock = match flavor {
            Flavor::Postgres => Some(c.prepare("SELECT pg_advisory_xact_lock($1)").await?),
            Flavor::Permafrost => None,
        };
        Ok(Prepared::Interactive {
            lock,
            contestant: c.prepare(procs::CONTESTANT).await?,
            votes: c.prepare(procs::VOTES_OF_CALLER).await?,
            state: c.prepare(procs::STATE).await?,
            insert: c.prepare(procs::INSERT).await?,
        })
    }

    /// One attempt at `call`: the code Vote answers.
    async fn vote(&self, client: &mut Client, call: &Call, max: i32) -> Result<i64, tokio_postgres::Error> {
        let (lock, contestant, votes, state, insert) = match self {
            Prepared::Call(st) => {
                return client
                    .query_one(st, &[&call.vote_id, &call.phone, &call.contestant, &max])
                    .await
                    .map(|r| r.get::<_, i64>(0));
            }
            Prepared::Interactive {
                lock,
                contestant,
                votes,
                state,
                insert,
            } => (lock, contestant, votes, state, insert),
        };
        let tx = client.transaction().await?;
        if tx.query_opt(contestant, &[&call.contestant]).await?.is_none() {
            tx.rollback().await?;
            return Ok(INVALID_CONTESTANT);
        }
        if let Some(lock) = lock {
            tx.execute(lock, &[&call.phone]).await?;
        }
        let so_far: i64 = tx.query_one(votes, &[&call.phone]).await?.get(0);
        if so_far >= max as i64 {
            tx.rollback().await?;
            return Ok(OVER_LIMIT);
        }
        let area = procs::area_code(call.phone) as i16;
        let found: Option<String> = tx.query_opt(state, &[&area]).await?.map(|r| r.get(0));
        let state = found.unwrap_or_else(|| procs::UNKNOWN_STATE.to_string());
        tx.execute(insert, &[&call.vote_id, &call.phone, &state, &call.contestant])
            .await?;
        tx.commit().await?;
        Ok(ACCEPTED)
    }
}

/// One terminal: its connection votes until `end`, the calls begun after `measure_from`
/// counted.
async fn terminal(
    target: &Target,
    way: (Mode, Flavor),
    mut caller: Caller,
    max: i32,
    (measure_from, end): (Instant, Instant),
) -> Result<Tally, BenchError> {
    let mut client = target.connect().await?;
    let prepared = Prepared::new(&client, way)
        .await
        .map_err(|e| BenchError::Client(format!("preparing Vote's statements: {}", describe(&e))))?;
    let mut tally = Tally::new();
    while Instant::now() < end {
        let began = Instant::now();
        let call = caller.call();
        let mut retries = 0;
        let outcome = loop {
            match prepared.vote(&mut client, &call, max).await {
                Err(e) if retryable(&e) && retries + 1 < MAX_ATTEMPTS => retries += 1,
                other => break other,
            }
        };
        if let Err(e) = &outcome
            && e.is_closed()
        {
            return Err(BenchError::Client(format!(
                "Vote: the connection closed: {}",
                describe(e)
            )));
        }
        tally.note(outcome.map_err(|e| describe(&e)), retries, began, began >= measure_from);
    }
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaded_votes_stay_within_the_limit() {
        let fits = VoterOptions {
            votes: 305 * 4 * 2,
            max_votes: 2,
            numbers: 4,
            ..VoterOptions::default()
        };
        fits.validate().unwrap();
        let over = VoterOptions {
            votes: fits.votes + 1,
            ..fits.clone()
        };
        assert!(over.validate().unwrap_err().to_string().contains("--max-votes"));
        let statements: Vec<String> = load_statements(&fits).collect();
        // The contestants, the area codes, then 2,440 votes in three INSERTs.
        assert_eq!(statements.len(), 5);
        assert!(statements[4].starts_with("INSERT INTO votes") && statements[4].contains("(2440, "));
    }
}
