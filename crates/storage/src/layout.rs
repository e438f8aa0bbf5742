//! Tuple layout: where each column lives inside a slot, and how values are encoded there.
//!
//! ```text
//! [header: 9 bytes][null bitmap: ceil(ncols / 8) bytes][column 0][column 1]...
//! ```
//!
//! Fixed-width columns are stored little-endian at fixed offsets (SMALLINT 2 bytes, INTEGER 4,
//! BIGINT 8, DOUBLE PRECISION 8, TIMESTAMP 8, BOOLEAN 1, NUMERIC(p, s) with p up to 28: 16 in
//! rust_decimal's serialized form). A NULL column has its bit set in the bitmap; its bytes
//! are unused.
//!
//! An unconstrained NUMERIC column has the same 16 bytes, which hold a value of the small
//! form as above; a larger value goes out of line: the first word is then [`SPILLED`]
//! (a flags word rust_decimal never writes), followed by a u32 length and a u64
//! [`VarHandle`] of its encoding.
//!
//! A variable-length column (VARCHAR, TEXT, BYTEA, and NUMERIC(p, s) with p above 28 in the
//! numeric encoding of `permafrost_types::numeric`) reserves `2 + max(cap, 12)` bytes, where
//! `cap` is the declared length of a `VARCHAR(n)` with `n <= 256` and 0 otherwise. The first
//! two bytes say where the value is:
//!
//! * `0x0000..=0x7FFF`: the value is inline, this many bytes follow;
//! * `0xFFFF`: the value is out of line: a u32 length and a u64 [`VarHandle`] follow.
//!
//! So short values never leave the slot, and declared-short strings (the common OLTP case,
//! e.g. YCSB's 100-byte fields) are read with no pointer chasing.

use crate::error::{Result, StorageError};
use crate::heap::HEADER_SIZE;
use crate::schema::TableSchema;
use crate::varheap::{VarHandle, VarHeap};
use permafrost_types::numeric::MAX_SMALL_PRECISION;
use permafrost_types::{DataType, EnumRef, NumericRef, ValueError, ValueRef};

/// Declared VARCHAR lengths up to this many bytes are reserved inline.
pub const INLINE_VARCHAR_MAX: u32 = 256;
/// Every variable-length column can hold this many bytes inline (the room an out-of-line
/// reference needs anyway).
const MIN_INLINE: usize = 12;
const OUT_OF_LINE: u16 = 0xFFFF;
/// The first word of an unconstrained NUMERIC column whose value is out of line.
pub const SPILLED: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr {
    I16,
    I32,
    I64,
    F64,
    Decimal,
    Timestamp,
    TimestampTz,
    Date,
    Bool,
    /// `uuid`: its 16 bytes in RFC 4122 order.
    Uuid,
    /// `interval`: 16 bytes, months (i32 LE), days (i32 LE), microseconds (i64 LE).
    Interval,
    /// `time`: 8 bytes, microseconds since midnight (i64 LE).
    Time,
    /// `inet` / `cidr`: 19 bytes, IPv6 (u8 0 or 1), the netmask length (u8), cidr (u8 0
    /// or 1), the 16 address bytes (an IPv4 address in the first 4, the rest 0).
    Inet,
    /// A value of an enum type: 4 bytes, its label's index in the type (u32 LE,
    /// permafrost_types::enum_type).
    Enum(EnumRef),
    Text {
        cap: u16,
    },
    Bytes {
        cap: u16,
    },
    /// `NUMERIC(p, s)` with p above 28: the numeric encoding, variable-length.
    Numeric {
        cap: u16,
    },
    /// Unconstrained `NUMERIC`: 16 bytes, a small value or a spilled big one.
    AnyNumeric,
}

