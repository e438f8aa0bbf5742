//! Which partition a row belongs to.
//!
//! The partition of a row is a hash of its partition column's value (converted to the
//! column type) modulo the number of partitions. The hash is defined here, byte for byte,
//! because it decides where rows are stored and must not change between versions
//! (docs/format.md, "Partitioning"):
//!
//! * integers and timestamps: `fmix64(value as u64)` (MurmurHash3's 64-bit finalizer);
//! * every other type: `fmix64(fnv1a64(bytes))` over the value's index-key encoding.

use crate::index::encode_value;
use permafrost_types::{DataType, ValueRef};

/// MurmurHash3's 64-bit finalizer.
#[inline]
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// FNV-1a, 64-bit.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The stable hash of a partition-column value. NULL hashes to 0.
pub fn partition_hash(v: ValueRef<'_>, ty: &DataType) -> u64 {
    match v {
        ValueRef::Null => 0,
        ValueRef::Int(i) | ValueRef::Timestamp(i) | ValueRef::TimestampTz(i) => fmix64(i as u64),
        ValueRef::Date(d) => fmix64(d as i64 as u64),
        other => {
            let mut buf = Vec::with_capacity(32);
            if encode_value(&mut buf, other, ty) {
                fmix64(fnv1a64(&buf))
            } else {
                0
            }
        }
    }
}

/// The partition (0-based) of a value among `partitions`.
#[inline]
pub fn partition_of(v: ValueRef<'_>, ty: &DataType, partitions: u32) -> u32 {
    (partition_hash(v, ty) % partitions.max(1) as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_stable() {
        // These values are part of the on-disk contract; changing them moves rows.
        assert_eq!(fmix64(1), 0xb456_bcfc_34c2_cb2c);
        assert_eq!(
            partition_of(ValueRef::Int(1), &DataType::BigInt, 2),
            (0xb456_bcfc_34c2_cb2cu64 % 2) as u32
        );
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        let t = partition_hash(ValueRef::Text("abc"), &DataType::Varchar(None));
        assert_eq!(t, fmix64(fnv1a64(b"abc\0\0")));
    }

    #[test]
    fn integer_widths_agree() {
        for p in 1..8 {
            assert_eq!(
                partition_of(ValueRef::Int(77), &DataType::SmallInt, p),
                partition_of(ValueRef::Int(77), &DataType::BigInt, p)
            );
        }
    }
}
