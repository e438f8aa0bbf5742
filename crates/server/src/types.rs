//! Mapping between the engine's types and values and PostgreSQL's, in text and binary
//! formats.

use chrono::{DateTime, NaiveDateTime};
use permafrost_executor::{DataType, Decimal, Value, ValueRef};
use pgwire::api::Type;
use pgwire::api::portal::Portal;
use pgwire::api::results::{DataRowEncoder, FieldFormat};
use pgwire::error::PgWireResult;
use pgwire::types::format::FormatOptions;

use crate::error::client_error;

/// The PostgreSQL type a column of this engine type is sent as (`None`: unknown, sent
/// as text).
pub fn pg_type(ty: Option<&DataType>) -> Type {
    match ty {
        Some(DataType::SmallInt) => Type::INT2,
        Some(DataType::Integer) => Type::INT4,
        Some(DataType::BigInt) => Type::INT8,
        Some(DataType::Double) => Type::FLOAT8,
        Some(DataType::Decimal { .. }) => Type::NUMERIC,
        Some(DataType::Varchar(Some(_))) => Type::VARCHAR,
        Some(DataType::Varchar(None)) | None => Type::TEXT,
        Some(DataType::Timestamp) => Type::TIMESTAMP,
        Some(DataType::Boolean) => Type::BOOL,
        Some(DataType::Bytea) => Type::BYTEA,
    }
}

fn micros_to_datetime(us: i64) -> PgWireResult<NaiveDateTime> {
    DateTime::from_timestamp_micros(us)
        .map(|d| d.naive_utc())
        .ok_or_else(|| client_error("22008", format!("timestamp out of range: {us} µs")))
}

fn is_text(ty: &Type) -> bool {
    *ty == Type::TEXT || *ty == Type::VARCHAR
}

/// Encodes one value of a result column of PostgreSQL type `ty`. A value whose kind does
/// not match the column's type is converted when that is exact, sent as text in a text
/// column, and otherwise refused (never sent as bytes of the wrong layout).
/// `text`: the column is sent in text format, where timestamps and doubles are written
/// as PostgreSQL writes them ([`timestamp_text`], [`double_text`]).
pub fn encode(enc: &mut DataRowEncoder, v: ValueRef<'_>, ty: &Type, text: bool) -> PgWireResult<()> {
    let mismatch = |what: &str| client_error("XX000", format!("internal error: a {what} value in a {ty} column"));
    let as_text = |enc: &mut DataRowEncoder, s: String| {
        enc.encode_field_with_type_and_format(&s, ty, FieldFormat::Text, &FormatOptions::default())
    };
    match v {
        ValueRef::Double(f) if text && *ty == Type::FLOAT8 => as_text(enc, double_text(f)),
        ValueRef::Timestamp(us) if text && *ty == Type::TIMESTAMP => as_text(enc, timestamp_text(us)?),
        ValueRef::Null => enc.encode_field(&None::<i64>),
        ValueRef::Int(i) => match *ty {
            Type::INT8 => enc.encode_field(&i),
            Type::INT4 => enc.encode_field(&(i32::try_from(i).map_err(|_| mismatch("large integer"))?)),
            Type::INT2 => enc.encode_field(&(i16::try_from(i).map_err(|_| mismatch("large integer"))?)),
            Type::FLOAT8 => enc.encode_field(&(i as f64)),
            Type::NUMERIC => enc.encode_field(&Decimal::from(i)),
            _ if is_text(ty) => enc.encode_field(&i.to_string()),
            _ => Err(mismatch("integer")),
        },
        ValueRef::Double(f) => match *ty {
            Type::FLOAT8 => enc.encode_field(&f),
            _ if is_text(ty) => enc.encode_field(&f.to_string()),
            _ => Err(mismatch("double precision")),
        },
        ValueRef::Decimal(d) => match *ty {
            Type::NUMERIC => enc.encode_field(&d),
            _ if is_text(ty) => enc.encode_field(&d.to_string()),
            _ => Err(mismatch("numeric")),
        },
        ValueRef::Bool(b) => match *ty {
            Type::BOOL => enc.encode_field(&b),
            _ if is_text(ty) => enc.encode_field(&(if b { "true" } else { "false" })),
            _ => Err(mismatch("boolean")),
        },
        ValueRef::Timestamp(us) => match *ty {
            Type::TIMESTAMP => enc.encode_field(&micros_to_datetime(us)?),
            _ if is_text(ty) => enc.encode_field(&micros_to_datetime(us)?.to_string()),
            _ => Err(mismatch("timestamp")),
        },
        ValueRef::Text(s) => match *ty {
            _ if is_text(ty) => enc.encode_field(&s),
            _ => Err(mismatch("text")),
        },
        ValueRef::Bytes(b) => match *ty {
            Type::BYTEA => enc.encode_field(&b),
            _ => Err(mismatch("bytea")),
        },
    }
}

