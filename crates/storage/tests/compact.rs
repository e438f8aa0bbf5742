//! Heap compaction gives memory back without changing what the table holds: after
//! deleting most tuples scattered over many chunks, compaction moves the survivors down,
//! unmaps the empty chunks, and every index lookup, scan and the LRU order stay as before.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use permafrost_storage::{Column, IndexDef, IndexKey, IndexKind, LruChain, PartitionStore, TableSchema};
use permafrost_types::{DataType, Value};

fn schema() -> TableSchema {
    TableSchema {
        id: 0,
        name: "t".into(),
        columns: vec![
            Column::new("id", DataType::BigInt).not_null(),
            Column::new("grp", DataType::Integer),
            Column::new("pad", DataType::Varchar(Some(256))),
        ],
        indexes: vec![
            IndexDef {
                name: "pk".into(),
                columns: vec![0],
                unique: true,
                kind: IndexKind::Hash,
                primary: true,
                constraint: true,
            },
            IndexDef {
                name: "g".into(),
                columns: vec![1, 0],
                unique: false,
                kind: IndexKind::Ordered,
                primary: false,
                constraint: false,
            },
        ],
        partition_column: Some(0),
        partition_declared: false,
        evictable: true,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        comment: None,
    }
}

/// A partition store holding table 0 ([`schema`]) with an LRU chain.
fn store_with_table() -> PartitionStore {
    let mut store = PartitionStore::new(0);
    store
        .create_table(Arc::new(schema()), Some(Box::new(LruChain::new())))
        .unwrap();
    store
}

#[test]
fn compaction_releases_chunks_and_keeps_contents() {
    let mut store = store_with_table();
    let n = 40_000i64;
    let mut model = BTreeMap::new();
    for id in 0..n {
        store
            .insert(
                0,
                &[Value::Int(id), Value::Int(id % 13), Value::from(format!("{id:0>200}"))],
            )
            .unwrap();
        model.insert(id, id % 13);
    }
    store.commit();
    // Keep one tuple in 10, spread over every chunk; touch some to reorder the LRU chain.
    for id in 0..n {
        if id % 10 != 0 {
            let slot = lookup(&store, id).unwrap();
            store.delete(0, slot).unwrap();
            model.remove(&id);
        }
    }
    store.commit();
    for id in (0..n).step_by(70) {
        let slot = lookup(&store, id).unwrap();
        store.table_mut(0).unwrap().touch(slot);
    }
    let order_before = lru_ids(&mut store);
    let before = store.memory_usage().tuple_bytes;
    let released = store.compact();
    let after = store.memory_usage().tuple_bytes;
    assert!(released > 8 << 20, "released {released} bytes");
    assert_eq!(before - after, released as u64);
    assert_eq!(lru_ids(&mut store), order_before, "LRU order survives the moves");
    let t = store.table(0).unwrap();
    t.check_consistency().unwrap();
    for (id, grp) in &model {
        let slot = lookup(&store, *id).expect("still indexed");
        let row = t.row(slot);
        assert_eq!(row.get(1).as_i64(), Some(*grp));
        assert_eq!(row.get(2).as_str().unwrap(), format!("{id:0>200}"));
    }
    // Nothing more to release; inserts reuse the freed slots before growing.
    assert_eq!(store.compact(), 0);
    for id in n..n + 1000 {
        store
            .insert(0, &[Value::Int(id), Value::Int(0), Value::from("x")])
            .unwrap();
    }
    store.commit();
    assert_eq!(store.memory_usage().tuple_bytes, after);
    store.table(0).unwrap().check_consistency().unwrap();

    // A table left without tuples (all evicted, all deleted) keeps no chunk, and grows
    // again from nothing.
    let ids: Vec<i64> = model.keys().copied().chain(n..n + 1000).collect();
    for id in ids {
        let slot = lookup(&store, id).unwrap();
        store.delete(0, slot).unwrap();
    }
    store.commit();
    assert!(store.compact() >= 2 << 20);
    assert_eq!(store.memory_usage().tuple_bytes, 0);
    store
        .insert(0, &[Value::Int(7), Value::Int(1), Value::from("again")])
        .unwrap();
    store.commit();
    assert_eq!(
        lookup(&store, 7).map(|s| store.table(0).unwrap().row(s).get(2).as_str().unwrap().to_string()),
        Some("again".into())
    );
    assert!(
        store.memory_usage().tuple_bytes <= 8192,
        "{}",
        store.memory_usage().tuple_bytes
    );
    store.table(0).unwrap().check_consistency().unwrap();
}

fn lookup(store: &PartitionStore, id: i64) -> Option<u32> {
    let t = store.table(0).unwrap();
    let mut slot = None;
    let _ = t.index_store(0).lookup(&IndexKey::Int(id), |r| {
        slot = r.as_slot();
        ControlFlow::Break(())
    });
    slot
}

/// Tuple ids in LRU order, coldest first (the eviction candidates of the whole chain).
fn lru_ids(store: &mut PartitionStore) -> Vec<i64> {
    let t = store.table_mut(0).unwrap();
    let n = t.tracker().unwrap().len();
    let mut victims = Vec::new();
    t.eviction_candidates(n, &mut victims);
    victims.iter().map(|&v| t.row(v).get(0).as_i64().unwrap()).collect()
}

/// A table whose tuples fill every chunk but the last in part has nothing to give back:
/// compaction leaves it as it is (no tuple moves, so its generation, which tells a moved
/// write whether the table changed since its fork, stays).
#[test]
fn compaction_with_no_chunk_to_empty_changes_nothing() {
    let mut store = store_with_table();
    for id in 0..150_000i64 {
        store
            .insert(0, &[Value::Int(id), Value::Int(1), Value::from("x")])
            .unwrap();
    }
    store.commit();
    // A few holes, far fewer than a chunk holds.
    for id in (0..150_000i64).step_by(5000) {
        let slot = lookup(&store, id).unwrap();
        store.delete(0, slot).unwrap();
    }
    store.commit();
    let t = store.table(0).unwrap();
    assert!(t.heap().chunk_count() > 1, "the test needs several chunks");
    let (generation, bytes) = (t.generation(), store.memory_usage().tuple_bytes);
    assert_eq!(store.compact(), 0);
    let t = store.table(0).unwrap();
    assert_eq!(t.generation(), generation);
    assert_eq!(store.memory_usage().tuple_bytes, bytes);
    t.check_consistency().unwrap();
}
