//! Functions and operators over array values ([`ArrayFn`]): subscripts and slices,
//! `array_length` and its family, `array_append`/`array_cat`/`||`, `array_position`,
//! `array_remove`/`array_replace`, `array_to_string`/`string_to_array`, containment
//! (`@>`, `<@`, `&&`) and comparison, as PostgreSQL 15 computes them for one-dimensional
//! arrays. An array is its literal's text in PostgreSQL's output form
//! (`permafrost_types::array`); its elements are read as the array's element type, so
//! they compare as values (`{1.0}` = `{1.00}`, `{9}` < `{10}`).

use std::cmp::Ordering;

use permafrost_types::array_value::{literal_of_values, values};
use permafrost_types::{ElemType, Value, sql_compare};

use super::ops::CmpOp;
use crate::error::Result;
use crate::value_budget::ValueBudget;

/// An array function or operator (`Func::Array`, with the type of the elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayFn {
    /// `a[i]`: the element, NULL past either end.
    Subscript,
    /// `a[lo:hi]`; `lower`/`upper`: whether the bound is given (else the array's own).
    Slice {
        lower: bool,
        upper: bool,
    },
    /// `array_length(a, dim)`.
    Length,
    Cardinality,
    /// `array_lower(a, dim)`.
    LowerBound,
    /// `array_upper(a, dim)`.
    UpperBound,
    Ndims,
    Dims,
    /// `array_to_string(a, sep [, null_text])`.
    ToString,
    /// `string_to_array(s, sep [, null_text])` (elements text).
    FromString,
    /// `array_append(a, x)`.
    Append,
    /// `array_prepend(x, a)`.
    Prepend,
    /// `array_cat(a, b)`, `a || b`.
    Cat,
    /// `array_position(a, x [, start])`.
    Position,
    /// `array_positions(a, x)`.
    Positions,
    /// `array_remove(a, x)`.
    Remove,
    /// `array_replace(a, x, y)`.
    Replace,
    /// `a @> b`.
    Contains,
    /// `a <@ b`.
    ContainedBy,
    /// `a && b`.
    Overlaps,
    /// `a op b`, element by element.
    Cmp(CmpOp),
    /// What an ORDER BY on an array sorts by: bytes that order as PostgreSQL orders the
    /// arrays ([`sort_key`]).
    SortKey,
}

/// The elements of array argument `v` (`None`: NULL).
fn items(elem: ElemType, v: &Value) -> Result<Option<Vec<Value>>> {
    match v {
        Value::Null => Ok(None),
        Value::Text(t) => Ok(Some(values(elem, t)?)),
        other => Err(crate::array::not_an_array(other.as_ref())),
    }
}

/// `x op ANY(values)` (`all`: `x op ALL(values)`): ANY is true at the first true
/// comparison, ALL false at the first false one; else unknown if a comparison was, else
/// (an empty array too) ALL's true or ANY's false.
pub(super) fn compare_all(x: permafrost_types::ValueRef<'_>, values: &[Value], op: CmpOp, all: bool) -> Result<Value> {
    let mut unknown = false;
    for v in values {
        match super::ops::compare(x, v.as_ref())?.map(|o| op.test(o)) {
            Some(t) if t != all => return Ok(Value::Bool(t)),
            Some(_) => {}
            None => unknown = true,
        }
    }
    Ok(if unknown { Value::Null } else { Value::Bool(all) })
}

/// The array of `values`, its literal checked against `budget` before it is built
/// ([`crate::value_budget`]: quoting may double a text).
pub(crate) fn literal_checked(values: &[Value], budget: &ValueBudget<'_>) -> Result<Value> {
    let len = values
        .iter()
        .map(|v| match v {
            Value::Text(t) => 2 * t.len() + 3,
            Value::Bytes(b) => 4 * b.len() + 6,
            _ => 48,
        })
        .fold(2usize, usize::saturating_add);
    budget.check(len)?;
    Ok(Value::text(literal_of_values(values)))
}

/// Whether two elements are the same, NULL being the same as NULL (`IS NOT DISTINCT
/// FROM`, as `array_position` and `array_remove` compare).
fn same(a: &Value, b: &Value) -> bool {
    match (a.is_null(), b.is_null()) {
        (true, true) => true,
        (false, false) => sql_compare(a.as_ref(), b.as_ref()) == Some(Ordering::Equal),
        _ => false,
    }
}

