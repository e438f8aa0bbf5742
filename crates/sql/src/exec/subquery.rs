//! Queries inside a statement: the subqueries its expressions read ([`InitPlan`]s, run
//! once before it reads a row) and the sides of a set operation (UNION, INTERSECT,
//! EXCEPT). Both run their SELECTs whole through `run`, which `exec.rs` gives (this file
//! comes before it and does not know its environment, `E`).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use permafrost_types::Value;

use crate::error::{Result, SqlError};
use crate::expr::{ArithOp, Cx, Expr, arith, cast, compare};
use crate::plan::{CompoundPlan, InitPlan, SelectPlan, SetOp, SetTree, SubqueryKind};
use crate::rows::{ColumnInfo, Rows, encode_row};
use crate::workmem::{value_size, values_size};

use super::gather::limit_value;
use super::keys::sort_order;

/// Runs one SELECT whole over the environment `E`.
pub(super) type RunSelect<'r, E> = dyn FnMut(&SelectPlan, &Arc<[ColumnInfo]>, &mut E, &Cx<'_>) -> Result<Rows> + 'r;

/// Runs a plan's uncorrelated subqueries before it reads a row, giving each one's values
/// ([`values`]; none for a correlated one, run per row). A pre-pass that reached evicted
/// tuples is rolled back and run again whatever it answered, so a subquery that missed
/// some of its rows then does no harm.
pub(super) fn run_init<E>(
    init: &[Arc<InitPlan>],
    env: &mut E,
    cx: &Cx<'_>,
    work_mem: usize,
    run: &mut RunSelect<'_, E>,
) -> Result<Vec<Vec<Value>>> {
    init.iter()
        .map(|ip| {
            if ip.correlated {
                // (Run per row, `Expr::SubPlan`.)
                return Ok(Vec::new());
            }
            values(ip.kind, &run_query(&ip.query, env, cx, work_mem, run)?)
        })
        .collect()
}

/// The values a subquery read as `kind` gives from its rows `rows`: a row's first column
/// each (a scalar subquery's one row, an EXISTS's first as `true`, all of an IN's).
pub(super) fn values(kind: SubqueryKind, rows: &Rows) -> Result<Vec<Value>> {
    Ok(match kind {
        SubqueryKind::Scalar if rows.len() > 1 => return Err(SqlError::SubqueryRows),
        SubqueryKind::Exists => rows.iter().take(1).map(|_| Value::Bool(true)).collect(),
        SubqueryKind::Scalar | SubqueryKind::In => rows.iter().map(|r| r.get(0).to_owned()).collect(),
        SubqueryKind::Array => {
            let items: Vec<Value> = rows.iter().map(|r| r.get(0).to_owned()).collect();
            vec![Value::text(permafrost_types::array_value::literal_of_values(&items))]
        }
    })
}

/// Runs a subquery: a SELECT, or a set operation of them.
pub(super) fn run_query<E>(
    q: &SetTree,
    env: &mut E,
    cx: &Cx<'_>,
    work_mem: usize,
    run: &mut RunSelect<'_, E>,
) -> Result<Rows> {
    match q {
        SetTree::Select { plan, columns } => run(plan, columns, env, cx),
        SetTree::Compound(c) => compound(c, env, cx, work_mem, run),
        SetTree::Values { columns, .. }
        | SetTree::Series { columns, .. }
        | SetTree::Unnest { columns, .. }
        | SetTree::Recursive { columns, .. }
        | SetTree::Working { columns, .. } => {
            let mut out = Rows::empty(columns.clone());
            for r in side(q, columns, env, cx, work_mem, run)? {
                out.push_row(r.iter().map(Value::as_ref));
            }
            Ok(out)
        }
        SetTree::Op { .. } => Err(SqlError::Unsupported("a bare set operation as a subquery".into())),
    }
}

/// Runs a set operation: its sides' rows cast to the result's column types, combined,
/// ordered, and cut by LIMIT and OFFSET. What it holds counts against `work_mem` (54000
/// past it).
pub(super) fn compound<E>(
    p: &CompoundPlan,
    env: &mut E,
    cx: &Cx<'_>,
    work_mem: usize,
    run: &mut RunSelect<'_, E>,
) -> Result<Rows> {
    let mut rows = side(&p.tree, &p.columns, env, cx, work_mem, run)?;
    if !p.order.is_empty() {
        rows.sort_by(|a, b| {
            for &(i, desc, nulls_first) in &p.order {
                let o = sort_order(a[i].as_ref(), b[i].as_ref(), desc, nulls_first);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
    }
    let offset = limit_value(&p.offset, cx, "OFFSET")?.unwrap_or(0);
    let limit = limit_value(&p.limit, cx, "LIMIT")?;
    let kept = rows
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX)));
    let mut out = Rows::empty(p.columns.clone());
    for r in kept {
        out.push_row(r.iter().map(Value::as_ref));
    }
    Ok(out)
}

