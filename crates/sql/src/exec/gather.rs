//! What a SELECT gathers from the rows it visits: the result as it streams, the rows to
//! sort, or the groups of an aggregate ([`Gather`]), and how it finishes them.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use permafrost_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::expr::{ColumnSource, Cx, Expr, NoColumns};
use crate::plan::SelectPlan;
use crate::rows::{ColumnInfo, Rows};
use crate::value_budget::ValueBudget;
use crate::workmem::{MemoryPool, WorkMem, values_size};

use super::sorter::{past_limit, past_pool_limit};

use super::aggregate::{Added, AggFinish, AggSpill, AggTable, finish_agg};
use super::sorter::{Sorter, sort_slots};
use super::spill::SpillQueue;
use super::window;
use super::window_disk::WindowDisk;

/// What a SELECT gathers from the rows it visits.
pub(super) enum Gather {
    /// Rows go straight into the result (no ORDER BY, DISTINCT or aggregate).
    Stream {
        rows: Rows,
        /// Rows skipped for OFFSET so far.
        skipped: u64,
        /// Rows produced so far (in this buffer and the ones handed out before it).
        emitted: u64,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
        /// Where rows past `work_mem` go (`None`: they are an error, 54000).
        spill: Option<Arc<Path>>,
        /// The rows spilled, in order, followed by those in `rows`.
        queue: Option<Box<SpillQueue>>,
    },
    /// Output rows with their sort keys, sorted at the end (spilled in sorted runs past
    /// `work_mem` when it may spill).
    Sorted {
        sorter: Sorter,
        limit: Option<u64>,
        offset: u64,
    },
    Agg {
        table: AggTable,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
        /// Where the rows of groups past `work_mem` go (`None`: 54000 then).
        spill: Option<Arc<Path>>,
        /// Once the table is full: the rows of the groups it does not hold.
        spilled: Option<Box<AggSpill>>,
    },
    /// Rows kept as the columns they read (`SelectPlan::image`) until the query's window
    /// calls are computed over all of them.
    Windowed {
        images: Vec<Vec<Value>>,
        limit: Option<u64>,
        offset: u64,
        mem: WorkMem,
        /// Where the rows go past `work_mem` (and the finished rows' sort spills).
        spill: Option<Arc<Path>>,
        /// Once past `work_mem`: the rows, sorted on disk for the window calls.
        disk: Option<Box<WindowDisk>>,
    },
}

impl Gather {
    pub(super) fn new(
        p: &SelectPlan,
        columns: &Arc<[ColumnInfo]>,
        work_mem: usize,
        limit: Option<u64>,
        offset: u64,
        spill: Option<Arc<Path>>,
    ) -> Gather {
        let mem = WorkMem::new(work_mem);
        if !p.windows.is_empty() && p.agg.is_none() {
            Gather::Windowed {
                images: Vec::new(),
                limit,
                offset,
                mem,
                spill,
                disk: None,
            }
        } else if p.agg.is_some() {
            Gather::Agg {
                table: AggTable::default(),
                limit,
                offset,
                mem,
                // Window calls over the groups need every group at once.
                spill: spill.filter(|_| p.windows.is_empty()),
                spilled: None,
            }
        } else if p.order.is_empty() && !p.distinct {
            Gather::Stream {
                rows: Rows::with_capacity(columns.clone(), p.size_hint()),
                skipped: 0,
                emitted: 0,
                limit,
                offset,
                mem,
                spill,
                queue: None,
            }
        } else {
            Gather::Sorted {
                sorter: Sorter::new(columns.clone(), sort_slots(p), mem, spill),
                limit,
                offset,
            }
        }
    }

