//! YCSB against an embedded Permafrost database: calls go through a pipelining
//! [`Session`] straight to the partition executors, in this process.

use permafrost_executor::{Completion, Database, Error, ProcHandle, ProcedureDef, Session};
use permafrost_types::Value;

use super::{FIELDS, LogCounters, Op, Outcome, TargetStats, YcsbClient, YcsbOptions, YcsbTarget, values};
use crate::BenchError;
use crate::report::{AnticacheReport, MemoryReport};

/// The YCSB schema: hash primary key (YCSB only does point accesses), partitioned by key,
/// evictable unless said otherwise (a table that is not evictable keeps no LRU chain).
pub fn ddl(field_len: usize, evictable: bool) -> String {
    let fields: Vec<String> = (0..FIELDS)
        .map(|i| format!("field{i} VARCHAR({field_len}) NOT NULL"))
        .collect();
    format!(
        "CREATE TABLE usertable (ycsb_key BIGINT PRIMARY KEY, {}) \
         WITH (partition_by = 'ycsb_key', evictable = {evictable}, primary_key_index = 'hash')",
        fields.join(", ")
    )
}

/// The YCSB procedures: `YcsbRead(key)`, `YcsbUpdate(key, field, value)` and
/// `YcsbInsert(key, field0, ..., field9)` (also what recovery needs, the log names them).
pub fn procedure_defs() -> Vec<ProcedureDef> {
    let read = ProcedureDef::new("YcsbRead")
        .partition_param(0)
        .statement("SELECT * FROM usertable WHERE ycsb_key = ?")
        .body(|ctx, p| ctx.execute(0, p));
    let mut update = ProcedureDef::new("YcsbUpdate").partition_param(0);
    for i in 0..FIELDS {
        update = update.statement(format!("UPDATE usertable SET field{i} = ? WHERE ycsb_key = ?"));
    }
    let update = update.body(|ctx, p| {
        let field = p
            .get(1)
            .and_then(Value::as_i64)
            .filter(|f| (0..FIELDS as i64).contains(f));
        let Some(field) = field else {
            return Err(ctx.abort("field must be 0..9"));
        };
        let r = ctx.execute(field as usize, &[p[2].clone(), p[0].clone()])?;
        if r.affected == 0 {
            return Err(ctx.abort("no such record"));
        }
        Ok(r)
    });
    let cols: Vec<String> = (0..=FIELDS).map(|_| "?".to_string()).collect();
    let insert = ProcedureDef::new("YcsbInsert")
        .partition_param(0)
        .statement(format!("INSERT INTO usertable VALUES ({})", cols.join(", ")))
        .body(|ctx, p| ctx.execute(0, p));
    vec![read, update, insert]
}

/// Registers the YCSB procedures ([`procedure_defs`]).
pub fn register_procedures(db: &Database) -> Result<(), Error> {
    for d in procedure_defs() {
        db.register(d)?;
    }
    Ok(())
}

pub struct Embedded {
    db: Database,
    evictable: bool,
}

impl Embedded {
    /// YCSB on `db`; `evictable` is the table's flag.
    pub fn new(db: Database, evictable: bool) -> Embedded {
        Embedded { db, evictable }
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    fn handles(&self) -> Result<(ProcHandle, ProcHandle), BenchError> {
        Ok((self.db.procedure("YcsbRead")?, self.db.procedure("YcsbUpdate")?))
    }
}

impl YcsbTarget for Embedded {
    fn name(&self) -> String {
        format!("permafrost-embedded ({} partitions)", self.db.partitions())
    }

