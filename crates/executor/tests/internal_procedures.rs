//! Rust procedures built into the program (`permafrost_executor::Library`), made callable
//! by `CREATE PROCEDURE ... LANGUAGE internal AS 'symbol'`: what the statement checks, how
//! a call is routed by the values it reaches (`ProcedureDef::partition_values`), the
//! columns it declares, and recovery, which needs the same library.

use permafrost_executor::datadir::{self, OpenOptions};
use permafrost_executor::settings::DbSettings;
use permafrost_executor::{ColumnInfo, Config, Database, Library, LogMode, ProcedureDef, Rows};
use permafrost_types::{DataType, Value, ValueRef};

/// `move_units(from, to, n)`: takes n from account `from` and gives them to `to`, at the
/// partition of `from` unless `to` lies at another; returns how many partitions it ran at.
fn library() -> Library {
    let def = ProcedureDef::new("move_units")
        .signature(vec![
            ("from".into(), DataType::BigInt),
            ("to".into(), DataType::BigInt),
            ("n".into(), DataType::BigInt),
        ])
        .partition_param(0)
        .partition_values(|p| vec![p[1].clone()])
        .statement("UPDATE accounts SET units = units - $1 WHERE id = $2")
        .statement("UPDATE accounts SET units = units + $1 WHERE id = $2")
        .returns(vec![ColumnInfo {
            name: "partitions".into(),
            ty: Some(DataType::BigInt),
        }])
        .body(|ctx, p| {
            let took = ctx.execute(0, &[p[2].clone(), p[0].clone()])?;
            let gave = ctx.execute(1, &[p[2].clone(), p[1].clone()])?;
            if took.affected != 1 || gave.affected != 1 {
                return Err(ctx.abort("no such account"));
            }
            let mut rows = Rows::empty(
                vec![ColumnInfo {
                    name: "partitions".into(),
                    ty: Some(DataType::BigInt),
                }]
                .into(),
            );
            rows.push_row([ValueRef::Int(ctx.partitions().len() as i64)]);
            Ok(rows)
        });
    Library::new(vec![def])
}

const CREATE: &str = "CREATE PROCEDURE transfer(a bigint, b bigint, n bigint) LANGUAGE internal AS 'move_units'";

fn units(db: &Database, id: i64) -> i64 {
    db.execute_sql("SELECT units FROM accounts WHERE id = $1", vec![Value::Int(id)])
        .unwrap()
        .row(0)
        .get_i64(0)
        .unwrap()
}

fn setup(db: &Database) {
    db.execute_sql(
        "CREATE TABLE accounts (id BIGINT PRIMARY KEY, units BIGINT NOT NULL)",
        vec![],
    )
    .unwrap();
    for id in 0..16 {
        db.execute_sql("INSERT INTO accounts VALUES ($1, 100)", vec![Value::Int(id)])
            .unwrap();
    }
}

/// Two accounts at the same partition and two at different ones (of two partitions).
fn pairs() -> ((i64, i64), (i64, i64)) {
    let part = |id: i64| permafrost_storage::partitioning::partition_of(ValueRef::Int(id), &DataType::BigInt, 2);
    let same = (1..16).find(|&b| part(b) == part(0)).unwrap();
    let other = (1..16).find(|&b| part(b) != part(0)).unwrap();
    ((0, same), (0, other))
}

#[test]
fn an_internal_procedure_is_the_librarys_under_the_statements_name() {
    let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
    db.provide_internal(library());
    setup(&db);
    let h = db.create_procedure(CREATE).unwrap();
    assert_eq!(h.columns().unwrap()[0].name, "partitions");
    // Its body is Rust: a transaction block cannot run its statements as its own.
    assert!(h.sql_body().is_none() && h.source() == Some(CREATE));
    let ((a, same), (_, other)) = pairs();
    // A call whose accounts lie at one partition runs there alone; one that reaches the
    // other partition runs at both.
    let r = db
        .call("transfer", vec![Value::Int(a), Value::Int(same), Value::Int(5)])
        .unwrap();
    assert_eq!(r.row(0).get_i64(0), Some(1));
    let r = db
        .call("transfer", vec![Value::Int(a), Value::Int(other), Value::Int(7)])
        .unwrap();
    assert_eq!(r.row(0).get_i64(0), Some(2));
    assert_eq!((units(&db, a), units(&db, same), units(&db, other)), (88, 105, 107));
    // The body's abort rolls the call back.
    let e = db
        .call("transfer", vec![Value::Int(a), Value::Int(99), Value::Int(1)])
        .unwrap_err();
    assert_eq!(e.sqlstate(), "P0001", "{e}");
    assert_eq!(units(&db, a), 88);
}

#[test]
fn create_refuses_an_unknown_symbol_other_arguments_and_a_partition_clause() {
    let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
    db.provide_internal(library());
    setup(&db);
    let e = db
        .create_procedure("CREATE PROCEDURE p(a bigint) LANGUAGE internal AS 'no_such'")
        .unwrap_err();
    assert_eq!(e.sqlstate(), "42883", "{e}");
    assert!(
        e.to_string().contains("no_such") && e.to_string().contains("move_units"),
        "{e}"
    );
    let e = db
        .create_procedure("CREATE PROCEDURE p(a bigint, b integer, n bigint) LANGUAGE internal AS 'move_units'")
        .unwrap_err();
    assert_eq!(e.sqlstate(), "42P13", "{e}");
    let e = db
        .create_procedure(
            "CREATE PROCEDURE p(a bigint, b bigint, n bigint) LANGUAGE internal PARTITION ON a AS 'move_units'",
        )
        .unwrap_err();
    assert_eq!(e.sqlstate(), "42P13", "{e}");
    // Nothing was registered by the refusals.
    assert!(db.procedure("p").is_err());
}

fn settings() -> DbSettings {
    DbSettings {
        partitions: Some(2),
        anticache: false,
        command_log: LogMode::Sync,
        ..DbSettings::default()
    }
}

#[test]
fn recovery_runs_the_create_again_and_refuses_without_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let with = OpenOptions {
        library: library(),
        ..OpenOptions::default()
    };
    let ((a, _), (_, other)) = pairs();
    {
        let (db, _) = datadir::open_with(&settings(), dir.path(), with.clone(), &mut |_, _| {}).unwrap();
        setup(&db);
        db.create_procedure(CREATE).unwrap();
        db.call("transfer", vec![Value::Int(a), Value::Int(other), Value::Int(30)])
            .unwrap();
    }
    {
        let (db, _) = datadir::open_with(&settings(), dir.path(), with.clone(), &mut |_, _| {}).unwrap();
        assert_eq!((units(&db, a), units(&db, other)), (70, 130));
        db.call("transfer", vec![Value::Int(a), Value::Int(other), Value::Int(1)])
            .unwrap();
    }
    let e = datadir::open_with(&settings(), dir.path(), OpenOptions::default(), &mut |_, _| {})
        .err()
        .expect("a log naming a built-in procedure this program lacks is refused");
    assert!(e.to_string().contains("move_units"), "{e}");
}
