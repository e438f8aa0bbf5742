//! Recovery from the command log: a database reopened on its log and replayed holds
//! exactly what the first one held — rows, sequences, procedures, values a procedure took
//! from its clock and random numbers, evicted data included — and a torn record at the
//! end of the log is dropped.

mod common;

use std::path::Path;

use permafrost_executor::{AntiCacheConfig, Config, Database, LogConfig, LogMode, ProcedureDef, Request};
use permafrost_types::Value;

fn config(dir: &Path, anticache: bool, memory: u64) -> Config {
    config_with(dir, anticache, memory, LogMode::Sync)
}

fn config_with(dir: &Path, anticache: bool, memory: u64, mode: LogMode) -> Config {
    let mut log = LogConfig::new(dir.join("log"));
    log.mode = mode;
    let mut b = Config::builder().partitions(2).memory_limit(memory).command_log(log);
    if anticache {
        b = b
            .anticache(AntiCacheConfig::new(dir.join("blocks")))
            .lru_sample_rate(1.0);
    }
    b.build().unwrap()
}

/// The application's (Rust) procedures: registered by the first run, handed to
/// `recover` by the next ones.
fn procedures() -> Vec<ProcedureDef> {
    vec![
        ProcedureDef::new("Stamp")
            .partition_param(0)
            .statement("INSERT INTO notes (id, at, luck) VALUES (?, ?, ?)")
            .body(|ctx, p| {
                let now = Value::Timestamp(ctx.now());
                let luck = Value::Int((ctx.random_u64() >> 1) as i64);
                ctx.execute(0, &[p[0].clone(), now, luck])
            }),
    ]
}

fn dump(db: &Database, sql: &str) -> Vec<Vec<Value>> {
    db.execute_sql(sql, vec![]).unwrap().to_values()
}

const QUERIES: [&str; 4] = [
    "SELECT * FROM accounts ORDER BY id",
    "SELECT * FROM notes ORDER BY id",
    "SELECT * FROM tags ORDER BY id",
    "SELECT * FROM settings ORDER BY k",
];

