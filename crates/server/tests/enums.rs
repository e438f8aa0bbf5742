//! Enum types through the wire: a driver that learns the type from the catalog (as
//! tokio-postgres does, by its oid, from `pg_type` and `pg_enum`), labels in binary
//! format both ways, the type's order in sorts and indexes, `ALTER TYPE` in and out of a
//! block, and the types and their rows after recovery.

mod common;

use std::error::Error;

use bytes::BytesMut;
use tokio_postgres::types::{FromSql, IsNull, Kind, ToSql, Type, to_sql_checked};

use common::{code, first_column, logged_config, logged_server, recovered_rows, stop_serving};

/// An enum's label, in binary format (PostgreSQL's enum_send and enum_recv: its text).
#[derive(Debug, PartialEq)]
struct Label(String);

impl<'a> FromSql<'a> for Label {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Label, Box<dyn Error + Sync + Send>> {
        Ok(Label(std::str::from_utf8(raw)?.to_string()))
    }
    fn accepts(ty: &Type) -> bool {
        matches!(ty.kind(), Kind::Enum(_))
    }
}

impl ToSql for Label {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        matches!(ty.kind(), Kind::Enum(_))
    }
    to_sql_checked!();
}

fn label(s: &str) -> Label {
    Label(s.to_string())
}

const ROWS: &str = "SELECT id, m::text AS label FROM person ORDER BY m, id";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enum_values_keep_their_type_order_and_labels_through_the_wire_and_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let (db, server, c) = logged_server(dir.path()).await;
    c.batch_execute(
        "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
         CREATE TABLE person (id BIGINT PRIMARY KEY, m mood NOT NULL);
         CREATE INDEX person_m ON person (m)",
    )
    .await
    .unwrap();
    let insert = c.prepare("INSERT INTO person VALUES ($1, $2)").await.unwrap();
    assert_eq!(insert.params()[1].name(), "mood");
    assert_eq!(
        insert.params()[1].kind(),
        &Kind::Enum(vec!["sad".into(), "ok".into(), "happy".into()]),
        "the driver read the labels from pg_enum, in order"
    );
    for (id, m) in [(1i64, "happy"), (2, "sad"), (3, "ok"), (4, "happy")] {
        c.execute(&insert, &[&id, &label(m)]).await.unwrap();
    }
    let sorted: Vec<(i64, Label)> = c
        .query("SELECT id, m FROM person ORDER BY m DESC, id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        sorted,
        [
            (1, label("happy")),
            (4, label("happy")),
            (3, label("ok")),
            (2, label("sad"))
        ]
    );
    // The index answers by the type's order.
    let above: Vec<i64> = first_column(&c, "SELECT id FROM person WHERE m > $1 ORDER BY id", &[&label("sad")]).await;
    assert_eq!(above, [1, 3, 4]);
    let e = c.execute(&insert, &[&5i64, &label("angry")]).await.unwrap_err();
    assert_eq!(code(&e), "22P02");
    // A label added in a block that rolls back is gone; one added outside stays, in its place.
    c.batch_execute(
        "BEGIN; ALTER TYPE mood ADD VALUE 'furious' AFTER 'happy'; INSERT INTO person VALUES (9, 'furious')",
    )
    .await
    .unwrap();
    c.batch_execute("ROLLBACK").await.unwrap();
    let e = c
        .batch_execute("INSERT INTO person VALUES (9, 'furious')")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "22P02");
    c.batch_execute("ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok'; INSERT INTO person VALUES (5, 'meh')")
        .await
        .unwrap();
    let meh: Vec<i64> = first_column(&c, "SELECT id FROM person WHERE m = 'meh'", &[]).await;
    assert_eq!(meh, [5], "the index finds a label added after it was built");
    let e = c.batch_execute("DROP TYPE mood").await.unwrap_err();
    assert_eq!(code(&e), "2BP01");
    let e = c
        .batch_execute("SELECT * FROM person WHERE m = 'ok'::text")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "42883", "an enum compares with its own type");
    for other in [
        "CREATE TYPE pair AS (a int, b int)",
        "CREATE TYPE span AS RANGE (subtype = int4)",
    ] {
        let e = c.batch_execute(other).await.unwrap_err();
        assert_eq!(code(&e), "0A000", "{other}");
    }
    drop(c);
    stop_serving(server, &db).await;
    let seen = tokio::task::spawn_blocking(move || db.execute_sql(ROWS, vec![]).unwrap().to_values())
        .await
        .unwrap();
    let shown: Vec<String> = seen.iter().map(|r| format!("{} {}", r[0], r[1])).collect();
    assert_eq!(shown, ["2 sad", "5 meh", "3 ok", "1 happy", "4 happy"]);
    let replayed = recovered_rows(logged_config(dir.path()), ROWS).await;
    assert_eq!(replayed, seen, "the type and its rows after replay");
}
