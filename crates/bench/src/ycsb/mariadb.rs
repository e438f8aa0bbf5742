//! YCSB against MariaDB through its own driver (`--target mariadb=URL`), alone or with
//! memcached in front of it (`--memcached ADDR`), the anti-caching paper's two peers.
//!
//! The table is `usertable` in InnoDB: a BIGINT key and ten VARCHAR fields, every write
//! committed on its own (autocommit), so as durable as the server is configured. With
//! memcached the client does what the paper's did (§4.2): cache-aside reads (memcached
//! first; on a miss the row from MariaDB, then stored in memcached as the ten fields
//! side by side) and invalidation on write (the UPDATE, then the key deleted from
//! memcached). As with any cache-aside client, a read that misses while an update of the
//! same key commits can put the row it read back after the invalidation; reads verify only
//! that each field is one of the record's versions, which that stale row still is.
//!
//! Each client thread owns a current-thread tokio runtime and its share of the
//! connections, each connection (and its memcached connection) serving one operation at
//! a time, as a MySQL-protocol connection does: `--in-flight` must not exceed a client's
//! connections.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use async_memcached::AsciiProtocol;
use futures_util::stream::FuturesUnordered;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row, Statement, Value};
use tokio::runtime::Runtime;

use super::server::drain;
use super::{FIELDS, Op, Outcome, TargetStats, YcsbClient, YcsbOptions, YcsbTarget, values};
use crate::BenchError;
use crate::mariadb::{connect, connection_failed, err, exec_all, retryable};

/// Rows per multi-row INSERT while loading.
const LOAD_ROWS_PER_INSERT: u64 = 200;
/// Connections loading in parallel.
const LOAD_CONNECTIONS: usize = 4;

/// A MariaDB server, with or without memcached in front.
pub struct MariaDb {
    url: String,
    /// memcached's address as async-memcached takes it (`tcp://HOST:PORT`,
    /// `unix:///path`).
    memcached: Option<String>,
    connections: usize,
    clients: AtomicUsize,
    clients_made: AtomicUsize,
    rt: Runtime,
}

fn runtime() -> Result<Runtime, BenchError> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// memcached's address in async-memcached's form: `HOST:PORT` or a socket's path.
fn memcached_dsn(addr: &str) -> String {
    if addr.contains("://") {
        addr.to_string()
    } else if addr.starts_with('/') {
        format!("unix://{addr}")
    } else {
        format!("tcp://{addr}")
    }
}

async fn cache(dsn: &str) -> Result<async_memcached::Client, BenchError> {
    async_memcached::Client::new(dsn)
        .await
        .map_err(|e| BenchError::Client(format!("cannot connect to memcached at {dsn}: {e}")))
}

impl MariaDb {
    /// The server of `url` (mysql_async's form), memcached at `memcached` when given;
    /// `connections` in all, spread over the client threads.
    pub fn new(url: &str, memcached: Option<&str>, connections: usize) -> Result<MariaDb, BenchError> {
        if connections == 0 || connections > 4096 {
            return Err(BenchError::Options("--connections must be between 1 and 4096".into()));
        }
        Ok(MariaDb {
            url: url.to_string(),
            memcached: memcached.map(memcached_dsn),
            connections,
            clients: AtomicUsize::new(0),
            clients_made: AtomicUsize::new(0),
            rt: runtime()?,
        })
    }

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

    /// Drops the usertable a former load left, creates it afresh and empties the cache.
    async fn create_table(&self, opts: &YcsbOptions) -> Result<(), BenchError> {
        let mut admin = connect(&self.url).await?;
        let fields: Vec<String> = (0..FIELDS)
            .map(|i| format!("field{i} VARCHAR({}) NOT NULL", opts.field_len()))
            .collect();
        let ddl = format!(
            "CREATE TABLE usertable (ycsb_key BIGINT PRIMARY KEY, {}) ENGINE=InnoDB",
            fields.join(", ")
        );
        exec_all(&mut admin, ["DROP TABLE IF EXISTS usertable".to_string(), ddl]).await?;
        if let Some(dsn) = &self.memcached {
            // What an earlier load left cached is not this table's.
            cache(dsn)
                .await?
                .flush_all()
                .await
                .map_err(|e| BenchError::Client(format!("memcached flush_all: {e}")))?;
        }
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
        let mut conn = connect(&self.url).await?;
        let len = opts.field_len();
        let mut field = String::new();
        loop {
            let lo = next.fetch_add(LOAD_ROWS_PER_INSERT, Ordering::Relaxed);
            if lo >= opts.records {
                return Ok(());
            }
            let hi = (lo + LOAD_ROWS_PER_INSERT).min(opts.records);
            let row = format!("(?{})", ", ?".repeat(FIELDS));
            let sql = format!(
                "INSERT INTO usertable VALUES {}",
                vec![row; (hi - lo) as usize].join(", ")
            );
            let mut params: Vec<Value> = Vec::with_capacity((hi - lo) as usize * (FIELDS + 1));
            for k in lo..hi {
                params.push(Value::Int(k as i64));
                for f in 0..FIELDS {
                    values::fill(k, f as u32, 0, len, &mut field);
                    params.push(Value::Bytes(field.as_bytes().to_vec()));
                }
            }
            conn.exec_drop(sql, params)
                .await
                .map_err(|e| err(&format!("loading records {lo}..{hi}"), e))?;
            progress(loaded.fetch_add(hi - lo, Ordering::Relaxed) + hi - lo);
        }
    }
}

