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

/// Whether an UPDATE's result (its RETURNING, which rows its WHERE takes) reads a column it
/// sets: then a concurrent block's UPDATE of the same rows changes what it shows.
fn shows_what_it_sets(u: &crate::plan::UpdatePlan) -> bool {
    let rel = u.target.rel;
    let mut reads = false;
    for e in u.returning.iter().chain(&u.target.filters) {
        e.walk(&mut |x| {
            if let Expr::Column { rel: r, col } = x {
                reads |= *r == rel && u.assignments.iter().any(|(c, _)| c == col);
            }
        });
    }
    reads
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
    /// What the statement locks, as far as its parameters tell before it runs: for each
    /// relation a `FOR UPDATE` / `FOR SHARE` locks, for the target of a DELETE, and for the
    /// target of an UPDATE whose result shows what it sets (which lock the rows they change
    /// FOR UPDATE, as in PostgreSQL), read through an index with equalities on its leading
    /// columns, those columns' values. A relation read otherwise (a scan, a join's inner
    /// side) locks nothing: the locks only spare blocks from failing at COMMIT, which still
    /// checks every read (docs/architecture/interactive.md, "Row locks"). An UPDATE whose
    /// RETURNING and WHERE read none of the columns it sets (`SET ytd = ytd + $1 WHERE id =
    /// $2`) locks nothing: its client sees only the rows its key names, which a concurrent
    /// block's change of those columns leaves as they were, so it could not fail at COMMIT
    /// for it, and blocks bumping one counter need not take turns.
    pub fn lock_targets(&self, params: &[Value]) -> Vec<LockTarget> {
        let locked: Vec<(&RelPlan, bool, bool)> = match &self.plan {
            Plan::Select(s) => s
                .locks
                .iter()
                .filter_map(|l| {
                    s.rels
                        .iter()
                        .find(|r| r.rel == l.rel && r.schema.id != DERIVED_TABLE)
                        .map(|r| (r, l.exclusive, l.nowait))
                })
                .collect(),
            Plan::Update(u) if shows_what_it_sets(u) => vec![(&u.target, true, false)],
            Plan::Delete(d) => vec![(&d.target, true, false)],
            _ => Vec::new(),
        };
        if locked.is_empty() {
            return Vec::new();
        }
        let Ok(params) = coerce_params(params, &self.param_types) else {
            return Vec::new();
        };
        let cx = Cx::new(&params, 0);
        let mut out = Vec::new();
        for (r, exclusive, nowait) in locked {
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
                    exclusive,
                    nowait,
                }),
                _ => {}
            }
        }
        out
    }
}

/// What a statement of a transaction block may read or change, by table, with its
/// parameters: all of a table's rows, or only the rows of some primary keys
/// ([`Prepared::reach`]). A probe runs again only the block's earlier writes whose reach
/// meets its statement's ([`needed_before`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reach {
    /// Sorted by table; `None`: any row of it.
    tables: Vec<(TableId, Option<Vec<Vec<u8>>>)>,
    /// It reads the session's sequence values, which any earlier statement may set.
    everything: bool,
}

impl Reach {
    /// Whether a statement that reaches `self` can change what one reaching `other` gives
    /// or does (or the other way round): they share a table, and rows of it.
    pub fn meets(&self, other: &Reach) -> bool {
        if self.everything || other.everything {
            return true;
        }
        let (mut a, mut b) = (self.tables.iter().peekable(), other.tables.iter().peekable());
        while let (Some((ta, ka)), Some((tb, kb))) = (a.peek(), b.peek()) {
            match ta.cmp(tb) {
                std::cmp::Ordering::Less => {
                    a.next();
                }
                std::cmp::Ordering::Greater => {
                    b.next();
                }
                std::cmp::Ordering::Equal => {
                    match (ka, kb) {
                        (Some(x), Some(y)) if !x.iter().any(|k| y.contains(k)) => {}
                        _ => return true,
                    }
                    a.next();
                    b.next();
                }
            }
        }
        false
    }

