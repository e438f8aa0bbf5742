//! TATP against MariaDB through its own driver (mysql_async): the same population, inputs,
//! statements and invariants as over the PostgreSQL protocol, in MariaDB's dialect (InnoDB
//! at its default isolation, REPEATABLE READ). A transaction runs as the description's
//! statements, one per round trip (several inside START TRANSACTION ... COMMIT), or as one
//! `CALL` of a MariaDB stored procedure of the PL/pgSQL functions' arguments and answers.
//!
//! No read needs `FOR UPDATE`: what the transactions read (a subscriber's number and id,
//! which special facilities it has) is never changed by a run, and the two answers the
//! invariants count, whether a call forwarding was inserted or deleted, are the affected
//! rows of INSERT IGNORE and DELETE, which InnoDB counts on the rows' latest versions
//! under their locks, not on the transaction's snapshot. A call forwarding inserted or
//! deleted by another terminal meanwhile is thus never counted twice. The updates' answers
//! (was the facility, the subscriber there?) are the rows they found, as PostgreSQL's are
//! ([`connect`] asks so), not only those whose values they changed.

use std::time::Instant;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row, Statement, TxOpts, Value};

use super::data::{Input, Inputs, KINDS, sub_nbr};
use super::{
    Done, LOAD_CONNECTIONS, Mode, Statements, TatpOptions, TatpReport, arguments, call_text, check, procs, report,
    spawn_loaders, spawn_terminals,
};
use crate::BenchError;
use crate::mariadb::{Transactions, attempts, connect, count, err, exec_all, placeholders};

/// The seven as MariaDB stored procedures, in [`procs::NAMES`]' order, each answering one
/// row, `done`, as the PL/pgSQL functions do. Those of several statements run them inside
/// START TRANSACTION ... COMMIT, and roll back on an error before passing it on: a lock
/// wait timeout undoes only its statement, and the next call's START TRANSACTION would
/// otherwise commit the rest.
const PROCEDURES: [&str; 7] = [
    "CREATE PROCEDURE tatp_get_subscriber_data(p_s INT)
BEGIN
    SELECT count(*) AS done FROM subscriber WHERE s_id = p_s;
END",
    "CREATE PROCEDURE tatp_get_new_destination(p_s INT, p_sf SMALLINT, p_start SMALLINT, p_end SMALLINT)
BEGIN
    SELECT count(cf.numberx) > 0 AS done FROM special_facility sf JOIN call_forwarding cf
        ON cf.s_id = sf.s_id AND cf.sf_type = sf.sf_type WHERE sf.s_id = p_s AND sf.sf_type = p_sf
        AND sf.is_active = 1 AND cf.start_time <= p_start AND p_end < cf.end_time;
END",
    "CREATE PROCEDURE tatp_get_access_data(p_s INT, p_ai SMALLINT)
BEGIN
    SELECT count(*) AS done FROM access_info WHERE s_id = p_s AND ai_type = p_ai;
END",
    "CREATE PROCEDURE tatp_update_subscriber_data(p_s INT, p_bit SMALLINT, p_sf SMALLINT, p_data SMALLINT)
BEGIN
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    UPDATE special_facility SET data_a = p_data WHERE s_id = p_s AND sf_type = p_sf;
    IF ROW_COUNT() = 0 THEN
        ROLLBACK;
        SELECT 0 AS done;
    ELSE
        UPDATE subscriber SET bit_1 = p_bit WHERE s_id = p_s;
        COMMIT;
        SELECT 1 AS done;
    END IF;
END",
    "CREATE PROCEDURE tatp_update_location(p_s INT, p_nbr VARCHAR(15), p_vlr INT)
BEGIN
    UPDATE subscriber SET vlr_location = p_vlr WHERE sub_nbr = p_nbr;
    SELECT ROW_COUNT() > 0 AS done;
END",
    "CREATE PROCEDURE tatp_insert_call_forwarding(p_s INT, p_nbr VARCHAR(15), p_sf SMALLINT,
    p_start SMALLINT, p_end SMALLINT, p_numberx VARCHAR(15))
