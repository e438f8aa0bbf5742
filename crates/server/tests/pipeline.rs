//! Pipelining: a connection's statements are submitted as they arrive and answered in
//! order, statements at one partition run in the order sent, and an error skips the rest
//! of its Sync group (and only that).

mod common;

use common::connect;

use std::time::Duration;

use futures::future::join_all;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::{Client, Row, SimpleQueryMessage, Statement};

type Steps = (i64, Result<u64, Option<String>>, Vec<Row>, u64, Vec<Row>);

/// For key `k` (key 7, already there, at k = 50): insert, read, update, read again.
async fn steps(c: &Client, insert: &Statement, read: &Statement, update: &Statement, k: i64) -> Steps {
    let key = if k == 50 { 7 } else { 1000 + k };
    let ins = c.execute(insert, &[&key, &format!("v{k}")]).await;
    let r1 = c.query(read, &[&key]).await.unwrap();
    let upd = c.execute(update, &[&format!("w{k}"), &key]).await.unwrap();
    let r2 = c.query(read, &[&key]).await.unwrap();
    (k, ins.map_err(|e| e.code().map(|c| c.code().to_string())), r1, upd, r2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_statements_answer_in_order_and_see_earlier_writes() {
    let server = common::server().await;
    let port = server.port;
    let c = connect(port).await;
    c.batch_execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT NOT NULL)")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO kv VALUES (7, 'seven')").await.unwrap();
    let insert = c.prepare("INSERT INTO kv VALUES ($1, $2)").await.unwrap();
    let read = c.prepare("SELECT v FROM kv WHERE k = $1").await.unwrap();
    let update = c.prepare("UPDATE kv SET v = $1 WHERE k = $2").await.unwrap();

    // All of these go out before the first answer comes back: for each key an insert,
    // a read, an update and a read again; key 7 already exists (23505); a count over
    // both partitions in the middle.
    let ops = (0..100i64).map(|k| steps(&c, &insert, &read, &update, k));
    let results = join_all(ops).await;
    for (k, ins, r1, upd, r2) in results {
        if k == 50 {
            assert_eq!(ins, Err(Some("23505".to_string())), "duplicate key in the pipeline");
            assert_eq!(r1[0].get::<_, String>(0), "seven");
        } else {
            assert_eq!(ins, Ok(1), "insert {k}");
            assert_eq!(r1.len(), 1, "the read after the insert of {k} sees it");
            assert_eq!(r1[0].get::<_, String>(0), format!("v{k}"));
        }
        assert_eq!(upd, 1);
        assert_eq!(
            r2[0].get::<_, String>(0),
            format!("w{k}"),
            "the read after the update of {k}"
        );
    }
    let n: i64 = c.query_one("SELECT COUNT(*) FROM kv", &[]).await.unwrap().get(0);
    assert_eq!(n, 100);

    // Simple queries and other statements in between keep their places.
    let a = c.simple_query("SELECT COUNT(*) FROM kv WHERE k >= 1000");
    let b = c.query(&read, &[&7i64]);
    let d = c.simple_query("SHOW server_version");
    let (a, b, d) = tokio::join!(a, b, d);
    assert_eq!(first_value(a.unwrap()), Some("99".to_string()));
    assert_eq!(b.unwrap()[0].get::<_, String>(0), "w50");
    assert!(first_value(d.unwrap()).is_some_and(|v| v.starts_with("16")));
}

/// The first column of the first row of a simple query's answer.
fn first_value(msgs: Vec<SimpleQueryMessage>) -> Option<String> {
    msgs.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
        _ => None,
    })
}

/// A frontend message: type byte, length, body.
fn msg(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty];
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn parse(name: &str, sql: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(name.as_bytes());
    b.push(0);
    b.extend_from_slice(sql.as_bytes());
    b.push(0);
    b.extend_from_slice(&0u16.to_be_bytes());
    msg(b'P', &b)
}

