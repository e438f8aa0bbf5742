//! Evicted data through the whole engine: every access path (index lookup, range, full
//! scan, join, update, delete, unique check) over evicted tuples, with both retrieval and
//! both merge policies; multi-partition transactions over evicted data; the memory budget;
//! restarts that need several rounds.

mod common;

use std::collections::BTreeMap;

use permafrost_executor::{
    AntiCacheConfig, Completion, Config, Database, Error, MergePolicy, ProcedureDef, Request, Retrieval,
};
use permafrost_types::Value;

const PAD: usize = 900;

fn pad(id: i64) -> String {
    format!("{id:08}").repeat(PAD / 8)
}

fn open(dir: &std::path::Path, retrieval: Retrieval, merge: MergePolicy, max_restarts: u32) -> Database {
    let mut ac = AntiCacheConfig::new(dir);
    ac.retrieval = retrieval;
    ac.merge = merge;
    ac.eviction_size = 256 << 10;
    let config = Config::builder()
        .partitions(2)
        .memory_limit(16 << 20)
        .lru_sample_rate(1.0)
        .max_restarts(max_restarts)
        .anticache(ac)
        .build()
        .unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl(
        "CREATE TABLE items (id BIGINT PRIMARY KEY, grp INTEGER NOT NULL, val BIGINT NOT NULL, pad VARCHAR(1000) NOT NULL)
           WITH (partition_by = 'id');
         CREATE INDEX items_grp ON items (grp, id);
         CREATE TABLE small (id BIGINT PRIMARY KEY, ref BIGINT NOT NULL, pad VARCHAR(1000) NOT NULL)
           WITH (partition_by = 'id')",
    )
    .unwrap();
    db.register(
        ProcedureDef::new("Put")
            .partition_param(0)
            .statement("INSERT INTO items VALUES (?, ?, ?, ?)")
            .body(|ctx, p| ctx.execute(0, p)),
    )
    .unwrap();
    db.register(
        ProcedureDef::new("Get")
            .partition_param(0)
            .statement("SELECT grp, val, pad FROM items WHERE id = ?")
            .body(|ctx, p| ctx.execute(0, p)),
    )
    .unwrap();
    db.register(
        ProcedureDef::new("Bump")
            .partition_param(0)
            .statement("UPDATE items SET val = val + ? WHERE id = ?")
            .body(|ctx, p| ctx.execute(0, &[p[1].clone(), p[0].clone()])),
    )
    .unwrap();
    db
}

/// Loads `n` rows through a pipelined session, retrying what the memory budget refuses
/// while eviction catches up (as a client should); returns the model.
fn load(db: &Database, n: i64) -> BTreeMap<i64, (i64, i64)> {
    let put = db.procedure("Put").unwrap();
    let mut s = db.session();
    let mut done: Vec<Completion> = Vec::new();
    let mut model = BTreeMap::new();
    let mut todo: Vec<i64> = (0..n).rev().collect();
    while !todo.is_empty() || s.in_flight() > 0 {
        while s.in_flight() < 256
            && let Some(id) = todo.pop()
        {
            let (grp, val) = (id % 7, id * 3);
            s.submit(
                &put,
                vec![Value::Int(id), Value::Int(grp), Value::Int(val), Value::from(pad(id))],
                id as u64,
            )
            .unwrap();
            model.insert(id, (grp, val));
        }
        done.clear();
        s.wait(&mut done).unwrap();
        for c in done.drain(..) {
            match c.result {
                Ok(_) => {}
                Err(e) if e.is_retryable() => todo.push(c.token as i64),
                Err(e) => panic!("load failed: {e}"),
            }
        }
    }
    model
}

fn get(db: &Database, id: i64) -> Option<(i64, i64)> {
    let r = db.call("Get", vec![Value::Int(id)]).unwrap();
    r.iter().next().map(|row| {
        assert_eq!(row.get_str(2), Some(pad(id).as_str()), "padding of {id}");
        (row.get_i64(0).unwrap(), row.get_i64(1).unwrap())
    })
}

/// Every table at both partitions passes its consistency check.
fn check_consistency(db: &Database) {
    for p in 0..2 {
        db.with_partition(p, |s| {
            for t in s.tables() {
                t.check_consistency().unwrap();
            }
        })
        .unwrap();
    }
}

