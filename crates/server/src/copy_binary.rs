//! PostgreSQL's binary COPY format, as `COPY ... FROM STDIN (FORMAT binary)` receives it
//! (pgx's `CopyFrom`, asyncpg's `copy_records_to_table`, psycopg's binary copy): an 11-byte
//! signature, a 32-bit flags word and a header extension, then each row as a 16-bit field
//! count and each field as a 32-bit length (-1: NULL) and that many bytes in its type's
//! binary form, and a trailer: a field count of -1. Every integer is big-endian. These
//! readers never panic on bad bytes: they answer an error, or `None` when the bytes so far
//! end inside a header or a row (the rest comes in the next CopyData).

use permafrost_types::{DataType, Numeric, Value};

/// The signature that starts binary COPY data.
const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
/// Flags bit 16: every row carries an OID (tables WITH OIDS, gone since PostgreSQL 12).
const WITH_OIDS: u32 = 1 << 16;

fn be_i16(b: &[u8]) -> Option<i16> {
    Some(i16::from_be_bytes(b.get(..2)?.try_into().ok()?))
}

fn be_i32(b: &[u8]) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(..4)?.try_into().ok()?))
}

/// The length of the signature and header at the front of `buf`, once all of it is there.
pub fn header(buf: &[u8]) -> Result<Option<usize>, String> {
    let n = buf.len().min(SIGNATURE.len());
    if buf[..n] != SIGNATURE[..n] {
        return Err("it does not start with the binary COPY signature".into());
    }
    let (Some(flags), Some(ext)) = (buf.get(11..).and_then(be_i32), buf.get(15..).and_then(be_i32)) else {
        return Ok(None);
    };
    let flags = flags as u32;
    if flags & WITH_OIDS != 0 {
        return Err("rows with OIDs are not supported".into());
    }
    if flags & 0xFFFF_0000 & !WITH_OIDS != 0 {
        return Err(format!("unknown critical flags {flags:#x} in the header"));
    }
    let ext = usize::try_from(ext).map_err(|_| format!("a header extension of length {ext}"))?;
    let end = 19usize.checked_add(ext).ok_or("a header extension too long")?;
    Ok((buf.len() >= end).then_some(end))
}

/// One row of `columns` fields at the front of `buf`, once all of it is there: its length
/// and its fields (`None` for NULL), or no fields for the trailer.
#[allow(clippy::type_complexity)]
pub fn row(buf: &[u8], columns: usize) -> Result<Option<(usize, Option<Vec<Option<&[u8]>>>)>, String> {
    let Some(count) = be_i16(buf) else {
        return Ok(None);
    };
    if count == -1 {
        return Ok(Some((2, None)));
    }
    if usize::try_from(count).ok() != Some(columns) {
        return Err(format!("a row of {count} fields where {columns} columns are copied"));
    }
    let mut at = 2;
    let mut fields = Vec::with_capacity(columns);
    for _ in 0..columns {
        let Some(len) = buf.get(at..).and_then(be_i32) else {
            return Ok(None);
        };
        at += 4;
        if len == -1 {
            fields.push(None);
            continue;
        }
        let len = usize::try_from(len).map_err(|_| format!("a field of length {len}"))?;
        let Some(bytes) = buf.get(at..at.saturating_add(len)) else {
            return Ok(None);
        };
        at += len;
        fields.push(Some(bytes));
    }
    Ok(Some((at, Some(fields))))
}

