//! What a SELECT gathers from the rows it visits: the result as it streams, the rows to
//! sort, or the groups of an aggregate ([`Gather`]), and how it finishes them.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;

use permafrost_types::{DataType, Value, ValueRef};

use crate::error::{Result, SqlError};
use crate::expr::AggFunc;
use crate::expr::{ColumnSource, Cx, Expr, NoColumns, arith};
use crate::plan::{AggPlan, SelectPlan};
use crate::rows::{ColumnInfo, Rows};
use crate::value_budget::ValueBudget;
use crate::workmem::{MemoryPool, WorkMem, values_size};

use super::keys::sort_order;
use super::window;

/// What a SELECT gathers from the rows it visits.
pub(super) enum Gather {
    /// Rows go straight into the result (no ORDER BY, DISTINCT or aggregate).
    Stream {
        rows: Rows,
        /// Rows skipped for OFFSET so far.
        skipped: u64,
        /// Rows produced so far (in this buffer and the ones handed out before it).
        emitted: u64,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
    },
    /// Output rows with their sort keys, sorted at the end.
    Sorted {
        collected: Collected,
        /// Per sort key, where its value is kept.
        slots: Vec<SortSlot>,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
    },
    Agg {
        table: AggTable,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
    },
    /// Rows kept as the columns they read (`SelectPlan::image`) until the query's window
    /// calls are computed over all of them.
    Windowed {
        images: Vec<Vec<Value>>,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
    },
}

impl Gather {
    pub(super) fn new(
        p: &SelectPlan,
        columns: &Arc<[ColumnInfo]>,
        work_mem: usize,
        limit: Option<u64>,
        offset: u64,
    ) -> Gather {
        let mem = WorkMem::new(work_mem);
        if !p.windows.is_empty() && p.agg.is_none() {
            Gather::Windowed {
                images: Vec::new(),
                limit,
                offset,
                mem,
            }
        } else if p.agg.is_some() {
            Gather::Agg {
                table: AggTable::default(),
                limit,
                offset,
                mem,
            }
        } else if p.order.is_empty() && !p.distinct {
            Gather::Stream {
                rows: Rows::with_capacity(columns.clone(), p.size_hint()),
                skipped: 0,
                emitted: 0,
                limit,
                offset,
                mem,
            }
        } else {
            Gather::Sorted {
                collected: Collected::new(columns.clone()),
                slots: sort_slots(p),
                limit,
                offset,
                mem,
            }
        }
    }