fn exercise(retrieval: Retrieval, merge: MergePolicy) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), retrieval, merge, 16);
    // ~24 MB of tuples against a 16 MiB budget: most of it must be evicted.
    let mut model = load(&db, 24_000);
    let st = db.stats_now().unwrap();
    assert!(st.evictions > 0 && st.evicted_now > 10_000, "{st:?}");
    let mem = db.memory_usage().unwrap();
    assert!(mem.live() <= 16 << 20, "live memory {} over the budget", mem.live());

    // Point lookups through the hash primary key, evicted or not.
    for id in (0..24_000).step_by(97) {
        assert_eq!(get(&db, id), model.get(&id).copied(), "row {id}");
    }
    let st = db.stats_now().unwrap();
    assert!(st.restarts_evicted > 0 && st.unevicted_tuples > 0, "{st:?}");
    match retrieval {
        // The partition is idle while this thread waits for its answer: the reads'
        // completions are handled on the block I/O thread.
        Retrieval::AbortRestart => assert!(st.fetched_on_io_thread > 0, "{st:?}"),
        // The partition reads the blocks itself.
        Retrieval::Synchronous => {
            assert_eq!(st.fetched_on_io_thread + st.fetched_on_partition_thread, 0, "{st:?}")
        }
    }

    // An IN list through the unique primary key, some of its rows in memory (just read
    // back) and some evicted: each key's one entry is found in either stage.
    let ids = [0i64, 97, 194, 5, 6, 23_999, 30_000];
    let r = db
        .execute_sql(
            "SELECT id, val FROM items WHERE id IN ($1, $2, $3, $4, $5, $6, $7) ORDER BY id",
            ids.iter().map(|&i| Value::Int(i)).collect(),
        )
        .unwrap();
    let got: Vec<(i64, i64)> = r
        .iter()
        .map(|row| (row.get_i64(0).unwrap(), row.get_i64(1).unwrap()))
        .collect();
    let mut want: Vec<(i64, i64)> = ids.iter().filter_map(|i| model.get(i).map(|v| (*i, v.1))).collect();
    want.sort();
    assert_eq!(got, want);

    // A range through the ordered index, across both partitions.
    let r = db
        .execute_sql(
            "SELECT COUNT(*), SUM(val)::bigint FROM items WHERE grp = 3 AND id < 2000",
            vec![],
        )
        .unwrap();
    let want: Vec<i64> = model
        .iter()
        .filter(|(k, v)| v.0 == 3 && **k < 2000)
        .map(|(_, v)| v.1)
        .collect();
    assert_eq!(r.row(0).get_i64(0), Some(want.len() as i64));
    assert_eq!(r.row(0).get_i64(1), Some(want.iter().sum()));

    // Updates and deletes of evicted rows.
    db.evict_now(64 << 20).unwrap();
    for id in (5..24_000).step_by(211) {
        db.call("Bump", vec![Value::Int(id), Value::Int(1)]).unwrap();
        model.get_mut(&id).unwrap().1 += 1;
    }
    db.evict_now(64 << 20).unwrap();
    let r = db
        .execute_sql("DELETE FROM items WHERE id = $1", vec![Value::Int(7)])
        .unwrap();
    assert_eq!(r.affected, 1);
    model.remove(&7);
    for id in (5..24_000).step_by(211) {
        assert_eq!(get(&db, id), model.get(&id).copied(), "row {id}");
    }
    assert_eq!(get(&db, 7), None);

    // A duplicate key is caught against the tombstone, without fetching.
    db.evict_now(64 << 20).unwrap();
    let e = db
        .call(
            "Put",
            vec![Value::Int(11), Value::Int(0), Value::Int(0), Value::from("x")],
        )
        .unwrap_err();
    assert_eq!(e.sqlstate(), "23505", "{e}");

    // A full scan and a join over a table that is entirely evicted.
    for id in 0..300 {
        db.execute_sql(
            "INSERT INTO small VALUES ($1, $2, $3)",
            vec![Value::Int(id), Value::Int(id * 5), Value::from(pad(id))],
        )
        .unwrap();
    }
    db.evict_now(64 << 20).unwrap();
    db.evict_now(64 << 20).unwrap();
    let before = db.stats_now().unwrap().evicted_now;
    let r = db
        .execute_sql("SELECT COUNT(*), SUM(ref)::bigint FROM small", vec![])
        .unwrap();
    assert_eq!(r.row(0).get_i64(0), Some(300));
    assert_eq!(r.row(0).get_i64(1), Some((0..300).map(|i| i * 5).sum()));
    db.evict_now(64 << 20).unwrap();
    let r = db
        .execute_sql(
            "SELECT COUNT(*), SUM(i.val)::bigint FROM small s, items i WHERE s.id < 50 AND i.id = s.ref",
            vec![],
        )
        .unwrap();
    let want: Vec<i64> = (0..50).filter_map(|i| model.get(&(i * 5)).map(|v| v.1)).collect();
    assert_eq!(r.row(0).get_i64(0), Some(want.len() as i64));
    assert_eq!(r.row(0).get_i64(1), Some(want.iter().sum()));
    assert!(before > 0);

    // Everything is still there, byte for byte.
    for (id, v) in model.iter().step_by(13) {
        assert_eq!(get(&db, *id), Some(*v));
    }
    check_consistency(&db);
}

