//! Names, types and literals as the binder reads them: identifiers folded as PostgreSQL
//! folds them, type names mapped to engine types, and constants typed as PostgreSQL types
//! its literals.

use permafrost_types::{DataType, Numeric, Value};
use sqlparser::ast::{self, Ident, ObjectName};

use crate::error::{Result, SqlError, unsupported};
use crate::expr::Expr;

/// An expression and its type (`None` for an untyped literal or parameter).
pub type Typed = (Expr, Option<DataType>);

/// Folds an identifier as PostgreSQL does.
pub fn ident(i: &Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

/// An object name as written in text (a reg-type literal, `nextval('...')`): quotes
/// dropped (a doubled quote is one), a `public.` or `pg_catalog.` schema dropped, an
/// unquoted name folded to lower case.
pub fn name_in_text(s: &str) -> String {
    let s = s.trim();
    let s = s
        .strip_prefix("public.")
        .or_else(|| s.strip_prefix("\"public\"."))
        .or_else(|| s.strip_prefix("pg_catalog."))
        .unwrap_or(s);
    match s.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        Some(q) => q.replace("\"\"", "\""),
        None => s.to_ascii_lowercase(),
    }
}

/// The catalog key of a (possibly schema-qualified) object name (crate::namespace):
/// `public.t` and `t` are the same table, `s.t` is `s`'s.
pub fn object_name(n: &ObjectName) -> Result<String> {
    unqualified(name_parts(n)?, &n.to_string())
}

/// The parts of a dotted name, each folded as [`ident`].
pub fn name_parts(n: &ObjectName) -> Result<Vec<String>> {
    n.0.iter()
        .map(|p| {
            p.as_ident()
                .map(ident)
                .ok_or_else(|| SqlError::Syntax(format!("syntax error: bad name {n}")))
        })
        .collect()
}

/// The catalog key of a dotted name (`parts`, written `shown`): its last part when the
/// schema before it (if any) is `public` or `pg_catalog`, `schema.name` for another.
pub fn unqualified(mut parts: Vec<String>, shown: &str) -> Result<String> {
    match parts.as_slice() {
        [_] => Ok(parts.remove(0)),
        [schema, _] if schema == "public" || schema == "pg_catalog" => Ok(parts.remove(1)),
        [schema, name] => Ok(crate::namespace::qualify(schema, name)),
        _ => Err(SqlError::UnknownTable(shown.to_string())),
    }
}

/// Maps a SQL type name to an engine type.
pub fn map_type(t: &ast::DataType) -> Result<DataType> {
    use ast::DataType as A;
    let len = |l: &Option<ast::CharacterLength>| -> Result<Option<u32>> {
        match l {
            None => Ok(None),
            Some(ast::CharacterLength::IntegerLength { length, .. }) => u32::try_from(*length)
                .map(Some)
                .map_err(|_| SqlError::Definition(format!("length {length} too large"))),
            Some(ast::CharacterLength::Max) => Ok(None),
        }
    };
    let numeric = |info: &ast::ExactNumberInfo| -> Result<DataType> {
        let (p, s) = match *info {
            ast::ExactNumberInfo::None => (0, 0),
            ast::ExactNumberInfo::Precision(p) => (p, 0),
            ast::ExactNumberInfo::PrecisionAndScale(p, s) => (
                p,
                u64::try_from(s).map_err(|_| SqlError::Definition("NUMERIC scale must be >= 0".into()))?,
            ),
        };
        let max = permafrost_types::MAX_DECIMAL_PRECISION as u64;
        if p > max || s > p.max(if p == 0 { max } else { p }) {
            return Err(SqlError::Definition(format!(
                "NUMERIC precision must be between 1 and {max} and scale between 0 and the precision (got {p}, {s})"
            )));
        }
        Ok(DataType::Decimal {
            precision: p as u16,
            scale: s as u16,
        })
    };
    Ok(match t {
        A::SmallInt(_) | A::Int2(_) => DataType::SmallInt,
        A::Int(_) | A::Integer(_) | A::Int4(_) => DataType::Integer,
        A::BigInt(_) | A::Int8(_) => DataType::BigInt,
        A::Double(_) | A::DoublePrecision | A::Float8 | A::Float64 | A::Real | A::Float4 => DataType::Double,
        A::Float(info) => match info {
            ast::ExactNumberInfo::Precision(p) if *p <= 24 => DataType::Double,
            _ => DataType::Double,
        },
        A::Numeric(i) | A::Decimal(i) | A::Dec(i) => numeric(i)?,
        A::Varchar(l) | A::CharacterVarying(l) | A::CharVarying(l) | A::Nvarchar(l) => DataType::Varchar(len(l)?),
        // CHAR(n) is stored like VARCHAR(n): values are not blank-padded.
        A::Char(l) | A::Character(l) => DataType::Varchar(Some(len(l)?.unwrap_or(1))),
        A::Text | A::String(_) => DataType::Varchar(None),
        A::Timestamp(p, tz) => {
            if p.is_some_and(|p| p != 6) {
                return unsupported(format!(
                    "type {t} (timestamps keep microseconds: leave out the precision)"
                ));
            }
            match tz {
                ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone => DataType::Timestamp,
                ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => DataType::TimestampTz,
            }
        }
        A::Date => DataType::Date,
        A::Bool | A::Boolean => DataType::Boolean,
        A::Bytea | A::Blob(_) | A::Varbinary(_) | A::Binary(_) => DataType::Bytea,
        A::Uuid => DataType::Uuid,
        A::Interval { .. } => DataType::Interval,
        A::Time(p, tz) => {
            if p.is_some_and(|p| p != 6) {
                return unsupported(format!("type {t} (times keep microseconds: leave out the precision)"));
            }
            match tz {
                ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone => DataType::Time,
                _ => return unsupported("type time with time zone (use time, or timestamp with time zone)"),
            }
        }
        A::JSON => DataType::Json,
        A::JSONB => DataType::Jsonb,
        A::Array(def) => array_type(t, def)?,
        A::Custom(name, _) => match object_name(name)?.as_str() {
            "int2" => DataType::SmallInt,
            "int4" => DataType::Integer,
            "int8" => DataType::BigInt,
            "float8" => DataType::Double,
            "timestamptz" => DataType::TimestampTz,
            "uuid" => DataType::Uuid,
            "interval" => DataType::Interval,
            "time" => DataType::Time,
            "json" => DataType::Json,
            "jsonb" => DataType::Jsonb,
            "inet" => DataType::Inet,
            "cidr" => DataType::Cidr,
            other if POSTGRES_TYPES.contains(&other) => return unsupported(format!("type {other}")),
            other => return Err(SqlError::UnknownType(other.to_string())),
        },
        other => return unsupported(format!("type {other}")),
    })
}

