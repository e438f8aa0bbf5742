//! Interactive transactions (interactive.rs): probes see the transaction's own writes and
//! change nothing; a commit applies the statements when every result is what was shown,
//! else fails with 40001 and applies nothing (write skew is refused); concurrent transfers
//! keep the total and every block that commits read the total; a committed transaction is
//! replayed from the command log, with its `now()`.

mod common;

use std::path::Path;
use std::sync::Arc;

use permafrost_executor::{AdHoc, Config, Database, LogConfig, NewStatement, Place, Rows, StopFlag, TxnStatement};
use permafrost_types::Value;

fn config(dir: &Path) -> Config {
    Config::builder()
        .partitions(2)
        .command_log(LogConfig::new(dir.join("log")))
        .build()
        .unwrap()
}

fn stmt(db: &Database, sql: &str) -> AdHoc {
    db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap())
}

/// A client's open transaction, as the server keeps it.
struct Txn<'a> {
    db: &'a Database,
    now: i64,
    all: Vec<TxnStatement>,
}

impl<'a> Txn<'a> {
    /// The seed of the block's next statement, as the server gives it.
    fn seed(&self) -> u64 {
        TxnStatement::seed_for(self.now as u64, self.all.len())
    }

    fn begin(db: &'a Database) -> Txn<'a> {
        Txn {
            db,
            now: 1_700_000_000_000_000,
            all: Vec::new(),
        }
    }

    fn run(&mut self, sql: &str, params: Vec<Value>) -> permafrost_executor::Result<Rows> {
        let s = stmt(self.db, sql);
        // As the server does: the block's earlier writes, then the new statement.
        let before: Vec<&TxnStatement> = self.all.iter().filter(|s| s.writes()).collect();
        let seen = self.db.write_clock();
        let rows = common::block_on(self.db.probe(
            &before,
            NewStatement {
                stmt: &s,
                params: params.clone(),
                seed: self.seed(),
            },
            self.now,
            StopFlag::new(),
            Place::Here,
        ))?;
        let step = TxnStatement {
            stmt: s.clone(),
            params,
            digest: rows.digest(),
            seen: Some(seen),
            done: Some(self.db.write_clock()),
            // As the server keeps it: only for a statement that drew random values.
            seed: if rows.drew_random { self.seed() } else { 0 },
            draws: rows.draws.clone(),
            reach: Default::default(),
        };
        self.all.push(step);
        Ok(rows)
    }

    /// A COPY's rows inside the block, as the server runs them: one bulk insert.
    fn copy(&mut self, table: &str, columns: &[&str], rows: Vec<Value>) -> permafrost_executor::Result<Rows> {
        let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        let s = self.db.bulk_insert(table, &columns)?;
        let before: Vec<&TxnStatement> = self.all.iter().filter(|s| s.writes()).collect();
        let rows_back = common::block_on(self.db.probe(
            &before,
            NewStatement {
                stmt: &s,
                params: rows.clone(),
                seed: self.seed(),
            },
            self.now,
            StopFlag::new(),
            Place::Here,
        ))?;
        self.all.push(TxnStatement {
            stmt: s,
            params: rows,
            digest: rows_back.digest(),
            seen: None,
            done: None,
            seed: if rows_back.drew_random { self.seed() } else { 0 },
            draws: rows_back.draws.clone(),
            reach: Default::default(),
        });
        Ok(rows_back)
    }

    fn commit(self) -> permafrost_executor::Result<()> {
        common::block_on(
            self.db
                .commit_interactive(&self.all, self.now, StopFlag::new(), Place::Here),
        )
    }
}

/// What `sql` reads from the database in `dir` reopened and recovered from its log.
fn recovered_rows(dir: &Path, sql: &str) -> Vec<Vec<Value>> {
    let db = Database::open(config(dir)).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    db.execute_sql(sql, vec![]).unwrap().to_values()
}

/// Checks that what `db` committed replays from its log to the same rows of `sql` (`db`,
/// the last handle of the database, is closed first).
fn assert_replays_to_same_rows(db: impl std::borrow::Borrow<Database>, dir: &Path, sql: &str) {
    let rows = db.borrow().execute_sql(sql, vec![]).unwrap().to_values();
    drop(db);
    assert_eq!(rows, recovered_rows(dir, sql), "replayed rows of {sql}");
}

fn int(rows: &Rows) -> i64 {
    match &rows.to_values()[0][0] {
        Value::Int(n) => *n,
        // sum(bigint) is numeric.
        Value::Decimal(d) => d.to_string().parse().unwrap(),
        other => panic!("not an integer: {other:?}"),
    }
}

fn setup(db: &Database) {
    db.execute_ddl("CREATE TABLE acct (id BIGINT PRIMARY KEY, bal BIGINT NOT NULL, at TIMESTAMP)")
        .unwrap();
    for id in 0..10i64 {
        db.execute_sql("INSERT INTO acct (id, bal) VALUES ($1, 100)", vec![Value::Int(id)])
            .unwrap();
    }
}

fn total(db: &Database) -> i64 {
    int(&db.execute_sql("SELECT sum(bal) FROM acct", vec![]).unwrap())
}

#[test]
fn probes_see_their_own_writes_and_change_nothing_until_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    setup(&db);
    let mut t = Txn::begin(&db);
    t.run("UPDATE acct SET bal = bal - 30 WHERE id = $1", vec![Value::Int(1)])
        .unwrap();
    t.run("UPDATE acct SET bal = bal + 30 WHERE id = $1", vec![Value::Int(6)])
        .unwrap();
    assert_eq!(int(&t.run("SELECT bal FROM acct WHERE id = 1", vec![]).unwrap()), 70);
    assert_eq!(int(&t.run("SELECT sum(bal) FROM acct", vec![]).unwrap()), 1000);
    let e = t.run("SELECT 1 / 0", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "22012", "a statement's own error is its own: {e}");
    t.all.pop();
    // Nothing is applied yet.
    assert_eq!(
        int(&db.execute_sql("SELECT bal FROM acct WHERE id = 1", vec![]).unwrap()),
        100
    );
    t.commit().unwrap();
    assert_eq!(
        int(&db.execute_sql("SELECT bal FROM acct WHERE id = 1", vec![]).unwrap()),
        70
    );
    assert_eq!(
        int(&db.execute_sql("SELECT bal FROM acct WHERE id = 6", vec![]).unwrap()),
        130
    );
    assert_eq!(total(&db), 1000);
}

