//! Constraints over data larger than memory and across a restart. CHECK (exec/check.rs):
//! an UPDATE of evicted rows checks them once they are back, and a check added over a table
//! with evicted rows is refused rather than left unchecked, and so is an ALTER TABLE that
//! rewrites rows. FOREIGN KEYs (exec/foreign.rs): a
//! referenced key found among evicted rows is found without bringing them back; ON DELETE
//! CASCADE reaches evicted referencing rows (fetched, the statement run again) and deletes
//! them; a key still referenced by an evicted row is refused; the keys and their
//! enforcement come back after a restart from the command log, a block whose deferred key
//! was satisfied before its COMMIT replays, and one that was not changed nothing.

mod common;

use common::retry as insert;
use permafrost_executor::{Config, Database};
use permafrost_types::Value;

const ROWS: i64 = 4_000;

/// 16 MiB with the anti-cache, a command log and snapshots (on demand).
fn config(dir: &std::path::Path) -> Config {
    common::durable_evicting(dir)
}

fn count(db: &Database, sql: &str) -> i64 {
    db.execute_sql(sql, vec![]).unwrap().row(0).get_i64(0).unwrap()
}

fn evicted(db: &Database) -> u64 {
    db.stats_now().unwrap().evicted_now
}

#[test]
fn keys_are_checked_and_acted_on_over_evicted_rows_and_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(config(dir.path())).unwrap();
        db.execute_ddl("CREATE TABLE parent (id BIGINT PRIMARY KEY, pad VARCHAR(2000) NOT NULL)")
            .unwrap();
        db.execute_ddl(
            "CREATE TABLE child (id BIGINT PRIMARY KEY, parent_id BIGINT REFERENCES parent ON DELETE CASCADE, \
             pad VARCHAR(2000) NOT NULL)",
        )
        .unwrap();
        db.execute_ddl("CREATE INDEX child_parent ON child (parent_id)")
            .unwrap();
        let pad = "p".repeat(1_500);
        for id in 0..ROWS {
            insert(
                &db,
                "INSERT INTO parent VALUES ($1, $2)",
                vec![Value::Int(id), Value::from(pad.as_str())],
            );
        }
        for id in 0..ROWS {
            let params = vec![Value::Int(id), Value::Int(id % 100), Value::from(pad.as_str())];
            insert(&db, "INSERT INTO child VALUES ($1, $2, $3)", params);
        }
        db.evict_now(64 << 20).unwrap();
        assert!(evicted(&db) > ROWS as u64, "only {} rows evicted", evicted(&db));

        // A key of an evicted parent row is found through the index, nothing fetched.
        let merged = db.stats_now().unwrap().unevicted_tuples;
        insert(
            &db,
            "INSERT INTO child VALUES ($1, $2, $3)",
            vec![Value::Int(ROWS), Value::Int(3_000), Value::from("x")],
        );
        let e = db
            .execute_sql("INSERT INTO child VALUES (-1, $1, 'x')", vec![Value::Int(ROWS * 10)])
            .unwrap_err();
        assert_eq!(e.sqlstate(), "23503", "{e}");
        assert_eq!(
            db.stats_now().unwrap().unevicted_tuples,
            merged,
            "the checks fetched nothing"
        );

        // ON DELETE CASCADE reaches the evicted rows that reference the key.
        assert_eq!(count(&db, "SELECT count(*) FROM child WHERE parent_id = 7"), 40);
        db.execute_sql("DELETE FROM parent WHERE id = 7", vec![]).unwrap();
        assert_eq!(count(&db, "SELECT count(*) FROM child WHERE parent_id = 7"), 0);
        assert_eq!(count(&db, "SELECT count(*) FROM child"), ROWS + 1 - 40);

        // A key still referenced by an evicted row is refused (RESTRICT keeps its rows).
        db.execute_ddl(
            "CREATE TABLE pin (id BIGINT PRIMARY KEY, parent_id BIGINT REFERENCES parent ON DELETE RESTRICT)",
        )
        .unwrap();
        db.execute_sql("INSERT INTO pin VALUES (1, 8)", vec![]).unwrap();
        let e = db.execute_sql("DELETE FROM parent WHERE id = 8", vec![]).unwrap_err();
        assert_eq!(e.sqlstate(), "23503", "{e}");
        assert_eq!(count(&db, "SELECT count(*) FROM child WHERE parent_id = 8"), 40);
    }
    // After a restart: the rows and the keys' enforcement.
    let db = Database::open(config(dir.path())).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM child"), ROWS + 1 - 40);
    assert_eq!(count(&db, "SELECT count(*) FROM parent WHERE id = 7"), 0);
    let e = db
        .execute_sql("INSERT INTO child VALUES (-2, 7, 'x')", vec![])
        .unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
    let e = db.execute_sql("DELETE FROM parent WHERE id = 8", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
    let e = db.execute_ddl("DROP TABLE parent").unwrap_err();
    assert_eq!(e.sqlstate(), "2BP01", "{e}");
}

