//! Tables and the undo log checked against a simple model under random operations.
//!
//! The model is a map from primary key to row. Transactions of random inserts, updates
//! (including key changes and long out-of-line strings), deletes and statement rollbacks
//! are applied to both, then committed or rolled back; after each transaction the table's
//! contents, its index lookups and its internal invariants must agree with the model.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use permafrost_storage::{
    Column, IndexDef, IndexKey, IndexKind, KeyBound, LruChain, PartitionStore, TableSchema, TupleRef,
};
use permafrost_types::{DataType, Value};
use proptest::prelude::*;

fn schema() -> TableSchema {
    TableSchema {
        id: 0,
        name: "t".into(),
        columns: vec![
            Column::new("id", DataType::BigInt).not_null(),
            Column::new("grp", DataType::Integer),
            Column::new("name", DataType::Varchar(Some(20))),
            Column::new("body", DataType::Varchar(None)),
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
                name: "by_grp".into(),
                columns: vec![1, 0],
                unique: false,
                kind: IndexKind::Ordered,
                primary: false,
                constraint: false,
            },
            IndexDef {
                name: "by_name".into(),
                columns: vec![2],
                unique: true,
                kind: IndexKind::Ordered,
                primary: false,
                constraint: false,
            },
        ],
        // Replicated: a unique index on a partitioned table must contain the partition column.
        partition_column: None,
        partition_declared: false,
        evictable: true,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        comment: None,
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert {
        id: i64,
        grp: Option<i32>,
        name: Option<u8>,
        long: bool,
    },
    Update {
        id: i64,
        new_id: Option<i64>,
        grp: Option<i32>,
        name: Option<u8>,
        long: bool,
    },
    Delete {
        id: i64,
    },
}

#[derive(Debug, Clone)]
struct Txn {
    ops: Vec<(Op, bool)>, // (operation, roll this statement back)
    commit: bool,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            0i64..30,
            prop::option::of(0i32..4),
            prop::option::of(0u8..25),
            any::<bool>()
        )
            .prop_map(|(id, grp, name, long)| Op::Insert { id, grp, name, long }),
        (
            0i64..30,
            prop::option::weighted(0.3, 0i64..30),
            prop::option::of(0i32..4),
            prop::option::of(0u8..25),
            any::<bool>()
        )
            .prop_map(|(id, new_id, grp, name, long)| Op::Update {
                id,
                new_id,
                grp,
                name,
                long
            }),
        (0i64..30).prop_map(|id| Op::Delete { id }),
    ]
}

fn txn() -> impl Strategy<Value = Txn> {
    (
        prop::collection::vec((op(), prop::bool::weighted(0.1)), 1..8),
        prop::bool::weighted(0.7),
    )
        .prop_map(|(ops, commit)| Txn { ops, commit })
}

type Row = (Option<i32>, Option<String>, String);

fn body(id: i64, long: bool) -> String {
    if long {
        format!("{id}-").repeat(60)
    } else {
        format!("b{id}")
    }
}

fn lookup(store: &PartitionStore, index: usize, key: IndexKey) -> Vec<TupleRef> {
    let t = store.table(0).unwrap();
    let mut out = vec![];
    let _ = t.index_store(index).lookup(&key, |r| {
        out.push(r);
        ControlFlow::Continue(())
    });
    out
}

fn find(store: &PartitionStore, id: i64) -> Option<u32> {
    lookup(store, 0, IndexKey::Int(id)).first().and_then(|r| r.as_slot())
}

/// Applies one operation to the store; returns whether it succeeded. Applies the same to
/// the model only on success.
fn apply(store: &mut PartitionStore, model: &mut BTreeMap<i64, Row>, op: &Op) -> bool {
    let name_of = |n: Option<u8>| n.map(|n| format!("n{n}"));
    let name_taken = |model: &BTreeMap<i64, Row>, name: &Option<String>, except: i64| {
        name.is_some() && model.iter().any(|(k, r)| *k != except && r.1 == *name)
    };
    match op {
        Op::Insert { id, grp, name, long } => {
            let name = name_of(*name);
            let vals = vec![
                Value::Int(*id),
                grp.map_or(Value::Null, |g| Value::Int(g as i64)),
                name.clone().map_or(Value::Null, Value::from),
                Value::from(body(*id, *long)),
            ];
            let expect_ok = !model.contains_key(id) && !name_taken(model, &name, *id);
            let res = store.insert(0, &vals);
            assert_eq!(res.is_ok(), expect_ok, "insert {op:?}: {res:?}");
            if expect_ok {
                model.insert(*id, (*grp, name, body(*id, *long)));
            }
            expect_ok
        }
        Op::Update {
            id,
            new_id,
            grp,
            name,
            long,
        } => {
            let Some(slot) = find(store, *id) else {
                assert!(!model.contains_key(id));
                return false;
            };
            let name = name_of(*name);
            let target = new_id.unwrap_or(*id);
            let expect_ok = (target == *id || !model.contains_key(&target)) && !name_taken(model, &name, *id);
            let mut changes = vec![
                (1, grp.map_or(Value::Null, |g| Value::Int(g as i64))),
                (2, name.clone().map_or(Value::Null, Value::from)),
                (3, Value::from(body(target, *long))),
            ];
            if let Some(n) = new_id {
                changes.push((0, Value::Int(*n)));
            }
            let res = store.update(0, slot, &changes);
            assert_eq!(res.is_ok(), expect_ok, "update {op:?}: {res:?}");
            if expect_ok {
                model.remove(id);
                model.insert(target, (*grp, name, body(target, *long)));
            }
            expect_ok
        }
        Op::Delete { id } => match find(store, *id) {
            Some(slot) => {
                store.delete(0, slot).unwrap();
                model.remove(id);
                true
            }
            None => {
                assert!(!model.contains_key(id));
                false
            }
        },
    }
}

