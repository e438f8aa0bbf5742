//! What a query holds past its working memory, on disk: the sorted runs of an ORDER BY or
//! DISTINCT, merged as the result streams ([`SortedRest`]), and the rows of a plain result
//! that its client has not taken yet ([`SpillQueue`]).
//!
//! A spill file is a [`TempFile`] (`permafrost_io::temp`: nameless, in the data
//! directory's `tmp` folder, gone when closed). Its format (docs/format.md, "Spill files"):
//! the 8 bytes `PFSPILL1`, then frames, each a u32 LE payload length, the CRC-32C of the
//! payload (u32 LE) and the payload: records, each a u32 LE length and one row in the
//! result buffer's encoding (crate::rows), checked when it is read back. A run is a range
//! of whole frames. A frame that does not check is an error (XX001), never a wrong row.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::Arc;

use permafrost_io::TempFile;
use permafrost_types::{Value, ValueRef};

use crate::error::{Result, SqlError};
use crate::rows::{ColumnInfo, MoreRows, Rows, decode_row, encode_row};
use crate::workmem::values_size;

use super::keys::sort_order;

/// The first bytes of every spill file (format version 1).
const MAGIC: &[u8; 8] = b"PFSPILL1";
/// Bytes of records a frame gathers before it is written (one record may take it past).
const FRAME_BYTES: usize = 64 << 10;
/// The largest frame a reader accepts (a record holds at most one row, below 1 GiB).
const MAX_FRAME: u32 = 1 << 30;
/// Bytes of rows a batch handed to the client holds (about).
pub(super) const BATCH_BYTES: usize = 64 << 10;
/// Runs merged at once: each holds a frame's buffer while merging; more runs than this are
/// merged in passes first.
const FAN_IN: usize = 64;

fn io_error(what: &str, e: std::io::Error) -> SqlError {
    SqlError::Spill {
        what: what.to_string(),
        disk_full: e.kind() == std::io::ErrorKind::StorageFull,
        message: e.to_string(),
    }
}

/// Where a run lies in its spill file: its first byte and its end.
type RunSpan = (u64, u64);

/// A spill file being written: records gathered into frames, and the runs they form.
pub(super) struct SpillWriter {
    file: TempFile,
    frame: Vec<u8>,
    /// Where the run being written starts.
    run_start: u64,
    runs: Vec<RunSpan>,
}

impl SpillWriter {
    pub(super) fn create(dir: &Path) -> Result<SpillWriter> {
        let mut file = TempFile::create(dir).map_err(|e| io_error("create a temporary file", e))?;
        file.append(MAGIC).map_err(|e| io_error("write a temporary file", e))?;
        Ok(SpillWriter {
            run_start: file.len(),
            file,
            frame: Vec::with_capacity(FRAME_BYTES + 1024),
            runs: Vec::new(),
        })
    }

    /// Appends one record: `values` as one row.
    pub(super) fn push<'a>(&mut self, values: impl IntoIterator<Item = ValueRef<'a>>) -> Result<()> {
        let at = self.frame.len();
        self.frame.extend_from_slice(&[0; 4]);
        encode_row(values, &mut self.frame);
        let len = (self.frame.len() - at - 4) as u32;
        self.frame[at..at + 4].copy_from_slice(&len.to_le_bytes());
        if self.frame.len() >= FRAME_BYTES {
            self.write_frame()?;
        }
        Ok(())
    }

    /// Appends a record already in the result buffer's encoding.
    pub(super) fn push_encoded(&mut self, row: &[u8]) -> Result<()> {
        self.frame.extend_from_slice(&(row.len() as u32).to_le_bytes());
        self.frame.extend_from_slice(row);
        if self.frame.len() >= FRAME_BYTES {
            self.write_frame()?;
        }
        Ok(())
    }

    fn write_frame(&mut self) -> Result<()> {
        if self.frame.is_empty() {
            return Ok(());
        }
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&(self.frame.len() as u32).to_le_bytes());
        head[4..].copy_from_slice(&crc32c::crc32c(&self.frame).to_le_bytes());
        let w = |f: &mut TempFile, b: &[u8]| f.append(b).map_err(|e| io_error("write a temporary file", e));
        w(&mut self.file, &head)?;
        w(&mut self.file, &self.frame)?;
        self.frame.clear();
        Ok(())
    }

    /// Ends the run being written (the records since the last end).
    pub(super) fn end_run(&mut self) -> Result<()> {
        self.write_frame()?;
        let end = self.file.len();
        if end > self.run_start {
            self.runs.push((self.run_start, end));
        }
        self.run_start = end;
        Ok(())
    }

    /// The file, every record written, and its runs.
    fn into_runs(mut self) -> Result<(Arc<TempFile>, Vec<RunSpan>)> {
        self.end_run()?;
        self.file.flush().map_err(|e| io_error("write a temporary file", e))?;
        Ok((Arc::new(self.file), self.runs))
    }
}

