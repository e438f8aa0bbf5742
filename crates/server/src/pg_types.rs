//! Mapping between the engine's types and values and PostgreSQL's, in text and binary
//! formats.

use permafrost_executor::ColumnInfo;
use permafrost_types::double_text;
use permafrost_types::{DataType, ElemType, Numeric, NumericRef, Value, ValueRef};
use pgwire::api::Type;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::error::PgWireResult;
use pgwire::types::format::FormatOptions;

use crate::error::client_error;
use crate::pg_datetime::{self, PgDateTime, engine_type};

/// The PostgreSQL type of this engine type, and the type of arrays of it (`None`:
/// unknown, text).
fn pg_types(ty: Option<&DataType>) -> (Type, Type) {
    match ty {
        Some(DataType::SmallInt) => (Type::INT2, Type::INT2_ARRAY),
        Some(DataType::Integer) => (Type::INT4, Type::INT4_ARRAY),
        Some(DataType::BigInt) => (Type::INT8, Type::INT8_ARRAY),
        Some(DataType::Double) => (Type::FLOAT8, Type::FLOAT8_ARRAY),
        Some(DataType::Decimal { .. }) => (Type::NUMERIC, Type::NUMERIC_ARRAY),
        Some(DataType::Varchar(Some(_))) => (Type::VARCHAR, Type::VARCHAR_ARRAY),
        Some(DataType::Varchar(None)) | None => (Type::TEXT, Type::TEXT_ARRAY),
        Some(DataType::Timestamp) => (Type::TIMESTAMP, Type::TIMESTAMP_ARRAY),
        Some(DataType::TimestampTz) => (Type::TIMESTAMPTZ, Type::TIMESTAMPTZ_ARRAY),
        Some(DataType::Date) => (Type::DATE, Type::DATE_ARRAY),
        Some(DataType::Boolean) => (Type::BOOL, Type::BOOL_ARRAY),
        Some(DataType::Bytea) => (Type::BYTEA, Type::BYTEA_ARRAY),
        Some(DataType::Uuid) => (Type::UUID, Type::UUID_ARRAY),
        Some(DataType::Interval) => (Type::INTERVAL, Type::INTERVAL_ARRAY),
        Some(DataType::Time) => (Type::TIME, Type::TIME_ARRAY),
        Some(DataType::Json) => (Type::JSON, Type::JSON_ARRAY),
        Some(DataType::Jsonb) => (Type::JSONB, Type::JSONB_ARRAY),
        // (No arrays of arrays: the second is never asked for.)
        Some(DataType::Array(ElemType::Varchar)) => (Type::VARCHAR_ARRAY, Type::TEXT_ARRAY),
        Some(DataType::Array(e)) => (pg_types(Some(&e.data_type())).1, Type::TEXT_ARRAY),
        // (No arrays of enums either: `x = ANY($1)` takes text.)
        Some(DataType::Enum(e)) => (enum_type(*e), Type::TEXT_ARRAY),
        Some(DataType::Inet) => (Type::INET, Type::INET_ARRAY),
        Some(DataType::Cidr) => (Type::CIDR, Type::CIDR_ARRAY),
    }
}

/// The PostgreSQL type of an enum type: its oid (crate::syscat) and its labels in order.
fn enum_type(e: permafrost_types::EnumRef) -> Type {
    let labels = e.labels_sorted().into_iter().map(String::from).collect();
    Type::new(
        e.name.clone(),
        crate::syscat::relations::type_oid(&DataType::Enum(e)) as u32,
        postgres_types::Kind::Enum(labels),
        "public".into(),
    )
}

/// The PostgreSQL type a column of this engine type is sent as (`None`: unknown, sent
/// as text).
pub fn pg_type(ty: Option<&DataType>) -> Type {
    pg_types(ty).0
}

/// The PostgreSQL array type of elements of this engine type (an array parameter,
/// `x = ANY($1)`).
pub fn pg_array_type(elem: Option<&DataType>) -> Type {
    pg_types(elem).1
}

