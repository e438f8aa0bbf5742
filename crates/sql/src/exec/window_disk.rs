//! A query's window calls over rows past its `work_mem`, on disk. The rows, as the columns
//! the query reads (`SelectPlan::image`), are written as sorted runs by the first call's
//! partition and order keys and merged; each partition is walked in that order and the
//! call's value appended to each of its rows, which then go into the runs sorted for the
//! next call, and after the last into the query's own sort (sorter.rs), which spills in
//! turn.
//!
//! What a walk holds depends on what a call's value for a row reads ([`Mode`]):
//! - the rows before it (`row_number`, `rank`, `dense_rank`, `first_value` from the
//!   partition's start; an aggregate or `last_value` over a ROWS frame from the
//!   partition's start to the row): nothing, the rows stream through;
//! - its peers too (the same over the default RANGE frame, to the row's last peer;
//!   `cume_dist`): the current peer group, in a file past its share;
//! - its whole partition but in one number (an aggregate, `first_value` or `last_value`
//!   over the whole partition, `ntile`, `percent_rank`, `cume_dist`): the partition's rows
//!   go to a file of their own with what each needs (its position, rank or last peer)
//!   and are read back once the partition's end gives the rest;
//! - a few rows around it (`lag` and `lead` by an offset that reads no column; a frame
//!   bounded on both sides by offsets or CURRENT ROW): a slice of the partition, computed
//!   as if it were the partition, whose rows are passed on where that gives their value;
//!   a frame from the current row to the partition's end is walked as the frame from its
//!   start over the rows in the opposite order;
//! - anything else (`nth_value` over an unbounded frame, an offset that reads a column):
//!   the partition, in memory.
//!
//! What is held in memory past a quarter of `work_mem` (a partition held whole; a slice
//! whose rows all read past it) is 54000, as in memory.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use permafrost_types::{Value, total_compare};

use crate::error::{Result, SqlError};
use crate::expr::window::{FrameBound, FrameUnits, WinFunc, WindowCall};
use crate::expr::{Cx, Expr};
use crate::plan::SelectPlan;
use crate::rows::{ColumnInfo, Rows};
use crate::workmem::values_size;

use super::sorter::Sorter;
use super::spill::{SortRuns, SortSpec, SpillReader, SpillWriter};
use super::window::{self, FrameAcc, Image};

/// The rows of a query with window calls, gathered past its `work_mem`: sorted runs for
/// its first call. Each record is that call's partition and order keys, then the row's
/// image, then the values of the calls computed so far.
pub(super) struct WindowDisk {
    runs: SortRuns,
    work_mem: usize,
}

/// The share of `work_mem` that sorted runs, and the rows held while walking, each take.
fn share(work_mem: usize) -> usize {
    (work_mem / 4).max(1)
}

impl WindowDisk {
    pub(super) fn create(p: &SelectPlan, dir: &Path, work_mem: usize) -> Result<WindowDisk> {
        Ok(WindowDisk {
            runs: SortRuns::create(dir, spec(p, &walked(&p.windows[0]), 0), share(work_mem))?,
            work_mem,
        })
    }

    /// Adds a row: the values of the columns the query reads.
    pub(super) fn push(&mut self, p: &SelectPlan, image: Vec<Value>, cx: &Cx<'_>) -> Result<()> {
        let mut rec = keys(&p.windows[0], p, &image, cx)?;
        rec.extend(image);
        self.runs.add(rec)
    }

    /// The bytes of the rows not yet written.
    pub(super) fn held(&self) -> usize {
        self.runs.held()
    }

