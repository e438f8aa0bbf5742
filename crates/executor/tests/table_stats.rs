//! Per-table hot and cold figures (`Database::table_stats`): they agree with the database
//! totals and move the right way when tuples are evicted and brought back.

use permafrost_executor::{AntiCacheConfig, Config, Database, MergePolicy, ProcedureDef, TableStats};
use permafrost_types::Value;

const ROWS: i64 = 2_000;

fn open(dir: &std::path::Path) -> Database {
    let mut ac = AntiCacheConfig::new(dir);
    ac.merge = MergePolicy::Tuple { hole_threshold: 0.9 };
    let config = Config::builder()
        .partitions(2)
        .memory_limit(64 << 20)
        .lru_sample_rate(1.0)
        .anticache(ac)
        .build()
        .unwrap();
    let db = Database::open(config).unwrap();
    db.execute_ddl(
        "CREATE TABLE items (id BIGINT PRIMARY KEY, pad VARCHAR(400) NOT NULL) WITH (partition_by = 'id');
         CREATE TABLE pinned (id BIGINT PRIMARY KEY, v BIGINT NOT NULL) WITH (partition_by = 'id', evictable = false);
         CREATE TABLE codes (code BIGINT PRIMARY KEY, label VARCHAR(20)) WITH (partition_by = 'none')",
    )
    .unwrap();
    db.register(
        ProcedureDef::new("Get")
            .partition_param(0)
            .statement("SELECT pad FROM items WHERE id = ?")
            .body(|ctx, p| ctx.execute(0, p)),
    )
    .unwrap();
    db
}

fn table<'a>(stats: &'a [TableStats], name: &str) -> &'a TableStats {
    stats.iter().find(|t| t.name == name).unwrap()
}

