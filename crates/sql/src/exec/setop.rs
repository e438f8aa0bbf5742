//! A set operation (UNION, INTERSECT, EXCEPT [ALL]) whose rows outgrow its working memory,
//! run again on disk: its sides' rows become sorted runs in a spill file, each record the
//! ORDER BY keys, the row and the side it came from; the runs are merged as the result
//! streams ([`SetOpRest`], read where the statement is answered, off the partitions), so
//! that equal rows arrive together, in ORDER BY order, and each group of them gives the
//! rows the operation keeps: UNION one, UNION ALL all, INTERSECT one if both sides have it
//! (ALL: the fewer), EXCEPT one if only the left has it (ALL: the left's count less the
//! right's). Rows are equal when their values compare equal, as PostgreSQL compares them.
//!
//! A chain of UNIONs under the operation is read as one list of sides where that keeps
//! the answer (`flatten`); another set operation under it runs on disk in turn; anything
//! else (VALUES, a recursive query) is computed in memory, and 54000 past it.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use permafrost_types::Value;

use crate::error::{Result, SqlError};
use crate::expr::{Cx, cast};
use crate::plan::{CompoundPlan, SetOp, SetTree};
use crate::rows::{ColumnInfo, MoreRows, Rows};

use super::gather::limit_value;
use super::spill::{BATCH_BYTES, Merge, SortRuns, SortSpec};
use super::subquery::{RunSelect, side};

/// One input of the operation: a tree whose rows come from side `tag` (0 the left, 1 the
/// right; UNION's are all 0).
struct Source<'p> {
    tree: &'p SetTree,
    tag: i64,
}

/// Runs set operation `p` on disk in `dir`: its SELECT sides are read through `run` (which
/// may give a side's rows with a rest of its own past the working memory), set operations
/// under it on disk in turn, its other sides in memory through `run_whole`; their rows
/// are written as sorted runs of at most half of `work_mem` each, and the answer is all in
/// its rest.
pub(super) fn spilled<E>(
    p: &CompoundPlan,
    env: &mut E,
    cx: &Cx<'_>,
    work_mem: usize,
    dir: &Path,
    run: &mut RunSelect<'_, E>,
    run_whole: &mut RunSelect<'_, E>,
) -> Result<Rows> {
    let shape = Shape {
        tree: &p.tree,
        columns: &p.columns,
        order: &p.order,
        offset: limit_value(&p.offset, cx, "OFFSET")?.unwrap_or(0),
        limit: limit_value(&p.limit, cx, "LIMIT")?,
    };
    let mut disk = Disk {
        cx,
        work_mem,
        dir,
        run,
        run_whole,
    };
    disk.run(&shape, env)
}

/// A set operation to run on disk, with what is done to its result.
struct Shape<'p> {
    tree: &'p SetTree,
    columns: &'p Arc<[ColumnInfo]>,
    /// Result column, descending, NULLs first.
    order: &'p [(usize, bool, bool)],
    offset: u64,
    limit: Option<u64>,
}

/// What running set operations on disk needs.
struct Disk<'d, 'r, E> {
    cx: &'d Cx<'d>,
    work_mem: usize,
    dir: &'d Path,
    run: &'d mut RunSelect<'r, E>,
    run_whole: &'d mut RunSelect<'r, E>,
}

impl<E> Disk<'_, '_, E> {
    fn run(&mut self, s: &Shape<'_>, env: &mut E) -> Result<Rows> {
        let SetTree::Op { op, all, left, right } = s.tree else {
            return Err(SqlError::OutOfWorkMem(self.work_mem));
        };
        let (op, all) = (*op, *all);
        let mut sources = Vec::new();
        let right_tag = if op == SetOp::Union { 0 } else { 1 };
        flatten(left, all, 0, &mut sources);
        flatten(right, all, right_tag, &mut sources);
        let spec = SortSpec {
            keys: s
                .order
                .iter()
                .map(|&(_, desc, nulls_first)| (desc, nulls_first))
                .collect(),
            tie_outputs: true,
            // The row, then its side (compared last, so a group's left rows come first).
            width: s.columns.len() + 1,
        };
        let mut runs = SortRuns::create(self.dir, spec, self.work_mem / 2)?;
        for src in &sources {
            let mut add = |row: Vec<Value>| -> Result<()> {
                let row = row
                    .into_iter()
                    .zip(s.columns.iter())
                    .map(|(v, c)| match &c.ty {
                        Some(ty) if !v.is_null() => cast(v, ty),
                        _ => Ok(v),
                    })
                    .collect::<Result<Vec<Value>>>()?;
                let mut rec: Vec<Value> = s.order.iter().map(|&(i, _, _)| row[i].clone()).collect();
                rec.extend(row);
                rec.push(Value::Int(src.tag));
                runs.add(rec)
            };
            let streamed = match src.tree {
                SetTree::Select { plan, columns } => Some((self.run)(plan, columns, env, self.cx)?),
                t @ SetTree::Op { .. } => Some(self.run(
                    &Shape {
                        tree: t,
                        columns: s.columns,
                        order: &[],
                        offset: 0,
                        limit: None,
                    },
                    env,
                )?),
                SetTree::Compound(c) if matches!(c.tree, SetTree::Op { .. }) => Some(self.run(
                    &Shape {
                        tree: &c.tree,
                        columns: &c.columns,
                        order: &c.order,
                        offset: limit_value(&c.offset, self.cx, "OFFSET")?.unwrap_or(0),
                        limit: limit_value(&c.limit, self.cx, "LIMIT")?,
                    },
                    env,
                )?),
                _ => None,
            };
            match streamed {
                Some(mut rows) => {
                    let mut rest = rows.take_rest();
                    loop {
                        for r in rows.to_values() {
                            add(r)?;
                        }
                        match rest.as_mut().map(|m| m.next_rows()).transpose()?.flatten() {
                            Some(more) => rows = more,
                            None => break,
                        }
                    }
                }
                None => {
                    for r in side(src.tree, s.columns, env, self.cx, self.work_mem, self.run_whole)? {
                        add(r)?;
                    }
                }
            }
        }
        let merge = runs.merge(self.dir)?;
        let mut out = Rows::empty(s.columns.clone());
        out.set_rest(Box::new(SetOpRest {
            merge,
            keys: s.order.len(),
            op,
            all,
            columns: s.columns.clone(),
            group: None,
            offset: s.offset,
            limit: s.limit,
            skipped: 0,
            emitted: 0,
        }));
        Ok(out)
    }
}