/// Maps a SQL type name to an engine type, with the catalog's enum types among the names.
pub fn map_type_in(catalog: &crate::catalog::Catalog, t: &ast::DataType) -> Result<DataType> {
    use ast::DataType as A;
    match t {
        A::Custom(name, modifiers) => match object_name(name).ok().and_then(|n| catalog.enum_type(&n)) {
            Some(_) if !modifiers.is_empty() => Err(SqlError::Syntax(format!(
                "type modifier is not allowed for type \"{}\"",
                object_name(name)?
            ))),
            Some(e) => Ok(DataType::Enum(e)),
            None => map_type(t),
        },
        A::Array(ast::ArrayElemTypeDef::SquareBracket(inner, _) | ast::ArrayElemTypeDef::AngleBracket(inner))
            if matches!(map_type_in(catalog, inner), Ok(DataType::Enum(_))) =>
        {
            unsupported(format!(
                "type {t} (arrays of enum types; use text[] and cast the elements)"
            ))
        }
        _ => map_type(t),
    }
}

/// The type `elem[]` (`integer[]`, `text ARRAY`): arrays of one dimension of a scalar type.
fn array_type(t: &ast::DataType, def: &ast::ArrayElemTypeDef) -> Result<DataType> {
    let inner = match def {
        ast::ArrayElemTypeDef::SquareBracket(inner, _) | ast::ArrayElemTypeDef::AngleBracket(inner) => inner,
        _ => return unsupported(format!("type {t}")),
    };
    if matches!(**inner, ast::DataType::Array(_)) {
        return unsupported(format!("type {t} (arrays here have one dimension: declare elem[])"));
    }
    match permafrost_types::ElemType::of(map_type(inner)?) {
        Some(e) => Ok(DataType::Array(e)),
        None => unsupported(format!("type {t}")),
    }
}

/// A string literal next to a value of another known type is read as that type, when the
/// statement is planned (PostgreSQL's "unknown" literals): `grp = 'abc'` on an integer
/// column is an error at once, whatever path would find the rows.
pub(super) fn literal_as(e: Expr, ty: Option<DataType>, other: Option<DataType>) -> Result<Typed> {
    match (&e, other) {
        (Expr::Const(Value::Text(s)), Some(t)) if !t.is_text() && ty.is_some_and(|x| x.is_text()) => {
            let target = match t {
                DataType::Decimal { .. } => DataType::Decimal { precision: 0, scale: 0 },
                other => other,
            };
            Ok((read_as(&target, s)?, Some(target)))
        }
        _ => Ok((e, ty)),
    }
}

/// A quoted literal read as `ty` when the statement is planned (bad text is an error
/// there), except where its value depends on the session TimeZone (a `timestamptz`
/// without an offset): that one is read again each time the statement runs, in the zone
/// it runs in (permafrost_types::zone), as a plan may outlive a `SET TimeZone`.
pub(super) fn read_as(ty: &DataType, text: &str) -> Result<Expr> {
    let v = Value::parse(ty, text)?;
    if *ty == DataType::TimestampTz {
        return Ok(Expr::Cast(Expr::Const(Value::text(text)).boxed(), *ty));
    }
    Ok(Expr::Const(v))
}