#[test]
fn write_skew_is_refused_with_40001() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    setup(&db);
    // Each reads both rows (two on-call doctors) and takes one off if the other stays.
    let mut a = Txn::begin(&db);
    let mut b = Txn::begin(&db);
    let both = "SELECT sum(bal) FROM acct WHERE id IN (2, 3)";
    assert_eq!(int(&a.run(both, vec![]).unwrap()), 200);
    assert_eq!(int(&b.run(both, vec![]).unwrap()), 200);
    a.run("UPDATE acct SET bal = 0 WHERE id = 2", vec![]).unwrap();
    b.run("UPDATE acct SET bal = 0 WHERE id = 3", vec![]).unwrap();
    a.commit().unwrap();
    let e = b.commit().unwrap_err();
    assert_eq!(e.sqlstate(), "40001", "{e}");
    assert_eq!(
        int(&db.execute_sql(both, vec![]).unwrap()),
        100,
        "only the first applied"
    );
    // A transaction whose earlier write no longer holds fails early, at its next statement
    // that runs the write again (one touching its table: a statement of other tables does
    // not, `permafrost_sql::needed_before`), and at its COMMIT in any case.
    let mut c = Txn::begin(&db);
    c.run("UPDATE acct SET bal = bal + 1 WHERE id = 4 AND bal = 100", vec![])
        .unwrap();
    db.execute_sql("UPDATE acct SET bal = 5 WHERE id = 4", vec![]).unwrap();
    c.run("SELECT 1", vec![]).unwrap();
    let e = c.run("SELECT bal FROM acct WHERE id = 4", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "40001", "{e}");
}

#[test]
fn a_probe_runs_again_only_the_earlier_writes_of_the_rows_it_reaches() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    setup(&db);
    db.execute_ddl("CREATE TABLE line (id BIGINT, n BIGINT, acct BIGINT REFERENCES acct (id), PRIMARY KEY (id, n))")
        .unwrap();
    let mut t = Txn::begin(&db);
    // Writes of primary keys 4 and 5, each shown to the client.
    t.run("UPDATE acct SET bal = bal + 1 WHERE id = 4 AND bal = 100", vec![])
        .unwrap();
    t.run("UPDATE acct SET bal = bal + 2 WHERE id = $1", vec![Value::Int(5)])
        .unwrap();
    // The committed row 4 changes under the block: the write's condition no longer holds.
    db.execute_sql("UPDATE acct SET bal = 7 WHERE id = 4", vec![]).unwrap();
    // A point read of row 5 runs again only the write of row 5: it sees it, and does not
    // meet the changed row 4.
    assert_eq!(int(&t.run("SELECT bal FROM acct WHERE id = 5", vec![]).unwrap()), 102);
    // An insert whose foreign key references row 5 checks it after the block's writes of
    // it alone; one referencing a row the block deleted fails.
    t.run("INSERT INTO line VALUES (1, 1, 5)", vec![]).unwrap();
    t.run("DELETE FROM line WHERE id = 1 AND n = 1", vec![]).unwrap();
    t.run("INSERT INTO line VALUES (1, 1, 6)", vec![]).unwrap();
    assert_eq!(
        t.run("SELECT acct FROM line WHERE id = 1 AND n = 1", vec![])
            .unwrap()
            .to_values(),
        vec![vec![Value::Int(6)]]
    );
    // A read of row 4 runs its write again, which no longer gives what the client saw.
    let e = t.run("SELECT bal FROM acct WHERE id = 4", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "40001", "{e}");

    // Nothing of a block that keeps to its own rows is lost: writes of rows 0..4 (each
    // read back at once the first time) and two lines, then a duplicate line, or a read of
    // the whole table (which runs them all) and the COMMIT.
    let writes = |read_back: bool| {
        let mut u = Txn::begin(&db);
        for id in 0..4i64 {
            u.run("UPDATE acct SET bal = bal - 1 WHERE id = $1", vec![Value::Int(id)])
                .unwrap();
            if read_back {
                let bal = u.run("SELECT bal FROM acct WHERE id = $1", vec![Value::Int(id)]);
                assert_eq!(int(&bal.unwrap()), 99);
            }
        }
        u.run("INSERT INTO line VALUES (2, 1, 0), (2, 2, 1)", vec![]).unwrap();
        u
    };
    let mut u = writes(true);
    let e = u.run("INSERT INTO line VALUES (2, 2, 3)", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "23505", "the block's own earlier row: {e}");
    let mut u = writes(false);
    assert_eq!(
        int(&u.run("SELECT sum(bal) FROM acct WHERE id < 4", vec![]).unwrap()),
        396
    );
    u.commit().unwrap();
    assert_eq!(
        int(&db
            .execute_sql("SELECT count(*) FROM line WHERE id = 2", vec![])
            .unwrap()),
        2
    );
}

