//! The storage of one partition: its tables and the undo log of the running transaction.
//!
//! Only the partition's executor thread touches a `PartitionStore`, so nothing here is
//! locked. At most one transaction runs at a time; its changes are applied in place and
//! the undo log remembers how to reverse them:
//!
//! * insert: the slot; abort removes the tuple;
//! * update: a copy of the slot's bytes before the first change; abort restores it, commit
//!   frees out-of-line values the tuple no longer references;
//! * delete: the slot, hidden but not freed; abort revives it, commit frees it.
//!
//! Statements get atomicity from savepoints: a statement that fails part-way is rolled back
//! to the savepoint taken before it.

use std::sync::Arc;

use crate::access::AccessTracker;
use crate::error::{Result, StorageError};
use crate::memory::MemoryUsage;
use crate::partitioning::partition_of;
use crate::recent::{KeyRange, Recent, Span};
use crate::schema::{TableId, TableSchema};
use crate::table::{BuiltIndex, EvictedEntries, Table};

/// A primary key ready to be added at one partition ([`PartitionStore::prepare_primary_key`]).
pub struct PrimaryKeyBuild {
    index: BuiltIndex,
    /// The rows whose key belongs to another partition, in slot order.
    elsewhere: Vec<u32>,
}
use permafrost_types::Value;

#[derive(Debug, Clone, Copy)]
enum UndoRecord {
    Insert {
        table: TableId,
        slot: u32,
    },
    Update {
        table: TableId,
        slot: u32,
        image: usize,
    },
    Delete {
        table: TableId,
        slot: u32,
    },
    /// The table's sequence handed out values; `previous` was its last value before.
    Sequence {
        table: TableId,
        previous: i64,
    },
}

/// One change of the running transaction, in a form another copy of the partition in the
/// same state can apply ([`PartitionStore::changes`], [`PartitionStore::apply`]): what a
/// statement run in a forked image of the partition sends back (the executor's forked.rs).
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A tuple inserted with these values (all columns).
    Insert {
        table: TableId,
        values: Vec<Value>,
    },
    /// The tuple at `target` took these values (all columns).
    Update {
        table: TableId,
        target: Target,
        values: Vec<Value>,
    },
    Delete {
        table: TableId,
        target: Target,
    },
    /// The table's sequence's last value handed out.
    Sequence {
        table: TableId,
        last: i64,
    },
}

/// The tuple a [`Change`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The tuple in this slot before the transaction.
    Slot(u32),
    /// The tuple of the transaction's `n`th insert (counting from 0).
    Inserted(u32),
}

/// A position in the undo log to roll back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Savepoint {
    records: usize,
    images: usize,
}

/// How a committing transaction is noted among recent ones ([`Recent`]).
#[derive(Debug, Default, Clone)]
pub struct Placement {
    /// Its stamp, taken once for all the partitions it holds
    /// ([`PartitionStore::take_stamp`]); `None`: one is taken here if it changed rows.
    pub stamp: Option<u64>,
    /// The cut before which it commits, when it takes an earlier place than its stamp.
    pub cut: Option<u64>,
    /// The ranges of partition-column values it read, when they are known (interactive transactions); else its reads count as
    /// reading anything at this partition.
    pub reads: Option<Vec<KeyRange>>,
}

/// Tables and undo log of one partition.
pub struct PartitionStore {
    partition: u32,
    /// Set while the partition is over its memory budget: inserts and updates are refused
    /// with this error until eviction has made room.
    write_gate: Option<StorageError>,
    tables: Vec<Option<Table>>,
    records: Vec<UndoRecord>,
    images: Vec<u8>,
    /// What committed transactions changed lately, when remembered ([`Recent`]).
    recent: Option<Recent>,
    /// The partitions of the database, among which what it keeps once per table is
    /// counted ([`PartitionStore::set_partitions`]).
    partitions: u32,
}

impl PartitionStore {
    pub fn new(partition: u32) -> PartitionStore {
        PartitionStore {
            partition,
            write_gate: None,
            tables: Vec::new(),
            records: Vec::new(),
            images: Vec::new(),
            recent: None,
            partitions: 1,
        }
    }

    /// The database has `n` partitions: each counts a share of what the database keeps
    /// once per table ([`crate::MemoryUsage::schema_bytes`]).
    pub fn set_partitions(&mut self, n: u32) {
        self.partitions = n.max(1);
    }

