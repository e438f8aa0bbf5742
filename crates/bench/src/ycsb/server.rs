//! YCSB against a running `permafrost serve`, over the PostgreSQL wire protocol
//! (`--target server=HOST:PORT`).
//!
//! Each benchmark client thread owns a current-thread tokio runtime and its share of the
//! connections (tokio-postgres), with the read and the ten update statements prepared once
//! per connection. `submit` queues an operation on the next connection (round-robin) as a
//! future; `wait` drives the runtime on the client thread itself until at least one
//! operation has completed and then takes every completed one. Futures polled together
//! on one connection are pipelined by tokio-postgres (their Bind/Execute/Sync go out in
//! one write), so `--in-flight` operations per client spread over its connections keep
//! the server busy without a thread hop or a channel between the workload and the socket.
//!
//! Reads are verified with [`values`] exactly as for the embedded target.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::runtime::Runtime;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, NoTls, Row, Statement};

use super::{
    FIELDS, LogCounters, Op, Outcome, TargetStats, YcsbClient, YcsbOptions, YcsbTarget, embedded, parse_addr, values,
};
use crate::BenchError;
use crate::report::{AnticacheReport, MemoryReport, ServerUsage};

/// Rows per multi-row INSERT while loading.
const LOAD_ROWS_PER_INSERT: u64 = 200;
/// Connections loading in parallel.
const LOAD_CONNECTIONS: usize = 4;
/// How long loading keeps retrying statements refused for a retryable reason (the memory
/// budget while eviction catches up) without any statement succeeding.
const LOAD_STALL: Duration = Duration::from_secs(60);

/// `wait` waits for answers to pile up when the last call collected fewer than
/// in-flight / `BATCH_DIVISOR` of them...
const BATCH_DIVISOR: usize = 16;
/// ...for this long.
const BATCH_SLEEP: Duration = Duration::from_micros(500);

/// A running Permafrost server.
pub struct Server {
    addr: String,
    config: tokio_postgres::Config,
    connections: usize,
    /// Clients created so far (each takes its share of `connections`).
    clients_made: AtomicUsize,
    /// Client threads of the run, known from `load`.
    clients: AtomicUsize,
    /// Runs the loading, the set-up statements and the statistics queries.
    rt: Runtime,
    /// The connection that asks for the server's figures, once opened.
    admin: tokio::sync::Mutex<Option<Client>>,
}

impl Server {
    /// The server at `addr` (`HOST:PORT`); `connections` in all, spread evenly over the
    /// benchmark's client threads.
    pub fn new(addr: &str, connections: usize) -> Result<Server, BenchError> {
        let (host, port) = parse_addr(addr)?;
        if connections == 0 || connections > 4096 {
            return Err(BenchError::Options("--connections must be between 1 and 4096".into()));
        }
        let mut config = tokio_postgres::Config::new();
        config
            .host(&host)
            .port(port)
            .user("permafrost")
            .dbname("permafrost")
            .application_name("permafrost-bench")
            .connect_timeout(Duration::from_secs(10));
        Ok(Server {
            addr: addr.to_string(),
            config,
            connections,
            clients_made: AtomicUsize::new(0),
            clients: AtomicUsize::new(0),
            rt: runtime()?,
            admin: tokio::sync::Mutex::new(None),
        })
    }
}

