//! Answers to the system-catalog lookups clients send, from Permafrost's own schema.
//!
//! There are no `pg_catalog` tables: the lookups that ordinary tools make are recognised by
//! their shape and answered from the catalog. Supported: psql's `\dt` and `\d` listings
//! (relations with schema, name, type, owner) and `\d NAME` (columns with their types,
//! NOT NULL and defaults, then the indexes); pgjdbc's `DatabaseMetaData` `getTables`,
//! `getColumns`, `getPrimaryKeys` and `getSchemas` (as pgjdbc 42.7 writes them: the name
//! patterns are LIKE patterns in quoted literals). Any other query on `pg_catalog` or
//! `information_schema` is answered with no rows (what psql's `\d` asks about policies,
//! statistics objects, publications and inheritance, none of which exist here).

use permafrost_executor::Database;
use permafrost_sql::Catalog;
use permafrost_storage::{Column, ColumnDefault, DataType, IndexKind, TableSchema, ValueRef};
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
    /// pgjdbc `getTables`: the tables (kind `TABLE`) and indexes (kind `INDEX`) whose names
    /// match the LIKE patterns, of the kinds asked for.
    JdbcTables {
        schema: Option<String>,
        table: Option<String>,
        tables: bool,
        indexes: bool,
    },
    /// pgjdbc `getColumns`: its inner query's rows (type oid, typmod, NOT NULL, default ...),
    /// from which pgjdbc computes the JDBC columns (DATA_TYPE, TYPE_NAME, COLUMN_SIZE ...).
    JdbcColumns {
        schema: Option<String>,
        table: Option<String>,
        column: Option<String>,
    },
    /// pgjdbc `getPrimaryKeys`: the primary key columns of the table (exact names, not
    /// patterns).
    JdbcPrimaryKeys {
        schema: Option<String>,
        table: Option<String>,
    },
    /// pgjdbc `getSchemas`: `public` when it matches the LIKE pattern.
    JdbcSchemas { schema: Option<String> },
    /// psql `\dn [PATTERN]`: the schemas (`public`, the only one).
    PsqlSchemas { pattern: Option<String> },
    /// psql `\l`: the databases (this server's one).
    PsqlDatabases,
    /// psql `\df [PATTERN]`: the functions and procedures (the SQL-defined procedures).
    PsqlFunctions { pattern: Option<String> },
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

/// The SQL string literal that follows `needle` (searched in `lower`, the lowercased
/// `sql`): `'...'` with doubled quotes, or `E'...'` with backslash escapes.
fn literal_after(sql: &str, lower: &str, needle: &str) -> Option<String> {
    let start = lower.find(needle)? + needle.len();
    let rest = sql[start..].trim_start();
    let (escapes, rest) = match rest.strip_prefix(['E', 'e']) {
        Some(r) if r.starts_with('\'') => (true, r),
        _ => (false, rest),
    };
    let mut chars = rest.strip_prefix('\'')?.chars().peekable();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\'' if chars.peek() == Some(&'\'') => {
                chars.next();
                out.push('\'');
            }
            '\'' => return Some(out),
            '\\' if escapes => out.push(chars.next()?),
            c => out.push(c),
        }
    }
    None
}

