//! The system catalog relations and their rows, built from Permafrost's own schema: the
//! `pg_catalog` tables and `information_schema` views that drivers, ORMs and psql read.
//!
//! Each relation has the columns PostgreSQL declares for it (`super::pg_columns`); its
//! rows, given here by column name, say what exists: the user's tables, their columns, indexes, keys and defaults, the
//! SQL-defined procedures, the session's settings, its role and database. Relations of
//! things Permafrost does not have (triggers, policies, inheritance, publications ...)
//! exist and are empty, which is the truth.
//!
//! Object ids: a table is 16384 plus its table id (PostgreSQL's first user oid); its
//! indexes, constraints, defaults and sequences take ids in ranges of their own, a
//! thousand per table.

use std::collections::HashMap;

use permafrost_storage::{ColumnDefault, DataType, IndexKind, TableSchema, ValueRef};
use rusqlite::types::Value as V;

use super::SessionInfo;
use super::pg_columns::PG_COLUMNS;

/// Oid of the first table.
pub const TABLE_OID_BASE: i64 = 16384;
const INDEX_OID_BASE: i64 = 2_000_000_000;
const CONSTRAINT_OID_BASE: i64 = 2_400_000_000;
const ATTRDEF_OID_BASE: i64 = 2_800_000_000;
const SEQUENCE_OID_BASE: i64 = 3_200_000_000;
const PROC_OID_BASE: i64 = 3_600_000_000;
/// Objects per table in each of the ranges above.
const PER_TABLE: i64 = 1000;

pub const NS_PG_CATALOG: i64 = 11;
pub const NS_PUBLIC: i64 = 2200;
pub const NS_INFORMATION_SCHEMA: i64 = 13_000;
/// The role of every session (PostgreSQL's bootstrap superuser id).
pub const ROLE_OID: i64 = 10;
pub const DATABASE_OID: i64 = 16_383;
const AM_HEAP: i64 = 2;
const AM_BTREE: i64 = 403;
const AM_HASH: i64 = 405;
/// Relation ids PostgreSQL gives pg_class and pg_constraint (`'pg_class'::regclass`).
const PG_CLASS_OID: i64 = 1259;
const PG_CONSTRAINT_OID: i64 = 2606;

/// A built-in type: oid, name, length, category, array type (0: none), element type (0:
/// none).
#[derive(Clone, Copy)]
pub struct BuiltinType {
    pub oid: i64,
    pub name: &'static str,
    pub len: i64,
    pub category: &'static str,
    pub array: i64,
    pub elem: i64,
}

const fn ty(oid: i64, name: &'static str, len: i64, category: &'static str, array: i64) -> BuiltinType {
    BuiltinType {
        oid,
        name,
        len,
        category,
        array,
        elem: 0,
    }
}

/// The types this server's values, parameters and catalog columns have, with their array
/// types (added by [`types`]).
const SCALAR_TYPES: &[BuiltinType] = &[
    ty(16, "bool", 1, "B", 1000),
    ty(17, "bytea", -1, "U", 1001),
    ty(18, "char", 1, "Z", 1002),
    ty(19, "name", 64, "S", 1003),
    ty(20, "int8", 8, "N", 1016),
    ty(21, "int2", 2, "N", 1005),
    ty(22, "int2vector", -1, "A", 1006),
    ty(23, "int4", 4, "N", 1007),
    ty(24, "regproc", 4, "N", 1008),
    ty(25, "text", -1, "S", 1009),
    ty(26, "oid", 4, "N", 1028),
    ty(30, "oidvector", -1, "A", 1013),
    ty(194, "pg_node_tree", -1, "Z", 0),
    ty(700, "float4", 4, "N", 1021),
    ty(701, "float8", 8, "N", 1022),
    ty(705, "unknown", -2, "X", 0),
    ty(1042, "bpchar", -1, "S", 1014),
    ty(1043, "varchar", -1, "S", 1015),
    ty(1114, "timestamp", 8, "D", 1115),
    ty(1700, "numeric", -1, "N", 1231),
    ty(2205, "regclass", 4, "N", 2210),
    ty(2206, "regtype", 4, "N", 2211),
    ty(2249, "record", -1, "P", 2287),
    ty(2278, "void", 4, "P", 0),
];

/// Every type in pg_type: the scalar types and their arrays (`_name`).
pub fn types() -> &'static [BuiltinType] {
    static ALL: std::sync::OnceLock<Vec<BuiltinType>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut v = SCALAR_TYPES.to_vec();
        for t in SCALAR_TYPES.iter().filter(|t| t.array != 0) {
            // (Made once, for the process's life.)
            let name: &'static str = Box::leak(format!("_{}", t.name).into_boxed_str());
            v.push(BuiltinType {
                oid: t.array,
                name,
                len: -1,
                category: "A",
                array: 0,
                elem: t.oid,
            });
        }
        v
    })
}