    /// The query's rows with their window values, sorted as the query asks, with OFFSET and
    /// LIMIT applied: the result whose rest merges the final sort's runs.
    pub(super) fn finish(
        self,
        p: &SelectPlan,
        columns: &Arc<[ColumnInfo]>,
        cx: &Cx<'_>,
        dir: Arc<Path>,
        limit: Option<u64>,
        offset: u64,
    ) -> Result<Rows> {
        let mut runs = self.runs;
        for (k, w) in p.windows.iter().enumerate() {
            let w = &*walked(w);
            let mut merge = runs.merge(&dir)?;
            let next = match p.windows.get(k + 1) {
                Some(_) => Next::Runs(SortRuns::create(
                    &dir,
                    spec(p, &walked(&p.windows[k + 1]), k + 1),
                    share(self.work_mem),
                )?),
                None => Next::Sorter(Box::new(Sorter::of_finished(
                    p,
                    columns,
                    share(self.work_mem),
                    Some(dir.clone()),
                ))),
            };
            let mut walk = Walk {
                p,
                cx,
                k,
                w,
                mode: mode(w, cx),
                done: 0,
                at_start: true,
                held: Vec::new(),
                bytes: 0,
                limit: share(self.work_mem),
                work_mem: self.work_mem,
                carry: Carry::default(),
                store: Store::new(dir.clone(), share(self.work_mem)),
                group: Store::new(dir.clone(), share(self.work_mem)),
                next,
            };
            let np = w.partition.len();
            // The partition keys of the rows walked.
            let mut current: Option<Vec<Value>> = None;
            while let Some(rec) = merge.next()? {
                if current.as_deref().is_none_or(|c| !same(c, &rec[..np])) {
                    if current.is_some() {
                        walk.flush(true)?;
                        walk.carry = Carry::default();
                    }
                    current = Some(rec[..np].to_vec());
                }
                walk.push(rec)?;
            }
            walk.flush(true)?;
            match walk.next {
                Next::Runs(r) => runs = r,
                Next::Sorter(s) => return s.finish(p, columns, limit, offset),
            }
        }
        unreachable!("a query gathered for its window calls has at least one")
    }
}

/// Sorted runs of window call `k` (walked as `w`): its partition keys (in any one order),
/// its order keys as it orders them, then the image and `k` values.
fn spec(p: &SelectPlan, w: &WindowCall, k: usize) -> SortSpec {
    SortSpec {
        keys: w
            .partition
            .iter()
            .map(|_| (false, false))
            .chain(w.order.iter().map(|&(_, desc, nulls_first)| (desc, nulls_first)))
            .collect(),
        tie_outputs: false,
        width: p.image.len() + k,
    }
}

/// Call `w` as it is walked: a frame from the current row to the partition's end (ROWS,
/// or RANGE / GROUPS with ORDER BY) is the frame from the partition's start to the current
/// row over the rows in the opposite order (`first_value` and `last_value` trading
/// places), which streams; any other call as it is.
fn walked(w: &WindowCall) -> std::borrow::Cow<'_, WindowCall> {
    use FrameBound::{CurrentRow, UnboundedFollowing, UnboundedPreceding};
    let reversible = matches!((&w.frame.start, &w.frame.end), (CurrentRow, UnboundedFollowing))
        && matches!(w.func, WinFunc::Agg(_) | WinFunc::FirstValue | WinFunc::LastValue)
        && (w.frame.units == FrameUnits::Rows || !w.order.is_empty());
    if !reversible {
        return std::borrow::Cow::Borrowed(w);
    }
    let mut r = w.clone();
    r.func = match w.func {
        WinFunc::FirstValue => WinFunc::LastValue,
        WinFunc::LastValue => WinFunc::FirstValue,
        f => f,
    };
    r.frame.start = UnboundedPreceding;
    r.frame.end = CurrentRow;
    for (_, desc, nulls_first) in &mut r.order {
        (*desc, *nulls_first) = (!*desc, !*nulls_first);
    }
    std::borrow::Cow::Owned(r)
}

/// Call `w`'s partition and order keys over a row's image.
fn keys(w: &WindowCall, p: &SelectPlan, image: &[Value], cx: &Cx<'_>) -> Result<Vec<Value>> {
    let src = Image {
        cols: &p.image,
        values: image,
    };
    w.partition
        .iter()
        .chain(w.order.iter().map(|(e, _, _)| e))
        .map(|e| Ok(e.eval(&src, cx)?.into_value()))
        .collect()
}

fn same(a: &[Value], b: &[Value]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| total_compare(x.as_ref(), y.as_ref()) == Ordering::Equal)
}

