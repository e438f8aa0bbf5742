//! The scalar functions ([`Func`]), and the evaluation of those that are strict (NULL for
//! any NULL argument) once their arguments are known: text functions (text.rs), math over
//! doubles (math.rs), `sign`, `trunc`. expr.rs evaluates the arguments.

use std::borrow::Cow;

use permafrost_types::{DataType, Numeric, Value, ValueRef};

use super::cx::Cx;
use super::datum::Datum;
use super::math::{self, MathFunc};
use super::ops::{numeric_err, overflow};
use super::text;
use crate::error::{Result, SqlError};

/// A scalar function (bind/call.rs binds calls to them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Abs,
    Lower,
    Upper,
    Length,
    Substring,
    Coalesce,
    NullIf,
    Round,
    Floor,
    Ceil,
    Concat,
    Greatest,
    Least,
    /// `btrim(s [, chars])`.
    Trim,
    /// `x = ANY(array)` (`negated`: `x <> ALL(array)`), the array the text of a PostgreSQL
    /// array literal (crate::array: how array parameters and constants arrive), its
    /// elements read as `elem` (the type of `x`).
    AnyEq {
        elem: Option<DataType>,
        negated: bool,
    },
    /// `x op ANY(array)` (`all`: `x op ALL(array)`) for any comparison `op`, the array as
    /// for [`Func::AnyEq`].
    AnyCmp {
        elem: Option<DataType>,
        op: super::CmpOp,
        all: bool,
    },
    /// `doc -> k` (`text`: `->>`), k an object's key or an array's index.
    JsonGet {
        text: bool,
    },
    /// `doc #> path` (`text`: `#>>`), the path a text array literal.
    JsonPath {
        text: bool,
    },
    /// `a @> b` over jsonb.
    JsonContains,
    /// `doc ? key`, `?|`, `?&` (the keys a text array literal).
    JsonExists(super::json::Exists),
    /// `to_json(v)` / `to_jsonb(v)`, and a value of `json_build_object`.
    ToJson {
        from: super::json::JsonFrom,
        jsonb: bool,
    },
    /// `json_build_object(k, v, ...)` (`jsonb_build_object`), its values made JSON;
    /// `compact`: written as a row is (`row_to_json(t)`: `{"k":v}`, not `{"k" : v}`).
    JsonBuildObject {
        jsonb: bool,
        compact: bool,
    },
    JsonTypeof,
    JsonArrayLength,
    /// `random()`: a double in [0, 1) drawn from the statement's random state
    /// ([`Cx::draw`]).
    Random,
    /// `gen_random_uuid()`: a version 4 uuid drawn from the statement's random state.
    GenRandomUuid,
    /// `clock_timestamp()`, or `statement_timestamp()` with `statement`: the wall clock as
    /// the statement first read it ([`super::cx::DrawSource::clock`]).
    Clock {
        statement: bool,
    },
    /// `age(a, b)` of two timestamps (or of midnight today and `a`): years, months, days.
    Age,
    /// `make_interval(years, months, weeks, days, hours, mins, secs)`.
    MakeInterval,
    /// `make_date(y, m, d)`, `make_time(h, mi, s)`, `make_timestamp(y, m, d, h, mi, s)`,
    /// `make_timestamptz(...)` (the wall-clock time read in the session zone): the type made.
    MakeDatetime(DataType),
    /// `justify_days`, `justify_hours`, `justify_interval`.
    Justify(super::age::Justify),
    /// `nextval('t_c_seq')`: the next value of `table`'s sequence, taken by the running
    /// transaction ([`Cx::draws`]); its argument is the sequence's name (for messages).
    NextVal {
        table: permafrost_storage::TableId,
        step: crate::sequence::SeqStep,
    },
    /// `currval('s')` (`table`: the sequence's id) or `lastval()` (`None`): the value the
    /// sequence last gave the transaction or its session ([`Cx::draws`]); its argument is
    /// the sequence's name (for messages).
    CurrVal {
        table: Option<permafrost_storage::TableId>,
    },
    /// `setval('t_c_seq', v [, is_called])`: makes `v` the sequence's last value (or, with
    /// `is_called` false, its next one); gives `v`.
    SetVal {
        table: permafrost_storage::TableId,
        step: crate::sequence::SeqStep,
    },
    /// `x AT TIME ZONE zone` (`to_local`: x is a timestamp with time zone, the result the
    /// wall-clock time in zone; else the reverse).
    AtTimeZone {
        to_local: bool,
    },
    /// `ARRAY[a, b, ...]`: the literal of its elements (permafrost_types::array::literal), each made
    /// a value of `elem` first (text when no type is known), NULL elements kept.
    ArrayOf {
        elem: Option<permafrost_types::ElemType>,
    },
    /// A jsonb builder, edit or list (expr/jsonb_edit.rs).
    JsonEdit(super::jsonb_edit::JsonEdit),
    /// `format(fmt, args...)` (expr/format.rs).
    Format,
    /// `quote_ident(s)`.
    QuoteIdent,
    /// `quote_literal(x)` (`nullable`: `quote_nullable`, NULL as `NULL`).
    QuoteLiteral {
        nullable: bool,
    },
    /// `to_char(x, format)` of a timestamp, timestamptz or date (expr/to_char.rs).
    ToChar,
    /// A regular-expression operator or function (expr/regex.rs).
    Regex(super::regex::RegexFn),
    /// A network-address function or operator (expr/inet.rs).
    Inet(super::inet::InetFn),
    /// A function or operator over arrays of `elem` (expr/array.rs).
    Array {
        f: super::array::ArrayFn,
        elem: permafrost_types::ElemType,
    },
    ConcatWs,
    Ltrim,
    Rtrim,
    Left,
    Right,
    Lpad,
    Rpad,
    Repeat,
    Replace,
    Reverse,
    Initcap,
    Translate,
    SplitPart,
    Strpos,
    StartsWith,
    Chr,
    Ascii,
    /// `to_hex(n)`, of an `integer` (`bits32`) or a `bigint`.
    ToHex {
        bits32: bool,
    },
    Md5,
    OctetLength,
    /// A function of doubles ([`MathFunc`]).
    Math(MathFunc),
    Pi,
    Sign,
    Trunc,
    Mod,
    /// `extract(unit from x)` (`numeric`) or `date_part(unit, x)` (double precision).
    DatePart {
        numeric: bool,
    },
    DateTrunc,
}

