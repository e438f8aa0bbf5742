//! Transactions through the embedded API: single- and multi-partition procedures,
//! rollback of user aborts, errors and panics, and serializability of concurrent
//! multi-partition transfers.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use permafrost_executor::{Config, Database, Error, ProcedureDef, Request};
use permafrost_types::Value;
use rand::{Rng, SeedableRng};

const ACCOUNTS: i64 = 200;
const INITIAL: i64 = 1_000;

fn bank(partitions: u32) -> Database {
    let db = Database::open(Config::builder().partitions(partitions).build().unwrap()).unwrap();
    db.execute_ddl(
        "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, note VARCHAR(200))
           WITH (partition_by = 'id');
         CREATE TABLE audit (id BIGINT PRIMARY KEY, msg TEXT) WITH (partition_by = 'id')",
    )
    .unwrap();
    db.register(
        ProcedureDef::new("Open")
            .partition_param(0)
            .statement("INSERT INTO accounts (id, balance) VALUES (?, ?)")
            .body(|ctx, p| ctx.execute(0, p)),
    )
    .unwrap();
    db.register(
        ProcedureDef::new("Get")
            .partition_param(0)
            .statement("SELECT balance FROM accounts WHERE id = ?")
            .body(|ctx, p| ctx.execute(0, p)),
    )
    .unwrap();
    db.register(
        ProcedureDef::new("Transfer")
            .multi_partition()
            .statement("SELECT balance FROM accounts WHERE id = ?")
            .statement("UPDATE accounts SET balance = balance + ? WHERE id = ?")
            .body(|ctx, p| {
                let (from, to, amount) = (p[0].clone(), p[1].clone(), p[2].as_i64().unwrap());
                let rows = ctx.execute(0, std::slice::from_ref(&from))?;
                let Some(balance) = rows.iter().next().and_then(|r| r.get_i64(0)) else {
                    return Err(ctx.abort("no such account"));
                };
                if balance < amount {
                    return Err(ctx.abort("insufficient funds"));
                }
                ctx.execute(1, &[Value::Int(-amount), from])?;
                let r = ctx.execute(1, &[Value::Int(amount), to])?;
                if r.affected != 1 {
                    return Err(ctx.abort("no such target account"));
                }
                Ok(r)
            }),
    )
    .unwrap();
    db.register(
        ProcedureDef::new("Total")
            .multi_partition()
            .statement("SELECT SUM(balance)::bigint, COUNT(*) FROM accounts")
            .body(|ctx, _| ctx.execute(0, &[])),
    )
    .unwrap();
    for id in 0..ACCOUNTS {
        db.call("Open", vec![Value::Int(id), Value::Int(INITIAL)]).unwrap();
    }
    db
}

fn total(db: &Database) -> (i64, i64) {
    let r = db.call("Total", vec![]).unwrap();
    let row = r.row(0);
    (row.get_i64(0).unwrap(), row.get_i64(1).unwrap())
}

#[test]
fn rows_spread_over_partitions_and_are_found_by_key() {
    let db = bank(4);
    let mut per_partition = vec![];
    for p in 0..4 {
        per_partition.push(
            db.with_partition(p, |s| s.table(0).map_or(0, |t| t.live_tuples()))
                .unwrap(),
        );
    }
    assert_eq!(per_partition.iter().sum::<u32>(), ACCOUNTS as u32);
    assert!(per_partition.iter().all(|&n| n > 20), "{per_partition:?}");
    for id in 0..ACCOUNTS {
        let r = db.call("Get", vec![Value::Int(id)]).unwrap();
        assert_eq!(r.row(0).get_i64(0), Some(INITIAL));
    }
    assert_eq!(total(&db), (ACCOUNTS * INITIAL, ACCOUNTS));
}

