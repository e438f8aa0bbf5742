//! The operators on values that expressions apply: comparison (`CmpOp`, [`compare`]),
//! arithmetic with PostgreSQL's type rules (`ArithOp`, [`arith`]) and explicit casts
//! ([`cast`]).

use std::cmp::Ordering;

use permafrost_types::{DataType, Interval, Numeric, NumericError, Value, ValueError, ValueRef, sql_compare};

use crate::error::{Result, SqlError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            o => o,
        }
    }

    pub(super) fn test(self, o: Ordering) -> bool {
        match self {
            CmpOp::Eq => o == Ordering::Equal,
            CmpOp::NotEq => o != Ordering::Equal,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::LtEq => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::GtEq => o != Ordering::Less,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// SQL comparison; errors for kinds that cannot be compared.
pub fn compare(a: ValueRef<'_>, b: ValueRef<'_>) -> Result<Option<Ordering>> {
    if a.is_null() || b.is_null() {
        return Ok(None);
    }
    // A text parameter compared with a typed value is read as that type, as PostgreSQL does
    // for untyped literals.
    match (a, b) {
        (ValueRef::Text(s), other) | (other, ValueRef::Text(s)) if !matches!(other, ValueRef::Text(_)) => {
            let ty = kind_type(other);
            let parsed = Value::parse(&ty, s)?;
            let o = sql_compare(
                if matches!(a, ValueRef::Text(_)) {
                    parsed.as_ref()
                } else {
                    a
                },
                if matches!(b, ValueRef::Text(_)) {
                    parsed.as_ref()
                } else {
                    b
                },
            );
            return Ok(o);
        }
        _ => {}
    }
    match sql_compare(a, b) {
        Some(o) => Ok(Some(o)),
        None => Err(SqlError::Type(format!(
            "cannot compare {} with {}",
            a.kind_name(),
            b.kind_name()
        ))),
    }
}

fn kind_type(v: ValueRef<'_>) -> DataType {
    v.kind_type()
}

pub(super) fn overflow(ty: &str) -> SqlError {
    SqlError::from(ValueError::NumericOutOfRange {
        ty: ty.into(),
        detail: "integer overflow".into(),
    })
}

/// Arithmetic with PostgreSQL's type rules: integers stay integers (with overflow checks and
/// truncating division), a numeric operand makes the result numeric, a double makes it double.
pub fn arith(op: ArithOp, a: ValueRef<'_>, b: ValueRef<'_>) -> Result<Value> {
    use ValueRef as V;
    Ok(match (a, b) {
        (V::Null, _) | (_, V::Null) => Value::Null,
        (V::Interval(_), _) | (_, V::Interval(_)) => interval_arith(op, a, b)?,
        (V::Int(x), V::Int(y)) => Value::Int(
            match op {
                ArithOp::Add => x.checked_add(y),
                ArithOp::Sub => x.checked_sub(y),
                ArithOp::Mul => x.checked_mul(y),
                ArithOp::Div => {
                    if y == 0 {
                        return Err(ValueError::DivisionByZero.into());
                    }
                    x.checked_div(y)
                }
                ArithOp::Mod => {
                    if y == 0 {
                        return Err(ValueError::DivisionByZero.into());
                    }
                    x.checked_rem(y)
                }
            }
            .ok_or_else(|| overflow("bigint"))?,
        ),
        (V::Double(_), _) | (_, V::Double(_)) => {
            let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else {
                return Err(type_err(op, a, b));
            };
            if matches!(op, ArithOp::Div | ArithOp::Mod) && y == 0.0 {
                return Err(ValueError::DivisionByZero.into());
            }
            Value::Double(match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                ArithOp::Mul => x * y,
                ArithOp::Div => x / y,
                ArithOp::Mod => x % y,
            })
        }
        (V::Decimal(_) | V::Int(_), V::Decimal(_) | V::Int(_)) => {
            let (x, y) = (to_numeric(a), to_numeric(b));
            let (x, y) = (x.as_ref(), y.as_ref());
            let r = match op {
                ArithOp::Add => x.checked_add(y),
                ArithOp::Sub => x.checked_sub(y),
                ArithOp::Mul => x.checked_mul(y),
                ArithOp::Div => x.checked_div(y),
                ArithOp::Mod => x.checked_rem(y),
            };
            Value::Decimal(r.map_err(numeric_err)?)
        }
        (V::Timestamp(t) | V::TimestampTz(t), V::Int(i)) if matches!(op, ArithOp::Add | ArithOp::Sub) => {
            // timestamp +/- microseconds
            let r = if op == ArithOp::Add {
                t.checked_add(i)
            } else {
                t.checked_sub(i)
            };
            let r = r.ok_or_else(|| overflow("timestamp"))?;
            if matches!(a, V::Timestamp(_)) {
                Value::Timestamp(r)
            } else {
                Value::TimestampTz(r)
            }
        }
        (V::Timestamp(x) | V::TimestampTz(x), V::Timestamp(y) | V::TimestampTz(y)) if op == ArithOp::Sub => {
            Value::Interval(Interval::between(x, y).ok_or_else(interval_out_of_range)?)
        }
        // date +/- days, days + date, date - date (days)
        (V::Date(d), V::Int(i)) if matches!(op, ArithOp::Add | ArithOp::Sub) => {
            let r = if op == ArithOp::Add {
                (d as i64).checked_add(i)
            } else {
                (d as i64).checked_sub(i)
            };
            date_in_range(r)?
        }
        (V::Int(i), V::Date(d)) if op == ArithOp::Add => date_in_range((d as i64).checked_add(i))?,
        (V::Date(x), V::Date(y)) if op == ArithOp::Sub => Value::Int(x as i64 - y as i64),
        // date + time, time + date: the timestamp of that time on that day.
        (V::Date(d), V::Time(t)) | (V::Time(t), V::Date(d)) if op == ArithOp::Add => {
            Value::Timestamp(permafrost_types::datetime::start_of_day(d) + t)
        }
        (V::Time(x), V::Time(y)) if op == ArithOp::Sub => Value::Interval(Interval {
            months: 0,
            days: 0,
            micros: x - y,
        }),
        _ => return Err(type_err(op, a, b)),
    })
}

fn interval_out_of_range() -> SqlError {
    SqlError::Math {
        sqlstate: "22008",
        message: "interval out of range",
    }
}

fn timestamp_out_of_range() -> SqlError {
    SqlError::Math {
        sqlstate: "22008",
        message: "timestamp out of range",
    }
}

/// Arithmetic with an interval: a timestamp (or a date's midnight) moved by one, intervals
/// added and subtracted, an interval scaled by a number.
fn interval_arith(op: ArithOp, a: ValueRef<'_>, b: ValueRef<'_>) -> Result<Value> {
    use ValueRef as V;
    use permafrost_types::datetime::MICROS_PER_DAY;
    // (`zoned`: a timestamptz, whose days and months move its wall-clock time.)
    let shift = |t: i64, x: &Interval, sub: bool, zoned: bool| -> Result<i64> {
        let x = if sub {
            x.negate().ok_or_else(interval_out_of_range)?
        } else {
            *x
        };
        let r = if zoned {
            permafrost_types::interval::add_to_timestamptz(t, &x)
        } else {
            permafrost_types::interval::add_to_timestamp(t, &x)
        };
        let r = r.ok_or_else(timestamp_out_of_range)?;
        if !(permafrost_types::TIMESTAMP_MIN..=permafrost_types::TIMESTAMP_MAX).contains(&r) {
            return Err(timestamp_out_of_range());
        }
        Ok(r)
    };
    let moved = |t: i64, x: &Interval, sub: bool| shift(t, x, sub, false);
    let add_sub = matches!(op, ArithOp::Add | ArithOp::Sub);
    let sub = op == ArithOp::Sub;
    let factor = |v: ValueRef<'_>| -> Option<f64> {
        match v {
            V::Int(i) => Some(i as f64),
            V::Double(d) => Some(d),
            V::Decimal(d) => Some(d.to_f64()),
            _ => None,
        }
    };
    Ok(match (a, b) {
        (V::Timestamp(t), V::Interval(x)) if add_sub => Value::Timestamp(moved(t, &x, sub)?),
        (V::TimestampTz(t), V::Interval(x)) if add_sub => Value::TimestampTz(shift(t, &x, sub, true)?),
        (V::Interval(x), V::Timestamp(t)) if op == ArithOp::Add => Value::Timestamp(moved(t, &x, false)?),
        (V::Interval(x), V::TimestampTz(t)) if op == ArithOp::Add => Value::TimestampTz(shift(t, &x, false, true)?),
        (V::Date(d), V::Interval(x)) if add_sub => {
            Value::Timestamp(moved(permafrost_types::datetime::start_of_day(d), &x, sub)?)
        }
        (V::Interval(x), V::Date(d)) if op == ArithOp::Add => {
            Value::Timestamp(moved(permafrost_types::datetime::start_of_day(d), &x, false)?)
        }
        // time ± interval: the interval's time part, wrapping around midnight.
        (V::Time(t), V::Interval(x)) if add_sub => {
            let d = if sub { -x.micros } else { x.micros };
            Value::Time((t + d % MICROS_PER_DAY).rem_euclid(MICROS_PER_DAY))
        }
        (V::Interval(x), V::Time(t)) if op == ArithOp::Add => {
            Value::Time((t + x.micros % MICROS_PER_DAY).rem_euclid(MICROS_PER_DAY))
        }
        (V::Interval(x), V::Interval(y)) if add_sub => {
            let y = if sub {
                y.negate().ok_or_else(interval_out_of_range)?
            } else {
                y
            };
            Value::Interval(x.add(&y).ok_or_else(interval_out_of_range)?)
        }
        (V::Interval(x), n) if op == ArithOp::Mul && factor(n).is_some() => {
            Value::Interval(x.scale(factor(n).unwrap_or(1.0)).ok_or_else(interval_out_of_range)?)
        }
        (n, V::Interval(x)) if op == ArithOp::Mul && factor(n).is_some() => {
            Value::Interval(x.scale(factor(n).unwrap_or(1.0)).ok_or_else(interval_out_of_range)?)
        }
        (V::Interval(x), n) if op == ArithOp::Div && factor(n).is_some() => {
            let f = factor(n).unwrap_or(1.0);
            if f == 0.0 {
                return Err(ValueError::DivisionByZero.into());
            }
            Value::Interval(x.scale(1.0 / f).ok_or_else(interval_out_of_range)?)
        }
        _ => return Err(type_err(op, a, b)),
    })
}

