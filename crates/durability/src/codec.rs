//! The one decoder of the little-endian formats this crate reads back from disk (command-log
//! records, segment headers, snapshot sections) and its typed errors.
//!
//! Every read is checked: a read past the end, a count larger than what is left, text that
//! is not UTF-8, an unknown tag, a field with a value it cannot have or bytes left over are
//! each a [`DecodeError`] naming the byte offset, never a panic and never a guessed value.
//! Callers add where the bytes came from (the file, the record's LSN, the section).

use permafrost_storage::index::{IndexKey, KeyBuf};

/// Why bytes read back from disk could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{what} at byte {at} needs {need} bytes, {left} left")]
    Truncated {
        what: &'static str,
        at: usize,
        need: usize,
        left: usize,
    },
    #[error("{what} at byte {at} is {count}, more than the {left} bytes left hold")]
    CountTooLarge {
        what: &'static str,
        at: usize,
        count: usize,
        left: usize,
    },
    #[error("{what} at byte {at} is not UTF-8")]
    NotUtf8 { what: &'static str, at: usize },
    #[error("unknown {what} {value} at byte {at}")]
    UnknownTag { what: &'static str, value: u64, at: usize },
    #[error("{what} at byte {at} {problem}")]
    Invalid {
        what: &'static str,
        at: usize,
        problem: String,
    },
    #[error("{left} unexpected bytes at byte {at}, after the end")]
    Trailing { at: usize, left: usize },
}

/// A checked reader over bytes read back from disk.
pub struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub fn new(bytes: &'a [u8]) -> Decoder<'a> {
        Decoder { bytes, pos: 0 }
    }

    /// The offset of the next byte to read.
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn is_done(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes (`what` names them in the error).
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated {
                what,
                at: self.pos,
                need: n,
                left: self.remaining(),
            });
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    pub fn i64(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    /// Sixteen bytes as they are (a numeric's serialized form).
    pub fn bytes16(&mut self, what: &'static str) -> Result<[u8; 16], DecodeError> {
        self.array(what)
    }

    /// A u32 count of items of at least `min_item` bytes each, checked against what is
    /// left (so a corrupt count never makes the caller allocate for it).
    pub fn count(&mut self, min_item: usize, what: &'static str) -> Result<usize, DecodeError> {
        let at = self.pos;
        let count = self.u32(what)? as usize;
        if count.saturating_mul(min_item.max(1)) > self.remaining() {
            return Err(DecodeError::CountTooLarge {
                what,
                at,
                count,
                left: self.remaining(),
            });
        }
        Ok(count)
    }

    /// A u32 length and that many bytes.
    pub fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let n = self.count(1, what)?;
        self.take(n, what)
    }

    /// A u32 length and that many bytes of UTF-8.
    pub fn string(&mut self, what: &'static str) -> Result<String, DecodeError> {
        let at = self.pos;
        let b = self.bytes(what)?;
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| DecodeError::NotUtf8 { what, at })
    }

    /// An index key: tag 0 and an i64, or tag 1 and its bytes.
    pub fn key(&mut self, what: &'static str) -> Result<IndexKey, DecodeError> {
        let at = self.pos;
        match self.u8(what)? {
            0 => Ok(IndexKey::Int(self.i64(what)?)),
            1 => Ok(IndexKey::Bytes(KeyBuf::new(self.bytes(what)?))),
            t => Err(DecodeError::UnknownTag {
                what: "key tag",
                value: t as u64,
                at,
            }),
        }
    }

    /// Fails unless everything was read.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.is_done() {
            Ok(())
        } else {
            Err(DecodeError::Trailing {
                at: self.pos,
                left: self.remaining(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_read_past_the_end_or_of_bad_bytes_is_a_typed_error() {
        let mut d = Decoder::new(&[1, 0, 0, 0, 0xFF]);
        assert_eq!(d.u32("n").unwrap(), 1);
        assert_eq!(
            d.u32("m"),
            Err(DecodeError::Truncated {
                what: "m",
                at: 4,
                need: 4,
                left: 1
            })
        );
        assert_eq!(d.finish(), Err(DecodeError::Trailing { at: 4, left: 1 }));
        let mut d = Decoder::new(&[9, 0, 0, 0, 1, 2]);
        assert!(matches!(d.bytes("b"), Err(DecodeError::CountTooLarge { count: 9, .. })));
        let mut d = Decoder::new(&[2, 0, 0, 0, 0xC3, 0x28]);
        assert_eq!(d.string("s"), Err(DecodeError::NotUtf8 { what: "s", at: 0 }));
        let mut d = Decoder::new(&[7]);
        assert!(matches!(d.key("k"), Err(DecodeError::UnknownTag { value: 7, .. })));
    }
}
