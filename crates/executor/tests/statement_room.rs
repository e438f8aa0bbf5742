//! A statement whose rows may spill takes from the statement pool no more than the memory
//! budget has free (`MemoryPool::free_now`): a grouping gathered at a partition holds the
//! partition, which cannot evict for it until it ends, so what it took beyond the free
//! room was on top of the data (Voter's per-caller check at 4× memory passed its bound by
//! that). Past the free room its groups go to disk, and the answer is the same.

mod common;

use permafrost_executor::{Config, Database};
use permafrost_sql::workmem::{FREE_ROOM_FLOOR, POOL_STEP};
use permafrost_types::Value;

const MIB: usize = 1 << 20;
const BUDGET: usize = 64 * MIB;
/// Rows inserted per statement.
const BATCH: i64 = 1_000;

fn load(db: &Database, from: i64, to: i64) {
    for start in (from..to).step_by(BATCH as usize) {
        common::retry(
            db,
            "INSERT INTO t SELECT g, g % 10, repeat('x', 2000) FROM generate_series($1, $2) g",
            vec![Value::Int(start), Value::Int((start + BATCH).min(to) - 1)],
        );
    }
}

/// The groups of `GROUP BY id, pad` (one per row, each about 4 KB: past `work_mem` at
/// 4,000 rows), counted, and the most the pool held meanwhile.
fn grouped(db: &Database) -> (i64, usize) {
    let pool = db.statement_pool();
    pool.reset_peak();
    let rows = db
        .execute_sql(
            "SELECT count(*) FROM (SELECT id, pad FROM t GROUP BY id, pad) g",
            vec![],
        )
        .unwrap();
    let n = match common::all_values(rows).as_slice() {
        [row] => match row[0] {
            Value::Int(n) => n,
            ref v => panic!("not a count: {v:?}"),
        },
        other => panic!("not one row: {other:?}"),
    };
    (n, pool.peak())
}

/// What the budget has free once the partitions have counted their memory.
fn free_now(db: &Database) -> usize {
    db.check_memory();
    // Messages are taken in order: this read follows the check.
    db.execute_sql("SELECT 1", vec![]).unwrap();
    db.statement_pool().free_now()
}

#[test]
fn a_grouping_takes_no_more_than_the_budget_has_free_and_spills_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    // The grouping must stay at its partition, where the pool it draws from is this
    // process's: on a busy machine it outlasted the 50 ms read slice, moved off to a forked
    // reader, and the peak measured here stopped at what it took before the move.
    let config = Config::builder()
        .partitions(1)
        .memory_limit(BUDGET as u64)
        .read_slice(None)
        .temp_dir(dir.path().join("tmp"))
        .build()
        .unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, pad VARCHAR(2000) NOT NULL)")
        .unwrap();
    let work_mem = db.statement_memory();

    // Room to spare: the grouping takes what its work_mem allows, then spills.
    load(&db, 0, 6_000);
    assert!(free_now(&db) > 2 * work_mem, "free {}", free_now(&db));
    let (n, roomy) = grouped(&db);
    assert_eq!(n, 6_000);
    assert!(roomy > work_mem / 2, "took {roomy} of {work_mem}");

    // The data fills the budget but for a few MiB: the grouping takes those and spills
    // the rest.
    let mut rows = 6_000;
    while free_now(&db) > 6 * MIB {
        load(&db, rows, rows + BATCH);
        rows += BATCH;
    }
    let free = free_now(&db);
    let (n, tight) = grouped(&db);
    assert_eq!(n, rows);
    assert!(
        tight <= free.max(FREE_ROOM_FLOOR) + POOL_STEP,
        "took {tight} with {free} free"
    );
    assert!(tight < roomy, "{tight} >= {roomy}");
}