#[test]
fn a_reopened_database_replays_to_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let before: Vec<Vec<Vec<Value>>> = {
        let db = Database::open(config(dir.path(), false, 256 << 20)).unwrap();
        db.execute_ddl(
            "CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, balance NUMERIC(12,2));
             CREATE TABLE notes (id BIGINT PRIMARY KEY, at TIMESTAMP, luck BIGINT);
             CREATE TABLE tags (id BIGSERIAL PRIMARY KEY, tag TEXT);
             CREATE TABLE settings (k TEXT PRIMARY KEY, v TEXT) WITH (partition_by = 'none')",
        )
        .unwrap();
        for p in procedures() {
            db.register(p).unwrap();
        }
        db.create_procedure(
            "CREATE PROCEDURE pay(src BIGINT, amount NUMERIC(12,2)) PARTITION ON src AS $$
               UPDATE accounts SET balance = balance - $2 WHERE id = $1 $$",
        )
        .unwrap();
        for i in 0..200i64 {
            db.execute_sql(
                "INSERT INTO accounts VALUES ($1, $2, 100.00)",
                vec![Value::Int(i), Value::Text(format!("owner {i}").into())],
            )
            .unwrap();
            db.call("Stamp", vec![Value::Int(i)]).unwrap();
            db.execute_sql(
                "INSERT INTO tags (tag) VALUES ($1)",
                vec![Value::Text(format!("t{i}").into())],
            )
            .unwrap();
        }
        for i in (0..200i64).step_by(3) {
            db.call("pay", vec![Value::Int(i), Value::Text("12.50".into())])
                .unwrap();
        }
        // Multi-partition changes, a replicated table, a failing statement (not logged)
        // and a schema change in the middle.
        db.execute_sql("UPDATE accounts SET balance = balance + 1 WHERE balance < 90", vec![])
            .unwrap();
        db.execute_sql("INSERT INTO settings VALUES ('mode', 'test'), ('x', 'y')", vec![])
            .unwrap();
        assert!(
            db.execute_sql("INSERT INTO accounts VALUES (1, 'dup', 0)", vec![])
                .is_err()
        );
        db.execute_ddl("CREATE INDEX accounts_owner ON accounts (owner)")
            .unwrap();
        db.execute_sql("DELETE FROM accounts WHERE id % 10 = 7", vec![])
            .unwrap();
        db.execute_sql("UPDATE settings SET v = 'done' WHERE k = 'mode'", vec![])
            .unwrap();
        db.execute_ddl("CREATE TABLE gone (a INT PRIMARY KEY); DROP TABLE gone")
            .unwrap();
        QUERIES.iter().map(|q| dump(&db, q)).collect()
    };

    let db = Database::open(config(dir.path(), false, 256 << 20)).unwrap();
    let report = db.recover(procedures(), &mut |_, _| {}).unwrap();
    // 600 inserts, 67 payments, 4 other changes, 8 schema changes; the failed insert is not there.
    assert_eq!(report.records, 679, "{report:?}");
    assert!(report.schema_changes >= 7, "{report:?}");
    assert_eq!(report.torn_tail, None);
    let after: Vec<Vec<Vec<Value>>> = QUERIES.iter().map(|q| dump(&db, q)).collect();
    assert_eq!(before, after);
    // The procedure defined in SQL came back; the sequence goes on where it was.
    db.call("pay", vec![Value::Int(1), Value::Text("1.00".into())]).unwrap();
    let ids = db
        .execute_sql("INSERT INTO tags (tag) VALUES ('next') RETURNING id", vec![])
        .unwrap()
        .to_values();
    let max_before = before[2]
        .iter()
        .filter_map(|r| match r[0] {
            Value::Int(i) => Some(i),
            _ => None,
        })
        .max()
        .unwrap();
    assert!(
        !before[2].iter().any(|r| r[0] == ids[0][0]),
        "the sequence handed out {:?} again (max before {max_before})",
        ids[0][0]
    );

    // And again: the log now holds the first run and the second.
    drop(db);
    let db = Database::open(config(dir.path(), false, 256 << 20)).unwrap();
    db.recover(procedures(), &mut |_, _| {}).unwrap();
    assert_eq!(dump(&db, "SELECT COUNT(*) FROM tags"), vec![vec![Value::Int(201)]]);
}

/// Sums over `big` by ranges of keys (a scan of the whole table would need it all in
/// memory at once).
fn checksum(db: &Database, rows: i64) -> Vec<Vec<Value>> {
    (0..rows)
        .step_by(2000)
        .flat_map(|lo| {
            db.execute_sql(
                "SELECT COUNT(*), SUM(n), SUM(id * n) FROM big WHERE id >= $1 AND id < $2",
                vec![Value::Int(lo), Value::Int(lo + 2000)],
            )
            .unwrap()
            .to_values()
        })
        .collect()
}

#[test]
fn evicted_data_is_replayed_within_the_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let memory = 16 << 20;
    let rows = 30_000i64; // about 30 MiB of tuples: most of them are evicted
    let pad = "x".repeat(900);
    // Async: this test is about replay under eviction, not commit latency (the log is
    // flushed when the database closes).
    let before = {
        let db = Database::open(config_with(dir.path(), true, memory, LogMode::Async)).unwrap();
        db.execute_ddl("CREATE TABLE big (id BIGINT PRIMARY KEY, n BIGINT NOT NULL, pad TEXT)")
            .unwrap();
        let retry = |sql: &str, params: Vec<Value>| loop {
            match db.execute_sql(sql, params.clone()) {
                Ok(_) => break,
                Err(e) if e.is_retryable() => std::thread::sleep(std::time::Duration::from_millis(2)),
                Err(e) => panic!("{sql}: {e}"),
            }
        };
        for i in 0..rows {
            retry(
                "INSERT INTO big VALUES ($1, 0, $2)",
                vec![Value::Int(i), Value::Text(pad.clone().into())],
            );
        }
        // Updates all over the key space reach evicted rows.
        for i in (0..rows).step_by(7) {
            retry(
                "UPDATE big SET n = n + $1 WHERE id = $2",
                vec![Value::Int(i % 13 + 1), Value::Int(i)],
            );
        }
        let evicted = db.stats_now().unwrap().evicted_now;
        assert!(evicted > 10_000, "the run evicted only {evicted} tuples");
        checksum(&db, rows)
    };
    let db = Database::open(config_with(dir.path(), true, memory, LogMode::Async)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(report.records, rows as u64 + (rows as u64).div_ceil(7) + 1);
    assert!(
        db.stats_now().unwrap().evicted_now > 10_000,
        "replay evicted as it went"
    );
    assert_eq!(checksum(&db, rows), before);
}

