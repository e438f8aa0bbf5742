//! Index keys a statement's lookups and ranges are built from: values converted exactly
//! to a key column's type, equality keys, `= ANY` keys and the bounds of a range.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::ControlFlow;

use permafrost_storage::Table;
use permafrost_storage::index::{IndexKey, KeyBound, KeyKind, prefix_successor};
use permafrost_types::{DataType, Value, ValueRef};

use crate::error::Result;
use crate::expr::{ColumnSource, Cx, Expr, compare};

/// A value converted exactly to a key column's type, or `None` if it cannot equal any
/// value of that type (NULL, 2.5 for an integer column, text that does not parse).
pub(super) fn key_value<'v>(v: ValueRef<'v>, ty: &DataType) -> Option<Cow<'v, Value>> {
    let owned = |x: Value| Some(Cow::Owned(x));
    match (v, ty) {
        (ValueRef::Null, _) => None,
        (ValueRef::Int(_), t) if t.is_integer() => owned(v.to_owned()),
        (ValueRef::Double(d), t) if t.is_integer() => {
            (d.fract() == 0.0 && d.abs() < 9.2e18).then_some(Cow::Owned(Value::Int(d as i64)))
        }
        (ValueRef::Decimal(d), t) if t.is_integer() => d.to_i64_exact().map(|i| Cow::Owned(Value::Int(i))),
        (ValueRef::Int(i), DataType::Double) => owned(Value::Double(i as f64)),
        // As `numeric = double precision` compares: the numeric as a double.
        (ValueRef::Decimal(d), DataType::Double) => owned(Value::Double(d.to_f64())),
        (ValueRef::Double(_), DataType::Double) => owned(v.to_owned()),
        (ValueRef::Int(_) | ValueRef::Decimal(_) | ValueRef::Double(_), DataType::Decimal { .. }) => {
            let x = v.to_owned().coerce_to(ty).ok()?;
            // Only an exact conversion may be used as a key.
            (compare(x.as_ref(), v).ok()? == Some(Ordering::Equal)).then_some(Cow::Owned(x))
        }
        (ValueRef::Text(s), DataType::Varchar(_)) => owned(Value::Text(s.into())),
        (ValueRef::Text(s), t) => Value::parse(t, s).ok().map(Cow::Owned),
        (ValueRef::Bool(_), DataType::Boolean)
        | (ValueRef::Timestamp(_), DataType::Timestamp)
        | (ValueRef::TimestampTz(_), DataType::TimestampTz)
        | (ValueRef::Date(_), DataType::Date)
        | (ValueRef::Bytes(_), DataType::Bytea)
        | (ValueRef::Uuid(_), DataType::Uuid)
        | (ValueRef::Interval(_), DataType::Interval)
        | (ValueRef::Time(_), DataType::Time) => owned(v.to_owned()),
        (ValueRef::Enum(e), DataType::Enum(t)) if e.ty == *t => owned(v.to_owned()),
        (ValueRef::Inet(_), DataType::Inet | DataType::Cidr) => owned(v.to_owned()),
        _ => None,
    }
}

pub(super) fn index_types(table: &Table, index: usize) -> Vec<DataType> {
    table.encoder(index).types().to_vec()
}

