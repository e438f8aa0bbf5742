//! Mapping between the engine's types and values and PostgreSQL's, in text and binary
//! formats.

use chrono::{DateTime, NaiveDateTime};
use permafrost_executor::{DataType, Numeric, NumericRef, Value, ValueRef};
use permafrost_storage::types::{double_text, timestamp_text};
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
/// as PostgreSQL writes them (`permafrost_storage::types::{timestamp_text, double_text}`).
pub fn encode(enc: &mut DataRowEncoder, v: ValueRef<'_>, ty: &Type, text: bool) -> PgWireResult<()> {
    let mismatch = |what: &str| client_error("XX000", format!("internal error: a {what} value in a {ty} column"));
    let as_text = |enc: &mut DataRowEncoder, s: String| {
        enc.encode_field_with_type_and_format(&s, ty, FieldFormat::Text, &FormatOptions::default())
    };
    match v {
        ValueRef::Double(f) if text && *ty == Type::FLOAT8 => as_text(enc, double_text(f)),
        ValueRef::Timestamp(us) if text && *ty == Type::TIMESTAMP => as_text(enc, timestamp_text(us)),
        ValueRef::Null => enc.encode_field(&None::<i64>),
        ValueRef::Int(i) => match *ty {
            Type::INT8 => enc.encode_field(&i),
            Type::INT4 => enc.encode_field(&(i32::try_from(i).map_err(|_| mismatch("large integer"))?)),
            Type::INT2 => enc.encode_field(&(i16::try_from(i).map_err(|_| mismatch("large integer"))?)),
            Type::FLOAT8 => enc.encode_field(&(i as f64)),
            Type::NUMERIC => enc.encode_field(&PgNumeric(Numeric::from(i).as_ref())),
            _ if is_text(ty) => enc.encode_field(&i.to_string()),
            _ => Err(mismatch("integer")),
        },
        ValueRef::Double(f) => match *ty {
            Type::FLOAT8 => enc.encode_field(&f),
            _ if is_text(ty) => enc.encode_field(&f.to_string()),
            _ => Err(mismatch("double precision")),
        },
        ValueRef::Decimal(d) => match *ty {
            Type::NUMERIC => enc.encode_field(&PgNumeric(d)),
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
            _ if is_text(ty) => enc.encode_field(&timestamp_text(us)),
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
        // Catalog queries compare oids (crate::syscat).
        Type::OID => portal.parameter::<u32>(i, &ty)?.map(|v| Value::Int(v.into())),
        Type::FLOAT8 => portal.parameter::<f64>(i, &ty)?.map(Value::Double),
        Type::FLOAT4 => portal.parameter::<f32>(i, &ty)?.map(|v| Value::Double(v.into())),
        Type::NUMERIC => match portal.parameters.get(i) {
            None => return Err(client_error("08P01", format!("parameter ${} was not bound", i + 1))),
            Some(None) => None,
            Some(Some(bytes)) => {
                let parsed = if portal.parameter_format.is_text(i) {
                    let s = std::str::from_utf8(bytes)
                        .map_err(|_| client_error("22021", format!("parameter ${} is not valid UTF-8", i + 1)))?;
                    Numeric::parse(s).map_err(|e| (e, s.to_string()))
                } else {
                    Numeric::from_pg_binary(bytes).map_err(|e| (e, "(binary)".to_string()))
                };
                let n = parsed.map_err(|(e, text)| {
                    let e = permafrost_storage::types::numeric_error(
                        &DataType::Decimal { precision: 0, scale: 0 },
                        e,
                        &text,
                    );
                    client_error(e.sqlstate(), format!("{e} (parameter ${})", i + 1))
                })?;
                Some(Value::Decimal(n))
            }
        },
        Type::BOOL => portal.parameter::<bool>(i, &ty)?.map(Value::Bool),
        // In text format as PostgreSQL reads it (years past 9999, BC); in binary the
        // library's decoder.
        Type::TIMESTAMP if portal.parameter_format.is_text(i) => match portal.parameters.get(i) {
            Some(Some(bytes)) => {
                let s = std::str::from_utf8(bytes)
                    .map_err(|_| client_error("22021", format!("parameter ${} is not valid UTF-8", i + 1)))?;
                Some(Value::Timestamp(
                    permafrost_storage::types::parse_timestamp(s).map_err(|e| {
                        let (code, what) = match e {
                            permafrost_storage::types::TimestampError::Syntax => {
                                ("22007", "invalid input syntax for type timestamp")
                            }
                            permafrost_storage::types::TimestampError::OutOfRange => {
                                ("22008", "date/time field value out of range")
                            }
                        };
                        client_error(code, format!("{what}: \"{s}\" (parameter ${})", i + 1))
                    })?,
                ))
            }
            Some(None) => None,
            None => return Err(client_error("08P01", format!("parameter ${} was not bound", i + 1))),
        },
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

/// A numeric as PostgreSQL sends it: its text, or its base-10000 binary form
/// ([`NumericRef::to_pg_binary`]); any precision.
#[derive(Debug)]
struct PgNumeric<'a>(NumericRef<'a>);

impl postgres_types::ToSql for PgNumeric<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0.to_pg_binary());
        Ok(postgres_types::IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }

    postgres_types::to_sql_checked!();
}

impl pgwire::types::ToSqlText for PgNumeric<'_> {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut bytes::BytesMut,
        _format_options: &FormatOptions,
    ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use std::fmt::Write;
        write!(out, "{}", self.0)?;
        Ok(postgres_types::IsNull::No)
    }
}