/// The type oid of a column of this engine type.
pub fn type_oid(ty: &DataType) -> i64 {
    match ty {
        DataType::SmallInt => 21,
        DataType::Integer => 23,
        DataType::BigInt => 20,
        DataType::Double => 701,
        DataType::Decimal { .. } => 1700,
        DataType::Varchar(Some(_)) => 1043,
        DataType::Varchar(None) => 25,
        DataType::Timestamp => 1114,
        DataType::Boolean => 16,
        DataType::Bytea => 17,
    }
}

/// `atttypmod`: a NUMERIC's precision and scale, a VARCHAR's length (plus 4, as
/// PostgreSQL stores them); -1 for none.
pub fn typmod(ty: &DataType) -> i64 {
    match *ty {
        DataType::Decimal { precision, scale } if precision > 0 => {
            ((i64::from(precision) << 16) | i64::from(scale)) + 4
        }
        DataType::Varchar(Some(n)) => i64::from(n) + 4,
        _ => -1,
    }
}

fn attlen(ty: &DataType) -> i64 {
    match ty {
        DataType::SmallInt => 2,
        DataType::Integer => 4,
        DataType::BigInt | DataType::Double | DataType::Timestamp => 8,
        DataType::Boolean => 1,
        DataType::Decimal { .. } | DataType::Varchar(_) | DataType::Bytea => -1,
    }
}

/// `attstorage`: plain for a fixed-size type, extended for a variable-size one.
fn storage(ty: &DataType) -> &'static str {
    if attlen(ty) > 0 { "p" } else { "x" }
}

/// `format_type(oid, typmod)`: a type's name as PostgreSQL prints it in `\d` and DDL.
pub fn format_type(oid: i64, typmod: i64) -> Option<String> {
    let named = |s: &str| Some(s.to_string());
    match oid {
        16 => named("boolean"),
        17 => named("bytea"),
        18 => named("\"char\""),
        19 => named("name"),
        20 => named("bigint"),
        21 => named("smallint"),
        22 => named("int2vector"),
        23 => named("integer"),
        24 => named("regproc"),
        25 => named("text"),
        26 => named("oid"),
        30 => named("oidvector"),
        194 => named("pg_node_tree"),
        700 => named("real"),
        701 => named("double precision"),
        705 => named("unknown"),
        1042 if typmod > 4 => Some(format!("character({})", typmod - 4)),
        1042 => named("character"),
        1043 if typmod > 4 => Some(format!("character varying({})", typmod - 4)),
        1043 => named("character varying"),
        1114 => named("timestamp without time zone"),
        1700 if typmod >= 4 => {
            let m = typmod - 4;
            Some(format!("numeric({},{})", m >> 16, m & 0xffff))
        }
        1700 => named("numeric"),
        2205 => named("regclass"),
        2206 => named("regtype"),
        2249 => named("record"),
        2278 => named("void"),
        _ => {
            let t = types().iter().find(|t| t.oid == oid)?;
            if t.elem != 0 {
                Some(format!("{}[]", format_type(t.elem, typmod)?))
            } else {
                Some(t.name.to_string())
            }
        }
    }
}

/// One relation: where it lives, its columns (name and PostgreSQL type name, `_x` for an
/// array of `x`) and its rows.
pub struct Relation {
    pub schema: &'static str,
    pub name: &'static str,
    pub columns: Vec<(&'static str, &'static str)>,
    pub rows: Vec<Vec<V>>,
}