/// The report's anti-cache, memory and command-log figures from the server's
/// `permafrost_stats` rows (name, labels, value).
fn stats_from(figures: &[(String, String, f64)]) -> TargetStats {
    let value = |name: &str, labels: &str| {
        figures
            .iter()
            .filter(|(n, l, _)| n == name && l == labels)
            .map(|f| f.2)
            .sum::<f64>()
    };
    let get = |name: &str, labels: &str| value(name, labels) as u64;
    let memory = |c: &str| get("permafrost_memory_bytes", &format!("component=\"{c}\""));
    let resident = get("permafrost_process_resident_bytes", "");
    // The engine's counters, read back as they are declared.
    let mut engine = permafrost_executor::DatabaseStats::from_samples(value);
    engine.anticache_bytes = memory("anticache");
    TargetStats {
        restarts_evicted: engine.restarts_evicted,
        resident: (resident > 0).then(|| (resident, get("permafrost_process_peak_resident_bytes", ""))),
        anticache: AnticacheReport::from_stats(&engine, memory("tombstone")),
        server: figures
            .iter()
            .any(|(n, _, _)| n == "permafrost_process_cpu_seconds_total")
            .then(|| ServerUsage {
                cpu_seconds: value("permafrost_process_cpu_seconds_total", "mode=\"user\"")
                    + value("permafrost_process_cpu_seconds_total", "mode=\"system\""),
                voluntary_switches: get("permafrost_process_context_switches_total", "kind=\"voluntary\""),
                involuntary_switches: get("permafrost_process_context_switches_total", "kind=\"involuntary\""),
            }),
        memory: MemoryReport {
            limit_bytes: get("permafrost_memory_limit_bytes", ""),
            tuple_bytes: memory("tuple"),
            tuple_used_bytes: get("permafrost_memory_used_bytes", "component=\"tuple\""),
            string_bytes: memory("string"),
            index_bytes: memory("index"),
            compact_index_bytes: memory("index_compact"),
            tombstone_bytes: memory("tombstone"),
            buffer_bytes: memory("buffer") + memory("anticache") + memory("schema"),
            ..MemoryReport::default()
        },
        log: figures
            .iter()
            .any(|(n, _, _)| n == "permafrost_commandlog_records_total")
            .then(|| LogCounters {
                records: get("permafrost_commandlog_records_total", ""),
                bytes: get("permafrost_commandlog_bytes_total", ""),
                group_commits: get("permafrost_commandlog_group_commits_total", ""),
                sync_seconds: value("permafrost_commandlog_sync_seconds_total", ""),
                sync_buckets: {
                    // Cumulative in the exposition; per bucket here.
                    let upto: [u64; permafrost_executor::SYNC_BUCKETS] = std::array::from_fn(|i| {
                        get(
                            "permafrost_commandlog_sync_duration_seconds_bucket",
                            &format!("le=\"{}\"", permafrost_executor::sync_bucket_le(i)),
                        )
                    });
                    std::array::from_fn(|i| upto[i].saturating_sub(if i == 0 { 0 } else { upto[i - 1] }))
                },
            }),
    }
}

fn runtime() -> Result<Runtime, BenchError> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// Opens a connection; its protocol task runs on the current runtime.
pub(crate) async fn connect(config: &tokio_postgres::Config, addr: &str) -> Result<Client, BenchError> {
    let (client, conn) = config
        .connect(NoTls)
        .await
        .map_err(|e| BenchError::Client(format!("cannot connect to {addr}: {}", describe(&e))))?;
    tokio::spawn(async move {
        // Errors of the connection reach the statements waiting on it.
        let _ = conn.await;
    });
    Ok(client)
}

/// An error with the server's SQLSTATE and message when it has them (tokio-postgres
/// displays a server error as just "db error").
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{} ({})", d.message(), d.code().code()),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(x) = src {
                s.push_str(": ");
                s.push_str(&x.to_string());
                src = x.source();
            }
            s
        }
    }
}

fn setup_error(what: &str, e: &tokio_postgres::Error) -> BenchError {
    BenchError::Client(format!("{what}: {}", describe(e)))
}

impl YcsbTarget for Server {
    fn name(&self) -> String {
        format!("permafrost-server ({})", self.addr)
    }

    fn load(&self, opts: &YcsbOptions, from: u64, progress: &(dyn Fn(u64) + Sync)) -> Result<(), BenchError> {
        if self.connections < opts.clients {
            return Err(BenchError::Options(format!(
                "--connections ({}) must be at least --clients ({}): every client thread needs a connection",
                self.connections, opts.clients
            )));
        }
        self.clients.store(opts.clients, Ordering::Relaxed);
        self.rt.block_on(self.load_async(opts, from, progress))
    }

    fn client(&self, opts: &YcsbOptions) -> Result<Box<dyn YcsbClient>, BenchError> {
        let clients = self.clients.load(Ordering::Relaxed).max(opts.clients).max(1);
        let i = self.clients_made.fetch_add(1, Ordering::Relaxed);
        let n = (self.connections / clients + usize::from(i % clients < self.connections % clients)).max(1);
        let rt = runtime()?;
        let conns = rt.block_on(async {
            let mut conns = Vec::with_capacity(n);
            for _ in 0..n {
                conns.push(Conn::open(&self.config, &self.addr).await?);
            }
            Ok::<_, BenchError>(conns)
        })?;
        Ok(Box::new(ServerClient {
            pending: FuturesUnordered::new(),
            run: run_op,
            busy: vec![0; conns.len()],
            conns,
            conn_of: Vec::new(),
            field_len: opts.field_len(),
            batch: (opts.in_flight / BATCH_DIVISOR).max(1),
            last_batch: usize::MAX,
            rt,
        }))
    }