/// What a call's value for a row reads, so what a walk must hold.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// The rows before it.
    Rows,
    /// The rows before it and its peers.
    Peers,
    /// Its partition in one number (its size, an aggregate over it); `peers`: and its
    /// peers.
    Total { peers: bool },
    /// The `behind` rows before it and the `ahead` rows after it (`lag` and `lead` by an
    /// offset that reads no column).
    Sliding { behind: usize, ahead: usize },
    /// Its frame, which is bounded on both sides (offsets, CURRENT ROW).
    Local,
    /// Its partition, each row of it.
    Partition,
}

fn mode(w: &WindowCall, cx: &Cx<'_>) -> Mode {
    use FrameBound::{CurrentRow, UnboundedFollowing, UnboundedPreceding};
    let frame = (&w.frame.start, &w.frame.end);
    let whole = matches!(frame, (UnboundedPreceding, UnboundedFollowing))
        // Without ORDER BY every row is a peer of every other.
        || (matches!(frame, (UnboundedPreceding, CurrentRow) | (CurrentRow, UnboundedFollowing))
            && w.order.is_empty()
            && w.frame.units != FrameUnits::Rows);
    let to_current = matches!(frame, (UnboundedPreceding, CurrentRow));
    let unbounded = matches!(w.frame.start, UnboundedPreceding) || matches!(w.frame.end, UnboundedFollowing);
    match w.func {
        WinFunc::RowNumber | WinFunc::Rank | WinFunc::DenseRank => Mode::Rows,
        WinFunc::FirstValue | WinFunc::LastValue | WinFunc::Agg(_) if whole => Mode::Total { peers: false },
        // The partition's first row is in every frame from its start.
        WinFunc::FirstValue if to_current => Mode::Rows,
        WinFunc::LastValue | WinFunc::Agg(_) if to_current => match w.frame.units {
            FrameUnits::Rows => Mode::Rows,
            _ => Mode::Peers,
        },
        WinFunc::FirstValue | WinFunc::LastValue | WinFunc::Agg(_) | WinFunc::NthValue if !unbounded => Mode::Local,
        WinFunc::Ntile | WinFunc::PercentRank => Mode::Total { peers: false },
        // Without ORDER BY every row's last peer is the partition's last row.
        WinFunc::CumeDist => Mode::Total {
            peers: !w.order.is_empty(),
        },
        WinFunc::Lag | WinFunc::Lead => {
            // An offset that reads no column.
            let by = match w.args.get(1) {
                None => Some(1),
                Some(e) => match e.eval_const(cx) {
                    Ok(Value::Int(k)) => usize::try_from(k).ok(),
                    _ => None,
                },
            };
            match by {
                Some(k) if w.func == WinFunc::Lag => Mode::Sliding { behind: k, ahead: 0 },
                Some(k) => Mode::Sliding { behind: 0, ahead: k },
                None => Mode::Partition,
            }
        }
        _ => Mode::Partition,
    }
}

/// Where a walk's rows go once they have call `k`'s value.
enum Next {
    Runs(SortRuns),
    Sorter(Box<Sorter>),
}

/// One call's walk over its sorted records.
struct Walk<'a> {
    p: &'a SelectPlan,
    cx: &'a Cx<'a>,
    k: usize,
    w: &'a WindowCall,
    mode: Mode,
    /// Records of the current partition not yet given their value (for `Mode::Sliding`,
    /// after the `done` that went before them).
    held: Vec<Vec<Value>>,
    done: usize,
    /// Whether the first held record is the partition's first.
    at_start: bool,
    bytes: usize,
    limit: usize,
    work_mem: usize,
    /// What the partition's rows walked so far leave to the next ones.
    carry: Carry,
    /// For `Mode::Total`: the partition's rows walked so far, each with what it needs.
    store: Store,
    /// For `Mode::Peers` and `Mode::Total { peers: true }`: the current peer group's rows.
    group: Store,
    next: Next,
}

