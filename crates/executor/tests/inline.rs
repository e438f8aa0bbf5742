//! Short calls run on their caller's thread when their partition is free
//! (partition/cell.rs): under concurrency with the partition threads' own work (queued
//! calls, multi-partition transactions, eviction rounds), one thread at a time is inside a
//! partition (the cell checks it on every entry and would panic, failing the calls), every
//! transaction is atomic, and the partition threads are not starved.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use permafrost_executor::{AntiCacheConfig, Config, Database, Place, ProcedureDef, Request, StopFlag};
use permafrost_types::Value;

/// `request` as an ordinary client's connection sends it: stoppable, its rows streamed,
/// and (when `here`) free to run on the calling thread.
fn at(request: Request, here: bool) -> Request {
    let place = if here { Place::Here } else { Place::Partition };
    request.stop(StopFlag::new()).place(place).streamed()
}

const ACCOUNTS: i64 = 400;
const START: i64 = 1000;

fn open(dir: &std::path::Path) -> Database {
    let mut ac = AntiCacheConfig::new(dir);
    ac.eviction_size = 64 << 10;
    let config = Config::builder()
        .partitions(2)
        .memory_limit(64 << 20)
        .anticache(ac)
        .build()
        .unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl(
        "CREATE TABLE acct (id BIGINT NOT NULL, grp BIGINT NOT NULL, bal BIGINT NOT NULL, pad VARCHAR(400) NOT NULL,
           PRIMARY KEY (grp, id)) WITH (partition_by = 'grp')",
    )
    .unwrap();
    // Moves one unit between two accounts of one group (one partition): two point updates.
    db.register(
        ProcedureDef::new("Move")
            .partition_param(0)
            .statement("UPDATE acct SET bal = bal - 1 WHERE grp = ? AND id = ?")
            .statement("UPDATE acct SET bal = bal + 1 WHERE grp = ? AND id = ?")
            .body(|ctx, p| {
                ctx.execute(0, &[p[0].clone(), p[1].clone()])?;
                ctx.execute(1, &[p[0].clone(), p[2].clone()])
            }),
    )
    .unwrap();
    for id in 0..ACCOUNTS {
        db.execute_sql(
            "INSERT INTO acct VALUES ($1, $2, $3, $4)",
            vec![
                Value::Int(id),
                Value::Int(id % 20),
                Value::Int(START),
                Value::from("x".repeat(300).as_str()),
            ],
        )
        .unwrap();
    }
    db
}