#[test]
fn abort_restart_with_tuple_merge() {
    exercise(Retrieval::AbortRestart, MergePolicy::Tuple { hole_threshold: 0.5 });
}

#[test]
fn abort_restart_with_block_merge() {
    exercise(Retrieval::AbortRestart, MergePolicy::Block);
}

#[test]
fn synchronous_with_tuple_merge() {
    exercise(Retrieval::Synchronous, MergePolicy::Tuple { hole_threshold: 0.5 });
}

#[test]
fn synchronous_with_block_merge() {
    exercise(Retrieval::Synchronous, MergePolicy::Block);
}

/// Multi-partition transactions that reach evicted tuples at several partitions fetch at
/// every one of them before they restart, and stay serializable.
#[test]
fn multi_partition_transactions_over_evicted_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(
        dir.path(),
        Retrieval::AbortRestart,
        MergePolicy::Tuple { hole_threshold: 0.5 },
        16,
    );
    let model = load(&db, 4_000);
    db.register(
        ProcedureDef::new("Move")
            .multi_partition()
            .statement("UPDATE items SET val = val - ? WHERE id = ?")
            .statement("UPDATE items SET val = val + ? WHERE id = ?")
            .body(|ctx, p| {
                ctx.execute(0, &[p[2].clone(), p[0].clone()])?;
                ctx.execute(1, &[p[2].clone(), p[1].clone()])
            }),
    )
    .unwrap();
    let total: i64 = model.values().map(|v| v.1).sum();
    for round in 0..20i64 {
        db.evict_now(64 << 20).unwrap();
        let (a, b) = (round * 37 % 4000, round * 91 % 4000 + 1);
        db.call("Move", vec![Value::Int(a), Value::Int(b), Value::Int(5)])
            .unwrap();
    }
    db.evict_now(64 << 20).unwrap();
    let r = db
        .execute_sql("SELECT SUM(val)::bigint, COUNT(*) FROM items", vec![])
        .unwrap();
    assert_eq!(r.row(0).get_i64(0), Some(total));
    assert_eq!(r.row(0).get_i64(1), Some(4000));
    assert!(db.stats_now().unwrap().restarts_evicted >= 20);
}

/// A transaction whose second read depends on a value of an evicted tuple needs two
/// rounds of fetching; with a restart bound of one it fails with a clear, retryable error.
#[test]
fn dependent_reads_need_more_rounds_and_the_bound_holds() {
    for (bound, ok) in [(1, false), (16, true)] {
        let dir = tempfile::tempdir().unwrap();
        let db = open(
            dir.path(),
            Retrieval::AbortRestart,
            MergePolicy::Tuple { hole_threshold: 0.5 },
            bound,
        );
        db.register(
            ProcedureDef::new("Chase")
                .multi_partition()
                .statement("SELECT ref FROM small WHERE id = ?")
                .body(|ctx, p| {
                    let mut id = p[0].clone();
                    for _ in 0..3 {
                        let r = ctx.execute(0, std::slice::from_ref(&id))?;
                        match r.iter().next().and_then(|row| row.get_i64(0)) {
                            Some(next) => id = Value::Int(next),
                            None if ctx.is_prepass() => break,
                            None => return Err(ctx.abort("broken chain")),
                        }
                    }
                    ctx.execute(0, &[id])
                }),
        )
        .unwrap();
        for id in 0..10 {
            db.execute_sql(
                "INSERT INTO small VALUES ($1, $2, 'x')",
                vec![Value::Int(id), Value::Int(id + 1)],
            )
            .unwrap();
        }
        db.evict_now(64 << 20).unwrap();
        let r = db.call("Chase", vec![Value::Int(0)]);
        if ok {
            assert_eq!(r.unwrap().row(0).get_i64(0), Some(4));
        } else {
            let e = r.unwrap_err();
            assert!(matches!(e, Error::TooManyRestarts { .. }), "{e}");
            assert!(e.is_retryable());
            assert_eq!(e.sqlstate(), "40001");
        }
    }
}

