//! Dates and timestamps on the wire: PostgreSQL's binary forms (days or microseconds since
//! 2000-01-01, big-endian) and text forms (DateStyle ISO, TimeZone UTC), for result
//! columns, parameters and binary COPY alike.

use bytes::BytesMut;
use pgwire::types::format::FormatOptions;
use postgres_types::{IsNull, Type};

use permafrost_types::datetime::{DATE_MAX, DATE_MIN};
use permafrost_types::{DataType, TIMESTAMP_MAX, TIMESTAMP_MIN, Value, date_text, timestamp_text, timestamptz_text};

/// 2000-01-01 00:00:00, PostgreSQL's epoch, in microseconds since 1970.
pub(crate) const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
/// 2000-01-01 in days since 1970.
const PG_EPOCH_DAYS: i32 = 10_957;

/// A date or timestamp value of a result column, in the column's format.
#[derive(Debug)]
pub(crate) enum PgDateTime {
    Timestamp(i64),
    TimestampTz(i64),
    Date(i32),
}

type BoxError = Box<dyn std::error::Error + Sync + Send>;

impl postgres_types::ToSql for PgDateTime {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match *self {
            PgDateTime::Timestamp(us) | PgDateTime::TimestampTz(us) => {
                out.extend_from_slice(&(us - PG_EPOCH_MICROS).to_be_bytes())
            }
            PgDateTime::Date(d) => out.extend_from_slice(&(d - PG_EPOCH_DAYS).to_be_bytes()),
        }
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::TIMESTAMP | Type::TIMESTAMPTZ | Type::DATE)
    }

    postgres_types::to_sql_checked!();
}

impl pgwire::types::ToSqlText for PgDateTime {
    fn to_sql_text(&self, _ty: &Type, out: &mut BytesMut, _options: &FormatOptions) -> Result<IsNull, BoxError> {
        let s = match *self {
            PgDateTime::Timestamp(us) => timestamp_text(us),
            PgDateTime::TimestampTz(us) => timestamptz_text(us),
            PgDateTime::Date(d) => date_text(d),
        };
        out.extend_from_slice(s.as_bytes());
        Ok(IsNull::No)
    }
}

/// The value of PostgreSQL's binary form `b` of a date or timestamp of type `ty`; the
/// SQLSTATE and message when the bytes are not one (22P03) or name a moment this server
/// does not hold (22008: the infinities, and what lies past the types' ranges).
pub(crate) fn from_binary(b: &[u8], ty: &DataType) -> Result<Value, (&'static str, String)> {
    let size = |n: usize| {
        (
            "22P03",
            format!("a binary {} is {n} bytes, got {}", ty.sql_name(), b.len()),
        )
    };
    let range = || ("22008", format!("{} out of range", ty.sql_name()));
    if *ty == DataType::Date {
        let d = i32::from_be_bytes(b.try_into().map_err(|_| size(4))?);
        if d == i32::MAX || d == i32::MIN {
            return Err(("22008", "date infinity is not supported".into()));
        }
        return match d.checked_add(PG_EPOCH_DAYS) {
            Some(d) if (DATE_MIN..=DATE_MAX).contains(&d) => Ok(Value::Date(d)),
            _ => Err(range()),
        };
    }
    let us = i64::from_be_bytes(b.try_into().map_err(|_| size(8))?);
    if us == i64::MAX || us == i64::MIN {
        return Err(("22008", "timestamp infinity is not supported".into()));
    }
    let us = match us.checked_add(PG_EPOCH_MICROS) {
        Some(us) if (TIMESTAMP_MIN..=TIMESTAMP_MAX).contains(&us) => us,
        _ => return Err(range()),
    };
    Ok(match ty {
        DataType::TimestampTz => Value::TimestampTz(us),
        _ => Value::Timestamp(us),
    })
}

/// The engine type of a date or timestamp wire type.
pub(crate) fn engine_type(ty: &Type) -> Option<DataType> {
    Some(match *ty {
        Type::TIMESTAMP => DataType::Timestamp,
        Type::TIMESTAMPTZ => DataType::TimestampTz,
        Type::DATE => DataType::Date,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binary forms PostgreSQL 15 sends (`SELECT x` in binary) for known values.
    #[test]
    fn binary_forms_are_postgresql_s() {
        let date = from_binary(&0i32.to_be_bytes(), &DataType::Date).unwrap();
        assert_eq!(date.to_string(), "2000-01-01");
        let d = from_binary(&(-10_957i32).to_be_bytes(), &DataType::Date).unwrap();
        assert_eq!(d.to_string(), "1970-01-01");
        let tz = from_binary(&3_600_000_000i64.to_be_bytes(), &DataType::TimestampTz).unwrap();
        assert_eq!(tz.to_string(), "2000-01-01 01:00:00+00");
        let ts = from_binary(&(-1i64).to_be_bytes(), &DataType::Timestamp).unwrap();
        assert_eq!(ts.to_string(), "1999-12-31 23:59:59.999999");
        assert_eq!(
            from_binary(&i64::MAX.to_be_bytes(), &DataType::TimestampTz)
                .unwrap_err()
                .0,
            "22008"
        );
        assert_eq!(
            from_binary(&i32::MIN.to_be_bytes(), &DataType::Date).unwrap_err().0,
            "22008"
        );
        assert_eq!(from_binary(&[0; 3], &DataType::Date).unwrap_err().0, "22P03");
        assert_eq!(from_binary(&[0; 4], &DataType::Timestamp).unwrap_err().0, "22P03");
        assert_eq!(
            from_binary(&(i32::MAX - 1).to_be_bytes(), &DataType::Date)
                .unwrap_err()
                .0,
            "22008"
        );
        let mut out = BytesMut::new();
        postgres_types::ToSql::to_sql(&PgDateTime::Date(10_958), &Type::DATE, &mut out).unwrap();
        assert_eq!(&out[..], &1i32.to_be_bytes());
    }
}
