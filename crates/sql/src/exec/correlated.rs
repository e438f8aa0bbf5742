//! Correlated subqueries (PostgreSQL's SubPlans): a subquery that reads values of the row
//! around it is run for each row it is evaluated on, from inside that evaluation. The walk
//! around it holds the transaction's partitions for reading, so the subquery reads them
//! through the same shared borrow ([`Reader`]) and records the evicted tuples and the
//! tuples it meets aside, handed to the statement once its evaluation is over. A
//! subquery is run again only when its values differ from the last row's ([`PlanRunner`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use permafrost_storage::TableId;
use permafrost_types::Value;

use crate::error::{Result, SqlError};
use crate::expr::{Cx, SubRunner};
use crate::plan::{InitPlan, Lateral, RelPlan, SelectPlan};
use crate::rows::{ColumnInfo, Rows};
use crate::workmem::MemoryPool;

use super::gather::start_select;
use super::hashjoin::Hashed;
use super::reached::EvictedRefs;
use super::subquery::{run_init, run_query, values};
use super::walk::{Bindings, Copies, LateralRows, Reach, Walker};

/// Reads for the correlated subqueries of a statement: the partitions its walk reads, and
/// what the subqueries' walks met (evicted tuples, tuples to touch), kept until the
/// statement's own evaluation is over.
pub(super) struct Reader<'s> {
    pub(super) reach: Reach<'s>,
    /// Whether visited tuples are recorded for LRU sampling (`Env::sampled`).
    pub(super) sampled: bool,
    pub(super) work_mem: usize,
    pub(super) pool: Option<&'s Arc<MemoryPool>>,
    pub(super) evicted: RefCell<EvictedRefs>,
    pub(super) touched: RefCell<Vec<(usize, TableId, u32)>>,
    /// The hash tables of the relations walked (by the address of their plans' relations):
    /// a correlated subquery builds its tables once, not once per row. Nothing is written
    /// while a reader exists, so they stay true.
    pub(super) hashes: RefCell<HashMap<usize, Vec<Hashed>>>,
    /// The rows each LATERAL item of FROM (by the address of its plan) was last computed
    /// with, and for which values: an entry with the same values reads them again.
    pub(super) laterals: RefCell<HashMap<usize, LastRows>>,
}

impl<'s> Reader<'s> {
    /// Runs a SELECT whole: its uncorrelated subqueries first, its correlated ones per row.
    pub(super) fn select(&self, p: &SelectPlan, columns: &Arc<[ColumnInfo]>, cx: &Cx<'_>) -> Result<Rows> {
        let subs = run_init(&p.init, &mut (), cx, self.work_mem, &mut |p, c, _, cx| {
            self.select(p, c, cx)
        })?;
        let runner = PlanRunner::new(self, &p.init);
        let cx = cx.with_subs(&subs);
        self.rows(p, columns, &cx.with_runner(&runner))
    }

    /// [`Reader::select`] once `cx` holds the values of the plan's subqueries and runs its
    /// correlated ones.
    pub(super) fn rows(&self, p: &SelectPlan, columns: &Arc<[ColumnInfo]>, cx: &Cx<'_>) -> Result<Rows> {
        let (mut gather, reads) = start_select(p, columns, self.work_mem, cx, None)?;
        if !reads || gather.is_full() {
            return gather.finish(p, columns, cx);
        }
        let derived = p
            .derived
            .iter()
            .map(|d| {
                let rows = run_query(&d.query, &mut (), cx, self.work_mem, &mut |p, c, _, cx| {
                    self.select(p, c, cx)
                })?;
                Ok((d.rel, rows))
            })
            .collect::<Result<Vec<_>>>()?;
        self.walk(&p.rels, &derived, cx, Copies::One, &mut |b| {
            gather.add(p, b, cx, self.pool)
        })?;
        gather.finish(p, columns, cx)
    }

