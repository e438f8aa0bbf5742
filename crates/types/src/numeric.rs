//! NUMERIC: exact decimal numbers, computed as PostgreSQL computes them.
//!
//! A value is a signed integer mantissa and a scale (digits after the point): 1.50 is
//! 150 with scale 2, and keeps its scale (PostgreSQL's display scale) through storage and
//! output. Two forms hold it:
//! - *small*: rust_decimal's 96-bit mantissa with a scale of at most 28 — almost every
//!   value an application stores (money, quantities, rates). Arithmetic on small values
//!   runs on `i128` and stays small while its exact result fits.
//! - *big*: anything larger, up to PostgreSQL's limits (131,072 digits before the point,
//!   16,383 after), held as its encoding; arithmetic decodes it into `num_bigint`
//!   integers.
//!
//! A value is small exactly when it fits the small form, so each value has one form.
//!
//! The encoding ([`NumericRef::encode`], docs/format.md "Numeric encoding") is what
//! `NUMERIC(p, s)` columns of precision above 28 store: a sign byte (0 or 1), the scale
//! (u16 LE), and the mantissa's magnitude in little-endian bytes without trailing zero
//! bytes (none for zero, whose sign is 0). Storage lends these bytes without copying
//! ([`NumericRef::from_encoded`]).
//!
//! The results' scales are PostgreSQL's (src/backend/utils/adt/numeric.c): a sum or
//! difference has the larger scale of its operands, a product the sum of their scales, a
//! quotient at least 16 significant digits ([`MIN_SIG_DIGITS`]) and at least either
//! operand's scale, at most [`MAX_DISPLAY_SCALE`]; rounding is half away from zero.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::{BigInt, BigUint, Sign};
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};
use rust_decimal::Decimal;

/// Largest precision of a `NUMERIC(p, s)` column (PostgreSQL's `NUMERIC_MAX_PRECISION`).
pub const MAX_PRECISION: u16 = 1000;

/// Largest precision whose values always fit the small form: a column of at most this
/// precision stores them inline in 16 bytes.
pub const MAX_SMALL_PRECISION: u16 = 28;

/// Most digits after the point a value may have (`NUMERIC_DSCALE_MAX`).
pub const MAX_SCALE: u32 = 16383;

/// Most digits before the point a value may have (`NUMERIC_WEIGHT_MAX` in decimal digits).
pub const MAX_INT_DIGITS: u32 = 131_072;

/// Most digits after the point a quotient gets (`NUMERIC_MAX_DISPLAY_SCALE`).
pub const MAX_DISPLAY_SCALE: u32 = 1000;

/// Significant digits a quotient gets at least (`NUMERIC_MIN_SIG_DIGITS`).
pub const MIN_SIG_DIGITS: i64 = 16;

/// Most digits after the point `round(x, n)` asks for (`NUMERIC_MAX_RESULT_SCALE`).
pub const MAX_RESULT_SCALE: i32 = 2000;

const SMALL_SCALE: u32 = 28;
const SMALL_LIMIT: u128 = 1 << 96;
/// Bytes of a big value before its magnitude: the sign, then the scale.
const BIG_HEADER: usize = 3;

/// Why a numeric operation has no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumericError {
    /// Past PostgreSQL's limits: 22003 "value overflows numeric format".
    Overflow,
    /// 22012.
    DivisionByZero,
    /// Text that is not a number: 22P02.
    Syntax,
}

/// An owned NUMERIC value.
#[derive(Clone)]
pub struct Numeric(Form);

#[derive(Clone)]
enum Form {
    Small(Decimal),
    Big(Box<[u8]>),
}

/// A borrowed NUMERIC value (from storage, a result buffer or a [`Numeric`]).
#[derive(Clone, Copy)]
pub struct NumericRef<'a>(FormRef<'a>);

#[derive(Clone, Copy)]
enum FormRef<'a> {
    Small(Decimal),
    Big(&'a [u8]),
}

impl Numeric {
    pub const ZERO: Numeric = Numeric(Form::Small(Decimal::ZERO));

    pub fn as_ref(&self) -> NumericRef<'_> {
        NumericRef(match &self.0 {
            Form::Small(d) => FormRef::Small(*d),
            Form::Big(b) => FormRef::Big(b),
        })
    }

    /// `mantissa × 10^-scale`.
    pub fn new(mantissa: i64, scale: u32) -> Numeric {
        from_i128(mantissa as i128, scale)
    }

    /// Reads PostgreSQL's text input for numeric: an optional sign, digits with an optional
    /// point, an optional exponent (`1.5e3`); the scale is the digits after the point less
    /// the exponent (at least 0).
    pub fn parse(text: &str) -> Result<Numeric, NumericError> {
        parse(text)
    }

    /// A double as PostgreSQL converts it: its 15 significant digits (`DBL_DIG`), trailing
    /// zeros dropped. Not for NaN or infinities (22003).
    pub fn from_f64(f: f64) -> Result<Numeric, NumericError> {
        if !f.is_finite() {
            return Err(NumericError::Overflow);
        }
        let s = format!("{f:.14e}");
        let (mant, exp) = s.split_once('e').expect("exponent form");
        let mant = if mant.contains('.') {
            mant.trim_end_matches('0').trim_end_matches('.')
        } else {
            mant
        };
        parse(&format!("{mant}e{exp}"))
    }

    /// The small form, if the value has it.
    pub fn small(&self) -> Option<Decimal> {
        self.as_ref().small()
    }
}

