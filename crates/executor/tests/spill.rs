//! Queries whose result or sort is larger than a statement's working memory (`work_mem`,
//! 16 MiB here): they spill to temporary files in the data directory's `tmp` folder and
//! their results stream (plain, sorted, DISTINCT, grouped, set operations, window calls), rows in memory or evicted, run in place or moved off to a forked
//! image; a caller that reads results whole still gets 54000, and nothing is left in `tmp`.

mod common;

use common::retry as insert;
use permafrost_executor::{Config, Database, Request, StopFlag};
use permafrost_sql::Rows;
use permafrost_types::Value;

const ROWS: i64 = 12_000;
/// Bytes of each row's `pad`: the table holds about 24 MB, past 16 MiB.
const PAD: usize = 2_000;

fn pad(grp: i64) -> String {
    format!("{grp:04}").repeat(PAD / 4)
}

fn load(db: &Database) {
    db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, pad VARCHAR(2000) NOT NULL)")
        .unwrap();
    for id in 0..ROWS {
        let grp = id % 10;
        insert(
            db,
            "INSERT INTO t VALUES ($1, $2, $3)",
            vec![Value::Int(id), Value::Int(grp), Value::from(pad(grp).as_str())],
        );
    }
}

/// Every row of `sql`'s result, read as a client does: its first part, then its rest.
fn streamed(db: &Database, sql: &str) -> Vec<Vec<Value>> {
    let stmt = db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap());
    let first: Rows = common::block_on(
        db.submit(
            Request::statement(&stmt, vec![])
                .stop(StopFlag::new())
                .place(permafrost_executor::Place::Here)
                .streamed(),
        ),
    )
    .unwrap();
    common::all_values(first)
}

fn ids(rows: &[Vec<Value>]) -> Vec<i64> {
    rows.iter()
        .map(|r| match r[0] {
            Value::Int(i) => i,
            ref v => panic!("not an id: {v:?}"),
        })
        .collect()
}

fn check(db: &Database, tmp: &std::path::Path) {
    // A plain result larger than work_mem.
    let all = streamed(db, "SELECT id, pad FROM t");
    let mut got = ids(&all);
    got.sort();
    assert_eq!(got, (0..ROWS).collect::<Vec<_>>());
    assert!(all.iter().all(|r| {
        r[1] == Value::from(
            pad(match r[0] {
                Value::Int(i) => i % 10,
                _ => unreachable!(),
            })
            .as_str(),
        )
    }));

    // A sort larger than work_mem: runs on disk, merged.
    let sorted = streamed(db, "SELECT id, pad FROM t ORDER BY grp DESC, id");
    let mut want: Vec<i64> = (0..ROWS).collect();
    want.sort_by_key(|&id| (-(id % 10), id));
    assert_eq!(ids(&sorted), want);

    // OFFSET and LIMIT over the merge.
    let page = streamed(db, "SELECT id FROM t ORDER BY pad DESC, id LIMIT 3 OFFSET 100");
    assert_eq!(ids(&page), want[100..103].to_vec());

    // DISTINCT and DISTINCT ON over rows that spilled.
    let distinct = streamed(db, "SELECT DISTINCT grp, pad FROM t ORDER BY grp");
    assert_eq!(ids(&distinct), (0..10).collect::<Vec<_>>());
    let on = streamed(db, "SELECT DISTINCT ON (grp) grp, id, pad FROM t ORDER BY grp, id DESC");
    assert_eq!(
        on.iter().map(|r| r[1].clone()).collect::<Vec<_>>(),
        (0..10).map(|g| Value::Int(ROWS - 10 + g)).collect::<Vec<_>>()
    );

    // Groups past work_mem: partitioned on disk by their key, each partition aggregated by
    // itself; the finished rows (past work_mem too) sorted in runs.
    let groups = streamed(
        db,
        "SELECT id, pad, count(*), sum(id) FILTER (WHERE grp > 4) FROM t GROUP BY id, pad ORDER BY id DESC",
    );
    assert_eq!(ids(&groups), (0..ROWS).rev().collect::<Vec<_>>());
    for r in &groups {
        let Value::Int(id) = r[0] else { unreachable!() };
        assert_eq!(r[2], Value::Int(1));
        let sum = if id % 10 > 4 {
            Value::Decimal(id.into())
        } else {
            Value::Null
        };
        assert_eq!(r[3], sum, "{id}");
    }
    let having = streamed(
        db,
        "SELECT id, count(*) FROM t GROUP BY id, pad HAVING id % 3 = 0 ORDER BY id LIMIT 5 OFFSET 2",
    );
    assert_eq!(ids(&having), vec![6, 9, 12, 15, 18]);

    // A subquery in FROM pulled up into its query: its rows are not gathered first (a
    // scan of evicted rows is read afterwards as any scan's).
    let counted = streamed(
        db,
        "SELECT count(*), max(grp) FROM (SELECT id, grp, pad FROM t WHERE id >= 0) AS s",
    );
    assert_eq!(counted, vec![vec![Value::Int(ROWS), Value::Int(9)]]);

    // A caller that takes results whole still has its limit.
    let e = db.execute_sql("SELECT id, pad FROM t ORDER BY id", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "54000", "{e}");

    // The spill files had no names, and are gone.
    assert_eq!(std::fs::read_dir(tmp).map(|d| d.count()).unwrap_or(0), 0);
}

