//! TPC-C against MariaDB through its own driver (mysql_async): the same population, the
//! same transaction logic (txns.rs, through [`Session`]) and the same consistency
//! conditions as over the PostgreSQL protocol, each statement in MariaDB's dialect; or one
//! `CALL` per transaction of MariaDB's own stored procedures (mariadb_procs.rs).
//!
//! The dialect: no `::type` casts, `CAST(... AS SIGNED)` for bigint, `DATETIME(6)` for
//! timestamp columns (MariaDB's TIMESTAMP is a different type), and no `UPDATE ...
//! RETURNING`: such an update runs as the UPDATE and then a SELECT of its RETURNING
//! columns over the same rows, which sees the transaction's own change (so `d_next_o_id -
//! 1` is the order's number, as in PostgreSQL) and needs no lock of its own (the UPDATE
//! holds the rows).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row, Statement, Value};
use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::inputs::Input;
use super::mariadb_procs::PROCEDURES;
use super::procs::{INVALID_ITEM, NAMES};
use super::random::NuConstants;
use super::session::{Cells, Failure, Param, Result, Session, St, postgres_texts};
use super::txns::{Done, Ended};
use super::{Attempt, Mode, Tally, TpccOptions, TpccReport, check, drive, report, run_terminals, schema, txns};
use crate::BenchError;
use crate::mariadb::{bind, connect, err, exec_all, numbered};
use crate::way::Flavor;

/// A PostgreSQL text of the transactions or the schema in MariaDB's dialect.
fn dialect(sql: &str) -> String {
    sql.replace("::integer", "")
        .replace("::bigint", "")
        .replace(" AS bigint)", " AS SIGNED)")
        .replace(" timestamp", " datetime(6)")
}

/// One statement a [`St`] runs on MariaDB: its text's prepared form, the parameters its
/// `?` take, and whether its rows are the answer.
struct Part {
    statement: Statement,
    order: Vec<usize>,
    rows: bool,
}

/// The texts each [`St`] runs, in order, with whether its rows are the answer: the
/// PostgreSQL text in MariaDB's dialect, an `UPDATE ... RETURNING` as the UPDATE and a
/// SELECT of the returned columns over the rows it updated.
fn parts(pg: &str) -> Vec<(String, bool)> {
    let sql = dialect(pg);
    let Some((update, returning)) = sql.split_once(" RETURNING ") else {
        return vec![(sql, true)];
    };
    let table = update
        .trim_start_matches("UPDATE ")
        .split_whitespace()
        .next()
        .unwrap_or("");
    let condition = update.split_once(" WHERE ").map(|(_, c)| c).unwrap_or("TRUE");
    let select = format!("SELECT {returning} FROM {table} WHERE {condition}");
    vec![(update.to_string(), false), (select, true)]
}

/// A MariaDB connection with the transactions' statements prepared.
pub struct MariaDb {
    conn: Conn,
    statements: Vec<Vec<Part>>,
}

impl MariaDb {
    async fn prepare(mut conn: Conn) -> std::result::Result<MariaDb, mysql_async::Error> {
        let mut statements = Vec::with_capacity(St::COUNT);
        for pg in postgres_texts() {
            let mut prepared = Vec::new();
            for (text, rows) in parts(&pg) {
                let (sql, order) = numbered(&text);
                prepared.push(Part {
                    statement: conn.prep(sql).await?,
                    order,
                    rows,
                });
            }
            statements.push(prepared);
        }
        Ok(MariaDb { conn, statements })
    }
}

fn value(p: &Param<'_>) -> Value {
    match *p {
        Param::Int(v) => Value::Int(v as i64),
        Param::Big(v) => Value::Int(v),
        Param::Text(s) => Value::Bytes(s.as_bytes().to_vec()),
    }
}

impl Cells for Row {
    fn int(&self, i: usize) -> Result<Option<i64>> {
        match self.get_opt::<Option<i64>, usize>(i) {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => Err(Failure::Missing(format!("column {i} is not an integer: {e}"))),
            None => Err(Failure::Missing(format!("the row has no column {i}"))),
        }
    }

    fn text(&self, i: usize) -> Result<String> {
        match self.get_opt::<String, usize>(i) {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => Err(Failure::Missing(format!("column {i} is not text: {e}"))),
            None => Err(Failure::Missing(format!("the row has no column {i}"))),
        }
    }
}

impl Session for MariaDb {
    type Row = Row;

    async fn begin(&mut self) -> Result<()> {
        Ok(self.conn.query_drop("START TRANSACTION").await?)
    }

    async fn end(&mut self, commit: bool) -> Result<()> {
        Ok(self.conn.query_drop(if commit { "COMMIT" } else { "ROLLBACK" }).await?)
    }

