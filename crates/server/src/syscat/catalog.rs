//! The system catalog as relations with their rows: what [`build`] assembles from the
//! tables (`tables.rs`), the procedures, the session and the fixed rows of `relations.rs`.

use permafrost_storage::IndexKind;

use super::pg_columns::PG_COLUMNS;
use super::relations::*;
use super::tables::table_relations;

/// Every relation of the system catalog with its rows, and the objects by id.
pub fn build(
    (tables, sequences, enums, schemas, views): Relations<'_>,
    procedures: &Procedures,
    session: &SessionInfo,
) -> (Vec<Relation>, Objects) {
    let mut objects = Objects::default();
    let db = session.database.as_str();
    let namespace = namespace_relation(schemas, &mut objects);
    let [
        class,
        attribute,
        index,
        constraint,
        attrdef,
        sequence,
        depend,
        info_tables,
        info_columns,
        info_constraints,
        info_keys,
        info_views,
    ] = table_relations((tables, sequences, enums, schemas, views), db, &mut objects);
    let proc = procedure_relation(procedures, &mut objects);
    let [mut ty_rel, database, roles] = type_database_and_roles(db, session);
    let enum_rel = enum_relation(enums, &mut ty_rel, &mut objects);
    let settings = settings(session);
    let [am, collation, opclass, tablespace, schemata] = access_methods_and_schemata(db, session, schemas);
    // The catalog's own relations, so that `'pg_class'::regclass` names them.
    for (oid, name) in [(PG_CLASS_OID, "pg_class"), (PG_CONSTRAINT_OID, "pg_constraint")] {
        objects.relation_oids.insert(name.to_string(), oid);
        objects.relation_names.insert(oid, name.to_string());
    }
    let description = description_relation(&objects);
    let mut out = vec![
        enum_rel,
        description,
        namespace,
        class,
        attribute,
        index,
        constraint,
        attrdef,
        sequence,
        depend,
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
        info_views,
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

/// `pg_description`: the comments of tables and columns (`COMMENT ON`).
fn description_relation(objects: &Objects) -> Relation {
    let mut description = rel("pg_description");
    let mut comments: Vec<_> = objects.comments.iter().collect();
    comments.sort();
    for ((oid, sub), text) in comments {
        description.push(vec![
            ("objoid", i(*oid)),
            ("classoid", i(PG_CLASS_OID)),
            ("objsubid", i(*sub)),
            ("description", s(text.as_str())),
        ]);
    }
    description
}

/// `pg_namespace`: the catalogs' schemas, public and those made by CREATE SCHEMA, whose
/// oids go into `objects`.
fn namespace_relation(schemas: &[(&str, u32)], objects: &mut Objects) -> Relation {
    let mut namespace = rel("pg_namespace");
    let fixed = [
        (NS_PG_CATALOG, "pg_catalog"),
        (NS_PUBLIC, "public"),
        (NS_INFORMATION_SCHEMA, "information_schema"),
    ];
    let made = schemas.iter().map(|&(name, id)| (namespace_oid(id), name));
    for (oid, name) in fixed.into_iter().chain(made) {
        objects.namespaces.insert(name.to_string(), oid);
        namespace.push(vec![
            ("oid", i(oid)),
            ("nspname", s(name)),
            ("nspowner", i(ROLE_OID)),
            ("nspacl", NULL),
        ]);
    }
    namespace
}

/// `pg_proc`: the procedures defined in SQL (their objects go into `objects`).
fn procedure_relation(procedures: &Procedures, objects: &mut Objects) -> Relation {
    let mut proc = rel("pg_proc");
    for (k, (name, args)) in procedures.iter().enumerate() {
        let oid = PROC_OID_BASE + k as i64;
        objects.procedures.insert(oid, name.clone());
        let shown: Vec<String> = args
            .iter()
            .map(|(n, t)| format!("IN {n}{}{}", if n.is_empty() { "" } else { " " }, t.sql_name()))
            .collect();
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
            // (NULL when no argument has a name, as in PostgreSQL.)
            (
                "proargnames",
                if names.iter().all(String::is_empty) {
                    NULL
                } else {
                    strs(&names)
                },
            ),
            ("proretset", b(false)),
        ]);
    }
    proc
}

