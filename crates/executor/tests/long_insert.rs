//! A loader's long INSERT of listed rows (permafrost_sql::long_insert) is planned a chunk of
//! rows at a time and runs as the one statement it is: every row, converted as a short
//! INSERT converts it, all or nothing, with a short INSERT's errors.

use permafrost_executor::{Config, Database};
use permafrost_types::Value;

fn db() -> Database {
    let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE n (id INT PRIMARY KEY, a BIGINT, s TEXT, d NUMERIC(8,2) DEFAULT 7.5)")
        .unwrap();
    db
}

/// `INSERT INTO n VALUES` and `rows` rows made by `row`, long enough to be planned in chunks.
fn long_insert(rows: i64, row: impl Fn(i64) -> String) -> String {
    let list: Vec<String> = (0..rows).map(row).collect();
    let sql = format!("INSERT INTO n (id, a, s, d) VALUES {};", list.join(", "));
    assert!(
        sql.len() > permafrost_sql::long_insert::LONG_INSERT_BYTES,
        "{} bytes",
        sql.len()
    );
    sql
}

fn one(db: &Database, sql: &str) -> Vec<Value> {
    db.execute_sql(sql, vec![]).unwrap().to_values().remove(0)
}

#[test]
fn a_long_insert_writes_every_row_as_a_short_one_would() {
    let db = db();
    let sql = long_insert(5_000, |i| match i % 4 {
        0 => format!("({i}, {}, 'it''s ({i}), ok', DEFAULT)", -i),
        1 => format!("({i}, NULL, E'tab\\t{i}', {i}.25)"),
        2 => format!("({i}, '{i}', NULL, '{i}')"),
        _ => format!("({i}, {i} * 2, lower('X{i}'), 1.5e1)"),
    });
    // (Planned in chunks, not whole.)
    assert!(permafrost_sql::long_insert::prepare_long_insert(&db.catalog(), &sql).is_some());
    assert_eq!(db.execute_sql(&sql, vec![]).unwrap().affected, 5_000);
    assert_eq!(
        one(&db, "SELECT count(*), count(a), count(s) FROM n"),
        vec![Value::Int(5_000), Value::Int(3_750), Value::Int(3_750)]
    );
    assert_eq!(
        one(&db, "SELECT a, s, d FROM n WHERE id = 4"),
        vec![
            Value::Int(-4),
            Value::from("it's (4), ok"),
            one(&db, "SELECT CAST(7.5 AS NUMERIC(8,2))")[0].clone()
        ]
    );
    assert_eq!(one(&db, "SELECT s FROM n WHERE id = 4001")[0], Value::from("tab\t4001"));
    assert_eq!(
        one(&db, "SELECT a, s FROM n WHERE id = 4003"),
        vec![Value::Int(8_006), Value::from("x4003")]
    );
}

#[test]
fn a_long_insert_fails_whole_with_a_short_ones_errors() {
    let db = db();
    // A duplicate key in its last chunk: nothing is inserted.
    let dup = long_insert(4_000, |i| format!("({}, {i}, 's', 1)", if i == 3_999 { 5 } else { i }));
    let e = db.execute_sql(&dup, vec![]).unwrap_err();
    assert_eq!(e.sqlstate(), "23505", "{e}");
    assert_eq!(one(&db, "SELECT count(*) FROM n")[0], Value::Int(0));
    // A value its column cannot take, far into the text: the error a short INSERT gives.
    let bad = long_insert(4_000, |i| {
        format!(
            "({i}, {}, 's', 1)",
            if i == 3_000 { "'abc'".into() } else { i.to_string() }
        )
    });
    let long = db.execute_sql(&bad, vec![]).unwrap_err();
    let short = db
        .execute_sql("INSERT INTO n (id, a, s, d) VALUES (1, 'abc', 's', 1)", vec![])
        .unwrap_err();
    assert_eq!(long.sqlstate(), short.sqlstate(), "{long} / {short}");
    assert_eq!(one(&db, "SELECT count(*) FROM n")[0], Value::Int(0));
}

/// Rows so wide that a chunk of them is itself longer than a long INSERT: each chunk is
/// planned whole.
#[test]
fn a_long_insert_of_wide_rows_is_planned_in_chunks_once() {
    let db = db();
    let wide = "w".repeat(400);
    let sql = long_insert(2_000, |i| format!("({i}, {i}, '{wide}', 1)"));
    assert!(
        sql.len() / 2_000 * permafrost_sql::long_insert::CHUNK_ROWS > permafrost_sql::long_insert::LONG_INSERT_BYTES
    );
    assert_eq!(db.execute_sql(&sql, vec![]).unwrap().affected, 2_000);
    assert_eq!(one(&db, "SELECT count(*) FROM n")[0], Value::Int(2_000));
}
