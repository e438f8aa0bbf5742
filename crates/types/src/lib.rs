//! SQL data types and values.
//!
//! [`Value`] is the owned form that crosses API boundaries (parameters, result rows);
//! [`ValueRef`] borrows from tuple storage or from a `Value`, so that predicates and
//! projections can run over stored tuples without allocating.
//!
//! All integer types share the `Int(i64)` representation; the column type bounds what can be
//! stored. Timestamps are microseconds since the Unix epoch (UTC for `timestamptz`), dates
//! days since it (see [`datetime`]).
//!
//! This crate is the values' semantics as SQL has them (comparison, hashing, coercion to a
//! column's type, text forms in and out); the storage crate stores them and the SQL crate
//! computes with them, both through this one definition.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

pub mod array;
pub mod array_value;
pub mod datetime;
pub mod enum_type;
pub mod inet;
pub mod interval;
pub mod json;
pub mod numeric;
pub mod uuid;
pub mod zone;

pub use array::ElemType;
pub use datetime::{
    TIMESTAMP_MAX, TIMESTAMP_MIN, TimestampError, date_text, parse_date, parse_timestamp, parse_timestamptz,
    timestamp_text, timestamptz_text,
};
pub use enum_type::{EnumRef, EnumType, EnumValue};
pub use inet::Inet;
pub use interval::{Interval, interval_text, parse_interval};
pub use numeric::{Numeric, NumericError, NumericRef};
pub use uuid::{parse_uuid, uuid_text, uuid_v4};

/// A value that does not fit a type, or text that does not read as one. Each maps to
/// PostgreSQL's SQLSTATE ([`ValueError::sqlstate`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("value too long for type {ty}")]
    StringTooLong { ty: String, len: usize },

    /// A number past its type's range: for the integer types in PostgreSQL's words
    /// ("integer out of range"), else naming the type and the value or cause.
    #[error("{}", out_of_range_text(ty, detail))]
    NumericOutOfRange { ty: String, detail: String },

    #[error("invalid input syntax for type {ty}: \"{input}\"")]
    InvalidText { ty: String, input: String },

    #[error("invalid input value for enum {ty}: \"{input}\"")]
    InvalidEnum { ty: String, input: String },

    /// A network (cidr) with bits set past its mask.
    #[error("invalid cidr value: \"{input}\"")]
    InvalidCidr { input: String },

    #[error("invalid input syntax for type {ty}: \"{input}\"")]
    InvalidDatetime { ty: String, input: String },

    #[error("date/time field value out of range: \"{input}\"{}", range_note(ty))]
    DatetimeOutOfRange {
        ty: String,
        input: String,
        /// A month past 12: PostgreSQL hints that the day and month may be swapped.
        datestyle: bool,
    },

    #[error("time zone \"{name}\" not recognized")]
    TimeZone { name: String },

    /// A timestamp moved past the range by a zone's offset.
    #[error("timestamp out of range")]
    TimestampOutOfRange,

    #[error("type mismatch: {0}")]
    TypeMismatch(String),

    #[error("division by zero")]
    DivisionByZero,

    /// Text that is not a JSON document (`detail` says where reading stopped).
    #[error("invalid input syntax for type json")]
    InvalidJson { detail: String },

    /// Text that is not an array literal (`detail`: PostgreSQL's DETAIL).
    #[error("malformed array literal: \"{input}\"")]
    MalformedArray { input: String, detail: String },

    /// A value of a form this engine does not keep (a multidimensional array).
    #[error("{0} is not supported")]
    Unsupported(String),
}

impl From<array::ArrayError> for ValueError {
    fn from(e: array::ArrayError) -> ValueError {
        match e {
            array::ArrayError::Malformed { input, detail } => ValueError::MalformedArray { input, detail },
            array::ArrayError::Unsupported(what) => ValueError::Unsupported(what),
        }
    }
}

impl ValueError {
    /// PostgreSQL's SQLSTATE for it.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            ValueError::StringTooLong { .. } => "22001",
            ValueError::NumericOutOfRange { .. } => "22003",
            ValueError::InvalidText { .. } | ValueError::InvalidEnum { .. } | ValueError::InvalidCidr { .. } => "22P02",
            ValueError::InvalidDatetime { .. } => "22007",
            ValueError::DatetimeOutOfRange { .. } => "22008",
            ValueError::TimeZone { .. } => "22023",
            ValueError::TimestampOutOfRange => "22008",
            ValueError::TypeMismatch(_) => "42804",
            ValueError::DivisionByZero => "22012",
            ValueError::InvalidJson { .. } => "22P02",
            ValueError::MalformedArray { .. } => "22P02",
            ValueError::Unsupported(_) => "0A000",
        }
    }
}