/// `pg_enum`: the enum types' labels; their types go into `pg_type` (`ty_rel`) and their
/// names into `objects`.
fn enum_relation(enums: &[permafrost_types::EnumRef], ty_rel: &mut Relation, objects: &mut Objects) -> Relation {
    let mut labels = rel("pg_enum");
    for e in enums {
        let oid = type_oid(&permafrost_types::DataType::Enum(*e));
        objects.type_names.insert(oid, e.name.clone());
        let (ns, bare) = objects.placed(&e.name);
        // (No array type: arrays of enums are not kept.)
        ty_rel.push(type_row(oid, bare.to_string(), ns, 4, "E", (0, 0), ENUM_IN));
        for (k, (label, sort)) in e.labels().enumerate() {
            labels.push(vec![
                ("oid", i(ENUM_LABEL_OID_BASE + i64::from(e.id) * PER_TABLE + k as i64)),
                ("enumtypid", i(oid)),
                ("enumsortorder", rusqlite::types::Value::Real(sort)),
                ("enumlabel", s(label)),
            ]);
        }
    }
    labels
}

/// A `pg_type` row: a type of length `len` (-1 variable) in `category` (`P` pseudo, `E`
/// enum, else a base type), with its element and array types (0 for none).
fn type_row(
    oid: i64,
    name: String,
    namespace: i64,
    len: i64,
    category: &'static str,
    (elem, array): (i64, i64),
    input: i64,
) -> Vec<(&'static str, rusqlite::types::Value)> {
    let typtype = match category {
        "P" => "p",
        "E" => "e",
        _ => "b",
    };
    let collation = if matches!(name.as_str(), "text" | "varchar" | "bpchar" | "name") {
        100
    } else {
        0
    };
    vec![
        ("oid", i(oid)),
        ("typname", s(name)),
        ("typnamespace", i(namespace)),
        ("typowner", i(ROLE_OID)),
        ("typlen", i(len)),
        ("typbyval", b(len > 0 && len <= 8)),
        ("typtype", s(typtype)),
        ("typcategory", s(category)),
        ("typispreferred", b(false)),
        ("typisdefined", b(true)),
        ("typdelim", s(",")),
        ("typrelid", i(0)),
        ("typelem", i(elem)),
        ("typarray", i(array)),
        ("typinput", i(input)),
        ("typoutput", i(0)),
        ("typnotnull", b(false)),
        ("typbasetype", i(0)),
        ("typtypmod", i(-1)),
        ("typndims", i(0)),
        ("typcollation", i(collation)),
        ("typdefault", NULL),
    ]
}

/// `pg_type`, `pg_database` and `pg_roles`.
fn type_database_and_roles(db: &str, session: &SessionInfo) -> [Relation; 3] {
    let mut ty_rel = rel("pg_type");
    for t in types() {
        let input = if t.category == "A" { ARRAY_IN } else { 0 };
        ty_rel.push(type_row(
            t.oid,
            t.name.to_string(),
            NS_PG_CATALOG,
            t.len,
            t.category,
            (t.elem, t.array),
            input,
        ));
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
        ("dattablespace", i(1663)),
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
    [ty_rel, database, roles]
}

/// `pg_am`, `pg_collation`, `pg_opclass`, `pg_tablespace` and information_schema's
/// `schemata`.
fn access_methods_and_schemata(db: &str, session: &SessionInfo, schemas: &[(&str, u32)]) -> [Relation; 5] {
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
        for t in [16, 17, 20, 21, 23, 25, 701, 1043, 1082, 1114, 1184, 1700] {
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
    let made = schemas.iter().map(|&(name, _)| name);
    for ns in ["pg_catalog", "public", "information_schema"].into_iter().chain(made) {
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
    [am, collation, opclass, tablespace, schemata]
}

#[cfg(test)]
mod tests {
    use super::*;
    use permafrost_storage::{ColumnDefault, TableSchema};
    use permafrost_types::DataType;

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
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            comment: None,
        };
        t.columns[0].default = Some(ColumnDefault::Sequence);
        t.columns[0].nullable = false;
        t.indexes.push(permafrost_storage::IndexDef {
            name: "items_pkey".into(),
            columns: vec![0],
            unique: true,
            kind: IndexKind::Ordered,
            primary: true,
            constraint: true,
        });
        let session = SessionInfo {
            user: "u".into(),
            database: "d".into(),
            pid: 1,
            settings: vec![("TimeZone".into(), "UTC".into(), "zone".into())],
        };
        let procs = vec![("p".to_string(), vec![("a".to_string(), DataType::Integer)])];
        let (rels, objects) = build((&[&t], &[], &[], &[], &[]), &procs, &session);
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