/// Set operations past work_mem: their sides' rows sorted in runs on disk, merged, and
/// combined as they stream. (Over evicted rows a side still brings its table's evicted
/// tuples back first, as any subquery does: not checked here.)
fn check_set_operations(db: &Database, tmp: &std::path::Path) {
    let union = streamed(
        db,
        "SELECT grp, pad FROM t UNION SELECT grp, pad FROM t WHERE id < 100 ORDER BY 1 DESC",
    );
    assert_eq!(ids(&union), (0..10).rev().collect::<Vec<_>>());
    let all = streamed(
        db,
        "SELECT id, pad FROM t UNION ALL SELECT id, pad FROM t ORDER BY id DESC LIMIT 4",
    );
    assert_eq!(ids(&all), vec![ROWS - 1, ROWS - 1, ROWS - 2, ROWS - 2]);
    let intersect = streamed(
        db,
        "SELECT id, pad FROM t WHERE id < 9000 INTERSECT SELECT id, pad FROM t WHERE id >= 3000 ORDER BY 1",
    );
    assert_eq!(ids(&intersect), (3000..9000).collect::<Vec<_>>());
    let except_all = streamed(
        db,
        "SELECT grp, pad FROM t EXCEPT ALL SELECT grp, pad FROM t WHERE id >= 20 ORDER BY 1 OFFSET 3",
    );
    assert_eq!(
        ids(&except_all),
        vec![1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9]
    );
    // A set operation under another, on disk in turn.
    let nested = streamed(
        db,
        "(SELECT grp, pad FROM t WHERE id < 6000 UNION SELECT grp, pad FROM t) EXCEPT ALL \
         SELECT grp, pad FROM t WHERE grp < 8 ORDER BY 1",
    );
    assert_eq!(ids(&nested), vec![8, 9]);
    let except = streamed(db, "SELECT pad FROM t EXCEPT SELECT pad FROM t WHERE grp <> 7");
    assert_eq!(except, vec![vec![Value::from(pad(7).as_str())]]);

    assert_eq!(std::fs::read_dir(tmp).map(|d| d.count()).unwrap_or(0), 0);
}

/// The SQLSTATE of `sql`'s error, which comes with the answer or in its rest (a read
/// moved off); `None` when it completes.
fn error_of(db: &Database, sql: &str) -> Option<String> {
    let stmt = db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap());
    match common::block_on(db.submit(Request::statement(&stmt, vec![]).stop(StopFlag::new()).streamed())) {
        Err(e) => Some(e.sqlstate().to_string()),
        Ok(mut first) => {
            let mut rest = first.take_rest()?;
            loop {
                match rest.next_rows() {
                    Ok(Some(_)) => continue,
                    Ok(None) => return None,
                    Err(e) => return Some(e.sqlstate().to_string()),
                }
            }
        }
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        v => panic!("not an integer: {v:?}"),
    }
}

