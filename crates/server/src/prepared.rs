//! A connection's prepared statements: the names of those prepared through the protocol
//! (the statements themselves are in pgwire's store), those PREPAREd in SQL, and the
//! memory they all hold.
//!
//! Prepared statements live as long as their connection unless it drops them, so a client
//! can make any number of them: each is counted in the statement pool that running
//! statements share ([`permafrost_sql::workmem`]), which the partitions count as part of
//! the memory budget, at [`statement_size`]. A Parse or PREPARE that finds no room is
//! refused with 53200 (nothing is prepared); Close, DEALLOCATE, DISCARD ALL and the end of
//! the connection give the memory back, and a Parse of the unnamed statement replaces
//! what the previous one held. A portal's parameters are counted the same way while it is
//! kept (from [`PORTAL_COUNTED`] bytes): a Bind without room is refused with 53200.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use permafrost_sql::workmem::{MemoryPool, Reservation};
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};

use crate::command::Command;
use crate::error::client_error;

/// The names of a connection's named prepared statements, and those that SQL DEALLOCATE
/// (or DISCARD ALL) dropped. A dropped statement leaves the library's store when the
/// connection next refers to its name (Parse, Bind or Describe), where the store can be
/// reached: a Bind or Describe then fails with 26000 as for any unknown statement, and a
/// Parse may use the name again.
#[derive(Default)]
pub(crate) struct PreparedNames(Mutex<(HashSet<String>, HashSet<String>)>);

impl PreparedNames {
    fn lock(&self) -> MutexGuard<'_, (HashSet<String>, HashSet<String>)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn add(&self, name: &str) {
        let mut g = self.lock();
        g.1.remove(name);
        g.0.insert(name.to_string());
    }

    /// Drops `name`; false if no such statement was prepared.
    pub(crate) fn deallocate(&self, name: &str) -> bool {
        let mut g = self.lock();
        if !g.0.remove(name) {
            return false;
        }
        g.1.insert(name.to_string());
        true
    }

    pub(crate) fn drop_all(&self) {
        let mut g = self.lock();
        let live: Vec<String> = g.0.drain().collect();
        g.1.extend(live);
    }

    /// `name` was closed through the protocol (and is gone from the store).
    pub(crate) fn closed(&self, name: &str) {
        let mut g = self.lock();
        g.0.remove(name);
        g.1.remove(name);
    }

    /// Whether `name` was dropped (and is gone from the store once this returns true and
    /// the caller removes it).
    pub(crate) fn take_dropped(&self, name: &str) -> bool {
        self.lock().1.remove(name)
    }

    /// Whether `name` is a live statement prepared through the protocol.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.lock().0.contains(name)
    }
}

pub(crate) fn no_statement(name: &str) -> PgWireError {
    client_error("26000", format!("prepared statement \"{name}\" does not exist"))
}

pub(crate) fn prepared_names<C: ClientInfo>(client: &C) -> Arc<PreparedNames> {
    client.session_extensions().get_or_insert_with(PreparedNames::default)
}

/// The statements a connection PREPAREd in SQL, by name: the statement and its parameter
/// types. (Statements prepared through the protocol are pgwire's, [`PreparedNames`].)
#[derive(Default)]
pub(crate) struct SqlPrepared(Mutex<HashMap<String, SqlStatement>>);

/// A statement PREPAREd in SQL and its parameter types.
pub(crate) type SqlStatement = (Arc<Command>, Vec<pgwire::api::Type>);

impl SqlPrepared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<String, SqlStatement>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) fn sql_prepared<C: ClientInfo>(client: &C) -> Arc<SqlPrepared> {
    client.session_extensions().get_or_insert_with(SqlPrepared::default)
}

/// What a prepared statement holds, by its text's length: measured as the growth of a
/// release build's resident memory per statement, 2.9 KB for 60,000 distinct statements
/// of 70 bytes (the stored plan and its parameters, the text, pgwire's entry, the names).
pub(crate) fn statement_size(sql: &str) -> usize {
    2048 + 12 * sql.len()
}

/// The memory a connection's prepared statements and portals hold, by name (the unnamed
/// ones under ""), counted in the statement pool.
#[derive(Default)]
pub(crate) struct StatementMemory {
    held: Mutex<Held>,
    /// Portals counted now (read without the lock).
    portals_counted: AtomicUsize,
}

#[derive(Default)]
struct Held {
    sizes: HashMap<String, usize>,
    /// Portals holding parameters of [`PORTAL_COUNTED`] bytes or more, by name.
    portals: HashMap<String, usize>,
    total: usize,
    counted: Reservation,
}

/// Portals whose parameters hold less are not counted (the Bind of a point query costs no
/// lock here).
pub(crate) const PORTAL_COUNTED: usize = 4 << 10;