/// Reads one run's records back from its file, a frame at a time.
struct RunReader {
    at: u64,
    end: u64,
    frame: Vec<u8>,
    pos: usize,
}

impl RunReader {
    fn new((at, end): (u64, u64)) -> RunReader {
        RunReader {
            at,
            end,
            frame: Vec::new(),
            pos: 0,
        }
    }

    /// The next record's bytes (one row in the result buffer's encoding, unchecked).
    fn next_record(&mut self, file: &TempFile) -> Result<Option<&[u8]>> {
        if self.pos >= self.frame.len() {
            if self.at >= self.end {
                return Ok(None);
            }
            self.read_frame(file)?;
        }
        let damaged = || damaged("a record runs past its frame");
        let len = self
            .frame
            .get(self.pos..self.pos + 4)
            .ok_or_else(damaged)?
            .try_into()
            .map(u32::from_le_bytes)
            .map_err(|_| damaged())? as usize;
        let start = self.pos + 4;
        let rec = self.frame.get(start..start + len).ok_or_else(damaged)?;
        self.pos = start + len;
        Ok(Some(rec))
    }

    /// The next record as `ncols` values, checked.
    fn next_values(&mut self, file: &TempFile, ncols: usize) -> Result<Option<Vec<Value>>> {
        match self.next_record(file)? {
            None => Ok(None),
            Some(rec) => decode_row(rec, ncols)
                .map(Some)
                .ok_or_else(|| damaged("a record is not a row of the statement's columns")),
        }
    }

    fn read_frame(&mut self, file: &TempFile) -> Result<()> {
        let mut head = [0u8; 8];
        file.read_exact_at(&mut head, self.at)
            .map_err(|e| io_error("read a temporary file", e))?;
        let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        if len > MAX_FRAME || self.at + 8 + len as u64 > self.end {
            return Err(damaged("a frame's length runs past its run"));
        }
        self.frame.resize(len as usize, 0);
        file.read_exact_at(&mut self.frame, self.at + 8)
            .map_err(|e| io_error("read a temporary file", e))?;
        if crc32c::crc32c(&self.frame) != crc {
            return Err(damaged("a frame's checksum does not match its bytes"));
        }
        self.at += 8 + len as u64;
        self.pos = 0;
        Ok(())
    }
}

fn damaged(what: &str) -> SqlError {
    SqlError::SpillDamaged(what.to_string())
}

/// Rows written to disk in the order they came and read back in batches in the same order,
/// pushing and reading in turns: a plain result's rows past its working memory, until its
/// client takes them.
pub(super) struct SpillQueue {
    writer: SpillWriter,
    reader: RunReader,
    columns: Arc<[ColumnInfo]>,
}

impl SpillQueue {
    pub(super) fn create(dir: &Path, columns: Arc<[ColumnInfo]>) -> Result<SpillQueue> {
        let writer = SpillWriter::create(dir)?;
        Ok(SpillQueue {
            reader: RunReader::new((writer.file.len(), writer.file.len())),
            writer,
            columns,
        })
    }

    /// Appends the rows of `rows` (which is then emptied).
    pub(super) fn push_rows(&mut self, rows: &mut Rows) -> Result<()> {
        for i in 0..rows.len() {
            self.writer.push_encoded(rows.encoded_row(i))?;
        }
        *rows = Rows::empty(self.columns.clone());
        Ok(())
    }

