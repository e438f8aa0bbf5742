//! Answers to the system-catalog lookups clients send, from Permafrost's own schema.
//!
//! There are no `pg_catalog` tables: the lookups that ordinary tools make are recognised by
//! their shape and answered from the catalog. Supported: psql's `\dt` and `\d` listings
//! (relations with schema, name, type, owner) and `\d NAME` (columns with their types,
//! NOT NULL and defaults, then the indexes). Any other query on `pg_catalog` or
//! `information_schema` is answered with no rows (what psql's `\d` asks about policies,
//! statistics objects, publications and inheritance, none of which exist here).

use permafrost_executor::Database;
use permafrost_storage::{ColumnDefault, IndexKind, TableSchema};
use pgwire::api::Type;

/// A recognised catalog lookup.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// psql `\dt` / `\d`: every table (and index when `indexes`).
    ListRelations { indexes: bool },
    /// psql `\d NAME`, first step: the tables whose name matches.
    FindRelation { pattern: String },
    /// psql `\d NAME`, the table's properties (by the oid of the first step).
    RelationInfo { oid: u32, columns: usize },
    /// psql `\d NAME`: the columns.
    Columns { oid: u32, columns: usize },
    /// psql `\d NAME`: the indexes.
    Indexes { oid: u32, columns: usize },
    /// Another lookup psql makes for `\d NAME` whose answer here is always empty
    /// (policies, statistics objects, publications, inheritance, partitions ...).
    Empty { columns: usize },
}

/// Oids handed out for tables: the table id plus this.
const OID_BASE: u32 = 16384;

/// The first quoted number compared with `=` (psql writes oids as `c.oid = '16384'` or
/// `a.attrelid = '16384'`).
fn oid_in(sql: &str) -> Option<u32> {
    let mut rest = sql;
    while let Some(i) = rest.find("= '") {
        let after = &rest[i + 3..];
        let end = after.find('\'')?;
        if let Ok(n) = after[..end].parse() {
            return Some(n);
        }
        rest = &after[end..];
    }
    None
}

/// Counts the items of the outermost SELECT list (psql reads columns by position).
fn select_items(sql: &str) -> usize {
    let lower = sql.to_ascii_lowercase();
    let Some(start) = lower.find("select") else { return 0 };
    let body = &sql[start + 6..];
    let mut depth = 0i32;
    let mut items = 1;
    let mut in_str = false;
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_str {
            if c == b'\'' {
                in_str = false;
            }
        } else {
            match c {
                b'\'' => in_str = true,
                b'(' => depth += 1,
                b')' => depth -= 1,
                b',' if depth == 0 => items += 1,
                _ if depth == 0
                    && lower[start + 6 + i..].starts_with("from")
                    && i > 0
                    && !bytes[i - 1].is_ascii_alphanumeric()
                    && bytes[i - 1] != b'_' =>
                {
                    return items;
                }
                _ => {}
            }
        }
        i += 1;
    }
    items
}

/// Recognises a catalog lookup; `None` for a query that is not one.
pub fn recognize(sql: &str) -> Option<Lookup> {
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("pg_catalog.") && !lower.contains("information_schema.") {
        return None;
    }
    if !lower.trim_start().starts_with("select") {
        return None;
    }
    let columns = select_items(sql);
    if lower.contains("from pg_catalog.pg_class c") && lower.contains("c.relkind in (") && lower.contains("as \"name\"")
    {
        let kinds = lower
            .split("c.relkind in (")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .unwrap_or("");
        return Some(Lookup::ListRelations {
            indexes: kinds.contains("'i'"),
        });
    }
    if lower.contains("operator(pg_catalog.~)")
        && lower.contains("c.relname")
        && lower.contains("from pg_catalog.pg_class c")
    {
        let i = lower.find("operator(pg_catalog.~) '")? + "operator(pg_catalog.~) '".len();
        let rest = &sql[i..];
        let pattern = rest[..rest.find('\'')?].to_string();
        return Some(Lookup::FindRelation { pattern });
    }
    let oid = oid_in(sql);
    if let Some(oid) = oid {
        if lower.contains("c.relchecks") {
            return Some(Lookup::RelationInfo { oid, columns });
        }
        if lower.contains("from pg_catalog.pg_attribute a") && lower.contains("a.attname") {
            return Some(Lookup::Columns { oid, columns });
        }
        if lower.contains("pg_catalog.pg_index i") && lower.contains("c2.relname") {
            return Some(Lookup::Indexes { oid, columns });
        }
    }
    Some(Lookup::Empty { columns })
}