/// Whether two elements are equal (`=`: a NULL equals nothing).
fn equal(a: &Value, b: &Value) -> bool {
    sql_compare(a.as_ref(), b.as_ref()) == Some(Ordering::Equal)
}

/// PostgreSQL's order of arrays: element by element, a NULL element after any other, then
/// the shorter first.
fn order(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => permafrost_types::total_compare(x.as_ref(), y.as_ref()),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// Bytes whose order is the order of arrays: per element 0x01 and the element's
/// order-preserving encoding (the indexes' key encoding; a numeric by its double value),
/// or 0x02 for NULL (after any value), then 0x00 (a prefix before the longer array).
fn sort_key(elem: ElemType, a: &[Value]) -> Vec<u8> {
    let ty = elem.data_type();
    let mut out = Vec::with_capacity(a.len() * 9 + 1);
    for v in a {
        match v {
            Value::Null => out.push(0x02),
            Value::Decimal(d) => {
                out.push(0x01);
                let d = Value::Double(d.as_ref().to_f64());
                permafrost_storage::index::encode_value(&mut out, d.as_ref(), &permafrost_types::DataType::Double);
            }
            v => {
                out.push(0x01);
                permafrost_storage::index::encode_value(&mut out, v.as_ref(), &ty);
            }
        }
    }
    out.push(0x00);
    out
}

fn int_arg(v: &Value) -> Option<i64> {
    v.as_i64()
}

/// Evaluates `f` over arrays of `elem` with arguments `v` (NULLs handled per function, as
/// PostgreSQL's are).
pub(super) fn eval(f: ArrayFn, elem: ElemType, v: &[Value], budget: &ValueBudget<'_>) -> Result<Value> {
    let ty = elem.data_type();
    let array = |values: &[Value]| literal_checked(values, budget);
    let elem_arg = |i: usize| -> Result<Value> { Ok(v[i].clone().coerce_to(&ty)?) };
    Ok(match f {
        ArrayFn::Subscript => {
            let (Some(a), Some(i)) = (items(elem, &v[0])?, int_arg(&v[1])) else {
                return Ok(Value::Null);
            };
            usize::try_from(i - 1)
                .ok()
                .and_then(|i| a.into_iter().nth(i))
                .unwrap_or(Value::Null)
        }
        ArrayFn::Slice { lower, upper } => {
            let Some(a) = items(elem, &v[0])? else {
                return Ok(Value::Null);
            };
            let n = a.len() as i64;
            let lo = if lower { int_arg(&v[1]) } else { Some(1) };
            let hi = if upper {
                int_arg(&v[1 + usize::from(lower)])
            } else {
                Some(n)
            };
            let (Some(lo), Some(hi)) = (lo, hi) else {
                return Ok(Value::Null);
            };
            let (lo, hi) = (lo.max(1), hi.min(n));
            if lo > hi {
                return array(&[]);
            }
            array(&a[(lo - 1) as usize..hi as usize])?
        }
        ArrayFn::Length | ArrayFn::UpperBound | ArrayFn::LowerBound => {
            let (Some(a), Some(dim)) = (items(elem, &v[0])?, int_arg(&v[1])) else {
                return Ok(Value::Null);
            };
            if dim != 1 || a.is_empty() {
                return Ok(Value::Null);
            }
            Value::Int(if f == ArrayFn::LowerBound { 1 } else { a.len() as i64 })
        }
        ArrayFn::Cardinality => match items(elem, &v[0])? {
            Some(a) => Value::Int(a.len() as i64),
            None => Value::Null,
        },
        ArrayFn::Ndims | ArrayFn::Dims => match items(elem, &v[0])? {
            Some(a) if !a.is_empty() => match f {
                ArrayFn::Ndims => Value::Int(1),
                _ => Value::text(format!("[1:{}]", a.len())),
            },
            _ => Value::Null,
        },
        ArrayFn::ToString => {
            let (Some(a), Some(sep)) = (items(elem, &v[0])?, v[1].as_str()) else {
                return Ok(Value::Null);
            };
            let null_text = v.get(2).and_then(|n| n.as_str());
            let mut out = String::new();
            let mut first = true;
            for x in &a {
                let text = match (x.is_null(), null_text) {
                    (true, None) => continue,
                    (true, Some(n)) => n.to_string(),
                    (false, _) => x.to_string(),
                };
                if !first {
                    out.push_str(sep);
                }
                first = false;
                out.push_str(&text);
            }
            Value::text(out)
        }
        ArrayFn::FromString => {
            let Some(s) = v[0].as_str() else {
                return Ok(Value::Null);
            };
            let null_text = v.get(2).and_then(|n| n.as_str());
            let parts: Vec<String> = match v[1].as_str() {
                _ if s.is_empty() => vec![],
                None => s.chars().map(String::from).collect(),
                Some("") => vec![s.to_string()],
                Some(sep) => s.split(sep).map(String::from).collect(),
            };
            let values: Vec<Value> = parts
                .into_iter()
                .map(|p| {
                    if Some(p.as_str()) == null_text {
                        Value::Null
                    } else {
                        Value::text(p)
                    }
                })
                .collect();
            array(&values)?
        }
        ArrayFn::Append | ArrayFn::Prepend => {
            let (ai, xi) = if f == ArrayFn::Append { (0, 1) } else { (1, 0) };
            let mut a = items(elem, &v[ai])?.unwrap_or_default();
            let x = elem_arg(xi)?;
            if f == ArrayFn::Append {
                a.push(x);
            } else {
                a.insert(0, x);
            }
            array(&a)?
        }
        ArrayFn::Cat => match (items(elem, &v[0])?, items(elem, &v[1])?) {
            (None, None) => Value::Null,
            (a, b) => {
                let mut a = a.unwrap_or_default();
                a.extend(b.unwrap_or_default());
                array(&a)?
            }
        },
        ArrayFn::Position | ArrayFn::Positions => {
            let Some(a) = items(elem, &v[0])? else {
                return Ok(Value::Null);
            };
            let x = elem_arg(1)?;
            let start = match v.get(2) {
                None => 1,
                Some(Value::Null) => return Ok(Value::Null),
                Some(s) => int_arg(s).unwrap_or(1),
            };
            let mut found = a
                .iter()
                .enumerate()
                .filter(|(i, y)| (*i as i64) + 1 >= start && same(y, &x))
                .map(|(i, _)| Value::Int(i as i64 + 1));
            if f == ArrayFn::Position {
                found.next().unwrap_or(Value::Null)
            } else {
                array(&found.collect::<Vec<_>>())?
            }
        }
        ArrayFn::Remove | ArrayFn::Replace => {
            let Some(a) = items(elem, &v[0])? else {
                return Ok(Value::Null);
            };
            let x = elem_arg(1)?;
            let out: Vec<Value> = if f == ArrayFn::Remove {
                a.into_iter().filter(|y| !same(y, &x)).collect()
            } else {
                let to = elem_arg(2)?;
                a.into_iter()
                    .map(|y| if same(&y, &x) { to.clone() } else { y })
                    .collect()
            };
            array(&out)?
        }
        ArrayFn::Contains | ArrayFn::ContainedBy | ArrayFn::Overlaps => {
            let (Some(a), Some(b)) = (items(elem, &v[0])?, items(elem, &v[1])?) else {
                return Ok(Value::Null);
            };
            let (big, small) = if f == ArrayFn::ContainedBy { (b, a) } else { (a, b) };
            Value::Bool(match f {
                ArrayFn::Overlaps => small.iter().any(|x| big.iter().any(|y| equal(x, y))),
                _ => small.iter().all(|x| big.iter().any(|y| equal(x, y))),
            })
        }
        ArrayFn::SortKey => match items(elem, &v[0])? {
            None => Value::Null,
            Some(a) => Value::Bytes(sort_key(elem, &a).into()),
        },
        ArrayFn::Cmp(op) => {
            let (Some(a), Some(b)) = (items(elem, &v[0])?, items(elem, &v[1])?) else {
                return Ok(Value::Null);
            };
            Value::Bool(op.test(order(&a, &b)))
        }
    })
}
