//! The body of a command log record: what a committed transaction was asked to do
//! (docs/format.md, "Command log, version 4", "Record body").
//!
//! ```text
//! u8    request kind: 1 procedure call, 2 ad hoc statement, 3 schema change
//! i64   the transaction's timestamp (µs since the epoch)
//! u64   the transaction's random seed
//! u32   partition count n, then n × u32 partition ids, strictly ascending
//! kind 1: string procedure name, u32 parameter count, the parameters (values)
//! kind 2: string SQL text,       u32 parameter count, the parameters (values)
//! kind 3: string SQL text
//! kind 4, 5: as kinds 1 and 2, then u32 count n and n × (u32 table id, i64 value): the
//!         sequence values the transaction took, in order
//! kinds 1, 2, 4, 5 may end with: u8 1, string: the session TimeZone the statements ran
//!         in, when it was not UTC
//! string: u32 byte length, UTF-8 bytes
//! value:  u8 tag, then 0 null | 1 bool: u8 0/1 | 2 int: i64 | 3 double: u64 IEEE bits |
//!         4 numeric: 16 bytes (rust_decimal serialize) | 5 timestamp: i64 µs |
//!         6 text: string | 7 bytea: u32 length, bytes
//! ```
//!
//! Integers are little-endian. [`decode_record`] checks every byte and never panics.

use std::sync::Arc;

use permafrost_types::{NumericRef, Value};

use crate::codec::{DecodeError, Decoder};