/// Adds the sides of `t` to `out` as inputs (with tag `tag`) of an operation with or
/// without ALL (`all`): a UNION under it gives its own sides where reading them as one
/// list keeps the answer — under a UNION (or INTERSECT / EXCEPT without ALL, which ask
/// only whether a row is there) any UNION, under UNION ALL (or INTERSECT / EXCEPT ALL,
/// which count rows) a UNION ALL.
fn flatten<'p>(t: &'p SetTree, all: bool, tag: i64, out: &mut Vec<Source<'p>>) {
    match t {
        SetTree::Op {
            op: SetOp::Union,
            all: inner_all,
            left,
            right,
        } if *inner_all || !all => {
            flatten(left, all, tag, out);
            flatten(right, all, tag, out);
        }
        SetTree::Compound(c) if c.order.is_empty() && c.limit.is_none() && c.offset.is_none() => {
            flatten(&c.tree, all, tag, out)
        }
        t => out.push(Source { tree: t, tag }),
    }
}

/// The rest of a set operation run on disk: its merged records, grouped and counted.
struct SetOpRest {
    merge: Merge,
    /// ORDER BY keys at the front of each record.
    keys: usize,
    op: SetOp,
    all: bool,
    columns: Arc<[ColumnInfo]>,
    /// The group being counted: its first record, and its rows from the left and right.
    group: Option<(Vec<Value>, u64, u64)>,
    offset: u64,
    limit: Option<u64>,
    skipped: u64,
    emitted: u64,
}

impl SetOpRest {
    /// How many times the operation keeps a row the left side has `l` times and the
    /// right `r` times.
    fn kept(&self, l: u64, r: u64) -> u64 {
        match (self.op, self.all) {
            (SetOp::Union, true) => l + r,
            (SetOp::Union, false) => u64::from(l + r > 0),
            (SetOp::Intersect, true) => l.min(r),
            (SetOp::Intersect, false) => u64::from(l > 0 && r > 0),
            (SetOp::Except, true) => l.saturating_sub(r),
            (SetOp::Except, false) => u64::from(l > 0 && r == 0),
        }
    }

    /// Gives the group's rows (after OFFSET, up to LIMIT) to `rows`.
    fn emit(&mut self, (rec, l, r): (Vec<Value>, u64, u64), rows: &mut Rows) {
        let row = &rec[self.keys..rec.len() - 1];
        for _ in 0..self.kept(l, r) {
            if self.limit.is_some_and(|n| self.emitted >= n) {
                return;
            }
            if self.skipped < self.offset {
                self.skipped += 1;
                continue;
            }
            rows.push_row(row.iter().map(Value::as_ref));
            self.emitted += 1;
        }
    }
}

impl MoreRows for SetOpRest {
    fn next_rows(&mut self) -> Result<Option<Rows>> {
        let mut rows = Rows::empty(self.columns.clone());
        while rows.data_len() < BATCH_BYTES && self.limit.is_none_or(|n| self.emitted < n) {
            let Some(rec) = self.merge.next()? else {
                if let Some(g) = self.group.take() {
                    self.emit(g, &mut rows);
                }
                break;
            };
            let side = match rec.last() {
                Some(Value::Int(t)) => *t,
                _ => return Err(SqlError::SpillDamaged("a set operation's record has no side".into())),
            };
            let same = self.group.as_ref().is_some_and(|(first, _, _)| {
                first[..first.len() - 1]
                    .iter()
                    .zip(&rec[..rec.len() - 1])
                    .all(|(a, b)| permafrost_types::total_compare(a.as_ref(), b.as_ref()) == Ordering::Equal)
            });
            if !same && let Some(g) = self.group.take() {
                self.emit(g, &mut rows);
            }
            let g = self.group.get_or_insert((rec, 0, 0));
            if side == 0 {
                g.1 += 1;
            } else {
                g.2 += 1;
            }
        }
        Ok((!rows.is_empty()).then_some(rows))
    }
}
