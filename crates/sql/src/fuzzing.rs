//! The SQL front end as a fuzz target: any text, split into statements, parsed, bound and
//! planned against a small schema (`fuzz/fuzz_targets/sql_front_end.rs` runs it under
//! libFuzzer; the tests below run it over a seed corpus and over grammar-shaped statements
//! on every `cargo test`). It must never panic or overflow a stack, whatever the text: a
//! statement is planned or refused with an error. Execution is not covered here (it needs
//! a partition's storage): the server's tests run the deep and malformed statements.

use crate::catalog::Catalog;

/// The schema the statements are planned against.
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE t (id BIGINT PRIMARY KEY, a INT, b SMALLINT, s TEXT, n NUMERIC(10,2), d DOUBLE PRECISION, \
     ts TIMESTAMP, ok BOOLEAN, v VARCHAR(20))",
    "CREATE TABLE u (id BIGINT PRIMARY KEY, t_id BIGINT NOT NULL, note TEXT)",
    "CREATE INDEX u_t ON u (t_id)",
];

/// The catalog of [`SCHEMA`].
pub fn catalog() -> Catalog {
    let mut c = Catalog::new();
    for sql in SCHEMA {
        let stmt = crate::parse::parse_statement(sql).expect("the fuzz schema parses");
        for change in crate::ddl::plan_ddl(&c, &stmt).expect("the fuzz schema plans") {
            c = c.apply(&change).expect("the fuzz schema applies");
        }
    }
    c
}

/// Splits, parses, binds and plans `data` (as text) against `catalog`; DDL is planned too.
pub fn sql_front_end(catalog: &Catalog, data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Array literals (what array parameters are) are read from any text.
    let _ = crate::array::elements(text);
    let Ok(statements) = crate::scan::scan(text).map(crate::scan::Scan::texts) else {
        return;
    };
    for sql in statements {
        crate::limits::with_stack_for(&sql, || {
            let Ok(stmts) = crate::parse::parse_statements(&sql) else {
                return;
            };
            for stmt in &stmts {
                if crate::ddl::is_ddl(stmt) {
                    let _ = crate::ddl::plan_ddl(catalog, stmt);
                } else {
                    let _ = crate::prepared::prepare_statement(catalog, stmt, &sql);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const SEEDS: &[&str] = &[
        "SELECT * FROM t WHERE id = 1",
        "SELECT a + b * 2, s || 'x', -n, d / 0 FROM t WHERE a BETWEEN 1 AND 9 OR s LIKE 'a%'",
        "SELECT t.id, count(*) FROM t JOIN u ON u.t_id = t.id GROUP BY t.id HAVING count(*) > 1 ORDER BY 2 LIMIT 5",
        "INSERT INTO t (id, a, s) VALUES (1, 2, 'x'), ($1, $2, $3) RETURNING id",
        "UPDATE t SET a = a + 1, s = upper(s) WHERE id IN (1, 2, 3)",
        "DELETE FROM u WHERE note IS NULL AND t_id = ?",
        "SELECT CASE WHEN a > 0 THEN 'p' ELSE 'n' END, coalesce(s, ''), cast(a AS bigint) FROM t",
        "SELECT 1 LIMIT 1e30",
        "SELECT U&'\\0000'",
        "CREATE TABLE x (id SERIAL PRIMARY KEY, y TEXT DEFAULT 'a' || 'b')",
        "SELECT ((((((((((1))))))))))",
        "SELECT 1; SELECT 2;; SELECT",
    ];

    #[test]
    fn the_seed_corpus_goes_through_the_front_end() {
        let c = catalog();
        for s in SEEDS {
            sql_front_end(&c, s.as_bytes());
        }
    }

    /// Statements of random shape: terms and operators of the grammar, nested.
    fn expr() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("id".to_string()),
            Just("a".to_string()),
            Just("s".to_string()),
            Just("n".to_string()),
            Just("t.b".to_string()),
            Just("NULL".to_string()),
            Just("$1".to_string()),
            Just("?".to_string()),
            any::<i64>().prop_map(|i| i.to_string()),
            "[0-9]{1,40}(\\.[0-9]{0,30})?(e[0-9]{1,3})?".prop_map(|s| s),
            "'[a-z\\\\%_']{0,8}'".prop_map(|s| s),
            Just("now()".to_string()),
        ];
        leaf.prop_recursive(6, 64, 4, |inner| {
            let op = prop_oneof![
                Just("+"),
                Just("-"),
                Just("*"),
                Just("/"),
                Just("%"),
                Just("||"),
                Just("="),
                Just("<>"),
                Just("<"),
                Just(">="),
                Just("AND"),
                Just("OR"),
                Just("LIKE"),
                Just("IS DISTINCT FROM"),
            ];
            prop_oneof![
                (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("{a} {o} {b}")),
                inner.clone().prop_map(|a| format!("({a})")),
                inner.clone().prop_map(|a| format!("-{a}")),
                inner.clone().prop_map(|a| format!("NOT {a}")),
                inner.clone().prop_map(|a| format!("{a} IS NULL")),
                inner.clone().prop_map(|a| format!("CAST({a} AS INT)")),
                inner.clone().prop_map(|a| format!("{a}::text")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("coalesce({a}, {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} IN ({b}, 1, 2)")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("CASE WHEN {a} THEN {b} END")),
                inner.clone().prop_map(|a| format!("sum({a})")),
                (inner.clone(), 1usize..300).prop_map(|(a, n)| vec![a; n].join(" + ")),
            ]
        })
    }

    fn statement() -> impl Strategy<Value = String> {
        prop_oneof![
            (expr(), expr()).prop_map(|(a, b)| format!("SELECT {a} FROM t WHERE {b}")),
            (expr(), expr()).prop_map(|(a, b)| format!("SELECT {a}, count(*) FROM t GROUP BY {a} HAVING {b}")),
            (expr(), expr()).prop_map(|(a, b)| format!("UPDATE t SET a = {a} WHERE {b}")),
            expr().prop_map(|a| format!("INSERT INTO t (id, a) VALUES (1, {a})")),
            expr().prop_map(|a| format!("DELETE FROM t WHERE {a}")),
            (expr(), expr()).prop_map(|(a, b)| format!("SELECT {a} FROM t JOIN u ON u.t_id = t.id ORDER BY {b}")),
            expr().prop_map(|a| format!("SELECT 1 LIMIT {a}")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

        #[test]
        fn grammar_shaped_statements_are_planned_or_refused(sql in statement()) {
            sql_front_end(&catalog(), sql.as_bytes());
        }

        #[test]
        fn random_text_is_planned_or_refused(
            words in proptest::collection::vec(
                prop_oneof![
                    Just("SELECT"), Just("FROM"), Just("WHERE"), Just("t"), Just("u"), Just("id"),
                    Just("("), Just(")"), Just(","), Just("+"), Just("AND"), Just("'x'"), Just("1"),
                    Just("::"), Just("int"), Just(";"), Just("INSERT"), Just("INTO"), Just("VALUES"),
                    Just("$1"), Just("CASE"), Just("WHEN"), Just("END"), Just("E'\\\\x00'"), Just("-"),
                ],
                0..80,
            )
        ) {
            sql_front_end(&catalog(), words.join(" ").as_bytes());
        }
    }
}