/// Binds a typed literal (`TIMESTAMP '2024-01-01 00:00:00'`, `BIGINT '7'`): the text parsed as
/// the type.
pub(super) fn typed_string(catalog: &crate::catalog::Catalog, ts: &ast::TypedString) -> Result<Typed> {
    let ty = map_type_in(catalog, &ts.data_type)?;
    let text = match &ts.value.value {
        ast::Value::SingleQuotedString(s) => s.clone(),
        other => return unsupported(format!("typed literal {other}")),
    };
    Ok((read_as(&ty, &text)?, Some(ty)))
}

/// Binds `INTERVAL 'text'` (and `INTERVAL 'n' unit`, the unit read after the number).
pub(super) fn interval_literal(iv: &ast::Interval) -> Result<Typed> {
    let text = match iv.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            other => return unsupported(format!("INTERVAL {other}")),
        },
        other => return unsupported(format!("INTERVAL {other}")),
    };
    if iv.last_field.is_some() || iv.fractional_seconds_precision.is_some() {
        return unsupported("INTERVAL ... TO ... field ranges");
    }
    let text = match &iv.leading_field {
        Some(field) => format!("{text} {field}"),
        None => text,
    };
    Ok((
        Expr::Const(Value::parse(&DataType::Interval, &text)?),
        Some(DataType::Interval),
    ))
}

/// Names of PostgreSQL's own types that sqlparser reads as custom names: not supported
/// here (0A000), where another name is a type that does not exist (42704).
const POSTGRES_TYPES: &[&str] = &[
    "bit",
    "box",
    "bpchar",
    "cid",
    "circle",
    "daterange",
    "float4",
    "int4range",
    "int8range",
    "jsonpath",
    "line",
    "lseg",
    "macaddr",
    "macaddr8",
    "money",
    "name",
    "numrange",
    "oid",
    "path",
    "pg_lsn",
    "point",
    "polygon",
    "regclass",
    "regproc",
    "regtype",
    "tid",
    "timetz",
    "tsquery",
    "tsrange",
    "tstzrange",
    "tsvector",
    "txid_snapshot",
    "varbit",
    "xid",
    "xml",
];

/// An integer constant, typed as PostgreSQL types integer literals: `integer` when it fits,
/// else `bigint`.
pub(super) fn integer_literal(i: i64) -> Typed {
    let ty = if i32::try_from(i).is_ok() {
        DataType::Integer
    } else {
        DataType::BigInt
    };
    (Expr::Const(Value::Int(i)), Some(ty))
}

pub(super) fn number_literal(s: &str) -> Result<Typed> {
    if let Ok(i) = s.parse::<i64>() {
        return Ok(integer_literal(i));
    }
    // Any other number (a point, an exponent, too long for a bigint) is a numeric, as in
    // PostgreSQL: `1e30` is 1000000000000000000000000000000.
    let ty = DataType::Decimal { precision: 0, scale: 0 };
    match Numeric::parse(s) {
        Ok(d) => Ok((Expr::Const(Value::Decimal(d)), Some(ty))),
        Err(permafrost_types::NumericError::Syntax) => Err(SqlError::Syntax(format!("syntax error: bad number {s}"))),
        Err(e) => Err(permafrost_types::numeric_error(&ty, e, s).into()),
    }
}

/// The type values of types `x` and `y` are read as together (UNION's columns, VALUES'
/// rows, an ARRAY's elements): PostgreSQL's resolution among the numeric types and the
/// date and time types; 42804 for types that do not meet.
pub fn common_type(x: DataType, y: DataType) -> Result<DataType> {
    use DataType as T;
    let rank = |t: &DataType| match t {
        T::SmallInt => Some(0),
        T::Integer => Some(1),
        T::BigInt => Some(2),
        T::Decimal { .. } => Some(3),
        T::Double => Some(4),
        _ => None,
    };
    Ok(match (x, y) {
        _ if x == y => x,
        (T::Varchar(_), T::Varchar(_)) => T::Varchar(None),
        (T::Decimal { .. }, T::Decimal { .. }) => T::Decimal { precision: 0, scale: 0 },
        // date, then timestamp, then timestamp with time zone (PostgreSQL's preferred).
        (T::TimestampTz, T::Date | T::Timestamp) | (T::Date | T::Timestamp, T::TimestampTz) => T::TimestampTz,
        (T::Timestamp, T::Date) | (T::Date, T::Timestamp) => T::Timestamp,
        _ => match (rank(&x), rank(&y)) {
            (Some(a), Some(b)) => {
                if a >= b {
                    x
                } else {
                    y
                }
            }
            _ => {
                return Err(SqlError::Type(format!(
                    "UNION types {} and {} cannot be matched",
                    x.sql_name(),
                    y.sql_name()
                )));
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::name_in_text;

    #[test]
    fn names_are_read_as_postgresql_reads_them() {
        assert_eq!(name_in_text("Items_Id_Seq"), "items_id_seq");
        assert_eq!(name_in_text("public.items_id_seq"), "items_id_seq");
        assert_eq!(name_in_text("\"Odd\"\"Name\""), "Odd\"Name");
        assert_eq!(name_in_text("\"public\".\"Items\""), "Items");
    }
}
