//! Index keys.
//!
//! A key on one integer-like column (SMALLINT, INTEGER, BIGINT, TIMESTAMP) is kept as an
//! `i64`. Every other key is a byte string in an order-preserving ("memcomparable")
//! encoding, so the ordered index compares keys with `memcmp` and a prefix of the key
//! columns is a byte prefix of the key:
//!
//! * integers and timestamps: 8 bytes big-endian with the sign bit flipped;
//! * DOUBLE PRECISION: 8 bytes, IEEE bits with the sign bit flipped for positives and all
//!   bits flipped for negatives (-0.0 is stored as 0.0);
//! * NUMERIC(p, s): the value at scale s as a 128-bit integer, big-endian, sign bit flipped;
//! * BOOLEAN: one byte 0 or 1;
//! * text and bytea: the bytes with each 0x00 written as 0x00 0xFF, then 0x00 0x00.
//!
//! Text keys therefore order by bytes (the C collation). A key with a NULL column is not
//! stored in the index at all: NULL never equals anything, and unique indexes allow any
//! number of NULLs.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use permafrost_types::numeric::MAX_SMALL_PRECISION;
use permafrost_types::{DataType, ValueRef};

const INLINE: usize = 22;

/// A byte-string key, stored inline when short.
#[derive(Clone)]
pub enum KeyBuf {
    Inline { len: u8, data: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl KeyBuf {
    pub fn new(bytes: &[u8]) -> KeyBuf {
        if bytes.len() <= INLINE {
            let mut data = [0u8; INLINE];
            data[..bytes.len()].copy_from_slice(bytes);
            KeyBuf::Inline {
                len: bytes.len() as u8,
                data,
            }
        } else {
            KeyBuf::Heap(bytes.into())
        }
    }

    /// Heap bytes owned by this key beyond its own size.
    pub fn heap_bytes(&self) -> usize {
        match self {
            KeyBuf::Inline { .. } => 0,
            KeyBuf::Heap(b) => b.len(),
        }
    }
}

impl Deref for KeyBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            KeyBuf::Inline { len, data } => &data[..*len as usize],
            KeyBuf::Heap(b) => b,
        }
    }
}

impl PartialEq for KeyBuf {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}
impl Eq for KeyBuf {}
impl PartialOrd for KeyBuf {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for KeyBuf {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}
impl Hash for KeyBuf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}
impl fmt::Debug for KeyBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyBuf({:02x?})", &**self)
    }
}

/// A key as the index stores it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexKey {
    Int(i64),
    Bytes(KeyBuf),
}

/// Which representation an index's keys use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Int,
    Bytes,
}

impl KeyKind {
    pub fn for_columns(types: &[DataType]) -> KeyKind {
        match types {
            [t] if t.is_integer() || matches!(t, DataType::Timestamp | DataType::TimestampTz | DataType::Date) => {
                KeyKind::Int
            }
            _ => KeyKind::Bytes,
        }
    }
}

/// Builds keys for one index from column values.
#[derive(Debug, Clone)]
pub struct KeyEncoder {
    types: Vec<DataType>,
    kind: KeyKind,
}

impl KeyEncoder {
    pub fn new(types: Vec<DataType>) -> KeyEncoder {
        let kind = KeyKind::for_columns(&types);
        KeyEncoder { types, kind }
    }

    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    pub fn types(&self) -> &[DataType] {
        &self.types
    }

    /// The key for `values` (one per key column, already of the column types), or `None` if
    /// any is NULL or of the wrong kind.
    pub fn encode<'a>(&self, values: impl IntoIterator<Item = ValueRef<'a>>) -> Option<IndexKey> {
        let mut it = values.into_iter();
        if self.kind == KeyKind::Int {
            return match it.next()? {
                ValueRef::Int(i) | ValueRef::Timestamp(i) | ValueRef::TimestampTz(i) => Some(IndexKey::Int(i)),
                ValueRef::Date(d) => Some(IndexKey::Int(d as i64)),
                _ => None,
            };
        }
        let mut buf = Vec::with_capacity(32);
        let mut n = 0;
        for (v, ty) in it.zip(&self.types) {
            if !encode_value(&mut buf, v, ty) {
                return None;
            }
            n += 1;
        }
        (n == self.types.len()).then(|| IndexKey::Bytes(KeyBuf::new(&buf)))
    }

    /// The byte prefix for the first `values.len()` key columns (for prefix and range scans
    /// of a byte-keyed ordered index). `None` if a value is NULL.
    pub fn encode_prefix<'a>(&self, values: impl IntoIterator<Item = ValueRef<'a>>) -> Option<Vec<u8>> {
        let mut buf = Vec::with_capacity(32);
        for (v, ty) in values.into_iter().zip(&self.types) {
            if !encode_value(&mut buf, v, ty) {
                return None;
            }
        }
        Some(buf)
    }
}