#[test]
fn concurrent_transfers_keep_the_total_and_committed_blocks_read_consistently() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::open(config(dir.path())).unwrap());
    setup(&db);
    let committed = std::sync::atomic::AtomicU64::new(0);
    let conflicts = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (db, committed, conflicts) = (db.clone(), &committed, &conflicts);
            s.spawn(move || {
                let mut x = t * 7919 + 13;
                for _ in 0..60 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let (from, to) = ((x >> 33) as i64 % 10, (x >> 45) as i64 % 10);
                    let mut tx = Txn::begin(&db);
                    // Read, compute in the client, write absolute values: without the
                    // commit's check, concurrent transfers would lose updates.
                    let read = |tx: &mut Txn, id: i64| {
                        tx.run("SELECT bal FROM acct WHERE id = $1", vec![Value::Int(id)])
                            .map(|r| int(&r))
                    };
                    let (Ok(a), Ok(b)) = (read(&mut tx, from), read(&mut tx, to)) else {
                        conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        continue;
                    };
                    if a >= 7 && from != to {
                        let set = "UPDATE acct SET bal = $1 WHERE id = $2";
                        if tx.run(set, vec![Value::Int(a - 7), Value::Int(from)]).is_err()
                            || tx.run(set, vec![Value::Int(b + 7), Value::Int(to)]).is_err()
                        {
                            conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            continue;
                        }
                    }
                    let sum = match tx.run("SELECT sum(bal) FROM acct", vec![]) {
                        Ok(r) => int(&r),
                        Err(e) => {
                            assert_eq!(e.sqlstate(), "40001", "{e}");
                            conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            continue;
                        }
                    };
                    match tx.commit() {
                        Ok(()) => {
                            // A block that commits saw one serial point: the total.
                            assert_eq!(sum, 1000);
                            committed.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        }
                        Err(e) => {
                            assert_eq!(e.sqlstate(), "40001", "{e}");
                            conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        }
                    };
                }
            });
        }
    });
    assert_eq!(total(&db), 1000);
    assert!(committed.into_inner() > 0, "some transfers committed");
    let _ = conflicts.into_inner();
    assert!(int(&db.execute_sql("SELECT min(bal) FROM acct", vec![]).unwrap()) >= 0);
}

#[test]
fn a_committed_transaction_is_replayed_with_its_clock() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let db = Database::open(config(dir.path())).unwrap();
        setup(&db);
        let mut t = Txn::begin(&db);
        t.run("UPDATE acct SET bal = bal - 5, at = now() WHERE id = 1", vec![])
            .unwrap();
        t.run(
            "UPDATE acct SET bal = bal + $1, at = now() WHERE id = $2",
            vec![Value::Int(5), Value::Int(8)],
        )
        .unwrap();
        t.run("INSERT INTO acct VALUES (42, 0, now())", vec![]).unwrap();
        t.commit().unwrap();
        // A rolled-back one (never committed) and a probe leave nothing in the log.
        let mut r = Txn::begin(&db);
        r.run("DELETE FROM acct", vec![]).unwrap();
        drop(r);
        db.execute_sql("SELECT * FROM acct ORDER BY id", vec![])
            .unwrap()
            .to_values()
    };
    let after = recovered_rows(dir.path(), "SELECT * FROM acct ORDER BY id");
    assert_eq!(before, after);
    assert_eq!(after.len(), 11);
    assert!(
        matches!(after[10][2], Value::Timestamp(t) if t == 1_700_000_000_000_000),
        "{:?}",
        after[10]
    );
}

/// A COPY inside a block is a bulk insert among its statements: later statements see its
/// rows, a rolled-back block leaves none, a bad row fails the statement and nothing else,
/// and a committed block is replayed from the command log with every row where it was
/// (the record says how many parameters the bulk insert takes).
#[test]
fn a_copy_inside_a_block_commits_with_it_and_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let rows =
        |ids: std::ops::Range<i64>| -> Vec<Value> { ids.flat_map(|id| [Value::Int(id), Value::Int(7)]).collect() };
    let before = {
        let db = Database::open(config(dir.path())).unwrap();
        setup(&db);
        let mut t = Txn::begin(&db);
        t.run("DELETE FROM acct WHERE id >= 5", vec![]).unwrap();
        let loaded = t.copy("acct", &["id", "bal"], rows(100..150)).unwrap();
        assert_eq!(loaded.affected, 50);
        let seen = t.run("SELECT count(*), sum(bal) FROM acct", vec![]).unwrap();
        assert_eq!(seen.to_values()[0][0], Value::Int(55), "the block sees its own rows");
        // A row whose key the block already holds: that statement fails, and is not one
        // of the block's (the server aborts the block then).
        let e = t.copy("acct", &["id", "bal"], rows(149..151)).unwrap_err();
        assert_eq!(e.sqlstate(), "23505", "{e}");
        assert_eq!(int(&db.execute_sql("SELECT count(*) FROM acct", vec![]).unwrap()), 10);
        t.commit().unwrap();
        assert_eq!(int(&db.execute_sql("SELECT count(*) FROM acct", vec![]).unwrap()), 55);
        // A block rolled back (never committed) leaves nothing.
        let mut r = Txn::begin(&db);
        r.copy("acct", &["id", "bal"], rows(500..600)).unwrap();
        drop(r);
        db.execute_sql("SELECT id, bal FROM acct ORDER BY id", vec![])
            .unwrap()
            .to_values()
    };
    assert_eq!(before.len(), 55);
    let after = recovered_rows(dir.path(), "SELECT id, bal FROM acct ORDER BY id");
    assert_eq!(before, after);
}

