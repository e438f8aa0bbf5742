//! `INSERT ... ON CONFLICT target DO UPDATE`: a proposed row whose key an arbiter index
//! holds updates the row holding it instead of being inserted; and the new values an
//! assignment list gives a row, which UPDATE computes the same way.
//!
//! The arbiters are looked up before the row is written, as PostgreSQL's speculative
//! insertion does, so a conflict on an arbiter is an update whatever the other indexes
//! hold, and a conflict on another unique index is still 23505. A unique index holding the
//! partition column finds the row in conflict at the partition the proposed row belongs
//! to; one without it (global: [`TableSchema::is_global_unique`]) is looked up at every
//! partition, which a write of its table holds. A row in conflict that is evicted is
//! recorded as any evicted tuple a statement reaches (the pre-pass: the transaction is
//! rolled back, the block fetched and the transaction run again).

use std::cmp::Ordering;
use std::collections::HashSet;

use permafrost_storage::partitioning::partition_of;
use permafrost_storage::{PartitionStore, Table, TableSchema, TupleRef};
use permafrost_types::{Value, ValueError};

use crate::error::{Result, SqlError};
use crate::expr::{Cx, Expr, compare};
use crate::plan::ConflictUpdate;

use super::walk::Bindings;

/// What one proposed row came to at one copy of its table.
pub(super) enum Upserted {
    /// Inserted at this slot.
    Inserted(u32),
    /// The row at this slot held its key and was updated.
    Updated(u32),
    /// The row holding its key was left as it was: the DO UPDATE's WHERE was not true.
    Kept,
    /// The row holding its key is evicted, under this tombstone.
    Evicted(u32),
}

/// Inserts `row` (a value per column, of the column types) into the table of `schema` at
/// held store `at`, or updates the row an arbiter finds holding its key, as `spec` says; a
/// global unique arbiter ([`TableSchema::is_global_unique`]) finds it at any held store.
/// Returns the store it came to and what happened there. `mine` holds, per store, the
/// slots this statement inserted or updated: a row proposed twice is an error (21000), as
/// PostgreSQL gives it, since which of its values would stay is not defined.
#[allow(clippy::too_many_arguments)]
pub(super) fn upsert(
    stores: &mut [&mut PartitionStore],
    at: usize,
    schema: &TableSchema,
    spec: &ConflictUpdate,
    row: &[Value],
    mine: &mut [HashSet<u32>],
    total: u32,
    cx: &Cx<'_>,
) -> Result<(usize, Upserted)> {
    let table = stores[at]
        .table(schema.id)
        .ok_or_else(|| SqlError::SchemaChanged(schema.name.clone()))?;
    let holder = match spec.arbiters.iter().find_map(|&i| table.unique_holder(i, row)) {
        Some(r) => Some((at, r)),
        None => held_elsewhere(stores, at, schema, row, |i| spec.arbiters.contains(&i)).map(|(_, lj, r)| (lj, r)),
    };
    let Some((lj, holder)) = holder else {
        // No row holds the key: the other global unique keys (the arbiters were just
        // looked up) are checked as any insert's (an evicted row's key is in memory).
        if let Some((i, _, _)) = held_elsewhere(stores, at, schema, row, |i| !spec.arbiters.contains(&i)) {
            return Err(table_of(stores, at, schema)?.unique_violation_at(i, row).into());
        }
        let slot = stores[at].insert(schema.id, row)?;
        mine[at].insert(slot);
        return Ok((at, Upserted::Inserted(slot)));
    };
    let slot = match holder.as_tombstone() {
        Some(tombstone) => return Ok((lj, Upserted::Evicted(tombstone))),
        None => holder.0,
    };
    if !mine[lj].insert(slot) {
        return Err(SqlError::ConflictRowTwice);
    }
    let cx = cx.with_outer(row);
    let table = table_of(stores, lj, schema)?;
    let mut b = Bindings::new();
    b.bind(0, table, slot, 0);
    if let Some(f) = &spec.filter
        && !f.test(&b, &cx)?
    {
        return Ok((lj, Upserted::Kept));
    }
    let partition = stores[lj].partition();
    let changes = assigned(&spec.assignments, schema, table, slot, &b, partition, total, &cx)?;
    check_elsewhere(stores, lj, schema, slot, &changes)?;
    stores[lj].update(schema.id, slot, &changes)?;
    Ok((lj, Upserted::Updated(slot)))
}