impl Relation {
    /// An empty relation with the columns PostgreSQL declares for it ([`PG_COLUMNS`]).
    fn new(schema: &'static str, name: &'static str) -> Relation {
        Relation {
            schema,
            name,
            columns: columns_of(schema, name).to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row given as (column, value) pairs; the columns not given are NULL.
    fn push(&mut self, values: Vec<(&'static str, V)>) {
        debug_assert!(
            values.iter().all(|(n, _)| self.columns.iter().any(|(c, _)| c == n)),
            "a column {}.{} does not have: {:?}",
            self.schema,
            self.name,
            values.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
        let row = self
            .columns
            .iter()
            .map(|(c, _)| values.iter().find(|(n, _)| n == c).map_or(NULL, |(_, v)| v.clone()))
            .collect();
        self.rows.push(row);
    }
}

/// The columns of a catalog relation, as PostgreSQL declares them (none for one it does
/// not have).
fn columns_of(schema: &str, name: &str) -> &'static [(&'static str, &'static str)] {
    PG_COLUMNS
        .iter()
        .find(|(s, n, _)| *s == schema && *n == name)
        .map_or(&[], |(_, _, c)| c)
}

/// What the catalog functions (`pg_get_indexdef`, `format_type` ...) read, by object.
#[derive(Default)]
pub struct Objects {
    /// Relations by name (tables, indexes, sequences, and the catalog's own) to oid.
    pub relation_oids: HashMap<String, i64>,
    /// Relation names by oid.
    pub relation_names: HashMap<i64, String>,
    /// `pg_get_indexdef(oid)` and the key column names.
    pub indexes: HashMap<i64, (String, Vec<String>)>,
    /// `pg_get_constraintdef(oid)`.
    pub constraints: HashMap<i64, String>,
    /// `pg_get_serial_sequence(table, column)`: the sequence's qualified name.
    pub serial: HashMap<(String, String), String>,
    /// Procedure names by oid.
    pub procedures: HashMap<i64, String>,
    /// `pg_get_function_arguments(oid)`: a procedure's arguments (`IN a integer, IN b text`).
    pub procedure_args: HashMap<i64, String>,
}

fn i(v: i64) -> V {
    V::Integer(v)
}

fn b(v: bool) -> V {
    V::Integer(i64::from(v))
}

fn s(v: impl Into<String>) -> V {
    V::Text(v.into())
}

/// A JSON array of numbers: how arrays and vectors are held here.
fn nums(v: &[i64]) -> V {
    s(serde_json::to_string(v).unwrap_or_else(|_| "[]".into()))
}

fn strs(v: &[String]) -> V {
    s(serde_json::to_string(v).unwrap_or_else(|_| "[]".into()))
}

const NULL: V = V::Null;

fn index_oid(t: &TableSchema, i: usize) -> i64 {
    INDEX_OID_BASE + i64::from(t.id) * PER_TABLE + i as i64
}

fn table_oid(t: &TableSchema) -> i64 {
    TABLE_OID_BASE + i64::from(t.id)
}

fn sequence_name(t: &TableSchema, col: usize) -> String {
    format!("{}_{}_seq", t.name, t.columns[col].name)
}

/// A column default as `pg_get_expr` prints it.
fn default_expr(t: &TableSchema, col: usize) -> Option<String> {
    let c = &t.columns[col];
    let v = match c.default.as_ref()? {
        ColumnDefault::Sequence => return Some(format!("nextval('{}'::regclass)", sequence_name(t, col))),
        ColumnDefault::CurrentTimestamp => return Some("CURRENT_TIMESTAMP".into()),
        ColumnDefault::Value(v) => v.as_ref(),
    };
    let cast = match c.ty {
        DataType::Varchar(Some(_)) => "character varying".to_string(),
        DataType::Decimal { .. } => "numeric".to_string(),
        ref ty => ty.sql_name(),
    };
    Some(match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Bool(b) => if b { "true" } else { "false" }.into(),
        ValueRef::Int(i) if i >= 0 => i.to_string(),
        ValueRef::Decimal(d) if !d.is_negative() => d.to_string(),
        v => format!("'{}'::{cast}", v.to_string().replace('\'', "''")),
    })
}

fn index_def(t: &TableSchema, i: usize) -> String {
    let ix = &t.indexes[i];
    let cols: Vec<&str> = ix.columns.iter().map(|&c| t.columns[c].name.as_str()).collect();
    format!(
        "CREATE {}INDEX {} ON public.{} USING {} ({})",
        if ix.unique { "UNIQUE " } else { "" },
        ix.name,
        t.name,
        am_name(ix.kind),
        cols.join(", ")
    )
}

fn am_name(k: IndexKind) -> &'static str {
    match k {
        IndexKind::Hash => "hash",
        IndexKind::Ordered => "btree",
    }
}

/// The operator class of an index column: the default one of its type and access method.
fn opclass_oid(k: IndexKind, type_oid: i64) -> i64 {
    match k {
        IndexKind::Ordered => 10_000 + type_oid,
        IndexKind::Hash => 15_000 + type_oid,
    }
}

fn am_oid(k: IndexKind) -> i64 {
    match k {
        IndexKind::Hash => AM_HASH,
        IndexKind::Ordered => AM_BTREE,
    }
}

/// information_schema's `data_type` of a column type: its name without modifiers.
fn info_data_type(ty: &DataType) -> String {
    format_type(type_oid(ty), -1).unwrap_or_default()
}

/// information_schema's `udt_name`: the name in pg_type.
fn udt_name(ty: &DataType) -> &'static str {
    let oid = type_oid(ty);
    types().iter().find(|t| t.oid == oid).map_or("", |t| t.name)
}