/// The engine type of the elements of array type `ty`, if it is one this server reads.
pub fn array_element(ty: &Type) -> Option<DataType> {
    Some(match *ty {
        Type::INT2_ARRAY => DataType::SmallInt,
        Type::INT4_ARRAY => DataType::Integer,
        Type::INT8_ARRAY | Type::OID_ARRAY => DataType::BigInt,
        Type::FLOAT4_ARRAY | Type::FLOAT8_ARRAY => DataType::Double,
        Type::NUMERIC_ARRAY => DataType::Decimal { precision: 0, scale: 0 },
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY | Type::BPCHAR_ARRAY | Type::NAME_ARRAY => DataType::Varchar(None),
        Type::TIMESTAMP_ARRAY => DataType::Timestamp,
        Type::TIMESTAMPTZ_ARRAY => DataType::TimestampTz,
        Type::DATE_ARRAY => DataType::Date,
        Type::BOOL_ARRAY => DataType::Boolean,
        Type::BYTEA_ARRAY => DataType::Bytea,
        Type::UUID_ARRAY => DataType::Uuid,
        Type::INTERVAL_ARRAY => DataType::Interval,
        Type::TIME_ARRAY => DataType::Time,
        Type::JSON_ARRAY => DataType::Json,
        Type::JSONB_ARRAY => DataType::Jsonb,
        _ => return None,
    })
}

/// A binary array parameter as the text of its array literal, which is how the engine
/// takes arrays (`crate::copy_binary::array_values`).
fn binary_array_literal(b: &[u8], param: usize) -> PgWireResult<String> {
    let (_, values) = crate::copy_binary::array_values(b)
        .map_err(|(code, m)| client_error(code, format!("parameter ${}: {m}", param + 1)))?;
    Ok(permafrost_types::array_value::literal_of_values(&values))
}

fn is_text(ty: &Type) -> bool {
    *ty == Type::TEXT || *ty == Type::VARCHAR
}

