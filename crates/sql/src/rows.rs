//! Result rows.
//!
//! A statement's result is built in one growable buffer rather than as a vector of boxed
//! values per row: a point read of a 1 KiB tuple costs one allocation instead of one per
//! string column, which matters when the whole transaction is a few hundred nanoseconds.
//! The buffer is an in-process representation only (it never goes to disk or the wire).
//!
//! Each value is a tag byte followed by its payload: nothing for NULL, 1 byte for a
//! boolean, 4 for a date, 8 bytes for integers, doubles, timestamps and times, 16 for a uuid, an interval or a numeric of the small
//! form, and a u32 length plus the bytes for text, bytea and a numeric of the big form
//! (its encoding, `permafrost_types::numeric`). A value of an enum type is 8 bytes: its
//! type's process-wide serial number and its label's index (u32 LE each,
//! `permafrost_types::enum_type`); a serial this process never gave reads as damage. An
//! inet or cidr is 19 bytes: IPv6 (0 or 1), the netmask length, cidr (0 or 1), the 16
//! address bytes.

use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;

use permafrost_types::{DataType, EnumType, NumericRef, Value, ValueRef};

use crate::error::Result;

/// Name and type of a result column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnInfo {
    pub name: String,
    /// `None` when the type is unknown (a bare NULL or an untyped parameter).
    pub ty: Option<DataType>,
}

const T_NULL: u8 = 0;
const T_BOOL: u8 = 1;
const T_INT: u8 = 2;
const T_DOUBLE: u8 = 3;
const T_DECIMAL: u8 = 4;
const T_TIMESTAMP: u8 = 5;
const T_TEXT: u8 = 6;
const T_BYTES: u8 = 7;
const T_NUMERIC: u8 = 8;
const T_TIMESTAMPTZ: u8 = 9;
const T_DATE: u8 = 10;
const T_UUID: u8 = 11;
const T_INTERVAL: u8 = 12;
const T_TIME: u8 = 13;
const T_ENUM: u8 = 14;
const T_INET: u8 = 15;

/// The part of a result that follows a [`Rows`] (a scan that reads evicted data after its
/// statement ran, the executor's `Deferred`): read batch by batch, so that a result larger than
/// memory reaches its client without being held whole.
pub trait MoreRows: Send {
    /// The next rows, or `None` once the result is complete. May block (it waits for
    /// block reads).
    fn next_rows(&mut self) -> Result<Option<Rows>>;
}

/// [`Rows::digest`] of a result given in parts (its rows, then batches of its rest), one
/// part at a time: equal to the digest of all the parts' rows as one result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digest {
    /// The sum of the rows' hashes (so that their order does not count).
    sum: u64,
    rows: usize,
    /// The first part's count of rows changed, and its number of columns.
    affected: u64,
    columns: usize,
    started: bool,
}

impl Digest {
    /// Adds a part's rows (the first part's count of rows changed and columns).
    pub fn add(&mut self, part: &Rows) {
        let state = digest_state();
        if !self.started {
            self.started = true;
            self.affected = part.affected;
            self.columns = part.columns.len();
        }
        self.sum = part
            .iter()
            .take(part.len().saturating_sub(part.varying))
            .fold(self.sum, |acc, r| acc.wrapping_add(state.hash_one(r.data)));
        self.rows += part.len();
    }

    /// The fingerprint of the parts added so far.
    pub fn finish(&self) -> u64 {
        digest_state().hash_one((self.sum, self.rows, self.affected, self.columns))
    }
}

/// The hasher of [`Digest`]: one seed for the process, drawn at random, so that a client
/// cannot aim for collisions.
fn digest_state() -> &'static foldhash::quality::RandomState {
    static SEED: std::sync::OnceLock<foldhash::quality::RandomState> = std::sync::OnceLock::new();
    SEED.get_or_init(foldhash::quality::RandomState::default)
}

/// Where the rest of a result waits to be taken (shared by clones of the rows; taken once).
type Rest = Arc<std::sync::Mutex<Option<Box<dyn MoreRows>>>>;