/// SQL `LIKE`: `%` any run of characters, `_` one character, `\` takes the next literally.
fn like(pattern: &str, s: &str) -> bool {
    fn go(p: &[char], s: &[char]) -> bool {
        match p {
            [] => s.is_empty(),
            ['%', rest @ ..] => (0..=s.len()).any(|i| go(rest, &s[i..])),
            ['_', rest @ ..] => !s.is_empty() && go(rest, &s[1..]),
            ['\\', c, rest @ ..] | [c, rest @ ..] => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = s.chars().collect();
    go(&p, &s)
}

/// Whether an optional LIKE pattern (absent: everything) matches.
fn like_opt(pattern: &Option<String>, s: &str) -> bool {
    pattern.as_deref().is_none_or(|p| like(p, s))
}

/// pgjdbc's metadata queries (PgDatabaseMetaData, 42.7).
fn recognize_jdbc(sql: &str, lower: &str) -> Option<Lookup> {
    let lit = |needle: &str| literal_after(sql, lower, needle);
    if lower.contains("as table_type")
        && lower.contains("self_referencing_col_name")
        && lower.contains("from pg_catalog.pg_namespace n, pg_catalog.pg_class c")
    {
        // The types asked for: `AND (false OR ( c.relkind = 'r' AND n.nspname !~ '^pg_' AND
        // ... ) OR ...)`; only the clauses for user schemas (`!~ '^pg_'`) can match here.
        let (tables, indexes) = match lower.find("and (false") {
            None => (true, true),
            Some(i) => {
                let filter = &lower[i..lower[i..].find(" order by").map_or(lower.len(), |j| i + j)];
                let user = filter.split("or (").filter(|c| c.contains("nspname !~ '^pg_'"));
                user.fold((false, false), |(t, x), c| {
                    (
                        t || c.contains("relkind = 'r'") || c.contains("relkind in ('r'"),
                        x || c.contains("relkind = 'i'") || c.contains("relkind in ('i'"),
                    )
                })
            }
        };
        return Some(Lookup::JdbcTables {
            schema: lit("n.nspname like "),
            table: lit("c.relname like "),
            tables,
            indexes,
        });
    }
    if lower.contains("join pg_catalog.pg_attribute a")
        && lower.contains("typbasetype")
        && lower.contains(" as adsrc")
        && lower.contains("from pg_catalog.pg_namespace n")
    {
        return Some(Lookup::JdbcColumns {
            schema: lit("n.nspname like "),
            table: lit("c.relname like "),
            column: lit("and attname like "),
        });
    }
    if lower.contains("i.indisprimary") && lower.contains("key_seq") && lower.contains("pk_name") {
        return Some(Lookup::JdbcPrimaryKeys {
            schema: lit("n.nspname = "),
            table: lit("ct.relname = "),
        });
    }
    if lower.contains("as table_schem")
        && lower.contains("as table_catalog")
        && lower.contains("from pg_catalog.pg_namespace")
    {
        return Some(Lookup::JdbcSchemas {
            schema: lit("and nspname like "),
        });
    }
    None
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
    if let Some(lookup) = recognize_jdbc(sql, &lower) {
        return Some(lookup);
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
    let pattern = || {
        let i = lower.find("operator(pg_catalog.~) '")? + "operator(pg_catalog.~) '".len();
        let rest = &sql[i..];
        Some(rest[..rest.find('\'')?].to_string())
    };
    if lower.contains("from pg_catalog.pg_namespace n") && lower.contains("as \"owner\"") {
        return Some(Lookup::PsqlSchemas { pattern: pattern() });
    }
    if lower.contains("from pg_catalog.pg_database d") && lower.contains("as \"name\"") {
        return Some(Lookup::PsqlDatabases);
    }
    if lower.contains("from pg_catalog.pg_proc p")
        && lower.contains("pg_get_function_arguments")
        && lower.contains("as \"type\"")
    {
        return Some(Lookup::PsqlFunctions { pattern: pattern() });
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

/// `atttypmod`: the declared precision and scale of a NUMERIC, the length of a VARCHAR
/// (plus 4, as PostgreSQL stores them); -1 for none.
fn typmod(ty: &DataType) -> i32 {
    match *ty {
        DataType::Decimal { precision, scale } if precision > 0 => {
            ((i32::from(precision) << 16) | i32::from(scale)) + 4
        }
        DataType::Varchar(Some(n)) => i32::try_from(n).map_or(-1, |n| n.saturating_add(4)),
        _ => -1,
    }
}

/// `attlen`: the size of a fixed-size type, -1 for a variable-size one.
fn attlen(ty: &DataType) -> i16 {
    match ty {
        DataType::SmallInt => 2,
        DataType::Integer => 4,
        DataType::BigInt | DataType::Double | DataType::Timestamp => 8,
        DataType::Boolean => 1,
        DataType::Decimal { .. } | DataType::Varchar(_) | DataType::Bytea => -1,
    }
}

/// A column's default as `pg_get_expr` shows it (`0`, `'x'::text`, `CURRENT_TIMESTAMP`);
/// none for a sequence (reported as an identity column instead).
fn default_expr(c: &Column) -> Option<String> {
    let v = match c.default.as_ref()? {
        ColumnDefault::Sequence => return None,
        ColumnDefault::CurrentTimestamp => return t("CURRENT_TIMESTAMP"),
        ColumnDefault::Value(v) => v.as_ref(),
    };
    let cast = match c.ty {
        DataType::Varchar(Some(_)) => "character varying".to_string(),
        DataType::Decimal { .. } => "numeric".to_string(),
        ref ty => ty.sql_name(),
    };
    match v {
        ValueRef::Null => t("NULL"),
        ValueRef::Bool(b) => t(if b { "true" } else { "false" }),
        ValueRef::Int(i) if i >= 0 => t(i.to_string()),
        ValueRef::Decimal(d) if d.is_sign_positive() => t(d.to_string()),
        v => t(format!("'{}'::{cast}", v.to_string().replace('\'', "''"))),
    }
}

impl Lookup {
    /// The columns of the answer.
    pub fn columns(&self) -> Vec<(String, Type)> {
        let text = |n: &str| (n.to_string(), Type::TEXT);
        match self {
            Lookup::ListRelations { .. } => vec![text("Schema"), text("Name"), text("Type"), text("Owner")],
            Lookup::FindRelation { .. } => vec![text("oid"), text("nspname"), text("relname")],
            Lookup::JdbcTables { .. } => [
                "table_cat",
                "table_schem",
                "table_name",
                "table_type",
                "remarks",
                "type_cat",
                "type_schem",
                "type_name",
                "self_referencing_col_name",
                "ref_generation",
            ]
            .into_iter()
            .map(text)
            .collect(),
            Lookup::JdbcColumns { .. } => vec![
                text("nspname"),
                text("relname"),
                text("attname"),
                ("atttypid".into(), Type::INT4),
                ("attnotnull".into(), Type::BOOL),
                ("atttypmod".into(), Type::INT4),
                ("attlen".into(), Type::INT2),
                ("typtypmod".into(), Type::INT4),
                ("attnum".into(), Type::INT8),
                text("attidentity"),
                text("attgenerated"),
                text("adsrc"),
                text("description"),
                ("typbasetype".into(), Type::INT4),
                text("typtype"),
            ],
            Lookup::JdbcPrimaryKeys { .. } => vec![
                text("table_cat"),
                text("table_schem"),
                text("table_name"),
                text("column_name"),
                ("key_seq".into(), Type::INT4),
                text("pk_name"),
            ],
            Lookup::JdbcSchemas { .. } => vec![text("table_schem"), text("table_catalog")],
            Lookup::PsqlSchemas { .. } => vec![text("Name"), text("Owner")],
            Lookup::PsqlDatabases => [
                "Name",
                "Owner",
                "Encoding",
                "Collate",
                "Ctype",
                "ICU Locale",
                "Locale Provider",
                "Access privileges",
            ]
            .into_iter()
            .map(text)
            .collect(),
            Lookup::PsqlFunctions { .. } => vec![
                text("Schema"),
                text("Name"),
                text("Result data type"),
                text("Argument data types"),
                text("Type"),
            ],
            Lookup::RelationInfo { columns, .. }
            | Lookup::Columns { columns, .. }
            | Lookup::Indexes { columns, .. }
            | Lookup::Empty { columns } => (0..(*columns).max(1))
                .map(|i| text(&format!("column{}", i + 1)))
                .collect(),
        }
    }

    /// The rows of the answer: each kind of lookup is answered by its own function below.
    pub fn answer(&self, db: &Database) -> Vec<Vec<Option<String>>> {
        let catalog = db.catalog();
        match self {
            Lookup::ListRelations { indexes } => list_relations(&catalog, *indexes),
            Lookup::FindRelation { pattern } => find_relation(&catalog, pattern),
            Lookup::RelationInfo { oid, columns } => {
                table_by_oid(db, *oid).map_or_else(Vec::new, |table| vec![relation_info(&table, *columns)])
            }
            Lookup::Columns { oid, columns } => {
                table_by_oid(db, *oid).map_or_else(Vec::new, |table| column_rows(&table, *columns))
            }
            Lookup::Indexes { oid, columns } => {
                table_by_oid(db, *oid).map_or_else(Vec::new, |table| index_rows(&table, *columns))
            }
            Lookup::JdbcTables {
                schema,
                table,
                tables,
                indexes,
            } => jdbc_tables(&catalog, schema, table, *tables, *indexes),
            Lookup::JdbcColumns { schema, table, column } => jdbc_columns(&catalog, schema, table, column),
            Lookup::JdbcPrimaryKeys { schema, table } => jdbc_primary_keys(&catalog, schema, table),
            Lookup::JdbcSchemas { schema } => {
                if like_opt(schema, "public") {
                    vec![vec![t("public"), None]]
                } else {
                    Vec::new()
                }
            }
            Lookup::PsqlSchemas { pattern } => {
                if pattern.as_deref().is_none_or(|p| matches(p, "public")) {
                    vec![vec![t("public"), t("permafrost")]]
                } else {
                    Vec::new()
                }
            }
            Lookup::PsqlDatabases => vec![vec![
                t("permafrost"),
                t("permafrost"),
                t("UTF8"),
                t("C"),
                t("C"),
                None,
                t("libc"),
                None,
            ]],
            Lookup::PsqlFunctions { pattern } => psql_functions(db, pattern.as_deref()),
            Lookup::Empty { .. } => Vec::new(),
        }
    }
}

/// psql `\df`: the SQL-defined procedures (the only routines a client can define here),
/// with their argument lists, sorted by name.
fn psql_functions(db: &Database, pattern: Option<&str>) -> Vec<Vec<Option<String>>> {
    let mut rows = Vec::new();
    for name in db.procedure_names() {
        if pattern.is_some_and(|p| !matches(p, &name)) {
            continue;
        }
        let Ok(h) = db.procedure(&name) else { continue };
        let Some(sig) = h.signature() else {
            // A procedure registered in Rust: no SQL signature to show.
            continue;
        };
        let args = sig
            .iter()
            .map(|(n, ty)| format!("IN {n} {}", ty.sql_name()))
            .collect::<Vec<_>>()
            .join(", ");
        rows.push(vec![t("public"), t(name), None, t(args), t("proc")]);
    }
    rows.sort();
    rows
}

/// psql `\dt` / `\d`: schema, name, type and owner of every table (and of every index when
/// `indexes`), sorted.
fn list_relations(catalog: &Catalog, indexes: bool) -> Vec<Vec<Option<String>>> {
    let mut rows = Vec::new();
    for table in catalog.tables() {
        rows.push(vec![t("public"), t(table.name.clone()), t("table"), t("permafrost")]);
        if indexes {
            for ix in &table.indexes {
                rows.push(vec![t("public"), t(ix.name.clone()), t("index"), t("permafrost")]);
            }
        }
    }
    rows.sort();
    rows
}

/// psql `\d NAME`, first step: oid, schema and name of the tables whose name matches
/// `pattern`, by name.
fn find_relation(catalog: &Catalog, pattern: &str) -> Vec<Vec<Option<String>>> {
    let mut rows: Vec<_> = catalog
        .tables()
        .filter(|tb| matches(pattern, &tb.name))
        .map(|tb| vec![t((OID_BASE + tb.id).to_string()), t("public"), t(tb.name.clone())])
        .collect();
    rows.sort_by(|a, b| a[2].cmp(&b[2]));
    rows
}

/// psql `\d NAME`: the table's properties, as one row of `columns` values (the partition
/// column and evictability go in `reloptions`).
fn relation_info(table: &TableSchema, columns: usize) -> Vec<Option<String>> {
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
    pad(
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
        columns,
    )
}

/// psql `\d NAME`: one row of `columns` values per column of the table (name, type,
/// default, NOT NULL, identity for a sequence default).
fn column_rows(table: &TableSchema, columns: usize) -> Vec<Vec<Option<String>>> {
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
                columns,
            )
        })
        .collect()
}

/// psql `\d NAME`: one row of `columns` values per index of the table, the primary key
/// first and the others by name, with their definitions and constraints.
fn index_rows(table: &TableSchema, columns: usize) -> Vec<Vec<Option<String>>> {
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
                    t(index_def(table, i)),
                    condef,
                    contype,
                    b(false),
                    b(false),
                    b(false),
                    t("0"),
                ],
                columns,
            )
        })
        .collect()
}