impl Repr {
    fn for_type(ty: &DataType) -> Repr {
        match ty {
            DataType::SmallInt => Repr::I16,
            DataType::Integer => Repr::I32,
            DataType::BigInt => Repr::I64,
            DataType::Double => Repr::F64,
            DataType::Decimal { precision, .. } if *precision > MAX_SMALL_PRECISION => Repr::Numeric {
                // The encoding of a value of that many digits: 3 bytes, then ~0.415 per digit.
                cap: (3 + (*precision as usize * 415).div_ceil(1000)).clamp(MIN_INLINE, INLINE_VARCHAR_MAX as usize)
                    as u16,
            },
            DataType::Decimal { precision: 0, .. } => Repr::AnyNumeric,
            DataType::Decimal { .. } => Repr::Decimal,
            DataType::Timestamp => Repr::Timestamp,
            DataType::TimestampTz => Repr::TimestampTz,
            DataType::Date => Repr::Date,
            DataType::Boolean => Repr::Bool,
            DataType::Varchar(n) => Repr::Text { cap: inline_cap(*n) },
            DataType::Bytea => Repr::Bytes { cap: MIN_INLINE as u16 },
            DataType::Uuid => Repr::Uuid,
            DataType::Interval => Repr::Interval,
            DataType::Time => Repr::Time,
            DataType::Enum(e) => Repr::Enum(*e),
            DataType::Inet | DataType::Cidr => Repr::Inet,
            // A document's text (crate `permafrost_types::json`).
            DataType::Json | DataType::Jsonb | DataType::Array(_) => Repr::Text { cap: MIN_INLINE as u16 },
        }
    }

    fn width(self) -> usize {
        match self {
            Repr::I16 => 2,
            Repr::I32 | Repr::Date | Repr::Enum(_) => 4,
            Repr::I64 | Repr::F64 | Repr::Timestamp | Repr::TimestampTz | Repr::Time => 8,
            Repr::Decimal | Repr::AnyNumeric | Repr::Uuid | Repr::Interval => 16,
            Repr::Bool => 1,
            Repr::Inet => 19,
            Repr::Text { cap } | Repr::Bytes { cap } | Repr::Numeric { cap } => 2 + cap as usize,
        }
    }

    fn is_var(self) -> bool {
        matches!(
            self,
            Repr::Text { .. } | Repr::Bytes { .. } | Repr::Numeric { .. } | Repr::AnyNumeric
        )
    }

    /// Where the length (u32) and the handle (u64) of an out-of-line value sit, from the
    /// column's offset.
    fn spill_offsets(self) -> (usize, usize) {
        match self {
            Repr::AnyNumeric => (4, 8),
            _ => (2, 6),
        }
    }
}

fn inline_cap(declared: Option<u32>) -> u16 {
    match declared {
        Some(n) if n <= INLINE_VARCHAR_MAX => (n as usize).max(MIN_INLINE) as u16,
        _ => MIN_INLINE as u16,
    }
}

#[derive(Debug, Clone, Copy)]
struct ColumnLayout {
    offset: usize,
    repr: Repr,
}

/// The byte layout of one table's tuples.
#[derive(Debug, Clone)]
pub struct TupleLayout {
    slot_size: usize,
    columns: Vec<ColumnLayout>,
    var_columns: Vec<usize>,
}

impl TupleLayout {
    pub fn new(schema: &TableSchema) -> TupleLayout {
        let ncols = schema.columns.len();
        let mut offset = HEADER_SIZE + ncols.div_ceil(8);
        let mut columns = Vec::with_capacity(ncols);
        let mut var_columns = Vec::new();
        for (i, c) in schema.columns.iter().enumerate() {
            let repr = Repr::for_type(&c.ty);
            columns.push(ColumnLayout { offset, repr });
            if repr.is_var() {
                var_columns.push(i);
            }
            offset += repr.width();
        }
        TupleLayout {
            slot_size: offset,
            columns,
            var_columns,
        }
    }

    /// Bytes per slot, header included.
    #[inline]
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    pub fn column_count(&self) -> usize {
        self.columns.len()
    }

    pub fn repr(&self, col: usize) -> Repr {
        self.columns[col].repr
    }

    #[inline]
    pub fn is_null(&self, slot: &[u8], col: usize) -> bool {
        slot[HEADER_SIZE + col / 8] & (1 << (col % 8)) != 0
    }

