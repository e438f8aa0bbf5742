//! Hash joins: a relation that no index reaches by the equalities joining it to the
//! relations before it (`Access::Hash`) is read once per walk into a hash table of its
//! visible tuples by the columns those equalities name, and each entry of its level looks
//! its key up there instead of scanning the relation again.
//!
//! Keys are encoded as an index encodes them (`KeyEncoder`): a value from the other side
//! is converted exactly to the column's type first (`key_value`), so a tuple is found
//! exactly when an index on those columns would find it. The table holds only the tuples
//! that pass the level's predicates reading its relation alone (checked once, as it is
//! built); the level's other filters, the join's equalities among them, are checked on
//! each tuple found. A relation whose table would take more than `work_mem` is not
//! hashed: its level scans it at each entry, checking every filter, as without the table.
//! A subquery in FROM is hashed the same way, over the rows computed for it
//! ([`RowsTable`], by values: its rows may hold any kind of number in a column).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::rc::Rc;

use permafrost_storage::index::{IndexKey, KeyEncoder};
use permafrost_storage::{Table, TupleRef};
use permafrost_types::{Value, ValueRef};

use crate::error::Result;
use crate::expr::{ColumnSource, Cx, Expr};
use crate::rows::{RowRef, Rows};

use super::evicted_rows::EvictedRows;
use super::keys::key_value;

/// A level's hash table, by the level.
pub(super) enum Hashed {
    /// The level was not entered yet.
    Unbuilt,
    /// The relation's visible tuples (held partition, slot) by key.
    Built(HashTable),
    /// Past `work_mem`: the level scans its relation instead. With the bytes the whole
    /// table was estimated to need.
    Scanned { needed: u64 },
}

/// A relation whose hash table does not fit in `work_mem`, hashed in passes: the walk runs
/// `of` times, and in pass `pass` the level's table holds the tuples whose key falls in
/// that pass ([`pass_of`]); an entry whose key falls in another pass is skipped there
/// (its matches, having its key, are all in its own pass; one without a key, which
/// matches nothing, is taken in pass 0). So each result row comes from exactly one pass,
/// and a null-extended relation is extended in the pass of its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Passes {
    pub(super) level: usize,
    pub(super) of: u64,
    pub(super) pass: u64,
}

/// The pass of `of` that key `key` falls in.
pub(super) fn pass_of(key: &IndexKey, of: u64) -> u64 {
    use std::hash::{Hash, Hasher};
    // A fixed hasher: the same key falls in the same pass in every walk.
    let mut h = std::hash::DefaultHasher::new();
    key.hash(&mut h);
    h.finish() % of.max(1)
}

/// How many passes a table estimated at `needed` bytes takes, each within half of
/// `work_mem` (keys are not spread evenly), at most 4,096.
pub(super) fn passes_for(needed: u64, work_mem: usize) -> u64 {
    needed.div_ceil((work_mem as u64 / 2).max(1)).clamp(2, 4096)
}

/// The lookup key `keys` give over the tuples bound before, converted to the column types
/// `enc` encodes: `None` if one of them is NULL or cannot equal any value of its column.
pub(super) fn probe_key(
    enc: &KeyEncoder,
    keys: &[Expr],
    b: &dyn ColumnSource,
    cx: &Cx<'_>,
) -> Result<Option<IndexKey>> {
    let mut vals = Vec::with_capacity(keys.len());
    for (e, ty) in keys.iter().zip(enc.types()) {
        match key_value(e.eval(b, cx)?.as_ref(), ty) {
            Some(k) => vals.push(k.into_owned()),
            None => return Ok(None),
        }
    }
    Ok(enc.encode(vals.iter().map(Value::as_ref)))
}

pub(super) struct HashTable {
    enc: KeyEncoder,
    tuples: HashMap<IndexKey, Vec<(u32, u32)>>,
}