    /// The next batch of the rows pushed so far, or `None` when all were read.
    pub(super) fn next_batch(&mut self) -> Result<Option<Rows>> {
        self.writer.write_frame()?;
        self.writer
            .file
            .flush()
            .map_err(|e| io_error("write a temporary file", e))?;
        self.reader.end = self.writer.file.len();
        let mut rows = Rows::empty(self.columns.clone());
        while rows.data_len() < BATCH_BYTES {
            match self.reader.next_record(&self.writer.file)? {
                Some(rec) => {
                    if !rows.push_encoded_row(rec) {
                        return Err(damaged("a record is not a row of the statement's columns"));
                    }
                }
                None => break,
            }
        }
        Ok((!rows.is_empty()).then_some(rows))
    }
}

impl MoreRows for SpillQueue {
    fn next_rows(&mut self) -> Result<Option<Rows>> {
        self.next_batch()
    }
}

/// Every record of a spill file, in the order written.
pub(super) struct SpillReader {
    file: TempFile,
    reader: RunReader,
}

impl SpillReader {
    pub(super) fn new(mut w: SpillWriter) -> Result<SpillReader> {
        w.write_frame()?;
        w.file.flush().map_err(|e| io_error("write a temporary file", e))?;
        Ok(SpillReader {
            reader: RunReader::new((MAGIC.len() as u64, w.file.len())),
            file: w.file,
        })
    }

    /// The next record, as `ncols` values.
    pub(super) fn next(&mut self, ncols: usize) -> Result<Option<Vec<Value>>> {
        self.reader.next_values(&self.file, ncols)
    }
}

/// How the records of sorted runs compare: by their first keys (each with its direction
/// and where NULLs go), then, for DISTINCT, by every output value so that equal rows are
/// next to each other.
#[derive(Debug, Clone)]
pub(super) struct SortSpec {
    /// Per sort key: descending, NULLs first.
    pub(super) keys: Vec<(bool, bool)>,
    /// The output columns follow the keys in a record; compared after them when set.
    pub(super) tie_outputs: bool,
    /// Output columns in a record (after the keys).
    pub(super) width: usize,
}

impl SortSpec {
    pub(super) fn compare(&self, a: &[Value], b: &[Value]) -> Ordering {
        for (i, &(desc, nulls_first)) in self.keys.iter().enumerate() {
            let o = sort_order(a[i].as_ref(), b[i].as_ref(), desc, nulls_first);
            if o != Ordering::Equal {
                return o;
            }
        }
        if self.tie_outputs {
            let n = self.keys.len();
            for j in n..n + self.width {
                let o = permafrost_types::total_compare(a[j].as_ref(), b[j].as_ref());
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
        Ordering::Equal
    }

    fn ncols(&self) -> usize {
        self.keys.len() + self.width
    }
}

/// A record at the head of its run, ordered for a min-heap.
struct Head {
    rec: Vec<Value>,
    run: usize,
    spec: Arc<SortSpec>,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap pops its greatest. Equal records come in run order.
        self.spec
            .compare(&other.rec, &self.rec)
            .then_with(|| other.run.cmp(&self.run))
    }
}

/// The records of several sorted runs, in one order.
pub(super) struct Merge {
    file: Arc<TempFile>,
    readers: Vec<RunReader>,
    heap: BinaryHeap<Head>,
    spec: Arc<SortSpec>,
}

impl Merge {
    fn new(file: &Arc<TempFile>, runs: &[(u64, u64)], spec: Arc<SortSpec>) -> Result<Merge> {
        let mut m = Merge {
            file: file.clone(),
            readers: runs.iter().map(|&r| RunReader::new(r)).collect(),
            heap: BinaryHeap::with_capacity(runs.len()),
            spec,
        };
        for run in 0..m.readers.len() {
            m.refill(run)?;
        }
        Ok(m)
    }

    fn refill(&mut self, run: usize) -> Result<()> {
        if let Some(rec) = self.readers[run].next_values(&self.file, self.spec.ncols())? {
            self.heap.push(Head {
                rec,
                run,
                spec: self.spec.clone(),
            });
        }
        Ok(())
    }