/// The distinct keys of one-column index `index` that the elements of `array` (an array
/// literal's text) give, in key order; NULL elements and a NULL array give none.
pub(super) fn any_keys(
    table: &Table,
    index: usize,
    array: &Expr,
    b: &dyn ColumnSource,
    cx: &Cx<'_>,
) -> Result<Vec<IndexKey>> {
    let enc = table.encoder(index);
    let ty = enc.types()[0];
    let Some(items) = crate::array::elements_of(array.eval(b, cx)?.as_ref())? else {
        return Ok(Vec::new());
    };
    let mut keys = Vec::new();
    for item in items.into_iter().flatten() {
        let v = Value::text(item).coerce_to(&ty)?;
        if let Some(k) = key_value(v.as_ref(), &ty).and_then(|k| enc.encode([Value::as_ref(&k)])) {
            keys.push(k);
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

/// An equality lookup's answer to the index after visiting an entry: a unique index holds
/// one entry per key (a key with a NULL is none), so once one is found, in memory, the
/// index's compact stage is not searched for another.
pub(super) fn first_if(unique: bool, visited: ControlFlow<()>) -> ControlFlow<()> {
    if unique { ControlFlow::Break(()) } else { visited }
}

pub(super) fn build_key(
    table: &Table,
    index: usize,
    exprs: &[Expr],
    b: &dyn ColumnSource,
    cx: &Cx<'_>,
) -> Result<Option<IndexKey>> {
    let enc = table.encoder(index);
    let types = enc.types();
    // Fast path: one integer key from an integer value.
    if enc.kind() == KeyKind::Int && exprs.len() == 1 {
        let v = exprs[0].eval(b, cx)?;
        return Ok(match v.as_ref() {
            ValueRef::Int(i) if types[0].is_integer() => Some(IndexKey::Int(i)),
            other => key_value(other, &types[0]).and_then(|k| enc.encode([Value::as_ref(&k)])),
        });
    }
    let mut vals = Vec::with_capacity(exprs.len());
    for (e, ty) in exprs.iter().zip(types) {
        let v = e.eval(b, cx)?;
        match key_value(v.as_ref(), ty) {
            Some(k) => vals.push(k.into_owned()),
            None => return Ok(None),
        }
    }
    Ok(enc.encode(vals.iter().map(Value::as_ref)))
}

#[allow(clippy::too_many_arguments)]
pub(super) fn build_range(
    table: &Table,
    index: usize,
    prefix: &[Expr],
    lower: &Option<(Expr, bool)>,
    upper: &Option<(Expr, bool)>,
    b: &dyn ColumnSource,
    cx: &Cx<'_>,
) -> Result<Option<(KeyBound, KeyBound, bool)>> {
    let enc = table.encoder(index);
    let types = index_types(table, index);
    let mut pvals = Vec::with_capacity(prefix.len());
    for (e, ty) in prefix.iter().zip(&types) {
        match key_value(e.eval(b, cx)?.as_ref(), ty) {
            Some(k) => pvals.push(k.into_owned()),
            None => return Ok(None),
        }
    }
    let next_ty = types[prefix.len()];
    let bound_value = |bnd: &Option<(Expr, bool)>| -> Result<Option<(Value, bool)>> {
        Ok(match bnd {
            Some((e, incl)) => key_value(e.eval(b, cx)?.as_ref(), &next_ty).map(|k| (k.into_owned(), *incl)),
            None => None,
        })
    };
    // A bound that cannot be converted exactly is left open: the relation's filters
    // re-check every predicate, so a wider range is still correct.
    let (lo, hi) = (bound_value(lower)?, bound_value(upper)?);
    if enc.kind() == KeyKind::Int {
        let conv = |x: Option<(Value, bool)>| match x {
            Some((v, true)) => enc.encode([v.as_ref()]).map_or(KeyBound::Unbounded, KeyBound::Included),
            Some((v, false)) => enc.encode([v.as_ref()]).map_or(KeyBound::Unbounded, KeyBound::Excluded),
            None => KeyBound::Unbounded,
        };
        // Exact when every bound the plan has was converted: then every key in the range
        // meets the predicates the bounds came from (`RelPlan::bounds`).
        let (lo, hi) = (conv(lo), conv(hi));
        let exact = prefix.is_empty()
            && (lower.is_none() || !matches!(lo, KeyBound::Unbounded))
            && (upper.is_none() || !matches!(hi, KeyBound::Unbounded));
        return Ok(Some((lo, hi, exact)));
    }
    let Some(p) = enc.encode_prefix(pvals.iter().map(Value::as_ref)) else {
        return Ok(None);
    };
    let with = |v: &Value| enc.encode_prefix(pvals.iter().map(Value::as_ref).chain([v.as_ref()]));
    let bytes = |b: Vec<u8>| IndexKey::Bytes(permafrost_storage::index::KeyBuf::new(&b));
    let lo = match lo.and_then(|(v, _)| with(&v)) {
        Some(k) => KeyBound::Included(bytes(k)),
        None if p.is_empty() => KeyBound::Unbounded,
        None => KeyBound::Included(bytes(p.clone())),
    };
    let hi = match hi.and_then(|(v, _)| with(&v)) {
        Some(k) => prefix_successor(&k).map_or(KeyBound::Unbounded, |s| KeyBound::Excluded(bytes(s))),
        None => prefix_successor(&p)
            .filter(|_| !p.is_empty())
            .map_or(KeyBound::Unbounded, |s| KeyBound::Excluded(bytes(s))),
    };
    Ok(Some((lo, hi, false)))
}

/// Orders two values of a sort key as ORDER BY does: NULLs first or last (`nulls_first`),
/// the others by `total_compare`, reversed when `desc`.
pub(super) fn sort_order(x: ValueRef<'_>, y: ValueRef<'_>, desc: bool, nulls_first: bool) -> Ordering {
    match (x.is_null(), y.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) if nulls_first => Ordering::Less,
        (true, false) => Ordering::Greater,
        (false, true) if nulls_first => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => {
            let o = permafrost_types::total_compare(x, y);
            if desc { o.reverse() } else { o }
        }
    }
}
