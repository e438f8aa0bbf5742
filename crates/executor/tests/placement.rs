//! Where tables made by plain DDL are partitioned (crate permafrost_sql's placement.rs),
//! and foreign keys checked at the partitions their keys name (exec/foreign.rs), with the
//! shapes of TPC-C's schema as sysbench-tpcc declares it: composite keys led by the
//! warehouse id, ITEM keyed by its own id, HISTORY without a key.

mod common;

use permafrost_executor::{Config, Database, NewStatement, Place, ProcedureDef, StopFlag, TxnStatement};
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
    // A relation whose partition column equals another's key runs where that key is: a
    // New-Order's first read of its customer and warehouse is at one partition.
    let route = |sql: &str| permafrost_sql::prepare(&db.catalog(), sql).unwrap().route(&[], 2);
    let joined = "SELECT d_next_o_id, w_ytd FROM district, warehouse WHERE w_id = 2 AND d_w_id = w_id AND d_id = 3";
    assert_eq!(route(joined), permafrost_sql::Route::Single(1));
    let unpinned = "SELECT d_next_o_id, w_ytd FROM district, warehouse WHERE d_w_id = w_id AND d_id = 3";
    assert_eq!(route(unpinned), permafrost_sql::Route::All);
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
    // Each table counts the statements its partitioning sent over several partitions: the
    // two ad hoc INSERTs into SUPPLY whose STOCK rows were elsewhere (the failed one too),
    // and the write of replicated ITEM; not rows of one table at several partitions
    // (warehouses 1 and 2 in one INSERT) nor a statement that names no key.
    let crossing = |table: &str| {
        db.table_stats()
            .unwrap()
            .into_iter()
            .find(|t| t.name.ends_with(table))
            .unwrap()
            .crossing_statements
    };
    for (table, n) in [
        ("supply", 2),
        ("stock", 2),
        ("item", 1),
        ("warehouse", 0),
        ("district", 0),
    ] {
        assert_eq!(crossing(table), n, "{table}");
    }
}

/// A committed block whose statements' keys pinned them to different partitions counts
/// against their tables: each probe ran at one partition, the COMMIT at both.
#[test]
fn a_block_over_two_warehouses_counts_against_its_tables() {
    let db = db();
    db.execute_ddl("CREATE TABLE warehouse (w_id INT PRIMARY KEY, w_ytd INT)")
        .unwrap();
    db.execute_ddl("CREATE TABLE district (d_w_id INT, d_id INT, PRIMARY KEY (d_w_id, d_id))")
        .unwrap();
    db.execute_sql("INSERT INTO warehouse VALUES (1, 0)", vec![]).unwrap();
    db.execute_sql("INSERT INTO warehouse VALUES (2, 0)", vec![]).unwrap();
    let now = 1_700_000_000_000_000;
    let mut block: Vec<TxnStatement> = Vec::new();
    // Warehouse 1 is at partition 0, warehouse 2 at partition 1.
    for sql in [
        "INSERT INTO district VALUES (1, 7)",
        "UPDATE warehouse SET w_ytd = w_ytd + 5 WHERE w_id = 2",
    ] {
        let s = db.ad_hoc(permafrost_sql::prepare(&db.catalog(), sql).unwrap());
        let before: Vec<&TxnStatement> = block.iter().collect();
        let next = NewStatement {
            stmt: &s,
            params: Vec::new(),
            seed: 0,
        };
        let rows = common::block_on(db.probe(&before, next, now, StopFlag::new(), Place::Here)).unwrap();
        block.push(TxnStatement {
            stmt: s,
            params: Vec::new(),
            digest: rows.digest(),
            seen: None,
            done: None,
            seed: 0,
            draws: rows.draws.clone(),
            reach: Default::default(),
        });
    }
    let crossing = |table: &str| {
        let stats = db.table_stats().unwrap();
        stats
            .iter()
            .find(|t| t.name.ends_with(table))
            .unwrap()
            .crossing_statements
    };
    assert_eq!(
        (crossing("warehouse"), crossing("district")),
        (0, 0),
        "the probes did not cross"
    );
    common::block_on(db.commit_interactive(&block, now, StopFlag::new(), Place::Here)).unwrap();
    assert_eq!((crossing("warehouse"), crossing("district")), (1, 1));
    let ytd = db
        .execute_sql("SELECT w_ytd FROM warehouse WHERE w_id = 2", vec![])
        .unwrap();
    assert_eq!(ytd.to_values()[0][0], Value::Int(5));
}