/// A field's bytes in the binary form of a column of type `ty` (integers and floats of any
/// width the client chose), as an engine value, or the SQLSTATE and message of why not.
pub fn value(b: &[u8], ty: &DataType) -> Result<Value, (&'static str, String)> {
    let size = |what: &str| ("22P03", format!("{} bytes are not a binary {what}", b.len()));
    Ok(match ty {
        DataType::SmallInt | DataType::Integer | DataType::BigInt => match b.len() {
            2 => Value::Int(be_i16(b).ok_or_else(|| size("integer"))?.into()),
            4 => Value::Int(be_i32(b).ok_or_else(|| size("integer"))?.into()),
            8 => Value::Int(i64::from_be_bytes(b.try_into().map_err(|_| size("integer"))?)),
            _ => return Err(size("integer")),
        },
        DataType::Double => match b.len() {
            4 => Value::Double(f32::from_be_bytes(b.try_into().map_err(|_| size("float"))?).into()),
            8 => Value::Double(f64::from_be_bytes(b.try_into().map_err(|_| size("float"))?)),
            _ => return Err(size("float")),
        },
        DataType::Decimal { .. } => Value::Decimal(Numeric::from_pg_binary(b).map_err(|e| {
            let e = permafrost_types::numeric_error(ty, e, "(binary)");
            (e.sqlstate(), e.to_string())
        })?),
        DataType::Boolean => match b {
            [0] => Value::Bool(false),
            [1] => Value::Bool(true),
            _ => return Err(("22P03", "a binary boolean is one byte, 0 or 1".into())),
        },
        DataType::Timestamp | DataType::TimestampTz | DataType::Date => crate::pg_datetime::from_binary(b, ty)?,
        DataType::Bytea => Value::bytes(b.to_vec()),
        DataType::Uuid => Value::Uuid(b.try_into().map_err(|_| size("uuid"))?),
        DataType::Inet | DataType::Cidr => {
            let cidr = *ty == DataType::Cidr;
            Value::Inet(permafrost_types::Inet::from_pg_binary(b, cidr).map_err(|e| match e {
                permafrost_types::inet::InetError::HostBits => {
                    ("22P02", "invalid cidr value: bits set to right of mask".into())
                }
                permafrost_types::inet::InetError::Syntax => {
                    ("22P03", format!("{} bytes are not a binary {ty}", b.len()))
                }
            })?)
        }
        DataType::Time => {
            let t = i64::from_be_bytes(b.try_into().map_err(|_| size("time"))?);
            if !(0..=permafrost_types::datetime::MICROS_PER_DAY).contains(&t) {
                return Err(("22008", "time out of range".into()));
            }
            Value::Time(t)
        }
        DataType::Interval => {
            let b: &[u8; 16] = b.try_into().map_err(|_| size("interval"))?;
            Value::Interval(permafrost_types::Interval {
                micros: i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
                days: i32::from_be_bytes([b[8], b[9], b[10], b[11]]),
                months: i32::from_be_bytes([b[12], b[13], b[14], b[15]]),
            })
        }
        // jsonb's binary form is a version byte (1) and the document's text; json's is
        // the text. Either is read as the column's type reads text.
        // An enum's binary form is its label's text, as PostgreSQL's enum_send writes it.
        DataType::Json | DataType::Jsonb | DataType::Enum(_) => {
            let text = match (ty, b.split_first()) {
                (DataType::Jsonb, Some((1, rest))) => rest,
                (DataType::Jsonb, _) => return Err(("22P03", "unsupported jsonb version number".into())),
                _ => b,
            };
            crate::wire_check::text(text).map_err(|v| ("22021", v.message))?;
            let s = std::str::from_utf8(text).map_err(|_| ("22021", "text that is not UTF-8".to_string()))?;
            Value::parse(ty, s).map_err(|e| (e.sqlstate(), e.to_string()))?
        }
        DataType::Varchar(_) => {
            // Text never holds a NUL byte or invalid UTF-8.
            crate::wire_check::text(b).map_err(|v| ("22021", v.message))?;
            Value::text(std::str::from_utf8(b).map_err(|_| ("22021", "text that is not UTF-8".to_string()))?)
        }
        // Elements of any type that converts exactly (an int4 array into a bigint[] column).
        DataType::Array(e) => {
            let (_, items) = array_values(b)?;
            let to = e.data_type();
            let mut values = Vec::with_capacity(items.len());
            for v in items {
                values.push(v.coerce_to(&to).map_err(|e| (e.sqlstate(), e.to_string()))?);
            }
            Value::text(permafrost_types::array_value::literal_of_values(&values))
        }
    })
}