    /// From now on, remembers what each committed transaction changed, stamped by
    /// `clock` (shared by every partition): [`PartitionStore::unchanged_since`].
    pub fn remember_writes(&mut self, clock: std::sync::Arc<std::sync::atomic::AtomicU64>) {
        self.recent = Some(Recent::new(clock));
    }

    /// Forgets what committed transactions changed (after changes made otherwise, such
    /// as loading a snapshot): reads started before now count as changed.
    pub fn forget_writes(&mut self) {
        if let Some(r) = &mut self.recent {
            r.forget();
        }
    }

    /// Whether no transaction that committed at this partition after the write clock said
    /// `seen` changed a row of `table` whose partition-column value lies between `lo` and
    /// `hi` (inclusive, `None` unbounded); `false` when this cannot be told
    /// ([`Recent::unchanged_since`]).
    pub fn unchanged_since(&mut self, seen: u64, table: TableId, lo: Option<&Value>, hi: Option<&Value>) -> bool {
        self.recent
            .as_mut()
            .is_some_and(|r| r.unchanged_since(seen, table, lo, hi))
    }

    /// [`Recent::checks`]: (unchanged, changed or not known); zeros when not
    /// remembered.
    pub fn unchanged_checks(&self) -> (u64, u64) {
        self.recent.as_ref().map_or((0, 0), Recent::checks)
    }

    pub fn partition(&self) -> u32 {
        self.partition
    }

    /// Creates a table. `tracker` is the access tracker for an evictable table.
    pub fn create_table(&mut self, schema: Arc<TableSchema>, tracker: Option<Box<dyn AccessTracker>>) -> Result<()> {
        schema.validate()?;
        let id = schema.id as usize;
        if self.tables.get(id).is_some_and(Option::is_some) {
            return Err(StorageError::Schema(format!("table id {id} already exists")));
        }
        if self.tables.len() <= id {
            self.tables.resize_with(id + 1, || None);
        }
        self.tables[id] = Some(Table::new(schema, tracker));
        Ok(())
    }

    /// Drops a table and frees its memory. Not allowed inside a transaction that changed
    /// the table.
    pub fn drop_table(&mut self, id: TableId) -> Result<()> {
        if self.records.iter().any(|r| record_table(r) == id) {
            return Err(StorageError::Internal(
                "table dropped inside a transaction that wrote it".into(),
            ));
        }
        match self.tables.get_mut(id as usize) {
            Some(t @ Some(_)) => {
                *t = None;
                Ok(())
            }
            _ => Err(StorageError::Schema(format!("table id {id} does not exist"))),
        }
    }

    /// Whether the open transaction changed table `id`.
    pub fn changed_table(&self, id: TableId) -> bool {
        self.records.iter().any(|r| record_table(r) == id)
    }

    /// Rewrites a table as `schema` defines it (see [`Table::rewritten`]) and returns the
    /// table as it was, for the caller to keep until the change is final (or to put back
    /// with [`PartitionStore::take_table`] and [`PartitionStore::restore_table`]).
    pub fn rewrite_table(
        &mut self,
        schema: Arc<TableSchema>,
        from: &[crate::ColumnFrom],
        tracker: Option<Box<dyn AccessTracker>>,
    ) -> Result<Table> {
        self.replace_table(schema.id, "rewritten", |t| t.rewritten(schema.clone(), from, tracker))
    }