#[test]
fn a_torn_record_at_the_end_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(config(dir.path(), false, 64 << 20)).unwrap();
        db.execute_ddl("CREATE TABLE t (a BIGINT PRIMARY KEY)").unwrap();
        for i in 0..10i64 {
            db.execute_sql("INSERT INTO t VALUES ($1)", vec![Value::Int(i)])
                .unwrap();
        }
    }
    // A crash in the middle of a write: the last segment ends with part of a record.
    let last = std::fs::read_dir(dir.path().join("log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max()
        .unwrap();
    let mut bytes = std::fs::read(&last).unwrap();
    bytes.extend_from_slice(&[0x40, 0, 0, 0, 0xde, 0xad]);
    std::fs::write(&last, bytes).unwrap();

    let db = Database::open(config(dir.path(), false, 64 << 20)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(report.records, 11);
    assert!(report.torn_tail.is_some(), "{report:?}");
    assert_eq!(dump(&db, "SELECT COUNT(*) FROM t"), vec![vec![Value::Int(10)]]);
    // The log goes on after the good records.
    db.execute_sql("INSERT INTO t VALUES (10)", vec![]).unwrap();
    drop(db);
    let db = Database::open(config(dir.path(), false, 64 << 20)).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(dump(&db, "SELECT COUNT(*) FROM t"), vec![vec![Value::Int(11)]]);
}

/// Sync mode: however the partitions learn that records became durable (the writer's
/// message, or looking between the calls of a busy pass), no write is answered before its
/// record is: after k answered writes, at least k records are durable. A group commit
/// window of 5 ms leaves plenty of time to answer too early.
#[test]
fn sync_writes_are_answered_only_once_their_records_are_durable() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), false, 64 << 20);
    if let Some(log) = cfg.command_log.as_mut() {
        log.group_commit_window = std::time::Duration::from_millis(5);
    }
    let db = Database::open(cfg).unwrap();
    db.execute_sql("CREATE TABLE kv (k BIGINT PRIMARY KEY, v BIGINT)", vec![])
        .unwrap();
    let put = db
        .register(
            ProcedureDef::new("Put")
                .partition_param(0)
                .statement("INSERT INTO kv (k, v) VALUES (?, ?)")
                .body(|ctx, p| ctx.execute(0, p)),
        )
        .unwrap();
    let base = db.log_stats().unwrap().durable_lsn;
    let mut session = db.session();
    let mut answered = 0u64;
    let mut completions = Vec::new();
    let total = 6_000u64;
    let mut next = 0u64;
    while answered < total {
        // Keep a thousand calls in flight: passes of many messages.
        while next < total && next - answered < 1_000 {
            session
                .submit(&put, vec![Value::Int(next as i64), Value::Int(1)], next)
                .unwrap();
            next += 1;
        }
        completions.clear();
        session.wait(&mut completions).unwrap();
        for c in &completions {
            c.result.as_ref().unwrap();
        }
        answered += completions.len() as u64;
        let durable = db.log_stats().unwrap().durable_lsn - base;
        assert!(
            durable >= answered,
            "{answered} writes answered, {durable} records durable"
        );
    }
    let n = dump(&db, "SELECT count(*) FROM kv");
    assert_eq!(n, vec![vec![Value::Int(total as i64)]]);
}