/// Encodes one value of a result column of PostgreSQL type `ty`. A value whose kind does
/// not match the column's type is converted when that is exact, sent as text in a text
/// column, and otherwise refused (never sent as bytes of the wrong layout).
/// `text`: the column is sent in text format, where timestamps and doubles are written
/// as PostgreSQL writes them (`permafrost_types::double_text`, `pg_datetime`).
pub fn encode(enc: &mut RowWriter, v: ValueRef<'_>, ty: &Type, text: bool) -> PgWireResult<()> {
    let mismatch = |what: &str| client_error("XX000", format!("internal error: a {what} value in a {ty} column"));
    let as_text = |enc: &mut RowWriter, s: String| {
        enc.encode_field_with_type_and_format(&s, ty, FieldFormat::Text, &FormatOptions::default())
    };
    match v {
        ValueRef::Double(f) if text && *ty == Type::FLOAT8 => as_text(enc, double_text(f)),
        ValueRef::Null => enc.encode_field(&None::<i64>),
        ValueRef::Int(i) => match *ty {
            Type::INT8 => enc.encode_field(&i),
            Type::INT4 => enc.encode_field(&(i32::try_from(i).map_err(|_| mismatch("large integer"))?)),
            Type::INT2 => enc.encode_field(&(i16::try_from(i).map_err(|_| mismatch("large integer"))?)),
            Type::FLOAT8 => enc.encode_field(&(i as f64)),
            Type::NUMERIC => enc.encode_field(&PgForms::Numeric(Numeric::from(i).as_ref())),
            _ if is_text(ty) => enc.encode_field(&i.to_string()),
            _ => Err(mismatch("integer")),
        },
        ValueRef::Double(f) => match *ty {
            Type::FLOAT8 => enc.encode_field(&f),
            _ if is_text(ty) => enc.encode_field(&f.to_string()),
            _ => Err(mismatch("double precision")),
        },
        ValueRef::Decimal(d) => match *ty {
            Type::NUMERIC => enc.encode_field(&PgForms::Numeric(d)),
            _ if is_text(ty) => enc.encode_field(&d.to_string()),
            _ => Err(mismatch("numeric")),
        },
        ValueRef::Bool(b) => match *ty {
            Type::BOOL => enc.encode_field(&b),
            _ if is_text(ty) => enc.encode_field(&(if b { "true" } else { "false" })),
            _ => Err(mismatch("boolean")),
        },
        // Exact conversions between them as PostgreSQL's casts (the session's zone is UTC).
        ValueRef::Timestamp(_) | ValueRef::TimestampTz(_) | ValueRef::Date(_) => {
            let target = match engine_type(ty) {
                Some(t) => t,
                None if is_text(ty) => return enc.encode_field(&v.to_string()),
                None => return Err(mismatch(v.kind_name())),
            };
            let x = match v.to_owned().coerce_to(&target) {
                Ok(Value::Timestamp(us)) => PgDateTime::Timestamp(us),
                Ok(Value::TimestampTz(us)) => PgDateTime::TimestampTz(us),
                Ok(Value::Date(d)) => PgDateTime::Date(d),
                _ => return Err(mismatch(v.kind_name())),
            };
            enc.encode_field(&x)
        }
        ValueRef::Text(s) => match *ty {
            _ if is_text(ty) => enc.encode_field(&s),
            Type::JSON | Type::JSONB => enc.encode_field(&PgForms::Json {
                text: s,
                jsonb: *ty == Type::JSONB,
            }),
            // An array's value is its literal in PostgreSQL's output form: its text form.
            _ if matches!(ty.kind(), postgres_types::Kind::Array(_)) => {
                if text {
                    enc.encode_field(&PgForms::Raw(s.as_bytes()))
                } else {
                    enc.encode_field(&PgForms::Raw(&binary_array(s, ty)?))
                }
            }
            _ => Err(mismatch("text")),
        },
        ValueRef::Time(t) => match *ty {
            Type::TIME => enc.encode_field(&PgForms::Time(t)),
            _ if is_text(ty) => enc.encode_field(&v.to_string()),
            _ => Err(mismatch("time")),
        },
        ValueRef::Interval(x) => match *ty {
            Type::INTERVAL => enc.encode_field(&PgForms::Interval(x)),
            _ if is_text(ty) => enc.encode_field(&v.to_string()),
            _ => Err(mismatch("interval")),
        },
        ValueRef::Uuid(u) => match *ty {
            Type::UUID => enc.encode_field(&PgForms::Uuid(u)),
            _ if is_text(ty) => enc.encode_field(&v.to_string()),
            _ => Err(mismatch("uuid")),
        },
        ValueRef::Bytes(b) => match *ty {
            Type::BYTEA => enc.encode_field(&b),
            _ => Err(mismatch("bytea")),
        },
        // Its label, in text and binary format alike (PostgreSQL's enum_send).
        ValueRef::Enum(e) if is_text(ty) || matches!(ty.kind(), postgres_types::Kind::Enum(_)) => {
            as_text(enc, e.label().to_string())
        }
        ValueRef::Enum(_) => Err(mismatch("enum")),
        ValueRef::Inet(x) => match *ty {
            Type::INET | Type::CIDR if text => as_text(enc, x.to_string()),
            Type::INET | Type::CIDR => enc.encode_field(&PgForms::Raw(&x.to_pg_binary())),
            _ if is_text(ty) => enc.encode_field(&v.to_string()),
            _ => Err(mismatch(v.kind_name())),
        },
    }
}