#[test]
fn user_abort_rolls_back_everything() {
    let db = bank(2);
    // Debits the source, then finds the target missing and aborts.
    let e = db
        .call("Transfer", vec![Value::Int(1), Value::Int(9999), Value::Int(10)])
        .unwrap_err();
    assert!(
        matches!(e, Error::Aborted(ref m) if m.contains("no such target")),
        "{e}"
    );
    assert_eq!(e.sqlstate(), "P0001");
    assert_eq!(
        db.call("Get", vec![Value::Int(1)]).unwrap().row(0).get_i64(0),
        Some(INITIAL)
    );
    let e = db
        .call("Transfer", vec![Value::Int(1), Value::Int(2), Value::Int(INITIAL + 1)])
        .unwrap_err();
    assert!(matches!(e, Error::Aborted(_)));
    assert_eq!(db.stats().aborted_user, 2);
}

#[test]
fn statement_errors_and_panics_roll_back_and_the_partition_keeps_serving() {
    let db = bank(2);
    db.register(
        ProcedureDef::new("InsertThenDuplicate")
            .partition_param(0)
            .statement("INSERT INTO accounts (id, balance) VALUES (?, 0)")
            .statement("UPDATE accounts SET balance = balance + 1 WHERE id = ?")
            .body(|ctx, p| {
                ctx.execute(1, &[p[1].clone()])?;
                ctx.execute(0, &[p[0].clone()])?;
                ctx.execute(0, &[p[0].clone()]) // duplicate key
            }),
    )
    .unwrap();
    db.register(
        ProcedureDef::new("Panics")
            .partition_param(0)
            .statement("UPDATE accounts SET balance = 0 WHERE id = ?")
            .body(|ctx, p| {
                ctx.execute(0, p)?;
                panic!("bug in procedure");
            }),
    )
    .unwrap();
    // Same partition for both keys: find a new id at account 5's partition.
    let e = db
        .call("InsertThenDuplicate", vec![Value::Int(5000), Value::Int(5000)])
        .unwrap_err();
    assert_eq!(e.sqlstate(), "23505", "{e}");
    assert_eq!(db.call("Get", vec![Value::Int(5000)]).unwrap().len(), 0);

    let e = db.call("Panics", vec![Value::Int(7)]).unwrap_err();
    assert!(matches!(e, Error::ProcedurePanicked { .. }), "{e}");
    assert_eq!(
        db.call("Get", vec![Value::Int(7)]).unwrap().row(0).get_i64(0),
        Some(INITIAL)
    );
    assert_eq!(total(&db), (ACCOUNTS * INITIAL, ACCOUNTS));
}

#[test]
fn single_partition_insert_of_a_row_of_another_partition_is_refused() {
    let db = bank(4);
    db.register(
        ProcedureDef::new("Misrouted")
            .partition_param(0)
            .statement("INSERT INTO audit (id, msg) VALUES (?, 'x')")
            .body(|ctx, p| ctx.execute(0, &[p[1].clone()])),
    )
    .unwrap();
    // Find two ids on different partitions.
    let part = |id: i64| {
        permafrost_storage::partitioning::partition_of(
            permafrost_types::ValueRef::Int(id),
            &permafrost_types::DataType::BigInt,
            4,
        )
    };
    let other = (1..100).find(|&i| part(i) != part(0)).unwrap();
    let e = db
        .call("Misrouted", vec![Value::Int(0), Value::Int(other)])
        .unwrap_err();
    assert_eq!(e.sqlstate(), "22023", "{e}");
}

