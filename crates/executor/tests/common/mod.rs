//! Helpers the executor's test files share.

use std::sync::Arc;

/// Runs a future to completion on this thread (the futures here are plain channel waits).
#[allow(dead_code)]
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// A small database that evicts early: two partitions, 16 MiB, every access tracked, and
/// the anti-cache in `dir` with 256 KiB blocks (add settings to the builder).
#[allow(dead_code)]
pub fn evicting(dir: &std::path::Path) -> permafrost_executor::ConfigBuilder {
    let mut ac = permafrost_executor::AntiCacheConfig::new(dir);
    ac.eviction_size = 256 << 10;
    permafrost_executor::Config::builder()
        .partitions(2)
        .memory_limit(16 << 20)
        .lru_sample_rate(1.0)
        .anticache(ac)
}

/// [`evicting`] with a command log and snapshots (on demand) in `dir`, the blocks in
/// `dir/blocks`.
#[allow(dead_code)]
pub fn durable_evicting(dir: &std::path::Path) -> permafrost_executor::Config {
    let mut log = permafrost_executor::LogConfig::new(dir.join("log"));
    log.mode = permafrost_executor::LogMode::Async;
    let mut snaps = permafrost_executor::SnapshotConfig::new(dir.join("snapshots"));
    snaps.interval = None;
    snaps.log_bytes = 0;
    evicting(&dir.join("blocks"))
        .command_log(log)
        .snapshots(snaps)
        .build()
        .unwrap()
}

/// Runs `sql`, waiting while the memory budget refuses it (eviction catches up).
#[allow(dead_code)]
pub fn retry(db: &permafrost_executor::Database, sql: &str, params: Vec<permafrost_types::Value>) {
    loop {
        match db.execute_sql(sql, params.clone()) {
            Ok(_) => return,
            Err(e) if e.is_retryable() => std::thread::sleep(std::time::Duration::from_millis(2)),
            Err(e) => panic!("{sql}: {e}"),
        }
    }
}

/// A database of [`evicting`] holding `t` (4,000 rows of about 1.5 KB: `id`, `grp` = id %
/// 10, `pad`), most of it evicted, and `small` (`k` 0..5, `grp` = 2k) in memory.
#[allow(dead_code)]
pub fn evicted_t_and_small(dir: &std::path::Path) -> permafrost_executor::Database {
    use permafrost_types::Value;
    let db = permafrost_executor::Database::open(evicting(&dir.join("blocks")).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, pad VARCHAR(2000) NOT NULL)")
        .unwrap();
    db.execute_ddl("CREATE TABLE small (k BIGINT PRIMARY KEY, grp BIGINT)")
        .unwrap();
    let pad = "s".repeat(1_500);
    for id in 0..4_000 {
        let params = vec![Value::Int(id), Value::Int(id % 10), Value::from(pad.as_str())];
        retry(&db, "INSERT INTO t VALUES ($1, $2, $3)", params);
    }
    for k in 0..5 {
        retry(
            &db,
            "INSERT INTO small VALUES ($1, $2)",
            vec![Value::Int(k), Value::Int(k * 2)],
        );
    }
    db.evict_now(64 << 20).unwrap();
    assert!(db.stats_now().unwrap().evicted_now > 2_000);
    db
}

/// Every row of a result given in parts: its first rows, then its rest (the evicted
/// tuples a scan read from their blocks, or what it spilled) read to the end.
#[allow(dead_code)]
pub fn all_values(mut rows: permafrost_executor::Rows) -> Vec<Vec<permafrost_types::Value>> {
    let mut out = rows.to_values();
    if let Some(mut rest) = rows.take_rest() {
        while let Some(more) = rest.next_rows().unwrap() {
            out.extend(more.to_values());
        }
    }
    out
}