    /// The tuples (position of the partition in the held ones, slot) of the one relation
    /// `rp` that its filters accept: a write's targets, read from `copies`.
    pub(super) fn targets(&self, rp: &RelPlan, cx: &Cx<'_>, copies: Copies) -> Result<Vec<(usize, u32)>> {
        let mut out = Vec::new();
        self.walk(std::slice::from_ref(rp), &[], cx, copies, &mut |b| {
            out.push(b.tuple(rp.rel));
            Ok(std::ops::ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// Walks `rels` (the subqueries in FROM among them reading `derived`), emitting each
    /// binding; what the walk meets is kept in `self`.
    fn walk(
        &self,
        rels: &[RelPlan],
        derived: &[(usize, Rows)],
        cx: &Cx<'_>,
        copies: Copies,
        emit: &mut dyn FnMut(&Bindings<'_>) -> Result<std::ops::ControlFlow<()>>,
    ) -> Result<()> {
        let mut evicted = EvictedRefs::new();
        let mut touched = Vec::new();
        let key = rels.as_ptr() as usize;
        let hashed = self.hashes.borrow_mut().remove(&key).unwrap_or_default();
        let r = {
            let touching = self.sampled.then_some(&mut touched);
            let mut walker = Walker::over(rels, self.reach, &mut evicted, cx, touching, copies, false)
                .reading(derived)
                .lateral(self)
                .hashing(hashed);
            let mut b = Bindings::new();
            let r = walker.walk(0, &mut b, &mut |b| emit(b));
            self.hashes.borrow_mut().insert(key, walker.take_hashes());
            r
        };
        self.evicted.borrow_mut().extend(evicted);
        self.touched.borrow_mut().extend(touched);
        r.map(|_| ())
    }
}

impl LateralRows for Reader<'_> {
    fn rows(&self, lateral: &Lateral, args: Vec<Value>, cx: &Cx<'_>) -> Result<Rc<Rows>> {
        let key = lateral as *const Lateral as usize;
        if let Some((last, rows)) = self.laterals.borrow().get(&key)
            && *last == args
        {
            return Ok(rows.clone());
        }
        let scx = cx.for_subquery(&args);
        let rows = run_query(&lateral.query, &mut (), &scx, self.work_mem, &mut |p, c, _, cx| {
            self.select(p, c, cx)
        })?;
        let rows = Rc::new(rows);
        self.laterals.borrow_mut().insert(key, (args, rows.clone()));
        Ok(rows)
    }
}

/// Runs the correlated subqueries of one plan (`init`, those of its `InitPlan`s that are
/// correlated) through a [`Reader`], remembering each one's last values and result.
pub(super) struct PlanRunner<'r, 's> {
    reader: &'r Reader<'s>,
    init: &'r [Arc<InitPlan>],
    last: RefCell<Vec<Option<LastRun>>>,
}

/// The values a LATERAL item was last computed with, and its rows.
pub(super) type LastRows = (Vec<Value>, Rc<Rows>);

/// The values a subquery was last run with, and what it gave.
type LastRun = (Vec<Value>, Rc<[Value]>);

impl<'r, 's> PlanRunner<'r, 's> {
    pub(super) fn new(reader: &'r Reader<'s>, init: &'r [Arc<InitPlan>]) -> Self {
        PlanRunner {
            reader,
            init,
            last: RefCell::new(vec![None; init.len()]),
        }
    }
}

impl SubRunner for PlanRunner<'_, '_> {
    fn run(&self, sub: usize, args: Vec<Value>, cx: &Cx<'_>) -> Result<Rc<[Value]>> {
        if let Some(Some((last, v))) = self.last.borrow().get(sub)
            && *last == args
        {
            return Ok(v.clone());
        }
        let ip = self
            .init
            .get(sub)
            .ok_or_else(|| SqlError::Unsupported("a correlated subquery of another plan".into()))?;
        let scx = cx.for_subquery(&args);
        let reader = self.reader;
        let rows = run_query(&ip.query, &mut (), &scx, reader.work_mem, &mut |p, c, _, cx| {
            reader.select(p, c, cx)
        })?;
        let v: Rc<[Value]> = values(ip.kind, &rows)?.into();
        if let Some(slot) = self.last.borrow_mut().get_mut(sub) {
            *slot = Some((args, v.clone()));
        }
        Ok(v)
    }
}
