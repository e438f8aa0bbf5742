//! `clock_timestamp()` and `statement_timestamp()` read the wall clock as statements run;
//! what they read is logged with the transaction, so that a block's COMMIT stores what its
//! statements showed and replay rebuilds exactly the values clients were acknowledged.

mod common;

use permafrost_types::Value;

use common::{code, first_column, logged_config, logged_server, recovered_rows, stop_serving};

/// Each row's clock, statement and transaction timestamps, as microseconds.
const ROWS: &str = "SELECT id, extract(epoch from c) * 1000000, extract(epoch from s) * 1000000, \
                    extract(epoch from n) * 1000000 FROM ck ORDER BY id";

fn micros(v: &Value) -> i64 {
    v.to_string().parse::<f64>().unwrap().round() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_reads_are_the_ones_shown_at_commit_and_after_replay() {
    let dir = tempfile::tempdir().unwrap();
    let (db, server, c) = logged_server(dir.path()).await;
    c.batch_execute(
        "CREATE TABLE ck (id BIGINT PRIMARY KEY, c TIMESTAMPTZ, s TIMESTAMPTZ, n TIMESTAMPTZ);
         INSERT INTO ck SELECT g, clock_timestamp(), statement_timestamp(), now() FROM generate_series(1, 10) g",
    )
    .await
    .unwrap();
    // A block: a query reads the clock between its writes (replay does not run it), and
    // the COMMIT stores what the statements returned.
    c.batch_execute("BEGIN").await.unwrap();
    let first = c
        .query(
            "INSERT INTO ck VALUES (20, clock_timestamp(), statement_timestamp(), now()) RETURNING c::text",
            &[],
        )
        .await
        .unwrap();
    c.query("SELECT clock_timestamp(), statement_timestamp()", &[])
        .await
        .unwrap();
    let second = c
        .query(
            "INSERT INTO ck SELECT 20 + g, clock_timestamp(), statement_timestamp(), now() \
             FROM generate_series(1, 3) g RETURNING c::text",
            &[],
        )
        .await
        .unwrap();
    c.batch_execute("COMMIT").await.unwrap();
    let stored: Vec<String> = first_column(&c, "SELECT c::text FROM ck WHERE id >= 20 ORDER BY id", &[]).await;
    let shown: Vec<String> = first.iter().chain(&second).map(|r| r.get(0)).collect();
    assert_eq!(stored, shown, "the COMMIT stored what its statements showed");
    // A write over every partition, and a procedure.
    c.batch_execute(
        "UPDATE ck SET c = clock_timestamp() WHERE id <= 5;
         CREATE PROCEDURE put(bigint) AS $$ INSERT INTO ck VALUES ($1, clock_timestamp(), statement_timestamp(), now()) $$ LANGUAGE sql;
         CALL put(30)",
    )
    .await
    .unwrap();
    // Not a default: its value would be read once, when the table is made.
    let e = c
        .batch_execute("CREATE TABLE bad (t TIMESTAMPTZ DEFAULT clock_timestamp())")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "0A000");
    drop(c);
    stop_serving(server, &db).await;
    let seen = tokio::task::spawn_blocking(move || db.execute_sql(ROWS, vec![]).unwrap().to_values())
        .await
        .unwrap();
    assert_eq!(seen.len(), 15);
    for r in &seen {
        let (c, s, n) = (micros(&r[1]), micros(&r[2]), micros(&r[3]));
        // (A statement's clock reads come no earlier than its statement_timestamp(), which
        // comes no earlier than its transaction's.)
        assert!(c >= s && s >= n, "{r:?}");
    }
    // The block's later statement started later than its first.
    let at = |id: i64| seen.iter().find(|r| r[0] == Value::Int(id)).unwrap();
    assert!(micros(&at(21)[2]) > micros(&at(20)[2]));
    assert_eq!(at(21)[3], at(20)[3], "one transaction timestamp");
    let replayed = recovered_rows(logged_config(dir.path()), ROWS).await;
    assert_eq!(replayed, seen, "replayed with the clock the log kept");
}
