//! The groups of an aggregate ([`AggTable`]: each group's key and accumulators) and how
//! they are finished into rows ([`finish_agg`]). Past the statement's working memory, when
//! it may spill, the table takes no new group: a row of a group it does not hold is written
//! to one of [`AGG_PARTS`] partitions on disk by the hash of its group key ([`AggSpill`]:
//! the key and each aggregate's input), and each partition is aggregated by itself after
//! the groups in memory are finished (partitioned again, one level deeper, if it too is
//! larger than the working memory). A group is whole in one place: in memory from its first
//! row, or in one partition.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::path::Path;
use std::sync::Arc;

use permafrost_types::{DataType, Value, ValueRef};

use crate::error::{Result, SqlError};
use crate::expr::{AggCall, AggFunc, ColumnSource, Cx, NoColumns, arith};
use crate::plan::{AggPlan, SelectPlan};
use crate::rows::{ColumnInfo, Rows};
use crate::value_budget::ValueBudget;
use crate::workmem::{MemoryPool, WorkMem, values_size};

use super::sorter::{Sorter, past_limit};
use super::spill::{SpillReader, SpillWriter};
use super::window;

/// Partitions a spilling aggregate writes the rows of groups it does not hold to.
pub(super) const AGG_PARTS: usize = 16;
/// How many times a partition may be partitioned again before the statement gives up
/// (54000): each level divides the groups by [`AGG_PARTS`].
const MAX_DEPTH: u32 = 6;

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
    /// What a collecting aggregate (`array_agg`, `string_agg`) was given: per row its
    /// value, then its extras ([`AggCall::extras`]).
    items: Vec<Vec<Value>>,
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

    /// Adds one input of `call` (`None`: `count(*)`, which has none) and its extras;
    /// gives the bytes it came to hold.
    fn add(&mut self, call: &AggCall, v: Option<Value>, extras: Vec<Value>) -> Result<usize> {
        let Some(v) = v else {
            self.count += 1;
            return Ok(0);
        };
        if v.is_null() && !call.func.keeps_nulls() {
            return Ok(0);
        }
        if v.is_null() && matches!(call.func, AggFunc::JsonObjectAgg { .. }) {
            return Err(SqlError::InvalidArgument("field name must not be null".into()));
        }
        if call.func.collects() {
            if let Some(set) = &mut self.distinct
                && !set.insert(v.clone())
            {
                return Ok(0);
            }
            let mut item = Vec::with_capacity(1 + extras.len());
            item.push(v);
            item.extend(extras);
            let bytes = values_size(&item) + std::mem::size_of::<Vec<Value>>();
            self.items.push(item);
            return Ok(bytes);
        }
        if let Some(set) = &mut self.distinct
            && !set.insert(v.clone())
        {
            return Ok(0);
        }
        self.count += 1;
        // A sum typed numeric over integers adds integers while they fit (numeric
        // arithmetic per row cost more than the rest of a range sum), then as numeric.
        let v = match (&v, call.func, call.ty) {
            (Value::Int(i), AggFunc::Sum, Some(DataType::Decimal { .. })) => match self.int_sum.checked_add(*i) {
                Some(sum) => {
                    self.int_sum = sum;
                    return Ok(0);
                }
                None => Value::Decimal(permafrost_types::Numeric::from(*i)),
            },
            _ => v,
        };
        self.value = Some(window::fold(call.func, self.value.take(), v)?);
        Ok(0)
    }

    /// A collecting aggregate's result: its items in the order of the call's ORDER BY
    /// (as given when it has none), as an array or a string; NULL without any.
    fn collected(&mut self, call: &AggCall, budget: &ValueBudget<'_>) -> Result<Value> {
        if self.items.is_empty() {
            return Ok(Value::Null);
        }
        let keys_at = 1 + usize::from(call.second.is_some());
        // DISTINCT without ORDER BY: in the values' order, as PostgreSQL sorts them to
        // find the distinct ones.
        if call.distinct && call.order.is_empty() {
            self.items
                .sort_by(|a, b| permafrost_types::total_compare(a[0].as_ref(), b[0].as_ref()));
        }
        if !call.order.is_empty() {
            self.items.sort_by(|a, b| {
                for (i, k) in call.order.iter().enumerate() {
                    let (x, y) = (&a[keys_at + i], &b[keys_at + i]);
                    let o = match (x.is_null(), y.is_null()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) if k.nulls_first => std::cmp::Ordering::Less,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) if k.nulls_first => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        _ if k.desc => permafrost_types::total_compare(y.as_ref(), x.as_ref()),
                        _ => permafrost_types::total_compare(x.as_ref(), y.as_ref()),
                    };
                    if o != std::cmp::Ordering::Equal {
                        return o;
                    }
                }
                std::cmp::Ordering::Equal
            });
        }
        let second_json = |item: &[Value], from| crate::expr::json::to_json(item[1].as_ref(), from);
        Ok(match call.func {
            AggFunc::JsonAgg { jsonb, from } => {
                let items: Vec<String> = self
                    .items
                    .iter()
                    .map(|item| crate::expr::json::to_json(item[0].as_ref(), from))
                    .collect();
                budget.check(items.iter().map(|i| i.len() + 4).sum::<usize>() + 2)?;
                let structured = matches!(
                    from,
                    crate::expr::json::JsonFrom::Array(_) | crate::expr::json::JsonFrom::Row
                );
                crate::expr::json::agg_array(&items, jsonb, structured)?
            }
            AggFunc::JsonObjectAgg { jsonb, from } => {
                let pairs: Vec<(String, String)> = self
                    .items
                    .iter()
                    .map(|item| (item[0].to_string(), second_json(item, from)))
                    .collect();
                budget.check(pairs.iter().map(|(k, v)| 2 * k.len() + v.len() + 8).sum::<usize>() + 4)?;
                crate::expr::json::agg_object(&pairs, jsonb)?
            }
            AggFunc::StringAgg => {
                let mut out = budget.text(0)?;
                for (i, item) in self.items.iter().enumerate() {
                    if i > 0
                        && let Some(d) = item[1].as_str()
                    {
                        out.push_str(d)?;
                    }
                    out.push_value(item[0].as_ref())?;
                }
                Value::text(out.finish())
            }
            _ => {
                let elem = match call.ty {
                    Some(DataType::Array(e)) => e.data_type(),
                    _ => DataType::Varchar(None),
                };
                let values = self
                    .items
                    .iter()
                    .map(|item| crate::expr::cast(item[0].clone(), &elem))
                    .collect::<Result<Vec<_>>>()?;
                crate::expr::array::literal_checked(&values, budget)?
            }
        })
    }
}

