//! The system catalog relations and their rows, built from Permafrost's own schema: the
//! `pg_catalog` tables and `information_schema` views that drivers, ORMs and psql read.
//! This file holds what the rows are made of (object ids, types, the session's settings);
//! `tables.rs` writes the rows that describe the tables and `catalog.rs` assembles every
//! relation.
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

use permafrost_storage::{ColumnDefault, IndexKind, TableSchema};
use permafrost_types::{DataType, ValueRef};
use rusqlite::types::Value as V;

use super::pg_columns::PG_COLUMNS;

/// What a catalog query may read of its session.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    pub user: String,
    pub database: String,
    pub pid: i32,
    /// The settings as SHOW ALL prints them: name, value, description.
    pub settings: Vec<(String, String, String)>,
}

impl SessionInfo {
    /// The schemas the session looks names up in, in order: its temporary schema, then
    /// its search_path's (`$user` being the user's).
    pub fn path(&self) -> Vec<String> {
        let mut path = vec![permafrost_sql::temp::schema_of(self.pid)];
        if let Some((_, value, _)) = self.settings.iter().find(|(n, _, _)| n == "search_path") {
            for entry in crate::session_settings::path_entries(value) {
                path.push(if entry == "$user" { self.user.clone() } else { entry });
            }
        }
        path
    }
}

/// The `&'static` spelling of a PostgreSQL type name this module knows.
pub(crate) fn static_type_name(name: &str) -> Option<&'static str> {
    types().iter().map(|t| t.name).find(|n| *n == name)
}

/// The type of the catalog columns named `name` (the first relation's, where several
/// have one).
pub(crate) fn column_type(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    PG_COLUMNS
        .iter()
        .flat_map(|(_, _, columns)| columns.iter())
        .find(|(c, _)| *c == lower)
        .and_then(|(_, t)| static_type_name(t))
}

/// The input functions `pg_type.typinput` names (PostgreSQL's oids): drivers tell array
/// and enum types apart by them (pgjdbc: `typinput = 'pg_catalog.array_in'::regproc`).
pub const INPUT_FUNCTIONS: &[(i64, &str)] = &[(ARRAY_IN, "array_in"), (ENUM_IN, "enum_in")];
pub(super) const ARRAY_IN: i64 = 750;
pub(super) const ENUM_IN: i64 = 3504;

/// Oid of the first table.
pub const TABLE_OID_BASE: i64 = 16384;
pub(super) const INDEX_OID_BASE: i64 = 2_000_000_000;
pub(super) const CONSTRAINT_OID_BASE: i64 = 2_400_000_000;
pub(super) const ATTRDEF_OID_BASE: i64 = 2_800_000_000;
pub(super) const SEQUENCE_OID_BASE: i64 = 3_200_000_000;
pub(super) const PROC_OID_BASE: i64 = 3_600_000_000;
/// An enum type's labels (`pg_enum`): a thousand per type, by the type's id. (The type
/// itself is an oid like a table's: 16384 plus its id, which tables do not share.)
pub(super) const ENUM_LABEL_OID_BASE: i64 = 3_800_000_000;
/// Objects per table in each of the ranges above.
pub(super) const PER_TABLE: i64 = 1000;

pub const NS_PG_CATALOG: i64 = 11;
pub const NS_PUBLIC: i64 = 2200;
pub const NS_INFORMATION_SCHEMA: i64 = 13_000;
/// The role of every session (PostgreSQL's bootstrap superuser id).
pub const ROLE_OID: i64 = 10;
pub const DATABASE_OID: i64 = 16_383;
pub(super) const AM_HEAP: i64 = 2;
pub(super) const AM_BTREE: i64 = 403;
pub(super) const AM_HASH: i64 = 405;
/// Relation ids PostgreSQL gives pg_class and pg_constraint (`'pg_class'::regclass`).
pub(super) const PG_CLASS_OID: i64 = 1259;
pub(super) const PG_CONSTRAINT_OID: i64 = 2606;

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

