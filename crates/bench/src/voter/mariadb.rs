//! Voter against MariaDB through its own driver (mysql_async): the same calls, statements
//! and invariants as over the PostgreSQL protocol, in MariaDB's dialect. Vote runs as an
//! interactive transaction of one statement per round trip (the caller's votes counted
//! `FOR UPDATE`, which locks their index range so that two votes of one caller are
//! ordered, as PostgreSQL's advisory lock does) or as one `CALL` of a MariaDB stored
//! procedure that does the same inside START TRANSACTION ... COMMIT.

use std::future::Future;
use std::time::Instant;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Statement, TxOpts};

use super::data::{Call, Caller};
use super::{LOAD_CONNECTIONS, Mode, Tally, VoteChunks, VoterOptions, VoterReport, check, procs, report, small_tables};
use crate::BenchError;
use crate::mariadb::{Transactions, attempts, connect, err, placeholders};

/// The tables in MariaDB's dialect (InnoDB; VOTES' rows keyed by InnoDB's hidden row id).
const DDL: &[&str] = &[
    "CREATE TABLE contestants (contestant_number INT NOT NULL PRIMARY KEY, contestant_name VARCHAR(50) NOT NULL) \
     ENGINE=InnoDB",
    "CREATE TABLE area_code_state (area_code SMALLINT NOT NULL PRIMARY KEY, state VARCHAR(2) NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE votes (vote_id BIGINT NOT NULL, phone_number BIGINT NOT NULL, state VARCHAR(2) NOT NULL, \
     contestant_number INT NOT NULL, created TIMESTAMP(6) NOT NULL) ENGINE=InnoDB",
    "CREATE INDEX votes_by_phone ON votes (phone_number)",
];

/// Vote as a MariaDB stored procedure; its one result row is the code.
const PROCEDURE: &str = "CREATE PROCEDURE voter_vote(p_id BIGINT, p_phone BIGINT, p_contestant INT, p_max INT)
BEGIN
    DECLARE n BIGINT DEFAULT 0;
    DECLARE v_state VARCHAR(2) DEFAULT NULL;
    IF (SELECT count(*) FROM contestants WHERE contestant_number = p_contestant) = 0 THEN
        SELECT 1 AS code;
    ELSE
        START TRANSACTION;
        SELECT count(*) INTO n FROM votes WHERE phone_number = p_phone FOR UPDATE;
        IF n >= p_max THEN
            ROLLBACK;
            SELECT 2 AS code;
        ELSE
            SELECT state INTO v_state FROM area_code_state WHERE area_code = p_phone DIV 10000000;
            INSERT INTO votes (vote_id, phone_number, state, contestant_number, created)
                VALUES (p_id, p_phone, coalesce(v_state, 'XX'), p_contestant, now(6));
            COMMIT;
            SELECT 0 AS code;
        END IF;
    END IF;
END";

/// One of the PostgreSQL texts in MariaDB's dialect but for its placeholders (which
/// [`crate::mariadb::count`] writes): the integer division of a phone number by its digits
/// after the area code, which MariaDB writes `DIV` (its `/` divides exactly).
pub fn dialect(sql: &str) -> String {
    sql.replace("phone_number / 10000000", "phone_number DIV 10000000")
}

async fn count(conn: &mut Conn, sql: &str, params: Vec<i64>) -> Result<i64, String> {
    crate::mariadb::count(conn, &dialect(sql), &params).await
}

/// Loads (when asked), runs the terminals, and checks the invariants, against the MariaDB
/// server of `url` (mysql_async's form: `mysql://user@host/db?socket=/path`).
pub fn run(url: &str, opts: &VoterOptions, mode: Mode, progress_bar: bool) -> Result<VoterReport, BenchError> {
    opts.validate()?;
    crate::tpcc::Target::runtime(opts.clients.max(LOAD_CONNECTIONS))?.block_on(run_async(url, opts, mode, progress_bar))
}

