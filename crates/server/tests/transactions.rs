//! Interactive transactions through a real client (tokio-postgres, which sends BEGIN and
//! COMMIT as simple queries and the statements in between through the extended protocol):
//! commit and rollback, an error aborting the block (25P02, COMMIT answers ROLLBACK), the
//! warnings, write skew refused with 40001, concurrent transfers that keep the total, and
//! what `SELECT ... FOR UPDATE` guarantees.

mod common;

use std::sync::Arc;

use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// A client, and the notices the server sent it.
async fn connect(port: u16) -> (Client, Arc<std::sync::Mutex<Vec<String>>>) {
    let (client, mut conn) = tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=test"), NoTls)
        .await
        .unwrap();
    let notices = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = notices.clone();
    tokio::spawn(async move {
        let mut stream = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
        while let Some(Ok(m)) = futures::StreamExt::next(&mut stream).await {
            if let tokio_postgres::AsyncMessage::Notice(n) = m {
                seen.lock()
                    .unwrap()
                    .push(format!("{} {}", n.code().code(), n.message()));
            }
        }
    });
    (client, notices)
}

async fn tags(c: &Client, sql: &str) -> Vec<String> {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(n.to_string()),
            _ => None,
        })
        .collect()
}

async fn balance(c: &Client, id: i64) -> i64 {
    c.query_one("SELECT bal FROM acct WHERE id = $1", &[&id])
        .await
        .unwrap()
        .get(0)
}

