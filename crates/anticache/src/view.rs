//! A partition's blocks as its anti-cache held them at one point, to be read elsewhere
//! ([`BlockView`]): by a forked reader that decodes the evicted tuples its statement
//! meets where they lie instead of merging them (the executor's block_rows.rs).

use std::collections::HashMap;
use std::sync::Arc;

use permafrost_io::fs::BlockFile;

use crate::AntiCache;
use crate::buf::AlignedBuf;
use crate::error::{AntiCacheError, Result};

/// Where each live block of a partition lies: its place in the block file, or its write
/// buffer while it is being written. Taken while the partition is held; its blocks keep
/// their bytes only as long as the partition reuses no slot (the caller enters the
/// partition's [`crate::ScanHold`] first).
pub struct BlockView {
    file: Arc<dyn BlockFile>,
    located: HashMap<u32, (u64, usize)>,
    writing: HashMap<u32, Arc<AlignedBuf>>,
}

impl AntiCache {
    /// Its blocks as they are now ([`BlockView`]).
    pub fn block_view(&self) -> BlockView {
        BlockView {
            file: self.store.file().clone(),
            located: self
                .store
                .live()
                .filter_map(|(b, _)| self.store.location(b).map(|l| (b, l)))
                .collect(),
            writing: self.writing.clone(),
        }
    }
}

impl BlockView {
    /// The block file (a forked reader keeps its descriptor).
    pub fn file(&self) -> &Arc<dyn BlockFile> {
        &self.file
    }

    /// Block `b`'s bytes, read on this thread (a copy of its write buffer if it was being
    /// written). Not checked here: the reader checks them
    /// ([`crate::block::BlockReader::open`]).
    pub fn read_block(&self, b: u32) -> Result<Vec<u8>> {
        if let Some(w) = self.writing.get(&b) {
            return Ok(w.to_vec());
        }
        let &(off, len) = self.located.get(&b).ok_or_else(|| AntiCacheError::Corrupt {
            block: b,
            what: "a tombstone names a block the directory did not hold".into(),
        })?;
        let mut buf = AlignedBuf::new(len);
        self.file
            .read_at(&mut buf, off)
            .map_err(|e| AntiCacheError::io("read", self.file.path(), &e))?;
        Ok(buf.to_vec())
    }
}