impl From<i64> for Numeric {
    fn from(i: i64) -> Numeric {
        Numeric(Form::Small(Decimal::from(i)))
    }
}

impl From<Decimal> for Numeric {
    fn from(d: Decimal) -> Numeric {
        Numeric(Form::Small(d))
    }
}

impl<'a> NumericRef<'a> {
    pub fn small_value(d: Decimal) -> NumericRef<'static> {
        NumericRef(FormRef::Small(d))
    }

    /// A small value from its 16-byte form (rust_decimal's `serialize`: flags u32 LE with
    /// the scale, at most 28, in bits 16..24 and the sign in bit 31 and nothing else, then
    /// the 96-bit mantissa LE), checked: what `NUMERIC` columns of precision up to 28 and
    /// tag 4 of the command log hold. `None` if the bytes are not one.
    pub fn from_small_bytes(b: [u8; 16]) -> Option<NumericRef<'static>> {
        let flags = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if flags & !0x80ff_0000 != 0 || (flags >> 16) & 0xff > SMALL_SCALE {
            return None;
        }
        Some(NumericRef(FormRef::Small(Decimal::deserialize(b))))
    }

    /// The 16-byte form of a small value ([`NumericRef::from_small_bytes`]); `None` for a
    /// big one.
    pub fn small_bytes(&self) -> Option<[u8; 16]> {
        self.small().map(|d| d.serialize())
    }

    /// The value of an encoding ([`NumericRef::encode`]), checked: `None` if the bytes are
    /// not one (a decoder of stored bytes refuses those). A value that fits the small form
    /// gets it; a big one borrows the bytes.
    pub fn from_encoded(b: &'a [u8]) -> Option<NumericRef<'a>> {
        if b.len() < BIG_HEADER || b[0] > 1 {
            return None;
        }
        let scale = u16::from_le_bytes([b[1], b[2]]) as u32;
        let mag = &b[BIG_HEADER..];
        if scale > MAX_SCALE || mag.last() == Some(&0) || (mag.is_empty() && b[0] == 1) {
            return None;
        }
        if scale <= SMALL_SCALE && mag.len() <= 12 {
            let mut m = [0u8; 16];
            m[..mag.len()].copy_from_slice(mag);
            let m = u128::from_le_bytes(m) as i128;
            let d = Decimal::from_i128_with_scale(if b[0] == 1 { -m } else { m }, scale);
            return Some(NumericRef(FormRef::Small(d)));
        }
        Some(NumericRef(FormRef::Big(b)))
    }

    /// Appends the value's encoding (see the module docs) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self.0 {
            FormRef::Big(b) => out.extend_from_slice(b),
            FormRef::Small(d) => {
                let m = d.mantissa();
                out.push((m < 0) as u8);
                out.extend_from_slice(&(d.scale() as u16).to_le_bytes());
                let mag = m.unsigned_abs().to_le_bytes();
                let used = mag.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
                out.extend_from_slice(&mag[..used]);
            }
        }
    }

    /// The small form, if the value has it.
    pub fn small(&self) -> Option<Decimal> {
        match self.0 {
            FormRef::Small(d) => Some(d),
            FormRef::Big(_) => None,
        }
    }

    pub fn to_owned(&self) -> Numeric {
        Numeric(match self.0 {
            FormRef::Small(d) => Form::Small(d),
            FormRef::Big(b) => Form::Big(b.into()),
        })
    }

    /// Digits after the point.
    pub fn scale(&self) -> u32 {
        match self.0 {
            FormRef::Small(d) => d.scale(),
            FormRef::Big(b) => u16::from_le_bytes([b[1], b[2]]) as u32,
        }
    }

    pub fn is_zero(&self) -> bool {
        matches!(self.0, FormRef::Small(d) if d.is_zero())
    }

    pub fn is_negative(&self) -> bool {
        match self.0 {
            FormRef::Small(d) => d.is_sign_negative() && !d.is_zero(),
            FormRef::Big(b) => b[0] == 1,
        }
    }

    /// The mantissa and the scale.
    fn parts(&self) -> (BigInt, u32) {
        match self.0 {
            FormRef::Small(d) => (BigInt::from(d.mantissa()), d.scale()),
            FormRef::Big(b) => {
                let mag = BigUint::from_bytes_le(&b[BIG_HEADER..]);
                let sign = if b[0] == 1 { Sign::Minus } else { Sign::Plus };
                (BigInt::from_biguint(sign, mag), self.scale())
            }
        }
    }

    pub fn checked_add(self, other: NumericRef<'_>) -> Result<Numeric, NumericError> {
        self.add_signed(other, false)
    }

    pub fn checked_sub(self, other: NumericRef<'_>) -> Result<Numeric, NumericError> {
        self.add_signed(other, true)
    }

    fn add_signed(self, other: NumericRef<'_>, negate: bool) -> Result<Numeric, NumericError> {
        let s = self.scale().max(other.scale());
        if let (FormRef::Small(a), FormRef::Small(b)) = (self.0, other.0) {
            let x = a.mantissa().checked_mul(POW10[(s - a.scale()) as usize]);
            let y = b.mantissa().checked_mul(POW10[(s - b.scale()) as usize]);
            let y = if negate { y.and_then(i128::checked_neg) } else { y };
            if let Some(m) = x.zip(y).and_then(|(x, y)| x.checked_add(y)) {
                return Ok(from_i128(m, s));
            }
        }
        let (a, sa) = self.parts();
        let (b, sb) = other.parts();
        let (a, b) = (a * pow10(s - sa), b * pow10(s - sb));
        from_parts(if negate { a - b } else { a + b }, s)
    }

    pub fn checked_mul(self, other: NumericRef<'_>) -> Result<Numeric, NumericError> {
        let s = self.scale() + other.scale();
        if let (FormRef::Small(a), FormRef::Small(b)) = (self.0, other.0)
            && let Some(m) = a.mantissa().checked_mul(b.mantissa())
        {
            return Ok(from_i128(m, s));
        }
        let (a, _) = self.parts();
        let (b, _) = other.parts();
        from_parts(a * b, s)
    }

    /// The quotient at PostgreSQL's scale (`select_div_scale`), rounded half away from zero.
    pub fn checked_div(self, other: NumericRef<'_>) -> Result<Numeric, NumericError> {
        if other.is_zero() {
            return Err(NumericError::DivisionByZero);
        }
        let (a, sa) = self.parts();
        let (b, sb) = other.parts();
        let (w1, d1) = leading_group(&a, sa);
        let (w2, d2) = leading_group(&b, sb);
        let mut qweight = w1 - w2;
        if d1 <= d2 {
            qweight -= 1;
        }
        let rscale = (MIN_SIG_DIGITS - qweight * 4)
            .max(sa as i64)
            .max(sb as i64)
            .clamp(0, MAX_DISPLAY_SCALE as i64) as u32;
        // a/10^sa ÷ b/10^sb at scale r: a × 10^(sb + r) ÷ (b × 10^sa).
        let n = a * pow10(sb + rscale);
        let d = b * pow10(sa);
        from_parts(div_half_away(&n, &d), rscale)
    }

    /// The remainder of the quotient truncated toward zero, at the larger scale (the sign
    /// of the dividend), as PostgreSQL's `%`.
    pub fn checked_rem(self, other: NumericRef<'_>) -> Result<Numeric, NumericError> {
        if other.is_zero() {
            return Err(NumericError::DivisionByZero);
        }
        let s = self.scale().max(other.scale());
        let (a, sa) = self.parts();
        let (b, sb) = other.parts();
        from_parts((a * pow10(s - sa)) % (b * pow10(s - sb)), s)
    }

    pub fn negate(self) -> Numeric {
        match self.0 {
            FormRef::Small(d) => Numeric(Form::Small(-d)),
            FormRef::Big(b) => {
                let mut v: Box<[u8]> = b.into();
                // Zero (no magnitude bytes) has no sign: there is no negative zero.
                if v.len() > BIG_HEADER {
                    v[0] ^= 1;
                }
                Numeric(Form::Big(v))
            }
        }
    }

    pub fn abs(self) -> Numeric {
        if self.is_negative() {
            self.negate()
        } else {
            self.to_owned()
        }
    }

    /// The value rounded to `digits` after the point, half away from zero; a negative
    /// `digits` rounds to tens, hundreds, ... with scale 0 (PostgreSQL's `round(x, n)`).
    pub fn round(self, digits: i32) -> Result<Numeric, NumericError> {
        let digits = digits.clamp(-MAX_RESULT_SCALE, MAX_RESULT_SCALE);
        let (m, s) = self.parts();
        if digits >= 0 {
            let t = digits as u32;
            if t >= s {
                return from_parts(m * pow10(t - s), t);
            }
            return from_parts(div_half_away(&m, &pow10(s - t)), t);
        }
        let unit = pow10(s + digits.unsigned_abs());
        let q = div_half_away(&m, &unit);
        from_parts(q * pow10(digits.unsigned_abs()), 0)
    }

    /// The value truncated toward zero at `digits` after the point (at least 0).
    pub fn trunc(self, digits: u32) -> Result<Numeric, NumericError> {
        let (m, s) = self.parts();
        if digits >= s {
            return from_parts(m * pow10(digits - s), digits);
        }
        from_parts(m / pow10(s - digits), digits)
    }

    /// The largest integer not above the value (scale 0).
    pub fn floor(self) -> Result<Numeric, NumericError> {
        let (m, s) = self.parts();
        from_parts(m.div_floor(&pow10(s)), 0)
    }

    /// The smallest integer not below the value (scale 0).
    pub fn ceil(self) -> Result<Numeric, NumericError> {
        let (m, s) = self.parts();
        from_parts(-((-m).div_floor(&pow10(s))), 0)
    }

    /// The value brought to `NUMERIC(precision, scale)`: rounded to `scale` digits after
    /// the point; `Err(Overflow)` if its magnitude is then not below `10^(precision -
    /// scale)`.
    pub fn fit(self, precision: u32, scale: u32) -> Result<Numeric, NumericError> {
        if let FormRef::Small(d) = self.0
            && scale <= SMALL_SCALE
        {
            // The common case (a value stored into a NUMERIC(p, s) column) on i128.
            let (m, sd) = (d.mantissa(), d.scale());
            let m = if scale >= sd {
                m.checked_mul(POW10[(scale - sd) as usize])
            } else {
                let unit = POW10[(sd - scale) as usize];
                let (q, r) = (m / unit, m % unit);
                Some(if 2 * r.unsigned_abs() >= unit as u128 {
                    q + m.signum()
                } else {
                    q
                })
            };
            if let Some(m) = m {
                let fits = precision as usize >= POW10.len() || m.unsigned_abs() < POW10[precision as usize] as u128;
                return if fits {
                    Ok(from_i128(m, scale))
                } else {
                    Err(NumericError::Overflow)
                };
            }
        }
        let (m, s) = self.parts();
        let m = if scale >= s {
            m * pow10(scale - s)
        } else {
            div_half_away(&m, &pow10(s - scale))
        };
        if m.magnitude() >= &pow10(precision).into_parts().1 {
            return Err(NumericError::Overflow);
        }
        from_parts(m, scale)
    }

    /// The value rounded half away from zero to an integer, if that fits an `i64`.
    pub fn round_to_i64(self) -> Option<i64> {
        if let FormRef::Small(d) = self.0 {
            return d
                .round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
                .to_i64();
        }
        let (m, s) = self.parts();
        div_half_away(&m, &pow10(s)).to_i64()
    }

    /// The value as an `i64` when it is an integer that fits one.
    pub fn to_i64_exact(self) -> Option<i64> {
        if let FormRef::Small(d) = self.0 {
            return if d.fract().is_zero() { d.to_i64() } else { None };
        }
        let (m, s) = self.parts();
        let (q, r) = m.div_rem(&pow10(s));
        if r.is_zero() { q.to_i64() } else { None }
    }

    /// The nearest double (a big value through its text).
    pub fn to_f64(self) -> f64 {
        match self.0 {
            FormRef::Small(d) => d.to_f64().unwrap_or(f64::NAN),
            FormRef::Big(_) => self.to_string().parse().unwrap_or(f64::NAN),
        }
    }

    /// Compares by value (1.0 equals 1.00).
    pub fn compare(self, other: NumericRef<'_>) -> Ordering {
        if let (FormRef::Small(a), FormRef::Small(b)) = (self.0, other.0) {
            return a.cmp(&b);
        }
        let s = self.scale().max(other.scale());
        let (a, sa) = self.parts();
        let (b, sb) = other.parts();
        (a * pow10(s - sa)).cmp(&(b * pow10(s - sb)))
    }

    /// PostgreSQL's binary form of a numeric value (the wire's `numeric` in binary): the
    /// count of base-10000 digits, the weight of the first, the sign (0 or 0x4000), the
    /// display scale, then the digits, each an i16, all big-endian.
    pub fn to_pg_binary(self) -> Vec<u8> {
        let (m, scale) = self.parts();
        let negative = m.is_negative();
        let text = m.magnitude().to_str_radix(10);
        // Digits before the point, padded to a whole group; after it, to a whole group.
        let int_len = text.len().saturating_sub(scale as usize);
        let int = if text.len() > scale as usize {
            &text[..int_len]
        } else {
            ""
        };
        let frac = format!("{:0>width$}", &text[int_len..], width = scale as usize);
        let int_pad = (4 - int.len() % 4) % 4;
        let frac_pad = (4 - frac.len() % 4) % 4;
        let all = format!("{}{int}{frac}{}", "0".repeat(int_pad), "0".repeat(frac_pad));
        let mut groups: Vec<i16> = all
            .as_bytes()
            .chunks(4)
            .map(|c| c.iter().fold(0i16, |acc, d| acc * 10 + (d - b'0') as i16))
            .collect();
        let mut weight = ((int.len() + int_pad) / 4) as i32 - 1;
        // Leading and trailing zero groups are not sent.
        let lead = groups.iter().take_while(|&&g| g == 0).count();
        groups.drain(..lead);
        weight -= lead as i32;
        while groups.last() == Some(&0) {
            groups.pop();
        }
        if groups.is_empty() {
            weight = 0;
        }
        let mut out = Vec::with_capacity(8 + 2 * groups.len());
        out.extend_from_slice(&(groups.len() as i16).to_be_bytes());
        out.extend_from_slice(&(weight as i16).to_be_bytes());
        out.extend_from_slice(&(if negative { 0x4000u16 } else { 0 }).to_be_bytes());
        out.extend_from_slice(&(scale as u16).to_be_bytes());
        for g in groups {
            out.extend_from_slice(&g.to_be_bytes());
        }
        out
    }
}