/// pgjdbc `getTables`: the tables (when `tables`) and indexes (when `indexes`) whose names
/// match the `table` pattern, in the schema `public` when it matches `schema`.
fn jdbc_tables(
    catalog: &Catalog,
    schema: &Option<String>,
    table: &Option<String>,
    tables: bool,
    indexes: bool,
) -> Vec<Vec<Option<String>>> {
    if !like_opt(schema, "public") {
        return Vec::new();
    }
    let row = |name: &str, kind: &str| {
        let mut row = vec![None, t("public"), t(name), t(kind), None];
        row.resize(10, t(""));
        row
    };
    let mut rows = Vec::new();
    for tb in catalog.tables() {
        if tables && like_opt(table, &tb.name) {
            rows.push(row(&tb.name, "TABLE"));
        }
        for ix in tb.indexes.iter().filter(|ix| indexes && like_opt(table, &ix.name)) {
            rows.push(row(&ix.name, "INDEX"));
        }
    }
    // ORDER BY TABLE_TYPE, TABLE_SCHEM, TABLE_NAME
    rows.sort_by(|a, b| (&a[3], &a[2]).cmp(&(&b[3], &b[2])));
    rows
}

/// pgjdbc `getColumns`: the rows of its inner query for the columns matching `column` of
/// the tables matching `table` (by table name, then column number).
fn jdbc_columns(
    catalog: &Catalog,
    schema: &Option<String>,
    table: &Option<String>,
    column: &Option<String>,
) -> Vec<Vec<Option<String>>> {
    if !like_opt(schema, "public") {
        return Vec::new();
    }
    let mut tables: Vec<_> = catalog.tables().filter(|tb| like_opt(table, &tb.name)).collect();
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    let mut rows = Vec::new();
    for tb in tables {
        for (i, c) in tb.columns.iter().enumerate() {
            if !like_opt(column, &c.name) {
                continue;
            }
            let identity = (c.default == Some(ColumnDefault::Sequence)).then(|| "d".to_string());
            rows.push(vec![
                t("public"),
                t(tb.name.clone()),
                t(c.name.clone()),
                t(crate::types::pg_type(Some(&c.ty)).oid().to_string()),
                t(if c.nullable { "f" } else { "t" }),
                t(typmod(&c.ty).to_string()),
                t(attlen(&c.ty).to_string()),
                t("-1"),
                t((i + 1).to_string()),
                identity,
                None,
                default_expr(c),
                None,
                t("0"),
                t("b"),
            ]);
        }
    }
    rows
}