/// The rows a statement returned, or the count of rows it changed.
#[derive(Clone)]
pub struct Rows {
    columns: Arc<[ColumnInfo]>,
    data: Vec<u8>,
    starts: Vec<u32>,
    /// Rows inserted, updated or deleted (0 for queries).
    pub affected: u64,
    /// The rest of the result, when it comes after these rows ([`MoreRows`]); taken once.
    rest: Option<Rest>,
    /// How many of the last rows differ from one run to the next whatever the data
    /// (EXPLAIN ANALYZE's execution time): [`Digest`] leaves them out.
    pub varying: usize,
    /// Whether the statement drew random values (`random()`, `gen_random_uuid()`): a
    /// transaction block keeps its seed then (the executor's `TxnStatement::seed`).
    pub drew_random: bool,
    /// The sequence values the transaction took, by table, in order (the executor sets
    /// them when its body ends: its command-log record keeps them, and a transaction
    /// block keeps a probe's for its COMMIT).
    pub draws: Vec<(u32, i64)>,
}

impl Default for Rows {
    fn default() -> Self {
        Rows::empty(Arc::from(Vec::new()))
    }
}

impl Rows {
    pub fn empty(columns: Arc<[ColumnInfo]>) -> Rows {
        Rows {
            columns,
            data: Vec::new(),
            starts: Vec::new(),
            affected: 0,
            rest: None,
            varying: 0,
            drew_random: false,
            draws: Vec::new(),
        }
    }

    /// An empty result whose buffer already holds `bytes` (avoids regrowing it).
    pub fn with_capacity(columns: Arc<[ColumnInfo]>, bytes: usize) -> Rows {
        Rows {
            columns,
            data: Vec::with_capacity(bytes),
            starts: Vec::new(),
            affected: 0,
            rest: None,
            varying: 0,
            drew_random: false,
            draws: Vec::new(),
        }
    }

    /// Bytes of encoded values.
    pub fn data_len(&self) -> usize {
        self.data.len()
    }

    /// The bytes the rows' buffers take, room to grow included (what a statement holding
    /// them counts against its memory).
    pub fn held_bytes(&self) -> usize {
        self.data.capacity() + self.starts.capacity() * std::mem::size_of::<u32>()
    }

    /// A result that only reports a count of changed rows.
    pub fn affected(n: u64) -> Rows {
        Rows {
            affected: n,
            ..Rows::default()
        }
    }

    pub fn columns(&self) -> &Arc<[ColumnInfo]> {
        &self.columns
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Starts a new row; push exactly one value per column after it.
    #[inline]
    pub fn begin_row(&mut self) {
        self.starts.push(self.data.len() as u32);
    }

    /// Drops the row begun last (an OFFSET or a failed projection).
    pub fn pop_row(&mut self) {
        if let Some(s) = self.starts.pop() {
            self.data.truncate(s as usize);
        }
    }

    #[inline]
    pub fn push(&mut self, v: ValueRef<'_>) {
        encode_value(&mut self.data, v);
    }

    /// Appends a whole row.
    pub fn push_row<'a>(&mut self, values: impl IntoIterator<Item = ValueRef<'a>>) {
        self.begin_row();
        for v in values {
            self.push(v);
        }
    }

