//! TATP, the Telecom Application Transaction Processing benchmark as H-Store runs it: a
//! home-location register of subscribers, their access information, special facilities and
//! call forwardings, and seven short transactions (35 % Get-Subscriber-Data, 10 %
//! Get-New-Destination, 35 % Get-Access-Data, 2 % Update-Subscriber-Data, 14 %
//! Update-Location, 2 % Insert- and 2 % Delete-Call-Forwarding), each about one subscriber
//! and routed by its id. Run three ways, as TPC-C and Voter are ([`Mode`]); its
//! invariants (check.rs) are checked after every run.
//!
//! What differs from the description: subscribers are drawn uniformly (as H-Store does);
//! the procedures take the subscriber's id besides its number to be routed by it (as
//! H-Store's do), while the interactive client sends the description's statements, by
//! number where it gives one.

pub mod check;
pub mod data;
pub mod embedded;
pub mod mariadb;
pub mod procs;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use crate::BenchError;
use crate::report::AnticacheReport;
use crate::tpcc::check::CheckResult;
use crate::tpcc::{Tally, Target, TypeReport, note_error};
use crate::way::Flavor;
pub use crate::way::Mode;
use crate::way::{MAX_ATTEMPTS, retryable};
use crate::ycsb::server::describe;
use data::{Input, Inputs, KINDS, SUBSCRIBERS_PER_JOB, sub_nbr};

/// Connections loading in parallel over the wire.
const LOAD_CONNECTIONS: usize = 4;

/// What to run.
#[derive(Debug, Clone)]
pub struct TatpOptions {
    /// Subscribers loaded (the description's scale: 100,000 a unit).
    pub subscribers: u32,
    pub clients: usize,
    pub warmup: f64,
    pub duration: f64,
    pub seed: u64,
    pub load: bool,
    pub run: bool,
}

impl TatpOptions {
    pub fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: &str| Err(BenchError::Options(m.into()));
        if !(1..=100_000_000).contains(&self.subscribers) {
            return bad("--subscribers must be between 1 and 100000000");
        }
        if !(1..=4096).contains(&self.clients) {
            return bad("--clients must be between 1 and 4096");
        }
        if !self.load && !self.run {
            return bad("nothing to do: neither load nor run");
        }
        if !(self.duration > 0.0 && self.warmup >= 0.0) {
            return bad("--duration must be positive and --warmup not negative");
        }
        Ok(())
    }
}

/// A run's report (the JSON `--json` writes).
#[derive(Debug, Clone, Serialize)]
pub struct TatpReport {
    pub benchmark: &'static str,
    pub mode: &'static str,
    pub target: String,
    pub server_version: String,
    pub subscribers: u32,
    pub clients: usize,
    pub seed: u64,
    pub load_seconds: Option<f64>,
    pub warmup_seconds: f64,
    pub measured_seconds: f64,
    /// Transactions answered per second, successful or not as the description expects.
    pub transactions_per_sec: f64,
    /// Of those, the share the description counts as successful, in percent.
    pub succeeded_percent: f64,
    /// `completed`: answered; `rolled_back`: answered as unsuccessful (no such row, the
    /// forwarding already there or not there), changing nothing.
    pub by_type: Vec<TypeReport>,
    pub retries: u64,
    pub failed: u64,
    pub errors: Vec<String>,
    pub call_forwardings_before: i64,
    pub call_forwardings_after: Option<i64>,
    /// Embedded: the anti-cache's counters at the end of the run, before the checks.
    pub anticache: Option<AnticacheReport>,
    pub checks: Vec<CheckResult>,
    pub checks_passed: usize,
}

