//! Voter against an embedded Permafrost database: the Vote procedure called through
//! pipelining [`Session`]s, one client thread per partition, each keeping its share of the
//! terminals' calls in flight (one per terminal, as over the wire). The tables are created
//! by the same DDL and loaded by the same statements as over the wire; the invariants are
//! the same queries.

use std::time::{Duration, Instant};

use permafrost_executor::{Completion, Database, ProcHandle, Session};
use permafrost_types::Value;

use super::data::Caller;
use super::{Mode, Tally, VoterOptions, check, load_statements, procs, report};
use crate::BenchError;
use crate::report::AnticacheReport;
use crate::way::Flavor;
use crate::way::MAX_ATTEMPTS;

/// Loads (when asked), runs `opts.clients` terminals from `threads` client threads, and
/// checks the invariants.
pub fn run(
    db: &Database,
    opts: &VoterOptions,
    threads: usize,
    progress_bar: bool,
) -> Result<super::VoterReport, BenchError> {
    opts.validate()?;
    let threads = threads.clamp(1, opts.clients);
    let load_seconds = if opts.load {
        let started = Instant::now();
        for sql in procs::ddl(Flavor::Permafrost).into_iter().chain(load_statements(opts)) {
            crate::setup::load_statement(db, &sql, &"Voter")?;
        }
        Some(started.elapsed().as_secs_f64())
    } else {
        None
    };
    db.register(procs::vote())?;
    let count =
        |sql: &str, params: Vec<i64>| crate::setup::count(db, sql, params.into_iter().map(Value::Int).collect());
    let before = count(check::COUNT, Vec::new()).map_err(BenchError::Client)?;
    let tally = if opts.run {
        if progress_bar {
            eprintln!(
                "running {} terminals from {threads} threads: {:.0} s warm-up, {:.0} s measured",
                opts.clients, opts.warmup, opts.duration
            );
        }
        run_terminals(db, opts, threads)?
    } else {
        Tally::new()
    };
    let anticache = AnticacheReport::now(db);
    let checks = check::with(&count, opts.max_votes as i64, before + tally.recorded as i64);
    let after = count(check::COUNT, Vec::new()).ok();
    let mut report = report(
        opts,
        Mode::Embedded,
        (
            format!("embedded ({} partitions, {} client threads)", db.partitions(), threads),
            format!("Permafrost {} (embedded)", env!("CARGO_PKG_VERSION")),
        ),
        (load_seconds, if opts.run { opts.duration } else { 0.0 }),
        tally,
        (before, after),
        checks,
    );
    report.anticache = Some(anticache);
    Ok(report)
}

/// A terminal's calls, and its call in flight.
struct Terminal {
    caller: Caller,
    args: Vec<Value>,
    began: Instant,
    retries: u32,
}

impl Terminal {
    fn next(&mut self, max: i32, now: Instant) {
        let c = self.caller.call();
        self.args = vec![
            Value::Int(c.vote_id),
            Value::Int(c.phone),
            Value::Int(c.contestant as i64),
            Value::Int(max as i64),
        ];
        self.began = now;
        self.retries = 0;
    }
}

fn run_terminals(db: &Database, opts: &VoterOptions, threads: usize) -> Result<Tally, BenchError> {
    let vote = db.procedure(procs::NAME)?;
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(opts.warmup);
    let end = measure_from + Duration::from_secs_f64(opts.duration);
    let first_id = VoterOptions::first_vote_id();
    std::thread::scope(|s| {
        let joins: Vec<_> = (0..threads)
            .map(|t| {
                let terminals: Vec<Terminal> = (0..opts.clients)
                    .filter(|n| n % threads == t)
                    .map(|n| {
                        let caller = Caller::new(opts.seed, n, opts.clients, opts.contestants, opts.numbers, first_id);
                        let mut t = Terminal {
                            caller,
                            args: Vec::new(),
                            began: start,
                            retries: 0,
                        };
                        t.next(opts.max_votes, start);
                        t
                    })
                    .collect();
                let (vote, max) = (&vote, opts.max_votes);
                s.spawn(move || drive(db.session(), vote, terminals, max, (measure_from, end)))
            })
            .collect();
        let mut tally = Tally::new();
        for j in joins {
            tally.add(
                j.join()
                    .map_err(|_| BenchError::Client("a client thread panicked".into()))??,
            );
        }
        Ok(tally)
    })
}

/// One client thread: keeps each of its terminals' calls in flight until `end`.
fn drive(
    mut session: Session,
    vote: &ProcHandle,
    mut terminals: Vec<Terminal>,
    max: i32,
    (measure_from, end): (Instant, Instant),
) -> Result<Tally, BenchError> {
    let mut tally = Tally::new();
    session.set_batch(16);
    for (n, t) in terminals.iter_mut().enumerate() {
        t.began = Instant::now();
        session.submit(vote, t.args.clone(), n as u64)?;
    }
    let mut done: Vec<Completion> = Vec::new();
    while session.in_flight() > 0 {
        done.clear();
        session.wait(&mut done)?;
        let now = Instant::now();
        for c in done.drain(..) {
            let n = c.token as usize;
            let t = &mut terminals[n];
            let outcome = match c.result {
                Err(e) if e.is_retryable() && t.retries + 1 < MAX_ATTEMPTS => {
                    t.retries += 1;
                    session.submit(vote, t.args.clone(), n as u64)?;
                    continue;
                }
                Ok(rows) => (!rows.is_empty())
                    .then(|| rows.row(0).get_i64(0))
                    .flatten()
                    .ok_or_else(|| "Vote returned no code".to_string()),
                Err(e) => Err(e.to_string()),
            };
            tally.note(outcome, t.retries, t.began, t.began >= measure_from);
            if now < end {
                t.next(max, now);
                session.submit(vote, t.args.clone(), n as u64)?;
            }
        }
    }
    Ok(tally)
}