    pub fn row(&self, i: usize) -> RowRef<'_> {
        let start = self.starts[i] as usize;
        let end = self.starts.get(i + 1).map_or(self.data.len(), |&e| e as usize);
        RowRef {
            data: &self.data[start..end],
            ncols: self.columns.len(),
        }
    }

    /// Where row `i`'s values start in the encoded data (`i < len()`).
    pub fn row_offset(&self, i: usize) -> usize {
        self.starts[i] as usize
    }

    pub fn iter(&self) -> impl Iterator<Item = RowRef<'_>> {
        (0..self.len()).map(move |i| self.row(i))
    }

    /// All rows as owned values (convenient for tests and small results).
    pub fn to_values(&self) -> Vec<Vec<Value>> {
        self.iter()
            .map(|r| r.values().map(|v| v.to_owned()).collect())
            .collect()
    }

    /// Appends the rows of `other` (same columns).
    pub fn append(&mut self, other: &Rows) {
        let base = self.data.len() as u32;
        self.data.extend_from_slice(&other.data);
        self.starts.extend(other.starts.iter().map(|s| s + base));
    }

    /// Says that the result goes on after these rows, with `more`.
    pub fn set_rest(&mut self, more: Box<dyn MoreRows>) {
        self.rest = Some(Arc::new(std::sync::Mutex::new(Some(more))));
    }

    /// Whether the result goes on after these rows ([`Rows::take_rest`]).
    pub fn has_rest(&self) -> bool {
        self.rest.is_some()
    }

    /// The rest of the result, if it goes on after these rows and nobody took it yet.
    pub fn take_rest(&mut self) -> Option<Box<dyn MoreRows>> {
        let r = self.rest.take()?;
        r.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// A fingerprint of what a client is shown of this result: its rows (as a multiset:
    /// the order of rows that no ORDER BY fixes does not count), their number and the
    /// number of rows changed. Equal results have equal fingerprints; different ones almost
    /// surely differ. Computed in memory only (never stored: the hash may change between
    /// releases).
    pub fn digest(&self) -> u64 {
        let mut d = Digest::default();
        d.add(self);
        d.finish()
    }

    /// Row `i` in the buffer's encoding (see the module docs), for [`Rows::push_encoded_row`]
    /// of another result.
    pub fn encoded_row(&self, i: usize) -> &[u8] {
        let start = self.starts[i] as usize;
        let end = self.starts.get(i + 1).map_or(self.data.len(), |&e| e as usize);
        &self.data[start..end]
    }

    /// Appends a row given in the buffer's encoding ([`Rows::encoded_row`]) by a source this
    /// process does not trust blindly (a forked reader's pipe): checked first, value by
    /// value (known tags, lengths within the bytes, UTF-8 text, a numeric's flags, one value
    /// per column). False, and nothing appended, if it is not a well-formed row.
    pub fn push_encoded_row(&mut self, bytes: &[u8]) -> bool {
        if !well_formed(bytes, self.columns.len()) {
            return false;
        }
        self.begin_row();
        self.data.extend_from_slice(bytes);
        true
    }

    /// Appends a row in the buffer's encoding taken from another result of the same
    /// columns ([`Rows::encoded_row`]), which this process wrote: not checked again.
    pub(crate) fn push_encoded_unchecked(&mut self, bytes: &[u8]) {
        self.begin_row();
        self.data.extend_from_slice(bytes);
    }
}

/// One row of a [`Rows`].
#[derive(Clone, Copy)]
pub struct RowRef<'a> {
    data: &'a [u8],
    ncols: usize,
}

impl<'a> RowRef<'a> {
    /// The values in column order.
    pub fn values(&self) -> impl Iterator<Item = ValueRef<'a>> + 'a {
        let mut rest = self.data;
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let (v, n) = decode(rest);
            rest = &rest[n..];
            Some(v)
        })
    }

    pub fn get(&self, col: usize) -> ValueRef<'a> {
        self.values().nth(col).unwrap_or(ValueRef::Null)
    }

    pub fn len(&self) -> usize {
        self.ncols
    }

    pub fn is_empty(&self) -> bool {
        self.ncols == 0
    }

    pub fn get_i64(&self, col: usize) -> Option<i64> {
        self.get(col).as_i64()
    }

    pub fn get_f64(&self, col: usize) -> Option<f64> {
        self.get(col).as_f64()
    }

    pub fn get_str(&self, col: usize) -> Option<&'a str> {
        self.get(col).as_str()
    }
}

