//! The anti-cache block format (docs/format.md, "Anti-cache block, version 1").
//!
//! A block holds evicted tuples of one table:
//!
//! ```text
//! offset  size  field
//!  0      4     magic "PFAB"
//!  4      2     format version (1), little-endian
//!  6      2     span: number of block slots this block occupies (1, or more for a tuple
//!               larger than one slot)
//!  8      4     table id
//! 12      4     tuple count
//! 16      4     payload length in bytes
//! 20      4     CRC-32C of the header (with this field zero) and the payload
//! 24      8     creation time, microseconds since the Unix epoch (i64)
//! 32      ...   payload: per tuple, u32 entry length, u32 tombstone id, then the tuple
//!               serialized as in memory (TupleLayout::serialize)
//!               then zero padding to the block's end
//! ```
//!
//! All integers are little-endian. A reader checks the magic, version, span, lengths and
//! checksum before it trusts anything in a block, and [`BlockReader`] never panics on bad
//! bytes: corruption is reported, not returned as data (every byte read back from disk
//! is checked).

use crate::buf::AlignedBuf;
use crate::error::{AntiCacheError, Result};

pub const MAGIC: [u8; 4] = *b"PFAB";
pub const VERSION: u16 = 1;
pub const HEADER_LEN: usize = 32;
/// Bytes of per-tuple framing (length and tombstone id).
pub const ENTRY_OVERHEAD: usize = 8;

/// What a block's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    pub span: u16,
    pub table: u32,
    pub tuples: u32,
    pub payload_len: u32,
    pub created_micros: i64,
}

/// Builds one block in its own aligned buffer of the block's full size.
pub struct BlockWriter {
    buf: AlignedBuf,
    pos: usize,
    tuples: u32,
}

impl BlockWriter {
    /// A writer for a block of `len` bytes (the slot size times the span).
    pub fn new(len: usize) -> BlockWriter {
        BlockWriter::with_buf(AlignedBuf::new(len))
    }

    /// A writer filling `buf` (whose previous content does not matter).
    pub fn with_buf(buf: AlignedBuf) -> BlockWriter {
        assert!(buf.len() > HEADER_LEN);
        BlockWriter {
            buf,
            pos: HEADER_LEN,
            tuples: 0,
        }
    }

    /// Bytes still free for entries.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn tuples(&self) -> u32 {
        self.tuples
    }

    /// Whether an entry of `tuple_len` bytes fits.
    pub fn fits(&self, tuple_len: usize) -> bool {
        ENTRY_OVERHEAD + tuple_len <= self.remaining()
    }

    /// Appends a tuple; the caller checked [`BlockWriter::fits`]. Returns its offset (its
    /// index among the block's tuples).
    pub fn push(&mut self, tombstone: u32, tuple: &[u8]) -> u32 {
        let p = self.pos;
        self.buf[p..p + 4].copy_from_slice(&(tuple.len() as u32).to_le_bytes());
        self.buf[p + 4..p + 8].copy_from_slice(&tombstone.to_le_bytes());
        self.buf[p + 8..p + 8 + tuple.len()].copy_from_slice(tuple);
        self.pos += ENTRY_OVERHEAD + tuple.len();
        self.tuples += 1;
        self.tuples - 1
    }

    /// Writes the header and checksum and returns the finished block.
    pub fn finish(self, span: u16, table: u32, created_micros: i64) -> AlignedBuf {
        let payload_len = (self.pos - HEADER_LEN) as u32;
        let tuples = self.tuples;
        let pos = self.pos;
        let mut buf = self.buf;
        buf[pos..].fill(0);
        buf[0..4].copy_from_slice(&MAGIC);
        buf[4..6].copy_from_slice(&VERSION.to_le_bytes());
        buf[6..8].copy_from_slice(&span.to_le_bytes());
        buf[8..12].copy_from_slice(&table.to_le_bytes());
        buf[12..16].copy_from_slice(&tuples.to_le_bytes());
        buf[16..20].copy_from_slice(&payload_len.to_le_bytes());
        buf[20..24].copy_from_slice(&0u32.to_le_bytes());
        buf[24..32].copy_from_slice(&created_micros.to_le_bytes());
        let crc = checksum(&buf[..pos]);
        buf[20..24].copy_from_slice(&crc.to_le_bytes());
        buf
    }
}

fn checksum(header_and_payload: &[u8]) -> u32 {
    // The checksum field (bytes 20..24) counts as zero.
    let c = crc32c::crc32c(&header_and_payload[..20]);
    let c = crc32c::crc32c_append(c, &[0u8; 4]);
    crc32c::crc32c_append(c, &header_and_payload[24..])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A verified block: iterate its tuples.
#[derive(Debug)]
pub struct BlockReader<'b> {
    pub header: BlockHeader,
    payload: &'b [u8],
}

