//! A deterministic step harness for the partition loop (tests only).
//!
//! The partitions of a database opened with [`Database::open_parts`] are not given threads:
//! the harness holds them and their queues, and hands each queued message to its partition
//! itself, one message per partition per step (partitions with a message in the same step
//! run side by side, as a multi-partition transaction needs), then prints what happened:
//! the message, the partition's counters that changed (commits, aborts, restarts, evicted
//! and merged tuples, blocks written and read, parked transactions) and the command log's
//! last LSN. A command of the script (a SQL statement, a procedure call, a snapshot, an
//! eviction) runs on a helper thread while the harness steps the partitions until it has
//! returned and no block I/O is left in flight; then its answer is printed.
//!
//! Scripts are the `.txt` files in `crates/executor/testdata/step/`: lines starting with
//! `> ` are commands, `#` lines are comments, anything else is output, which must equal
//! what the harness prints. After an intended change, regenerate them with
//!
//! ```text
//! UPDATE_GOLDEN=1 cargo test -p permafrost-executor --lib stepper
//! ```
//!
//! and review the diff. Commands:
//!
//! * `sql STATEMENT`: an ad hoc statement (DDL, DML or a query), routed as any other;
//! * `call PROC ARG...`: a registered procedure (`Put k v`, `PutBig k` with a 1,000-byte
//!   value, `Get k`, `Set k v`, `PutThenAbort k v`, `CountAll` over every partition);
//!   arguments are integers, `'text'` or `null`;
//! * `evict P BYTES`: an eviction round of about BYTES at partition P;
//! * `snapshot`: a snapshot of every partition.

use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use permafrost_sql::Rows;
use permafrost_types::Value;

use crate::config::{AntiCacheConfig, Config, LogConfig, LogMode, SnapshotConfig};
use crate::counters::DatabaseStats;
use crate::database::Database;
use crate::error::Result;
use crate::partition::msg::{MpWork, Msg};
use crate::partition::state::Partition;
use crate::procedure::ProcedureDef;

/// How long the harness waits for a message it expects (an I/O completion, a command's
/// next message) before it gives up.
const PATIENCE: Duration = Duration::from_secs(20);

/// The counters a step prints when they change, by field ([`COUNTERS`](crate::COUNTERS));
/// the memory figures, which follow allocation sizes, and times are left out.
fn counters(p: &Partition) -> Vec<(&'static str, u64)> {
    let mut d = DatabaseStats::default();
    d.add(&p.stats);
    d.values()
        .filter(|(c, _)| !c.metric.is_empty() && !c.field.ends_with("_nanos") && c.field != "directory_bytes")
        .map(|(c, v)| (c.field, v))
        .collect()
}

/// What a message is, as the transcript names it.
fn describe(p: usize, m: &Msg) -> String {
    match m {
        Msg::Batch(invs) => {
            let names: Vec<&str> = invs
                .iter()
                .map(|i| if i.proc.adhoc { "ad hoc" } else { i.proc.name.as_str() })
                .collect();
            format!("batch [{}]", names.join(", "))
        }
        Msg::Mp(t) => {
            let role = if t.parts.first() == Some(&(p as u32)) {
                "coordinate"
            } else {
                "participate in"
            };
            let what = match &t.work {
                MpWork::Call { proc, .. } if proc.adhoc => "an ad hoc statement".to_string(),
                MpWork::Call { proc, .. } => format!("call {}", proc.name),
                MpWork::Ddl { .. } => "a schema change".to_string(),
                MpWork::Snapshot(job) => format!("snapshot {}", job.epoch),
            };
            format!("{role} {what} over partitions {:?}", t.parts)
        }
        Msg::Fetched { block, result } => {
            format!("fetched block {block}{}", if result.is_ok() { "" } else { " (failed)" })
        }
        Msg::Written { blocks, result } => {
            format!(
                "written blocks {blocks:?}{}",
                if result.is_ok() { "" } else { " (failed)" }
            )
        }
        Msg::MpFetch { refs, .. } => format!("fetch {} evicted tuples for a multi-partition call", refs.len()),
        Msg::Inspect(_) => "inspect".into(),
        Msg::EvictedKeys(..) => "read evicted keys".into(),
        Msg::EvictedTuples(..) => "read evicted tuples to move".into(),
        Msg::Observe(_) => "observe".into(),
        Msg::Evict(bytes, _) => format!("evict {bytes} bytes"),
        Msg::Publish(_) => "publish".into(),
        Msg::Durable => "durable".into(),
        Msg::Restore(..) => "restore".into(),
        Msg::SnapshotDone { epoch, base } => {
            format!(
                "snapshot {epoch} done{}",
                if *base { " (whole directories)" } else { "" }
            )
        }
        Msg::ScanRead { blocks, .. } => format!("scan read {blocks:?}"),
        Msg::ScansEnded => "scans ended".into(),
        Msg::CheckMemory => "check memory".into(),
        Msg::Shutdown => "shutdown".into(),
    }
}