/// A probe that writes a replicated table runs at one partition (every copy gives the same
/// result, and the probe is undone), leaving out earlier writes pinned to another one: a
/// pgbench TPC-B block (three updates at their partitions, an insert into its replicated
/// history) probes without a multi-partition transaction. Its commit writes every copy.
#[test]
fn probes_of_replicated_writes_run_at_one_partition() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    setup(&db);
    db.execute_ddl("CREATE TABLE hist (id BIGINT, delta BIGINT)").unwrap();
    let before = db.stats_now().unwrap();
    let mut t = Txn::begin(&db);
    for id in [1, 2, 3, 4] {
        t.run("UPDATE acct SET bal = bal - 1 WHERE id = $1", vec![Value::Int(id)])
            .unwrap();
    }
    let r = t.run("INSERT INTO hist VALUES (1, -4)", vec![]).unwrap();
    assert_eq!(r.affected, 1);
    let r = t.run("UPDATE hist SET delta = delta * 2 WHERE id = 1", vec![]).unwrap();
    assert_eq!(r.affected, 1, "one row, counted once");
    let r = t.run("SELECT sum(delta) FROM hist", vec![]).unwrap();
    assert_eq!(int(&r), -8, "the block sees its own rows");
    let mid = db.stats_now().unwrap();
    assert_eq!(
        mid.mp_coordinated, before.mp_coordinated,
        "no probe held two partitions: {mid:?}"
    );
    t.commit().unwrap();
    assert_eq!(total(&db), 996);
    let copies = db
        .table_stats()
        .unwrap()
        .into_iter()
        .find(|t| t.name == "hist")
        .unwrap();
    assert_eq!(
        (copies.replicated, copies.hot_tuples),
        (true, 2),
        "a copy at each partition"
    );
    assert_eq!(int(&db.execute_sql("SELECT sum(delta) FROM hist", vec![]).unwrap()), -8);
}

/// A block over evicted tuples: its probes and its commit fetch them and run again, so
/// the client sees only latency, never 40001 for that reason; multi-partition included.
/// A database with the anti-cache whose table `big` has 400 rows of about 1 KiB (`val`
/// of row `id` is `val(id)`), most of them evicted.
fn evicted_big(dir: &Path, val: impl Fn(i64) -> i64) -> Database {
    let mut ac = permafrost_executor::AntiCacheConfig::new(dir.join("blocks"));
    ac.eviction_size = 256 << 10;
    let config = Config::builder()
        .partitions(2)
        .memory_limit(16 << 20)
        .lru_sample_rate(1.0)
        .anticache(ac)
        .command_log(LogConfig::new(dir.join("log")))
        .build()
        .unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl("CREATE TABLE big (id BIGINT PRIMARY KEY, val BIGINT NOT NULL, pad VARCHAR(1000) NOT NULL)")
        .unwrap();
    for id in 0..400i64 {
        db.execute_sql(
            "INSERT INTO big VALUES ($1, $2, $3)",
            vec![
                Value::Int(id),
                Value::Int(val(id)),
                Value::from("x".repeat(900).as_str()),
            ],
        )
        .unwrap();
    }
    db.evict_now(64 << 20).unwrap();
    db.evict_now(64 << 20).unwrap();
    let evicted = db.stats_now().unwrap().evicted_now;
    assert!(evicted > 100, "tuples were evicted: {evicted}");
    db
}

#[test]
fn blocks_over_evicted_data_fetch_it_and_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = evicted_big(dir.path(), |_| 10);
    let restarts = db.stats_now().unwrap().restarts_evicted;
    let mut t = Txn::begin(&db);
    assert_eq!(int(&t.run("SELECT val FROM big WHERE id = 3", vec![]).unwrap()), 10);
    t.run("UPDATE big SET val = val - 1 WHERE id = 3", vec![]).unwrap();
    t.run("UPDATE big SET val = val + 1 WHERE id = 250", vec![]).unwrap();
    // Multi-partition: every tuple.
    assert_eq!(int(&t.run("SELECT sum(val) FROM big", vec![]).unwrap()), 4000);
    db.evict_now(64 << 20).unwrap();
    t.commit().unwrap();
    assert!(
        db.stats_now().unwrap().restarts_evicted > restarts,
        "probes or the commit ran again after fetching evicted tuples"
    );
    assert_eq!(
        int(&db.execute_sql("SELECT val FROM big WHERE id = 3", vec![]).unwrap()),
        9
    );
    assert_eq!(
        int(&db.execute_sql("SELECT val FROM big WHERE id = 250", vec![]).unwrap()),
        11
    );
    assert_eq!(int(&db.execute_sql("SELECT sum(val) FROM big", vec![]).unwrap()), 4000);
}

/// A block that inserts rows keyed by a sequence, reads one back by its key, and runs a
/// statement over all partitions commits, whatever its start time: each probe and the
/// commit draw new keys at the block's home partition, so the keys its client was shown
/// are the keys inserted (before, a block whose home was not the first partition failed
/// at COMMIT with 40001). Replay gives the same rows.
#[test]
fn keys_a_sequence_gave_probes_are_the_keys_a_multi_partition_commit_inserts() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let db = Database::open(config(dir.path())).unwrap();
        db.execute_ddl("CREATE TABLE items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, qty BIGINT NOT NULL)")
            .unwrap();
        for b in 0..16i64 {
            let mut t = Txn::begin(&db);
            t.now += b * 7_919;
            let insert = "INSERT INTO items (name, qty) VALUES ($1, $2) RETURNING id";
            let a = int(&t
                .run(insert, vec![Value::from(format!("a{b}")), Value::Int(1)])
                .unwrap());
            let c = int(&t
                .run(insert, vec![Value::from(format!("c{b}")), Value::Int(2)])
                .unwrap());
            let name = t
                .run("SELECT name FROM items WHERE id = $1", vec![Value::Int(a)])
                .unwrap();
            assert_eq!(name.to_values(), vec![vec![Value::from(format!("a{b}"))]], "block {b}");
            let sum = t
                .run(
                    "SELECT sum(qty) FROM items WHERE name = $1 OR name = $2",
                    vec![Value::from(format!("a{b}")), Value::from(format!("c{b}"))],
                )
                .unwrap();
            assert_eq!(int(&sum), 3, "block {b}");
            t.commit().unwrap_or_else(|e| panic!("block {b}: {e}"));
            for (id, name) in [(a, format!("a{b}")), (c, format!("c{b}"))] {
                let rows = db
                    .execute_sql("SELECT name FROM items WHERE id = $1", vec![Value::Int(id)])
                    .unwrap();
                assert_eq!(rows.to_values(), vec![vec![Value::from(name)]], "block {b}");
            }
        }
        db.execute_sql("SELECT * FROM items ORDER BY id", vec![])
            .unwrap()
            .to_values()
    };
    assert_eq!(before.len(), 32);
    assert_eq!(before, recovered_rows(dir.path(), "SELECT * FROM items ORDER BY id"));
}