/// A double's bytes in an order that sorts as the numbers do (-0 as 0).
fn ordered_f64(d: f64) -> [u8; 8] {
    let d = if d == 0.0 { 0.0 } else { d };
    let bits = d.to_bits();
    let enc = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
    enc.to_be_bytes()
}

/// Appends the order-preserving encoding of `v`; returns false for NULL or a kind that does
/// not match `ty`.
pub fn encode_value(out: &mut Vec<u8>, v: ValueRef<'_>, ty: &DataType) -> bool {
    match (v, ty) {
        (ValueRef::Int(i), _) if ty.is_integer() => out.extend_from_slice(&flip_i64(i)),
        (ValueRef::Timestamp(t), DataType::Timestamp) | (ValueRef::TimestampTz(t), DataType::TimestampTz) => {
            out.extend_from_slice(&flip_i64(t))
        }
        (ValueRef::Date(d), DataType::Date) => out.extend_from_slice(&flip_i64(d as i64)),
        (ValueRef::Time(t), DataType::Time) => out.extend_from_slice(&flip_i64(t)),
        (ValueRef::Inet(x), DataType::Inet | DataType::Cidr) => out.extend_from_slice(&x.key()),
        // By sort position, which never changes for a label (crate permafrost_types::enum_type).
        (ValueRef::Enum(e), DataType::Enum(t)) if e.ty == *t => out.extend_from_slice(&ordered_f64(e.sort())),
        (ValueRef::Double(d), DataType::Double) => out.extend_from_slice(&ordered_f64(d)),
        (ValueRef::Decimal(d), DataType::Decimal { precision, scale }) if *precision <= MAX_SMALL_PRECISION => {
            // A value too large for the column matches nothing in it.
            let Some(mut d) = d.small() else { return false };
            d.rescale(*scale as u32);
            let m = d.mantissa() as u128 ^ (1u128 << 127);
            out.extend_from_slice(&m.to_be_bytes());
        }
        (ValueRef::Decimal(d), DataType::Decimal { scale, .. }) => {
            // The mantissa at the column's scale, any length: a marker that orders the
            // signs, the magnitude's length (so longer is larger), then its bytes, both
            // inverted for negatives.
            let Ok(d) = d.round(*scale as i32) else { return false };
            let mut enc = Vec::new();
            d.as_ref().encode(&mut enc);
            let negative = enc[0] == 1;
            let mag: Vec<u8> = enc[3..].iter().rev().copied().collect();
            let Ok(len) = u16::try_from(mag.len()) else {
                return false;
            };
            match (mag.is_empty(), negative) {
                (true, _) => out.push(0x80),
                (false, false) => {
                    out.push(0x81);
                    out.extend_from_slice(&len.to_be_bytes());
                    out.extend_from_slice(&mag);
                }
                (false, true) => {
                    out.push(0x7F);
                    out.extend_from_slice(&(u16::MAX - len).to_be_bytes());
                    out.extend(mag.iter().map(|b| !b));
                }
            }
        }
        (ValueRef::Bool(b), DataType::Boolean) => out.push(b as u8),
        (ValueRef::Text(s), DataType::Varchar(_)) => escape_bytes(out, s.as_bytes()),
        (ValueRef::Bytes(b), DataType::Bytea) => escape_bytes(out, b),
        (ValueRef::Uuid(u), DataType::Uuid) => out.extend_from_slice(&u),
        // By its span (a month as 30 days): equal intervals have one key, as they compare.
        (ValueRef::Interval(x), DataType::Interval) => {
            out.extend_from_slice(&((x.span() as u128) ^ (1u128 << 127)).to_be_bytes())
        }
        (ValueRef::Text(s), DataType::Json | DataType::Jsonb | DataType::Array(_)) => escape_bytes(out, s.as_bytes()),
        _ => return false,
    }
    true
}