#[test]
fn a_failed_log_fails_the_answers_that_wait_for_it_then_refuses_writes_and_answers_reads() {
    let dir = tempfile::tempdir().unwrap();
    let fs = permafrost_io::FaultyFs::new();
    let db = Database::open_with_fs(config(dir.path(), false, 64 << 20), std::sync::Arc::new(fs.clone())).unwrap();
    db.execute_sql("CREATE TABLE kv (k BIGINT PRIMARY KEY, v BIGINT)", vec![])
        .unwrap();
    let put = db
        .register(
            ProcedureDef::new("Put")
                .partition_param(0)
                .statement("INSERT INTO kv (k, v) VALUES (?, ?)")
                .body(|ctx, p| ctx.execute(0, p)),
        )
        .unwrap();
    let get = db
        .register(
            ProcedureDef::new("Get")
                .partition_param(0)
                .statement("SELECT v FROM kv WHERE k = ?")
                .body(|ctx, p| ctx.execute(0, p)),
        )
        .unwrap();
    let mut session = db.session();
    let mut run = |proc, params: Vec<Vec<Value>>| {
        for (i, p) in params.into_iter().enumerate() {
            session.submit(proc, p, i as u64).unwrap();
        }
        let mut all = Vec::new();
        let mut completions = Vec::new();
        while all.len() < 100 {
            completions.clear();
            session.wait(&mut completions).unwrap();
            all.extend(completions.drain(..).map(|c| c.result.is_ok()));
        }
        all
    };
    let puts = |from: i64| (from..from + 100).map(|k| vec![Value::Int(k), Value::Int(1)]).collect();
    assert!(run(&put, puts(0)).iter().all(|ok| *ok), "before the failure");
    // Every fdatasync fails from now on (EIO): the writes that wait for one fail, and
    // so does every later call that would have to wait for the log.
    fs.fail_syncs_after(0, libc::EIO);
    assert!(
        run(&put, puts(100)).iter().all(|ok| !ok),
        "writes acknowledged without a durable record"
    );
    assert!(fs.failed_syncs() >= 1);
    // From now on writes are refused at once, before they take effect; reads are answered
    // (what was acknowledged is there).
    let e = db
        .submit(Request::call(&put, vec![Value::Int(300), Value::Int(3)]))
        .wait()
        .unwrap_err();
    assert_eq!(e.sqlstate(), "58030", "{e}");
    assert!(e.to_string().contains("refuses writes until it is restarted"), "{e}");
    let e = db
        .execute_sql("CREATE TABLE other (k BIGINT PRIMARY KEY)", vec![])
        .unwrap_err();
    assert_eq!(e.sqlstate(), "58030", "{e}");
    let gets = (0..100).map(|k| vec![Value::Int(k)]).collect();
    assert!(
        run(&get, gets).iter().all(|ok| *ok),
        "reads are answered after the log failed"
    );
    for k in [0, 99] {
        let r = db
            .submit(Request::call(&get, vec![Value::Int(k)]))
            .wait()
            .unwrap()
            .to_values();
        assert_eq!(r, vec![vec![Value::Int(1)]]);
    }
    let refused = db
        .submit(Request::call(&get, vec![Value::Int(300)]))
        .wait()
        .unwrap()
        .to_values();
    assert!(refused.is_empty(), "a refused write took no effect: {refused:?}");
}

#[test]
fn a_blocks_schema_changes_are_one_record_and_replay_together() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(config(dir.path(), false, 256 << 20)).unwrap();
        let block = [
            "CREATE TABLE a (id BIGINT PRIMARY KEY, v TEXT)".to_string(),
            "CREATE INDEX a_v ON a (v)".to_string(),
            "CREATE TABLE b (id BIGINT PRIMARY KEY)".to_string(),
        ];
        db.check_ddl(&block).unwrap();
        db.execute_ddl_atomic(&block).unwrap();
        db.execute_sql("INSERT INTO a VALUES (1, 'x')", vec![]).unwrap();
        // A change that cannot apply applies nothing of its block.
        let bad = [
            "CREATE TABLE c (id BIGINT PRIMARY KEY)".to_string(),
            "CREATE TABLE a (id BIGINT PRIMARY KEY)".to_string(),
        ];
        assert!(db.check_ddl(&bad).is_err());
        assert!(db.execute_ddl_atomic(&bad).is_err());
        assert!(db.execute_sql("SELECT * FROM c", vec![]).is_err());
    }
    let db = Database::open(config(dir.path(), false, 256 << 20)).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    // The block's three changes are one record; then the insert.
    assert_eq!(report.records, 2, "{report:?}");
    assert_eq!(
        dump(&db, "SELECT v FROM a WHERE v = 'x'"),
        vec![vec![Value::Text("x".into())]]
    );
    assert!(dump(&db, "SELECT * FROM b").is_empty());
    assert!(db.execute_sql("SELECT * FROM c", vec![]).is_err());
}