/// COMMITs that looked for an earlier place: placed there, refused
/// (`permafrost_commits_placed_earlier_total`).
fn placements(db: &Database) -> (u64, u64) {
    let s = db.stats_now().unwrap();
    (s.commits_placed_earlier, s.commits_refused_earlier)
}

/// How many reads COMMITs found unchanged and changed (`permafrost_commit_read_checks_total`).
fn read_checks(db: &Database) -> (u64, u64) {
    let s = db.stats_now().unwrap();
    (s.commit_reads_unchanged, s.commit_reads_changed)
}

#[test]
fn a_commit_does_not_run_again_reads_whose_rows_nothing_changed_and_checks_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    setup(&db);
    let range = "SELECT sum(bal) FROM acct WHERE id BETWEEN $1 AND $2";
    let point = "SELECT bal FROM acct WHERE id = $1";

    // Concurrent commits outside what the block read: the reads are not run again (both
    // partitions hold rows of the range, and each is asked), and the block commits.
    let mut t = Txn::begin(&db);
    assert_eq!(int(&t.run(range, vec![Value::Int(0), Value::Int(4)]).unwrap()), 500);
    assert_eq!(int(&t.run(point, vec![Value::Int(7)]).unwrap()), 100);
    db.execute_sql("UPDATE acct SET bal = 1 WHERE id = 8", vec![]).unwrap();
    db.execute_sql("DELETE FROM acct WHERE id = 9", vec![]).unwrap();
    t.run("UPDATE acct SET bal = bal + 1 WHERE id = 5", vec![]).unwrap();
    let before = read_checks(&db);
    t.commit().unwrap();
    let after = read_checks(&db);
    assert!(
        after.0 >= before.0 + 2,
        "two reads found unchanged: {before:?} -> {after:?}"
    );
    assert_eq!(after.1, before.1, "none found changed");
    assert_eq!(int(&db.execute_sql(point, vec![Value::Int(5)]).unwrap()), 101);

    // A commit that changed a row of the range after the read, and a row the block
    // writes: the read runs again, gives another sum; no earlier place will do (the
    // other commit wrote what this one writes), and the block fails with 40001, applying
    // nothing.
    let mut t = Txn::begin(&db);
    assert_eq!(int(&t.run(range, vec![Value::Int(0), Value::Int(4)]).unwrap()), 500);
    t.run("UPDATE acct SET bal = bal + 1 WHERE id = 4", vec![]).unwrap();
    db.execute_sql("UPDATE acct SET bal = 99 WHERE id = 4", vec![]).unwrap();
    let (before, places) = (read_checks(&db), placements(&db));
    let e = t.commit().unwrap_err();
    assert_eq!(e.sqlstate(), "40001", "{e}");
    assert!(read_checks(&db).1 > before.1, "the read was found changed");
    assert_eq!(placements(&db), (places.0, places.1 + 1), "no earlier place");
    assert_eq!(int(&db.execute_sql(point, vec![Value::Int(4)]).unwrap()), 99);

    // A row inserted into the range (a phantom) counts as a change too; so does one
    // deleted from it. The block may commit just before that change (nothing that
    // committed after it read or wrote row 0), else it fails: either way the change was
    // found, and what it did holds.
    for change in [
        "INSERT INTO acct (id, bal) VALUES (9, 0)",
        "DELETE FROM acct WHERE id = 3",
    ] {
        let mut t = Txn::begin(&db);
        let shown = t
            .run("SELECT count(*) FROM acct WHERE id BETWEEN 3 AND 9", vec![])
            .unwrap();
        t.run("UPDATE acct SET bal = bal + 1 WHERE id = 0", vec![]).unwrap();
        let zero = int(&db.execute_sql(point, vec![Value::Int(0)]).unwrap());
        db.execute_sql(change, vec![]).unwrap();
        let places = placements(&db);
        let r = t.commit();
        let now = placements(&db);
        match r {
            Ok(()) => {
                assert_eq!(now, (places.0 + 1, places.1), "{change}: placed earlier");
                assert_eq!(int(&db.execute_sql(point, vec![Value::Int(0)]).unwrap()), zero + 1);
            }
            Err(e) => {
                assert_eq!(e.sqlstate(), "40001", "{change}: {e} (shown {:?})", shown.to_values());
                assert_eq!(now, (places.0, places.1 + 1), "{change}: no earlier place");
                assert_eq!(int(&db.execute_sql(point, vec![Value::Int(0)]).unwrap()), zero);
            }
        }
    }

    // A change that leaves what the read gave as it was: found changed, run again, and the
    // same result commits.
    let mut t = Txn::begin(&db);
    let shown = int(&t.run(point, vec![Value::Int(1)]).unwrap());
    t.run("UPDATE acct SET bal = bal + 1 WHERE id = 0", vec![]).unwrap();
    db.execute_sql("UPDATE acct SET at = now() WHERE id = 1", vec![])
        .unwrap();
    t.commit().unwrap();
    assert_eq!(int(&db.execute_sql(point, vec![Value::Int(1)]).unwrap()), shown);
}

