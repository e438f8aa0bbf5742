//! The Prometheus endpoint over real HTTP: the text parses as exposition format 0.0.4, and
//! the engine's, the tables' and the server's figures are present and agree with the
//! database.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use permafrost_executor::{AntiCacheConfig, Config, Database};
use permafrost_server::metrics::{self, Outcome, ServerMetrics, StatementClass};
use permafrost_types::Value;

const ROWS: i64 = 1_000;

/// Checks `text` against the exposition format rules and returns every sample as
/// `name{labels}` -> value:
/// * a line is `# HELP name text`, `# TYPE name type`, another comment, or a sample
///   `name{label="value",...} value`;
/// * names match `[a-zA-Z_:][a-zA-Z0-9_:]*`, label names `[a-zA-Z_][a-zA-Z0-9_]*`, label
///   values are quoted with `\\`, `\"` and `\n` escaped;
/// * a family's TYPE comes once, before its samples; its samples are contiguous;
///   `_sum` and `_count` samples belong to a summary family;
/// * no sample is repeated.
fn parse_exposition(text: &str) -> HashMap<String, f64> {
    assert!(text.ends_with('\n'), "the text ends with a line feed");
    let mut types: HashMap<String, String> = HashMap::new();
    let mut helps: HashSet<String> = HashSet::new();
    let mut with_samples: HashSet<String> = HashSet::new();
    let mut current: Option<String> = None;
    let mut samples = HashMap::new();
    let is_name = |s: &str, colon: bool| {
        let mut cs = s.chars();
        cs.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, _help) = rest.split_once(' ').unwrap_or((rest, ""));
            assert!(is_name(name, true), "bad name in {line:?}");
            assert!(helps.insert(name.to_string()), "second HELP for {name}");
            assert!(!with_samples.contains(name), "HELP after samples: {line:?}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').expect("TYPE name type");
            assert!(is_name(name, true), "bad name in {line:?}");
            assert!(
                ["counter", "gauge", "summary", "histogram", "untyped"].contains(&ty),
                "bad type in {line:?}"
            );
            assert!(
                types.insert(name.to_string(), ty.to_string()).is_none(),
                "second TYPE for {name}"
            );
            assert!(!with_samples.contains(name), "TYPE after samples: {line:?}");
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        assert!(!line.is_empty(), "empty line");
        // name
        let end = line.find(['{', ' ']).expect("a sample has a value");
        let name = &line[..end];
        assert!(is_name(name, true), "bad metric name in {line:?}");
        let mut rest = &line[end..];
        // labels
        let mut labels = Vec::new();
        if let Some(r) = rest.strip_prefix('{') {
            let mut r = r;
            loop {
                if let Some(after) = r.strip_prefix('}') {
                    rest = after;
                    break;
                }
                let eq = r.find('=').expect("label=value");
                let lname = &r[..eq];
                assert!(is_name(lname, false), "bad label name {lname:?} in {line:?}");
                let mut chars = r[eq + 1..].char_indices();
                assert_eq!(chars.next().map(|c| c.1), Some('"'), "unquoted label value in {line:?}");
                let mut value = String::new();
                let close = loop {
                    match chars.next().expect("unterminated label value") {
                        (_, '\\') => match chars.next().expect("escape").1 {
                            '\\' => value.push('\\'),
                            '"' => value.push('"'),
                            'n' => value.push('\n'),
                            c => panic!("bad escape \\{c} in {line:?}"),
                        },
                        (i, '"') => break i,
                        (_, '\n') => panic!("raw line feed in {line:?}"),
                        (_, c) => value.push(c),
                    }
                };
                labels.push((lname.to_string(), value));
                r = &r[eq + 1 + close + 1..];
                r = r.strip_prefix(',').unwrap_or(r);
            }
        }
        let names: HashSet<&str> = labels.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(names.len(), labels.len(), "repeated label in {line:?}");
        // value (no timestamps are written)
        let value = rest.strip_prefix(' ').expect("space before the value");
        let v: f64 = match value {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        // family
        let family = if types.contains_key(name) {
            name.to_string()
        } else {
            if let Some(base) = name.strip_suffix("_bucket") {
                assert_eq!(
                    types.get(base).map(String::as_str),
                    Some("histogram"),
                    "{name} belongs to no histogram"
                );
                assert!(names.contains("le"), "a bucket without le: {line:?}");
                base.to_string()
            } else {
                let base = name
                    .strip_suffix("_sum")
                    .or_else(|| name.strip_suffix("_count"))
                    .unwrap_or_else(|| panic!("sample before its TYPE: {line:?}"));
                assert!(
                    matches!(types.get(base).map(String::as_str), Some("summary" | "histogram")),
                    "{name} belongs to no summary or histogram"
                );
                base.to_string()
            }
        };
        if current.as_deref() != Some(family.as_str()) {
            assert!(
                with_samples.insert(family.clone()),
                "samples of {family} are not contiguous"
            );
            current = Some(family.clone());
        }
        let ty = &types[&family];
        if ty == "counter" {
            assert!(v >= 0.0, "negative counter {line:?}");
        }
        if ty == "summary" && name == family {
            assert!(names.contains("quantile"), "summary sample without quantile: {line:?}");
        }
        let key = line[..line.len() - value.len() - 1].to_string();
        assert!(samples.insert(key, v).is_none(), "repeated sample {line:?}");
    }
    samples
}

/// One HTTP/1.1 request over a plain socket; returns status, headers (lower case) and body.
async fn http(port: u16, method: &str, path: &str) -> (u16, String, String) {
    let req = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let raw = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        raw
    })
    .await
    .unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("headers end");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}