    async fn query(&mut self, st: St, params: &[Param<'_>]) -> Result<Vec<Row>> {
        let values: Vec<Value> = params.iter().map(value).collect();
        let mut answer = Vec::new();
        for part in &self.statements[st.0] {
            let args = bind(&part.order, &values);
            if part.rows {
                answer = self.conn.exec(&part.statement, args).await?;
            } else {
                self.conn.exec_drop(&part.statement, args).await?;
            }
        }
        Ok(answer)
    }

    async fn execute(&mut self, st: St, params: &[Param<'_>]) -> Result<u64> {
        let values: Vec<Value> = params.iter().map(value).collect();
        let mut changed = 0;
        for part in &self.statements[st.0] {
            self.conn.exec_drop(&part.statement, bind(&part.order, &values)).await?;
            if !part.rows || changed == 0 {
                changed = self.conn.affected_rows();
            }
        }
        Ok(changed)
    }
}

/// What a terminal's MariaDB connection runs a transaction with.
enum Way {
    Blocks(Box<MariaDb>),
    Calls(Conn, Vec<Statement>),
}

impl Way {
    async fn new(mut conn: Conn, mode: Mode) -> std::result::Result<Way, mysql_async::Error> {
        if mode != Mode::Procedures {
            return Ok(Way::Blocks(Box::new(MariaDb::prepare(conn).await?)));
        }
        let mut calls = Vec::new();
        for (name, n) in NAMES.iter().zip([6, 7, 4, 2, 3]) {
            let marks = vec!["?"; n].join(", ");
            calls.push(conn.prep(format!("CALL {name}({marks})")).await?);
        }
        Ok(Way::Calls(conn, calls))
    }
}

/// A JSON array of integers (New-Order's arguments to the procedure).
fn json(values: impl Iterator<Item = i32>) -> String {
    format!("[{}]", values.map(|v| v.to_string()).collect::<Vec<_>>().join(","))
}

/// Runs `input` as one CALL (the procedure is the transaction).
async fn call(conn: &mut Conn, calls: &[Statement], input: &Input) -> Result<Done> {
    let st = &calls[input.kind().index()];
    let args: Vec<Value> = match input {
        Input::NewOrder { w, d, c, lines } => vec![
            (*w).into(),
            (*d).into(),
            (*c).into(),
            json(lines.iter().map(|l| l.0)).into(),
            json(lines.iter().map(|l| l.1)).into(),
            json(lines.iter().map(|l| l.2)).into(),
        ],
        Input::Payment {
            w,
            d,
            c_w,
            c_d,
            customer,
            cents,
        } => {
            let (id, last) = customer.arguments();
            vec![
                (*w).into(),
                (*d).into(),
                (*c_w).into(),
                (*c_d).into(),
                id.into(),
                last.into(),
                (*cents).into(),
            ]
        }
        Input::OrderStatus { w, d, customer } => {
            let (id, last) = customer.arguments();
            vec![(*w).into(), (*d).into(), id.into(), last.into()]
        }
        Input::Delivery { w, carrier } => vec![(*w).into(), (*carrier).into()],
        Input::StockLevel { w, d, threshold } => vec![(*w).into(), (*d).into(), (*threshold).into()],
    };
    let mut done = Done::default();
    match conn.exec::<Row, _, _>(st, args).await {
        Ok(rows) => {
            if matches!(input, Input::Delivery { .. })
                && let Some(r) = rows.first()
            {
                done.skipped_deliveries = r.int(1)?.unwrap_or(0) as u32;
            }
            done.ended = Some(Ended::Committed);
        }
        Err(mysql_async::Error::Server(e))
            if matches!(input, Input::NewOrder { .. }) && e.state == "45000" && e.message.ends_with(INVALID_ITEM) =>
        {
            done.ended = Some(Ended::RolledBack)
        }
        Err(e) => return Err(e.into()),
    }
    Ok(done)
}

impl Attempt for Way {
    async fn attempt(&mut self, input: &Input) -> Result<Done> {
        match self {
            Way::Blocks(session) => txns::run(session.as_mut(), input).await,
            Way::Calls(conn, calls) => call(conn, calls, input).await,
        }
    }
}

/// Loads (when asked), runs the terminals, and checks the consistency conditions, against
/// the MariaDB server of `url` (mysql_async's form: `mysql://user@host/db?socket=/path`).
pub fn run(
    url: &str,
    opts: &TpccOptions,
    mode: Mode,
    progress_bar: bool,
) -> std::result::Result<TpccReport, BenchError> {
    opts.validate()?;
    super::Target::runtime(opts.clients.max(schema::LOAD_CONNECTIONS))?.block_on(run_async(
        url,
        opts,
        mode,
        progress_bar,
    ))
}

async fn run_async(
    url: &str,
    opts: &TpccOptions,
    mode: Mode,
    progress_bar: bool,
) -> std::result::Result<TpccReport, BenchError> {
    let mut admin = connect(url).await?;
    let version = crate::mariadb::version(&mut admin).await?;
    let nu = NuConstants::draw(&mut SmallRng::seed_from_u64(opts.seed));
    let load_seconds = if opts.load {
        Some(load(url, &mut admin, opts, nu.c_last, progress_bar).await?)
    } else {
        None
    };
    if mode == Mode::Procedures && opts.run {
        let drops = NAMES.iter().map(|n| format!("DROP PROCEDURE IF EXISTS {n}"));
        exec_all(&mut admin, drops).await?;
        exec_all(&mut admin, PROCEDURES).await?;
    }
    let tally = if opts.run {
        run_terminals(opts, nu, progress_bar, |inputs, measure_from, end| {
            let url = url.to_string();
            async move {
                let conn = connect(&url).await?;
                let way = Way::new(conn, mode)
                    .await
                    .map_err(|e| err("preparing the transactions' statements", e))?;
                drive(way, inputs, measure_from, end).await
            }
        })
        .await?
    } else {
        Tally::new()
    };
    let checks = checks(&mut admin).await;
    Ok(report(
        opts,
        mode,
        (url.to_string(), format!("MariaDB {version}")),
        load_seconds,
        if opts.run { opts.duration } else { 0.0 },
        tally,
        checks,
    ))
}

/// Creates the tables (again) and loads the population over several connections; the
/// seconds taken.
async fn load(
    url: &str,
    admin: &mut Conn,
    opts: &TpccOptions,
    c_last_c: u32,
    progress_bar: bool,
) -> std::result::Result<f64, BenchError> {
    let started = Instant::now();
    let drops = schema::TABLES.iter().rev().map(|t| format!("DROP TABLE IF EXISTS {t}"));
    exec_all(admin, drops).await?;
    exec_all(admin, schema::ddl(Flavor::Postgres).iter().map(|d| dialect(d))).await?;
    let (jobs, bar) = schema::planned_jobs(opts, progress_bar);
    let jobs = Arc::new(Mutex::new(jobs));
    let loaded = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for _ in 0..schema::LOAD_CONNECTIONS {
        let (url, opts, jobs, loaded, bar) = (url.to_string(), opts.clone(), jobs.clone(), loaded.clone(), bar.clone());
        handles.push(tokio::spawn(async move {
            let mut conn = connect(&url).await?;
            loop {
                let Some(job) = jobs.lock().expect("the job list is never poisoned").pop() else {
                    return Ok::<(), BenchError>(());
                };
                exec_all(&mut conn, schema::statements(job, &opts, c_last_c))
                    .await
                    .map_err(|e| BenchError::Client(format!("loading {job:?}: {e}")))?;
                let rows = schema::job_rows(job, &opts.scale);
                bar.set_position(loaded.fetch_add(rows, Ordering::Relaxed) + rows);
            }
        }));
    }
    for h in handles {
        h.await
            .map_err(|e| BenchError::Client(format!("a loader stopped: {e}")))??;
    }
    bar.finish_and_clear();
    Ok(started.elapsed().as_secs_f64())
}

/// The consistency conditions' queries in MariaDB's placeholders.
async fn checks(admin: &mut Conn) -> Vec<check::CheckResult> {
    let districts = admin
        .query::<(i32, i32), _>(check::DISTRICTS_QUERY)
        .await
        .map_err(|e| e.to_string());
    let count = async |sql: &str, params: &[i32]| {
        let (text, order) = numbered(sql);
        match admin.exec_first::<i64, _, _>(text, bind(&order, params)).await {
            Ok(n) => n.ok_or_else(|| "the query returned no count".to_string()),
            Err(e) => Err(e.to_string()),
        }
    };
    check::check_with(districts, count).await
}

#[cfg(test)]
mod tests {
    use super::{dialect, parts};
    use crate::tpcc::sql;

    #[test]
    fn an_update_returning_becomes_the_update_and_a_select() {
        assert_eq!(
            parts(sql::NO_DISTRICT),
            vec![
                (
                    "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2".to_string(),
                    false
                ),
                (
                    "SELECT d_next_o_id - 1, d_tax FROM district WHERE d_w_id = $1 AND d_id = $2".to_string(),
                    true
                ),
            ]
        );
        assert_eq!(parts(sql::NO_ORDER).len(), 1);
        assert_eq!(
            dialect("SELECT CAST(SUM(x) * 100 AS bigint) FROM t WHERE a = $1::integer * 0.01"),
            "SELECT CAST(SUM(x) * 100 AS SIGNED) FROM t WHERE a = $1 * 0.01"
        );
        assert_eq!(
            dialect("CREATE TABLE h (h_date timestamp, h_amount numeric(6,2))"),
            "CREATE TABLE h (h_date datetime(6), h_amount numeric(6,2))"
        );
    }
}