#[test]
fn a_commit_whose_reads_changed_takes_the_place_before_the_change_when_nothing_after_it_touched_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    setup(&db);
    let point = "SELECT bal FROM acct WHERE id = $1";
    let bal = |id: i64| int(&db.execute_sql(point, vec![Value::Int(id)]).unwrap());

    // t1 read row 1, then t2 changed it and committed; t2 read and wrote row 1 only. t1
    // commits just before t2: the order t1, t2 gives what both were shown.
    let mut t1 = Txn::begin(&db);
    assert_eq!(int(&t1.run(point, vec![Value::Int(1)]).unwrap()), 100);
    t1.run("UPDATE acct SET bal = bal + 1 WHERE id = 2", vec![]).unwrap();
    let mut t2 = Txn::begin(&db);
    t2.run("UPDATE acct SET bal = 50 WHERE id = 1", vec![]).unwrap();
    t2.commit().unwrap();
    let places = placements(&db);
    t1.commit().unwrap();
    assert_eq!(placements(&db), (places.0 + 1, places.1));
    assert_eq!((bal(1), bal(2)), (50, 101));

    // Write skew between blocks: t4 read row 2, which t3 writes, and t3 read row 1, which
    // t4 changed. Neither order gives what both were shown: t3 fails.
    let mut t3 = Txn::begin(&db);
    assert_eq!(int(&t3.run(point, vec![Value::Int(1)]).unwrap()), 50);
    t3.run("UPDATE acct SET bal = bal + 1 WHERE id = 2", vec![]).unwrap();
    let mut t4 = Txn::begin(&db);
    assert_eq!(int(&t4.run(point, vec![Value::Int(2)]).unwrap()), 101);
    t4.run("UPDATE acct SET bal = 40 WHERE id = 1", vec![]).unwrap();
    t4.commit().unwrap();
    let places = placements(&db);
    assert_eq!(t3.commit().unwrap_err().sqlstate(), "40001");
    assert_eq!(placements(&db), (places.0, places.1 + 1));
    assert_eq!((bal(1), bal(2)), (40, 101));

    // A statement outside a block read row 2 after t6 committed: the place before t6
    // would come before that read, which did not see t5's change. t5 fails.
    let mut t5 = Txn::begin(&db);
    assert_eq!(int(&t5.run(point, vec![Value::Int(1)]).unwrap()), 40);
    t5.run("UPDATE acct SET bal = bal + 1 WHERE id = 2", vec![]).unwrap();
    let mut t6 = Txn::begin(&db);
    t6.run("UPDATE acct SET bal = 30 WHERE id = 1", vec![]).unwrap();
    t6.commit().unwrap();
    assert_eq!(bal(2), 101);
    let places = placements(&db);
    assert_eq!(t5.commit().unwrap_err().sqlstate(), "40001");
    assert_eq!(placements(&db), (places.0, places.1 + 1));
    assert_eq!((bal(1), bal(2)), (30, 101));

    // What was committed replays to the same rows.
    assert_replays_to_same_rows(db, dir.path(), "SELECT * FROM acct ORDER BY id");
}

/// Write skew under concurrency, with commits placed earlier: blocks read how many doctors
/// of a group are on call and take one off call when at least two are; other blocks read a
/// group and count their own visits in another table (their reads may change before
/// COMMIT, and they may then commit at an earlier place); a checker puts a group back on
/// call once one doctor is left, after reading the count in a block of its own. A block
/// that commits saw one serial point, so the checker never reads 0. Without the check that
/// nothing committed after the place read what the block writes (`Recent::read_after`),
/// two blocks take the last two off.
#[test]
fn concurrent_blocks_placed_earlier_never_take_the_last_doctor_off_call() {
    const GROUPS: i64 = 2;
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::open(config(dir.path())).unwrap());
    db.execute_ddl("CREATE TABLE doc (id BIGINT PRIMARY KEY, on_call BOOLEAN NOT NULL)")
        .unwrap();
    db.execute_ddl("CREATE TABLE visits (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)")
        .unwrap();
    for id in 0..GROUPS * 10 {
        db.execute_sql("INSERT INTO doc (id, on_call) VALUES ($1, true)", vec![Value::Int(id)])
            .unwrap();
    }
    for id in 0..4 {
        db.execute_sql("INSERT INTO visits (id, n) VALUES ($1, 0)", vec![Value::Int(id)])
            .unwrap();
    }
    let count = "SELECT count(*) FROM doc WHERE id BETWEEN $1 AND $2 AND on_call";
    let group = |g: i64| vec![Value::Int(g * 10), Value::Int(g * 10 + 9)];
    let places = placements(&db);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (resets, nobody) = (
        std::sync::atomic::AtomicU64::new(0),
        std::sync::atomic::AtomicU64::new(0),
    );
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let db = db.clone();
                s.spawn(move || {
                    let mut x = t * 104_729 + 7;
                    for i in 0..800 {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        let (g, d) = ((x >> 33) as i64 % GROUPS, (x >> 45) as i64 % 10);
                        let mut tx = Txn::begin(&db);
                        let Ok(n) = tx.run(count, group(g)).map(|r| int(&r)) else {
                            continue;
                        };
                        let ok = if i % 3 != 0 {
                            // Off call, if another stays on.
                            let id = Value::Int(g * 10 + d);
                            let on = tx.run("SELECT on_call FROM doc WHERE id = $1", vec![id.clone()]);
                            match on.map(|r| r.to_values()[0][0].clone()) {
                                Ok(Value::Bool(true)) if n >= 2 => {
                                    tx.run("UPDATE doc SET on_call = false WHERE id = $1", vec![id]).is_ok()
                                }
                                Ok(_) => true,
                                Err(_) => false,
                            }
                        } else {
                            tx.run("UPDATE visits SET n = n + 1 WHERE id = $1", vec![Value::Int(t as i64)])
                                .is_ok()
                        };
                        if ok && let Err(e) = tx.commit() {
                            assert_eq!(e.sqlstate(), "40001", "{e}");
                        }
                    }
                })
            })
            .collect();
        let (db, done, resets, nobody) = (db.clone(), &done, &resets, &nobody);
        s.spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                for g in 0..GROUPS {
                    let mut tx = Txn::begin(&db);
                    let Ok(n) = tx.run(count, group(g)).map(|r| int(&r)) else {
                        continue;
                    };
                    if n > 1 {
                        continue;
                    }
                    let all = "UPDATE doc SET on_call = true WHERE id BETWEEN $1 AND $2";
                    if tx.run(all, group(g)).is_ok() && tx.commit().is_ok() {
                        resets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if n == 0 {
                            nobody.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            }
        });
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
    });
    let now = placements(&db);
    assert_eq!(nobody.into_inner(), 0, "a group had nobody on call ({now:?})");
    assert!(resets.into_inner() > 0, "groups came down to one doctor");
    assert!(now.0 > places.0, "some commits were placed earlier: {now:?}");
    // What was committed replays to the same rows.
    assert_replays_to_same_rows(db, dir.path(), "SELECT * FROM doc ORDER BY id");
}

