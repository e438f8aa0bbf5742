//! Real clients over TCP: tokio-postgres through the simple and the extended protocol.

mod common;

use common::{code, start};

use std::sync::Arc;

use permafrost_executor::{Config, Database};
use tokio_postgres::{NoTls, SimpleQueryMessage};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_dml_and_queries_with_typed_parameters() {
    let (c, _stop) = start().await;
    c.batch_execute(
        "CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner VARCHAR(32) NOT NULL, balance BIGINT NOT NULL,
           rate DOUBLE PRECISION, active BOOLEAN DEFAULT true) WITH (partition_by = 'id');
         CREATE INDEX accounts_owner ON accounts (owner)",
    )
    .await
    .unwrap();
    // Extended protocol, parameters typed from the plan.
    let ins = c
        .prepare("INSERT INTO accounts (id, owner, balance, rate) VALUES ($1, $2, $3, $4)")
        .await
        .unwrap();
    for i in 0..50i64 {
        let n = c
            .execute(&ins, &[&i, &format!("o'wner {}", i % 5), &(i * 10), &(i as f64 / 4.0)])
            .await
            .unwrap();
        assert_eq!(n, 1);
    }
    let row = c
        .query_one(
            "SELECT owner, balance, rate, active FROM accounts WHERE id = $1",
            &[&7i64],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "o'wner 2");
    assert_eq!(row.get::<_, i64>(1), 70);
    assert_eq!(row.get::<_, f64>(2), 1.75);
    assert!(row.get::<_, bool>(3));
    let rows = c
        .query("SELECT id FROM accounts WHERE owner = $1 ORDER BY id", &[&"o'wner 3"])
        .await
        .unwrap();
    let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(ids, (0..50).filter(|i| i % 5 == 3).collect::<Vec<_>>());
    assert_eq!(
        c.execute(
            "UPDATE accounts SET balance = balance + 1 WHERE owner = $1",
            &[&"o'wner 1"]
        )
        .await
        .unwrap(),
        10
    );
    assert_eq!(c.execute("DELETE FROM accounts WHERE id >= 40", &[]).await.unwrap(), 10);
    // The sum of a bigint column is a numeric, as in PostgreSQL.
    let total: rust_decimal::Decimal = c
        .query_one("SELECT SUM(balance) FROM accounts", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        total,
        rust_decimal::Decimal::from((0..40i64).map(|i| i * 10).sum::<i64>() + 8)
    );
    // Simple protocol: text results and command tags.
    let msgs = c
        .simple_query("SELECT COUNT(*) FROM accounts; SHOW server_version")
        .await
        .unwrap();
    let texts: Vec<String> = msgs
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["40".to_string(), permafrost_server::PG_VERSION.to_string()]);
    let version: String = c.query_one("SELECT version()", &[]).await.unwrap().get(0);
    assert!(version.starts_with("PostgreSQL "), "{version}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_sqlstates_and_the_connection_keeps_serving() {
    let (c, _stop) = start().await;
    c.batch_execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT) WITH (partition_by = 'id')")
        .await
        .unwrap();
    c.execute("INSERT INTO t VALUES (1, 'a')", &[]).await.unwrap();
    let cases = [
        ("SELEC 1", "42601"),
        ("SELECT * FROM missing", "42P01"),
        ("SELECT nope FROM t", "42703"),
        ("INSERT INTO t VALUES (1, 'again')", "23505"),
        ("SAVEPOINT a", "25P01"),
        ("SHOW no_such_setting", "42704"),
        ("SELECT name FROM permafrost_stats WHERE name = 'x'", "0A000"),
        ("SELECT v FROM t WHERE v = 'permafrost_stats' AND nope = 1", "42703"),
    ];
    for (sql, want) in cases {
        let e = c.simple_query(sql).await.unwrap_err();
        assert_eq!(code(&e), want, "{sql}: {e}");
        let e = c.query(sql, &[]).await.unwrap_err();
        assert_eq!(code(&e), want, "{sql} (extended): {e}");
    }
    // Where the error lies, as PostgreSQL's error cursor (1-based, in characters of the
    // whole query string), with its message and DETAIL (none for a syntax error).
    let cursor = |e: &tokio_postgres::Error| {
        let db = e.as_db_error().expect("a server error");
        let at = match db.position() {
            Some(tokio_postgres::error::ErrorPosition::Original(p)) => Some(*p),
            _ => None,
        };
        (db.message().to_string(), at, db.detail().map(str::to_string))
    };
    let e = c.simple_query("SELEC 1").await.unwrap_err();
    assert_eq!(cursor(&e), ("syntax error at or near \"SELEC\"".into(), Some(1), None));
    let e = c.query("SELECT 1 +", &[]).await.unwrap_err();
    assert_eq!(cursor(&e).0, "syntax error at end of input");
    assert_eq!(cursor(&e).1, Some(11));
    let e = c.simple_query("SELECT 1; SELECT 'é', nope FROM t").await.unwrap_err();
    assert_eq!(cursor(&e).1, Some(23), "{e}");
    let e = c.query("SELECT * FROM\n  missing", &[]).await.unwrap_err();
    assert_eq!(cursor(&e).1, Some(17), "{e}");
    // A LATERAL item a RIGHT JOIN null-extends reading the left side: at the reference.
    let e = c
        .simple_query("SELECT * FROM t RIGHT JOIN LATERAL (SELECT t.id AS k) z ON true")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "42P10");
    assert_eq!(cursor(&e).1, Some(44), "{e}");
    // A function no signature matches, named with its argument types, with HINT.
    let e = c.simple_query("SELECT lpadd('x', 3)").await.unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.message(), "function lpadd(unknown, integer) does not exist");
    assert_eq!(
        db.hint(),
        Some("No function matches the given name and argument types. You might need to add explicit type casts.")
    );
    assert_eq!(cursor(&e).1, Some(8));
    // A repeated key names itself in DETAIL, as in PostgreSQL.
    let e = c
        .query("INSERT INTO t VALUES ($1, 'again')", &[&1i64])
        .await
        .unwrap_err();
    assert_eq!(cursor(&e).2.as_deref(), Some("Key (id)=(1) already exists."), "{e:?}");
    // A string of statements is one transaction, as in PostgreSQL: an error stops it and
    // nothing of it is applied; without one, all of it is.
    let e = c
        .simple_query("INSERT INTO t VALUES (2, 'b'); INSERT INTO t VALUES (2, 'dup'); INSERT INTO t VALUES (3, 'c')")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "23505");
    let n: i64 = c.query_one("SELECT COUNT(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(n, 1);
    let msgs = c
        .simple_query("INSERT INTO t VALUES (2, 'b'); SELECT count(*) FROM t; UPDATE t SET v = 'x' WHERE id = 1")
        .await
        .unwrap();
    let tags: Vec<u64> = msgs
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .collect();
    assert_eq!(tags, vec![1, 1, 1], "each statement answers: {msgs:?}");
    let n: i64 = c.query_one("SELECT COUNT(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(n, 2);
    // The connection still works, and so does a new statement after the errors.
    let v: String = c
        .query_one("SELECT v FROM t WHERE id = $1", &[&2i64])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, "b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_the_wire_ends_that_connection_only() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let db = Arc::new(Database::open(Config::builder().partitions(1).build().unwrap()).unwrap());
    let listener = permafrost_server::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(permafrost_server::serve(db, listener, std::future::pending()));
    for garbage in [
        &b"\x00\x00\x00\x08\xde\xad\xbe\xef"[..],
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &[0xffu8; 64][..],
    ] {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.write_all(garbage).await.unwrap();
        let mut buf = [0u8; 256];
        // An error message or a closed socket, within the timeout, never a hang.
        let r = tokio::time::timeout(std::time::Duration::from_secs(10), s.read(&mut buf)).await;
        assert!(r.is_ok(), "the server neither answered nor closed");
    }
    let (c, conn) = tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=x"), NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let v: String = c.query_one("SELECT version()", &[]).await.unwrap().get(0);
    assert!(v.contains("Permafrost"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_settings_take_effect_or_are_refused() {
    let (c, _s) = start().await;
    let show = |name: &'static str| {
        let c = &c;
        async move {
            let m = c.simple_query(&format!("SHOW {name}")).await.unwrap();
            match &m[1] {
                SimpleQueryMessage::Row(r) => r.get(0).unwrap().to_string(),
                other => panic!("{other:?}"),
            }
        }
    };
    c.simple_query("SET application_name = 'billing'").await.unwrap();
    assert_eq!(show("application_name").await, "billing");
    c.simple_query("SET statement_timeout TO '2s'").await.unwrap();
    assert_eq!(show("statement_timeout").await, "2s");
    c.simple_query("SET TIME ZONE 'UTC'; SET extra_float_digits = 3; SET search_path = app, public")
        .await
        .unwrap();
    assert_eq!(show("TimeZone").await, "UTC");
    assert_eq!(show("search_path").await, "app, public");
    c.simple_query("RESET application_name").await.unwrap();
    assert_eq!(show("application_name").await, "");
    c.simple_query("RESET ALL").await.unwrap();
    assert_eq!(show("statement_timeout").await, "0");
    assert_eq!(show("search_path").await, "\"$user\", public");
    // work_mem: what a statement may hold before it spills, or where it cannot (a window's
    // input), fails with 54000; at most the server's (a quarter of memory_limit).
    let server_work_mem = show("work_mem").await;
    c.simple_query("CREATE TABLE wm (id INT PRIMARY KEY, x INT)")
        .await
        .unwrap();
    c.simple_query("INSERT INTO wm SELECT g, g % 7 FROM generate_series(1, 5000) g")
        .await
        .unwrap();
    let window = "SELECT count(*) FROM (SELECT sum(x) OVER (ORDER BY id) FROM wm) q";
    let sorted = "SELECT count(*) FROM (SELECT * FROM wm ORDER BY x, id DESC) q";
    c.simple_query(window).await.unwrap();
    c.simple_query("SET work_mem = '64kB'").await.unwrap();
    assert_eq!(show("work_mem").await, "64kB");
    assert_eq!(code(&c.simple_query(window).await.unwrap_err()), "54000");
    let n: i64 = c.query_one(sorted, &[]).await.unwrap().get(0);
    assert_eq!(n, 5000, "a sort past work_mem spills");
    c.simple_query("BEGIN").await.unwrap();
    assert_eq!(code(&c.simple_query(window).await.unwrap_err()), "54000");
    c.simple_query("ROLLBACK").await.unwrap();
    c.simple_query("SET work_mem = 2048").await.unwrap();
    assert_eq!(show("work_mem").await, "2MB");
    c.simple_query(window).await.unwrap();
    c.simple_query("RESET work_mem").await.unwrap();
    assert_eq!(show("work_mem").await, server_work_mem);
    // Values the server cannot honour, unknown and read-only parameters.
    for (sql, want) in [
        ("SET work_mem = '10'", "22023"),
        ("SET work_mem = '4XB'", "22023"),
        ("SET work_mem = '1TB'", "22023"),
        ("SET TIME ZONE 'Mars/Olympus'", "22023"),
        ("SET extra_float_digits = 0", "0A000"),
        ("SET client_encoding = 'LATIN1'", "0A000"),
        ("SET search_path = 'a,,b'", "22023"),
        ("SET no_such_parameter = 1", "42704"),
        ("SET server_version = '1'", "55P02"),
        ("SHOW no_such_parameter", "42704"),
    ] {
        let e = c.simple_query(sql).await.unwrap_err();
        assert_eq!(code(&e), want, "{sql}: {e}");
    }
    // SQL DEALLOCATE drops a prepared statement of the connection.
    let st = c.prepare("SELECT $1::BIGINT + 1").await.unwrap();
    let one: i64 = c.query_one(&st, &[&1i64]).await.unwrap().get(0);
    assert_eq!(one, 2);
    c.simple_query("DEALLOCATE ALL").await.unwrap();
    let e = c.query_one(&st, &[&1i64]).await.unwrap_err();
    assert_eq!(code(&e), "26000", "{e}");
    let e = c.simple_query("DEALLOCATE nope").await.unwrap_err();
    assert_eq!(code(&e), "26000");
    let st = c.prepare("SELECT 2").await.unwrap();
    c.simple_query("DISCARD ALL").await.unwrap();
    assert_eq!(code(&c.query(&st, &[]).await.unwrap_err()), "26000");
    // What poolers send to clean a connection (asyncpg's reset, PgBouncer's DISCARD ALL).
    c.simple_query("SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;")
        .await
        .unwrap();
    assert_eq!(code(&c.simple_query("CLOSE nope").await.unwrap_err()), "34000");
    assert_eq!(code(&c.simple_query("LISTEN news").await.unwrap_err()), "0A000");
    let rows = c.simple_query("SHOW ALL").await.unwrap();
    assert!(rows.iter().filter(|m| matches!(m, SimpleQueryMessage::Row(_))).count() >= 10);
}

/// The settings of a start-up packet, its own parameters and its `options` (`-c name=value`,
/// libpq's PGOPTIONS, Django's OPTIONS), are the session's defaults, as in PostgreSQL; one
/// PostgreSQL would refuse ends the start-up with its FATAL error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_settings_are_the_sessions_defaults() {
    let server = common::server().await;
    let config = |options: &str| {
        let mut c = tokio_postgres::Config::new();
        c.host("127.0.0.1")
            .port(server.port)
            .user("test")
            .application_name("startup-test")
            .options(options);
        c
    };
    let (c, conn) = config("-c statement_timeout=5s --TimeZone=Asia/Tokyo -c work_mem=1MB")
        .connect(NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let show = |name: &'static str| {
        let c = &c;
        async move {
            let row = c.query_one(&format!("SHOW {name}"), &[]).await.unwrap();
            row.get::<_, String>(0)
        }
    };
    assert_eq!(show("statement_timeout").await, "5s");
    assert_eq!(show("TimeZone").await, "Asia/Tokyo");
    assert_eq!(show("work_mem").await, "1MB");
    assert_eq!(show("application_name").await, "startup-test");
    // RESET goes back to them.
    c.batch_execute("SET statement_timeout = 0; RESET statement_timeout")
        .await
        .unwrap();
    assert_eq!(show("statement_timeout").await, "5s");
    for (options, state) in [
        ("-c nope=1", "42704"),
        ("-c statement_timeout=abc", "22023"),
        ("-c server_version=1", "55P02"),
        ("-x", "42601"),
    ] {
        let e = config(options).connect(NoTls).await.err().expect(options);
        assert_eq!(code(&e), state, "{options}: {e}");
    }
}