    /// Adds what `other` reaches.
    pub fn join(&mut self, other: &Reach) {
        self.everything |= other.everything;
        for (t, keys) in &other.tables {
            match self.tables.binary_search_by_key(t, |e| e.0) {
                Ok(i) => match (&mut self.tables[i].1, keys) {
                    (Some(mine), Some(theirs)) => {
                        for k in theirs {
                            if !mine.contains(k) {
                                mine.push(k.clone());
                            }
                        }
                    }
                    (mine, _) => *mine = None,
                },
                Err(i) => self.tables.insert(i, (*t, keys.clone())),
            }
        }
    }

    /// Whether it names no table (`SELECT setval(...)`).
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && !self.everything
    }
}

impl Prepared {
    /// What the statement may read or change with `params` ([`Reach`]): its footprint
    /// ([`Prepared::footprint`]), narrowed to primary keys for the tables it reads or
    /// writes only through equalities on all of their primary key's columns with values
    /// known before it runs (TPC-C's point reads and writes of a stock row, an order
    /// line's insert, the stock row that line references). A table stays whole when a
    /// subquery reads it, a write changes a column of one of its unique indexes, or it has
    /// a unique index besides its primary key that an insert must check.
    pub fn reach(&self, params: &[Value]) -> Reach {
        let mut reach = Reach {
            tables: self.footprint().iter().map(|&t| (t, None)).collect(),
            everything: self.reads_session_sequences(),
        };
        if let Some(keyed) = self.keyed_tables(params) {
            for (t, keys) in keyed {
                if let Ok(i) = reach.tables.binary_search_by_key(&t, |e| e.0) {
                    reach.tables[i].1 = Some(keys);
                }
            }
        }
        reach
    }

    /// The tables [`Prepared::reach`] narrows, with their keys; `None` when none is.
    fn keyed_tables(&self, params: &[Value]) -> Option<Vec<(TableId, Vec<Vec<u8>>)>> {
        if !self.subquery_rels().is_empty() {
            return None;
        }
        let params = coerce_params(params, &self.param_types).ok()?;
        let cx = Cx::new(&params, 0);
        // Per table: its keys, or `None` once one of its relations is read otherwise.
        let mut out: Vec<(TableId, Option<Vec<Vec<u8>>>)> = Vec::new();
        let mut add = |t: TableId, key: Option<Vec<u8>>| match out.iter_mut().find(|e| e.0 == t) {
            Some((_, keys)) => match (keys.as_mut(), key) {
                (Some(keys), Some(k)) => keys.push(k),
                _ => *keys = None,
            },
            None => out.push((t, key.map(|k| vec![k]))),
        };
        let fk = match &self.plan {
            Plan::Select(s) => {
                if !s.init.is_empty() || !s.derived.is_empty() {
                    return None;
                }
                for r in &s.rels {
                    add(r.schema.id, primary_key_of(r, &cx));
                }
                None
            }
            Plan::Update(u) => {
                let touches_unique = u.assignments.iter().any(|(c, _)| {
                    u.target
                        .schema
                        .indexes
                        .iter()
                        .any(|ix| ix.unique && ix.columns.contains(c))
                });
                let key = primary_key_of(&u.target, &cx).filter(|_| u.init.is_empty() && !touches_unique);
                add(u.target.schema.id, key);
                u.fk.as_deref()
            }
            Plan::Delete(d) => {
                add(
                    d.target.schema.id,
                    primary_key_of(&d.target, &cx).filter(|_| d.init.is_empty()),
                );
                d.fk.as_deref()
            }
            Plan::Insert(i) => {
                let InsertSource::Values(rows) = &i.source else {
                    return None;
                };
                let only_primary = i.schema.indexes.iter().all(|ix| ix.primary || !ix.unique);
                let pk = i.schema.indexes.iter().find(|ix| ix.primary);
                for row in rows {
                    let key = pk.filter(|_| only_primary && i.init.is_empty()).and_then(|pk| {
                        let at = |c: usize| i.targets[c].map(|pos| &row[pos]);
                        encode_key(&i.schema, &pk.columns, at, &cx)
                    });
                    add(i.schema.id, key);
                    // The rows its foreign keys reference, by their primary key.
                    for (k, parent) in i.fk.iter().flat_map(|f| f.parents.iter()) {
                        let def = &i.schema.foreign_keys[*k];
                        let at = |pc: usize| {
                            let j = def.parent_columns.iter().position(|&c| c == pc)?;
                            i.targets[def.columns[j]].map(|pos| &row[pos])
                        };
                        let key = parent
                            .indexes
                            .iter()
                            .find(|ix| ix.primary)
                            .filter(|pk| {
                                let mut mine = pk.columns.clone();
                                let mut theirs = def.parent_columns.clone();
                                mine.sort_unstable();
                                theirs.sort_unstable();
                                mine == theirs
                            })
                            .and_then(|pk| encode_key(parent, &pk.columns, at, &cx));
                        add(parent.id, key);
                    }
                }
                // (The parents were narrowed above; what else its keys reach stays whole.)
                i.fk.as_deref().filter(|f| !f.referencing.is_empty())
            }
            Plan::Compound(_) => return None,
        };
        // A table its foreign-key work reaches otherwise (a cascade, a self-reference)
        // stays whole.
        if let Some(f) = fk {
            let mut add_whole = |t: TableId| match out.iter_mut().find(|e| e.0 == t) {
                Some(e) => e.1 = None,
                None => out.push((t, None)),
            };
            if !matches!(self.plan, Plan::Insert(_)) {
                for (_, parent) in &f.parents {
                    add_whole(parent.id);
                }
            }
            for (id, refs) in &f.referencing {
                add_whole(*id);
                for (t, _) in refs {
                    add_whole(t.id);
                }
            }
        }
        let keyed: Vec<(TableId, Vec<Vec<u8>>)> = out.into_iter().filter_map(|(t, keys)| Some((t, keys?))).collect();
        (!keyed.is_empty()).then_some(keyed)
    }
}

