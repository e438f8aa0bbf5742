//! Row locks of transaction blocks: what `SELECT ... FOR UPDATE` / `FOR SHARE` take, and
//! a block's DELETE and an UPDATE that shows what it sets, which lock as FOR UPDATE of
//! their target would
//! (docs/architecture/interactive.md, "Row locks").
//!
//! A block's locking statement names the rows it locks before it runs
//! (`Prepared::lock_targets`: a table, an index and the values of the index's leading
//! columns the read fixes); the connection takes them here, waiting while another block
//! holds a conflicting lock, and holds them until the block ends ([`Owner`] releases them
//! when dropped, after the COMMIT ran). Nothing here touches a partition: a block waits on
//! its connection's thread, and the partitions go on serving everyone.
//!
//! The locks are a way to make blocks take turns, not what makes them correct: a COMMIT
//! still runs every statement again and fails with 40001 if a result changed. So a read
//! that names no rows (a scan) locks nothing, and locks on different indexes of a table
//! never conflict. Two locks conflict when they belong to different blocks, one of them is
//! FOR UPDATE, and they are on the same index with one key a prefix of the other. A block
//! that would wait for a block waiting (directly or not) for it fails instead with 40P01,
//! as PostgreSQL's deadlock detector decides; NOWAIT fails with 55P03 rather than wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use permafrost_sql::LockTarget;
use permafrost_storage::TableId;
use permafrost_types::Value;
use pgwire::error::PgWireError;

use crate::error::{client_error, client_error_explained};

/// A lock held by a block.
struct Held {
    owner: u64,
    index: Option<usize>,
    key: Vec<Value>,
    exclusive: bool,
}

#[derive(Default)]
struct Inner {
    /// The locks held, by table.
    held: HashMap<TableId, Vec<Held>>,
    /// The blocks each waiting block waits for.
    waits: HashMap<u64, Vec<u64>>,
}

/// The server's row locks, shared by its connections.
#[derive(Default)]
pub(crate) struct RowLocks {
    inner: Mutex<Inner>,
    /// Woken whenever a block releases its locks.
    released: tokio::sync::Notify,
}

/// Whether one key is a prefix of the other.
fn overlaps(a: &[Value], b: &[Value]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

impl Inner {
    /// The blocks other than `owner` whose locks conflict with `t`.
    fn blockers(&self, owner: u64, t: &LockTarget, out: &mut Vec<u64>) {
        for h in self.held.get(&t.table).into_iter().flatten() {
            if h.owner != owner
                && (h.exclusive || t.exclusive)
                && h.index == t.index
                && overlaps(&h.key, &t.key)
                && !out.contains(&h.owner)
            {
                out.push(h.owner);
            }
        }
    }

    /// Whether `owner` is among the blocks `from` wait for, directly or not.
    fn reaches(&self, from: &[u64], owner: u64) -> bool {
        let mut seen: Vec<u64> = Vec::new();
        let mut todo: Vec<u64> = from.to_vec();
        while let Some(b) = todo.pop() {
            if b == owner {
                return true;
            }
            if !seen.contains(&b) {
                seen.push(b);
                todo.extend(self.waits.get(&b).into_iter().flatten());
            }
        }
        false
    }

    /// Takes `targets` for `owner` (those it holds already, as strongly, once).
    fn take(&mut self, owner: u64, targets: &[LockTarget]) {
        for t in targets {
            let list = self.held.entry(t.table).or_default();
            let have = list
                .iter()
                .any(|h| h.owner == owner && h.index == t.index && h.key == t.key && (h.exclusive || !t.exclusive));
            if !have {
                list.push(Held {
                    owner,
                    index: t.index,
                    key: t.key.clone(),
                    exclusive: t.exclusive,
                });
            }
        }
    }
}

/// Takes a waiting block out of the wait-for graph when its wait ends, however it ends
/// (granted, failed, or its statement cancelled and the future dropped).
struct Waiting<'a> {
    locks: &'a RowLocks,
    owner: u64,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.locks.lock().waits.remove(&self.owner);
    }
}

impl RowLocks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes `targets` for block `owner`, waiting while other blocks hold conflicting
    /// locks; 55P03 for a NOWAIT target held by another, 40P01 when waiting would close a
    /// cycle of blocks waiting for each other.
    pub(crate) async fn acquire(&self, owner: u64, targets: &[LockTarget]) -> Result<(), PgWireError> {
        if targets.is_empty() {
            return Ok(());
        }
        let mut waiting = None;
        loop {
            let notified = self.released.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut inner = self.lock();
                let mut blockers = Vec::new();
                let mut nowait = false;
                for t in targets {
                    let before = blockers.len();
                    inner.blockers(owner, t, &mut blockers);
                    nowait |= t.nowait && blockers.len() > before;
                }
                if blockers.is_empty() {
                    inner.take(owner, targets);
                    return Ok(());
                }
                if nowait {
                    return Err(client_error("55P03", "could not obtain lock on row in relation"));
                }
                if inner.reaches(&blockers, owner) {
                    return Err(client_error_explained(
                        "40P01",
                        "deadlock detected",
                        Some(format!(
                            "Transaction block {owner} would wait for the row locks of blocks {blockers:?}, which wait for it."
                        )),
                        None,
                    ));
                }
                inner.waits.insert(owner, blockers);
            }
            // (`get_or_insert_with`: a guard made and dropped on a later turn would take the
            // block out of the graph while it still waits, and a cycle through it would go
            // unseen: both blocks waiting for ever.)
            waiting.get_or_insert_with(|| Waiting { locks: self, owner });
            notified.await;
        }
    }

    /// Releases every lock of block `owner`.
    pub(crate) fn release(&self, owner: u64) {
        let mut inner = self.lock();
        let mut any = false;
        inner.held.retain(|_, list| {
            let n = list.len();
            list.retain(|h| h.owner != owner);
            any |= list.len() != n;
            !list.is_empty()
        });
        drop(inner);
        if any {
            self.released.notify_waiters();
        }
    }
}

/// A block's hold on the locks it takes: released when dropped (the block ended).
pub(crate) struct Owner {
    locks: Arc<RowLocks>,
    id: u64,
}

impl Owner {
    pub(crate) fn new(locks: Arc<RowLocks>, id: u64) -> Owner {
        Owner { locks, id }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.locks.release(self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn row(key: i64) -> Vec<LockTarget> {
        vec![LockTarget {
            table: 1,
            index: Some(0),
            key: vec![Value::Int(key)],
            exclusive: true,
            nowait: false,
        }]
    }

    /// A block woken by a release that does not free what it waits for waits on, and is
    /// still in the wait-for graph: a cycle closed through it afterwards is found.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_block_woken_in_vain_still_closes_a_cycle() {
        let locks = Arc::new(RowLocks::default());
        for (block, key) in [(1, 1), (3, 3), (4, 4)] {
            locks.acquire(block, &row(key)).await.unwrap();
        }
        // Block 1 waits for row 3 (block 3's).
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire(1, &row(3)).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Block 4 ends: block 1 wakes, finds row 3 still held, and waits again.
        locks.release(4);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished());
        // Block 3 waiting for row 1 would close the cycle: 40P01 at once.
        let e = tokio::time::timeout(Duration::from_secs(5), locks.acquire(3, &row(1)))
            .await
            .expect("block 3 waits for a block that waits for it")
            .unwrap_err();
        match e {
            PgWireError::UserError(info) => assert_eq!(info.code, "40P01"),
            other => panic!("{other:?}"),
        }
        locks.release(3);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("block 1 still waits after block 3 ended")
            .unwrap()
            .unwrap();
    }
}
