//! Inputs an adversarial client sends, and what the server must answer: statements deep
//! enough to overflow a stack, malformed protocol messages, invalid text, integer
//! overflow, more connections than allowed. After each, the server goes on serving.

mod common;

use common::{Server, code, connect, server, server_over};

use std::sync::Arc;
use std::time::Duration;

use permafrost_executor::{AntiCacheConfig, Config, Database};
use permafrost_server::ServerOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_postgres::NoTls;

async fn server_with(options: ServerOptions) -> Server {
    server_of(Config::builder().partitions(2).build().unwrap(), options).await
}

async fn server_of(config: Config, options: ServerOptions) -> Server {
    server_over(Arc::new(Database::open(config).unwrap()), options).await
}

/// The server answers a fresh connection's `SELECT 1` within a second.
async fn still_serves(port: u16) {
    let answered = tokio::time::timeout(Duration::from_secs(10), async {
        let c = connect(port).await;
        c.simple_query("SELECT 1").await.unwrap().len()
    })
    .await;
    assert!(answered.is_ok(), "the server stopped answering");
}

fn chain(head: &str, term: &str, op: &str, n: usize) -> String {
    let mut s = String::from(head);
    for i in 0..n {
        if i > 0 {
            s.push_str(op);
        }
        s.push_str(term);
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_deep_enough_to_overflow_a_stack_are_run_or_refused_and_the_server_serves_on() {
    let s = server().await;
    let c = connect(s.port).await;
    c.batch_execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO t VALUES (1, 'a'), (7, 'b')")
        .await
        .unwrap();

    // What PostgreSQL 15 runs with its defaults runs here too.
    let sum = chain("SELECT ", "1", " + ", 1_200);
    let rows = c.query(sum.as_str(), &[]).await.unwrap();
    assert_eq!(rows[0].get::<_, i32>(0), 1_200);
    let or = chain("SELECT count(*) FROM t WHERE ", "id = 7", " OR ", 100_000);
    let rows = c.query(or.as_str(), &[]).await.unwrap();
    assert_eq!(rows[0].get::<_, i64>(0), 1);
    let cat = chain("SELECT ", "'a'", " || ", 2_000);
    let rows = c.simple_query(&cat).await.unwrap();
    assert!(matches!(&rows[1], tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0).unwrap().len() == 2_000));
    let and = chain("SELECT count(*) FROM t WHERE ", "id > 0", " AND ", 2_000);
    assert_eq!(c.query_one(and.as_str(), &[]).await.unwrap().get::<_, i64>(0), 2);

    // Past the limit: 54001, as PostgreSQL answers a 10,000-term sum.
    for sql in [
        chain("SELECT ", "1", " + ", 10_000),
        chain("SELECT ", "1", "+", 500_000),
        format!("SELECT {}1{}", "(".repeat(3_000), ")".repeat(3_000)),
        format!("SELECT 1{}", "::bigint".repeat(10_000)),
    ] {
        let e = c.simple_query(&sql).await.unwrap_err();
        assert_eq!(code(&e), "54001", "{}...", &sql[..40]);
        let e = c.prepare(&sql).await.unwrap_err();
        assert_eq!(code(&e), "54001");
    }
    assert_eq!(c.simple_query("SELECT 1").await.unwrap().len(), 3);
    still_serves(s.port).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integer_overflow_is_an_error_never_a_wider_value() {
    let s = server().await;
    let c = connect(s.port).await;
    c.batch_execute("CREATE TABLE n (id INT PRIMARY KEY, i INT, h SMALLINT, b BIGINT)")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO n VALUES (1, 2147483647, 32767, 9223372036854775807)")
        .await
        .unwrap();
    // (statement, PostgreSQL 15's answer: a value or a SQLSTATE)
    let cases: &[(&str, &str)] = &[
        ("SELECT -9223372036854775808 - 1", "22003"),
        ("SELECT -9223372036854775808", "-9223372036854775808"),
        ("SELECT -2147483648", "-2147483648"),
        ("SELECT 2147483647 + 1", "22003"),
        ("SELECT 2147483647::bigint + 1", "2147483648"),
        ("SELECT i * i FROM n", "22003"),
        ("SELECT i + 1 FROM n", "22003"),
        ("SELECT i::bigint * i FROM n", "4611686014132420609"),
        ("SELECT h + h FROM n", "22003"),
        ("SELECT h + 1 FROM n", "32768"),
        ("SELECT b + 1 FROM n", "22003"),
        ("SELECT -b - 2 FROM n", "22003"),
        ("SELECT i / 0 FROM n", "22012"),
        ("SELECT i % 0 FROM n", "22012"),
        ("SELECT (-2147483648) / (-1)", "22003"),
        ("SELECT 7 / 2", "3"),
        ("SELECT -5.0", "-5.0"),
        ("SELECT 1 LIMIT 1e30", "22003"),
        ("SELECT sum(b) + 1 FROM n", "9223372036854775808"),
        ("SELECT sum(i) + 1 FROM n", "2147483648"),
        ("SELECT 1 LIMIT 0.6", "1"),
    ];
    for (sql, want) in cases {
        let got = match c.simple_query(sql).await {
            Ok(m) => match &m[1] {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).unwrap().to_string(),
                other => panic!("{sql}: {other:?}"),
            },
            Err(e) => code(&e),
        };
        assert_eq!(&got, want, "{sql}");
    }
    // Stored values were not changed by the failed updates.
    assert!(c.execute("UPDATE n SET i = i + 1", &[]).await.is_err());
    let r = c.query_one("SELECT i FROM n", &[]).await.unwrap();
    assert_eq!(r.get::<_, i32>(0), 2147483647);
}

/// A connection of raw protocol messages.
struct Raw(TcpStream);

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

impl Raw {
    async fn logged_in(port: u16) -> Raw {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut body = 196608i32.to_be_bytes().to_vec();
        body.extend_from_slice(b"user\0test\0\0");
        let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        m.extend_from_slice(&body);
        s.write_all(&m).await.unwrap();
        let mut r = Raw(s);
        r.until_ready().await;
        r
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.0.write_all(bytes).await.unwrap();
    }

    /// Reads one backend message: (type, body); None when the server closed.
    async fn read(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut head = [0u8; 5];
        tokio::time::timeout(Duration::from_secs(10), self.0.read_exact(&mut head))
            .await
            .expect("the server answers")
            .ok()?;
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0; len - 4];
        self.0.read_exact(&mut body).await.ok()?;
        Some((head[0], body))
    }

    /// Reads up to ReadyForQuery; returns the SQLSTATEs of the errors on the way.
    async fn until_ready(&mut self) -> Vec<String> {
        let mut codes = Vec::new();
        while let Some((kind, body)) = self.read().await {
            match kind {
                b'Z' => return codes,
                b'E' => codes.push(error_code(&body)),
                _ => {}
            }
        }
        codes.push("closed".into());
        codes
    }
}