#[inline]
fn flip_i64(i: i64) -> [u8; 8] {
    ((i as u64) ^ (1 << 63)).to_be_bytes()
}

fn escape_bytes(out: &mut Vec<u8>, b: &[u8]) {
    for &byte in b {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// The smallest byte string greater than every string that starts with `prefix`, or `None`
/// if there is none (the prefix is all 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut v = prefix.to_vec();
    while let Some(last) = v.pop() {
        if last != 0xFF {
            v.push(last + 1);
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use permafrost_types::Numeric;
    use proptest::prelude::*;

    fn enc(v: ValueRef<'_>, ty: DataType) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(encode_value(&mut out, v, &ty));
        out
    }

    proptest! {
        #[test]
        fn ints_keep_order(a: i64, b: i64) {
            prop_assert_eq!(a.cmp(&b), enc(ValueRef::Int(a), DataType::BigInt).cmp(&enc(ValueRef::Int(b), DataType::BigInt)));
        }

        #[test]
        fn doubles_keep_order(a in -1e12f64..1e12, b in -1e12f64..1e12) {
            prop_assert_eq!(a.partial_cmp(&b).unwrap(), enc(ValueRef::Double(a), DataType::Double).cmp(&enc(ValueRef::Double(b), DataType::Double)));
        }

        #[test]
        fn decimals_keep_order(a in -1_000_000i64..1_000_000, b in -1_000_000i64..1_000_000) {
            let ty = DataType::Decimal { precision: 12, scale: 2 };
            let (x, y) = (Numeric::new(a, 2), Numeric::new(b, 2));
            prop_assert_eq!(x.as_ref().compare(y.as_ref()), enc(ValueRef::Decimal(x.as_ref()), ty).cmp(&enc(ValueRef::Decimal(y.as_ref()), ty)));
        }

        /// NUMERIC(p, s) past 28 digits: any lengths, both signs, and as a key's first
        /// column, followed by another (the encoding ends where it says).
        #[test]
        fn big_decimals_keep_order(a in "-?[0-9]{1,50}(\\.[0-9]{1,10})?", b in "-?[0-9]{1,50}(\\.[0-9]{1,10})?", t1: i64, t2: i64) {
            let ty = DataType::Decimal { precision: 60, scale: 10 };
            let (x, y) = (a.parse::<Numeric>().unwrap(), b.parse::<Numeric>().unwrap());
            let key = |n: &Numeric, t: i64| {
                let mut k = enc(ValueRef::Decimal(n.as_ref()), ty);
                k.extend(enc(ValueRef::Int(t), DataType::BigInt));
                k
            };
            let order = x.as_ref().compare(y.as_ref()).then(t1.cmp(&t2));
            prop_assert_eq!(order, key(&x, t1).cmp(&key(&y, t2)));
        }

        #[test]
        fn byte_strings_keep_order(a: Vec<u8>, b: Vec<u8>) {
            prop_assert_eq!(a.cmp(&b), enc(ValueRef::Bytes(&a), DataType::Bytea).cmp(&enc(ValueRef::Bytes(&b), DataType::Bytea)));
        }

        #[test]
        fn composite_keys_order_column_by_column(a: (String, i32), b: (String, i32)) {
            let e = KeyEncoder::new(vec![DataType::Varchar(None), DataType::Integer]);
            let ka = e.encode([ValueRef::Text(&a.0), ValueRef::Int(a.1 as i64)]).unwrap();
            let kb = e.encode([ValueRef::Text(&b.0), ValueRef::Int(b.1 as i64)]).unwrap();
            let expect = a.0.as_bytes().cmp(b.0.as_bytes()).then(a.1.cmp(&b.1));
            prop_assert_eq!(expect, ka.cmp(&kb));
        }
    }

    #[test]
    fn null_keys_are_not_encoded() {
        let e = KeyEncoder::new(vec![DataType::Integer, DataType::Integer]);
        assert!(e.encode([ValueRef::Int(1), ValueRef::Null]).is_none());
        let single = KeyEncoder::new(vec![DataType::BigInt]);
        assert_eq!(single.kind(), KeyKind::Int);
        assert!(single.encode([ValueRef::Null]).is_none());
    }

    #[test]
    fn successor_of_prefix() {
        assert_eq!(prefix_successor(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(prefix_successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF]), None);
    }
}