#[test]
fn renames_and_defaults_replay_with_the_rows_written_under_them() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(config(dir.path(), false, 256 << 20)).unwrap();
        db.execute_ddl("CREATE TABLE items (id BIGINT PRIMARY KEY, qty INT DEFAULT 1, note TEXT)")
            .unwrap();
        db.execute_sql("INSERT INTO items (id) VALUES (1)", vec![]).unwrap();
        db.execute_ddl("ALTER TABLE items RENAME TO stock").unwrap();
        db.execute_ddl("ALTER TABLE stock RENAME COLUMN qty TO quantity, ALTER COLUMN quantity SET DEFAULT 5")
            .unwrap();
        db.execute_sql("INSERT INTO stock (id) VALUES (2)", vec![]).unwrap();
        db.execute_ddl("ALTER TABLE stock ALTER COLUMN quantity DROP DEFAULT, ALTER note SET DEFAULT 'n/a'")
            .unwrap();
        db.execute_sql("INSERT INTO stock (id) VALUES (3)", vec![]).unwrap();
        let e = db.execute_ddl("ALTER TABLE stock RENAME COLUMN nope TO x").unwrap_err();
        assert_eq!(e.sqlstate(), "42703", "{e}");
    }
    let db = Database::open(config(dir.path(), false, 256 << 20)).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert!(db.execute_sql("SELECT * FROM items", vec![]).is_err());
    assert_eq!(
        dump(&db, "SELECT id, quantity, note FROM stock ORDER BY id"),
        vec![
            vec![Value::Int(1), Value::Int(1), Value::Null],
            vec![Value::Int(2), Value::Int(5), Value::Null],
            vec![Value::Int(3), Value::Null, Value::Text("n/a".into())],
        ]
    );
    // And the definition goes on as it was left.
    db.execute_sql("INSERT INTO stock (id) VALUES (4)", vec![]).unwrap();
    assert_eq!(
        dump(&db, "SELECT quantity, note FROM stock WHERE id = 4"),
        vec![vec![Value::Null, Value::Text("n/a".into())]]
    );
}

/// A logged database of `memory` bytes whose statements move off their partitions after
/// a millisecond.
fn sliced(dir: &Path, memory: u64) -> Config {
    let mut c = config(dir, false, memory);
    c.read_slice = Some(std::time::Duration::from_millis(1));
    c
}

/// Creates `src` (2,000 rows in 40 groups of `g`) and the table `dst` defines.
fn with_src(db: &Database, dst: &str) {
    db.execute_ddl(&format!("CREATE TABLE src (id BIGINT PRIMARY KEY, g BIGINT); {dst}"))
        .unwrap();
    let values: Vec<String> = (0..2000).map(|i| format!("({i}, {})", i % 40)).collect();
    db.execute_sql(&format!("INSERT INTO src VALUES {}", values.join(", ")), vec![])
        .unwrap();
}