/// The engine type of elements of a binary array whose header names `oid`.
fn element_of_oid(oid: u32) -> Option<DataType> {
    Some(match oid {
        21 => DataType::SmallInt,
        23 => DataType::Integer,
        20 | 26 => DataType::BigInt,
        700 | 701 => DataType::Double,
        1700 => DataType::Decimal { precision: 0, scale: 0 },
        25 | 1043 | 1042 | 19 => DataType::Varchar(None),
        1114 => DataType::Timestamp,
        1184 => DataType::TimestampTz,
        1082 => DataType::Date,
        16 => DataType::Boolean,
        17 => DataType::Bytea,
        2950 => DataType::Uuid,
        1186 => DataType::Interval,
        1083 => DataType::Time,
        114 => DataType::Json,
        3802 => DataType::Jsonb,
        _ => return None,
    })
}

/// A binary array (PostgreSQL's form: dimensions, flags, element type oid, each
/// dimension's size and lower bound, then each element as a length, -1 for NULL, and its
/// binary form): the element type its header names and the elements, flat. Bad bytes are
/// an error, never a panic.
pub fn array_values(b: &[u8]) -> Result<(DataType, Vec<Value>), (&'static str, String)> {
    let bad = |m: &str| ("22P03", format!("bad binary array: {m}"));
    let int = |at: usize| -> Result<i32, (&'static str, String)> {
        b.get(at..at + 4)
            .and_then(|s| s.try_into().ok())
            .map(i32::from_be_bytes)
            .ok_or_else(|| bad("cut short"))
    };
    let ndim = usize::try_from(int(0)?).map_err(|_| bad("negative dimensions"))?;
    if ndim > 6 {
        return Err(bad("more than 6 dimensions"));
    }
    let oid = int(8)? as u32;
    let elem = element_of_oid(oid).ok_or_else(|| ("0A000", format!("arrays of type oid {oid}")))?;
    let mut count: usize = if ndim == 0 { 0 } else { 1 };
    for d in 0..ndim {
        let size = usize::try_from(int(12 + 8 * d)?).map_err(|_| bad("a negative dimension"))?;
        count = count
            .checked_mul(size)
            .filter(|&c| c <= 1 << 24)
            .ok_or_else(|| bad("too many elements"))?;
    }
    let mut at = 12 + 8 * ndim;
    let mut items = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let len = int(at)?;
        at += 4;
        if len == -1 {
            items.push(Value::Null);
            continue;
        }
        let len = usize::try_from(len).map_err(|_| bad("a negative length"))?;
        let bytes = b.get(at..at.saturating_add(len)).ok_or_else(|| bad("cut short"))?;
        at += len;
        items.push(value(bytes, &elem)?);
    }
    if at != b.len() {
        return Err(bad("bytes after the last element"));
    }
    Ok((elem, items))
}