#[test]
fn hot_and_cold_figures_follow_eviction_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    for id in 0..ROWS {
        db.execute_sql(
            "INSERT INTO items VALUES ($1, $2)",
            vec![Value::Int(id), Value::from(format!("{id:0400}"))],
        )
        .unwrap();
        if id < 100 {
            db.execute_sql(
                "INSERT INTO pinned VALUES ($1, $2)",
                vec![Value::Int(id), Value::Int(id)],
            )
            .unwrap();
        }
    }
    for code in 0..10 {
        db.execute_sql("INSERT INTO codes VALUES ($1, 'x')", vec![Value::Int(code)])
            .unwrap();
    }

    let before = db.table_stats().unwrap();
    let names: Vec<&str> = before.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["codes", "items", "pinned"], "ordered by name");
    let items = table(&before, "items").clone();
    assert!(items.evictable && !items.replicated);
    assert_eq!(items.hot_tuples, ROWS as u64);
    assert_eq!(items.cold_tuples, 0);
    assert_eq!((items.cold_blocks, items.cold_bytes), (0, 0));
    // 400-byte strings are stored out of line.
    assert!(items.string_bytes >= ROWS as u64 * 400, "{items:?}");
    assert!(items.tuple_bytes > 0 && items.index_bytes > 0, "{items:?}");
    assert_eq!(items.hot_bytes(), items.tuple_bytes + items.string_bytes);
    let codes = table(&before, "codes");
    assert!(codes.replicated);
    assert_eq!(codes.hot_tuples, 10 * 2, "one copy per partition");
    let pinned = table(&before, "pinned").clone();
    assert!(!pinned.evictable);
    assert_eq!(pinned.hot_tuples, 100);

    // The per-table figures add up to the database's memory accounting.
    let mem = db.memory_usage().unwrap();
    let sum = |f: fn(&TableStats) -> u64| before.iter().map(f).sum::<u64>();
    assert_eq!(sum(|t| t.tuple_bytes), mem.tuple_used_bytes);
    assert_eq!(sum(|t| t.string_bytes), mem.string_used_bytes);
    assert_eq!(sum(|t| t.index_bytes), mem.index_bytes);
    assert_eq!(sum(|t| t.tombstone_bytes), mem.tombstone_bytes);

    // Evict: items moves from hot to cold; the table that is not evictable does not.
    let evicted = db.evict_now(256 << 10).unwrap();
    assert!(evicted > 0);
    let after = db.table_stats().unwrap();
    let items2 = table(&after, "items").clone();
    // The replicated table is evictable too: every evicted tuple is in some table's figures.
    assert_eq!(after.iter().map(|t| t.cold_tuples).sum::<u64>(), evicted);
    assert!(items2.cold_tuples > 0);
    assert_eq!(items2.hot_tuples + items2.cold_tuples, ROWS as u64);
    assert!(items2.hot_bytes() < items.hot_bytes(), "{items2:?}");
    assert!(items2.cold_blocks > 0, "{items2:?}");
    // Blocks hold at least the evicted out-of-line values (and are whole slots).
    assert!(items2.cold_bytes >= items2.cold_tuples * 400, "{items2:?}");
    let block_size = db.config().anticache.as_ref().unwrap().block_size as u64;
    assert_eq!(items2.cold_bytes % block_size, 0, "{items2:?}");
    assert!(items2.tombstone_bytes > 0);
    assert_eq!(table(&after, "pinned"), &pinned);
    let st = db.stats_now().unwrap();
    assert_eq!(st.evicted_now, after.iter().map(|t| t.cold_tuples).sum::<u64>());
    assert_eq!(st.blocks_live, after.iter().map(|t| t.cold_blocks).sum::<u64>());

    // Read rows until the first evicted one comes back: tuple-merge leaves a stale copy in
    // its block, which stays live.
    let mut id = 0;
    let one_back = loop {
        assert_eq!(db.call("Get", vec![Value::Int(id)]).unwrap().len(), 1, "row {id}");
        id += 1;
        let s = db.table_stats().unwrap();
        if table(&s, "items").cold_tuples < items2.cold_tuples {
            break table(&s, "items").clone();
        }
    };
    assert_eq!(one_back.cold_tuples, items2.cold_tuples - 1, "{one_back:?}");
    assert_eq!(one_back.stale_tuples, 1, "{one_back:?}");
    assert_eq!(one_back.hot_tuples, items2.hot_tuples + 1);
    assert_eq!(
        (one_back.cold_blocks, one_back.cold_bytes),
        (items2.cold_blocks, items2.cold_bytes)
    );

    // Read every row back: once a block's tuples are all in memory, the block is freed.
    for id in 0..ROWS {
        assert_eq!(db.call("Get", vec![Value::Int(id)]).unwrap().len(), 1, "row {id}");
    }
    let back = db.table_stats().unwrap();
    let items3 = table(&back, "items");
    assert_eq!(items3.cold_tuples, 0, "{items3:?}");
    assert_eq!(items3.hot_tuples, ROWS as u64);
    assert!(items3.hot_bytes() > items2.hot_bytes());
    assert_eq!((items3.cold_blocks, items3.cold_bytes, items3.stale_tuples), (0, 0, 0));
    let st = db.stats_now().unwrap();
    assert_eq!(st.blocks_live, back.iter().map(|t| t.cold_blocks).sum::<u64>());
    assert_eq!(st.evicted_now, back.iter().map(|t| t.cold_tuples).sum::<u64>());
}

#[test]
fn without_the_anticache_nothing_is_cold() {
    let db = Database::open(Config::builder().partitions(3).build().unwrap()).unwrap();
    assert!(db.table_stats().unwrap().is_empty());
    db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, s VARCHAR(10))")
        .unwrap();
    for id in 0..30 {
        db.execute_sql("INSERT INTO t VALUES ($1, 'abc')", vec![Value::Int(id)])
            .unwrap();
    }
    let s = db.table_stats().unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].hot_tuples, 30);
    assert_eq!((s[0].cold_tuples, s[0].cold_blocks, s[0].cold_bytes), (0, 0, 0));
    db.execute_ddl("DROP TABLE t").unwrap();
    assert!(db.table_stats().unwrap().is_empty());
}