/// The binary form of array value `literal` in a column of array type `ty`: one dimension
/// (none when empty), whether any element is NULL, the element type's oid, the size and
/// lower bound 1, then each element as a length (-1 for NULL) and its binary form.
fn binary_array(literal: &str, ty: &Type) -> PgWireResult<Vec<u8>> {
    let (postgres_types::Kind::Array(elem_ty), Some(elem)) = (ty.kind(), array_element(ty)) else {
        return Err(client_error(
            "XX000",
            format!("internal error: {ty} is not an array type"),
        ));
    };
    let bad = |e: permafrost_types::ValueError| client_error(e.sqlstate(), e.to_string());
    let items = permafrost_types::array::elements(literal).map_err(|e| bad(e.into()))?;
    let mut out = Vec::with_capacity(20 + literal.len() * 2);
    let dims: i32 = if items.is_empty() { 0 } else { 1 };
    let nulls = i32::from(items.iter().any(Option::is_none));
    for v in [dims, nulls, elem_ty.oid() as i32] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    if dims == 1 {
        out.extend_from_slice(&(items.len() as i32).to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
    }
    let field = FieldInfo::new(String::new(), None, None, elem_ty.clone(), FieldFormat::Binary);
    let mut w = RowWriter::new(std::sync::Arc::new(vec![field]));
    for item in items {
        let v = match item {
            None => Value::Null,
            Some(t) => Value::parse(&elem, &t).map_err(bad)?,
        };
        encode(&mut w, v.as_ref(), elem_ty, false)?;
        out.extend_from_slice(&w.take_bytes());
    }
    Ok(out)
}

/// Encodes data rows, as pgwire's `DataRowEncoder` does, into one buffer that can be given
/// room for a whole result first ([`RowWriter::reserve`]): each row taken is a view of
/// that buffer, so a result of a hundred rows costs one allocation rather than one per
/// row, and a field's type and options are borrowed rather than cloned.
pub struct RowWriter {
    fields: std::sync::Arc<Vec<pgwire::api::results::FieldInfo>>,
    buf: bytes::BytesMut,
    col: usize,
}

impl RowWriter {
    pub fn new(fields: std::sync::Arc<Vec<pgwire::api::results::FieldInfo>>) -> RowWriter {
        RowWriter {
            fields,
            buf: bytes::BytesMut::new(),
            col: 0,
        }
    }

    /// Room for `bytes` more bytes of rows.
    pub fn reserve(&mut self, bytes: usize) {
        self.buf.reserve(bytes);
    }

    /// Encodes the next field in its column's type and format.
    pub fn encode_field<T>(&mut self, value: &T) -> PgWireResult<()>
    where
        T: postgres_types::ToSql + pgwire::types::ToSqlText + Sized,
    {
        let RowWriter { fields, buf, col } = self;
        let f = fields.get(*col).ok_or_else(|| {
            client_error(
                "XX000",
                format!("internal error: a row of more than {} fields", fields.len()),
            )
        })?;
        put_field(buf, value, f.datatype(), f.format(), f.format_options())?;
        *col += 1;
        Ok(())
    }

    /// Encodes the next field in type `ty` and `format`, whatever its column's.
    pub fn encode_field_with_type_and_format<T>(
        &mut self,
        value: &T,
        ty: &Type,
        format: FieldFormat,
        options: &FormatOptions,
    ) -> PgWireResult<()>
    where
        T: postgres_types::ToSql + pgwire::types::ToSqlText + Sized,
    {
        put_field(&mut self.buf, value, ty, format, options)?;
        self.col += 1;
        Ok(())
    }

    /// The fields encoded so far, each its length and bytes; the next field starts anew.
    fn take_bytes(&mut self) -> bytes::BytesMut {
        self.col = 0;
        self.buf.split()
    }

    /// The row encoded so far; the next field starts a new row.
    pub fn take_row(&mut self) -> pgwire::messages::data::DataRow {
        let n = self.col as i16;
        self.col = 0;
        pgwire::messages::data::DataRow::new(self.buf.split(), n)
    }
}

/// Appends one field of a data row to `buf`: its length (-1 for NULL), then its bytes.
fn put_field<T>(
    buf: &mut bytes::BytesMut,
    value: &T,
    ty: &Type,
    format: FieldFormat,
    options: &FormatOptions,
) -> PgWireResult<()>
where
    T: postgres_types::ToSql + pgwire::types::ToSqlText + Sized,
{
    use bytes::BufMut;
    let at = buf.len();
    buf.put_i32(-1);
    let null = if format == FieldFormat::Text {
        value.to_sql_text(ty, buf, options)?
    } else {
        value.to_sql(ty, buf)?
    };
    if let postgres_types::IsNull::No = null {
        let len = (buf.len() - at - 4) as i32;
        buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
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
                    let e = permafrost_types::numeric_error(&DataType::Decimal { precision: 0, scale: 0 }, e, &text);
                    client_error(e.sqlstate(), format!("{e} (parameter ${})", i + 1))
                })?;
                Some(Value::Decimal(n))
            }
        },
        Type::BOOL => portal.parameter::<bool>(i, &ty)?.map(Value::Bool),
        // In text format as PostgreSQL reads it (years past 9999, BC), in binary its
        // binary form.
        ref t if engine_type(t).is_some() => match portal.parameters.get(i) {
            Some(Some(bytes)) => {
                let ty = engine_type(t).expect("a date or timestamp type");
                Some(if portal.parameter_format.is_text(i) {
                    let s = std::str::from_utf8(bytes)
                        .map_err(|_| client_error("22021", format!("parameter ${} is not valid UTF-8", i + 1)))?;
                    Value::parse(&ty, s)
                        .map_err(|e| client_error(e.sqlstate(), format!("{e} (parameter ${})", i + 1)))?
                } else {
                    pg_datetime::from_binary(bytes, &ty)
                        .map_err(|(code, e)| client_error(code, format!("{e} (parameter ${})", i + 1)))?
                })
            }
            Some(None) => None,
            None => return Err(client_error("08P01", format!("parameter ${} was not bound", i + 1))),
        },
        Type::BYTEA => portal.parameter::<Vec<u8>>(i, &ty)?.map(Value::bytes),
        // Binary forms: a uuid's 16 bytes, jsonb's version byte and text, json's text.
        Type::UUID | Type::JSON | Type::JSONB | Type::INTERVAL | Type::TIME | Type::INET | Type::CIDR
            if !portal.parameter_format.is_text(i) =>
        {
            match portal.parameters.get(i) {
                None => return Err(client_error("08P01", format!("parameter ${} was not bound", i + 1))),
                Some(None) => None,
                Some(Some(bytes)) => {
                    let elem = match ty {
                        Type::INET => DataType::Inet,
                        Type::CIDR => DataType::Cidr,
                        _ => array_element(&array_of(&ty)).expect("uuid and json types have arrays"),
                    };
                    Some(
                        crate::copy_binary::value(bytes, &elem)
                            .map_err(|(code, m)| client_error(code, format!("{m} (parameter ${})", i + 1)))?,
                    )
                }
            }
        }
        // An array (`x = ANY($1)`): the text of its literal, read where it is compared.
        ref t if array_element(t).is_some() && !portal.parameter_format.is_text(i) => match portal.parameters.get(i) {
            None => return Err(client_error("08P01", format!("parameter ${} was not bound", i + 1))),
            Some(None) => None,
            Some(Some(bytes)) => Some(Value::text(binary_array_literal(bytes, i)?)),
        },
        _ => {
            // Text and anything else: the raw text of a text-format parameter as it is
            // (the library's String decoder would treat it as a SQL literal).
            let raw = portal
                .parameters
                .get(i)
                .ok_or_else(|| client_error("08P01", format!("parameter ${} was not bound", i + 1)))?;
            match raw {
                None => None,
                // An enum's binary form is its label's text (enum_recv).
                Some(bytes)
                    if portal.parameter_format.is_text(i)
                        || is_text(&ty)
                        || matches!(ty.kind(), postgres_types::Kind::Enum(_)) =>
                {
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

/// The array type of a uuid or json type.
fn array_of(ty: &Type) -> Type {
    match *ty {
        Type::UUID => Type::UUID_ARRAY,
        Type::INTERVAL => Type::INTERVAL_ARRAY,
        Type::TIME => Type::TIME_ARRAY,
        Type::JSON => Type::JSON_ARRAY,
        _ => Type::JSONB_ARRAY,
    }
}

/// A value whose text and binary forms are PostgreSQL's and not the wire library's: a
/// numeric (its text, or its base-10000 binary form, [`NumericRef::to_pg_binary`]; any
/// precision), a uuid (its text, its 16 bytes big-endian), json (its text both ways),
/// jsonb (its text; in binary, version byte 1 then the text), and bytes already in their
/// column's form (an array's text or binary form).
#[derive(Debug)]
enum PgForms<'a> {
    Numeric(NumericRef<'a>),
    Uuid([u8; 16]),
    Json {
        text: &'a str,
        jsonb: bool,
    },
    Interval(permafrost_types::Interval),
    Time(i64),
    /// Bytes already in the column's form (an array's text or binary form).
    Raw(&'a [u8]),
}

impl postgres_types::ToSql for PgForms<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            PgForms::Numeric(d) => out.extend_from_slice(&d.to_pg_binary()),
            PgForms::Uuid(u) => out.extend_from_slice(u),
            PgForms::Time(t) => out.extend_from_slice(&t.to_be_bytes()),
            // Microseconds (i64), days (i32), months (i32), all big-endian.
            PgForms::Interval(x) => {
                out.extend_from_slice(&x.micros.to_be_bytes());
                out.extend_from_slice(&x.days.to_be_bytes());
                out.extend_from_slice(&x.months.to_be_bytes());
            }
            PgForms::Json { text, jsonb } => {
                if *jsonb {
                    out.extend_from_slice(&[1]);
                }
                out.extend_from_slice(text.as_bytes());
            }
            PgForms::Raw(b) => out.extend_from_slice(b),
        }
        Ok(postgres_types::IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::NUMERIC | Type::UUID | Type::JSON | Type::JSONB | Type::INTERVAL | Type::TIME
        ) || matches!(ty.kind(), postgres_types::Kind::Array(_))
    }

    postgres_types::to_sql_checked!();
}

impl pgwire::types::ToSqlText for PgForms<'_> {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut bytes::BytesMut,
        _format_options: &FormatOptions,
    ) -> Result<postgres_types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use std::fmt::Write;
        match self {
            PgForms::Numeric(d) => write!(out, "{d}")?,
            PgForms::Uuid(u) => out.extend_from_slice(permafrost_types::uuid_text(u128::from_be_bytes(*u)).as_bytes()),
            PgForms::Json { text, .. } => out.extend_from_slice(text.as_bytes()),
            PgForms::Interval(x) => out.extend_from_slice(permafrost_types::interval_text(x).as_bytes()),
            PgForms::Time(t) => out.extend_from_slice(permafrost_types::datetime::time_of_day_text(*t).as_bytes()),
            PgForms::Raw(b) => out.extend_from_slice(b),
        }
        Ok(postgres_types::IsNull::No)
    }
}