impl Numeric {
    /// Reads PostgreSQL's binary form of a numeric ([`NumericRef::to_pg_binary`]); NaN and
    /// infinities are refused (`Syntax`), as is anything malformed.
    pub fn from_pg_binary(b: &[u8]) -> Result<Numeric, NumericError> {
        let be16 = |i: usize| -> Result<u16, NumericError> {
            b.get(i..i + 2)
                .map(|x| u16::from_be_bytes([x[0], x[1]]))
                .ok_or(NumericError::Syntax)
        };
        let ndigits = be16(0)? as usize;
        let weight = be16(2)? as i16 as i64;
        let sign = be16(4)?;
        let dscale = be16(6)? as u32;
        if b.len() != 8 + 2 * ndigits || !(sign == 0 || sign == 0x4000) || dscale > MAX_SCALE {
            return Err(NumericError::Syntax);
        }
        let mut m = BigInt::zero();
        for i in 0..ndigits {
            let d = be16(8 + 2 * i)?;
            if d >= 10000 {
                return Err(NumericError::Syntax);
            }
            m = m * 10000u32 + d;
        }
        // The digits make an integer whose last digit has weight (weight - ndigits + 1)
        // in base 10000: 10^(4 × that) times it, then brought to the display scale.
        let exp10 = 4 * (weight - ndigits as i64 + 1);
        if exp10 > MAX_INT_DIGITS as i64 + 4 {
            return Err(NumericError::Overflow);
        }
        let target = dscale as i64;
        let m = if exp10 + target >= 0 {
            m * pow10((exp10 + target) as u32)
        } else {
            // Digits past the display scale are rounded off (as PostgreSQL's reader does).
            let cut = (-(exp10 + target)) as u32;
            if cut > MAX_SCALE + MAX_INT_DIGITS + 4 {
                return Err(NumericError::Syntax);
            }
            div_half_away(&m, &pow10(cut))
        };
        let m = if sign == 0x4000 { -m } else { m };
        from_parts(m, dscale)
    }
}