    /// Builds the table of `schema` (the same columns, another partitioning) again from the
    /// serialized tuples `tuples`, its rows at this partition under the new partitioning,
    /// and returns the table as it was (for [`PartitionStore::restore_table`] if the change
    /// fails elsewhere). Its evicted tuples are dropped with it: their blocks are the
    /// anti-cache's to free.
    pub fn repartition_table<'a>(
        &mut self,
        schema: Arc<TableSchema>,
        tuples: impl Iterator<Item = &'a [u8]>,
        tracker: Option<Box<dyn AccessTracker>>,
    ) -> Result<Table> {
        self.replace_table(schema.id, "repartitioned", |t| {
            t.rebuilt_from(schema.clone(), tracker, tuples)
        })
    }

    /// Puts the table `build` makes of table `id` in its place and returns the old one;
    /// refused inside a transaction that wrote the table (`what` names the change).
    fn replace_table(&mut self, id: TableId, what: &str, build: impl FnOnce(&Table) -> Result<Table>) -> Result<Table> {
        if self.changed_table(id) {
            return Err(StorageError::Internal(format!(
                "table {what} inside a transaction that wrote it"
            )));
        }
        let next = build(self.get_mut(id)?)?;
        let old = self.take_table(id)?;
        self.restore_table(next)?;
        Ok(old)
    }

    /// Appends to `out` each tuple of table `id` in memory here, serialized, with the
    /// partition (of `partitions`) its value of `column` (of type `ty`) hashes to, or `None`
    /// for every partition (`column` `None`: the table becomes replicated).
    pub fn tuples_by_partition(
        &self,
        id: TableId,
        column: Option<(usize, &permafrost_types::DataType)>,
        partitions: u32,
        out: &mut Vec<(Option<u32>, Vec<u8>)>,
    ) -> Result<()> {
        let t = self
            .table(id)
            .ok_or_else(|| StorageError::Schema(format!("table id {id} does not exist")))?;
        for slot in 0..t.heap().high_water() {
            if !t.is_visible(slot) {
                continue;
            }
            let mut bytes = Vec::new();
            t.serialize_tuple(slot, &mut bytes);
            let to = column.map(|(c, ty)| partition_of(t.value(slot, c), ty, partitions));
            out.push((to, bytes));
        }
        Ok(())
    }

    /// Takes a table out of the store, as [`PartitionStore::drop_table`] drops it, for
    /// [`PartitionStore::restore_table`] to put back (a schema change undone).
    pub fn take_table(&mut self, id: TableId) -> Result<Table> {
        if self.records.iter().any(|r| record_table(r) == id) {
            return Err(StorageError::Internal(
                "table dropped inside a transaction that wrote it".into(),
            ));
        }
        self.tables
            .get_mut(id as usize)
            .and_then(Option::take)
            .ok_or_else(|| StorageError::Schema(format!("table id {id} does not exist")))
    }

    /// Puts back a table [`PartitionStore::take_table`] took out.
    pub fn restore_table(&mut self, table: Table) -> Result<()> {
        let id = table.schema().id as usize;
        if self.tables.len() <= id {
            self.tables.resize_with(id + 1, || None);
        }
        match &mut self.tables[id] {
            Some(_) => Err(StorageError::Schema(format!("table id {id} already exists"))),
            slot => {
                *slot = Some(table);
                Ok(())
            }
        }
    }

    /// Adds the last index of `schema` to its table (see [`Table::add_index`]), with the
    /// keys of its evicted tuples when they were read.
    pub fn add_index(&mut self, schema: Arc<TableSchema>, evicted: Option<EvictedEntries>) -> Result<()> {
        if self.has_changes() {
            return Err(StorageError::Internal("index created inside a transaction".into()));
        }
        self.get_mut(schema.id)?.add_index(schema, evicted)
    }

    /// Prepares the primary key that is `schema`'s last index, changing nothing: when
    /// `schema` partitions a table that was replicated, the rows whose key belongs to
    /// another of the `partitions` partitions are left out of the index and listed to be
    /// removed. Fails if a key that stays here is NULL or repeated (a repeated key is at the
    /// partition of its key, so checking every partition checks every key).
    ///
    /// `evicted` are the key's entries for the table's evicted tuples, read from their
    /// blocks ([`Table::evicted_entries`]); a table that has evicted tuples and is
    /// partitioned by the key is refused ([`StorageError::EvictedRowsWouldMove`]): its
    /// evicted rows of other partitions could not be removed.
    pub fn prepare_primary_key(
        &self,
        schema: &TableSchema,
        partitions: u32,
        evicted: Option<EvictedEntries>,
    ) -> Result<PrimaryKeyBuild> {
        let t = self
            .table(schema.id)
            .ok_or_else(|| StorageError::Schema(format!("table id {} does not exist", schema.id)))?;
        let mut elsewhere = Vec::new();
        if let (None, Some(c)) = (t.schema().partition_column, schema.partition_column) {
            if t.evicted_tuples() > 0 {
                return Err(StorageError::EvictedRowsWouldMove {
                    table: schema.name.clone(),
                    evicted: t.evicted_tuples(),
                });
            }
            let ty = schema.columns[c].ty;
            for slot in 0..t.heap().high_water() {
                if t.is_visible(slot) && partition_of(t.value(slot, c), &ty, partitions) != self.partition {
                    elsewhere.push(slot);
                }
            }
        }
        let index = t.build_primary_key(schema, &|slot| elsewhere.binary_search(&slot).is_err(), evicted)?;
        Ok(PrimaryKeyBuild { index, elsewhere })
    }

    /// Gives the table of `schema` the primary key [`PartitionStore::prepare_primary_key`]
    /// prepared: removes the rows it listed, then installs the index. Prepare at every
    /// partition first; this does not fail for the key's sake.
    pub fn add_primary_key(&mut self, schema: Arc<TableSchema>, build: PrimaryKeyBuild) -> Result<()> {
        if self.has_changes() {
            return Err(StorageError::Internal("primary key added inside a transaction".into()));
        }
        for slot in build.elsewhere {
            self.delete(schema.id, slot)?;
        }
        self.commit();
        self.get_mut(schema.id)?.install_index(schema, build.index);
        Ok(())
    }

    /// Drops index `dropped` of the table of `schema`.
    pub fn drop_index(&mut self, schema: Arc<TableSchema>, dropped: usize) -> Result<()> {
        self.get_mut(schema.id)?.drop_index(schema, dropped)
    }

    /// Gives the table of `schema` that definition, which changes only names and defaults
    /// (`ALTER TABLE ... RENAME`, `ALTER COLUMN ... SET / DROP DEFAULT`).
    pub fn replace_schema(&mut self, schema: Arc<TableSchema>) -> Result<()> {
        self.get_mut(schema.id)?.replace_schema(schema)
    }

    #[inline]
    pub fn table(&self, id: TableId) -> Option<&Table> {
        self.tables.get(id as usize).and_then(Option::as_ref)
    }

    #[inline]
    pub fn table_mut(&mut self, id: TableId) -> Option<&mut Table> {
        self.tables.get_mut(id as usize).and_then(Option::as_mut)
    }

    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.tables.iter().flatten()
    }

    pub fn tables_mut(&mut self) -> impl Iterator<Item = &mut Table> {
        self.tables.iter_mut().flatten()
    }

    fn get_mut(&mut self, id: TableId) -> Result<&mut Table> {
        self.tables
            .get_mut(id as usize)
            .and_then(Option::as_mut)
            .ok_or_else(|| StorageError::Schema(format!("table id {id} does not exist")))
    }

    /// Refuses (with `error`) or allows (`None`) inserts and updates from now on.
    pub fn set_write_gate(&mut self, error: Option<StorageError>) {
        self.write_gate = error;
    }

    pub fn write_gate(&self) -> Option<&StorageError> {
        self.write_gate.as_ref()
    }

    fn check_gate(&self) -> Result<()> {
        match &self.write_gate {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Inserts a tuple (values converted, defaults applied).
    pub fn insert(&mut self, table: TableId, values: &[Value]) -> Result<u32> {
        self.check_gate()?;
        let slot = self.get_mut(table)?.insert(values)?;
        self.records.push(UndoRecord::Insert { table, slot });
        Ok(slot)
    }

    /// Updates columns of a visible tuple.
    pub fn update(&mut self, table: TableId, slot: u32, changes: &[(usize, Value)]) -> Result<()> {
        self.check_gate()?;
        let images = &mut self.images;
        let t = self
            .tables
            .get_mut(table as usize)
            .and_then(Option::as_mut)
            .ok_or_else(|| StorageError::Schema(format!("table id {table} does not exist")))?;
        if !t.is_visible(slot) {
            return Err(StorageError::Internal(format!(
                "update of a missing tuple in \"{}\"",
                t.schema().name
            )));
        }
        let start = images.len();
        images.extend_from_slice(t.heap().bytes(slot));
        if let Err(e) = t.update(slot, changes, &images[start..]) {
            images.truncate(start);
            return Err(e);
        }
        self.records.push(UndoRecord::Update {
            table,
            slot,
            image: start,
        });
        Ok(())
    }

    /// Deletes a visible tuple.
    pub fn delete(&mut self, table: TableId, slot: u32) -> Result<()> {
        let t = self.get_mut(table)?;
        if !t.is_visible(slot) {
            return Err(StorageError::Internal(format!(
                "delete of a missing tuple in \"{}\"",
                t.schema().name
            )));
        }
        t.mark_deleted(slot);
        self.records.push(UndoRecord::Delete { table, slot });
        Ok(())
    }

    /// Whether the running transaction has changed anything.
    pub fn has_changes(&self) -> bool {
        !self.records.is_empty()
    }

    pub fn savepoint(&self) -> Savepoint {
        Savepoint {
            records: self.records.len(),
            images: self.images.len(),
        }
    }

    /// Makes the running transaction's changes permanent (a transaction whose reads are
    /// not described, at its own stamp: [`PartitionStore::commit_placed`]).
    pub fn commit(&mut self) {
        self.commit_placed(&Placement::default());
    }

    /// A stamp for a transaction that changed rows, committing now: one for all the
    /// partitions it holds ([`Placement::stamp`]); `None` when changes are not remembered.
    pub fn take_stamp(&self) -> Option<u64> {
        self.recent.as_ref().map(Recent::stamp)
    }

    /// Makes the running transaction's changes permanent, noting them and its reads as
    /// `placement` says ([`Recent`]).
    pub fn commit_placed(&mut self, placement: &Placement) {
        self.remember(placement);
        for i in 0..self.records.len() {
            match self.records[i] {
                UndoRecord::Insert { .. } | UndoRecord::Sequence { .. } => {}
                UndoRecord::Update { table, slot, image } => {
                    let Some(t) = self.tables.get_mut(table as usize).and_then(Option::as_mut) else {
                        continue;
                    };
                    let len = t.heap().slot_size();
                    t.release_image(slot, &self.images[image..image + len]);
                }
                UndoRecord::Delete { table, slot } => {
                    if let Some(t) = self.tables.get_mut(table as usize).and_then(Option::as_mut) {
                        t.free_tuple(slot);
                    }
                }
            }
        }
        self.clear_log();
    }

    /// Notes the partition-column value of every row the committing transaction changed
    /// ([`Recent`]), before deleted tuples and old images are freed, and what it read.
    fn remember(&mut self, placement: &Placement) {
        // Out while the changes are read (no list of them is built).
        let Some(mut recent) = self.recent.take() else { return };
        let at = match placement.stamp {
            Some(stamp) => stamp,
            None if self.has_changes() => recent.stamp(),
            None => recent.now(),
        };
        let span = Span {
            from: placement.cut.map_or(at, |cut| (cut + 1).min(at)),
            to: at,
        };
        self.each_changed_key(|table, key| recent.push(span, table, key));
        match &placement.reads {
            Some(reads) => {
                for r in reads {
                    recent.push_read(at, r.clone());
                }
            }
            None => recent.mark_opaque(at),
        }
        self.recent = Some(recent);
    }

    /// The partition-column value of every row the running transaction inserted, updated
    /// or deleted (before and after an update that changed it), with its table; `None`
    /// for a table without a partition column.
    pub fn changed_keys(&self) -> Vec<(TableId, Option<Value>)> {
        let mut out = Vec::new();
        self.each_changed_key(|table, key| out.push((table, key)));
        out
    }

    fn each_changed_key(&self, mut f: impl FnMut(TableId, Option<Value>)) {
        for rec in &self.records {
            let (table, slot, image) = match *rec {
                UndoRecord::Sequence { .. } => continue,
                UndoRecord::Insert { table, slot } | UndoRecord::Delete { table, slot } => (table, slot, None),
                UndoRecord::Update { table, slot, image } => (table, slot, Some(image)),
            };
            let Some(t) = self.tables.get(table as usize).and_then(Option::as_ref) else {
                f(table, None);
                continue;
            };
            let Some(pc) = t.schema().partition_column else {
                f(table, None);
                continue;
            };
            let now = t.value(slot, pc).to_owned();
            if let Some(image) = image {
                let before = t
                    .image_row(&self.images[image..image + t.heap().slot_size()])
                    .get(pc)
                    .to_owned();
                if before != now {
                    f(table, Some(before));
                }
            }
            f(table, Some(now));
        }
    }

    /// Notes that a reader whose reads are not described (one moved off the partition)
    /// read it now.
    pub fn mark_read(&mut self) {
        if let Some(r) = &mut self.recent {
            let now = r.now();
            r.mark_opaque(now);
        }
    }

    /// What transactions committed here lately changed and read, when remembered.
    pub fn recent(&self) -> Option<&Recent> {
        self.recent.as_ref()
    }

    /// [`Recent::count_place`], when remembered.
    pub fn count_place(&mut self, placed: bool) {
        if let Some(r) = &mut self.recent {
            r.count_place(placed);
        }
    }

    /// [`Recent::places`]: (placed, refused); zeros when not remembered.
    pub fn places(&self) -> (u64, u64) {
        self.recent.as_ref().map_or((0, 0), Recent::places)
    }

    /// The next value of `table`'s sequence (SERIAL, BIGSERIAL, identity columns) at this
    /// partition: the smallest value above the last one handed out that `accept` admits
    /// (a partitioned table's partitions each take the values that hash to them, so that
    /// values are unique across partitions without coordination). Like every other change,
    /// it is undone if the transaction rolls back, so that a replay of the committed
    /// transactions hands out the same values.
    pub fn next_sequence(&mut self, table: TableId, accept: impl Fn(i64) -> bool) -> Result<i64> {
        let t = self.sequence_table(table)?;
        let mut v = t.sequence();
        loop {
            v = v.checked_add(1).ok_or_else(|| StorageError::SequenceExhausted {
                table: t.schema().name.clone(),
            })?;
            if accept(v) {
                break;
            }
        }
        self.note_sequence(table, v)?;
        Ok(v)
    }

    /// Notes that the running transaction took value `v` of `table`'s sequence from the
    /// database's counter (the executor's sequences.rs): the table's sequence becomes at
    /// least `v`, so that snapshots keep the highest value handed out. Undone with the
    /// transaction, as [`PartitionStore::next_sequence`] is.
    pub fn note_sequence(&mut self, table: TableId, v: i64) -> Result<()> {
        let t = self.sequence_table(table)?;
        let previous = t.sequence();
        if v > previous {
            t.set_sequence(v);
            self.records.push(UndoRecord::Sequence { table, previous });
        }
        Ok(())
    }

    fn sequence_table(&mut self, table: TableId) -> Result<&mut Table> {
        self.tables
            .get_mut(table as usize)
            .and_then(Option::as_mut)
            .ok_or_else(|| StorageError::Internal(format!("no table {table} at partition {}", self.partition)))
    }

    /// The running transaction's changes, in the order it made them, each with the values
    /// it gave (read from the undo images of later changes to the same tuple, or from the
    /// tuple now). Applied in order to a copy of the partition as it was when the
    /// transaction began, they make the same tuples ([`PartitionStore::apply`]).
    pub fn changes(&self) -> Result<Vec<Change>> {
        use std::collections::HashMap;
        // After-image sources, found walking back: the undo image of the next update of the
        // same tuple, else the tuple as it is now; for a sequence, the next record's
        // previous value, else its value now.
        let mut later_image: HashMap<(TableId, u32), usize> = HashMap::new();
        let mut later_seq: HashMap<TableId, i64> = HashMap::new();
        let mut after: Vec<(Option<usize>, Option<i64>)> = vec![(None, None); self.records.len()];
        for (i, rec) in self.records.iter().enumerate().rev() {
            match *rec {
                UndoRecord::Insert { table, slot } | UndoRecord::Delete { table, slot } => {
                    after[i].0 = later_image.get(&(table, slot)).copied();
                }
                UndoRecord::Update { table, slot, image } => {
                    after[i].0 = later_image.insert((table, slot), image);
                }
                UndoRecord::Sequence { table, previous } => {
                    after[i].1 = later_seq.insert(table, previous);
                }
            }
        }
        let mut inserted: HashMap<(TableId, u32), u32> = HashMap::new();
        let mut out = Vec::with_capacity(self.records.len());
        for (i, rec) in self.records.iter().enumerate() {
            let table_of = |t: TableId| {
                self.table(t)
                    .ok_or_else(|| StorageError::Internal(format!("no table {t}")))
            };
            let values = |t: &Table, slot: u32| -> Vec<Value> {
                match after[i].0 {
                    Some(image) => t
                        .image_row(&self.images[image..image + t.heap().slot_size()])
                        .to_values(),
                    None => t.row(slot).to_values(),
                }
            };
            let target = |table: TableId, slot: u32| match inserted.get(&(table, slot)) {
                Some(&n) => Target::Inserted(n),
                None => Target::Slot(slot),
            };
            out.push(match *rec {
                UndoRecord::Insert { table, slot } => {
                    let n = inserted.len() as u32;
                    inserted.insert((table, slot), n);
                    Change::Insert {
                        table,
                        values: values(table_of(table)?, slot),
                    }
                }
                UndoRecord::Update { table, slot, .. } => Change::Update {
                    table,
                    target: target(table, slot),
                    values: values(table_of(table)?, slot),
                },
                UndoRecord::Delete { table, slot } => Change::Delete {
                    table,
                    target: target(table, slot),
                },
                UndoRecord::Sequence { table, .. } => Change::Sequence {
                    table,
                    last: after[i].1.unwrap_or(table_of(table)?.sequence()),
                },
            });
        }
        Ok(out)
    }

    /// Makes `changes` ([`PartitionStore::changes`] of a copy of this partition in the state
    /// this one is in) in the running transaction, in order, each undone on rollback.
    pub fn apply(&mut self, changes: &[Change]) -> Result<()> {
        let mut inserted = Vec::new();
        let resolve = |inserted: &[u32], t: Target| match t {
            Target::Slot(s) => Ok(s),
            Target::Inserted(n) => inserted
                .get(n as usize)
                .copied()
                .ok_or_else(|| StorageError::Internal(format!("a change names insert {n}, which is not there"))),
        };
        for c in changes {
            match c {
                Change::Insert { table, values } => inserted.push(self.insert(*table, values)?),
                Change::Update { table, target, values } => {
                    let slot = resolve(&inserted, *target)?;
                    let all: Vec<(usize, Value)> = values.iter().cloned().enumerate().collect();
                    self.update(*table, slot, &all)?;
                }
                Change::Delete { table, target } => self.delete(*table, resolve(&inserted, *target)?)?,
                Change::Sequence { table, last } => {
                    let t = self.get_mut(*table)?;
                    let previous = t.sequence();
                    t.set_sequence(*last);
                    self.records.push(UndoRecord::Sequence {
                        table: *table,
                        previous,
                    });
                }
            }
        }
        Ok(())
    }

    /// Reverses every change of the running transaction.
    pub fn rollback(&mut self) {
        self.rollback_to(Savepoint { records: 0, images: 0 });
        self.clear_log();
    }

    /// Reverses the changes made since `sp`.
    pub fn rollback_to(&mut self, sp: Savepoint) {
        while self.records.len() > sp.records {
            let rec = self.records.pop().expect("checked non-empty");
            let Some(t) = self
                .tables
                .get_mut(record_table(&rec) as usize)
                .and_then(Option::as_mut)
            else {
                continue;
            };
            match rec {
                UndoRecord::Insert { slot, .. } => t.remove_inserted(slot),
                UndoRecord::Update { slot, image, .. } => {
                    let len = t.heap().slot_size();
                    t.restore(slot, &self.images[image..image + len]);
                }
                UndoRecord::Delete { slot, .. } => t.unmark_deleted(slot),
                UndoRecord::Sequence { previous, .. } => t.set_sequence(previous),
            }
        }
        self.images.truncate(sp.images);
    }

    fn clear_log(&mut self) {
        self.records.clear();
        self.images.clear();
        // A transaction that wrote a lot should not keep its buffers forever.
        if self.images.capacity() > 4 << 20 {
            self.images.shrink_to(64 << 10);
        }
        if self.records.capacity() > 64 << 10 {
            self.records.shrink_to(1024);
        }
    }

    /// Compacts every table's heap (see [`Table::compact`]); returns the bytes released.
    /// Must run between transactions.
    pub fn compact(&mut self) -> usize {
        debug_assert!(self.records.is_empty(), "compaction inside a transaction");
        self.tables_mut().map(|t| t.compact()).sum()
    }

    pub fn memory_usage(&self) -> MemoryUsage {
        let mut m = MemoryUsage::default();
        for t in self.tables() {
            m += t.memory_usage();
            m.schema_bytes += crate::schema::TABLE_BYTES_PER_PARTITION + t.schema_bytes() / u64::from(self.partitions);
        }
        m.buffer_bytes += (self.images.capacity()
            + self.records.capacity() * std::mem::size_of::<UndoRecord>()
            + self.recent.as_ref().map_or(0, Recent::memory)) as u64;
        m
    }
}

fn record_table(r: &UndoRecord) -> TableId {
    match *r {
        UndoRecord::Insert { table, .. }
        | UndoRecord::Update { table, .. }
        | UndoRecord::Delete { table, .. }
        | UndoRecord::Sequence { table, .. } => table,
    }
}
