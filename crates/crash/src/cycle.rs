//! One data directory: its server, its events, its iterations (kill, restart, check).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::task::JoinHandle;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls};

use permafrost_bench::BenchError;
use permafrost_bench::ycsb::server::describe;

use crate::report::{
    ACCOUNT_RANGE, BLOCK_CONNECTIONS, CrashOptions, DRAIN, EVENT_RANGE, INITIAL_BALANCE, InFlight, IterationReport,
    LOAD_CONNECTIONS, LOAD_ROWS, MAX_MESSAGES, Phases, SAMPLE_EVERY, VERIFY_DEPTH,
};
use crate::server::{
    Sample, Server, free_port, log_files, log_since, log_tail, parse_recovery, sample, snapshot_tmp_fresh,
};
use crate::workload::{
    ACKED, BlockWorker, Counters, EventRows, Events, FOUND, MISSING, Worker, account_pad, event_payload, initial_total,
    iteration_seed, mix, prepare, retrying,
};

/// One data directory: its server, its events, its iterations.
pub(super) struct CycleRun<'a> {
    pub(super) opts: &'a CrashOptions,
    pub(super) cycle: u32,
    pub(super) dir: PathBuf,
    pub(super) stderr: PathBuf,
    pub(super) server: Option<Server>,
    pub(super) events: Arc<Mutex<Events>>,
    pub(super) next_event: Arc<AtomicU64>,
    pub(super) load_seconds: f64,
    pub(super) setup_violation: Option<String>,
    /// Seconds the last restart took (to pick a moment inside the next recovery).
    pub(super) last_recovery: f64,
}

pub(super) enum Started {
    Up(Server, f64),
    Failed(String),
}

impl<'a> CycleRun<'a> {
    /// A fresh data directory: starts the server, creates the tables and the procedure,
    /// loads the accounts.
    pub(super) async fn start(opts: &'a CrashOptions, cycle: u32, dir: &Path) -> Result<CycleRun<'a>, BenchError> {
        let mut c = CycleRun {
            opts,
            cycle,
            dir: dir.to_path_buf(),
            stderr: dir.join("server-stderr.log"),
            server: None,
            events: Arc::new(Mutex::new(Events::default())),
            next_event: Arc::new(AtomicU64::new(0)),
            load_seconds: 0.0,
            setup_violation: None,
            last_recovery: 0.5,
        };
        match c.spawn().await? {
            Started::Up(s, _) => c.server = Some(s),
            Started::Failed(m) => {
                c.setup_violation = Some(format!("the server did not start on a fresh data directory: {m}"));
                return Ok(c);
            }
        }
        let t = Instant::now();
        if let Err(m) = c.load().await {
            c.setup_violation = Some(format!("loading the accounts failed: {m}"));
        }
        c.load_seconds = t.elapsed().as_secs_f64();
        Ok(c)
    }

    pub(super) fn stop(&mut self) {
        if let Some(mut s) = self.server.take() {
            s.kill();
        }
    }

    pub(super) fn config(&self, port: u16) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host("127.0.0.1")
            .port(port)
            .user("crash")
            .dbname("permafrost")
            .application_name("permafrost-crash")
            .connect_timeout(Duration::from_secs(10));
        config
    }

    pub(super) async fn connect(&self) -> Result<Client, String> {
        let port = self.server.as_ref().map(|s| s.port).unwrap_or(0);
        let (client, conn) = self
            .config(port)
            .connect(NoTls)
            .await
            .map_err(|e| format!("cannot connect to 127.0.0.1:{port}: {}", describe(&e)))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(client)
    }