fn table_by_oid(db: &Database, oid: u32) -> Option<std::sync::Arc<TableSchema>> {
    let id = oid.checked_sub(OID_BASE)?;
    db.catalog().table_by_id(id).cloned()
}

/// Matches psql's translation of a name pattern (`^(name)$`, `.*` for `*`, `.` for `?`).
fn matches(pattern: &str, name: &str) -> bool {
    let p = pattern.trim_start_matches('^').trim_end_matches('$');
    let p = p.strip_prefix('(').and_then(|x| x.strip_suffix(')')).unwrap_or(p);
    glob(p.as_bytes(), name.as_bytes())
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    match p {
        [] => s.is_empty(),
        [b'.', b'*', rest @ ..] => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        [b'.', rest @ ..] => !s.is_empty() && glob(rest, &s[1..]),
        [c, rest @ ..] => s.first() == Some(c) && glob(rest, &s[1..]),
    }
}

fn t(s: impl Into<String>) -> Option<String> {
    Some(s.into())
}

fn pad(mut row: Vec<Option<String>>, columns: usize) -> Vec<Option<String>> {
    row.resize(columns.max(row.len()), None);
    row.truncate(columns.max(1));
    row
}

fn index_def(table: &TableSchema, i: usize) -> String {
    let ix = &table.indexes[i];
    let cols: Vec<&str> = ix.columns.iter().map(|&c| table.columns[c].name.as_str()).collect();
    format!(
        "CREATE {}INDEX {} ON public.{} USING {} ({})",
        if ix.unique { "UNIQUE " } else { "" },
        ix.name,
        table.name,
        match ix.kind {
            IndexKind::Hash => "hash",
            IndexKind::Ordered => "btree",
        },
        cols.join(", ")
    )
}

impl Lookup {
    /// The columns of the answer.
    pub fn columns(&self) -> Vec<(String, Type)> {
        let text = |n: &str| (n.to_string(), Type::TEXT);
        match self {
            Lookup::ListRelations { .. } => vec![text("Schema"), text("Name"), text("Type"), text("Owner")],
            Lookup::FindRelation { .. } => vec![text("oid"), text("nspname"), text("relname")],
            Lookup::RelationInfo { columns, .. }
            | Lookup::Columns { columns, .. }
            | Lookup::Indexes { columns, .. }
            | Lookup::Empty { columns } => (0..(*columns).max(1))
                .map(|i| text(&format!("column{}", i + 1)))
                .collect(),
        }
    }

