//! Plans of simple-protocol statements, cached by shape.
//!
//! `psql`, `pgbench -M simple` and many ORMs send their values as literals in the text of
//! each statement, so no two texts are alike and a prepared statement does not help them.
//! The cache keys a statement by its shape ([`permafrost_sql::shape`]: the text with each
//! constant replaced by a marker `$n`, plus the kinds of the constants) and keeps the plan
//! of the shape, a statement with parameters. A statement whose shape is cached is not
//! parsed or planned: its constants are converted to the parameters' types and the plan
//! runs with them, as a prepared statement's would.
//!
//! A shape's plan stands for a statement only when it is sure to mean the same
//! ([`PlanCache::learn`], once per shape, after the statement itself was planned and run):
//! - the statement is DML, a query or a CALL, and the shape plans to the same kind;
//! - every marker's inferred type takes its constant as the literal would: an integer as
//!   `smallint`, `integer` or `bigint`; a decimal number as `numeric`, `real` or `double
//!   precision`; a string as `text`, `varchar` or `char` (other types keep the statement on
//!   the uncached path);
//! - the shape's result columns (names and types) and statement kind are the statement's.
//!
//! A number whose marker is inferred otherwise (`balance + 42` on a `numeric` column
//! infers `numeric`; `-4.5` has no type to infer from) gets the literal's own type in the
//! shape, `$n::integer` or `$n::numeric`, and the shape is planned again under the same
//! conditions: PostgreSQL types an integer literal `integer` (`bigint` past its range,
//! which then takes the uncached path) and any other number `numeric`, so the cast shape
//! means what the literal does, integer division included.
//!
//! A constant that does not convert (`100000` for a `smallint`) sends the statement down
//! the uncached path, which answers as PostgreSQL would. The cache holds the entries of one
//! catalog, the one they were planned against, and starts over when the schema changes
//! (any DDL): an entry holding a catalog of its own would keep every version of the schema
//! alive, so that creating tables one after another took memory quadratic in their number
//! (2,000 empty tables: 155 MB). A statement that touches the system catalogs is never
//! cached (those are answered apart, crate::syscat). The cache holds at most
//! [`MAX_ENTRIES`] shapes and starts over when full.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use permafrost_executor::Database;
use permafrost_sql::catalog::Catalog;
use permafrost_sql::scan::Scan;
use permafrost_sql::shape::{ConstantKind, Shape};
use permafrost_types::Value;
use pgwire::api::Type;

use crate::command::Command;
use crate::command::classify::{classify_text, convert};

/// Most shapes kept.
pub const MAX_ENTRIES: usize = 4096;

/// What the cache knows of a shape.
enum Entry {
    /// The shape's plan, and the parameters' types.
    Plan { command: Command, types: Vec<Type> },
    /// Statements of this shape are planned from their text.
    Uncached,
}

/// The server's plans of shapes (shared by its connections).
#[derive(Default)]
pub struct PlanCache {
    inner: Mutex<Entries>,
}

/// The entries, all planned against `catalog`.
#[derive(Default)]
struct Entries {
    catalog: Option<Arc<Catalog>>,
    map: HashMap<String, Entry>,
}

impl Entries {
    /// The entries of `catalog`: none are left of another one.
    fn of(&mut self, catalog: &Arc<Catalog>) -> &mut HashMap<String, Entry> {
        if !self.catalog.as_ref().is_some_and(|c| Arc::ptr_eq(c, catalog)) {
            self.map = HashMap::new();
            self.catalog = Some(catalog.clone());
        }
        &mut self.map
    }
}

/// What [`PlanCache::lookup`] found.
pub enum Lookup {
    /// The plan, and the statement's constants as its parameters.
    Hit(Command, Vec<Value>),
    /// Plan the statement from its text, then [`PlanCache::learn`] its shape.
    Learn(Shape),
    /// Plan the statement from its text (not shaped, or a shape known not to be cached).
    Plan,
}

impl PlanCache {
    pub fn new() -> PlanCache {
        PlanCache::default()
    }