    #[inline]
    fn set_null(&self, slot: &mut [u8], col: usize, null: bool) {
        let b = &mut slot[HEADER_SIZE + col / 8];
        if null {
            *b |= 1 << (col % 8);
        } else {
            *b &= !(1 << (col % 8));
        }
    }

    /// Reads column `col` of the tuple in `slot`.
    #[inline]
    pub fn read<'a>(&self, slot: &'a [u8], col: usize, var: &'a VarHeap) -> ValueRef<'a> {
        if self.is_null(slot, col) {
            return ValueRef::Null;
        }
        let ColumnLayout { offset: o, repr } = self.columns[col];
        match repr {
            Repr::I16 => ValueRef::Int(i16::from_le_bytes([slot[o], slot[o + 1]]) as i64),
            Repr::I32 => ValueRef::Int(i32::from_le_bytes(slot[o..o + 4].try_into().unwrap()) as i64),
            Repr::I64 => ValueRef::Int(i64::from_le_bytes(slot[o..o + 8].try_into().unwrap())),
            Repr::F64 => ValueRef::Double(f64::from_le_bytes(slot[o..o + 8].try_into().unwrap())),
            Repr::Timestamp => ValueRef::Timestamp(i64::from_le_bytes(slot[o..o + 8].try_into().unwrap())),
            Repr::TimestampTz => ValueRef::TimestampTz(i64::from_le_bytes(slot[o..o + 8].try_into().unwrap())),
            Repr::Date => ValueRef::Date(i32::from_le_bytes(slot[o..o + 4].try_into().unwrap())),
            Repr::Time => ValueRef::Time(i64::from_le_bytes(slot[o..o + 8].try_into().unwrap())),
            Repr::Inet => ValueRef::Inet(permafrost_types::Inet {
                v6: slot[o] != 0,
                bits: slot[o + 1],
                cidr: slot[o + 2] != 0,
                addr: slot[o + 3..o + 19].try_into().unwrap(),
            }),
            Repr::Enum(ty) => ValueRef::Enum(permafrost_types::EnumValue {
                ty,
                index: u32::from_le_bytes(slot[o..o + 4].try_into().unwrap()),
            }),
            Repr::Decimal => ValueRef::Decimal(NumericRef::small_value(rust_decimal::Decimal::deserialize(
                slot[o..o + 16].try_into().unwrap(),
            ))),
            Repr::AnyNumeric => match self.spilled(slot, col) {
                Some((len, h)) => {
                    NumericRef::from_encoded(var.get(h, len).unwrap_or(&[])).map_or(ValueRef::Null, ValueRef::Decimal)
                }
                None => ValueRef::Decimal(NumericRef::small_value(rust_decimal::Decimal::deserialize(
                    slot[o..o + 16].try_into().unwrap(),
                ))),
            },
            // Written by `write` from a value's encoding, and checked when restored from
            // disk; a dangling handle (a storage bug) reads as NULL rather than crash.
            Repr::Numeric { .. } => {
                NumericRef::from_encoded(self.var_bytes(slot, o, var)).map_or(ValueRef::Null, ValueRef::Decimal)
            }
            Repr::Bool => ValueRef::Bool(slot[o] != 0),
            Repr::Uuid => ValueRef::Uuid(slot[o..o + 16].try_into().unwrap()),
            Repr::Interval => ValueRef::Interval(permafrost_types::Interval {
                months: i32::from_le_bytes(slot[o..o + 4].try_into().unwrap()),
                days: i32::from_le_bytes(slot[o + 4..o + 8].try_into().unwrap()),
                micros: i64::from_le_bytes(slot[o + 8..o + 16].try_into().unwrap()),
            }),
            Repr::Text { .. } => {
                let bytes = self.var_bytes(slot, o, var);
                // SAFETY: text columns are only ever written by `write` from a `&str`, and
                // tuples restored from disk blocks are validated as UTF-8 before they are
                // merged (anti-cache block decoder), so these bytes are valid UTF-8.
                ValueRef::Text(unsafe { std::str::from_utf8_unchecked(bytes) })
            }
            Repr::Bytes { .. } => ValueRef::Bytes(self.var_bytes(slot, o, var)),
        }
    }