/// Writes that run past their read slice finish off their partitions and are applied
/// afterwards (forked.rs); the log records them as the statements they are, with the
/// timestamp they ran with, so a replay makes the same rows (`now()` included). An insert
/// that draws sequence values stays on its partitions (a forked image cannot draw from
/// the database's counters), and its record keeps the values.
#[test]
fn moved_writes_replay_to_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let summary = "SELECT count(*), sum(a), min(at), max(at), max(id), sum(id) FROM dst";
    let before = {
        let db = Database::open(sliced(dir.path(), 256 << 20)).unwrap();
        with_src(
            &db,
            "CREATE TABLE dst (id BIGSERIAL PRIMARY KEY, a BIGINT, at TIMESTAMP)",
        );
        let n = db
            .execute_sql(
                "INSERT INTO dst (a, at) SELECT x.id * 10000 + y.id, now() FROM src x JOIN src y ON x.g = y.g",
                vec![],
            )
            .unwrap()
            .affected;
        assert_eq!(n, 100_000);
        db.execute_sql("UPDATE dst SET a = a + 1 WHERE a % 2 = 0", vec![])
            .unwrap();
        db.execute_sql("DELETE FROM dst WHERE a % 3 = 0", vec![]).unwrap();
        assert!(db.stats().writes_moved >= 2, "{:?}", db.stats());
        dump(&db, summary)
    };
    let db = Database::open(sliced(dir.path(), 256 << 20)).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(dump(&db, summary), before);
}

/// A moved write whose image runs out of the memory it may use (`work_mem` beyond what
/// the image maps) runs again in place and does what it would have done there; the log
/// and replay are as for any statement.
#[test]
fn a_moved_write_that_outgrows_its_image_runs_again_in_place() {
    let dir = tempfile::tempdir().unwrap();
    // 512 MiB: a statement may hold 128 MiB, so the image may map 192 MiB more.
    let summary = "SELECT count(*), sum(a), min(length(t)), max(length(t)) FROM dst";
    let before = {
        let db = Database::open(sliced(dir.path(), 512 << 20)).unwrap();
        // Each row's default text is 2 KB: 100,000 rows are 200 MB of new tuples, more
        // than the image may map; their source rows are small.
        with_src(
            &db,
            &format!(
                "CREATE TABLE dst (id BIGINT PRIMARY KEY, a BIGINT, t TEXT DEFAULT '{}')",
                "z".repeat(2000)
            ),
        );
        let n = db
            .execute_sql(
                "INSERT INTO dst (id, a) SELECT x.id * 10000 + y.id, x.g FROM src x JOIN src y ON x.g = y.g",
                vec![],
            )
            .unwrap()
            .affected;
        assert_eq!(n, 100_000);
        let s = db.stats();
        assert!(s.writes_moved >= 1 && s.moved_writes_resources >= 1, "{s:?}");
        dump(&db, summary)
    };
    assert_eq!(before[0][0], Value::Int(100_000));
    let db = Database::open(sliced(dir.path(), 512 << 20)).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(dump(&db, summary), before);
}