impl Walk<'_> {
    /// Takes the next record of the partition.
    fn push(&mut self, rec: Vec<Value>) -> Result<()> {
        if matches!(self.mode, Mode::Peers | Mode::Total { peers: true }) {
            return self.take_peer(rec);
        }
        self.bytes += values_size(&rec);
        self.held.push(rec);
        if self.bytes > self.limit {
            self.flush(false)?;
        }
        Ok(())
    }

    /// Walks held records: all of them at the end of a partition (`end`), else those
    /// whose value can be known (past its share of `work_mem`, a partition whose call
    /// needs it whole is 54000).
    fn flush(&mut self, end: bool) -> Result<()> {
        let w = self.w;
        let (np, nk) = (w.partition.len(), w.partition.len() + w.order.len());
        match self.mode {
            Mode::Sliding { .. } | Mode::Local => return self.slide(end, nk),
            Mode::Peers | Mode::Total { peers: true } => {
                if end {
                    self.end_group()?;
                    if matches!(self.mode, Mode::Total { .. }) {
                        self.end_total(nk)?;
                    }
                }
                return Ok(());
            }
            Mode::Partition if !end && !self.held.is_empty() => {
                return Err(SqlError::OutOfWorkMem(self.work_mem));
            }
            _ => {}
        }
        let rows: Vec<Vec<Value>> = std::mem::take(&mut self.held);
        self.bytes = 0;
        let img = self.p.image.len();
        let image = |i: usize| Image {
            cols: &self.p.image,
            values: &rows[i][nk..nk + img],
        };
        let eval = |i: usize, e: &Expr| Ok(e.eval(&image(i), self.cx)?.into_value());
        match self.mode {
            Mode::Rows => {
                let values = self.carry.step(w, &rows, np..nk, &eval)?;
                for (rec, v) in rows.into_iter().zip(values) {
                    self.emit(rec, nk, v)?;
                }
            }
            Mode::Total { .. } => {
                let partials = self.carry.partials(w, &rows, np..nk, &eval)?;
                for (mut rec, (a, b)) in rows.into_iter().zip(partials) {
                    rec.extend([a, b]);
                    self.store.push(rec)?;
                }
                if end {
                    self.end_total(nk)?;
                }
            }
            _ => {
                let values = window::one(w, rows.len(), &eval)?;
                for (rec, v) in rows.into_iter().zip(values) {
                    self.emit(rec, nk, v)?;
                }
            }
        }
        Ok(())
    }

    /// Takes the next record of a call whose value is known once the record's peer group
    /// ends (`Mode::Peers`, `cume_dist`): the group's records wait in `group` (on disk
    /// past the walk's share) until a record with other order keys, or the partition's
    /// end, comes.
    fn take_peer(&mut self, rec: Vec<Value>) -> Result<()> {
        let w = self.w;
        let (np, nk) = (w.partition.len(), w.partition.len() + w.order.len());
        if self.carry.last.as_deref().is_none_or(|l| !same(l, &rec[np..nk])) {
            self.end_group()?;
            self.carry.last = Some(rec[np..nk].to_vec());
        }
        let img = self.p.image.len();
        let src = Image {
            cols: &self.p.image,
            values: &rec[nk..nk + img],
        };
        let arg = |_: usize, e: &Expr| Ok(e.eval(&src, self.cx)?.into_value());
        match w.func {
            WinFunc::Agg(func) => self.carry.acc.add(func, argument(w, 0, &arg)?)?,
            WinFunc::LastValue => self.carry.latest = Some(argument(w, 0, &arg)?),
            _ => {}
        }
        self.carry.in_group += 1;
        self.group.push(rec)
    }

    /// Gives the rows of the peer group that ended their value and passes them on (for
    /// `cume_dist`, to the partition's file, with the rows up to the group's end).
    fn end_group(&mut self) -> Result<()> {
        if self.carry.in_group == 0 {
            return Ok(());
        }
        let w = self.w;
        let nk = w.partition.len() + w.order.len();
        self.carry.rows += std::mem::take(&mut self.carry.in_group);
        let v = match w.func {
            WinFunc::Agg(func) => self.carry.acc.value(func, w.ty.as_ref())?,
            WinFunc::LastValue => self.carry.latest.clone().unwrap_or(Value::Null),
            _ => Value::Int(self.carry.rows as i64),
        };
        let width = nk + self.p.image.len() + self.k;
        let mut group = self.group.take();
        while let Some(mut rec) = group.next(width)? {
            if w.func == WinFunc::CumeDist {
                rec.extend([v.clone(), Value::Null]);
                self.store.push(rec)?;
            } else {
                self.emit(rec, nk, v.clone())?;
            }
        }
        Ok(())
    }

    /// At the partition's end, gives the rows in its file their value and passes them on.
    fn end_total(&mut self, nk: usize) -> Result<()> {
        let w = self.w;
        let width = nk + self.p.image.len() + self.k + 2;
        let mut store = self.store.take();
        let n = self.carry.rows;
        while let Some(mut rec) = store.next(width)? {
            let b = rec.pop().expect("a partial");
            let a = rec.pop().expect("a partial");
            let v = self.carry.value(w, a, b, n)?;
            self.emit(rec, nk, v)?;
        }
        Ok(())
    }

    /// Walks held records of a call of `Mode::Sliding` or `Mode::Local`, computed over
    /// them as if they were the partition (the `done` first ones, already passed on, are
    /// rows before the others). Those whose value is the same as over the whole partition
    /// are passed on: all at its `end`; else for `Sliding` those whose `ahead` rows are
    /// here, for `Local` those whose frame ends before the last held record and starts
    /// after the first (or at it, at the partition's start). What the next rows can read
    /// stays held; past half the walk's share, that is 54000.
    fn slide(&mut self, end: bool, nk: usize) -> Result<()> {
        let n = self.held.len();
        let img = self.p.image.len();
        let (values, frames) = {
            let held = &self.held;
            let image = |i: usize| Image {
                cols: &self.p.image,
                values: &held[i][nk..nk + img],
            };
            window::one_framed(self.w, n, &|i, e| Ok(e.eval(&image(i), self.cx)?.into_value()))?
        };
        // Records before `stop` get their value; from `keep_from` on they stay held.
        let (stop, keep_from) = match self.mode {
            _ if end => (n, n),
            Mode::Sliding { behind, ahead } => {
                let stop = n.saturating_sub(ahead).max(self.done);
                (stop, stop.saturating_sub(behind))
            }
            _ => {
                let exact = |&(s, e): &(usize, usize)| (s > 0 || self.at_start) && e < n;
                let stop = self.done + frames[self.done..].iter().take_while(|f| exact(f)).count();
                // Frames only move forward: the next rows read from the first one's start.
                // One record more stays before it, so that its frame is seen to start
                // after the first held record.
                (stop, frames.get(stop).map_or(n, |f| f.0.saturating_sub(1)).min(stop))
            }
        };
        let done = self.done;
        let mut kept = Vec::with_capacity(n - keep_from);
        for (i, (rec, v)) in std::mem::take(&mut self.held).into_iter().zip(values).enumerate() {
            let pass = (done..stop).contains(&i);
            match (pass, i >= keep_from) {
                (true, true) => {
                    self.emit(rec.clone(), nk, v)?;
                    kept.push(rec);
                }
                (true, false) => self.emit(rec, nk, v)?,
                (false, true) => kept.push(rec),
                (false, false) => {}
            }
        }
        self.at_start &= keep_from == 0;
        self.done = stop - keep_from;
        self.held = kept;
        self.bytes = self.held.iter().map(|r| values_size(r)).sum();
        if end {
            self.at_start = true;
        } else if self.bytes > self.limit / 2 {
            // Too little was passed on: the rows the next ones read are past the share.
            return Err(SqlError::OutOfWorkMem(self.work_mem));
        }
        Ok(())
    }

    /// Passes on a record (call `k`'s keys first, `nk` of them) with its value `v`.
    fn emit(&mut self, mut rec: Vec<Value>, nk: usize, v: Value) -> Result<()> {
        let img = self.p.image.len();
        let mut payload = rec.split_off(nk);
        payload.push(v);
        match &mut self.next {
            Next::Runs(runs) => {
                let mut rec = keys(&self.p.windows[self.k + 1], self.p, &payload[..img], self.cx)?;
                rec.extend(payload);
                runs.add(rec)
            }
            Next::Sorter(sorter) => {
                let (image, windows) = payload.split_at(img);
                let src = Image {
                    cols: &self.p.image,
                    values: image,
                };
                sorter.push_row(self.p, &src, &self.cx.with_windows(windows), None)
            }
        }
    }
}