impl ValueError {
    /// PostgreSQL's DETAIL for it, where it gives one.
    pub fn detail(&self) -> Option<String> {
        match self {
            ValueError::InvalidJson { detail } | ValueError::MalformedArray { detail, .. } => Some(detail.clone()),
            ValueError::InvalidCidr { .. } => Some("Value has bits set to right of mask.".into()),
            _ => None,
        }
    }
}

type Result<T> = std::result::Result<T, ValueError>;

/// Largest precision a `NUMERIC(p, s)` column accepts (PostgreSQL's).
pub const MAX_DECIMAL_PRECISION: u16 = numeric::MAX_PRECISION;

/// A column or expression type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    SmallInt,
    Integer,
    BigInt,
    Double,
    /// `NUMERIC(precision, scale)`; precision 0 means unconstrained (`NUMERIC`).
    Decimal {
        precision: u16,
        scale: u16,
    },
    /// `VARCHAR(n)` with `Some(n)` (a limit in characters), `TEXT` with `None`.
    Varchar(Option<u32>),
    Timestamp,
    /// `timestamp with time zone`: a moment, shown in the session's zone (UTC).
    TimestampTz,
    Date,
    Boolean,
    Bytea,
    Uuid,
    /// `interval`: months, days and microseconds ([`Interval`]).
    Interval,
    /// `time` (without time zone): microseconds since midnight.
    Time,
    /// `json`: the document's text as given (`Value::Text`).
    Json,
    /// `jsonb`: the document's text in PostgreSQL's normal form (`Value::Text`, crate::json).
    Jsonb,
    /// A one-dimensional array: its literal's text in PostgreSQL's output form
    /// (`Value::Text`, crate::array).
    Array(ElemType),
    /// `inet` and `cidr` (crate::inet): an address with a netmask length; a cidr has no
    /// bits set past its mask.
    Inet,
    Cidr,
    /// A user-defined enum type (crate::enum_type): the version of its definition the
    /// catalog gave this column or expression.
    Enum(EnumRef),
}

impl DataType {
    /// Whether values of this type are integers.
    pub fn is_integer(&self) -> bool {
        matches!(self, DataType::SmallInt | DataType::Integer | DataType::BigInt)
    }

    /// Whether values of this type are numbers.
    pub fn is_numeric(&self) -> bool {
        self.is_integer() || matches!(self, DataType::Double | DataType::Decimal { .. })
    }

    /// Whether values of this type are character strings.
    pub fn is_text(&self) -> bool {
        matches!(self, DataType::Varchar(_))
    }

    /// PostgreSQL's name for the type, as shown in errors and `\d`.
    pub fn sql_name(&self) -> String {
        match self {
            DataType::SmallInt => "smallint".into(),
            DataType::Integer => "integer".into(),
            DataType::BigInt => "bigint".into(),
            DataType::Double => "double precision".into(),
            DataType::Decimal { precision: 0, .. } => "numeric".into(),
            DataType::Decimal { precision, scale } => format!("numeric({precision},{scale})"),
            DataType::Varchar(Some(n)) => format!("character varying({n})"),
            DataType::Varchar(None) => "text".into(),
            DataType::Timestamp => "timestamp without time zone".into(),
            DataType::TimestampTz => "timestamp with time zone".into(),
            DataType::Date => "date".into(),
            DataType::Boolean => "boolean".into(),
            DataType::Bytea => "bytea".into(),
            DataType::Uuid => "uuid".into(),
            DataType::Interval => "interval".into(),
            DataType::Time => "time without time zone".into(),
            DataType::Json => "json".into(),
            DataType::Jsonb => "jsonb".into(),
            DataType::Array(e) => e.array_name(),
            DataType::Enum(e) => e.name.clone(),
            DataType::Inet => "inet".into(),
            DataType::Cidr => "cidr".into(),
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sql_name())
    }
}

/// An owned SQL value.
#[derive(Debug, Clone, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    Decimal(Numeric),
    /// Microseconds since 1970-01-01 00:00:00.
    Timestamp(i64),
    /// Microseconds since 1970-01-01 00:00:00 UTC.
    TimestampTz(i64),
    /// Days since 1970-01-01.
    Date(i32),
    Text(Box<str>),
    Bytes(Box<[u8]>),
    /// A uuid's 16 bytes in RFC 4122 order (a `u128` would align every value to 16
    /// bytes and make it larger).
    Uuid([u8; 16]),
    Interval(Interval),
    /// Microseconds since midnight, 0 to 86,400,000,000 (`24:00:00`).
    Time(i64),
    Enum(EnumValue),
    Inet(Inet),
}