impl TatpReport {
    pub fn summary(&self) -> String {
        let mut s = format!(
            "TATP ({}) against {} ({}): {} subscribers, {} clients\n",
            self.mode, self.target, self.server_version, self.subscribers, self.clients,
        );
        if self.measured_seconds > 0.0 {
            s.push_str(&format!(
                "{:.0} s measured: {:.1} transactions/s ({:.1} % successful), {} retries, {} failed\n",
                self.measured_seconds, self.transactions_per_sec, self.succeeded_percent, self.retries, self.failed,
            ));
            for t in &self.by_type {
                s.push_str(&format!(
                    "  {:<23} {:>9} done {:>8} unsuccessful {:>4} failed   p50 {:>6.2} ms  p99 {:>6.2} ms\n",
                    t.name,
                    t.completed,
                    t.rolled_back,
                    t.failed,
                    t.latency.p50 as f64 / 1000.0,
                    t.latency.p99 as f64 / 1000.0,
                ));
            }
        }
        if let Some(l) = self.load_seconds {
            s.push_str(&format!("load: {l:.1} s\n"));
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

    /// Whether every invariant held and no transaction failed.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.checks_passed == self.checks.len()
    }
}

/// What a run's terminals did: their figures, and the call forwardings they inserted less
/// those they deleted (warm-up included).
pub(crate) struct Done {
    tally: Tally,
    forwardings: i64,
}

impl Done {
    fn new() -> Done {
        Done {
            tally: Tally::with_kinds(KINDS.len()),
            forwardings: 0,
        }
    }

    fn add(&mut self, other: Done) {
        self.tally.add(other.tally);
        self.forwardings += other.forwardings;
    }

    /// Notes a transaction's end: whether it succeeded, or its error.
    fn note(&mut self, input: &Input, outcome: Result<bool, String>, retries: u32, began: Instant, measured: bool) {
        let k = input.kind();
        if outcome == Ok(true) {
            match input {
                Input::InsertCallForwarding { .. } => self.forwardings += 1,
                Input::DeleteCallForwarding { .. } => self.forwardings -= 1,
                _ => {}
            }
        }
        if !measured {
            return;
        }
        let t = &mut self.tally;
        t.retries[k] += retries as u64;
        match outcome {
            Ok(succeeded) => {
                t.completed[k] += 1;
                t.rolled_back[k] += (!succeeded) as u64;
                t.latency[k].saturating_record((began.elapsed().as_micros() as u64).max(1));
            }
            Err(e) => {
                t.failed[k] += 1;
                note_error(&mut t.errors, format!("{}: {e}", KINDS[k].0));
            }
        }
    }
}

/// The report of a run in `mode` against `(target, server_version)`.
fn report(
    opts: &TatpOptions,
    mode: Mode,
    (target, server_version): (String, String),
    (load_seconds, measured_seconds): (Option<f64>, f64),
    done: Done,
    (before, after): (i64, Option<i64>),
    checks: Vec<CheckResult>,
) -> TatpReport {
    let names: Vec<&'static str> = KINDS.iter().map(|k| k.0).collect();
    let (completed, retries, failed) = done.tally.totals();
    let unsuccessful: u64 = done.tally.rolled_back.iter().sum();
    let checks_passed = checks.iter().filter(|c| c.passed()).count();
    TatpReport {
        benchmark: "tatp",
        mode: mode.name(),
        target,
        server_version,
        subscribers: opts.subscribers,
        clients: opts.clients,
        seed: opts.seed,
        load_seconds,
        warmup_seconds: opts.warmup,
        measured_seconds,
        transactions_per_sec: if measured_seconds > 0.0 {
            completed as f64 / measured_seconds
        } else {
            0.0
        },
        succeeded_percent: if completed > 0 {
            100.0 * (completed - unsuccessful) as f64 / completed as f64
        } else {
            0.0
        },
        by_type: done.tally.by_type(&names),
        retries,
        failed,
        errors: done.tally.errors,
        call_forwardings_before: before,
        call_forwardings_after: after,
        anticache: None,
        checks,
        checks_passed,
    }
}

/// Loads (when asked), runs the terminals, and checks the invariants, over the wire.
pub fn run(target: &Target, opts: &TatpOptions, mode: Mode, progress_bar: bool) -> Result<TatpReport, BenchError> {
    opts.validate()?;
    Target::runtime(opts.clients.max(LOAD_CONNECTIONS))?.block_on(run_async(target, opts, mode, progress_bar))
}

async fn exec(client: &Client, sql: &str) -> Result<(), BenchError> {
    client.batch_execute(sql).await.map_err(|e| {
        let head: String = sql.chars().take(80).collect();
        BenchError::Client(format!("{head}...: {}", describe(&e)))
    })
}

async fn run_async(
    target: &Target,
    opts: &TatpOptions,
    mode: Mode,
    progress_bar: bool,
) -> Result<TatpReport, BenchError> {
    let (admin, server_version) = target.connect_admin().await?;
    let flavor = Flavor::of(&server_version);
    let load_seconds = if opts.load {
        Some(load(target, &admin, opts, progress_bar).await?)
    } else {
        None
    };
    if mode == Mode::Procedures && opts.run {
        for (i, name) in procs::NAMES.iter().enumerate() {
            match flavor {
                Flavor::Permafrost => {
                    exec(&admin, &format!("DROP PROCEDURE IF EXISTS {name}")).await?;
                    exec(&admin, &procs::create(i)).await?;
                }
                Flavor::Postgres => exec(&admin, procs::FUNCTIONS[i]).await?,
            }
        }
    }
    let before = check::count_over_wire(&admin, check::FORWARDINGS)
        .await
        .map_err(BenchError::Client)?;
    let done = if opts.run {
        run_terminals(target, opts, (mode, flavor), progress_bar).await?
    } else {
        Done::new()
    };
    let expected = check::Expected {
        subscribers: opts.subscribers,
        forwardings: before + done.forwardings,
    };
    let checks = check::over_wire(&admin, &expected).await;
    let after = check::count_over_wire(&admin, check::FORWARDINGS).await.ok();
    Ok(report(
        opts,
        mode,
        (target.addr.clone(), server_version),
        (load_seconds, if opts.run { opts.duration } else { 0.0 }),
        done,
        (before, after),
        checks,
    ))
}

/// The loading jobs, taken in turn by the connections (or threads) loading in parallel.
struct Jobs {
    firsts: Vec<u32>,
    next: AtomicU32,
    seed: u64,
    subscribers: u32,
}

impl Jobs {
    fn new(opts: &TatpOptions) -> Jobs {
        Jobs {
            firsts: (1..=opts.subscribers).step_by(SUBSCRIBERS_PER_JOB as usize).collect(),
            next: AtomicU32::new(0),
            seed: opts.seed,
            subscribers: opts.subscribers,
        }
    }

