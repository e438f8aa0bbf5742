//! The session TimeZone: statements read and write timestamps with time zone in it, and
//! the command log keeps it, so that replay rebuilds exactly what clients were answered.

mod common;

use permafrost_types::Value;

use common::{code, logged_config, logged_server, recovered_rows, stop_serving};

/// The rows a UTC session sees, as text.
const ROWS: &str = "SELECT id, t::text, d::text, day::text FROM ev ORDER BY id";

/// What America/New_York makes of the statements below, written in UTC (as PostgreSQL 15
/// answers them).
const EXPECTED: [[&str; 4]; 3] = [
    // '2024-07-01 12:00' there is 16:00 UTC, then a day later; 02:00 UTC on the 2nd is
    // still the 1st there, whose midnight is 04:00 UTC.
    ["1", "2024-07-02 16:00:00+00", "2024-07-01", "2024-07-01 04:00:00+00"],
    // A day after noon on 2024-03-09 is noon on the 10th there, 23 hours later (DST).
    ["2", "2024-03-10 16:00:00+00", "2024-03-10", "2024-03-10 05:00:00+00"],
    // A parameter's text without an offset is read there too.
    ["3", "2024-01-15 17:00:00+00", "2024-01-15", "2024-01-15 05:00:00+00"],
];

fn texts(rows: Vec<Vec<Value>>) -> Vec<Vec<String>> {
    rows.into_iter()
        .map(|r| r.into_iter().map(|v| v.to_string()).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_run_in_the_session_zone_and_replay_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let (db, server, c) = logged_server(dir.path()).await;
    c.batch_execute(
        "CREATE TABLE ev (id BIGINT PRIMARY KEY, t TIMESTAMPTZ, d DATE, day TIMESTAMPTZ);
         SET TimeZone = 'america/new_york'",
    )
    .await
    .unwrap();
    let shown: String = c.query_one("SHOW TimeZone", &[]).await.unwrap().get(0);
    assert_eq!(shown, "America/New_York");
    c.batch_execute(
        "INSERT INTO ev VALUES (1, '2024-07-01 12:00', ('2024-07-02 02:00+00'::timestamptz)::date,
                                date_trunc('day', '2024-07-02 02:00+00'::timestamptz))",
    )
    .await
    .unwrap();
    // A block: its statements ran in the zone, and its COMMIT runs them again in it.
    c.batch_execute(
        "BEGIN;
         INSERT INTO ev VALUES (2, timestamptz '2024-03-09 12:00' + interval '1 day', NULL, NULL);
         UPDATE ev SET d = t::date, day = date_trunc('day', t) WHERE id = 2;
         UPDATE ev SET t = t + interval '1 day' WHERE id = 1;
         COMMIT",
    )
    .await
    .unwrap();
    // A parameter sent as text, read as a timestamptz in the zone.
    c.execute(
        "INSERT INTO ev VALUES (3, $1::text::timestamptz, ($1::text::timestamptz)::date, date_trunc('day', $1::text::timestamptz))",
        &[&"2024-01-15 12:00"],
    )
    .await
    .unwrap();
    // A timestamptz key read from text in the zone finds its partition in the zone too,
    // outside a block and inside one.
    c.batch_execute(
        "CREATE TABLE k (t TIMESTAMPTZ PRIMARY KEY, v INT);
         INSERT INTO k VALUES ('2024-07-01 12:00', 1), ('2024-07-01 13:00', 2), ('2024-07-01 14:00', 3)",
    )
    .await
    .unwrap();
    for hour in ["12", "13", "14"] {
        let sql = format!("SELECT v FROM k WHERE t = '2024-07-01 {hour}:00'");
        assert_eq!(c.query(&sql, &[]).await.unwrap().len(), 1, "{sql}");
    }
    c.batch_execute("BEGIN; UPDATE k SET v = v + 10 WHERE t = '2024-07-01 13:00'; COMMIT")
        .await
        .unwrap();
    let v: i32 = c
        .query_one("SELECT v FROM k WHERE t = '2024-07-01 17:00+00'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, 12, "13:00 in New York is 17:00 UTC");
    // The zone cannot change under a block's statements (its COMMIT runs them again).
    c.batch_execute("BEGIN; SELECT 1").await.unwrap();
    let e = c.batch_execute("SET TimeZone = 'UTC'").await.unwrap_err();
    assert_eq!(code(&e), "0A000");
    c.batch_execute("ROLLBACK; SET TimeZone = 'UTC'").await.unwrap();
    let mut seen = Vec::new();
    for r in c.simple_query(ROWS).await.unwrap() {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = r {
            seen.push(
                (0..4)
                    .map(|i| r.get(i).unwrap_or("NULL").to_string())
                    .collect::<Vec<_>>(),
            );
        }
    }
    assert_eq!(seen, EXPECTED.map(|r| r.map(String::from)).to_vec(), "what clients saw");
    drop(c);
    stop_serving(server, &db).await;
    drop(db);
    let replayed = recovered_rows(logged_config(dir.path()), ROWS).await;
    assert_eq!(texts(replayed), seen, "replayed in the zone the log kept");
}

/// A schema change reads its `timestamptz` literals (a DEFAULT's) in the session zone, and
/// the logs keep the zone with its text, so that recovery reads them there again; so does
/// a CALL's argument.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_changes_and_calls_read_literals_in_the_session_zone() {
    const DEFAULTS: &str = "SELECT id, t::text, u::text FROM dz ORDER BY id";
    let dir = tempfile::tempdir().unwrap();
    let (db, server, c) = logged_server(dir.path()).await;
    c.batch_execute(
        "SET TimeZone = 'America/New_York';
         CREATE TABLE dz (id INT PRIMARY KEY, t TIMESTAMPTZ DEFAULT '2024-01-01 12:00');
         INSERT INTO dz (id) VALUES (1);
         BEGIN;
         ALTER TABLE dz ADD COLUMN u TIMESTAMPTZ DEFAULT '2024-06-01 00:00';
         INSERT INTO dz (id) VALUES (2);
         COMMIT;
         CREATE PROCEDURE put(int, timestamptz) AS $$ INSERT INTO dz VALUES ($1, $2, $2) $$;
         CALL put(3, '2024-01-01 12:00');
         SET TimeZone = 'UTC';
         INSERT INTO dz (id) VALUES (4)",
    )
    .await
    .unwrap();
    let noon = "2024-01-01 17:00:00+00";
    let june = "2024-06-01 04:00:00+00";
    let expected = vec![
        vec!["1", noon, june],
        vec!["2", noon, june],
        vec!["3", noon, noon],
        vec!["4", noon, june],
    ];
    let mut seen = Vec::new();
    for r in c.simple_query(DEFAULTS).await.unwrap() {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = r {
            seen.push((0..3).map(|i| r.get(i).unwrap().to_string()).collect::<Vec<_>>());
        }
    }
    assert_eq!(seen, expected, "what clients saw");
    drop(c);
    stop_serving(server, &db).await;
    drop(db);
    let replayed = recovered_rows(logged_config(dir.path()), DEFAULTS).await;
    assert_eq!(
        texts(replayed),
        seen,
        "replayed with the zone its schema changes were made in"
    );
}