/// A double as PostgreSQL writes it (`float8out`, shortest exact digits): positional
/// when the decimal exponent is from -4 to 14, else `1.5e-07`, `1e+20`; `NaN`,
/// `Infinity`, `-Infinity`.
pub fn double_text(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f != 0.0 && !(-4..15).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// A timestamp as PostgreSQL writes it (ISO style): seconds, then the fraction without
/// its trailing zeros, none when it is whole.
pub fn timestamp_text(us: i64) -> PgWireResult<String> {
    let t = micros_to_datetime(us)?;
    let mut s = t.format("%Y-%m-%d %H:%M:%S").to_string();
    let frac = us.rem_euclid(1_000_000);
    if frac != 0 {
        let digits = format!("{frac:06}");
        s.push('.');
        s.push_str(digits.trim_end_matches('0'));
    }
    Ok(s)
}

/// Reads parameter `i` of a bound portal as an engine value. The type is the one the
/// client declared, else the one the statement's plan inferred, else text.
pub fn decode_param<S: Clone>(portal: &Portal<S>, i: usize, inferred: Option<&Type>) -> PgWireResult<Value> {
    let declared = portal.statement.parameter_types.get(i).cloned().flatten();
    let ty = declared
        .filter(|t| *t != Type::UNKNOWN)
        .or_else(|| inferred.cloned())
        .unwrap_or(Type::TEXT);
    let v = match ty {
        Type::INT8 => portal.parameter::<i64>(i, &ty)?.map(Value::Int),
        Type::INT4 => portal.parameter::<i32>(i, &ty)?.map(|v| Value::Int(v.into())),
        Type::INT2 => portal.parameter::<i16>(i, &ty)?.map(|v| Value::Int(v.into())),
        Type::FLOAT8 => portal.parameter::<f64>(i, &ty)?.map(Value::Double),
        Type::FLOAT4 => portal.parameter::<f32>(i, &ty)?.map(|v| Value::Double(v.into())),
        Type::NUMERIC => portal.parameter::<Decimal>(i, &ty)?.map(Value::Decimal),
        Type::BOOL => portal.parameter::<bool>(i, &ty)?.map(Value::Bool),
        Type::TIMESTAMP => portal
            .parameter::<NaiveDateTime>(i, &ty)?
            .map(|t| Value::Timestamp(t.and_utc().timestamp_micros())),
        Type::BYTEA => portal.parameter::<Vec<u8>>(i, &ty)?.map(Value::bytes),
        _ => {
            // Text and anything else: the raw text of a text-format parameter as it is
            // (the library's String decoder would treat it as a SQL literal).
            let raw = portal
                .parameters
                .get(i)
                .ok_or_else(|| client_error("08P01", format!("parameter ${} was not bound", i + 1)))?;
            match raw {
                None => None,
                Some(bytes) if portal.parameter_format.is_text(i) || is_text(&ty) => {
                    // Text never holds a NUL byte or invalid UTF-8, whatever its format.
                    crate::wire_check::text(bytes).map_err(|v| v.into_error())?;
                    let s = std::str::from_utf8(bytes)
                        .map_err(|_| client_error("22021", format!("parameter ${} is not valid UTF-8", i + 1)))?;
                    Some(Value::text(s))
                }
                Some(_) => {
                    return Err(client_error(
                        "0A000",
                        format!("parameter ${} of type {ty} in binary format is not supported", i + 1),
                    ));
                }
            }
        }
    };
    Ok(v.unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What PostgreSQL 15 prints for `SELECT x::float8` (extra_float_digits = 1).
    #[test]
    fn doubles_are_written_as_postgresql_writes_them() {
        for (f, pg) in [
            (1.5, "1.5"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1e20, "1e+20"),
            (1e15, "1e+15"),
            (1e14, "100000000000000"),
            (123456789.123, "123456789.123"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (-2.5e-10, "-2.5e-10"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(double_text(f), pg, "{f:e}");
        }
    }

    /// What PostgreSQL 15 prints for `SELECT x::timestamp` (DateStyle ISO).
    #[test]
    fn timestamps_are_written_as_postgresql_writes_them() {
        let at = |s: &str| {
            NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f")
                .unwrap()
                .and_utc()
                .timestamp_micros()
        };
        for (t, pg) in [
            ("2020-01-02 03:04:05", "2020-01-02 03:04:05"),
            ("2020-01-02 03:04:05.25", "2020-01-02 03:04:05.25"),
            ("2020-01-02 03:04:05.000001", "2020-01-02 03:04:05.000001"),
            ("1969-12-31 23:59:59.5", "1969-12-31 23:59:59.5"),
            ("0001-01-01 00:00:00", "0001-01-01 00:00:00"),
        ] {
            assert_eq!(timestamp_text(at(t)).unwrap(), pg);
        }
    }
}
