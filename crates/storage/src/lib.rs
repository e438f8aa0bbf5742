//! Permafrost storage: everything a partition keeps in memory.
//!
//! A partition's [`PartitionStore`] holds its [`Table`]s; a table holds its tuples in a
//! chunked [`heap::Heap`] of fixed-size slots (with the anti-cache's tuple header at the
//! front of each), long values in a [`varheap::VarHeap`], its indexes
//! ([`index::IndexStore`]), the tombstones of its evicted tuples
//! ([`tombstone::Tombstones`]) and, if evictable, an [`access::AccessTracker`] (the LRU
//! chain) that names the coldest tuples. Every component reports its memory
//! ([`MemoryUsage`]) so the memory budget can be enforced.
//!
//! Nothing in this crate is thread-safe by design: one partition thread owns each store
//! (inside a partition nothing is locked or latched: one thread owns it).

pub mod access;
pub mod alloc;
pub(crate) mod chunk;
pub mod error;
pub mod heap;
pub mod index;
pub mod layout;
pub mod memory;
pub mod namespace;
pub mod partitioning;
pub mod recent;
pub mod schema;
pub mod store;
pub mod table;
pub mod tombstone;
pub mod varheap;

pub use access::{AccessTracker, LruChain};
pub use error::{Result, StorageError};
pub use index::{IndexKey, KeyBound, TupleRef};
pub use memory::MemoryUsage;
pub use recent::{KeyRange, Recent, Span, Unknown};
pub use schema::{
    CheckDef, Column, ColumnDefault, ColumnFrom, FkAction, ForeignKey, IndexDef, IndexKind, TableId, TableSchema,
};
pub use store::{Change, PartitionStore, Placement, Savepoint, Target};
pub use table::{DetachedRow, EvictedEntries, Row, Table};
pub use tombstone::Tombstone;
