//! `INSERT ... ON CONFLICT [target] DO NOTHING`, as PostgreSQL answers it: a row whose key
//! a unique index (the target's, or any) already holds is left out, not counted and not
//! returned; a conflict elsewhere is still 23505; a target no unique index matches is
//! 42P10, an unknown constraint 42704; DO UPDATE is refused (0A000). Against evicted tuples
//! the conflict is found in the index, without fetching them.

mod common;

use permafrost_executor::{Config, Database};
use permafrost_types::Value;

fn db(partitions: u32) -> Database {
    let db = Database::open(Config::builder().partitions(partitions).build().unwrap()).unwrap();
    db.execute_ddl(
        "CREATE TABLE users (id BIGINT PRIMARY KEY, email TEXT UNIQUE, name TEXT) WITH (partition_by = 'none');
         CREATE TABLE tags (tag TEXT PRIMARY KEY, n INT)",
    )
    .unwrap();
    db
}

fn rows(db: &Database, sql: &str) -> Vec<String> {
    let r = db.execute_sql(sql, vec![]).unwrap();
    r.iter()
        .map(|row| {
            (0..r.columns().len())
                .map(|c| row.get(c).to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

fn affected(db: &Database, sql: &str) -> u64 {
    db.execute_sql(sql, vec![]).unwrap().affected
}

fn sqlstate(db: &Database, sql: &str) -> String {
    db.execute_sql(sql, vec![]).unwrap_err().sqlstate().to_string()
}

#[test]
fn a_row_whose_key_is_taken_is_left_out() {
    let db = db(2);
    assert_eq!(
        affected(&db, "INSERT INTO users VALUES (1, 'a@x', 'Ann') ON CONFLICT DO NOTHING"),
        1
    );
    // The key is taken: nothing happens, and nothing is an error.
    assert_eq!(
        affected(&db, "INSERT INTO users VALUES (1, 'b@x', 'Bob') ON CONFLICT DO NOTHING"),
        0
    );
    assert_eq!(
        affected(&db, "INSERT INTO users VALUES (2, 'a@x', 'Bob') ON CONFLICT DO NOTHING"),
        0
    );
    assert_eq!(rows(&db, "SELECT id, email, name FROM users"), ["1|a@x|Ann"]);
    // Several rows: the free ones go in, a later row of the same statement conflicting with
    // an earlier one is left out too.
    let r = db
        .execute_sql(
            "INSERT INTO users VALUES (1, 'z@x', 'no'), (3, 'c@x', 'Cy'), (3, 'd@x', 'no'), (4, 'e@x', 'Di') \
             ON CONFLICT DO NOTHING RETURNING id",
            vec![],
        )
        .unwrap();
    assert_eq!(r.affected, 2);
    let ids: Vec<i64> = r.iter().map(|row| row.get_i64(0).unwrap()).collect();
    assert_eq!(ids, [3, 4]);
    assert_eq!(
        rows(&db, "SELECT id, name FROM users ORDER BY id"),
        ["1|Ann", "3|Cy", "4|Di"]
    );
    // Parameters, as a client's prepared INSERT sends them.
    for _ in 0..2 {
        let r = db
            .execute_sql(
                "INSERT INTO users (id, email, name) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
                vec![Value::Int(9), Value::from("n@x"), Value::from("Ned")],
            )
            .unwrap();
        assert!(r.affected <= 1);
    }
    assert_eq!(rows(&db, "SELECT count(*) FROM users WHERE id = 9"), ["1"]);
    // A partitioned table (users is replicated: every copy leaves the row out).
    assert_eq!(
        affected(&db, "INSERT INTO tags VALUES ('a', 1) ON CONFLICT DO NOTHING"),
        1
    );
    assert_eq!(
        affected(&db, "INSERT INTO tags VALUES ('a', 2), ('b', 3) ON CONFLICT DO NOTHING"),
        1
    );
    assert_eq!(rows(&db, "SELECT tag, n FROM tags ORDER BY tag"), ["a|1", "b|3"]);
}

#[test]
fn a_target_skips_its_own_conflicts_only() {
    let db = db(1);
    db.execute_sql("INSERT INTO users VALUES (1, 'a@x', 'Ann')", vec![])
        .unwrap();
    // The target is the primary key: a taken email is still an error.
    assert_eq!(
        affected(
            &db,
            "INSERT INTO users VALUES (1, 'q@x', 'no') ON CONFLICT (id) DO NOTHING"
        ),
        0
    );
    assert_eq!(
        sqlstate(
            &db,
            "INSERT INTO users VALUES (2, 'a@x', 'no') ON CONFLICT (id) DO NOTHING"
        ),
        "23505"
    );
    assert_eq!(
        affected(
            &db,
            "INSERT INTO users VALUES (2, 'a@x', 'no') ON CONFLICT (email) DO NOTHING"
        ),
        0
    );
    // By constraint name (PostgreSQL's names: users_pkey, users_email_key).
    assert_eq!(
        affected(
            &db,
            "INSERT INTO users VALUES (1, 'r@x', 'no') ON CONFLICT ON CONSTRAINT users_pkey DO NOTHING"
        ),
        0
    );
    assert_eq!(
        sqlstate(
            &db,
            "INSERT INTO users VALUES (1, 'r@x', 'no') ON CONFLICT ON CONSTRAINT users_email_key DO NOTHING"
        ),
        "23505"
    );
    assert_eq!(rows(&db, "SELECT count(*) FROM users"), ["1"]);
    // Errors of the statement itself.
    assert_eq!(
        sqlstate(
            &db,
            "INSERT INTO users VALUES (5, 'e', 'e') ON CONFLICT (name) DO NOTHING"
        ),
        "42P10"
    );
    assert_eq!(
        sqlstate(
            &db,
            "INSERT INTO users VALUES (5, 'e', 'e') ON CONFLICT (id, email) DO NOTHING"
        ),
        "42P10"
    );
    assert_eq!(
        sqlstate(
            &db,
            "INSERT INTO users VALUES (5, 'e', 'e') ON CONFLICT (nope) DO NOTHING"
        ),
        "42703"
    );
    assert_eq!(
        sqlstate(
            &db,
            "INSERT INTO users VALUES (5, 'e', 'e') ON CONFLICT ON CONSTRAINT nope DO NOTHING"
        ),
        "42704"
    );
    assert_eq!(
        sqlstate(
            &db,
            "INSERT INTO users VALUES (1, 'e', 'e') ON CONFLICT (id) DO UPDATE SET name = 'x'"
        ),
        "0A000"
    );
    assert_eq!(rows(&db, "SELECT id, email, name FROM users"), ["1|a@x|Ann"]);
}

#[test]
fn a_conflict_with_an_evicted_tuple_is_found_without_fetching_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(common::evicting(dir.path()).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE kv (k BIGINT PRIMARY KEY, pad VARCHAR(1000) NOT NULL) WITH (partition_by = 'k')")
        .unwrap();
    let pad = "p".repeat(900);
    for k in 0..2_000 {
        db.execute_sql(
            "INSERT INTO kv VALUES ($1, $2) ON CONFLICT DO NOTHING",
            vec![Value::Int(k), Value::from(pad.as_str())],
        )
        .unwrap();
    }
    db.evict_now(64 << 20).unwrap();
    let before = db.stats_now().unwrap();
    assert!(before.evicted_now > 1_000, "{before:?}");
    // Every key again, and as many new ones: only the new ones go in.
    let mut inserted = 0;
    for k in 0..4_000 {
        inserted += db
            .execute_sql(
                "INSERT INTO kv VALUES ($1, $2) ON CONFLICT (k) DO NOTHING",
                vec![Value::Int(k), Value::from("new")],
            )
            .unwrap()
            .affected;
    }
    assert_eq!(inserted, 2_000);
    let after = db.stats_now().unwrap();
    assert_eq!(
        after.restarts_evicted, before.restarts_evicted,
        "a conflict fetched a tuple"
    );
    assert_eq!(rows(&db, "SELECT count(*) FROM kv"), ["4000"]);
    assert_eq!(rows(&db, "SELECT count(*) FROM kv WHERE pad = 'new'"), ["2000"]);
}

/// A repeated key names its columns and values in the error's DETAIL, as PostgreSQL's
/// does, whichever statement repeats it.
#[test]
fn a_repeated_key_is_named_in_the_detail() {
    let db = db(2);
    affected(&db, "INSERT INTO users VALUES (1, 'a@x', 'A'), (2, 'b@x', 'B')");
    let detail = |sql: &str| db.execute_sql(sql, vec![]).unwrap_err().detail();
    assert_eq!(
        detail("INSERT INTO users VALUES (3, 'a@x', 'C')").as_deref(),
        Some("Key (email)=(a@x) already exists.")
    );
    assert_eq!(
        detail("UPDATE users SET email = 'b@x' WHERE id = 1").as_deref(),
        Some("Key (email)=(b@x) already exists.")
    );
    assert_eq!(
        detail("INSERT INTO tags VALUES ('t', 1), ('t', 2)").as_deref(),
        Some("Key (tag)=(t) already exists.")
    );
}