/// Appends one value in the buffer's encoding (see the module docs).
#[inline]
fn encode_value(d: &mut Vec<u8>, v: ValueRef<'_>) {
    match v {
        ValueRef::Null => d.push(T_NULL),
        ValueRef::Bool(b) => d.extend_from_slice(&[T_BOOL, b as u8]),
        ValueRef::Int(i) => {
            d.push(T_INT);
            d.extend_from_slice(&i.to_le_bytes());
        }
        ValueRef::Double(x) => {
            d.push(T_DOUBLE);
            d.extend_from_slice(&x.to_le_bytes());
        }
        ValueRef::Decimal(x) => match x.small_bytes() {
            Some(b) => {
                d.push(T_DECIMAL);
                d.extend_from_slice(&b);
            }
            None => {
                d.push(T_NUMERIC);
                let at = d.len();
                d.extend_from_slice(&[0; 4]);
                x.encode(d);
                let len = (d.len() - at - 4) as u32;
                d[at..at + 4].copy_from_slice(&len.to_le_bytes());
            }
        },
        ValueRef::Timestamp(t) => {
            d.push(T_TIMESTAMP);
            d.extend_from_slice(&t.to_le_bytes());
        }
        ValueRef::TimestampTz(t) => {
            d.push(T_TIMESTAMPTZ);
            d.extend_from_slice(&t.to_le_bytes());
        }
        ValueRef::Date(days) => {
            d.push(T_DATE);
            d.extend_from_slice(&days.to_le_bytes());
        }
        ValueRef::Text(s) => {
            d.push(T_TEXT);
            d.extend_from_slice(&(s.len() as u32).to_le_bytes());
            d.extend_from_slice(s.as_bytes());
        }
        ValueRef::Bytes(b) => {
            d.push(T_BYTES);
            d.extend_from_slice(&(b.len() as u32).to_le_bytes());
            d.extend_from_slice(b);
        }
        ValueRef::Uuid(u) => {
            d.push(T_UUID);
            d.extend_from_slice(&u);
        }
        ValueRef::Time(t) => {
            d.push(T_TIME);
            d.extend_from_slice(&t.to_le_bytes());
        }
        ValueRef::Inet(x) => {
            d.push(T_INET);
            d.extend_from_slice(&[x.v6 as u8, x.bits, x.cidr as u8]);
            d.extend_from_slice(&x.addr);
        }
        ValueRef::Enum(e) => {
            d.push(T_ENUM);
            d.extend_from_slice(&e.ty.serial().to_le_bytes());
            d.extend_from_slice(&e.index.to_le_bytes());
        }
        ValueRef::Interval(x) => {
            d.push(T_INTERVAL);
            d.extend_from_slice(&x.months.to_le_bytes());
            d.extend_from_slice(&x.days.to_le_bytes());
            d.extend_from_slice(&x.micros.to_le_bytes());
        }
    }
}

/// Appends `values` as one row in the buffer's encoding: what [`Rows::encoded_row`] gives
/// and [`decode_row`] reads back (a forked statement's changes travel so).
pub fn encode_row<'a>(values: impl IntoIterator<Item = ValueRef<'a>>, out: &mut Vec<u8>) {
    for v in values {
        encode_value(out, v);
    }
}

/// The values of a row in the buffer's encoding, checked first (`None` unless it is exactly
/// `ncols` well-formed values).
pub fn decode_row(mut bytes: &[u8], ncols: usize) -> Option<Vec<Value>> {
    if !well_formed(bytes, ncols) {
        return None;
    }
    let mut out = Vec::with_capacity(ncols);
    while !bytes.is_empty() {
        let (v, n) = decode(bytes);
        out.push(v.to_owned());
        bytes = &bytes[n..];
    }
    Some(out)
}

/// Whether `d` is exactly `ncols` values in the buffer's encoding ([`decode`] reads them
/// without checks).
fn well_formed(mut d: &[u8], ncols: usize) -> bool {
    for _ in 0..ncols {
        let Some((&tag, p)) = d.split_first() else {
            return false;
        };
        let len = match tag {
            T_NULL => 0,
            T_BOOL => 1,
            T_DATE => 4,
            T_UUID | T_INTERVAL => 16,
            T_INT | T_DOUBLE | T_TIMESTAMP | T_TIMESTAMPTZ | T_TIME => 8,
            T_INET => match p.get(..19) {
                Some(b) if b[0] <= 1 && b[2] <= 1 && b[1] <= if b[0] == 1 { 128 } else { 32 } => 19,
                _ => return false,
            },
            T_ENUM => match p.get(..4) {
                Some(b) if EnumType::by_serial(u32::from_le_bytes(b.try_into().expect("4 bytes"))).is_some() => 8,
                _ => return false,
            },
            T_DECIMAL => match p.get(..16) {
                Some(b) if NumericRef::from_small_bytes(b.try_into().expect("16 bytes")).is_some() => 16,
                _ => return false,
            },
            T_TEXT | T_BYTES | T_NUMERIC => {
                let Some(n) = p.get(..4) else { return false };
                let n = u32::from_le_bytes(n.try_into().expect("4 bytes")) as usize;
                let ok = |body: &[u8]| match tag {
                    T_TEXT => std::str::from_utf8(body).is_ok(),
                    T_NUMERIC => NumericRef::from_encoded(body).is_some_and(|v| v.small().is_none()),
                    _ => true,
                };
                match p.get(4..).and_then(|b| b.get(..n)) {
                    Some(body) if ok(body) => 4 + n,
                    _ => return false,
                }
            }
            _ => return false,
        };
        match p.get(len..) {
            Some(rest) => d = rest,
            None => return false,
        }
    }
    d.is_empty()
}

