//! The system catalogs as relations (crate::syscat), read as drivers and ORMs read them:
//! joins, outer joins, correlated subqueries, set-returning functions, reg-type casts and
//! parameters; the session functions; and schema changes inside a transaction block,
//! applied at COMMIT all together or not at all.

mod common;

use common::{code, start};
use tokio_postgres::{Client, SimpleQueryMessage};

const SCHEMA: &str =
    "CREATE TABLE users (id SERIAL PRIMARY KEY, name VARCHAR(30) NOT NULL, score NUMERIC(10,2) DEFAULT 0);
                      CREATE INDEX users_name ON users (name);";

/// Every row of a simple query, as text.
async fn rows(c: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

fn texts(rows: &[Vec<Option<String>>]) -> Vec<Vec<&str>> {
    rows.iter()
        .map(|r| r.iter().map(|v| v.as_deref().unwrap_or("NULL")).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drivers_catalog_queries_see_the_schema() {
    let (c, _s) = start().await;
    c.batch_execute(SCHEMA).await.unwrap();

    // psycopg's TypeInfo.fetch: a type by name, with a parameter (extended protocol).
    let r = c
        .query(
            "SELECT typname AS name, oid, typarray AS array_oid, oid::regtype::text AS regtype, typdelim AS delimiter \
             FROM pg_type t WHERE t.oid = to_regtype($1) ORDER BY t.oid",
            &[&"integer"],
        )
        .await
        .unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].get::<_, &str>("name"), "int4");
    assert_eq!(r[0].get::<_, u32>("oid"), 23);
    assert_eq!(r[0].get::<_, u32>("array_oid"), 1007);
    assert_eq!(r[0].get::<_, &str>("regtype"), "integer");
    let none = c
        .query("SELECT oid FROM pg_type t WHERE t.oid = to_regtype($1)", &[&"hstore"])
        .await
        .unwrap();
    assert!(none.is_empty());
    let e = c.simple_query("SELECT 'hstore'::regtype").await.unwrap_err();
    assert_eq!(code(&e), "42704", "{e}");

    // SQLAlchemy's has_table: a join, ANY(ARRAY[...]) and pg_table_is_visible.
    let has = "SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON \
               pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace WHERE pg_catalog.pg_class.relname = '{}' \
               AND pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND \
               pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != 'pg_catalog'";
    assert_eq!(rows(&c, &has.replace("{}", "users")).await.len(), 1);
    assert_eq!(
        rows(&c, &has.replace("{}", "users_name")).await.len(),
        0,
        "an index is no table"
    );
    assert_eq!(rows(&c, &has.replace("{}", "nope")).await.len(), 0);

    // Columns with their types, defaults (a correlated subquery) and NOT NULL.
    let cols = rows(
        &c,
        "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), \
         (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) FROM pg_catalog.pg_attrdef d \
          WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef), a.attnotnull \
         FROM pg_catalog.pg_attribute a WHERE a.attrelid = 'users'::regclass AND a.attnum > 0 \
         AND NOT a.attisdropped ORDER BY a.attnum",
    )
    .await;
    assert_eq!(
        texts(&cols),
        vec![
            vec!["id", "integer", "nextval('users_id_seq'::regclass)", "t"],
            vec!["name", "character varying(30)", "NULL", "t"],
            vec!["score", "numeric(10,2)", "0.00", "f"],
        ]
    );

    // Indexes: unnest and generate_subscripts in a select list, pg_get_indexdef.
    let keys = rows(
        &c,
        "SELECT i.relname, unnest(x.indkey) AS attnum, generate_subscripts(x.indkey, 1) AS ord, \
         pg_get_indexdef(x.indexrelid), x.indisprimary FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid \
         WHERE x.indrelid = 'users'::regclass ORDER BY 1",
    )
    .await;
    assert_eq!(
        texts(&keys),
        vec![
            vec![
                "users_name",
                "2",
                "1",
                "CREATE INDEX users_name ON public.users USING btree (name)",
                "f"
            ],
            vec![
                "users_pkey",
                "1",
                "1",
                "CREATE UNIQUE INDEX users_pkey ON public.users USING btree (id)",
                "t"
            ],
        ]
    );
    // An array aggregate comes back as a PostgreSQL array.
    let r = c
        .query(
            "SELECT array_agg(attname::text ORDER BY attnum) AS cols FROM pg_attribute \
             WHERE attrelid = 'users'::regclass AND attnum > 0",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(r[0].get::<_, Vec<String>>("cols"), vec!["id", "name", "score"]);

    // information_schema and the catalog views.
    let info = rows(
        &c,
        "SELECT column_name, data_type, is_nullable, character_maximum_length FROM information_schema.columns \
         WHERE table_name = 'users' ORDER BY ordinal_position",
    )
    .await;
    assert_eq!(
        texts(&info),
        vec![
            vec!["id", "integer", "NO", "NULL"],
            vec!["name", "character varying", "NO", "30"],
            vec!["score", "numeric", "YES", "NULL"],
        ]
    );
    let keys = rows(
        &c,
        "SELECT tc.constraint_type, k.column_name FROM information_schema.table_constraints tc \
         JOIN information_schema.key_column_usage k ON k.constraint_name = tc.constraint_name \
         WHERE tc.table_name = 'users' ORDER BY 1",
    )
    .await;
    assert_eq!(texts(&keys), vec![vec!["PRIMARY KEY", "id"]]);
    assert_eq!(
        texts(
            &rows(
                &c,
                "SELECT tablename, hasindexes FROM pg_tables WHERE schemaname = 'public'"
            )
            .await
        ),
        vec![vec!["users", "t"]]
    );
    assert_eq!(
        texts(&rows(&c, "SELECT sequencename FROM pg_sequences").await),
        vec![vec!["users_id_seq"]]
    );
    // Relations of what does not exist here are empty, not missing.
    assert!(rows(&c, "SELECT * FROM pg_trigger").await.is_empty());
    assert!(rows(&c, "SELECT polname FROM pg_catalog.pg_policy").await.is_empty());
    // A catalog and a user table in one query: refused, not answered wrongly.
    let e = c
        .simple_query("SELECT * FROM users JOIN pg_class ON relname = name")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "0A000", "{e}");
    // An unknown catalog relation or function is an error.
    let e = c.simple_query("SELECT * FROM pg_catalog.pg_nothing").await.unwrap_err();
    assert_eq!(code(&e), "42P01", "{e}");
    let e = c.simple_query("SELECT pg_nothing(1) FROM pg_class").await.unwrap_err();
    assert_eq!(code(&e), "42883", "{e}");
    // A function the catalogs' engine has but PostgreSQL does not: as PostgreSQL answers.
    let e = c.simple_query("SELECT hex(relname) FROM pg_class").await.unwrap_err();
    assert_eq!(code(&e), "42883", "{e}");
    // A parameter numbered 0, or never bound: an error, and the server goes on.
    let e = c
        .simple_query("SELECT relname FROM pg_class WHERE oid = $0")
        .await
        .unwrap_err();
    assert!(e.code().is_some(), "{e}");
    let e = c
        .simple_query("SELECT relname FROM pg_class WHERE oid = $1")
        .await
        .unwrap_err();
    assert!(e.code().is_some(), "{e}");
    // A result too large to hold is refused, not built whole.
    let big = c
        .simple_query(
            "SELECT a.typname, b.typname, c.typname, d.typname FROM pg_type a, pg_type b, pg_type c, pg_type d",
        )
        .await;
    assert_eq!(big.err().map(|e| code(&e)).as_deref(), Some("54000"));
    assert_eq!(rows(&c, "SELECT 1 AS still_serving").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_functions_answer_for_the_session() {
    let (c, _s) = start().await;
    let r = rows(
        &c,
        "SELECT current_database(), current_user, current_schema(), pg_backend_pid() > 0, \
         current_setting('TimeZone'), pg_catalog.current_setting('server_version_num')",
    )
    .await;
    assert_eq!(texts(&r), vec![vec!["test", "test", "public", "t", "UTC", "160006"]]);
    c.batch_execute("SET application_name = 'cat'").await.unwrap();
    let r = rows(&c, "SELECT setting FROM pg_settings WHERE name = 'application_name'").await;
    assert_eq!(texts(&r), vec![vec!["cat"]]);
    let e = c.simple_query("SELECT current_setting('no_such')").await.unwrap_err();
    assert_eq!(code(&e), "42704", "{e}");
    let r = rows(&c, "SELECT current_setting('no_such', true) IS NULL").await;
    assert_eq!(texts(&r), vec![vec!["t"]]);
    // set_config() is SET, answered with the value in effect.
    let r = rows(
        &c,
        "SELECT pg_catalog.set_config('application_name', 'via set_config', false)",
    )
    .await;
    assert_eq!(texts(&r), vec![vec!["via set_config"]]);
    assert_eq!(
        texts(&rows(&c, "SHOW application_name").await),
        vec![vec!["via set_config"]]
    );
    // Local to a transaction: outside a block, for the statement only.
    let r = rows(&c, "SELECT set_config('statement_timeout', '1s', true)").await;
    assert_eq!(texts(&r), vec![vec!["1s"]]);
    assert_eq!(texts(&rows(&c, "SHOW statement_timeout").await), vec![vec!["0"]]);
    let e = c
        .simple_query("SELECT set_config('no_such', 'x', false)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "42704", "{e}");
    // pgbench asks where a schema is in the search path.
    let r = rows(
        &c,
        "SELECT array_position(current_schemas(true), 'public'), \
         pg_catalog.array_position(current_schemas(false), 'pg_catalog') IS NULL, \
         array_position(current_schemas(true), 'public', 3) IS NULL",
    )
    .await;
    assert_eq!(texts(&r), vec![vec!["2", "t", "t"]]);
    // psql's \du reads pg_roles.
    let r = rows(&c, "SELECT r.rolname, r.rolsuper FROM pg_catalog.pg_roles r ORDER BY 1").await;
    assert_eq!(texts(&r), vec![vec!["test", "t"]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_changes_in_a_block_are_seen_by_it_and_apply_at_commit_all_or_none() {
    let (c, _s) = start().await;
    // Rolled back: nothing of it exists.
    c.batch_execute("BEGIN; CREATE TABLE a (id BIGINT PRIMARY KEY); CREATE INDEX a_id ON a (id); ROLLBACK")
        .await
        .unwrap();
    assert!(
        rows(&c, "SELECT relname FROM pg_class WHERE relname LIKE 'a%'")
            .await
            .is_empty()
    );
    // Committed: all of it.
    c.batch_execute("BEGIN; CREATE TABLE a (id BIGINT PRIMARY KEY); CREATE TABLE b (id BIGINT PRIMARY KEY); COMMIT")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO a VALUES (1); INSERT INTO b VALUES (1)")
        .await
        .unwrap();
    // A change that cannot apply fails when it runs, and the block aborts.
    c.batch_execute("BEGIN").await.unwrap();
    let e = c
        .batch_execute("CREATE TABLE a (id BIGINT PRIMARY KEY)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "42P07", "{e}");
    let e = c.batch_execute("SELECT 1").await.unwrap_err();
    assert_eq!(code(&e), "25P02", "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
    // The block's statements see its changes: a dropped table is gone for them.
    c.batch_execute("BEGIN; DROP TABLE b").await.unwrap();
    let e = c.batch_execute("SELECT * FROM b").await.unwrap_err();
    assert_eq!(code(&e), "42P01", "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(rows(&c, "SELECT id FROM b").await.len(), 1);
    // A table the block creates is read and written in it, and rolled back with it.
    c.batch_execute("BEGIN; CREATE TABLE e (id BIGINT PRIMARY KEY); INSERT INTO e VALUES (1)")
        .await
        .unwrap();
    assert_eq!(texts(&rows(&c, "SELECT id FROM e").await), vec![vec!["1"]]);
    c.batch_execute("ROLLBACK").await.unwrap();
    let e = c.batch_execute("SELECT * FROM e").await.unwrap_err();
    assert_eq!(code(&e), "42P01", "{e}");
    // Committed, with a write to an old table (what a migration tool records).
    c.batch_execute(
        "BEGIN; CREATE TABLE e (id BIGINT PRIMARY KEY); INSERT INTO e VALUES (1); INSERT INTO a VALUES (5); COMMIT",
    )
    .await
    .unwrap();
    assert_eq!(texts(&rows(&c, "SELECT id FROM e").await), vec![vec!["1"]]);
    assert_eq!(rows(&c, "SELECT id FROM a WHERE id = 5").await.len(), 1);
    // A dropped index cannot share a block with statements: 0A000, the block aborts.
    c.batch_execute("CREATE INDEX e_id ON e (id); BEGIN; DROP INDEX e_id")
        .await
        .unwrap();
    let e = c.batch_execute("INSERT INTO a VALUES (6)").await.unwrap_err();
    assert_eq!(code(&e), "0A000", "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
    // A dropped table can (what a migration tool's downgrade sends).
    c.batch_execute("BEGIN; DROP TABLE e; DELETE FROM a WHERE id = 5; COMMIT")
        .await
        .unwrap();
    assert!(rows(&c, "SELECT id FROM a WHERE id = 5").await.is_empty());
    // A schema change after writes: the writes come first, in the probes and at COMMIT;
    // an index over rows the block wrote is refused (0A000).
    c.batch_execute("BEGIN; INSERT INTO a VALUES (2)").await.unwrap();
    let e = c.batch_execute("CREATE INDEX a_x ON a (id)").await;
    assert!(
        e.is_ok(),
        "planned when it runs, applied with the statements after it: {e:?}"
    );
    let e = c.batch_execute("SELECT count(*) FROM a").await.unwrap_err();
    assert_eq!(code(&e), "0A000", "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
    c.batch_execute("BEGIN; INSERT INTO a VALUES (2); CREATE TABLE x (id BIGINT PRIMARY KEY); INSERT INTO x SELECT id FROM a; COMMIT")
        .await
        .unwrap();
    assert_eq!(rows(&c, "SELECT id FROM x").await.len(), 2);
    c.batch_execute("DROP TABLE x").await.unwrap();
    // A savepoint rolled back to takes the changes after it.
    c.batch_execute(
        "BEGIN; CREATE TABLE c (id BIGINT PRIMARY KEY); SAVEPOINT s; CREATE TABLE d (id BIGINT PRIMARY KEY); \
         ROLLBACK TO SAVEPOINT s; COMMIT",
    )
    .await
    .unwrap();
    let names = rows(&c, "SELECT relname FROM pg_class WHERE relkind = 'r' ORDER BY 1").await;
    assert_eq!(texts(&names), vec![vec!["a"], vec!["b"], vec!["c"]]);
}

/// The size functions psql's `\dt+`, `\di+` and `\l+` call: a table's rows and its
/// indexes' share grow with its rows, the total is their sum, the database's the total of
/// its tables', other forks are empty, and a missing name is 42P01.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_functions_count_the_engines_bytes() {
    let (c, _s) = start().await;
    c.batch_execute(SCHEMA).await.unwrap();
    let empty = sizes(&c).await;
    assert_eq!(empty, vec![0; 6]);
    c.batch_execute("INSERT INTO users (name) SELECT 'user ' || g FROM generate_series(1, 2000) g")
        .await
        .unwrap();
    let [table, indexes, total, one_index, database, vm] = sizes(&c).await[..] else {
        panic!("six sizes")
    };
    assert!(table > 2000 * 8, "{table}");
    assert!(
        indexes > 0 && one_index * 2 == indexes - indexes % 2,
        "{indexes} {one_index}"
    );
    assert_eq!(total, table + indexes);
    assert_eq!(database, total);
    assert_eq!(vm, 0);
    let r = rows(
        &c,
        "SELECT pg_size_pretty(10485247), pg_size_pretty(pg_database_size('postgres') * 0 + 10240)",
    )
    .await;
    assert_eq!(texts(&r), [["10239 kB", "10 kB"]]);
    let e = c.simple_query("SELECT pg_table_size('nope')").await.unwrap_err();
    assert_eq!(code(&e), "42P01", "{e}");
    // psql's \dt+ and \l+ queries run.
    let r = rows(
        &c,
        "SELECT d.datname, pg_catalog.pg_size_pretty(pg_catalog.pg_database_size(d.datname)), t.spcname \
                      FROM pg_catalog.pg_database d JOIN pg_catalog.pg_tablespace t ON d.dattablespace = t.oid",
    )
    .await;
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0][2].as_deref(), Some("pg_default"));
}

/// `\dt+`'s figures for `users`: its rows, its indexes, its total, one index's, the
/// database's, and its `vm` fork.
async fn sizes(c: &Client) -> Vec<i64> {
    let r = rows(
        c,
        "SELECT pg_table_size('users'), pg_indexes_size('users'::regclass), \
         pg_total_relation_size(c.oid), pg_relation_size('users_name'), \
         pg_database_size(current_database()), pg_relation_size('users', 'vm') \
         FROM pg_class c WHERE c.relname = 'users'",
    )
    .await;
    r[0].iter()
        .map(|v| v.as_deref().unwrap().parse::<i64>().unwrap())
        .collect()
}