/// Without the anti-cache, writes past the budget fail with an error naming it; the
/// database keeps serving, and deleting data makes room again.
/// Inserts 1 KB rows into `table` until a write is refused (at most 40,000 rows, 36 MB);
/// returns how many committed and the refusal.
fn fill_until_refused(db: &Database, table: &str) -> (i64, permafrost_executor::Error) {
    db.register(
        ProcedureDef::new("Put")
            .partition_param(0)
            .statement(format!("INSERT INTO {table} VALUES (?, ?)"))
            .body(|c, p| c.execute(0, p)),
    )
    .unwrap();
    for id in 0..40_000i64 {
        if let Err(e) = db.call("Put", vec![Value::Int(id), Value::from(pad(id))]) {
            return (id, e);
        }
    }
    panic!("writes must be refused before 36 MB land in a 16 MiB budget");
}

#[test]
fn the_budget_holds_without_an_anticache() {
    let db = Database::open(Config::builder().partitions(2).memory_limit(16 << 20).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE items (id BIGINT PRIMARY KEY, pad VARCHAR(1000) NOT NULL)")
        .unwrap();
    let (at, e) = fill_until_refused(&db, "items");
    assert_eq!(e.sqlstate(), "53200", "{e}");
    assert!(e.to_string().contains("memory_limit"), "{e}");
    assert!(e.is_retryable());
    let mem = db.memory_usage().unwrap();
    assert!(mem.live() <= (16 << 20) + (2 << 20), "live {} bytes", mem.live());
    // Reads still work; deleting makes room for writes again.
    assert_eq!(
        db.execute_sql("SELECT COUNT(*) FROM items", vec![])
            .unwrap()
            .row(0)
            .get_i64(0),
        Some(at)
    );
    db.execute_sql("DELETE FROM items WHERE id < 5000", vec![]).unwrap();
    db.call("Put", vec![Value::Int(1), Value::from("back")]).unwrap();
}

/// With the anti-cache on but nothing evictable (the table is declared not evictable),
/// eviction cannot make room: writes are refused with an error naming the budget, every
/// committed row stays readable, the budget holds, and deleting makes room again.
#[test]
fn when_nothing_can_be_evicted_writes_are_refused_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::builder()
        .partitions(2)
        .memory_limit(16 << 20)
        .anticache(AntiCacheConfig::new(dir.path()))
        .build()
        .unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl("CREATE TABLE pinned (id BIGINT PRIMARY KEY, pad VARCHAR(1000) NOT NULL) WITH (evictable = false)")
        .unwrap();
    let (at, e) = fill_until_refused(&db, "pinned");
    assert_eq!(e.sqlstate(), "53200", "{e}");
    assert!(e.to_string().contains("memory_limit"), "{e}");
    assert_eq!(db.stats_now().unwrap().evicted_now, 0, "nothing was evictable");
    assert!(db.memory_usage().unwrap().live() <= (16 << 20) + (2 << 20));
    let r = db
        .execute_sql("SELECT COUNT(*), MIN(id), MAX(id) FROM pinned", vec![])
        .unwrap();
    assert_eq!(r.row(0).get_i64(0), Some(at), "every acknowledged row is there");
    assert_eq!(r.row(0).get_i64(2), Some(at - 1));
    for id in (0..at).step_by(101) {
        let r = db
            .execute_sql("SELECT pad FROM pinned WHERE id = $1", vec![Value::Int(id)])
            .unwrap();
        assert_eq!(r.row(0).get_str(0), Some(pad(id).as_str()));
    }
    db.execute_sql("DELETE FROM pinned WHERE id < 5000", vec![]).unwrap();
    db.call("Put", vec![Value::Int(1), Value::from("back")]).unwrap();
    // The room a delete makes is there for the very next write, not only after the
    // partition's next periodic memory check.
    let mut next = at;
    for round in 0..10i64 {
        loop {
            match db.call("Put", vec![Value::Int(next), Value::from(pad(next))]) {
                Ok(_) => next += 1,
                Err(e) => {
                    assert_eq!(e.sqlstate(), "53200", "{e}");
                    break;
                }
            }
        }
        let lo = 5000 + round * 300;
        db.execute_sql(
            "DELETE FROM pinned WHERE id >= $1 AND id < $2",
            vec![Value::Int(lo), Value::Int(lo + 300)],
        )
        .unwrap();
        for id in lo..lo + 2 {
            db.call("Put", vec![Value::Int(id), Value::from(pad(id))])
                .unwrap_or_else(|e| panic!("round {round}: a write right after a delete: {e}"));
        }
    }
}

