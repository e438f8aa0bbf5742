//! The server's features through a real client (tokio-postgres): procedures, COPY,
//! RETURNING, catalog lookups, the schema log, SCRAM logins, the SSL request, cancel
//! requests and many connections at once.

mod common;

use common::{code, database, server_over as server_with};

use std::time::Duration;

use futures::SinkExt;
use permafrost_server::{ServerOptions, User};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::{NoTls, SimpleQueryMessage};

async fn connect(port: u16, extra: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, conn) =
        tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=test {extra}"), NoTls).await?;
    tokio::spawn(conn);
    Ok(client)
}

fn simple_rows(msgs: &[SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    msgs.iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

const ACCOUNTS: &str =
    "CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, balance NUMERIC(12,2) DEFAULT 0)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn procedures_are_created_called_listed_and_dropped() {
    let s = server_with(database(), ServerOptions::default()).await;
    let c = connect(s.port, "").await.unwrap();
    c.batch_execute(ACCOUNTS).await.unwrap();
    c.batch_execute(
        "INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50);
         CREATE PROCEDURE transfer(src BIGINT, dst BIGINT, amount NUMERIC(12,2)) LANGUAGE SQL AS $$
           UPDATE accounts SET balance = balance - $3 WHERE id = $1;
           UPDATE accounts SET balance = balance + $3 WHERE id = $2;
           SELECT id, balance FROM accounts ORDER BY id
         $$;
         CREATE PROCEDURE balance_of(acct BIGINT) PARTITION ON acct AS $$
           SELECT owner, balance FROM accounts WHERE id = $1
         $$",
    )
    .await
    .unwrap();
    // Simple protocol, constants.
    let rows = simple_rows(&c.simple_query("CALL transfer(1, 2, 25.5)").await.unwrap());
    assert_eq!(
        rows,
        vec![
            vec![Some("1".into()), Some("74.50".into())],
            vec![Some("2".into()), Some("75.50".into())]
        ]
    );
    // Extended protocol: parameters typed from the signature.
    let st = c.prepare("CALL balance_of($1)").await.unwrap();
    assert_eq!(st.params(), &[tokio_postgres::types::Type::INT8]);
    let row = c.query_one(&st, &[&2i64]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "bob");
    assert_eq!(row.get::<_, rust_decimal::Decimal>(1).to_string(), "75.50");
    // Wrong calls.
    let e = c.simple_query("CALL nope(1)").await.unwrap_err();
    assert_eq!(code(&e), "42883");
    let e = c.simple_query("CALL balance_of(1, 2)").await.unwrap_err();
    assert_eq!(code(&e), "42883");
    let e = c
        .simple_query("CREATE PROCEDURE balance_of(a INT) AS $$ SELECT 1 $$")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "42723");
    let e = c
        .simple_query("CREATE PROCEDURE bad(a INT) AS $$ SELECT nope FROM accounts $$")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("nope") || code(&e) == "22023", "{e}");
    // A failing statement rolls the whole procedure back.
    c.batch_execute(
        "CREATE PROCEDURE add_two(a BIGINT, b BIGINT) AS $$
           INSERT INTO accounts (id, owner) VALUES ($1, 'x');
           INSERT INTO accounts (id, owner) VALUES ($2, 'y')
         $$",
    )
    .await
    .unwrap();
    let e = c.simple_query("CALL add_two(10, 1)").await.unwrap_err();
    assert_eq!(code(&e), "23505");
    let n = simple_rows(
        &c.simple_query("SELECT COUNT(*) FROM accounts WHERE id = 10")
            .await
            .unwrap(),
    );
    assert_eq!(n[0][0].as_deref(), Some("0"));
    // Listing and dropping.
    let listed = simple_rows(&c.simple_query("CALL permafrost.procedures()").await.unwrap());
    let names: Vec<_> = listed.iter().map(|r| r[0].clone().unwrap()).collect();
    assert_eq!(names, vec!["add_two", "balance_of", "transfer"]);
    c.batch_execute("DROP PROCEDURE transfer; DROP PROCEDURE IF EXISTS transfer")
        .await
        .unwrap();
    let e = c.simple_query("DROP PROCEDURE transfer").await.unwrap_err();
    assert_eq!(code(&e), "42883");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_from_stdin_loads_text_and_csv_and_reports_bad_lines() {
    let s = server_with(database(), ServerOptions::default()).await;
    let c = connect(s.port, "").await.unwrap();
    c.batch_execute(ACCOUNTS).await.unwrap();
    let sink = c.copy_in("COPY accounts FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let mut text = String::new();
    for i in 0..1000 {
        text.push_str(&format!("{i}\towner\\t{i}\t{}.25\n", i % 7));
    }
    // Split mid-line: rows arrive in pieces.
    let (a, b) = text.split_at(text.len() / 2 + 3);
    sink.send(bytes::Bytes::from(a.to_string())).await.unwrap();
    sink.send(bytes::Bytes::from(b.to_string())).await.unwrap();
    assert_eq!(sink.finish().await.unwrap(), 1000);
    let row = c
        .query_one("SELECT owner, balance FROM accounts WHERE id = 999", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "owner\t999");
    let sink = c
        .copy_in("COPY accounts (owner, id) FROM STDIN WITH (FORMAT csv, HEADER true)")
        .await
        .unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(
        b"owner,id\n\"a, \"\"quoted\"\"\nname\",2000\n",
    ))
    .await
    .unwrap();
    assert_eq!(sink.finish().await.unwrap(), 1);
    let row = c
        .query_one("SELECT owner, balance FROM accounts WHERE id = 2000", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "a, \"quoted\"\nname");
    assert!(row.get::<_, rust_decimal::Decimal>(1).is_zero());
    // A bad value: the error names the line; the connection goes on.
    let sink = c.copy_in("COPY accounts FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(b"3000\tx\t1\n3001\ty\tlots\n"))
        .await
        .unwrap();
    let e = sink.finish().await.unwrap_err();
    assert_eq!(code(&e), "22P02", "{e}");
    assert!(e.as_db_error().unwrap().message().contains("line 2"), "{e}");
    let e = c.simple_query("COPY nope FROM STDIN").await.unwrap_err();
    assert_eq!(code(&e), "42P01");
    // Files on the server are not read or written (COPY TO STDOUT is, hardening.rs).
    let e = c.simple_query("COPY accounts TO '/tmp/accounts'").await.unwrap_err();
    assert_eq!(code(&e), "0A000");
    let e = c.simple_query("COPY accounts FROM '/tmp/accounts'").await.unwrap_err();
    assert_eq!(code(&e), "0A000");
    let n: i64 = c.query_one("SELECT COUNT(*) FROM accounts", &[]).await.unwrap().get(0);
    assert!(n >= 1001, "{n}");
}

/// COPY FROM STDIN inside a transaction block is refused (0A000) and aborts the block:
/// its rows would apply on their own, before COMMIT, and stay after a ROLLBACK. pgbench -i
/// sends `COPY ... WITH (FREEZE ON)` inside BEGIN ... COMMIT: the option is read (rows are
/// visible to every transaction once the COPY commits, as frozen rows are), the block is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_inside_a_transaction_block_commits_or_rolls_back_with_it() {
    async fn count(c: &tokio_postgres::Client) -> Result<i64, tokio_postgres::Error> {
        c.query_one("SELECT count(*) FROM accounts", &[])
            .await
            .map(|r| r.get(0))
    }
    async fn copy(c: &tokio_postgres::Client, sql: &str, data: &[u8]) -> Result<u64, tokio_postgres::Error> {
        let sink = c.copy_in(sql).await?;
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::copy_from_slice(data)).await?;
        sink.finish().await
    }
    // 64 MiB: what one statement may hold is 16 MiB.
    let db = permafrost_executor::Database::open(
        permafrost_executor::Config::builder()
            .partitions(2)
            .memory_limit(64 << 20)
            .build()
            .unwrap(),
    )
    .unwrap();
    let s = server_with(std::sync::Arc::new(db), ServerOptions::default()).await;
    let c = connect(s.port, "").await.unwrap();
    c.batch_execute(ACCOUNTS).await.unwrap();
    // pgbench -i's shape: BEGIN, TRUNCATE, INSERTs, COPY ... WITH (FREEZE ON), COMMIT.
    c.batch_execute("INSERT INTO accounts (id, owner) VALUES (100, 'old')")
        .await
        .unwrap();
    c.batch_execute("BEGIN; TRUNCATE accounts; INSERT INTO accounts (id, owner, balance) VALUES (1, 'a', 1)")
        .await
        .unwrap();
    let n = copy(&c, "copy accounts from stdin with (freeze on)", b"2\tb\t2\n3\tc\t3\n")
        .await
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(count(&c).await.unwrap(), 3, "the block sees its own rows");
    let other = connect(s.port, "").await.unwrap();
    assert_eq!(count(&other).await.unwrap(), 1, "nobody else does before COMMIT");
    c.batch_execute("UPDATE accounts SET balance = balance + 10 WHERE id = 3")
        .await
        .unwrap();
    c.batch_execute("COMMIT").await.unwrap();
    let rows = other
        .query("SELECT id, balance::text FROM accounts ORDER BY id", &[])
        .await
        .unwrap();
    let got: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![(1, "1.00".into()), (2, "2.00".into()), (3, "13.00".into())]);
    // Rolled back: nothing of it stays.
    c.batch_execute("BEGIN").await.unwrap();
    copy(&c, "COPY accounts FROM STDIN", b"7\tg\t7\n").await.unwrap();
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&c).await.unwrap(), 3);
    // A bad row, or a key the block holds, fails the COPY and aborts the block.
    for data in [&b"8\th\tnot a number\n"[..], &b"9\ti\t1\n1\tdup\t1\n"[..]] {
        c.batch_execute("BEGIN").await.unwrap();
        let e = copy(&c, "COPY accounts FROM STDIN", data).await.unwrap_err();
        assert!(matches!(code(&e).as_str(), "22P02" | "23505"), "{e}");
        let e = c.simple_query("SELECT 1").await.unwrap_err();
        assert_eq!(code(&e), "25P02", "the block is aborted");
        c.batch_execute("COMMIT").await.unwrap();
    }
    assert_eq!(count(&c).await.unwrap(), 3, "nothing of the failed blocks applied");
    // The rows a block keeps are bounded like one statement's (16 MiB with this database's
    // memory limit): one COPY of 10 MB loads, a second one is refused and aborts the block.
    let big = |from: usize| -> Vec<u8> {
        let rows: String = (from..from + 10_000)
            .map(|i| format!("{i}\t{}\t0\n", "x".repeat(1_000)))
            .collect();
        rows.into_bytes()
    };
    c.batch_execute("BEGIN").await.unwrap();
    assert_eq!(copy(&c, "COPY accounts FROM STDIN", &big(1_000)).await.unwrap(), 10_000);
    let e = copy(&c, "COPY accounts FROM STDIN", &big(20_000)).await.unwrap_err();
    assert_eq!(code(&e), "54000", "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&c).await.unwrap(), 3);
    // A read-only block refuses it, and so does an aborted one.
    c.batch_execute("BEGIN READ ONLY").await.unwrap();
    let e = c.simple_query("COPY accounts FROM STDIN").await.unwrap_err();
    assert_eq!(code(&e), "25006", "{e}");
    let e = c.simple_query("COPY accounts FROM STDIN").await.unwrap_err();
    assert_eq!(code(&e), "25P02", "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
}

/// COPY FROM STDIN in binary format, as tokio-postgres's `BinaryCopyInWriter` (and pgx's
/// `CopyFrom`, asyncpg's `copy_records_to_table`) send it: every engine type, NULLs, inside
/// a block too; bad data fails the COPY and stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_copy_from_stdin_loads_every_type() {
    use tokio_postgres::binary_copy::BinaryCopyInWriter;
    use tokio_postgres::types::{ToSql, Type};
    let s = server_with(database(), ServerOptions::default()).await;
    let c = connect(s.port, "").await.unwrap();
    c.batch_execute(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, n INT, small SMALLINT, name TEXT, price NUMERIC(10,2), ok BOOLEAN, \
         raw BYTEA, f DOUBLE PRECISION)",
    )
    .await
    .unwrap();
    let types = [
        Type::INT8,
        Type::INT4,
        Type::INT2,
        Type::TEXT,
        Type::NUMERIC,
        Type::BOOL,
        Type::BYTEA,
        Type::FLOAT8,
    ];
    for (block, from) in [(false, 0i64), (true, 1_000)] {
        if block {
            c.batch_execute("BEGIN").await.unwrap();
        }
        let sink = c.copy_in("COPY t FROM STDIN (FORMAT binary)").await.unwrap();
        let w = BinaryCopyInWriter::new(sink, &types);
        futures::pin_mut!(w);
        for id in from..from + 1_000 {
            let n = (id % 7 != 0).then_some(id as i32 * 3);
            let price = rust_decimal::Decimal::new(id * 101, 2);
            let name = format!("name {id} é");
            let raw = vec![0u8, 1, id as u8];
            let row: [&(dyn ToSql + Sync); 8] = [
                &id,
                &n,
                &(id as i16),
                &name,
                &price,
                &(id % 2 == 0),
                &raw,
                &(id as f64 / 4.0),
            ];
            w.as_mut().write(&row).await.unwrap();
        }
        assert_eq!(w.finish().await.unwrap(), 1_000);
        if block {
            c.batch_execute("COMMIT").await.unwrap();
        }
    }
    let row = c
        .query_one(
            "SELECT count(*), count(n), max(name), sum(price)::text, sum(small) FROM t",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 2_000);
    assert_eq!(row.get::<_, i64>(1), 2_000 - 286, "NULLs stay NULL");
    assert_eq!(row.get::<_, String>(2), "name 999 é");
    assert_eq!(row.get::<_, String>(3), "2018990.00");
    assert_eq!(row.get::<_, i64>(4), 1_999_000);
    let one = c
        .query_one("SELECT raw, f, ok FROM t WHERE id = 1234", &[])
        .await
        .unwrap();
    assert_eq!(one.get::<_, Vec<u8>>(0), vec![0, 1, 1234u64 as u8]);
    assert_eq!(one.get::<_, f64>(1), 308.5);
    assert!(one.get::<_, bool>(2));
    // Bad data: a row of the wrong width, a bad signature, a row cut short.
    let mut header = b"PGCOPY\n\xff\r\n\0".to_vec();
    header.extend_from_slice(&[0; 8]);
    let mut wide = header.clone();
    wide.extend_from_slice(&9i16.to_be_bytes());
    let mut cut = header.clone();
    cut.extend_from_slice(&1i16.to_be_bytes());
    for (data, want) in [(wide, "22P04"), (b"PGCOPY\n\x00".to_vec(), "22P04"), (cut, "22P04")] {
        let sink = c.copy_in("COPY t (id) FROM STDIN WITH (FORMAT BINARY)").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from(data)).await.unwrap();
        let e = sink.finish().await.unwrap_err();
        assert_eq!(code(&e), want, "{e}");
    }
    let n: i64 = c.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(n, 2_000, "nothing of the bad COPYs was stored");
    let e = c.simple_query("COPY t TO STDOUT (FORMAT binary)").await.unwrap_err();
    assert_eq!(code(&e), "0A000", "{e}");
}