fn decode(d: &[u8]) -> (ValueRef<'_>, usize) {
    let p = &d[1..];
    match d[0] {
        T_BOOL => (ValueRef::Bool(p[0] != 0), 2),
        T_INT => (ValueRef::Int(i64::from_le_bytes(p[..8].try_into().unwrap())), 9),
        T_DOUBLE => (ValueRef::Double(f64::from_le_bytes(p[..8].try_into().unwrap())), 9),
        T_DECIMAL => (
            NumericRef::from_small_bytes(p[..16].try_into().unwrap()).map_or(ValueRef::Null, ValueRef::Decimal),
            17,
        ),
        T_NUMERIC => {
            let len = u32::from_le_bytes(p[..4].try_into().unwrap()) as usize;
            // Written by `push` from a value's encoding (or checked by `well_formed`).
            (
                NumericRef::from_encoded(&p[4..4 + len]).map_or(ValueRef::Null, ValueRef::Decimal),
                5 + len,
            )
        }
        T_TIMESTAMP => (ValueRef::Timestamp(i64::from_le_bytes(p[..8].try_into().unwrap())), 9),
        T_TIMESTAMPTZ => (ValueRef::TimestampTz(i64::from_le_bytes(p[..8].try_into().unwrap())), 9),
        T_DATE => (ValueRef::Date(i32::from_le_bytes(p[..4].try_into().unwrap())), 5),
        T_UUID => (ValueRef::Uuid(p[..16].try_into().unwrap()), 17),
        T_TIME => (ValueRef::Time(i64::from_le_bytes(p[..8].try_into().unwrap())), 9),
        T_INET => (
            ValueRef::Inet(permafrost_types::Inet {
                v6: p[0] != 0,
                bits: p[1],
                cidr: p[2] != 0,
                addr: p[3..19].try_into().unwrap(),
            }),
            20,
        ),
        T_ENUM => (
            EnumType::by_serial(u32::from_le_bytes(p[..4].try_into().unwrap())).map_or(ValueRef::Null, |ty| {
                ValueRef::Enum(permafrost_types::EnumValue {
                    ty,
                    index: u32::from_le_bytes(p[4..8].try_into().unwrap()),
                })
            }),
            9,
        ),
        T_INTERVAL => (
            ValueRef::Interval(permafrost_types::Interval {
                months: i32::from_le_bytes(p[..4].try_into().unwrap()),
                days: i32::from_le_bytes(p[4..8].try_into().unwrap()),
                micros: i64::from_le_bytes(p[8..16].try_into().unwrap()),
            }),
            17,
        ),
        T_TEXT | T_BYTES => {
            let len = u32::from_le_bytes(p[..4].try_into().unwrap()) as usize;
            let body = &p[4..4 + len];
            let v = if d[0] == T_TEXT {
                // SAFETY: `push` writes text values from a `&str`.
                ValueRef::Text(unsafe { std::str::from_utf8_unchecked(body) })
            } else {
                ValueRef::Bytes(body)
            };
            (v, 5 + len)
        }
        _ => (ValueRef::Null, 1),
    }
}

