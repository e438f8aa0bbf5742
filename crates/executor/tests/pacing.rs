//! Writes paced to eviction (partition/pacing.rs): a stream of bulk inserts far past the
//! memory budget completes without a refusal, where without pacing the budget's gate
//! refuses some of its batches; with nothing evictable writes are still refused at once.

mod common;

use std::time::Duration;

use permafrost_executor::{AntiCacheConfig, Config, Database, Request};
use permafrost_types::Value;

const ROWS: usize = 4_000;
const BATCHES: usize = 40;

fn open(dir: &std::path::Path, wait: Duration, evictable: bool) -> Database {
    let mut ac = AntiCacheConfig::new(dir);
    ac.eviction_size = 1 << 20;
    let config = Config::builder()
        .partitions(2)
        .memory_limit(16 << 20)
        .memory_wait(wait)
        .anticache(ac)
        .build()
        .unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl(&format!(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, pad VARCHAR(1000) NOT NULL) WITH (evictable = {evictable})"
    ))
    .unwrap();
    db
}

/// Loads `BATCHES` batches of `ROWS` rows of about 1 KB (160 MB against a 16 MiB budget),
/// each as one transaction over both partitions (what COPY FROM runs); the SQLSTATEs of
/// the batches that failed.
fn load(db: &Database) -> Vec<String> {
    let cols = ["id".to_string(), "pad".to_string()];
    let pad = "p".repeat(1000);
    let mut failed = Vec::new();
    for b in 0..BATCHES {
        let mut rows = Vec::with_capacity(2 * ROWS);
        for i in 0..ROWS {
            rows.push(Value::Int((b * ROWS + i) as i64));
            rows.push(Value::Text(pad.clone().into()));
        }
        if let Err(e) = common::block_on(db.submit(Request::rows("t", &cols, rows))) {
            failed.push(e.sqlstate().to_string());
        }
    }
    failed
}

fn count(db: &Database) -> i64 {
    let rows = db.execute_sql("SELECT count(*) FROM t", vec![]).unwrap().to_values();
    match rows[0][0] {
        Value::Int(n) => n,
        ref v => panic!("count is {v:?}"),
    }
}

#[test]
fn a_bulk_load_ten_times_the_budget_completes_paced() {
    // Without pacing the same stream meets the closed gate: this is what the test guards.
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Duration::ZERO, true);
    let failed = load(&db);
    assert!(
        !failed.is_empty() && failed.iter().all(|s| s == "53200"),
        "without pacing some batches are refused by the budget: {failed:?}"
    );
    drop(db);

    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Duration::from_secs(30), true);
    let failed = load(&db);
    assert!(failed.is_empty(), "paced, no batch is refused: {failed:?}");
    assert_eq!(count(&db), (ROWS * BATCHES) as i64);
    let st = db.stats_now().unwrap();
    assert!(st.write_waits > 0 && st.write_wait_nanos > 0, "{st:?}");
    assert!(st.evicted_now > 0, "{st:?}");
}

#[test]
fn with_nothing_evictable_writes_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Duration::from_secs(3600), false);
    let started = std::time::Instant::now();
    let failed = load(&db);
    assert!(!failed.is_empty() && failed.iter().all(|s| s == "53200"), "{failed:?}");
    // Each refused batch failed without waiting for the hour-long limit.
    assert!(started.elapsed() < Duration::from_secs(600));
    assert_eq!(db.stats_now().unwrap().evicted_now, 0);
}