/// A borrowed SQL value.
#[derive(Debug, Clone, Copy, Default)]
pub enum ValueRef<'a> {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    Decimal(NumericRef<'a>),
    Timestamp(i64),
    TimestampTz(i64),
    Date(i32),
    Text(&'a str),
    Bytes(&'a [u8]),
    Uuid([u8; 16]),
    Interval(Interval),
    Time(i64),
    Enum(EnumValue),
    Inet(Inet),
}

impl Value {
    pub fn text(s: impl Into<Box<str>>) -> Value {
        Value::Text(s.into())
    }

    pub fn bytes(b: impl Into<Box<[u8]>>) -> Value {
        Value::Bytes(b.into())
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Bool(b) => ValueRef::Bool(*b),
            Value::Int(i) => ValueRef::Int(*i),
            Value::Double(d) => ValueRef::Double(*d),
            Value::Decimal(d) => ValueRef::Decimal(d.as_ref()),
            Value::Timestamp(t) => ValueRef::Timestamp(*t),
            Value::TimestampTz(t) => ValueRef::TimestampTz(*t),
            Value::Date(d) => ValueRef::Date(*d),
            Value::Text(s) => ValueRef::Text(s),
            Value::Bytes(b) => ValueRef::Bytes(b),
            Value::Uuid(u) => ValueRef::Uuid(*u),
            Value::Interval(x) => ValueRef::Interval(*x),
            Value::Time(t) => ValueRef::Time(*t),
            Value::Enum(e) => ValueRef::Enum(*e),
            Value::Inet(x) => ValueRef::Inet(*x),
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        self.as_ref().as_i64()
    }

    pub fn as_f64(&self) -> Option<f64> {
        self.as_ref().as_f64()
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Converts this value to `ty` the way an assignment to a column of that type does:
    /// integer ranges, string lengths and decimal precision are checked, text is parsed.
    pub fn coerce_to(self, ty: &DataType) -> Result<Value> {
        coerce(self, ty)
    }

    /// Parses PostgreSQL text input for `ty` (what `'…'::ty` accepts).
    pub fn parse(ty: &DataType, input: &str) -> Result<Value> {
        parse_text(ty, input)
    }
}

impl<'a> ValueRef<'a> {
    /// The type a value of this kind has by itself: integers are bigint, text (and NULL)
    /// varchar, a numeric is unconstrained.
    pub fn kind_type(self) -> DataType {
        match self {
            ValueRef::Bool(_) => DataType::Boolean,
            ValueRef::Int(_) => DataType::BigInt,
            ValueRef::Double(_) => DataType::Double,
            ValueRef::Decimal(_) => DataType::Decimal { precision: 0, scale: 0 },
            ValueRef::Timestamp(_) => DataType::Timestamp,
            ValueRef::TimestampTz(_) => DataType::TimestampTz,
            ValueRef::Date(_) => DataType::Date,
            ValueRef::Bytes(_) => DataType::Bytea,
            ValueRef::Uuid(_) => DataType::Uuid,
            ValueRef::Interval(_) => DataType::Interval,
            ValueRef::Time(_) => DataType::Time,
            ValueRef::Enum(e) => DataType::Enum(e.ty),
            ValueRef::Inet(x) if x.cidr => DataType::Cidr,
            ValueRef::Inet(_) => DataType::Inet,
            ValueRef::Text(_) | ValueRef::Null => DataType::Varchar(None),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, ValueRef::Null)
    }

    pub fn to_owned(&self) -> Value {
        match *self {
            ValueRef::Null => Value::Null,
            ValueRef::Bool(b) => Value::Bool(b),
            ValueRef::Int(i) => Value::Int(i),
            ValueRef::Double(d) => Value::Double(d),
            ValueRef::Decimal(d) => Value::Decimal(d.to_owned()),
            ValueRef::Timestamp(t) => Value::Timestamp(t),
            ValueRef::TimestampTz(t) => Value::TimestampTz(t),
            ValueRef::Date(d) => Value::Date(d),
            ValueRef::Text(s) => Value::Text(s.into()),
            ValueRef::Bytes(b) => Value::Bytes(b.into()),
            ValueRef::Uuid(u) => Value::Uuid(u),
            ValueRef::Interval(x) => Value::Interval(x),
            ValueRef::Time(t) => Value::Time(t),
            ValueRef::Enum(e) => Value::Enum(e),
            ValueRef::Inet(x) => Value::Inet(x),
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            ValueRef::Int(i) => Some(i),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            ValueRef::Int(i) => Some(i as f64),
            ValueRef::Double(d) => Some(d),
            ValueRef::Decimal(d) => Some(d.to_f64()),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            ValueRef::Text(s) => Some(s),
            _ => None,
        }
    }

    /// A short name of the value's kind, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            ValueRef::Null => "null",
            ValueRef::Bool(_) => "boolean",
            ValueRef::Int(_) => "integer",
            ValueRef::Double(_) => "double precision",
            ValueRef::Decimal(_) => "numeric",
            ValueRef::Timestamp(_) => "timestamp",
            ValueRef::TimestampTz(_) => "timestamp with time zone",
            ValueRef::Date(_) => "date",
            ValueRef::Text(_) => "text",
            ValueRef::Bytes(_) => "bytea",
            ValueRef::Uuid(_) => "uuid",
            ValueRef::Interval(_) => "interval",
            ValueRef::Time(_) => "time without time zone",
            ValueRef::Enum(_) => "enum",
            ValueRef::Inet(x) if x.cidr => "cidr",
            ValueRef::Inet(_) => "inet",
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::Int(v as i64)
    }
}
impl From<i16> for Value {
    fn from(v: i16) -> Value {
        Value::Int(v as i64)
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v as i64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Double(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.into())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v.into_boxed_str())
    }
}
impl From<Numeric> for Value {
    fn from(v: Numeric) -> Value {
        Value::Decimal(v)
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Bytes(v.into_boxed_slice())
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// Compares two values the way SQL comparison operators do: `None` when either side is NULL
/// or the kinds cannot be compared. Numbers of different kinds compare by numeric value.
pub fn sql_compare(a: ValueRef<'_>, b: ValueRef<'_>) -> Option<Ordering> {
    use ValueRef::*;
    match (a, b) {
        (Null, _) | (_, Null) => None,
        (Int(x), Int(y)) => Some(x.cmp(&y)),
        (Double(x), Double(y)) => Some(float_compare(x, y)),
        (Decimal(x), Decimal(y)) => Some(x.compare(y)),
        (Int(x), Decimal(y)) => Some(Numeric::from(x).as_ref().compare(y)),
        (Decimal(x), Int(y)) => Some(x.compare(Numeric::from(y).as_ref())),
        (Int(x), Double(y)) => Some(float_compare(x as f64, y)),
        (Double(x), Int(y)) => Some(float_compare(x, y as f64)),
        (Double(x), Decimal(y)) => Some(float_compare(x, y.to_f64())),
        (Decimal(x), Double(y)) => Some(float_compare(x.to_f64(), y)),
        (Bool(x), Bool(y)) => Some(x.cmp(&y)),
        (Timestamp(x), Timestamp(y)) | (TimestampTz(x), TimestampTz(y)) => Some(x.cmp(&y)),
        // A wall-clock time against a moment: the moment the session zone shows it.
        (Timestamp(x), TimestampTz(y)) => Some(moment(x).cmp(&y)),
        (TimestampTz(x), Timestamp(y)) => Some(x.cmp(&moment(y))),
        (Date(x), Date(y)) => Some(x.cmp(&y)),
        (Date(x), Timestamp(y)) => Some(datetime::start_of_day(x).cmp(&y)),
        (Timestamp(x), Date(y)) => Some(x.cmp(&datetime::start_of_day(y))),
        (Date(x), TimestampTz(y)) => Some(moment(datetime::start_of_day(x)).cmp(&y)),
        (TimestampTz(x), Date(y)) => Some(x.cmp(&moment(datetime::start_of_day(y)))),
        (Text(x), Text(y)) => Some(x.cmp(y)),
        (Bytes(x), Bytes(y)) => Some(x.cmp(y)),
        (Uuid(x), Uuid(y)) => Some(x.cmp(&y)),
        (Interval(x), Interval(y)) => Some(x.compare(&y)),
        (Time(x), Time(y)) => Some(x.cmp(&y)),
        (Enum(x), Enum(y)) if x.ty == y.ty => Some(x.compare(&y)),
        (Inet(x), Inet(y)) => Some(x.compare(&y)),
        _ => None,
    }
}

/// The moment at which the session zone's clocks show `local` (itself past the range).
fn moment(local: i64) -> i64 {
    zone::session_utc(local).unwrap_or(local)
}

/// Compares two floats as PostgreSQL does: NaN equals NaN and is above every other
/// value, and -0 equals 0.
fn float_compare(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
    }
}

/// A total order over values for sorting and grouping: NULL sorts after everything (as in
/// PostgreSQL's default `NULLS LAST` for ascending order), incomparable kinds by kind.
pub fn total_compare(a: ValueRef<'_>, b: ValueRef<'_>) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => sql_compare(a, b).unwrap_or_else(|| kind_rank(&a).cmp(&kind_rank(&b))),
    }
}