impl fmt::Debug for Rows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        f.debug_struct("Rows")
            .field("columns", &names)
            .field("rows", &self.to_values())
            .field("affected", &self.affected)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_in_parts_is_the_digest_of_the_whole() {
        let cols: Arc<[ColumnInfo]> = Arc::from(vec![ColumnInfo {
            name: "k".into(),
            ty: None,
        }]);
        let part = |ks: &[i64]| {
            let mut r = Rows::empty(cols.clone());
            for k in ks {
                r.push_row([ValueRef::Int(*k)]);
            }
            r
        };
        let whole = part(&[1, 2, 3, 4, 5]).digest();
        let mut d = Digest::default();
        for p in [part(&[4, 1]), part(&[]), part(&[5, 3, 2])] {
            d.add(&p);
        }
        assert_eq!(d.finish(), whole, "the rows in another order and in parts");
        d.add(&part(&[6]));
        assert_ne!(d.finish(), whole, "one row more");
        let mut short = Digest::default();
        short.add(&part(&[1, 2, 3, 4]));
        assert_ne!(short.finish(), whole, "one row less");
    }

    #[test]
    fn values_round_trip() {
        let cols: Arc<[ColumnInfo]> = (0..11)
            .map(|i| ColumnInfo {
                name: format!("c{i}"),
                ty: None,
            })
            .collect();
        let mut r = Rows::empty(cols);
        let vals = vec![
            Value::Null,
            Value::Bool(true),
            Value::Int(-3),
            Value::Double(1.5),
            Value::Decimal(permafrost_types::Numeric::new(314, 2)),
            Value::Decimal(format!("{}.5", "7".repeat(60)).parse().unwrap()),
            Value::Timestamp(99),
            Value::TimestampTz(-7),
            Value::Date(-2),
            Value::text("héllo"),
            Value::bytes(vec![0u8, 1, 2]),
        ];
        r.push_row(vals.iter().map(Value::as_ref));
        r.push_row(vals.iter().rev().map(Value::as_ref));
        assert_eq!(r.len(), 2);
        assert_eq!(r.to_values()[0], vals);
        // Equality groups a date with its midnight's timestamp: check the kinds too.
        assert_eq!(
            format!("{:?}", r.to_values()[1]),
            format!("{:?}", vals.iter().rev().collect::<Vec<_>>())
        );
        assert_eq!(r.row(1).get_str(1), Some("héllo"));
        r.pop_row();
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn encoded_rows_are_checked_before_they_are_taken() {
        let cols: Arc<[ColumnInfo]> = (0..4)
            .map(|i| ColumnInfo {
                name: format!("c{i}"),
                ty: None,
            })
            .collect();
        let mut r = Rows::empty(cols.clone());
        let big: permafrost_types::Numeric = format!("-{}.25", "3".repeat(40)).parse().unwrap();
        r.push_row([
            ValueRef::Int(7),
            ValueRef::Text("héllo"),
            ValueRef::Decimal(permafrost_types::Numeric::new(-314, 2).as_ref()),
            ValueRef::Decimal(big.as_ref()),
        ]);
        let good = r.encoded_row(0).to_vec();
        // The same bytes as `encode_row` writes, and `decode_row` reads them back.
        let mut direct = Vec::new();
        encode_row(r.row(0).values(), &mut direct);
        assert_eq!(direct, good);
        assert_eq!(decode_row(&good, 4), Some(r.to_values().remove(0)));
        assert_eq!(decode_row(&good, 3), None);
        assert_eq!(decode_row(&good[..good.len() - 1], 4), None);
        let mut copy = Rows::empty(cols);
        assert!(copy.push_encoded_row(&good));
        assert_eq!(copy.to_values(), r.to_values());
        // Every truncation, every extension and every single-byte change that breaks the
        // encoding is refused without a panic, and leaves the rows as they were.
        for n in 0..good.len() {
            assert!(!copy.push_encoded_row(&good[..n]), "truncated to {n}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(!copy.push_encoded_row(&longer));
        for i in 0..good.len() {
            for b in [0u8, 0x80, 0xff, 9] {
                let mut bad = good.clone();
                bad[i] = b;
                let _ = copy.push_encoded_row(&bad);
            }
        }
        let mut bad_utf8 = good.clone();
        let at = good.iter().position(|&b| b == b'h').unwrap();
        bad_utf8[at + 1] = 0xff;
        assert!(!copy.push_encoded_row(&bad_utf8));
        for row in copy.iter() {
            assert_eq!(row.len(), 4);
            let _ = row.values().count();
        }
    }
}