impl HashTable {
    /// The lookup key `keys` give over the tuples bound before ([`probe_key`]).
    pub(super) fn key(&self, keys: &[Expr], b: &dyn ColumnSource, cx: &Cx<'_>) -> Result<Option<IndexKey>> {
        probe_key(&self.enc, keys, b, cx)
    }

    /// How many tuples it holds.
    pub(super) fn len(&self) -> usize {
        self.tuples.values().map(Vec::len).sum()
    }

    /// The tuples whose key is `key`.
    pub(super) fn matches(&self, key: &IndexKey) -> &[(u32, u32)] {
        self.tuples.get(key).map_or(&[], Vec::as_slice)
    }
}

/// Whether a tuple goes into a hash table being built: its held partition, table, slot (or
/// evicted tuple's reference) and, for an evicted tuple read where it lies, its values.
pub(super) type Keep<'f, 't> = dyn FnMut(usize, &'t Table, u32, Option<&Rc<[Value]>>) -> Result<bool> + 'f;

/// What one tuple of the table takes besides its key's bytes on the heap, at most roughly:
/// its key, the vector it lies in and its share of the map's spare room.
const ENTRY_BYTES: usize = 80;

/// Builds the hash table by columns `cols` (encoded by `enc`) of the visible tuples of
/// `tables` (each with its held partition) that `keep` keeps and whose key falls in pass
/// `pass` (`(pass, of)`; all of them when `None`), calling `tick` for every tuple visited
/// (to be stopped). With `read` (where evicted tuples are read, and each table's
/// partition), the tables' evicted tuples too, by their references (evicted bit set):
/// `keep` gets their values. [`Hashed::Scanned`] past `work_mem`.
#[allow(clippy::too_many_arguments)]
pub(super) fn build<'t>(
    enc: KeyEncoder,
    cols: &[usize],
    tables: &[(usize, &'t Table)],
    work_mem: usize,
    pass: Option<(u64, u64)>,
    read: Option<(&dyn EvictedRows, &[u32])>,
    keep: &mut Keep<'_, 't>,
    tick: &mut dyn FnMut() -> Result<()>,
) -> Result<Hashed> {
    let mut table_of = Entries {
        tuples: HashMap::new(),
        bytes: 0,
        work_mem,
        pass,
    };
    let mut visited = 0u64;
    let mut vals: Vec<ValueRef<'_>> = Vec::with_capacity(cols.len());
    for (i, &(li, table)) in tables.iter().enumerate() {
        let mut err = None;
        let _ = table.scan(|slot| {
            let r = (|| -> Result<bool> {
                tick()?;
                if !table.is_visible(slot) {
                    return Ok(false);
                }
                visited += 1;
                keep(li, table, slot, None)
            })();
            match r {
                Ok(true) => {}
                Ok(false) => return ControlFlow::Continue(()),
                Err(e) => {
                    err = Some(e);
                    return ControlFlow::Break(());
                }
            }
            let row = table.row(slot);
            vals.clear();
            vals.extend(cols.iter().map(|&c| row.get(c)));
            match table_of.add(enc.encode(vals.iter().copied()), li, slot) {
                true => ControlFlow::Continue(()),
                false => ControlFlow::Break(()),
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        if let Some((rows, partitions)) = read
            && table_of.bytes <= work_mem
        {
            for (tomb, _) in table.tombstones().iter() {
                tick()?;
                visited += 1;
                let values = rows.row(partitions[i], table, tomb)?;
                let r = TupleRef::tombstone(tomb).0;
                if !keep(li, table, r, Some(&values))? {
                    continue;
                }
                let key = enc.encode(
                    cols.iter()
                        .map(|&c| values.get(c).map_or(ValueRef::Null, Value::as_ref)),
                );
                if !table_of.add(key, li, r) {
                    break;
                }
            }
        }
        if table_of.bytes > work_mem {
            // What every tuple would take, at the rate of those visited.
            let all: u64 = tables
                .iter()
                .map(|(_, t)| u64::from(t.live_tuples()) + read.map_or(0, |_| t.tombstones().len() as u64))
                .sum();
            let needed = (table_of.bytes as u64).saturating_mul(all.max(1)) / visited.max(1);
            return Ok(Hashed::Scanned { needed });
        }
    }
    Ok(Hashed::Built(HashTable {
        enc,
        tuples: table_of.tuples,
    }))
}

/// The entries of a hash table being built, and the bytes they take.
struct Entries {
    tuples: HashMap<IndexKey, Vec<(u32, u32)>>,
    bytes: usize,
    work_mem: usize,
    pass: Option<(u64, u64)>,
}

impl Entries {
    /// Adds tuple `r` (at held partition `li`) by `key` (none: a NULL in it, which equals
    /// nothing), if it falls in the pass; false once past `work_mem`.
    fn add(&mut self, key: Option<IndexKey>, li: usize, r: u32) -> bool {
        let Some(key) = key else {
            return true;
        };
        if self.pass.is_some_and(|(pass, of)| pass_of(&key, of) != pass) {
            return true;
        }
        self.bytes += ENTRY_BYTES
            + match &key {
                IndexKey::Int(_) => 0,
                IndexKey::Bytes(k) => k.heap_bytes(),
            };
        if self.bytes > self.work_mem {
            return false;
        }
        self.tuples.entry(key).or_default().push((li as u32, r));
        true
    }
}

/// The rows of a subquery in FROM by the values of some of their columns, for a level
/// reached by `Access::Hash`: keyed as grouping keys values (`Value`'s equality: numbers
/// of different kinds alike when numerically equal), which an equality that holds never
/// tells apart; the level's filters are checked on each row found.
pub(super) struct RowsTable {
    rows: HashMap<Vec<Value>, Vec<u32>>,
}

impl RowsTable {
    /// The table of the rows of `rows` that `keep` keeps by columns `cols`; `None` past
    /// `work_mem`.
    pub(super) fn build<'r>(
        rows: &'r Rows,
        cols: &[usize],
        work_mem: usize,
        keep: &mut dyn FnMut(RowRef<'r>) -> Result<bool>,
    ) -> Result<Option<RowsTable>> {
        let mut table: HashMap<Vec<Value>, Vec<u32>> = HashMap::new();
        let mut bytes = 0usize;
        'rows: for (i, row) in rows.iter().enumerate() {
            if !keep(row)? {
                continue;
            }
            let mut key = Vec::with_capacity(cols.len());
            for &c in cols {
                let v = row.get(c);
                // A NULL in the key equals nothing.
                if v.is_null() {
                    continue 'rows;
                }
                bytes += VALUE_BYTES
                    + match v {
                        ValueRef::Text(s) => s.len(),
                        ValueRef::Bytes(b) => b.len(),
                        _ => 0,
                    };
                key.push(v.to_owned());
            }
            bytes += ENTRY_BYTES;
            if bytes > work_mem {
                return Ok(None);
            }
            table.entry(key).or_default().push(i as u32);
        }
        Ok(Some(RowsTable { rows: table }))
    }

    /// How many rows it holds.
    pub(super) fn len(&self) -> usize {
        self.rows.values().map(Vec::len).sum()
    }

    /// The rows whose key equals `keys` evaluated over the tuples bound before: none if
    /// one of them is NULL.
    pub(super) fn matches(&self, keys: &[Expr], b: &dyn ColumnSource, cx: &Cx<'_>) -> Result<&[u32]> {
        let mut vals = Vec::with_capacity(keys.len());
        for e in keys {
            let v = e.eval(b, cx)?;
            if v.as_ref().is_null() {
                return Ok(&[]);
            }
            vals.push(v.into_value());
        }
        Ok(self.rows.get(&vals).map_or(&[], Vec::as_slice))
    }
}

/// What one value of a [`RowsTable`]'s key takes besides its text, roughly.
const VALUE_BYTES: usize = 40;