    /// The cached plan of a scanned query string's shape, with its constants as parameters.
    /// A statement that names a system catalog is not cached (their contents change with
    /// the session: see the module).
    pub fn lookup(&self, db: &Database, scan: &Scan) -> Lookup {
        if scan.names_system_catalogs() {
            return Lookup::Plan;
        }
        let Some(shape) = &scan.shape else {
            return Lookup::Plan;
        };
        let key = key(shape);
        let catalog = db.catalog();
        let (command, types) = {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            match inner.of(&catalog).get(&key) {
                Some(Entry::Plan { command, types }) => (command.clone(), types.clone()),
                Some(Entry::Uncached) => return Lookup::Plan,
                None => return Lookup::Learn(shape.clone()),
            }
        };
        let params: Option<Vec<Value>> = shape
            .constants
            .iter()
            .zip(&types)
            .map(|(c, t)| convert(c.kind, &c.text, t))
            .collect();
        match params {
            Some(params) => Lookup::Hit(command, params),
            None => Lookup::Plan,
        }
    }

    /// Plans `shape` and keeps its plan if it stands for `planned` (the statement of that
    /// shape, planned from its text): see the module.
    pub fn learn(&self, db: &Database, shape: &Shape, planned: &Command) {
        let catalog = db.catalog();
        let entry = match fits(db, shape, planned) {
            Some((command, types)) => Entry::Plan { command, types },
            None => Entry::Uncached,
        };
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let entries = inner.of(&catalog);
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key(shape), entry);
    }
}

/// The map's key: the shape's text and the kinds of its constants.
fn key(shape: &Shape) -> String {
    let mut k = String::with_capacity(shape.text.len() + 1 + shape.constants.len());
    k.push_str(&shape.text);
    k.push('\0');
    k.extend(shape.kinds().map(|kind| match kind {
        ConstantKind::Integer => 'i',
        ConstantKind::Decimal => 'd',
        ConstantKind::String => 's',
    }));
    k
}

/// The shape's plan and parameter types, if it stands for `planned`.
///
/// A number whose marker the planner typed otherwise than the literal (`d_ytd + 4211` on
/// a `numeric` column: `$1` is inferred `numeric`; `-43.00` after a unary minus) is given
/// the literal's own type, `$1::integer` or `$1::numeric`, and the shape planned again:
/// the literal means exactly that (an integer literal is an `integer` when it fits, which
/// is all the cached plan then takes; a larger one takes the uncached path).
fn fits(db: &Database, shape: &Shape, planned: &Command) -> Option<(Command, Vec<Type>)> {
    let (command, types) = plan_shape(db, &shape.text, shape, planned)?;
    let typed: Vec<Option<&str>> = shape
        .kinds()
        .zip(&types)
        .map(|(k, t)| match k {
            _ if takes(k, t) => None,
            ConstantKind::Integer => Some("integer"),
            ConstantKind::Decimal => Some("numeric"),
            ConstantKind::String => Some(""),
        })
        .collect();
    if typed.iter().all(Option::is_none) {
        return Some((command, types));
    }
    // (A string's marker has no type of its own to take: such a shape stays uncached.)
    if typed.contains(&Some("")) {
        return None;
    }
    let text = with_casts(&shape.text, &typed);
    let (command, types) = plan_shape(db, &text, shape, planned)?;
    shape
        .kinds()
        .zip(&types)
        .all(|(k, t)| takes(k, t))
        .then_some((command, types))
}

/// `text` planned, if it is a statement of `planned`'s kind and result columns with a
/// parameter for each of `shape`'s constants; and its parameters' types.
fn plan_shape(db: &Database, text: &str, shape: &Shape, planned: &Command) -> Option<(Command, Vec<Type>)> {
    let command = classify_text(db, text).ok()?;
    match (planned, &command) {
        (Command::Dml(a), Command::Dml(b)) if a.kind == b.kind && a.read_only == b.read_only => {}
        (Command::Call(_), Command::Call(_)) => {}
        _ => return None,
    }
    if planned.columns() != command.columns() {
        return None;
    }
    let types = command.param_types();
    (types.len() == shape.constants.len()).then_some((command, types))
}