async fn run_async(url: &str, opts: &VoterOptions, mode: Mode, progress_bar: bool) -> Result<VoterReport, BenchError> {
    let mut admin = connect(url).await?;
    let version = crate::mariadb::version(&mut admin).await?;
    let load_seconds = if opts.load {
        let started = Instant::now();
        let drops = procs::TABLES.iter().rev().map(|t| format!("DROP TABLE IF EXISTS {t}"));
        crate::mariadb::exec_all(&mut admin, drops).await?;
        let ddl = DDL.iter().map(|s| s.to_string());
        crate::mariadb::exec_all(&mut admin, ddl.chain(small_tables(opts.contestants))).await?;
        let votes = std::sync::Arc::new(VoteChunks::new(opts));
        let loaders: Vec<_> = (0..LOAD_CONNECTIONS)
            .map(|_| {
                let (url, votes) = (url.to_string(), votes.clone());
                tokio::spawn(async move {
                    let mut conn = connect(&url).await?;
                    crate::mariadb::exec_all(&mut conn, std::iter::from_fn(|| votes.take())).await
                })
            })
            .collect();
        for l in loaders {
            l.await
                .map_err(|e| BenchError::Client(format!("a loader stopped: {e}")))??;
        }
        Some(started.elapsed().as_secs_f64())
    } else {
        None
    };
    if mode == Mode::Procedures && opts.run {
        crate::mariadb::exec_all(&mut admin, ["DROP PROCEDURE IF EXISTS voter_vote", PROCEDURE]).await?;
    }
    let before = count(&mut admin, check::COUNT, Vec::new())
        .await
        .map_err(BenchError::Client)?;
    let tally = if opts.run {
        let max = opts.max_votes;
        super::spawn_terminals(opts, progress_bar, |caller, times| {
            let url = url.to_string();
            async move { terminal(&url, mode, caller, max, times).await }
        })
        .await?
    } else {
        Tally::new()
    };
    // The invariants, each per-area query with its parameters.
    let mut counts = Vec::new();
    for (i, sql, params) in check::queries(opts.max_votes as i64) {
        let start = Instant::now();
        let n = count(&mut admin, sql, params).await;
        counts.push((i, n, start.elapsed().as_secs_f64()));
    }
    let start = Instant::now();
    let rows = count(&mut admin, check::COUNT, Vec::new()).await;
    let after = rows.clone().ok();
    let checks = check::results(
        counts,
        (rows, before + tally.recorded as i64, start.elapsed().as_secs_f64()),
    );
    Ok(report(
        opts,
        mode,
        (url.to_string(), format!("MariaDB {version}")),
        (load_seconds, if opts.run { opts.duration } else { 0.0 }),
        tally,
        (before, after),
        checks,
    ))
}

/// A connection's statements: the interactive transaction's, or the call.
enum Prepared {
    Interactive([Statement; 4]),
    Call(Statement),
}

impl Prepared {
    async fn new(c: &mut Conn, mode: Mode) -> Result<Prepared, mysql_async::Error> {
        if mode == Mode::Procedures {
            return Ok(Prepared::Call(c.prep("CALL voter_vote(?, ?, ?, ?)").await?));
        }
        let votes = format!("{} FOR UPDATE", placeholders(procs::VOTES_OF_CALLER));
        Ok(Prepared::Interactive([
            c.prep(placeholders(procs::CONTESTANT)).await?,
            c.prep(votes).await?,
            c.prep(placeholders(procs::STATE)).await?,
            c.prep(placeholders(procs::INSERT).replace("now()", "now(6)")).await?,
        ]))
    }

    async fn vote(&self, conn: &mut Conn, call: &Call, max: i32) -> Result<i64, mysql_async::Error> {
        let [contestant, votes, state, insert] = match self {
            Prepared::Call(st) => {
                let code: Option<i64> = conn
                    .exec_first(st, (call.vote_id, call.phone, call.contestant, max))
                    .await?;
                return Ok(code.unwrap_or(-1));
            }
            Prepared::Interactive(st) => st,
        };
        let mut tx = conn.start_transaction(TxOpts::default()).await?;
        let found: Option<i32> = tx.exec_first(contestant, (call.contestant,)).await?;
        if found.is_none() {
            tx.rollback().await?;
            return Ok(procs::INVALID_CONTESTANT);
        }
        let so_far: i64 = tx.exec_first(votes, (call.phone,)).await?.unwrap_or(0);
        if so_far >= max as i64 {
            tx.rollback().await?;
            return Ok(procs::OVER_LIMIT);
        }
        let area = procs::area_code(call.phone);
        let found: Option<String> = tx.exec_first(state, (area,)).await?;
        let state = found.unwrap_or_else(|| procs::UNKNOWN_STATE.to_string());
        tx.exec_drop(insert, (call.vote_id, call.phone, state, call.contestant))
            .await?;
        tx.commit().await?;
        Ok(procs::ACCEPTED)
    }
}

impl Transactions for Prepared {
    /// A call, and the vote limit.
    type Input = (Call, i32);
    /// The code Vote answers.
    type Outcome = i64;

    fn attempt(
        &self,
        conn: &mut Conn,
        (call, max): &(Call, i32),
    ) -> impl Future<Output = Result<i64, mysql_async::Error>> + Send {
        self.vote(conn, call, *max)
    }
}

/// One terminal: its connection votes until `end`, the calls begun after `measure_from`
/// counted.
async fn terminal(
    url: &str,
    mode: Mode,
    mut caller: Caller,
    max: i32,
    (measure_from, end): (Instant, Instant),
) -> Result<Tally, BenchError> {
    let mut conn = connect(url).await?;
    let prepared = Prepared::new(&mut conn, mode)
        .await
        .map_err(|e| err("preparing Vote's statements", e))?;
    let mut tally = Tally::new();
    while Instant::now() < end {
        let began = Instant::now();
        let call = caller.call();
        let (outcome, retries) = attempts("Vote", &prepared, &mut conn, &(call, max)).await?;
        tally.note(outcome, retries, began, began >= measure_from);
    }
    let _ = conn.disconnect().await;
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::dialect;

    #[test]
    fn phone_numbers_divide_as_integers() {
        assert_eq!(
            dialect("SELECT 1 FROM votes WHERE a = votes.phone_number / 10000000 AND b = $1"),
            "SELECT 1 FROM votes WHERE a = votes.phone_number DIV 10000000 AND b = $1"
        );
    }
}