/// pgjdbc `getPrimaryKeys`: the primary key columns of the table named `table` (every
/// table when `None`), in key order.
fn jdbc_primary_keys(catalog: &Catalog, schema: &Option<String>, table: &Option<String>) -> Vec<Vec<Option<String>>> {
    if schema.as_deref().is_some_and(|s| s != "public") {
        return Vec::new();
    }
    let mut rows = Vec::new();
    for tb in catalog
        .tables()
        .filter(|tb| table.as_deref().is_none_or(|n| n == tb.name))
    {
        for ix in tb.indexes.iter().filter(|ix| ix.primary) {
            for (seq, &c) in ix.columns.iter().enumerate() {
                rows.push(vec![
                    None,
                    t("public"),
                    t(tb.name.clone()),
                    t(tb.columns[c].name.clone()),
                    t((seq + 1).to_string()),
                    t(ix.name.clone()),
                ]);
            }
        }
    }
    // ORDER BY table_name, pk_name, key_seq (rows of one key are in key order)
    rows.sort_by(|a, b| (&a[2], &a[5]).cmp(&(&b[2], &b[5])));
    rows
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
    fn like_patterns_and_quoted_literals() {
        assert!(like("j_%", "jxitems"));
        assert!(!like("j\\_%", "jxitems"));
        assert!(like("j\\_%", "j_items"));
        assert!(like("%a%", "data"));
        assert!(like("%", ""));
        assert!(!like("_", ""));
        assert!(!like("j_items", "j_items2"));
        let sql = "x LIKE 'it''s%' AND y LIKE E'a\\\\_b\\'c'";
        let lower = sql.to_ascii_lowercase();
        assert_eq!(literal_after(sql, &lower, "x like "), Some("it's%".into()));
        assert_eq!(literal_after(sql, &lower, "y like "), Some("a\\_b'c".into()));
        assert_eq!(literal_after(sql, &lower, "z like "), None);
    }

    #[test]
    fn jdbc_table_types_are_read_from_the_filter() {
        let tables = |filter: &str| {
            let sql = format!(
                "SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME, 'x' AS TABLE_TYPE, \
                 '' AS SELF_REFERENCING_COL_NAME FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c \
                 WHERE c.relnamespace = n.oid AND c.relname LIKE 'it''s%' {filter} ORDER BY TABLE_TYPE"
            );
            recognize(&sql)
        };
        let lookup = |t: bool, i: bool| {
            Some(Lookup::JdbcTables {
                schema: None,
                table: Some("it's%".into()),
                tables: t,
                indexes: i,
            })
        };
        assert_eq!(tables(""), lookup(true, true));
        let table = "( c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' )";
        let index = "( c.relkind = 'i' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' )";
        let system = "( c.relkind = 'r' AND (n.nspname = 'pg_catalog' OR n.nspname = 'information_schema') )";
        let temp = "( c.relkind IN ('r','p') AND n.nspname ~ '^pg_temp_' )";
        assert_eq!(tables(&format!("AND (false  OR {table} )")), lookup(true, false));
        assert_eq!(tables(&format!("AND (false  OR {index} )")), lookup(false, true));
        assert_eq!(
            tables(&format!("AND (false  OR {system}  OR {temp} )")),
            lookup(false, false)
        );
        assert_eq!(
            tables(&format!("AND (false  OR {system}  OR {index} OR {table} )")),
            lookup(true, true)
        );
    }

    #[test]
    fn select_lists_are_counted_at_the_top_level() {
        assert_eq!(select_items("SELECT a, f(b, c), (SELECT x, y FROM t) FROM u"), 3);
        assert_eq!(select_items("SELECT 'a,b', c FROM t"), 2);
    }
}