BEGIN
    DECLARE v_s INT DEFAULT NULL;
    DECLARE n BIGINT DEFAULT 0;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    SET v_s = (SELECT s_id FROM subscriber WHERE sub_nbr = p_nbr);
    IF v_s IS NULL OR NOT EXISTS (SELECT 1 FROM special_facility WHERE s_id = v_s AND sf_type = p_sf) THEN
        ROLLBACK;
        SELECT 0 AS done;
    ELSE
        INSERT IGNORE INTO call_forwarding (s_id, sf_type, start_time, end_time, numberx)
            VALUES (v_s, p_sf, p_start, p_end, p_numberx);
        SET n = ROW_COUNT();
        COMMIT;
        SELECT n AS done;
    END IF;
END",
    "CREATE PROCEDURE tatp_delete_call_forwarding(p_s INT, p_nbr VARCHAR(15), p_sf SMALLINT, p_start SMALLINT)
BEGIN
    DECLARE v_s INT DEFAULT NULL;
    DECLARE n BIGINT DEFAULT 0;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    SET v_s = (SELECT s_id FROM subscriber WHERE sub_nbr = p_nbr);
    IF v_s IS NULL THEN
        ROLLBACK;
        SELECT 0 AS done;
    ELSE
        DELETE FROM call_forwarding WHERE s_id = v_s AND sf_type = p_sf AND start_time = p_start;
        SET n = ROW_COUNT();
        COMMIT;
        SELECT n AS done;
    END IF;
END",
];

/// One of the PostgreSQL texts in MariaDB's dialect: its placeholders, and an insert that
/// does nothing on a conflict written INSERT IGNORE (which MariaDB's affected rows count as
/// PostgreSQL's do: 1 inserted, 0 already there).
pub fn dialect(sql: &str) -> String {
    match sql.strip_suffix(" ON CONFLICT DO NOTHING") {
        Some(insert) => placeholders(&insert.replacen("INSERT INTO", "INSERT IGNORE INTO", 1)),
        None => placeholders(sql),
    }
}

/// The tables: procs.rs' DDL runs on MariaDB as it is; its tables are asked of InnoDB
/// rather than of whatever engine the server makes by default.
fn ddl() -> impl Iterator<Item = String> {
    procs::DDL.iter().map(|s| {
        if s.starts_with("CREATE TABLE") {
            format!("{s} ENGINE=InnoDB")
        } else {
            s.to_string()
        }
    })
}

/// Loads (when asked), runs the terminals, and checks the invariants, against the MariaDB
/// server of `url` (mysql_async's form: `mysql://user@host/db?socket=/path`).
pub fn run(url: &str, opts: &TatpOptions, mode: Mode, progress_bar: bool) -> Result<TatpReport, BenchError> {
    opts.validate()?;
    crate::tpcc::Target::runtime(opts.clients.max(LOAD_CONNECTIONS))?.block_on(run_async(url, opts, mode, progress_bar))
}

async fn run_async(url: &str, opts: &TatpOptions, mode: Mode, progress_bar: bool) -> Result<TatpReport, BenchError> {
    let mut admin = connect(url).await?;
    let version = crate::mariadb::version(&mut admin).await?;
    let load_seconds = if opts.load {
        Some(load(url, &mut admin, opts, progress_bar).await?)
    } else {
        None
    };
    if mode == Mode::Procedures && opts.run {
        for (name, create) in procs::NAMES.iter().zip(PROCEDURES) {
            let drop = format!("DROP PROCEDURE IF EXISTS {name}");
            exec_all(&mut admin, [drop.as_str(), create]).await?;
        }
    }
    let before = count(&mut admin, check::FORWARDINGS, &[])
        .await
        .map_err(BenchError::Client)?;
    let done = if opts.run {
        spawn_terminals(opts, progress_bar, |inputs, times| {
            let url = url.to_string();
            async move { terminal(&url, mode, inputs, times).await }
        })
        .await?
    } else {
        Done::new()
    };
    let expected = check::Expected {
        subscribers: opts.subscribers,
        forwardings: before + done.forwardings,
    };
    // The invariants: the same queries as over the wire, their `$1` and `$2` bound twice.
    let mut per_range = Vec::new();
    for (i, sql, [low, high]) in check::queries(opts.subscribers) {
        let start = Instant::now();
        let n = count(&mut admin, sql, &[low as i64, high as i64]).await;
        per_range.push((i, n, start.elapsed().as_secs_f64()));
    }
    let subscribers = count(&mut admin, check::SUBSCRIBERS, &[]).await;
    let forwardings = count(&mut admin, check::FORWARDINGS, &[]).await;
    let after = forwardings.clone().ok();
    let checks = check::results(per_range, &expected, subscribers, forwardings);
    let _ = admin.disconnect().await;
    Ok(report(
        opts,
        mode,
        (url.to_string(), format!("MariaDB {version}")),
        (load_seconds, if opts.run { opts.duration } else { 0.0 }),
        done,
        (before, after),
        checks,
    ))
}