    /// The rows of the answer.
    pub fn answer(&self, db: &Database) -> Vec<Vec<Option<String>>> {
        let catalog = db.catalog();
        match self {
            Lookup::ListRelations { indexes } => {
                let mut rows = Vec::new();
                for table in catalog.tables() {
                    rows.push(vec![t("public"), t(table.name.clone()), t("table"), t("permafrost")]);
                    if *indexes {
                        for ix in &table.indexes {
                            rows.push(vec![t("public"), t(ix.name.clone()), t("index"), t("permafrost")]);
                        }
                    }
                }
                rows.sort();
                rows
            }
            Lookup::FindRelation { pattern } => {
                let mut rows: Vec<_> = catalog
                    .tables()
                    .filter(|tb| matches(pattern, &tb.name))
                    .map(|tb| vec![t((OID_BASE + tb.id).to_string()), t("public"), t(tb.name.clone())])
                    .collect();
                rows.sort_by(|a, b| a[2].cmp(&b[2]));
                rows
            }
            Lookup::RelationInfo { oid, columns } => {
                let Some(table) = table_by_oid(db, *oid) else {
                    return Vec::new();
                };
                // relchecks, relkind, relhasindex, relhasrules, relhastriggers, relrowsecurity,
                // relforcerowsecurity, relhasoids, relispartition, reloptions, reltablespace,
                // reloftype, relpersistence, relreplident, amname
                let reloptions = format!(
                    "partition_by={}, evictable={}",
                    table
                        .partition_column
                        .map_or("none".to_string(), |c| table.columns[c].name.clone()),
                    table.evictable
                );
                vec![pad(
                    vec![
                        t("0"),
                        t("r"),
                        t(if table.indexes.is_empty() { "f" } else { "t" }),
                        t("f"),
                        t("f"),
                        t("f"),
                        t("f"),
                        t("f"),
                        t("f"),
                        t(reloptions),
                        t("0"),
                        t(""),
                        t("p"),
                        t("d"),
                        t("heap"),
                    ],
                    *columns,
                )]
            }
            Lookup::Columns { oid, columns } => {
                let Some(table) = table_by_oid(db, *oid) else {
                    return Vec::new();
                };
                // attname, format_type, default, attnotnull, attcollation, attidentity, attgenerated
                table
                    .columns
                    .iter()
                    .map(|c| {
                        let (default, identity) = match &c.default {
                            None => (None, ""),
                            Some(ColumnDefault::Value(v)) => (t(v.to_string()), ""),
                            Some(ColumnDefault::CurrentTimestamp) => (t("CURRENT_TIMESTAMP"), ""),
                            Some(ColumnDefault::Sequence) => (None, "d"),
                        };
                        pad(
                            vec![
                                t(c.name.clone()),
                                t(c.ty.sql_name().to_lowercase()),
                                default,
                                t(if c.nullable { "f" } else { "t" }),
                                None,
                                t(identity),
                                t(""),
                            ],
                            *columns,
                        )
                    })
                    .collect()
            }
            Lookup::Indexes { oid, columns } => {
                let Some(table) = table_by_oid(db, *oid) else {
                    return Vec::new();
                };
                // relname, indisprimary, indisunique, indisclustered, indisvalid, indexdef,
                // constraintdef, contype, condeferrable, condeferred, indisreplident, reltablespace
                let mut order: Vec<usize> = (0..table.indexes.len()).collect();
                order.sort_by(|&a, &b| {
                    let (x, y) = (&table.indexes[a], &table.indexes[b]);
                    y.primary.cmp(&x.primary).then(x.name.cmp(&y.name))
                });
                order
                    .into_iter()
                    .map(|i| {
                        let ix = &table.indexes[i];
                        let b = |v: bool| t(if v { "t" } else { "f" });
                        let cols: Vec<&str> = ix.columns.iter().map(|&c| table.columns[c].name.as_str()).collect();
                        let (condef, contype) = if ix.primary {
                            (t(format!("PRIMARY KEY ({})", cols.join(", "))), t("p"))
                        } else if ix.unique {
                            (t(format!("UNIQUE ({})", cols.join(", "))), t("u"))
                        } else {
                            (None, None)
                        };
                        pad(
                            vec![
                                t(ix.name.clone()),
                                b(ix.primary),
                                b(ix.unique),
                                b(false),
                                b(true),
                                t(index_def(&table, i)),
                                condef,
                                contype,
                                b(false),
                                b(false),
                                b(false),
                                t("0"),
                            ],
                            *columns,
                        )
                    })
                    .collect()
            }
            Lookup::Empty { .. } => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psql_lookups_are_recognised() {
        let dt = "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind WHEN 'r' THEN 'table' END as \"Type\",\n  pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\"\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\nWHERE c.relkind IN ('r','p','')\n ORDER BY 1,2;";
        assert_eq!(recognize(dt), Some(Lookup::ListRelations { indexes: false }));
        let find = "SELECT c.oid,\n  n.nspname,\n  c.relname\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\nWHERE c.relname OPERATOR(pg_catalog.~) '^(accounts)$' COLLATE pg_catalog.default\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 2, 3;";
        assert_eq!(
            recognize(find),
            Some(Lookup::FindRelation {
                pattern: "^(accounts)$".into()
            })
        );
        let cols = "SELECT a.attname,\n  pg_catalog.format_type(a.atttypid, a.atttypmod),\n  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)\n   FROM pg_catalog.pg_attrdef d\n   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),\n  a.attnotnull\nFROM pg_catalog.pg_attribute a\nWHERE a.attrelid = '16390' AND a.attnum > 0 AND NOT a.attisdropped\nORDER BY a.attnum;";
        assert_eq!(recognize(cols), Some(Lookup::Columns { oid: 16390, columns: 4 }));
        assert_eq!(recognize("SELECT 1"), None);
        assert_eq!(
            recognize("SELECT pubname FROM pg_catalog.pg_publication p WHERE p.oid = '1'"),
            Some(Lookup::Empty { columns: 1 })
        );
    }

    #[test]
    fn name_patterns_match_as_psql_means() {
        assert!(matches("^(accounts)$", "accounts"));
        assert!(!matches("^(accounts)$", "accounts2"));
        assert!(matches("^(acc.*)$", "accounts"));
        assert!(matches("^(a.counts)$", "accounts"));
        assert!(!matches("^(b.*)$", "accounts"));
    }

    #[test]
    fn select_lists_are_counted_at_the_top_level() {
        assert_eq!(select_items("SELECT a, f(b, c), (SELECT x, y FROM t) FROM u"), 3);
        assert_eq!(select_items("SELECT 'a,b', c FROM t"), 2);
    }
}
