//! Record bodies gathered on an appending thread, appended as one ([`Chunk`]).

use crate::commandlog::error::{LogError, Result};
use crate::commandlog::format::MAX_BODY_LEN;
use crate::commandlog::record::StreamedCall;

use super::shared::WINDOW_BYTES;

/// Record bodies gathered for one [`super::CommandLog::append_chunk`], each behind its length
/// (u32, little-endian) in one buffer: one allocation for many records, built on the
/// appending thread.
///
/// A chunk may end with one large call record that is not encoded here
/// ([`Chunk::push_call`]); it is then *sealed*: it takes no more records.
#[derive(Debug, Default)]
pub struct Chunk {
    pub(super) bytes: Vec<u8>,
    pub(super) count: u64,
    pub(super) streamed: Option<StreamedCall>,
}

impl Chunk {
    pub fn new() -> Chunk {
        Chunk::default()
    }

    /// Adds a record whose body `encode` writes (e.g. [`crate::encode_record`]). A sealed
    /// chunk refuses it.
    pub fn push_with(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        if self.is_sealed() {
            return Err(sealed());
        }
        let at = self.bytes.len();
        self.bytes.extend_from_slice(&[0; 4]);
        encode(&mut self.bytes);
        let len = self.bytes.len() - at - 4;
        match u32::try_from(len) {
            Ok(l) if len <= MAX_BODY_LEN => {
                self.bytes[at..at + 4].copy_from_slice(&l.to_le_bytes());
                self.count += 1;
                Ok(())
            }
            _ => {
                self.bytes.truncate(at);
                Err(LogError::Failed(format!(
                    "a record of {len} bytes is larger than the 4GiB a record may hold"
                )))
            }
        }
    }

    /// Adds a call record: encoded here if it is small, else kept as it is, to be encoded
    /// by the writer as it writes it (through its window: [`WINDOW_BYTES`]), and the
    /// chunk is sealed. A sealed chunk refuses it.
    pub fn push_call(&mut self, call: StreamedCall) -> Result<()> {
        if self.is_sealed() {
            return Err(sealed());
        }
        if call.len() <= WINDOW_BYTES {
            return self.push_with(|out| call.encode_into(out));
        }
        if call.len() > MAX_BODY_LEN {
            return Err(LogError::Failed(format!(
                "a record of {} bytes is larger than the 4GiB a record may hold",
                call.len()
            )));
        }
        self.streamed = Some(call);
        self.count += 1;
        Ok(())
    }

    /// Whether the chunk ends with a record the writer encodes, and takes no more.
    pub fn is_sealed(&self) -> bool {
        self.streamed.is_some()
    }

    /// Bytes the chunk's buffer holds without growing.
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// Records in the chunk.
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bodies of a chunk's bytes (built by `push_with`, so well formed).
    pub(super) fn bodies(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
        let mut rest = bytes;
        std::iter::from_fn(move || {
            let (len, tail) = rest.split_first_chunk::<4>()?;
            let len = u32::from_le_bytes(*len) as usize;
            let (body, tail) = tail.split_at_checked(len)?;
            rest = tail;
            Some(body)
        })
    }
}

pub(super) fn sealed() -> LogError {
    LogError::Failed("internal: a record appended to a sealed command log chunk".into())
}