/// A partition's records in order: in memory up to a limit, the earlier ones in a file.
struct Store {
    dir: Arc<Path>,
    limit: usize,
    file: Option<SpillWriter>,
    reader: Option<SpillReader>,
    rows: std::collections::VecDeque<Vec<Value>>,
    bytes: usize,
}

impl Store {
    fn new(dir: Arc<Path>, limit: usize) -> Store {
        Store {
            dir,
            limit,
            file: None,
            reader: None,
            rows: Default::default(),
            bytes: 0,
        }
    }

    /// The records so far, leaving this store empty.
    fn take(&mut self) -> Store {
        let empty = Store::new(self.dir.clone(), self.limit);
        std::mem::replace(self, empty)
    }

    fn push(&mut self, rec: Vec<Value>) -> Result<()> {
        self.bytes += values_size(&rec);
        self.rows.push_back(rec);
        if self.bytes > self.limit {
            if self.file.is_none() {
                self.file = Some(SpillWriter::create(&self.dir)?);
            }
            let file = self.file.as_mut().expect("set above");
            for r in self.rows.drain(..) {
                file.push(r.iter().map(Value::as_ref))?;
            }
            self.bytes = 0;
        }
        Ok(())
    }

    /// The next record (of `width` values), from the file first.
    fn next(&mut self, width: usize) -> Result<Option<Vec<Value>>> {
        if let Some(file) = self.file.take() {
            self.reader = Some(SpillReader::new(file)?);
        }
        if let Some(reader) = &mut self.reader {
            match reader.next(width)? {
                Some(rec) => return Ok(Some(rec)),
                None => self.reader = None,
            }
        }
        Ok(self.rows.pop_front())
    }
}