    pub(super) fn next(&mut self) -> Result<Option<Vec<Value>>> {
        let Some(head) = self.heap.pop() else {
            return Ok(None);
        };
        self.refill(head.run)?;
        Ok(Some(head.rec))
    }
}

/// Merges the runs of `w` into one order, in passes of at most [`FAN_IN`] runs (each pass
/// writes a new file of fewer, longer runs), and returns the last merge.
pub(super) fn merge_runs(w: SpillWriter, spec: &Arc<SortSpec>, dir: &Path) -> Result<Merge> {
    let (mut file, mut runs) = w.into_runs()?;
    while runs.len() > FAN_IN {
        let mut next = SpillWriter::create(dir)?;
        for group in runs.chunks(FAN_IN) {
            let mut m = Merge::new(&file, group, spec.clone())?;
            while let Some(rec) = m.next()? {
                next.push(rec.iter().map(Value::as_ref))?;
            }
            next.end_run()?;
        }
        (file, runs) = next.into_runs()?;
    }
    Merge::new(&file, &runs, spec.clone())
}

/// Records gathered in memory and written as sorted runs of about `limit` bytes each,
/// merged into one order at the end (a set operation's sides, a window call's input).
pub(super) struct SortRuns {
    writer: SpillWriter,
    spec: SortSpec,
    buffer: Vec<Vec<Value>>,
    held: usize,
    limit: usize,
}

impl SortRuns {
    pub(super) fn create(dir: &Path, spec: SortSpec, limit: usize) -> Result<SortRuns> {
        Ok(SortRuns {
            writer: SpillWriter::create(dir)?,
            spec,
            buffer: Vec::new(),
            held: 0,
            limit: limit.max(1),
        })
    }

    pub(super) fn add(&mut self, rec: Vec<Value>) -> Result<()> {
        self.held += values_size(&rec);
        self.buffer.push(rec);
        if self.held > self.limit {
            self.end_run()?;
        }
        Ok(())
    }

    /// The bytes of the records not yet written.
    pub(super) fn held(&self) -> usize {
        self.held
    }

    fn end_run(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let spec = &self.spec;
        // Stable: equal records keep the order they came in.
        self.buffer.sort_by(|a, b| spec.compare(a, b));
        for rec in self.buffer.drain(..) {
            self.writer.push(rec.iter().map(Value::as_ref))?;
        }
        self.writer.end_run()?;
        self.held = 0;
        Ok(())
    }

    /// Every record added, in one order (runs merged in passes in `dir` as needed).
    pub(super) fn merge(mut self, dir: &Path) -> Result<Merge> {
        self.end_run()?;
        merge_runs(self.writer, &Arc::new(self.spec), dir)
    }
}

/// What is done to a sorted result as it streams: DISTINCT, DISTINCT ON, OFFSET, LIMIT.
pub(super) struct Emit {
    pub(super) distinct: bool,
    /// DISTINCT ON: the first row of each run of records equal in this many first keys.
    pub(super) distinct_on: usize,
    pub(super) offset: u64,
    pub(super) limit: Option<u64>,
}

/// The rest of a sorted result whose runs were spilled: merged and handed out in batches.
pub(super) struct SortedRest {
    merge: Merge,
    emit: Emit,
    columns: Arc<[ColumnInfo]>,
    previous: Option<Vec<Value>>,
    skipped: u64,
    emitted: u64,
}

impl SortedRest {
    /// The runs of `w` (each sorted by `spec`; records are the sort keys, then the output
    /// columns), merged.
    pub(super) fn new(
        w: SpillWriter,
        spec: SortSpec,
        emit: Emit,
        columns: Arc<[ColumnInfo]>,
        dir: &Path,
    ) -> Result<SortedRest> {
        let spec = Arc::new(spec);
        Ok(SortedRest {
            merge: merge_runs(w, &spec, dir)?,
            emit,
            columns,
            previous: None,
            skipped: 0,
            emitted: 0,
        })
    }