impl YcsbTarget for MariaDb {
    fn name(&self) -> String {
        match &self.memcached {
            Some(m) => format!("mariadb+memcached ({}, {m})", self.url),
            None => format!("mariadb ({})", self.url),
        }
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
        if opts.in_flight > n {
            return Err(BenchError::Options(format!(
                "--in-flight ({}) must not exceed a client's connections ({n}): a MariaDB connection serves one \
                 statement at a time (raise --connections)",
                opts.in_flight
            )));
        }
        let rt = runtime()?;
        let idle = rt.block_on(async {
            let mut slots = Vec::with_capacity(n);
            for _ in 0..n {
                slots.push(Slot::open(&self.url, self.memcached.as_deref()).await?);
            }
            Ok::<_, BenchError>(slots)
        })?;
        Ok(Box::new(Client {
            pending: FuturesUnordered::new(),
            idle,
            field_len: opts.field_len(),
            rt,
        }))
    }

    fn stats(&self) -> TargetStats {
        TargetStats::default()
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "target": format!("mariadb={}", self.url),
            "memcached": self.memcached,
            "connections": self.connections,
            "protocol": "MySQL binary protocol (mysql_async), prepared statements, autocommit; one statement per connection at a time",
            "cache": if self.memcached.is_some() { "cache-aside reads, invalidate on write" } else { "none" },
            "load_rows_per_insert": LOAD_ROWS_PER_INSERT,
            "load_connections": LOAD_CONNECTIONS,
        })
    }
}

/// One connection of a client (and its memcached connection), with its statements.
struct Slot {
    conn: Conn,
    cache: Option<async_memcached::Client>,
    read: Statement,
    /// `UPDATE usertable SET field<i> = ? WHERE ycsb_key = ?`, per field.
    updates: Vec<Statement>,
}

impl Slot {
    async fn open(url: &str, memcached: Option<&str>) -> Result<Slot, BenchError> {
        let mut conn = connect(url).await?;
        let read = conn
            .prep("SELECT * FROM usertable WHERE ycsb_key = ?")
            .await
            .map_err(|e| err("preparing the YCSB read", e))?;
        let mut updates = Vec::with_capacity(FIELDS);
        for i in 0..FIELDS {
            let sql = format!("UPDATE usertable SET field{i} = ? WHERE ycsb_key = ?");
            updates.push(conn.prep(sql).await.map_err(|e| err("preparing the YCSB update", e))?);
        }
        let cache = match memcached {
            Some(dsn) => Some(cache(dsn).await?),
            None => None,
        };
        Ok(Slot {
            conn,
            cache,
            read,
            updates,
        })
    }
}

/// memcached's key of a record.
fn cache_key(key: u64) -> String {
    format!("user{key}")
}

/// Whether a cached or read row of `key` holds ten fields that verify for it.
fn verify_fields(key: u64, fields: impl Iterator<Item = Option<Vec<u8>>>, field_len: usize) -> bool {
    let mut n = 0;
    for (f, v) in fields.enumerate() {
        if f >= FIELDS || !v.is_some_and(|v| values::verify_bytes(key, f as u32, &v, field_len)) {
            return false;
        }
        n += 1;
    }
    n == FIELDS
}

/// An operation's end: the slot back, its token and outcome, or an error that ends the run.
type Done = (Slot, u64, Result<Outcome, String>);

async fn run_op(mut slot: Slot, token: u64, op: Op, field_len: usize) -> Done {
    let r = match op {
        Op::Read { key } => read(&mut slot, key, field_len).await,
        Op::Update { key, field, version } => update(&mut slot, key, (field, version), field_len).await,
    };
    (slot, token, r)
}

/// A driver error as an operation's outcome: a deadlock or lock wait aborts it, a lost
/// connection ends the run.
fn outcome_of(e: mysql_async::Error) -> Result<Outcome, String> {
    if connection_failed(&e) {
        Err(format!("connection lost: {e}"))
    } else if retryable(&e) {
        Ok(Outcome::Aborted)
    } else {
        Ok(Outcome::Failed(e.to_string()))
    }
}

