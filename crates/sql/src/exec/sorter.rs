//! Rows gathered to be sorted ([`Collected`]) and the sort over them ([`Sorter`]): in
//! memory while they fit the statement's working memory, else sorted runs spilled to disk
//! (spill.rs) and merged as the result streams.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use permafrost_types::{Value, ValueRef};

use crate::error::{Result, SqlError};
use crate::expr::{ColumnSource, Cx, Expr};
use crate::plan::SelectPlan;
use crate::rows::{ColumnInfo, Rows};
use crate::workmem::{MemoryPool, WorkMem, values_size};

use super::keys::sort_order;
use super::spill::{Emit, SortSpec, SortedRest, SpillWriter};

/// Output rows with their sort keys, sorted at the end; past the statement's working memory
/// (when it may spill) each `work_mem` of them is sorted and written as a run, and the runs
/// are merged as the result is read.
pub(super) struct Sorter {
    collected: Collected,
    /// Per sort key, where its value is kept.
    slots: Vec<SortSlot>,
    mem: WorkMem,
    /// Where runs go (`None`: 54000 past `work_mem`).
    spill: Option<Arc<Path>>,
    /// The runs written so far.
    runs: Option<Box<SpillWriter>>,
}

impl Sorter {
    pub(super) fn new(
        columns: Arc<[ColumnInfo]>,
        slots: Vec<SortSlot>,
        mem: WorkMem,
        spill: Option<Arc<Path>>,
    ) -> Sorter {
        Sorter {
            collected: Collected::new(columns),
            slots,
            mem,
            spill,
            runs: None,
        }
    }

    /// A sorter of finished rows (grouped, or with their window calls computed), whose
    /// sort keys are all evaluated ([`Sorter::push_row`]).
    pub(super) fn of_finished(
        p: &SelectPlan,
        columns: &Arc<[ColumnInfo]>,
        limit: usize,
        spill: Option<Arc<Path>>,
    ) -> Sorter {
        let slots = (0..p.order.len()).map(SortSlot::Key).collect();
        Sorter::new(columns.clone(), slots, WorkMem::new(limit), spill)
    }

    pub(super) fn mem(&self) -> &WorkMem {
        &self.mem
    }

    /// Adds a row gathered by the walk: its output over `b` and the sort keys that are not
    /// output columns.
    pub(super) fn add_output(
        &mut self,
        p: &SelectPlan,
        b: &dyn ColumnSource,
        cx: &Cx<'_>,
        pool: Option<&Arc<MemoryPool>>,
    ) -> Result<()> {
        let collected = &mut self.collected;
        let before = collected.out.data_len();
        collected.out.begin_row();
        for e in &p.output {
            match e {
                Expr::Column { rel, col } => collected.out.push(b.column(*rel, *col)),
                e => {
                    collected.out.push(e.eval(b, cx)?.as_ref());
                    // The row so far, held again in the sorted result.
                    cx.budget
                        .set_held(self.mem.used() + 2 * (collected.out.data_len() - before));
                }
            }
        }
        // A key that is an output column is not kept twice.
        let keys = p
            .order
            .iter()
            .zip(self.slots.iter())
            .filter(|(_, s)| matches!(s, SortSlot::Key(_)))
            .map(|(k, _)| Ok(k.expr.eval(b, cx)?.into_value()))
            .collect::<Result<Vec<_>>>()?;
        collected.key_bytes += values_size(&keys);
        collected.keys.push(keys);
        self.settle(p, pool)
    }

    /// Adds a finished row: its output and sort keys evaluated over `src` in `cx`.
    pub(super) fn push_row(
        &mut self,
        p: &SelectPlan,
        src: &dyn ColumnSource,
        cx: &Cx<'_>,
        pool: Option<&Arc<MemoryPool>>,
    ) -> Result<()> {
        self.collected.push_row(p, src, cx)?;
        self.settle(p, pool)
    }

    /// Counts what the rows hold; past the limit, writes them as a run when it may spill.
    fn settle(&mut self, p: &SelectPlan, pool: Option<&Arc<MemoryPool>>) -> Result<()> {
        if past_limit(&mut self.mem, self.collected.held_bytes(), pool, self.spill.is_some())? {
            if self.runs.is_none() {
                let dir = self.spill.as_deref().expect("checked");
                self.runs = Some(Box::new(SpillWriter::create(dir)?));
            }
            self.collected
                .spill_run(p, &self.slots, self.runs.as_mut().expect("set above"))?;
            self.mem.holds(self.collected.held_bytes(), pool)?;
        }
        Ok(())
    }