    /// Starts the server on the data directory and waits until it accepts connections
    /// (after replaying its log).
    /// The server's command line.
    pub(super) fn command(&self, port: u16, stderr: std::fs::File) -> Command {
        let mut cmd = Command::new(&self.opts.binary);
        // Settings of the environment would change the server's; the flags say all.
        for (k, _) in std::env::vars_os() {
            if k.to_str().is_some_and(|k| k.starts_with("PERMAFROST_")) {
                cmd.env_remove(k);
            }
        }
        cmd.arg("serve")
            .args(["--listen", &format!("127.0.0.1:{port}"), "--metrics-listen", "off"])
            .arg("--data-dir")
            .arg(&self.dir)
            .args(["--command-log", &self.opts.command_log])
            .args(["--memory-limit", &self.opts.memory_limit.to_string()])
            .args(["--log-segment-size", &self.opts.segment_bytes.to_string()])
            .args(["--partitions", &self.opts.partitions.to_string()])
            .args(["--snapshot-interval", &self.opts.snapshot_interval])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr));
        cmd
    }

    /// Starts the server and kills it `after` this long, whatever it is doing. Returns whether it was still
    /// recovering (not accepting connections) when killed, `None` if it exited by itself.
    pub(super) async fn spawn_and_kill(&self, after: Duration) -> Result<Option<bool>, BenchError> {
        let port = free_port()?;
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.stderr)?;
        let child = self
            .command(port, stderr)
            .spawn()
            .map_err(|e| BenchError::Options(format!("cannot start the server {}: {e}", self.opts.binary.display())))?;
        let mut server = Server {
            child,
            port,
            started: Instant::now(),
        };
        tokio::time::sleep(after).await;
        if let Ok(Some(_)) = server.child.try_wait() {
            return Ok(None);
        }
        let up = tokio::time::timeout(Duration::from_millis(20), self.config(port).connect(NoTls))
            .await
            .is_ok_and(|r| r.is_ok());
        server.kill();
        Ok(Some(!up))
    }

    pub(super) async fn spawn(&self) -> Result<Started, BenchError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let port = free_port()?;
            let offset = std::fs::metadata(&self.stderr).map(|m| m.len()).unwrap_or(0);
            let stderr = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.stderr)?;
            let mut cmd = self.command(port, stderr);
            let child = cmd.spawn().map_err(|e| {
                BenchError::Options(format!("cannot start the server {}: {e}", self.opts.binary.display()))
            })?;
            let mut server = Server {
                child,
                port,
                started: Instant::now(),
            };
            let deadline = server.started + self.opts.startup_timeout;
            loop {
                if self.config(port).connect(NoTls).await.is_ok() {
                    let secs = server.started.elapsed().as_secs_f64();
                    return Ok(Started::Up(server, secs));
                }
                if let Ok(Some(status)) = server.child.try_wait() {
                    let text = log_since(&self.stderr, offset);
                    if attempts < 3 && text.contains("Address already in use") {
                        break; // another process took the port: another one
                    }
                    return Ok(Started::Failed(format!(
                        "the server exited ({status}) before accepting connections; its stderr ({}) ends:\n    {}",
                        self.stderr.display(),
                        log_tail(&self.stderr)
                    )));
                }
                if Instant::now() > deadline {
                    server.kill();
                    return Ok(Started::Failed(format!(
                        "the server did not accept connections within {:?}; its stderr ({}) ends:\n    {}",
                        self.opts.startup_timeout,
                        self.stderr.display(),
                        log_tail(&self.stderr)
                    )));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }

    pub(super) async fn load(&self) -> Result<(), String> {
        let c = self.connect().await?;
        c.batch_execute(
            "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, pad TEXT);
             CREATE SEQUENCE events_m_seq START WITH 1000 INCREMENT BY 7;
             CREATE TABLE events (id BIGINT PRIMARY KEY, payload TEXT, u UUID DEFAULT gen_random_uuid(),
               r DOUBLE PRECISION DEFAULT random(), at TIMESTAMPTZ DEFAULT now(), n BIGSERIAL,
               m BIGINT DEFAULT nextval('events_m_seq'));
             CREATE PROCEDURE transfer(src BIGINT, dst BIGINT, amount BIGINT) AS $$
               UPDATE accounts SET balance = balance - $3 WHERE id = $1;
               UPDATE accounts SET balance = balance + $3 WHERE id = $2
             $$",
        )
        .await
        .map_err(|e| format!("creating the schema: {}", describe(&e)))?;
        let mut clients = Vec::new();
        for _ in 0..LOAD_CONNECTIONS {
            clients.push(self.connect().await?);
        }
        let ctr = Counters::default();
        let n = self.opts.accounts;
        let statements: Vec<(u64, String)> = (0..n.div_ceil(LOAD_ROWS))
            .map(|b| {
                let lo = b * LOAD_ROWS;
                let rows: Vec<String> = (lo..(lo + LOAD_ROWS).min(n))
                    .map(|id| format!("({id}, {INITIAL_BALANCE}, '{}')", account_pad(id as i64)))
                    .collect();
                (lo, format!("INSERT INTO accounts VALUES {}", rows.join(", ")))
            })
            .collect();
        let results: Vec<Result<(), String>> = stream::iter(statements.iter().enumerate())
            .map(|(i, (lo, sql))| {
                let client = &clients[i % clients.len()];
                let ctr = &ctr;
                async move {
                    retrying(ctr, || client.batch_execute(sql))
                        .await
                        .map_err(|e| format!("inserting accounts {lo}..: {}", describe(&e)))
                }
            })
            .buffer_unordered(LOAD_CONNECTIONS * 2)
            .collect()
            .await;
        results.into_iter().collect()
    }

    /// One iteration: workload, kill, restart, checks. Its random choices come from its
    /// seed, drawn in a fixed order: the kill time, then whether a CHECKPOINT precedes the
    /// kill and by how much, then whether a restart is killed during recovery and when.
    pub(super) async fn iteration(&mut self, iteration: u32) -> Result<IterationReport, BenchError> {
        let opts = self.opts;
        let seed = iteration_seed(opts.seed, iteration);
        let mut rng = SmallRng::seed_from_u64(seed);
        let kill_after = opts.run_min + (opts.run_max - opts.run_min) * rng.random::<f64>();
        let mut it = IterationReport {
            iteration,
            data_directory: self.cycle,
            iteration_in_directory: iteration - self.cycle * opts.fresh_every,
            kill_after_seconds: kill_after,
            ..IterationReport::default()
        };
        // The workload.
        let ctr = Arc::new(Counters::default());
        let (admin, mut tasks) = match self.start_workload(seed, &ctr).await {
            Ok(w) => w,
            Err(m) => {
                it.violations.push(m);
                return Ok(it);
            }
        };
        let start = Instant::now();
        let deadline = start + Duration::from_secs_f64(kill_after);
        let mut samples: VecDeque<Sample> = VecDeque::new();
        if let Some(s) = sample(&admin, &self.dir).await {
            samples.push_back(s);
        }
        // Some iterations ask for a snapshot shortly before the kill.
        let checkpoint_kill = rng.random_range(0..100u32) < opts.checkpoint_kill_pct;
        // Inside the snapshot's own time (tens of ms for this database).
        let checkpoint_lead = Duration::from_millis(rng.random_range(0..60u64));
        let recovery_kill = rng.random_range(0..100u32) < opts.recovery_kill_pct;
        let recovery_kill_after = rng.random::<f64>();
        let checkpoint_pending = Arc::new(AtomicBool::new(false));
        let checkpoint = checkpoint_kill.then_some(checkpoint_lead);
        let died = self
            .run_until(&admin, deadline, checkpoint, &checkpoint_pending, &mut samples)
            .await;
        // The kill, right after one more sample.
        let kill = self.kill(&admin, &ctr, &checkpoint_pending, died).await;
        ctr.stop.store(true, Ordering::SeqCst);
        drain(&mut tasks, &mut it).await;
        drop(admin);
        if let Some(status) = kill.died {
            it.violations.push(format!(
                "the server exited by itself ({status}) during the workload; its stderr ({}) ends:\n    {}",
                self.stderr.display(),
                log_tail(&self.stderr)
            ));
        }
        kill.record(&mut it, &samples);
        record_counters(&mut it, &ctr);
        // Some restarts are killed too, during recovery; then the restart.
        if !self
            .restart(&mut it, recovery_kill.then_some(recovery_kill_after))
            .await?
        {
            return Ok(it);
        }
        // The checks.
        let t = Instant::now();
        if let Err(m) = self.verify(&mut it).await {
            it.violations.push(m);
        }
        it.verify_seconds = t.elapsed().as_secs_f64();
        Ok(it)
    }

    /// Connects the admin connection (for samples) and starts the workload: `in_flight`
    /// workers on each of `connections` connections, each with a random stream of its own
    /// from the iteration's `seed`. A connection or preparation that fails is the error (a
    /// violation); the workers already started are left running (they fail at the kill).
    async fn start_workload(&self, seed: u64, ctr: &Arc<Counters>) -> Result<(Client, Vec<JoinHandle<()>>), String> {
        let opts = self.opts;
        let mut tasks = Vec::new();
        let workload_start = Instant::now();
        let admin = self.connect().await.map_err(|m| format!("before the workload: {m}"))?;
        for conn in 0..opts.connections {
            let client = match self.connect().await {
                Ok(c) => Arc::new(c),
                Err(m) => return Err(format!("before the workload: {m}")),
            };
            let stmts = match prepare(&client).await {
                Ok(s) => Arc::new(s),
                Err(e) => return Err(format!("preparing the workload's statements: {}", describe(&e))),
            };
            for k in 0..opts.in_flight {
                let w = Worker {
                    client: client.clone(),
                    stmts: stmts.clone(),
                    ctr: ctr.clone(),
                    events: self.events.clone(),
                    next_event: self.next_event.clone(),
                    accounts: opts.accounts,
                    start: workload_start,
                    insert_rate: opts.insert_rate,
                    rng: SmallRng::seed_from_u64(mix(seed ^ ((conn * opts.in_flight + k) as u64 + 1))),
                };
                tasks.push(tokio::spawn(w.run()));
            }
        }
        for k in 0..BLOCK_CONNECTIONS {
            let client = self.connect().await.map_err(|m| format!("before the workload: {m}"))?;
            let w = BlockWorker {
                client,
                ctr: ctr.clone(),
                accounts: opts.accounts,
                rng: SmallRng::seed_from_u64(mix(seed ^ 0xB10C ^ k as u64)),
            };
            tasks.push(tokio::spawn(w.run()));
        }
        Ok((admin, tasks))
    }

    /// Lets the workload run until `deadline`, sampling the server's figures every
    /// [`SAMPLE_EVERY`] into `samples` (the latest 64 kept) and, with a `checkpoint` lead,
    /// sending a CHECKPOINT that long before the deadline (`pending` until it is answered).
    /// The exit status of a server that died by itself before the deadline.
    async fn run_until(
        &mut self,
        admin: &Client,
        deadline: Instant,
        checkpoint: Option<Duration>,
        pending: &Arc<AtomicBool>,
        samples: &mut VecDeque<Sample>,
    ) -> Option<ExitStatus> {
        let mut checkpoint_sent = checkpoint.is_none();
        let checkpoint_lead = checkpoint.unwrap_or_default();
        let checkpoint_config = self.config(self.server.as_ref().map_or(0, |s| s.port));
        let server = self.server.as_mut().expect("a running server");
        while Instant::now() < deadline {
            if !checkpoint_sent && Instant::now() + checkpoint_lead >= deadline {
                checkpoint_sent = true;
                if let Ok((c, conn)) = checkpoint_config.connect(NoTls).await {
                    tokio::spawn(conn);
                    let pending = pending.clone();
                    pending.store(true, Ordering::SeqCst);
                    tokio::spawn(async move {
                        if c.batch_execute("CHECKPOINT").await.is_ok() {
                            pending.store(false, Ordering::SeqCst);
                        }
                    });
                }
            }
            // Wake at the checkpoint's moment if it is still to come.
            let until = if checkpoint_sent {
                deadline
            } else {
                deadline - checkpoint_lead
            };
            let left = until.saturating_duration_since(Instant::now());
            tokio::time::sleep(left.min(SAMPLE_EVERY)).await;
            if let Ok(Some(status)) = server.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                break;
            }
            if let Some(s) = sample(admin, &self.dir).await {
                samples.push_back(s);
                if samples.len() > 64 {
                    samples.pop_front();
                }
            }
        }
        None
    }

    /// Kills the server (SIGKILL) right after one more sample, noting what it was doing:
    /// the statements in flight, whether a snapshot was being written, the log's files.
    /// `died`: the exit status of a server already found dead (it is looked for once more).
    async fn kill(
        &mut self,
        admin: &Client,
        ctr: &Counters,
        checkpoint_pending: &AtomicBool,
        mut died: Option<ExitStatus>,
    ) -> Kill {
        let last = sample(admin, &self.dir).await;
        let in_flight = InFlight {
            transfers: ctr.in_flight[0].load(Ordering::SeqCst),
            inserts: ctr.in_flight[1].load(Ordering::SeqCst),
            reads: ctr.in_flight[2].load(Ordering::SeqCst),
        };
        let snapshot_writing = checkpoint_pending.load(Ordering::SeqCst) || snapshot_tmp_fresh(&self.dir);
        let killed_at = Instant::now();
        let server = self.server.as_mut().expect("a running server");
        if died.is_none()
            && let Ok(Some(status)) = server.child.try_wait()
        {
            died = Some(status);
        }
        server.kill();
        self.server = None;
        let (segments, log_bytes) = log_files(&self.dir);
        Kill {
            last,
            in_flight,
            snapshot_writing,
            killed_at,
            died,
            segments,
            log_bytes,
        }
    }

    /// Restarts the server after the kill and records its recovery in `it`. With
    /// `recovery_kill`, one restart is first killed during its recovery, after that
    /// fraction of the previous restart's time. False when the server did not come back
    /// (a violation in `it`).
    async fn restart(&mut self, it: &mut IterationReport, recovery_kill: Option<f64>) -> Result<bool, BenchError> {
        if let Some(fraction) = recovery_kill {
            let budget = self.last_recovery.max(0.2);
            let after = Duration::from_secs_f64(budget * fraction);
            match self.spawn_and_kill(after).await? {
                Some(true) => it.phases.recovery = true,
                Some(false) => {}
                None => {
                    it.violations
                        .push("the restart killed during recovery exited by itself".into());
                    return Ok(false);
                }
            }
        }
        // The restart.
        let offset = std::fs::metadata(&self.stderr).map(|m| m.len()).unwrap_or(0);
        match self.spawn().await? {
            Started::Up(s, secs) => {
                self.server = Some(s);
                it.recovery_seconds = secs;
                self.last_recovery = secs;
            }
            Started::Failed(m) => {
                it.violations.push(format!("restart after the kill: {m}"));
                return Ok(false);
            }
        }
        let rec = parse_recovery(&log_since(&self.stderr, offset));
        it.records_replayed = rec.records;
        it.replay_seconds = rec.seconds;
        it.torn_tail = rec.torn;
        it.snapshot_loaded = rec.snapshot;
        it.snapshot_base = rec.base;
        Ok(true)
    }

    /// Checks the restarted database against what the harness knows.
    pub(super) async fn verify(&self, it: &mut IterationReport) -> Result<(), String> {
        let c = self.connect().await.map_err(|m| format!("after the restart: {m}"))?;
        let ctr = Counters::default();
        let r = self.check(it, &c, &ctr).await;
        it.verify_retries = ctr.retries_53200.load(Ordering::SeqCst) + ctr.retries_40001.load(Ordering::SeqCst);
        r
    }

    pub(super) async fn check(&self, it: &mut IterationReport, c: &Client, ctr: &Counters) -> Result<(), String> {
        // Accounts: every one there, the balances adding up to the initial total.
        let n = self.opts.accounts;
        let ranges: Vec<(i64, i64)> = (0..n)
            .step_by(ACCOUNT_RANGE as usize)
            .map(|lo| (lo as i64, (lo + ACCOUNT_RANGE).min(n) as i64))
            .collect();
        let sql = "SELECT COUNT(*), COALESCE(SUM(balance), 0)::bigint FROM accounts WHERE id >= $1 AND id < $2";
        let counted: Vec<Result<(i64, i64, i64, i64), String>> = stream::iter(ranges)
            .map(|(lo, hi)| async move {
                let params: [&(dyn ToSql + Sync); 2] = [&lo, &hi];
                let row = retrying(ctr, || c.query_one(sql, &params))
                    .await
                    .map_err(|e| format!("summing accounts {lo}..{hi}: {}", describe(&e)))?;
                Ok((lo, hi, row.get::<_, i64>(0), row.get::<_, i64>(1)))
            })
            .buffered(VERIFY_DEPTH)
            .collect()
            .await;
        let (mut accounts, mut sum) = (0i64, 0i64);
        let mut short = Vec::new();
        for r in counted {
            let (lo, hi, count, s) = r?;
            if count != hi - lo && short.len() < 5 {
                short.push(format!("{lo}..{hi}: {count} rows"));
            }
            accounts += count;
            sum += s;
        }
        it.accounts = accounts as u64;
        it.balance_sum = sum;
        if accounts as u64 != n {
            it.violations.push(format!(
                "{accounts} accounts after the restart, {n} loaded ({})",
                short.join(", ")
            ));
        }
        let total = initial_total(n);
        if sum != total {
            it.violations.push(format!(
                "the balances add up to {sum} after the restart, not {total}{}",
                if accounts as u64 == n {
                    " (every account is there: a transfer was applied in part)"
                } else {
                    ""
                }
            ));
        }
        // Events: all acknowledged ones (and all found after an earlier restart) there
        // with their payloads, none found missing earlier back, no others.
        let issued = self.next_event.load(Ordering::SeqCst);
        let ranges: Vec<(i64, i64)> = (0..issued)
            .step_by(EVENT_RANGE as usize)
            .map(|lo| (lo as i64, (lo + EVENT_RANGE).min(issued) as i64))
            .collect();
        let sql =
            "SELECT id, payload, u::text, r::text, at::text, n::text, m::text FROM events WHERE id >= $1 AND id < $2";
        let found: Vec<Result<EventRows, String>> = stream::iter(ranges)
            .map(|(lo, hi)| async move {
                let params: [&(dyn ToSql + Sync); 2] = [&lo, &hi];
                let rows = retrying(ctr, || c.query(sql, &params))
                    .await
                    .map_err(|e| format!("reading events {lo}..{hi}: {}", describe(&e)))?;
                Ok((lo, hi, rows))
            })
            .buffered(VERIFY_DEPTH)
            .collect()
            .await;
        let mut events = self.events.lock().unwrap();
        events.set(issued.saturating_sub(1), 0);
        let mut bad = Vec::new();
        let mut bad_count = 0u64;
        let mut note = |m: String| {
            bad_count += 1;
            if bad.len() < MAX_MESSAGES {
                bad.push(m);
            }
        };
        for r in found {
            let (lo, hi, rows) = r?;
            let mut here = vec![false; (hi - lo) as usize];
            for row in rows {
                let id: i64 = row.get(0);
                let payload: Option<String> = row.get(1);
                if !(lo..hi).contains(&id) {
                    note(format!("event {id} returned for ids {lo}..{hi}"));
                    continue;
                }
                if std::mem::replace(&mut here[(id - lo) as usize], true) {
                    note(format!("event {id} is there twice"));
                }
                if payload.as_deref() != Some(event_payload(id).as_str()) {
                    note(format!("event {id} has the wrong payload {payload:?}"));
                }
                // The values drawn when it was inserted, as its client was answered.
                let drawn = crate::workload::drawn_of(&row, 2);
                if let Some(acked) = events.drawn.get(&(id as u64))
                    && *acked != drawn
                {
                    note(format!(
                        "event {id} drew {acked:?} (uuid, random(), now(), its serial, its own sequence) when acknowledged and has {drawn:?} now"
                    ));
                }
            }
            for (i, &present) in here.iter().enumerate() {
                let id = lo as usize + i;
                let f = events.flags[id];
                match (present, f & ACKED != 0, f & FOUND != 0, f & MISSING != 0) {
                    (true, _, _, true) => note(format!(
                        "event {id} (never acknowledged) was missing after an earlier restart and is back"
                    )),
                    (true, acked, found, false) => {
                        if acked {
                            it.acknowledged_events_checked += 1;
                        } else if !found {
                            it.unacknowledged_present += 1;
                        }
                        events.flags[id] |= FOUND;
                    }
                    (false, true, _, _) => note(format!("acknowledged event {id} is missing after the restart")),
                    (false, false, true, _) => note(format!(
                        "event {id} was there after an earlier restart and is missing now"
                    )),
                    (false, false, false, missing) => {
                        if !missing {
                            it.unacknowledged_absent += 1;
                        }
                        events.flags[id] |= MISSING;
                    }
                }
            }
        }
        if bad_count > 0 {
            it.violations
                .push(format!("{bad_count} wrong event(s): {}", bad.join("; ")));
        }
        Ok(())
    }
}