    /// The length and handle of column `col`'s value when it is out of line.
    #[inline]
    fn spilled(&self, slot: &[u8], col: usize) -> Option<(usize, VarHandle)> {
        let ColumnLayout { offset: o, repr } = self.columns[col];
        if !repr.is_var() || self.is_null(slot, col) {
            return None;
        }
        let out = match repr {
            Repr::AnyNumeric => u32::from_le_bytes(slot[o..o + 4].try_into().unwrap()) == SPILLED,
            _ => u16::from_le_bytes([slot[o], slot[o + 1]]) == OUT_OF_LINE,
        };
        if !out {
            return None;
        }
        let (l, h) = repr.spill_offsets();
        let len = u32::from_le_bytes(slot[o + l..o + l + 4].try_into().unwrap()) as usize;
        Some((
            len,
            VarHandle(u64::from_le_bytes(slot[o + h..o + h + 8].try_into().unwrap())),
        ))
    }

    #[inline]
    fn var_bytes<'a>(&self, slot: &'a [u8], o: usize, var: &'a VarHeap) -> &'a [u8] {
        let tag = u16::from_le_bytes([slot[o], slot[o + 1]]);
        if tag != OUT_OF_LINE {
            &slot[o + 2..o + 2 + tag as usize]
        } else {
            let len = u32::from_le_bytes(slot[o + 2..o + 6].try_into().unwrap()) as usize;
            let h = VarHandle(u64::from_le_bytes(slot[o + 6..o + 14].try_into().unwrap()));
            // A dangling handle would be a storage bug; show an empty value rather than
            // crash the partition.
            var.get(h, len).unwrap_or(&[])
        }
    }

    /// Reads an integer column without building a `ValueRef` (index key fast path).
    #[inline]
    pub fn read_int(&self, slot: &[u8], col: usize) -> Option<i64> {
        if self.is_null(slot, col) {
            return None;
        }
        let ColumnLayout { offset: o, repr } = self.columns[col];
        match repr {
            Repr::I16 => Some(i16::from_le_bytes([slot[o], slot[o + 1]]) as i64),
            Repr::I32 => Some(i32::from_le_bytes(slot[o..o + 4].try_into().unwrap()) as i64),
            Repr::I64 => Some(i64::from_le_bytes(slot[o..o + 8].try_into().unwrap())),
            _ => None,
        }
    }

    /// The out-of-line handle of column `col`, if its value lives out of line.
    #[inline]
    pub fn out_of_line(&self, slot: &[u8], col: usize) -> Option<VarHandle> {
        self.spilled(slot, col).map(|(_, h)| h)
    }

    /// Calls `f` with every out-of-line handle of the tuple.
    pub fn for_each_out_of_line(&self, slot: &[u8], mut f: impl FnMut(VarHandle)) {
        for &c in &self.var_columns {
            if let Some(h) = self.out_of_line(slot, c) {
                f(h);
            }
        }
    }

    /// Whether any column of this layout can hold an out-of-line value.
    pub fn has_var_columns(&self) -> bool {
        !self.var_columns.is_empty()
    }