    /// The server's own figures (`SELECT * FROM permafrost_stats`); none if it cannot
    /// give them (the run's report then shows zeros for the anti-cache and memory).
    fn stats(&self) -> TargetStats {
        self.rt.block_on(async {
            let mut admin = self.admin.lock().await;
            if admin.is_none() {
                *admin = connect(&self.config, &self.addr).await.ok();
            }
            let Some(client) = admin.as_ref() else {
                return TargetStats::default();
            };
            match client.query("SELECT * FROM permafrost_stats", &[]).await {
                Ok(rows) => {
                    let figures: Vec<(String, String, f64)> = rows
                        .iter()
                        .filter_map(|r| Some((r.try_get(0).ok()?, r.try_get(1).ok()?, r.try_get(2).ok()?)))
                        .collect();
                    stats_from(&figures)
                }
                Err(_) => {
                    // Reconnect next time.
                    *admin = None;
                    TargetStats::default()
                }
            }
        })
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "target": format!("server={}", self.addr),
            "connections": self.connections,
            "protocol": "postgres extended query, prepared statements; each operation to the least busy connection (one at a time per connection when in_flight <= connections per client, else pipelined)",
            "client_runtime": "tokio current-thread runtime per client thread",
            "load_rows_per_insert": LOAD_ROWS_PER_INSERT,
            "load_connections": LOAD_CONNECTIONS,
        })
    }
}

impl Server {
    async fn load_async(
        &self,
        opts: &YcsbOptions,
        from: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(), BenchError> {
        if from == 0 {
            self.create_table(opts).await?;
        }
        let next = AtomicU64::new(from);
        let loaded = AtomicU64::new(from);
        let loaders = (0..LOAD_CONNECTIONS).map(|_| self.loader(opts, &next, &loaded, progress));
        futures_util::future::try_join_all(loaders).await?;
        progress(opts.records);
        Ok(())
    }

    /// Drops the usertable a former load left and creates it afresh.
    async fn create_table(&self, opts: &YcsbOptions) -> Result<(), BenchError> {
        let admin = connect(&self.config, &self.addr).await?;
        if let Err(e) = admin.batch_execute("DROP TABLE IF EXISTS usertable").await {
            // A server without IF EXISTS: drop it plainly, a missing table is fine.
            if let Err(e2) = admin.batch_execute("DROP TABLE usertable").await
                && e2.code() != Some(&SqlState::UNDEFINED_TABLE)
            {
                return Err(BenchError::Client(format!(
                    "cannot drop an existing usertable: {} (DROP TABLE IF EXISTS: {})",
                    describe(&e2),
                    describe(&e)
                )));
            }
        }
        admin
            .batch_execute(&embedded::ddl(opts.field_len(), true))
            .await
            .map_err(|e| setup_error("CREATE TABLE usertable", &e))?;
        Ok(())
    }

    /// One loading connection: takes chunks of keys until none are left.
    async fn loader(
        &self,
        opts: &YcsbOptions,
        next: &AtomicU64,
        loaded: &AtomicU64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(), BenchError> {
        let client = connect(&self.config, &self.addr).await?;
        let full = client
            .prepare(&insert_sql(LOAD_ROWS_PER_INSERT))
            .await
            .map_err(|e| setup_error("preparing the loading INSERT", &e))?;
        let len = opts.field_len();
        let mut keys: Vec<i64> = Vec::new();
        let mut vals: Vec<String> = Vec::new();
        let mut last_ok = Instant::now();
        loop {
            let lo = next.fetch_add(LOAD_ROWS_PER_INSERT, Ordering::Relaxed);
            if lo >= opts.records {
                return Ok(());
            }
            let hi = (lo + LOAD_ROWS_PER_INSERT).min(opts.records);
            let rows = hi - lo;
            keys.clear();
            keys.extend((lo..hi).map(|k| k as i64));
            vals.resize_with((rows as usize) * FIELDS, String::new);
            for (i, k) in (lo..hi).enumerate() {
                for f in 0..FIELDS {
                    values::fill(k, f as u32, 0, len, &mut vals[i * FIELDS + f]);
                }
            }
            let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(rows as usize * (FIELDS + 1));
            for (i, key) in keys.iter().enumerate() {
                params.push(key);
                for v in &vals[i * FIELDS..(i + 1) * FIELDS] {
                    params.push(v);
                }
            }
            let tail;
            let stmt = if rows == LOAD_ROWS_PER_INSERT {
                &full
            } else {
                tail = client
                    .prepare(&insert_sql(rows))
                    .await
                    .map_err(|e| setup_error("preparing the loading INSERT", &e))?;
                &tail
            };
            loop {
                match client.execute(stmt, &params).await {
                    Ok(_) => break,
                    Err(e) if retryable(&e) => {
                        if last_ok.elapsed() > LOAD_STALL {
                            return Err(BenchError::Client(format!(
                                "loading stalled: records {lo}..{hi} refused for {}s, last refusal: {}",
                                LOAD_STALL.as_secs(),
                                describe(&e)
                            )));
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Err(e) => {
                        return Err(BenchError::Client(format!(
                            "loading records {lo}..{hi} failed: {}",
                            describe(&e)
                        )));
                    }
                }
            }
            last_ok = Instant::now();
            progress(loaded.fetch_add(rows, Ordering::Relaxed) + rows);
        }
    }
}

/// Whether a refused statement may succeed later: the memory budget while eviction catches
/// up (53200), or a transaction that gave up restarting (40001).
fn retryable(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::OUT_OF_MEMORY) || e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE)
}

/// `INSERT INTO usertable VALUES ($1, ..., $11), ...` for `rows` rows.
fn insert_sql(rows: u64) -> String {
    let mut sql = String::from("INSERT INTO usertable VALUES ");
    let mut n = 1;
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for c in 0..=FIELDS {
            if c > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&n.to_string());
            n += 1;
        }
        sql.push(')');
    }
    sql
}

