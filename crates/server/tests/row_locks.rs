//! Row locks of transaction blocks (crates/server/src/row_locks.rs) through a real client:
//! a block's `SELECT ... FOR UPDATE` waits for the block holding those rows and then reads
//! what it committed, so the two commit one after the other instead of the second failing
//! with 40001; a cycle of waits fails one block with 40P01; NOWAIT fails with 55P03; FOR
//! SHARE readers do not wait for each other.

mod common;

use std::time::Duration;

use tokio_postgres::{Client, NoTls};

async fn connect(port: u16) -> Client {
    let (client, conn) = tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=test"), NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

async fn bal(c: &Client, id: i64, lock: &str) -> Result<i64, tokio_postgres::Error> {
    let sql = format!("SELECT bal FROM acct WHERE id = $1 {lock}");
    c.query_one(&sql, &[&id]).await.map(|r| r.get(0))
}

async fn setup(port: u16) {
    let c = connect(port).await;
    c.batch_execute(
        "CREATE TABLE acct (id BIGINT PRIMARY KEY, bal BIGINT NOT NULL); \
         INSERT INTO acct VALUES (1, 100), (2, 100), (3, 100)",
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locking_read_waits_for_the_block_holding_the_row_then_reads_what_it_committed() {
    let s = common::server().await;
    setup(s.port).await;
    let a = connect(s.port).await;
    let b = connect(s.port).await;
    a.batch_execute("BEGIN").await.unwrap();
    assert_eq!(bal(&a, 1, "FOR UPDATE").await.unwrap(), 100);
    // B's locking read of the same row waits for A's block.
    let waiting = tokio::spawn(async move {
        b.batch_execute("BEGIN").await.unwrap();
        let seen = bal(&b, 1, "FOR UPDATE").await.unwrap();
        b.execute("UPDATE acct SET bal = $1 WHERE id = 1", &[&(seen - 30)])
            .await
            .unwrap();
        b.batch_execute("COMMIT").await.map(|()| seen)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "B read a row A's block holds");
    // A row of another key is not held.
    let c = connect(s.port).await;
    c.batch_execute("BEGIN").await.unwrap();
    assert_eq!(bal(&c, 2, "FOR UPDATE").await.unwrap(), 100);
    c.batch_execute("COMMIT").await.unwrap();
    a.execute("UPDATE acct SET bal = bal - 50 WHERE id = 1", &[])
        .await
        .unwrap();
    a.batch_execute("COMMIT").await.unwrap();
    // B then read A's change, and its COMMIT found nothing changed since.
    let seen = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("B still waits after A committed")
        .unwrap()
        .unwrap();
    assert_eq!(seen, 50);
    assert_eq!(bal(&a, 1, "").await.unwrap(), 20);
    // A block that rolls back releases its locks as well, and so does one whose
    // connection goes away.
    a.batch_execute("BEGIN").await.unwrap();
    bal(&a, 3, "FOR UPDATE").await.unwrap();
    a.batch_execute("ROLLBACK").await.unwrap();
    let d = connect(s.port).await;
    d.batch_execute("BEGIN").await.unwrap();
    bal(&d, 3, "FOR UPDATE").await.unwrap();
    drop(d);
    let e = connect(s.port).await;
    e.batch_execute("BEGIN").await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), bal(&e, 3, "FOR UPDATE")).await;
    assert_eq!(got.expect("the lock outlived its connection").unwrap(), 100);
    e.batch_execute("COMMIT").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cycle_of_waits_fails_one_block_and_nowait_does_not_wait() {
    let s = common::server().await;
    setup(s.port).await;
    let a = connect(s.port).await;
    let b = connect(s.port).await;
    a.batch_execute("BEGIN").await.unwrap();
    b.batch_execute("BEGIN").await.unwrap();
    bal(&a, 1, "FOR UPDATE").await.unwrap();
    bal(&b, 2, "FOR UPDATE").await.unwrap();
    // NOWAIT on a row another block holds: 55P03 at once, and the block is aborted.
    let n = connect(s.port).await;
    n.batch_execute("BEGIN").await.unwrap();
    let e = bal(&n, 1, "FOR UPDATE NOWAIT").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "55P03", "{e}");
    n.batch_execute("ROLLBACK").await.unwrap();
    // A waits for B; B's wait for A would close the cycle: B fails with 40P01.
    let a_waits = tokio::spawn(async move {
        let got = bal(&a, 2, "FOR UPDATE").await;
        a.batch_execute("COMMIT").await.unwrap();
        got
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!a_waits.is_finished());
    let e = bal(&b, 1, "FOR UPDATE").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "40P01", "{e}");
    // Its block is aborted until ROLLBACK, which releases its locks: A goes on.
    let e = bal(&b, 3, "").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "25P02", "{e}");
    b.batch_execute("ROLLBACK").await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), a_waits)
        .await
        .expect("A still waits after B rolled back")
        .unwrap();
    assert_eq!(got.unwrap(), 100);
    // FOR SHARE readers do not wait for each other; a FOR UPDATE waits for them.
    let (r1, r2) = (connect(s.port).await, connect(s.port).await);
    for r in [&r1, &r2] {
        r.batch_execute("BEGIN").await.unwrap();
        assert_eq!(bal(r, 3, "FOR SHARE").await.unwrap(), 100);
    }
    let w = connect(s.port).await;
    w.batch_execute("BEGIN").await.unwrap();
    let e = bal(&w, 3, "FOR UPDATE NOWAIT").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "55P03", "{e}");
    for r in [&r1, &r2] {
        r.batch_execute("COMMIT").await.unwrap();
    }
}

/// An UPDATE in a block whose result shows what it sets (`RETURNING bal` of `SET bal =
/// ...`) locks the rows its key names until the block ends, as in PostgreSQL: a second
/// block's such UPDATE of the row waits, then updates what the first committed, and both
/// commit (without the lock the second would fail at COMMIT: 40001). An UPDATE that shows
/// none of what it sets takes no lock and does not wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_in_a_block_holds_its_row_until_the_block_ends() {
    let s = common::server().await;
    setup(s.port).await;
    let a = connect(s.port).await;
    let b = connect(s.port).await;
    let bump = "UPDATE acct SET bal = bal + $1 WHERE id = 1 RETURNING bal";
    a.batch_execute("BEGIN").await.unwrap();
    let seen: i64 = a.query_one(bump, &[&1i64]).await.unwrap().get(0);
    assert_eq!(seen, 101);
    let waiting = tokio::spawn(async move {
        b.batch_execute("BEGIN").await.unwrap();
        let got: i64 = b.query_one(bump, &[&10i64]).await.unwrap().get(0);
        b.batch_execute("COMMIT").await.map(|()| got)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "B updated a row A's block holds");
    // Its own rows again do not wait, nor an UPDATE of another block that shows nothing it
    // sets, nor a DELETE of another key.
    let seen: i64 = a.query_one(bump, &[&1i64]).await.unwrap().get(0);
    assert_eq!(seen, 102);
    let c = connect(s.port).await;
    c.batch_execute("BEGIN").await.unwrap();
    c.execute("UPDATE acct SET bal = bal WHERE id = 1", &[]).await.unwrap();
    c.execute("DELETE FROM acct WHERE id = 3", &[]).await.unwrap();
    c.batch_execute("ROLLBACK").await.unwrap();
    a.batch_execute("COMMIT").await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("B still waits after A committed")
        .unwrap()
        .expect("B's COMMIT");
    assert_eq!(got, 112);
    assert_eq!(bal(&a, 1, "").await.unwrap(), 112);
}
