//! Simple-protocol statements with literals run from plans cached by shape
//! (`permafrost_server::plancache`): the answers are those of the uncached path, constants
//! that do not fit the shape's parameter types and constants that shape the plan
//! (`ORDER BY 1`) are honoured, and a schema change is seen.

mod common;

use common::start;

use tokio_postgres::{Client, SimpleQueryMessage};

async fn rows(c: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let msgs = c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    msgs.iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

async fn one(c: &Client, sql: &str) -> Vec<String> {
    rows(c, sql)
        .await
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

/// Statements run from a cached plan so far.
async fn hits(c: &Client) -> f64 {
    rows(c, "SHOW permafrost_stats")
        .await
        .into_iter()
        .find(|r| {
            r[0].as_deref() == Some("permafrost_plan_cache_lookups_total") && r[1].as_deref() == Some("outcome=\"hit\"")
        })
        .and_then(|r| r[2].as_deref().map(|v| v.parse().unwrap()))
        .expect("the plan cache figure is listed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn literal_statements_share_plans_and_answer_as_uncached() {
    let (c, _stop) = start().await;
    c.simple_query(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, s SMALLINT, name TEXT, price NUMERIC(10,2), f DOUBLE PRECISION)",
    )
    .await
    .unwrap();
    let before = hits(&c).await;
    for i in 1..=20 {
        c.simple_query(&format!(
            "INSERT INTO t VALUES ({i}, {}, 'it''s #{i}; -- é', {i}.50, {i}.25)",
            i * 10
        ))
        .await
        .unwrap();
    }
    for i in 1..=20 {
        assert_eq!(
            one(&c, &format!("SELECT id, s, name, price, f FROM t WHERE id = {i}")).await,
            vec![format!("{i}|{}|it's #{i}; -- é|{i}.50|{i}.25", i * 10)]
        );
    }
    let after = hits(&c).await;
    assert!(
        after - before >= 36.0,
        "inserts and selects of one shape run from its plan: {before} -> {after}"
    );

    // A constant that does not fit the shape's parameter type: the uncached path answers,
    // as PostgreSQL does (no error: a smallint is never 100000).
    assert_eq!(one(&c, "SELECT id FROM t WHERE s = 20").await, vec!["2"]);
    assert!(one(&c, "SELECT id FROM t WHERE s = 100000").await.is_empty());
    // Integer and decimal constants are different shapes.
    assert_eq!(one(&c, "SELECT id FROM t WHERE price = 3.50").await, vec!["3"]);
    assert_eq!(one(&c, "SELECT id FROM t WHERE price = 4.5").await, vec!["4"]);
    assert!(one(&c, "SELECT id FROM t WHERE f = 5").await.is_empty());
    assert_eq!(one(&c, "SELECT id FROM t WHERE f = 5.25").await, vec!["5"]);

    // Constants that shape the plan are part of the shape: ORDER BY 2 is not ORDER BY 1.
    for _ in 0..2 {
        assert_eq!(
            one(&c, "SELECT id, 10 - id FROM t WHERE id < 4 ORDER BY 1").await,
            vec!["1|9", "2|8", "3|7"]
        );
        assert_eq!(
            one(&c, "SELECT id, 10 - id FROM t WHERE id < 4 ORDER BY 2").await,
            vec!["3|7", "2|8", "1|9"]
        );
    }
    assert_eq!(
        one(&c, "SELECT id FROM t WHERE id > 10 ORDER BY id LIMIT 2").await,
        vec!["11", "12"]
    );
    assert_eq!(
        one(&c, "SELECT id FROM t WHERE id > 10 ORDER BY id LIMIT 3").await,
        vec!["11", "12", "13"]
    );

    // Arithmetic on constants keeps the constants' types.
    assert_eq!(one(&c, "SELECT 7 / 2").await, vec!["3"]);
    assert_eq!(one(&c, "SELECT 8 / 3").await, vec!["2"]);
    assert_eq!(one(&c, "SELECT 7.0 / 2").await, one(&c, "SELECT 7.0 / 2").await);
    assert_eq!(one(&c, "SELECT 'a' || 'b'").await, vec!["ab"]);
    assert_eq!(one(&c, "SELECT 'c' || 'd'").await, vec!["cd"]);

    // Updates and deletes with literals.
    for i in 1..=5 {
        c.simple_query(&format!("UPDATE t SET price = price + {i}.00, s = {i} WHERE id = {i}"))
            .await
            .unwrap();
    }
    assert_eq!(one(&c, "SELECT price, s FROM t WHERE id = 5").await, vec!["10.50|5"]);
    // Integers added to and stored in a numeric column, negative decimals: from a plan
    // whose markers take the literals' own types.
    let before = hits(&c).await;
    for i in 1..=5 {
        c.simple_query(&format!("UPDATE t SET price = price + {i}, f = -{i}.5 WHERE id = {i}"))
            .await
            .unwrap();
        c.simple_query(&format!("INSERT INTO t (id, price) VALUES ({}, {i})", 100 + i))
            .await
            .unwrap();
    }
    assert!(
        hits(&c).await - before >= 8.0,
        "updates and inserts of one shape run from its plan"
    );
    assert_eq!(one(&c, "SELECT price, f FROM t WHERE id = 5").await, vec!["15.50|-5.5"]);
    assert_eq!(one(&c, "SELECT sum(price) FROM t WHERE id > 100").await, vec!["15.00"]);
    for (sql, want) in [
        ("SELECT 7 / 2 + 0.5", "3.5"),
        ("SELECT 9 / 2 + 0.5", "4.5"),
        ("SELECT -7 / 2", "-3"),
    ] {
        assert_eq!(one(&c, sql).await, vec![want.to_string()], "{sql}");
    }
    c.simple_query("DELETE FROM t WHERE id > 100").await.unwrap();
    c.simple_query("DELETE FROM t WHERE id = 20").await.unwrap();
    c.simple_query("DELETE FROM t WHERE id = 19").await.unwrap();
    assert_eq!(one(&c, "SELECT count(*) FROM t").await, vec!["18"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_change_is_seen_by_cached_shapes() {
    let (c, _stop) = start().await;
    c.simple_query("CREATE TABLE u (id BIGINT PRIMARY KEY, v TEXT)")
        .await
        .unwrap();
    c.simple_query("INSERT INTO u VALUES (1, 'x')").await.unwrap();
    c.simple_query("INSERT INTO u VALUES (2, 'y')").await.unwrap();
    assert_eq!(one(&c, "SELECT v FROM u WHERE id = 1").await, vec!["x"]);
    assert_eq!(one(&c, "SELECT v FROM u WHERE id = 2").await, vec!["y"]);

    c.simple_query("DROP TABLE u").await.unwrap();
    c.simple_query("CREATE TABLE u (id BIGINT PRIMARY KEY, v BIGINT, w TEXT)")
        .await
        .unwrap();
    c.simple_query("INSERT INTO u VALUES (1, 42, 'w')").await.unwrap();
    assert_eq!(one(&c, "SELECT v FROM u WHERE id = 1").await, vec!["42"]);
    assert_eq!(one(&c, "SELECT * FROM u WHERE id = 1").await, vec!["1|42|w"]);
    // A text constant for a column that is now an integer: the uncached path's error.
    let e = c
        .simple_query("INSERT INTO u VALUES (2, 'not a number', 'w')")
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|s| s.code()), Some("22P02"), "{e}");
}
