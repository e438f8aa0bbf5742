//! Fences (partition/fence.rs): a queued multi-partition transaction takes an idle
//! participant's token instead of waking its thread, and still runs after everything sent
//! to that participant before it and before everything sent after it, as the queue's
//! order would have it.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use permafrost_executor::{Config, Database, Request, StopFlag};
use permafrost_types::Value;

const ACCOUNTS: i64 = 200;

fn open() -> Database {
    let config = Config::builder().partitions(2).memory_limit(64 << 20).build().unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl(
        "CREATE TABLE acct (id BIGINT NOT NULL, grp BIGINT NOT NULL, bal BIGINT NOT NULL, PRIMARY KEY (grp, id))
           WITH (partition_by = 'grp')",
    )
    .unwrap();
    for id in 0..ACCOUNTS {
        db.execute_sql(
            "INSERT INTO acct VALUES ($1, $2, 0)",
            vec![Value::Int(id), Value::Int(id % 20)],
        )
        .unwrap();
    }
    db
}

fn value(rows: permafrost_executor::Rows) -> String {
    rows.iter()
        .next()
        .expect("a row")
        .values()
        .next()
        .expect("a value")
        .to_string()
}

/// An idle participant is not woken: each queued multi-partition statement of a caller
/// alone takes the other partition's token itself.
#[test]
fn an_idle_participant_takes_part_without_its_thread() {
    let db = open();
    let before = db.stats_now().unwrap();
    for i in 0..20 {
        let rows = db
            .execute_sql("SELECT count(*) FROM acct WHERE bal >= $1", vec![Value::Int(-i)])
            .unwrap();
        assert_eq!(value(rows), ACCOUNTS.to_string());
    }
    let after = db.stats_now().unwrap();
    assert_eq!(after.mp_coordinated, before.mp_coordinated + 20);
    assert_eq!(
        after.mp_idle_participants,
        before.mp_idle_participants + 20,
        "{after:?}"
    );
}

/// A caller that does not wait for its single-partition write before it submits a
/// multi-partition read (a pipelining client) reads its write, whatever else the
/// partitions are busy with: a fence never lets a transaction overtake what was sent to a
/// participant before it; and a single-partition read sent after a multi-partition write
/// reads that write: nothing overtakes a fenced transaction either. Other callers keep
/// both partitions' queues busy meanwhile, so that the first message is often still
/// queued when the second is sent, and idle now and then, so that fences go up.
#[test]
fn a_fenced_transaction_never_overtakes_what_was_sent_before_it() {
    let db = Arc::new(open());
    let prep = |sql: &str| db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap());
    let write = prep("UPDATE acct SET bal = $3 WHERE grp = $1 AND id = $2");
    let read = prep("SELECT bal FROM acct WHERE id = $1");
    let bump = prep("UPDATE acct SET bal = bal + 0 WHERE grp = $1 AND id = $2");
    let write_any = prep("UPDATE acct SET bal = $2 WHERE id = $1");
    let read_one = prep("SELECT bal FROM acct WHERE grp = $1 AND id = $2");
    let stop = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        for t in 0..2i64 {
            let (db, bump, stop) = (db.clone(), bump.clone(), stop.clone());
            s.spawn(move || {
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    // Several queued at once, then a pause: the partitions go idle now
                    // and then, so that fences go up at times as well.
                    let pending: Vec<_> = (0..8)
                        .map(|j| {
                            let id = 20 + (i * 8 + j) % (ACCOUNTS - 20);
                            db.submit(Request::statement(&bump, vec![Value::Int(id % 20), Value::Int(id)]))
                        })
                        .collect();
                    for f in pending {
                        common::block_on(f).unwrap();
                    }
                    i += 2;
                    if i % 16 == 0 {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                }
            });
        }
        let (done, finished) = std::sync::mpsc::channel();
        let (db2, stop2) = (db.clone(), stop.clone());
        s.spawn(move || {
            for round in 1..=3000i64 {
                // Accounts 0..20 are one per group, so both partitions in turn.
                let id = round % 20;
                let w = db2.submit(Request::statement(
                    &write,
                    vec![Value::Int(id), Value::Int(id), Value::Int(round)],
                ));
                let r = db2.submit(
                    Request::statement(&read, vec![Value::Int(id)])
                        .stop(StopFlag::new())
                        .streamed(),
                );
                let seen = value(common::block_on(r).unwrap());
                if seen != round.to_string() {
                    stop2.store(true, Ordering::Relaxed);
                    panic!("round {round}: the read saw {seen}, not its own write");
                }
                assert_eq!(common::block_on(w).unwrap().affected, 1);
                // And the other way round: a multi-partition write, then a
                // single-partition read of its row sent before the write is done.
                let w = db2.submit(Request::statement(&write_any, vec![Value::Int(id), Value::Int(-round)]));
                let r = db2.submit(Request::statement(&read_one, vec![Value::Int(id), Value::Int(id)]));
                let seen = value(common::block_on(r).unwrap());
                if seen != (-round).to_string() {
                    stop2.store(true, Ordering::Relaxed);
                    panic!("round {round}: the read saw {seen}, not the write sent before it");
                }
                assert_eq!(common::block_on(w).unwrap().affected, 1);
            }
            done.send(()).unwrap();
        });
        // A liveness bound, not a speed figure (the rounds take well under a second): a
        // fence that let its coordinator wait for a participant waiting for it would hang.
        let r = finished.recv_timeout(std::time::Duration::from_secs(120));
        stop.store(true, Ordering::Relaxed);
        r.expect("the rounds completed");
    });
}
