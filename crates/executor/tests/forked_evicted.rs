//! A read-only statement that reaches more evicted tuples than its partition may bring
//! back at once (more than half its share of the budget) runs in a forked reader that
//! brings them back into its own image (forked.rs, `move_off_fetching`), instead of failing
//! with 54000: the partition's memory stays as it was, nothing is merged there.

mod common;

use permafrost_executor::Database;
use permafrost_types::Value;

const ROWS: i64 = 8_000;

#[test]
fn a_join_over_more_evicted_rows_than_may_come_back_runs_in_a_forked_reader() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(common::evicting(&dir.path().join("blocks")).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE t (id BIGINT, grp BIGINT, pad VARCHAR(2000) NOT NULL, PRIMARY KEY (grp, id))")
        .unwrap();
    let pad = "f".repeat(1_500);
    for id in 0..ROWS {
        let params = vec![Value::Int(id), Value::Int(id % 2), Value::from(pad.as_str())];
        common::retry(&db, "INSERT INTO t VALUES ($1, $2, $3)", params);
    }
    db.evict_now(64 << 20).unwrap();
    let before = db.stats_now().unwrap();
    assert!(before.evicted_now > ROWS as u64 / 2, "{before:?}");
    // A join (not a scan of one table, which streams its evicted tuples from their blocks)
    // at one partition, over about 6 MB of evicted rows where 4 MiB may come back.
    let sql = "SELECT count(*), CAST(sum(q.c) AS BIGINT) FROM t a, \
               (SELECT grp, count(*) AS c FROM t WHERE grp = 0 GROUP BY grp) q \
               WHERE a.grp = 0 AND q.grp = a.grp";
    let rows = db.execute_sql(sql, vec![]).unwrap();
    let values = common::all_values(rows);
    let half = ROWS / 2;
    assert_eq!(values, vec![vec![Value::Int(half), Value::Int(half * half)]]);
    let after = db.stats_now().unwrap();
    assert_eq!(
        after.unevicted_tuples, before.unevicted_tuples,
        "merged at the partition"
    );
    assert!(after.reads_moved > before.reads_moved, "{after:?}");
}