/// One connection of a client, with its statements prepared.
struct Conn {
    client: Arc<Client>,
    read: Statement,
    /// `UPDATE usertable SET field<i> = $1 WHERE ycsb_key = $2`, per field.
    updates: Vec<Statement>,
}

impl Conn {
    async fn open(config: &tokio_postgres::Config, addr: &str) -> Result<Conn, BenchError> {
        let client = connect(config, addr).await?;
        let read = client
            .prepare("SELECT * FROM usertable WHERE ycsb_key = $1")
            .await
            .map_err(|e| setup_error("preparing the YCSB read", &e))?;
        let mut updates = Vec::with_capacity(FIELDS);
        for i in 0..FIELDS {
            let sql = format!("UPDATE usertable SET field{i} = $1 WHERE ycsb_key = $2");
            updates.push(
                client
                    .prepare(&sql)
                    .await
                    .map_err(|e| setup_error("preparing the YCSB update", &e))?,
            );
        }
        Ok(Conn {
            client: Arc::new(client),
            read,
            updates,
        })
    }
}

/// The result of one operation: its token and outcome, or an error that ends the run
/// (the connection is gone).
type Done = (u64, Result<Outcome, String>);

/// What an operation runs: the read or the update, on one connection.
async fn run_op(client: Arc<Client>, stmt: Statement, token: u64, op: Op, value: String, field_len: usize) -> Done {
    let r = match op {
        Op::Read { key } => read(&client, &stmt, key, field_len).await,
        Op::Update { key, .. } => match client.execute(&stmt, &[&value, &(key as i64)]).await {
            Ok(0) => Ok(Outcome::Missing),
            Ok(_) => Ok(Outcome::Ok),
            Err(e) => Err(e),
        },
    };
    let r = match r {
        Ok(o) => Ok(o),
        Err(e) if e.is_closed() => Err(format!("connection lost: {}", describe(&e))),
        Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) => Ok(Outcome::Aborted),
        Err(e) => Ok(Outcome::Failed(describe(&e))),
    };
    (token, r)
}