    /// The INSERT statements of the next job not yet taken, if any is left.
    fn take(&self) -> Option<Vec<String>> {
        let &first = self.firsts.get(self.next.fetch_add(1, Ordering::Relaxed) as usize)?;
        Some(data::job_statements(self.seed, first, self.subscribers))
    }
}

/// Loads the population over [`LOAD_CONNECTIONS`] tasks, each `loader(the jobs)`, which
/// connects and runs the statements of the jobs it takes until none is left.
async fn spawn_loaders<F, T>(opts: &TatpOptions, progress_bar: bool, loader: F) -> Result<(), BenchError>
where
    F: Fn(Arc<Jobs>) -> T,
    T: Future<Output = Result<(), BenchError>> + Send + 'static,
{
    if progress_bar {
        eprintln!("loading {} subscribers", opts.subscribers);
    }
    let jobs = Arc::new(Jobs::new(opts));
    let handles: Vec<_> = (0..LOAD_CONNECTIONS)
        .map(|_| tokio::spawn(loader(jobs.clone())))
        .collect();
    for h in handles {
        h.await
            .map_err(|e| BenchError::Client(format!("a loader stopped: {e}")))??;
    }
    Ok(())
}

/// Creates the tables and loads the population over several connections; the seconds taken.
async fn load(target: &Target, admin: &Client, opts: &TatpOptions, progress_bar: bool) -> Result<f64, BenchError> {
    let started = Instant::now();
    for t in procs::TABLES.iter().rev() {
        exec(admin, &format!("DROP TABLE IF EXISTS {t}")).await?;
    }
    for sql in procs::DDL {
        exec(admin, sql).await?;
    }
    spawn_loaders(opts, progress_bar, |jobs| {
        let target = target.clone();
        async move {
            let client = target.connect().await?;
            while let Some(statements) = jobs.take() {
                for sql in statements {
                    exec(&client, &sql).await?;
                }
            }
            Ok(())
        }
    })
    .await?;
    Ok(started.elapsed().as_secs_f64())
}

async fn run_terminals(
    target: &Target,
    opts: &TatpOptions,
    way: (Mode, Flavor),
    progress_bar: bool,
) -> Result<Done, BenchError> {
    spawn_terminals(opts, progress_bar, |inputs, times| {
        let target = target.clone();
        async move { terminal(&target, way, inputs, times).await }
    })
    .await
}

/// Runs `opts.clients` terminals, each `terminal(its inputs, (measure_from, end))` on a task
/// of its own, through the warm-up and the measured seconds; their figures summed.
async fn spawn_terminals<F, T>(opts: &TatpOptions, progress_bar: bool, terminal: F) -> Result<Done, BenchError>
where
    F: Fn(Inputs, (Instant, Instant)) -> T,
    T: Future<Output = Result<Done, BenchError>> + Send + 'static,
{
    if progress_bar {
        eprintln!(
            "running {} terminals: {:.0} s warm-up, {:.0} s measured",
            opts.clients, opts.warmup, opts.duration
        );
    }
    let measure_from = Instant::now() + Duration::from_secs_f64(opts.warmup);
    let end = measure_from + Duration::from_secs_f64(opts.duration);
    let handles: Vec<_> = (0..opts.clients)
        .map(|n| {
            let inputs = Inputs::for_terminal(opts.seed, n, opts.subscribers);
            tokio::spawn(terminal(inputs, (measure_from, end)))
        })
        .collect();
    let mut done = Done::new();
    for h in handles {
        done.add(
            h.await
                .map_err(|e| BenchError::Client(format!("a terminal stopped: {e}")))??,
        );
    }
    Ok(done)
}

/// A connection's statements: the interactive transactions', or the calls.
enum Prepared {
    Interactive(Box<Statements<Statement>>),
    Calls(Vec<Statement>),
}

/// The interactive transactions' statements (procs.rs), each prepared as an `S`.
struct Statements<S> {
    get_subscriber: S,
    get_new_destination: S,
    get_access: S,
    update_facility: S,
    update_subscriber: S,
    update_location: S,
    subscriber_of: S,
    facility_types: S,
    insert_forwarding: S,
    delete_forwarding: S,
}

impl<S> Statements<S> {
    /// The statements' PostgreSQL texts, in the order [`Statements::new`] takes them.
    const TEXTS: [&'static str; 10] = [
        procs::GET_SUBSCRIBER,
        procs::GET_NEW_DESTINATION,
        procs::GET_ACCESS,
        procs::UPDATE_FACILITY,
        procs::UPDATE_SUBSCRIBER,
        procs::UPDATE_LOCATION,
        procs::SUBSCRIBER_OF,
        procs::FACILITY_TYPES,
        procs::INSERT_FORWARDING,
        procs::DELETE_FORWARDING,
    ];