/// A single-table scan over a table larger than the memory budget: its evicted tuples are
/// read from their blocks after the statement and not merged back (no restart, nothing
/// brought into memory), and the result is the table as it was when the statement ran,
/// even if the rows it has not read yet are merged back, changed and evicted again before
/// it reads them.
#[test]
fn scans_stream_evicted_data_without_merging_and_read_one_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(
        dir.path(),
        Retrieval::AbortRestart,
        // Block merge: a row brought back frees its whole block, whose slots new blocks
        // would take at once.
        MergePolicy::Block,
        16,
    );
    // ~24 MB of tuples against a 16 MiB budget: what a scan needs never fits at once (the
    // bring-back path refused it with 54000).
    let mut model = load(&db, 24_000);
    db.evict_now(64 << 20).unwrap();
    let before = db.stats_now().unwrap();
    assert!(before.evicted_now > 10_000, "{before:?}");

    let sum = |m: &BTreeMap<i64, (i64, i64)>| m.values().map(|v| v.1).sum::<i64>();
    let r = db
        .execute_sql("SELECT COUNT(*), SUM(val)::bigint, MAX(id) FROM items", vec![])
        .unwrap();
    assert_eq!(r.row(0).get_i64(0), Some(24_000));
    assert_eq!(r.row(0).get_i64(1), Some(sum(&model)));
    assert_eq!(r.row(0).get_i64(2), Some(23_999));
    // Rows to the caller, with a filter on a column and the long text checked.
    let r = db
        .execute_sql("SELECT id, val, pad FROM items WHERE grp = 2", vec![])
        .unwrap();
    let mut got: Vec<(i64, i64)> = r
        .iter()
        .map(|row| {
            let id = row.get_i64(0).unwrap();
            assert_eq!(row.get_str(2), Some(pad(id).as_str()));
            (id, row.get_i64(1).unwrap())
        })
        .collect();
    got.sort_unstable();
    let want: Vec<(i64, i64)> = model.iter().filter(|(_, v)| v.0 == 2).map(|(k, v)| (*k, v.1)).collect();
    assert_eq!(got, want);
    // ORDER BY over the whole table, LIMIT without one, OFFSET.
    let r = db
        .execute_sql("SELECT id FROM items ORDER BY val DESC LIMIT 3", vec![])
        .unwrap();
    assert_eq!(
        r.iter().map(|row| row.get_i64(0).unwrap()).collect::<Vec<_>>(),
        vec![23_999, 23_998, 23_997]
    );
    let r = db
        .execute_sql("SELECT id FROM items LIMIT 20000 OFFSET 3990", vec![])
        .unwrap();
    assert_eq!(r.len(), 20_000);
    let after = db.stats_now().unwrap();
    assert_eq!(
        after.unevicted_tuples, before.unevicted_tuples,
        "a scan brought data back"
    );
    assert_eq!(after.restarts_evicted, before.restarts_evicted, "a scan restarted");
    assert_eq!(after.evicted_now, before.evicted_now);

    // One state: take a scan's first part, then change evicted rows (merged back, bumped,
    // evicted again into new blocks) before reading the rest.
    let old_sum = sum(&model);
    let stmt =
        db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "SELECT SUM(val)::bigint, COUNT(*) FROM items").unwrap());
    let mut first = common::block_on(
        db.submit(
            Request::statement(&stmt, vec![])
                .stop(permafrost_executor::StopFlag::new())
                .streamed(),
        ),
    )
    .unwrap();
    let mut rest = first.take_rest().expect("the scan reached evicted data");
    for id in (0..24_000).step_by(53) {
        db.call("Bump", vec![Value::Int(id), Value::Int(1000)]).unwrap();
        model.get_mut(&id).unwrap().1 += 1000;
    }
    db.evict_now(64 << 20).unwrap();
    db.evict_now(64 << 20).unwrap();
    let mut last = first;
    while let Some(more) = rest.next_rows().unwrap() {
        last = more;
    }
    assert_eq!(
        last.row(0).get_i64(0),
        Some(old_sum),
        "the scan saw changes made after it ran"
    );
    assert_eq!(last.row(0).get_i64(1), Some(24_000));
    drop(rest);
    let r = db.execute_sql("SELECT SUM(val)::bigint FROM items", vec![]).unwrap();
    assert_eq!(r.row(0).get_i64(0), Some(sum(&model)));

    // A stop flag stops the rest with 57014.
    let stop = permafrost_executor::StopFlag::new();
    let stmt = db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "SELECT id FROM items").unwrap());
    let mut first =
        common::block_on(db.submit(Request::statement(&stmt, vec![]).stop(stop.clone()).streamed())).unwrap();
    let mut rest = first.take_rest().expect("the scan reached evicted data");
    stop.set();
    let e = loop {
        match rest.next_rows() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the scan ignored its stop flag"),
            Err(e) => break e,
        }
    };
    assert_eq!(e.sqlstate(), "57014", "{e}");
    drop(rest);

    // Everything is still there and consistent.
    for (id, v) in model.iter().step_by(101) {
        assert_eq!(get(&db, *id), Some(*v));
    }
    check_consistency(&db);
}

