//! `permafrost serve` killed with SIGKILL and started again on its data directory comes
//! back with every acknowledged change, evicted data included (the command log in sync
//! mode, replayed at start; with a snapshot taken by CHECKPOINT, the snapshot and the log
//! after it).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Server, connect, free_port};
use tokio_postgres::Client;

fn start_with(dir: &Path, port: u16, extra: &[&str]) -> Server {
    let mut args = vec!["--memory-limit", "16MiB", "--command-log", "sync"];
    args.extend_from_slice(extra);
    Server::start(dir, port, &args)
}

async fn checksum(c: &Client) -> (i64, i64) {
    // By ranges: the table is larger than the memory budget.
    let (mut n, mut sum) = (0i64, 0i64);
    for lo in (0..20_000i64).step_by(1000) {
        let r = loop {
            match c
                .query_one(
                    "SELECT COUNT(*), COALESCE(SUM(id * v), 0)::bigint FROM t WHERE id >= $1 AND id < $2",
                    &[&lo, &(lo + 1000)],
                )
                .await
            {
                Ok(r) => break r,
                // The memory budget while eviction catches up, or too many restarts for
                // evicted data: retried, as a client would.
                Err(e) if e.code().is_some_and(|s| s.code() == "53200" || s.code() == "40001") => {
                    tokio::time::sleep(Duration::from_millis(5)).await
                }
                Err(e) => panic!("checksum {lo}..: {e}"),
            }
        };
        n += r.get::<_, i64>(0);
        sum += r.get::<_, i64>(1);
    }
    (n, sum)
}

#[tokio::test(flavor = "current_thread")]
async fn a_killed_server_restarts_with_every_acknowledged_change() {
    killed_and_restarted(false).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_killed_server_restarts_from_its_snapshot_and_the_log_after_it() {
    killed_and_restarted(true).await;
}

async fn killed_and_restarted(checkpoint: bool) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra: &[&str] = if checkpoint {
        &["--snapshot-interval", "off"]
    } else {
        &[]
    };
    let before = {
        let _server = start_with(dir.path(), port, extra);
        let c = connect(port).await;
        c.batch_execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL, pad TEXT)")
            .await
            .unwrap();
        let pad = "p".repeat(1000);
        for lo in (0..20_000i64).step_by(100) {
            let rows: Vec<String> = (lo..lo + 100).map(|i| format!("({i}, {}, '{pad}')", i % 7)).collect();
            let sql = format!("INSERT INTO t VALUES {}", rows.join(", "));
            loop {
                match c.batch_execute(&sql).await {
                    Ok(_) => break,
                    // The memory budget while eviction catches up.
                    Err(e) if e.code().is_some_and(|s| s.code() == "53200") => {
                        tokio::time::sleep(Duration::from_millis(5)).await
                    }
                    Err(e) => panic!("insert {lo}..: {e}"),
                }
            }
        }
        if checkpoint {
            c.batch_execute("CHECKPOINT").await.unwrap();
            let snaps: Vec<_> = std::fs::read_dir(dir.path().join("snapshots"))
                .unwrap()
                .flatten()
                .collect();
            assert_eq!(snaps.len(), 1, "one snapshot file");
        }
        // Updates by ranges of keys (one statement over the whole table would need it all
        // in memory at once), reaching evicted rows.
        for lo in (0..20_000i64).step_by(1000) {
            loop {
                let r = c
                    .execute(
                        "UPDATE t SET v = v + 100 WHERE id >= $1 AND id < $2 AND id % 97 = 3",
                        &[&lo, &(lo + 1000)],
                    )
                    .await;
                match r {
                    Ok(_) => break,
                    // The memory budget while eviction catches up (nothing was changed).
                    Err(e) if e.code().is_some_and(|s| s.code() == "53200") => {
                        tokio::time::sleep(Duration::from_millis(5)).await
                    }
                    Err(e) => panic!("update {lo}..: {e}"),
                }
            }
        }
        let sum = checksum(&c).await;
        let cold: f64 = c
            .query("SELECT * FROM permafrost_stats", &[])
            .await
            .unwrap()
            .iter()
            .find(|r| r.get::<_, String>(0) == "permafrost_cold_tuples")
            .map(|r| r.get(2))
            .unwrap();
        assert!(cold > 5000.0, "only {cold} tuples were evicted");
        sum
        // The server is killed here (SIGKILL: no shutdown of any kind).
    };
    let _server = start_with(dir.path(), port, extra);
    let c = connect(port).await;
    assert_eq!(checksum(&c).await, before);
    assert_eq!(before.0, 20_000);
}

/// Waits up to `secs` for the process to end; its exit code.
fn wait_exit(s: &mut Server, secs: u64) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if let Some(st) = s.0.try_wait().unwrap() {
            return st.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[tokio::test(flavor = "current_thread")]
async fn one_server_per_data_directory_and_a_removed_directory_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    let mut first = start_with(&data, port, &[]);
    let c = connect(port).await;
    c.simple_query("CREATE TABLE t (id BIGINT PRIMARY KEY)").await.unwrap();
    // A second server on the same directory stops at start and says why.
    let out = Command::new(env!("CARGO_BIN_EXE_permafrost"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--metrics-listen",
            "off",
        ])
        .arg("--data-dir")
        .arg(&data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("in use by another permafrost server"), "{err}");
    assert!(err.contains(&format!("process {}", first.0.id())), "{err}");
    assert!(first.0.try_wait().unwrap().is_none(), "the first server runs on");
    c.simple_query("INSERT INTO t VALUES (1)").await.unwrap();
    // The directory removed under the running server: it stops instead of writing into
    // whatever gets that name next.
    std::fs::remove_dir_all(&data).unwrap();
    assert_eq!(wait_exit(&mut first, 10), Some(70));
}

/// A benchmark's data directory must not hold an earlier run's files: the second run on
/// the same directory is refused instead of appending to the first one's command log.
#[test]
fn a_benchmark_refuses_a_data_directory_an_earlier_run_left() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("bench");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_permafrost"))
            .args([
                "bench",
                "ycsb",
                "--records",
                "500",
                "--warmup",
                "0",
                "--duration",
                "0.2",
            ])
            .args(["--partitions", "2", "--command-log", "sync", "--quiet", "--data-dir"])
            .arg(&d)
            .output()
            .unwrap()
    };
    let first = run();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    assert!(d.join("anticache/commandlog").is_dir());
    let second = run();
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("holds the files of an earlier run"), "{err}");
}
