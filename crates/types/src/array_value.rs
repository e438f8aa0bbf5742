//! Array values: an array's elements as values of its element type ([`ElemType`], its
//! scalar type and names), and the literal of values (`crate::array` reads and writes the
//! text; `Value::parse` of an array type reads a literal into PostgreSQL's output form).

use crate::array::{ElemType, elements, literal};
use crate::{DataType, Result, Value};

impl ElemType {
    /// The scalar type each element has.
    pub fn data_type(self) -> DataType {
        use ElemType as E;
        match self {
            E::SmallInt => DataType::SmallInt,
            E::Integer => DataType::Integer,
            E::BigInt => DataType::BigInt,
            E::Double => DataType::Double,
            E::Numeric => DataType::Decimal { precision: 0, scale: 0 },
            E::Text => DataType::Varchar(None),
            // Read as text: elements keep no length limit here.
            E::Varchar => DataType::Varchar(None),
            E::Timestamp => DataType::Timestamp,
            E::TimestampTz => DataType::TimestampTz,
            E::Date => DataType::Date,
            E::Boolean => DataType::Boolean,
            E::Bytea => DataType::Bytea,
            E::Uuid => DataType::Uuid,
            E::Interval => DataType::Interval,
            E::Time => DataType::Time,
            E::Json => DataType::Json,
            E::Jsonb => DataType::Jsonb,
        }
    }

    /// The element type of arrays of `t` (`None`: `t` is itself an array, or an enum).
    pub fn of(t: DataType) -> Option<ElemType> {
        use DataType as T;
        Some(match t {
            T::SmallInt => ElemType::SmallInt,
            T::Integer => ElemType::Integer,
            T::BigInt => ElemType::BigInt,
            T::Double => ElemType::Double,
            T::Decimal { .. } => ElemType::Numeric,
            T::Varchar(None) => ElemType::Text,
            T::Varchar(Some(_)) => ElemType::Varchar,
            T::Timestamp => ElemType::Timestamp,
            T::TimestampTz => ElemType::TimestampTz,
            T::Date => ElemType::Date,
            T::Boolean => ElemType::Boolean,
            T::Bytea => ElemType::Bytea,
            T::Uuid => ElemType::Uuid,
            T::Interval => ElemType::Interval,
            T::Time => ElemType::Time,
            T::Json => ElemType::Json,
            T::Jsonb => ElemType::Jsonb,
            // Arrays of arrays are not kept, nor (yet) arrays of enum types and addresses.
            T::Array(_) | T::Enum(_) | T::Inet | T::Cidr => return None,
        })
    }

    /// PostgreSQL's name of the array type (`integer[]`).
    pub fn array_name(self) -> String {
        match self {
            ElemType::Varchar => "character varying[]".into(),
            other => format!("{}[]", other.data_type().sql_name()),
        }
    }
}

/// The literal of `values` (each written in its text form) in PostgreSQL's output form.
pub fn literal_of_values(values: &[Value]) -> String {
    let texts: Vec<Option<String>> = values.iter().map(|v| (!v.is_null()).then(|| v.to_string())).collect();
    literal(texts.iter().map(|t| t.as_deref()))
}

/// The elements of array value `text` (in the output form `Value::parse` gives) as values
/// of `elem`.
pub fn values(elem: ElemType, text: &str) -> Result<Vec<Value>> {
    let ty = elem.data_type();
    elements(text)?
        .into_iter()
        .map(|item| match item {
            None => Ok(Value::Null),
            Some(t) => Value::parse(&ty, &t),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_kept_in_output_form() {
        let p = |e: ElemType, s: &str| Value::parse(&DataType::Array(e), s).map(|v| v.to_string());
        assert_eq!(p(ElemType::Integer, " { 1 , +2,NULL } ").unwrap(), "{1,2,NULL}");
        assert_eq!(p(ElemType::Boolean, "{true,off}").unwrap(), "{t,f}");
        assert_eq!(p(ElemType::Text, r#"{a,"b c",""}"#).unwrap(), r#"{a,"b c",""}"#);
        assert_eq!(
            p(ElemType::Timestamp, "{2024-01-02T03:04:05}").unwrap(),
            r#"{"2024-01-02 03:04:05"}"#
        );
        assert_eq!(p(ElemType::Integer, "[1:2]={5,6}").unwrap(), "{5,6}");
        assert_eq!(p(ElemType::Integer, "{x}").unwrap_err().sqlstate(), "22P02");
        assert_eq!(p(ElemType::Integer, "{x").unwrap_err().sqlstate(), "22P02");
        assert_eq!(p(ElemType::SmallInt, "{99999}").unwrap_err().sqlstate(), "22003");
        assert_eq!(p(ElemType::Integer, "{{1},{2}}").unwrap_err().sqlstate(), "0A000");
        assert_eq!(p(ElemType::Integer, "[0:1]={1,2}").unwrap_err().sqlstate(), "0A000");
        let v = values(ElemType::Integer, "{1,NULL,3}").unwrap();
        assert_eq!(v, vec![Value::Int(1), Value::Null, Value::Int(3)]);
        assert_eq!(
            ElemType::of(DataType::Varchar(Some(3)))
                .map(ElemType::array_name)
                .as_deref(),
            Some("character varying[]")
        );
    }
}