/// A `pg_attribute` row: column `c` of relation `rel` (a table or an index) at `num`.
fn attribute_row(
    rel: i64,
    c: &permafrost_storage::Column,
    num: i64,
    not_null: bool,
    has_default: bool,
) -> Vec<(&'static str, V)> {
    vec![
        ("attrelid", i(rel)),
        ("attname", s(c.name.clone())),
        ("atttypid", i(type_oid(&c.ty))),
        ("attlen", i(attlen(&c.ty))),
        ("attnum", i(num)),
        ("attndims", i(0)),
        ("atttypmod", i(typmod(&c.ty))),
        ("attbyval", b(attlen(&c.ty) > 0)),
        ("attnotnull", b(not_null)),
        ("atthasdef", b(has_default)),
        ("attidentity", s("")),
        ("attgenerated", s("")),
        ("attisdropped", b(false)),
        ("attislocal", b(true)),
        ("attinhcount", i(0)),
        // The default collation for text, none for other types.
        (
            "attcollation",
            i(if matches!(c.ty, DataType::Varchar(_)) { 100 } else { 0 }),
        ),
        ("attstorage", s(storage(&c.ty))),
    ]
}

/// `pg_settings`: the session's settings.
pub fn settings(session: &SessionInfo) -> Relation {
    let mut settings = Relation::new("pg_catalog", "pg_settings");
    for (name, value, description) in &session.settings {
        settings.push(vec![
            ("name", s(name.clone())),
            ("setting", s(value.clone())),
            ("unit", NULL),
            ("short_desc", s(description.clone())),
            ("context", s("user")),
            ("vartype", s("string")),
        ]);
    }
    settings
}

/// The procedures defined in SQL: name and argument (name, type) list.
pub type Procedures = Vec<(String, Vec<(String, DataType)>)>;