#[test]
fn inline_and_queued_work_never_share_a_partition() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    let mv = db.procedure("Move").unwrap();
    let read =
        db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "SELECT bal FROM acct WHERE grp = $1 AND id = $2").unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let moves = Arc::new(AtomicU64::new(0));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (db, mv, read, stop, moves) = (db.clone(), mv.clone(), read.clone(), stop.clone(), moves.clone());
            s.spawn(move || {
                let mut x = t * 7919 + 1;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let grp = (x >> 33) as i64 % 20;
                    let a = grp + 20 * ((x >> 40) as i64 % (ACCOUNTS / 20));
                    let b = grp + 20 * ((x >> 50) as i64 % (ACCOUNTS / 20));
                    // Half of the calls may run here, half are queued.
                    let here = x & 1 == 0;
                    let args = vec![Value::Int(grp), Value::Int(a), Value::Int(b)];
                    common::block_on(db.submit(at(Request::call(&mv, args), here))).unwrap();
                    moves.fetch_add(1, Ordering::Relaxed);
                    let rows = common::block_on(db.submit(at(
                        Request::statement(&read, vec![Value::Int(grp), Value::Int(a)]),
                        true,
                    )))
                    .unwrap();
                    assert_eq!(rows.len(), 1);
                }
            });
        }
        // Multi-partition reads of the total, and eviction rounds, on the partition threads
        // meanwhile.
        for round in 0..30 {
            let rows = db.execute_sql("SELECT sum(bal) FROM acct", vec![]).unwrap();
            let total = rows.iter().next().unwrap().values().next().unwrap().to_string();
            assert_eq!(total, (ACCOUNTS * START).to_string(), "round {round}");
            if round % 5 == 0 {
                db.evict_now(256 << 10).unwrap();
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let st = db.stats_now().unwrap();
    assert!(moves.load(Ordering::Relaxed) > 100, "the callers made progress");
    assert!(st.inline_calls > 0, "some calls ran on their caller's thread: {st:?}");
    assert!(st.mp_coordinated >= 30, "the partition threads were not starved");
    let rows = db.execute_sql("SELECT sum(bal), count(*) FROM acct", vec![]).unwrap();
    let v: Vec<String> = rows.iter().next().unwrap().values().map(|v| v.to_string()).collect();
    assert_eq!(v, vec![(ACCOUNTS * START).to_string(), ACCOUNTS.to_string()]);
}

/// Fairness: callers that keep one partition's token busy with inline calls, back to back
/// and never waiting in between, do not keep the partition thread from its own work:
/// multi-partition transactions and eviction rounds still complete (they would hang if
/// the callers could take the token whenever it is free).
#[test]
fn callers_hammering_one_partition_do_not_starve_its_thread() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    let mv = db.procedure("Move").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let moves = Arc::new(AtomicU64::new(0));
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        // Two callers on the same group (one partition), always asking to run here.
        for t in 0..2i64 {
            let (db, mv, stop, moves) = (db.clone(), mv.clone(), stop.clone(), moves.clone());
            s.spawn(move || {
                let mut i = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    let (a, b) = (3 + 20 * ((i + t) % 20), 3 + 20 * ((i + t + 7) % 20));
                    let args = vec![Value::Int(3), Value::Int(a), Value::Int(b)];
                    common::block_on(db.submit(at(Request::call(&mv, args), true))).unwrap();
                    moves.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            });
        }
        let (db2, done) = (db.clone(), done.clone());
        s.spawn(move || {
            for round in 0..20 {
                let rows = db2.execute_sql("SELECT sum(bal) FROM acct", vec![]).unwrap();
                let total = rows.iter().next().unwrap().values().next().unwrap().to_string();
                assert_eq!(total, (ACCOUNTS * START).to_string(), "round {round}");
                if round % 4 == 0 {
                    db2.evict_now(128 << 10).unwrap();
                }
            }
            done.send(()).unwrap();
        });
        // A liveness bound, not a speed figure: twenty reads and five eviction rounds take
        // well under a second when the partition thread gets its turns.
        let r = finished.recv_timeout(std::time::Duration::from_secs(120));
        stop.store(true, Ordering::Relaxed);
        r.expect("the multi-partition reads and eviction rounds completed while callers hammered one partition");
    });
    let st = db.stats_now().unwrap();
    assert!(moves.load(Ordering::Relaxed) > 20, "the callers made progress");
    assert!(st.inline_calls > 0, "the callers ran inline: {st:?}");
}

/// Multi-partition statements of callers with nothing else in flight run on their own
/// threads when every partition is free (cell.rs, `run_mp`), also while others are queued
/// or running (three callers race for the tokens here): under
/// concurrency with queued calls, queued multi-partition reads and eviction rounds, one
/// thread at a time is inside each partition and every transfer across partitions is
/// atomic (the total never changes in any read); a caller alone runs them on its thread.
#[test]
fn multi_partition_statements_run_inline_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    let mv = db.procedure("Move").unwrap();
    let prep = |sql: &str| db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap());
    // Accounts `a` and `b` are in groups a % 20 and b % 20: mostly two partitions.
    let transfer = prep("UPDATE acct SET bal = bal + CASE WHEN id = $1 THEN -1 ELSE 1 END WHERE id IN ($1, $2)");
    let total = prep("SELECT sum(bal), count(*) FROM acct");
    let stop = Arc::new(AtomicBool::new(false));
    let transfers = Arc::new(AtomicU64::new(0));
    let expected = vec![(ACCOUNTS * START).to_string(), ACCOUNTS.to_string()];
    let read_total = |db: &Database, here: bool| -> Vec<String> {
        let mut rows = common::block_on(db.submit(at(Request::statement(&total, vec![]), here))).unwrap();
        // A scan that reached evicted tuples answers their part afterwards.
        let mut all: Vec<Vec<String>> = rows
            .iter()
            .map(|r| r.values().map(|v| v.to_string()).collect())
            .collect();
        if let Some(mut rest) = rows.take_rest() {
            while let Some(more) = rest.next_rows().unwrap() {
                all.extend(more.iter().map(|r| r.values().map(|v| v.to_string()).collect()));
            }
        }
        assert_eq!(all.len(), 1, "one row of totals");
        all.remove(0)
    };
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (db, mv, transfer, stop, transfers) = (
                db.clone(),
                mv.clone(),
                transfer.clone(),
                stop.clone(),
                transfers.clone(),
            );
            let (read_total, expected) = (&read_total, &expected);
            s.spawn(move || {
                let mut x = t * 7919 + 3;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let a = (x >> 33) as i64 % ACCOUNTS;
                    let b = (a + 1 + (x >> 45) as i64 % (ACCOUNTS - 1)) % ACCOUNTS;
                    let rows = common::block_on(db.submit(at(
                        Request::statement(&transfer, vec![Value::Int(a), Value::Int(b)]),
                        true,
                    )))
                    .unwrap();
                    assert_eq!(rows.affected, 2);
                    transfers.fetch_add(1, Ordering::Relaxed);
                    // A queued single-partition call between them, and a total read here.
                    let grp = a % 20;
                    let args = vec![Value::Int(grp), Value::Int(a), Value::Int(grp + 20 * ((b / 20) % 20))];
                    common::block_on(db.submit(at(Request::call(&mv, args), false))).unwrap();
                    assert_eq!(&read_total(&db, true), expected);
                }
            });
        }
        // Queued multi-partition reads and eviction rounds meanwhile.
        for round in 0..30 {
            assert_eq!(read_total(&db, false), expected, "round {round}");
            if round % 5 == 0 {
                db.evict_now(256 << 10).unwrap();
            }
        }
        // Let the callers run a while after the last queued read.
        while transfers.load(Ordering::Relaxed) < 300 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
    });
    // Alone, a caller's multi-partition statements run on its thread.
    let before = db.stats_now().unwrap();
    for a in 0..10 {
        let args = vec![Value::Int(a), Value::Int(a + 1)];
        let rows = common::block_on(db.submit(at(Request::statement(&transfer, args), true))).unwrap();
        assert_eq!(rows.affected, 2);
        assert_eq!(read_total(&db, true), expected);
    }
    let after = db.stats_now().unwrap();
    assert_eq!(after.inline_mp, before.inline_mp + 20, "{after:?}");
}