fn parse_value(t: &str) -> Value {
    if t.eq_ignore_ascii_case("null") {
        Value::Null
    } else if let Some(s) = t.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        Value::from(s)
    } else {
        Value::Int(t.parse().unwrap_or_else(|_| panic!("bad argument {t}")))
    }
}

fn render(r: &Result<Rows>) -> String {
    match r {
        Ok(rows) if rows.columns().is_empty() => format!("ok, {} affected", rows.affected),
        Ok(rows) if rows.is_empty() => "no rows".into(),
        Ok(rows) => {
            let short = |v: String| match v.char_indices().nth(12) {
                Some((cut, _)) => format!("{}... ({} bytes)", &v[..cut], v.len()),
                None => v,
            };
            let rows: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!(
                        "({})",
                        r.values().map(|v| short(v.to_string())).collect::<Vec<_>>().join(", ")
                    )
                })
                .collect();
            format!("rows {}", rows.join(" "))
        }
        Err(e) => format!("error {}: {e}", e.sqlstate()),
    }
}

/// What a partition's worker reports after each message.
struct Report {
    counters: Vec<(&'static str, u64)>,
    /// Block I/O in flight or fetched blocks to merge.
    busy: bool,
}

/// The thread that runs one partition's messages, always the same one (as in the engine:
/// a snapshot writer forked by a partition lives as long as that thread).
struct Worker {
    work: crossbeam_channel::Sender<Msg>,
    done: Receiver<Report>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    fn start(mut part: Partition) -> Worker {
        let (work, rx) = crossbeam_channel::unbounded::<Msg>();
        let (tx, done) = crossbeam_channel::unbounded();
        let report = |p: &Partition| Report {
            counters: counters(p),
            busy: p.ac.as_ref().is_some_and(|a| a.busy()) || p.has_paced(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("step-partition-{}", part.id))
            .stack_size(permafrost_sql::limits::EXECUTION_STACK)
            .spawn(move || {
                let _ = tx.send(report(&part));
                for msg in rx {
                    part.handle(msg);
                    part.retry_paced();
                    part.end_pass(true);
                    let _ = tx.send(report(&part));
                }
            })
            .expect("partition worker");
        Worker {
            work,
            done,
            thread: Some(thread),
        }
    }
}

/// A database whose partitions the harness runs.
struct Harness {
    db: Database,
    workers: Vec<Worker>,
    queues: Vec<Receiver<Msg>>,
    /// The counters as last printed, per partition, and whether it has I/O in flight.
    last: Vec<Vec<(&'static str, u64)>>,
    busy: Vec<bool>,
    last_lsn: u64,
    out: String,
    _dir: tempfile::TempDir,
}

impl Drop for Harness {
    fn drop(&mut self) {
        for w in &mut self.workers {
            let (tx, _) = crossbeam_channel::unbounded();
            drop(std::mem::replace(&mut w.work, tx));
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl Harness {
    /// Two partitions, the anti-cache (4 KiB blocks, a budget large enough that only
    /// `evict` evicts), the command log (async: an answer does not wait for the disk, so
    /// the steps do not depend on when a group commit ends) and snapshots on demand.
    fn open() -> Harness {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut ac = AntiCacheConfig::new(dir.path().join("blocks"));
        ac.block_size = 4096;
        let mut log = LogConfig::new(dir.path().join("log"));
        log.mode = LogMode::Async;
        let config = Config::builder()
            .partitions(2)
            .memory_limit(1 << 30)
            .lru_sample_rate(1.0)
            .anticache(ac)
            .command_log(log)
            .snapshots(SnapshotConfig::new(dir.path().join("snapshots")))
            .build()
            .expect("configuration");
        let (db, parts) = Database::open_parts(config, Arc::new(permafrost_io::RealFs)).expect("database opens");
        let (parts, queues): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
        let workers: Vec<Worker> = parts.into_iter().map(Worker::start).collect();
        let first: Vec<Report> = workers.iter().map(|w| w.done.recv().expect("worker starts")).collect();
        let mut h = Harness {
            db,
            last: first.iter().map(|r| r.counters.clone()).collect(),
            busy: vec![false; first.len()],
            workers,
            queues,
            last_lsn: 0,
            out: String::new(),
            _dir: dir,
        };
        h.register();
        h
    }

    fn register(&mut self) {
        let procs = [
            ProcedureDef::new("Put")
                .partition_param(0)
                .statement("INSERT INTO kv VALUES (?, ?)")
                .body(|ctx, p| ctx.execute(0, p)),
            ProcedureDef::new("Get")
                .partition_param(0)
                .statement("SELECT k, v FROM kv WHERE k = ?")
                .body(|ctx, p| ctx.execute(0, p)),
            ProcedureDef::new("Set")
                .partition_param(0)
                .statement("UPDATE kv SET v = ? WHERE k = ?")
                .body(|ctx, p| ctx.execute(0, &[p[1].clone(), p[0].clone()])),
            ProcedureDef::new("PutBig")
                .partition_param(0)
                .statement("INSERT INTO kv VALUES (?, ?)")
                .body(|ctx, p| ctx.execute(0, &[p[0].clone(), Value::from("x".repeat(1000).as_str())])),
            ProcedureDef::new("PutThenAbort")
                .partition_param(0)
                .statement("INSERT INTO kv VALUES (?, ?)")
                .body(|ctx, p| {
                    ctx.execute(0, p)?;
                    Err(ctx.abort("changed my mind"))
                }),
            ProcedureDef::new("CountAll")
                .multi_partition()
                .statement("SELECT count(*) FROM kv")
                .body(|ctx, p| ctx.execute(0, p)),
        ];
        let created = self.run_command(|db| {
            db.execute_sql(
                "CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR(2000) NOT NULL) WITH (partition_by = 'k')",
                vec![],
            )
        });
        created.expect("the table is created");
        for def in procs {
            self.db.register(def).expect("procedure registers");
        }
        self.out.clear();
    }

    /// Whether a partition still has block I/O in flight or fetched blocks to merge.
    fn io_pending(&self) -> bool {
        self.busy.iter().any(|b| *b)
    }

    /// One step: every partition with a queued message handles one (side by side), then
    /// the transcript gets each message and what changed. Returns whether any ran.
    fn step(&mut self) -> bool {
        let mut msgs: Vec<Option<Msg>> = self.queues.iter().map(|q| q.try_recv().ok()).collect();
        // A multi-partition transaction needs every partition it involves in the same step.
        let involved: Vec<u32> = msgs
            .iter()
            .flatten()
            .filter_map(|m| match m {
                Msg::Mp(t) => Some(t.parts.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        for q in involved {
            let q = q as usize;
            if msgs[q].is_none() {
                msgs[q] = Some(
                    self.queues[q]
                        .recv_timeout(PATIENCE)
                        .expect("participant's message arrives"),
                );
            }
        }
        if msgs.iter().all(Option::is_none) {
            return false;
        }
        let descriptions: Vec<Option<String>> = msgs
            .iter()
            .enumerate()
            .map(|(p, m)| m.as_ref().map(|m| describe(p, m)))
            .collect();
        // Side by side: each worker gets its message, then each reports.
        let mut running = Vec::new();
        for (p, msg) in msgs.into_iter().enumerate() {
            if let Some(msg) = msg {
                self.workers[p].work.send(msg).expect("worker runs");
                running.push(p);
            }
        }
        let mut reports: Vec<Option<Report>> = (0..self.workers.len()).map(|_| None).collect();
        for p in running {
            reports[p] = Some(
                self.workers[p]
                    .done
                    .recv_timeout(PATIENCE)
                    .expect("the message is handled"),
            );
        }
        for (p, d) in descriptions.into_iter().enumerate() {
            let Some(d) = d else { continue };
            writeln!(self.out, "p{p} <- {d}").unwrap();
            let Some(report) = reports[p].take() else { continue };
            self.busy[p] = report.busy;
            let now = report.counters;
            let changed: Vec<String> = now
                .iter()
                .zip(&self.last[p])
                .filter(|(a, b)| a.1 != b.1)
                .map(|((name, v), (_, old))| format!("{name} {old} -> {v}"))
                .collect();
            if !changed.is_empty() {
                writeln!(self.out, "     {}", changed.join(", ")).unwrap();
            }
            self.last[p] = now;
        }
        let lsn = self.db.shared().log.as_ref().map_or(0, |l| l.last_lsn());
        if lsn != self.last_lsn {
            writeln!(self.out, "     log: last lsn {} -> {lsn}", self.last_lsn).unwrap();
            self.last_lsn = lsn;
        }
        true
    }

    /// Runs `f` on a helper thread while stepping the partitions, until it has returned,
    /// every queue is empty and no block I/O is in flight.
    fn run_command<R: Send>(&mut self, f: impl FnOnce(&Database) -> R + Send) -> R {
        let db = self.db.clone();
        std::thread::scope(|s| {
            let h = s.spawn(move || f(&db));
            let started = Instant::now();
            loop {
                if self.step() {
                    continue;
                }
                if h.is_finished() && !self.io_pending() && self.queues.iter().all(|q| q.is_empty()) {
                    break;
                }
                assert!(started.elapsed() < PATIENCE, "a command did not finish:\n{}", self.out);
                std::thread::sleep(Duration::from_micros(200));
            }
            h.join().expect("command thread")
        })
    }

    fn command(&mut self, line: &str) {
        let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
        let answer = match verb {
            "sql" => {
                let sql = rest.to_string();
                render(&self.run_command(move |db| db.execute_sql(&sql, vec![])))
            }
            "call" => {
                let mut words = rest.split_whitespace();
                let name = words.next().expect("procedure name").to_string();
                let params: Vec<Value> = words.map(parse_value).collect();
                render(&self.run_command(move |db| db.call(&name, params)))
            }
            "evict" => {
                let (p, bytes) = rest.split_once(' ').expect("evict P BYTES");
                let (p, bytes): (usize, u64) = (p.parse().expect("partition"), bytes.parse().expect("bytes"));
                let r: Result<u64> = self.run_command(move |db| {
                    let (tx, rx) = crossbeam_channel::bounded(1);
                    db.shared().senders[p].send(Msg::Evict(bytes, tx)).expect("queue");
                    rx.recv().expect("evict answers")
                });
                match r {
                    Ok(n) => format!("ok, {n} tuples evicted"),
                    Err(e) => format!("error {}: {e}", e.sqlstate()),
                }
            }
            "snapshot" => match self.run_command(|db| db.snapshot()) {
                Ok(i) => format!(
                    "snapshot {}: cut at lsn {}, {} blocks live",
                    i.epoch, i.cut_lsn, i.blocks_live
                ),
                Err(e) => format!("error {}: {e}", e.sqlstate()),
            },
            other => panic!("unknown command {other}"),
        };
        writeln!(self.out, "= {answer}").unwrap();
    }
}

/// Runs the script in `path` and returns its transcript.
fn transcript(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("script");
    let mut h = Harness::open();
    for line in text.lines() {
        if let Some(cmd) = line.strip_prefix("> ") {
            writeln!(h.out, "{line}").unwrap();
            h.command(cmd);
        } else if line.starts_with('#') || line.trim().is_empty() {
            writeln!(h.out, "{line}").unwrap();
        }
    }
    std::mem::take(&mut h.out)
}

#[test]
fn step_scripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/step");
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .expect("testdata/step")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 5, "the step scripts are missing");
    let mut failed = Vec::new();
    for path in scripts {
        let got = transcript(&path);
        let want = std::fs::read_to_string(&path).expect("script");
        if got != want {
            if std::env::var_os("UPDATE_GOLDEN").is_some() {
                std::fs::write(&path, &got).expect("update");
            } else {
                failed.push(format!("{}:\n{got}", path.display()));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "transcripts differ (UPDATE_GOLDEN=1 rewrites them):\n{}",
        failed.join("\n")
    );
}
