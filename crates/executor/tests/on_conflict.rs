//! `INSERT ... ON CONFLICT [target] DO NOTHING | DO UPDATE`, as PostgreSQL answers it: a
//! row whose key a unique index (the target's, or any) already holds is left out, not
//! counted and not returned, or updates the row holding it; a conflict elsewhere is still
//! 23505; a target no unique index matches is 42P10, an unknown constraint 42704. Against
//! evicted tuples DO NOTHING finds the conflict in the index, without fetching them; DO
//! UPDATE fetches the row it updates. A unique index without the partition column is one
//! key in the whole table.

mod common;

use permafrost_executor::{Config, Database};
use permafrost_storage::partitioning::partition_of;
use permafrost_types::{DataType, Value, ValueRef};

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
            "INSERT INTO users VALUES (1, 'e', 'e') ON CONFLICT DO UPDATE SET name = 'x'"
        ),
        "42601"
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

#[test]
fn do_update_changes_the_row_in_conflict_at_every_copy() {
    let db = db(3);
    affected(&db, "INSERT INTO users VALUES (1, 'a@x', 'Ann'), (2, 'b@x', 'Bob')");
    let r = db
        .execute_sql(
            "INSERT INTO users VALUES (1, 'a2@x', 'Ann2'), (3, 'c@x', 'Cy') \
             ON CONFLICT (id) DO UPDATE SET email = excluded.email, name = users.name || '+' RETURNING id, name",
            vec![],
        )
        .unwrap();
    assert_eq!(r.affected, 2);
    // users is replicated: each copy was updated alike (a read may go to any of them).
    for _ in 0..3 {
        assert_eq!(
            rows(&db, "SELECT id, email, name FROM users ORDER BY id"),
            ["1|a2@x|Ann+", "2|b@x|Bob", "3|c@x|Cy"]
        );
    }
    // WHERE false: kept, not counted.
    assert_eq!(
        affected(
            &db,
            "INSERT INTO users VALUES (2, 'q@x', 'Q') ON CONFLICT (id) DO UPDATE SET name = 'no' WHERE users.id > 2"
        ),
        0
    );
    // The same key twice in one statement, and a conflict on another index.
    assert_eq!(
        sqlstate(
            &db,
            "INSERT INTO tags VALUES ('t', 1), ('t', 2) ON CONFLICT (tag) DO UPDATE SET n = excluded.n"
        ),
        "21000"
    );
    assert_eq!(
        sqlstate(
            &db,
            "INSERT INTO users VALUES (9, 'a2@x', 'dup') ON CONFLICT (id) DO UPDATE SET name = 'x'"
        ),
        "23505"
    );
    // Partitioned, with parameters: a counter per tag.
    for i in 0..30 {
        db.execute_sql(
            "INSERT INTO tags VALUES ($1, 1) ON CONFLICT (tag) DO UPDATE SET n = tags.n + excluded.n",
            vec![Value::from(format!("t{}", i % 4))],
        )
        .unwrap();
    }
    assert_eq!(
        rows(&db, "SELECT tag, n FROM tags ORDER BY tag"),
        ["t0|8", "t1|8", "t2|7", "t3|7"]
    );
}

#[test]
fn do_update_of_an_evicted_row_fetches_it_and_runs_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(common::evicting(dir.path()).build().unwrap()).unwrap();
    db.execute_ddl("CREATE TABLE kv (k BIGINT PRIMARY KEY, n INT NOT NULL, pad VARCHAR(1000) NOT NULL)")
        .unwrap();
    let pad = "p".repeat(900);
    for k in 0..2_000 {
        db.execute_sql(
            "INSERT INTO kv VALUES ($1, 0, $2)",
            vec![Value::Int(k), Value::from(pad.as_str())],
        )
        .unwrap();
    }
    db.evict_now(64 << 20).unwrap();
    let before = db.stats_now().unwrap();
    assert!(before.evicted_now > 1_000, "{before:?}");
    for k in 0..2_000 {
        let r = db
            .execute_sql(
                "INSERT INTO kv VALUES ($1, 1, 'new') ON CONFLICT (k) DO UPDATE SET n = kv.n + 10 RETURNING n, length(pad)",
                vec![Value::Int(k)],
            )
            .unwrap();
        assert_eq!(r.affected, 1);
        let row = r.iter().next().unwrap();
        assert_eq!((row.get_i64(0), row.get_i64(1)), (Some(10), Some(900)), "key {k}");
    }
    let after = db.stats_now().unwrap();
    assert!(
        after.restarts_evicted > before.restarts_evicted,
        "no upsert met an evicted row: {after:?}"
    );
    assert_eq!(rows(&db, "SELECT count(*), sum(n) FROM kv"), ["2000|20000"]);
}

#[test]
fn a_unique_index_without_the_partition_column_holds_across_partitions() {
    let db = Database::open(Config::builder().partitions(4).build().unwrap()).unwrap();
    db.execute_ddl(
        "CREATE TABLE ct (id BIGSERIAL PRIMARY KEY, app TEXT NOT NULL, model TEXT NOT NULL, UNIQUE (app, model));
         CREATE TABLE em (id INT PRIMARY KEY, email TEXT)",
    )
    .unwrap();
    // Each key once, whichever partitions the rows' ids take them to.
    for i in 0..40 {
        affected(&db, &format!("INSERT INTO ct (app, model) VALUES ('a', 'm{i}')"));
    }
    for i in 0..40 {
        assert_eq!(
            sqlstate(&db, &format!("INSERT INTO ct (app, model) VALUES ('a', 'm{i}')")),
            "23505",
            "m{i} again"
        );
    }
    assert_eq!(
        affected(
            &db,
            "INSERT INTO ct (app, model) VALUES ('a', 'm1'), ('b', 'm1') ON CONFLICT DO NOTHING"
        ),
        1
    );
    assert_eq!(sqlstate(&db, "UPDATE ct SET model = 'm2' WHERE model = 'm3'"), "23505");
    assert_eq!(
        rows(
            &db,
            "INSERT INTO ct (app, model) VALUES ('a', 'm5') ON CONFLICT (app, model) DO UPDATE SET model = 'five' RETURNING model"
        ),
        ["five"]
    );
    assert_eq!(
        rows(&db, "SELECT count(*), count(DISTINCT app || model) FROM ct"),
        ["41|41"]
    );
    // Built over rows already there: refused while a key repeats, here only across
    // partitions (each partition's own rows have distinct keys).
    for i in 0..20 {
        affected(&db, &format!("INSERT INTO em VALUES ({i}, 'e{i}')"));
    }
    let part = |id: i64| partition_of(ValueRef::Int(id), &DataType::Integer, 4);
    let other = (100..).find(|&j| part(j) != part(0)).unwrap();
    affected(&db, &format!("INSERT INTO em VALUES ({other}, 'e0')"));
    assert_eq!(
        db.execute_ddl("CREATE UNIQUE INDEX em_email ON em (email)")
            .unwrap_err()
            .sqlstate(),
        "23505"
    );
    affected(&db, &format!("DELETE FROM em WHERE id = {other}"));
    db.execute_ddl("CREATE UNIQUE INDEX em_email ON em (email)").unwrap();
    for i in 20..40 {
        assert_eq!(
            sqlstate(&db, &format!("INSERT INTO em VALUES ({i}, 'e{}')", i % 20)),
            "23505"
        );
    }
    assert_eq!(rows(&db, "SELECT count(*) FROM em"), ["20"]);
}
