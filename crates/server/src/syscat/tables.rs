//! The relations that describe the tables: a row per table, column, index and
//! constraint.

use permafrost_storage::{ColumnDefault, TableSchema};
use permafrost_types::DataType;
use rusqlite::types::Value as V;

use super::relations::*;

/// The relations that describe the tables (see [`TableRelations`]); the tables' objects go
/// into `objects`.
pub(super) fn table_relations(
    (tables, sequences, _, _, views): Relations<'_>,
    db: &str,
    objects: &mut Objects,
) -> [Relation; 12] {
    let mut out = TableRelations::new();
    let mut view_oids = std::collections::HashSet::new();
    for v in views {
        let mut oid = view_oid(&v.name);
        while !view_oids.insert(oid) {
            oid += 1;
        }
        out.add_view(v, oid, db, objects);
    }
    for seq in sequences {
        out.add_sequence(seq, tables, objects);
    }
    for t in tables {
        out.add_table(t, db, objects);
        out.add_foreign_keys(t, tables, db, objects);
        out.add_checks(t, db, objects);
    }
    // PostgreSQL keeps foreign keys with triggers on both tables, and psql's \d lists a
    // table's foreign keys and those referencing it only when it says it has triggers.
    let keyed: Vec<i64> = tables
        .iter()
        .filter(|t| {
            !t.foreign_keys.is_empty() || tables.iter().any(|o| o.foreign_keys.iter().any(|fk| fk.parent == t.id))
        })
        .map(|t| table_oid(t))
        .collect();
    let column = |name: &str| out.class.columns.iter().position(|(c, _)| *c == name);
    if let (Some(oid), Some(triggers), Some(checks)) = (column("oid"), column("relhastriggers"), column("relchecks")) {
        for row in &mut out.class.rows {
            let V::Integer(o) = row[oid] else { continue };
            if keyed.contains(&o) {
                row[triggers] = b(true);
            }
            // psql's \d lists a table's checks when pg_class says it has some.
            if let Some(t) = tables.iter().find(|t| table_oid(t) == o && !t.checks.is_empty()) {
                row[checks] = i(t.checks.len() as i64);
            }
        }
    }
    out.into_array()
}

/// A constraint as the catalogs describe it ([`TableRelations::add_constraint`]).
struct Constraint<'a> {
    oid: i64,
    name: &'a str,
    table: &'a TableSchema,
    /// `pg_constraint.contype`, and information_schema's `constraint_type`.
    kind: &'static str,
    info: &'static str,
    /// The OID of the index it is, or (a foreign key) the one it references.
    index: i64,
    /// Its columns, numbered from 1.
    keys: Vec<i64>,
    references: Option<References>,
    deferrable: bool,
    deferred: bool,
}

/// What a foreign key references, as `pg_constraint` says it.
struct References {
    table: i64,
    keys: Vec<i64>,
    on_update: &'static str,
    on_delete: &'static str,
}

/// Where a foreign key's constraint OIDs start among its table's (after its indexes'), and
/// a check's (after its foreign keys').
const FOREIGN_KEY_OIDS: i64 = 500;
const CHECK_OIDS: i64 = 750;