/// What a committed transaction was asked to do (never row images).
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Call {
        procedure: String,
        params: Vec<Value>,
    },
    AdHoc {
        sql: String,
        params: Vec<Value>,
    },
    /// A schema change (CREATE/DROP TABLE/INDEX, CREATE/DROP PROCEDURE) as its SQL text.
    Schema {
        sql: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct TxnRecord {
    /// The partitions the transaction ran at, ascending (one for a single-partition one).
    pub partitions: Vec<u32>,
    /// The transaction's timestamp (µs since the epoch) and random seed, as the procedure
    /// saw them.
    pub now: i64,
    pub seed: u64,
    pub request: Request,
    /// The sequence values the transaction took (table id, value), in order: `Some` for a
    /// record of kind 4 or 5, which replay gives them back from; `None` for kinds 1 and 2
    /// (the transaction took none, or the record is from before records kept them).
    pub draws: Option<Vec<(u32, i64)>>,
    /// The session TimeZone the transaction's statements ran in (its name, as SHOW
    /// TimeZone prints it), when it was not UTC: replay runs them in it, so that text read
    /// as a `timestamptz`, and a moment's day, gives what it gave then.
    pub zone: Option<String>,
}

const KIND_CALL: u8 = 1;
const KIND_AD_HOC: u8 = 2;
const KIND_SCHEMA: u8 = 3;
/// A procedure call that took sequence values: kind 1, then the values.
const KIND_CALL_DRAWN: u8 = 4;
/// An ad hoc statement that took sequence values: kind 2, then the values.
const KIND_AD_HOC_DRAWN: u8 = 5;

const TAG_NULL: u8 = 0;
const TAG_BOOL: u8 = 1;
const TAG_INT: u8 = 2;
const TAG_DOUBLE: u8 = 3;
const TAG_DECIMAL: u8 = 4;
const TAG_TIMESTAMP: u8 = 5;
const TAG_TEXT: u8 = 6;
const TAG_BYTES: u8 = 7;
/// A NUMERIC that does not fit tag 4's 16 bytes, in the numeric encoding.
const TAG_NUMERIC: u8 = 8;
const TAG_TIMESTAMPTZ: u8 = 9;
const TAG_DATE: u8 = 10;
const TAG_UUID: u8 = 11;
const TAG_INTERVAL: u8 = 12;
const TAG_TIME: u8 = 13;

/// The tag of a call record's optional last part: the session TimeZone.
const PART_ZONE: u8 = 1;

/// Appends the body of `rec` to `out` (no framing: the writer adds length, checksum and
/// LSN). Partitions are written sorted and without duplicates whatever their order in
/// `rec`.
pub fn encode_record(rec: &TxnRecord, out: &mut Vec<u8>) {
    let drawn = rec.draws.as_deref().unwrap_or_default();
    let kind = match rec.request {
        Request::Call { .. } => call_kind(false, drawn),
        Request::AdHoc { .. } => call_kind(true, drawn),
        Request::Schema { .. } => KIND_SCHEMA,
    };
    out.push(kind);
    out.extend_from_slice(&rec.now.to_le_bytes());
    out.extend_from_slice(&rec.seed.to_le_bytes());
    if rec.partitions.windows(2).all(|w| w[0] < w[1]) {
        put_partitions(&rec.partitions, out);
    } else {
        let mut p = rec.partitions.clone();
        p.sort_unstable();
        p.dedup();
        put_partitions(&p, out);
    }
    match &rec.request {
        Request::Call {
            procedure: text,
            params,
        }
        | Request::AdHoc { sql: text, params } => {
            put_call(text, params, out);
            put_draws(drawn, out);
            put_zone(rec.zone.as_deref(), out);
        }
        Request::Schema { sql } => put_bytes(sql.as_bytes(), out),
    }
}

/// A call record's last part: the session TimeZone, when it was not UTC (nothing then).
fn put_zone(zone: Option<&str>, out: &mut Vec<u8>) {
    if let Some(z) = zone {
        out.push(PART_ZONE);
        put_bytes(z.as_bytes(), out);
    }
}

/// The kind of a call record (an ad hoc statement's if `ad_hoc`) that took `draws`.
fn call_kind(ad_hoc: bool, draws: &[(u32, i64)]) -> u8 {
    match (ad_hoc, draws.is_empty()) {
        (false, true) => KIND_CALL,
        (true, true) => KIND_AD_HOC,
        (false, false) => KIND_CALL_DRAWN,
        (true, false) => KIND_AD_HOC_DRAWN,
    }
}

/// The sequence values of a kind 4 or 5 record (nothing for none).
fn put_draws(draws: &[(u32, i64)], out: &mut Vec<u8>) {
    if draws.is_empty() {
        return;
    }
    out.extend_from_slice(&len32(draws.len()).to_le_bytes());
    for (t, v) in draws {
        out.extend_from_slice(&t.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn put_call(text: &str, params: &[Value], out: &mut Vec<u8>) {
    put_bytes(text.as_bytes(), out);
    out.extend_from_slice(&len32(params.len()).to_le_bytes());
    for v in params {
        put_value(v, out);
    }
}

/// Appends the body of a call record (a procedure, or an ad hoc statement if `ad_hoc`)
/// from borrowed parts: the same bytes [`encode_record`] writes for the [`TxnRecord`] of
/// [`Request::Call`] or [`Request::AdHoc`], without building one (the commit path).
/// `partitions` must be ascending without duplicates.
#[allow(clippy::too_many_arguments)]
pub fn encode_call(
    ad_hoc: bool,
    text: &str,
    params: &[Value],
    partitions: &[u32],
    (now, seed, zone): (i64, u64, Option<&str>),
    draws: &[(u32, i64)],
    out: &mut Vec<u8>,
) {
    debug_assert!(partitions.windows(2).all(|w| w[0] < w[1]));
    let len = 25 + 4 * partitions.len() + 8 + text.len() + params.iter().map(value_len).sum::<usize>();
    if len > EXACT_RESERVE {
        // A large record (a COPY's rows) is written into room of its own size: growing
        // into it by doubling would take up to twice its size, and copy it as often.
        out.reserve_exact(len);
    }
    out.push(call_kind(ad_hoc, draws));
    out.extend_from_slice(&now.to_le_bytes());
    out.extend_from_slice(&seed.to_le_bytes());
    put_partitions(partitions, out);
    put_call(text, params, out);
    put_draws(draws, out);
    put_zone(zone, out);
}

/// A call record that is never held encoded: the log writer encodes it piece by piece as
/// it writes it ([`crate::Chunk::push_call`]). Its parameters are shared with the
/// transaction that ran it, so a COPY batch (whose rows are its parameters) is not held a
/// second time as its record. Its bytes are those [`encode_call`] writes.
#[derive(Debug)]
pub struct StreamedCall {
    /// The body before the parameters' values: kind, timestamp, seed, partitions, text
    /// and parameter count.
    head: Vec<u8>,
    params: Arc<[Value]>,
    /// The body after the parameters' values: the sequence values (kinds 4 and 5) and
    /// the session TimeZone.
    tail: Vec<u8>,
    /// The body's length.
    len: usize,
}

impl StreamedCall {
    /// The record of a call (a procedure, or an ad hoc statement if `ad_hoc`); as
    /// [`encode_call`]: `partitions` ascending without duplicates.
    pub fn new(
        ad_hoc: bool,
        text: &str,
        params: Arc<[Value]>,
        partitions: &[u32],
        (now, seed, zone): (i64, u64, Option<&str>),
        draws: &[(u32, i64)],
    ) -> Self {
        debug_assert!(partitions.windows(2).all(|w| w[0] < w[1]));
        let mut head = Vec::with_capacity(29 + 4 * partitions.len() + text.len());
        head.push(call_kind(ad_hoc, draws));
        head.extend_from_slice(&now.to_le_bytes());
        head.extend_from_slice(&seed.to_le_bytes());
        put_partitions(partitions, &mut head);
        put_bytes(text.as_bytes(), &mut head);
        head.extend_from_slice(&len32(params.len()).to_le_bytes());
        let mut tail = Vec::new();
        put_draws(draws, &mut tail);
        put_zone(zone, &mut tail);
        let len = head.len() + params.iter().map(exact_value_len).sum::<usize>() + tail.len();
        StreamedCall {
            head,
            params,
            tail,
            len,
        }
    }

    /// The body's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Calls `f` with the body's bytes, in order, in pieces of about `piece` bytes (a
    /// value longer than that is in one piece); stops at `f`'s first error.
    pub fn for_each_piece<E>(&self, piece: usize, mut f: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        f(&self.head)?;
        let mut buf = Vec::with_capacity(piece.min(1 << 20) + 64);
        for v in self.params.iter() {
            put_value(v, &mut buf);
            if buf.len() >= piece {
                f(&buf)?;
                buf.clear();
            }
        }
        buf.extend_from_slice(&self.tail);
        if buf.is_empty() { Ok(()) } else { f(&buf) }
    }

    /// Appends the body to `out` (a small one goes into a chunk like any other).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.reserve(self.len);
        out.extend_from_slice(&self.head);
        for v in self.params.iter() {
            put_value(v, out);
        }
        out.extend_from_slice(&self.tail);
    }
}

/// The bytes [`put_value`] writes for `v`, exactly.
fn exact_value_len(v: &Value) -> usize {
    match v {
        Value::Decimal(_) => {
            let mut b = Vec::new();
            put_value(v, &mut b);
            b.len()
        }
        v => value_len(v),
    }
}

/// Records longer than this get room of their exact size before they are encoded.
const EXACT_RESERVE: usize = 1 << 20;

/// The bytes [`put_value`] writes for `v` (for a numeric not of the small form, about).
fn value_len(v: &Value) -> usize {
    match v {
        Value::Null => 1,
        Value::Bool(_) => 2,
        Value::Int(_) | Value::Double(_) | Value::Timestamp(_) | Value::TimestampTz(_) => 9,
        Value::Date(_) => 5,
        Value::Decimal(_) => 21,
        Value::Text(s) => 5 + s.len(),
        Value::Bytes(b) => 5 + b.len(),
        Value::Uuid(_) => 17,
        Value::Interval(_) => 17,
        Value::Time(_) => 9,
        Value::Enum(e) => 5 + e.label().len(),
        // (Its text: at most an IPv6 address's 39 characters and `/128`.)
        Value::Inet(_) => 5 + 43,
    }
}

fn len32(n: usize) -> u32 {
    // A body longer than 4GiB cannot be framed; the writer refuses it (CommandLog::append).
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn put_partitions(p: &[u32], out: &mut Vec<u8>) {
    out.extend_from_slice(&len32(p.len()).to_le_bytes());
    for id in p {
        out.extend_from_slice(&id.to_le_bytes());
    }
}

fn put_bytes(b: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&len32(b.len()).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(TAG_NULL),
        Value::Bool(b) => out.extend_from_slice(&[TAG_BOOL, *b as u8]),
        Value::Int(i) => {
            out.push(TAG_INT);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::Double(d) => {
            out.push(TAG_DOUBLE);
            out.extend_from_slice(&d.to_bits().to_le_bytes());
        }
        Value::Decimal(d) => match d.as_ref().small_bytes() {
            Some(b) => {
                out.push(TAG_DECIMAL);
                out.extend_from_slice(&b);
            }
            None => {
                out.push(TAG_NUMERIC);
                let mut enc = Vec::new();
                d.as_ref().encode(&mut enc);
                put_bytes(&enc, out);
            }
        },
        Value::Timestamp(t) => {
            out.push(TAG_TIMESTAMP);
            out.extend_from_slice(&t.to_le_bytes());
        }
        Value::TimestampTz(t) => {
            out.push(TAG_TIMESTAMPTZ);
            out.extend_from_slice(&t.to_le_bytes());
        }
        Value::Date(d) => {
            out.push(TAG_DATE);
            out.extend_from_slice(&d.to_le_bytes());
        }
        Value::Text(s) => {
            out.push(TAG_TEXT);
            put_bytes(s.as_bytes(), out);
        }
        Value::Bytes(b) => {
            out.push(TAG_BYTES);
            put_bytes(b, out);
        }
        Value::Uuid(u) => {
            out.push(TAG_UUID);
            out.extend_from_slice(u);
        }
        Value::Time(t) => {
            out.push(TAG_TIME);
            out.extend_from_slice(&t.to_le_bytes());
        }
        // Its label, as text: the statement it is given to reads it as its type.
        Value::Enum(e) => {
            out.push(TAG_TEXT);
            put_bytes(e.label().as_bytes(), out);
        }
        // Likewise an address: its text, which reads back as inet or cidr.
        Value::Inet(x) => {
            out.push(TAG_TEXT);
            put_bytes(x.to_string().as_bytes(), out);
        }
        Value::Interval(x) => {
            out.push(TAG_INTERVAL);
            out.extend_from_slice(&x.months.to_le_bytes());
            out.extend_from_slice(&x.days.to_le_bytes());
            out.extend_from_slice(&x.micros.to_le_bytes());
        }
    }
}

/// Reads fields off a body, failing (never panicking) when bytes run out.
/// Reads a value written by [`put_value`] (its tag, then its payload).
fn value(c: &mut Decoder<'_>) -> Result<Value, DecodeError> {
    let at = c.pos();
    Ok(match c.u8("value tag")? {
        TAG_NULL => Value::Null,
        TAG_BOOL => match c.u8("boolean")? {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            b => {
                return Err(DecodeError::Invalid {
                    what: "boolean",
                    at: at + 1,
                    problem: format!("is {b}, not 0 or 1"),
                });
            }
        },
        TAG_INT => Value::Int(c.i64("integer")?),
        TAG_DOUBLE => Value::Double(f64::from_bits(c.u64("double")?)),
        TAG_DECIMAL => {
            let b = c.bytes16("numeric")?;
            let n = NumericRef::from_small_bytes(b).ok_or_else(|| DecodeError::Invalid {
                what: "numeric",
                at: at + 1,
                problem: format!("has bad flags {:#010x}", u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            })?;
            Value::Decimal(n.to_owned())
        }
        TAG_NUMERIC => {
            let b = c.bytes("numeric")?;
            let n = NumericRef::from_encoded(b).ok_or_else(|| DecodeError::Invalid {
                what: "numeric",
                at: at + 1,
                problem: "is not a numeric encoding".into(),
            })?;
            Value::Decimal(n.to_owned())
        }
        TAG_TIMESTAMP => Value::Timestamp(c.i64("timestamp")?),
        TAG_TIMESTAMPTZ => Value::TimestampTz(c.i64("timestamp with time zone")?),
        TAG_DATE => Value::Date(c.u32("date")? as i32),
        TAG_TEXT => Value::Text(c.string("text")?.into_boxed_str()),
        TAG_BYTES => Value::Bytes(c.bytes("bytea")?.into()),
        TAG_UUID => Value::Uuid(c.bytes16("uuid")?),
        TAG_TIME => Value::Time(c.i64("time")?),
        TAG_INTERVAL => {
            let b = c.bytes16("interval")?;
            Value::Interval(permafrost_types::Interval {
                months: i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                days: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                micros: i64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
            })
        }
        t => {
            return Err(DecodeError::UnknownTag {
                what: "value tag",
                value: t as u64,
                at,
            });
        }
    })
}

fn values(c: &mut Decoder<'_>) -> Result<Vec<Value>, DecodeError> {
    let n = c.count(1, "parameter count")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(value(c)?);
    }
    Ok(out)
}

/// Decodes a record body written by [`encode_record`]. Any malformation (unknown kind or
/// tag, a length past the end, bad UTF-8, a boolean other than 0/1, a numeric with stray
/// flag bits or a scale above 28, partitions not strictly ascending, trailing bytes) is an
/// error describing it; bad bytes never panic.
pub fn decode_record(body: &[u8]) -> Result<TxnRecord, DecodeError> {
    let mut c = Decoder::new(body);
    let kind = c.u8("request kind")?;
    let now = c.i64("timestamp")?;
    let seed = c.u64("seed")?;
    let n = c.count(4, "partition count")?;
    let mut partitions = Vec::with_capacity(n);
    for _ in 0..n {
        let at = c.pos();
        let p = c.u32("partition")?;
        if partitions.last().is_some_and(|&last| last >= p) {
            return Err(DecodeError::Invalid {
                what: "partition",
                at,
                problem: "is not above the one before it (partitions must ascend)".into(),
            });
        }
        partitions.push(p);
    }
    let request = match kind {
        KIND_CALL | KIND_CALL_DRAWN => Request::Call {
            procedure: c.string("procedure name")?,
            params: values(&mut c)?,
        },
        KIND_AD_HOC | KIND_AD_HOC_DRAWN => Request::AdHoc {
            sql: c.string("SQL text")?,
            params: values(&mut c)?,
        },
        KIND_SCHEMA => Request::Schema {
            sql: c.string("SQL text")?,
        },
        k => {
            return Err(DecodeError::UnknownTag {
                what: "request kind",
                value: k as u64,
                at: 0,
            });
        }
    };
    let draws = if matches!(kind, KIND_CALL_DRAWN | KIND_AD_HOC_DRAWN) {
        let n = c.count(12, "sequence value count")?;
        let mut d = Vec::with_capacity(n);
        for _ in 0..n {
            d.push((c.u32("sequence table")?, c.i64("sequence value")?));
        }
        Some(d)
    } else {
        None
    };
    let zone = if kind != KIND_SCHEMA && !c.is_done() {
        let at = c.pos();
        match c.u8("record part")? {
            PART_ZONE => Some(c.string("time zone")?),
            p => {
                return Err(DecodeError::UnknownTag {
                    what: "record part",
                    value: p as u64,
                    at,
                });
            }
        }
    } else {
        None
    };
    c.finish()?;
    Ok(TxnRecord {
        partitions,
        now,
        seed,
        request,
        draws,
        zone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TxnRecord {
        TxnRecord {
            zone: None,
            draws: None,
            partitions: vec![0, 3],
            now: 1_700_000_000_000_000,
            seed: 42,
            request: Request::Call {
                procedure: "vote".into(),
                params: vec![
                    Value::Null,
                    Value::Bool(true),
                    Value::Int(-7),
                    Value::Double(1.5),
                    Value::Decimal(permafrost_types::Numeric::new(-12345, 2)),
                    Value::Timestamp(5),
                    Value::TimestampTz(-6),
                    Value::Date(-3),
                    Value::text("héllo"),
                    Value::bytes(vec![0u8, 255]),
                ],
            },
        }
    }

    #[test]
    fn round_trip_and_exact_layout() {
        let rec = sample();
        let mut out = Vec::new();
        encode_record(&rec, &mut out);
        assert_eq!(decode_record(&out).unwrap(), rec);
        // Equality takes a date for its midnight's timestamp: the kinds must survive too.
        assert_eq!(format!("{:?}", decode_record(&out).unwrap()), format!("{rec:?}"));
        assert_eq!(out[0], KIND_CALL);
        assert_eq!(&out[1..9], &1_700_000_000_000_000i64.to_le_bytes());
        assert_eq!(&out[9..17], &42u64.to_le_bytes());
        assert_eq!(&out[17..29], &[2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0]);
        assert_eq!(&out[29..37], &[4, 0, 0, 0, b'v', b'o', b't', b'e']);
        assert_eq!(&out[37..41], &[10, 0, 0, 0]);
        assert_eq!(&out[41..44], &[TAG_NULL, TAG_BOOL, 1]);
        // The last value: bytea of two bytes.
        assert_eq!(&out[out.len() - 7..], &[TAG_BYTES, 2, 0, 0, 0, 0, 255]);
    }

    #[test]
    fn encode_call_writes_what_encode_record_writes() {
        let rec = sample();
        let Request::Call { procedure, params } = &rec.request else {
            unreachable!()
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encode_record(&rec, &mut a);
        encode_call(
            false,
            procedure,
            params,
            &rec.partitions,
            (rec.now, rec.seed, None),
            &[],
            &mut b,
        );
        assert_eq!(a, b);
        let adhoc = TxnRecord {
            zone: Some("America/New_York".into()),
            draws: Some(vec![(2, 40), (2, 41)]),
            request: Request::AdHoc {
                sql: "UPDATE t SET v = $1".into(),
                params: params.clone(),
            },
            ..rec.clone()
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encode_record(&adhoc, &mut a);
        encode_call(
            true,
            "UPDATE t SET v = $1",
            params,
            &rec.partitions,
            (rec.now, rec.seed, Some("America/New_York")),
            &[(2, 40), (2, 41)],
            &mut b,
        );
        assert_eq!(a, b);
        assert_eq!(decode_record(&b).unwrap(), adhoc);
    }

    #[test]
    fn sequence_values_follow_the_parameters_in_kinds_4_and_5() {
        let mut rec = sample();
        let mut plain = Vec::new();
        encode_record(&rec, &mut plain);
        rec.draws = Some(vec![(7, -1), (9, i64::MAX)]);
        let mut out = Vec::new();
        encode_record(&rec, &mut out);
        assert_eq!(out[0], KIND_CALL_DRAWN);
        assert_eq!(&out[1..plain.len()], &plain[1..]);
        let tail = &out[plain.len()..];
        assert_eq!(&tail[..8], &[2, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(&tail[8..16], &(-1i64).to_le_bytes());
        assert_eq!(tail.len(), 4 + 2 * 12);
        assert_eq!(decode_record(&out).unwrap(), rec);
        // Kind 1 with values after it has trailing bytes; kind 4 without them is short.
        let mut wrong = out.clone();
        wrong[0] = KIND_CALL;
        assert!(decode_record(&wrong).is_err());
        let mut short = plain.clone();
        short[0] = KIND_CALL_DRAWN;
        assert!(decode_record(&short).is_err());
        for n in plain.len()..out.len() {
            assert!(decode_record(&out[..n]).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn partitions_are_written_sorted() {
        let mut rec = sample();
        rec.partitions = vec![5, 1, 5, 2];
        let mut out = Vec::new();
        encode_record(&rec, &mut out);
        assert_eq!(decode_record(&out).unwrap().partitions, vec![1, 2, 5]);
    }

    #[test]
    fn malformed_bodies_are_errors() {
        let mut good = Vec::new();
        encode_record(&sample(), &mut good);
        // Every prefix is an error, never a panic.
        for n in 0..good.len() {
            assert!(decode_record(&good[..n]).is_err(), "prefix {n}");
        }
        // After the last field only a known part may follow (the time zone), and nothing
        // after it.
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(matches!(
            decode_record(&trailing),
            Err(DecodeError::UnknownTag {
                what: "record part",
                value: 0,
                ..
            })
        ));
        let mut zoned = good.clone();
        put_zone(Some("Asia/Kolkata"), &mut zoned);
        assert_eq!(decode_record(&zoned).unwrap().zone.as_deref(), Some("Asia/Kolkata"));
        zoned.push(0);
        assert!(matches!(
            decode_record(&zoned),
            Err(DecodeError::Trailing { left: 1, .. })
        ));
        let mut kind = good.clone();
        kind[0] = 9;
        assert!(matches!(
            decode_record(&kind),
            Err(DecodeError::UnknownTag {
                what: "request kind",
                value: 9,
                ..
            })
        ));
        let mut desc = good.clone();
        desc[21..25].copy_from_slice(&7u32.to_le_bytes());
        assert!(matches!(
            decode_record(&desc),
            Err(DecodeError::Invalid { what: "partition", .. })
        ));
        let mut boolean = good.clone();
        boolean[43] = 2;
        assert!(matches!(
            decode_record(&boolean),
            Err(DecodeError::Invalid { what: "boolean", .. })
        ));
        let mut count = good.clone();
        count[17..21].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            decode_record(&count),
            Err(DecodeError::CountTooLarge {
                what: "partition count",
                ..
            })
        ));
        // A numeric with a scale of 29.
        let mut rec = sample();
        rec.request = Request::AdHoc {
            sql: "SELECT ?".into(),
            params: vec![Value::Decimal(permafrost_types::Numeric::new(1, 0))],
        };
        let mut dec = Vec::new();
        encode_record(&rec, &mut dec);
        let flags_at = dec.len() - 16;
        dec[flags_at + 2] = 29;
        assert!(matches!(
            decode_record(&dec),
            Err(DecodeError::Invalid { what: "numeric", .. })
        ));
        dec[flags_at + 2] = 0;
        dec[flags_at] = 1;
        assert!(matches!(
            decode_record(&dec),
            Err(DecodeError::Invalid { what: "numeric", .. })
        ));
        // Bad UTF-8 in a schema change.
        let mut rec = sample();
        rec.request = Request::Schema { sql: "ab".into() };
        let mut s = Vec::new();
        encode_record(&rec, &mut s);
        let last = s.len() - 1;
        s[last] = 0xFF;
        assert!(matches!(decode_record(&s), Err(DecodeError::NotUtf8 { .. })));
    }
}