/// What [`AggTable::add_unless_full`] did with a row.
pub(super) enum Added {
    /// Its group was there, and came to hold about this many bytes more (what
    /// `array_agg` and `string_agg` collect).
    Existing(usize),
    /// It started a group, which took about this many bytes (with what it collected).
    New(usize),
    /// The table is full and holds no group with this key: the row is left to the caller.
    Refused(Vec<Value>),
}

impl AggTable {
    /// Adds a row to its group, or starts one unless `full`.
    pub(super) fn add_unless_full(
        &mut self,
        agg: &AggPlan,
        b: &dyn ColumnSource,
        cx: &Cx<'_>,
        full: bool,
    ) -> Result<Added> {
        let (gi, added) = if agg.groups.is_empty() && !self.keys.is_empty() {
            // One group, no key to look up.
            (0, Added::Existing(0))
        } else {
            let key = agg
                .groups
                .iter()
                .map(|g| Ok(g.eval(b, cx)?.into_value()))
                .collect::<Result<Vec<_>>>()?;
            match self.group(agg, key, full) {
                Ok(found) => found,
                Err(key) => return Ok(Added::Refused(key)),
            }
        };
        let mut grown = 0;
        for (call, acc) in agg.aggs.iter().zip(self.accs[gi].iter_mut()) {
            if let Some(v) = input(call, b, cx)? {
                grown += acc.add(call, v, extras(call, b, cx)?)?;
            }
        }
        Ok(added.grown(grown))
    }

