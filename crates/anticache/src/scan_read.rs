//! The anti-cache's side of scans that read its blocks without merging them (scan.rs):
//! the hold's count, slots kept while scans run, and the reads of adjacent blocks together.

use std::io;
use std::sync::Arc;

use crate::AntiCache;
use crate::blockio::{ReadDone, ReadRequest};
use crate::buf::AlignedBuf;
use crate::scan::{BlockBytes, SCAN_READ_BYTES, ScanDone, ScanHold};

impl AntiCache {
    /// The count of scans reading this partition's blocks ([`ScanHold`]).
    pub fn scan_hold(&self) -> ScanHold {
        self.scans.clone()
    }

    /// Called when a scan ended: once none runs, the slots freed meanwhile are reused.
    pub fn scans_ended(&mut self) {
        if self.scans.active() {
            return;
        }
        for (block, span) in std::mem::take(&mut self.scan_held) {
            self.free_slots(block, span);
        }
    }

    /// Makes a retired block's slots reusable, unless a scan may still read them.
    pub(crate) fn free_slots(&mut self, block: u32, span: u16) {
        if self.scans.active() {
            self.scan_held.push((block, span));
        } else {
            self.store.release(block, span);
        }
    }

    /// The slots of a block live, or retired but not reused yet.
    fn span_of(&self, block: u32) -> Option<u16> {
        self.store
            .meta(block)
            .map(|m| m.span)
            .or_else(|| self.retired.get(&block).copied())
            .or_else(|| self.held.iter().find(|h| h.1 == block).map(|h| h.2))
            .or_else(|| self.scan_held.iter().find(|h| h.0 == block).map(|h| h.1))
    }

    /// Reads blocks for a scan that does not merge them ([`ScanHold`]): `done` gets each
    /// block's bytes (a copy of its write buffer at once if it is still being written,
    /// else from the I/O thread). Blocks that lie one after the other in the file are read
    /// with one request of up to [`SCAN_READ_BYTES`] into one buffer, which their
    /// [`BlockBytes`] share. The bytes are not checked here; the scan checks them.
    pub fn read_for_scan(&mut self, blocks: &[u32], done: ScanDone) {
        let slot = self.store.slot_size() as u64;
        // A run of adjacent blocks: (block, offset, length) each.
        let mut run: Vec<(u32, u64, usize)> = Vec::new();
        for &block in blocks {
            if let Some(buf) = self.writing.get(&block) {
                self.stats.reads_from_write_buffer += 1;
                done(block, Ok(BlockBytes::whole(buf.clone())));
                continue;
            }
            let Some(span) = self.span_of(block) else {
                done(
                    block,
                    Err(io::Error::other(format!(
                        "block {block} is no longer in the block file"
                    ))),
                );
                continue;
            };
            let (offset, len) = (self.store.offset(block), span as usize * slot as usize);
            let adjacent = run.last().is_some_and(|&(_, o, l)| o + l as u64 == offset);
            let run_len: usize = run.iter().map(|r| r.2).sum();
            if !adjacent || run_len + len > SCAN_READ_BYTES {
                self.read_run(std::mem::take(&mut run), &done);
            }
            run.push((block, offset, len));
        }
        self.read_run(run, &done);
    }

    /// One read for adjacent blocks; `done` gets each block's part of its buffer.
    fn read_run(&mut self, run: Vec<(u32, u64, usize)>, done: &ScanDone) {
        let Some(&(first, offset, _)) = run.first() else {
            return;
        };
        let total: usize = run.iter().map(|r| r.2).sum();
        self.store.note_read(total);
        let done = done.clone();
        let split: ReadDone = Arc::new(move |_, result: io::Result<AlignedBuf>| match result {
            Ok(buf) => {
                let buf = Arc::new(buf);
                let mut at = 0;
                for &(block, _, len) in &run {
                    done(
                        block,
                        Ok(BlockBytes {
                            buf: buf.clone(),
                            start: at,
                            len,
                        }),
                    );
                    at += len;
                }
            }
            Err(e) => {
                for &(block, _, _) in &run {
                    done(block, Err(io::Error::new(e.kind(), e.to_string())));
                }
            }
        });
        self.io.read(ReadRequest {
            file: self.store.file().clone(),
            block: first,
            offset,
            buf: AlignedBuf::new(total),
            done: split,
        });
    }
}