/// Powers of ten that fit an i128 with a small mantissa: scales differ by at most 28.
const POW10: [i128; 29] = {
    let mut t = [1i128; 29];
    let mut i = 1;
    while i < 29 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

fn pow10(n: u32) -> BigInt {
    if (n as usize) < POW10.len() {
        BigInt::from(POW10[n as usize])
    } else {
        BigInt::from(10u32).pow(n)
    }
}

/// `n / d` rounded half away from zero.
fn div_half_away(n: &BigInt, d: &BigInt) -> BigInt {
    let (q, r) = n.div_rem(d);
    if (r.magnitude() << 1u32) >= *d.magnitude() {
        if n.is_negative() != d.is_negative() {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

/// The weight (in base-10000 groups, 0 for the units group) and the value of the first
/// non-zero group of `m × 10^-scale`; (0, 0) for zero. PostgreSQL's quotient scale is
/// computed from these.
fn leading_group(m: &BigInt, scale: u32) -> (i64, u32) {
    if m.is_zero() {
        return (0, 0);
    }
    let digits = m.magnitude().to_str_radix(10).len() as i64;
    // The leading decimal digit is at 10^e.
    let e = digits - 1 - scale as i64;
    let weight = e.div_euclid(4);
    // The group's value: |v| / 10000^weight, truncated.
    let k = scale as i64 + 4 * weight;
    let g = if k >= 0 {
        m.magnitude() / pow10(k as u32).magnitude()
    } else {
        m.magnitude() * pow10((-k) as u32).magnitude()
    };
    (weight, g.to_u32().unwrap_or(0))
}

/// The value `m × 10^-s` for a small mantissa.
fn from_i128(m: i128, s: u32) -> Numeric {
    if s <= SMALL_SCALE && m.unsigned_abs() < SMALL_LIMIT {
        Numeric(Form::Small(Decimal::from_i128_with_scale(m, s)))
    } else {
        from_parts(BigInt::from(m), s).expect("an i128 mantissa is within the limits")
    }
}

/// The value `m × 10^-s`, in its form; `Err(Overflow)` past PostgreSQL's limits.
fn from_parts(m: BigInt, s: u32) -> Result<Numeric, NumericError> {
    if s > MAX_SCALE {
        return Err(NumericError::Overflow);
    }
    if s <= SMALL_SCALE
        && let Some(i) = m.to_i128()
        && i.unsigned_abs() < SMALL_LIMIT
    {
        return Ok(Numeric(Form::Small(Decimal::from_i128_with_scale(i, s))));
    }
    // Digits before the point: at most MAX_INT_DIGITS (bits bound the digits from above;
    // only near the limit are they counted).
    let bits = m.bits();
    let bound = ((s + MAX_INT_DIGITS) as f64 * std::f64::consts::LOG2_10) as u64;
    if bits > bound.saturating_sub(4) {
        let digits = m.magnitude().to_str_radix(10).len() as u64;
        if digits > (s + MAX_INT_DIGITS) as u64 {
            return Err(NumericError::Overflow);
        }
    }
    let (sign, mag) = m.into_parts();
    let mut b = Vec::with_capacity(BIG_HEADER + mag.bits().div_ceil(8) as usize);
    b.push((sign == Sign::Minus) as u8);
    b.extend_from_slice(&(s as u16).to_le_bytes());
    // Zero has no magnitude bytes (`to_bytes_le` gives it one zero byte, which the
    // encoding does not allow: `NumericRef::from_encoded`).
    if !mag.is_zero() {
        b.extend_from_slice(&mag.to_bytes_le());
    }
    Ok(Numeric(Form::Big(b.into())))
}

fn parse(text: &str) -> Result<Numeric, NumericError> {
    let t = text.trim();
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (num, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(NumericError::Syntax);
    }
    let exp: i64 = match exp {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(NumericError::Syntax);
            }
            // Beyond any value's reach either way.
            e.parse::<i64>()
                .ok()
                .filter(|x| x.abs() <= 2 * (MAX_INT_DIGITS + MAX_SCALE) as i64)
                .ok_or(NumericError::Overflow)?
        }
    };
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    let scale = frac.len() as i64 - exp;
    let m = if digits.is_empty() {
        BigInt::zero()
    } else {
        let lead = digits.len() as i64 - scale;
        if lead > MAX_INT_DIGITS as i64 {
            return Err(NumericError::Overflow);
        }
        digits.parse::<BigInt>().map_err(|_| NumericError::Syntax)?
    };
    let (m, scale) = if scale < 0 {
        (m * pow10((-scale) as u32), 0)
    } else {
        (m, scale)
    };
    if scale > MAX_SCALE as i64 {
        return Err(NumericError::Overflow);
    }
    from_parts(if negative { -m } else { m }, scale as u32)
}

impl fmt::Display for NumericRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            FormRef::Small(d) => write!(f, "{d}"),
            FormRef::Big(_) => {
                let (m, s) = self.parts();
                let s = s as usize;
                let digits = m.magnitude().to_str_radix(10);
                if m.is_negative() {
                    f.write_str("-")?;
                }
                if s == 0 {
                    return f.write_str(&digits);
                }
                let padded = format!("{digits:0>width$}", width = s + 1);
                let (int, frac) = padded.split_at(padded.len() - s);
                write!(f, "{int}.{frac}")
            }
        }
    }
}