/// Creates the tables and loads the population over several connections; the seconds taken.
async fn load(url: &str, admin: &mut Conn, opts: &TatpOptions, progress_bar: bool) -> Result<f64, BenchError> {
    let started = Instant::now();
    let drops = procs::TABLES.iter().rev().map(|t| format!("DROP TABLE IF EXISTS {t}"));
    exec_all(admin, drops.chain(ddl())).await?;
    spawn_loaders(opts, progress_bar, |jobs| {
        let url = url.to_string();
        async move {
            let mut conn = connect(&url).await?;
            while let Some(statements) = jobs.take() {
                exec_all(&mut conn, statements).await?;
            }
            let _ = conn.disconnect().await;
            Ok(())
        }
    })
    .await?;
    Ok(started.elapsed().as_secs_f64())
}

/// A connection's statements: the interactive transactions', or the calls.
enum Prepared {
    Interactive(Box<Statements<Statement>>),
    Calls(Vec<Statement>),
}

impl Prepared {
    async fn new(conn: &mut Conn, mode: Mode) -> Result<Prepared, mysql_async::Error> {
        if mode == Mode::Procedures {
            let mut calls = Vec::new();
            for i in 0..procs::NAMES.len() {
                calls.push(conn.prep(placeholders(&call_text("CALL", i))).await?);
            }
            return Ok(Prepared::Calls(calls));
        }
        let mut prepared = Vec::new();
        for sql in Statements::<Statement>::TEXTS {
            prepared.push(conn.prep(dialect(sql)).await?);
        }
        Ok(Prepared::Interactive(Box::new(Statements::new(prepared))))
    }
}

impl Transactions for Prepared {
    type Input = Input;
    /// Whether the transaction succeeded.
    type Outcome = bool;

    async fn attempt(&self, conn: &mut Conn, input: &Input) -> Result<bool, mysql_async::Error> {
        match self {
            Prepared::Calls(calls) => {
                let params = arguments(input, Value::from, Value::from, |x| Value::from(x));
                let done: Option<i64> = conn.exec_first(&calls[input.kind()], params).await?;
                Ok(done.unwrap_or(0) > 0)
            }
            Prepared::Interactive(st) => interactive(conn, st, input).await,
        }
    }
}