    fn load(&self, opts: &YcsbOptions, from: u64, progress: &(dyn Fn(u64) + Sync)) -> Result<(), BenchError> {
        if from == 0 {
            self.db.execute_ddl(&ddl(opts.field_len(), self.evictable))?;
            register_procedures(&self.db)?;
        }
        let insert = self.db.procedure("YcsbInsert")?;
        let len = opts.field_len();
        let chunk = (opts.records - from).div_ceil(2).max(1);
        let loaded = std::sync::atomic::AtomicU64::new(from);
        // Two loader threads, each pipelining its half of the keys.
        std::thread::scope(|s| -> Result<(), BenchError> {
            let mut hs = Vec::new();
            for part in 0..2u64 {
                let (db, insert, loaded) = (&self.db, &insert, &loaded);
                hs.push(s.spawn(move || -> Result<(), BenchError> {
                    let lo = (from + part * chunk).min(opts.records);
                    let hi = (from + (part + 1) * chunk).min(opts.records);
                    let mut session = db.session();
                    let mut done = Vec::new();
                    let window = 1024;
                    let mut buf = String::new();
                    let mut retry: Vec<u64> = Vec::new();
                    let mut last_ok = std::time::Instant::now();
                    let params = |key: u64, buf: &mut String| {
                        let mut params = Vec::with_capacity(FIELDS + 1);
                        params.push(Value::Int(key as i64));
                        for f in 0..FIELDS as u32 {
                            values::fill(key, f, 0, len, buf);
                            params.push(Value::from(buf.as_str()));
                        }
                        params
                    };
                    let mut keys = lo..hi;
                    loop {
                        // Records refused for a retryable reason (the memory budget while
                        // eviction catches up) go again first, after a pause.
                        let key = if let Some(k) = retry.pop() {
                            k
                        } else if let Some(k) = keys.next() {
                            k
                        } else if session.in_flight() > 0 {
                            drain(&mut session, &mut done, loaded, progress, &mut retry, &mut last_ok)?;
                            continue;
                        } else {
                            break;
                        };
                        session.submit(insert, params(key, &mut buf), key)?;
                        if session.in_flight() >= window {
                            drain(&mut session, &mut done, loaded, progress, &mut retry, &mut last_ok)?;
                            if !retry.is_empty() {
                                std::thread::sleep(std::time::Duration::from_millis(1));
                            }
                        }
                    }
                    Ok(())
                }));
            }
            for h in hs {
                h.join().map_err(|_| BenchError::Client("loader panicked".into()))??;
            }
            Ok(())
        })?;
        progress(opts.records);
        Ok(())
    }

    fn client(&self, opts: &YcsbOptions) -> Result<Box<dyn YcsbClient>, BenchError> {
        let (read, update) = self.handles()?;
        let mut session = self.db.session();
        session.set_batch((opts.in_flight / self.db.partitions() as usize / 2).clamp(1, 256));
        Ok(Box::new(EmbeddedClient {
            session,
            read,
            update,
            field_len: opts.field_len(),
            ops: vec![Op::Read { key: 0 }; opts.in_flight],
            completions: Vec::with_capacity(opts.in_flight),
            buf: String::new(),
        }))
    }

    fn stats(&self) -> TargetStats {
        let s = self.db.stats_now().unwrap_or_default();
        let mem = self.db.memory_usage().unwrap_or_default();
        TargetStats {
            restarts_evicted: s.restarts_evicted,
            resident: None,
            anticache: AnticacheReport::from_stats(&s, mem.tombstone_bytes),
            memory: MemoryReport {
                limit_bytes: self.db.config().memory_limit,
                tuple_bytes: mem.tuple_bytes,
                tuple_used_bytes: mem.tuple_used_bytes,
                string_bytes: mem.string_bytes,
                index_bytes: mem.index_bytes,
                compact_index_bytes: mem.compact_index_bytes,
                tombstone_bytes: mem.tombstone_bytes,
                buffer_bytes: mem.buffer_bytes + s.anticache_bytes,
                ..MemoryReport::default()
            },
            // The engine runs in the benchmark's process: `process_cpu` is its cost.
            server: None,
            log: self.db.log_stats().map(|l| LogCounters {
                records: l.records,
                bytes: l.bytes,
                group_commits: l.batches,
                sync_seconds: l.sync_seconds_total,
                sync_buckets: l.sync_buckets,
            }),
        }
    }