#[test]
fn a_deferred_key_is_checked_when_its_transaction_ends() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.execute_ddl("CREATE TABLE a (id BIGINT PRIMARY KEY)").unwrap();
    db.execute_ddl("CREATE TABLE b (id BIGINT PRIMARY KEY, a_id BIGINT REFERENCES a DEFERRABLE INITIALLY DEFERRED)")
        .unwrap();
    // A statement alone is its own transaction: checked at its end.
    let e = db.execute_sql("INSERT INTO b VALUES (1, 1)", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
    assert_eq!(count(&db, "SELECT count(*) FROM b"), 0);
    // One transaction of two statements, the referencing row first: fine.
    let (_, r) = common::block_on(db.run_block(
        vec![
            (
                db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "INSERT INTO b VALUES (1, 1)").unwrap()),
                vec![],
            ),
            (
                db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "INSERT INTO a VALUES (1)").unwrap()),
                vec![],
            ),
        ],
        0,
        permafrost_executor::StopFlag::new(),
    ));
    r.unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM b"), 1);
    // The referenced row removed and given back in one transaction: fine; removed only:
    // refused at the end, nothing applied.
    let (_, r) = common::block_on(db.run_block(
        vec![
            (
                db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "DELETE FROM a WHERE id = 1").unwrap()),
                vec![],
            ),
            (
                db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "INSERT INTO a VALUES (1)").unwrap()),
                vec![],
            ),
        ],
        0,
        permafrost_executor::StopFlag::new(),
    ));
    r.unwrap();
    let e = db.execute_sql("DELETE FROM a WHERE id = 1", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
    assert_eq!(count(&db, "SELECT count(*) FROM a"), 1);
}

#[test]
fn checks_hold_over_evicted_rows_and_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(config(dir.path())).unwrap();
        db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT CHECK (n >= 0), pad VARCHAR(2000) NOT NULL)")
            .unwrap();
        let pad = "p".repeat(1_500);
        for id in 0..ROWS {
            insert(
                &db,
                "INSERT INTO t VALUES ($1, $2, $3)",
                vec![Value::Int(id), Value::Int(id % 10), Value::from(pad.as_str())],
            );
        }
        db.evict_now(64 << 20).unwrap();
        assert!(evicted(&db) > ROWS as u64 / 2, "only {} rows evicted", evicted(&db));
        // Rows brought back by the pre-pass are checked as they are changed.
        let e = db.execute_sql("UPDATE t SET n = n - 5", vec![]).unwrap_err();
        assert_eq!(e.sqlstate(), "23514", "{e}");
        assert_eq!(count(&db, "SELECT count(*) FROM t WHERE n < 0"), 0);
        db.execute_sql("UPDATE t SET n = n + 1 WHERE id < 100", vec![]).unwrap();
        // A check over rows partly on disk is refused, not left unchecked.
        db.evict_now(64 << 20).unwrap();
        let e = db
            .execute_ddl("ALTER TABLE t ADD CONSTRAINT small CHECK (n < 100)")
            .unwrap_err();
        assert_eq!(e.sqlstate(), "0A000", "{e}");
        // So is a change that rewrites its rows; one of the definition alone is not.
        let e = db.execute_ddl("ALTER TABLE t ADD COLUMN x INT").unwrap_err();
        assert_eq!(e.sqlstate(), "0A000", "{e}");
        db.execute_ddl("ALTER TABLE t ALTER COLUMN pad DROP NOT NULL").unwrap();
    }
    let db = Database::open(config(dir.path())).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM t WHERE n = 10"), 10);
    let e = db
        .execute_sql("INSERT INTO t VALUES (-1, -1, 'x')", vec![])
        .unwrap_err();
    assert_eq!(e.sqlstate(), "23514", "{e}");
}

#[test]
fn a_single_partition_procedure_may_not_write_a_table_with_foreign_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.execute_ddl("CREATE TABLE a (id BIGINT PRIMARY KEY)").unwrap();
    db.execute_ddl("CREATE TABLE b (id BIGINT PRIMARY KEY, a_id BIGINT REFERENCES a)")
        .unwrap();
    db.execute_sql("INSERT INTO a VALUES (1), (2), (3)", vec![]).unwrap();
    for (name, sql) in [
        ("PutB", "INSERT INTO b VALUES (?, 1)"),
        ("DropA", "DELETE FROM a WHERE id = ?"),
    ] {
        db.register(
            permafrost_executor::ProcedureDef::new(name)
                .partition_param(0)
                .statement(sql)
                .body(|c, p| c.execute(0, p)),
        )
        .unwrap();
    }
    // Its keys' rows may be at any partition: refused rather than left unchecked.
    let e = db.call("PutB", vec![Value::Int(5)]).unwrap_err();
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    let e = db.call("DropA", vec![Value::Int(1)]).unwrap_err();
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    // An ad hoc statement runs over every partition and is checked.
    db.execute_sql("INSERT INTO b VALUES (5, 1)", vec![]).unwrap();
    let e = db.execute_sql("DELETE FROM a WHERE id = 1", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
}