    /// Writes `v` (already converted to the column's type) into column `col`. An
    /// out-of-line value previously in the column is *not* freed: the caller decides (the
    /// undo log keeps old values alive until commit).
    pub fn write(&self, slot: &mut [u8], col: usize, v: ValueRef<'_>, var: &mut VarHeap) -> Result<()> {
        let ColumnLayout { offset: o, repr } = self.columns[col];
        if v.is_null() {
            self.set_null(slot, col, true);
            return Ok(());
        }
        self.set_null(slot, col, false);
        match (repr, v) {
            (Repr::I16, ValueRef::Int(i)) => {
                let x = i16::try_from(i).map_err(|_| range_err("smallint", i))?;
                slot[o..o + 2].copy_from_slice(&x.to_le_bytes());
            }
            (Repr::I32, ValueRef::Int(i)) => {
                let x = i32::try_from(i).map_err(|_| range_err("integer", i))?;
                slot[o..o + 4].copy_from_slice(&x.to_le_bytes());
            }
            (Repr::I64, ValueRef::Int(i)) => slot[o..o + 8].copy_from_slice(&i.to_le_bytes()),
            (Repr::F64, ValueRef::Double(d)) => slot[o..o + 8].copy_from_slice(&d.to_le_bytes()),
            (Repr::Timestamp, ValueRef::Timestamp(t)) | (Repr::TimestampTz, ValueRef::TimestampTz(t)) => {
                slot[o..o + 8].copy_from_slice(&t.to_le_bytes())
            }
            (Repr::Date, ValueRef::Date(d)) => slot[o..o + 4].copy_from_slice(&d.to_le_bytes()),
            (Repr::Time, ValueRef::Time(t)) => slot[o..o + 8].copy_from_slice(&t.to_le_bytes()),
            (Repr::Inet, ValueRef::Inet(x)) => {
                slot[o] = x.v6 as u8;
                slot[o + 1] = x.bits;
                slot[o + 2] = x.cidr as u8;
                slot[o + 3..o + 19].copy_from_slice(&x.addr);
            }
            (Repr::Enum(ty), ValueRef::Enum(e)) if e.ty == ty => slot[o..o + 4].copy_from_slice(&e.index.to_le_bytes()),
            (Repr::AnyNumeric, ValueRef::Decimal(d)) => match d.small_bytes() {
                Some(b) => slot[o..o + 16].copy_from_slice(&b),
                None => {
                    let mut enc = Vec::with_capacity(32);
                    d.encode(&mut enc);
                    let len = u32::try_from(enc.len()).map_err(|_| range_err("numeric", 0))?;
                    let h = var.alloc(&enc)?;
                    slot[o..o + 4].copy_from_slice(&SPILLED.to_le_bytes());
                    slot[o + 4..o + 8].copy_from_slice(&len.to_le_bytes());
                    slot[o + 8..o + 16].copy_from_slice(&h.0.to_le_bytes());
                }
            },
            (Repr::Decimal, ValueRef::Decimal(d)) => match d.small() {
                Some(d) => slot[o..o + 16].copy_from_slice(&d.serialize()),
                // The value was brought to the column's precision (at most 28) first.
                None => return Err(range_err("numeric", 0)),
            },
            (Repr::Numeric { cap }, ValueRef::Decimal(d)) => {
                let mut enc = Vec::with_capacity(32);
                d.encode(&mut enc);
                self.write_var(slot, o, cap as usize, &enc, var)?
            }
            (Repr::Bool, ValueRef::Bool(b)) => slot[o] = b as u8,
            (Repr::Uuid, ValueRef::Uuid(u)) => slot[o..o + 16].copy_from_slice(&u),
            (Repr::Interval, ValueRef::Interval(x)) => {
                slot[o..o + 4].copy_from_slice(&x.months.to_le_bytes());
                slot[o + 4..o + 8].copy_from_slice(&x.days.to_le_bytes());
                slot[o + 8..o + 16].copy_from_slice(&x.micros.to_le_bytes());
            }
            (Repr::Text { cap }, ValueRef::Text(s)) => self.write_var(slot, o, cap as usize, s.as_bytes(), var)?,
            (Repr::Bytes { cap }, ValueRef::Bytes(b)) => self.write_var(slot, o, cap as usize, b, var)?,
            (repr, v) => {
                return Err(ValueError::TypeMismatch(format!(
                    "cannot store a {} value in a {repr:?} column",
                    v.kind_name()
                ))
                .into());
            }
        }
        Ok(())
    }

    fn write_var(&self, slot: &mut [u8], o: usize, cap: usize, data: &[u8], var: &mut VarHeap) -> Result<()> {
        if data.len() <= cap {
            slot[o..o + 2].copy_from_slice(&(data.len() as u16).to_le_bytes());
            slot[o + 2..o + 2 + data.len()].copy_from_slice(data);
        } else {
            let len = u32::try_from(data.len()).map_err(|_| ValueError::NumericOutOfRange {
                ty: "text".into(),
                detail: "value larger than 4 GiB".into(),
            })?;
            let h = var.alloc(data)?;
            slot[o..o + 2].copy_from_slice(&OUT_OF_LINE.to_le_bytes());
            slot[o + 2..o + 6].copy_from_slice(&len.to_le_bytes());
            slot[o + 6..o + 14].copy_from_slice(&h.0.to_le_bytes());
        }
        Ok(())
    }