fn kind_rank(v: &ValueRef<'_>) -> u8 {
    match v {
        ValueRef::Null => 0,
        ValueRef::Bool(_) => 1,
        ValueRef::Int(_) | ValueRef::Double(_) | ValueRef::Decimal(_) => 2,
        ValueRef::Timestamp(_) | ValueRef::TimestampTz(_) | ValueRef::Date(_) => 3,
        ValueRef::Text(_) => 4,
        ValueRef::Bytes(_) => 5,
        ValueRef::Uuid(_) => 6,
        ValueRef::Interval(_) => 7,
        ValueRef::Time(_) => 8,
        ValueRef::Enum(_) => 9,
        ValueRef::Inet(_) => 10,
    }
}

/// Grouping equality: NULLs are equal to each other (as in GROUP BY and DISTINCT), numbers
/// of different kinds are equal when numerically equal.
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        total_compare(self.as_ref(), other.as_ref()) == Ordering::Equal
    }
}
impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Value) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Value {
    fn cmp(&self, other: &Value) -> Ordering {
        total_compare(self.as_ref(), other.as_ref())
    }
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value_ref(self.as_ref(), state)
    }
}

/// Hashes a value consistently with [`Value`]'s equality: numerically equal numbers hash
/// alike whatever their kind.
pub fn hash_value_ref<H: Hasher>(v: ValueRef<'_>, state: &mut H) {
    match v {
        ValueRef::Null => 0u8.hash(state),
        ValueRef::Bool(b) => (1u8, b).hash(state),
        ValueRef::Int(i) => hash_number(i as f64, Some(i), state),
        ValueRef::Double(d) => {
            let as_int = (d.fract() == 0.0 && d.abs() < 9.0e18).then_some(d as i64);
            hash_number(d, as_int, state)
        }
        ValueRef::Decimal(d) => hash_number(d.to_f64(), d.to_i64_exact(), state),
        // A date equals the timestamps of its midnight, and timestamps with and without
        // a zone compare as the same moment (the session's zone is UTC).
        ValueRef::Timestamp(t) | ValueRef::TimestampTz(t) => (3u8, t).hash(state),
        ValueRef::Date(d) => (3u8, datetime::start_of_day(d)).hash(state),
        ValueRef::Text(s) => (4u8, s).hash(state),
        ValueRef::Bytes(b) => (5u8, b).hash(state),
        ValueRef::Uuid(u) => (6u8, u).hash(state),
        // Equal spans are equal intervals ('1 mon' = '30 days').
        ValueRef::Interval(x) => (7u8, x.span()).hash(state),
        ValueRef::Time(t) => (8u8, t).hash(state),
        // Equal values are one label of one type (sort positions are unique).
        ValueRef::Enum(e) => (9u8, e.ty.id, e.sort().to_bits()).hash(state),
        // (inet and cidr values of one address and length are equal.)
        ValueRef::Inet(x) => (10u8, x.v6, x.bits, x.addr).hash(state),
    }
}

