//! Statements that reach more evicted tuples than the list of those reached holds
//! (`permafrost_sql::exec::reached::LIST_MAX`, 65,536): the set becomes bitmaps and every
//! tuple is still found, counted once, and read where it lies or refused, as before.

mod common;

use permafrost_executor::Database;
use permafrost_types::Value;

const ROWS: i64 = 200_000;

/// A 16 MiB database whose table `v` (id, grp, pad) has ROWS rows of about 100 bytes (20
/// MB: more than the partitions may bring back at once), most of them on disk.
fn loaded(dir: &std::path::Path) -> Database {
    let db = Database::open(common::evicting(&dir.join("blocks")).build().unwrap()).unwrap();
    db.execute_ddl(
        "CREATE TABLE v (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, pad VARCHAR(100) NOT NULL)
           WITH (partition_by = 'id')",
    )
    .unwrap();
    for from in (0..ROWS).step_by(10_000) {
        let sql = format!(
            "INSERT INTO v SELECT g, g % 7, repeat('p', 80) FROM generate_series({from}, {}) g",
            from + 9_999
        );
        common::retry(&db, &sql, vec![]);
    }
    db.evict_now(64 << 20).unwrap();
    db
}

fn ints(db: &Database, sql: &str) -> Vec<i64> {
    let rows = db.execute_sql(sql, vec![]).unwrap();
    (0..rows.len()).map(|i| rows.row(i).get_i64(0).unwrap()).collect()
}

#[test]
fn a_grouping_over_more_evicted_tuples_than_the_list_holds_counts_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = loaded(dir.path());
    let evicted = db.stats_now().unwrap().evicted_now;
    assert!(evicted > 2 * 65_536, "only {evicted} of {ROWS} rows evicted");
    // A subquery in FROM runs whole: it reaches every evicted tuple before it is read in
    // place.
    assert_eq!(
        ints(
            &db,
            "SELECT count(*) FROM (SELECT grp, count(*) AS n FROM v GROUP BY grp) g WHERE n > 0"
        ),
        vec![7]
    );
    assert_eq!(
        ints(
            &db,
            "SELECT sum(n)::bigint FROM (SELECT grp, count(*) AS n FROM v GROUP BY grp) g"
        ),
        vec![ROWS]
    );
    assert_eq!(
        ints(
            &db,
            "SELECT n FROM (SELECT grp, count(*) AS n FROM v GROUP BY grp) g WHERE grp = 3"
        ),
        vec![(0..ROWS).filter(|i| i % 7 == 3).count() as i64]
    );
    // Nothing was brought back to answer them: they were read where they lie.
    assert!(db.stats_now().unwrap().evicted_now >= evicted - 1_000);
}

#[test]
fn a_write_over_more_evicted_tuples_than_fit_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = loaded(dir.path());
    let err = db
        .execute_sql("UPDATE v SET grp = grp + 1 WHERE grp >= 0", vec![])
        .expect_err("an update of the whole table cannot bring it back into 16 MiB");
    assert!(
        err.to_string()
            .contains("more than half of this partition's memory budget"),
        "{err}"
    );
    assert_eq!(ints(&db, "SELECT count(*) FROM v WHERE grp = 7"), vec![0]);
    // The server keeps serving.
    db.execute_sql("UPDATE v SET grp = 8 WHERE id = $1", vec![Value::Int(ROWS - 1)])
        .unwrap();
    assert_eq!(ints(&db, "SELECT grp FROM v WHERE id = 199999"), vec![8]);
}