/// A shape's text with marker `$n` followed by `::type` where `types[n - 1]` names one.
/// (The shape's text holds no string constant: each `$` followed by digits is a marker.)
fn with_casts(text: &str, types: &[Option<&str>]) -> String {
    let mut out = String::with_capacity(text.len() + 10 * types.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..digits]);
        if let Ok(n) = rest[..digits].parse::<usize>()
            && let Some(Some(ty)) = n.checked_sub(1).and_then(|i| types.get(i))
        {
            out.push_str("::");
            out.push_str(ty);
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// Whether a parameter of type `t` takes a constant of kind `k` as the literal would be
/// taken.
fn takes(k: ConstantKind, t: &Type) -> bool {
    match k {
        ConstantKind::Integer => matches!(*t, Type::INT2 | Type::INT4 | Type::INT8),
        ConstantKind::Decimal => matches!(*t, Type::NUMERIC | Type::FLOAT4 | Type::FLOAT8),
        ConstantKind::String => {
            matches!(*t, Type::TEXT | Type::VARCHAR | Type::BPCHAR) || crate::pg_types::array_element(t).is_some()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use permafrost_types::Numeric;

    fn int(k: ConstantKind, text: &str, t: &Type) -> Option<i64> {
        match convert(k, text, t) {
            Some(Value::Int(n)) => Some(n),
            None => None,
            Some(other) => panic!("not an integer: {other:?}"),
        }
    }

    #[test]
    fn constants_convert_as_literals_would() {
        use ConstantKind as K;
        assert_eq!(int(K::Integer, "42", &Type::INT2), Some(42));
        assert_eq!(int(K::Integer, "100000", &Type::INT2), None);
        assert_eq!(int(K::Integer, "3000000000", &Type::INT4), None);
        assert_eq!(int(K::Integer, "3000000000", &Type::INT8), Some(3_000_000_000));
        assert_eq!(int(K::Integer, "99999999999999999999", &Type::INT8), None);
        assert!(matches!(convert(K::Decimal, "1.50", &Type::NUMERIC),
            Some(Value::Decimal(d)) if d == Numeric::new(150, 2) && d.as_ref().scale() == 2));
        assert!(matches!(convert(K::Decimal, "2e3", &Type::NUMERIC),
            Some(Value::Decimal(d)) if d == Numeric::new(2000, 0)));
        assert!(matches!(convert(K::Decimal, ".5", &Type::FLOAT8), Some(Value::Double(f)) if f == 0.5));
        assert!(convert(K::Decimal, "1e999", &Type::FLOAT8).is_none());
        assert!(matches!(convert(K::String, "it's", &Type::TEXT), Some(v) if v.as_str() == Some("it's")));
    }

    #[test]
    fn markers_take_the_casts_given() {
        assert_eq!(
            with_casts("UPDATE t SET a = a + $1, b = -$2 WHERE id = $10", &{
                let mut v = vec![None; 10];
                v[0] = Some("integer");
                v[1] = Some("numeric");
                v
            }),
            "UPDATE t SET a = a + $1::integer, b = -$2::numeric WHERE id = $10"
        );
        assert_eq!(with_casts("SELECT $1, $", &[None]), "SELECT $1, $");
    }

    #[test]
    fn kinds_take_only_their_types() {
        assert!(takes(ConstantKind::Integer, &Type::INT8));
        assert!(!takes(ConstantKind::Integer, &Type::NUMERIC));
        assert!(!takes(ConstantKind::Integer, &Type::TEXT));
        assert!(takes(ConstantKind::Decimal, &Type::FLOAT8));
        assert!(!takes(ConstantKind::Decimal, &Type::INT4));
        assert!(takes(ConstantKind::String, &Type::VARCHAR));
        assert!(!takes(ConstantKind::String, &Type::TIMESTAMP));
    }

    #[test]
    fn system_catalog_texts_are_not_cached() {
        let names = |sql: &str| permafrost_sql::scan::scan(sql).unwrap().names_system_catalogs();
        assert!(names("select * from PG_CATALOG.pg_type"));
        assert!(names("select typname from pg_type where oid = 23"));
        assert!(!names("select v from items where id = 1"));
    }
}
