//! Temporary tables through the wire: a session's temporary table shadows public's table
//! of the same name for that session only (simple and extended protocol, the shared plan
//! cache), another session cannot reach it, it is dropped when its session ends, and one
//! left by a session that never ended is dropped when a server starts over the database.

mod common;

use std::sync::Arc;

use common::{code, connect, first_column, logged_config, logged_server, server_over, stop_serving};
use permafrost_executor::Database;
use permafrost_server::ServerOptions;

/// The temporary schemas in the database's catalog.
fn temp_schemas(db: &Database) -> Vec<String> {
    permafrost_sql::temp::leftovers(&db.catalog())
}

/// Waits (a few seconds at most) until the database has no temporary schema left.
async fn until_no_temp_schema(db: &Database) {
    let started = std::time::Instant::now();
    while !temp_schemas(db).is_empty() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "temporary schemas left: {:?}",
            temp_schemas(db)
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_table_is_its_sessions_alone_and_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (db, server, a) = logged_server(dir.path()).await;
    let b = connect(server.port).await;
    a.batch_execute(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
         INSERT INTO t VALUES (1, 'public');
         CREATE TEMP TABLE t (id BIGINT PRIMARY KEY, v TEXT);
         INSERT INTO t VALUES (1, 'a''s own');
         CREATE TEMPORARY TABLE only_a (n SERIAL PRIMARY KEY, id BIGINT REFERENCES t (id));
         INSERT INTO only_a (id) VALUES (1)",
    )
    .await
    .unwrap();
    // The same texts, twice each, from both sessions: the plan cache keeps them apart.
    for _ in 0..2 {
        a.batch_execute("SELECT v FROM t WHERE id = 1").await.unwrap();
        b.batch_execute("SELECT v FROM t WHERE id = 1").await.unwrap();
        let in_a: Vec<String> = first_column(&a, "SELECT v FROM t WHERE id = $1", &[&1i64]).await;
        assert_eq!(in_a, ["a's own"]);
        let in_b: Vec<String> = first_column(&b, "SELECT v FROM t WHERE id = $1", &[&1i64]).await;
        assert_eq!(in_b, ["public"]);
        let simple = a.simple_query("SELECT v FROM t WHERE id = 1").await.unwrap();
        let row = simple.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        });
        assert_eq!(row.as_deref(), Some("a's own"));
    }
    let via_alias: Vec<String> = first_column(&a, "SELECT v FROM pg_temp.t", &[]).await;
    assert_eq!(via_alias, ["a's own"]);
    let public: Vec<String> = first_column(&a, "SELECT v FROM public.t", &[]).await;
    assert_eq!(public, ["public"]);
    let schema = temp_schemas(&db).pop().expect("a's temporary schema");
    let e = b.batch_execute(&format!("SELECT * FROM {schema}.t")).await.unwrap_err();
    assert_eq!(code(&e), "0A000", "another session's temporary table");
    let e = b.batch_execute("SELECT * FROM only_a").await.unwrap_err();
    assert_eq!(code(&e), "42P01");
    for (sql, state) in [
        ("CREATE TEMP TABLE gone (a INT) ON COMMIT DROP", "0A000"),
        ("CREATE TEMP TABLE public.x (a INT)", "42P16"),
        ("CREATE TABLE x (a INT) ON COMMIT PRESERVE ROWS", "42P16"),
        ("CREATE TABLE p (id BIGINT REFERENCES only_a (n))", "42P16"),
        ("CREATE VIEW v AS SELECT * FROM only_a", "0A000"),
    ] {
        let e = a.batch_execute(sql).await.unwrap_err();
        assert_eq!(code(&e), state, "{sql}");
    }
    // Made in a block and rolled back: gone; committed: there.
    a.batch_execute("BEGIN; CREATE TEMP TABLE blocked (a INT); INSERT INTO blocked VALUES (1); ROLLBACK")
        .await
        .unwrap();
    let e = a.batch_execute("SELECT * FROM blocked").await.unwrap_err();
    assert_eq!(code(&e), "42P01");
    // B's own temporary table of the same name is B's.
    b.batch_execute("CREATE TEMP TABLE only_a (x TEXT); INSERT INTO only_a VALUES ('b')")
        .await
        .unwrap();
    let in_b: Vec<String> = first_column(&b, "SELECT x FROM only_a", &[]).await;
    assert_eq!(in_b, ["b"]);
    assert_eq!(temp_schemas(&db).len(), 2);
    // psql's \d finds each session's own table (the catalog's answers are kept between
    // sessions; what is visible is the session's).
    let visible = "SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                   WHERE c.relname = 'only_a' AND pg_table_is_visible(c.oid)";
    let seen_by_a: Vec<String> = first_column(&a, visible, &[]).await;
    let seen_by_b: Vec<String> = first_column(&b, visible, &[]).await;
    assert_eq!(seen_by_a.len(), 1);
    assert_eq!(seen_by_b.len(), 1);
    assert_ne!(seen_by_a, seen_by_b);
    assert!(seen_by_a[0].starts_with("pg_temp_") && seen_by_b[0].starts_with("pg_temp_"));
    drop(a);
    drop(b);
    until_no_temp_schema(&db).await;
    stop_serving(server, &db).await;
    drop(db);

    // A temporary table left by a session that did not end (written here as a session's
    // would be) is dropped when a server starts over the recovered database.
    let db = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || {
            let db = Database::open(logged_config(&dir)).unwrap();
            db.recover(vec![], &mut |_, _| {}).unwrap();
            assert!(permafrost_sql::temp::leftovers(&db.catalog()).is_empty());
            db.execute_ddl("CREATE TEMP TABLE pg_temp_4242.left (a INT PRIMARY KEY)")
                .unwrap();
            db.execute_sql("INSERT INTO pg_temp_4242.left VALUES (1)", vec![])
                .unwrap();
            Arc::new(db)
        }
    })
    .await
    .unwrap();
    assert_eq!(temp_schemas(&db), ["pg_temp_4242"]);
    let server = server_over(db.clone(), ServerOptions::default()).await;
    let c = connect(server.port).await;
    assert!(temp_schemas(&db).is_empty());
    let rows: Vec<String> = first_column(&c, "SELECT v FROM t", &[]).await;
    assert_eq!(rows, ["public"]);
    drop(c);
    stop_serving(server, &db).await;
}