/// `x = ANY($1)` with an array parameter, as drivers send lists (tokio-postgres and pgx in
/// binary, node-postgres and psql in text): the parameter is described as an array of
/// the column's type, and NULL elements and quoted text read as PostgreSQL reads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn array_parameters_with_any_and_all() {
    let s = server_with(database(), ServerOptions::default()).await;
    let c = connect(s.port, "").await.unwrap();
    c.batch_execute(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, n INT); \
         INSERT INTO t VALUES (1, 'one', 10), (2, 'two \"2\"', 20), (3, NULL, 30), (4, 'four', NULL)",
    )
    .await
    .unwrap();
    let by_id = c
        .prepare("SELECT id FROM t WHERE id = ANY($1) ORDER BY id")
        .await
        .unwrap();
    assert_eq!(by_id.params(), &[tokio_postgres::types::Type::INT8_ARRAY]);
    let ids = |rows: Vec<tokio_postgres::Row>| rows.iter().map(|r| r.get::<_, i64>(0)).collect::<Vec<_>>();
    assert_eq!(ids(c.query(&by_id, &[&vec![3i64, 1, 99]]).await.unwrap()), vec![1, 3]);
    assert_eq!(
        ids(c.query(&by_id, &[&Vec::<i64>::new()]).await.unwrap()),
        Vec::<i64>::new()
    );
    let names: Vec<Option<&str>> = vec![Some("two \"2\""), None, Some("four")];
    let rows = c
        .query("SELECT id FROM t WHERE name = ANY($1) ORDER BY id", &[&names])
        .await
        .unwrap();
    assert_eq!(ids(rows), vec![2, 4]);
    let rows = c
        .query("SELECT id FROM t WHERE n <> ALL($1) ORDER BY id", &[&vec![10i32, 30]])
        .await
        .unwrap();
    assert_eq!(ids(rows), vec![2]);
    // In text, as node-postgres and psql send it; a malformed one is 22P02.
    let rows = c
        .simple_query("SELECT id FROM t WHERE id = ANY('{2,4}') ORDER BY id")
        .await
        .unwrap();
    assert_eq!(
        simple_rows(&rows),
        vec![vec![Some("2".to_string())], vec![Some("4".to_string())]]
    );
    let e = c
        .simple_query("SELECT id FROM t WHERE id = ANY('{2,')")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "22P02", "{e}");
}