    fn settings(&self) -> serde_json::Value {
        let c = self.db.config();
        let ac = c.anticache.as_ref().map(|a| {
            serde_json::json!({
                "eviction_block_size": a.block_size,
                "eviction_threshold": a.eviction_threshold,
                "eviction_size": a.eviction_size,
                "eviction_check_interval_ms": a.eviction_check_interval.as_secs_f64() * 1000.0,
                "retrieval": a.retrieval.name(),
                "merge_policy": a.merge.name(),
                "merge_hole_threshold": match a.merge { permafrost_executor::MergePolicy::Tuple { hole_threshold } => Some(hole_threshold), _ => None },
                "cold_policy": a.cold_policy.name(),
                "fetch_depth": a.fetch_depth,
                "dir": a.dir.display().to_string(),
            })
        });
        serde_json::json!({
            "target": "embedded",
            "partitions": c.partitions,
            "memory_limit": c.memory_limit,
            "lru_sample_rate": c.lru_sample_rate,
            "max_restarts": c.max_restarts,
            "anticache": ac,
        })
    }
}

/// How long the loader keeps retrying records the database refuses for a retryable
/// reason (the memory budget while eviction catches up) without any record succeeding.
const LOAD_STALL: std::time::Duration = std::time::Duration::from_secs(60);

/// Collects completed inserts: counts successes, queues retryable refusals in `retry`,
/// fails on any other error or when nothing has succeeded for [`LOAD_STALL`].
fn drain(
    session: &mut Session,
    done: &mut Vec<Completion>,
    loaded: &std::sync::atomic::AtomicU64,
    progress: &(dyn Fn(u64) + Sync),
    retry: &mut Vec<u64>,
    last_ok: &mut std::time::Instant,
) -> Result<(), BenchError> {
    done.clear();
    session.wait(done)?;
    let mut ok = 0u64;
    for c in done.iter() {
        match &c.result {
            Ok(_) => ok += 1,
            Err(e) if e.is_retryable() => {
                if last_ok.elapsed() > LOAD_STALL {
                    return Err(BenchError::Client(format!(
                        "loading stalled: no record accepted for {}s, last refusal: {e}",
                        LOAD_STALL.as_secs()
                    )));
                }
                retry.push(c.token)
            }
            Err(e) => return Err(BenchError::Client(format!("loading record {} failed: {e}", c.token))),
        }
    }
    if ok > 0 {
        *last_ok = std::time::Instant::now();
    }
    let n = loaded.fetch_add(ok, std::sync::atomic::Ordering::Relaxed) + ok;
    progress(n);
    Ok(())
}

struct EmbeddedClient {
    session: Session,
    read: ProcHandle,
    update: ProcHandle,
    field_len: usize,
    ops: Vec<Op>,
    completions: Vec<Completion>,
    buf: String,
}

impl YcsbClient for EmbeddedClient {
    fn submit(&mut self, token: u64, op: Op) -> Result<(), BenchError> {
        self.ops[token as usize] = op;
        match op {
            Op::Read { key } => self.session.submit(&self.read, vec![Value::Int(key as i64)], token)?,
            Op::Update { key, field, version } => {
                values::fill(key, field, version, self.field_len, &mut self.buf);
                let params = vec![
                    Value::Int(key as i64),
                    Value::Int(field as i64),
                    Value::from(self.buf.as_str()),
                ];
                self.session.submit(&self.update, params, token)?
            }
        }
        Ok(())
    }

    fn wait(&mut self, out: &mut Vec<(u64, Outcome)>) -> Result<(), BenchError> {
        self.completions.clear();
        self.session.wait(&mut self.completions)?;
        for c in self.completions.drain(..) {
            let outcome = match (&self.ops[c.token as usize], c.result) {
                (Op::Read { key }, Ok(rows)) => {
                    if rows.is_empty() {
                        Outcome::Missing
                    } else {
                        let mut vals = rows.row(0).values();
                        let ok = vals.next().and_then(|v| v.as_i64()) == Some(*key as i64)
                            && (0..FIELDS).all(|f| {
                                vals.next()
                                    .and_then(|v| v.as_str())
                                    .is_some_and(|v| values::verify(*key, f as u32, v, self.field_len))
                            })
                            && vals.next().is_none();
                        if ok { Outcome::Ok } else { Outcome::VerifyFailed }
                    }
                }
                (Op::Update { .. }, Ok(_)) => Outcome::Ok,
                (Op::Update { .. }, Err(Error::Aborted(m))) if m.contains("no such record") => Outcome::Missing,
                (_, Err(Error::Aborted(_))) => Outcome::Aborted,
                (_, Err(e)) => Outcome::Failed(e.to_string()),
            };
            out.push((c.token, outcome));
        }
        Ok(())
    }
}
