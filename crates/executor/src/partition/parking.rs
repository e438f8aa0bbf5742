//! The transactions a partition parked while their evicted data is fetched, indexed by
//! the blocks they wait for (retrieval.rs parks and resumes them).

use std::collections::HashMap;
use std::sync::Arc;

use super::msg::{Invocation, MpFetch};
use crate::error::Error;

/// Who waits for evicted data.
pub(crate) enum Waiter {
    Single(Invocation),
    /// This partition's part of a multi-partition transaction.
    Mp(Arc<MpFetch>),
}

struct Parked {
    waiter: Waiter,
    remaining: usize,
    error: Option<Error>,
}

/// The partition's parked transactions, indexed by the blocks they wait for.
#[derive(Default)]
pub(crate) struct Parking {
    slots: Vec<Option<Parked>>,
    free: Vec<usize>,
    by_block: HashMap<u32, Vec<usize>>,
    count: usize,
}

impl Parking {
    pub(super) fn park(&mut self, waiter: Waiter, blocks: &[u32]) {
        let p = Parked {
            waiter,
            remaining: blocks.len(),
            error: None,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(p);
                i
            }
            None => {
                self.slots.push(Some(p));
                self.slots.len() - 1
            }
        };
        for b in blocks {
            self.by_block.entry(*b).or_default().push(i);
        }
        self.count += 1;
    }

    /// A block was merged (or failed): returns the waiters that now have everything.
    pub(super) fn block_done(&mut self, block: u32, err: Option<&Error>) -> Vec<(Waiter, Option<Error>)> {
        let mut ready = Vec::new();
        for i in self.by_block.remove(&block).unwrap_or_default() {
            let Some(p) = self.slots[i].as_mut() else { continue };
            if let Some(e) = err
                && p.error.is_none()
            {
                p.error = Some(e.clone());
            }
            p.remaining -= 1;
            if p.remaining == 0 {
                let p = self.slots[i].take().expect("present");
                self.free.push(i);
                self.count -= 1;
                ready.push((p.waiter, p.error));
            }
        }
        ready
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }
}