async fn setup(c: &Client) {
    c.batch_execute("CREATE TABLE acct (id BIGINT PRIMARY KEY, bal BIGINT NOT NULL)")
        .await
        .unwrap();
    for id in 0..8i64 {
        c.execute("INSERT INTO acct VALUES ($1, 100)", &[&id]).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_commit_roll_back_and_abort_as_in_postgresql() {
    let s = common::server().await;
    let (mut c, notices) = connect(s.port).await;
    setup(&c).await;

    let t = c.transaction().await.unwrap();
    t.execute("UPDATE acct SET bal = bal - 10 WHERE id = $1", &[&1i64])
        .await
        .unwrap();
    t.execute("UPDATE acct SET bal = bal + 10 WHERE id = $1", &[&2i64])
        .await
        .unwrap();
    let own: i64 = t
        .query_one("SELECT bal FROM acct WHERE id = $1", &[&1i64])
        .await
        .unwrap()
        .get(0);
    assert_eq!(own, 90, "the block sees its own writes");
    t.commit().await.unwrap();
    assert_eq!((balance(&c, 1).await, balance(&c, 2).await), (90, 110));

    let t = c.transaction().await.unwrap();
    t.execute("DELETE FROM acct WHERE id = $1", &[&3i64]).await.unwrap();
    let n: i64 = t.query_one("SELECT count(*) FROM acct", &[]).await.unwrap().get(0);
    assert_eq!(n, 7);
    t.rollback().await.unwrap();
    let n: i64 = c.query_one("SELECT count(*) FROM acct", &[]).await.unwrap().get(0);
    assert_eq!(n, 8, "a rolled-back block leaves nothing behind");

    // An error aborts the block: later statements fail with 25P02, COMMIT rolls back.
    assert_eq!(tags(&c, "BEGIN").await, vec!["0"]);
    c.execute("UPDATE acct SET bal = 0 WHERE id = $1", &[&4i64])
        .await
        .unwrap();
    let e = c.simple_query("SELECT 1 / 0").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "22012");
    let e = c.query("SELECT bal FROM acct", &[]).await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "25P02");
    c.simple_query("COMMIT").await.unwrap();
    assert_eq!(balance(&c, 4).await, 100, "the aborted block's update was not applied");

    // A multi-statement query string with its own BEGIN and COMMIT.
    c.simple_query(
        "BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 5; UPDATE acct SET bal = bal - 1 WHERE id = 6; COMMIT",
    )
    .await
    .unwrap();
    assert_eq!((balance(&c, 5).await, balance(&c, 6).await), (101, 99));

    // Warnings, as PostgreSQL gives them.
    notices.lock().unwrap().clear();
    c.simple_query("COMMIT").await.unwrap();
    c.simple_query("BEGIN").await.unwrap();
    c.simple_query("BEGIN").await.unwrap();
    c.simple_query("ROLLBACK").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(
        *notices.lock().unwrap(),
        vec![
            "25P01 there is no transaction in progress",
            "25001 there is already a transaction in progress"
        ]
    );

    // Not yet supported inside a block: refused, and the block aborts.
    c.simple_query("BEGIN").await.unwrap();
    let e = c.simple_query("CALL nothing_here()").await.unwrap_err();
    assert!(["0A000", "42883"].contains(&e.code().unwrap().code()), "{e}");
    let e = c.simple_query("SAVEPOINT a").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "25P02");
    c.simple_query("ROLLBACK").await.unwrap();
    c.simple_query("BEGIN").await.unwrap();
    let e = c
        .simple_query("CREATE PROCEDURE p2() AS $$ SELECT 1 $$")
        .await
        .unwrap_err();
    assert_eq!(e.code().unwrap().code(), "0A000");
    let e = c.simple_query("SAVEPOINT a").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "25P02");
    c.simple_query("ROLLBACK").await.unwrap();

    // Savepoints: ROLLBACK TO undoes what came after, and recovers an aborted block.
    c.simple_query("BEGIN; UPDATE acct SET bal = 1 WHERE id = 0; SAVEPOINT s1; UPDATE acct SET bal = 2 WHERE id = 7")
        .await
        .unwrap();
    c.simple_query("SAVEPOINT s2").await.unwrap();
    let e = c.simple_query("SELECT 1 / 0").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "22012");
    c.simple_query("ROLLBACK TO SAVEPOINT s2").await.unwrap();
    assert_eq!(balance(&c, 7).await, 2, "the block goes on after ROLLBACK TO");
    c.simple_query("ROLLBACK TO s1").await.unwrap();
    assert_eq!(balance(&c, 7).await, 100, "undone back to s1");
    c.simple_query("RELEASE SAVEPOINT s1").await.unwrap();
    let e = c.simple_query("ROLLBACK TO s2").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "3B001");
    c.simple_query("ROLLBACK").await.unwrap();
    c.simple_query("BEGIN; UPDATE acct SET bal = 1 WHERE id = 0; SAVEPOINT s; UPDATE acct SET bal = 2 WHERE id = 7; ROLLBACK TO s; COMMIT")
        .await
        .unwrap();
    assert_eq!((balance(&c, 0).await, balance(&c, 7).await), (1, 100));
    let e = c.simple_query("SAVEPOINT outside").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "25P01");
    let rows = c.query("SHOW transaction_isolation", &[]).await.unwrap();
    assert_eq!(rows[0].get::<_, String>(0), "serializable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_skew_is_refused_and_concurrent_transfers_keep_the_total() {
    let s = common::server().await;
    let (mut a, _) = connect(s.port).await;
    let (mut b, _) = connect(s.port).await;
    setup(&a).await;

    let both = "SELECT sum(bal)::BIGINT FROM acct WHERE id IN (2, 3)";
    let ta = a.transaction().await.unwrap();
    let tb = b.transaction().await.unwrap();
    let sa: i64 = ta.query_one(both, &[]).await.unwrap().get(0);
    let sb: i64 = tb.query_one(both, &[]).await.unwrap().get(0);
    assert_eq!((sa, sb), (200, 200));
    ta.execute("UPDATE acct SET bal = 0 WHERE id = 2", &[]).await.unwrap();
    tb.execute("UPDATE acct SET bal = 0 WHERE id = 3", &[]).await.unwrap();
    ta.commit().await.unwrap();
    let e = tb.commit().await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "40001", "{e}");
    let left: i64 = a.query_one(both, &[]).await.unwrap().get(0);
    assert_eq!(left, 100);
    // After a failed COMMIT the connection is out of the block.
    b.simple_query("SELECT 1").await.unwrap();
    let t = b.transaction().await.unwrap();
    t.rollback().await.unwrap();

    // Transfers that read, compute in the client and write absolute values.
    let mut tasks = Vec::new();
    for w in 0..4i64 {
        let port = s.port;
        tasks.push(tokio::spawn(async move {
            let (mut c, _) = connect(port).await;
            let mut committed = 0;
            for i in 0..25i64 {
                let (from, to) = ((w + i) % 8, (w * 3 + i * 5 + 1) % 8);
                if from == to {
                    continue;
                }
                let t = c.transaction().await.unwrap();
                let r = async {
                    let x: i64 = t
                        .query_one("SELECT bal FROM acct WHERE id = $1", &[&from])
                        .await?
                        .get(0);
                    let y: i64 = t.query_one("SELECT bal FROM acct WHERE id = $1", &[&to]).await?.get(0);
                    t.execute("UPDATE acct SET bal = $1 WHERE id = $2", &[&(x - 3), &from])
                        .await?;
                    t.execute("UPDATE acct SET bal = $1 WHERE id = $2", &[&(y + 3), &to])
                        .await?;
                    let sum: i64 = t.query_one("SELECT sum(bal)::BIGINT FROM acct", &[]).await?.get(0);
                    Ok::<i64, tokio_postgres::Error>(sum)
                }
                .await;
                match r {
                    Ok(sum) => match t.commit().await {
                        Ok(()) => {
                            assert_eq!(sum, 700, "a block that commits read one serial point");
                            committed += 1
                        }
                        Err(e) => assert_eq!(e.code().unwrap().code(), "40001", "{e}"),
                    },
                    Err(e) => {
                        assert_eq!(e.code().unwrap().code(), "40001", "{e}");
                        t.rollback().await.unwrap();
                    }
                }
            }
            committed
        }));
    }
    let mut committed = 0;
    for t in tasks {
        committed += t.await.unwrap();
    }
    assert!(committed > 0);
    let total: i64 = a
        .query_one("SELECT sum(bal)::BIGINT FROM acct", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(total, 700, "the total is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_idle_inside_a_block_past_its_limit_is_ended() {
    let s = common::server().await;
    let (c, _) = connect(s.port).await;
    c.simple_query("SET idle_in_transaction_session_timeout = '200ms'")
        .await
        .unwrap();
    // Idle outside a block: nothing happens.
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    c.simple_query("SELECT 1").await.unwrap();
    c.simple_query("BEGIN").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let e = c.simple_query("SELECT 1").await.unwrap_err();
    assert!(
        e.code().is_some_and(|c| c.code() == "25P03") || c.is_closed(),
        "the session was ended: {e}"
    );
    // The server goes on serving others.
    let (d, _) = connect(s.port).await;
    d.simple_query("SELECT 1").await.unwrap();
    // A limit set, then reset (by name, and by RESET ALL), limits nothing.
    for reset in [
        "RESET idle_in_transaction_session_timeout",
        "SET idle_in_transaction_session_timeout = 0",
        "RESET ALL",
    ] {
        d.simple_query("SET idle_in_transaction_session_timeout = '200ms'")
            .await
            .unwrap();
        d.simple_query(reset).await.unwrap();
        d.simple_query("BEGIN").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        d.simple_query("SELECT 1")
            .await
            .unwrap_or_else(|e| panic!("after {reset}: {e}"));
        d.simple_query("COMMIT").await.unwrap();
    }
}

/// Inside a block, `now()` and its kin read the block's start, in queries before the
/// block's first write as after it, over both protocols.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clock_inside_a_block_is_its_start() {
    let s = common::server().await;
    let (c, _) = connect(s.port).await;
    let simple = |sql: &'static str| {
        let c = &c;
        async move {
            let messages = c.simple_query(sql).await.unwrap();
            let row = messages.iter().find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap().to_owned()),
                _ => None,
            });
            row.unwrap_or_else(|| panic!("{sql}: no row"))
        }
    };
    c.simple_query("CREATE TABLE ticks (id BIGINT PRIMARY KEY, at TIMESTAMP)")
        .await
        .unwrap();
    c.simple_query("BEGIN").await.unwrap();
    let start = simple("SELECT now()").await;
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    assert_eq!(simple("SELECT now()").await, start);
    assert_eq!(simple("SELECT CURRENT_TIMESTAMP").await, start);
    let extended: std::time::SystemTime = c.query_one("SELECT now()", &[]).await.unwrap().get(0);
    c.execute("INSERT INTO ticks VALUES (1, now())", &[]).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    let after: std::time::SystemTime = c.query_one("SELECT now()", &[]).await.unwrap().get(0);
    assert_eq!(after, extended, "after the block's first write too");
    c.simple_query("COMMIT").await.unwrap();
    // now() is a timestamp with time zone (shown in UTC), the column one without.
    assert_eq!(
        format!("{}+00", simple("SELECT at FROM ticks WHERE id = 1").await),
        start
    );
    assert_ne!(
        simple("SELECT now()").await,
        start,
        "a later statement reads a later clock"
    );
}