    /// The sorted rows, with DISTINCT, DISTINCT ON, OFFSET and LIMIT applied: in memory, or
    /// (when runs were spilled) empty rows whose rest merges them.
    pub(super) fn finish(
        self,
        p: &SelectPlan,
        columns: &Arc<[ColumnInfo]>,
        limit: Option<u64>,
        offset: u64,
    ) -> Result<Rows> {
        let (Some(mut runs), Some(dir)) = (self.runs, self.spill) else {
            return Ok(emit_sorted(p, self.collected, &self.slots, limit, offset));
        };
        let mut collected = self.collected;
        collected.spill_run(p, &self.slots, &mut runs)?;
        let spec = SortSpec {
            keys: p.order.iter().map(|k| (k.desc, k.nulls_first)).collect(),
            tie_outputs: p.distinct,
            width: columns.len(),
        };
        let emit = Emit {
            distinct: p.distinct,
            distinct_on: p.distinct_on,
            offset,
            limit,
        };
        let rest = SortedRest::new(*runs, spec, emit, columns.clone(), &dir)?;
        let mut rows = Rows::empty(columns.clone());
        rows.set_rest(Box::new(rest));
        Ok(rows)
    }
}

/// Where a sort key's value is kept for each gathered row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum SortSlot {
    /// The row's output column at this position (`ORDER BY c` of `SELECT c`).
    Output(usize),
    /// The row's own list of sort keys, at this position.
    Key(usize),
}

/// Per sort key of `p`, where its value is kept: in the output when it is an output
/// column's expression, else in the row's list of keys.
pub(super) fn sort_slots(p: &SelectPlan) -> Vec<SortSlot> {
    let mut own = 0;
    p.order
        .iter()
        .map(|k| match p.output.iter().position(|o| *o == k.expr) {
            Some(j) => SortSlot::Output(j),
            None => {
                own += 1;
                SortSlot::Key(own - 1)
            }
        })
        .collect()
}

/// Output rows gathered to be sorted: the rows, encoded one after the other as a result
/// is (no allocation per row or per value), and each row's sort keys that are not output
/// columns ([`sort_slots`]; an empty list, which allocates nothing, when all are).
struct Collected {
    out: Rows,
    keys: Vec<Vec<Value>>,
    /// What the values of `keys` hold ([`values_size`]).
    key_bytes: usize,
}

impl Collected {
    fn new(columns: Arc<[ColumnInfo]>) -> Collected {
        Collected {
            out: Rows::empty(columns),
            keys: Vec::new(),
            key_bytes: 0,
        }
    }

    /// The bytes the gathered rows take, and what sorting them will take besides: the
    /// buffers as they are (room to grow included), the keys, and at the end the sorted
    /// result (the rows once more), each row's values side by side and the order.
    fn held_bytes(&self) -> usize {
        let rows = self.out.len();
        let width = self.out.columns().len();
        self.out.held_bytes()
            + self.keys.capacity() * std::mem::size_of::<Vec<Value>>()
            + self.key_bytes
            + self.out.data_len()
            + rows * (std::mem::size_of::<u32>() + std::mem::size_of::<usize>())
            + rows * width * std::mem::size_of::<ValueRef<'_>>()
    }

    /// A finished row of `p` (grouped, or with its window calls computed): its output and
    /// sort keys evaluated over `src` in `cx`.
    fn push_row(&mut self, p: &SelectPlan, src: &dyn ColumnSource, cx: &Cx<'_>) -> Result<()> {
        let out = p
            .output
            .iter()
            .map(|e| Ok(e.eval(src, cx)?.into_value()))
            .collect::<Result<Vec<_>>>()?;
        let keys = p
            .order
            .iter()
            .map(|k| Ok(k.expr.eval(src, cx)?.into_value()))
            .collect::<Result<Vec<_>>>()?;
        self.push(keys, &out);
        Ok(())
    }

    fn push(&mut self, keys: Vec<Value>, out: &[Value]) {
        self.out.push_row(out.iter().map(Value::as_ref));
        self.key_bytes += values_size(&keys);
        self.keys.push(keys);
    }
}