impl fmt::Display for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}

impl fmt::Debug for NumericRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Debug for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// Equal by value (1.0 equals 1.00), as SQL compares numbers.
impl PartialEq for NumericRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.compare(*other) == Ordering::Equal
    }
}

impl PartialEq for Numeric {
    fn eq(&self, other: &Self) -> bool {
        self.as_ref() == other.as_ref()
    }
}

impl std::str::FromStr for Numeric {
    type Err = NumericError;
    fn from_str(s: &str) -> Result<Numeric, NumericError> {
        parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn n(s: &str) -> Numeric {
        s.parse().unwrap()
    }

    fn show(r: Result<Numeric, NumericError>) -> String {
        match r {
            Ok(v) => v.to_string(),
            Err(e) => format!("{e:?}"),
        }
    }

    /// Each answer is what PostgreSQL 15 prints for the same expression.
    #[test]
    fn arithmetic_is_postgresqls() {
        let cases: &[(&str, String)] = &[
            ("1 / 3", show(n("1").as_ref().checked_div(n("3").as_ref()))),
            ("10 / 4", show(n("10").as_ref().checked_div(n("4").as_ref()))),
            ("2 / 3", show(n("2").as_ref().checked_div(n("3").as_ref()))),
            ("1.000 / 7", show(n("1.000").as_ref().checked_div(n("7").as_ref()))),
            (
                "123456789 / 0.001",
                show(n("123456789").as_ref().checked_div(n("0.001").as_ref())),
            ),
            ("0 / 3", show(n("0").as_ref().checked_div(n("3").as_ref()))),
            ("-7 / 2", show(n("-7").as_ref().checked_div(n("2").as_ref()))),
            ("1 / 0", show(n("1").as_ref().checked_div(n("0").as_ref()))),
            ("0.1 + 0.25", show(n("0.1").as_ref().checked_add(n("0.25").as_ref()))),
            ("1.50 * 2.0", show(n("1.50").as_ref().checked_mul(n("2.0").as_ref()))),
            ("-7.5 % 2", show(n("-7.5").as_ref().checked_rem(n("2").as_ref()))),
        ];
        let expected = [
            "0.33333333333333333333",
            "2.5000000000000000",
            "0.66666666666666666667",
            "0.14285714285714285714",
            "123456789000.00000000",
            "0.00000000000000000000",
            "-3.5000000000000000",
            "DivisionByZero",
            "0.35",
            "3.000",
            "-1.5",
        ];
        for ((what, got), want) in cases.iter().zip(expected) {
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn big_values_keep_every_digit() {
        let a = n("123456789012345678901234567890.123456789");
        assert!(a.small().is_none());
        assert_eq!(a.to_string(), "123456789012345678901234567890.123456789");
        let sq = a.as_ref().checked_mul(a.as_ref()).unwrap();
        assert_eq!(
            sq.to_string(),
            "15241578753238836750495351562566681945005334557625361987875.019051998750190521"
        );
        // Back to small when it fits.
        let back = sq.as_ref().checked_div(a.as_ref()).unwrap().as_ref().round(9).unwrap();
        assert_eq!(back.to_string(), a.to_string());
        let one = n("1")
            .as_ref()
            .checked_add(n("0.00000000000000000000000000001").as_ref())
            .unwrap();
        assert_eq!(one.to_string(), "1.00000000000000000000000000001");
        assert_eq!(
            one.as_ref()
                .checked_sub(n("0.00000000000000000000000000001").as_ref())
                .unwrap()
                .to_string(),
            "1.00000000000000000000000000000"
        );
        assert_eq!(n("-0.5").as_ref().round(0).unwrap().to_string(), "-1");
        assert_eq!(n("1234.5").as_ref().round(-2).unwrap().to_string(), "1200");
        assert_eq!(n("-1.5").as_ref().floor().unwrap().to_string(), "-2");
        assert_eq!(n("-1.5").as_ref().ceil().unwrap().to_string(), "-1");
        assert_eq!(n("1e30").to_string(), "1000000000000000000000000000000");
        assert_eq!(n("1.5e-3").to_string(), "0.0015");
        assert_eq!(n(" 12. ").to_string(), "12");
        assert_eq!(n(".5").to_string(), "0.5");
        for bad in ["", ".", "1e", "abc", "1.2.3", "--1", "NaN", "1e+"] {
            assert_eq!(Numeric::parse(bad).unwrap_err(), NumericError::Syntax, "{bad:?}");
        }
        assert_eq!(Numeric::parse("1e200000").unwrap_err(), NumericError::Overflow);
        assert_eq!(Numeric::parse("1e-20000").unwrap_err(), NumericError::Overflow);
        // NUMERIC(p, s): rounding and the magnitude check, both forms.
        assert_eq!(n("999.995").as_ref().fit(5, 2).unwrap_err(), NumericError::Overflow);
        assert_eq!(n("-999.994").as_ref().fit(5, 2).unwrap().to_string(), "-999.99");
        assert_eq!(n("-0.005").as_ref().fit(5, 2).unwrap().to_string(), "-0.01");
        assert_eq!(n("2.5").as_ref().fit(40, 0).unwrap().to_string(), "3");
        assert_eq!(
            n("1.5").as_ref().fit(40, 30).unwrap().to_string(),
            format!("1.5{}", "0".repeat(29))
        );
        assert_eq!(
            n("99999999999999999999999999.995").as_ref().fit(28, 2).unwrap_err(),
            NumericError::Overflow
        );
        assert_eq!(n("999.994").as_ref().fit(5, 2).unwrap().to_string(), "999.99");
        let nines = "9".repeat(1000);
        assert_eq!(n(&nines).as_ref().fit(1000, 0).unwrap().to_string(), nines);
        assert_eq!(
            n(&format!("1{nines}")).as_ref().fit(1000, 0).unwrap_err(),
            NumericError::Overflow
        );
        assert_eq!(Numeric::from_f64(0.1).unwrap().to_string(), "0.1");
        assert_eq!(Numeric::from_f64(1e20).unwrap().to_string(), "100000000000000000000");
        assert_eq!(Numeric::from_f64(-2.5).unwrap().to_string(), "-2.5");
    }

    #[test]
    fn the_binary_form_is_postgresqls() {
        // numeric_send of 12345.678: 3 digits, weight 1, scale 3: 1, 2345, 6780.
        assert_eq!(
            n("12345.678").as_ref().to_pg_binary(),
            [0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]
        );
        assert_eq!(n("0.00").as_ref().to_pg_binary(), [0, 0, 0, 0, 0, 0, 0, 2]);
        assert_eq!(
            n("-0.0001").as_ref().to_pg_binary(),
            [0, 1, 0xff, 0xff, 0x40, 0, 0, 4, 0, 1]
        );
        for bad in [
            &[0u8, 1, 0, 0][..],
            &[0, 1, 0, 0, 0xc0, 0, 0, 0, 0, 1],
            &[0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10],
        ] {
            assert!(Numeric::from_pg_binary(bad).is_err());
        }
    }

    fn value() -> impl Strategy<Value = Numeric> {
        prop_oneof![
            (any::<i64>(), 0u32..12).prop_map(|(m, s)| Numeric::new(m, s)),
            ("-?[0-9]{1,60}(\\.[0-9]{1,40})?").prop_map(|s| n(&s)),
        ]
    }

    #[test]
    fn zero_past_the_small_scale_has_one_encoding_and_no_sign() {
        // Scale 29 is past the small form's: zero then takes the big form.
        for text in ["0.00000000000000000000000000000", "-0.00000000000000000000000000000"] {
            let z = n(text);
            let product = n("0").as_ref().checked_mul(z.as_ref()).unwrap();
            for v in [z.clone(), z.as_ref().negate(), product] {
                assert_eq!(v.to_string(), "0.00000000000000000000000000000");
                assert!(!v.as_ref().is_negative(), "{text}");
                let mut enc = Vec::new();
                v.as_ref().encode(&mut enc);
                let back = NumericRef::from_encoded(&enc).expect("its own encoding reads back");
                assert_eq!(back.compare(v.as_ref()), Ordering::Equal);
            }
        }
    }

    proptest! {
        /// Whatever the forms of the operands, results agree with exact rational
        /// arithmetic, read back from their text, and round trip through the binary form.
        #[test]
        fn forms_agree(a in value(), b in value()) {
            let (x, y) = (a.as_ref(), b.as_ref());
            let sum = x.checked_add(y).unwrap();
            prop_assert_eq!(sum.as_ref().checked_sub(y).unwrap().as_ref().compare(x), Ordering::Equal);
            prop_assert_eq!(sum.as_ref().scale(), x.scale().max(y.scale()));
            let prod = x.checked_mul(y).unwrap();
            prop_assert_eq!(prod.as_ref().scale(), x.scale() + y.scale());
            if !y.is_zero() {
                let q = x.checked_div(y).unwrap();
                // |q × y − x| ≤ |y| × 10^-scale(q) / 2 (rounded half away).
                let err = q.as_ref().checked_mul(y).unwrap().as_ref().checked_sub(x).unwrap().as_ref().abs();
                let unit = Numeric::new(1, q.as_ref().scale());
                let bound = y.abs().as_ref().checked_mul(unit.as_ref()).unwrap();
                prop_assert!(err.as_ref().compare(bound.as_ref()) != Ordering::Greater);
            }
            for v in [&a, &b, &sum, &prod] {
                let text = v.to_string();
                let back = n(&text);
                prop_assert_eq!(back.to_string(), text.clone());
                prop_assert_eq!(back.small().is_some(), v.small().is_some());
                let bin = Numeric::from_pg_binary(&v.as_ref().to_pg_binary()).unwrap();
                prop_assert_eq!(bin.to_string(), text.clone());
                let mut enc = Vec::new();
                v.as_ref().encode(&mut enc);
                let dec = NumericRef::from_encoded(&enc).unwrap();
                prop_assert_eq!(dec.to_string(), text);
                prop_assert_eq!(dec.small().is_some(), v.small().is_some());
                // Any change of the bytes is refused or reads as some value, never a panic.
                for i in 0..enc.len() {
                    let mut bad = enc.clone();
                    bad[i] ^= 0x81;
                    if let Some(x) = NumericRef::from_encoded(&bad) {
                        let _ = x.to_string();
                    }
                }
            }
            prop_assert_eq!(x.compare(y), y.compare(x).reverse());
            prop_assert_eq!(x.compare(y), x.to_f64().partial_cmp(&y.to_f64()).unwrap_or(Ordering::Equal).then(x.compare(y)));
        }
    }
}
