//! Self-verifying YCSB field values.
//!
//! The value of field `f` of record `k` written at version `v` is derived from `(k, f, v)`
//! alone: 8 lowercase hex digits of `v`, then printable characters (`0x30..=0x6F`) from a
//! wyrand stream seeded by `(k, f, v)`, 8 bytes per step. A reader parses the version,
//! regenerates the rest and compares word by word, so every read checks that it got *some*
//! value written for exactly that record and field, uncorrupted, without knowing which
//! version is current. Generating and checking 1 KiB costs about 130 word operations.

/// Hex digits of the version at the start of every value.
pub const VERSION_DIGITS: usize = 8;
/// The shortest field that can carry a version and some payload.
pub const MIN_FIELD_LEN: usize = VERSION_DIGITS + 1;

#[inline]
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Eight printable payload bytes at a time.
struct Payload(u64);

impl Payload {
    #[inline]
    fn new(key: u64, field: u32, version: u32) -> Payload {
        Payload(splitmix(key ^ splitmix(((field as u64) << 32) | version as u64)))
    }

    /// The next 8 bytes, as a little-endian word (wyrand, each byte mapped to 0x30..=0x6F).
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xe703_7ed1_a0b4_28db) as u128);
        let x = ((t >> 64) ^ t) as u64;
        (x & 0x3F3F_3F3F_3F3F_3F3F) + 0x3030_3030_3030_3030
    }
}

/// Writes the value of `(key, field, version)`, `len` bytes long, into `out`.
pub fn fill(key: u64, field: u32, version: u32, len: usize, out: &mut String) {
    assert!(len >= MIN_FIELD_LEN, "field length {len} below {MIN_FIELD_LEN}");
    let mut bytes = std::mem::take(out).into_bytes();
    bytes.clear();
    bytes.reserve(len);
    bytes.extend_from_slice(format!("{version:08x}").as_bytes());
    let mut p = Payload::new(key, field, version);
    while bytes.len() < len {
        let w = p.next().to_le_bytes();
        let take = (len - bytes.len()).min(8);
        bytes.extend_from_slice(&w[..take]);
    }
    *out = String::from_utf8(bytes).expect("ASCII");
}

/// The value of `(key, field, version)` as a new string.
pub fn value(key: u64, field: u32, version: u32, len: usize) -> String {
    let mut s = String::new();
    fill(key, field, version, len, &mut s);
    s
}

#[inline]
fn hex_digit(c: u8) -> Option<u32> {
    match c {
        b'0'..=b'9' => Some((c - b'0') as u32),
        b'a'..=b'f' => Some((c - b'a' + 10) as u32),
        _ => None,
    }
}

/// Whether `v` is a value that was written for `key` and `field` (at any version), with
/// the expected length.
pub fn verify(key: u64, field: u32, v: &str, len: usize) -> bool {
    verify_bytes(key, field, v.as_bytes(), len)
}

/// [`verify`] for a value's bytes (as read off the wire, not yet checked to be UTF-8).
pub fn verify_bytes(key: u64, field: u32, b: &[u8], len: usize) -> bool {
    if b.len() != len || len < MIN_FIELD_LEN {
        return false;
    }
    let mut version = 0u32;
    for &c in &b[..VERSION_DIGITS] {
        match hex_digit(c) {
            Some(d) => version = (version << 4) | d,
            None => return false,
        }
    }
    let mut p = Payload::new(key, field, version);
    let mut rest = &b[VERSION_DIGITS..];
    while rest.len() >= 8 {
        let (head, tail) = rest.split_at(8);
        if u64::from_le_bytes(head.try_into().expect("8 bytes")) != p.next() {
            return false;
        }
        rest = tail;
    }
    if !rest.is_empty() {
        let w = p.next().to_le_bytes();
        // Byte by byte: a slice comparison would call memcmp for a handful of bytes.
        return rest.iter().zip(w).all(|(a, b)| *a == b);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn values_verify_for_their_record_only(key: u64, field in 0u32..10, version: u32, len in 9usize..300) {
            let v = value(key, field, version, len);
            prop_assert_eq!(v.len(), len);
            prop_assert!(verify(key, field, &v, len));
            // Another record's or field's value differs in its payload: with 8 payload
            // bytes (48 random bits) or more a collision is out of reach; a 1-byte payload
            // (6 bits) matches another record's one time in 64, so short fields only check
            // that they verify.
            if len >= MIN_FIELD_LEN + 8 {
                prop_assert!(!verify(key.wrapping_add(1), field, &v, len));
                prop_assert!(!verify(key, (field + 1) % 10, &v, len));
            }
            // Any single corrupted byte is caught.
            let mut bytes = v.into_bytes();
            let i = (key as usize) % len;
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let corrupted = String::from_utf8(bytes).unwrap();
            prop_assert!(!verify(key, field, &corrupted, len));
        }
    }

    #[test]
    fn versions_are_readable() {
        let v = value(7, 3, 0xabc, 100);
        assert!(v.starts_with("00000abc"));
        assert!(verify(7, 3, &v, 100));
        assert!(!verify(7, 3, &v[..99], 100));
    }
}
