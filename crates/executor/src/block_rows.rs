//! Evicted tuples read where they lie, for a forked reader (forked.rs).
//!
//! A read-only statement that reaches more evicted data than its partitions may bring back
//! at once (or keeps reaching evicted data) runs in a forked image of the partitions
//! (`forked::move_off_reading`). Merging what it reached into that image made the image
//! grow by several times the tuples' size (heap, index entries moved out of their compact
//! stage, the tombstones, and a copy of every page touched), so a join over a table four
//! times the budget was killed by the kernel. Instead the image reads each evicted tuple
//! it meets from its block ([`BlockRows`], given to the statement as `Env::evicted_rows`):
//! the walk binds the tuple's values and goes on, and nothing is merged. The blocks are
//! those of the image's tombstones: each partition's [`BlockView`] is taken while it is
//! held, and the reader holds its partitions' scan holds until it ends, so no slot is
//! reused meanwhile (blocks are never rewritten in place; the child keeps the files'
//! descriptors).
//!
//! The blocks read are kept, checked, in a cache of [`CACHE_BYTES`] (a join's inner side
//! meets the tuples of one block one after the other); each tuple is decoded when it is
//! met.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::rc::Rc;

use permafrost_anticache::block::BlockReader;
use permafrost_anticache::view::BlockView;
use permafrost_sql::SqlError;
use permafrost_sql::exec::EvictedRows;
use permafrost_storage::{DetachedRow, StorageError, Table, TableId};
use permafrost_types::Value;

/// Bytes of blocks a forked reader keeps after reading them (its limit counts them).
const CACHE_BYTES: usize = 4 << 20;

/// The evicted tuples of the partitions of an image, read from their blocks.
pub(crate) struct BlockRows {
    /// By partition, its blocks as they were when the image was made.
    views: Vec<(u32, BlockView)>,
    cache: RefCell<Cache>,
    /// Tuples read so far.
    read: std::cell::Cell<u64>,
}

#[derive(Default)]
struct Cache {
    /// By (partition, block).
    blocks: HashMap<(u32, u32), Rc<ReadBlock>>,
    /// The cached blocks, oldest first.
    order: VecDeque<(u32, u32)>,
    bytes: usize,
    /// A decoder per table.
    rows: HashMap<TableId, DetachedRow>,
}

/// A block read and checked: its bytes and where each entry lies in them, by offset.
struct ReadBlock {
    bytes: Vec<u8>,
    table: TableId,
    entries: Vec<(u32, Range<usize>)>,
}

impl BlockRows {
    pub(crate) fn new(views: Vec<(u32, BlockView)>) -> BlockRows {
        BlockRows {
            views,
            cache: RefCell::default(),
            read: std::cell::Cell::new(0),
        }
    }

    /// The evicted tuples read so far (each time one was met).
    pub(crate) fn tuples_read(&self) -> u64 {
        self.read.get()
    }

    /// Block `block`, from the cache or read and checked now.
    fn block(&self, partition: u32, block: u32) -> Result<Rc<ReadBlock>, SqlError> {
        if let Some(b) = self.cache.borrow().blocks.get(&(partition, block)) {
            return Ok(b.clone());
        }
        let corrupt = |what: String| {
            SqlError::Storage(StorageError::Corrupt(format!(
                "block {block} of partition {partition}: {what}"
            )))
        };
        let view = self
            .views
            .iter()
            .find(|(p, _)| *p == partition)
            .map(|(_, v)| v)
            .ok_or_else(|| corrupt("the reader has no view of the partition's blocks".into()))?;
        let bytes = view.read_block(block).map_err(|e| {
            SqlError::Storage(StorageError::Internal(format!(
                "could not read block {block} of partition {partition}: {e}"
            )))
        })?;
        let reader = BlockReader::open(&bytes, block).map_err(|e| corrupt(e.to_string()))?;
        let start = bytes.as_ptr() as usize;
        let mut entries = Vec::with_capacity(reader.header.tuples as usize);
        for e in reader.entries() {
            let (offset, _, body) = e.map_err(|e| corrupt(e.to_string()))?;
            let at = body.as_ptr() as usize - start;
            entries.push((offset, at..at + body.len()));
        }
        entries.sort_unstable_by_key(|e| e.0);
        let read = Rc::new(ReadBlock {
            table: reader.header.table,
            entries,
            bytes,
        });
        let mut cache = self.cache.borrow_mut();
        while cache.bytes + read.bytes.len() > CACHE_BYTES
            && let Some(old) = cache.order.pop_front()
        {
            if let Some(b) = cache.blocks.remove(&old) {
                cache.bytes -= b.bytes.len();
            }
        }
        cache.bytes += read.bytes.len();
        cache.order.push_back((partition, block));
        cache.blocks.insert((partition, block), read.clone());
        Ok(read)
    }
}

impl EvictedRows for BlockRows {
    fn row(&self, partition: u32, table: &Table, tombstone: u32) -> Result<Rc<[Value]>, SqlError> {
        let id = table.schema().id;
        let corrupt = |what: String| SqlError::Storage(StorageError::Corrupt(format!("partition {partition}: {what}")));
        let t = table
            .tombstones()
            .get(tombstone)
            .ok_or_else(|| corrupt(format!("table {id} has no evicted tuple {tombstone}")))?;
        let block = self.block(partition, t.block)?;
        if block.table != id {
            return Err(corrupt(format!(
                "block {} holds table {} where table {id} was expected",
                t.block, block.table
            )));
        }
        let range = block
            .entries
            .binary_search_by_key(&t.offset, |e| e.0)
            .map(|i| block.entries[i].1.clone())
            .map_err(|_| corrupt(format!("block {} has no entry {}", t.block, t.offset)))?;
        let mut cache = self.cache.borrow_mut();
        let row = cache
            .rows
            .entry(id)
            .or_insert_with(|| DetachedRow::new(table.layout().clone()));
        let values = row
            .load(&block.bytes[range])
            .map_err(|e| corrupt(format!("block {}, entry {}: {e}", t.block, t.offset)))?
            .to_values();
        self.read.set(self.read.get() + 1);
        Ok(values.into())
    }
}
