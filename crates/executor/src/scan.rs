//! Scans over evicted data that stream instead of bringing the data back.
//!
//! Anti-caching brings the evicted tuples a transaction needs back into memory and runs it
//! again (retrieval.rs). For a scan of a table larger than memory that cannot work: what
//! it needs does not fit, and merging it would evict the rest. So an ad hoc query that is a
//! single-table scan ([`permafrost_sql::Deferred`]) runs over the tuples in memory as usual
//! — that part of its result is answered at once — and leaves its evicted tuples for
//! later: the statement records, per partition, the blocks they are in and which entries
//! of each block were live. Before it releases the partitions it *enters* their
//! [`ScanHold`]s: from then until the scan ends, no block's slots are reused, so every
//! recorded block keeps on disk exactly the bytes it had when the statement ran (blocks are
//! never rewritten in place; a merge only drops tombstones). Together the two parts read
//! the table as of one point in the serial order, and no partition waits: the partitions
//! go on with other transactions while the scan reads.
//!
//! The rest of the result ([`BlockScan`], a [`MoreRows`]) is read by the caller's thread:
//! it asks each partition to read the blocks in order (`Msg::ScanRead`, served from the
//! write buffer or by the I/O thread, adjacent blocks in one read, up to
//! `READ_AHEAD_BYTES` ahead), checks each block, decodes the
//! recorded entries one at a time and feeds them to the statement's filters, projection or
//! aggregate. Rows are handed out block by block, so the transient memory is a few blocks
//! and one batch of rows, whatever the table's size; nothing read is merged back. When the
//! scan ends (or is dropped: a client that went away, a cancel) it leaves the holds and
//! tells the partitions, which then reuse the slots freed meanwhile.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use permafrost_anticache::block::BlockReader;
use permafrost_anticache::{BlockBytes, ScanDone, ScanHold};
use permafrost_sql::{Deferred, MoreRows, Rows, SqlError};
use permafrost_storage::{DetachedRow, StorageError};

use crate::error::{Error, Result};
use crate::partition::msg::Msg;
use crate::procedure::Procedure;
use crate::reply::StopFlag;
use crate::shared::Shared;

/// Bytes of block reads a scan keeps in flight (its transient buffer), at least two blocks,
/// taken from the statement pool; when the pool has not that much room, a scan keeps what
/// a statement holds without taking any ([`permafrost_sql::workmem::POOL_STEP`]).
const READ_AHEAD_BYTES: usize = 2 * permafrost_anticache::SCAN_READ_BYTES;

/// How often a scan waiting for a block looks whether it was asked to stop.
const STOP_POLL: Duration = Duration::from_millis(50);

type ReadResult = (usize, u32, io::Result<BlockBytes>);

/// The evicted part of an ad hoc scan, read after its statement (see the module docs).
pub(crate) struct BlockScan {
    proc: Arc<Procedure>,
    deferred: Option<Box<Deferred>>,
    shared: Arc<Shared>,
    /// The partitions whose holds the scan entered.
    held: ScanHolds,
    stop: Option<StopFlag>,
    /// Next block to ask for: (part, block index).
    next: (usize, usize),
    /// Blocks asked for, in order.
    asked: VecDeque<(usize, usize)>,
    /// Blocks kept in flight.
    read_ahead: usize,
    /// Their bytes, taken from the statement pool (given back when the scan ends).
    _read_ahead_memory: permafrost_sql::workmem::Reservation,
    /// Blocks read and not yet used, by (part, block id).
    arrived: HashMap<(usize, u32), io::Result<BlockBytes>>,
    tx: Sender<ReadResult>,
    rx: Receiver<ReadResult>,
    /// The decoder of the part being read.
    row: Option<(usize, DetachedRow)>,
    done: bool,
    /// What follows the scan's last rows: a sorted result merged from the runs it spilled,
    /// or rows it spilled in order (permafrost_sql's `exec/spill.rs`).
    tail: Option<Box<dyn MoreRows>>,
}

/// The scan holds ([`ScanHold`]) something reading a partition's blocks outside it entered
/// (a scan's evicted part, a forked reader that reads evicted tuples where they lie): while
/// they are held, the partitions reuse no block's slots, so every block their tombstones
/// name keeps its bytes. Left, and the partitions told, once: by [`ScanHolds::leave`] or
/// when dropped.
#[derive(Default)]
pub(crate) struct ScanHolds(Option<Arc<Shared>>, Vec<(u32, ScanHold)>);