/// What `SELECT ... FOR UPDATE` in a block is for, that no change to the rows it read is
/// lost between the read and the COMMIT, holds because the COMMIT runs it again: a
/// concurrent change by a statement outside a block (which takes no row locks) fails the
/// COMMIT with 40001, and without one the block commits. (Blocks' locking reads wait for
/// each other instead: tests/row_locks.rs.) SKIP LOCKED is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_update_keeps_a_concurrent_change_from_being_lost() {
    let s = common::server().await;
    let (mut a, _) = connect(s.port).await;
    let (b, _) = connect(s.port).await;
    setup(&a).await;

    let read = "SELECT bal FROM acct WHERE id = $1 FOR UPDATE";
    // A concurrent change between the read and the COMMIT: 40001, the change kept.
    let t = a.transaction().await.unwrap();
    let bal: i64 = t.query_one(read, &[&1i64]).await.unwrap().get(0);
    b.execute("UPDATE acct SET bal = bal - 30 WHERE id = 1", &[])
        .await
        .unwrap();
    t.execute("UPDATE acct SET bal = $1 WHERE id = 1", &[&(bal - 50)])
        .await
        .unwrap();
    let e = t.commit().await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "40001", "{e}");
    assert_eq!(balance(&b, 1).await, 70);
    // None: the block commits.
    let t = a.transaction().await.unwrap();
    let bal: i64 = t.query_one(read, &[&1i64]).await.unwrap().get(0);
    t.execute("UPDATE acct SET bal = $1 WHERE id = 1", &[&(bal - 50)])
        .await
        .unwrap();
    t.commit().await.unwrap();
    assert_eq!(balance(&b, 1).await, 20);
    // FOR SHARE, NOWAIT and OF are taken; SKIP LOCKED is not.
    b.query("SELECT a.id FROM acct a WHERE a.id < 3 FOR SHARE OF a NOWAIT", &[])
        .await
        .unwrap();
    let e = b
        .query("SELECT id FROM acct FOR UPDATE SKIP LOCKED", &[])
        .await
        .unwrap_err();
    assert_eq!(e.code().unwrap().code(), "0A000", "{e}");
}