/// Window calls over rows past work_mem: sorted on disk per call, each partition walked
/// streaming, through a file of its own, or in memory, as the call needs.
fn check_windows(db: &Database, tmp: &std::path::Path) {
    // Streaming calls, and a partition small enough to hold.
    let rows = streamed(
        db,
        "SELECT id, row_number() OVER (ORDER BY id DESC), rank() OVER (PARTITION BY grp ORDER BY id), \
         sum(id) OVER (PARTITION BY grp ORDER BY id), count(*) OVER (PARTITION BY grp), \
         lag(id) OVER (PARTITION BY grp ORDER BY id), lead(id, 2) OVER (PARTITION BY grp ORDER BY id), \
         pad FROM t ORDER BY id",
    );
    assert_eq!(ids(&rows), (0..ROWS).collect::<Vec<_>>());
    for r in &rows {
        let id = int(&r[0]);
        let (grp, n) = (id % 10, id / 10 + 1);
        assert_eq!(int(&r[1]), ROWS - id, "row_number of {id}");
        assert_eq!(int(&r[2]), n, "rank of {id}");
        assert_eq!(
            r[3],
            Value::Decimal((n * grp + 10 * n * (n - 1) / 2).into()),
            "sum of {id}"
        );
        assert_eq!(int(&r[4]), ROWS / 10, "count of {id}");
        assert_eq!(
            r[5],
            if id >= 10 { Value::Int(id - 10) } else { Value::Null },
            "lag of {id}"
        );
        assert_eq!(
            r[6],
            if id + 20 < ROWS {
                Value::Int(id + 20)
            } else {
                Value::Null
            },
            "lead of {id}"
        );
        assert_eq!(r[7], Value::from(pad(grp).as_str()));
    }

    // Calls over a whole partition larger than work_mem: its rows through a file.
    let rows = streamed(
        db,
        "SELECT id, count(*) OVER (), percent_rank() OVER (ORDER BY grp), cume_dist() OVER (ORDER BY grp), \
         ntile(4) OVER (ORDER BY id), max(id) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), \
         first_value(id) OVER (ORDER BY id DESC), last_value(id) OVER (PARTITION BY grp), pad, \
         lag(id) OVER (ORDER BY id), sum(id) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING), \
         count(*) OVER (ORDER BY id RANGE BETWEEN 3 PRECEDING AND 2 FOLLOWING) \
         FROM t ORDER BY id DESC LIMIT 50 OFFSET 1",
    );
    assert_eq!(ids(&rows), (ROWS - 51..ROWS - 1).rev().collect::<Vec<_>>());
    let per_grp = ROWS / 10;
    for r in &rows {
        let id = int(&r[0]);
        let grp = id % 10;
        assert_eq!(int(&r[1]), ROWS);
        assert_eq!(
            r[2],
            Value::Double((grp * per_grp) as f64 / (ROWS - 1) as f64),
            "percent_rank of {id}"
        );
        assert_eq!(
            r[3],
            Value::Double(((grp + 1) * per_grp) as f64 / ROWS as f64),
            "cume_dist of {id}"
        );
        assert_eq!(int(&r[4]), id / (ROWS / 4) + 1, "ntile of {id}");
        assert_eq!(int(&r[5]), ROWS - 1);
        assert_eq!(int(&r[6]), ROWS - 1);
        // The last row of the group as the walk meets it: any of its rows (no ORDER BY).
        assert_eq!(int(&r[7]) % 10, grp, "last_value of {id}");
        assert_eq!(r[8], Value::from(pad(grp).as_str()));
        // Calls that read a few rows around each: the rows walked in slices.
        assert_eq!(int(&r[9]), id - 1, "lag of {id}");
        let sum: i64 = (id - 2..=(id + 1).min(ROWS - 1)).sum();
        assert_eq!(r[10], Value::Decimal(sum.into()), "moving sum of {id}");
        assert_eq!(
            int(&r[11]),
            (id + 2).min(ROWS - 1) - (id - 3) + 1,
            "range count of {id}"
        );
    }

    // A call that reads each row of a partition larger than its share (an offset per
    // row): 54000.
    assert_eq!(
        error_of(db, "SELECT id, lag(id, grp) OVER (ORDER BY id), pad FROM t").as_deref(),
        Some("54000")
    );
    assert_eq!(std::fs::read_dir(tmp).map(|d| d.count()).unwrap_or(0), 0);
}

/// A query of one subquery in FROM that is not pulled up (window calls, DISTINCT,
/// grouping, LIMIT, a set operation): the subquery's rows past work_mem are read as they
/// come. With `evicted`, a subquery of one table reads its evicted tuples from their
/// blocks afterwards, as the statement's own scan would (a set operation's sides still
/// bring them back first: not checked then).
fn check_subquery_in_from(db: &Database, tmp: &std::path::Path, evicted: bool) {
    let top = streamed(
        db,
        "SELECT id, rn, pad FROM (SELECT id, pad, row_number() OVER (PARTITION BY grp ORDER BY id DESC) AS rn \
         FROM t) AS s WHERE rn <= 2 ORDER BY id",
    );
    assert_eq!(ids(&top), (ROWS - 20..ROWS).collect::<Vec<_>>());
    assert!(
        top.iter()
            .all(|r| int(&r[1]) == if int(&r[0]) >= ROWS - 10 { 1 } else { 2 })
    );
    let distinct = streamed(
        db,
        "SELECT count(*), max(id) FROM (SELECT DISTINCT id, pad FROM t) AS d",
    );
    assert_eq!(distinct, vec![vec![Value::Int(ROWS), Value::Int(ROWS - 1)]]);
    let limited = streamed(
        db,
        "SELECT id FROM (SELECT id, pad FROM t ORDER BY pad DESC, id LIMIT 5000) AS d ORDER BY id DESC LIMIT 3",
    );
    assert_eq!(ids(&limited), vec![ROWS - 1, ROWS - 2, ROWS - 3]);
    if evicted {
        // (A set operation's sides bring their evicted tuples back first: too many here.)
        assert_eq!(std::fs::read_dir(tmp).map(|d| d.count()).unwrap_or(0), 0);
        return;
    }
    // A set operation in FROM: past work_mem it runs on disk too.
    let union = streamed(
        db,
        "SELECT count(*), min(id) FROM (SELECT id, pad FROM t UNION SELECT id, pad FROM t WHERE id < 100) AS u",
    );
    assert_eq!(union, vec![vec![Value::Int(ROWS), Value::Int(0)]]);

    assert_eq!(std::fs::read_dir(tmp).map(|d| d.count()).unwrap_or(0), 0);
}