pub(super) const fn ty(oid: i64, name: &'static str, len: i64, category: &'static str, array: i64) -> BuiltinType {
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
pub(super) const SCALAR_TYPES: &[BuiltinType] = &[
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
    ty(114, "json", -1, "U", 199),
    ty(194, "pg_node_tree", -1, "Z", 0),
    ty(650, "cidr", -1, "I", 651),
    ty(700, "float4", 4, "N", 1021),
    ty(701, "float8", 8, "N", 1022),
    ty(705, "unknown", -2, "X", 0),
    ty(869, "inet", -1, "I", 1041),
    ty(1042, "bpchar", -1, "S", 1014),
    ty(1043, "varchar", -1, "S", 1015),
    ty(1082, "date", 4, "D", 1182),
    ty(1083, "time", 8, "D", 1183),
    ty(1114, "timestamp", 8, "D", 1115),
    ty(1184, "timestamptz", 8, "D", 1185),
    ty(1186, "interval", 16, "T", 1187),
    ty(1700, "numeric", -1, "N", 1231),
    ty(2205, "regclass", 4, "N", 2210),
    ty(2206, "regtype", 4, "N", 2211),
    ty(2249, "record", -1, "P", 2287),
    ty(2278, "void", 4, "P", 0),
    ty(2950, "uuid", 16, "U", 2951),
    ty(3802, "jsonb", -1, "U", 3807),
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
        DataType::TimestampTz => 1184,
        DataType::Date => 1082,
        DataType::Boolean => 16,
        DataType::Bytea => 17,
        DataType::Uuid => 2950,
        DataType::Interval => 1186,
        DataType::Time => 1083,
        DataType::Json => 114,
        DataType::Jsonb => 3802,
        DataType::Array(permafrost_types::ElemType::Varchar) => 1015,
        DataType::Enum(e) => TABLE_OID_BASE + i64::from(e.id),
        DataType::Inet => 869,
        DataType::Cidr => 650,
        DataType::Array(e) => {
            let elem = type_oid(&e.data_type());
            SCALAR_TYPES.iter().find(|t| t.oid == elem).map_or(0, |t| t.array)
        }
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

pub(super) fn attlen(ty: &DataType) -> i64 {
    match ty {
        DataType::SmallInt => 2,
        DataType::Integer | DataType::Date | DataType::Enum(_) => 4,
        DataType::BigInt | DataType::Double | DataType::Timestamp | DataType::TimestampTz | DataType::Time => 8,
        DataType::Boolean => 1,
        DataType::Uuid | DataType::Interval => 16,
        DataType::Decimal { .. }
        | DataType::Inet
        | DataType::Cidr
        | DataType::Varchar(_)
        | DataType::Bytea
        | DataType::Json
        | DataType::Jsonb
        | DataType::Array(_) => -1,
    }
}

/// `attstorage`: plain for a fixed-size type, extended for a variable-size one.
pub(super) fn storage(ty: &DataType) -> &'static str {
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
        1082 => named("date"),
        1083 => named("time without time zone"),
        650 => named("cidr"),
        869 => named("inet"),
        1114 => named("timestamp without time zone"),
        1184 => named("timestamp with time zone"),
        1186 => named("interval"),
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
    pub(super) fn new(schema: &'static str, name: &'static str) -> Relation {
        Relation {
            schema,
            name,
            columns: columns_of(schema, name).to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row given as (column, value) pairs; the columns not given are NULL.
    pub(super) fn push(&mut self, values: Vec<(&'static str, V)>) {
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
pub(super) fn columns_of(schema: &str, name: &str) -> &'static [(&'static str, &'static str)] {
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
    /// `COMMENT ON`: by relation oid and column number (0 for the table itself).
    pub comments: HashMap<(i64, i64), String>,
    /// The enum types' names by oid (`format_type`, `regtype`).
    pub type_names: HashMap<i64, String>,
    /// The schemas by name: their oids (`pg_namespace`).
    pub namespaces: HashMap<String, i64>,
    /// `pg_get_viewdef(oid)`: a view's query.
    pub view_definitions: HashMap<i64, String>,
}

impl Objects {
    /// The schema oid and the bare name of catalog key `key` (permafrost_sql::namespace).
    pub fn placed<'k>(&self, key: &'k str) -> (i64, &'k str) {
        let (schema, bare) = permafrost_sql::namespace::split(key);
        (self.namespaces.get(schema).copied().unwrap_or(NS_PUBLIC), bare)
    }

    /// Whether the object of catalog key `key` is visible on a session's `path` (its
    /// temporary schema, then its search_path's schemas: [`SessionInfo::path`]): its
    /// schema is on the path and no schema before it there has a relation of its name.
    pub fn visible(&self, key: &str, path: &[String]) -> bool {
        let (schema, bare) = permafrost_sql::namespace::split(key);
        let Some(at) = path.iter().position(|s| s == schema) else {
            return false;
        };
        !path[..at].iter().any(|s| {
            self.relation_oids
                .contains_key(&permafrost_sql::namespace::qualify(s, bare))
        })
    }
}

pub(super) fn i(v: i64) -> V {
    V::Integer(v)
}

pub(super) fn b(v: bool) -> V {
    V::Integer(i64::from(v))
}

pub(super) fn s(v: impl Into<String>) -> V {
    V::Text(v.into())
}

/// A JSON array of numbers: how arrays and vectors are held here.
pub(super) fn nums(v: &[i64]) -> V {
    s(serde_json::to_string(v).unwrap_or_else(|_| "[]".into()))
}

pub(super) fn strs(v: &[String]) -> V {
    s(serde_json::to_string(v).unwrap_or_else(|_| "[]".into()))
}

pub(super) const NULL: V = V::Null;

pub(super) fn index_oid(t: &TableSchema, i: usize) -> i64 {
    INDEX_OID_BASE + i64::from(t.id) * PER_TABLE + i as i64
}

pub(super) fn table_oid(t: &TableSchema) -> i64 {
    TABLE_OID_BASE + i64::from(t.id)
}

/// The oid a view of catalog key `key` is given unless another view has it (FNV-1a of the
/// key, in [`VIEW_OID_BASE`]'s range): the same from one catalog to the next.
pub(super) fn view_oid(key: &str) -> i64 {
    let hash = key
        .bytes()
        .fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    VIEW_OID_BASE + i64::from(hash % VIEW_OID_SPAN)
}

/// The database's tables, its sequences of their own (`CREATE SEQUENCE`), its enum types,
/// its schemas besides public (with their ids) and its views.
pub type Relations<'a> = (
    &'a [&'a TableSchema],
    &'a [&'a permafrost_sql::sequence::SequenceDef],
    &'a [permafrost_types::EnumRef],
    &'a [(&'a str, u32)],
    &'a [ViewShown],
);

