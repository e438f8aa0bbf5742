//! Window function calls over a query's rows (after WHERE, GROUP BY and HAVING, before
//! DISTINCT, ORDER BY and LIMIT): for each call, the rows sorted by its partition and
//! order keys, then each partition walked once. Ranking (`row_number`, `rank`,
//! `dense_rank`, `ntile`, `percent_rank`, `cume_dist`) and offsets (`lag`, `lead`) read
//! the partition; value functions (`first_value`, `last_value`, `nth_value`) and
//! aggregates read each row's frame. A frame's ends only move forward from one row to the
//! next, so an aggregate adds the rows entering it and takes out those leaving it (count,
//! and sums and averages of exact numbers); where it cannot take a value out (`min`,
//! `max`, floating-point sums) it starts again from the frame's new first row.

use std::cmp::Ordering;

use permafrost_types::{Value, ValueRef, total_compare};

use crate::error::{Result, SqlError};
use crate::expr::window::{FrameBound, FrameUnits, WinFunc, WindowCall};
use crate::expr::{AggFunc, ArithOp, ColumnSource, Expr, arith, compare};

use super::keys::sort_order;

/// The values of `windows` for `n` rows (`result[row][call]`); `eval(row, e)` evaluates
/// expression `e` on a row.
pub(super) fn compute(
    windows: &[WindowCall],
    n: usize,
    eval: &dyn Fn(usize, &Expr) -> Result<Value>,
) -> Result<Vec<Vec<Value>>> {
    let mut out = vec![Vec::with_capacity(windows.len()); n];
    for w in windows {
        let values = one(w, n, eval)?;
        for (row, v) in out.iter_mut().zip(values) {
            row.push(v);
        }
    }
    Ok(out)
}

/// A row's frame: the positions `[start, end)` in its partition.
pub(super) type Frame = (usize, usize);

/// The values of window call `w` for `n` rows, in row order.
pub(super) fn one(w: &WindowCall, n: usize, eval: &dyn Fn(usize, &Expr) -> Result<Value>) -> Result<Vec<Value>> {
    Ok(one_framed(w, n, eval)?.0)
}