impl ScanHolds {
    /// Enters the holds of `partitions` (call while holding them); fails for a partition
    /// without an anti-cache.
    pub(crate) fn enter(shared: &Arc<Shared>, partitions: impl Iterator<Item = u32>) -> Result<ScanHolds> {
        let mut holds = ScanHolds(Some(shared.clone()), Vec::new());
        for p in partitions {
            let Some(hold) = shared.scan_holds.get(p as usize).cloned().flatten() else {
                return Err(Error::Internal(format!(
                    "partition {p} has evicted tuples but no anti-cache"
                )));
            };
            hold.enter();
            holds.1.push((p, hold));
        }
        Ok(holds)
    }

    /// Leaves the holds and tells the partitions (once).
    pub(crate) fn leave(&mut self) {
        let Some(shared) = &self.0 else { return };
        for (p, hold) in self.1.drain(..) {
            hold.leave();
            let _ = shared.senders[p as usize].send(Msg::ScansEnded);
        }
    }
}

impl Drop for ScanHolds {
    fn drop(&mut self) {
        self.leave();
    }
}

impl BlockScan {
    /// Starts the evicted part of a scan. Call while the statement still holds its
    /// partitions (before anything else runs at them): it enters their holds.
    pub(crate) fn start(
        shared: Arc<Shared>,
        proc: Arc<Procedure>,
        deferred: Box<Deferred>,
        stop: Option<StopFlag>,
    ) -> Result<BlockScan> {
        let held = ScanHolds::enter(&shared, deferred.parts.iter().map(|p| p.partition))?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let block_size = shared
            .config
            .anticache
            .as_ref()
            .map_or(READ_AHEAD_BYTES, |a| a.block_size);
        // Sixteen scans reading at once kept 32 MiB of blocks in flight that nothing counted.
        let mut memory = permafrost_sql::workmem::Reservation::default();
        let ahead = match memory.cover(READ_AHEAD_BYTES, Some(&shared.statement_pool)) {
            Ok(()) => READ_AHEAD_BYTES,
            Err(_) => permafrost_sql::workmem::POOL_STEP,
        };
        Ok(BlockScan {
            read_ahead: (ahead / block_size.max(1)).max(2),
            _read_ahead_memory: memory,
            proc,
            deferred: Some(deferred),
            shared,
            held,
            stop,
            next: (0, 0),
            asked: VecDeque::new(),
            arrived: HashMap::new(),
            tx,
            rx,
            row: None,
            done: false,
            tail: None,
        })
    }

    fn deferred(&self) -> &Deferred {
        self.deferred.as_deref().expect("present until the scan ends")
    }

    /// Asks for blocks until `read_ahead` are in flight or none is left: in batches (one
    /// message per partition, whose adjacent blocks are read together), once half of the
    /// read-ahead has been used.
    fn ask(&mut self) {
        if self.asked.len() > self.read_ahead / 2 {
            return;
        }
        while self.asked.len() < self.read_ahead {
            let (mut p, mut b) = self.next;
            let parts = &self.deferred().parts;
            while p < parts.len() && b >= parts[p].blocks.len() {
                p += 1;
                b = 0;
            }
            if p >= parts.len() {
                self.next = (p, b);
                return;
            }
            let end = (b + self.read_ahead - self.asked.len()).min(parts[p].blocks.len());
            let partition = parts[p].partition;
            let blocks: Vec<u32> = parts[p].blocks[b..end].iter().map(|x| x.0).collect();
            let tx = self.tx.clone();
            let done: ScanDone = Arc::new(move |block, result| {
                let _ = tx.send((p, block, result));
            });
            if let Err(e) = self.shared.senders[partition as usize].send(Msg::ScanRead { blocks, done })
                && let Msg::ScanRead { blocks, .. } = e.into_inner()
            {
                for block in blocks {
                    let _ = self
                        .tx
                        .send((p, block, Err(io::Error::other("the database is shutting down"))));
                }
            }
            self.asked.extend((b..end).map(|i| (p, i)));
            self.next = (p, end);
        }
    }