/// A read of several tables past its working memory inside a block (a join, spilled to
/// disk): its COMMIT checks it with one read-set entry per table and does not run it again
/// (holding the partitions, it could not spill). Once one of its tables changed, running
/// it again at COMMIT would need more than its working memory: the COMMIT fails with 40001
/// for the client to retry, and the retry commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_past_work_mem_in_a_block_commits_with_a_coarse_read_set() {
    let dir = tempfile::tempdir().unwrap();
    let config = permafrost_executor::Config::builder()
        .partitions(2)
        .memory_limit(32 << 20)
        .temp_dir(dir.path().join("tmp"))
        .build()
        .unwrap();
    let db = Arc::new(permafrost_executor::Database::open(config).unwrap());
    let s = common::server_over(db, permafrost_server::ServerOptions::default()).await;
    let (mut c, _) = connect(s.port).await;
    c.batch_execute(
        "CREATE TABLE w (id BIGINT PRIMARY KEY, pad TEXT NOT NULL); \
         CREATE TABLE tags (g INTEGER PRIMARY KEY, name TEXT NOT NULL); \
         INSERT INTO tags SELECT g, 'tag' || g FROM generate_series(0, 7) g",
    )
    .await
    .unwrap();
    for batch in 0..10 {
        let values: Vec<String> = (batch * 200..(batch + 1) * 200)
            .map(|i| format!("({i}, '{}')", format!("{i:08}").repeat(128)))
            .collect();
        c.batch_execute(&format!("INSERT INTO w VALUES {}", values.join(", ")))
            .await
            .unwrap();
    }
    // 16,000 rows of 1 KB against 8 MiB of working memory.
    let sql = "SELECT w.id, t.name, w.pad FROM w CROSS JOIN tags t ORDER BY w.pad DESC, t.g";
    let check = |rows: &[tokio_postgres::Row]| {
        assert_eq!(rows.len(), 16_000);
        let first: (i64, String) = (rows[0].get(0), rows[0].get(1));
        assert_eq!(first, (1999, "tag0".to_string()));
        let last: (i64, String) = (rows[15_999].get(0), rows[15_999].get(1));
        assert_eq!(last, (0, "tag7".to_string()));
    };
    let t = c.transaction().await.unwrap();
    check(&t.query(sql, &[]).await.unwrap());
    t.commit().await.unwrap();
    // A table it read changed before the COMMIT.
    let (other, _) = connect(s.port).await;
    let t = c.transaction().await.unwrap();
    check(&t.query(sql, &[]).await.unwrap());
    other
        .batch_execute("UPDATE tags SET name = 'x' WHERE g = 9")
        .await
        .unwrap();
    other
        .batch_execute("INSERT INTO tags VALUES (9, 'tag9'); DELETE FROM tags WHERE g = 9")
        .await
        .unwrap();
    let e = t.commit().await.unwrap_err();
    assert_eq!(common::code(&e), "40001", "{e}");
    let t = c.transaction().await.unwrap();
    check(&t.query(sql, &[]).await.unwrap());
    t.commit().await.unwrap();
}