async fn blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    tokio::task::spawn_blocking(f).await.unwrap()
}

fn open(dir: &std::path::Path) -> Database {
    // With a command log, so that its figures are there too.
    let mut log = permafrost_executor::LogConfig::new(dir.join("commandlog"));
    log.mode = permafrost_executor::LogMode::Async;
    let config = Config::builder()
        .partitions(2)
        .memory_limit(64 << 20)
        .anticache(AntiCacheConfig::new(dir))
        .command_log(log)
        .build()
        .unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl(
        "CREATE TABLE usertable (ycsb_key BIGINT PRIMARY KEY, field0 VARCHAR(100) NOT NULL)
           WITH (partition_by = 'ycsb_key');
         CREATE TABLE \"odd\"\"name\" (id BIGINT PRIMARY KEY)",
    )
    .unwrap();
    for k in 0..ROWS {
        db.execute_sql(
            "INSERT INTO usertable VALUES ($1, $2)",
            vec![Value::Int(k), Value::from(format!("{k:0100}"))],
        )
        .unwrap();
    }
    db
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_serves_every_figure_in_exposition_format() {
    // The engine's calls wait for the partitions: off the async workers.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let (db, evicted, dup) = blocking(move || {
        let db = Arc::new(open(&path));
        let evicted = db.evict_now(16 << 10).unwrap();
        // A constraint violation counts as a failed transaction.
        let dup = db.execute_sql("INSERT INTO usertable VALUES (1, 'x')", vec![]);
        (db, evicted, dup)
    })
    .await;
    assert!(evicted > 0);
    assert_eq!(dup.as_ref().unwrap_err().sqlstate(), "23505");

    let m = Arc::new(ServerMetrics::new());
    m.connection_opened();
    m.connection_opened();
    m.connection_closed();
    for i in 0..10 {
        m.record(StatementClass::Query, Duration::from_micros(100 + i), Outcome::Ok);
    }
    m.record(StatementClass::Write, Duration::from_millis(1), Outcome::of(&dup));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(metrics::serve_metrics(db.clone(), m.clone(), listener, async {
        let _ = stopped.await;
    }));

    let (status, head, body) = http(port, "GET", "/metrics").await;
    assert_eq!(status, 200, "{head}{body}");
    assert!(head.contains("content-type: text/plain; version=0.0.4"), "{head}");
    let samples = parse_exposition(&body);
    let get = |k: &str| *samples.get(k).unwrap_or_else(|| panic!("no sample {k}:\n{body}"));

    // Engine counters agree with the database (nothing ran since the scrape).
    let st = {
        let db = db.clone();
        blocking(move || db.stats_now().unwrap()).await
    };
    assert!(st.committed >= ROWS as u64);
    assert_eq!(get("permafrost_transactions_committed_total"), st.committed as f64);
    assert_eq!(get("permafrost_transactions_failed_total"), 1.0);
    assert_eq!(get("permafrost_transactions_aborted_total"), 0.0);
    assert_eq!(get("permafrost_transaction_restarts_total{reason=\"evicted\"}"), 0.0);
    assert_eq!(get("permafrost_evicted_tuples_total"), evicted as f64);
    assert_eq!(get("permafrost_evictions_total"), st.evictions as f64);
    assert_eq!(get("permafrost_cold_tuples"), evicted as f64);
    assert!(get("permafrost_blocks_live") > 0.0);
    assert!(get("permafrost_block_file_bytes") > 0.0);
    assert_eq!(get("permafrost_memory_limit_bytes"), (64u64 << 20) as f64);
    assert_eq!(get("permafrost_partitions"), 2.0);
    for c in ["tuple", "string", "index", "tombstone", "buffer", "schema", "anticache"] {
        get(&format!("permafrost_memory_bytes{{component=\"{c}\"}}"));
    }
    assert!(get("permafrost_memory_bytes{component=\"index\"}") > 0.0);
    assert!(
        get("permafrost_memory_used_bytes{component=\"tuple\"}") <= get("permafrost_memory_bytes{component=\"tuple\"}")
    );

    // Per-table figures: hot + cold = rows, cold bytes cover what went to disk.
    let t = |f: &str| get(&format!("permafrost_table_{f}{{table=\"usertable\"}}"));
    assert_eq!(t("hot_tuples") + t("cold_tuples"), ROWS as f64);
    assert_eq!(t("cold_tuples"), evicted as f64);
    assert!(t("hot_tuples") > 0.0, "{}", t("hot_tuples"));
    assert!(t("hot_bytes") > 0.0, "{}", t("hot_bytes"));
    assert!(t("index_bytes") > 0.0, "{}", t("index_bytes"));
    assert!(t("tombstone_bytes") > 0.0, "{}", t("tombstone_bytes"));
    assert!(t("cold_bytes") >= evicted as f64 * 100.0, "{}", t("cold_bytes"));
    assert!(t("cold_blocks") > 0.0);
    assert_eq!(t("stale_tuples"), 0.0);
    // A table name that needs escaping in a label value.
    assert_eq!(get("permafrost_table_hot_tuples{table=\"odd\\\"name\"}"), 0.0);

    // The log's sync durations: cumulative buckets up to +Inf, which is the count.
    let h = "permafrost_commandlog_sync_duration_seconds";
    let inf = get(&format!("{h}_bucket{{le=\"+Inf\"}}"));
    assert_eq!(get(&format!("{h}_count")), inf);
    assert!(inf > 0.0, "the inserts were group committed");
    assert!(get(&format!("{h}_bucket{{le=\"0.0001\"}}")) <= get(&format!("{h}_bucket{{le=\"1\"}}")));
    assert!(get(&format!("{h}_bucket{{le=\"1\"}}")) <= inf);
    assert_eq!(
        get(&format!("{h}_sum")),
        get("permafrost_commandlog_sync_seconds_total")
    );

    // Server figures.
    assert_eq!(get("permafrost_connections_open"), 1.0);
    assert_eq!(get("permafrost_connections_total"), 2.0);
    assert_eq!(get("permafrost_statements_total{kind=\"query\",outcome=\"ok\"}"), 10.0);
    assert_eq!(
        get("permafrost_statements_total{kind=\"write\",outcome=\"error\"}"),
        1.0
    );
    assert_eq!(get("permafrost_statements_total{kind=\"ddl\",outcome=\"ok\"}"), 0.0);
    assert_eq!(
        get("permafrost_statement_errors_total{kind=\"write\",sqlstate=\"23505\"}"),
        1.0
    );
    let p50 = get("permafrost_statement_latency_seconds{kind=\"query\",quantile=\"0.5\"}");
    assert!((100e-6..=112e-6).contains(&p50), "{p50}");
    let p999 = get("permafrost_statement_latency_seconds{kind=\"query\",quantile=\"0.999\"}");
    assert!(p999 >= p50);
    assert_eq!(get("permafrost_statement_latency_seconds_count{kind=\"query\"}"), 10.0);
    let sum = get("permafrost_statement_latency_seconds_sum{kind=\"query\"}");
    assert!((sum - 1045e-6).abs() < 1e-9, "{sum}");
    assert!(get("permafrost_statement_latency_seconds{kind=\"ddl\",quantile=\"0.9\"}").is_nan());

    // Every family in the documentation table is there, and nothing else.
    let families: HashSet<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    let documented: HashSet<&str> = metrics::METRICS.iter().map(|i| i.name).collect();
    assert_eq!(families, documented);

    // The SQL view's rows are the same samples.
    let (db2, m2) = (db.clone(), m.clone());
    let rows = blocking(move || metrics::rows(&db2, &m2)).await;
    let keys: HashSet<String> = rows
        .iter()
        .map(|r| {
            if r.labels.is_empty() {
                r.name.clone()
            } else {
                format!("{}{{{}}}", r.name, r.labels)
            }
        })
        .collect();
    assert_eq!(keys, samples.keys().cloned().collect::<HashSet<_>>());
    assert_eq!(parse_exposition(&metrics::render(&rows)).len(), rows.len());
    assert_eq!(metrics::collect(db.clone(), m.clone()).await.len(), rows.len());

    // Other paths and methods.
    let (status, _, _) = http(port, "GET", "/").await;
    assert_eq!(status, 404);
    let (status, head, _) = http(port, "POST", "/metrics").await;
    assert_eq!(status, 405);
    assert!(head.contains("allow: get, head"), "{head}");
    let (status, _, body) = http(port, "HEAD", "/metrics").await;
    assert_eq!((status, body.as_str()), (200, ""));

    // Counters move with work between scrapes.
    let db2 = db.clone();
    blocking(move || {
        db2.execute_sql("SELECT field0 FROM usertable WHERE ycsb_key = 3", vec![])
            .unwrap()
    })
    .await;
    let (_, _, body) = http(port, "GET", "/metrics").await;
    let again = parse_exposition(&body);
    assert_eq!(
        again["permafrost_transactions_committed_total"],
        st.committed as f64 + 1.0
    );

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the endpoint stops on shutdown")
        .unwrap()
        .unwrap();
}

