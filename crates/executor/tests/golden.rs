//! SQL golden tests.
//!
//! Each `tests/golden/NAME.sql` runs against a fresh database with two partitions (so
//! multi-partition paths run too); the echoed statements and their results must equal
//! `tests/golden/NAME.out`. After an intended change, regenerate the outputs with
//!
//! ```text
//! UPDATE_GOLDEN=1 cargo test -p permafrost-executor --test golden
//! ```
//!
//! and review the diff. Script format: statements end with `;` at the end of a line;
//! lines starting with `--` are comments, echoed as they are; a comment
//! `-- params: 1, 'text', NULL` gives the next statement's parameters.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use permafrost_executor::{Config, Database};
use permafrost_types::Value;

fn parse_params(list: &str) -> Vec<Value> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|t| {
            if t.eq_ignore_ascii_case("null") {
                Value::Null
            } else if let Some(s) = t.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
                Value::from(s)
            } else if t == "true" || t == "false" {
                Value::Bool(t == "true")
            } else if let Ok(i) = t.parse::<i64>() {
                Value::Int(i)
            } else if let Ok(d) = t.parse::<f64>() {
                Value::Double(d)
            } else {
                panic!("bad parameter {t}")
            }
        })
        .collect()
}

fn render(db: &Database, sql: &str, params: Vec<Value>) -> String {
    let mut out = String::new();
    let verb = sql.split_whitespace().next().unwrap_or("").to_uppercase();
    match db.execute_sql(sql, params) {
        Ok(rows) => {
            if !rows.columns().is_empty() {
                let names: Vec<&str> = rows.columns().iter().map(|c| c.name.as_str()).collect();
                writeln!(out, "{}", names.join(" | ")).unwrap();
                writeln!(out, "---").unwrap();
                for r in rows.iter() {
                    let vals: Vec<String> = r.values().map(|v| v.to_string()).collect();
                    writeln!(out, "{}", vals.join(" | ")).unwrap();
                }
                writeln!(out, "({} row{})", rows.len(), if rows.len() == 1 { "" } else { "s" }).unwrap();
            }
            match verb.as_str() {
                "INSERT" | "UPDATE" | "DELETE" => writeln!(out, "{verb} {}", rows.affected).unwrap(),
                "SELECT" => {}
                _ => writeln!(out, "ok").unwrap(),
            }
        }
        Err(e) => writeln!(out, "error {}: {e}", e.sqlstate()).unwrap(),
    }
    out
}

fn run_script(text: &str) -> String {
    let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
    let mut out = String::new();
    let mut stmt = String::new();
    let mut params = Vec::new();
    for line in text.lines() {
        if stmt.is_empty() {
            if let Some(p) = line.strip_prefix("-- params:") {
                params = parse_params(p);
                writeln!(out, "{line}").unwrap();
                continue;
            }
            if line.starts_with("--") || line.trim().is_empty() {
                writeln!(out, "{line}").unwrap();
                continue;
            }
        }
        stmt.push_str(line);
        stmt.push('\n');
        if line.trim_end().ends_with(';') {
            let sql = stmt.trim().trim_end_matches(';').to_string();
            for l in sql.lines() {
                writeln!(out, "> {l}").unwrap();
            }
            out.push_str(&render(&db, &sql, std::mem::take(&mut params)));
            stmt.clear();
        }
    }
    assert!(stmt.trim().is_empty(), "script ends inside a statement: {stmt}");
    out
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn golden_scripts() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    scripts.sort();
    assert!(!scripts.is_empty());
    let mut failures = Vec::new();
    for script in scripts {
        let got = run_script(&std::fs::read_to_string(&script).unwrap());
        let expected_path = script.with_extension("out");
        if update {
            std::fs::write(&expected_path, &got).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if got != expected {
            let first = got
                .lines()
                .zip(expected.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b)
                .map(|(i, (a, b))| format!("line {}: got `{a}`, expected `{b}`", i + 1))
                .unwrap_or_else(|| "lengths differ".into());
            failures.push(format!("{}: {first}", script.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "golden mismatches (UPDATE_GOLDEN=1 regenerates):\n{}",
        failures.join("\n")
    );
}