/// Reads `key` and verifies what comes back, row by row as it arrives (no collecting).
async fn read(client: &Client, stmt: &Statement, key: u64, field_len: usize) -> Result<Outcome, tokio_postgres::Error> {
    let rows = client.query_raw(stmt, [key as i64]).await?;
    let mut rows = std::pin::pin!(rows);
    let mut outcome = Outcome::Missing;
    while let Some(row) = rows.next().await {
        outcome = match outcome {
            // One row per key: a second one is wrong whatever it holds.
            Outcome::Missing => verify_row(&row?, key, field_len),
            _ => Outcome::VerifyFailed,
        };
    }
    Ok(outcome)
}

/// A text value's bytes as sent, without UTF-8 validation ([`values::verify`] compares
/// bytes, and accepts only printable ASCII).
struct RawText<'a>(&'a [u8]);

impl<'a> FromSql<'a> for RawText<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<RawText<'a>, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawText(raw))
    }

    fn accepts(ty: &Type) -> bool {
        <&str as FromSql>::accepts(ty)
    }
}

/// Checks a row read for `key`: the key, then ten fields that verify for it.
fn verify_row(row: &Row, key: u64, field_len: usize) -> Outcome {
    let ok = row.len() == FIELDS + 1
        && row.try_get::<_, i64>(0).ok() == Some(key as i64)
        && (0..FIELDS).all(|f| {
            row.try_get::<_, RawText>(f + 1)
                .is_ok_and(|v| values::verify_bytes(key, f as u32, v.0, field_len))
        });
    if ok { Outcome::Ok } else { Outcome::VerifyFailed }
}

/// The signature of [`run_op`], so that the client can hold its (unnamed) future type
/// without boxing each operation.
type RunOp<F> = fn(Arc<Client>, Statement, u64, Op, String, usize) -> F;

struct ServerClient<F> {
    /// Operations in flight (declared first: dropped before the connections and runtime).
    pending: FuturesUnordered<F>,
    run: RunOp<F>,
    conns: Vec<Conn>,
    /// Statements in flight per connection, and the connection of each token in flight:
    /// an operation goes to the least busy connection, so with as many operations in
    /// flight as connections each connection has one at a time, as an ordinary client
    /// (libpq, a driver, a pool) does; with more, the connections pipeline.
    busy: Vec<u32>,
    conn_of: Vec<usize>,
    field_len: usize,
    /// Completions `wait` aims to hand back at once, and how many the last call did.
    batch: usize,
    last_batch: usize,
    /// Drives the connections; runs only inside `wait`, on the client's own thread.
    rt: Runtime,
}

impl<F: Future<Output = Done> + Send> YcsbClient for ServerClient<F> {
    fn submit(&mut self, token: u64, op: Op) -> Result<(), BenchError> {
        let i = (0..self.busy.len()).min_by_key(|&i| self.busy[i]).unwrap_or(0);
        self.busy[i] += 1;
        if self.conn_of.len() <= token as usize {
            self.conn_of.resize(token as usize + 1, 0);
        }
        self.conn_of[token as usize] = i;
        let c = &self.conns[i];
        let (stmt, value) = match op {
            Op::Read { .. } => (c.read.clone(), String::new()),
            Op::Update { key, field, version } => {
                let mut v = String::with_capacity(self.field_len);
                values::fill(key, field, version, self.field_len, &mut v);
                (c.updates[field as usize % FIELDS].clone(), v)
            }
        };
        self.pending
            .push((self.run)(c.client.clone(), stmt, token, op, value, self.field_len));
        Ok(())
    }

    fn wait(&mut self, out: &mut Vec<(u64, Outcome)>) -> Result<(), BenchError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // A server slower than the client answers a few operations at a time; collecting
        // each as it arrives would cost the client a wake-up, a read and a write per
        // operation (as much CPU as the server spends, on the same machine). Let answers
        // pile up for a moment instead, then take them all in one pass. The connections'
        // pipelines hold far more than the server gets through meanwhile, so it keeps busy.
        if self.last_batch < self.batch {
            std::thread::sleep(BATCH_SLEEP);
        }
        let (busy, conn_of) = (&mut self.busy, &self.conn_of);
        let before = out.len();
        let r = drain(&self.rt, &mut self.pending, out, |(token, r): Done| {
            if let Some(b) = conn_of.get(token as usize).and_then(|&c| busy.get_mut(c)) {
                *b = b.saturating_sub(1);
            }
            r.map(|o| (token, o))
        });
        self.last_batch = out.len() - before;
        r
    }
}