/// `ALTER TABLE ... ADD PRIMARY KEY` on a table replicated because it had no key
/// partitions it by the key (each partition keeps only its rows: the tuples held over all
/// partitions fall from two copies of each row to one), a table replicated by choice stays
/// so, a NULL or repeated key refuses the change and leaves the table as it was, and
/// recovery, from the log alone or from a snapshot and the log, reaches the same rows.
#[test]
fn a_primary_key_added_later_partitions_the_table_and_recovery_agrees() {
    let hot = |db: &Database, name: &str| {
        let t = db.table_stats().unwrap().into_iter().find(|t| t.name == name).unwrap();
        (t.replicated, t.hot_tuples)
    };
    let config = |dir: &Path| {
        let mut snaps = permafrost_executor::SnapshotConfig::new(dir.join("snapshots"));
        // Only on demand.
        snaps.interval = None;
        snaps.log_bytes = 0;
        Config::builder()
            .partitions(2)
            .command_log(LogConfig::new(dir.join("log")))
            .snapshots(snaps)
            .build()
            .unwrap()
    };
    for snapshot in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let before = {
            let db = Database::open(config(dir.path())).unwrap();
            db.execute_ddl(
                "CREATE TABLE t (id INT NOT NULL, v INT);
                 CREATE TABLE r (id INT, v INT) WITH (partition_by = 'none');
                 CREATE TABLE d (id INT, v INT)",
            )
            .unwrap();
            for id in 0..100i64 {
                for table in ["t", "r"] {
                    db.execute_sql(
                        &format!("INSERT INTO {table} VALUES ($1, $2)"),
                        vec![Value::Int(id), Value::Int(id * 3)],
                    )
                    .unwrap();
                }
            }
            db.execute_sql("INSERT INTO d VALUES (1, 1), (1, 2), (NULL, 3)", vec![])
                .unwrap();
            assert_eq!(hot(&db, "t"), (true, 200));
            db.execute_ddl("ALTER TABLE t ADD PRIMARY KEY (id)").unwrap();
            assert_eq!(hot(&db, "t"), (false, 100), "one copy of each row, at its partition");
            db.execute_ddl("ALTER TABLE r ADD CONSTRAINT r_key PRIMARY KEY (id)")
                .unwrap();
            assert_eq!(hot(&db, "r"), (true, 200), "replicated by choice: it stays so");
            let e = db.execute_ddl("ALTER TABLE d ADD PRIMARY KEY (id)").unwrap_err();
            assert_eq!(e.sqlstate(), "23502", "{e}");
            db.execute_sql("DELETE FROM d WHERE id IS NULL", vec![]).unwrap();
            let e = db.execute_ddl("ALTER TABLE d ADD PRIMARY KEY (id)").unwrap_err();
            assert_eq!(e.sqlstate(), "23505", "{e}");
            assert_eq!(hot(&db, "d"), (true, 4), "a refused key changes nothing");
            let e = db.execute_ddl("ALTER TABLE t ADD PRIMARY KEY (v)").unwrap_err();
            assert_eq!(e.sqlstate(), "42P16", "{e}");
            assert!(db.execute_ddl("ALTER TABLE nope ADD PRIMARY KEY (id)").is_err());
            db.execute_ddl("ALTER TABLE IF EXISTS nope ADD PRIMARY KEY (id)")
                .unwrap();
            // The key's index answers, and the table takes rows at their partitions.
            let e = db.execute_sql("INSERT INTO t VALUES (5, 0)", vec![]).unwrap_err();
            assert_eq!(e.sqlstate(), "23505", "{e}");
            if snapshot {
                db.snapshot().unwrap();
            }
            for id in 100..120i64 {
                db.execute_sql("INSERT INTO t VALUES ($1, 1)", vec![Value::Int(id)])
                    .unwrap();
            }
            assert_eq!(hot(&db, "t"), (false, 120));
            ["t", "r", "d"].map(|t| dump(&db, &format!("SELECT * FROM {t} ORDER BY id, v")))
        };
        let db = Database::open(config(dir.path())).unwrap();
        db.recover(vec![], &mut |_, _| {}).unwrap();
        let after = ["t", "r", "d"].map(|t| dump(&db, &format!("SELECT * FROM {t} ORDER BY id, v")));
        assert_eq!(before, after, "snapshot: {snapshot}");
        assert_eq!(hot(&db, "t"), (false, 120), "snapshot: {snapshot}");
        assert_eq!(hot(&db, "r"), (true, 200), "snapshot: {snapshot}");
    }
}

/// A statement that wrote, answered once its record is durable (sync mode), says so on its
/// stop flag: the server then arms no cancel watch while it waits, since stopping it would
/// change nothing. A read answered at once does not.
#[test]
fn a_write_waiting_for_its_group_commit_is_marked_on_its_stop_flag() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path(), false, 64 << 20)).unwrap();
    db.execute_ddl("CREATE TABLE kv (k BIGINT PRIMARY KEY, v BIGINT)")
        .unwrap();
    let write = db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "INSERT INTO kv VALUES (1, 10)").unwrap());
    let stop = permafrost_executor::StopFlag::new();
    common::block_on(db.submit(Request::statement(&write, vec![]).stop(stop.clone()).streamed())).unwrap();
    assert!(stop.is_awaiting_log());
    assert!(!stop.is_set());

    let read = db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "SELECT v FROM kv WHERE k = 1").unwrap());
    let stop = permafrost_executor::StopFlag::new();
    let rows = common::block_on(db.submit(Request::statement(&read, vec![]).stop(stop.clone()).streamed())).unwrap();
    assert_eq!(rows.to_values(), vec![vec![Value::Int(10)]]);
    assert!(!stop.is_awaiting_log());
}