/// pgbench -i's other steps: VACUUM and ANALYZE of tables that exist, and ALTER TABLE ...
/// ADD PRIMARY KEY, which partitions a table created without a key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vacuum_analyze_and_a_primary_key_added_later() {
    async fn partition_by(c: &tokio_postgres::Client) -> String {
        c.query_one("SELECT reloptions::text FROM pg_class WHERE relname = 'b'", &[])
            .await
            .unwrap()
            .get(0)
    }
    let s = server_with(database(), ServerOptions::default()).await;
    let c = connect(s.port, "").await.unwrap();
    c.batch_execute("CREATE TABLE hist (tid INT NOT NULL, delta INT); CREATE TABLE b (bid INT NOT NULL, bal INT)")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO b VALUES (1, 0), (2, 0), (3, 0)")
        .await
        .unwrap();
    for sql in [
        "VACUUM",
        "vacuum analyze b",
        "VACUUM (ANALYZE, VERBOSE) b (bid, bal), hist",
        "VACUUM FULL FREEZE public.b",
        "ANALYZE",
        "analyze verbose hist(delta);",
    ] {
        let tag = c.simple_query(sql).await.unwrap();
        assert!(
            matches!(tag.last(), Some(tokio_postgres::SimpleQueryMessage::CommandComplete(0))),
            "{sql}"
        );
    }
    for (sql, want) in [
        ("VACUUM nope", "42P01"),
        ("ANALYZE b (nope)", "42703"),
        ("VACUUM b c", "42601"),
        ("ALTER TABLE b ALTER COLUMN bid TYPE BIGINT USING bid + 1", "0A000"),
        // (Its rows hold bal = 0.)
        ("ALTER TABLE b ADD CONSTRAINT k CHECK (bal > 0)", "23514"),
        ("ALTER TABLE nope ADD PRIMARY KEY (bid)", "42P01"),
    ] {
        let e = c.simple_query(sql).await.unwrap_err();
        assert_eq!(code(&e), want, "{sql}: {e}");
    }
    c.batch_execute("BEGIN").await.unwrap();
    c.batch_execute("ANALYZE b").await.unwrap();
    let e = c.simple_query("VACUUM b").await.unwrap_err();
    assert_eq!(code(&e), "25001", "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();

    assert!(partition_by(&c).await.contains("partition_by=none"));
    let done = c.simple_query("ALTER TABLE b ADD PRIMARY KEY (bid)").await.unwrap();
    assert!(matches!(
        done.last(),
        Some(tokio_postgres::SimpleQueryMessage::CommandComplete(_))
    ));
    assert!(partition_by(&c).await.contains("partition_by=bid"));
    let n: i64 = c.query_one("SELECT count(*) FROM b", &[]).await.unwrap().get(0);
    assert_eq!(n, 3, "every row once");
    let e = c.simple_query("INSERT INTO b VALUES (2, 5)").await.unwrap_err();
    assert_eq!(code(&e), "23505", "{e}");
    let e = c.simple_query("ALTER TABLE b ADD PRIMARY KEY (bid)").await.unwrap_err();
    assert_eq!(code(&e), "42P16", "{e}");
    let key: String = c
        .query_one("SELECT indexname FROM pg_indexes WHERE tablename = 'b'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(key, "b_pkey");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn returning_if_exists_and_psql_catalog_lookups() {
    let s = server_with(database(), ServerOptions::default()).await;
    let c = connect(s.port, "").await.unwrap();
    c.batch_execute(ACCOUNTS).await.unwrap();
    c.batch_execute(&ACCOUNTS.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
        .await
        .unwrap();
    let rows = c
        .query(
            "INSERT INTO accounts (id, owner) VALUES ($1, $2), ($3, $4) RETURNING id, balance",
            &[&1i64, &"a", &2i64, &"b"],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].get::<_, i64>(0), 2);
    let rows = c
        .query(
            "UPDATE accounts SET balance = 5 WHERE id = $1 RETURNING owner",
            &[&1i64],
        )
        .await
        .unwrap();
    assert_eq!(rows[0].get::<_, String>(0), "a");
    // psql's \dt, then \d accounts (first two steps).
    let dt = simple_rows(
        &c.simple_query(
            "SELECT n.nspname as \"Schema\", c.relname as \"Name\", CASE c.relkind WHEN 'r' THEN 'table' WHEN 'i' \
             THEN 'index' END as \"Type\", pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\" FROM \
             pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind \
             IN ('r','p','') ORDER BY 1,2;",
        )
        .await
        .unwrap(),
    );
    assert_eq!(
        dt,
        vec![vec![
            Some("public".into()),
            Some("accounts".into()),
            Some("table".into()),
            // The session's role owns everything (the test connects as "test").
            Some("test".into())
        ]]
    );
    let found = simple_rows(
        &c.simple_query(
            "SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON \
             n.oid = c.relnamespace WHERE c.relname OPERATOR(pg_catalog.~) '^(accounts)$' COLLATE pg_catalog.default \
             AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 2, 3;",
        )
        .await
        .unwrap(),
    );
    assert_eq!(found.len(), 1);
    let oid = found[0][0].clone().unwrap();
    let cols = simple_rows(
        &c.simple_query(&format!(
            "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), (SELECT 1), a.attnotnull FROM \
             pg_catalog.pg_attribute a WHERE a.attrelid = '{oid}' AND a.attnum > 0 ORDER BY a.attnum;"
        ))
        .await
        .unwrap(),
    );
    let names: Vec<_> = cols.iter().map(|r| r[0].clone().unwrap()).collect();
    assert_eq!(names, vec!["id", "owner", "balance"]);
    assert_eq!(cols[1][3].as_deref(), Some("t"));
    c.batch_execute("DROP TABLE IF EXISTS nothing_here; DROP TABLE accounts; DROP TABLE IF EXISTS accounts")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_users_log_in_with_their_password_only() {
    let options = ServerOptions {
        users: vec![User::new("app", "s3cret")],
        ..Default::default()
    };
    let s = server_with(database(), options).await;
    let (c, conn) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={} user=app password=s3cret", s.port),
        NoTls,
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    c.batch_execute("CREATE TABLE t (a INT)").await.unwrap();
    for bad in ["user=app password=wrong", "user=someone password=s3cret", "user=app"] {
        let r = tokio_postgres::connect(&format!("host=127.0.0.1 port={} {bad}", s.port), NoTls).await;
        assert!(r.is_err(), "{bad} logged in");
    }
    // The error names the user who tried, with PostgreSQL's SQLSTATE.
    let e = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={} user=app password=wrong", s.port),
        NoTls,
    )
    .await
    .err()
    .unwrap();
    assert_eq!(code(&e), "28P01", "{e}");
    let message = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
    assert!(message.contains("\"app\""), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ssl_request_is_answered() {
    // Without TLS configured the answer is 'N' and the client may go on in the clear.
    let s = server_with(database(), ServerOptions::default()).await;
    let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    sock.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]).await.unwrap();
    let mut b = [0u8; 1];
    sock.read_exact(&mut b).await.unwrap();
    assert_eq!(b[0], b'N');
    // sslmode=prefer falls back to plain text.
    let c = connect(s.port, "sslmode=prefer").await.unwrap();
    c.simple_query("SELECT 1").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_request_ends_a_running_query() {
    let s = server_with(database(), ServerOptions::default()).await;
    let c = connect(s.port, "").await.unwrap();
    c.batch_execute("CREATE TABLE big (a BIGINT PRIMARY KEY, b BIGINT)")
        .await
        .unwrap();
    let sink = c.copy_in("COPY big FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let mut text = String::new();
    for i in 0..4000 {
        text.push_str(&format!("{i}\t{}\n", i % 13));
    }
    sink.send(bytes::Bytes::from(text)).await.unwrap();
    sink.finish().await.unwrap();
    let token = c.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(NoTls).await
    });
    // 16 M join pairs, each one tested (no key to hash on): over a second of work even in
    // an optimized build.
    let r = c
        .simple_query("SELECT COUNT(*) FROM big x JOIN big y ON x.b + y.b = 12")
        .await;
    canceller.await.unwrap().unwrap();
    let e = r.expect_err("the query was canceled");
    assert_eq!(code(&e), "57014", "{e}");
    // The connection is still good.
    c.simple_query("SELECT 1").await.unwrap();
}

/// Raises the open-file limit to its hard limit (1,000 connections need 2,000 sockets in
/// this process: both ends).
fn raise_fd_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
    }
    r.rlim_cur
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_are_served_at_once() {
    let limit = raise_fd_limit();
    assert!(
        limit >= 2100,
        "this test needs 2,100 open files; the hard limit is {limit}"
    );
    let s = server_with(database(), ServerOptions::default()).await;
    let setup = connect(s.port, "").await.unwrap();
    setup
        .batch_execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v BIGINT)")
        .await
        .unwrap();
    let mut clients = Vec::with_capacity(1000);
    for chunk in 0..10 {
        let mut tasks = Vec::new();
        for _ in 0..100 {
            let port = s.port;
            tasks.push(tokio::spawn(async move { connect(port, "").await }));
        }
        for t in tasks {
            clients.push(
                t.await
                    .unwrap()
                    .unwrap_or_else(|e| panic!("connection in batch {chunk}: {e}")),
            );
        }
    }
    // Every connection is open at once, and each one is served.
    let mut tasks = Vec::new();
    for (i, c) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let k = i as i64;
            c.execute("INSERT INTO kv VALUES ($1, $2)", &[&k, &(k * 2)]).await?;
            let v: i64 = c.query_one("SELECT v FROM kv WHERE k = $1", &[&k]).await?.get(0);
            assert_eq!(v, k * 2);
            Ok::<_, tokio_postgres::Error>(c)
        }));
    }
    let mut open = Vec::new();
    for t in tasks {
        open.push(t.await.unwrap().unwrap());
    }
    let n: i64 = setup.query_one("SELECT COUNT(*) FROM kv", &[]).await.unwrap().get(0);
    assert_eq!(n, 1000);
    assert_eq!(open.len(), 1000);
}