/// [`one`], and for a call that reads a frame each row's frame, as positions `[start,
/// end)` in its partition (`(0, 0)` for other calls).
pub(super) fn one_framed(
    w: &WindowCall,
    n: usize,
    eval: &dyn Fn(usize, &Expr) -> Result<Value>,
) -> Result<(Vec<Value>, Vec<Frame>)> {
    let parts: Vec<Vec<Value>> = (0..n)
        .map(|i| w.partition.iter().map(|e| eval(i, e)).collect())
        .collect::<Result<_>>()?;
    let keys: Vec<Vec<Value>> = (0..n)
        .map(|i| w.order.iter().map(|(e, _, _)| eval(i, e)).collect())
        .collect::<Result<_>>()?;
    let same_part = |a: usize, b: usize| {
        parts[a]
            .iter()
            .zip(&parts[b])
            .all(|(x, y)| total_compare(x.as_ref(), y.as_ref()) == Ordering::Equal)
    };
    let peers = |a: usize, b: usize| {
        keys[a]
            .iter()
            .zip(&keys[b])
            .all(|(x, y)| total_compare(x.as_ref(), y.as_ref()) == Ordering::Equal)
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        for (x, y) in parts[a].iter().zip(&parts[b]) {
            let o = total_compare(x.as_ref(), y.as_ref());
            if o != Ordering::Equal {
                return o;
            }
        }
        for ((x, y), (_, desc, nf)) in keys[a].iter().zip(&keys[b]).zip(&w.order) {
            let o = sort_order(x.as_ref(), y.as_ref(), *desc, *nf);
            if o != Ordering::Equal {
                return o;
            }
        }
        a.cmp(&b)
    });
    let arg = |row: usize, k: usize| -> Result<Value> {
        match w.args.get(k) {
            Some(e) => eval(row, e),
            None => Ok(Value::Null),
        }
    };
    let mut out = vec![Value::Null; n];
    let mut frames = Vec::new();
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && same_part(order[start], order[end]) {
            end += 1;
        }
        let part = &order[start..end];
        // Peer groups: runs of rows equal in the order keys.
        let mut groups: Vec<(usize, usize)> = Vec::new();
        let mut g = 0;
        while g < part.len() {
            let mut h = g + 1;
            while h < part.len() && peers(part[g], part[h]) {
                h += 1;
            }
            groups.push((g, h));
            g = h;
        }
        match w.func {
            WinFunc::RowNumber => {
                for (pos, &row) in part.iter().enumerate() {
                    out[row] = Value::Int(pos as i64 + 1);
                }
            }
            WinFunc::Rank | WinFunc::DenseRank => {
                for (gi, &(g0, g1)) in groups.iter().enumerate() {
                    let r = if w.func == WinFunc::Rank { g0 + 1 } else { gi + 1 };
                    for &row in &part[g0..g1] {
                        out[row] = Value::Int(r as i64);
                    }
                }
            }
            WinFunc::Lag | WinFunc::Lead => {
                for (pos, &row) in part.iter().enumerate() {
                    let by = match arg(row, 1)? {
                        Value::Null if w.args.len() > 1 => {
                            out[row] = Value::Null;
                            continue;
                        }
                        Value::Null => 1,
                        Value::Int(k) => k,
                        other => {
                            return Err(SqlError::Type(format!(
                                "the offset of lag / lead must be an integer, not {}",
                                other.as_ref().kind_name()
                            )));
                        }
                    };
                    let target = if w.func == WinFunc::Lag {
                        pos as i64 - by
                    } else {
                        pos as i64 + by
                    };
                    out[row] = match usize::try_from(target).ok().and_then(|t| part.get(t)) {
                        Some(&t) => arg(t, 0)?,
                        None => arg(row, 2)?,
                    };
                }
            }
            WinFunc::Ntile => {
                let rows = part.len();
                for (pos, &row) in part.iter().enumerate() {
                    out[row] = match positive(arg(row, 0)?, "ntile")? {
                        None => Value::Null,
                        Some(buckets) => Value::Int(bucket(pos, rows, buckets) as i64),
                    };
                }
            }
            WinFunc::PercentRank | WinFunc::CumeDist => {
                let rows = part.len() as f64;
                for &(g0, g1) in &groups {
                    let v = if w.func == WinFunc::PercentRank {
                        if part.len() > 1 { g0 as f64 / (rows - 1.0) } else { 0.0 }
                    } else {
                        g1 as f64 / rows
                    };
                    for &row in &part[g0..g1] {
                        out[row] = Value::Double(v);
                    }
                }
            }
            WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue | WinFunc::Agg(_) => {
                let bounds = framed(w, part, &groups, &keys, &arg, eval, &mut out)?;
                frames.resize(n, (0, 0));
                for (&row, b) in part.iter().zip(bounds) {
                    frames[row] = b;
                }
            }
        }
        start = end;
    }
    Ok((out, frames))
}

/// Value functions and aggregates over each row's frame, for the rows of one partition
/// `part` (in window order) cut into peer groups `groups`; the frames read.
fn framed(
    w: &WindowCall,
    part: &[usize],
    groups: &[(usize, usize)],
    keys: &[Vec<Value>],
    arg: &dyn Fn(usize, usize) -> Result<Value>,
    eval: &dyn Fn(usize, &Expr) -> Result<Value>,
    out: &mut [Value],
) -> Result<Vec<(usize, usize)>> {
    let offset = |e: &Expr, start: bool| frame_offset(w, eval(part[0], e)?, start);
    let bounds = frame_bounds(w, part, groups, keys, &offset)?;
    match w.func {
        WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue => {
            for (pos, &(s, e)) in bounds.iter().enumerate() {
                let row = part[pos];
                let at = match w.func {
                    WinFunc::FirstValue => (s < e).then_some(s),
                    WinFunc::LastValue => (s < e).then(|| e - 1),
                    _ => positive(arg(row, 1)?, "nth_value")?
                        .map(|k| s.saturating_add(k - 1))
                        .filter(|&i| i < e),
                };
                out[row] = match at {
                    Some(i) => arg(part[i], 0)?,
                    None => Value::Null,
                };
            }
        }
        WinFunc::Agg(func) => {
            let values: Vec<Value> = part
                .iter()
                .map(|&r| if w.star { Ok(Value::Bool(true)) } else { arg(r, 0) })
                .collect::<Result<_>>()?;
            let mut acc = FrameAcc::default();
            let (mut lo, mut hi) = (0, 0);
            for (pos, &(s, e)) in bounds.iter().enumerate() {
                let e = e.max(s);
                if s > lo {
                    if acc.removable(func) {
                        for v in &values[lo..s.min(hi)] {
                            acc.remove(func, v)?;
                        }
                        hi = hi.max(s);
                    } else {
                        acc = FrameAcc::default();
                        hi = s;
                    }
                    lo = s;
                }
                for v in &values[hi..e.max(hi)] {
                    acc.add(func, v.clone())?;
                }
                hi = hi.max(e);
                out[part[pos]] = acc.value(func, w.ty.as_ref())?;
            }
        }
        _ => unreachable!("framed is called for value functions and aggregates"),
    }
    Ok(bounds)
}