pub(crate) fn fields(columns: &[(String, Type)], format: &Format) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, (name, ty))| FieldInfo::new(name.clone(), None, None, ty.clone(), format.format_for(i)))
        .collect()
}

pub(crate) fn columns_of(cols: &[ColumnInfo]) -> Vec<(String, Type)> {
    cols.iter().map(|c| (c.name.clone(), pg_type(c.ty.as_ref()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary int8 array of `items` (PostgreSQL's form), one dimension.
    fn int8_array(items: &[Option<i64>]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [1i32, 1, 20, items.len() as i32, 1] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        for i in items {
            match i {
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    b.extend_from_slice(&8i32.to_be_bytes());
                    b.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
        b
    }

    #[test]
    fn binary_arrays_become_literals_and_bad_bytes_errors() {
        let b = int8_array(&[Some(1), None, Some(-3)]);
        assert_eq!(binary_array_literal(&b, 0).unwrap(), "{1,NULL,-3}");
        // No dimensions: empty.
        let mut empty = Vec::new();
        for v in [0i32, 0, 20] {
            empty.extend_from_slice(&v.to_be_bytes());
        }
        assert_eq!(binary_array_literal(&empty, 0).unwrap(), "{}");
        // Cut anywhere, or with a byte more: an error, never a panic.
        for cut in 0..b.len() {
            assert!(binary_array_literal(&b[..cut], 0).is_err(), "cut at {cut}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(binary_array_literal(&longer, 0).is_err());
        // Absurd sizes and unknown element types.
        let mut huge = Vec::new();
        for v in [2i32, 0, 20, i32::MAX, 1, i32::MAX, 1] {
            huge.extend_from_slice(&v.to_be_bytes());
        }
        assert!(binary_array_literal(&huge, 0).is_err());
        let mut odd = b.clone();
        odd[8..12].copy_from_slice(&600i32.to_be_bytes());
        assert!(binary_array_literal(&odd, 0).is_err());
    }
}