/// A text argument as text: itself, or another value written as text.
/// `to_char` of the moment `t`: its wall-clock time and zone in the session zone.
fn zoned_to_char(t: i64, format: &str) -> Result<Value> {
    let zone = permafrost_types::zone::session();
    let shown = super::to_char::Shown {
        offset: zone.offset_at(t),
        abbreviation: zone.abbreviation_at(t),
    };
    let local = zone.to_local(t).ok_or(SqlError::Math {
        sqlstate: "22008",
        message: "timestamp out of range",
    })?;
    super::to_char::datetime(local, Some(&shown), format)
}

fn text_arg<'a>(v: ValueRef<'a>) -> Cow<'a, str> {
    match v {
        ValueRef::Text(t) => Cow::Borrowed(t),
        other => Cow::Owned(other.to_string()),
    }
}

/// An integer argument (a quoted literal read as one, as PostgreSQL reads it).
fn int_arg(v: ValueRef<'_>) -> Result<i64> {
    match v {
        ValueRef::Int(i) => Ok(i),
        ValueRef::Text(t) => t
            .trim()
            .parse()
            .map_err(|_| SqlError::InvalidText(format!("invalid input syntax for type integer: \"{t}\""))),
        ValueRef::Decimal(d) => d.round_to_i64().ok_or_else(|| overflow("integer")),
        ValueRef::Double(d) if d.is_finite() && d.abs() < 9.2e18 => Ok(d.round() as i64),
        other => Err(SqlError::Type(format!("{} is not an integer", other.kind_name()))),
    }
}