/// Bind of the unnamed portal with text parameters.
fn bind(stmt: &str, params: &[&str]) -> Vec<u8> {
    let mut b = vec![0];
    b.extend_from_slice(stmt.as_bytes());
    b.push(0);
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&(params.len() as u16).to_be_bytes());
    for p in params {
        b.extend_from_slice(&(p.len() as u32).to_be_bytes());
        b.extend_from_slice(p.as_bytes());
    }
    b.extend_from_slice(&0u16.to_be_bytes());
    msg(b'B', &b)
}

fn execute() -> Vec<u8> {
    msg(b'E', b"\0\0\0\0\0")
}

fn sync() -> Vec<u8> {
    msg(b'S', b"")
}

/// Reads backend messages until `readies` ReadyForQuery have come; returns their types,
/// and the SQLSTATE of each ErrorResponse.
async fn read_until_ready(sock: &mut tokio::net::TcpStream, readies: usize) -> (String, Vec<String>) {
    let mut buf = Vec::new();
    let mut types = String::new();
    let mut codes = Vec::new();
    let mut at = 0;
    let mut seen = 0;
    while seen < readies {
        while buf.len() < at + 5
            || buf.len() < at + 1 + u32::from_be_bytes(buf[at + 1..at + 5].try_into().unwrap()) as usize
        {
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk))
                .await
                .expect("the server answers")
                .unwrap();
            assert!(n > 0, "the server closed the connection after {types:?}");
            buf.extend_from_slice(&chunk[..n]);
        }
        let len = u32::from_be_bytes(buf[at + 1..at + 5].try_into().unwrap()) as usize;
        let ty = buf[at];
        if ty == b'E' {
            let body = &buf[at + 5..at + 1 + len];
            let mut fields = body.split(|b| *b == 0);
            let code = fields
                .find(|f| f.first() == Some(&b'C'))
                .map(|f| String::from_utf8_lossy(&f[1..]).to_string());
            codes.push(code.unwrap_or_default());
        }
        if ty == b'Z' {
            seen += 1;
        }
        types.push(ty as char);
        at += 1 + len;
    }
    (types, codes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_skips_the_rest_of_its_sync_group_only() {
    let server = common::server().await;
    let port = server.port;
    let c = connect(port).await;
    c.batch_execute("CREATE TABLE t (a BIGINT PRIMARY KEY); INSERT INTO t VALUES (1)")
        .await
        .unwrap();

    let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut startup = Vec::new();
    startup.extend_from_slice(&196608u32.to_be_bytes());
    startup.extend_from_slice(b"user\0raw\0\0");
    let mut m = ((startup.len() + 4) as u32).to_be_bytes().to_vec();
    m.extend_from_slice(&startup);
    sock.write_all(&m).await.unwrap();
    let (types, _) = read_until_ready(&mut sock, 1).await;
    assert!(types.ends_with('Z'), "{types}");

    // One write: group 1 inserts 1 (a duplicate) then 99; group 2 inserts 2; group 3
    // inserts 3 then 4 (two statements in one group, both fine).
    let mut w = parse("ins", "INSERT INTO t VALUES ($1)");
    for part in [
        bind("ins", &["1"]),
        execute(),
        bind("ins", &["99"]),
        execute(),
        sync(),
        bind("ins", &["2"]),
        execute(),
        sync(),
        bind("ins", &["3"]),
        execute(),
        bind("ins", &["4"]),
        execute(),
        sync(),
    ] {
        w.extend_from_slice(&part);
    }
    sock.write_all(&w).await.unwrap();
    let (types, codes) = read_until_ready(&mut sock, 3).await;
    // ParseComplete, BindComplete, the error, then nothing of 99 until ReadyForQuery;
    // then group 2 and group 3 in full.
    assert_eq!(types, "12EZ2CZ2C2CZ", "message types");
    assert_eq!(codes, vec!["23505".to_string()]);

    let keys: Vec<i64> = common::first_column(&c, "SELECT a FROM t ORDER BY a", &[]).await;
    assert_eq!(keys, vec![1, 2, 3, 4], "99 was skipped with the rest of its group");
}
