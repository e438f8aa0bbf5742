//! The anti-cache against a model: random interleavings of inserts, updates, deletes and
//! reads with eviction rounds and merges (both merge policies, several block sizes), on a
//! table with a hash primary key, an ordered secondary index and values both inline and out
//! of line. After every step the table must hold exactly the model's rows (in memory or
//! evicted), every index entry must resolve to a visible tuple or a live tombstone, and no
//! tuple may be both in memory and live in a block.

use std::ops::ControlFlow;
use std::sync::Arc;

use permafrost_anticache::file::MemFile;
use permafrost_anticache::{AntiCache, AntiCacheConfig, BlockIo, BlockStore, MergePolicy, Need, Retrieval};
use permafrost_storage::{Column, IndexDef, IndexKey, IndexKind, LruChain, PartitionStore, TableSchema, TupleRef};
use permafrost_types::{DataType, Value};
use proptest::prelude::*;

fn schema() -> TableSchema {
    TableSchema {
        id: 0,
        name: "t".into(),
        columns: vec![
            Column::new("id", DataType::BigInt).not_null(),
            Column::new("grp", DataType::Integer),
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
                columns: vec![1],
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

#[derive(Debug, Clone)]
enum Op {
    Insert(i64, i32, usize),
    Update(i64, i32, usize),
    Delete(i64),
    Read(i64),
    Evict(u64),
    ReadGroup(i32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0i64..60, 0i32..5, 0usize..400).prop_map(|(k, g, l)| Op::Insert(k, g, l)),
        2 => (0i64..60, 0i32..5, 0usize..400).prop_map(|(k, g, l)| Op::Update(k, g, l)),
        1 => (0i64..60).prop_map(Op::Delete),
        3 => (0i64..60).prop_map(Op::Read),
        2 => (1u64..20_000).prop_map(Op::Evict),
        1 => (0i32..5).prop_map(Op::ReadGroup),
    ]
}

fn body(k: i64, len: usize) -> String {
    format!("{k}:").repeat(len / 3 + 1)
}

struct Harness {
    store: PartitionStore,
    ac: AntiCache,
    writes: Writes,
    pending_writes: usize,
    model: std::collections::BTreeMap<i64, (i32, String)>,
}

/// Write completions: the blocks of one write and its outcome.
type Writes = crossbeam_channel::Receiver<(Vec<u32>, std::io::Result<()>)>;

/// An anti-cache whose write completions arrive on a channel the test drains.
fn anticache(cfg: AntiCacheConfig, blocks: BlockStore) -> (AntiCache, Writes) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let ac = AntiCache::with_store(
        cfg,
        blocks,
        Arc::new(BlockIo::start(4)),
        Arc::new(|_, _| {}),
        Arc::new(move |b, r| {
            let _ = tx.send((b, r));
        }),
    );
    (ac, rx)
}

impl Harness {
    fn new(block_size: usize, merge: MergePolicy) -> Harness {
        let mut store = PartitionStore::new(0);
        store
            .create_table(Arc::new(schema()), Some(Box::new(LruChain::new())))
            .unwrap();
        let mut cfg = AntiCacheConfig::new("/unused");
        cfg.block_size = block_size;
        cfg.eviction_size = block_size as u64;
        cfg.merge = merge;
        cfg.retrieval = Retrieval::Synchronous;
        let blocks = BlockStore::with_file(Arc::new(MemFile::default()), block_size);
        let (ac, writes) = anticache(cfg, blocks);
        Harness {
            store,
            ac,
            writes,
            pending_writes: 0,
            model: Default::default(),
        }
    }

    /// Waits for the asynchronous block writes of earlier evictions.
    fn drain_writes(&mut self) {
        while self.pending_writes > 0 {
            let (blocks, r) = self.writes.recv().unwrap();
            self.ac.on_written(&mut self.store, &blocks, r).unwrap();
            self.pending_writes -= 1;
        }
    }

    fn lookup(&self, k: i64) -> Option<TupleRef> {
        let t = self.store.table(0).unwrap();
        let mut found = None;
        let _ = t.index_store(0).lookup(&IndexKey::Int(k), |r| {
            found = Some(r);
            ControlFlow::Break(())
        });
        found
    }

    /// Finds `k` in memory, fetching it from its block if it was evicted.
    fn slot_of(&mut self, k: i64) -> Result<Option<u32>, TestCaseError> {
        match self.lookup(k) {
            None => Ok(None),
            Some(r) if r.as_slot().is_some() => Ok(r.as_slot()),
            Some(r) => {
                let tomb = r.as_tombstone().unwrap();
                let needs: Vec<Need> = self.ac.resolve(&self.store, [(0, tomb)], u64::MAX).unwrap();
                prop_assert_eq!(needs.len(), 1);
                self.ac
                    .fetch_sync(&mut self.store, &needs)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let r = self.lookup(k).unwrap();
                prop_assert!(r.as_slot().is_some(), "requested tuple is back in memory");
                Ok(r.as_slot())
            }
        }
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Insert(k, g, len) => {
                let row = vec![Value::Int(k), Value::Int(g as i64), Value::from(body(k, len))];
                let r = self.store.insert(0, &row);
                // A key that exists, even evicted, is a duplicate.
                prop_assert_eq!(r.is_ok(), !self.model.contains_key(&k));
                if r.is_ok() {
                    self.model.insert(k, (g, body(k, len)));
                }
            }
            Op::Update(k, g, len) => {
                if let Some(slot) = self.slot_of(k)? {
                    self.store
                        .update(0, slot, &[(1, Value::Int(g as i64)), (2, Value::from(body(k, len)))])
                        .unwrap();
                    self.model.insert(k, (g, body(k, len)));
                } else {
                    prop_assert!(!self.model.contains_key(&k));
                }
            }
            Op::Delete(k) => {
                if let Some(slot) = self.slot_of(k)? {
                    self.store.delete(0, slot).unwrap();
                    self.model.remove(&k);
                } else {
                    prop_assert!(!self.model.contains_key(&k));
                }
            }
            Op::Read(k) => {
                let got = self.slot_of(k)?.map(|s| {
                    let r = self.store.table(0).unwrap().row(s);
                    (
                        r.get(1).as_i64().unwrap() as i32,
                        r.get(2).as_str().unwrap().to_string(),
                    )
                });
                prop_assert_eq!(got.as_ref(), self.model.get(&k));
            }
            Op::ReadGroup(g) => {
                // A range through the ordered index, fetching what is evicted.
                let t = self.store.table(0).unwrap();
                let enc = t.encoder(1);
                let key = enc.encode([permafrost_types::ValueRef::Int(g as i64)]).unwrap();
                let mut tombs = vec![];
                let _ = t.index_store(1).lookup(&key, |r| {
                    if let Some(tb) = r.as_tombstone() {
                        tombs.push((0, tb));
                    }
                    ControlFlow::Continue(())
                });
                let needs = self.ac.resolve(&self.store, tombs, u64::MAX).unwrap();
                self.ac
                    .fetch_sync(&mut self.store, &needs)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let t = self.store.table(0).unwrap();
                let mut ids = vec![];
                let _ = t.index_store(1).lookup(&key, |r| {
                    ids.push(t.row(r.as_slot().expect("all fetched")).get(0).as_i64().unwrap());
                    ControlFlow::Continue(())
                });
                ids.sort();
                let want: Vec<i64> = self.model.iter().filter(|(_, v)| v.0 == g).map(|(k, _)| *k).collect();
                prop_assert_eq!(ids, want);
            }
            Op::Evict(bytes) => {
                self.store.commit();
                let before = self.ac.block_store().stats.write_calls;
                self.ac.evict(&mut self.store, bytes, 0).unwrap();
                self.pending_writes += (self.ac.block_store().stats.write_calls - before) as usize;
                // Half the time, read back while the writes may still be in flight.
                if bytes % 2 == 0 {
                    self.drain_writes();
                }
            }
        }
        self.store.commit();
        self.check()
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let t = self.store.table(0).unwrap();
        t.check_consistency().map_err(TestCaseError::fail)?;
        prop_assert_eq!(t.live_tuples() as usize + t.evicted_tuples(), self.model.len());
        for k in self.model.keys() {
            prop_assert!(self.lookup(*k).is_some(), "key {} lost", k);
        }
        // Every live tombstone names a live block of this table holding it.
        for (_, at) in t.tombstones().iter() {
            let m = self.ac.block_store().meta(at.block);
            prop_assert!(
                m.is_some_and(|m| m.table == 0 && at.offset < m.tuples as u32),
                "tombstone points at a dead block"
            );
        }
        // The per-table tallies agree with a recount of the directory.
        let bs = self.ac.block_store();
        let mut recount = permafrost_anticache::store::TableBlocks::default();
        for b in bs.blocks_of(0) {
            let m = bs.meta(b).unwrap();
            recount.blocks += 1;
            recount.slots += m.span as u64;
            recount.tuples += m.tuples as u64;
            recount.holes += m.holes as u64;
        }
        prop_assert_eq!(bs.table_blocks(0), recount);
        prop_assert_eq!(recount.blocks, bs.live_blocks() as u64);
        prop_assert!(recount.tuples - recount.holes >= t.evicted_tuples() as u64);
        Ok(())
    }
}