    /// The group of `key`: found, or started unless `full` (then the key is given back).
    fn group(
        &mut self,
        agg: &AggPlan,
        mut key: Vec<Value>,
        full: bool,
    ) -> std::result::Result<(usize, Added), Vec<Value>> {
        if let Some(&i) = self.index.get(&key) {
            return Ok((i, Added::Existing(0)));
        }
        if full {
            return Err(key);
        }
        let i = self.keys.len();
        // The key twice (index and list), the accumulators, and the group's slots in the
        // index and the two lists, counted twice: a table or list that grows holds its old
        // allocation and one twice as large until it has moved (uncounted, a grouping of
        // millions of small groups held three times what it counted).
        let slots = std::mem::size_of::<(Vec<Value>, usize)>()
            + 1
            + std::mem::size_of::<Vec<Value>>()
            + std::mem::size_of::<Vec<Acc>>();
        let bytes = 2 * values_size(&key) + agg.aggs.len() * std::mem::size_of::<Acc>() + 2 * slots;
        // Kept at the length counted: a spilled record's key still has the record's buffer
        // (a spilled grouping of 180,000 groups held 11 MB more than it counted).
        key.shrink_to_fit();
        self.index.insert(key.clone(), i);
        self.keys.push(key);
        self.accs.push(new_accs(agg));
        Ok((i, Added::New(bytes)))
    }

    /// Adds a spilled row: its group's key, then per aggregate whether its FILTER passed,
    /// its input and its extras ([`AggSpill::push`]).
    fn add_spilled(&mut self, agg: &AggPlan, mut rec: Vec<Value>, full: bool) -> Result<Added> {
        let inputs = rec.split_off(agg.groups.len());
        let (gi, added) = match self.group(agg, rec, full) {
            Ok(found) => found,
            Err(mut key) => {
                key.extend(inputs);
                return Ok(Added::Refused(key));
            }
        };
        let mut grown = 0;
        let mut at = 0;
        for (call, acc) in agg.aggs.iter().zip(self.accs[gi].iter_mut()) {
            let width = 2 + call.extras();
            let rec = &inputs[at..at + width];
            at += width;
            if rec[0] == Value::Bool(true) {
                grown += acc.add(call, call.arg.as_ref().map(|_| rec[1].clone()), rec[2..].to_vec())?;
            }
        }
        Ok(added.grown(grown))
    }
}

impl Added {
    /// This, its group having come to hold `bytes` more.
    fn grown(self, bytes: usize) -> Added {
        match self {
            Added::Existing(b) => Added::Existing(b + bytes),
            Added::New(b) => Added::New(b + bytes),
            refused => refused,
        }
    }
}

/// The width of a spilled record of `agg`: its group key, then per aggregate whether its
/// FILTER passed, its input and its extras.
fn record_width(agg: &AggPlan) -> usize {
    agg.groups.len() + agg.aggs.iter().map(|c| 2 + c.extras()).sum::<usize>()
}

/// The extras of `call` for a row ([`AggCall::extras`]): its delimiter, its ORDER BY keys.
fn extras(call: &AggCall, b: &dyn ColumnSource, cx: &Cx<'_>) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(call.extras());
    if let Some(d) = &call.second {
        out.push(d.eval(b, cx)?.into_value());
    }
    for k in &call.order {
        out.push(k.expr.eval(b, cx)?.into_value());
    }
    Ok(out)
}