    /// The budget of the values the statement's expressions build: its `work_mem`, less
    /// what it holds, and room in `pool` ([`crate::value_budget`]).
    pub(super) fn budget<'p>(&self, pool: Option<&'p MemoryPool>) -> ValueBudget<'p> {
        let mem = match self {
            Gather::Stream { mem, .. } | Gather::Agg { mem, .. } | Gather::Windowed { mem, .. } => mem,
            Gather::Sorted { sorter, .. } => sorter.mem(),
        };
        let b = ValueBudget::new(mem.limit(), pool);
        b.set_held(mem.used());
        b
    }

    /// Whether no further row can change the result (a streamed LIMIT reached).
    pub(super) fn is_full(&self) -> bool {
        matches!(self, Gather::Stream { emitted, limit: Some(l), .. } if emitted >= l)
    }

    pub(super) fn add(
        &mut self,
        p: &SelectPlan,
        b: &dyn ColumnSource,
        cx: &Cx<'_>,
        pool: Option<&Arc<MemoryPool>>,
    ) -> Result<ControlFlow<()>> {
        match self {
            Gather::Windowed {
                images,
                mem,
                spill,
                disk,
                ..
            } => {
                let image: Vec<Value> = p.image.iter().map(|&(r, c)| b.column(r, c).to_owned()).collect();
                if let Some(d) = disk {
                    d.push(p, image, cx)?;
                    mem.holds(d.held(), pool)?;
                } else if past_limit(mem, mem.used() + values_size(&image), pool, spill.is_some())? {
                    // The rows so far, and the rest, go to disk sorted for the first call.
                    let dir = spill.as_deref().expect("checked");
                    let mut d = WindowDisk::create(p, dir, mem.limit())?;
                    for image in images.drain(..).chain([image]) {
                        d.push(p, image, cx)?;
                    }
                    *images = Vec::new();
                    mem.holds(d.held(), pool)?;
                    *disk = Some(Box::new(d));
                } else {
                    images.push(image);
                }
                cx.budget.set_held(mem.used());
                Ok(ControlFlow::Continue(()))
            }
            Gather::Agg {
                table,
                mem,
                spill,
                spilled,
                ..
            } => {
                let agg = p.agg.as_ref().expect("an aggregate plan");
                match table.add_unless_full(agg, b, cx, spilled.is_some())? {
                    Added::Existing(0) => {}
                    // A group already there grew (array_agg): counted; past the limit once
                    // spilling, an error (a group is whole in memory).
                    Added::Existing(bytes) if spilled.is_some() => {
                        let total = mem.used() + bytes;
                        past_limit(mem, total, pool, false)?;
                        cx.budget.set_held(mem.used());
                    }
                    Added::Existing(bytes) | Added::New(bytes) => {
                        if past_limit(mem, mem.used() + bytes, pool, spill.is_some())? {
                            // Full: the table takes no new group from now on.
                            let dir = spill.as_deref().expect("checked");
                            *spilled = Some(Box::new(AggSpill::create(dir, 0)?));
                        }
                        cx.budget.set_held(mem.used());
                    }
                    Added::Refused(key) => spilled
                        .as_mut()
                        .expect("refused only when full")
                        .push_row(agg, key, b, cx)?,
                }
                Ok(ControlFlow::Continue(()))
            }
            Gather::Stream {
                rows,
                skipped,
                emitted,
                limit,
                offset,
                mem,
                spill,
                queue,
            } => {
                if limit.is_some_and(|l| *emitted >= l) {
                    return Ok(ControlFlow::Break(()));
                }
                if *skipped < *offset {
                    *skipped += 1;
                    return Ok(ControlFlow::Continue(()));
                }
                rows.begin_row();
                for e in &p.output {
                    match e {
                        Expr::Column { rel, col } => rows.push(b.column(*rel, *col)),
                        e => {
                            rows.push(e.eval(b, cx)?.as_ref());
                            // What the row holds so far counts against its next value.
                            cx.budget.set_held(rows.data_len() + rows.len() * 4);
                        }
                    }
                }
                *emitted += 1;
                if past_pool_limit(mem, rows.held_bytes(), pool, spill.is_some())? {
                    // The rows so far go to disk, to be read back in order.
                    if queue.is_none() {
                        let dir = spill.as_deref().expect("checked");
                        *queue = Some(Box::new(SpillQueue::create(dir, rows.columns().clone())?));
                    }
                    queue.as_mut().expect("set above").push_rows(rows)?;
                    mem.holds(rows.held_bytes(), pool)?;
                }
                cx.budget.set_held(mem.used());
                Ok(if limit.is_some_and(|l| *emitted >= l) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            }
            Gather::Sorted { sorter, .. } => {
                sorter.add_output(p, b, cx, pool)?;
                cx.budget.set_held(sorter.mem().used());
                Ok(ControlFlow::Continue(()))
            }
        }
    }

    /// The rows that can be answered now and the state to go on gathering with: for a
    /// streamed result its rows so far; otherwise nothing yet.
    pub(super) fn split(mut self, p: &SelectPlan, columns: &Arc<[ColumnInfo]>) -> (Rows, Gather) {
        let first = match &mut self {
            // Rows spilled come first: these follow them.
            Gather::Stream { queue: Some(_), .. } => Rows::empty(columns.clone()),
            Gather::Stream { rows, .. } => {
                p.note_size(rows.data_len());
                std::mem::replace(rows, Rows::empty(columns.clone()))
            }
            _ => Rows::empty(columns.clone()),
        };
        (first, self)
    }

    /// The rows gathered since the last call, in order, when they can be sent before the
    /// end (no ORDER BY, DISTINCT or aggregate): from disk first when some were spilled.
    pub(super) fn take_rows(&mut self) -> Result<Option<Rows>> {
        match self {
            Gather::Stream {
                queue: Some(queue),
                rows,
                ..
            } => {
                queue.push_rows(rows)?;
                Ok(Some(
                    queue
                        .next_batch()?
                        .unwrap_or_else(|| Rows::empty(rows.columns().clone())),
                ))
            }
            Gather::Stream { rows, .. } => {
                let fresh = Rows::empty(rows.columns().clone());
                Ok(Some(std::mem::replace(rows, fresh)))
            }
            _ => Ok(None),
        }
    }

    pub(super) fn finish(self, p: &SelectPlan, columns: &Arc<[ColumnInfo]>, cx: &Cx<'_>) -> Result<Rows> {
        match self {
            Gather::Stream {
                queue: Some(mut queue),
                mut rows,
                ..
            } => {
                queue.push_rows(&mut rows)?;
                rows.set_rest(queue);
                Ok(rows)
            }
            Gather::Stream { rows, .. } => {
                p.note_size(rows.data_len());
                Ok(rows)
            }
            Gather::Sorted { sorter, limit, offset } => sorter.finish(p, columns, limit, offset),
            Gather::Windowed {
                disk: Some(disk),
                limit,
                offset,
                spill,
                ..
            } => disk.finish(p, columns, cx, spill.expect("spilled to it"), limit, offset),
            Gather::Windowed {
                images,
                limit,
                offset,
                mem,
                spill,
                disk: None,
            } => {
                let image = |i: usize| window::Image {
                    cols: &p.image,
                    values: &images[i],
                };
                let w = window::compute(&p.windows, images.len(), &|i, e| {
                    Ok(e.eval(&image(i), cx)?.into_value())
                })?;
                let mut sorter = Sorter::of_finished(p, columns, mem.limit(), spill);
                for (i, w) in w.iter().enumerate() {
                    sorter.push_row(p, &image(i), &cx.with_windows(w), None)?;
                }
                sorter.finish(p, columns, limit, offset)
            }
            Gather::Agg {
                table,
                limit,
                offset,
                mem,
                spill,
                spilled,
            } => {
                // The pool its spilled groups draw from as they are added up: the one it
                // took from (a grouping full past POOL_STEP has; one that never took from
                // a pool spills within a work_mem of under a step, not counted in one).
                let pool = mem.pool().cloned();
                let f = AggFinish {
                    p,
                    agg: p.agg.as_ref().expect("an aggregate plan"),
                    columns,
                    cx,
                    limit,
                    offset,
                    work_mem: mem.limit(),
                    spill,
                    pool: pool.as_ref(),
                };
                drop(mem);
                finish_agg(&f, table, spilled.map(|s| *s))
            }
        }
    }
}