/// A frame offset's value, checked as PostgreSQL checks it: not NULL (22004), not
/// negative (22013). `start`: the frame's start offset, else its end's.
fn frame_offset(w: &WindowCall, v: Value, start: bool) -> Result<Value> {
    let which = if start { "starting" } else { "ending" };
    if v.is_null() {
        return Err(SqlError::FrameOffset {
            message: format!("frame {which} offset must not be null"),
            null: true,
        });
    }
    let negative = match &v {
        Value::Int(i) => *i < 0,
        Value::Double(d) => *d < 0.0,
        Value::Decimal(d) => d.as_ref().is_negative(),
        _ => false,
    };
    if negative {
        let message = match w.frame.units {
            FrameUnits::Range => "invalid preceding or following size in window function".to_string(),
            _ => format!("frame {which} offset must not be negative"),
        };
        return Err(SqlError::FrameOffset { message, null: false });
    }
    Ok(v)
}

/// Each row's frame, as the positions `[start, end)` in `part`; both ends only move
/// forward from one row to the next. `offset(e, start)` evaluates an offset.
fn frame_bounds(
    w: &WindowCall,
    part: &[usize],
    groups: &[(usize, usize)],
    keys: &[Vec<Value>],
    offset: &dyn Fn(&Expr, bool) -> Result<Value>,
) -> Result<Vec<(usize, usize)>> {
    let n = part.len();
    // The offsets, evaluated once for the partition: counts of rows or groups (integers),
    // or for RANGE amounts added to the key.
    let value = |b: &FrameBound, start: bool| -> Result<Option<Value>> {
        match b {
            FrameBound::Preceding(e) | FrameBound::Following(e) => Ok(Some(offset(e, start)?)),
            _ => Ok(None),
        }
    };
    let (start_by, end_by) = (value(&w.frame.start, true)?, value(&w.frame.end, false)?);
    if w.frame.units != FrameUnits::Range
        && let Some(other) = [&start_by, &end_by]
            .into_iter()
            .flatten()
            .find(|v| !matches!(v, Value::Int(_)))
    {
        return Err(SqlError::Type(format!(
            "a frame offset must be an integer, not {}",
            other.as_ref().kind_name()
        )));
    }
    let steps = |v: &Option<Value>| match v {
        Some(Value::Int(i)) => usize::try_from(*i).unwrap_or(usize::MAX),
        _ => 0,
    };
    let mut group_of = vec![0; n];
    for (g, &(g0, g1)) in groups.iter().enumerate() {
        group_of[g0..g1].iter_mut().for_each(|x| *x = g);
    }
    let (desc, nulls_first) = w.order.first().map_or((false, false), |o| (o.1, o.2));
    let mut out = Vec::with_capacity(n);
    for pos in 0..n {
        let g = group_of[pos];
        let (g0, g1) = groups[g];
        let end_of = |b: &FrameBound, by: &Option<Value>, is_start: bool| -> Result<usize> {
            Ok(match (b, w.frame.units) {
                (FrameBound::UnboundedPreceding, _) => 0,
                (FrameBound::UnboundedFollowing, _) => n,
                (FrameBound::CurrentRow, FrameUnits::Rows) => pos + usize::from(!is_start),
                (FrameBound::CurrentRow, _) => {
                    if is_start {
                        g0
                    } else {
                        g1
                    }
                }
                (FrameBound::Preceding(_), FrameUnits::Rows) => {
                    (pos + usize::from(!is_start)).saturating_sub(steps(by))
                }
                (FrameBound::Following(_), FrameUnits::Rows) => pos
                    .saturating_add(steps(by))
                    .saturating_add(usize::from(!is_start))
                    .min(n),
                (FrameBound::Preceding(_), FrameUnits::Groups) => match g.checked_sub(steps(by)) {
                    Some(h) if is_start => groups[h].0,
                    Some(h) => groups[h].1,
                    None => 0,
                },
                (FrameBound::Following(_), FrameUnits::Groups) => {
                    match g.checked_add(steps(by)).and_then(|h| groups.get(h)) {
                        Some(&(h0, h1)) => {
                            if is_start {
                                h0
                            } else {
                                h1
                            }
                        }
                        None => n,
                    }
                }
                (FrameBound::Preceding(_) | FrameBound::Following(_), FrameUnits::Range) => {
                    let key = &keys[part[pos]][0];
                    if key.is_null() {
                        // A NULL key's frame ends at its peers (the other NULLs).
                        if is_start { g0 } else { g1 }
                    } else {
                        let preceding = matches!(b, FrameBound::Preceding(_));
                        // Toward the partition's start in window order: down when ascending.
                        let op = if preceding != desc { ArithOp::Sub } else { ArithOp::Add };
                        let by = by.as_ref().map_or(ValueRef::Null, Value::as_ref);
                        let bound = arith(op, key.as_ref(), by).ok();
                        let place =
                            |r: &usize| range_place(keys[*r][0].as_ref(), bound.as_ref(), preceding, desc, nulls_first);
                        if is_start {
                            part.partition_point(|r| place(r) == Ordering::Less)
                        } else {
                            part.partition_point(|r| place(r) != Ordering::Greater)
                        }
                    }
                }
            })
        };
        let s = end_of(&w.frame.start, &start_by, true)?;
        let e = end_of(&w.frame.end, &end_by, false)?;
        out.push((s, e));
    }
    Ok(out)
}

