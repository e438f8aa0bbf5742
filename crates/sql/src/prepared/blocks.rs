//! What a transaction block's statements need beyond their plan: the rows a locking read
//! locks (crates/server's row_locks.rs), the earlier writes a probe must run first, and the
//! tables whose partitioning made a statement cross partitions.

use permafrost_storage::{TableId, TableSchema};
use permafrost_types::Value;

use super::{Prepared, coerce_params, key_constant, key_partition, parent_keys, through_join};
use crate::expr::{Cx, Expr};
use crate::plan::{Access, DERIVED_TABLE, InsertSource, PartitionPick, Plan, RelPlan};

impl Prepared {
    /// The tables whose rows may change what the statement gives or does: those it reads
    /// or writes ([`Prepared::tables`]), the tables its writes' foreign keys look up, and
    /// those their removed keys reach (through cascades too).
    pub fn footprint(&self) -> &[TableId] {
        self.footprint.get_or_init(|| self.footprint_now())
    }

    fn footprint_now(&self) -> Vec<TableId> {
        let mut v = self.tables();
        let fk = match &self.plan {
            Plan::Insert(i) => i.fk.as_ref(),
            Plan::Update(u) => u.fk.as_ref(),
            Plan::Delete(d) => d.fk.as_ref(),
            _ => None,
        };
        if let Some(f) = fk {
            v.extend(f.parents.iter().map(|(_, t)| t.id));
            for (id, refs) in &f.referencing {
                v.push(*id);
                v.extend(refs.iter().map(|(t, _)| t.id));
            }
            v.sort_unstable();
            v.dedup();
        }
        v
    }
}

/// Rows a locking read of a block locks ([`Prepared::lock_targets`]): those of `table`
/// whose index `index` key starts with `key` (every row of the table when `index` is
/// `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct LockTarget {
    pub table: TableId,
    pub index: Option<usize>,
    pub key: Vec<Value>,
    /// FOR UPDATE (else FOR SHARE).
    pub exclusive: bool,
    /// NOWAIT.
    pub nowait: bool,
}

impl Prepared {
    /// What the statement's `FOR UPDATE` / `FOR SHARE` lock, as far as its parameters tell
    /// before it runs: for each locked relation read through an index with equalities on
    /// its leading columns, those columns' values. A relation read otherwise (a scan, a
    /// join's inner side) locks nothing: the locks only spare blocks from failing at
    /// COMMIT, which still checks every read (docs/architecture/interactive.md, "Row
    /// locks").
    pub fn lock_targets(&self, params: &[Value]) -> Vec<LockTarget> {
        let Plan::Select(s) = &self.plan else {
            return Vec::new();
        };
        if s.locks.is_empty() {
            return Vec::new();
        }
        let Ok(params) = coerce_params(params, &self.param_types) else {
            return Vec::new();
        };
        let cx = Cx::new(&params, 0);
        let mut out = Vec::new();
        for l in &s.locks {
            let Some(r) = s.rels.iter().find(|r| r.rel == l.rel && r.schema.id != DERIVED_TABLE) else {
                continue;
            };
            let (index, keys) = match &r.access {
                Access::IndexEq { index, keys } => (*index, keys.as_slice()),
                Access::IndexRange { index, prefix, .. } => (*index, prefix.as_slice()),
                _ => continue,
            };
            let columns = &r.schema.indexes[index].columns;
            let key: Option<Vec<Value>> = keys
                .iter()
                .zip(columns)
                .map(|(e, &c)| key_constant(e, &cx, &r.schema.columns[c].ty))
                .collect();
            match key {
                Some(key) if !key.is_empty() => out.push(LockTarget {
                    table: r.schema.id,
                    index: Some(index),
                    key,
                    exclusive: l.exclusive,
                    nowait: l.nowait,
                }),
                _ => {}
            }
        }
        out
    }
}

