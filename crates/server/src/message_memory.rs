//! The memory a connection and its incoming messages hold, counted before they are read.
//!
//! A connection holds [`CONNECTION_BYTES`] of the statement pool while it is open (its
//! task, buffers and session state), taken before it is served: one that finds no room
//! within [`POOL_WAIT`] is refused with 53300, as one past `max_connections` is.
//!
//! A message is read whole before it is decoded, and a client decides how long it is (up
//! to 1 GiB): a Query of a 100 MB string, a Bind of a 100 MB parameter, one CopyData of a
//! whole file. Before its bytes are buffered, a message takes from the statement pool that
//! running statements share ([`permafrost_sql::workmem`]) its length times the copies of it
//! the server makes while the statement runs ([`copies`]), when that passes [`POOL_STEP`]
//! (as statements count). The partitions count the pool as part of the memory budget, so
//! they evict to make room for it ([`Database::check_memory`]). What the message took is
//! given back when the connection reads its next one.
//!
//! A message that cannot be given its memory is not read: its bytes are skipped as they
//! arrive, in pieces, and the statement fails as PostgreSQL fails a statement that runs
//! out of memory:
//! - more than one statement may hold (`Database::statement_memory`): 54000;
//! - more than the pool has free after waiting [`POOL_WAIT`] for running statements to
//!   give some back: 53200.
//!
//! A refused CopyData fails its COPY (reported at CopyDone, nothing loaded); any other
//! message is answered with the error (the extended protocol then skips to Sync) and an
//! open transaction block aborts.
//!
//! The read buffer is given back too: after a large message it is replaced by one that
//! holds only what follows, so an idle connection does not keep the largest message it
//! ever read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use permafrost_executor::Database;
use permafrost_sql::workmem::{MemoryPool, POOL_STEP, Reservation};
use pgwire::error::PgWireResult;

use crate::error::client_error;

/// How long a message waits for room in the statement pool before it is refused (53200).
pub(crate) const POOL_WAIT: Duration = Duration::from_secs(2);

/// How often a waiting message tries the pool again.
const RETRY: Duration = Duration::from_millis(5);

/// A message that takes this much has the partitions count the pool at once.
const NUDGE_BYTES: usize = 1 << 20;

/// A read buffer with more room than this is replaced once it holds little.
const KEEP_BUFFER: usize = 1 << 20;

/// How many times a message of `kind` is held while its statement runs, measured as the
/// growth of a release build's resident memory for one message of 1.5 and 6 MB at a 16
/// MiB budget (docs/results/memory.md, "Large messages"):
/// - a query string (Query, Parse): 11 — the message, pgwire's string, the plan cache's
///   shape, the split statements, the SQL parser's tokens and tree, the planned values;
/// - parameters (Bind): 3 — the message (pgwire's parameters are views of it), the
///   decoded values, the statement's copy;
/// - CopyData: 1 — its rows are read where they lie and counted by the COPY itself;
/// - anything else: 2.
fn copies(kind: u8) -> usize {
    match kind {
        b'Q' | b'P' => 11,
        b'B' => 3,
        b'd' => 1,
        _ => 2,
    }
}

/// What an idle connection holds: measured as the growth of a release build's resident
/// memory, 22.8 KB per connection for 2,000 connections that had each run one query
/// (20.3 KB of it anonymous; a debug build's 24.7 KB). It was 16.7 KB when first
/// measured: measure again when a session keeps more (docs/results/memory.md).
pub(crate) const CONNECTION_BYTES: usize = 24 << 10;

/// Takes a new connection's memory from `pool`, waiting up to [`POOL_WAIT`] for room;
/// None when there is none.
pub(crate) async fn admit_connection(pool: &Arc<MemoryPool>) -> Option<Reservation> {
    let started = Instant::now();
    let mut held = Reservation::default();
    loop {
        if held.set_exact(CONNECTION_BYTES, pool).is_ok() {
            return Some(held);
        }
        if started.elapsed() >= POOL_WAIT {
            return None;
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// What the connection's current message holds of the statement pool.
#[derive(Default)]
pub(crate) struct MessageMemory {
    held: Reservation,
}

impl MessageMemory {
    /// The previous message is done: what it took goes back to the pool.
    pub(crate) fn release(&mut self) {
        self.held = Reservation::default();
    }

    /// Takes the memory a message of `kind` spanning `total` bytes (type byte included)
    /// will hold while its statement runs: nothing up to [`POOL_STEP`]; an error (54000 or 53200, see the
    /// module) when it cannot have it.
    pub(crate) async fn admit(&mut self, db: &Database, kind: u8, total: usize) -> PgWireResult<()> {
        self.release();
        let bytes = total.saturating_mul(copies(kind));
        if bytes <= POOL_STEP {
            return Ok(());
        }
        let limit = db.statement_memory();
        if bytes > limit {
            return Err(client_error(
                "54000",
                format!(
                    "a message of {total} bytes needs {bytes} bytes of memory, more than one statement may hold \
                     ({limit} bytes: a quarter of memory_limit, at least 16 MiB); {}",
                    hint(kind)
                ),
            ));
        }
        let started = Instant::now();
        loop {
            match self.held.cover(bytes, Some(db.statement_pool())) {
                Ok(()) => {
                    if bytes >= NUDGE_BYTES {
                        // The partitions evict to make room for it now.
                        db.check_memory();
                    }
                    return Ok(());
                }
                Err(e) if started.elapsed() >= POOL_WAIT => return Err(crate::error::sql_error(e)),
                Err(_) => tokio::time::sleep(RETRY).await,
            }
        }
    }
}

/// What to do instead of sending a message that is too large.
fn hint(kind: u8) -> &'static str {
    match kind {
        b'Q' | b'P' => "pass large values as parameters, or raise memory_limit",
        b'd' => "send COPY data in smaller messages (psql sends one per line)",
        _ => "send less in one message, or raise memory_limit",
    }
}

/// Replaces a read buffer that has much more room than it holds bytes (it read a large
/// message) by one that holds only its bytes.
pub(crate) fn shrink(buf: &mut bytes::BytesMut) {
    if buf.capacity() > KEEP_BUFFER && buf.len() < buf.capacity() / 2 {
        *buf = bytes::BytesMut::from(&buf[..]);
    }
}
