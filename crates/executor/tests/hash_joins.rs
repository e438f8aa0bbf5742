//! Hash joins: a relation joined by equalities that no index answers is hashed once per
//! statement (`Access::Hash`) and gives what a nested loop over it gives, inner and outer
//! joins alike, whether its table fits in `work_mem` (16 MiB here) or not (then it is
//! hashed in passes, a key too large for a pass scanned in its pass; inside a
//! null-extended group, scanned at each entry), of subqueries in FROM too, and over evicted
//! tuples (the pre-pass brings them back).

mod common;

use common::retry as insert;
use permafrost_executor::{Config, Database};
use permafrost_types::Value;

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Null => 0,
        // (A sum of bigints is numeric.)
        v => v
            .to_string()
            .parse()
            .unwrap_or_else(|_| panic!("not an integer: {v:?}")),
    }
}

fn one_row(db: &Database, sql: &str) -> Vec<i64> {
    let rows = db.execute_sql(sql, vec![]).unwrap();
    assert_eq!(rows.len(), 1, "{sql}");
    rows.to_values()[0].iter().map(int).collect()
}

fn plan(db: &Database, sql: &str) -> String {
    let rows = db.execute_sql(&format!("EXPLAIN {sql}"), vec![]).unwrap();
    rows.to_values()
        .iter()
        .map(|r| r[0].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `n` rows `(id, id % m, 's' || id % 7)` in table `name`.
fn table(db: &Database, name: &str, n: i64, m: i64) -> Vec<(i64, i64, i64)> {
    db.execute_ddl(&format!(
        "CREATE TABLE {name} (id BIGINT PRIMARY KEY, a INTEGER, s TEXT)"
    ))
    .unwrap();
    for from in (1..=n).step_by(50_000) {
        let to = (from + 49_999).min(n);
        insert(
            db,
            &format!("INSERT INTO {name} SELECT g, g % {m}, 's' || (g % 7) FROM generate_series({from}, {to}) g"),
            vec![],
        );
    }
    (1..=n).map(|g| (g, g % m, g % 7)).collect()
}

#[test]
fn hash_joins_give_what_nested_loops_give_within_and_past_work_mem() {
    let config = Config::builder().partitions(2).memory_limit(64 << 20).build().unwrap();
    let db = Database::open(config).unwrap();
    let l = table(&db, "l", 3_000, 37);
    let few = table(&db, "few", 40, 37);
    // About 1.6 MB of hash table; past 16 MiB, hashed in passes of its keys; and one key
    // past 16 MiB by itself (by `a` alone), scanned in its pass.
    let mid = table(&db, "mid", 20_000, 41);
    let big = table(&db, "big", 260_000, 41);
    let skewed = table(&db, "skewed", 230_000, 1);
    for (outer, l, name, r) in [
        ("l", &l, "mid", &mid),
        ("few", &few, "big", &big),
        ("few", &few, "skewed", &skewed),
    ] {
        let inner =
            format!("SELECT count(*), sum(l.id + r.id) FROM {outer} l JOIN {name} r ON r.a = l.a AND r.s = l.s");
        assert!(
            plan(&db, &inner).contains(&format!("Hash Lookup on {name}")),
            "{}",
            plan(&db, &inner)
        );
        let (mut count, mut sum) = (0, 0);
        for x in l {
            for y in r.iter().filter(|y| y.1 == x.1 && y.2 == x.2) {
                count += 1;
                sum += x.0 + y.0;
            }
        }
        assert_eq!(one_row(&db, &inner), vec![count, sum], "{inner}");
        // A LEFT JOIN whose ON conditions filter the hashed side alone too.
        let outer = format!(
            "SELECT count(*), count(r.id), sum(r.id) FROM {outer} l LEFT JOIN {name} r ON r.a = l.a AND r.id % 50 > 0"
        );
        let (mut count, mut matched, mut sum) = (0, 0, 0);
        for x in l {
            let found: Vec<i64> = r.iter().filter(|y| y.1 == x.1 && y.0 % 50 > 0).map(|y| y.0).collect();
            count += found.len().max(1) as i64;
            matched += found.len() as i64;
            sum += found.iter().sum::<i64>();
        }
        assert_eq!(one_row(&db, &outer), vec![count, matched, sum], "{outer}");
    }
    // Hashed in passes between two other relations: the one before read once per pass,
    // the one after (a lookup) per row found.
    let three = "SELECT count(*), sum(m.a) FROM few l JOIN big r ON r.a = l.a JOIN mid m ON m.id = r.id";
    let (mut count, mut sum) = (0, 0);
    for x in &few {
        for y in big.iter().filter(|y| y.1 == x.1 && y.0 <= 20_000) {
            count += 1;
            sum += y.0 % 41;
        }
    }
    assert_eq!(one_row(&db, three), vec![count, sum], "{three}");
    // Inside a null-extended group (not its first level), a table past work_mem is not
    // hashed in passes (whether the group matched cannot wait for another pass): it is
    // scanned at each entry, and the group null-extended where nothing matched.
    let group = "SELECT count(*), count(m.id), count(r.id) FROM few l \
        LEFT JOIN (mid m JOIN big r ON r.a = m.id * 5) ON m.id = l.id WHERE l.id <= 10";
    let shown = plan(&db, group);
    assert!(
        shown.contains("null-extended with the next relation") && shown.contains("Hash Lookup on big"),
        "{shown}"
    );
    let (mut count, mut matched) = (0, 0);
    for x in few.iter().filter(|x| x.0 <= 10) {
        let found = big.iter().filter(|y| y.1 == x.0 * 5).count() as i64;
        count += found.max(1);
        matched += found;
    }
    assert!(matched > 0 && count > matched, "some rows of `few` match, some not");
    assert_eq!(one_row(&db, group), vec![count, matched, matched], "{group}");
}

#[test]
fn subqueries_in_from_joined_by_equalities_are_hashed() {
    let config = Config::builder().partitions(2).memory_limit(64 << 20).build().unwrap();
    let db = Database::open(config).unwrap();
    let l = table(&db, "l", 3_000, 37);
    let mid = table(&db, "mid", 20_000, 41);
    // Grouped, so not pulled up into the query: its rows are hashed by `a`.
    let grouped =
        "SELECT count(*), sum(l.id * g.n) FROM l JOIN (SELECT a, count(*) AS n FROM mid GROUP BY a) g ON g.a = l.a";
    assert!(plan(&db, grouped).contains("its rows hashed"), "{}", plan(&db, grouped));
    let per_a = |a: i64, f: &dyn Fn(&(i64, i64, i64)) -> bool| mid.iter().filter(|y| y.1 == a && f(y)).count() as i64;
    let (mut count, mut sum) = (0, 0);
    for x in &l {
        let n = per_a(x.1, &|_| true);
        if n > 0 {
            count += 1;
            sum += x.0 * n;
        }
    }
    assert_eq!(one_row(&db, grouped), vec![count, sum], "{grouped}");
    // Null-extended, with an ON condition on the subquery's rows alone.
    let outer = "WITH g AS (SELECT a, count(*) AS n FROM mid WHERE id % 3 = 0 GROUP BY a) \
                 SELECT count(*), count(g.n), sum(g.n) FROM l LEFT JOIN g ON g.a = l.a AND g.n > 162";
    assert!(plan(&db, outer).contains("its rows hashed"), "{}", plan(&db, outer));
    let (mut count, mut matched, mut sum) = (0, 0, 0);
    for x in &l {
        let n = per_a(x.1, &|y| y.0 % 3 == 0);
        count += 1;
        if n > 162 {
            matched += 1;
            sum += n;
        }
    }
    assert_eq!(one_row(&db, outer), vec![count, matched, sum], "{outer}");
}

#[test]
fn a_hash_join_over_evicted_tuples_answers_over_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::evicted_t_and_small(dir.path());
    let sql = "SELECT count(*), sum(t.id) FROM small JOIN t ON t.grp = small.grp";
    assert!(plan(&db, sql).contains("Hash Lookup on t"), "{}", plan(&db, sql));
    let ids: Vec<i64> = (0..4_000).filter(|id| (id % 10) % 2 == 0).collect();
    assert_eq!(one_row(&db, sql), vec![ids.len() as i64, ids.iter().sum()]);
}