fn hash_number<H: Hasher>(f: f64, as_int: Option<i64>, state: &mut H) {
    2u8.hash(state);
    match as_int {
        Some(i) => (0u8, i).hash(state),
        None => {
            let f = if f == 0.0 { 0.0 } else { f };
            (1u8, f.to_bits()).hash(state)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Text output (PostgreSQL's text format).

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}

impl fmt::Display for ValueRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ValueRef::Null => f.write_str("NULL"),
            ValueRef::Bool(b) => f.write_str(if b { "t" } else { "f" }),
            ValueRef::Int(i) => write!(f, "{i}"),
            ValueRef::Double(d) => format_double(d, f),
            ValueRef::Decimal(d) => write!(f, "{d}"),
            ValueRef::Timestamp(t) => datetime::format_timestamp(t, f),
            ValueRef::TimestampTz(t) => f.write_str(&timestamptz_text(t)),
            ValueRef::Date(d) => f.write_str(&date_text(d)),
            ValueRef::Text(s) => f.write_str(s),
            ValueRef::Uuid(u) => f.write_str(&uuid_text(u128::from_be_bytes(u))),
            ValueRef::Interval(x) => f.write_str(&interval_text(&x)),
            ValueRef::Time(t) => f.write_str(&datetime::time_of_day_text(t)),
            ValueRef::Enum(e) => f.write_str(e.label()),
            ValueRef::Inet(x) => write!(f, "{x}"),
            ValueRef::Bytes(b) => {
                f.write_str("\\x")?;
                for byte in b {
                    write!(f, "{byte:02x}")?;
                }
                Ok(())
            }
        }
    }
}