/// What the rows of a partition walked so far leave to the next ones.
#[derive(Default)]
struct Carry {
    /// Rows so far (before the current peer group, for calls that wait for its end).
    rows: usize,
    /// Rows of the current peer group so far (`Walk::take_peer`).
    in_group: usize,
    /// Peer groups so far, and where the last began.
    groups: usize,
    group_start: usize,
    /// The order keys of the last row.
    last: Option<Vec<Value>>,
    /// The frame's aggregate so far.
    acc: FrameAcc,
    /// `first_value`'s: the partition's first row's; `last_value`'s over the whole
    /// partition: the last row's so far.
    first: Option<Value>,
    latest: Option<Value>,
}

impl Carry {
    /// Walks `rows`, the next rows of the partition in window order (whole peer groups
    /// where `w` reads peers), whose order keys are at `order`: `each(i, j)` for each run
    /// `i..j` of peers among them, after the carry has counted its group and before it
    /// counts its rows.
    fn walk(
        &mut self,
        rows: &[Vec<Value>],
        order: std::ops::Range<usize>,
        each: &mut dyn FnMut(&mut Carry, usize, usize) -> Result<()>,
    ) -> Result<()> {
        let mut i = 0;
        while i < rows.len() {
            let keys = &rows[i][order.clone()];
            if self.last.as_deref().is_none_or(|l| !same(l, keys)) {
                self.groups += 1;
                self.group_start = self.rows;
                self.last = Some(keys.to_vec());
            }
            let mut j = i + 1;
            while j < rows.len() && same(&rows[j][order.clone()], keys) {
                j += 1;
            }
            each(self, i, j)?;
            self.rows += j - i;
            i = j;
        }
        Ok(())
    }