/// A view as the catalogs show it.
pub struct ViewShown {
    /// Its catalog key.
    pub name: String,
    /// Its columns: names and types (`None`: unknown, shown as text).
    pub columns: Vec<(String, Option<DataType>)>,
    /// Its query, as `pg_get_viewdef` gives it.
    pub definition: String,
}

/// Where views' oids are: a view has no id, so its oid is its name's hash in this range
/// (the next free one on a collision).
pub(super) const VIEW_OID_BASE: i64 = 4_000_000_000;
pub(super) const VIEW_OID_SPAN: u32 = 250_000_000;

/// The oid of the schema of id `id`: like a table's, 16384 plus its id, which no table
/// or type shares.
pub fn namespace_oid(id: u32) -> i64 {
    TABLE_OID_BASE + i64::from(id)
}

/// The name of a SERIAL column's sequence (what `nextval()` takes: one owner).
pub(super) use permafrost_sql::exec::sequences::sequence_name;

/// A column default as `pg_get_expr` prints it.
pub(super) fn default_expr(t: &TableSchema, col: usize) -> Option<String> {
    let c = &t.columns[col];
    let v = match c.default.as_ref()? {
        ColumnDefault::Sequence => return Some(format!("nextval('{}'::regclass)", sequence_name(t, col))),
        ColumnDefault::NextVal { name, .. } => return Some(format!("nextval('{name}'::regclass)")),
        ColumnDefault::CurrentTimestamp { now: true } => return Some("now()".into()),
        ColumnDefault::CurrentTimestamp { now: false } => return Some("CURRENT_TIMESTAMP".into()),
        ColumnDefault::Random => return Some("random()".into()),
        ColumnDefault::RandomUuid => return Some("gen_random_uuid()".into()),
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

pub(super) fn index_def(t: &TableSchema, i: usize) -> String {
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

pub(super) fn am_name(k: IndexKind) -> &'static str {
    match k {
        IndexKind::Hash => "hash",
        IndexKind::Ordered => "btree",
    }
}

/// The operator class of an index column: the default one of its type and access method.
pub(super) fn opclass_oid(k: IndexKind, type_oid: i64) -> i64 {
    match k {
        IndexKind::Ordered => 10_000 + type_oid,
        IndexKind::Hash => 15_000 + type_oid,
    }
}

pub(super) fn am_oid(k: IndexKind) -> i64 {
    match k {
        IndexKind::Hash => AM_HASH,
        IndexKind::Ordered => AM_BTREE,
    }
}

/// information_schema's `data_type` of a column type: its name without modifiers.
pub(super) fn info_data_type(ty: &DataType) -> String {
    format_type(type_oid(ty), -1).unwrap_or_default()
}

/// information_schema's `udt_name`: the name in pg_type.
pub(super) fn udt_name(ty: &DataType) -> &'static str {
    let oid = type_oid(ty);
    types().iter().find(|t| t.oid == oid).map_or("", |t| t.name)
}

/// A `pg_attribute` row: column `c` of relation `rel` (a table or an index) at `num`.
pub(super) fn attribute_row(
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

pub(super) fn rel(name: &'static str) -> Relation {
    Relation::new("pg_catalog", name)
}

pub(super) fn info(name: &'static str) -> Relation {
    Relation::new("information_schema", name)
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
        "pg_views",
        "SELECT n.nspname AS schemaname, c.relname AS viewname, pf_pg_get_userbyid(c.relowner) AS viewowner, \
         pf_pg_get_viewdef(c.oid) AS definition \
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'v'",
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
         pf_regtype_name(s.seqtypid) AS data_type, s.seqstart AS start_value, s.seqmin AS min_value, s.seqmax AS max_value, \
         s.seqincrement AS increment_by, s.seqcycle AS cycle, s.seqcache AS cache_size, NULL AS last_value \
         FROM pg_catalog.pg_sequence s JOIN pg_catalog.pg_class c ON c.oid = s.seqrelid \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace",
    ),
];