/// The value of a LIMIT or OFFSET (`what`), if any.
pub(super) fn limit_value(e: &Option<Expr>, cx: &Cx<'_>, what: &str) -> Result<Option<u64>> {
    let Some(e) = e else { return Ok(None) };
    let v = match e.eval_const(cx)? {
        // A numeric or double argument is cast to bigint, as PostgreSQL does (rounded;
        // 22003 past its range).
        v @ (Value::Decimal(_) | Value::Double(_)) => v.coerce_to(&DataType::BigInt)?,
        v => v,
    };
    match v {
        Value::Null => Ok(None),
        Value::Int(i) if i >= 0 => Ok(Some(i as u64)),
        Value::Int(_) if what == "OFFSET" => Err(SqlError::NegativeOffset),
        Value::Int(_) => Err(SqlError::InvalidLimit(format!("{what} must not be negative"))),
        other => Err(SqlError::Type(format!(
            "argument of {what} must be an integer, not {}",
            other.as_ref().kind_name()
        ))),
    }
}

/// What a SELECT gathers into, with its LIMIT and OFFSET, and whether it has rows to read
/// (false when a predicate that reads no relation is false). With `spill`, rows past
/// `work_mem` go to temporary files there and the result's rest reads them back.
pub(super) fn start_select(
    p: &SelectPlan,
    columns: &Arc<[ColumnInfo]>,
    work_mem: usize,
    cx: &Cx<'_>,
    spill: Option<Arc<Path>>,
) -> Result<(Gather, bool)> {
    let limit = limit_value(&p.limit, cx, "LIMIT")?;
    let offset = limit_value(&p.offset, cx, "OFFSET")?.unwrap_or(0);
    let gather = Gather::new(p, columns, work_mem, limit, offset, spill);
    for f in &p.pre_filters {
        if !f.test(&NoColumns, cx)? {
            return Ok((gather, false));
        }
    }
    Ok((gather, true))
}