impl<'b> BlockReader<'b> {
    /// Checks a block read from disk. `block` names it in errors.
    pub fn open(bytes: &'b [u8], block: u32) -> Result<BlockReader<'b>> {
        let bad = |what: &str| AntiCacheError::Corrupt {
            block,
            what: what.to_string(),
        };
        if bytes.len() < HEADER_LEN {
            return Err(bad("shorter than a block header"));
        }
        if bytes[0..4] != MAGIC {
            return Err(bad("bad magic"));
        }
        let version = u16::from_le_bytes([bytes[4], bytes[5]]);
        if version != VERSION {
            return Err(bad(&format!("unknown format version {version}")));
        }
        let span = u16::from_le_bytes([bytes[6], bytes[7]]);
        let payload_len = u32_at(bytes, 16) as usize;
        if span == 0 || HEADER_LEN + payload_len > bytes.len() {
            return Err(bad("lengths out of range"));
        }
        let stored = u32_at(bytes, 20);
        if checksum(&bytes[..HEADER_LEN + payload_len]) != stored {
            return Err(bad("checksum mismatch"));
        }
        let header = BlockHeader {
            span,
            table: u32_at(bytes, 8),
            tuples: u32_at(bytes, 12),
            payload_len: payload_len as u32,
            created_micros: i64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes")),
        };
        Ok(BlockReader {
            header,
            payload: &bytes[HEADER_LEN..HEADER_LEN + payload_len],
        })
    }

    /// The tuples as `(offset, tombstone id, serialized tuple)`. Framing errors end the
    /// iteration with an `Err` item.
    pub fn entries(&self) -> impl Iterator<Item = Result<(u32, u32, &'b [u8])>> + 'b {
        let mut rest = self.payload;
        let mut i = 0u32;
        let n = self.header.tuples;
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed {
                return None;
            }
            if i == n {
                if !rest.is_empty() {
                    failed = true;
                    return Some(Err(AntiCacheError::Corrupt {
                        block: 0,
                        what: "trailing payload".into(),
                    }));
                }
                return None;
            }
            if rest.len() < ENTRY_OVERHEAD {
                failed = true;
                return Some(Err(AntiCacheError::Corrupt {
                    block: 0,
                    what: "truncated entry".into(),
                }));
            }
            let len = u32_at(rest, 0) as usize;
            let tomb = u32_at(rest, 4);
            let Some(body) = rest.get(ENTRY_OVERHEAD..ENTRY_OVERHEAD + len) else {
                failed = true;
                return Some(Err(AntiCacheError::Corrupt {
                    block: 0,
                    what: "entry longer than payload".into(),
                }));
            };
            rest = &rest[ENTRY_OVERHEAD + len..];
            let out = (i, tomb, body);
            i += 1;
            Some(Ok(out))
        })
    }

    /// The tuple at `offset`, if the block has one there.
    pub fn entry(&self, offset: u32) -> Result<Option<(u32, &'b [u8])>> {
        for e in self.entries() {
            let (i, tomb, body) = e?;
            if i == offset {
                return Ok(Some((tomb, body)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn build(tuples: &[(u32, Vec<u8>)], size: usize) -> Vec<u8> {
        let mut w = BlockWriter::new(size);
        for (t, b) in tuples {
            assert!(w.fits(b.len()));
            w.push(*t, b);
        }
        w.finish(1, 9, 1234).to_vec()
    }

    #[test]
    fn round_trip() {
        let tuples = vec![(5, vec![1, 2, 3]), (7, vec![]), (1, vec![9; 100])];
        let buf = build(&tuples, 1024);
        let r = BlockReader::open(&buf, 0).unwrap();
        assert_eq!(r.header.table, 9);
        assert_eq!(r.header.tuples, 3);
        assert_eq!(r.header.created_micros, 1234);
        let got: Vec<(u32, u32, Vec<u8>)> = r
            .entries()
            .map(|e| e.map(|(i, t, b)| (i, t, b.to_vec())))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(got, vec![(0, 5, vec![1, 2, 3]), (1, 7, vec![]), (2, 1, vec![9; 100])]);
        assert_eq!(r.entry(2).unwrap().unwrap().0, 1);
        assert!(r.entry(3).unwrap().is_none());
    }

    proptest! {
        /// Any single flipped byte in header or payload is detected; nothing panics on
        /// arbitrary bytes.
        #[test]
        fn corruption_is_detected(at in 0usize..200, flip in 1u8..=255) {
            let buf = build(&[(5, vec![1, 2, 3]), (6, vec![4; 150])], 512);
            let mut bad = buf.clone();
            bad[at] ^= flip;
            prop_assert!(BlockReader::open(&bad, 0).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
            if let Ok(r) = BlockReader::open(&bytes, 0) {
                for e in r.entries() { let _ = e; }
            }
        }

        #[test]
        fn valid_checksum_bad_framing_is_an_error(n in 1u32..5, len in 0u32..1000) {
            // Forge a block with a correct checksum but inconsistent entries.
            let mut buf = vec![0u8; 512];
            let payload_len = 16u32;
            buf[0..4].copy_from_slice(&MAGIC);
            buf[4..6].copy_from_slice(&VERSION.to_le_bytes());
            buf[6..8].copy_from_slice(&1u16.to_le_bytes());
            buf[12..16].copy_from_slice(&n.to_le_bytes());
            buf[16..20].copy_from_slice(&payload_len.to_le_bytes());
            buf[32..36].copy_from_slice(&len.to_le_bytes());
            let crc = checksum(&buf[..32 + payload_len as usize]);
            buf[20..24].copy_from_slice(&crc.to_le_bytes());
            let r = BlockReader::open(&buf, 0).unwrap();
            let all: Vec<_> = r.entries().collect();
                        // 16 payload bytes frame exactly as one 8-byte entry, or two empty ones (the
            // second entry's header is the zero padding); anything else must be rejected.
            let valid = (n == 1 && len == 8) || (n == 2 && len == 0);
            prop_assert_eq!(all.iter().all(|e| e.is_ok()), valid);
        }
    }
}