/// The rows of one side, cast to `columns`' types.
pub(super) fn side<E>(
    t: &SetTree,
    columns: &Arc<[ColumnInfo]>,
    env: &mut E,
    cx: &Cx<'_>,
    work_mem: usize,
    run: &mut RunSelect<'_, E>,
) -> Result<Vec<Vec<Value>>> {
    let rows = match t {
        SetTree::Values { rows, .. } => rows
            .iter()
            .map(|r| r.iter().map(|e| e.eval_const(cx)).collect::<Result<Vec<Value>>>())
            .collect::<Result<Vec<_>>>()?,
        SetTree::Series {
            start,
            stop,
            step,
            ordinality,
            ..
        } => {
            let mut rows = series(start, stop, step.as_ref(), cx, work_mem)?;
            if *ordinality {
                for (i, r) in rows.iter_mut().enumerate() {
                    r.push(Value::Int(i as i64 + 1));
                }
            }
            rows
        }
        SetTree::Unnest { arrays, ordinality, .. } => unnest(arrays, *ordinality, cx)?,
        SetTree::Working { slot, .. } => match cx.working.as_ref().and_then(|w| w.of(*slot)) {
            Some(rows) => rows.as_ref().clone(),
            None => return Err(SqlError::Unsupported("a recursive query's rows outside its run".into())),
        },
        SetTree::Recursive {
            base,
            step,
            all,
            slot,
            columns: own,
        } => recursive(base, step, *all, *slot, own, env, cx, work_mem, run)?,
        SetTree::Select { plan, columns: own } => run(plan, own, env, cx)?.to_values(),
        SetTree::Compound(c) => compound(c, env, cx, work_mem, run)?.to_values(),
        SetTree::Op { op, all, left, right } => {
            let l = side(left, columns, env, cx, work_mem, run)?;
            let r = side(right, columns, env, cx, work_mem, run)?;
            return combine(*op, *all, l, r, work_mem);
        }
    };
    let mut held = 0;
    rows.into_iter()
        .map(|r| {
            let r = r
                .into_iter()
                .zip(columns.iter())
                .map(|(v, c)| match &c.ty {
                    Some(ty) if !v.is_null() => cast(v, ty),
                    _ => Ok(v),
                })
                .collect::<Result<Vec<Value>>>()?;
            held += values_size(&r);
            if held > work_mem {
                return Err(SqlError::OutOfWorkMem(work_mem));
            }
            Ok(r)
        })
        .collect()
}

/// The rows of `unnest(arrays...)`: row i holds each array's i-th element as text (cast
/// to its column's type by the caller), NULL past an array's end; a NULL array has none.
fn unnest(arrays: &[Expr], ordinality: bool, cx: &Cx<'_>) -> Result<Vec<Vec<Value>>> {
    let mut lists = Vec::with_capacity(arrays.len());
    for a in arrays {
        lists.push(crate::array::elements_of(a.eval_const(cx)?.as_ref())?.unwrap_or_default());
    }
    let n = lists.iter().map(Vec::len).max().unwrap_or(0);
    let mut iters: Vec<_> = lists.into_iter().map(|l| l.into_iter()).collect();
    Ok((0..n)
        .map(|i| {
            let mut row: Vec<Value> = iters
                .iter_mut()
                .map(|it| it.next().flatten().map_or(Value::Null, Value::text))
                .collect();
            if ordinality {
                row.push(Value::Int(i as i64 + 1));
            }
            row
        })
        .collect())
}

/// A recursive WITH query's rows: `base`'s, then `step`'s run over the rows the last run
/// added until it adds none (with `all` false, only rows not seen before count as added).
/// What it holds counts against `work_mem`, which also ends a recursion that never stops
/// (54000).
#[allow(clippy::too_many_arguments)]
fn recursive<E>(
    base: &SetTree,
    step: &SetTree,
    all: bool,
    slot: usize,
    columns: &Arc<[ColumnInfo]>,
    env: &mut E,
    cx: &Cx<'_>,
    work_mem: usize,
    run: &mut RunSelect<'_, E>,
) -> Result<Vec<Vec<Value>>> {
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut held = 0;
    let mut keep = |rows: Vec<Vec<Value>>, held: &mut usize| -> Result<Vec<Vec<Value>>> {
        let mut kept = Vec::with_capacity(rows.len());
        for r in rows {
            if !all {
                let mut k = Vec::new();
                encode_row(r.iter().map(Value::as_ref), &mut k);
                if !seen.insert(k) {
                    continue;
                }
            }
            *held += values_size(&r);
            if *held > work_mem {
                return Err(SqlError::OutOfWorkMem(work_mem));
            }
            kept.push(r);
        }
        Ok(kept)
    };
    let mut work = keep(side(base, columns, env, cx, work_mem, run)?, &mut held)?;
    let mut out = work.clone();
    while !work.is_empty() {
        let wcx = cx.with_working(slot, std::mem::take(&mut work));
        work = keep(side(step, columns, env, &wcx, work_mem, run)?, &mut held)?;
        out.extend(work.iter().cloned());
    }
    Ok(out)
}