#[test]
fn the_exposition_checker_rejects_malformed_text() {
    let bad = [
        "x 1\n",                                           // no TYPE
        "# TYPE x gauge\nx{a=b} 1\n",                      // unquoted label
        "# TYPE x gauge\nx{a=\"b\"}\n",                    // no value
        "# TYPE x gauge\n# TYPE x gauge\nx 1\n",           // TYPE twice
        "# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\nx 2\n", // not contiguous
        "# TYPE x counter\nx -1\n",                        // negative counter
        "# TYPE x gauge\nx{a=\"\\q\"} 1\n",                // bad escape
        "# TYPE x gauge\nx 1\nx 1\n",                      // repeated
        "# TYPE x summary\nx_bucket{le=\"1\"} 1\n",        // bucket of a summary
        "# TYPE x histogram\nx_bucket 1\n",                // bucket without le
    ];
    for text in bad {
        assert!(std::panic::catch_unwind(|| parse_exposition(text)).is_err(), "{text:?}");
    }
    let good = "# HELP x a \\\\ help\n# TYPE x summary\nx{quantile=\"0.5\"} NaN\nx_sum 1.5\nx_count 3\n";
    assert_eq!(parse_exposition(good).len(), 3);
    let histogram = "# TYPE h histogram\nh_bucket{le=\"0.5\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1.2\nh_count 2\n";
    assert_eq!(parse_exposition(histogram).len(), 4);
}