/// Reads `data` as binary COPY data (after a signature, and as it is) with one to three
/// columns, each field as every type: for the fuzz targets.
pub(crate) fn fuzz(data: &[u8]) {
    let _ = header(data);
    let mut signed = SIGNATURE.to_vec();
    signed.extend_from_slice(&[0; 8]);
    signed.extend_from_slice(data);
    let _ = header(&signed);
    let types = [
        DataType::Integer,
        DataType::Double,
        DataType::Decimal {
            precision: 10,
            scale: 2,
        },
        DataType::Boolean,
        DataType::Timestamp,
        DataType::TimestampTz,
        DataType::Date,
        DataType::Bytea,
        DataType::Varchar(Some(3)),
        DataType::Uuid,
        DataType::Jsonb,
        DataType::Array(permafrost_types::ElemType::Integer),
    ];
    for columns in 1..=3 {
        let mut at = 0;
        while let Ok(Some((n, Some(fields)))) = row(&data[at..], columns) {
            for f in fields.into_iter().flatten() {
                for t in &types {
                    let _ = value(f, t);
                }
            }
            at += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_datetime::PG_EPOCH_MICROS;

    fn data(rows: &[Vec<Option<Vec<u8>>>]) -> Vec<u8> {
        let mut out = SIGNATURE.to_vec();
        out.extend_from_slice(&0i32.to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
        for r in rows {
            out.extend_from_slice(&(r.len() as i16).to_be_bytes());
            for f in r {
                match f {
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                    Some(b) => {
                        out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                        out.extend_from_slice(b);
                    }
                }
            }
        }
        out.extend_from_slice(&(-1i16).to_be_bytes());
        out
    }

    #[test]
    fn rows_are_read_whole_or_waited_for() {
        let bytes = data(&[
            vec![Some(7i64.to_be_bytes().to_vec()), Some(b"seven".to_vec())],
            vec![Some(8i32.to_be_bytes().to_vec()), None],
        ]);
        assert_eq!(header(&bytes[..5]), Ok(None));
        assert_eq!(header(&bytes[..18]), Ok(None));
        let at = header(&bytes).unwrap().unwrap();
        assert_eq!(at, 19);
        // Cut anywhere inside the first row: not yet.
        let (n, _) = row(&bytes[at..], 2).unwrap().unwrap();
        for cut in 0..n {
            assert_eq!(row(&bytes[at..at + cut], 2), Ok(None), "cut at {cut}");
        }
        let (n1, f1) = row(&bytes[at..], 2).unwrap().unwrap();
        let f1 = f1.unwrap();
        assert_eq!(value(f1[0].unwrap(), &DataType::BigInt), Ok(Value::Int(7)));
        assert_eq!(
            value(f1[1].unwrap(), &DataType::Varchar(None)),
            Ok(Value::text("seven"))
        );
        let (n2, f2) = row(&bytes[at + n1..], 2).unwrap().unwrap();
        let f2 = f2.unwrap();
        assert_eq!(value(f2[0].unwrap(), &DataType::Integer), Ok(Value::Int(8)));
        assert_eq!(f2[1], None);
        assert_eq!(row(&bytes[at + n1 + n2..], 2), Ok(Some((2, None))), "the trailer");
    }

    #[test]
    fn bad_bytes_are_errors() {
        assert!(header(b"PGCOPX\n").is_err());
        let mut oids = SIGNATURE.to_vec();
        oids.extend_from_slice(&(1i32 << 16).to_be_bytes());
        oids.extend_from_slice(&0i32.to_be_bytes());
        assert!(header(&oids).is_err());
        let mut neg = SIGNATURE.to_vec();
        neg.extend_from_slice(&0i32.to_be_bytes());
        neg.extend_from_slice(&(-5i32).to_be_bytes());
        assert!(header(&neg).is_err());
        assert!(row(&3i16.to_be_bytes(), 2).is_err(), "wrong field count");
        let mut r = 1i16.to_be_bytes().to_vec();
        r.extend_from_slice(&(-7i32).to_be_bytes());
        assert!(row(&r, 1).is_err(), "negative length");
        assert_eq!(value(&[1, 2, 3], &DataType::Integer).unwrap_err().0, "22P03");
        assert_eq!(value(&[2], &DataType::Boolean).unwrap_err().0, "22P03");
        assert_eq!(value(&[0xff, 0xfe], &DataType::Varchar(None)).unwrap_err().0, "22021");
        assert_eq!(value(b"a\0b", &DataType::Varchar(None)).unwrap_err().0, "22021");
        assert_eq!(
            value(&i64::MAX.to_be_bytes(), &DataType::Timestamp).unwrap_err().0,
            "22008"
        );
        assert_eq!(
            value(&0i64.to_be_bytes(), &DataType::Timestamp),
            Ok(Value::Timestamp(PG_EPOCH_MICROS))
        );
    }
}