/// Concurrent transfers between accounts on different partitions, with concurrent
/// multi-partition reads of the total. If multi-partition transactions were not
/// serializable, a reader could see a transfer half-applied (debited but not credited) and
/// the total would differ from the invariant.
#[test]
fn concurrent_cross_partition_transfers_keep_the_total() {
    let db = bank(3);
    let stop = Arc::new(AtomicBool::new(false));
    let transfers = Arc::new(AtomicU64::new(0));
    let mut workers = vec![];
    for w in 0..4u64 {
        let db = db.clone();
        let transfers = transfers.clone();
        workers.push(std::thread::spawn(move || {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(w);
            let transfer = db.procedure("Transfer").unwrap();
            let mut pending = vec![];
            for _ in 0..400 {
                let from = rng.random_range(0..ACCOUNTS);
                let to = rng.random_range(0..ACCOUNTS);
                let amount = rng.random_range(1..50);
                pending.push(db.submit(Request::call(
                    &transfer,
                    vec![Value::Int(from), Value::Int(to), Value::Int(amount)],
                )));
                if pending.len() == 16 {
                    for f in pending.drain(..) {
                        match common::block_on(f) {
                            Ok(_) => {
                                transfers.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(Error::Aborted(_)) => {}
                            Err(e) => panic!("transfer failed: {e}"),
                        }
                    }
                }
            }
        }));
    }
    let reader = {
        let db = db.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                assert_eq!(
                    total(&db),
                    (ACCOUNTS * INITIAL, ACCOUNTS),
                    "a reader saw a partial transfer"
                );
                reads += 1;
            }
            reads
        })
    };
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 0);
    assert!(transfers.load(Ordering::Relaxed) > 1000);
    assert_eq!(total(&db), (ACCOUNTS * INITIAL, ACCOUNTS));
    // No balance went negative (each transfer checked funds inside its transaction).
    for id in 0..ACCOUNTS {
        assert!(db.call("Get", vec![Value::Int(id)]).unwrap().row(0).get_i64(0).unwrap() >= 0);
    }
}

#[test]
fn schema_changes_replan_procedures() {
    let db = bank(2);
    // An index added while procedures exist: Get keeps working and sees the new schema.
    db.execute_ddl("CREATE INDEX accounts_balance ON accounts (balance)")
        .unwrap();
    assert_eq!(
        db.call("Get", vec![Value::Int(3)]).unwrap().row(0).get_i64(0),
        Some(INITIAL)
    );
    db.execute_ddl("DROP INDEX accounts_balance").unwrap();
    assert_eq!(
        db.call("Get", vec![Value::Int(3)]).unwrap().row(0).get_i64(0),
        Some(INITIAL)
    );
    // Dropping the table unregisters the procedures that used it.
    db.execute_ddl("DROP TABLE audit").unwrap();
    db.execute_ddl("DROP TABLE accounts").unwrap();
    assert!(matches!(
        db.call("Get", vec![Value::Int(3)]),
        Err(Error::UnknownProcedure(_))
    ));
    // A unique index over duplicate data fails everywhere and changes nothing.
    db.execute_ddl("CREATE TABLE t (a INT PRIMARY KEY, b INT)").unwrap();
    db.register(
        ProcedureDef::new("PutT")
            .partition_param(0)
            .statement("INSERT INTO t VALUES (?, 1)")
            .body(|c, p| c.execute(0, p)),
    )
    .unwrap();
    for i in 0..10 {
        db.call("PutT", vec![Value::Int(i)]).unwrap();
    }
    let e = db.execute_ddl("CREATE UNIQUE INDEX t_b ON t (a, b)");
    assert!(e.is_ok());
    let e = db.execute_ddl("CREATE UNIQUE INDEX t_b2 ON t (b)").unwrap_err();
    assert_eq!(e.sqlstate(), "23505", "{e}");
    assert_eq!(db.catalog().table("t").unwrap().indexes.len(), 2);
    // The procedure runs on, against the schema it was planned for.
    db.call("PutT", vec![Value::Int(10)]).unwrap();
    // A unique index without the partition column is checked at every partition: a
    // single-partition procedure may not write its table (0A000), an ad hoc statement may.
    db.execute_sql("DELETE FROM t WHERE a > 0", vec![]).unwrap();
    db.execute_ddl("CREATE UNIQUE INDEX t_b2 ON t (b)").unwrap();
    let e = db.call("PutT", vec![Value::Int(11)]).unwrap_err();
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    let e = db.execute_sql("INSERT INTO t VALUES (12, 1)", vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "23505", "{e}");
    db.execute_sql("INSERT INTO t VALUES (12, 2)", vec![]).unwrap();
}