/// The description's transactions, one statement per round trip: a single statement on its
/// own (autocommitted), several inside START TRANSACTION ... COMMIT (a transaction left by
/// an error is rolled back by the driver before the connection's next statement).
async fn interactive(conn: &mut Conn, st: &Statements<Statement>, input: &Input) -> Result<bool, mysql_async::Error> {
    match input {
        Input::GetSubscriberData { s } => Ok(conn.exec_first::<Row, _, _>(&st.get_subscriber, (*s,)).await?.is_some()),
        Input::GetNewDestination {
            s,
            sf_type,
            start_time,
            end_time,
        } => Ok(!conn
            .exec::<Row, _, _>(&st.get_new_destination, (*s, *sf_type, *start_time, *end_time))
            .await?
            .is_empty()),
        Input::GetAccessData { s, ai_type } => Ok(conn
            .exec_first::<Row, _, _>(&st.get_access, (*s, *ai_type))
            .await?
            .is_some()),
        Input::UpdateSubscriberData {
            s,
            bit_1,
            sf_type,
            data_a,
        } => {
            let mut tx = conn.start_transaction(TxOpts::default()).await?;
            tx.exec_drop(&st.update_facility, (*data_a, *s, *sf_type)).await?;
            if tx.affected_rows() == 0 {
                tx.rollback().await?;
                return Ok(false);
            }
            tx.exec_drop(&st.update_subscriber, (*bit_1, *s)).await?;
            tx.commit().await?;
            Ok(true)
        }
        Input::UpdateLocation { s, vlr_location } => {
            conn.exec_drop(&st.update_location, (*vlr_location, sub_nbr(*s)))
                .await?;
            Ok(conn.affected_rows() > 0)
        }
        Input::InsertCallForwarding {
            s,
            sf_type,
            start_time,
            end_time,
            numberx,
        } => {
            let mut tx = conn.start_transaction(TxOpts::default()).await?;
            let Some(id) = tx.exec_first::<i32, _, _>(&st.subscriber_of, (sub_nbr(*s),)).await? else {
                tx.rollback().await?;
                return Ok(false);
            };
            let types: Vec<i16> = tx.exec(&st.facility_types, (id,)).await?;
            if !types.contains(sf_type) {
                tx.rollback().await?;
                return Ok(false);
            }
            let row = (id, *sf_type, *start_time, *end_time, numberx.as_str());
            tx.exec_drop(&st.insert_forwarding, row).await?;
            let n = tx.affected_rows();
            tx.commit().await?;
            Ok(n > 0)
        }
        Input::DeleteCallForwarding { s, sf_type, start_time } => {
            let mut tx = conn.start_transaction(TxOpts::default()).await?;
            let Some(id) = tx.exec_first::<i32, _, _>(&st.subscriber_of, (sub_nbr(*s),)).await? else {
                tx.rollback().await?;
                return Ok(false);
            };
            tx.exec_drop(&st.delete_forwarding, (id, *sf_type, *start_time)).await?;
            let n = tx.affected_rows();
            tx.commit().await?;
            Ok(n > 0)
        }
    }
}

/// One terminal: its connection runs transactions until `end`, those begun after
/// `measure_from` counted.
async fn terminal(
    url: &str,
    mode: Mode,
    mut inputs: Inputs,
    (measure_from, end): (Instant, Instant),
) -> Result<Done, BenchError> {
    let mut conn = connect(url).await?;
    let prepared = Prepared::new(&mut conn, mode)
        .await
        .map_err(|e| err("preparing TATP's statements", e))?;
    let mut done = Done::new();
    while Instant::now() < end {
        let began = Instant::now();
        let input = inputs.draw();
        let (outcome, retries) = attempts(KINDS[input.kind()].0, &prepared, &mut conn, &input).await?;
        done.note(&input, outcome, retries, began, began >= measure_from);
    }
    let _ = conn.disconnect().await;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::{ddl, dialect};
    use crate::tatp::procs;

    #[test]
    fn inserts_ignore_conflicts() {
        assert_eq!(
            dialect(procs::INSERT_FORWARDING),
            "INSERT IGNORE INTO call_forwarding (s_id, sf_type, start_time, end_time, numberx) VALUES (?, ?, ?, ?, ?)"
        );
        assert_eq!(
            dialect(procs::DELETE_FORWARDING),
            "DELETE FROM call_forwarding WHERE s_id = ? AND sf_type = ? AND start_time = ?"
        );
    }

    #[test]
    fn tables_are_innodb() {
        let ddl: Vec<String> = ddl().collect();
        assert_eq!(ddl.len(), procs::DDL.len());
        assert!(ddl[..4].iter().all(|s| s.ends_with(") ENGINE=InnoDB")));
        assert_eq!(ddl[4], "CREATE INDEX subscriber_by_nbr ON subscriber (sub_nbr)");
    }
}