impl StatementMemory {
    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts statement `name` at `bytes`, in place of what a statement of that name held
    /// before; 53200 (nothing changed) when the pool has no room for it.
    pub(crate) fn charge(&self, pool: &Arc<MemoryPool>, name: &str, bytes: usize) -> PgWireResult<()> {
        let mut g = self.lock();
        let before = g.sizes.get(name).copied().unwrap_or(0);
        let total = g.total - before + bytes;
        if g.counted.set_exact(total, pool).is_err() {
            return Err(client_error(
                "53200",
                format!(
                    "out of memory: this connection's {} prepared statements hold {} bytes, and running \
                     statements {} of the {} bytes they may hold together (part of memory_limit); deallocate \
                     prepared statements, or retry when others have finished",
                    g.sizes.len(),
                    g.total,
                    pool.used(),
                    pool.limit()
                ),
            ));
        }
        g.total = total;
        g.sizes.insert(name.to_string(), bytes);
        Ok(())
    }

    /// Counts portal `name`'s parameters (`bytes`; 0 when it is closed), in place of what
    /// a portal of that name held before; 53200 (nothing changed) when the pool has no
    /// room for them.
    pub(crate) fn charge_portal(&self, pool: &Arc<MemoryPool>, name: &str, bytes: usize) -> PgWireResult<()> {
        if bytes < PORTAL_COUNTED && self.portals_counted.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        let mut g = self.lock();
        let before = g.portals.get(name).copied().unwrap_or(0);
        let bytes = if bytes < PORTAL_COUNTED { 0 } else { bytes };
        let total = g.total - before + bytes;
        if g.counted.set_exact(total, pool).is_err() {
            return Err(client_error(
                "53200",
                format!(
                    "out of memory: a portal's {bytes} bytes of parameters do not fit: running statements hold {} \
                     of the {} bytes they may hold together (part of memory_limit); retry when others have finished",
                    pool.used(),
                    pool.limit()
                ),
            ));
        }
        g.total = total;
        if bytes == 0 {
            g.portals.remove(name);
        } else {
            g.portals.insert(name.to_string(), bytes);
        }
        self.portals_counted.store(g.portals.len(), Ordering::Relaxed);
        Ok(())
    }

    /// Statement `name` is gone: what it held goes back to the pool.
    pub(crate) fn forget(&self, pool: &Arc<MemoryPool>, name: &str) {
        let mut g = self.lock();
        if let Some(bytes) = g.sizes.remove(name) {
            g.total -= bytes;
            let total = g.total;
            let _ = g.counted.set_exact(total, pool);
        }
    }

    /// Every named statement is gone (DEALLOCATE ALL, DISCARD ALL); the unnamed one stays.
    pub(crate) fn forget_named(&self, pool: &Arc<MemoryPool>) {
        let mut g = self.lock();
        g.sizes.retain(|name, _| name.is_empty());
        g.total = g.sizes.values().sum::<usize>() + g.portals.values().sum::<usize>();
        let total = g.total;
        let _ = g.counted.set_exact(total, pool);
    }
}

pub(crate) fn statement_memory<C: ClientInfo>(client: &C) -> Arc<StatementMemory> {
    client.session_extensions().get_or_insert_with(StatementMemory::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_statements_are_counted_until_they_are_dropped() {
        let pool = MemoryPool::new(100_000);
        let m = StatementMemory::default();
        m.charge(&pool, "a", 30_000).unwrap();
        m.charge(&pool, "", 20_000).unwrap();
        assert_eq!(pool.used(), 50_000);
        // The unnamed statement is replaced, not added to.
        m.charge(&pool, "", 10_000).unwrap();
        assert_eq!(pool.used(), 40_000);
        // No room: refused, nothing changed.
        let e = m.charge(&pool, "b", 70_000).unwrap_err();
        assert!(format!("{e:?}").contains("53200"), "{e:?}");
        assert_eq!(pool.used(), 40_000);
        m.forget(&pool, "a");
        assert_eq!(pool.used(), 10_000);
        m.charge(&pool, "b", 70_000).unwrap();
        m.forget_named(&pool);
        assert_eq!(pool.used(), 10_000);
        // Portals: small parameters are not counted; large ones until closed or replaced.
        m.charge_portal(&pool, "", 100).unwrap();
        assert_eq!(pool.used(), 10_000);
        m.charge_portal(&pool, "p", 50_000).unwrap();
        m.charge_portal(&pool, "", 20_000).unwrap();
        assert_eq!(pool.used(), 80_000);
        assert!(m.charge_portal(&pool, "q", 30_000).is_err());
        m.charge_portal(&pool, "", 100).unwrap();
        assert_eq!(pool.used(), 60_000);
        m.charge_portal(&pool, "p", 0).unwrap();
        assert_eq!(pool.used(), 10_000);
        drop(m);
        assert_eq!(pool.used(), 0);
    }
}