/// Every relation of the system catalog with its rows, and the objects by id.
pub fn build(tables: &[&TableSchema], procedures: &Procedures, session: &SessionInfo) -> (Vec<Relation>, Objects) {
    let mut objects = Objects::default();
    let rel = |name: &'static str| Relation::new("pg_catalog", name);
    let info = |name: &'static str| Relation::new("information_schema", name);
    let mut namespace = rel("pg_namespace");
    for (oid, name) in [
        (NS_PG_CATALOG, "pg_catalog"),
        (NS_PUBLIC, "public"),
        (NS_INFORMATION_SCHEMA, "information_schema"),
    ] {
        namespace.push(vec![
            ("oid", i(oid)),
            ("nspname", s(name)),
            ("nspowner", i(ROLE_OID)),
            ("nspacl", NULL),
        ]);
    }
    let mut class = rel("pg_class");
    let mut attribute = rel("pg_attribute");
    let mut index = rel("pg_index");
    let mut constraint = rel("pg_constraint");
    let mut attrdef = rel("pg_attrdef");
    let mut sequence = rel("pg_sequence");
    let mut info_tables = info("tables");
    let mut info_columns = info("columns");
    let mut info_constraints = info("table_constraints");
    let mut info_keys = info("key_column_usage");
    let db = session.database.as_str();
    let class_row = |oid: i64, name: &str, kind: &str, am: i64, natts: usize, has_index: bool, options: V| {
        vec![
            ("oid", i(oid)),
            ("relname", s(name)),
            ("relnamespace", i(NS_PUBLIC)),
            ("reltype", i(0)),
            ("reloftype", i(0)),
            ("relowner", i(ROLE_OID)),
            ("relam", i(am)),
            ("relfilenode", i(oid)),
            ("reltablespace", i(0)),
            ("relpages", i(0)),
            ("reltuples", V::Real(-1.0)),
            ("relallvisible", i(0)),
            ("reltoastrelid", i(0)),
            ("relhasindex", b(has_index)),
            ("relisshared", b(false)),
            ("relpersistence", s("p")),
            ("relkind", s(kind)),
            ("relnatts", i(natts as i64)),
            ("relchecks", i(0)),
            ("relhasrules", b(false)),
            ("relhastriggers", b(false)),
            ("relhassubclass", b(false)),
            ("relrowsecurity", b(false)),
            ("relforcerowsecurity", b(false)),
            ("relispopulated", b(true)),
            ("relreplident", s("d")),
            ("relispartition", b(false)),
            ("relrewrite", i(0)),
            ("relacl", NULL),
            ("reloptions", options),
            ("relpartbound", NULL),
        ]
    };
    for t in tables {
        let oid = table_oid(t);
        objects.relation_oids.insert(t.name.clone(), oid);
        objects.relation_names.insert(oid, t.name.clone());
        // The partition column and evictability are the table's storage options.
        let options = strs(&[
            format!(
                "partition_by={}",
                t.partition_column.map_or("none", |c| t.columns[c].name.as_str())
            ),
            format!("evictable={}", t.evictable),
        ]);
        class.push(class_row(
            oid,
            &t.name,
            "r",
            AM_HEAP,
            t.columns.len(),
            !t.indexes.is_empty(),
            options,
        ));
        info_tables.push(vec![
            ("table_catalog", s(db)),
            ("table_schema", s("public")),
            ("table_name", s(t.name.clone())),
            ("table_type", s("BASE TABLE")),
            ("self_referencing_column_name", NULL),
            ("reference_generation", NULL),
            ("user_defined_type_catalog", NULL),
            ("user_defined_type_schema", NULL),
            ("user_defined_type_name", NULL),
            ("is_insertable_into", s("YES")),
            ("is_typed", s("NO")),
            ("commit_action", NULL),
        ]);
        for (n, c) in t.columns.iter().enumerate() {
            let num = n as i64 + 1;
            let default = default_expr(t, n);
            attribute.push(attribute_row(oid, c, num, !c.nullable, default.is_some()));
            if let Some(d) = &default {
                attrdef.push(vec![
                    ("oid", i(ATTRDEF_OID_BASE + i64::from(t.id) * PER_TABLE + n as i64)),
                    ("adrelid", i(oid)),
                    ("adnum", i(num)),
                    ("adbin", s(d.clone())),
                ]);
            }
            if c.default == Some(ColumnDefault::Sequence) {
                let seq_oid = SEQUENCE_OID_BASE + i64::from(t.id) * PER_TABLE + n as i64;
                let name = sequence_name(t, n);
                objects.relation_oids.insert(name.clone(), seq_oid);
                objects.relation_names.insert(seq_oid, name.clone());
                objects
                    .serial
                    .insert((t.name.clone(), c.name.clone()), format!("public.{name}"));
                class.push(class_row(seq_oid, &name, "S", 0, 3, false, NULL));
                sequence.push(vec![
                    ("seqrelid", i(seq_oid)),
                    ("seqtypid", i(20)),
                    ("seqstart", i(1)),
                    ("seqincrement", i(1)),
                    ("seqmax", i(i64::MAX)),
                    ("seqmin", i(1)),
                    ("seqcache", i(1)),
                    ("seqcycle", b(false)),
                ]);
            }
            let (precision, radix, scale) = match c.ty {
                DataType::SmallInt => (i(16), i(2), i(0)),
                DataType::Integer => (i(32), i(2), i(0)),
                DataType::BigInt => (i(64), i(2), i(0)),
                DataType::Double => (i(53), i(2), NULL),
                DataType::Decimal { precision, scale } if precision > 0 => {
                    (i(precision.into()), i(10), i(scale.into()))
                }
                DataType::Decimal { .. } => (NULL, i(10), NULL),
                _ => (NULL, NULL, NULL),
            };
            let length = match c.ty {
                DataType::Varchar(Some(n)) => i(n.into()),
                _ => NULL,
            };
            info_columns.push(vec![
                ("table_catalog", s(db)),
                ("table_schema", s("public")),
                ("table_name", s(t.name.clone())),
                ("column_name", s(c.name.clone())),
                ("ordinal_position", i(num)),
                ("column_default", default.clone().map_or(NULL, s)),
                ("is_nullable", s(if c.nullable { "YES" } else { "NO" })),
                ("data_type", s(info_data_type(&c.ty))),
                ("character_maximum_length", length),
                ("numeric_precision", precision),
                ("numeric_precision_radix", radix),
                ("numeric_scale", scale),
                (
                    "datetime_precision",
                    if c.ty == DataType::Timestamp { i(6) } else { NULL },
                ),
                ("udt_catalog", s(db)),
                ("udt_schema", s("pg_catalog")),
                ("udt_name", s(udt_name(&c.ty))),
                ("is_identity", s("NO")),
                ("identity_generation", NULL),
                ("is_generated", s("NEVER")),
                ("generation_expression", NULL),
                ("is_updatable", s("YES")),
            ]);
        }
        for (n, ix) in t.indexes.iter().enumerate() {
            let ioid = index_oid(t, n);
            let cols: Vec<String> = ix.columns.iter().map(|&c| t.columns[c].name.clone()).collect();
            objects.relation_oids.insert(ix.name.clone(), ioid);
            objects.relation_names.insert(ioid, ix.name.clone());
            objects.indexes.insert(ioid, (index_def(t, n), cols.clone()));
            class.push(class_row(
                ioid,
                &ix.name,
                "i",
                am_oid(ix.kind),
                ix.columns.len(),
                false,
                NULL,
            ));
            for (k, &c) in ix.columns.iter().enumerate() {
                let col = &t.columns[c];
                attribute.push(attribute_row(ioid, col, k as i64 + 1, false, false));
            }
            let keys: Vec<i64> = ix.columns.iter().map(|&c| c as i64 + 1).collect();
            let zeros = vec![0; keys.len()];
            let classes: Vec<i64> = ix
                .columns
                .iter()
                .map(|&c| opclass_oid(ix.kind, type_oid(&t.columns[c].ty)))
                .collect();
            index.push(vec![
                ("indexrelid", i(ioid)),
                ("indrelid", i(oid)),
                ("indnatts", i(keys.len() as i64)),
                ("indnkeyatts", i(keys.len() as i64)),
                ("indisunique", b(ix.unique)),
                ("indnullsnotdistinct", b(false)),
                ("indisprimary", b(ix.primary)),
                ("indisexclusion", b(false)),
                ("indimmediate", b(true)),
                ("indisclustered", b(false)),
                ("indisvalid", b(true)),
                ("indcheckxmin", b(false)),
                ("indisready", b(true)),
                ("indislive", b(true)),
                ("indisreplident", b(false)),
                ("indkey", nums(&keys)),
                ("indcollation", nums(&zeros)),
                ("indclass", nums(&classes)),
                ("indoption", nums(&zeros)),
                ("indexprs", NULL),
                ("indpred", NULL),
            ]);
            if ix.primary || ix.unique {
                let coid = CONSTRAINT_OID_BASE + i64::from(t.id) * PER_TABLE + n as i64;
                let (kind, word, info) = if ix.primary {
                    ("p", "PRIMARY KEY", "PRIMARY KEY")
                } else {
                    ("u", "UNIQUE", "UNIQUE")
                };
                objects
                    .constraints
                    .insert(coid, format!("{word} ({})", cols.join(", ")));
                constraint.push(vec![
                    ("oid", i(coid)),
                    ("conname", s(ix.name.clone())),
                    ("connamespace", i(NS_PUBLIC)),
                    ("contype", s(kind)),
                    ("condeferrable", b(false)),
                    ("condeferred", b(false)),
                    ("convalidated", b(true)),
                    ("conrelid", i(oid)),
                    ("contypid", i(0)),
                    ("conindid", i(ioid)),
                    ("conparentid", i(0)),
                    ("confrelid", i(0)),
                    ("confupdtype", s(" ")),
                    ("confdeltype", s(" ")),
                    ("confmatchtype", s(" ")),
                    ("conislocal", b(true)),
                    ("coninhcount", i(0)),
                    ("connoinherit", b(true)),
                    ("conkey", nums(&keys)),
                    ("confkey", NULL),
                    ("conbin", NULL),
                ]);
                info_constraints.push(vec![
                    ("constraint_catalog", s(db)),
                    ("constraint_schema", s("public")),
                    ("constraint_name", s(ix.name.clone())),
                    ("table_catalog", s(db)),
                    ("table_schema", s("public")),
                    ("table_name", s(t.name.clone())),
                    ("constraint_type", s(info)),
                    ("is_deferrable", s("NO")),
                    ("initially_deferred", s("NO")),
                    ("enforced", s("YES")),
                    ("nulls_distinct", s("YES")),
                ]);
                for (k, c) in cols.iter().enumerate() {
                    info_keys.push(vec![
                        ("constraint_catalog", s(db)),
                        ("constraint_schema", s("public")),
                        ("constraint_name", s(ix.name.clone())),
                        ("table_catalog", s(db)),
                        ("table_schema", s("public")),
                        ("table_name", s(t.name.clone())),
                        ("column_name", s(c.clone())),
                        ("ordinal_position", i(k as i64 + 1)),
                        ("position_in_unique_constraint", NULL),
                    ]);
                }
            }
        }
    }
    let mut proc = rel("pg_proc");
    for (k, (name, args)) in procedures.iter().enumerate() {
        let oid = PROC_OID_BASE + k as i64;
        objects.procedures.insert(oid, name.clone());
        let shown: Vec<String> = args.iter().map(|(n, t)| format!("IN {n} {}", t.sql_name())).collect();
        objects.procedure_args.insert(oid, shown.join(", "));
        let types: Vec<i64> = args.iter().map(|(_, t)| type_oid(t)).collect();
        let names: Vec<String> = args.iter().map(|(n, _)| n.clone()).collect();
        proc.push(vec![
            ("oid", i(oid)),
            ("proname", s(name.clone())),
            ("pronamespace", i(NS_PUBLIC)),
            ("proowner", i(ROLE_OID)),
            ("prokind", s("p")),
            ("pronargs", i(args.len() as i64)),
            ("pronargdefaults", i(0)),
            ("prorettype", i(2278)),
            ("proargtypes", nums(&types)),
            ("proargnames", strs(&names)),
            ("proretset", b(false)),
        ]);
    }
    let mut ty_rel = rel("pg_type");
    for t in types() {
        ty_rel.push(vec![
            ("oid", i(t.oid)),
            ("typname", s(t.name)),
            ("typnamespace", i(NS_PG_CATALOG)),
            ("typowner", i(ROLE_OID)),
            ("typlen", i(t.len)),
            ("typbyval", b(t.len > 0 && t.len <= 8)),
            ("typtype", s(if t.category == "P" { "p" } else { "b" })),
            ("typcategory", s(t.category)),
            ("typispreferred", b(false)),
            ("typisdefined", b(true)),
            ("typdelim", s(",")),
            ("typrelid", i(0)),
            ("typelem", i(t.elem)),
            ("typarray", i(t.array)),
            ("typinput", i(0)),
            ("typoutput", i(0)),
            ("typnotnull", b(false)),
            ("typbasetype", i(0)),
            ("typtypmod", i(-1)),
            ("typndims", i(0)),
            (
                "typcollation",
                i(if matches!(t.name, "text" | "varchar" | "bpchar" | "name") {
                    100
                } else {
                    0
                }),
            ),
            ("typdefault", NULL),
        ]);
    }
    let mut database = rel("pg_database");
    database.push(vec![
        ("oid", i(DATABASE_OID)),
        ("datname", s(db)),
        ("datdba", i(ROLE_OID)),
        ("encoding", i(6)),
        ("datlocprovider", s("c")),
        ("datistemplate", b(false)),
        ("datallowconn", b(true)),
        ("datconnlimit", i(-1)),
        ("datcollate", s("C")),
        ("datctype", s("C")),
        ("datacl", NULL),
    ]);
    let mut roles = rel("pg_roles");
    roles.push(vec![
        ("oid", i(ROLE_OID)),
        ("rolname", s(session.user.clone())),
        ("rolsuper", b(true)),
        ("rolinherit", b(true)),
        ("rolcreaterole", b(true)),
        ("rolcreatedb", b(true)),
        ("rolcanlogin", b(true)),
        ("rolreplication", b(false)),
        ("rolconnlimit", i(-1)),
        ("rolpassword", s("********")),
        ("rolvaliduntil", NULL),
        ("rolbypassrls", b(false)),
        ("rolconfig", NULL),
    ]);
    let settings = settings(session);
    let mut am = rel("pg_am");
    for (oid, name, kind) in [(AM_HEAP, "heap", "t"), (AM_BTREE, "btree", "i"), (AM_HASH, "hash", "i")] {
        am.push(vec![("oid", i(oid)), ("amname", s(name)), ("amtype", s(kind))]);
    }
    let mut collation = rel("pg_collation");
    for (oid, name) in [(100, "default"), (950, "C"), (951, "POSIX")] {
        collation.push(vec![
            ("oid", i(oid)),
            ("collname", s(name)),
            ("collnamespace", i(NS_PG_CATALOG)),
            ("collprovider", s("c")),
            ("collencoding", i(6)),
            ("collcollate", s("C")),
            ("collctype", s("C")),
        ]);
    }
    let mut opclass = rel("pg_opclass");
    for kind in [IndexKind::Ordered, IndexKind::Hash] {
        for t in [16, 17, 20, 21, 23, 25, 701, 1043, 1114, 1700] {
            let name = types().iter().find(|x| x.oid == t).map_or("", |x| x.name);
            opclass.push(vec![
                ("oid", i(opclass_oid(kind, t))),
                ("opcmethod", i(am_oid(kind))),
                ("opcname", s(format!("{name}_ops"))),
                ("opcnamespace", i(NS_PG_CATALOG)),
                ("opcowner", i(ROLE_OID)),
                ("opcintype", i(t)),
                ("opcdefault", b(true)),
                ("opckeytype", i(0)),
            ]);
        }
    }
    let mut tablespace = rel("pg_tablespace");
    tablespace.push(vec![
        ("oid", i(1663)),
        ("spcname", s("pg_default")),
        ("spcowner", i(ROLE_OID)),
    ]);
    let mut schemata = info("schemata");
    for ns in ["pg_catalog", "public", "information_schema"] {
        schemata.push(vec![
            ("catalog_name", s(db)),
            ("schema_name", s(ns)),
            ("schema_owner", s(session.user.clone())),
            ("default_character_set_catalog", NULL),
            ("default_character_set_schema", NULL),
            ("default_character_set_name", NULL),
            ("sql_path", NULL),
        ]);
    }
    // The catalog's own relations, so that `'pg_class'::regclass` names them.
    for (oid, name) in [(PG_CLASS_OID, "pg_class"), (PG_CONSTRAINT_OID, "pg_constraint")] {
        objects.relation_oids.insert(name.to_string(), oid);
        objects.relation_names.insert(oid, name.to_string());
    }
    let mut out = vec![
        namespace,
        class,
        attribute,
        index,
        constraint,
        attrdef,
        sequence,
        proc,
        ty_rel,
        database,
        roles,
        settings,
        am,
        collation,
        opclass,
        tablespace,
        info_tables,
        info_columns,
        info_constraints,
        info_keys,
        schemata,
    ];
    // The relations of what does not exist here: empty.
    for (schema, name, _) in PG_COLUMNS {
        if !VIEWS.iter().any(|(n, _)| n == name) && !out.iter().any(|r| r.schema == *schema && r.name == *name) {
            out.push(Relation::new(schema, name));
        }
    }
    (out, objects)
}

