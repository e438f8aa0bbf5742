//! The unit tests of the crate root (lib.rs): values' text forms, comparison and
//! coercion.

/// What PostgreSQL 15 prints for `SELECT x::float8` (extra_float_digits = 1).
#[test]
fn doubles_print_as_postgresql_does() {
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

use super::*;

#[test]
fn integer_ranges_are_checked() {
    assert!(Value::Int(40000).coerce_to(&DataType::SmallInt).is_err());
    assert_eq!(
        Value::Int(-32768).coerce_to(&DataType::SmallInt).unwrap(),
        Value::Int(-32768)
    );
    assert!(Value::Int(1 << 31).coerce_to(&DataType::Integer).is_err());
    assert_eq!(Value::Double(2.5).coerce_to(&DataType::Integer).unwrap(), Value::Int(2));
    assert_eq!(Value::Double(3.5).coerce_to(&DataType::Integer).unwrap(), Value::Int(4));
}

#[test]
fn decimals_fit_their_column() {
    let ty = DataType::Decimal { precision: 5, scale: 2 };
    let v = Value::parse(&ty, "123.456").unwrap();
    assert_eq!(v.to_string(), "123.46");
    assert!(Value::parse(&ty, "1234.5").is_err());
    assert_eq!(Value::Int(7).coerce_to(&ty).unwrap().to_string(), "7.00");
}

#[test]
fn varchar_length_counts_characters() {
    let ty = DataType::Varchar(Some(3));
    assert!(Value::text("äöü").coerce_to(&ty).is_ok());
    let err = Value::text("abcd").coerce_to(&ty).unwrap_err();
    assert_eq!(err.sqlstate(), "22001");
}

#[test]
fn text_round_trips() {
    let ts = Value::parse(&DataType::Timestamp, "2024-02-29 13:45:01.25").unwrap();
    assert_eq!(ts.to_string(), "2024-02-29 13:45:01.25");
    assert_eq!(
        Value::parse(&DataType::Bytea, "\\x00ff").unwrap().to_string(),
        "\\x00ff"
    );
    assert_eq!(Value::parse(&DataType::Boolean, "yes").unwrap(), Value::Bool(true));
    assert_eq!(Value::Double(1e20).to_string(), "1e+20");
    assert_eq!(Value::Double(0.5).to_string(), "0.5");
    assert_eq!(Value::parse(&DataType::Integer, "abc").unwrap_err().sqlstate(), "22P02");
    assert_eq!(
        Value::parse(&DataType::Integer, "99999999999").unwrap_err().sqlstate(),
        "22003"
    );
}

#[test]
fn numbers_of_different_kinds_group_together() {
    use std::collections::HashSet;
    let mut s = HashSet::new();
    s.insert(Value::Int(1));
    assert!(s.contains(&Value::Double(1.0)));
    assert!(s.contains(&Value::Decimal(Numeric::new(100, 2))));
    assert_eq!(total_compare(ValueRef::Null, ValueRef::Int(1)), Ordering::Greater);
}