/// What the harness saw of the server at its kill ([`CycleRun::kill`]).
struct Kill {
    /// The sample taken just before the kill.
    last: Option<Sample>,
    in_flight: InFlight,
    /// Whether a snapshot was being written.
    snapshot_writing: bool,
    killed_at: Instant,
    /// The exit status of a server that had died by itself.
    died: Option<ExitStatus>,
    /// The log's segment files and their bytes right after the kill.
    segments: u64,
    log_bytes: u64,
}

impl Kill {
    /// Records in `it` what the server was doing when it was killed: the growth since the
    /// latest of `samples` at least one sampling period before the kill (the earliest one
    /// if the run was shorter), the phases that growth shows, the log's size and the
    /// statements in flight.
    fn record(self, it: &mut IterationReport, samples: &VecDeque<Sample>) {
        let killed_at = self.killed_at;
        let base = samples
            .iter()
            .rev()
            .find(|s| s.at.is_some_and(|a| killed_at.duration_since(a) >= SAMPLE_EVERY))
            .or(samples.front())
            .cloned()
            .unwrap_or_default();
        if let (Some(last), Some(at)) = (&self.last, base.at) {
            it.phase_window_ms = killed_at.duration_since(at).as_secs_f64() * 1e3;
            it.window_evictions = last.evictions.saturating_sub(base.evictions);
            it.window_unevicted_tuples = last.unevicted.saturating_sub(base.unevicted);
            it.cold_tuples_at_kill = last.cold;
        }
        it.window_new_segments = self.segments.saturating_sub(base.segments);
        it.phases = Phases {
            eviction: it.window_evictions > 0,
            merge: it.window_unevicted_tuples > 0,
            log_rotation: it.window_new_segments > 0,
            snapshot: self.snapshot_writing,
            recovery: false,
        };
        it.segments_at_kill = self.segments;
        it.log_bytes_at_kill = self.log_bytes;
        it.in_flight_at_kill = self.in_flight;
    }
}