/// Every gathered row's values, decoded once, side by side (`width` per row), and the rows'
/// order by the sort keys of `p` — then, with `tie_outputs`, by their output values, so
/// that equal rows are next to each other.
fn sort_rows<'c>(
    p: &SelectPlan,
    c: &'c Collected,
    slots: &[SortSlot],
    tie_outputs: bool,
) -> (Vec<ValueRef<'c>>, Vec<usize>) {
    let width = c.out.columns().len();
    let mut values: Vec<ValueRef<'_>> = Vec::with_capacity(c.out.len() * width);
    for row in c.out.iter() {
        values.extend(row.values());
    }
    let at = |i: usize, slot: SortSlot| -> ValueRef<'_> { slot_value(&values, &c.keys, width, i, slot) };
    let mut order: Vec<usize> = (0..c.out.len()).collect();
    // One key whose every value is text (`ORDER BY c`): compared as the general order
    // below compares two texts, without going through it for each comparison.
    let texts: Option<Vec<&str>> = match (&p.order[..], slots) {
        ([_], [slot]) if !tie_outputs => (0..c.out.len())
            .map(|i| match at(i, *slot) {
                ValueRef::Text(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => None,
    };
    if let Some(texts) = texts {
        let desc = p.order[0].desc;
        order.sort_by(|&a, &b| {
            let o = texts[a].cmp(texts[b]);
            if desc { o.reverse() } else { o }
        });
    } else if !p.order.is_empty() || tie_outputs {
        order.sort_by(|&a, &b| {
            for (k, &slot) in p.order.iter().zip(slots) {
                let o = sort_order(at(a, slot), at(b, slot), k.desc, k.nulls_first);
                if o != Ordering::Equal {
                    return o;
                }
            }
            if tie_outputs {
                for j in 0..width {
                    let o = permafrost_types::total_compare(values[a * width + j], values[b * width + j]);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
            }
            Ordering::Equal
        });
    }
    (values, order)
}

/// The value of sort key `slot` of row `i`.
fn slot_value<'v>(
    values: &[ValueRef<'v>],
    keys: &'v [Vec<Value>],
    width: usize,
    i: usize,
    slot: SortSlot,
) -> ValueRef<'v> {
    match slot {
        SortSlot::Output(j) => values[i * width + j],
        SortSlot::Key(j) => keys[i][j].as_ref(),
    }
}

/// Counts `bytes` as what the statement holds; `Ok(true)` when that is past its
/// `work_mem` (or the pool has no room, or the memory budget has none free now: see
/// [`MemoryPool`]) and `spills` says they may go to disk instead of failing.
pub(super) fn past_limit(
    mem: &mut WorkMem,
    bytes: usize,
    pool: Option<&Arc<MemoryPool>>,
    spills: bool,
) -> Result<bool> {
    if spills && mem.past_free_room(bytes, pool) {
        mem.holds_uncovered(bytes);
        return Ok(true);
    }
    past_pool_limit(mem, bytes, pool, spills)
}

/// [`past_limit`] without the free room: for a plain result, which stays counted in the
/// pool until it has left (docs/architecture/wire.md), whereas one spilled early holds its
/// batches in flight uncounted (eight clients not reading took 29 MB more that way).
pub(super) fn past_pool_limit(
    mem: &mut WorkMem,
    bytes: usize,
    pool: Option<&Arc<MemoryPool>>,
    spills: bool,
) -> Result<bool> {
    match mem.holds(bytes, pool) {
        Ok(()) => Ok(false),
        Err(SqlError::OutOfWorkMem(_) | SqlError::StatementMemory { .. }) if spills => Ok(true),
        Err(e) => Err(e),
    }
}

impl Collected {
    /// Writes the rows gathered, sorted, as one run of `w` (each record the row's sort keys,
    /// then its output values; sorted by the output values after the keys for DISTINCT),
    /// and empties itself.
    fn spill_run(&mut self, p: &SelectPlan, slots: &[SortSlot], w: &mut SpillWriter) -> Result<()> {
        let c = std::mem::replace(self, Collected::new(self.out.columns().clone()));
        let width = c.out.columns().len();
        let (values, order) = sort_rows(p, &c, slots, p.distinct);
        for i in order {
            let keys = slots.iter().map(|&s| slot_value(&values, &c.keys, width, i, s));
            w.push(keys.chain(values[i * width..(i + 1) * width].iter().copied()))?;
        }
        w.end_run()
    }
}

fn emit_sorted(p: &SelectPlan, collected: Collected, slots: &[SortSlot], limit: Option<u64>, offset: u64) -> Rows {
    let (values, order) = sort_rows(p, &collected, slots, false);
    let Collected { out, keys, .. } = &collected;
    let width = out.columns().len();
    let row = |i: usize| &values[i * width..(i + 1) * width];
    let at = |i: usize, slot: SortSlot| -> ValueRef<'_> { slot_value(&values, keys, width, i, slot) };
    // When every output column is a sort key, equal rows are next to each other once
    // sorted: DISTINCT compares each row with the one before instead of hashing them all
    // (equal as `Value`s are: `total_compare`).
    let adjacent = (0..width).all(|j| slots.contains(&SortSlot::Output(j)));
    let same = |a: &[ValueRef<'_>], b: &[ValueRef<'_>]| {
        a.iter()
            .zip(b)
            .all(|(x, y)| permafrost_types::total_compare(*x, *y) == Ordering::Equal)
    };
    let mut seen: HashSet<Vec<Value>> = HashSet::new();
    let mut previous: Option<usize> = None;
    let mut skipped = 0u64;
    let mut rows = Rows::with_capacity(out.columns().clone(), out.data_len());
    // DISTINCT ON: the first row of each run equal in the leading sort keys.
    let on = &slots[..p.distinct_on.min(slots.len())];
    let mut run: Option<usize> = None;
    for i in order {
        if !on.is_empty() {
            if run.is_some_and(|q| {
                on.iter()
                    .all(|&s| permafrost_types::total_compare(at(q, s), at(i, s)) == Ordering::Equal)
            }) {
                continue;
            }
            run = Some(i);
        }
        if p.distinct {
            if adjacent {
                if previous.is_some_and(|q| same(row(q), row(i))) {
                    continue;
                }
                previous = Some(i);
            } else if !seen.insert(row(i).iter().map(|v| v.to_owned()).collect()) {
                continue;
            }
        }
        if skipped < offset {
            skipped += 1;
        } else if limit.is_some_and(|l| rows.len() as u64 >= l) {
            break;
        } else {
            rows.push_encoded_unchecked(out.encoded_row(i));
        }
    }
    rows
}
