//! The relations that describe the tables: a row per table, column, index and
//! constraint.

use permafrost_storage::{ColumnDefault, TableSchema};
use permafrost_types::DataType;
use rusqlite::types::Value as V;

use super::relations::*;

/// The relations that describe the tables (see [`TableRelations`]); the tables' objects go
/// into `objects`.
pub(super) fn table_relations(tables: &[&TableSchema], db: &str, objects: &mut Objects) -> [Relation; 10] {
    let mut out = TableRelations::new();
    for t in tables {
        out.add_table(t, db, objects);
    }
    out.into_array()
}

/// The relations that describe the tables: `pg_class`, `pg_attribute`, `pg_index`,
/// `pg_constraint`, `pg_attrdef`, `pg_sequence` and information_schema's `tables`, `columns`,
/// `table_constraints` and `key_column_usage`.
struct TableRelations {
    class: Relation,
    attribute: Relation,
    index: Relation,
    constraint: Relation,
    attrdef: Relation,
    sequence: Relation,
    info_tables: Relation,
    info_columns: Relation,
    info_constraints: Relation,
    info_keys: Relation,
}

impl TableRelations {
    fn new() -> TableRelations {
        TableRelations {
            class: rel("pg_class"),
            attribute: rel("pg_attribute"),
            index: rel("pg_index"),
            constraint: rel("pg_constraint"),
            attrdef: rel("pg_attrdef"),
            sequence: rel("pg_sequence"),
            info_tables: info("tables"),
            info_columns: info("columns"),
            info_constraints: info("table_constraints"),
            info_keys: info("key_column_usage"),
        }
    }

    /// Table `t`'s rows, its columns' and its indexes'; its objects go into `objects`.
    fn add_table(&mut self, t: &TableSchema, db: &str, objects: &mut Objects) {
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
        self.class.push(class_row(
            oid,
            &t.name,
            "r",
            AM_HEAP,
            t.columns.len(),
            !t.indexes.is_empty(),
            options,
        ));
        self.info_tables.push(vec![
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
        self.add_columns(t, oid, db, objects);
        self.add_indexes(t, oid, db, objects);
    }

    /// The rows of table `t`'s columns (`pg_attribute`, `pg_attrdef`, `pg_sequence`,
    /// information_schema's `columns`); their sequences' objects go into `objects`.
    fn add_columns(&mut self, t: &TableSchema, oid: i64, db: &str, objects: &mut Objects) {
        for (n, c) in t.columns.iter().enumerate() {
            let num = n as i64 + 1;
            let default = default_expr(t, n);
            self.attribute
                .push(attribute_row(oid, c, num, !c.nullable, default.is_some()));
            if let Some(d) = &default {
                self.attrdef.push(vec![
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
                self.class.push(class_row(seq_oid, &name, "S", 0, 3, false, NULL));
                self.sequence.push(vec![
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
            self.info_columns.push(vec![
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
                    match c.ty {
                        DataType::Timestamp | DataType::TimestampTz => i(6),
                        DataType::Date => i(0),
                        _ => NULL,
                    },
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
    }

    /// The rows of table `t`'s indexes and constraints; their objects go into `objects`.
    fn add_indexes(&mut self, t: &TableSchema, oid: i64, db: &str, objects: &mut Objects) {
        for (n, ix) in t.indexes.iter().enumerate() {
            let ioid = index_oid(t, n);
            let cols: Vec<String> = ix.columns.iter().map(|&c| t.columns[c].name.clone()).collect();
            objects.relation_oids.insert(ix.name.clone(), ioid);
            objects.relation_names.insert(ioid, ix.name.clone());
            objects.indexes.insert(ioid, (index_def(t, n), cols.clone()));
            self.class.push(class_row(
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
                self.attribute
                    .push(attribute_row(ioid, col, k as i64 + 1, false, false));
            }
            let keys: Vec<i64> = ix.columns.iter().map(|&c| c as i64 + 1).collect();
            let zeros = vec![0; keys.len()];
            let classes: Vec<i64> = ix
                .columns
                .iter()
                .map(|&c| opclass_oid(ix.kind, type_oid(&t.columns[c].ty)))
                .collect();
            self.index.push(vec![
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
                self.constraint.push(vec![
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
                self.info_constraints.push(vec![
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
                    self.info_keys.push(vec![
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

    fn into_array(self) -> [Relation; 10] {
        [
            self.class,
            self.attribute,
            self.index,
            self.constraint,
            self.attrdef,
            self.sequence,
            self.info_tables,
            self.info_columns,
            self.info_constraints,
            self.info_keys,
        ]
    }
}

/// A row of `pg_class`: a table or an index.
fn class_row(
    oid: i64,
    name: &str,
    kind: &str,
    am: i64,
    natts: usize,
    has_index: bool,
    options: V,
) -> Vec<(&'static str, V)> {
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
}
