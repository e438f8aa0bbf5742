use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

#[test]
fn ids_are_reused_and_iteration_skips_free_entries() {
    let mut t = Tombstones::new();
    let a = t.add(Tombstone { block: 1, offset: 0 });
    let b = t.add(Tombstone { block: 1, offset: 1 });
    assert_eq!(t.remove(a), Some(Tombstone { block: 1, offset: 0 }));
    assert_eq!(t.remove(a), None);
    assert_eq!(t.iter().map(|(i, _)| i).collect::<Vec<_>>(), vec![b]);
    let c = t.add(Tombstone { block: 2, offset: 5 });
    assert_eq!(c, a);
    assert_eq!(t.len(), 2);
    assert_eq!(t.get(c).unwrap().block, 2);
}

#[test]
fn restore_keeps_ids_and_reuses_the_free_ones() {
    let mut t = Tombstones::new();
    let at = |b| Some(Tombstone { block: b, offset: 3 });
    t.restore([at(7), None, at(9), None].into_iter());
    assert_eq!(t.len(), 2);
    assert_eq!(t.get(2), Some(Tombstone { block: 9, offset: 3 }));
    assert_eq!(t.get(1), None);
    assert_eq!(t.id_bound(), 4);
    assert_eq!(t.add(Tombstone { block: 1, offset: 0 }), 1);
    assert_eq!(t.add(Tombstone { block: 1, offset: 1 }), 3);
    assert_eq!(t.add(Tombstone { block: 1, offset: 2 }), 4);
}

/// Evicts `blocks` blocks of `per_block` tuples as eviction does: every id of a block
/// reserved, then each set.
fn evict(t: &mut Tombstones, first_block: u32, blocks: u32, per_block: u32) -> Vec<u32> {
    let mut ids = Vec::new();
    for b in first_block..first_block + blocks {
        let reserved: Vec<u32> = (0..per_block).map(|_| t.reserve()).collect();
        for (offset, &id) in reserved.iter().enumerate() {
            t.set(
                id,
                Tombstone {
                    block: b,
                    offset: offset as u32,
                },
            );
        }
        ids.extend(reserved);
    }
    ids
}

#[test]
fn a_table_evicted_block_by_block_costs_far_less_than_a_byte_a_tuple() {
    let mut t = Tombstones::new();
    let ids = evict(&mut t, 0, 2_000, 500);
    assert_eq!(t.len(), 1_000_000);
    assert!(
        t.memory_bytes() < 200_000,
        "{} bytes for a million tombstones",
        t.memory_bytes()
    );
    assert_eq!(t.get(ids[1_234]), Some(Tombstone { block: 2, offset: 234 }));
    // Tuples brought back here and there break runs, never past an array's 6 bytes an id.
    for &id in ids.iter().step_by(3) {
        t.remove(id).unwrap();
    }
    // (and 4 bytes per free id, a heap that may be twice as large as it holds).
    let free = 1_000_000 / 3 + 1;
    assert!(
        t.memory_bytes() <= 1_000_000 * 6 + free * 8,
        "{} bytes",
        t.memory_bytes()
    );
    assert_eq!(t.get(ids[1_235]), Some(Tombstone { block: 2, offset: 235 }));
    assert_eq!(t.get(ids[1_236]), None);
    // Their ids are reused lowest first, and runs form again.
    let again = evict(&mut t, 5_000, 1, 400);
    assert!(again.windows(2).all(|w| w[0] < w[1]), "{again:?}");
    assert_eq!(
        t.get(again[0]),
        Some(Tombstone {
            block: 5_000,
            offset: 0
        })
    );
}

#[derive(Debug, Clone)]
enum Op {
    Add(u32, u16),
    Reserve,
    /// Sets the n-th pending id (modulo how many there are).
    Set(usize, u32, u16),
    /// Removes the n-th id handed out (modulo the bound).
    Remove(usize),
    /// Reserves and sets a whole block, as eviction does.
    Block(u32, u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..4u32, 0..6u16).prop_map(|(b, o)| Op::Add(b, o)),
        Just(Op::Reserve),
        (any::<usize>(), 0..4u32, 0..6u16).prop_map(|(n, b, o)| Op::Set(n, b, o)),
        any::<usize>().prop_map(Op::Remove),
        (0..4u32, 1..300u16).prop_map(|(b, n)| Op::Block(b, n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The tombstones answer as a plain map from id to value would, whatever the order of
    /// additions, reservations and removals, and a restore from their own listing gives
    /// the same.
    #[test]
    fn tombstones_behave_as_a_map(ops in proptest::collection::vec(op(), 1..200)) {
        let mut t = Tombstones::new();
        // id -> Some(tombstone) or None while pending.
        let mut model: BTreeMap<u32, Option<Tombstone>> = BTreeMap::new();
        let mut bound = 0u32;
        for op in ops {
            match op {
                Op::Add(block, offset) => {
                    let ts = Tombstone { block, offset: u32::from(offset) };
                    let id = t.add(ts);
                    prop_assert!(model.insert(id, Some(ts)).is_none());
                    bound = bound.max(id + 1);
                }
                Op::Reserve => {
                    let id = t.reserve();
                    prop_assert!(model.insert(id, None).is_none());
                    bound = bound.max(id + 1);
                }
                Op::Set(n, block, offset) => {
                    let pending: Vec<u32> = model.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| *k).collect();
                    if !pending.is_empty() {
                        let id = pending[n % pending.len()];
                        let ts = Tombstone { block, offset: u32::from(offset) };
                        t.set(id, ts);
                        model.insert(id, Some(ts));
                    }
                }
                Op::Remove(n) => {
                    if bound > 0 {
                        let id = (n % bound as usize) as u32;
                        let was = model.remove(&id);
                        let got = t.remove(id);
                        match was {
                            None => prop_assert_eq!(got, None),
                            Some(Some(ts)) => prop_assert_eq!(got, Some(ts)),
                            Some(None) => prop_assert_eq!(got.map(|g| g.block), Some(PENDING)),
                        }
                    }
                }
                Op::Block(block, n) => {
                    let ids: Vec<u32> = (0..n).map(|_| t.reserve()).collect();
                    for (offset, &id) in ids.iter().enumerate() {
                        let ts = Tombstone { block, offset: offset as u32 };
                        t.set(id, ts);
                        prop_assert!(model.insert(id, Some(ts)).is_none());
                        bound = bound.max(id + 1);
                    }
                }
            }
            prop_assert_eq!(t.len(), model.len());
            prop_assert_eq!(t.id_bound(), bound);
        }
        for id in 0..bound + 2 {
            prop_assert_eq!(t.get(id), model.get(&id).copied().flatten(), "id {}", id);
        }
        let live: Vec<(u32, Tombstone)> = model.iter().filter_map(|(k, v)| v.map(|v| (*k, v))).collect();
        prop_assert_eq!(t.iter().collect::<Vec<_>>(), live.clone());
        let mut r = Tombstones::new();
        r.restore((0..t.id_bound()).map(|id| t.get(id)).collect::<Vec<_>>().into_iter());
        prop_assert_eq!(r.iter().collect::<Vec<_>>(), live.clone());
        prop_assert_eq!(r.len(), live.len());
        prop_assert_eq!(r.id_bound(), t.id_bound());
        // A restored table reuses its lowest free id first.
        let lowest_free = (0..r.id_bound()).find(|id| r.get(*id).is_none()).unwrap_or(r.id_bound());
        prop_assert_eq!(r.add(Tombstone { block: 1, offset: 1 }), lowest_free);
    }
}
