//! Memory accounting.
//!
//! Each component reports what it has taken from the OS (`*_bytes`: mapped chunks, hash
//! table allocations, vectors' capacity) and, where it differs, what live data occupies
//! (`*_used_bytes`). The memory budget (it covers everything the database allocates) is
//! enforced on the taken figures; the used figures show how much reuse headroom the free
//! lists hold.

use std::ops::AddAssign;

/// Bytes held by storage components.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Tuple slots mapped (chunks).
    pub tuple_bytes: u64,
    /// Tuple slots holding live tuples.
    pub tuple_used_bytes: u64,
    /// Out-of-line value storage mapped.
    pub string_bytes: u64,
    /// Out-of-line value slots holding live values.
    pub string_used_bytes: u64,
    /// Indexes' dynamic stages (the entries of tuples in memory), keys included.
    pub index_bytes: u64,
    /// Indexes' compact stages (the entries of evicted tuples), keys included.
    pub compact_index_bytes: u64,
    /// Tombstones of evicted tuples.
    pub tombstone_bytes: u64,
    /// Transaction buffers (undo log).
    pub buffer_bytes: u64,
    /// What the schema takes: each table's fixed structures at this partition, and the
    /// partition's share of what the database keeps per table elsewhere (the catalog, the
    /// plans, the system catalogs' copy): [`crate::schema::TableSchema::memory_bytes`].
    pub schema_bytes: u64,
}

impl MemoryUsage {
    /// Everything taken from the OS.
    pub fn total(&self) -> u64 {
        self.tuple_bytes
            + self.string_bytes
            + self.index_bytes
            + self.compact_index_bytes
            + self.tombstone_bytes
            + self.buffer_bytes
            + self.schema_bytes
    }

    /// What live data occupies: like [`MemoryUsage::total`] but counting only the used
    /// part of tuple and string storage (free slots are reused before memory grows). This
    /// is what eviction keeps under its threshold.
    pub fn live(&self) -> u64 {
        self.tuple_used_bytes
            + self.string_used_bytes
            + self.index_bytes
            + self.compact_index_bytes
            + self.tombstone_bytes
            + self.buffer_bytes
            + self.schema_bytes
    }
}

impl AddAssign for MemoryUsage {
    fn add_assign(&mut self, o: MemoryUsage) {
        self.tuple_bytes += o.tuple_bytes;
        self.tuple_used_bytes += o.tuple_used_bytes;
        self.string_bytes += o.string_bytes;
        self.string_used_bytes += o.string_used_bytes;
        self.index_bytes += o.index_bytes;
        self.compact_index_bytes += o.compact_index_bytes;
        self.tombstone_bytes += o.tombstone_bytes;
        self.buffer_bytes += o.buffer_bytes;
        self.schema_bytes += o.schema_bytes;
    }
}