/// `pg_constraint.confupdtype` / `confdeltype` of an action.
fn action_code(a: permafrost_storage::FkAction) -> &'static str {
    match a {
        permafrost_storage::FkAction::NoAction => "a",
        permafrost_storage::FkAction::Restrict => "r",
        permafrost_storage::FkAction::Cascade => "c",
        permafrost_storage::FkAction::SetNull => "n",
    }
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
    /// `pg_depend`: a sequence's column (SERIAL, `OWNED BY`), as psql's `\d` reads it.
    depend: Relation,
    info_tables: Relation,
    info_columns: Relation,
    info_constraints: Relation,
    info_keys: Relation,
    info_views: Relation,
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
            depend: rel("pg_depend"),
            info_tables: info("tables"),
            info_columns: info("columns"),
            info_constraints: info("table_constraints"),
            info_keys: info("key_column_usage"),
            info_views: info("views"),
        }
    }

    /// Table `t`'s rows, its columns' and its indexes'; its objects go into `objects`.
    fn add_table(&mut self, t: &TableSchema, db: &str, objects: &mut Objects) {
        let oid = table_oid(t);
        objects.relation_oids.insert(t.name.clone(), oid);
        objects.relation_names.insert(oid, t.name.clone());
        if let Some(c) = &t.comment {
            objects.comments.insert((oid, 0), c.clone());
        }
        for (n, col) in t.columns.iter().enumerate() {
            if let Some(c) = &col.comment {
                objects.comments.insert((oid, n as i64 + 1), c.clone());
            }
        }
        // The partition column and evictability are the table's storage options.
        let options = strs(&[
            format!(
                "partition_by={}",
                t.partition_column.map_or("none", |c| t.columns[c].name.as_str())
            ),
            format!("evictable={}", t.evictable),
        ]);
        let (ns, bare) = objects.placed(&t.name);
        self.class.push(class_row(
            oid,
            (ns, bare),
            "r",
            AM_HEAP,
            t.columns.len(),
            !t.indexes.is_empty(),
            options,
        ));
        let schema = permafrost_sql::namespace::split(&t.name).0;
        self.info_tables
            .push(info_table_row(db, (schema, bare), "BASE TABLE", "YES"));
        self.add_columns(t, oid, db, objects);
        self.add_indexes(t, oid, db, objects);
    }

    /// View `v`'s rows (`pg_class`, `pg_attribute`, information_schema's `tables`, `columns`
    /// and `views`); its objects go into `objects`.
    fn add_view(&mut self, v: &ViewShown, oid: i64, db: &str, objects: &mut Objects) {
        objects.relation_oids.insert(v.name.clone(), oid);
        objects.relation_names.insert(oid, v.name.clone());
        objects.view_definitions.insert(oid, v.definition.clone());
        let (ns, bare) = objects.placed(&v.name);
        let schema = permafrost_sql::namespace::split(&v.name).0;
        self.class
            .push(class_row(oid, (ns, bare), "v", 0, v.columns.len(), false, NULL));
        self.info_tables.push(info_table_row(db, (schema, bare), "VIEW", "NO"));
        self.info_views.push(vec![
            ("table_catalog", s(db)),
            ("table_schema", s(schema)),
            ("table_name", s(bare)),
            ("view_definition", s(v.definition.clone())),
            ("check_option", s("NONE")),
            ("is_updatable", s("NO")),
            ("is_insertable_into", s("NO")),
            ("is_trigger_updatable", s("NO")),
            ("is_trigger_deletable", s("NO")),
            ("is_trigger_insertable_into", s("NO")),
        ]);
        for (n, (name, ty)) in v.columns.iter().enumerate() {
            let num = n as i64 + 1;
            let mut column = permafrost_storage::Column::new(name.clone(), ty.unwrap_or(DataType::Varchar(None)));
            column.nullable = true;
            self.attribute.push(attribute_row(oid, &column, num, false, false));
            self.info_columns
                .push(info_column_row(db, (schema, bare), &column, num, None, "NO"));
        }
    }

    /// The rows of a sequence of its own (`pg_class`, `pg_sequence`).
    fn add_sequence(
        &mut self,
        seq: &permafrost_sql::sequence::SequenceDef,
        tables: &[&TableSchema],
        objects: &mut Objects,
    ) {
        let oid = SEQUENCE_OID_BASE + i64::from(seq.id) * PER_TABLE;
        objects.relation_oids.insert(seq.name.clone(), oid);
        objects.relation_names.insert(oid, seq.name.clone());
        let owner = seq.owned_by.as_ref().and_then(|o| {
            let t = tables.iter().find(|t| t.id == o.table)?;
            Some((t, t.columns.iter().position(|c| c.name == o.column)?))
        });
        if let Some((t, n)) = owner {
            self.add_owned(oid, t, n);
            objects
                .serial
                .insert((t.name.clone(), t.columns[n].name.clone()), shown_qualified(&seq.name));
        }
        self.class
            .push(class_row(oid, objects.placed(&seq.name), "S", 0, 3, false, NULL));
        self.sequence.push(vec![
            ("seqrelid", i(oid)),
            ("seqtypid", i(type_oid(&seq.ty))),
            ("seqstart", i(seq.start)),
            ("seqincrement", i(seq.step.increment)),
            ("seqmax", i(seq.step.max)),
            ("seqmin", i(seq.step.min)),
            ("seqcache", i(seq.cache)),
            ("seqcycle", b(false)),
        ]);
    }

    /// The `pg_depend` row of sequence `oid` that belongs to table `t`'s column `n`
    /// (deptype `a`, automatic: dropped with it).
    fn add_owned(&mut self, oid: i64, t: &TableSchema, n: usize) {
        self.depend.push(vec![
            ("classid", i(PG_CLASS_OID)),
            ("objid", i(oid)),
            ("objsubid", i(0)),
            ("refclassid", i(PG_CLASS_OID)),
            ("refobjid", i(table_oid(t))),
            ("refobjsubid", i(n as i64 + 1)),
            ("deptype", s("a")),
        ]);
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
                    .insert((t.name.clone(), c.name.clone()), shown_qualified(&name));
                self.add_owned(seq_oid, t, n);
                self.class
                    .push(class_row(seq_oid, objects.placed(&name), "S", 0, 3, false, NULL));
                // (As PostgreSQL's SERIAL and SMALLSERIAL: a sequence of the column's type.)
                let max = match c.ty {
                    DataType::SmallInt => i64::from(i16::MAX),
                    DataType::Integer => i64::from(i32::MAX),
                    _ => i64::MAX,
                };
                self.sequence.push(vec![
                    ("seqrelid", i(seq_oid)),
                    ("seqtypid", i(type_oid(&c.ty))),
                    ("seqstart", i(1)),
                    ("seqincrement", i(1)),
                    ("seqmax", i(max)),
                    ("seqmin", i(1)),
                    ("seqcache", i(1)),
                    ("seqcycle", b(false)),
                ]);
            }
            let place = (
                permafrost_sql::namespace::split(&t.name).0,
                permafrost_sql::namespace::bare(&t.name),
            );
            self.info_columns
                .push(info_column_row(db, place, c, num, default.clone(), "YES"));
        }
    }

    /// The rows of table `t`'s indexes and constraints; their objects go into `objects`.
    fn add_indexes(&mut self, t: &TableSchema, oid: i64, db: &str, objects: &mut Objects) {
        for (n, ix) in t.indexes.iter().enumerate() {
            let ioid = index_oid(t, n);
            let cols: Vec<String> = ix.columns.iter().map(|&c| t.columns[c].name.clone()).collect();
            let key = permafrost_sql::namespace::sibling(&t.name, &ix.name);
            objects.relation_oids.insert(key.clone(), ioid);
            objects.relation_names.insert(ioid, key);
            objects.indexes.insert(ioid, (index_def(t, n), cols.clone()));
            let (ns, _) = objects.placed(&t.name);
            self.class.push(class_row(
                ioid,
                (ns, &ix.name),
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
            if ix.constraint {
                let coid = CONSTRAINT_OID_BASE + i64::from(t.id) * PER_TABLE + n as i64;
                let (kind, word, info) = if ix.primary {
                    ("p", "PRIMARY KEY", "PRIMARY KEY")
                } else {
                    ("u", "UNIQUE", "UNIQUE")
                };
                objects
                    .constraints
                    .insert(coid, format!("{word} ({})", cols.join(", ")));
                self.add_constraint(
                    Constraint {
                        oid: coid,
                        name: &ix.name,
                        table: t,
                        kind,
                        info,
                        index: ioid,
                        keys,
                        references: None,
                        deferrable: false,
                        deferred: false,
                    },
                    db,
                    objects,
                );
            }
        }
    }

    /// One constraint's rows: `pg_constraint`'s, information_schema's `table_constraints`
    /// and `key_column_usage`.
    fn add_constraint(&mut self, c: Constraint<'_>, db: &str, objects: &Objects) {
        let t = c.table;
        let (confrelid, confkey, upd, del, matching) = match &c.references {
            Some(r) => (i(r.table), nums(&r.keys), s(r.on_update), s(r.on_delete), s("s")),
            None => (i(0), NULL, s(" "), s(" "), s(" ")),
        };
        self.constraint.push(vec![
            ("oid", i(c.oid)),
            ("conname", s(c.name)),
            ("connamespace", i(objects.placed(&t.name).0)),
            ("contype", s(c.kind)),
            ("condeferrable", b(c.deferrable)),
            ("condeferred", b(c.deferred)),
            ("convalidated", b(true)),
            ("conrelid", i(table_oid(t))),
            ("contypid", i(0)),
            ("conindid", i(c.index)),
            ("conparentid", i(0)),
            ("confrelid", confrelid),
            ("confupdtype", upd),
            ("confdeltype", del),
            ("confmatchtype", matching),
            ("conislocal", b(true)),
            ("coninhcount", i(0)),
            ("connoinherit", b(true)),
            ("conkey", nums(&c.keys)),
            ("confkey", confkey),
            ("conbin", NULL),
        ]);
        let yes_no = |x: bool| s(if x { "YES" } else { "NO" });
        self.info_constraints.push(vec![
            ("constraint_catalog", s(db)),
            ("constraint_schema", s(permafrost_sql::namespace::split(&t.name).0)),
            ("constraint_name", s(c.name)),
            ("table_catalog", s(db)),
            ("table_schema", s(permafrost_sql::namespace::split(&t.name).0)),
            ("table_name", s(permafrost_sql::namespace::bare(&t.name))),
            ("constraint_type", s(c.info)),
            ("is_deferrable", yes_no(c.deferrable)),
            ("initially_deferred", yes_no(c.deferred)),
            ("enforced", s("YES")),
            ("nulls_distinct", if c.references.is_some() { NULL } else { s("YES") }),
        ]);
        // (A check's columns are not keys: key_column_usage leaves them out.)
        let keys = if c.kind == "c" { &[][..] } else { &c.keys[..] };
        for (k, &col) in keys.iter().enumerate() {
            let name = t
                .columns
                .get(col as usize - 1)
                .map_or(String::new(), |c| c.name.clone());
            self.info_keys.push(vec![
                ("constraint_catalog", s(db)),
                ("constraint_schema", s(permafrost_sql::namespace::split(&t.name).0)),
                ("constraint_name", s(c.name)),
                ("table_catalog", s(db)),
                ("table_schema", s(permafrost_sql::namespace::split(&t.name).0)),
                ("table_name", s(permafrost_sql::namespace::bare(&t.name))),
                ("column_name", s(name)),
                ("ordinal_position", i(k as i64 + 1)),
                (
                    "position_in_unique_constraint",
                    if c.references.is_some() { i(k as i64 + 1) } else { NULL },
                ),
            ]);
        }
    }

    /// Table `t`'s foreign keys (`tables`: every table, where the referenced ones are).
    fn add_foreign_keys(&mut self, t: &TableSchema, tables: &[&TableSchema], db: &str, objects: &mut Objects) {
        for (k, fk) in t.foreign_keys.iter().enumerate() {
            let Some(parent) = tables.iter().find(|p| p.id == fk.parent) else {
                continue;
            };
            let coid = CONSTRAINT_OID_BASE + i64::from(t.id) * PER_TABLE + FOREIGN_KEY_OIDS + k as i64;
            objects
                .constraints
                .insert(coid, permafrost_sql::foreign::definition(t, fk, parent));
            let index = parent.index_over(&fk.parent_columns, true);
            self.add_constraint(
                Constraint {
                    oid: coid,
                    name: &fk.name,
                    table: t,
                    kind: "f",
                    info: "FOREIGN KEY",
                    index: index.map_or(0, |ix| index_oid(parent, ix)),
                    keys: fk.columns.iter().map(|&c| c as i64 + 1).collect(),
                    references: Some(References {
                        table: table_oid(parent),
                        keys: fk.parent_columns.iter().map(|&c| c as i64 + 1).collect(),
                        on_update: action_code(fk.on_update),
                        on_delete: action_code(fk.on_delete),
                    }),
                    deferrable: fk.deferrable,
                    deferred: fk.deferred,
                },
                db,
                objects,
            );
        }
    }

    /// Table `t`'s CHECK constraints.
    fn add_checks(&mut self, t: &TableSchema, db: &str, objects: &mut Objects) {
        for (k, c) in t.checks.iter().enumerate() {
            let coid = CONSTRAINT_OID_BASE + i64::from(t.id) * PER_TABLE + CHECK_OIDS + k as i64;
            objects.constraints.insert(coid, permafrost_sql::check::definition(c));
            // The columns it reads, as pg_constraint.conkey lists them.
            let keys: Vec<i64> = t
                .columns
                .iter()
                .enumerate()
                .filter(|(_, col)| c.expr.contains(col.name.as_str()))
                .map(|(n, _)| n as i64 + 1)
                .collect();
            self.add_constraint(
                Constraint {
                    oid: coid,
                    name: &c.name,
                    table: t,
                    kind: "c",
                    info: "CHECK",
                    index: 0,
                    keys,
                    references: None,
                    deferrable: false,
                    deferred: false,
                },
                db,
                objects,
            );
        }
    }

    fn into_array(self) -> [Relation; 12] {
        [
            self.class,
            self.attribute,
            self.index,
            self.constraint,
            self.attrdef,
            self.sequence,
            self.depend,
            self.info_tables,
            self.info_columns,
            self.info_constraints,
            self.info_keys,
            self.info_views,
        ]
    }
}

/// A row of information_schema's `columns`: column `c`, number `num`, of relation `bare` in
/// `schema` (a table's, or a view's: not `updatable`).
fn info_column_row(
    db: &str,
    (schema, bare): (&str, &str),
    c: &permafrost_storage::Column,
    num: i64,
    default: Option<String>,
    updatable: &str,
) -> Vec<(&'static str, V)> {
    let (precision, radix, scale) = match c.ty {
        DataType::SmallInt => (i(16), i(2), i(0)),
        DataType::Integer => (i(32), i(2), i(0)),
        DataType::BigInt => (i(64), i(2), i(0)),
        DataType::Double => (i(53), i(2), NULL),
        DataType::Decimal { precision, scale } if precision > 0 => (i(precision.into()), i(10), i(scale.into())),
        DataType::Decimal { .. } => (NULL, i(10), NULL),
        _ => (NULL, NULL, NULL),
    };
    let length = match c.ty {
        DataType::Varchar(Some(n)) => i(n.into()),
        _ => NULL,
    };
    let datetime_precision = match c.ty {
        DataType::Timestamp | DataType::TimestampTz => i(6),
        DataType::Date => i(0),
        _ => NULL,
    };
    vec![
        ("table_catalog", s(db)),
        ("table_schema", s(schema)),
        ("table_name", s(bare)),
        ("column_name", s(c.name.clone())),
        ("ordinal_position", i(num)),
        ("column_default", default.map_or(NULL, s)),
        ("is_nullable", s(if c.nullable { "YES" } else { "NO" })),
        ("data_type", s(info_data_type(&c.ty))),
        ("character_maximum_length", length),
        ("numeric_precision", precision),
        ("numeric_precision_radix", radix),
        ("numeric_scale", scale),
        ("datetime_precision", datetime_precision),
        ("udt_catalog", s(db)),
        ("udt_schema", s("pg_catalog")),
        ("udt_name", s(udt_name(&c.ty))),
        ("is_identity", s("NO")),
        ("identity_generation", NULL),
        ("is_generated", s("NEVER")),
        ("generation_expression", NULL),
        ("is_updatable", s(updatable)),
    ]
}

/// A row of information_schema's `tables`.
fn info_table_row(db: &str, (schema, bare): (&str, &str), kind: &str, insertable: &str) -> Vec<(&'static str, V)> {
    vec![
        ("table_catalog", s(db)),
        ("table_schema", s(schema)),
        ("table_name", s(bare)),
        ("table_type", s(kind)),
        ("self_referencing_column_name", NULL),
        ("reference_generation", NULL),
        ("user_defined_type_catalog", NULL),
        ("user_defined_type_schema", NULL),
        ("user_defined_type_name", NULL),
        ("is_insertable_into", s(insertable)),
        ("is_typed", s("NO")),
        ("commit_action", NULL),
    ]
}

/// A catalog key as `pg_get_serial_sequence` writes it: always qualified.
fn shown_qualified(key: &str) -> String {
    let (schema, bare) = permafrost_sql::namespace::split(key);
    format!("{schema}.{bare}")
}

/// A row of `pg_class`: a table or an index.
fn class_row(
    oid: i64,
    (ns, name): (i64, &str),
    kind: &str,
    am: i64,
    natts: usize,
    has_index: bool,
    options: V,
) -> Vec<(&'static str, V)> {
    vec![
        ("oid", i(oid)),
        ("relname", s(name)),
        ("relnamespace", i(ns)),
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
