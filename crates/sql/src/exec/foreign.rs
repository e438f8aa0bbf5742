//! FOREIGN KEYs at run time (their definitions: crate::foreign). A write whose plan has
//! foreign-key work ([`FkPlan`]) holds the partitions where its keys' rows are
//! (`Prepared::route`: every partition, unless the work is local, [`FkPlan::local`], when
//! those its rows' keys name), so a key is looked up wherever its rows are:
//!
//! - a row written into a referencing table makes a check of its key;
//! - a referenced key removed (DELETE, or UPDATE of the referenced columns) makes a check of
//!   that key for each key referencing it, after its action: ON DELETE CASCADE deletes the
//!   referencing rows (whose own referencing keys are then acted on in turn), SET NULL
//!   sets their key columns to NULL, RESTRICT and NO ACTION leave them.
//!
//! A check ([`FkCheck`]) fails when a referencing row holds the key and no referenced row
//! does: the same test for both sides, so a key removed and given back within the check's
//! reach is no violation. A check of a key that is not deferred runs when its statement
//! ends; one of a key declared `DEFERRABLE INITIALLY DEFERRED` waits in
//! `Env::deferred_fk` until its transaction ends ([`check_deferred`]: a COMMIT, or the end
//! of a statement run alone). Keys are found through the referenced table's unique index,
//! whose entries cover evicted rows too; referencing rows through an index over the key's
//! columns where the table has one (evicted rows included: a cascade to one fetches it, as
//! any write to an evicted row does), else by reading the table, which is refused (0A000)
//! once part of it is evicted.

use std::ops::ControlFlow;
use std::sync::Arc;

use permafrost_storage::partitioning::partition_of;
use permafrost_storage::{FkAction, ForeignKey, PartitionStore, TableSchema, TupleRef};
use permafrost_types::Value;

use super::reached::{EvictedRef, EvictedRefs};
use super::walk::checked_table;
use crate::error::{Result, SqlError};
use crate::foreign::{FkPlan, ParentAt};
use crate::namespace::bare;

/// A key of a foreign key to check: it is violated when a row of `child` holds `key` in
/// the key's columns while no row of the referenced table holds it.
#[derive(Clone, Debug)]
pub struct FkCheck {
    pub child: Arc<TableSchema>,
    /// The key's position among `child`'s foreign keys.
    pub fk: usize,
    pub parent: Arc<TableSchema>,
    /// The key's values, in the order of its columns.
    pub key: Vec<Value>,
    /// Raised by a referenced key removed (the error names the referenced table's write),
    /// else by a referencing row written.
    pub removed: bool,
}

impl FkCheck {
    fn def(&self) -> &ForeignKey {
        &self.child.foreign_keys[self.fk]
    }
}

/// The checks a statement gathers: those to run when it ends, and those its transaction's
/// end runs.
#[derive(Default)]
pub(super) struct Checks {
    now: Vec<FkCheck>,
}

impl Checks {
    /// Queues `c`: now, or into `deferred` (the transaction's, `Env::deferred_fk`).
    fn push(&mut self, deferred: &mut Vec<FkCheck>, c: FkCheck) {
        if c.key.iter().any(|v| matches!(v, Value::Null)) {
            return;
        }
        if c.def().deferred && !(c.removed && c.def().on_delete == FkAction::Restrict) {
            deferred.push(c);
        } else {
            self.now.push(c);
        }
    }

    /// Runs the checks that do not wait for the transaction's end (`total`: the number
    /// of partitions, of which `stores` are held).
    pub(super) fn finish(self, stores: &[&mut PartitionStore], total: u32) -> Result<()> {
        for c in &self.now {
            check(stores, total, c)?;
        }
        Ok(())
    }
}

/// Runs the checks deferred to the end of the transaction (`pending`, taken from
/// `Env::deferred_fk`) over the partitions it holds (`stores`, of `total`); the first
/// violation is the transaction's error.
pub fn check_deferred(stores: &[&mut PartitionStore], total: u32, pending: Vec<FkCheck>) -> Result<()> {
    for c in &pending {
        check(stores, total, c)?;
    }
    Ok(())
}

/// What a cascade reaches and records: the partitions held, the evicted rows it meets
/// (fetched before the statement runs again), and when to stop.
pub(super) struct Reach<'x, 'b> {
    pub stores: &'x mut [&'b mut PartitionStore],
    /// The number of partitions, of which `stores` are held.
    pub total: u32,
    pub evicted: &'x mut EvictedRefs,
    pub interrupted: &'x dyn Fn() -> bool,
    pub deadline: Option<std::time::Instant>,
}

