//! Subqueries and set operations over a table most of which is on disk: a subquery's
//! scan that reaches evicted tuples makes its statement's pre-pass fetch them and run
//! again, so the answer is the one over every row (never one over the rows in memory); the
//! statement reads the partitions its subqueries read; correlated subqueries, run per row,
//! and outer joins (LEFT, FULL) do the same; views come back after a restart, from a
//! snapshot and from the log after it.

mod common;

use common::retry as insert;
use permafrost_executor::Database;
use permafrost_types::Value;

const ROWS: i64 = 4_000;

fn loaded(dir: &std::path::Path) -> Database {
    let db = common::evicted_t_and_small(dir);
    assert!(db.stats_now().unwrap().evicted_now > ROWS as u64 / 2);
    db
}

fn one(db: &Database, sql: &str) -> Value {
    let rows = db.execute_sql(sql, vec![]).unwrap();
    assert_eq!(rows.len(), 1, "{sql}");
    rows.row(0).get(0).to_owned()
}

#[test]
fn subqueries_over_evicted_tuples_answer_over_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = loaded(dir.path());
    // Scalar and IN subqueries that scan t (most of it on disk), inside a query of a
    // small table, and the other way round.
    assert_eq!(one(&db, "SELECT (SELECT count(*) FROM t) + 0"), Value::Int(ROWS));
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM small WHERE grp IN (SELECT grp FROM t WHERE id < 100)"
        ),
        Value::Int(5)
    );
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM t WHERE grp IN (SELECT grp FROM small WHERE k < 2)"
        ),
        Value::Int(ROWS / 10 * 2)
    );
    assert_eq!(
        one(&db, "SELECT count(*) FROM t WHERE id > (SELECT max(id) FROM t) - 10"),
        Value::Int(10)
    );
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM small WHERE EXISTS (SELECT 1 FROM t WHERE id = 3)"
        ),
        Value::Int(5)
    );
    // A set operation whose sides read evicted rows.
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM small WHERE k IN (SELECT grp FROM t UNION SELECT 99)"
        ),
        Value::Int(5)
    );
    let rows = db
        .execute_sql("SELECT grp FROM t EXCEPT SELECT grp FROM small ORDER BY 1", vec![])
        .unwrap();
    let got: Vec<i64> = (0..rows.len()).map(|i| rows.row(i).get_i64(0).unwrap()).collect();
    assert_eq!(got, vec![1, 3, 5, 7, 9]);
    // A write reading a subquery over evicted rows.
    let deleted = db
        .execute_sql(
            "DELETE FROM small WHERE k NOT IN (SELECT grp FROM t WHERE grp < 3)",
            vec![],
        )
        .unwrap()
        .affected;
    assert_eq!(deleted, 2);
}

#[test]
fn correlated_subqueries_over_evicted_tuples_answer_over_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = loaded(dir.path());
    // Per row of small (grp 0, 2, 4, 6, 8), a subquery over t, most of it on disk: each
    // group holds ROWS / 10 rows of t.
    let rows = db
        .execute_sql(
            "SELECT k, (SELECT count(*) FROM t WHERE t.grp = small.grp) FROM small ORDER BY k",
            vec![],
        )
        .unwrap();
    let got: Vec<(i64, i64)> = (0..rows.len())
        .map(|i| (rows.row(i).get_i64(0).unwrap(), rows.row(i).get_i64(1).unwrap()))
        .collect();
    let per_group = ROWS / 10;
    assert_eq!(
        got,
        vec![
            (0, per_group),
            (1, per_group),
            (2, per_group),
            (3, per_group),
            (4, per_group)
        ]
    );
    // EXISTS and IN reading the row around them, through t's key and by scanning t.
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM small s WHERE EXISTS (SELECT 1 FROM t WHERE t.id = s.k * 1000)"
        ),
        Value::Int(4)
    );
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM small s WHERE s.grp IN (SELECT grp FROM t WHERE t.id > 3990 + s.k)"
        ),
        // (k = 0 reads ids 3991..3999, groups 1..9: not its group 0.)
        Value::Int(4)
    );
    // A correlated subquery inside another, the inner one reading both queries around it.
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM small s WHERE EXISTS \
             (SELECT 1 FROM small x WHERE x.k = s.k AND EXISTS (SELECT 1 FROM t WHERE t.id = x.k + s.k + 3000))"
        ),
        Value::Int(5)
    );
    // A write picking its rows with one: every row of small has a row of t in its group.
    let updated = db
        .execute_sql(
            "UPDATE small SET grp = grp + 1 WHERE EXISTS (SELECT 1 FROM t WHERE t.grp = small.grp AND t.id > 3000)",
            vec![],
        )
        .unwrap()
        .affected;
    assert_eq!(updated, 5);
    // A name of neither query is still 42703.
    let e = db
        .execute_sql(
            "SELECT k FROM small WHERE EXISTS (SELECT 1 FROM t WHERE t.grp = small.nope)",
            vec![],
        )
        .unwrap_err();
    assert_eq!(e.sqlstate(), "42703", "{e}");
}

#[test]
fn outer_joins_over_evicted_tuples_answer_over_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = loaded(dir.path());
    // small's k 0..4 against t's ids, most of t on disk: ids 0..4 exist.
    assert_eq!(
        one(&db, "SELECT count(t.id) FROM small s LEFT JOIN t ON t.id = s.k * 1000"),
        Value::Int(4)
    );
    // Every row of t once (its unmatched rows come from the end of the walk, evicted ones
    // included), plus small's row 4 (id 4000 does not exist).
    assert_eq!(
        one(&db, "SELECT count(*) FROM small s FULL JOIN t ON t.id = s.k * 1000"),
        Value::Int(ROWS + 1)
    );
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM small s FULL JOIN t ON t.id = s.k * 1000 WHERE s.k IS NULL"
        ),
        Value::Int(ROWS - 4)
    );
}

#[test]
fn views_come_back_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::durable_evicting;
    {
        let db = Database::open(config(dir.path())).unwrap();
        db.execute_ddl("CREATE TABLE v_t (id BIGINT PRIMARY KEY, grp BIGINT)")
            .unwrap();
        for id in 0..10 {
            insert(
                &db,
                "INSERT INTO v_t VALUES ($1, $2)",
                vec![Value::Int(id), Value::Int(id % 3)],
            );
        }
        db.execute_ddl("CREATE VIEW v_before (g, n) AS SELECT grp, count(*) FROM v_t GROUP BY grp")
            .unwrap();
        db.snapshot().unwrap();
        db.execute_ddl("CREATE VIEW v_after AS SELECT id FROM v_t WHERE id IN (SELECT g FROM v_before)")
            .unwrap();
        db.execute_ddl("CREATE VIEW v_dropped AS SELECT 1").unwrap();
        db.execute_ddl("DROP VIEW v_dropped").unwrap();
    }
    let db = Database::open(config(dir.path())).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(one(&db, "SELECT max(n) FROM v_before"), Value::Int(4));
    assert_eq!(one(&db, "SELECT count(*) FROM v_after"), Value::Int(3));
    let e = db.execute_sql("SELECT * FROM v_dropped", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "42P01", "{e}");
    // A view is read, never written; a table a view reads is not dropped.
    let e = db.execute_sql("INSERT INTO v_after VALUES (1)", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    let e = db.execute_ddl("DROP TABLE v_t").unwrap_err();
    assert_eq!(e.sqlstate(), "2BP01", "{e}");
}