/// Where a row's key `x` lies in window order against a RANGE frame's bound `bound` (the
/// current key plus or minus the offset; `None` where that overflowed, so past every key,
/// before them for `preceding`).
fn range_place(x: ValueRef<'_>, bound: Option<&Value>, preceding: bool, desc: bool, nulls_first: bool) -> Ordering {
    if x.is_null() {
        return if nulls_first { Ordering::Less } else { Ordering::Greater };
    }
    match bound {
        Some(b) => sort_order(x, b.as_ref(), desc, nulls_first),
        None if preceding => Ordering::Greater,
        None => Ordering::Less,
    }
}

/// The argument of `nth_value` or `ntile` as a count from one: `None` for NULL; zero or
/// less is PostgreSQL's error.
pub(super) fn positive(v: Value, func: &'static str) -> Result<Option<usize>> {
    match v {
        Value::Null => Ok(None),
        Value::Int(k) if k > 0 => Ok(Some(usize::try_from(k).unwrap_or(usize::MAX))),
        Value::Int(_) => Err(SqlError::NotPositive(func)),
        other => Err(SqlError::Type(format!(
            "the argument of {func} must be an integer, not {}",
            other.as_ref().kind_name()
        ))),
    }
}

/// The bucket (from one) of the row at `pos` of `rows` cut into `buckets` as `ntile`
/// cuts them: each `rows / buckets` rows, the first `rows % buckets` one more.
pub(super) fn bucket(pos: usize, rows: usize, buckets: usize) -> usize {
    let (size, extra) = (rows / buckets, rows % buckets);
    let big = extra * (size + 1);
    if pos < big {
        pos / (size + 1) + 1
    } else {
        extra + (pos - big) / size.max(1) + 1
    }
}

