//! TPC-C against an embedded Permafrost database: the stored procedures of procs.rs called
//! through pipelining [`Session`]s, one client thread per partition, each keeping its share
//! of the terminals in flight (every terminal has one transaction in flight at a time, as
//! over the wire). The tables are created by the same plain DDL and loaded by the same
//! statements as over the wire; the consistency conditions are the same queries.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use permafrost_executor::{Completion, Database, Error, ProcHandle, Session};
use permafrost_types::Value;
use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::check::{CONDITIONS, CheckResult, DISTRICTS_QUERY, PER_DISTRICT};
use super::inputs::{Customer, Input, Inputs};
use super::options::TpccOptions;
use super::procs::{self, INVALID_ITEM};
use super::random::{NuConstants, TxnType};
use super::schema;
use super::{Mode, Tally, TpccReport, note_error, report};
use crate::BenchError;
use crate::way::{Flavor, MAX_ATTEMPTS};

/// Loads (when asked), runs `opts.clients` terminals from `threads` client threads, and
/// checks the consistency conditions.
pub fn run(db: &Database, opts: &TpccOptions, threads: usize, progress_bar: bool) -> Result<TpccReport, BenchError> {
    opts.validate()?;
    let threads = threads.clamp(1, opts.clients);
    let nu = NuConstants::draw(&mut SmallRng::seed_from_u64(opts.seed));
    let load_seconds = if opts.load {
        Some(load(db, opts, nu.c_last, progress_bar)?)
    } else {
        None
    };
    for def in procs::library() {
        db.register(def)?;
    }
    let (tally, measured) = if opts.run {
        (run_terminals(db, opts, nu, threads, progress_bar)?, opts.duration)
    } else {
        (Tally::new(), 0.0)
    };
    let checks = check(db);
    Ok(report(
        opts,
        Mode::Embedded,
        (
            format!("embedded ({} partitions, {} client threads)", db.partitions(), threads),
            format!("Permafrost {} (embedded)", env!("CARGO_PKG_VERSION")),
        ),
        load_seconds,
        measured,
        tally,
        checks,
    ))
}