    /// Whether `rec` is left out as a duplicate of the record before it.
    fn repeats(&self, rec: &[Value]) -> bool {
        let Some(prev) = &self.previous else { return false };
        let same = |range: std::ops::Range<usize>| {
            range
                .into_iter()
                .all(|i| permafrost_types::total_compare(prev[i].as_ref(), rec[i].as_ref()) == Ordering::Equal)
        };
        let n = self.merge.spec.keys.len();
        (self.emit.distinct_on > 0 && same(0..self.emit.distinct_on.min(n)))
            || (self.emit.distinct && same(n..n + self.merge.spec.width))
    }
}

impl MoreRows for SortedRest {
    fn next_rows(&mut self) -> Result<Option<Rows>> {
        let n = self.merge.spec.keys.len();
        let mut rows = Rows::empty(self.columns.clone());
        while rows.data_len() < BATCH_BYTES {
            if self.emit.limit.is_some_and(|l| self.emitted >= l) {
                break;
            }
            let Some(rec) = self.merge.next()? else { break };
            if self.repeats(&rec) {
                continue;
            }
            let keep = self.emit.distinct || self.emit.distinct_on > 0;
            if self.skipped < self.emit.offset {
                self.skipped += 1;
            } else {
                rows.push_row(rec[n..].iter().map(Value::as_ref));
                self.emitted += 1;
            }
            if keep {
                self.previous = Some(rec);
            }
        }
        Ok((!rows.is_empty()).then_some(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(n: usize) -> Arc<[ColumnInfo]> {
        (0..n)
            .map(|i| ColumnInfo {
                name: format!("c{i}"),
                ty: None,
            })
            .collect()
    }

    fn drain(mut m: impl MoreRows) -> Vec<Vec<Value>> {
        let mut out = Vec::new();
        while let Some(r) = m.next_rows().unwrap() {
            out.extend(r.to_values());
        }
        out
    }

    #[test]
    fn a_queue_gives_back_its_rows_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let cols = columns(2);
        let mut q = SpillQueue::create(dir.path(), cols.clone()).unwrap();
        let mut want = Vec::new();
        let mut got = Vec::new();
        for part in 0..3 {
            let mut rows = Rows::empty(cols.clone());
            for i in 0..5000 {
                let v = vec![Value::Int(part * 5000 + i), Value::Text(format!("row {i}").into())];
                rows.push_row(v.iter().map(Value::as_ref));
                want.push(v);
            }
            q.push_rows(&mut rows).unwrap();
            assert!(rows.is_empty());
            // Read in turns with pushing.
            if part == 1 {
                got.extend(q.next_batch().unwrap().unwrap().to_values());
            }
        }
        got.extend(drain(q));
        assert_eq!(got, want);
    }

    #[test]
    fn runs_merge_into_one_order_with_distinct_offset_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        // Records: one key (descending), then one output column.
        let spec = SortSpec {
            keys: vec![(true, false)],
            tie_outputs: true,
            width: 1,
        };
        // More runs than are merged at once, so that a pass writes longer runs first.
        let mut w = SpillWriter::create(dir.path()).unwrap();
        let mut all = Vec::new();
        for run in 0..(FAN_IN as i64 + 10) {
            let mut recs: Vec<i64> = (0..20).map(|i| (i * 7 + run * 13) % 50).collect();
            recs.sort_by(|a, b| b.cmp(a));
            for r in recs {
                w.push([ValueRef::Int(r), ValueRef::Int(r)]).unwrap();
                all.push(r);
            }
            w.end_run().unwrap();
        }
        let emit = Emit {
            distinct: true,
            distinct_on: 0,
            offset: 3,
            limit: Some(10),
        };
        let rest = SortedRest::new(w, spec, emit, columns(1), dir.path()).unwrap();
        all.sort_by(|a, b| b.cmp(a));
        all.dedup();
        let want: Vec<Vec<Value>> = all[3..13].iter().map(|&i| vec![Value::Int(i)]).collect();
        assert_eq!(drain(rest), want);
    }

    #[test]
    fn a_damaged_frame_is_an_error_not_a_row() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SpillWriter::create(dir.path()).unwrap();
        w.push([ValueRef::Int(1)]).unwrap();
        let (file, runs) = w.into_runs().unwrap();
        // The same bytes, one flipped, in a second file.
        let mut bytes = vec![0u8; file.len() as usize];
        file.read_exact_at(&mut bytes, 0).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let mut bad = TempFile::create(dir.path()).unwrap();
        bad.append(&bytes).unwrap();
        bad.flush().unwrap();
        let mut r = RunReader::new(runs[0]);
        let e = r.next_values(&bad, 1).unwrap_err();
        assert_eq!(e.sqlstate(), "XX001");
        // A length past the run is one too.
        let mut r = RunReader::new((runs[0].0, runs[0].1 - 1));
        assert_eq!(r.next_values(&file, 1).unwrap_err().sqlstate(), "XX001");
    }
}