/// Which of a transaction's earlier statements `before` (those a probe would run again
/// first: its writes) can change what `next` gives or does, at the level of tables: walking
/// back from `next`, a statement is needed when it touches a table in the footprint
/// ([`Prepared::footprint`]) of `next` or of a statement needed after it, whose footprint
/// then joins. One that touches no table (a sequence's `setval`) is needed, and all are
/// when `next` reads the session's sequence values (which earlier statements set).
pub fn needed_before(before: &[&Prepared], next: &Prepared) -> Vec<bool> {
    if next.reads_session_sequences() {
        return vec![true; before.len()];
    }
    let mut footprint = next.footprint().to_vec();
    let mut needed = vec![false; before.len()];
    for (i, p) in before.iter().enumerate().rev() {
        let touches = p.footprint();
        // (One that touches no table, `SELECT setval(...)`, is kept.)
        if touches.is_empty() || touches.iter().any(|t| footprint.binary_search(t).is_ok()) {
            needed[i] = true;
            footprint.extend_from_slice(touches);
            footprint.sort_unstable();
            footprint.dedup();
        }
    }
    needed
}

impl Prepared {
    /// For a statement that runs over several partitions: the tables whose partitioning
    /// made it so (docs/architecture/multi-partition.md, "A partitioning for plain DDL"):
    /// relations of different tables each pinned to one partition by their key, at
    /// different partitions (rows a co-partitioning would have put together), a referenced
    /// row at another partition than the row written, or a write of a replicated table (at
    /// every copy). Empty when it crosses partitions for another reason (it names no key,
    /// or rows of one table at several) or not at all.
    pub fn crossing(&self, params: &[Value], partitions: u32) -> Vec<TableId> {
        if partitions < 2 {
            return Vec::new();
        }
        let Ok(params) = coerce_params(params, &self.param_types) else {
            return Vec::new();
        };
        let cx = Cx::new(&params, 0);
        let pinned = |schema: &TableSchema, e: &Expr| key_partition(schema, e, &cx, partitions);
        // (table, partition) of each relation pinned to one partition.
        let mut at: Vec<(TableId, u32)> = Vec::new();
        let mut rels: Vec<&RelPlan> = self.subquery_rels();
        match &self.plan {
            Plan::Select(s) => rels.extend(s.rels.iter()),
            Plan::Update(u) if u.target.schema.is_replicated() => return vec![u.target.schema.id],
            Plan::Delete(d) if d.target.schema.is_replicated() => return vec![d.target.schema.id],
            Plan::Update(u) => rels.push(&u.target),
            Plan::Delete(d) => rels.push(&d.target),
            Plan::Insert(i) if i.schema.is_replicated() => return vec![i.schema.id],
            Plan::Insert(i) => {
                if let (InsertSource::Values(rows), Some(pc)) = (&i.source, i.schema.partition_column)
                    && let Some(pos) = i.targets[pc]
                {
                    let keys = parent_keys(i).unwrap_or_default();
                    for r in rows {
                        at.extend(pinned(&i.schema, &r[pos]).map(|p| (i.schema.id, p)));
                        for &(parent, ppos) in &keys {
                            at.extend(pinned(parent, &r[ppos]).map(|p| (parent.id, p)));
                        }
                    }
                }
            }
            Plan::Compound(_) => {}
        }
        let own: &[RelPlan] = match &self.plan {
            Plan::Select(s) => &s.rels,
            _ => &[],
        };
        for r in rels {
            if let PartitionPick::Key(e) = &*through_join(r, own) {
                at.extend(pinned(&r.schema, e).map(|p| (r.schema.id, p)));
            }
        }
        // (Rows of one table at several partitions cross them whatever the partitioning.)
        let apart = |&(t, p): &(TableId, u32)| at.iter().any(|&(u, q)| u != t && q != p);
        if !at.iter().any(apart) {
            return Vec::new();
        }
        let mut tables: Vec<TableId> = at.iter().filter(|e| apart(e)).map(|&(t, _)| t).collect();
        tables.sort_unstable();
        tables.dedup();
        tables
    }
}
