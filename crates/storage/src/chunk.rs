//! Large memory chunks taken straight from the operating system.
//!
//! Tuple and string storage is carved out of anonymous memory maps rather than the general
//! allocator, for two reasons: the bytes we account are exactly the bytes the process maps
//! (page-rounded), and a chunk given back is returned to the OS at once, so resident memory
//! follows the accounting instead of the allocator's retention heuristics.

use memmap2::MmapMut;

use crate::error::{Result, StorageError};

/// The page size used for rounding chunk sizes.
pub const PAGE_SIZE: usize = 4096;

/// One anonymous mapping.
pub(crate) struct Chunk {
    map: MmapMut,
}

impl Chunk {
    /// Maps `len` bytes (rounded up to whole pages) of zeroed memory.
    pub(crate) fn new(len: usize) -> Result<Chunk> {
        let len = round_to_page(len.max(1));
        let map = MmapMut::map_anon(len).map_err(|e| {
            StorageError::Internal(format!("cannot map {len} bytes of memory: {e}"))
        })?;
        Ok(Chunk { map })
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }

    /// Bytes mapped (what the chunk costs when all its pages are touched).
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

pub(crate) fn round_to_page(len: usize) -> usize {
    len.div_ceil(PAGE_SIZE) * PAGE_SIZE
}