/// A multi-partition statement asked to run on its caller's thread that runs past the
/// inline slice stops, is rolled back and is queued: it still gives its whole answer (and
/// a write applies once), and it does not count as run inline.
#[test]
fn a_long_multi_partition_statement_leaves_the_callers_thread() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.execute_ddl("CREATE TABLE big (id BIGINT NOT NULL, grp BIGINT NOT NULL, v BIGINT NOT NULL, PRIMARY KEY (grp, id)) WITH (partition_by = 'grp')")
        .unwrap();
    let prep = |sql: &str| db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap());
    let here = |sql: &str| common::block_on(db.submit(at(Request::statement(&prep(sql), vec![]), true))).unwrap();
    let before = db.stats_now().unwrap();
    // Each visits 160,000 combinations or rows at least: far longer than a millisecond.
    let rows = here("SELECT count(*) FROM acct a, acct b WHERE a.bal + b.bal > a.id");
    assert_eq!(first_value(rows), (ACCOUNTS * ACCOUNTS).to_string());
    let rows = here("INSERT INTO big SELECT a.id * 1000 + b.id, a.grp, 1 FROM acct a, acct b");
    assert_eq!(rows.affected, (ACCOUNTS * ACCOUNTS) as u64);
    let rows = here("UPDATE big SET v = v + 1");
    assert_eq!(rows.affected, (ACCOUNTS * ACCOUNTS) as u64);
    let after = db.stats_now().unwrap();
    assert_eq!(after.inline_mp, before.inline_mp, "none ran inline to its end");
    assert!(
        after.mp_coordinated >= before.mp_coordinated + 3,
        "each was queued: {after:?}"
    );
    let rows = db.execute_sql("SELECT sum(v), count(*) FROM big", vec![]).unwrap();
    let v: Vec<String> = rows.iter().next().unwrap().values().map(|v| v.to_string()).collect();
    assert_eq!(
        v,
        vec![(2 * ACCOUNTS * ACCOUNTS).to_string(), (ACCOUNTS * ACCOUNTS).to_string()]
    );
}

/// The first value of a result, its rest (rows of evicted tuples read afterwards) included.
fn first_value(mut rows: permafrost_executor::Rows) -> String {
    let mut all: Vec<String> = rows
        .iter()
        .flat_map(|r| r.values().map(|v| v.to_string()).collect::<Vec<_>>())
        .collect();
    if let Some(mut rest) = rows.take_rest() {
        while let Some(more) = rest.next_rows().unwrap() {
            all.extend(
                more.iter()
                    .flat_map(|r| r.values().map(|v| v.to_string()).collect::<Vec<_>>()),
            );
        }
    }
    all.into_iter().next().expect("a row")
}