/// Runs `f` on another thread and gives its result if it ends within `wait`.
fn within<T: Send + 'static>(wait: std::time::Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(wait).ok()
}

/// Inside a block a statement is answered without waiting for the command log to make
/// what it saw durable; its COMMIT waits, as a read outside a block does.
#[test]
fn statements_inside_a_block_do_not_wait_for_the_log_and_its_commit_does() {
    let dir = tempfile::tempdir().unwrap();
    let fs = permafrost_io::FaultyFs::new();
    let db = Arc::new(Database::open_with_fs(config(dir.path()), Arc::new(fs.clone())).unwrap());
    setup(&db);
    fs.hold_syncs(true);
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || db.execute_sql("UPDATE acct SET bal = 7 WHERE id = 1", vec![]))
    };
    // The block sees the write while it is not durable (the log cannot sync).
    let block = {
        let db = db.clone();
        within(std::time::Duration::from_secs(10), move || {
            let mut t = Txn::begin(&db);
            loop {
                let bal = int(&t
                    .run("SELECT bal FROM acct WHERE id = $1", vec![Value::Int(1)])
                    .unwrap());
                if bal == 7 {
                    break;
                }
                t.all.pop();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            t.all
        })
    }
    .expect("a statement inside a block waited for the log to sync what it saw");
    // Outside a block, the same read waits for the write to be durable; so does the
    // block's COMMIT.
    let short = std::time::Duration::from_millis(300);
    let read = {
        let db = db.clone();
        within(short, move || {
            db.execute_sql("SELECT bal FROM acct WHERE id = 1", vec![])
        })
    };
    assert!(
        read.is_none(),
        "a read outside a block was answered before what it saw was durable"
    );
    let commit = {
        let db = db.clone();
        within(short, move || {
            common::block_on(db.commit_interactive(&block, 1_700_000_000_000_000, StopFlag::new(), Place::Here))
        })
    };
    assert!(
        commit.is_none(),
        "a COMMIT was answered before what it read was durable"
    );
    fs.hold_syncs(false);
    writer.join().unwrap().unwrap();
    assert_eq!(
        int(&db.execute_sql("SELECT bal FROM acct WHERE id = 1", vec![]).unwrap()),
        7
    );
}

/// A block's read of every partition run one partition at a time gives what the whole
/// statement gives: rows, aggregates, order, DISTINCT, LIMIT and OFFSET; reads that pin a
/// partition or join are not run so.
#[test]
fn reads_in_parts_give_what_the_whole_statement_gives() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.execute_ddl("CREATE TABLE r (id BIGINT PRIMARY KEY, k BIGINT NOT NULL, c VARCHAR(20))")
        .unwrap();
    for id in 0..60i64 {
        db.execute_sql(
            "INSERT INTO r VALUES ($1, $2, $3)",
            vec![
                Value::Int(id),
                Value::Int(id % 7),
                Value::from(format!("c{}", id % 11).as_str()),
            ],
        )
        .unwrap();
    }
    let range = vec![Value::Int(5), Value::Int(44)];
    for sql in [
        "SELECT c FROM r WHERE id BETWEEN $1 AND $2",
        "SELECT sum(k) FROM r WHERE id BETWEEN $1 AND $2",
        "SELECT c FROM r WHERE id BETWEEN $1 AND $2 ORDER BY c, id",
        "SELECT DISTINCT c FROM r WHERE id BETWEEN $1 AND $2 ORDER BY c",
        "SELECT id FROM r WHERE id BETWEEN $1 AND $2 ORDER BY id DESC LIMIT 5 OFFSET 3",
        "SELECT k, count(*), min(c) FROM r WHERE id BETWEEN $1 AND $2 GROUP BY k ORDER BY k",
        "SELECT count(*) FROM r WHERE id BETWEEN $1 AND $2 AND 1 = 0",
        "SELECT id, c FROM r WHERE id > $1 AND id < $2 AND k = 3 ORDER BY id",
    ] {
        let s = stmt(&db, sql);
        let parts = db
            .read_in_parts(&s, range.clone(), StopFlag::new())
            .unwrap_or_else(|| panic!("{sql} runs in parts"));
        let got = common::block_on(parts).unwrap();
        let want = db.execute_sql(sql, range.clone()).unwrap();
        let (mut g, mut w) = (got.to_values(), want.to_values());
        if !sql.contains("ORDER BY") {
            g.sort();
            w.sort();
        }
        assert_eq!(g, w, "{sql}");
        assert!(!w.is_empty(), "{sql}");
    }
    for sql in [
        "SELECT c FROM r WHERE id = $1 AND k < $2",
        "SELECT a.c FROM r a JOIN r b ON a.id = b.k WHERE a.id BETWEEN $1 AND $2",
        "UPDATE r SET k = 1 WHERE id BETWEEN $1 AND $2",
    ] {
        assert!(
            db.read_in_parts(&stmt(&db, sql), range.clone(), StopFlag::new())
                .is_none(),
            "{sql}"
        );
    }
}