/// A CALL inside a block runs the procedure's statements as the block's: a later query
/// sees its writes, ROLLBACK undoes them, an error in it aborts the block, and the COMMIT
/// checks what it read (a concurrent change to it fails the COMMIT with 40001). COPY TO
/// inside a block reads the block's own writes, and the COMMIT checks what it wrote out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_and_copy_to_run_inside_a_block() {
    let s = common::server().await;
    let (mut a, _) = connect(s.port).await;
    let (b, _) = connect(s.port).await;
    setup(&a).await;
    a.batch_execute(
        "CREATE PROCEDURE move(src bigint, dst bigint, amount bigint) AS $$ \
         UPDATE acct SET bal = bal - $3 WHERE id = $1; \
         UPDATE acct SET bal = bal + $3 WHERE id = $2; \
         SELECT bal FROM acct WHERE id = $2 $$",
    )
    .await
    .unwrap();

    // Seen by the block, undone by its ROLLBACK.
    let t = a.transaction().await.unwrap();
    let row = t
        .query_one("CALL move($1, $2, $3)", &[&0i64, &1i64, &30i64])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 130);
    assert_eq!(
        t.query_one("SELECT bal FROM acct WHERE id = 0", &[])
            .await
            .unwrap()
            .get::<_, i64>(0),
        70
    );
    t.rollback().await.unwrap();
    assert_eq!(balance(&a, 0).await, 100);

    // Committed with the block's other statements.
    let t = a.transaction().await.unwrap();
    t.execute("CALL move(2, 3, 5)", &[]).await.unwrap();
    t.execute("UPDATE acct SET bal = bal + 1 WHERE id = 4", &[])
        .await
        .unwrap();
    t.commit().await.unwrap();
    assert_eq!(
        (balance(&a, 2).await, balance(&a, 3).await, balance(&a, 4).await),
        (95, 105, 101)
    );

    // An error inside the procedure aborts the block.
    a.batch_execute("BEGIN").await.unwrap();
    let e = a.simple_query("CALL move(5, 6, 'x')").await.unwrap_err();
    assert_eq!(common::code(&e), "22P02", "{e}");
    let e = a.simple_query("SELECT 1").await.unwrap_err();
    assert_eq!(common::code(&e), "25P02", "{e}");
    a.batch_execute("ROLLBACK").await.unwrap();

    // What the CALL read, changed before the COMMIT: 40001.
    let t = a.transaction().await.unwrap();
    t.execute("CALL move(6, 7, 10)", &[]).await.unwrap();
    b.execute("UPDATE acct SET bal = 0 WHERE id = 7", &[]).await.unwrap();
    let e = t.commit().await.unwrap_err();
    assert_eq!(common::code(&e), "40001", "{e}");
    assert_eq!((balance(&a, 6).await, balance(&a, 7).await), (100, 0));

    // COPY TO sees the block's write; what it wrote out, changed before the COMMIT: 40001.
    let t = a.transaction().await.unwrap();
    t.execute("UPDATE acct SET bal = 1 WHERE id = 0", &[]).await.unwrap();
    assert_eq!(
        copied(&t, "COPY (SELECT id, bal FROM acct WHERE id < 2 ORDER BY id) TO STDOUT").await,
        "0\t1\n1\t100\n"
    );
    b.execute("UPDATE acct SET bal = 2 WHERE id = 1", &[]).await.unwrap();
    let e = t.commit().await.unwrap_err();
    assert_eq!(common::code(&e), "40001", "{e}");
    let t = a.transaction().await.unwrap();
    assert_eq!(
        copied(&t, "COPY (SELECT id, bal FROM acct WHERE id < 2 ORDER BY id) TO STDOUT").await,
        "0\t100\n1\t2\n"
    );
    t.execute("UPDATE acct SET bal = 3 WHERE id = 0", &[]).await.unwrap();
    t.commit().await.unwrap();
    assert_eq!(balance(&a, 0).await, 3);

    // After the block's schema changes, COPY TO sees them (planned against them, over the
    // extended protocol here); COPY FROM is refused with 0A000.
    a.batch_execute("BEGIN; CREATE TABLE cp (id INT PRIMARY KEY, v TEXT); INSERT INTO cp VALUES (1, 'x')")
        .await
        .unwrap();
    let out = a.copy_out("COPY cp TO STDOUT").await.unwrap();
    let chunks: Vec<bytes::Bytes> = futures::TryStreamExt::try_collect(out).await.unwrap();
    assert_eq!(String::from_utf8(chunks.concat()).unwrap(), "1\tx\n");
    // (Through the simple protocol: tokio-postgres's copy_in leaves its connection waiting
    // after a refusal, against PostgreSQL too.)
    let e = a.simple_query("COPY acct FROM STDIN").await.expect_err("refused");
    assert_eq!(common::code(&e), "0A000", "{e}");
    a.batch_execute("ROLLBACK").await.unwrap();
}