/// The rows of `generate_series(start, stop, step)`: none if an argument is NULL, the
/// values from `start` while not past `stop` (below it for a negative step); a step of
/// zero is 22023. Timestamps step by an interval (a timestamptz's days and months in the
/// session zone, crate::expr::ops). What they hold counts against `work_mem`.
fn series(start: &Expr, stop: &Expr, step: Option<&Expr>, cx: &Cx<'_>, work_mem: usize) -> Result<Vec<Vec<Value>>> {
    let (from, to) = (start.eval_const(cx)?, stop.eval_const(cx)?);
    let by = match step {
        Some(s) => s.eval_const(cx)?,
        None => Value::Int(1),
    };
    if from.is_null() || to.is_null() || by.is_null() {
        return Ok(Vec::new());
    }
    // (An interval step, of a series of timestamps, is compared with the empty interval.)
    let zero = match by {
        Value::Interval(_) => Value::Interval(permafrost_types::Interval::default()),
        _ => Value::Int(0),
    };
    let up = match compare(by.as_ref(), zero.as_ref())? {
        Some(Ordering::Equal) => return Err(SqlError::InvalidArgument("step size cannot equal zero".into())),
        o => o == Some(Ordering::Greater),
    };
    let mut out = Vec::new();
    let mut held = 0;
    let mut v = from;
    loop {
        let past = match compare(v.as_ref(), to.as_ref())? {
            Some(Ordering::Greater) => up,
            Some(Ordering::Less) => !up,
            _ => false,
        };
        if past {
            break;
        }
        held += value_size(&v);
        if held > work_mem {
            return Err(SqlError::OutOfWorkMem(work_mem));
        }
        let next = match arith(ArithOp::Add, v.as_ref(), by.as_ref()) {
            Ok(n) => Some(n),
            // (The last value before the type's end.)
            Err(e) if e.sqlstate() == "22003" => None,
            Err(e) => return Err(e),
        };
        out.push(vec![v]);
        match next {
            Some(n) => v = n,
            None => break,
        }
    }
    Ok(out)
}

/// `left op right`: UNION appends (then keeps each row once unless `all`); INTERSECT keeps
/// the left rows the right has, EXCEPT those it has not (with `all`, as many times as the
/// left has them less, or at most, the right's count). Rows compare by their encoding,
/// their values being of the same types.
fn combine(
    op: SetOp,
    all: bool,
    left: Vec<Vec<Value>>,
    right: Vec<Vec<Value>>,
    work_mem: usize,
) -> Result<Vec<Vec<Value>>> {
    let key = |r: &[Value]| {
        let mut k = Vec::new();
        encode_row(r.iter().map(Value::as_ref), &mut k);
        k
    };
    let mut out = Vec::new();
    match op {
        SetOp::Union if all => {
            out = left;
            out.extend(right);
        }
        SetOp::Union => {
            let mut seen = HashSet::new();
            let mut held = 0;
            for r in left.into_iter().chain(right) {
                let k = key(&r);
                held += k.len();
                if held > work_mem {
                    return Err(SqlError::OutOfWorkMem(work_mem));
                }
                if seen.insert(k) {
                    out.push(r);
                }
            }
        }
        SetOp::Intersect | SetOp::Except => {
            let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
            let mut held = 0;
            for r in &right {
                let k = key(r);
                held += k.len();
                if held > work_mem {
                    return Err(SqlError::OutOfWorkMem(work_mem));
                }
                *counts.entry(k).or_default() += 1;
            }
            let mut emitted = HashSet::new();
            for r in left {
                let k = key(&r);
                let keep = match (op, all) {
                    (SetOp::Intersect, true) => match counts.get_mut(&k) {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            true
                        }
                        _ => false,
                    },
                    (SetOp::Except, true) => match counts.get_mut(&k) {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            false
                        }
                        _ => true,
                    },
                    (SetOp::Intersect, false) => counts.contains_key(&k) && emitted.insert(k),
                    (SetOp::Except | SetOp::Union, _) => !counts.contains_key(&k) && emitted.insert(k),
                };
                if keep {
                    out.push(r);
                }
            }
        }
    }
    Ok(out)
}