/// The input of `call` for a row: `None` when its FILTER leaves the row out, else its
/// argument's value (`None` inside for `count(*)`).
fn input(call: &AggCall, b: &dyn ColumnSource, cx: &Cx<'_>) -> Result<Option<Option<Value>>> {
    if let Some(f) = &call.filter
        && !f.test(b, cx)?
    {
        return Ok(None);
    }
    Ok(Some(match &call.arg {
        None => None,
        Some(e) => Some(e.eval(b, cx)?.into_value()),
    }))
}

pub(super) fn new_accs(agg: &AggPlan) -> Vec<Acc> {
    agg.aggs
        .iter()
        .map(|c| Acc {
            value: None,
            count: 0,
            distinct: c.distinct.then(HashSet::new),
            int_sum: 0,
            items: Vec::new(),
        })
        .collect()
}

/// The rows of groups an aggregate past its working memory did not hold, partitioned on
/// disk by their group key's hash.
pub(super) struct AggSpill {
    parts: Vec<SpillWriter>,
    depth: u32,
}

impl AggSpill {
    pub(super) fn create(dir: &Path, depth: u32) -> Result<AggSpill> {
        if depth > MAX_DEPTH {
            return Err(SqlError::Unsupported(
                "an aggregate whose groups stay larger than work_mem after partitioning them six times".into(),
            ));
        }
        Ok(AggSpill {
            parts: (0..AGG_PARTS)
                .map(|_| SpillWriter::create(dir))
                .collect::<Result<_>>()?,
            depth,
        })
    }

    /// Writes a row of group `key` that the table refused: the key, then per aggregate
    /// whether its FILTER passed, its input (NULL for none) and its extras.
    pub(super) fn push_row(&mut self, agg: &AggPlan, key: Vec<Value>, b: &dyn ColumnSource, cx: &Cx<'_>) -> Result<()> {
        let mut rec = key;
        for call in &agg.aggs {
            match input(call, b, cx)? {
                None => {
                    rec.push(Value::Bool(false));
                    rec.extend(std::iter::repeat_n(Value::Null, 1 + call.extras()));
                }
                Some(v) => {
                    rec.push(Value::Bool(true));
                    rec.push(v.unwrap_or(Value::Null));
                    rec.extend(extras(call, b, cx)?);
                }
            }
        }
        self.push(agg, rec)
    }

    /// Writes a record (a key and its inputs) to the partition of its key.
    fn push(&mut self, agg: &AggPlan, rec: Vec<Value>) -> Result<()> {
        let hash = foldhash::fast::FixedState::with_seed(u64::from(self.depth)).hash_one(&rec[..agg.groups.len()]);
        let part = (hash % AGG_PARTS as u64) as usize;
        self.parts[part].push(rec.iter().map(Value::as_ref))
    }
}

/// What finishing an aggregate needs besides its table.
pub(super) struct AggFinish<'a> {
    pub(super) p: &'a SelectPlan,
    pub(super) agg: &'a AggPlan,
    pub(super) columns: &'a Arc<[ColumnInfo]>,
    pub(super) cx: &'a Cx<'a>,
    pub(super) limit: Option<u64>,
    pub(super) offset: u64,
    pub(super) work_mem: usize,
    pub(super) spill: Option<Arc<Path>>,
    /// The statement pool the spilled groups draw from as they are added up.
    pub(super) pool: Option<&'a Arc<MemoryPool>>,
}