/// Catalog views, defined over the relations above (their columns are typed as
/// [`PG_COLUMNS`] says).
pub const VIEWS: &[(&str, &str)] = &[
    (
        "pg_tables",
        "SELECT n.nspname AS schemaname, c.relname AS tablename, pf_pg_get_userbyid(c.relowner) AS tableowner, \
         NULL AS tablespace, c.relhasindex AS hasindexes, c.relhasrules AS hasrules, \
         c.relhastriggers AS hastriggers, c.relrowsecurity AS rowsecurity \
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r'",
    ),
    (
        "pg_indexes",
        "SELECT n.nspname AS schemaname, c.relname AS tablename, i.relname AS indexname, NULL AS tablespace, \
         pf_pg_get_indexdef(i.oid) AS indexdef \
         FROM pg_catalog.pg_index x JOIN pg_catalog.pg_class c ON c.oid = x.indrelid \
         JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace",
    ),
    (
        "pg_user",
        "SELECT rolname AS usename, oid AS usesysid, rolcreatedb AS usecreatedb, rolsuper AS usesuper, \
         rolreplication AS userepl, rolbypassrls AS usebypassrls, '********' AS passwd, rolvaliduntil AS valuntil, \
         rolconfig AS useconfig FROM pg_catalog.pg_roles",
    ),
    (
        "pg_sequences",
        "SELECT n.nspname AS schemaname, c.relname AS sequencename, pf_pg_get_userbyid(c.relowner) AS sequenceowner, \
         s.seqtypid AS data_type, s.seqstart AS start_value, s.seqmin AS min_value, s.seqmax AS max_value, \
         s.seqincrement AS increment_by, s.seqcycle AS cycle, s.seqcache AS cache_size, NULL AS last_value \
         FROM pg_catalog.pg_sequence s JOIN pg_catalog.pg_class c ON c.oid = s.seqrelid \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_its_relations_columns() {
        let mut t = TableSchema {
            id: 1,
            name: "items".into(),
            columns: vec![
                permafrost_storage::Column::new("id", DataType::BigInt),
                permafrost_storage::Column::new("name", DataType::Varchar(Some(30))),
            ],
            indexes: vec![],
            partition_column: Some(0),
            partition_declared: false,
            evictable: true,
        };
        t.columns[0].default = Some(ColumnDefault::Sequence);
        t.columns[0].nullable = false;
        t.indexes.push(permafrost_storage::IndexDef {
            name: "items_pkey".into(),
            columns: vec![0],
            unique: true,
            kind: IndexKind::Ordered,
            primary: true,
        });
        let session = SessionInfo {
            user: "u".into(),
            database: "d".into(),
            pid: 1,
            settings: vec![("TimeZone".into(), "UTC".into(), "zone".into())],
        };
        let procs = vec![("p".to_string(), vec![("a".to_string(), DataType::Integer)])];
        let (rels, objects) = build(&[&t], &procs, &session);
        for r in &rels {
            for row in &r.rows {
                assert_eq!(row.len(), r.columns.len(), "{}.{}", r.schema, r.name);
            }
            for (i, (c, _)) in r.columns.iter().enumerate() {
                assert!(!r.columns[..i].iter().any(|(d, _)| d == c), "{}.{} twice", r.name, c);
            }
        }
        assert_eq!(
            objects.serial[&("items".to_string(), "id".to_string())],
            "public.items_id_seq"
        );
        assert_eq!(objects.constraints.values().next().unwrap(), "PRIMARY KEY (id)");
        assert_eq!(format_type(1043, 34).as_deref(), Some("character varying(30)"));
        assert_eq!(format_type(1700, (10 << 16 | 2) + 4).as_deref(), Some("numeric(10,2)"));
        assert_eq!(format_type(1009, -1).as_deref(), Some("text[]"));
    }
}