    /// The statements, given each of [`Self::TEXTS`] prepared, in that order.
    fn new(prepared: Vec<S>) -> Statements<S> {
        let mut each = prepared.into_iter();
        let mut next = || each.next().expect("a statement prepared for each text");
        Statements {
            get_subscriber: next(),
            get_new_destination: next(),
            get_access: next(),
            update_facility: next(),
            update_subscriber: next(),
            update_location: next(),
            subscriber_of: next(),
            facility_types: next(),
            insert_forwarding: next(),
            delete_forwarding: next(),
        }
    }
}

/// The call of procedure `i` (`verb`: CALL, or SELECT for PostgreSQL's functions), its
/// arguments `$1, $2, ...`.
fn call_text(verb: &str, i: usize) -> String {
    let params: Vec<String> = (1..=[1, 4, 2, 4, 3, 6, 4][i]).map(|n| format!("${n}")).collect();
    format!("{verb} {}({})", procs::NAMES[i], params.join(", "))
}

/// A call's arguments for `input` (the procedures' signatures: procs.rs), each made by
/// `int`, `small` or `text` as the client's driver takes it.
fn arguments<V>(input: &Input, int: impl Fn(i32) -> V, small: impl Fn(i16) -> V, text: impl Fn(&str) -> V) -> Vec<V> {
    let nbr = || text(&sub_nbr(input.subscriber()));
    match input {
        Input::GetSubscriberData { s } => vec![int(*s)],
        Input::GetNewDestination {
            s,
            sf_type,
            start_time,
            end_time,
        } => vec![int(*s), small(*sf_type), small(*start_time), small(*end_time)],
        Input::GetAccessData { s, ai_type } => vec![int(*s), small(*ai_type)],
        Input::UpdateSubscriberData {
            s,
            bit_1,
            sf_type,
            data_a,
        } => vec![int(*s), small(*bit_1), small(*sf_type), small(*data_a)],
        Input::UpdateLocation { s, vlr_location } => vec![int(*s), nbr(), int(*vlr_location)],
        Input::InsertCallForwarding {
            s,
            sf_type,
            start_time,
            end_time,
            numberx,
        } => vec![
            int(*s),
            nbr(),
            small(*sf_type),
            small(*start_time),
            small(*end_time),
            text(numberx),
        ],
        Input::DeleteCallForwarding { s, sf_type, start_time } => {
            vec![int(*s), nbr(), small(*sf_type), small(*start_time)]
        }
    }
}

impl Prepared {
    async fn new(c: &Client, (mode, flavor): (Mode, Flavor)) -> Result<Prepared, tokio_postgres::Error> {
        if mode == Mode::Procedures {
            let verb = match flavor {
                Flavor::Permafrost => "CALL",
                Flavor::Postgres => "SELECT",
            };
            let mut calls = Vec::new();
            for i in 0..procs::NAMES.len() {
                calls.push(c.prepare(&call_text(verb, i)).await?);
            }
            return Ok(Prepared::Calls(calls));
        }
        let mut prepared = Vec::new();
        for sql in Statements::<Statement>::TEXTS {
            prepared.push(c.prepare(sql).await?);
        }
        Ok(Prepared::Interactive(Box::new(Statements::new(prepared))))
    }