/// Drives `pending` on `rt` until at least one operation completes, then takes every one
/// that has completed, in one go: `take` turns each into its token and outcome, or the
/// error that ends the run (the first such error is returned, after the rest are taken).
pub(super) fn drain<F: Future>(
    rt: &Runtime,
    pending: &mut FuturesUnordered<F>,
    out: &mut Vec<(u64, Outcome)>,
    mut take: impl FnMut(F::Output) -> Result<(u64, Outcome), String>,
) -> Result<(), BenchError> {
    let mut fatal = None;
    let before = out.len();
    rt.block_on(std::future::poll_fn(|cx| {
        loop {
            match pending.poll_next_unpin(cx) {
                Poll::Ready(Some(done)) => match take(done) {
                    Ok(o) => out.push(o),
                    Err(e) => {
                        fatal.get_or_insert(e);
                    }
                },
                Poll::Ready(None) => return Poll::Ready(()),
                Poll::Pending => {
                    return if out.len() > before || fatal.is_some() {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    };
                }
            }
        }
    }));
    match fatal {
        Some(e) => Err(BenchError::Client(e)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        assert_eq!(parse_addr("127.0.0.1:5433").unwrap(), ("127.0.0.1".to_string(), 5433));
        assert_eq!(parse_addr("db.example:1").unwrap(), ("db.example".to_string(), 1));
        assert_eq!(parse_addr("[::1]:5433").unwrap(), ("::1".to_string(), 5433));
        for bad in ["", "host", "host:", ":5433", "host:0", "host:70000", "host:x"] {
            assert!(parse_addr(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn server_figures_fill_the_report() {
        let f = |n: &str, l: &str, v: f64| (n.to_string(), l.to_string(), v);
        let figures = vec![
            f("permafrost_transaction_restarts_total", "reason=\"evicted\"", 7.0),
            f("permafrost_transaction_restarts_total", "reason=\"schema\"", 100.0),
            f("permafrost_cold_tuples", "", 10.0),
            f("permafrost_anticache_directory_bytes", "", 40.0),
            f("permafrost_memory_bytes", "component=\"tombstone\"", 60.0),
            f("permafrost_memory_bytes", "component=\"anticache\"", 50.0),
            f("permafrost_anticache_seconds_total", "activity=\"merge\"", 1.5),
            f("permafrost_memory_limit_bytes", "", 1024.0),
        ];
        let s = stats_from(&figures);
        assert_eq!(s.restarts_evicted, 7);
        assert_eq!(s.anticache.evicted_now, 10);
        assert_eq!(s.anticache.io_buffer_bytes, 10);
        assert_eq!(s.anticache.merge_seconds, 1.5);
        assert_eq!(s.anticache.bytes_per_evicted_tuple, 10.0);
        assert_eq!(s.memory.limit_bytes, 1024);
        assert_eq!(s.memory.tombstone_bytes, 60);
        assert_eq!(s.memory.buffer_bytes, 50);
        assert_eq!(s.server, None, "an older server without process figures");
        let mut figures = figures;
        figures.extend([
            f("permafrost_process_cpu_seconds_total", "mode=\"user\"", 2.0),
            f("permafrost_process_cpu_seconds_total", "mode=\"system\"", 0.5),
            f("permafrost_process_context_switches_total", "kind=\"voluntary\"", 900.0),
            f(
                "permafrost_process_context_switches_total",
                "kind=\"involuntary\"",
                100.0,
            ),
        ]);
        let a = stats_from(&figures).server.expect("process figures");
        assert_eq!(a.cpu_seconds, 2.5);
        assert_eq!((a.voluntary_switches, a.involuntary_switches), (900, 100));
        let b = ServerUsage {
            cpu_seconds: 4.5,
            voluntary_switches: 2900,
            involuntary_switches: 100,
        };
        let r = crate::report::ServerCpuReport::between(&a, &b, 1000, 2.0);
        assert_eq!((r.cores, r.us_per_txn, r.context_switches_per_txn), (1.0, 2000.0, 2.0));
    }

    #[test]
    fn insert_statements_number_their_parameters() {
        let sql = insert_sql(2);
        assert!(sql.starts_with("INSERT INTO usertable VALUES ($1, $2, "), "{sql}");
        assert!(sql.ends_with("$21, $22)"), "{sql}");
        assert_eq!(sql.matches('(').count(), 2);
    }
}
