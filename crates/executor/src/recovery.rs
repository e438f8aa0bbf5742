//! Recovery: replaying the command log.
//!
//! The log holds every committed transaction that changed something, in commit order
//! (a partition appends a record before it runs anything else, and a multi-partition
//! transaction is appended before its participants get their stores back), with the
//! timestamp and random seed it ran with. Execution is deterministic given those (the
//! procedure rule: time and randomness only from the transaction context), so running the
//! records again in log order, each at the partition(s) it ran at, rebuilds the same state.
//!
//! Replay keeps that order and still runs the partitions in parallel:
//! - single-partition records go to their partition's queue in log order, in batches,
//!   many in flight; each partition runs its queue in order;
//! - a multi-partition record is queued at its partitions after everything before it, and
//!   nothing after it is submitted until it has finished;
//! - a schema change waits for everything before it, is applied, and later records are
//!   planned against the new schema.
//!
//! Inside a partition a replayed transaction never moves behind a later one: it reads
//! evicted data synchronously instead of aborting and restarting, and one refused for the
//! memory budget (eviction catching up) is held, with the replayed calls behind it, until
//! it goes through (`Partition::replay_stall`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use permafrost_durability::{LogReader, Request, TxnRecord};

use crate::database::Database;
use crate::error::{Error, Result};
use crate::partition::msg::{Invocation, MpWork, Msg};
use crate::procedure::{Given, Procedure, ProcedureDef, Replayed};
use crate::registry::Record;
use crate::reply::{Completion, Reply, Sink};

/// Replayed calls a partition receives in one message.
const BATCH: usize = 256;
/// Replayed calls in flight at most (over all partitions).
const WINDOW: usize = 16 * 1024;
/// Ad hoc statements at least this long are planned for their record alone, not kept by
/// text for later records (a loader's `INSERT` of thousands of rows is never sent twice,
/// and its plan takes many times its text).
const UNCACHED_TEXT: usize = 8 << 10;
/// Most statements kept planned by text; past it the kept plans start over.
const CACHED_PLANS: usize = 4096;
/// Bytes of text of such statements in flight at most: their plans are held until they
/// have run, and 52 loader INSERTs of about 500 KB in flight at once took 530 MB, replaying
/// a database whose memory budget was 64 MiB.
const UNCACHED_IN_FLIGHT: usize = 1 << 20;
/// How long a multi-partition record may keep being refused for the memory budget (or
/// give up restarting for evicted data) before recovery gives up.
const MEMORY_STALL: Duration = Duration::from_secs(60);

/// The recovery report's version (docs/format.md, "Recovery report"): 2 added `version`,
/// `torn` and `trimmed`; a report without `version` is of version 1.
pub const RECOVERY_REPORT_VERSION: u32 = 2;

/// What a recovery did. `permafrost serve` writes it to stderr as one JSON line
/// ([`RecoveryReport::to_line`]) for tools to read ([`RecoveryReport::from_lines`]), next
/// to its prose for people.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RecoveryReport {
    /// The report's format version ([`RECOVERY_REPORT_VERSION`]; 1 when absent).
    #[serde(default = "version_1")]
    pub version: u32,
    /// Log records replayed.
    pub records: u64,
    /// Of which schema changes.
    pub schema_changes: u64,
    pub seconds: f64,
    /// A torn record at the end of the log (a crash in the middle of a write), dropped:
    /// its transaction was never acknowledged.
    pub torn_tail: Option<String>,
    /// The same torn tail, field by field.
    #[serde(default)]
    pub torn: Option<TornReport>,
    /// Damage to durable records that the operator had trimmed off the log
    /// (`recovery_trim_damaged_log`): what was lost. Without that option such damage
    /// refuses the start.
    #[serde(default)]
    pub trimmed: Option<TrimReport>,
    /// The snapshot recovery started from, if any.
    pub snapshot: Option<crate::snapshot::load::LoadReport>,
    /// Snapshots passed over (torn, corrupt), one message each.
    pub warnings: Vec<String>,
    /// Schema changes applied from the schema log (a database that ran without a command
    /// log, or runs without one).
    #[serde(default)]
    pub schema_log_changes: u64,
}

fn version_1() -> u32 {
    1
}