fn table_of<'s>(stores: &'s [&mut PartitionStore], at: usize, schema: &TableSchema) -> Result<&'s Table> {
    stores[at]
        .table(schema.id)
        .ok_or_else(|| SqlError::SchemaChanged(schema.name.clone()))
}

/// A key `row` (a value per column) gives a global unique index of `schema` that
/// `considered` selects, held by the table at a held store other than `at`: the index,
/// the store and the tuple holding it there.
pub(super) fn held_elsewhere(
    stores: &[&mut PartitionStore],
    at: usize,
    schema: &TableSchema,
    row: &[Value],
    considered: impl Fn(usize) -> bool,
) -> Option<(usize, usize, TupleRef)> {
    for i in schema.global_unique_indexes().filter(|&i| considered(i)) {
        for (lj, s) in stores.iter().enumerate() {
            if lj == at {
                continue;
            }
            if let Some(r) = s.table(schema.id).and_then(|t| t.unique_holder(i, row)) {
                return Some((i, lj, r));
            }
        }
    }
    None
}

/// Before the row at `slot` of held store `at` takes `changes`: fails with a unique
/// violation if a global unique key it comes to hold is another partition's row's (an
/// evicted one's too: its key is in memory). The store's own keys are checked as it
/// writes.
pub(super) fn check_elsewhere(
    stores: &[&mut PartitionStore],
    at: usize,
    schema: &TableSchema,
    slot: u32,
    changes: &[(usize, Value)],
) -> Result<()> {
    let written = |c: usize| changes.iter().any(|(x, _)| *x == c);
    if schema.global_unique_over(written).is_none() {
        return Ok(());
    }
    let touched = |i: usize| schema.indexes[i].columns.iter().any(|&c| written(c));
    let table = table_of(stores, at, schema)?;
    let mut row = table.row(slot).to_values();
    for (c, v) in changes {
        row[*c] = v.clone();
    }
    match held_elsewhere(stores, at, schema, &row, touched) {
        Some((i, _, _)) => Err(table.unique_violation_at(i, &row).into()),
        None => Ok(()),
    }
}

/// The values `assignments` give the row at `slot` of `table` (bound as relation 0 in
/// `b`), converted to their columns' types. A partition column may change only to a value
/// of the same partition (`partition` of `total`): moving a row is refused (0A000).
#[allow(clippy::too_many_arguments)]
pub(super) fn assigned(
    assignments: &[(usize, Expr)],
    schema: &TableSchema,
    table: &Table,
    slot: u32,
    b: &Bindings<'_>,
    partition: u32,
    total: u32,
    cx: &Cx<'_>,
) -> Result<Vec<(usize, Value)>> {
    let mut changes = Vec::with_capacity(assignments.len());
    for (c, e) in assignments {
        let col = &schema.columns[*c];
        let v = e
            .eval(b, cx)?
            .into_value()
            .coerce_to(&col.ty)
            .map_err(|err| column_context(err, &col.name))?;
        if Some(*c) == schema.partition_column {
            let old = table.value(slot, *c);
            if compare(old, v.as_ref())? != Some(Ordering::Equal)
                && partition_of(v.as_ref(), &col.ty, total) != partition
            {
                return Err(SqlError::Unsupported(format!(
                    "changing partition column \"{}\" moves the row to another partition; delete and insert it instead",
                    col.name
                )));
            }
        }
        changes.push((*c, v));
    }
    Ok(changes)
}

/// A value that does not fit column `column`, named in the error.
pub(super) fn column_context(e: ValueError, column: &str) -> SqlError {
    match e {
        ValueError::TypeMismatch(m) => SqlError::Type(format!("column \"{column}\": {m}")),
        other => other.into(),
    }
}
