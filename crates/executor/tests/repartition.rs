//! A table's partitioning changed after its rows arrived (`ALTER TABLE ... SET
//! (partition_by = ..., replicated = ...)`, and a choice refined by a later CREATE TABLE):
//! every row moves to the partition of its new key, or to every partition, evicted rows
//! too (read from their blocks, whose space is freed), and the move is replayed after a
//! restart.

mod common;

use permafrost_executor::{Config, Database};
use permafrost_storage::partitioning::partition_of;
use permafrost_types::{DataType, Value};

fn count(db: &Database, sql: &str) -> i64 {
    db.execute_sql(sql, vec![]).unwrap().row(0).get_i64(0).unwrap()
}

/// The name of the partition column of `table`, or "replicated".
fn partitioned_by(db: &Database, table: &str) -> String {
    let catalog = db.catalog();
    let t = catalog.table(table).unwrap_or_else(|| panic!("no table {table}"));
    t.partition_column
        .map_or("replicated".to_string(), |c| t.columns[c].name.clone())
}

/// Each partition's values of column `c` of `table`'s rows in memory, and its count of
/// evicted tuples of the table.
fn at_partitions(db: &Database, table: &'static str, c: usize) -> Vec<(Vec<i64>, usize)> {
    (0..2)
        .map(|p| {
            db.with_partition(p, move |s| {
                let t = s.tables().find(|t| t.schema().name == table).unwrap();
                let mut values = Vec::new();
                for slot in 0..t.heap().high_water() {
                    if t.is_visible(slot) {
                        values.push(t.value(slot, c).to_owned().as_i64().unwrap());
                    }
                }
                values.sort();
                (values, t.evicted_tuples())
            })
            .unwrap()
        })
        .collect()
}

#[test]
fn rows_in_memory_move_to_their_new_partitions() {
    let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE item (i_id INT PRIMARY KEY, i_price INT)")
        .unwrap();
    db.execute_sql(
        "INSERT INTO item SELECT g, g * 10 FROM generate_series(1, 100) AS g",
        vec![],
    )
    .unwrap();
    assert_eq!(partitioned_by(&db, "item"), "i_id");
    // STOCK's key holds i_id after its warehouse: created after ITEM, it makes ITEM the
    // dimension it would have been, replicated, each partition holding every row.
    db.execute_ddl("CREATE TABLE stock (s_w_id INT, s_i_id INT, s_qty INT, PRIMARY KEY (s_w_id, s_i_id))")
        .unwrap();
    assert_eq!(partitioned_by(&db, "item"), "replicated");
    let all: Vec<i64> = (1..=100).collect();
    for (values, _) in at_partitions(&db, "item", 0) {
        assert_eq!(values, all);
    }
    assert_eq!(count(&db, "SELECT sum(i_price) FROM item"), 50_500);

    // Back to partitioned by its key, as the user says (and so declared: a later table
    // does not change it again).
    db.execute_ddl("ALTER TABLE item SET (partition_by = 'i_id')").unwrap();
    assert_eq!(partitioned_by(&db, "item"), "i_id");
    let parts = at_partitions(&db, "item", 0);
    assert_eq!(parts[0].0.len() + parts[1].0.len(), 100);
    for (p, (values, _)) in parts.iter().enumerate() {
        for v in values {
            assert_eq!(partition_of(Value::Int(*v).as_ref(), &DataType::Integer, 2), p as u32);
        }
    }
    db.execute_ddl("CREATE TABLE stock2 (s_w_id INT, s_i_id INT, PRIMARY KEY (s_w_id, s_i_id))")
        .unwrap();
    assert_eq!(partitioned_by(&db, "item"), "i_id");

    // By a column outside the key: the key stays unique across partitions.
    db.execute_ddl("ALTER TABLE item SET (partition_by = 'i_price')")
        .unwrap();
    for (p, (values, _)) in at_partitions(&db, "item", 1).iter().enumerate() {
        for v in values {
            assert_eq!(partition_of(Value::Int(*v).as_ref(), &DataType::Integer, 2), p as u32);
        }
    }
    let e = db.execute_sql("INSERT INTO item VALUES (7, 3)", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "23505", "{e}");
    assert_eq!(count(&db, "SELECT i_price FROM item WHERE i_id = 42"), 420);
    // Replicated again, the short way, and partitioned by its key with replicated = false.
    db.execute_ddl("ALTER TABLE item SET (replicated = true)").unwrap();
    assert_eq!(partitioned_by(&db, "item"), "replicated");
    db.execute_ddl("ALTER TABLE item SET (replicated = false)").unwrap();
    assert_eq!(partitioned_by(&db, "item"), "i_id");
    assert_eq!(count(&db, "SELECT count(*) FROM item"), 100);

    // What is not done is refused, naming what to do.
    for (sql, state) in [
        ("ALTER TABLE item SET (evictable = false)", "0A000"),
        ("ALTER TABLE item SET (partition_by = 'nope')", "42P16"),
        (
            "ALTER TABLE item SET (partition_by = 'i_id', replicated = true)",
            "42P16",
        ),
        ("ALTER TABLE item SET (colour = 'red')", "42P16"),
    ] {
        let e = db.execute_ddl(sql).unwrap_err();
        assert_eq!(e.sqlstate(), state, "{sql}: {e}");
    }
    assert_eq!(partitioned_by(&db, "item"), "i_id");
}