/// The primary key relation `r` is read at, encoded as its index encodes it, when it is
/// read through equalities on all of that key's columns whose values are known before any
/// row is.
fn primary_key_of(r: &RelPlan, cx: &Cx<'_>) -> Option<Vec<u8>> {
    let Access::IndexEq { index, keys } = &r.access else {
        return None;
    };
    let ix = r.schema.indexes.get(*index).filter(|ix| ix.primary)?;
    if keys.len() != ix.columns.len() || r.schema.id == DERIVED_TABLE {
        return None;
    }
    encode_key(
        &r.schema,
        &ix.columns,
        |c| ix.columns.iter().position(|&k| k == c).map(|j| &keys[j]),
        cx,
    )
}

/// The key of `schema`'s columns `columns` whose values `at` gives (as expressions known
/// before any row is read), encoded; `None` when one is not known or is NULL.
fn encode_key<'e>(
    schema: &TableSchema,
    columns: &[usize],
    at: impl Fn(usize) -> Option<&'e Expr>,
    cx: &Cx<'_>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(16 * columns.len());
    for &c in columns {
        let ty = &schema.columns[c].ty;
        let v = key_constant(at(c)?, cx, ty)?;
        if !permafrost_storage::index::encode_value(&mut out, v.as_ref(), ty) {
            return None;
        }
    }
    Some(out)
}

/// Which of a transaction's earlier statements `before` (those a probe would run again
/// first: its writes), each given by its [`Reach`], can change what `next` gives or does:
/// walking back from `next`, a statement is needed when its reach meets that of `next` or
/// of a statement needed after it, which then joins. One that reaches no table (a
/// sequence's `setval`) is needed, and all are when `next` reads the session's sequence
/// values (which earlier statements set).
pub fn needed_before(before: &[&Reach], next: &Reach) -> Vec<bool> {
    if next.everything {
        return vec![true; before.len()];
    }
    let mut reach = next.clone();
    let mut needed = vec![false; before.len()];
    for (i, r) in before.iter().enumerate().rev() {
        if r.is_empty() || r.meets(&reach) {
            needed[i] = true;
            reach.join(r);
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