fn run(block_size: usize, merge: MergePolicy, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut h = Harness::new(block_size, merge);
    for op in &ops {
        h.apply(op)?;
    }
    h.drain_writes();
    // Finally read everything back, from memory or disk.
    let keys: Vec<i64> = h.model.keys().copied().collect();
    for k in keys {
        h.apply(&Op::Read(k))?;
    }
    prop_assert_eq!(h.store.table(0).unwrap().evicted_tuples(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn tuple_merge_matches_model(ops in prop::collection::vec(op(), 1..120), bs in prop::sample::select(vec![1024usize, 4096, 65536])) {
        run(bs, MergePolicy::Tuple { hole_threshold: 0.5 }, ops)?;
    }

    #[test]
    fn block_merge_matches_model(ops in prop::collection::vec(op(), 1..120), bs in prop::sample::select(vec![1024usize, 4096, 65536])) {
        run(bs, MergePolicy::Block, ops)?;
    }
}

/// Every block size from 1 KiB to 4 MiB evicts and restores tuples of any size, including
/// tuples larger than a block.
#[test]
fn every_block_size_round_trips() {
    for bs in [
        1usize << 10,
        2 << 10,
        4 << 10,
        16 << 10,
        64 << 10,
        256 << 10,
        1 << 20,
        4 << 20,
    ] {
        let mut h = Harness::new(bs, MergePolicy::Tuple { hole_threshold: 0.5 });
        for k in 0..200 {
            h.apply(&Op::Insert(k, (k % 5) as i32, (k as usize * 37) % 3000))
                .unwrap();
        }
        h.apply(&Op::Evict(10 << 20)).unwrap();
        assert_eq!(
            h.store.table(0).unwrap().live_tuples(),
            0,
            "block size {bs}: everything evicted"
        );
        for k in (0..200).rev() {
            h.apply(&Op::Read(k)).unwrap();
        }
    }
}

/// A corrupted block is an error for the reader, never a wrong answer, and the tuple stays
/// evicted (nothing half-merged).
#[test]
fn corrupted_block_is_an_error() {
    let file = Arc::new(MemFile::default());
    let mut store = PartitionStore::new(0);
    store
        .create_table(Arc::new(schema()), Some(Box::new(LruChain::new())))
        .unwrap();
    let mut cfg = AntiCacheConfig::new("/unused");
    cfg.retrieval = Retrieval::Synchronous;
    let blocks = BlockStore::with_file(file.clone(), cfg.block_size);
    let (mut ac, writes) = anticache(cfg, blocks);
    for k in 0..10 {
        store
            .insert(0, &[Value::Int(k), Value::Int(1), Value::from(body(k, 50))])
            .unwrap();
    }
    store.commit();
    ac.evict(&mut store, 1 << 20, 0).unwrap();
    let (blocks, r) = writes.recv().unwrap();
    ac.on_written(&mut store, &blocks, r).unwrap();
    let t = store.table(0).unwrap();
    let (tomb, at) = t.tombstones().iter().next().unwrap();
    let slot = ac.block_store().slot_size() as u64;
    file.flip_byte(at.block as u64 * slot + 100);
    let needs = ac.resolve(&store, [(0, tomb)], u64::MAX).unwrap();
    let err = ac.fetch_sync(&mut store, &needs).unwrap_err();
    assert_eq!(err.sqlstate(), "XX001", "{err}");
    assert!(
        store.table(0).unwrap().tombstones().get(tomb).is_some(),
        "still evicted"
    );
    store.table(0).unwrap().check_consistency().unwrap();
}

/// A full disk: the eviction's writes fail, every evicted tuple comes back into memory
/// from the write buffers, nothing is lost, and evictions pause.
#[test]
fn a_full_disk_loses_nothing() {
    use permafrost_io::{FaultyFs, Fs};
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let file = fs.block_file(&dir.path().join("blocks"), false).unwrap();
    let mut store = PartitionStore::new(0);
    store
        .create_table(Arc::new(schema()), Some(Box::new(LruChain::new())))
        .unwrap();
    let cfg = AntiCacheConfig::new("/unused");
    let blocks = BlockStore::with_file(file.clone(), cfg.block_size);
    let (mut ac, writes) = anticache(cfg, blocks);
    for k in 0..50 {
        store
            .insert(0, &[Value::Int(k), Value::Int(1), Value::from(body(k, 200))])
            .unwrap();
    }
    store.commit();
    fs.set_space(0);
    let before = ac.block_store().stats.write_calls;
    let s = ac.evict(&mut store, 1 << 20, 0).unwrap();
    assert_eq!(s.tuples, 50);
    let mut errors = 0;
    for _ in before..ac.block_store().stats.write_calls {
        let (blocks, r) = writes.recv().unwrap();
        if let Err(e) = ac.on_written(&mut store, &blocks, r) {
            assert_eq!(e.sqlstate(), "53100", "{e}");
            errors += 1;
        }
    }
    assert!(errors > 0);
    let t = store.table(0).unwrap();
    t.check_consistency().unwrap();
    assert_eq!(t.live_tuples(), 50, "every tuple is back in memory");
    assert_eq!(t.evicted_tuples(), 0);
    assert!(ac.write_error().is_some());
    assert_eq!(
        ac.maybe_evict(&mut store, u64::MAX / 2, 1, 0).unwrap(),
        None,
        "evictions pause"
    );
    assert_eq!(ac.block_store().live_blocks(), 0);
}

/// One round that evicts more blocks than a single vectored write may carry (Linux refuses
/// more than 1024 buffers per call) onto a real file: the round is split into several
/// writes, all succeed, and every tuple reads back.
#[test]
fn a_large_round_on_disk_is_split_into_writes() {
    let dir = tempfile::tempdir().unwrap();
    let file = Arc::new(permafrost_anticache::file::DiskFile::create(&dir.path().join("blocks")).unwrap());
    let mut store = PartitionStore::new(0);
    store
        .create_table(Arc::new(schema()), Some(Box::new(LruChain::new())))
        .unwrap();
    let mut cfg = AntiCacheConfig::new(dir.path());
    cfg.block_size = 1024;
    cfg.retrieval = Retrieval::Synchronous;
    let blocks = BlockStore::with_file(file, cfg.block_size);
    let (mut ac, writes) = anticache(cfg, blocks);
    let n = 3000;
    for k in 0..n {
        store
            .insert(0, &[Value::Int(k), Value::Int(1), Value::from(body(k, 600))])
            .unwrap();
    }
    store.commit();
    let before = ac.block_store().stats.write_calls;
    let s = ac.evict(&mut store, u64::MAX / 2, 0).unwrap();
    assert_eq!(s.tuples, n as u64);
    assert!(s.blocks > 1024, "{} blocks", s.blocks);
    let calls = ac.block_store().stats.write_calls - before;
    assert!(calls > 1, "split into {calls} writes");
    for _ in 0..calls {
        let (blocks, r) = writes.recv().unwrap();
        ac.on_written(&mut store, &blocks, r).unwrap();
    }
    assert_eq!(ac.pending_write_bytes(), 0);
    let t = store.table(0).unwrap();
    let tombs: Vec<_> = t.tombstones().iter().map(|(tomb, _)| (0, tomb)).collect();
    assert_eq!(tombs.len(), n as usize);
    let needs = ac.resolve(&store, tombs, u64::MAX).unwrap();
    ac.fetch_sync(&mut store, &needs).unwrap();
    let t = store.table(0).unwrap();
    t.check_consistency().unwrap();
    assert_eq!(t.live_tuples(), n as u32);
}

/// A scan's reads: adjacent blocks come back from one read, each block's bytes exactly
/// those on disk (including tuples larger than a block: multi-slot blocks), and while a
/// scan holds the partition's blocks, a block merged back keeps its slots (its bytes stay
/// readable) until the scan ends.
#[test]
fn scan_reads_return_each_block_and_held_blocks_keep_their_bytes() {
    let mut h = Harness::new(4 << 10, MergePolicy::Block);
    for k in 0..300 {
        h.apply(&Op::Insert(k, (k % 5) as i32, (k as usize * 53) % 9000))
            .unwrap();
    }
    h.apply(&Op::Evict(10 << 20)).unwrap();
    h.drain_writes();
    let blocks: Vec<u32> = h.ac.block_store().live().map(|(b, _)| b).collect();
    assert!(blocks.len() > 20, "{} blocks", blocks.len());
    let read_all = |ac: &mut AntiCache, blocks: &[u32]| {
        let (tx, rx) = crossbeam_channel::unbounded();
        ac.read_for_scan(
            blocks,
            Arc::new(move |b, r: std::io::Result<permafrost_anticache::BlockBytes>| {
                let _ = tx.send((b, r.map(|bytes| bytes.to_vec())));
            }),
        );
        let mut got = std::collections::BTreeMap::new();
        for _ in blocks {
            let (b, r) = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
            got.insert(b, r.unwrap());
        }
        got
    };
    let got = read_all(&mut h.ac, &blocks);
    for &b in &blocks {
        let (offset, len) = h.ac.block_store().location(b).unwrap();
        let mut disk = vec![0u8; len];
        h.ac.block_store().file().read_at(&mut disk, offset).unwrap();
        assert!(got[&b] == disk, "block {b}: the scan's bytes differ from the file's");
        permafrost_anticache::block::BlockReader::open(&got[&b], b).unwrap();
    }
    // Held by a scan: reading every tuple back (block merge retires each block) and
    // evicting again does not reuse a slot of the held blocks.
    let hold = h.ac.scan_hold();
    hold.enter();
    for k in 0..300 {
        h.apply(&Op::Read(k)).unwrap();
    }
    h.apply(&Op::Evict(10 << 20)).unwrap();
    h.drain_writes();
    let again = read_all(&mut h.ac, &blocks);
    for (b, bytes) in &got {
        assert!(again[b] == *bytes, "held block {b}'s bytes changed");
    }
    hold.leave();
    h.ac.scans_ended();
}
