//! Where tables made by plain DDL are partitioned (crate permafrost_sql's placement.rs),
//! and foreign keys checked at the partitions their keys name (exec/foreign.rs), with the
//! shapes of TPC-C's schema as sysbench-tpcc declares it: composite keys led by the
//! warehouse id, ITEM keyed by its own id, HISTORY without a key.

use permafrost_executor::{Config, Database, ProcedureDef};
use permafrost_types::Value;

fn db() -> Database {
    Database::open(Config::builder().partitions(2).build().unwrap()).unwrap()
}

/// The name of the partition column of `table`, or "replicated".
fn partitioned_by(db: &Database, table: &str) -> String {
    let catalog = db.catalog();
    let t = catalog.table(table).unwrap_or_else(|| panic!("no table {table}"));
    t.partition_column
        .map_or("replicated".to_string(), |c| t.columns[c].name.clone())
}

fn register(db: &Database, name: &str, sql: &str) {
    db.register(
        ProcedureDef::new(name)
            .partition_param(0)
            .statement(sql)
            .body(|c, p| c.execute(0, p)),
    )
    .unwrap();
}

#[test]
fn plain_ddl_gets_a_partitioning_from_the_shapes_of_its_keys() {
    let db = db();
    for ddl in [
        "CREATE TABLE warehouse (w_id SMALLINT PRIMARY KEY, w_ytd DECIMAL(12,2))",
        "CREATE TABLE district (d_id SMALLINT, d_w_id SMALLINT, d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))",
        "CREATE TABLE history (h_c_id INT, h_c_d_id SMALLINT, h_c_w_id SMALLINT, h_d_id SMALLINT, h_w_id SMALLINT, h_amount DECIMAL(6,2))",
        "CREATE TABLE stock (s_i_id INT, s_w_id SMALLINT, s_quantity SMALLINT, PRIMARY KEY (s_w_id, s_i_id))",
        "CREATE TABLE item (i_id INT PRIMARY KEY, i_price DECIMAL(5,2))",
        // Single tables keyed by one column stay partitioned by it.
        "CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT)",
        "CREATE TABLE usertable (ycsb_key VARCHAR(64) PRIMARY KEY, field0 TEXT)",
        // A keyless table named after no root's key stays replicated, and one whose
        // storage parameter says so keeps it.
        "CREATE TABLE notes (body TEXT)",
        "CREATE TABLE item2 (i_id INT PRIMARY KEY) WITH (partition_by = 'i_id')",
    ] {
        db.execute_ddl(ddl).unwrap();
    }
    for (table, by) in [
        ("warehouse", "w_id"),
        ("district", "d_w_id"),
        // Named after the root's key: h_w_id, not h_c_w_id (the shortest name).
        ("history", "h_w_id"),
        ("stock", "s_w_id"),
        // STOCK's key holds i_id after the warehouse id: ITEM is replicated.
        ("item", "replicated"),
        ("sbtest1", "id"),
        ("usertable", "ycsb_key"),
        ("notes", "replicated"),
        ("item2", "i_id"),
    ] {
        assert_eq!(partitioned_by(&db, table), by, "{table}");
    }
}

#[test]
fn keys_whose_rows_lie_at_the_partition_they_name_are_checked_there() {
    let db = db();
    db.execute_ddl("CREATE TABLE warehouse (w_id INT PRIMARY KEY)").unwrap();
    db.execute_ddl("CREATE TABLE district (d_w_id INT REFERENCES warehouse, d_id INT, PRIMARY KEY (d_w_id, d_id))")
        .unwrap();
    db.execute_ddl("CREATE TABLE stock (s_w_id INT REFERENCES warehouse, s_i_id INT, PRIMARY KEY (s_w_id, s_i_id))")
        .unwrap();
    db.execute_ddl("CREATE TABLE item (i_id INT PRIMARY KEY)").unwrap();
    db.execute_ddl("ALTER TABLE stock ADD FOREIGN KEY (s_i_id) REFERENCES item")
        .unwrap();
    // Warehouses 1 and 2 are at partitions 0 and 1 (docs/format.md, "Partitioning").
    db.execute_sql("INSERT INTO warehouse VALUES (1), (2)", vec![]).unwrap();
    db.execute_sql("INSERT INTO item VALUES (10), (11)", vec![]).unwrap();
    register(&db, "PutDistrict", "INSERT INTO district VALUES (?, ?)");
    register(&db, "PutStock", "INSERT INTO stock VALUES (?, ?)");
    register(&db, "DropWarehouse", "DELETE FROM warehouse WHERE w_id = ?");
    // A single-partition procedure writes a table whose keys' rows are at its partition
    // (the warehouse) or everywhere (ITEM, replicated), and the keys are checked there.
    for w in [1, 2] {
        db.call("PutDistrict", vec![Value::Int(w), Value::Int(5)]).unwrap();
        db.call("PutStock", vec![Value::Int(w), Value::Int(10)]).unwrap();
    }
    let e = db.call("PutDistrict", vec![Value::Int(3), Value::Int(5)]).unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
    let e = db.call("PutStock", vec![Value::Int(1), Value::Int(12)]).unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
    // A referenced key removed: the rows referencing it lie with it, and are found.
    let e = db.call("DropWarehouse", vec![Value::Int(2)]).unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
    db.execute_sql("INSERT INTO warehouse VALUES (4)", vec![]).unwrap();
    db.call("DropWarehouse", vec![Value::Int(4)]).unwrap();
    // Ad hoc statements name their partitions the same way, and one whose key's rows are
    // at another partition than its own row's reaches both.
    db.execute_ddl(
        "CREATE TABLE supply (sp_w_id INT, sp_id INT, sp_from_w_id INT, sp_i_id INT, PRIMARY KEY (sp_w_id, sp_id), \
         FOREIGN KEY (sp_from_w_id, sp_i_id) REFERENCES stock (s_w_id, s_i_id))",
    )
    .unwrap();
    db.execute_sql("INSERT INTO supply VALUES (1, 1, 2, 10)", vec![])
        .unwrap();
    let e = db
        .execute_sql("INSERT INTO supply VALUES (1, 2, 2, 11)", vec![])
        .unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
    register(&db, "PutSupply", "INSERT INTO supply VALUES (?, ?, ?, ?)");
    // From a single-partition procedure, a key at another partition is refused rather
    // than left unchecked; at its own, it is checked.
    let e = db
        .call(
            "PutSupply",
            vec![Value::Int(1), Value::Int(3), Value::Int(2), Value::Int(10)],
        )
        .unwrap_err();
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    db.call(
        "PutSupply",
        vec![Value::Int(1), Value::Int(3), Value::Int(1), Value::Int(10)],
    )
    .unwrap();
    let n = db
        .execute_sql("SELECT count(*) FROM supply", vec![])
        .unwrap()
        .row(0)
        .get_i64(0)
        .unwrap();
    assert_eq!(n, 2);
}