    /// Bytes of a tuple's data region (everything after the header).
    pub fn data_len(&self) -> usize {
        self.slot_size - HEADER_SIZE
    }

    /// Appends the serialized form of the tuple in `slot` to `out`: its data region as in
    /// memory, then each out-of-line value (in column order) as a u32 LE length and the
    /// bytes. This is the tuple format of anti-cache blocks (docs/format.md).
    pub fn serialize(&self, slot: &[u8], var: &VarHeap, out: &mut Vec<u8>) {
        out.extend_from_slice(&slot[HEADER_SIZE..self.slot_size]);
        for &c in &self.var_columns {
            if let Some((len, h)) = self.spilled(slot, c) {
                let bytes = var.get(h, len).unwrap_or(&[]);
                out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                out.extend_from_slice(bytes);
            }
        }
    }

    /// Writes a tuple serialized by [`TupleLayout::serialize`] into `slot`, allocating its
    /// out-of-line values in `var`. The bytes come from disk, so every field is checked
    /// (lengths, tags, booleans, numeric scales, UTF-8 of text); on any inconsistency
    /// nothing stays allocated and `Corrupt` is returned.
    pub fn deserialize_into(&self, data: &[u8], slot: &mut [u8], var: &mut VarHeap) -> Result<()> {
        let mut allocated = Vec::new();
        let r = self.deserialize_tracked(data, slot, var, &mut allocated);
        if r.is_err() {
            for h in allocated {
                var.free(h);
            }
        }
        r
    }

    /// [`TupleLayout::deserialize_into`] that leaves the out-of-line values it allocated
    /// in `allocated`, on success and on failure (the caller frees them).
    pub fn deserialize_tracked(
        &self,
        data: &[u8],
        slot: &mut [u8],
        var: &mut VarHeap,
        allocated: &mut Vec<VarHandle>,
    ) -> Result<()> {
        let corrupt = |what: &str| StorageError::Corrupt(format!("evicted tuple: {what}"));
        let n = self.data_len();
        if data.len() < n {
            return Err(corrupt("shorter than its table's tuples"));
        }
        slot[HEADER_SIZE..self.slot_size].copy_from_slice(&data[..n]);
        let mut rest = &data[n..];
        for (c, cl) in self.columns.iter().enumerate() {
            if self.is_null(slot, c) {
                continue;
            }
            let o = cl.offset;
            // What is wrong with a value's bytes of this column, if anything.
            let problem = |b: &[u8], spilled: bool| -> Option<&'static str> {
                match cl.repr {
                    Repr::Text { .. } if std::str::from_utf8(b).is_err() => Some("text is not UTF-8"),
                    Repr::Numeric { .. } if NumericRef::from_encoded(b).is_none() => Some("bad numeric"),
                    // Only a value the 16 bytes cannot hold is spilled.
                    Repr::AnyNumeric if spilled && NumericRef::from_encoded(b).is_none_or(|v| v.small().is_some()) => {
                        Some("bad numeric")
                    }
                    _ => None,
                }
            };
            let any_spilled = cl.repr == Repr::AnyNumeric
                && u32::from_le_bytes(slot[o..o + 4].try_into().expect("4 bytes")) == SPILLED;
            match cl.repr {
                Repr::Bool if slot[o] > 1 => return Err(corrupt("bad boolean")),
                Repr::Decimal if !small_ok(&slot[o..o + 16]) => return Err(corrupt("bad numeric")),
                Repr::AnyNumeric if !any_spilled && !small_ok(&slot[o..o + 16]) => return Err(corrupt("bad numeric")),
                Repr::AnyNumeric if !any_spilled => {}
                Repr::Text { cap } | Repr::Bytes { cap } | Repr::Numeric { cap }
                    if u16::from_le_bytes([slot[o], slot[o + 1]]) != OUT_OF_LINE =>
                {
                    let tag = u16::from_le_bytes([slot[o], slot[o + 1]]) as usize;
                    let inline = slot
                        .get(o + 2..o + 2 + tag)
                        .filter(|_| tag <= cap as usize)
                        .ok_or_else(|| corrupt("inline value longer than its column"))?;
                    if let Some(p) = problem(inline, false) {
                        return Err(corrupt(p));
                    }
                }
                // Out of line: the next value after the data region.
                r if r.is_var() => {
                    if rest.len() < 4 {
                        return Err(corrupt("missing out-of-line value"));
                    }
                    let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
                    let body = rest
                        .get(4..4 + len)
                        .ok_or_else(|| corrupt("truncated out-of-line value"))?;
                    if let Some(p) = problem(body, true) {
                        return Err(corrupt(p));
                    }
                    let h = var.alloc(body)?;
                    allocated.push(h);
                    let (lo, ho) = r.spill_offsets();
                    slot[o + lo..o + lo + 4].copy_from_slice(&(len as u32).to_le_bytes());
                    slot[o + ho..o + ho + 8].copy_from_slice(&h.0.to_le_bytes());
                    rest = &rest[4 + len..];
                }
                _ => {}
            }
        }
        if !rest.is_empty() {
            return Err(corrupt("trailing bytes"));
        }
        Ok(())
    }

    /// Bytes of out-of-line data the tuple references (for block sizing and accounting).
    pub fn out_of_line_len(&self, slot: &[u8]) -> usize {
        self.var_columns
            .iter()
            .filter_map(|&c| self.spilled(slot, c))
            .map(|(len, _)| len)
            .sum()
    }
}