/// A single-partition statement that is not a point access (a range over one group, an
/// UPDATE of a whole group) runs on its caller's thread too when its partition is free;
/// one that runs past the inline slice stops, is rolled back and is queued, and still gives
/// its whole answer.
#[test]
fn single_partition_statements_run_inline_within_the_slice() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let prep = |sql: &str| db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap());
    let here = |sql: &str| common::block_on(db.submit(at(Request::statement(&prep(sql), vec![]), true))).unwrap();
    let per_group = ACCOUNTS / 20;

    let before = db.stats_now().unwrap();
    let rows = here("UPDATE acct SET bal = bal + 1 WHERE grp = 3");
    assert_eq!(rows.affected, per_group as u64);
    let rows = here("SELECT sum(bal) FROM acct WHERE grp = 3");
    assert_eq!(first_value(rows), (per_group * (START + 1)).to_string());
    let after = db.stats_now().unwrap();
    assert_eq!(
        after.inline_calls,
        before.inline_calls + 2,
        "both ran inline: {after:?}"
    );
    assert_eq!(after.inline_mp, before.inline_mp, "neither is multi-partition");

    // 20^4 = 160,000 combinations within one group: far longer than a millisecond.
    let before = db.stats_now().unwrap();
    let rows = here(
        "SELECT count(*) FROM acct a, acct b, acct c, acct d
         WHERE a.grp = 3 AND b.grp = 3 AND c.grp = 3 AND d.grp = 3 AND a.bal + b.bal + c.bal + d.bal > a.id",
    );
    assert_eq!(first_value(rows), (per_group.pow(4)).to_string());
    let after = db.stats_now().unwrap();
    assert_eq!(
        after.inline_calls, before.inline_calls,
        "it did not run inline to its end"
    );
    assert_eq!(after.inline_mp, before.inline_mp, "it is not multi-partition");

    // The update applied once.
    let rows = db.execute_sql("SELECT sum(bal) FROM acct", vec![]).unwrap();
    assert_eq!(first_value(rows), (ACCOUNTS * START + per_group).to_string());
}

/// With one partition, a statement over "all partitions" is a single-partition call: it
/// runs on its caller's thread, not as a multi-partition transaction.
#[test]
fn with_one_partition_a_statement_over_all_partitions_is_single_partition() {
    let db = Database::open(Config::builder().partitions(1).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)")
        .unwrap();
    for id in 0..50i64 {
        db.execute_sql("INSERT INTO t VALUES ($1, $1)", vec![Value::Int(id)])
            .unwrap();
    }
    let prep = |sql: &str| db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap());
    let before = db.stats_now().unwrap();
    let rows = common::block_on(db.submit(at(
        Request::statement(&prep("SELECT sum(v) FROM t WHERE id BETWEEN 10 AND 19"), vec![]),
        true,
    )))
    .unwrap();
    assert_eq!(first_value(rows), "145");
    let after = db.stats_now().unwrap();
    assert_eq!(after.inline_calls, before.inline_calls + 1, "{after:?}");
    assert_eq!(after.inline_mp, before.inline_mp, "{after:?}");
    assert_eq!(after.mp_coordinated, before.mp_coordinated, "{after:?}");
}

/// Writes that run on their caller's thread are held to the memory budget as queued ones
/// are: the memory check runs after each (it did not, so that single-row INSERTs from one
/// connection filled memory past the budget until a message reached the partition's
/// thread). Only published figures are read, which send the partitions nothing.
#[test]
fn inline_writes_are_held_to_the_memory_budget() {
    const BUDGET: u64 = 16 << 20;
    let dir = tempfile::tempdir().unwrap();
    let mut ac = AntiCacheConfig::new(dir.path());
    ac.eviction_size = 1 << 20;
    let config = Config::builder()
        .partitions(2)
        .memory_limit(BUDGET)
        .anticache(ac)
        .build()
        .unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)")
        .unwrap();
    let insert = db.ad_hoc(permafrost_sql::prepare(&db.catalog(), "INSERT INTO t VALUES ($1, $2)").unwrap());
    let pad = "y".repeat(1000);
    // 40 MB of rows, one statement at a time, as one connection sends them.
    for i in 0..40_000i64 {
        let params = vec![Value::Int(i), Value::text(pad.as_str())];
        common::block_on(db.submit(at(Request::statement(&insert, params), true))).unwrap();
    }
    let st = db.stats();
    assert!(st.inline_calls > 30_000, "most ran on this thread: {st:?}");
    assert!(st.evicted_tuples > 10_000, "eviction kept up: {st:?}");
    let held = st.tuple_bytes + st.string_bytes;
    assert!(
        held <= BUDGET,
        "{held} bytes of tuples held against a budget of {BUDGET}: {st:?}"
    );
}