impl Default for RecoveryReport {
    fn default() -> Self {
        RecoveryReport {
            version: RECOVERY_REPORT_VERSION,
            records: 0,
            schema_changes: 0,
            seconds: 0.0,
            torn_tail: None,
            torn: None,
            trimmed: None,
            snapshot: None,
            warnings: Vec::new(),
            schema_log_changes: 0,
        }
    }
}

/// A torn tail the command log dropped when it opened: the last write, never synced, so
/// never acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TornReport {
    pub file: String,
    /// Where the torn record started.
    pub offset: u64,
    /// Bytes dropped from there.
    pub bytes: u64,
    /// The LSN the torn record would have had (LSNs continue from it).
    pub lsn: u64,
    /// Valid records of the same unsynced write found after it, dropped with it.
    pub later_records: u64,
}

impl From<&permafrost_durability::TornTail> for TornReport {
    fn from(t: &permafrost_durability::TornTail) -> TornReport {
        TornReport {
            file: t.file.display().to_string(),
            offset: t.offset,
            bytes: t.bytes,
            lsn: t.lsn,
            later_records: t.later_records,
        }
    }
}

/// What the operator's trim of a damaged log dropped
/// ([`permafrost_durability::trim_damaged_log`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TrimReport {
    /// The segment the damage is in, and where in it.
    pub file: String,
    pub offset: u64,
    /// Bytes dropped from that file.
    pub bytes: u64,
    /// The first LSN dropped (the damaged record's).
    pub first_lsn: u64,
    /// The last LSN dropped, and how many records that is, when a valid record was found
    /// after the damage (None: unknown, e.g. a file cut short).
    pub last_lsn: Option<u64>,
    pub records: Option<u64>,
    /// Later segment files moved out of the log.
    pub removed_segments: Vec<String>,
    /// Where the dropped files and bytes were kept.
    pub kept_in: String,
    /// The damage, as the refusal described it.
    pub reason: String,
}

impl From<&permafrost_durability::Trimmed> for TrimReport {
    fn from(t: &permafrost_durability::Trimmed) -> TrimReport {
        TrimReport {
            file: t.file.display().to_string(),
            offset: t.offset,
            bytes: t.bytes,
            first_lsn: t.first_lsn,
            last_lsn: t.last_lsn,
            records: t.records,
            removed_segments: t.removed_segments.iter().map(|p| p.display().to_string()).collect(),
            kept_in: t.kept_in.display().to_string(),
            reason: t.reason.clone(),
        }
    }
}

impl RecoveryReport {
    /// What starts the report's line.
    pub const LINE_PREFIX: &'static str = "recovery report: ";

    /// The report as one line: [`RecoveryReport::LINE_PREFIX`] and a JSON object with
    /// the fields of this type (docs/format.md, "Recovery report").
    pub fn to_line(&self) -> String {
        format!(
            "{}{}",
            Self::LINE_PREFIX,
            serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
        )
    }

    /// The last report in `text` (a server's stderr), if any line holds one.
    pub fn from_lines(text: &str) -> Option<RecoveryReport> {
        text.lines()
            .rev()
            .filter_map(|l| l.strip_prefix(Self::LINE_PREFIX))
            .find_map(|json| serde_json::from_str(json).ok())
    }
}

impl Database {
    /// Replays the command log into this (new, empty) database, before any other work.
    /// `procedures` are the application's (Rust) procedures, which the log names but does
    /// not hold: each is registered as soon as the tables it uses exist (procedures made
    /// with CREATE PROCEDURE are in the log). `progress` is called now and then with
    /// (records replayed, last LSN to replay). Without a command log, or with an empty
    /// one, it just registers the procedures.
    /// Applies schema statements as they were recorded in a schema log (schema_log.rs),
    /// in order: tables, indexes and SQL procedures come back.
    pub fn replay_schema(&self, statements: &[String]) -> Result<()> {
        for (i, sql) in statements.iter().enumerate() {
            self.apply_schema_statement(sql, Record::Logged)
                .map_err(|e| Error::Recovery(format!("replaying schema change {} ({sql}): {e}", i + 1)))?;
        }
        Ok(())
    }