async fn read(slot: &mut Slot, key: u64, field_len: usize) -> Result<Outcome, String> {
    if let Some(cache) = &mut slot.cache {
        match cache.get(cache_key(key)).await {
            Ok(Some(v)) => {
                let data = v.data.unwrap_or_default();
                let fields = data.chunks(field_len).map(|c| Some(c.to_vec()));
                return Ok(
                    if data.len() == FIELDS * field_len && verify_fields(key, fields, field_len) {
                        Outcome::Ok
                    } else {
                        Outcome::VerifyFailed
                    },
                );
            }
            Ok(None) => {}
            Err(e) => return Err(format!("memcached get: {e}")),
        }
    }
    let row: Option<Row> = match slot.conn.exec_first(&slot.read, (key as i64,)).await {
        Ok(r) => r,
        Err(e) => return outcome_of(e),
    };
    let Some(row) = row else {
        return Ok(Outcome::Missing);
    };
    let fields: Vec<Option<Vec<u8>>> = (1..row.len()).map(|i| row.get::<Vec<u8>, usize>(i)).collect();
    let key_ok = row.get::<i64, usize>(0) == Some(key as i64);
    if !key_ok || !verify_fields(key, fields.iter().cloned(), field_len) {
        return Ok(Outcome::VerifyFailed);
    }
    if let Some(cache) = &mut slot.cache {
        let value: Vec<u8> = fields.into_iter().flatten().flatten().collect();
        if let Err(e) = cache.set(cache_key(key), value.as_slice(), None, None).await {
            return Err(format!("memcached set: {e}"));
        }
    }
    Ok(Outcome::Ok)
}

async fn update(slot: &mut Slot, key: u64, (field, version): (u32, u32), field_len: usize) -> Result<Outcome, String> {
    let mut value = String::with_capacity(field_len);
    values::fill(key, field, version, field_len, &mut value);
    let stmt = &slot.updates[field as usize % FIELDS];
    if let Err(e) = slot.conn.exec_drop(stmt, (value, key as i64)).await {
        return outcome_of(e);
    }
    if slot.conn.affected_rows() == 0 {
        return Ok(Outcome::Missing);
    }
    if let Some(cache) = &mut slot.cache {
        match cache.delete(cache_key(key)).await {
            // A key not cached answers NOT_FOUND, which the client reports as an error.
            Ok(()) | Err(async_memcached::Error::Protocol(async_memcached::Status::NotFound)) => {}
            Err(e) => return Err(format!("memcached delete: {e}")),
        }
    }
    Ok(Outcome::Ok)
}

type OpFuture = Pin<Box<dyn Future<Output = Done> + Send>>;

struct Client {
    /// Operations in flight (declared first: dropped before the connections and runtime).
    pending: FuturesUnordered<OpFuture>,
    idle: Vec<Slot>,
    field_len: usize,
    /// Drives the connections; runs only inside `wait`, on the client's own thread.
    rt: Runtime,
}

impl YcsbClient for Client {
    fn submit(&mut self, token: u64, op: Op) -> Result<(), BenchError> {
        let slot = self
            .idle
            .pop()
            .ok_or_else(|| BenchError::Client("more operations in flight than connections".into()))?;
        self.pending.push(Box::pin(run_op(slot, token, op, self.field_len)));
        Ok(())
    }

    fn wait(&mut self, out: &mut Vec<(u64, Outcome)>) -> Result<(), BenchError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let idle = &mut self.idle;
        drain(&self.rt, &mut self.pending, out, |(slot, token, r): Done| {
            idle.push(slot);
            r.map(|o| (token, o))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{memcached_dsn, verify_fields};
    use crate::ycsb::{FIELDS, values};

    #[test]
    fn memcached_addresses() {
        assert_eq!(memcached_dsn("127.0.0.1:11211"), "tcp://127.0.0.1:11211");
        assert_eq!(memcached_dsn("/tmp/mc.sock"), "unix:///tmp/mc.sock");
        assert_eq!(memcached_dsn("unix:///tmp/mc.sock"), "unix:///tmp/mc.sock");
    }

    #[test]
    fn a_row_verifies_only_whole_and_right() {
        let len = 100;
        let fields = |key: u64| {
            (0..FIELDS as u32).map(move |f| {
                let mut s = String::new();
                values::fill(key, f, 3, len, &mut s);
                Some(s.into_bytes())
            })
        };
        assert!(verify_fields(7, fields(7), len));
        assert!(!verify_fields(8, fields(7), len));
        assert!(!verify_fields(7, fields(7).take(FIELDS - 1), len));
        assert!(!verify_fields(7, fields(7).chain([None]), len));
    }
}