/// pgwire 0.42.1's decoder panics on some truncated messages (see `fuzzing`): the panic
/// must end that connection only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_message_ends_only_its_connection() {
    let s = server_with(database(), ServerOptions::default()).await;
    let c = connect(s.port, "").await.unwrap();
    c.batch_execute("CREATE TABLE t (a INT)").await.unwrap();
    for bad in [
        &b"P\0\0\0\x04"[..],
        b"B\0\0\0\x05\0",
        b"Q\0\0\0\x04",
        b"X\xff\xff\xff\xff",
    ] {
        let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
        // Start-up as user "x", then the bad message.
        let mut startup = Vec::new();
        startup.extend_from_slice(&196608u32.to_be_bytes());
        startup.extend_from_slice(b"user\0x\0\0");
        let mut msg = ((startup.len() + 4) as u32).to_be_bytes().to_vec();
        msg.extend_from_slice(&startup);
        sock.write_all(&msg).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_secs(2), sock.read(&mut buf)).await;
        let _ = sock.write_all(bad).await;
        // The server answers with an error or closes; either way the read ends.
        let _ = tokio::time::timeout(Duration::from_secs(2), sock.read(&mut buf)).await;
        // Everyone else is still served.
        c.simple_query("INSERT INTO t VALUES (1)").await.unwrap();
        let other = connect(s.port, "").await.unwrap();
        other.simple_query("SELECT COUNT(*) FROM t").await.unwrap();
    }
}
