//! A read-only statement that reaches more evicted tuples than its partition may bring
//! back at once (more than half its share of the budget) runs in a forked reader
//! (forked.rs, `move_off_reading`) instead of failing with 54000: the partition's memory
//! stays as it was, nothing is merged there. The reader reads the evicted tuples it meets
//! from their blocks where they lie (block_rows.rs) and merges none into its own image
//! either; a multi-partition read does the same over all of its partitions.

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
    // Each evicted tuple met was decoded where it lies (the subquery's once, the outer
    // scan's once).
    let read = after.moved_reads_in_place - before.moved_reads_in_place;
    assert!(
        read >= before.evicted_now / 2,
        "read in place {read} of {}",
        before.evicted_now
    );
}

#[test]
fn moved_reads_join_and_correlate_over_evicted_rows_read_where_they_lie() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(common::evicting(&dir.path().join("blocks")).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE o (w BIGINT, id BIGINT, c BIGINT, pad VARCHAR(2000) NOT NULL, PRIMARY KEY (w, id))")
        .unwrap();
    db.execute_ddl("CREATE TABLE l (w BIGINT, o BIGINT, n BIGINT, amount BIGINT, pad VARCHAR(2000) NOT NULL, PRIMARY KEY (w, o, n))")
        .unwrap();
    let pad = "g".repeat(1_500);
    const ORDERS: i64 = 6_000;
    for id in 0..ORDERS {
        let params = vec![
            Value::Int(0),
            Value::Int(id),
            Value::Int(id % 7),
            Value::from(pad.as_str()),
        ];
        common::retry(&db, "INSERT INTO o VALUES ($1, $2, $3, $4)", params);
        for n in 0..(id % 3) {
            let params = vec![
                Value::Int(0),
                Value::Int(id),
                Value::Int(n),
                Value::Int(id + n),
                Value::from(pad.as_str()),
            ];
            common::retry(&db, "INSERT INTO l VALUES ($1, $2, $3, $4, $5)", params);
        }
    }
    db.evict_now(64 << 20).unwrap();
    let before = db.stats_now().unwrap();
    assert!(before.evicted_now > ORDERS as u64 / 2, "{before:?}");
    // What the rows are, computed here.
    let lines: Vec<(i64, i64)> = (0..ORDERS)
        .flat_map(|id| (0..id % 3).map(move |n| (id, id + n)))
        .collect();
    let total: i64 = lines.iter().map(|l| l.1).sum();
    let orders_without_lines = (0..ORDERS).filter(|id| id % 3 == 0).count() as i64;
    let matched_n1 = lines.iter().filter(|l| l.1 == l.0 + 1).count() as i64;
    let by_c3: i64 = lines.iter().filter(|l| l.0 % 7 == 3).map(|l| l.1).sum();
    let cases = [
        // An inner join through the inner table's key.
        (
            "SELECT count(*), CAST(sum(l.amount) AS BIGINT) FROM o, l WHERE o.w = 0 AND l.w = o.w AND l.o = o.id",
            vec![Value::Int(lines.len() as i64), Value::Int(total)],
        ),
        // A left join: the orders without lines, null-extended.
        (
            "SELECT count(*) FROM o LEFT JOIN l ON l.w = o.w AND l.o = o.id AND l.n = 0 WHERE o.w = 0 AND l.o IS NULL",
            vec![Value::Int(orders_without_lines)],
        ),
        // A hash join (no index on the amount).
        (
            "SELECT count(*) FROM o JOIN l ON l.amount = o.id WHERE o.w = 0 AND l.w = 0",
            vec![Value::Int(lines.iter().filter(|l| l.1 < ORDERS).count() as i64)],
        ),
        // A FULL JOIN at every partition: the unmatched tuples of both sides.
        (
            "SELECT count(*) FROM o FULL JOIN l ON l.w = o.w AND l.o = o.id AND l.n = 1",
            vec![Value::Int(ORDERS + lines.len() as i64 - matched_n1)],
        ),
        // A correlated subquery per order, keyed by the order: it runs at every partition
        // (the reader reads the evicted tuples of all of them).
        (
            "SELECT CAST(sum((SELECT sum(l.amount) FROM l WHERE l.w = o.w AND l.o = o.id)) AS BIGINT) \
             FROM o WHERE o.w = 0 AND o.c = 3",
            vec![Value::Int(by_c3)],
        ),
    ];
    for (sql, want) in cases {
        let values = common::all_values(db.execute_sql(sql, vec![]).unwrap_or_else(|e| panic!("{sql}: {e}")));
        assert_eq!(values, vec![want], "{sql}");
    }
    let after = db.stats_now().unwrap();
    assert_eq!(
        after.unevicted_tuples, before.unevicted_tuples,
        "merged at the partition"
    );
    assert!(after.reads_moved >= before.reads_moved + 5, "{after:?}");
    assert!(after.moved_reads_in_place > before.moved_reads_in_place, "{after:?}");
}