fn format_double(d: f64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(&double_text(d))
}

/// A double as PostgreSQL writes it (`float8out`, shortest exact digits): positional
/// when the decimal exponent is from -4 to 14, else `1.5e-07`, `1e+20`; `NaN`,
/// `Infinity`, `-Infinity`.
pub fn double_text(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sci = format!("{d:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if d != 0.0 && !(-4..15).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{d}")
    }
}

// ---------------------------------------------------------------------------------------
// Coercion to column types.

/// What a date/time range error adds: the range of the type, where it is not the calendar's.
fn range_note(ty: &str) -> &'static str {
    if ty == "date" || ty == "time without time zone" {
        ""
    } else {
        " (timestamps run from 4714-11-24 BC to 294246-12-31)"
    }
}

fn out_of_range_text(ty: &str, detail: &str) -> String {
    match ty {
        "smallint" | "integer" | "bigint" => format!("{ty} out of range"),
        _ => format!("value out of range for type {ty}: {detail}"),
    }
}

fn out_of_range(ty: &DataType, detail: impl fmt::Display) -> ValueError {
    ValueError::NumericOutOfRange {
        ty: ty.sql_name(),
        detail: detail.to_string(),
    }
}

fn invalid_text(ty: &DataType, input: &str) -> ValueError {
    ValueError::InvalidText {
        ty: ty.sql_name(),
        input: input.chars().take(64).collect(),
    }
}

fn check_int_range(ty: &DataType, i: i64) -> Result<i64> {
    let ok = match ty {
        DataType::SmallInt => i16::try_from(i).is_ok(),
        DataType::Integer => i32::try_from(i).is_ok(),
        _ => true,
    };
    if ok { Ok(i) } else { Err(out_of_range(ty, i)) }
}

/// Rounds half away from zero to an integer, like PostgreSQL's float-to-int casts of
/// numerics (for doubles PostgreSQL rounds half to even; we do the same there).
fn double_to_int(ty: &DataType, d: f64) -> Result<i64> {
    let r = d.round_ties_even();
    if !r.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
        return Err(out_of_range(ty, d));
    }
    check_int_range(ty, r as i64)
}

fn decimal_to_int(ty: &DataType, d: NumericRef<'_>) -> Result<i64> {
    let i = d.round_to_i64().ok_or_else(|| out_of_range(ty, d))?;
    check_int_range(ty, i)
}

/// The error of a numeric operation, for a value of type `ty`.
pub fn numeric_error(ty: &DataType, e: NumericError, input: impl fmt::Display) -> ValueError {
    match e {
        NumericError::Syntax => ValueError::InvalidText {
            ty: ty.sql_name(),
            input: input.to_string(),
        },
        NumericError::DivisionByZero => ValueError::DivisionByZero,
        NumericError::Overflow => ValueError::NumericOutOfRange {
            ty: ty.sql_name(),
            detail: "value overflows numeric format".into(),
        },
    }
}

/// Brings a numeric to a column's scale and checks its precision (`NUMERIC(p, s)`); an
/// unconstrained `NUMERIC` takes it as it is.
pub fn fit_decimal(ty: &DataType, d: NumericRef<'_>) -> Result<Numeric> {
    let DataType::Decimal { precision, scale } = *ty else {
        return Ok(d.to_owned());
    };
    if precision == 0 {
        return Ok(d.to_owned());
    }
    d.fit(precision as u32, scale as u32).map_err(|e| match e {
        NumericError::Overflow => out_of_range(
            ty,
            format!(
                "a field with precision {precision}, scale {scale} must round to an absolute value less than 10^{}",
                precision - scale
            ),
        ),
        other => numeric_error(ty, other, d),
    })
}

fn double_to_decimal(ty: &DataType, d: f64) -> Result<Numeric> {
    Numeric::from_f64(d).map_err(|_| out_of_range(ty, d))
}

fn check_text_len(ty: &DataType, s: &str) -> Result<()> {
    if let DataType::Varchar(Some(n)) = ty {
        // Byte length bounds character count from above: only count when it could matter.
        if s.len() > *n as usize {
            let chars = s.chars().count();
            if chars > *n as usize {
                return Err(ValueError::StringTooLong {
                    ty: ty.sql_name(),
                    len: chars,
                });
            }
        }
    }
    Ok(())
}

