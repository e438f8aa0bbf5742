//! PostgreSQL's size functions on the catalogs' engine (psql's `\dt+`, `\di+`, `\l+`):
//! `pg_table_size`, `pg_relation_size`, `pg_indexes_size`, `pg_total_relation_size`,
//! `pg_database_size` and `pg_size_pretty`.
//!
//! The sizes are the engine's own counts (`Database::table_stats`), taken when a query
//! that calls one of them starts ([`Sizes::fill`]), so every call of the query sees the
//! same figures:
//! - a table's size is what its rows take: the tuple slots and out-of-line values of
//!   the rows in memory, the tombstones of evicted ones, and the bytes of the blocks on
//!   disk that hold those (summed over the partitions, so a replicated table counts once
//!   per copy);
//! - its indexes' size is both stages of its indexes (the entries of rows in memory and
//!   the compact entries of evicted ones); the engine counts a table's indexes together,
//!   so one index's size is an even share of them;
//! - a database's size is the total of its tables'.
//!
//! Only the main fork has bytes (`pg_relation_size(rel, 'fsm' | 'vm' | 'init')` is 0), a
//! relation that is not a table or index (a sequence, a catalog) has none, and an oid
//! that names nothing is NULL, as in PostgreSQL.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use permafrost_executor::Database;
use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;

use super::limits::PgError;

/// The sizes a query's calls read, by relation oid.
#[derive(Default)]
pub struct Sizes(Mutex<Figures>);

#[derive(Default)]
struct Figures {
    /// Tables: bytes of their rows, and of their indexes.
    tables: HashMap<i64, (i64, i64)>,
    /// Indexes: their share of their table's index bytes.
    indexes: HashMap<i64, i64>,
    /// Every other relation the catalog knows (sizes 0).
    others: HashSet<i64>,
    /// Every relation's oid by name (a relation given by name, `pg_table_size('t')`).
    names: HashMap<String, i64>,
    database: i64,
}

impl Sizes {
    /// Whether a (translated) catalog query calls a size function.
    pub fn wanted(sql: &str) -> bool {
        sql.contains("_size(")
    }

    /// Takes the engine's figures for the tables `conn`'s catalog holds.
    pub fn fill(&self, db: &Database, conn: &Connection) -> Result<(), PgError> {
        let stats = db.table_stats().map_err(|e| PgError(e.sqlstate(), e.to_string()))?;
        let sql_error = |e: rusqlite::Error| PgError("XX000", format!("internal error: {e}"));
        let mut oids: HashMap<String, i64> = HashMap::new();
        let mut others = HashSet::new();
        let mut names = HashMap::new();
        {
            let mut st = conn
                .prepare("SELECT oid, relname, relkind FROM pg_catalog.pg_class")
                .map_err(sql_error)?;
            let mut rows = st.query([]).map_err(sql_error)?;
            while let Some(r) = rows.next().map_err(sql_error)? {
                let (oid, name, kind): (i64, String, String) = (
                    r.get(0).map_err(sql_error)?,
                    r.get(1).map_err(sql_error)?,
                    r.get(2).map_err(sql_error)?,
                );
                names.insert(name.clone(), oid);
                if kind == "r" {
                    oids.insert(name, oid);
                } else if kind != "i" {
                    others.insert(oid);
                }
            }
        }
        let mut of_table: HashMap<i64, Vec<i64>> = HashMap::new();
        {
            let mut st = conn
                .prepare("SELECT indexrelid, indrelid FROM pg_catalog.pg_index")
                .map_err(sql_error)?;
            let mut rows = st.query([]).map_err(sql_error)?;
            while let Some(r) = rows.next().map_err(sql_error)? {
                let (index, table): (i64, i64) = (r.get(0).map_err(sql_error)?, r.get(1).map_err(sql_error)?);
                of_table.entry(table).or_default().push(index);
            }
        }
        let mut f = Figures {
            others,
            names,
            ..Figures::default()
        };
        for t in &stats {
            let Some(&oid) = oids.get(&t.name) else { continue };
            let rows = t.hot_bytes() + t.tombstone_bytes + t.cold_bytes;
            let indexes = t.index_bytes + t.compact_index_bytes;
            let (rows, indexes) = (clamp(rows), clamp(indexes));
            f.tables.insert(oid, (rows, indexes));
            f.database = f.database.saturating_add(rows.saturating_add(indexes));
            if let Some(ix) = of_table.get(&oid) {
                for &i in ix {
                    f.indexes.insert(i, indexes / ix.len() as i64);
                }
            }
        }
        // A table with no rows yet has no figures at its partitions: 0 bytes.
        for oid in oids.into_values() {
            if let std::collections::hash_map::Entry::Vacant(e) = f.tables.entry(oid) {
                e.insert((0, 0));
                for &i in of_table.get(&oid).into_iter().flatten() {
                    f.indexes.insert(i, 0);
                }
            }
        }
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = f;
        Ok(())
    }