/// Aggregate `func`'s value so far, `acc`, with one more (non-NULL) value `v`: for
/// `count`, the first value stands for all; sums and averages add; `min` and `max` keep
/// the least or greatest. (The aggregates of GROUP BY fold their values with it too.)
pub(super) fn fold(func: AggFunc, acc: Option<Value>, v: Value) -> Result<Value> {
    Ok(match (func, acc) {
        (_, None) => v,
        (AggFunc::Count, Some(x)) => x,
        (AggFunc::Sum | AggFunc::Avg, Some(x)) => arith(ArithOp::Add, x.as_ref(), v.as_ref())?,
        (AggFunc::Min, Some(x)) => {
            if compare(v.as_ref(), x.as_ref())? == Some(Ordering::Less) {
                v
            } else {
                x
            }
        }
        (AggFunc::Max, Some(x)) => {
            if compare(v.as_ref(), x.as_ref())? == Some(Ordering::Greater) {
                v
            } else {
                x
            }
        }
        (AggFunc::BoolAnd | AggFunc::BoolOr, Some(x)) => match (x, v) {
            (Value::Bool(x), Value::Bool(v)) => Value::Bool(if func == AggFunc::BoolAnd { x && v } else { x || v }),
            (x, _) => x,
        },
        // (They collect their values: `exec::aggregate::Acc`; not over windows.)
        (f, Some(_)) => {
            debug_assert!(f.collects());
            return Err(crate::error::SqlError::Unsupported(
                "array_agg, string_agg and the json aggregates over a window".into(),
            ));
        }
    })
}

/// An aggregate over a growing frame.
#[derive(Default)]
pub(super) struct FrameAcc {
    count: i64,
    value: Option<Value>,
}

impl FrameAcc {
    /// Whether a value can be taken out again: counts, and sums of exact numbers.
    fn removable(&self, func: AggFunc) -> bool {
        match func {
            AggFunc::Count => true,
            AggFunc::Sum | AggFunc::Avg => !matches!(self.value, Some(Value::Double(_))),
            _ => false,
        }
    }

    /// Takes out a value `add` took in (`removable` said it can).
    fn remove(&mut self, func: AggFunc, v: &Value) -> Result<()> {
        if v.is_null() {
            return Ok(());
        }
        self.count -= 1;
        if self.count == 0 {
            self.value = None;
        } else if func != AggFunc::Count
            && let Some(sum) = self.value.take()
        {
            // (An integer comes out of a numeric sum as a numeric.)
            self.value = Some(arith(ArithOp::Sub, sum.as_ref(), v.as_ref())?);
        }
        Ok(())
    }

    pub(super) fn add(&mut self, func: AggFunc, v: Value) -> Result<()> {
        if v.is_null() {
            return Ok(());
        }
        self.count += 1;
        let v = match (func, v) {
            // Sums of integers as numeric, as the aggregate does.
            (AggFunc::Sum | AggFunc::Avg, Value::Int(i)) => Value::Decimal(i.into()),
            (_, v) => v,
        };
        self.value = Some(fold(func, self.value.take(), v)?);
        Ok(())
    }

    pub(super) fn value(&self, func: AggFunc, ty: Option<&permafrost_types::DataType>) -> Result<Value> {
        Ok(match func {
            AggFunc::Count => Value::Int(self.count),
            AggFunc::Avg => match &self.value {
                None => Value::Null,
                Some(Value::Double(d)) => Value::Double(d / self.count as f64),
                Some(sum) => arith(ArithOp::Div, sum.as_ref(), ValueRef::Int(self.count))?,
            },
            _ => match (&self.value, ty) {
                (Some(v), Some(t)) if !matches!(v, Value::Double(_)) => crate::expr::cast(v.clone(), t)?,
                (v, _) => v.clone().unwrap_or(Value::Null),
            },
        })
    }
}

/// A row kept until its window calls are computed: the values of the columns the query
/// reads (`SelectPlan::image`), read back as those columns.
pub(super) struct Image<'r> {
    pub(super) cols: &'r [(usize, usize)],
    pub(super) values: &'r [Value],
}

impl ColumnSource for Image<'_> {
    fn column(&self, rel: usize, col: usize) -> ValueRef<'_> {
        match self.cols.iter().position(|&c| c == (rel, col)) {
            Some(i) => self.values[i].as_ref(),
            None => ValueRef::Null,
        }
    }
}