fn coerce(v: Value, ty: &DataType) -> Result<Value> {
    use DataType as T;
    Ok(match (v, ty) {
        (Value::Null, _) => Value::Null,
        (Value::Int(i), T::SmallInt | T::Integer | T::BigInt) => Value::Int(check_int_range(ty, i)?),
        (Value::Double(d), T::SmallInt | T::Integer | T::BigInt) => Value::Int(double_to_int(ty, d)?),
        (Value::Decimal(d), T::SmallInt | T::Integer | T::BigInt) => Value::Int(decimal_to_int(ty, d.as_ref())?),
        (Value::Int(i), T::Double) => Value::Double(i as f64),
        (v @ Value::Double(_), T::Double) => v,
        (Value::Decimal(d), T::Double) => Value::Double(d.as_ref().to_f64()),
        (Value::Int(i), T::Decimal { .. }) => Value::Decimal(fit_decimal(ty, Numeric::from(i).as_ref())?),
        (Value::Double(d), T::Decimal { .. }) => Value::Decimal(fit_decimal(ty, double_to_decimal(ty, d)?.as_ref())?),
        (Value::Decimal(d), T::Decimal { .. }) => Value::Decimal(fit_decimal(ty, d.as_ref())?),
        (Value::Text(s), T::Varchar(_)) => {
            check_text_len(ty, &s)?;
            Value::Text(s)
        }
        (v @ Value::Bool(_), T::Boolean) => v,
        (v @ Value::Timestamp(_), T::Timestamp) => v,
        (v @ Value::TimestampTz(_), T::TimestampTz) => v,
        (v @ Value::Date(_), T::Date) => v,
        // A moment's wall-clock time, and back, in the session zone (crate::zone).
        (Value::TimestampTz(t), T::Timestamp) => Value::Timestamp(zoned(zone::session_local(t))?),
        (Value::Timestamp(t), T::TimestampTz) => Value::TimestampTz(zoned(zone::session_utc(t))?),
        (Value::Timestamp(t), T::Date) => Value::Date(datetime::day_of(t)),
        (Value::TimestampTz(t), T::Date) => Value::Date(datetime::day_of(zoned(zone::session_local(t))?)),
        (Value::Date(d), T::Timestamp) => Value::Timestamp(datetime::start_of_day(d)),
        (Value::Date(d), T::TimestampTz) => Value::TimestampTz(zoned(zone::session_utc(datetime::start_of_day(d)))?),
        (v @ Value::Bytes(_), T::Bytea) => v,
        (v @ Value::Uuid(_), T::Uuid) => v,
        (v @ Value::Interval(_), T::Interval) => v,
        (v @ Value::Time(_), T::Time) => v,
        (Value::Enum(e), T::Enum(t)) if e.ty == *t => Value::Enum(e),
        // inet to cidr clears the bits past the mask, as PostgreSQL's cast does.
        (Value::Inet(x), T::Inet | T::Cidr) => Value::Inet(x.as_type(*ty == T::Cidr)),
        // (As PostgreSQL's cast: the length always, `192.168.1.5/32`.)
        (Value::Inet(x), T::Varchar(_)) => Value::Text(x.with_length().into()),
        (Value::Timestamp(t), T::Time) => Value::Time(t.rem_euclid(datetime::MICROS_PER_DAY)),
        (Value::TimestampTz(t), T::Time) => {
            Value::Time(zoned(zone::session_local(t))?.rem_euclid(datetime::MICROS_PER_DAY))
        }
        (Value::Text(s), _) => parse_text(ty, &s)?,
        (v, T::Varchar(_)) => {
            let s = v.to_string();
            check_text_len(ty, &s)?;
            Value::Text(s.into())
        }
        (v, ty) => {
            return Err(ValueError::TypeMismatch(format!(
                "cannot convert {} value {} to {}",
                v.as_ref().kind_name(),
                v,
                ty.sql_name()
            )));
        }
    })
}

/// A timestamp moved between UTC and the session zone: 22008 past the range.
fn zoned(moved: Option<i64>) -> Result<i64> {
    let t = moved.ok_or(ValueError::TimestampOutOfRange)?;
    if (TIMESTAMP_MIN..=TIMESTAMP_MAX).contains(&t) {
        Ok(t)
    } else {
        Err(ValueError::TimestampOutOfRange)
    }
}

/// The error of a date or timestamp literal `input` of type `ty`.
pub fn datetime_error(ty: &DataType, e: TimestampError, input: &str) -> ValueError {
    let input = input.chars().take(64).collect();
    let datestyle = e == TimestampError::Month;
    match e {
        // PostgreSQL's name in this message: `timestamp` for the type without a zone.
        TimestampError::Syntax => ValueError::InvalidDatetime {
            ty: if *ty == DataType::Timestamp {
                "timestamp".into()
            } else {
                ty.sql_name()
            },
            input,
        },
        TimestampError::OutOfRange | TimestampError::Month => ValueError::DatetimeOutOfRange {
            ty: ty.sql_name(),
            input,
            datestyle,
        },
        TimestampError::Zone(name) => ValueError::TimeZone { name },
    }
}