    /// The bytes `pick` chooses for the relation `rel` names (an oid, or a name as a
    /// regclass literal reads it), if it is a relation.
    fn of(&self, rel: ValueRef<'_>, pick: impl Fn(&Figures, i64) -> Option<i64>) -> rusqlite::Result<Option<i64>> {
        let f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let oid = match rel {
            ValueRef::Text(t) if String::from_utf8_lossy(t).trim().parse::<i64>().is_err() => {
                let name = permafrost_sql::bind::name_in_text(&String::from_utf8_lossy(t));
                match f.names.get(&name) {
                    Some(&oid) => oid,
                    None => {
                        return Err(rusqlite::Error::UserFunctionError(Box::new(PgError(
                            "42P01",
                            format!("relation \"{name}\" does not exist"),
                        ))));
                    }
                }
            }
            other => match int(other) {
                Some(oid) => oid,
                None => return Ok(None),
            },
        };
        Ok(pick(&f, oid))
    }
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A table's rows, an index's share, or 0 for another relation.
fn relation(f: &Figures, oid: i64) -> Option<i64> {
    f.tables
        .get(&oid)
        .map(|t| t.0)
        .or_else(|| f.indexes.get(&oid).copied())
        .or_else(|| f.others.contains(&oid).then_some(0))
}

fn int(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Integer(n) => Some(n),
        ValueRef::Real(f) => Some(f as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// Defines the size functions on `conn`, reading `sizes`.
pub fn define(conn: &Connection, sizes: &Arc<Sizes>) -> rusqlite::Result<()> {
    let det = FunctionFlags::SQLITE_UTF8;
    type Pick = fn(&Figures, i64) -> Option<i64>;
    let one: [(&str, Pick); 4] = [
        ("pf_pg_table_size", |f, oid| relation(f, oid)),
        ("pf_pg_indexes_size", |f, oid| {
            f.tables
                .get(&oid)
                .map(|t| t.1)
                .or_else(|| (f.indexes.contains_key(&oid) || f.others.contains(&oid)).then_some(0))
        }),
        ("pf_pg_total_relation_size", |f, oid| match f.tables.get(&oid) {
            Some(t) => Some(t.0.saturating_add(t.1)),
            None => relation(f, oid),
        }),
        ("pf_pg_relation_size", |f, oid| relation(f, oid)),
    ];
    for (name, pick) in one {
        let s = sizes.clone();
        conn.create_scalar_function(name, -1, det, move |ctx| {
            let rel = ctx.get_raw(0);
            // pg_relation_size(rel, fork): only the main fork has bytes.
            if ctx.len() > 1 {
                match ctx.get_raw(1) {
                    ValueRef::Null => return Ok(None),
                    ValueRef::Text(b"main") => {}
                    ValueRef::Text(b"fsm" | b"vm" | b"init") => return Ok(s.of(rel, pick)?.map(|_| 0)),
                    other => {
                        let fork = match other {
                            ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                            _ => String::new(),
                        };
                        return Err(rusqlite::Error::UserFunctionError(Box::new(PgError(
                            "22023",
                            format!("invalid fork name: \"{fork}\""),
                        ))));
                    }
                }
            }
            s.of(rel, pick)
        })?;
    }
    let s = sizes.clone();
    conn.create_scalar_function("pf_pg_database_size", 1, det, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Null => None,
            _ => Some(s.0.lock().unwrap_or_else(|p| p.into_inner()).database),
        })
    })?;
    conn.create_scalar_function("pf_pg_size_pretty", 1, det, |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Null => None,
            v => int(v).map(size_pretty),
        })
    })?;
    Ok(())
}

/// PostgreSQL's `pg_size_pretty(bigint)`: bytes below 10 kB, then the first of kB, MB, GB,
/// TB and PB of which there are fewer than 10,240 (PB past that), rounded half away from
/// zero.
pub fn size_pretty(size: i64) -> String {
    const UNITS: [(&str, i64); 5] = [("kB", 10), ("MB", 20), ("GB", 30), ("TB", 40), ("PB", 50)];
    if size.unsigned_abs() < 10 * 1024 {
        return format!("{size} bytes");
    }
    // One extra bit is kept for the rounding.
    let mut n = size / 512;
    for (i, (unit, _)) in UNITS.iter().enumerate() {
        if i + 1 == UNITS.len() || n.unsigned_abs() < 20 * 1024 - 1 {
            let rounded = (n + if n < 0 { -1 } else { 1 }) / 2;
            return format!("{rounded} {unit}");
        }
        n /= 1024;
    }
    unreachable!("the last unit is always taken")
}

#[cfg(test)]
mod tests {
    use super::size_pretty;

    #[test]
    fn size_pretty_is_postgresqls() {
        // PostgreSQL 15's answers.
        for (n, want) in [
            (0, "0 bytes"),
            (10239, "10239 bytes"),
            (10240, "10 kB"),
            (-10240, "-10 kB"),
            (20_971_008, "20 MB"),
            (10_485_247, "10239 kB"),
            (10_485_248, "10 MB"),
            (-10_485_248, "-10 MB"),
            (20_971_520, "20 MB"),
            (1_000_000_000, "954 MB"),
            (123_456_789_012, "115 GB"),
            (i64::MAX, "8192 PB"),
            (1536, "1536 bytes"),
            (11_264, "11 kB"),
            (11_776, "12 kB"),
        ] {
            assert_eq!(size_pretty(n), want, "{n}");
        }
    }
}