    /// The values of streaming call `w` (`Mode::Rows`) for `rows` (see [`Carry::walk`]);
    /// `eval(i, e)` evaluates `e` on row `i`.
    fn step(
        &mut self,
        w: &WindowCall,
        rows: &[Vec<Value>],
        order: std::ops::Range<usize>,
        eval: &dyn Fn(usize, &Expr) -> Result<Value>,
    ) -> Result<Vec<Value>> {
        let arg = |i: usize| argument(w, i, eval);
        let mut out = Vec::with_capacity(rows.len());
        self.walk(rows, order, &mut |c, i, j| {
            if c.rows == 0 && w.func == WinFunc::FirstValue {
                c.first = Some(arg(i)?);
            }
            match w.func {
                WinFunc::RowNumber => out.extend((i..j).map(|t| Value::Int((c.rows + t - i + 1) as i64))),
                WinFunc::Rank => out.extend((i..j).map(|_| Value::Int(c.group_start as i64 + 1))),
                WinFunc::DenseRank => out.extend((i..j).map(|_| Value::Int(c.groups as i64))),
                WinFunc::FirstValue => {
                    let first = c.first.clone().unwrap_or(Value::Null);
                    out.extend((i..j).map(|_| first.clone()));
                }
                WinFunc::LastValue => {
                    for t in i..j {
                        out.push(arg(t)?);
                    }
                }
                WinFunc::Agg(func) => {
                    for t in i..j {
                        c.acc.add(func, arg(t)?)?;
                        out.push(c.acc.value(func, w.ty.as_ref())?);
                    }
                }
                _ => unreachable!("only streaming calls are stepped"),
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// For call `w` of `Mode::Total`, what each of `rows` needs besides the partition's
    /// end (see [`Carry::walk`]): for `ntile` its position and argument, for
    /// `percent_rank` its rank less one, for `cume_dist` the rows up to its last peer.
    /// Aggregates and value functions take their rows in.
    fn partials(
        &mut self,
        w: &WindowCall,
        rows: &[Vec<Value>],
        order: std::ops::Range<usize>,
        eval: &dyn Fn(usize, &Expr) -> Result<Value>,
    ) -> Result<Vec<(Value, Value)>> {
        let arg = |i: usize| argument(w, i, eval);
        let mut out = Vec::with_capacity(rows.len());
        self.walk(rows, order, &mut |c, i, j| {
            for t in i..j {
                let pos = c.rows + t - i;
                out.push(match w.func {
                    WinFunc::Ntile => (Value::Int(pos as i64), arg(t)?),
                    WinFunc::PercentRank => (Value::Int(c.group_start as i64), Value::Null),
                    // Without ORDER BY (with it, `Walk::end_group` gives the partials).
                    WinFunc::CumeDist => (Value::Null, Value::Null),
                    WinFunc::Agg(func) => {
                        c.acc.add(func, arg(t)?)?;
                        (Value::Null, Value::Null)
                    }
                    WinFunc::FirstValue | WinFunc::LastValue => {
                        let v = arg(t)?;
                        if pos == 0 {
                            c.first = Some(v.clone());
                        }
                        c.latest = Some(v);
                        (Value::Null, Value::Null)
                    }
                    _ => unreachable!("only calls over the whole partition have partials"),
                });
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Call `w`'s value for a row with partials `a`, `b`, in a partition of `n` rows.
    fn value(&self, w: &WindowCall, a: Value, b: Value, n: usize) -> Result<Value> {
        let at = |v: &Value| match v {
            Value::Int(i) => *i as usize,
            _ => 0,
        };
        Ok(match w.func {
            WinFunc::Ntile => match window::positive(b, "ntile")? {
                None => Value::Null,
                Some(buckets) => Value::Int(window::bucket(at(&a), n, buckets) as i64),
            },
            WinFunc::PercentRank => Value::Double(if n > 1 { at(&a) as f64 / (n as f64 - 1.0) } else { 0.0 }),
            WinFunc::CumeDist if a.is_null() => Value::Double(1.0),
            WinFunc::CumeDist => Value::Double(at(&a) as f64 / n as f64),
            WinFunc::Agg(func) => self.acc.value(func, w.ty.as_ref())?,
            WinFunc::FirstValue => self.first.clone().unwrap_or(Value::Null),
            WinFunc::LastValue => self.latest.clone().unwrap_or(Value::Null),
            _ => unreachable!("only calls over the whole partition have partials"),
        })
    }
}

/// The value a call aggregates or picks, on row `i`: its first argument (`true` for
/// `count(*)`).
fn argument(w: &WindowCall, i: usize, eval: &dyn Fn(usize, &Expr) -> Result<Value>) -> Result<Value> {
    match w.args.first() {
        _ if w.star => Ok(Value::Bool(true)),
        Some(e) => eval(i, e),
        None => Ok(Value::Null),
    }
}
