//! Each partition's write gate as every thread sees it ([`Gates`], in `Shared`), and the
//! writes a partition holds at its closed gate ([`Paced`], in `Partition`): the state of
//! pacing writes to eviction, which pacing.rs decides on.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::msg::{Invocation, MpRetry};

/// Each partition's write gate as the other threads see it: since when it has been closed,
/// and whether eviction can free memory there. Written by the partition's memory check.
pub(crate) struct Gates {
    /// Per partition: microseconds since `epoch` when its gate closed; 0 while it is open.
    closed_since: Vec<AtomicU64>,
    /// Per partition: eviction can free memory, or statements will (see pacing.rs's
    /// module documentation).
    can_free: Vec<AtomicBool>,
    epoch: Instant,
}

impl Gates {
    pub(crate) fn new(partitions: u32) -> Gates {
        Gates {
            closed_since: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
            can_free: (0..partitions).map(|_| AtomicBool::new(false)).collect(),
            epoch: Instant::now(),
        }
    }

    /// Publishes partition `p`'s gate after a memory check.
    pub(crate) fn set(&self, p: u32, closed: bool, can_free: bool) {
        let Some(since) = self.closed_since.get(p as usize) else {
            return;
        };
        if closed {
            // The first check that found it closed stamps it (at least 1: 0 means open).
            let now = (self.epoch.elapsed().as_micros() as u64).max(1);
            let _ = since.compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire);
        } else {
            since.store(0, Ordering::Release);
        }
        self.can_free[p as usize].store(can_free, Ordering::Release);
    }

    /// Partition `p`'s gate as of now: open, closed but openable by eviction, or closed for
    /// good (eviction cannot free anything there, or it has stayed closed for `limit`; a
    /// zero `limit` bounds nothing).
    fn gate(&self, p: u32, limit: Duration) -> Gate {
        let since = self
            .closed_since
            .get(p as usize)
            .map_or(0, |s| s.load(Ordering::Acquire));
        if since == 0 {
            return Gate::Open;
        }
        let waited = Duration::from_micros((self.epoch.elapsed().as_micros() as u64).saturating_sub(since));
        if !self.can_free[p as usize].load(Ordering::Acquire) || (!limit.is_zero() && waited >= limit) {
            Gate::Stuck
        } else {
            Gate::Openable
        }
    }

    /// Whether a schema change that takes memory (a new table or index) is refused at
    /// `parts`: a gate among them is closed for good.
    pub(super) fn refuse_growth(&self, parts: &[u32], limit: Duration) -> bool {
        parts.iter().any(|&p| self.gate(p, limit) == Gate::Stuck)
    }

    /// Whether a write at `parts` refused by the budget may wait: some gate among them is
    /// closed, and none is closed for good.
    pub(super) fn may_wait(&self, parts: &[u32], limit: Duration) -> bool {
        let gates = || parts.iter().map(|&p| self.gate(p, limit));
        gates().any(|g| g == Gate::Openable) && gates().all(|g| g != Gate::Stuck)
    }
}

/// A partition's write gate, as [`Gates::gate`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    Open,
    /// Closed, and eviction can open it.
    Openable,
    /// Closed, and eviction cannot open it (or it has stayed closed too long).
    Stuck,
}

/// The writes a partition holds until there is room (single-partition calls, and
/// multi-partition transactions it coordinated), each with when it was held.
#[derive(Default)]
pub(crate) struct Paced {
    pub(super) calls: VecDeque<(Instant, Invocation)>,
    pub(super) mp: Vec<(Instant, MpRetry)>,
}

impl Paced {
    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.mp.is_empty()
    }
}