/// Runs a transaction's statements (each rolled back to its savepoint when it fails or
/// is to be rolled back); returns the model as they leave it.
fn run_ops(store: &mut PartitionStore, model: &BTreeMap<i64, Row>, txn: &Txn) -> BTreeMap<i64, Row> {
    let mut working = model.clone();
    for (op, roll_back) in &txn.ops {
        let sp = store.savepoint();
        let mut attempt = working.clone();
        if apply(store, &mut attempt, op) && !*roll_back {
            working = attempt;
        } else {
            store.rollback_to(sp);
        }
    }
    working
}

fn check(store: &PartitionStore, model: &BTreeMap<i64, Row>) -> Result<(), TestCaseError> {
    let t = store.table(0).unwrap();
    t.check_consistency().map_err(TestCaseError::fail)?;
    let mut seen = BTreeMap::new();
    let _ = t.scan(|slot| {
        let r = t.row(slot);
        let id = r.get(0).as_i64().unwrap();
        let row: Row = (
            r.get(1).as_i64().map(|g| g as i32),
            r.get(2).as_str().map(str::to_owned),
            r.get(3).as_str().unwrap().to_owned(),
        );
        seen.insert(id, row);
        ControlFlow::Continue(())
    });
    prop_assert_eq!(&seen, model);
    for (id, row) in model {
        prop_assert!(find(store, *id).is_some());
        if let Some(name) = &row.1 {
            let enc = t.encoder(2);
            let key = enc.encode([permafrost_types::ValueRef::Text(name)]).unwrap();
            prop_assert_eq!(lookup(store, 2, key).len(), 1);
        }
    }
    // The (grp, id) index in order yields ids grouped by grp.
    let mut via_index = vec![];
    let _ = t
        .index_store(1)
        .range(&KeyBound::Unbounded, &KeyBound::Unbounded, false, |r| {
            via_index.push(t.row(r.as_slot().unwrap()).get(0).as_i64().unwrap());
            ControlFlow::Continue(())
        });
    let mut want: Vec<(i32, i64)> = model.iter().filter_map(|(id, r)| r.0.map(|g| (g, *id))).collect();
    want.sort();
    prop_assert_eq!(via_index, want.into_iter().map(|(_, id)| id).collect::<Vec<_>>());
    // The access tracker holds exactly the live tuples.
    prop_assert_eq!(t.tracker().unwrap().len(), model.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn table_matches_model(txns in prop::collection::vec(txn(), 1..25)) {
        let mut store = PartitionStore::new(0);
        store.create_table(Arc::new(schema()), Some(Box::new(LruChain::new()))).unwrap();
        let mut model: BTreeMap<i64, Row> = BTreeMap::new();
        let before = store.table(0).unwrap().var_heap().live_values();
        for txn in txns {
            let working = run_ops(&mut store, &model, &txn);
            if txn.commit {
                store.commit();
                model = working;
            } else {
                store.rollback();
            }
            check(&store, &model)?;
        }
        // Out-of-line strings are freed exactly: one per long body in the model.
        let long_bodies = model.values().filter(|r| r.2.len() > 12).count() as u64;
        prop_assert_eq!(store.table(0).unwrap().var_heap().live_values(), before + long_bodies);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// A transaction's changes, applied to a twin of the partition in the state it began
    /// in, leave the twin as the transaction left the original: the same rows, indexes,
    /// out-of-line values and sequence, through statement rollbacks, keys that move, and
    /// tuples inserted then updated or deleted.
    #[test]
    fn changes_applied_to_a_twin_make_the_same_table(txns in prop::collection::vec(txn(), 1..20)) {
        let new = || {
            let mut s = PartitionStore::new(0);
            s.create_table(Arc::new(schema()), Some(Box::new(LruChain::new()))).unwrap();
            s
        };
        let (mut store, mut twin) = (new(), new());
        let mut model: BTreeMap<i64, Row> = BTreeMap::new();
        for (i, txn) in txns.iter().enumerate() {
            if i % 2 == 0 {
                store.next_sequence(0, |_| true).unwrap();
            }
            let working = run_ops(&mut store, &model, txn);
            let changes = store.changes().unwrap();
            let before = twin.table(0).unwrap().generation();
            twin.apply(&changes).unwrap();
            prop_assert!(changes.is_empty() || twin.table(0).unwrap().generation() != before);
            if txn.commit {
                store.commit();
                twin.commit();
                model = working;
            } else {
                store.rollback();
                twin.rollback();
            }
            check(&store, &model)?;
            check(&twin, &model)?;
            prop_assert_eq!(store.table(0).unwrap().sequence(), twin.table(0).unwrap().sequence());
            prop_assert_eq!(
                store.table(0).unwrap().var_heap().live_values(),
                twin.table(0).unwrap().var_heap().live_values()
            );
        }
    }
}