/// The result of an aggregate: its groups in memory, then those of each spilled partition
/// (aggregated one partition at a time), finished, sorted and cut by LIMIT and OFFSET.
pub(super) fn finish_agg(f: &AggFinish<'_>, mut table: AggTable, spilled: Option<AggSpill>) -> Result<Rows> {
    let (p, agg, cx) = (f.p, f.agg, f.cx);
    if agg.groups.is_empty() && table.keys.is_empty() {
        table.keys.push(vec![]);
        table.accs.push(new_accs(agg));
    }
    if !p.windows.is_empty() {
        return finish_windowed(f, table);
    }
    let mut sorter = Sorter::of_finished(p, f.columns, f.work_mem, f.spill.clone());
    emit_groups(f, table, &mut |key, finals| {
        sorter.push_row(p, &NoColumns, &cx.with_groups(key, finals), None)
    })?;
    let mut pending: Vec<AggSpill> = spilled.into_iter().collect();
    while let Some(spill) = pending.pop() {
        let dir = f.spill.as_deref().expect("an aggregate spills only with a directory");
        for part in spill.parts {
            let mut reader = SpillReader::new(part)?;
            let mut table = AggTable::default();
            let mut mem = WorkMem::new(f.work_mem);
            let mut deeper: Option<AggSpill> = None;
            while let Some(rec) = reader.next(record_width(agg))? {
                match table.add_spilled(agg, rec, deeper.is_some())? {
                    Added::Existing(0) => {}
                    Added::Existing(bytes) if deeper.is_some() => mem.add(bytes, f.pool)?,
                    Added::Existing(bytes) | Added::New(bytes) => {
                        let total = mem.used() + bytes;
                        if past_limit(&mut mem, total, f.pool, true)? && deeper.is_none() {
                            deeper = Some(AggSpill::create(dir, spill.depth + 1)?);
                        }
                    }
                    Added::Refused(rec) => deeper.as_mut().expect("refused only when full").push(agg, rec)?,
                }
            }
            emit_groups(f, table, &mut |key, finals| {
                sorter.push_row(p, &NoColumns, &cx.with_groups(key, finals), None)
            })?;
            pending.extend(deeper);
        }
    }
    sorter.finish(p, f.columns, f.limit, f.offset)
}

/// Takes a finished group: its key and its aggregates' final values.
type GroupSink<'a> = dyn FnMut(&[Value], &[Value]) -> Result<()> + 'a;

/// Each group of `table` that passes HAVING, with its aggregates' final values, to `out`.
fn emit_groups(f: &AggFinish<'_>, mut table: AggTable, out: &mut GroupSink<'_>) -> Result<()> {
    let agg = f.agg;
    for (call, acc) in table
        .accs
        .iter_mut()
        .flat_map(|accs| agg.aggs.iter().zip(accs.iter_mut()))
    {
        if call.func == AggFunc::Sum && matches!(call.ty, Some(DataType::Decimal { .. })) {
            acc.settle()?;
        }
    }
    for (key, accs) in table.keys.iter().zip(table.accs.iter_mut()) {
        let finals: Vec<Value> = agg
            .aggs
            .iter()
            .zip(accs.iter_mut())
            .map(|(call, acc)| -> Result<Value> {
                Ok(match call.func {
                    func if func.collects() => acc.collected(call, &f.cx.budget)?,
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
        if let Some(h) = &agg.having
            && !h.test(&NoColumns, &f.cx.with_groups(key, &finals))?
        {
            continue;
        }
        out(key, &finals)?;
    }
    Ok(())
}

/// The groups of a query with window calls over them: every group is computed first (they
/// are all in memory: such an aggregate does not spill), then its window values.
fn finish_windowed(f: &AggFinish<'_>, table: AggTable) -> Result<Rows> {
    let (p, cx) = (f.p, f.cx);
    let mut passing: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    emit_groups(f, table, &mut |key, finals| {
        passing.push((key.to_vec(), finals.to_vec()));
        Ok(())
    })?;
    let w = window::compute(&p.windows, passing.len(), &|i, e| {
        e.eval_const(&cx.with_groups(&passing[i].0, &passing[i].1))
    })?;
    let mut sorter = Sorter::of_finished(p, f.columns, f.work_mem, f.spill.clone());
    for ((key, finals), w) in passing.iter().zip(&w) {
        sorter.push_row(p, &NoColumns, &cx.with_groups(key, finals).with_windows(w), None)?;
    }
    sorter.finish(p, f.columns, f.limit, f.offset)
}

pub(super) fn to_numeric(v: &Value) -> Value {
    match v {
        Value::Int(i) => Value::Decimal((*i).into()),
        other => other.clone(),
    }
}
