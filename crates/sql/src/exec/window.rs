//! Window function calls over a query's rows (after WHERE, GROUP BY and HAVING, before
//! DISTINCT, ORDER BY and LIMIT): for each call, the rows sorted by its partition and
//! order keys, then each partition walked once. Ranking (`row_number`, `rank`,
//! `dense_rank`), offsets (`lag`, `lead`, `first_value`) and aggregates over the default
//! frame (with ORDER BY, the partition up to the current row's last peer; without, the
//! whole partition).

use std::cmp::Ordering;

use permafrost_types::{Value, ValueRef, total_compare};

use crate::error::{Result, SqlError};
use crate::expr::{AggFunc, ArithOp, ColumnSource, Expr, WinFunc, WindowCall, arith, compare};

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

fn one(w: &WindowCall, n: usize, eval: &dyn Fn(usize, &Expr) -> Result<Value>) -> Result<Vec<Value>> {
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
            WinFunc::FirstValue => {
                let first = arg(part[0], 0)?;
                for &row in part {
                    out[row] = first.clone();
                }
            }
            WinFunc::LastValue | WinFunc::NthValue => {
                let whole = w.order.is_empty();
                for &(g0, g1) in &groups {
                    // The default frame: up to the current row's last peer (all rows
                    // without ORDER BY).
                    let frame = if whole { part } else { &part[..g1] };
                    for &row in &part[g0..g1] {
                        out[row] = if w.func == WinFunc::LastValue {
                            arg(frame[frame.len() - 1], 0)?
                        } else {
                            match positive(arg(row, 1)?, "nth_value")? {
                                None => Value::Null,
                                Some(k) => match frame.get(k - 1) {
                                    Some(&r) => arg(r, 0)?,
                                    None => Value::Null,
                                },
                            }
                        };
                    }
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
            WinFunc::Agg(func) => {
                let mut acc = FrameAcc::default();
                let whole = w.order.is_empty();
                for &(g0, g1) in &groups {
                    let upto = if whole { part.len() } else { g1 };
                    // (Without ORDER BY every row's frame is the whole partition.)
                    let from = if whole { 0 } else { g0 };
                    if !whole || g0 == 0 {
                        for &row in &part[from..upto] {
                            let v = if w.star { Value::Bool(true) } else { arg(row, 0)? };
                            acc.add(func, v)?;
                        }
                    }
                    let v = acc.value(func, w.ty.as_ref())?;
                    for &row in &part[g0..g1] {
                        out[row] = v.clone();
                    }
                }
            }
        }
        start = end;
    }
    Ok(out)
}

/// The argument of `nth_value` or `ntile` as a count from one: `None` for NULL; zero or
/// less is PostgreSQL's error.
fn positive(v: Value, func: &'static str) -> Result<Option<usize>> {
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
fn bucket(pos: usize, rows: usize, buckets: usize) -> usize {
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
    })
}

/// An aggregate over a growing frame.
#[derive(Default)]
struct FrameAcc {
    count: i64,
    value: Option<Value>,
}

impl FrameAcc {
    fn add(&mut self, func: AggFunc, v: Value) -> Result<()> {
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

    fn value(&self, func: AggFunc, ty: Option<&permafrost_types::DataType>) -> Result<Value> {
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