    /// Waits for the bytes of block `(p, b)`.
    fn wait_for(&mut self, p: usize, block: u32) -> Result<BlockBytes, SqlError> {
        loop {
            if let Some(r) = self.arrived.remove(&(p, block)) {
                let partition = self.deferred().parts[p].partition;
                return r.map_err(|e| {
                    SqlError::Storage(StorageError::Internal(format!(
                        "could not read block {block} of partition {partition}: {e}"
                    )))
                });
            }
            if self.stop.as_ref().is_some_and(StopFlag::is_set) {
                return Err(SqlError::Cancelled);
            }
            match self.rx.recv_timeout(STOP_POLL) {
                Ok((q, b, r)) => {
                    self.arrived.insert((q, b), r);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(SqlError::Storage(StorageError::Internal("block reads stopped".into())));
                }
            }
        }
    }

    /// Reads the next block and feeds its recorded entries; `false` when none is left.
    fn step(&mut self) -> Result<bool, SqlError> {
        self.ask();
        let Some((p, b)) = self.asked.pop_front() else {
            return Ok(false);
        };
        let block = self.deferred().parts[p].blocks[b].0;
        let buf = self.wait_for(p, block)?;
        if self.row.as_ref().is_none_or(|(q, _)| *q != p) {
            self.row = Some((p, DetachedRow::new(self.deferred().parts[p].layout.clone())));
        }
        let deferred = self.deferred.as_deref_mut().expect("present until the scan ends");
        let part = &deferred.parts[p];
        let (partition, table) = (part.partition, part.table);
        let corrupt = |what: String| {
            SqlError::Storage(StorageError::Corrupt(format!(
                "block {block} of partition {partition}: {what}"
            )))
        };
        let reader = BlockReader::open(&buf, block).map_err(|e| corrupt(e.to_string()))?;
        if reader.header.table != table {
            return Err(corrupt(format!(
                "holds table {} where table {table} was expected",
                reader.header.table
            )));
        }
        let bits = std::mem::take(&mut deferred.parts[p].blocks[b].1);
        let (_, row) = self.row.as_mut().expect("set above");
        for e in reader.entries() {
            let (offset, _, bytes) = e.map_err(|e| corrupt(e.to_string()))?;
            if !permafrost_sql::DeferredPart::wanted(&bits, offset) {
                continue;
            }
            let r = row.load(bytes).map_err(|e| corrupt(e.to_string()))?;
            if deferred.feed(&self.proc.statements[0], r)?.is_break() {
                break;
            }
        }
        Ok(!deferred.is_full())
    }

    /// Ends the scan on error `e`, which is returned: nothing more is read.
    fn end(&mut self, e: SqlError) -> SqlError {
        self.done = true;
        self.held.leave();
        e
    }
}

impl MoreRows for BlockScan {
    fn next_rows(&mut self) -> Result<Option<Rows>, SqlError> {
        if let Some(tail) = &mut self.tail {
            return tail.next_rows();
        }
        while !self.done {
            let more = match self.step() {
                Ok(m) => m,
                Err(e) => return Err(self.end(e)),
            };
            if !more {
                self.done = true;
                self.held.leave();
                let d = self.deferred.take().expect("present until the scan ends");
                let mut rows = d.finish(&self.proc.statements[0])?;
                self.tail = rows.take_rest();
                return Ok(Some(rows));
            }
            let d = self.deferred.as_deref_mut().expect("present until the scan ends");
            let taken = match d.take_rows(&self.proc.statements[0]) {
                Ok(t) => t,
                Err(e) => return Err(self.end(e)),
            };
            if let Some(rows) = taken
                && !rows.is_empty()
            {
                return Ok(Some(rows));
            }
        }
        Ok(None)
    }
}

impl Drop for BlockScan {
    fn drop(&mut self) {
        self.held.leave();
    }
}

/// Reads the rest of a result into it (for callers that take results whole), within
/// `limit` bytes (54000 past it).
pub(crate) fn complete(mut rows: Rows, limit: usize) -> Result<Rows> {
    let Some(mut rest) = rows.take_rest() else {
        return Ok(rows);
    };
    while let Some(more) = rest.next_rows()? {
        rows.append(&more);
        if rows.held_bytes() > limit {
            return Err(SqlError::OutOfWorkMem(limit).into());
        }
    }
    Ok(rows)
}