/// Whether 16 bytes are a numeric's small form.
fn small_ok(b: &[u8]) -> bool {
    NumericRef::from_small_bytes(b.try_into().expect("16 bytes")).is_some()
}

fn range_err(ty: &str, i: i64) -> StorageError {
    ValueError::NumericOutOfRange {
        ty: ty.into(),
        detail: i.to_string(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Column;
    use permafrost_types::Value;

    fn schema() -> TableSchema {
        TableSchema {
            id: 1,
            name: "t".into(),
            columns: vec![
                Column::new("a", DataType::SmallInt),
                Column::new("b", DataType::BigInt),
                Column::new("c", DataType::Varchar(Some(10))),
                Column::new("d", DataType::Varchar(None)),
                Column::new(
                    "e",
                    DataType::Decimal {
                        precision: 10,
                        scale: 2,
                    },
                ),
                Column::new("f", DataType::Boolean),
                Column::new("g", DataType::Bytea),
                Column::new("h", DataType::Timestamp),
                Column::new("i", DataType::Double),
                Column::new(
                    "j",
                    DataType::Decimal {
                        precision: 1000,
                        scale: 10,
                    },
                ),
                Column::new(
                    "k",
                    DataType::Decimal {
                        precision: 40,
                        scale: 2,
                    },
                ),
                Column::new("l", DataType::Decimal { precision: 0, scale: 0 }),
                Column::new("m", DataType::TimestampTz),
                Column::new("n", DataType::Date),
            ],
            indexes: vec![],
            partition_column: None,
            partition_declared: false,
            evictable: false,
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            comment: None,
        }
    }

    #[test]
    fn every_type_round_trips_inline_and_out_of_line() {
        let s = schema();
        let l = TupleLayout::new(&s);
        let mut var = VarHeap::new();
        let mut slot = vec![0u8; l.slot_size()];
        let long = "x".repeat(1000);
        let vals = [
            Value::Int(-5),
            Value::Int(i64::MIN),
            Value::text("short"),
            Value::text(long.as_str()),
            Value::Decimal(permafrost_types::Numeric::new(12345, 2)),
            Value::Bool(true),
            Value::bytes(vec![1u8; 40]),
            Value::Timestamp(1_700_000_000_000_000),
            Value::Double(2.5),
            Value::Decimal(format!("-{}.0123456789", "9".repeat(900)).parse().unwrap()),
            Value::Decimal("12345678901234567890123456789012.25".parse().unwrap()),
            Value::Decimal("-0.1".parse().unwrap()),
            Value::TimestampTz(-1_700_000_000_000_001),
            Value::Date(-719_528),
        ];
        for (i, v) in vals.iter().enumerate() {
            l.write(&mut slot, i, v.as_ref(), &mut var).unwrap();
        }
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(l.read(&slot, i, &var).to_owned(), *v, "column {i}");
        }
        assert!(l.out_of_line(&slot, 2).is_none());
        assert!(l.out_of_line(&slot, 3).is_some());
        assert!(l.out_of_line(&slot, 6).is_some());
        assert!(l.out_of_line(&slot, 9).is_some());
        assert!(l.out_of_line(&slot, 10).is_none());
        let mut big = Vec::new();
        let ValueRef::Decimal(n) = vals[9].as_ref() else {
            unreachable!()
        };
        n.encode(&mut big);
        assert_eq!(l.out_of_line_len(&slot), 1040 + big.len());
        // Through a block and back: the same values.
        let mut bytes = Vec::new();
        l.serialize(&slot, &var, &mut bytes);
        let mut back = vec![0u8; l.slot_size()];
        l.deserialize_into(&bytes, &mut back, &mut var).unwrap();
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(l.read(&back, i, &var).to_owned(), *v, "column {i} after a block");
        }
        // A numeric whose encoding is broken (a sign byte of 7) is refused.
        let mut broken = bytes.clone();
        broken[l.columns[10].offset + 2 - HEADER_SIZE] = 7;
        assert!(l.deserialize_into(&broken, &mut back, &mut var).is_err());
        // An unconstrained NUMERIC column holds a value past 28 digits out of line, and
        // a small one in its 16 bytes again afterwards.
        let big = Value::Decimal("-1e40".parse().unwrap());
        l.write(&mut slot, 11, big.as_ref(), &mut var).unwrap();
        assert!(l.out_of_line(&slot, 11).is_some());
        assert_eq!(l.read(&slot, 11, &var).to_owned(), big);
        let mut bytes = Vec::new();
        l.serialize(&slot, &var, &mut bytes);
        l.deserialize_into(&bytes, &mut back, &mut var).unwrap();
        assert_eq!(l.read(&back, 11, &var).to_owned(), big);
        // A spilled value that would fit the 16 bytes is not one the writer makes: the
        // last out-of-line value (column 11's) replaced by the encoding of 5 is refused.
        let mut spilled = Vec::new();
        let ValueRef::Decimal(d) = big.as_ref() else {
            unreachable!()
        };
        d.encode(&mut spilled);
        let mut five = Vec::new();
        permafrost_types::Numeric::new(5, 0).as_ref().encode(&mut five);
        let mut forged = bytes[..bytes.len() - 4 - spilled.len()].to_vec();
        forged.extend_from_slice(&(five.len() as u32).to_le_bytes());
        forged.extend_from_slice(&five);
        assert!(l.deserialize_into(&forged, &mut back, &mut var).is_err());
        l.write(
            &mut slot,
            11,
            ValueRef::Decimal(permafrost_types::Numeric::new(7, 1).as_ref()),
            &mut var,
        )
        .unwrap();
        assert!(l.out_of_line(&slot, 11).is_none());
        l.write(&mut slot, 3, ValueRef::Null, &mut var).unwrap();
        assert!(l.read(&slot, 3, &var).is_null());
        assert_eq!(l.read_int(&slot, 1), Some(i64::MIN));
    }

    #[test]
    fn multibyte_text_beyond_inline_room_goes_out_of_line() {
        let s = schema();
        let l = TupleLayout::new(&s);
        let mut var = VarHeap::new();
        let mut slot = vec![0u8; l.slot_size()];
        let v = "ééééééééé"; // 9 characters, 18 bytes, column reserves 12
        l.write(&mut slot, 2, ValueRef::Text(v), &mut var).unwrap();
        assert!(l.out_of_line(&slot, 2).is_some());
        assert_eq!(l.read(&slot, 2, &var).to_owned(), Value::text(v));
    }
}