    /// One attempt at `input`: whether it succeeded.
    async fn attempt(&self, client: &mut Client, input: &Input) -> Result<bool, tokio_postgres::Error> {
        match self {
            Prepared::Calls(calls) => {
                let nbr = sub_nbr(input.subscriber());
                let params: Vec<&(dyn ToSql + Sync)> = match input {
                    Input::GetSubscriberData { s } => vec![s],
                    Input::GetNewDestination {
                        s,
                        sf_type,
                        start_time,
                        end_time,
                    } => vec![s, sf_type, start_time, end_time],
                    Input::GetAccessData { s, ai_type } => vec![s, ai_type],
                    Input::UpdateSubscriberData {
                        s,
                        bit_1,
                        sf_type,
                        data_a,
                    } => vec![s, bit_1, sf_type, data_a],
                    Input::UpdateLocation { s, vlr_location } => vec![s, &nbr, vlr_location],
                    Input::InsertCallForwarding {
                        s,
                        sf_type,
                        start_time,
                        end_time,
                        numberx,
                    } => vec![s, &nbr, sf_type, start_time, end_time, numberx],
                    Input::DeleteCallForwarding { s, sf_type, start_time } => vec![s, &nbr, sf_type, start_time],
                };
                let row = client.query_one(&calls[input.kind()], &params).await?;
                Ok(row.get::<_, i64>(0) > 0)
            }
            Prepared::Interactive(st) => interactive(client, st, input).await,
        }
    }
}

/// The description's transactions, one statement per round trip: a single statement on its
/// own, several inside BEGIN ... COMMIT.
async fn interactive(
    client: &mut Client,
    st: &Statements<Statement>,
    input: &Input,
) -> Result<bool, tokio_postgres::Error> {
    match input {
        Input::GetSubscriberData { s } => Ok(client.query_opt(&st.get_subscriber, &[s]).await?.is_some()),
        Input::GetNewDestination {
            s,
            sf_type,
            start_time,
            end_time,
        } => Ok(!client
            .query(&st.get_new_destination, &[s, sf_type, start_time, end_time])
            .await?
            .is_empty()),
        Input::GetAccessData { s, ai_type } => Ok(client.query_opt(&st.get_access, &[s, ai_type]).await?.is_some()),
        Input::UpdateSubscriberData {
            s,
            bit_1,
            sf_type,
            data_a,
        } => {
            let tx = client.transaction().await?;
            if tx.execute(&st.update_facility, &[data_a, s, sf_type]).await? == 0 {
                tx.rollback().await?;
                return Ok(false);
            }
            tx.execute(&st.update_subscriber, &[bit_1, s]).await?;
            tx.commit().await?;
            Ok(true)
        }
        Input::UpdateLocation { s, vlr_location } => Ok(client
            .execute(&st.update_location, &[vlr_location, &sub_nbr(*s)])
            .await?
            > 0),
        Input::InsertCallForwarding {
            s,
            sf_type,
            start_time,
            end_time,
            numberx,
        } => {
            let tx = client.transaction().await?;
            let Some(row) = tx.query_opt(&st.subscriber_of, &[&sub_nbr(*s)]).await? else {
                tx.rollback().await?;
                return Ok(false);
            };
            let id: i32 = row.get(0);
            let types = tx.query(&st.facility_types, &[&id]).await?;
            if !types.iter().any(|r| r.get::<_, i16>(0) == *sf_type) {
                tx.rollback().await?;
                return Ok(false);
            }
            let n = tx
                .execute(&st.insert_forwarding, &[&id, sf_type, start_time, end_time, numberx])
                .await?;
            tx.commit().await?;
            Ok(n > 0)
        }
        Input::DeleteCallForwarding { s, sf_type, start_time } => {
            let tx = client.transaction().await?;
            let Some(row) = tx.query_opt(&st.subscriber_of, &[&sub_nbr(*s)]).await? else {
                tx.rollback().await?;
                return Ok(false);
            };
            let id: i32 = row.get(0);
            let n = tx.execute(&st.delete_forwarding, &[&id, sf_type, start_time]).await?;
            tx.commit().await?;
            Ok(n > 0)
        }
    }
}

/// One terminal: its connection runs transactions until `end`, those begun after
/// `measure_from` counted.
async fn terminal(
    target: &Target,
    way: (Mode, Flavor),
    mut inputs: Inputs,
    (measure_from, end): (Instant, Instant),
) -> Result<Done, BenchError> {
    let mut client = target.connect().await?;
    let prepared = Prepared::new(&client, way)
        .await
        .map_err(|e| BenchError::Client(format!("preparing TATP's statements: {}", describe(&e))))?;
    let mut done = Done::new();
    while Instant::now() < end {
        let began = Instant::now();
        let input = inputs.draw();
        let mut retries = 0;
        let outcome = loop {
            match prepared.attempt(&mut client, &input).await {
                Err(e) if retryable(&e) && retries + 1 < MAX_ATTEMPTS => retries += 1,
                other => break other,
            }
        };
        if let Err(e) = &outcome
            && e.is_closed()
        {
            return Err(BenchError::Client(format!("the connection closed: {}", describe(e))));
        }
        done.note(
            &input,
            outcome.map_err(|e| describe(&e)),
            retries,
            began,
            began >= measure_from,
        );
    }
    Ok(done)
}