    pub fn recover(&self, procedures: Vec<ProcedureDef>, progress: &mut dyn FnMut(u64, u64)) -> Result<RecoveryReport> {
        let started = Instant::now();
        let mut report = RecoveryReport::default();
        let through = self.recover_through();
        let mut r = Replayer::new(self, procedures);
        let mut cut = 0;
        if let Some(scfg) = self.config().snapshots.clone() {
            let mut warnings = Vec::new();
            let found = permafrost_durability::snapshot::newest_valid(&*self.shared().fs, &scfg.dir, &mut |w| {
                warnings.push(w)
            })?;
            report.warnings = warnings;
            if let Some((h, path)) = found {
                let load = crate::snapshot::load::load(self, &path, &h, &mut |sql| r.schema(0, sql))?;
                cut = h.cut_lsn;
                if through < cut {
                    return Err(Error::Recovery(format!(
                        "the command log ends at LSN {through}, before the LSN {cut} snapshot {} holds: \
                         the log directory is not the one the snapshot was taken with",
                        path.display()
                    )));
                }
                report.snapshot = Some(load);
            }
        }
        if let Some(cfg) = self.config().command_log.clone()
            && through > cut
        {
            // Opening the log for appending cut a torn tail off already.
            let log = self.shared().log.clone();
            if let Some(t) = log.as_ref().and_then(|l| l.truncated_tail()) {
                report.torn_tail = Some(format!(
                    "{} at byte {}, {} bytes (record {})",
                    t.file.display(),
                    t.offset,
                    t.bytes,
                    t.lsn
                ));
                report.torn = Some(t.into());
            }
            // Read through the file system the log was written through.
            let reader = match &log {
                Some(l) => LogReader::open_with(&cfg.dir, cut, l.fs()),
                None => LogReader::open(&cfg.dir, cut),
            };
            let reader = reader.map_err(|e| name_passed_over(e, &report.warnings))?;
            for item in reader {
                let (lsn, rec) = item?;
                if lsn > through {
                    break;
                }
                if lsn <= cut {
                    continue;
                }
                match &rec.request {
                    Request::Schema { .. } => report.schema_changes += 1,
                    Request::AdHoc { sql, .. } if sql.starts_with(crate::block_record::SCHEMA_MARK) => {
                        report.schema_changes += 1;
                    }
                    _ => {}
                }
                r.replay(lsn, rec)?;
                report.records += 1;
                if report.records % 65_536 == 0 {
                    progress(lsn, through);
                }
            }
        }
        let pending = r.finish()?;
        progress(through, through);
        for (name, def) in pending {
            self.register(def)
                .map_err(|e| Error::Recovery(format!("procedure \"{name}\" does not plan after recovery: {e}")))?;
        }
        self.inner()
            .snapshots
            .ready
            .store(true, std::sync::atomic::Ordering::Release);
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }
}

/// A log that does not reach back to where recovery must start: if snapshots were passed
/// over (torn, corrupt), the one that covered the missing records is among them, and the
/// refusal names them (the log alone names only its first segment).
fn name_passed_over(e: permafrost_durability::LogError, passed_over: &[String]) -> permafrost_durability::LogError {
    match e {
        permafrost_durability::LogError::Corrupt { file, offset, detail } if !passed_over.is_empty() => {
            permafrost_durability::LogError::Corrupt {
                file,
                offset,
                detail: format!(
                    "{detail}; the records are in a snapshot that cannot be loaded: {}",
                    passed_over.join("; ")
                ),
            }
        }
        e => e,
    }
}

struct Replayer<'a> {
    db: &'a Database,
    sink: Arc<Sink>,
    completions: crossbeam_channel::Receiver<Vec<Completion>>,
    /// Per partition, calls not yet sent.
    batches: Vec<Vec<Invocation>>,
    in_flight: usize,
    /// Ad hoc statements planned against the current schema, by text.
    plans: HashMap<String, Arc<Procedure>>,
    /// Procedures dropped while calls to them were still running: such a call may be
    /// logged after the drop.
    dropped: HashMap<String, Arc<Procedure>>,
    /// What each LSN in flight was, for error messages, and the length of its text if it
    /// was planned for its record alone ([`UNCACHED_TEXT`]; else 0).
    what: HashMap<u64, (Arc<Procedure>, usize)>,
    /// The sum of those lengths ([`UNCACHED_IN_FLIGHT`]).
    uncached_bytes: usize,
    /// The application's procedures not registered yet (their tables do not exist yet).
    pending: HashMap<String, ProcedureDef>,
    /// The procedure the last call record named (records come in runs of one procedure);
    /// forgotten at every schema change.
    last_proc: Option<(String, Arc<Procedure>)>,
    /// How many sequence values the last replayed transaction took (a block's parts take
    /// the record's values one after the other).
    last_taken: usize,
    /// The time zone of the last record that named one.
    zone: Option<permafrost_types::zone::Zone>,
}