fn parse_text(ty: &DataType, input: &str) -> Result<Value> {
    use DataType as T;
    let t = input.trim();
    Ok(match ty {
        T::SmallInt | T::Integer | T::BigInt => {
            let i: i64 = t.parse().map_err(|_| {
                if t.bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b'+') && !t.is_empty() {
                    out_of_range(ty, t)
                } else {
                    invalid_text(ty, input)
                }
            })?;
            Value::Int(check_int_range(ty, i)?)
        }
        T::Double => Value::Double(match t.to_ascii_lowercase().as_str() {
            "nan" => f64::NAN,
            "infinity" | "inf" => f64::INFINITY,
            "-infinity" | "-inf" => f64::NEG_INFINITY,
            _ => t.parse().map_err(|_| invalid_text(ty, input))?,
        }),
        T::Decimal { .. } => {
            let d = Numeric::parse(t).map_err(|e| numeric_error(ty, e, input))?;
            Value::Decimal(fit_decimal(ty, d.as_ref())?)
        }
        T::Varchar(_) => {
            check_text_len(ty, input)?;
            Value::Text(input.into())
        }
        T::Boolean => Value::Bool(match t.to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => true,
            "f" | "false" | "n" | "no" | "off" | "0" => false,
            _ => return Err(invalid_text(ty, input)),
        }),
        T::Timestamp => Value::Timestamp(parse_timestamp(t).map_err(|e| datetime_error(ty, e, input))?),
        T::TimestampTz => Value::TimestampTz(parse_timestamptz(t).map_err(|e| datetime_error(ty, e, input))?),
        T::Date => Value::Date(parse_date(t).map_err(|e| datetime_error(ty, e, input))?),
        T::Uuid => Value::Uuid(parse_uuid(input).ok_or_else(|| invalid_text(ty, input))?.to_be_bytes()),
        T::Interval => Value::Interval(parse_interval(input).ok_or_else(|| invalid_text(ty, input))?),
        T::Time => Value::Time(datetime::parse_time_of_day(t).map_err(|e| datetime_error(ty, e, input))?),
        T::Inet | T::Cidr => Value::Inet(inet::Inet::parse(input, *ty == T::Cidr).map_err(|e| match e {
            inet::InetError::HostBits => ValueError::InvalidCidr {
                input: input.chars().take(64).collect(),
            },
            inet::InetError::Syntax => invalid_text(ty, input),
        })?),
        // Labels are taken as given: spaces count, as in PostgreSQL.
        T::Enum(e) => Value::Enum(e.parse(input).ok_or_else(|| ValueError::InvalidEnum {
            ty: e.name.clone(),
            input: input.chars().take(64).collect(),
        })?),
        T::Json => match json::parse_json(input) {
            Ok(_) => Value::Text(input.into()),
            Err(detail) => return Err(ValueError::InvalidJson { detail }),
        },
        T::Array(e) => {
            let ty = e.data_type();
            Value::Text(array::reformat(input, |item| Ok::<_, ValueError>(parse_text(&ty, item)?.to_string()))?.into())
        }
        T::Jsonb => Value::Text(
            json::normalize_jsonb(input)
                .map_err(|detail| ValueError::InvalidJson { detail })?
                .into(),
        ),
        T::Bytea => {
            if let Some(hex) = t.strip_prefix("\\x") {
                if hex.len() % 2 != 0 {
                    return Err(invalid_text(ty, input));
                }
                let mut out = Vec::with_capacity(hex.len() / 2);
                for pair in hex.as_bytes().chunks(2) {
                    let s = std::str::from_utf8(pair).map_err(|_| invalid_text(ty, input))?;
                    out.push(u8::from_str_radix(s, 16).map_err(|_| invalid_text(ty, input))?);
                }
                Value::Bytes(out.into())
            } else {
                Value::Bytes(input.as_bytes().into())
            }
        }
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod size_tests {
    /// Values are copied everywhere rows go: a variant that made them larger (a `u128`,
    /// whose alignment is 16) slowed every statement measurably.
    #[test]
    fn values_stay_small() {
        assert_eq!(std::mem::size_of::<super::Value>(), 24);
        assert_eq!(std::mem::size_of::<super::ValueRef<'_>>(), 24);
        assert_eq!(std::mem::align_of::<super::Value>(), 8);
    }
}