/// Creates the tables and runs the loading statements from two threads; the seconds taken.
fn load(db: &Database, opts: &TpccOptions, c_last_c: u32, progress_bar: bool) -> Result<f64, BenchError> {
    let started = Instant::now();
    for ddl in schema::ddl(Flavor::Permafrost) {
        db.execute_sql(&ddl, Vec::new())?;
    }
    let (jobs, bar) = schema::planned_jobs(opts, progress_bar);
    let jobs = Mutex::new(jobs);
    let loaded = AtomicU64::new(0);
    std::thread::scope(|s| -> Result<(), BenchError> {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (jobs, loaded, bar) = (&jobs, &loaded, &bar);
                s.spawn(move || -> Result<(), BenchError> {
                    loop {
                        let Some(job) = jobs
                            .lock()
                            .map_err(|_| BenchError::Client("loader panicked".into()))?
                            .pop()
                        else {
                            return Ok(());
                        };
                        for sql in schema::statements(job, opts, c_last_c) {
                            crate::setup::load_statement(db, &sql, &job)?;
                        }
                        let n = loaded.fetch_add(schema::job_rows(job, &opts.scale), Ordering::Relaxed);
                        bar.set_position(n + schema::job_rows(job, &opts.scale));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| BenchError::Client("a loader panicked".into()))??;
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    Ok(started.elapsed().as_secs_f64())
}

/// Counts each condition's violations with the same queries as over the wire (those of
/// [`PER_DISTRICT`] once per district, added up).
fn check(db: &Database) -> Vec<CheckResult> {
    let count = |sql: &str, params: Vec<Value>| crate::setup::count(db, sql, params);
    let districts: Result<Vec<Vec<Value>>, String> = db
        .execute_sql(DISTRICTS_QUERY, Vec::new())
        .map(|rows| rows.to_values())
        .map_err(|e| e.to_string());
    CONDITIONS
        .iter()
        .map(|(clause, condition, sql)| {
            let start = Instant::now();
            let result = if PER_DISTRICT.contains(clause) {
                districts
                    .clone()
                    .and_then(|ds| ds.into_iter().map(|wd| count(sql, wd)).sum::<Result<i64, String>>())
            } else {
                count(sql, Vec::new())
            };
            let (violations, error) = match result {
                Ok(n) => (Some(n), None),
                Err(e) => (None, Some(e)),
            };
            CheckResult {
                clause: clause.to_string(),
                condition: condition.to_string(),
                violations,
                error,
                seconds: start.elapsed().as_secs_f64(),
            }
        })
        .collect()
}

/// A call's arguments for `input` (the procedures' signatures: procs.rs).
pub fn arguments(input: &Input) -> (usize, Vec<Value>) {
    let customer = |c: &Customer| match c {
        Customer::ById(id) => (Value::Int(*id as i64), Value::Null),
        Customer::ByName(name) => (Value::Null, Value::from(name.as_str())),
    };
    let list = |xs: &mut dyn Iterator<Item = i32>| {
        let items: Vec<String> = xs.map(|x| x.to_string()).collect();
        Value::from(format!("{{{}}}", items.join(",")).as_str())
    };
    let i = |x: i32| Value::Int(x as i64);
    let kind = input.kind().index();
    let args = match input {
        Input::NewOrder { w, d, c, lines } => vec![
            i(*w),
            i(*d),
            i(*c),
            list(&mut lines.iter().map(|l| l.0)),
            list(&mut lines.iter().map(|l| l.1)),
            list(&mut lines.iter().map(|l| l.2)),
        ],
        Input::Payment {
            w,
            d,
            c_w,
            c_d,
            customer: who,
            cents,
        } => {
            let (id, last) = customer(who);
            vec![i(*w), i(*d), i(*c_w), i(*c_d), id, last, i(*cents)]
        }
        Input::OrderStatus { w, d, customer: who } => {
            let (id, last) = customer(who);
            vec![i(*w), i(*d), id, last]
        }
        Input::Delivery { w, carrier } => vec![i(*w), i(*carrier)],
        Input::StockLevel { w, d, threshold } => vec![i(*w), i(*d), i(*threshold)],
    };
    (kind, args)
}

/// A terminal: its inputs, and its transaction in flight.
struct Terminal {
    inputs: Inputs,
    input: Input,
    began: Instant,
    retries: u32,
}

fn run_terminals(
    db: &Database,
    opts: &TpccOptions,
    nu: NuConstants,
    threads: usize,
    progress_bar: bool,
) -> Result<Tally, BenchError> {
    if progress_bar {
        eprintln!(
            "running {} terminals from {threads} threads: {:.0} s warm-up, {:.0} s measured",
            opts.clients, opts.warmup, opts.duration
        );
    }
    let handles: Vec<ProcHandle> = procs::NAMES.iter().map(|n| db.procedure(n)).collect::<Result<_, _>>()?;
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(opts.warmup);
    let end = measure_from + Duration::from_secs_f64(opts.duration);
    let tally = Arc::new(Mutex::new(Tally::new()));
    std::thread::scope(|s| -> Result<(), BenchError> {
        let mut joins = Vec::new();
        for t in 0..threads {
            let terminals: Vec<Terminal> = (0..opts.clients)
                .filter(|n| n % threads == t)
                .map(|n| {
                    let mut inputs = Inputs::for_terminal(opts, nu, n);
                    let input = inputs.draw();
                    Terminal {
                        inputs,
                        input,
                        began: start,
                        retries: 0,
                    }
                })
                .collect();
            let (handles, tally) = (&handles, tally.clone());
            joins.push(s.spawn(move || -> Result<(), BenchError> {
                let mine = drive(db.session(), handles, terminals, measure_from, end)?;
                tally
                    .lock()
                    .map_err(|_| BenchError::Client("a client thread panicked".into()))?
                    .add(mine);
                Ok(())
            }));
        }
        for j in joins {
            j.join()
                .map_err(|_| BenchError::Client("a client thread panicked".into()))??;
        }
        Ok(())
    })?;
    Arc::try_unwrap(tally)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .ok_or_else(|| BenchError::Client("a client thread panicked".into()))
}

/// One client thread: keeps each of its terminals' transactions in flight until `end`.
fn drive(
    mut session: Session,
    handles: &[ProcHandle],
    mut terminals: Vec<Terminal>,
    measure_from: Instant,
    end: Instant,
) -> Result<Tally, BenchError> {
    let mut tally = Tally::new();
    session.set_batch(16);
    let submit = |session: &mut Session, t: &mut Terminal, token: usize| -> Result<(), BenchError> {
        let (kind, args) = arguments(&t.input);
        session.submit(&handles[kind], args, token as u64)?;
        Ok(())
    };
    let now = Instant::now();
    for (n, t) in terminals.iter_mut().enumerate() {
        t.began = now;
        submit(&mut session, t, n)?;
    }
    let mut done: Vec<Completion> = Vec::new();
    while session.in_flight() > 0 {
        done.clear();
        session.wait(&mut done)?;
        let now = Instant::now();
        for c in done.drain(..) {
            let n = c.token as usize;
            let t = &mut terminals[n];
            let kind = t.input.kind().index();
            let counted = t.began >= measure_from;
            match c.result {
                Err(e) if e.is_retryable() && t.retries + 1 < MAX_ATTEMPTS => {
                    t.retries += 1;
                    submit(&mut session, t, n)?;
                    continue;
                }
                result if counted => {
                    tally.retries[kind] += t.retries as u64;
                    match result {
                        Ok(rows) => {
                            tally.completed[kind] += 1;
                            if t.input.kind() == TxnType::Delivery && !rows.is_empty() {
                                tally.skipped_deliveries += rows.row(0).get_i64(1).unwrap_or(0) as u64;
                            }
                        }
                        Err(Error::Aborted(m)) if m == INVALID_ITEM && t.input.kind() == TxnType::NewOrder => {
                            tally.completed[kind] += 1;
                            tally.rolled_back[kind] += 1;
                        }
                        Err(e) => {
                            tally.failed[kind] += 1;
                            note_error(&mut tally.errors, format!("{}: {e}", t.input.kind().name()));
                        }
                    }
                    let micros = now.duration_since(t.began).as_micros() as u64;
                    tally.latency[kind].saturating_record(micros.max(1));
                }
                _ => {}
            }
            if now < end {
                t.input = t.inputs.draw();
                t.began = now;
                t.retries = 0;
                submit(&mut session, t, n)?;
            }
        }
    }
    Ok(tally)
}