#[test]
fn a_read_of_many_evicted_rows_that_could_come_back_reads_them_where_they_lie() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(common::evicting(&dir.path().join("blocks")).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE t (id BIGINT, grp BIGINT, pad VARCHAR(20) NOT NULL, PRIMARY KEY (grp, id))")
        .unwrap();
    const SMALL: i64 = 3_000;
    for id in 0..SMALL {
        let params = vec![Value::Int(id), Value::Int(id % 2), Value::from("small")];
        common::retry(&db, "INSERT INTO t VALUES ($1, $2, $3)", params);
    }
    db.evict_now(64 << 20).unwrap();
    let before = db.stats_now().unwrap();
    assert!(before.evicted_now > SMALL as u64 / 2, "{before:?}");
    // A join reaching ten evicted rows (a few hundred bytes, far within what may come
    // back): they come back into memory, the read runs at its partition.
    let few = "SELECT count(*) FROM t a, (SELECT grp, count(*) AS c FROM t WHERE grp = 0 AND id < 20 GROUP BY grp) q \
               WHERE a.grp = 0 AND a.id < 20 AND q.grp = a.grp";
    let values = common::all_values(db.execute_sql(few, vec![]).unwrap());
    assert_eq!(values, vec![vec![Value::Int(10)]], "{few}");
    let mid = db.stats_now().unwrap();
    assert!(mid.unevicted_tuples >= before.unevicted_tuples + 10, "{mid:?}");
    assert_eq!(mid.reads_moved, before.reads_moved, "{mid:?}");
    // The same join over all 1,500 rows of the group (more than MOVE_OVER_EVICTED_TUPLES,
    // though they would fit): read where they lie at once, nothing merged.
    let many = "SELECT count(*) FROM t a, (SELECT grp, count(*) AS c FROM t WHERE grp = 0 GROUP BY grp) q \
                WHERE a.grp = 0 AND q.grp = a.grp";
    let values = common::all_values(db.execute_sql(many, vec![]).unwrap());
    assert_eq!(values, vec![vec![Value::Int(SMALL / 2)]], "{many}");
    let after = db.stats_now().unwrap();
    assert_eq!(after.unevicted_tuples, mid.unevicted_tuples, "merged at the partition");
    assert!(after.reads_moved > mid.reads_moved, "{after:?}");
    assert!(
        after.moved_reads_in_place >= mid.moved_reads_in_place + 1_000,
        "{after:?}"
    );
    // And over both partitions: a multi-partition join moves the same way.
    let all = "SELECT count(*) FROM t a, (SELECT grp, count(*) AS c FROM t GROUP BY grp) q WHERE q.grp = a.grp";
    let values = common::all_values(db.execute_sql(all, vec![]).unwrap());
    assert_eq!(values, vec![vec![Value::Int(SMALL)]], "{all}");
    let last = db.stats_now().unwrap();
    assert_eq!(last.unevicted_tuples, after.unevicted_tuples, "merged at a partition");
    assert!(last.reads_moved > after.reads_moved, "{last:?}");
}