/// A double argument.
fn float_arg(v: ValueRef<'_>) -> Result<f64> {
    match v {
        ValueRef::Int(i) => Ok(i as f64),
        ValueRef::Double(d) => Ok(d),
        ValueRef::Decimal(d) => Ok(d.to_f64()),
        ValueRef::Text(t) => t
            .trim()
            .parse()
            .map_err(|_| SqlError::InvalidText(format!("invalid input syntax for type double precision: \"{t}\""))),
        other => Err(SqlError::Type(format!("{} is not a number", other.kind_name()))),
    }
}

/// A strict function (NULL for any NULL argument) of arguments `v`, none NULL.
pub(super) fn strict(f: Func, v: &[Datum<'_>], cx: &Cx<'_>) -> Result<Value> {
    let b = &cx.budget;
    let s = |i: usize| text_arg(v[i].as_ref());
    let n = |i: usize| int_arg(v[i].as_ref());
    let opt = |i: usize| v.get(i).map(|d| text_arg(d.as_ref()));
    Ok(match f {
        Func::Inet(g) => super::inet::eval(g, v)?,
        Func::Clock { statement } => {
            let draws = cx.draws.ok_or_else(|| {
                SqlError::Unsupported("the clock read in a value computed once when the statement is planned".into())
            })?;
            Value::TimestampTz(draws.clock(statement)?)
        }
        Func::Trim => text::trim_chars(&s(0), opt(1).as_deref(), true, true, b)?,
        Func::Ltrim => text::trim_chars(&s(0), opt(1).as_deref(), true, false, b)?,
        Func::Rtrim => text::trim_chars(&s(0), opt(1).as_deref(), false, true, b)?,
        Func::Left => text::left_right(&s(0), n(1)?, false, b)?,
        Func::Right => text::left_right(&s(0), n(1)?, true, b)?,
        Func::Lpad | Func::Rpad => {
            let fill = opt(2).unwrap_or(Cow::Borrowed(" "));
            text::pad(&s(0), n(1)?, &fill, f == Func::Rpad, b)?
        }
        Func::Repeat => text::repeat(&s(0), n(1)?, b)?,
        Func::Replace => text::replace(&s(0), &s(1), &s(2), b)?,
        Func::Reverse => text::reverse(&s(0), b)?,
        Func::Initcap => text::initcap(&s(0), b)?,
        Func::Translate => text::translate(&s(0), &s(1), &s(2), b)?,
        Func::SplitPart => text::split_part(&s(0), &s(1), n(2)?, b)?,
        Func::Strpos => Value::Int(text::strpos(&s(0), &s(1))),
        Func::StartsWith => Value::Bool(s(0).starts_with(&*s(1))),
        Func::Chr => text::chr(n(0)?)?,
        Func::Ascii => Value::Int(s(0).chars().next().map_or(0, |c| c as i64)),
        Func::ToHex { bits32 } => text::to_hex(n(0)?, bits32),
        Func::Md5 => match v[0].as_ref() {
            ValueRef::Bytes(bytes) => text::md5(bytes),
            other => text::md5(text_arg(other).as_bytes()),
        },
        Func::OctetLength => match v[0].as_ref() {
            ValueRef::Bytes(bytes) => Value::Int(bytes.len() as i64),
            other => Value::Int(text_arg(other).len() as i64),
        },
        Func::DatePart { numeric } => super::datefunc::date_part(&s(0), v[1].as_ref(), numeric)?,
        Func::DateTrunc => super::datefunc::date_trunc(&s(0), v[1].as_ref())?,
        Func::ToChar => {
            let format = s(1);
            // (A pattern writes at most nine characters: `Month` padded.)
            b.check(format.len().saturating_mul(9))?;
            match v[0].as_ref() {
                ValueRef::Timestamp(t) => super::to_char::datetime(t, None, &format)?,
                ValueRef::TimestampTz(t) => zoned_to_char(t, &format)?,
                ValueRef::Date(d) => {
                    let midnight = permafrost_types::datetime::start_of_day(d);
                    zoned_to_char(
                        permafrost_types::zone::session_utc(midnight).unwrap_or(midnight),
                        &format,
                    )?
                }
                ValueRef::Interval(iv) => super::to_char::interval(iv, &format)?,
                n @ (ValueRef::Int(_) | ValueRef::Double(_) | ValueRef::Decimal(_)) => {
                    super::to_char::number::number(n, &format)?
                }
                other => return Err(SqlError::Type(format!("to_char of {}", other.kind_name()))),
            }
        }
        Func::Age => {
            // (A moment's fields are those of its wall-clock time in the session zone.)
            let local = |t: i64| permafrost_types::zone::session_local(t).unwrap_or(t);
            let ts = |i: usize| match v[i].as_ref() {
                ValueRef::Timestamp(t) => Ok(t),
                ValueRef::TimestampTz(t) => Ok(local(t)),
                other => Err(SqlError::Type(format!("age of {}", other.kind_name()))),
            };
            let day = permafrost_types::datetime::MICROS_PER_DAY;
            match v.len() {
                1 => super::age::age(local(cx.now).div_euclid(day) * day, ts(0)?)?,
                _ => super::age::age(ts(0)?, ts(1)?)?,
            }
        }
        Func::Justify(kind) => super::age::justify(kind, v[0].as_ref())?,
        Func::MakeInterval => {
            let mut parts = [0i64; 6];
            for (p, x) in parts.iter_mut().zip(v) {
                *p = int_arg(x.as_ref())?;
            }
            super::age::make_interval(parts, float_arg(v[6].as_ref())?)?
        }
        Func::MakeDatetime(ty) => {
            let n = v.len();
            let ints = v[..n - 1]
                .iter()
                .map(|x| int_arg(x.as_ref()))
                .collect::<Result<Vec<_>>>()?;
            let last = v[n - 1].as_ref();
            let secs = if ty == DataType::Date {
                int_arg(last)? as f64
            } else {
                float_arg(last)?
            };
            super::datefunc::make_datetime(ty, &ints, secs)?
        }
        Func::AtTimeZone { to_local } => match v[1].as_ref() {
            ValueRef::Interval(east) => super::datefunc::at_interval_zone(v[0].as_ref(), &east, to_local)?,
            _ => super::datefunc::at_time_zone(v[0].as_ref(), &s(1), to_local)?,
        },
        Func::Math(m) => {
            let y = if m.arity() == 2 { float_arg(v[1].as_ref())? } else { 0.0 };
            math::eval(m, float_arg(v[0].as_ref())?, y)?
        }
        Func::Sign => match v[0].as_ref() {
            ValueRef::Decimal(d) => {
                let sign = if d.is_zero() {
                    0
                } else if d.is_negative() {
                    -1
                } else {
                    1
                };
                Value::Decimal(Numeric::new(sign, 0))
            }
            other => {
                let x = float_arg(other)?;
                Value::Double(if x == 0.0 || x.is_nan() { x } else { x.signum() })
            }
        },
        Func::Trunc => match (v[0].as_ref(), v.get(1)) {
            (ValueRef::Double(x), None) => Value::Double(x.trunc()),
            (ValueRef::Int(i), None) => Value::Double(i as f64),
            (x, digits) => {
                let d = match x {
                    ValueRef::Decimal(d) => d.to_owned(),
                    ValueRef::Int(i) => Numeric::new(i, 0),
                    other => return Err(SqlError::Type(format!("trunc({}) does not exist", other.kind_name()))),
                };
                let digits = match digits {
                    Some(n) => int_arg(n.as_ref())?,
                    None => 0,
                };
                let Ok(digits) = u32::try_from(digits) else {
                    return Err(SqlError::Unsupported(
                        "trunc(numeric, n) with a negative n (use round(x, n) or arithmetic)".into(),
                    ));
                };
                Value::Decimal(d.as_ref().trunc(digits.min(1000)).map_err(numeric_err)?)
            }
        },
        other => {
            return Err(SqlError::Unsupported(format!(
                "internal error: {other:?} is not a strict function of this module"
            )));
        }
    })
}