/// Waits up to [`DRAIN`] for the workload's tasks to notice that the server is gone; those
/// that do not are aborted, and that is a violation.
async fn drain(tasks: &mut [JoinHandle<()>], it: &mut IterationReport) {
    let drained = tokio::time::timeout(DRAIN, async {
        for t in tasks.iter_mut() {
            let _ = t.await;
        }
    })
    .await;
    if drained.is_err() {
        for t in tasks.iter() {
            t.abort();
        }
        it.violations.push(format!(
            "the workload's statements were not answered within {DRAIN:?} of the kill"
        ));
    }
}

/// Records the workload's counters in `it`, and its unexpected answers as a violation.
fn record_counters(it: &mut IterationReport, ctr: &Counters) {
    it.events_acknowledged = ctr.inserts.load(Ordering::SeqCst);
    it.transfers_acknowledged = ctr.transfers.load(Ordering::SeqCst);
    it.block_transfers_acknowledged = ctr.blocks.load(Ordering::SeqCst);
    it.reads_verified = ctr.reads.load(Ordering::SeqCst);
    it.retries_53200 = ctr.retries_53200.load(Ordering::SeqCst);
    it.retries_40001 = ctr.retries_40001.load(Ordering::SeqCst);
    let problems = ctr.problem_count.load(Ordering::SeqCst);
    if problems > 0 {
        let shown = ctr.problems.lock().unwrap().clone();
        it.violations.push(format!(
            "{problems} unexpected answer(s) during the workload: {}",
            shown.join("; ")
        ));
    }
}