/// A write with foreign-key work needs every partition where the keys' rows may be: all
/// of them unless its work is local ([`FkPlan::local`], each key's rows at a partition its
/// value names, which each check makes sure is held: [`covered`]). A transaction that
/// holds fewer (a single-partition stored procedure) is refused rather than left
/// unchecked.
pub(super) fn require_all(holds_all: bool, plan: Option<&Arc<FkPlan>>, schema: &TableSchema) -> Result<()> {
    match plan {
        Some(p) if !holds_all && !p.local(schema) => Err(needs_all(schema)),
        _ => Ok(()),
    }
}

/// The error of a write whose keys' rows lie at partitions its transaction does not hold.
fn needs_all(schema: &TableSchema) -> SqlError {
    SqlError::Unsupported(format!(
        "writing table \"{}\" needs a multi-partition transaction over all partitions: its foreign keys, or \
         those referencing it, are checked there",
        schema.name
    ))
}

/// Whether check `c` can be decided at the partitions held (`stores`, of `total`): the
/// referenced row's partition is held (or the referenced table is replicated), and for a
/// referenced key removed, its referencing rows lie with it.
fn covered(stores: &[&mut PartitionStore], total: u32, c: &FkCheck) -> bool {
    if stores.len() as u32 == total {
        return true;
    }
    let fk = c.def();
    let parent = match crate::foreign::parent_at(fk, &c.parent) {
        ParentAt::Everywhere => true,
        ParentAt::KeyValue(i) => c.parent.partition_column.is_some_and(|pc| {
            let ty = &c.parent.columns[pc].ty;
            let v = c.key[i].clone().coerce_to(ty).unwrap_or_else(|_| c.key[i].clone());
            let p = partition_of(v.as_ref(), ty, total);
            stores.iter().any(|s| s.partition() == p)
        }),
        ParentAt::Anywhere => false,
    };
    parent && (!c.removed || crate::foreign::children_with_parent(&c.child, fk, &c.parent))
}

/// The values of `columns` in `row` (a whole row of the table).
fn key_of(row: &[Value], columns: &[usize]) -> Vec<Value> {
    columns.iter().map(|&c| row[c].clone()).collect()
}

/// The row at `slot` of table `schema` at store `li`, whole.
fn row_at(stores: &[&mut PartitionStore], li: usize, schema: &Arc<TableSchema>, slot: u32) -> Result<Vec<Value>> {
    Ok(checked_table(stores[li], schema)?.row(slot).to_values())
}

/// A row written into `schema`, the written table of `plan` (inserted, or updated with
/// its key columns among those written): checks of its keys.
pub(super) fn written(
    checks: &mut Checks,
    deferred: &mut Vec<FkCheck>,
    plan: &FkPlan,
    schema: &Arc<TableSchema>,
    row: &[Value],
) {
    for (k, parent) in &plan.parents {
        let fk = &schema.foreign_keys[*k];
        let c = FkCheck {
            child: schema.clone(),
            fk: *k,
            parent: parent.clone(),
            key: key_of(row, &fk.columns),
            removed: false,
        };
        checks.push(deferred, c);
    }
}

/// A row of `schema` about to be updated from `before` to `after` (whole rows): checks of
/// the referenced keys it gives up (ON UPDATE is NO ACTION or RESTRICT).
pub(super) fn updated(
    checks: &mut Checks,
    deferred: &mut Vec<FkCheck>,
    plan: &FkPlan,
    schema: &Arc<TableSchema>,
    before: &[Value],
    after: &[Value],
) {
    for (child, k) in plan.referencing_of(schema.id) {
        let fk = &child.foreign_keys[*k];
        let old = key_of(before, &fk.parent_columns);
        if old != key_of(after, &fk.parent_columns) {
            let c = FkCheck {
                child: child.clone(),
                fk: *k,
                parent: schema.clone(),
                key: old,
                removed: true,
            };
            checks.push(deferred, c);
        }
    }
}

