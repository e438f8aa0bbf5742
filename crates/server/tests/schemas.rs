//! Schemas through the wire: objects of the same name in two schemas, a schema that is not
//! empty refused by DROP SCHEMA (and dropped with its objects by CASCADE, unless one outside
//! depends on them), a search_path that puts a schema before public reading and making
//! names there as PostgreSQL does, one without public failing as PostgreSQL fails, and the
//! schemas and their rows after recovery.

mod common;

use common::{code, first_column, logged_config, logged_server, recovered_rows, stop_serving};

const ROWS: &str = "SELECT a.id, a.v, p.v FROM app.t a JOIN t p ON p.id = a.id ORDER BY a.id";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_keep_their_objects_apart_through_the_wire_and_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let (db, server, c) = logged_server(dir.path()).await;
    c.batch_execute(
        "CREATE SCHEMA app;
         CREATE TABLE app.t (id BIGINT PRIMARY KEY, v TEXT);
         CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
         CREATE TABLE only_public (a INT);
         INSERT INTO app.t VALUES (1, 'in app'), (2, 'also app');
         INSERT INTO t VALUES (1, 'in public'), (2, 'also public')",
    )
    .await
    .unwrap();
    let app: Vec<String> = first_column(&c, "SELECT v FROM app.t WHERE id = $1", &[&1i64]).await;
    assert_eq!(app, ["in app"]);
    let public: Vec<String> = first_column(&c, "SELECT v FROM t WHERE id = $1", &[&1i64]).await;
    assert_eq!(public, ["in public"]);
    for (sql, state) in [
        ("DROP SCHEMA app", "2BP01"),
        ("DROP SCHEMA public CASCADE", "0A000"),
        ("DROP SCHEMA public", "0A000"),
        ("CREATE TABLE nosuch.t (a int)", "3F000"),
        ("CREATE SCHEMA pg_mine", "42939"),
    ] {
        let e = c.batch_execute(sql).await.unwrap_err();
        assert_eq!(code(&e), state, "{sql}");
    }
    // With app before public, an unqualified name app has means app's (as PostgreSQL reads
    // it), an unqualified CREATE makes its object in app, and other names are public's.
    c.batch_execute("SET search_path = app, public").await.unwrap();
    // (A prepared statement, run in the extended protocol's pipelined way, too.)
    let app: Vec<String> = first_column(&c, "SELECT v FROM t WHERE id = $1", &[&1i64]).await;
    assert_eq!(app, ["in app"]);
    c.batch_execute(
        "INSERT INTO t VALUES (3, 'x'); CREATE TABLE fresh (a int); INSERT INTO fresh VALUES (1); \
         CREATE TYPE hue AS ENUM ('red'); CREATE TABLE painted (h hue); INSERT INTO painted VALUES ('red'::hue)",
    )
    .await
    .unwrap();
    let app: Vec<String> = first_column(&c, "SELECT v FROM app.t WHERE id = 3", &[]).await;
    assert_eq!(app, ["x"]);
    let made: Vec<i64> = first_column(&c, "SELECT count(*) FROM app.fresh JOIN app.painted ON true", &[]).await;
    assert_eq!(made, [1]);
    c.batch_execute("DELETE FROM t WHERE id = 3; DROP TABLE fresh, painted; DROP TYPE hue")
        .await
        .unwrap();
    let n: Vec<i64> = first_column(&c, "SELECT count(*) FROM only_public", &[]).await;
    assert_eq!(n, [0]);
    let qualified: Vec<String> = first_column(&c, "SELECT v FROM public.t WHERE id = 2", &[]).await;
    assert_eq!(qualified, ["also public"]);
    // Without public on the path, PostgreSQL finds none of public's names: its errors.
    c.batch_execute("SET search_path = app").await.unwrap();
    let e = c.batch_execute("SELECT * FROM only_public").await.unwrap_err();
    assert_eq!(code(&e), "42P01");
    let app: Vec<String> = first_column(&c, "SELECT v FROM t WHERE id = 1", &[]).await;
    assert_eq!(app, ["in app"]);
    c.batch_execute("SET search_path = ''").await.unwrap();
    let e = c.batch_execute("CREATE TABLE fresh (a int)").await.unwrap_err();
    assert_eq!(code(&e), "3F000");
    let n: Vec<i64> = first_column(&c, "SELECT count(*) FROM public.only_public", &[]).await;
    assert_eq!(n, [0]);
    c.batch_execute("RESET search_path; UPDATE app.t SET v = 'changed' WHERE id = 2")
        .await
        .unwrap();
    // CASCADE drops a schema's own objects, not those outside that depend on them.
    c.batch_execute(
        "CREATE SCHEMA gone; CREATE TABLE gone.t (id INT PRIMARY KEY); CREATE VIEW outside AS SELECT id FROM gone.t",
    )
    .await
    .unwrap();
    let e = c.batch_execute("DROP SCHEMA gone CASCADE").await.unwrap_err();
    assert_eq!(code(&e), "2BP01");
    c.batch_execute("DROP VIEW outside; DROP SCHEMA gone CASCADE")
        .await
        .unwrap();
    let e = c.batch_execute("SELECT * FROM gone.t").await.unwrap_err();
    assert_eq!(code(&e), "42P01");
    drop(c);
    stop_serving(server, &db).await;
    let seen = tokio::task::spawn_blocking(move || db.execute_sql(ROWS, vec![]).unwrap().to_values())
        .await
        .unwrap();
    let shown: Vec<String> = seen.iter().map(|r| format!("{} {} {}", r[0], r[1], r[2])).collect();
    assert_eq!(shown, ["1 in app in public", "2 changed also public"]);
    let replayed = recovered_rows(logged_config(dir.path()), ROWS).await;
    assert_eq!(replayed, seen, "the schema, its table and its rows after replay");
}