/// A read in parts that reaches evicted tuples runs again as one statement, with them
/// (those past `DEFER_INDEX_READS` read from their blocks after the first part, which the
/// server streams: here read to the end).
#[test]
fn a_read_in_parts_over_evicted_tuples_runs_as_one_statement() {
    let dir = tempfile::tempdir().unwrap();
    let db = evicted_big(dir.path(), |id| id);
    let sql = "SELECT sum(val), count(*) FROM big WHERE id BETWEEN $1 AND $2";
    let s = stmt(&db, sql);
    for hi in [9, 399] {
        let got = common::block_on(
            db.read_in_parts(&s, vec![Value::Int(0), Value::Int(hi)], StopFlag::new())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            common::all_values(got),
            vec![vec![Value::Decimal((hi * (hi + 1) / 2).into()), Value::Int(hi + 1)]],
            "0..={hi}"
        );
    }
}

/// A commit's log record lists its writes only: the same write logs the same bytes with
/// twenty queries around it or none, and the state is recovered all the same.
#[test]
fn a_commit_logs_its_writes_and_not_its_queries() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let db = Database::open(config(dir.path())).unwrap();
        setup(&db);
        let logged = |db: &Database| db.log_stats().unwrap().bytes;
        let write = "UPDATE acct SET bal = bal + $1 WHERE id = $2";
        let mut t = Txn::begin(&db);
        t.run(write, vec![Value::Int(3), Value::Int(4)]).unwrap();
        let start = logged(&db);
        t.commit().unwrap();
        let alone = logged(&db) - start;
        let mut t = Txn::begin(&db);
        for id in 0..10i64 {
            t.run("SELECT bal FROM acct WHERE id = $1", vec![Value::Int(id)])
                .unwrap();
            t.run(
                "SELECT sum(bal) FROM acct WHERE id BETWEEN $1 AND 9",
                vec![Value::Int(id)],
            )
            .unwrap();
        }
        t.run(write, vec![Value::Int(3), Value::Int(4)]).unwrap();
        t.run("SELECT bal FROM acct WHERE id = 4", vec![]).unwrap();
        let start = logged(&db);
        t.commit().unwrap();
        // (Its record lists both partitions, the first one its write's: one u32 more.)
        assert_eq!(logged(&db) - start, alone + 4, "the queries are not logged");
        db.execute_sql("SELECT * FROM acct ORDER BY id", vec![])
            .unwrap()
            .to_values()
    };
    let after = recovered_rows(dir.path(), "SELECT * FROM acct ORDER BY id");
    assert_eq!(before, after);
    assert_eq!(after[4][1], Value::Int(106));
}

/// `random()` and `gen_random_uuid()` draw from a state the log record keeps: a probe and
/// the COMMIT of a block draw the values its client was shown (the COMMIT does not fail
/// on them), and replay rebuilds exactly the values every client was acknowledged, in
/// blocks, in plain statements and in column defaults.
#[test]
fn random_values_are_the_ones_shown_at_commit_and_after_replay() {
    let dir = tempfile::tempdir().unwrap();
    let sql = "SELECT id, u, r, n FROM rnd ORDER BY id";
    let before = {
        let db = Database::open(config(dir.path())).unwrap();
        db.execute_ddl("CREATE TABLE rnd (id BIGINT PRIMARY KEY, u UUID DEFAULT gen_random_uuid(), r DOUBLE PRECISION DEFAULT random(), n DOUBLE PRECISION)")
            .unwrap();
        db.execute_sql("INSERT INTO rnd (id, n) VALUES (1, random()), (2, random())", vec![])
            .unwrap();
        db.execute_sql(
            "INSERT INTO rnd (id, u, n) SELECT g, gen_random_uuid(), random() FROM generate_series(3, 20) g",
            vec![],
        )
        .unwrap();
        db.execute_sql("UPDATE rnd SET n = random() WHERE id > 15", vec![])
            .unwrap();
        let mut t = Txn::begin(&db);
        let shown = t
            .run("INSERT INTO rnd (id) VALUES (100), (101) RETURNING u, r", vec![])
            .unwrap()
            .to_values();
        t.run("UPDATE rnd SET n = random() WHERE id = 100", vec![]).unwrap();
        let read = t
            .run("SELECT n, gen_random_uuid() FROM rnd WHERE id = 100", vec![])
            .unwrap()
            .to_values();
        t.commit().unwrap();
        let stored = db
            .execute_sql("SELECT u, r FROM rnd WHERE id >= 100 ORDER BY id", vec![])
            .unwrap()
            .to_values();
        assert_eq!(shown, stored, "the commit stored what its probe showed");
        let n = db
            .execute_sql("SELECT n FROM rnd WHERE id = 100", vec![])
            .unwrap()
            .to_values();
        assert_eq!(n[0][0], read[0][0]);
        let all = db.execute_sql(sql, vec![]).unwrap().to_values();
        let distinct: std::collections::HashSet<String> = all.iter().map(|r| r[1].to_string()).collect();
        assert_eq!(distinct.len(), all.len(), "every uuid differs: {all:?}");
        assert!(
            all.iter()
                .all(|r| matches!(r[2], Value::Double(x) if (0.0..1.0).contains(&x)))
        );
        all
    };
    assert_eq!(before, recovered_rows(dir.path(), sql));
}