#[test]
fn results_and_sorts_past_work_mem_spill_and_stream_over_evicted_rows() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    let db = Database::open(
        common::evicting(&dir.path().join("blocks"))
            .temp_dir(tmp.clone())
            .build()
            .unwrap(),
    )
    .unwrap();
    load(&db);
    db.evict_now(64 << 20).unwrap();
    assert!(db.stats_now().unwrap().evicted_now > ROWS as u64 / 2);
    check(&db, &tmp);
    check_windows(&db, &tmp);
    check_subquery_in_from(&db, &tmp, true);
    check_index_range(&db);
}

/// A read through an index range that reaches many evicted tuples reads them from their
/// blocks afterwards, as a scan does, alone or as the one subquery in FROM.
fn check_index_range(db: &Database) {
    let n = streamed(db, "SELECT count(*), sum(id) FROM t WHERE id < 11000");
    assert_eq!(n, vec![vec![Value::Int(11000), Value::Int(11000 * 10999 / 2)]]);
    let n = streamed(
        db,
        "SELECT count(*) FROM (SELECT DISTINCT grp FROM t WHERE id >= 500) AS d",
    );
    assert_eq!(n, vec![vec![Value::Int(10)]]);
    // A LIMIT without ORDER BY: any rows answer it, those in memory first.
    let some = ids(&streamed(db, "SELECT id FROM t WHERE id >= 100 LIMIT 3"));
    assert!(
        some.len() == 3 && some.iter().all(|&i| (100..ROWS).contains(&i)),
        "{some:?}"
    );
}

#[test]
fn results_and_sorts_past_work_mem_spill_in_memory_in_place_and_moved_off() {
    for slice in [None, Some(std::time::Duration::from_millis(1))] {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        let config = Config::builder()
            .partitions(2)
            .memory_limit(64 << 20)
            .read_slice(slice)
            .temp_dir(tmp.clone())
            .build()
            .unwrap();
        let db = Database::open(config).unwrap();
        load(&db);
        check(&db, &tmp);
        check_set_operations(&db, &tmp);
        check_windows(&db, &tmp);
        check_subquery_in_from(&db, &tmp, false);
        if slice.is_some() {
            assert!(db.stats_now().unwrap().reads_moved > 0, "no read moved off");
        }
    }
}

#[test]
fn without_a_temp_dir_past_work_mem_is_54000() {
    let config = Config::builder().partitions(1).memory_limit(64 << 20).build().unwrap();
    let db = Database::open(config).unwrap();
    load(&db);
    // (So the queries above did need to spill.)
    for sql in [
        "SELECT id, pad FROM t ORDER BY id",
        "SELECT id, pad FROM t",
        "SELECT id, count(*) FROM t GROUP BY id, pad HAVING id % 3 = 0",
        "SELECT id, pad FROM t UNION SELECT id, pad FROM t",
        "SELECT id, pad, row_number() OVER (ORDER BY id) FROM t",
        "SELECT count(*) FROM (SELECT DISTINCT id, pad FROM t) AS d",
    ] {
        let stmt = db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap());
        // The error comes with the answer, or in its rest (a read moved off).
        let code = match common::block_on(db.submit(Request::statement(&stmt, vec![]).stop(StopFlag::new()).streamed()))
        {
            Err(e) => e.sqlstate().to_string(),
            Ok(mut first) => {
                let mut rest = first.take_rest().expect("an error or a rest");
                loop {
                    match rest.next_rows() {
                        Ok(Some(_)) => continue,
                        Ok(None) => panic!("{sql}: complete without spilling"),
                        Err(e) => break e.sqlstate().to_string(),
                    }
                }
            }
        };
        assert_eq!(code, "54000", "{sql}");
    }
}