/// Rows of the written table `schema` deleted (`rows`: store, slot and the row's values,
/// read before the delete): each referencing key's action, then checks. Rows deleted by a
/// cascade are acted on in turn.
pub(super) fn deleted(
    checks: &mut Checks,
    deferred: &mut Vec<FkCheck>,
    env: Reach<'_, '_>,
    plan: &FkPlan,
    schema: &Arc<TableSchema>,
    rows: Vec<Vec<Value>>,
) -> Result<()> {
    let mut work: Vec<(Arc<TableSchema>, Vec<Value>)> = rows.into_iter().map(|r| (schema.clone(), r)).collect();
    let mut steps = 0usize;
    while let Some((table, row)) = work.pop() {
        for (child, k) in plan.referencing_of(table.id) {
            let fk = &child.foreign_keys[*k];
            let key = key_of(&row, &fk.parent_columns);
            if key.iter().any(|v| matches!(v, Value::Null)) {
                continue;
            }
            match fk.on_delete {
                FkAction::Cascade | FkAction::SetNull => {
                    if env.stores.len() as u32 != env.total && !crate::foreign::children_with_parent(child, fk, &table)
                    {
                        return Err(needs_all(child));
                    }
                    let mut holders = Vec::new();
                    holders_of(env.stores, child, fk, &key, false, &mut holders)?;
                    for (li, r) in holders {
                        let Some(slot) = r.as_slot() else {
                            // Evicted: fetched, and the statement runs again.
                            let partition = env.stores[li].partition();
                            env.evicted.push(EvictedRef {
                                partition,
                                table: child.id,
                                tombstone: r.as_tombstone().expect("not a slot"),
                            });
                            continue;
                        };
                        steps += 1;
                        if steps.is_multiple_of(super::walk::INTERRUPT_EVERY as usize) {
                            super::walk::stop_now(env.interrupted, env.deadline)?;
                        }
                        if fk.on_delete == FkAction::Cascade {
                            let gone = row_at(env.stores, li, child, slot)?;
                            env.stores[li].delete(child.id, slot)?;
                            work.push((child.clone(), gone));
                        } else {
                            // (A NOT NULL key column refuses it: 23502, as in PostgreSQL.)
                            let nulls: Vec<(usize, Value)> = fk.columns.iter().map(|&c| (c, Value::Null)).collect();
                            env.stores[li].update(child.id, slot, &nulls)?;
                        }
                    }
                }
                FkAction::NoAction | FkAction::Restrict => {
                    let c = FkCheck {
                        child: child.clone(),
                        fk: *k,
                        parent: table.clone(),
                        key,
                        removed: true,
                    };
                    checks.push(deferred, c);
                }
            }
        }
    }
    Ok(())
}

/// Runs one check: fails when a row of the referencing table holds the key and no row of
/// the referenced table does.
fn check(stores: &[&mut PartitionStore], total: u32, c: &FkCheck) -> Result<()> {
    if c.key.iter().any(|v| matches!(v, Value::Null)) || parent_has(stores, c)? {
        return Ok(());
    }
    if !covered(stores, total, c) {
        return Err(needs_all(&c.child));
    }
    let mut holders = Vec::new();
    holders_of(stores, &c.child, c.def(), &c.key, true, &mut holders)?;
    if holders.is_empty() {
        return Ok(());
    }
    Err(violation(c))
}

/// The error of check `c` violated.
fn violation(c: &FkCheck) -> SqlError {
    let fk = c.def();
    let names =
        |t: &TableSchema, cols: &[usize]| cols.iter().map(|&col| t.columns[col].name.clone()).collect::<Vec<_>>();
    let key = permafrost_storage::error::key_text(
        names(
            if c.removed { &c.parent } else { &c.child },
            if c.removed { &fk.parent_columns } else { &fk.columns },
        )
        .iter()
        .map(String::as_str),
        c.key.iter().map(Value::as_ref),
    );
    if c.removed {
        SqlError::ForeignKeyViolation {
            message: format!(
                "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
                bare(&c.parent.name),
                fk.name,
                bare(&c.child.name)
            ),
            detail: format!("Key {key} is still referenced from table \"{}\".", bare(&c.child.name)),
        }
    } else {
        SqlError::ForeignKeyViolation {
            message: format!(
                "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                bare(&c.child.name),
                fk.name
            ),
            detail: format!("Key {key} is not present in table \"{}\".", bare(&c.parent.name)),
        }
    }
}

/// Whether a row of the referenced table holds the check's key (at any partition held;
/// evicted rows count, their keys being in the index).
fn parent_has(stores: &[&mut PartitionStore], c: &FkCheck) -> Result<bool> {
    parent_has_in(stores, c, false)
}