    /// The budget of the values the statement's expressions build: its `work_mem`, less
    /// what it holds, and room in `pool` ([`crate::value_budget`]).
    pub(super) fn budget<'p>(&self, pool: Option<&'p MemoryPool>) -> ValueBudget<'p> {
        let mem = match self {
            Gather::Stream { mem, .. }
            | Gather::Sorted { mem, .. }
            | Gather::Agg { mem, .. }
            | Gather::Windowed { mem, .. } => mem,
        };
        let b = ValueBudget::new(mem.limit(), pool);
        b.set_held(mem.used());
        b
    }

    /// Whether no further row can change the result (a streamed LIMIT reached).
    pub(super) fn is_full(&self) -> bool {
        matches!(self, Gather::Stream { emitted, limit: Some(l), .. } if emitted >= l)
    }

    pub(super) fn add(
        &mut self,
        p: &SelectPlan,
        b: &dyn ColumnSource,
        cx: &Cx<'_>,
        pool: Option<&Arc<MemoryPool>>,
    ) -> Result<ControlFlow<()>> {
        match self {
            Gather::Windowed { images, mem, .. } => {
                let image: Vec<Value> = p.image.iter().map(|&(r, c)| b.column(r, c).to_owned()).collect();
                mem.add(values_size(&image), pool)?;
                cx.budget.set_held(mem.used());
                images.push(image);
                Ok(ControlFlow::Continue(()))
            }
            Gather::Agg { table, mem, .. } => {
                let agg = p.agg.as_ref().expect("an aggregate plan");
                if let Some(new_group) = table.add(agg, b, cx)? {
                    mem.add(new_group, pool)?;
                    cx.budget.set_held(mem.used());
                }
                Ok(ControlFlow::Continue(()))
            }
            Gather::Stream {
                rows,
                skipped,
                emitted,
                limit,
                offset,
                mem,
            } => {
                if limit.is_some_and(|l| *emitted >= l) {
                    return Ok(ControlFlow::Break(()));
                }
                if *skipped < *offset {
                    *skipped += 1;
                    return Ok(ControlFlow::Continue(()));
                }
                rows.begin_row();
                for e in &p.output {
                    match e {
                        Expr::Column { rel, col } => rows.push(b.column(*rel, *col)),
                        e => {
                            rows.push(e.eval(b, cx)?.as_ref());
                            // What the row holds so far counts against its next value.
                            cx.budget.set_held(rows.data_len() + rows.len() * 4);
                        }
                    }
                }
                *emitted += 1;
                mem.holds(rows.held_bytes(), pool)?;
                cx.budget.set_held(mem.used());
                Ok(if limit.is_some_and(|l| *emitted >= l) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            }
            Gather::Sorted {
                collected, slots, mem, ..
            } => {
                let before = collected.out.data_len();
                collected.out.begin_row();
                for e in &p.output {
                    match e {
                        Expr::Column { rel, col } => collected.out.push(b.column(*rel, *col)),
                        e => {
                            collected.out.push(e.eval(b, cx)?.as_ref());
                            // The row so far, held again in the sorted result.
                            cx.budget.set_held(mem.used() + 2 * (collected.out.data_len() - before));
                        }
                    }
                }
                // A key that is an output column is not kept twice.
                let keys = p
                    .order
                    .iter()
                    .zip(slots.iter())
                    .filter(|(_, s)| matches!(s, SortSlot::Key(_)))
                    .map(|(k, _)| Ok(k.expr.eval(b, cx)?.into_value()))
                    .collect::<Result<Vec<_>>>()?;
                collected.key_bytes += values_size(&keys);
                collected.keys.push(keys);
                mem.holds(collected.held_bytes(), pool)?;
                cx.budget.set_held(mem.used());
                Ok(ControlFlow::Continue(()))
            }
        }
    }

    /// The rows that can be answered now and the state to go on gathering with: for a
    /// streamed result its rows so far; otherwise nothing yet.
    pub(super) fn split(mut self, p: &SelectPlan, columns: &Arc<[ColumnInfo]>) -> (Rows, Gather) {
        let first = match &mut self {
            Gather::Stream { rows, .. } => {
                p.note_size(rows.data_len());
                std::mem::replace(rows, Rows::empty(columns.clone()))
            }
            _ => Rows::empty(columns.clone()),
        };
        (first, self)
    }

    pub(super) fn finish(self, p: &SelectPlan, columns: &Arc<[ColumnInfo]>, cx: &Cx<'_>) -> Result<Rows> {
        match self {
            Gather::Stream { rows, .. } => {
                p.note_size(rows.data_len());
                Ok(rows)
            }
            Gather::Sorted {
                collected,
                slots,
                limit,
                offset,
                ..
            } => Ok(emit_sorted(p, collected, &slots, limit, offset)),
            Gather::Windowed {
                images, limit, offset, ..
            } => {
                let image = |i: usize| window::Image {
                    cols: &p.image,
                    values: &images[i],
                };
                let w = window::compute(&p.windows, images.len(), &|i, e| {
                    Ok(e.eval(&image(i), cx)?.into_value())
                })?;
                let mut collected = Collected::new(columns.clone());
                for (i, w) in w.iter().enumerate() {
                    collected.push_row(p, &image(i), &cx.with_windows(w))?;
                }
                let slots: Vec<SortSlot> = (0..p.order.len()).map(SortSlot::Key).collect();
                Ok(emit_sorted(p, collected, &slots, limit, offset))
            }
            Gather::Agg {
                table, limit, offset, ..
            } => finish_agg(
                p,
                p.agg.as_ref().expect("an aggregate plan"),
                table,
                columns,
                cx,
                limit,
                offset,
            ),
        }
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
pub(super) struct Collected {
    out: Rows,
    keys: Vec<Vec<Value>>,
    /// What the values of `keys` hold ([`values_size`]).
    key_bytes: usize,
}

impl Collected {
    pub(super) fn new(columns: Arc<[ColumnInfo]>) -> Collected {
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

pub(super) fn emit_sorted(
    p: &SelectPlan,
    collected: Collected,
    slots: &[SortSlot],
    limit: Option<u64>,
    offset: u64,
) -> Rows {
    let Collected { out, keys, .. } = collected;
    let width = out.columns().len();
    // Every row's values, decoded once, side by side.
    let mut values: Vec<ValueRef<'_>> = Vec::with_capacity(out.len() * width);
    for row in out.iter() {
        values.extend(row.values());
    }
    let row = |i: usize| &values[i * width..(i + 1) * width];
    let at = |i: usize, slot: SortSlot| -> ValueRef<'_> {
        match slot {
            SortSlot::Output(j) => values[i * width + j],
            SortSlot::Key(j) => keys[i][j].as_ref(),
        }
    };
    let mut order: Vec<usize> = (0..out.len()).collect();
    // One key whose every value is text (`ORDER BY c`): compared as the general order
    // below compares two texts, without going through it for each comparison.
    let texts: Option<Vec<&str>> = match (&p.order[..], slots) {
        ([_], [slot]) => (0..out.len())
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
    } else if !p.order.is_empty() {
        order.sort_by(|&a, &b| {
            for (k, &slot) in p.order.iter().zip(slots) {
                let o = sort_order(at(a, slot), at(b, slot), k.desc, k.nulls_first);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
    }
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

#[derive(Default)]
pub(super) struct AggTable {
    index: HashMap<Vec<Value>, usize>,
    keys: Vec<Vec<Value>>,
    accs: Vec<Vec<Acc>>,
}

#[derive(Clone)]
pub(super) struct Acc {
    value: Option<Value>,
    count: i64,
    distinct: Option<HashSet<Value>>,
    /// Integers a numeric-typed SUM has added and not yet put into `value`
    /// ([`Acc::settle`]).
    int_sum: i64,
}

impl Acc {
    /// Puts the integers added aside into `value` (before it is read).
    fn settle(&mut self) -> Result<()> {
        if self.int_sum != 0 || (self.value.is_none() && self.count > 0) {
            let part = Value::Decimal(permafrost_types::Numeric::from(self.int_sum));
            self.value = Some(match self.value.take() {
                None => part,
                Some(x) => arith(crate::expr::ArithOp::Add, x.as_ref(), part.as_ref())?,
            });
            self.int_sum = 0;
        }
        Ok(())
    }
}

impl AggTable {
    /// Adds a row to its group; returns about the bytes a new group took (`None` when the
    /// group existed).
    pub(super) fn add(&mut self, agg: &AggPlan, b: &dyn ColumnSource, cx: &Cx<'_>) -> Result<Option<usize>> {
        let mut new_group = None;
        let gi = if agg.groups.is_empty() && !self.keys.is_empty() {
            // One group, no key to look up.
            0
        } else {
            let key = agg
                .groups
                .iter()
                .map(|g| Ok(g.eval(b, cx)?.into_value()))
                .collect::<Result<Vec<_>>>()?;
            match self.index.get(&key) {
                Some(&i) => i,
                None => {
                    let i = self.keys.len();
                    // The key twice (index and list), the accumulators.
                    new_group = Some(2 * values_size(&key) + agg.aggs.len() * std::mem::size_of::<Acc>());
                    self.index.insert(key.clone(), i);
                    self.keys.push(key);
                    self.accs.push(new_accs(agg));
                    i
                }
            }
        };
        for (call, acc) in agg.aggs.iter().zip(self.accs[gi].iter_mut()) {
            if let Some(f) = &call.filter
                && !f.test(b, cx)?
            {
                continue;
            }
            let v = match &call.arg {
                None => {
                    acc.count += 1;
                    continue;
                }
                Some(e) => e.eval(b, cx)?.into_value(),
            };
            if v.is_null() {
                continue;
            }
            if let Some(set) = &mut acc.distinct
                && !set.insert(v.clone())
            {
                continue;
            }
            acc.count += 1;
            // A sum typed numeric over integers adds integers while they fit (numeric
            // arithmetic per row cost more than the rest of a range sum), then as numeric.
            let v = match (&v, call.func, call.ty) {
                (Value::Int(i), AggFunc::Sum, Some(DataType::Decimal { .. })) => match acc.int_sum.checked_add(*i) {
                    Some(sum) => {
                        acc.int_sum = sum;
                        continue;
                    }
                    None => Value::Decimal(permafrost_types::Numeric::from(*i)),
                },
                _ => v,
            };
            acc.value = Some(window::fold(call.func, acc.value.take(), v)?);
        }
        Ok(new_group)
    }
}

pub(super) fn new_accs(agg: &AggPlan) -> Vec<Acc> {
    agg.aggs
        .iter()
        .map(|c| Acc {
            value: None,
            count: 0,
            distinct: c.distinct.then(HashSet::new),
            int_sum: 0,
        })
        .collect()
}

pub(super) fn finish_agg(
    p: &SelectPlan,
    agg: &AggPlan,
    mut table: AggTable,
    columns: &Arc<[ColumnInfo]>,
    cx: &Cx<'_>,
    limit: Option<u64>,
    offset: u64,
) -> Result<Rows> {
    if agg.groups.is_empty() && table.keys.is_empty() {
        table.keys.push(vec![]);
        table.accs.push(new_accs(agg));
    }
    let mut collected = Collected::new(columns.clone());
    for (call, acc) in table
        .accs
        .iter_mut()
        .flat_map(|accs| agg.aggs.iter().zip(accs.iter_mut()))
    {
        if call.func == AggFunc::Sum && matches!(call.ty, Some(DataType::Decimal { .. })) {
            acc.settle()?;
        }
    }
    let mut passing: Vec<(&Vec<Value>, Vec<Value>)> = Vec::new();
    for (key, accs) in table.keys.iter().zip(&table.accs) {
        let finals: Vec<Value> = agg
            .aggs
            .iter()
            .zip(accs)
            .map(|(call, acc)| -> Result<Value> {
                Ok(match call.func {
                    AggFunc::Count => Value::Int(acc.count),
                    AggFunc::Avg => match &acc.value {
                        None => Value::Null,
                        Some(Value::Double(d)) => Value::Double(d / acc.count as f64),
                        Some(sum) => arith(
                            crate::expr::ArithOp::Div,
                            to_numeric(sum).as_ref(),
                            ValueRef::Int(acc.count),
                        )?,
                    },
                    _ => acc.value.clone().unwrap_or(Value::Null),
                })
            })
            .collect::<Result<_>>()?;
        let pcx = cx.with_groups(key, &finals);
        if let Some(h) = &agg.having
            && !h.test(&NoColumns, &pcx)?
        {
            continue;
        }
        if !p.windows.is_empty() {
            // (Its window calls are computed over every group first.)
            passing.push((key, finals));
            continue;
        }
        collected.push_row(p, &NoColumns, &pcx)?;
    }
    if !p.windows.is_empty() {
        let w = window::compute(&p.windows, passing.len(), &|i, e| {
            e.eval_const(&cx.with_groups(passing[i].0, &passing[i].1))
        })?;
        for ((key, finals), w) in passing.iter().zip(&w) {
            collected.push_row(p, &NoColumns, &cx.with_groups(key, finals).with_windows(w))?;
        }
    }
    let slots: Vec<SortSlot> = (0..p.order.len()).map(SortSlot::Key).collect();
    Ok(emit_sorted(p, collected, &slots, limit, offset))
}

pub(super) fn to_numeric(v: &Value) -> Value {
    match v {
        Value::Int(i) => Value::Decimal((*i).into()),
        other => other.clone(),
    }
}

/// The value of a LIMIT or OFFSET (`what`), if any.
pub(super) fn limit_value(e: &Option<Expr>, cx: &Cx<'_>, what: &str) -> Result<Option<u64>> {
    let Some(e) = e else { return Ok(None) };
    let v = match e.eval_const(cx)? {
        // A numeric or double argument is cast to bigint, as PostgreSQL does (rounded;
        // 22003 past its range).
        v @ (Value::Decimal(_) | Value::Double(_)) => v.coerce_to(&DataType::BigInt)?,
        v => v,
    };
    match v {
        Value::Null => Ok(None),
        Value::Int(i) if i >= 0 => Ok(Some(i as u64)),
        Value::Int(_) if what == "OFFSET" => Err(SqlError::NegativeOffset),
        Value::Int(_) => Err(SqlError::InvalidLimit(format!("{what} must not be negative"))),
        other => Err(SqlError::Type(format!(
            "argument of {what} must be an integer, not {}",
            other.as_ref().kind_name()
        ))),
    }
}

/// What a SELECT gathers into, with its LIMIT and OFFSET, and whether it has rows to read
/// (false when a predicate that reads no relation is false).
pub(super) fn start_select(
    p: &SelectPlan,
    columns: &Arc<[ColumnInfo]>,
    work_mem: usize,
    cx: &Cx<'_>,
) -> Result<(Gather, bool)> {
    let limit = limit_value(&p.limit, cx, "LIMIT")?;
    let offset = limit_value(&p.offset, cx, "OFFSET")?.unwrap_or(0);
    let gather = Gather::new(p, columns, work_mem, limit, offset);
    for f in &p.pre_filters {
        if !f.test(&NoColumns, cx)? {
            return Ok((gather, false));
        }
    }
    Ok((gather, true))
}