impl<'a> Replayer<'a> {
    fn new(db: &'a Database, procedures: Vec<ProcedureDef>) -> Replayer<'a> {
        let (tx, rx) = crossbeam_channel::unbounded();
        Replayer {
            db,
            sink: Arc::new(Sink { tx }),
            completions: rx,
            batches: (0..db.partitions()).map(|_| Vec::new()).collect(),
            in_flight: 0,
            plans: HashMap::new(),
            dropped: HashMap::new(),
            what: HashMap::new(),
            uncached_bytes: 0,
            pending: procedures.into_iter().map(|d| (d.name.clone(), d)).collect(),
            last_proc: None,
            last_taken: 0,
            zone: None,
        }
    }

    fn replay(&mut self, lsn: u64, rec: TxnRecord) -> Result<()> {
        // The counters, in log order here (the replays take the values given and move no
        // counter), after the record's schema changes (a CREATE SEQUENCE sets its counter).
        let draws = rec.draws.clone();
        let r = self.replay_record(lsn, rec);
        if let Some(d) = &draws {
            self.db.shared().sequences.replayed(d);
        }
        r
    }

    fn replay_record(&mut self, lsn: u64, rec: TxnRecord) -> Result<()> {
        // The session TimeZone its statements ran in (a zone this build does not know
        // stops recovery: run in another, they could give other values than they gave).
        let zone = match &rec.zone {
            Some(name) if self.zone.as_ref().is_some_and(|z| z.name() == name) => self.zone.clone(),
            Some(name) => {
                let zone = permafrost_types::zone::Zone::named(name).ok_or_else(|| {
                    Error::Recovery(format!(
                        "record {lsn}: its statements ran in the time zone \"{name}\", which this build does not know"
                    ))
                })?;
                // (Kept for the records after it, which a session's usually share.)
                self.zone = Some(zone.clone());
                Some(zone)
            }
            None => None,
        };
        let replay = Some(Replayed {
            now: rec.now,
            seed: rec.seed,
            zone,
            draws: match rec.draws {
                Some(d) => Given::Values(d.into()),
                None => Given::Legacy,
            },
        });
        let mut weight = 0;
        let (proc, params) = match rec.request {
            Request::Schema { sql } => return self.schema(lsn, &sql),
            Request::Call { procedure, params } => (self.procedure(lsn, &procedure)?, params),
            Request::AdHoc { sql, params } => {
                match split_schema_block(&sql).map_err(|e| Error::Recovery(format!("record {lsn}: {e}")))? {
                    // A block that changed the schema: its changes and the writes between
                    // them, in the order they ran.
                    Some(parts) => return self.schema_block(lsn, parts, params, rec.partitions, replay),
                    None => {
                        weight = if sql.len() >= UNCACHED_TEXT { sql.len() } else { 0 };
                        (self.plan(lsn, &sql)?, params)
                    }
                }
            }
        };
        self.run(lsn, proc, params, rec.partitions, replay, weight)?;
        // (At least the one just submitted stays in flight.)
        while self.uncached_bytes > UNCACHED_IN_FLIGHT && self.in_flight > 1 {
            self.collect(self.in_flight - 1)?;
        }
        Ok(())
    }

    /// Replays a block that changed the schema, part by part.
    fn schema_block(
        &mut self,
        lsn: u64,
        parts: Vec<BlockPart>,
        params: Vec<permafrost_types::Value>,
        partitions: Vec<u32>,
        replay: Option<Replayed>,
    ) -> Result<()> {
        let mut params = params.into_iter();
        // The record's sequence values, taken part after part: each takes those it took
        // when it ran, the first of those left.
        let mut replay = replay;
        for part in parts {
            match part {
                BlockPart::Schema(sql) => self.schema(lsn, &sql)?,
                BlockPart::Writes(sql, n) => {
                    let mine: Vec<_> = params.by_ref().take(n).collect();
                    if mine.len() != n {
                        return Err(Error::Recovery(format!(
                            "record {lsn}: fewer parameters than its statements take"
                        )));
                    }
                    let proc = self.plan(lsn, &sql)?;
                    self.last_taken = 0;
                    self.run(lsn, proc, mine, partitions.clone(), replay.clone(), 0)?;
                    // Nothing after it (a schema change) runs before it is done.
                    self.flush()?;
                    self.collect(0)?;
                    if let Some(Replayed {
                        draws: Given::Values(v),
                        ..
                    }) = &mut replay
                    {
                        *v = v.get(self.last_taken..).unwrap_or_default().into();
                    }
                }
            }
        }
        Ok(())
    }

    /// Record `lsn` is no longer in flight: what it was, for messages.
    fn done(&mut self, lsn: u64) -> String {
        let Some((p, weight)) = self.what.remove(&lsn) else {
            return String::new();
        };
        self.uncached_bytes -= weight;
        describe(&p)
    }

    /// Replays one call or statement at the partitions it ran at (`weight`: its text's
    /// length when it was planned for this record alone, [`UNCACHED_TEXT`]).
    fn run(
        &mut self,
        lsn: u64,
        proc: Arc<Procedure>,
        params: Vec<permafrost_types::Value>,
        parts: Vec<u32>,
        replay: Option<Replayed>,
        weight: usize,
    ) -> Result<()> {
        let params = proc.coerce(params)?;
        let n = self.db.partitions();
        if let Some(&p) = parts.iter().find(|&&p| p >= n) {
            return Err(Error::Recovery(format!(
                "record {lsn} ran at partition {p}, but the database has {n} partitions: start it with the \
                 partitions it was created with"
            )));
        }
        // (Weighed while it is in flight: a multi-partition record runs before the next.)
        let weight = if parts.len() == 1 { weight } else { 0 };
        self.what.insert(lsn, (proc.clone(), weight));
        self.uncached_bytes += weight;
        let reply = Reply::Batch {
            sink: self.sink.clone(),
            token: lsn,
        };
        self.in_flight += 1;
        match parts.as_slice() {
            [p] => {
                let b = &mut self.batches[*p as usize];
                b.push(Invocation {
                    proc,
                    params,
                    reply,
                    restarts: 0,
                    replay,
                    drawn: Vec::new(),
                });
                if b.len() >= BATCH {
                    self.send(*p)?;
                }
                self.collect(WINDOW)?;
            }
            _ => {
                // After everything before it; nothing after it until it is done.
                drop(reply);
                self.in_flight -= 1;
                let what = self.done(lsn);
                self.flush()?;
                self.collect(0)?;
                self.multi(lsn, &what, proc, params, parts, replay)?;
            }
        }
        Ok(())
    }

    /// Runs a multi-partition record alone; one refused for the memory budget (eviction
    /// catching up, at every partition it holds) is run again until it goes through.
    fn multi(
        &mut self,
        lsn: u64,
        what: &str,
        proc: Arc<Procedure>,
        params: Vec<permafrost_types::Value>,
        parts: Vec<u32>,
        replay: Option<Replayed>,
    ) -> Result<()> {
        let started = Instant::now();
        let params: Arc<[permafrost_types::Value]> = params.into();
        loop {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let work = MpWork::Call {
                proc: proc.clone(),
                params: params.clone(),
                restarts: 0,
                replay: replay.clone(),
            };
            self.db.shared().submit_mp(work, parts.clone(), Reply::Oneshot(tx))?;
            match rx.blocking_recv().unwrap_or(Err(Error::Shutdown)) {
                Ok(rows) => {
                    self.last_taken = rows.draws.len();
                    return Ok(());
                }
                Err(e) if e.is_retryable() && started.elapsed() < MEMORY_STALL => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => {
                    return Err(Error::Recovery(format!(
                        "record {lsn} ({what}) committed when it ran but fails on replay: {e}"
                    )));
                }
            }
        }
    }

    /// Applies a schema change once everything before it is done.
    fn schema(&mut self, lsn: u64, sql: &str) -> Result<()> {
        self.flush()?;
        self.collect(0)?;
        if permafrost_sql::script::is_drop_procedure(sql) {
            // Calls logged before the drop still replay with it.
            let name = permafrost_sql::script::parse_drop_procedure(sql)?.0;
            if let Ok(h) = self.db.procedure(&name) {
                self.dropped.insert(name, h.proc.clone());
            }
        }
        let r = self.db.apply_schema_statement(sql, Record::Replayed);
        self.plans.clear();
        self.last_proc = None;
        r.map_err(|e| Error::Recovery(format!("record {lsn} ({sql}): {e}")))
    }

    fn procedure(&mut self, lsn: u64, name: &str) -> Result<Arc<Procedure>> {
        if let Some((n, p)) = &self.last_proc
            && n == name
        {
            return Ok(p.clone());
        }
        let p = self.lookup(lsn, name)?;
        self.last_proc = Some((name.to_string(), p.clone()));
        Ok(p)
    }

    fn lookup(&mut self, lsn: u64, name: &str) -> Result<Arc<Procedure>> {
        if let Some(def) = self.pending.remove(name) {
            // Its first call: the tables it uses exist by now.
            self.db
                .register(def)
                .map_err(|e| Error::Recovery(format!("record {lsn}: registering procedure \"{name}\": {e}")))?;
        }
        match self.db.procedure(name) {
            Ok(h) => Ok(h.proc),
            Err(_) => self.dropped.get(name).cloned().ok_or_else(|| {
                Error::Recovery(format!(
                    "record {lsn} calls procedure \"{name}\", which is not registered: register the \
                     application's procedures before recover()"
                ))
            }),
        }
    }

    fn plan(&mut self, lsn: u64, sql: &str) -> Result<Arc<Procedure>> {
        if let Some(p) = self.plans.get(sql) {
            return Ok(p.clone());
        }
        if crate::block_record::is_logged(sql) {
            let p = Arc::new(
                crate::interactive::replayed(sql, &self.db.catalog())
                    .map_err(|e| Error::Recovery(format!("record {lsn}: {e}")))?,
            );
            self.keep_plan(sql, &p);
            return Ok(p);
        }
        let prepared = permafrost_sql::prepare(&self.db.catalog(), sql)
            .map_err(|e| Error::Recovery(format!("record {lsn} ({sql}): {e}")))?;
        let p = Arc::new(if sql.starts_with(crate::procedure::BULK_MARK) {
            Procedure::bulk_insert(prepared)
        } else {
            Procedure::ad_hoc(prepared)
        });
        self.keep_plan(sql, &p);
        Ok(p)
    }

    /// Keeps the plan of `sql` for the records after it, unless it is long
    /// ([`UNCACHED_TEXT`]); the kept plans start over past [`CACHED_PLANS`].
    fn keep_plan(&mut self, sql: &str, p: &Arc<Procedure>) {
        if sql.len() < UNCACHED_TEXT {
            if self.plans.len() >= CACHED_PLANS {
                self.plans.clear();
            }
            self.plans.insert(sql.to_string(), p.clone());
        }
    }

    fn send(&mut self, p: u32) -> Result<()> {
        let b = std::mem::take(&mut self.batches[p as usize]);
        if !b.is_empty() {
            self.db.shared().send(p, Msg::Batch(b)).map_err(|_| Error::Shutdown)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        for p in 0..self.batches.len() as u32 {
            self.send(p)?;
        }
        Ok(())
    }

    /// Takes completions until at most `limit` calls are in flight; a replayed
    /// transaction that fails is an error (it committed when it first ran).
    fn collect(&mut self, limit: usize) -> Result<()> {
        while self.in_flight > limit {
            if limit == 0 {
                self.flush()?;
            }
            let batch = match self.completions.recv_timeout(Duration::from_millis(1)) {
                Ok(b) => b,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    // The batches not yet full must go out for the window to drain.
                    self.flush()?;
                    continue;
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return Err(Error::Shutdown),
            };
            for c in batch {
                self.in_flight -= 1;
                let what = self.done(c.token);
                if let Ok(rows) = &c.result {
                    self.last_taken = rows.draws.len();
                }
                if let Err(e) = c.result {
                    return Err(Error::Recovery(format!(
                        "record {} ({what}) committed when it ran but fails on replay: {e}",
                        c.token
                    )));
                }
            }
        }
        Ok(())
    }

    /// Waits for everything; returns the procedures never called.
    fn finish(mut self) -> Result<HashMap<String, ProcedureDef>> {
        self.flush()?;
        self.collect(0)?;
        Ok(self.pending)
    }
}

/// One part of a logged block that changed the schema, as replay runs it.
pub(crate) enum BlockPart {
    /// Schema statements (one text).
    Schema(String),
    /// The record of an interactive transaction of some of its writes, with how many of
    /// the record's parameters are theirs.
    Writes(String, usize),
}

/// A logged block that changed the schema ([`SCHEMA_MARK`]), split
/// for replay into its schema changes and the runs of writes between them, in the order
/// they ran. `None` for any other text.
pub(crate) fn split_schema_block(sql: &str) -> Result<Option<Vec<BlockPart>>> {
    let Some(json) = sql.strip_prefix(crate::block_record::SCHEMA_MARK) else {
        return Ok(None);
    };
    let bad = |m: String| Error::Recovery(format!("interactive transaction record with schema changes: {m}"));
    let mut logged: crate::block_record::Logged = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
    let schema = std::mem::take(&mut logged.schema);
    let mut at = std::mem::take(&mut logged.schema_at);
    if at.is_empty() {
        at = vec![0; schema.len()];
    }
    let n = logged.statements.len();
    if at.len() != schema.len() || at.windows(2).any(|w| w[0] > w[1]) || at.iter().any(|&a| a > n) {
        return Err(bad("the schema changes' places do not fit its statements".into()));
    }
    let counts = match &logged.counts {
        Some(c) if c.len() == n => c.clone(),
        _ => return Err(bad("parameter counts do not fit its statements".into())),
    };
    let mut parts = Vec::new();
    let mut done = 0;
    let mut writes = |upto: usize, parts: &mut Vec<BlockPart>| -> Result<()> {
        if upto <= done {
            return Ok(());
        }
        let part = crate::block_record::Logged {
            now: logged.now,
            statements: logged.statements[done..upto].to_vec(),
            home: logged.home,
            counts: Some(counts[done..upto].to_vec()),
            schema: Vec::new(),
            schema_at: Vec::new(),
            seeds: logged.seeds.get(done..upto).map(<[String]>::to_vec).unwrap_or_default(),
        };
        let params = counts[done..upto].iter().sum();
        let json = serde_json::to_string(&part).map_err(|e| Error::Internal(e.to_string()))?;
        parts.push(BlockPart::Writes(
            format!("{}{json}", crate::block_record::COUNTED_MARK),
            params,
        ));
        done = upto;
        Ok(())
    };
    for (text, &a) in schema.iter().zip(&at) {
        writes(a, &mut parts)?;
        parts.push(BlockPart::Schema(text.clone()));
    }
    writes(n, &mut parts)?;
    Ok(Some(parts))
}

fn describe(p: &Procedure) -> String {
    match p.statements.first() {
        Some(s) if p.adhoc => s.sql.clone(),
        _ => format!("CALL {}", p.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_line_round_trips_and_an_old_report_reads_as_version_1() {
        let report = RecoveryReport {
            records: 7,
            torn: Some(TornReport {
                file: "a.log".into(),
                offset: 40,
                bytes: 100,
                lsn: 8,
                later_records: 2,
            }),
            trimmed: Some(TrimReport {
                file: "b.log".into(),
                offset: 4096,
                bytes: 8192,
                first_lsn: 100,
                last_lsn: Some(180),
                records: Some(81),
                removed_segments: vec!["c.log".into()],
                kept_in: "trimmed-100-1".into(),
                reason: "record checksum mismatch".into(),
            }),
            ..Default::default()
        };
        assert_eq!(report.version, RECOVERY_REPORT_VERSION);
        let line = format!("recovery: x\n{}\n", report.to_line());
        assert_eq!(RecoveryReport::from_lines(&line), Some(report));
        let old = "recovery report: {\"records\":3,\"schema_changes\":0,\"seconds\":0.1,\"torn_tail\":null,\
                   \"snapshot\":null,\"warnings\":[]}";
        let r = RecoveryReport::from_lines(old).expect("an old report reads");
        assert_eq!((r.version, r.records, r.trimmed), (1, 3, None));
    }
}