const ROWS: i64 = 4_000;

#[test]
fn evicted_rows_move_from_their_blocks_and_the_move_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(common::durable_evicting(dir.path())).unwrap();
        db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, pad VARCHAR(2000) NOT NULL)")
            .unwrap();
        let pad = "m".repeat(1_500);
        for id in 0..ROWS {
            let params = vec![Value::Int(id), Value::Int(id % 7), Value::from(pad.as_str())];
            common::retry(&db, "INSERT INTO t VALUES ($1, $2, $3)", params);
        }
        db.snapshot().unwrap();
        db.evict_now(64 << 20).unwrap();
        let evicted: usize = at_partitions(&db, "t", 0).iter().map(|(_, e)| e).sum();
        assert!(evicted > ROWS as usize / 2, "{evicted} evicted");
        let stats = |db: &Database| db.table_stats().unwrap().into_iter().find(|t| t.name == "t").unwrap();
        let before = stats(&db);

        db.execute_ddl("ALTER TABLE t SET (partition_by = 'grp')").unwrap();
        assert_eq!(partitioned_by(&db, "t"), "grp");
        // Every row is where grp sends it, in memory or evicted again since; none lost.
        assert_eq!(count(&db, "SELECT count(*) FROM t"), ROWS);
        assert_eq!(
            count(&db, "SELECT count(*) FROM t WHERE grp = 3"),
            (0..ROWS).filter(|i| i % 7 == 3).count() as i64
        );
        assert_eq!(
            count(&db, "SELECT CAST(sum(id) AS BIGINT) FROM t"),
            ROWS * (ROWS - 1) / 2
        );
        // The blocks of the old evicted tuples are freed: the bytes on disk per evicted
        // tuple are what they were before.
        let after = stats(&db);
        let per_tuple = |t: &permafrost_executor::TableStats| t.cold_bytes as f64 / t.cold_tuples.max(1) as f64;
        assert!(
            per_tuple(&after) < per_tuple(&before) * 1.2,
            "before {before:?}, after {after:?}"
        );
        db.execute_sql("UPDATE t SET pad = 'changed' WHERE id = 5", vec![])
            .unwrap();
    }
    // Replayed from the snapshot (taken before the move) and the log.
    let db = Database::open(common::durable_evicting(dir.path())).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(partitioned_by(&db, "t"), "grp");
    assert_eq!(count(&db, "SELECT count(*) FROM t"), ROWS);
    assert_eq!(count(&db, "SELECT count(*) FROM t WHERE pad = 'changed'"), 1);
    assert_eq!(
        count(&db, "SELECT CAST(sum(id) AS BIGINT) FROM t"),
        ROWS * (ROWS - 1) / 2
    );
    for (p, (values, _)) in at_partitions(&db, "t", 1).iter().enumerate() {
        for v in values {
            assert_eq!(partition_of(Value::Int(*v).as_ref(), &DataType::BigInt, 2), p as u32);
        }
    }
}