fn error_code(body: &[u8]) -> String {
    let mut fields = body.split(|b| *b == 0);
    fields
        .find_map(|f| f.strip_prefix(b"C"))
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .unwrap_or_default()
}

fn bind(formats: &[i16], params: &[Option<&[u8]>]) -> Vec<u8> {
    let mut b = b"\0\0".to_vec();
    b.extend_from_slice(&(formats.len() as i16).to_be_bytes());
    for f in formats {
        b.extend_from_slice(&f.to_be_bytes());
    }
    b.extend_from_slice(&(params.len() as i16).to_be_bytes());
    for p in params {
        match p {
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(v) => {
                b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                b.extend_from_slice(v);
            }
        }
    }
    b.extend_from_slice(&0i16.to_be_bytes());
    message(b'B', &b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_are_answered_as_postgresql_answers_them() {
    let s = server().await;
    let c = connect(s.port).await;
    c.batch_execute("CREATE TABLE w (id BIGINT PRIMARY KEY, v TEXT)")
        .await
        .unwrap();

    // Invalid UTF-8 in a query: 22021, and the connection goes on.
    let mut r = Raw::logged_in(s.port).await;
    r.send(&message(b'Q', b"INSERT INTO w VALUES (1, 'caf\xe9')\0")).await;
    assert_eq!(r.until_ready().await, ["22021"]);
    r.send(&message(b'Q', b"SELECT 1\0")).await;
    assert_eq!(r.until_ready().await, Vec::<String>::new());

    // A NUL escaped in a literal: 22021 (E'\x00' is refused by the parser, 42601).
    r.send(&message(b'Q', b"INSERT INTO w VALUES (2, U&'a\\0000b')\0"))
        .await;
    assert_eq!(r.until_ready().await, ["22021"]);
    r.send(&message(b'Q', b"INSERT INTO w VALUES (2, E'a\\x00b')\0")).await;
    assert_eq!(r.until_ready().await, ["42601"]);

    // Text parameters with a NUL or invalid UTF-8, in text and in binary format: 22021.
    r.send(&message(b'P', b"\0INSERT INTO w VALUES ($1, $2)\0\0\0")).await;
    for (formats, v) in [
        (&[0i16][..], &b"a\0b"[..]),
        (&[0, 1][..], &b"a\0b"[..]),
        (&[0][..], &b"caf\xe9"[..]),
        (&[0, 1][..], &b"caf\xe9"[..]),
    ] {
        r.send(&bind(formats, &[Some(b"3"), Some(v)])).await;
        r.send(&message(b'E', b"\0\0\0\0\0")).await;
        r.send(&message(b'S', b"")).await;
        assert_eq!(r.until_ready().await, ["22021"], "{formats:?} {v:?}");
    }
    // Unknown format codes: 22023; more codes than parameters: 08P01; the connection
    // serves on after each.
    r.send(&bind(&[7], &[Some(b"3"), Some(b"x")])).await;
    r.send(&message(b'S', b"")).await;
    assert_eq!(r.until_ready().await, ["22023"]);
    r.send(&bind(&[0, 0, 0], &[Some(b"3"), Some(b"x")])).await;
    r.send(&message(b'S', b"")).await;
    assert_eq!(r.until_ready().await, ["08P01"]);
    // Parse of a named statement that exists: 42P05.
    r.send(&message(b'P', b"s1\0SELECT 1\0\0\0")).await;
    r.send(&message(b'P', b"s1\0SELECT 2\0\0\0")).await;
    r.send(&message(b'S', b"")).await;
    assert_eq!(r.until_ready().await, ["42P05"]);
    let n = c.query_one("SELECT count(*) FROM w", &[]).await.unwrap();
    assert_eq!(n.get::<_, i64>(0), 0, "nothing invalid was stored");

    // Framing errors close the connection with 08P01.
    for bad in [
        message(b'Q', b"SELECT 1"),
        message(b'Q', b"SELECT 1\0trailing"),
        message(b'P', b"s2\0SELECT 1"),
        {
            let mut b = bind(&[], &[Some(b"1")]);
            b[11..15].copy_from_slice(&(-2i32).to_be_bytes());
            b
        },
        b"Q\0\0\0\x02".to_vec(),
        b"S\0\0\0\x05x".to_vec(),
    ] {
        let mut r = Raw::logged_in(s.port).await;
        r.send(&bad).await;
        assert_eq!(r.until_ready().await, ["08P01", "closed"], "{bad:?}");
    }

    // Start-up packets shorter than 8 bytes: an error and the connection closed, at once.
    for len in [3i32, 4, 7, -1] {
        let mut t = TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
        t.write_all(&len.to_be_bytes()).await.unwrap();
        let mut r = Raw(t);
        assert_eq!(r.until_ready().await, ["08P01", "closed"], "length {len}");
    }
    still_serves(s.port).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_max_connections_are_refused_with_53300() {
    let s = server_with(ServerOptions {
        max_connections: 3,
        ..ServerOptions::default()
    })
    .await;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(connect(s.port).await);
    }
    let e = tokio_postgres::connect(&format!("host=127.0.0.1 port={} user=test", s.port), NoTls)
        .await
        .err()
        .expect("a fourth connection is refused");
    assert_eq!(code(&e), "53300");
    open.pop();
    // A slot is free again once a connection has ended.
    let mut served = false;
    for _ in 0..100 {
        if let Ok((c, conn)) =
            tokio_postgres::connect(&format!("host=127.0.0.1 port={} user=test", s.port), NoTls).await
        {
            tokio::spawn(conn);
            served = c.simple_query("SELECT 1").await.is_ok();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_logs_in_is_closed_after_the_authentication_timeout() {
    let s = server_with(ServerOptions {
        authentication_timeout: Duration::from_millis(300),
        ..ServerOptions::default()
    })
    .await;
    let mut t = TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), t.read(&mut buf))
        .await
        .expect("closed by the server");
    assert_eq!(n.unwrap_or(0), 0);
    still_serves(s.port).await;
}

/// `big`: 4,000 rows in 7 groups, whose three-way join on `g` is minutes of work.
async fn big_table(c: &tokio_postgres::Client) {
    c.batch_execute("CREATE TABLE big (id BIGINT PRIMARY KEY, g BIGINT)")
        .await
        .unwrap();
    let values: Vec<String> = (0..4_000).map(|i| format!("({i}, {})", i % 7)).collect();
    c.batch_execute(&format!("INSERT INTO big VALUES {}", values.join(", ")))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_long_query_stops_and_frees_its_partitions_at_once() {
    let s = server().await;
    let c = connect(s.port).await;
    big_table(&c).await;
    // Multi-partition joins of 64 billion and 16 million row triples: minutes of work.
    for sql in [
        "SELECT count(*) FROM big a JOIN big b ON a.g <> b.g + 100 JOIN big c ON c.g <> a.g + 100",
        "SELECT count(*) FROM big a JOIN big b ON a.g <> b.g + 100 JOIN big c ON c.g <> a.g + 100 \
         WHERE c.id < 1000 AND a.id < 4000",
    ] {
        let token = c.cancel_token();
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            token.cancel_query(NoTls).await.unwrap();
        });
        let started = std::time::Instant::now();
        let e = c.query_one(sql, &[]).await.unwrap_err();
        assert_eq!(code(&e), "57014", "{sql}");
        canceller.await.unwrap();
        // Another client is answered at once: the statement stopped, its partitions serve.
        let other = connect(s.port).await;
        let answered = tokio::time::timeout(
            Duration::from_secs(5),
            other.query_one("SELECT g FROM big WHERE id = 5", &[]),
        )
        .await
        .expect("another client is answered within 5 s of the cancel")
        .unwrap();
        assert_eq!(answered.get::<_, i64>(0), 5);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{sql}: {:?}",
            started.elapsed()
        );
    }
}

/// A `permafrost_stats` figure: the value of `metric` with `labels`.
async fn figure(c: &tokio_postgres::Client, metric: &str, labels: &str) -> u64 {
    let rows = c.simple_query("SHOW permafrost_stats").await.unwrap();
    rows.iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some(metric) && r.get(1) == Some(labels) => {
                r.get(2).map(|v| v.parse::<f64>().unwrap() as u64)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{metric}{{{labels}}} is listed"))
}

/// Statements of `kind` (read, write) moved off their partitions so far.
async fn moved(c: &tokio_postgres::Client, kind: &str) -> u64 {
    figure(c, "permafrost_statements_moved_total", &format!("kind=\"{kind}\"")).await
}

/// Waits until more than `n` statements of `kind` have moved (one is known to have).
async fn moved_past(c: &tokio_postgres::Client, kind: &str, n: u64) {
    tokio::time::timeout(Duration::from_secs(60), async {
        while moved(c, kind).await <= n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the long statement moved off its partitions");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_read_moves_off_its_partitions_which_serve_others_meanwhile() {
    let db = common::database();
    let s = server_over(db.clone(), ServerOptions::default()).await;
    let c = connect(s.port).await;
    big_table(&c).await;

    // A multi-partition join of minutes: past its read slice (50 ms) it moves to a forked
    // reader, and its partitions serve the other clients while it runs.
    let long = connect(s.port).await;
    let token = long.cancel_token();
    let before = moved(&c, "read").await;
    let running = tokio::spawn(async move {
        long.query_one(
            "SELECT count(*) FROM big a JOIN big b ON a.g <> b.g + 100 JOIN big c ON c.g <> a.g + 100",
            &[],
        )
        .await
    });
    moved_past(&c, "read", before).await;
    let other = connect(s.port).await;
    let served = tokio::time::timeout(Duration::from_secs(20), async {
        let g: i64 = other
            .query_one("SELECT g FROM big WHERE id = 5", &[])
            .await
            .unwrap()
            .get(0);
        other.execute("UPDATE big SET g = 6 WHERE id = 5", &[]).await.unwrap();
        let n: i64 = other.query_one("SELECT count(*) FROM big", &[]).await.unwrap().get(0);
        (g, n)
    })
    .await
    .expect("other clients are served while the long read runs");
    assert_eq!(served, (5, 4_000));
    assert!(!running.is_finished(), "the long read is still running");
    assert_eq!(db.moved_running(), 1);

    // A cancel kills the reader: 57014, and its process is reaped.
    token.cancel_query(NoTls).await.unwrap();
    let e = running.await.unwrap().unwrap_err();
    assert_eq!(code(&e), "57014", "{e}");
    tokio::time::timeout(Duration::from_secs(10), async {
        while db.moved_running() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the cancelled reader is reaped");

    // A moved read answers the state at the point where it moved: a write that the
    // partitions ran after that is not in its result, in either protocol.
    for simple in [false, true] {
        let reader = connect(s.port).await;
        let before = moved(&c, "read").await;
        let sql = "SELECT count(*), sum(a.g) FROM big a JOIN big b ON a.g <> b.g + 100";
        let running = tokio::spawn(async move {
            if simple {
                let m = reader.simple_query(sql).await.unwrap();
                match &m[1] {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        (r.get(0).unwrap().parse::<i64>().unwrap(), r.get(1).unwrap().to_string())
                    }
                    other => panic!("{other:?}"),
                }
            } else {
                let r = reader.query_one(sql, &[]).await.unwrap();
                (r.get::<_, i64>(0), r.get::<_, rust_decimal::Decimal>(1).to_string())
            }
        });
        moved_past(&c, "read", before).await;
        let g: i64 = c
            .query_one("SELECT sum(g) FROM big", &[])
            .await
            .unwrap()
            .get::<_, rust_decimal::Decimal>(0)
            .try_into()
            .unwrap();
        c.execute("INSERT INTO big VALUES ($1, 3)", &[&(10_000 + simple as i64)])
            .await
            .unwrap();
        let (n, sum) = running.await.unwrap();
        let rows: i64 = c.query_one("SELECT count(*) FROM big", &[]).await.unwrap().get(0);
        assert_eq!(
            (n, sum),
            ((rows - 1) * (rows - 1), ((rows - 1) * g).to_string()),
            "simple: {simple}"
        );
    }
    assert!(moved(&c, "read").await >= before + 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_write_moves_off_its_partitions_and_applies_whole_or_runs_again() {
    let db = common::database();
    let s = server_over(db.clone(), ServerOptions::default()).await;
    let c = connect(s.port).await;
    big_table(&c).await;
    c.batch_execute("CREATE TABLE copy (id BIGINT PRIMARY KEY, g BIGINT); CREATE TABLE other (id BIGINT PRIMARY KEY)")
        .await
        .unwrap();
    // 400,000 rows from a join: past its slice it finishes in a forked image, while the
    // partitions serve the others; none of its rows shows before all of them do.
    let writes_before = moved(&c, "write").await;
    let w = connect(s.port).await;
    let writer = tokio::spawn(async move {
        w.execute(
            "INSERT INTO copy SELECT a.id * 10000 + b.id, a.g FROM big a JOIN big b ON a.g <> b.g + 100 WHERE b.id < 100",
            &[],
        )
        .await
    });
    moved_past(&c, "write", writes_before).await;
    let other = connect(s.port).await;
    let (g, n) = tokio::time::timeout(Duration::from_secs(20), async {
        let g: i64 = other
            .query_one("SELECT g FROM big WHERE id = 5", &[])
            .await
            .unwrap()
            .get(0);
        other.execute("INSERT INTO other VALUES (1)", &[]).await.unwrap();
        let n: i64 = other.query_one("SELECT count(*) FROM copy", &[]).await.unwrap().get(0);
        (g, n)
    })
    .await
    .expect("other clients are served while the long write runs");
    assert_eq!(g, 5);
    assert!(
        n == 0 || n == 400_000,
        "a moved write shows whole or not at all, not {n} rows"
    );
    assert_eq!(writer.await.unwrap().unwrap(), 400_000);
    assert_eq!(count(&c, "copy").await, 400_000);

    // A moved UPDATE whose table another client changes meanwhile runs again in place,
    // after that change: the serial order holds.
    let again_before = figure(&c, "permafrost_moved_writes_run_again_total", "reason=\"changed\"").await;
    let writes_before = moved(&c, "write").await;
    let w = connect(s.port).await;
    let writer = tokio::spawn(async move { w.execute("UPDATE copy SET g = g + 1", &[]).await });
    moved_past(&c, "write", writes_before).await;
    other
        .execute("UPDATE copy SET g = 1000 WHERE id = 50001", &[])
        .await
        .unwrap();
    assert_eq!(writer.await.unwrap().unwrap(), 400_000);
    let g: i64 = c
        .query_one("SELECT g FROM copy WHERE id = 50001", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(g, 1001, "the long update ran after the short one");
    assert!(figure(&c, "permafrost_moved_writes_run_again_total", "reason=\"changed\"").await > again_before);
    let total: rust_decimal::Decimal = c.query_one("SELECT sum(g) FROM copy", &[]).await.unwrap().get(0);
    // Every other row went up by one: sum(g) was 100 × sum(big.g), plus 400,000, plus
    // row 50001's jump from 5 + 1 to 1000 + 1.
    let base: i64 = (0..4000i64).map(|i| i % 7).sum::<i64>() * 100;
    assert_eq!(total, rust_decimal::Decimal::from(base + 400_000 + 995));
    assert_eq!(db.moved_running(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_that_needs_more_than_its_working_memory_gets_54000() {
    // 64 MiB of budget: a statement may hold 16 MiB.
    let config = Config::builder().partitions(2).memory_limit(64 << 20).build().unwrap();
    let s = server_of(config, ServerOptions::default()).await;
    let c = connect(s.port).await;
    c.batch_execute("CREATE TABLE j (id BIGINT PRIMARY KEY, g BIGINT, pad TEXT)")
        .await
        .unwrap();
    let values: Vec<String> = (0..3_000).map(|i| format!("({i}, {}, 'pad-{i}')", i % 7)).collect();
    c.batch_execute(&format!("INSERT INTO j VALUES {}", values.join(", ")))
        .await
        .unwrap();
    // 9 million rows to the client, sorted, or grouped: each far past 16 MiB.
    for sql in [
        "SELECT a.id, b.id, a.pad FROM j a JOIN j b ON a.g <> b.g + 100",
        "SELECT a.id, b.pad FROM j a JOIN j b ON a.g <> b.g + 100 ORDER BY b.pad",
        "SELECT a.pad, b.pad, count(*) FROM j a JOIN j b ON a.g <> b.g + 100 GROUP BY a.pad, b.pad",
    ] {
        let e = c.simple_query(sql).await.unwrap_err();
        assert_eq!(code(&e), "54000", "{sql}");
    }
    // What fits is answered.
    let n = c
        .query_one("SELECT count(*) FROM j a JOIN j b ON a.g <> b.g + 100", &[])
        .await
        .unwrap();
    assert_eq!(n.get::<_, i64>(0), 9_000_000);
    assert_eq!(c.query("SELECT * FROM j LIMIT 10", &[]).await.unwrap().len(), 10);
}

async fn count(c: &tokio_postgres::Client, table: &str) -> i64 {
    c.query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_is_applied_whole_or_not_at_all() {
    use futures::SinkExt;
    let s = server().await;
    let c = connect(s.port).await;
    c.batch_execute("CREATE TABLE k (id BIGINT PRIMARY KEY, v TEXT NOT NULL)")
        .await
        .unwrap();
    let rows = |from: usize, to: usize| -> String { (from..to).map(|i| format!("{i}\tv{i}\n")).collect() };

    // A bad value at row 601 of 1,000: nothing stays.
    let sink = c.copy_in("COPY k FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let text = format!("{}600\tv\\N\n601\t\\N\n{}", rows(0, 600), rows(602, 1000));
    sink.send(bytes::Bytes::from(text)).await.unwrap();
    let e = sink.finish().await.unwrap_err();
    assert_eq!(code(&e), "23502", "{e}");
    assert!(e.as_db_error().unwrap().message().contains("nothing was loaded"), "{e}");
    assert_eq!(count(&c, "k").await, 0);

    // A duplicate key found when the rows are applied: nothing stays.
    let sink = c.copy_in("COPY k FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from(format!("{}5\tagain\n", rows(0, 1000))))
        .await
        .unwrap();
    let e = sink.finish().await.unwrap_err();
    assert_eq!(code(&e), "23505", "{e}");
    assert_eq!(count(&c, "k").await, 0);

    // CopyFail after 1,000 rows: nothing stays.
    let mut raw = Raw::logged_in(s.port).await;
    raw.send(&message(b'Q', b"COPY k FROM STDIN\0")).await;
    let (kind, _) = raw.read().await.unwrap();
    assert_eq!(kind, b'G');
    raw.send(&message(b'd', rows(0, 1000).as_bytes())).await;
    raw.send(&message(b'f', b"client gave up\0")).await;
    assert_eq!(raw.until_ready().await, ["57014"]);
    assert_eq!(count(&c, "k").await, 0);

    // A client that goes away before CopyDone: nothing stays.
    let mut raw = Raw::logged_in(s.port).await;
    raw.send(&message(b'Q', b"COPY k FROM STDIN\0")).await;
    assert_eq!(raw.read().await.unwrap().0, b'G');
    raw.send(&message(b'd', rows(0, 1000).as_bytes())).await;
    drop(raw);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(count(&c, "k").await, 0);

    // A good COPY of many batches' worth of rows, at every partition: all of them.
    let sink = c.copy_in("COPY k FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    for chunk in 0..5 {
        sink.send(bytes::Bytes::from(rows(chunk * 2_000, (chunk + 1) * 2_000)))
            .await
            .unwrap();
    }
    assert_eq!(sink.finish().await.unwrap(), 10_000);
    assert_eq!(count(&c, "k").await, 10_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_larger_than_a_statement_may_hold_is_refused_and_stores_nothing() {
    use futures::SinkExt;
    let config = Config::builder().partitions(2).memory_limit(64 << 20).build().unwrap();
    let s = server_of(config, ServerOptions::default()).await;
    let c = connect(s.port).await;
    c.batch_execute("CREATE TABLE blobs (id BIGINT PRIMARY KEY, v TEXT)")
        .await
        .unwrap();
    let sink = c.copy_in("COPY blobs FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let value = "x".repeat(64 << 10);
    // 300 rows of 64 KiB: past the 16 MiB one statement may hold.
    for chunk in 0..3 {
        let text: String = (chunk * 100..(chunk + 1) * 100)
            .map(|i| format!("{i}\t{value}\n"))
            .collect();
        if sink.send(bytes::Bytes::from(text)).await.is_err() {
            break;
        }
    }
    let e = sink.finish().await.unwrap_err();
    assert_eq!(code(&e), "54000", "{e}");
    assert_eq!(count(&c, "blobs").await, 0);
    still_serves(s.port).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_stops_long_queries_and_writes_which_roll_back() {
    let s = server().await;
    let c = connect(s.port).await;
    big_table(&c).await;
    c.batch_execute("CREATE TABLE copy (id BIGINT PRIMARY KEY, g BIGINT)")
        .await
        .unwrap();
    c.batch_execute("SET statement_timeout = '300ms'").await.unwrap();
    let shown = c.simple_query("SHOW statement_timeout").await.unwrap();
    assert!(matches!(&shown[1], tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some("300ms")));
    for sql in [
        "SELECT count(*) FROM big a JOIN big b ON a.g <> b.g + 100 JOIN big c ON c.g <> a.g + 100",
        // 16 million rows inserted one by one: stopped part-way, and nothing stays.
        "INSERT INTO copy SELECT a.id * 10000 + b.id, a.g FROM big a JOIN big b ON a.g <> b.g + 100",
    ] {
        let started = std::time::Instant::now();
        let e = c.simple_query(sql).await.unwrap_err();
        assert_eq!(code(&e), "57014", "{sql}: {e}");
        assert!(e.as_db_error().unwrap().message().contains("statement timeout"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    }
    // The same statements through the extended protocol.
    let e = c
        .query(
            "SELECT count(*) FROM big a JOIN big b ON a.g <> b.g + 100 JOIN big c ON c.g <> a.g + 100",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), "57014");
    c.batch_execute("RESET statement_timeout").await.unwrap();
    assert_eq!(count(&c, "copy").await, 0, "a stopped write rolled back");
    assert_eq!(count(&c, "big").await, 4_000);
    let e = c.batch_execute("SET statement_timeout = 'soon'").await.unwrap_err();
    assert_eq!(code(&e), "22023");
}

/// A table larger than the memory budget, mostly evicted: a count and a `SELECT *` read
/// its blocks without bringing them back (before, they restarted until they gave up with
/// 40001, or got 54000), with the right answer, and the server serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_of_a_table_larger_than_memory_stream_to_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let mut ac = AntiCacheConfig::new(dir.path());
    ac.eviction_size = 256 << 10;
    let config = Config::builder()
        .partitions(2)
        .memory_limit(16 << 20)
        .anticache(ac)
        .temp_dir(dir.path().join("tmp"))
        .build()
        .unwrap();
    let db = Arc::new(Database::open(config).unwrap());
    let s = server_over(db.clone(), ServerOptions::default()).await;
    let c = connect(s.port).await;
    c.batch_execute("CREATE TABLE wide (id BIGINT PRIMARY KEY, g INTEGER NOT NULL, pad TEXT NOT NULL)")
        .await
        .unwrap();
    // 24 MB of rows against 16 MiB: refused writes (53200) are retried while eviction
    // catches up, as a client should.
    let pad = |i: i64| format!("{i:08}").repeat(125);
    for batch in 0..60i64 {
        let values: Vec<String> = (batch * 400..(batch + 1) * 400)
            .map(|i| format!("({i}, {}, '{}')", i % 7, pad(i)))
            .collect();
        let sql = format!("INSERT INTO wide VALUES {}", values.join(", "));
        let mut tries = 0;
        while let Err(e) = c.batch_execute(&sql).await {
            assert_eq!(code(&e), "53200", "{e}");
            tries += 1;
            assert!(tries < 100, "the budget never made room");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let evicting = db.clone();
    tokio::task::spawn_blocking(move || evicting.evict_now(64 << 20).unwrap())
        .await
        .unwrap();
    let stats = || {
        let db = db.clone();
        async move {
            tokio::task::spawn_blocking(move || db.stats_now().unwrap())
                .await
                .unwrap()
        }
    };
    let before = stats().await;
    assert!(before.evicted_now > 10_000, "{before:?}");

    let r = c
        .query_one("SELECT count(*), sum(g)::bigint FROM wide", &[])
        .await
        .unwrap();
    assert_eq!(r.get::<_, i64>(0), 24_000);
    assert_eq!(r.get::<_, i64>(1), (0..24_000i64).map(|i| i % 7).sum::<i64>());
    // Every row to the client, with its long text, by both protocols.
    let rows = c.query("SELECT id, pad FROM wide", &[]).await.unwrap();
    let mut ids: Vec<i64> = rows
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            assert_eq!(r.get::<_, String>(1), pad(id));
            id
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..24_000).collect::<Vec<_>>());
    let simple = c.simple_query("SELECT id FROM wide WHERE g = 3").await.unwrap();
    let n = simple
        .iter()
        .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_)))
        .count();
    assert_eq!(n, (0..24_000).filter(|i| i % 7 == 3).count());
    // COPY TO streams the same way (psql's \copy ... to, pg_dump's data).
    use futures::StreamExt;
    let out = c.copy_out("COPY wide (id, g) TO STDOUT").await.unwrap();
    let bytes: Vec<u8> = out.map(|chunk| chunk.unwrap().to_vec()).concat().await;
    let text = String::from_utf8(bytes).unwrap();
    let mut copied: Vec<(i64, i64)> = text
        .lines()
        .map(|l| {
            let (id, g) = l.split_once('\t').unwrap();
            (id.parse().unwrap(), g.parse().unwrap())
        })
        .collect();
    copied.sort_unstable();
    assert_eq!(copied, (0..24_000i64).map(|i| (i, i % 7)).collect::<Vec<_>>());
    // Inside a block, before its first write: the same reads, a sort past work_mem (16 MiB
    // here) spilled; the COMMIT checks them with one read set entry each, as nothing
    // changed the table meanwhile, and does not read them again.
    let mut c = c;
    let t = c.transaction().await.unwrap();
    let sorted = t
        .query("SELECT id, pad FROM wide ORDER BY pad DESC", &[])
        .await
        .unwrap();
    let ids: Vec<i64> = sorted.iter().map(|r| r.get(0)).collect();
    assert_eq!(ids, (0..24_000).rev().collect::<Vec<_>>());
    let n = t
        .query_one("SELECT count(*) FROM wide WHERE g <> 3", &[])
        .await
        .unwrap();
    assert_eq!(n.get::<_, i64>(0), (0..24_000).filter(|i| i % 7 != 3).count() as i64);
    t.commit().await.unwrap();
    let after = stats().await;
    assert_eq!(
        after.unevicted_tuples, before.unevicted_tuples,
        "a scan brought data back"
    );
    assert_eq!(after.evicted_now, before.evicted_now);
    // A block whose big read changed before its COMMIT: reading it again would need the
    // whole table back in memory, so the COMMIT fails with 40001 and the client retries.
    let t = c.transaction().await.unwrap();
    assert_eq!(t.query("SELECT id FROM wide", &[]).await.unwrap().len(), 24_000);
    let other = connect(s.port).await;
    other.batch_execute("UPDATE wide SET g = 8 WHERE id = 5").await.unwrap();
    let e = t.commit().await.unwrap_err();
    assert_eq!(code(&e), "40001", "{e}");
    still_serves(s.port).await;
}

/// A client that goes away while its long statement runs: the statement stops (as if
/// cancelled) and its partitions serve other clients at once, instead of running for
/// minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_stops_its_long_statement() {
    let s = server().await;
    let c = connect(s.port).await;
    big_table(&c).await;
    let (doomed, conn) = tokio_postgres::connect(&format!("host=127.0.0.1 port={} user=test", s.port), NoTls)
        .await
        .unwrap();
    let connection = tokio::spawn(conn);
    let running = tokio::spawn(async move {
        // A multi-partition join of 64 billion row triples: minutes of work.
        let _ = doomed
            .query_one(
                "SELECT count(*) FROM big a JOIN big b ON a.g <> b.g + 100 JOIN big c ON c.g <> a.g + 100",
                &[],
            )
            .await;
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The client goes away: its connection closes with the statement running.
    connection.abort();
    running.abort();
    let answered = tokio::time::timeout(
        Duration::from_secs(10),
        c.query_one("SELECT g FROM big WHERE id = 5", &[]),
    )
    .await
    .expect("another client is answered within 10 s of the client going away")
    .unwrap();
    assert_eq!(answered.get::<_, i64>(0), 5);
}

/// A CALL stops like a statement: past `statement_timeout` or on a cancel request its
/// procedure is rolled back (57014) and its partitions serve others at once, through both
/// protocols.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_is_stopped_by_statement_timeout_and_cancel() {
    let s = server().await;
    let c = connect(s.port).await;
    big_table(&c).await;
    c.batch_execute(
        "CREATE TABLE marks (id BIGINT PRIMARY KEY);
         CREATE PROCEDURE slow() AS $$
           INSERT INTO marks VALUES (1);
           SELECT count(*) FROM big a JOIN big b ON a.g <> b.g + 100 JOIN big c ON c.g <> a.g + 100
         $$",
    )
    .await
    .unwrap();
    c.batch_execute("SET statement_timeout = '300ms'").await.unwrap();
    let started = std::time::Instant::now();
    let e = c.simple_query("CALL slow()").await.unwrap_err();
    assert_eq!(code(&e), "57014", "{e}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let e = c.query("CALL slow()", &[]).await.unwrap_err();
    assert_eq!(code(&e), "57014", "{e}");
    c.batch_execute("RESET statement_timeout").await.unwrap();
    // A cancel request.
    let token = c.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(NoTls).await.unwrap();
    });
    let e = c.simple_query("CALL slow()").await.unwrap_err();
    assert_eq!(code(&e), "57014", "{e}");
    canceller.await.unwrap();
    assert_eq!(count(&c, "marks").await, 0, "a stopped call rolled back");
    let other = connect(s.port).await;
    let answered = tokio::time::timeout(
        Duration::from_secs(5),
        other.query_one("SELECT g FROM big WHERE id = 5", &[]),
    )
    .await
    .expect("another client is answered within 5 s")
    .unwrap();
    assert_eq!(answered.get::<_, i64>(0), 5);
}