/// A date computed by arithmetic, if within the dates PostgreSQL has (22008 "date out of
/// range" otherwise).
fn date_in_range(days: Option<i64>) -> Result<Value> {
    use permafrost_types::datetime::{DATE_MAX, DATE_MIN};
    match days.and_then(|d| i32::try_from(d).ok()) {
        Some(d) if (DATE_MIN..=DATE_MAX).contains(&d) => Ok(Value::Date(d)),
        _ => Err(SqlError::Math {
            sqlstate: "22008",
            message: "date out of range",
        }),
    }
}

/// An integer or numeric operand as a numeric (the caller matched those two kinds).
fn to_numeric(v: ValueRef<'_>) -> Numeric {
    match v {
        ValueRef::Int(i) => Numeric::from(i),
        ValueRef::Decimal(d) => d.to_owned(),
        _ => Numeric::ZERO,
    }
}

/// The error of a numeric operation (22003 past PostgreSQL's limits, 22012).
pub(super) fn numeric_err(e: NumericError) -> SqlError {
    permafrost_types::numeric_error(&DataType::Decimal { precision: 0, scale: 0 }, e, "").into()
}

fn type_err(op: ArithOp, a: ValueRef<'_>, b: ValueRef<'_>) -> SqlError {
    let sym = match op {
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        ArithOp::Mul => "*",
        ArithOp::Div => "/",
        ArithOp::Mod => "%",
    };
    SqlError::NoOperator(format!("{} {sym} {}", a.kind_name(), b.kind_name()))
}

/// An explicit cast (`CAST(x AS t)`, `x::t`). Unlike assignment, casting to VARCHAR(n)
/// truncates, as in PostgreSQL.
pub fn cast(v: Value, ty: &DataType) -> Result<Value> {
    if let (DataType::Varchar(Some(n)), Value::Text(s)) = (ty, &v)
        && s.chars().count() > *n as usize
    {
        return Ok(Value::from(s.chars().take(*n as usize).collect::<String>()));
    }
    Ok(v.coerce_to(ty)?)
}
