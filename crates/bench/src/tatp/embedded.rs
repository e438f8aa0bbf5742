//! TATP against an embedded Permafrost database: the seven procedures called through
//! pipelining [`Session`]s, one client thread per partition, each keeping its share of the
//! terminals' transactions in flight (one per terminal). The tables are created by the
//! same DDL and loaded by the same statements as over the wire, from two threads; the
//! invariants are the same queries.

use std::time::{Duration, Instant};

use permafrost_executor::{Completion, Database, ProcHandle, Session};
use permafrost_types::Value;

use super::data::{Input, Inputs};
use super::{Done, Jobs, Mode, TatpOptions, TatpReport, arguments, check, procs, report};
use crate::BenchError;
use crate::report::AnticacheReport;
use crate::way::MAX_ATTEMPTS;

/// Loads (when asked), runs `opts.clients` terminals from `threads` client threads, and
/// checks the invariants.
pub fn run(db: &Database, opts: &TatpOptions, threads: usize, progress_bar: bool) -> Result<TatpReport, BenchError> {
    opts.validate()?;
    let threads = threads.clamp(1, opts.clients);
    let load_seconds = if opts.load {
        Some(load(db, opts, progress_bar)?)
    } else {
        None
    };
    for def in procs::library() {
        db.register(def)?;
    }
    let count =
        |sql: &str, params: Vec<i64>| crate::setup::count(db, sql, params.into_iter().map(Value::Int).collect());
    let before = count(check::FORWARDINGS, Vec::new()).map_err(BenchError::Client)?;
    let done = if opts.run {
        if progress_bar {
            eprintln!(
                "running {} terminals from {threads} threads: {:.0} s warm-up, {:.0} s measured",
                opts.clients, opts.warmup, opts.duration
            );
        }
        run_terminals(db, opts, threads)?
    } else {
        Done::new()
    };
    let anticache = AnticacheReport::now(db);
    let expected = check::Expected {
        subscribers: opts.subscribers,
        forwardings: before + done.forwardings,
    };
    let checks = check::with(&count, &expected);
    let after = count(check::FORWARDINGS, Vec::new()).ok();
    let mut report = report(
        opts,
        Mode::Embedded,
        (
            format!("embedded ({} partitions, {} client threads)", db.partitions(), threads),
            format!("Permafrost {} (embedded)", env!("CARGO_PKG_VERSION")),
        ),
        (load_seconds, if opts.run { opts.duration } else { 0.0 }),
        done,
        (before, after),
        checks,
    );
    report.anticache = Some(anticache);
    Ok(report)
}

/// Creates the tables and runs the loading statements from two threads; the seconds taken.
fn load(db: &Database, opts: &TatpOptions, progress_bar: bool) -> Result<f64, BenchError> {
    let started = Instant::now();
    for sql in procs::DDL {
        db.execute_sql(sql, Vec::new())?;
    }
    if progress_bar {
        eprintln!("loading {} subscribers", opts.subscribers);
    }
    let jobs = Jobs::new(opts);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| -> Result<(), BenchError> {
                    while let Some(statements) = jobs.take() {
                        for sql in statements {
                            crate::setup::load_statement(db, &sql, &"TATP")?;
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| BenchError::Client("a loader panicked".into()))??;
        }
        Ok::<(), BenchError>(())
    })?;
    Ok(started.elapsed().as_secs_f64())
}

/// A terminal: its inputs, and its transaction in flight.
struct Terminal {
    inputs: Inputs,
    input: Input,
    began: Instant,
    retries: u32,
}

fn run_terminals(db: &Database, opts: &TatpOptions, threads: usize) -> Result<Done, BenchError> {
    let handles: Vec<ProcHandle> = procs::NAMES.iter().map(|n| db.procedure(n)).collect::<Result<_, _>>()?;
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(opts.warmup);
    let end = measure_from + Duration::from_secs_f64(opts.duration);
    std::thread::scope(|s| {
        let joins: Vec<_> = (0..threads)
            .map(|t| {
                let terminals: Vec<Terminal> = (0..opts.clients)
                    .filter(|n| n % threads == t)
                    .map(|n| {
                        let mut inputs = Inputs::for_terminal(opts.seed, n, opts.subscribers);
                        let input = inputs.draw();
                        Terminal {
                            inputs,
                            input,
                            began: start,
                            retries: 0,
                        }
                    })
                    .collect();
                let handles = &handles;
                s.spawn(move || drive(db.session(), handles, terminals, (measure_from, end)))
            })
            .collect();
        let mut done = Done::new();
        for j in joins {
            done.add(
                j.join()
                    .map_err(|_| BenchError::Client("a client thread panicked".into()))??,
            );
        }
        Ok(done)
    })
}

/// One client thread: keeps each of its terminals' transactions in flight until `end`.
fn drive(
    mut session: Session,
    handles: &[ProcHandle],
    mut terminals: Vec<Terminal>,
    (measure_from, end): (Instant, Instant),
) -> Result<Done, BenchError> {
    let mut done = Done::new();
    session.set_batch(16);
    let submit = |session: &mut Session, t: &Terminal, n: usize| -> Result<(), BenchError> {
        let args = arguments(
            &t.input,
            |x| Value::Int(x as i64),
            |x| Value::Int(x as i64),
            |x| Value::from(x),
        );
        session.submit(&handles[t.input.kind()], args, n as u64)?;
        Ok(())
    };
    for (n, t) in terminals.iter_mut().enumerate() {
        t.began = Instant::now();
        submit(&mut session, t, n)?;
    }
    let mut completions: Vec<Completion> = Vec::new();
    while session.in_flight() > 0 {
        completions.clear();
        session.wait(&mut completions)?;
        let now = Instant::now();
        for c in completions.drain(..) {
            let n = c.token as usize;
            let t = &mut terminals[n];
            let outcome = match c.result {
                Err(e) if e.is_retryable() && t.retries + 1 < MAX_ATTEMPTS => {
                    t.retries += 1;
                    submit(&mut session, t, n)?;
                    continue;
                }
                Ok(rows) => (!rows.is_empty())
                    .then(|| rows.row(0).get_i64(0))
                    .flatten()
                    .map(|d| d > 0)
                    .ok_or_else(|| "the procedure returned nothing".to_string()),
                Err(e) => Err(e.to_string()),
            };
            done.note(&t.input, outcome, t.retries, t.began, t.began >= measure_from);
            if now < end {
                t.input = t.inputs.draw();
                t.began = now;
                t.retries = 0;
                submit(&mut session, t, n)?;
            }
        }
    }
    Ok(done)
}