/// [`parent_has`]; `loose`: the stores may hold another version of the referenced table's
/// schema (a table that gains a key referencing itself), whose indexes are the same.
fn parent_has_in(stores: &[&mut PartitionStore], c: &FkCheck, loose: bool) -> Result<bool> {
    let fk = c.def();
    let parent = &c.parent;
    let ix = parent
        .index_over(&fk.parent_columns, true)
        .ok_or_else(|| SqlError::SchemaChanged(parent.name.clone()))?;
    let mut values = vec![Value::Null; parent.columns.len()];
    for (&p, v) in fk.parent_columns.iter().zip(&c.key) {
        values[p] = v.clone().coerce_to(&parent.columns[p].ty).unwrap_or_else(|_| v.clone());
    }
    for s in stores {
        let table = match s.table(parent.id) {
            Some(t) if loose => t,
            _ => checked_table(s, parent)?,
        };
        if table.unique_holder(ix, &values).is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The rows of `child` whose key `fk` is `key`, at every store held (`first`: stop at
/// the first found): through an index over exactly the key's columns, else by reading
/// the table.
fn holders_of(
    stores: &[&mut PartitionStore],
    child: &Arc<TableSchema>,
    fk: &ForeignKey,
    key: &[Value],
    first: bool,
    out: &mut Vec<(usize, TupleRef)>,
) -> Result<()> {
    let index = child.index_over(&fk.columns, false);
    let mut values = vec![Value::Null; child.columns.len()];
    for (&c, v) in fk.columns.iter().zip(key) {
        values[c] = v.clone().coerce_to(&child.columns[c].ty).unwrap_or_else(|_| v.clone());
    }
    for (li, s) in stores.iter().enumerate() {
        let table = checked_table(s, child)?;
        match index {
            Some(ix) => table.index_holders(ix, &values, |r| {
                out.push((li, r));
                if first {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            }),
            None => {
                if table.evicted_tuples() > 0 {
                    return Err(SqlError::FeatureNotSupported(format!(
                        "foreign key \"{}\" needs an index on its columns of table \"{}\", part of which is evicted: \
                         CREATE INDEX on them",
                        fk.name, child.name
                    )));
                }
                let _ = table.scan(|slot| {
                    let same = fk.columns.iter().all(|&c| table.value(slot, c).to_owned() == values[c]);
                    if same {
                        out.push((li, TupleRef::slot(slot)));
                        if first {
                            return ControlFlow::Break(());
                        }
                    }
                    ControlFlow::Continue(())
                });
            }
        }
        if first && !out.is_empty() {
            break;
        }
        // A replicated table's copies hold the same rows: one is enough to find them,
        // but a cascade acts on every copy.
        if child.partition_column.is_none() && first {
            break;
        }
    }
    Ok(())
}

/// Checks the rows of a table that gains foreign keys (`after` has keys `before` lacks,
/// `ALTER TABLE ... ADD FOREIGN KEY`) against them, at every partition (`stores`: all of
/// them); the first row whose key is missing is the error. A table part of which is
/// evicted is refused (0A000): its evicted rows' keys are not in memory to check.
pub fn validate_added(stores: &[&mut PartitionStore], before: &TableSchema, after: &Arc<TableSchema>) -> Result<()> {
    let added: Vec<usize> = (0..after.foreign_keys.len())
        .filter(|&k| !before.foreign_keys.contains(&after.foreign_keys[k]))
        .collect();
    for k in added {
        let fk = &after.foreign_keys[k];
        let parent = if fk.parent == after.id {
            after.clone()
        } else {
            stores
                .first()
                .and_then(|s| s.table(fk.parent))
                .map(|t| t.schema().clone())
                .ok_or_else(|| SqlError::SchemaChanged(format!("table id {}", fk.parent)))?
        };
        for s in stores {
            let Some(table) = s.table(after.id) else { continue };
            if table.evicted_tuples() > 0 {
                return Err(SqlError::FeatureNotSupported(format!(
                    "adding foreign key \"{}\" to table \"{}\", part of which is evicted",
                    fk.name, after.name
                )));
            }
            let mut keys = Vec::new();
            let _ = table.scan(|slot| {
                keys.push(
                    fk.columns
                        .iter()
                        .map(|&c| table.value(slot, c).to_owned())
                        .collect::<Vec<_>>(),
                );
                ControlFlow::Continue(())
            });
            for key in keys {
                let c = FkCheck {
                    child: after.clone(),
                    fk: k,
                    parent: parent.clone(),
                    key,
                    removed: false,
                };
                if !c.key.iter().any(|v| matches!(v, Value::Null)) && !parent_has_in(stores, &c, fk.parent == after.id)?
                {
                    return Err(violation(&c));
                }
            }
        }
    }
    Ok(())
}