/// What a COPY TO writes, as text.
async fn copied(t: &tokio_postgres::Transaction<'_>, sql: &str) -> String {
    let out = t.copy_out(sql).await.unwrap();
    let chunks: Vec<bytes::Bytes> = futures::TryStreamExt::try_collect(out).await.unwrap();
    String::from_utf8(chunks.concat()).unwrap()
}

/// A probe runs again only the earlier writes of the rows its statement reaches. When the
/// statement then fails on the data (here a duplicate key), the block's other writes are
/// checked too: one that no longer gives what it showed makes the error 40001, as the
/// COMMIT would, not the duplicate key a serial order would never have given the block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_caused_by_a_concurrent_commit_is_a_serialization_failure() {
    let s = common::server().await;
    let (a, _) = connect(s.port).await;
    let (b, _) = connect(s.port).await;
    a.batch_execute(
        "CREATE TABLE counter (id BIGINT PRIMARY KEY, next BIGINT NOT NULL); \
         CREATE TABLE orders (id BIGINT PRIMARY KEY, note TEXT); \
         INSERT INTO counter VALUES (1, 1)",
    )
    .await
    .unwrap();
    b.batch_execute("BEGIN").await.unwrap();
    let taken: i64 = b
        .query_one(
            "UPDATE counter SET next = next + 1 WHERE id = 1 RETURNING next - 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(taken, 1);
    // Outside any block (so without waiting for B's row), A takes the same number and
    // uses it.
    a.batch_execute("UPDATE counter SET next = next + 1 WHERE id = 1; INSERT INTO orders VALUES (1, 'a')")
        .await
        .unwrap();
    let e = b
        .execute("INSERT INTO orders VALUES ($1, 'b')", &[&taken])
        .await
        .unwrap_err();
    assert_eq!(e.code().unwrap().code(), "40001", "{e}");
    b.batch_execute("ROLLBACK").await.unwrap();
    // A duplicate the block's own reads explain is still the duplicate.
    b.batch_execute("BEGIN").await.unwrap();
    b.execute("UPDATE counter SET next = next + 1 WHERE id = 1", &[])
        .await
        .unwrap();
    let e = b.execute("INSERT INTO orders VALUES (1, 'b')", &[]).await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "23505", "{e}");
    b.batch_execute("ROLLBACK").await.unwrap();
}