/// Running statements share one pool of memory (half the budget, at least one statement's
/// working memory): while one sorted scan holds what it gathered, another that would take
/// the pool past its limit fails with 53200 (retryable), and succeeds once the first is
/// done.
#[test]
fn running_statements_share_one_memory_pool() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Retrieval::AbortRestart, MergePolicy::Block, 16);
    let model = load(&db, 24_000);
    let want = model.values().filter(|v| v.0 < 2).count();
    let pool = db.statement_pool();
    assert_eq!(pool.limit(), 16 << 20);
    // Bring rows back into memory (block merge: whole blocks), up to the budget.
    for id in (0..24_000).step_by(7) {
        get(&db, id);
    }
    // The first scan sorts half the table: it holds its in-memory rows (several MB,
    // counted twice: gathered and as the result) until its rest is read or dropped.
    let first_sql = "SELECT id, pad FROM items WHERE grp < 4 ORDER BY id DESC";
    let stmt = db.ad_hoc(permafrost_sql::prepare(&db.catalog(), first_sql).unwrap());
    // The second sorts a quarter of it (about 14 MB held): alone it fits.
    let sql = "SELECT id, pad FROM items WHERE grp < 2 ORDER BY id DESC";
    let stop = permafrost_executor::StopFlag::new();
    let mut first = common::block_on(db.submit(Request::statement(&stmt, vec![]).stop(stop).streamed())).unwrap();
    let rest = first.take_rest().expect("the scan reached evicted data");
    let held = pool.used();
    assert!(held > 4 << 20, "the first scan holds {held} bytes of the pool");
    let e = db.execute_sql(sql, vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "53200", "{e}");
    assert!(e.is_retryable());
    drop(rest);
    assert_eq!(pool.used(), 0, "a dropped scan gives its memory back");
    let r = db.execute_sql(sql, vec![]).unwrap();
    assert_eq!(r.len(), want);
    assert_eq!(
        r.row(0).get_i64(0),
        model.keys().rev().find(|k| model[k].0 < 2).copied()
    );
    assert_eq!(pool.used(), 0);
}
