//! A connection's interactive transaction: BEGIN ... COMMIT from a client.
//!
//! The connection keeps the statements of its open transaction ([`State::Open`]); each
//! runs at once as a probe at its partition(s) over the committed state plus the
//! transaction's earlier writes, and COMMIT runs them all again at one point of the serial
//! order, applying them only if each still gives what the client was shown
//! (`permafrost_executor`'s interactive.rs explains why this is serializable). No
//! partition waits for a client in between.
//!
//! As in PostgreSQL: an error inside the transaction aborts it ([`State::Failed`]: later
//! statements fail with 25P02 until ROLLBACK, and COMMIT answers ROLLBACK); BEGIN inside a
//! transaction and COMMIT or ROLLBACK outside one are warnings; ReadyForQuery says I, T or
//! E. Every isolation level is accepted and runs serializable (`SHOW transaction_isolation`
//! says so); READ ONLY refuses writes (25006). Savepoints mark a length of the block's list:
//! ROLLBACK TO SAVEPOINT cuts the list back to it (and leaves an aborted block open again),
//! RELEASE forgets the mark. A query string of several queries, INSERTs, UPDATEs and
//! DELETEs outside a block runs as one transaction, as PostgreSQL's implicit transaction
//! (`Database::run_block`); one with other statements runs them one by one. An
//! extended-protocol group of several statements up to one Sync, outside a block, is an
//! implicit block ([`Open::implicit`]): its statements run as a block's, and it commits at
//! the Sync (an error there is reported before ReadyForQuery).
//!
//! Schema changes inside a block are planned when they run, against the schema as the
//! block's earlier changes leave it ([`Open::drafts`]), and the block's later statements
//! are planned against that: their probes and the COMMIT apply the changes first, at every
//! partition (`permafrost_executor`'s schema_block.rs). A block of schema changes only is
//! applied at COMMIT, all or none (`Database::execute_ddl_atomic`). A block that has
//! written may not change the schema (0A000). COPY FROM STDIN inside a block is one of its
//! statements, a bulk insert of its rows (`Backend::copy_in_block`); COPY TO is one of its
//! queries (`Backend::copy_out_in_block`); a CALL of a SQL-defined procedure runs its
//! statements as the block's (`Backend::call_in_block`).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use permafrost_executor::{SchemaDraft, TxnStatement};
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::TransactionStatus;

use crate::error::client_error;

/// Where a connection stands.
pub(crate) enum State {
    /// No transaction block: each statement commits on its own.
    Idle,
    Open(Open),
    /// A statement failed inside the block: only ROLLBACK (or COMMIT, which rolls back)
    /// or ROLLBACK TO a savepoint is accepted.
    Failed(Open),
}

/// An open transaction block.
pub(crate) struct Open {
    /// Which block of the server it is (cursors declared in it live as long as it does).
    pub id: u64,
    /// `now()` inside it (its start), microseconds since the epoch.
    pub now: i64,
    pub read_only: bool,
    /// Every statement run so far, with what its client was shown (what COMMIT runs and
    /// checks; a probe runs those that write, [`TxnStatement::writes`]).
    pub statements: Vec<TxnStatement>,
    /// Schema changes (CREATE, DROP, ALTER), checked when they ran and applied together
    /// at COMMIT (`Database::execute_ddl_atomic`).
    pub ddl: Vec<String>,
    /// The schema each of `ddl` leads to, planned when it ran: the block's later
    /// statements are planned against the last (`permafrost_executor::SchemaDraft`).
    pub drafts: Vec<Arc<SchemaDraft>>,
    /// Savepoints, oldest first: name, the lengths of `statements` and `ddl` then, and
    /// the block's `settings` then.
    pub savepoints: Vec<(String, usize, usize, Vec<SettingUndo>)>,
    /// Opened by an extended-protocol group of several statements outside BEGIN: it
    /// commits at the group's Sync (PostgreSQL's implicit transaction).
    pub implicit: bool,
    /// The settings the block changed (SET, SET LOCAL, RESET), one entry each: put back
    /// when it ends (`Backend::end_block_settings`).
    pub settings: Vec<SettingUndo>,
    /// The row locks its FOR UPDATE / FOR SHARE reads took (crate::row_locks), released
    /// when the block is dropped: after its COMMIT ran, at ROLLBACK, or with its connection.
    pub locks: Option<crate::row_locks::Owner>,
}

/// A setting a transaction block changed: its value before the block, the value a COMMIT
/// keeps (the last plain SET's; SET LOCAL's ends with the block), and its value now (what
/// a ROLLBACK TO a savepoint taken now puts back). A ROLLBACK puts `before` back, as
/// PostgreSQL does.
#[derive(Clone)]
pub(crate) struct SettingUndo {
    pub setting: &'static crate::session_settings::Setting,
    pub before: String,
    pub kept: String,
    pub now: String,
}

impl Open {
    /// The random seed of the block's next statement
    /// ([`permafrost_executor::TxnStatement::seed_for`]): from the block's number and start,
    /// so that no two blocks of this server's life, or of another run's, draw alike.
    pub(crate) fn next_seed(&self) -> u64 {
        let block = permafrost_sql::splitmix64((self.now as u64) ^ self.id.rotate_left(32));
        TxnStatement::seed_for(block, self.statements.len())
    }

    /// The schema the block's changes lead to, if it changed the schema.
    pub(crate) fn draft(&self) -> Option<&Arc<SchemaDraft>> {
        self.drafts.last()
    }

    /// Whether a statement of the block has written.
    pub(crate) fn wrote(&self) -> bool {
        self.statements.iter().any(TxnStatement::writes)
    }

    pub(crate) fn new(read_only: bool) -> Open {
        static BLOCKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Open {
            id: BLOCKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            now: now_micros(),
            read_only,
            statements: Vec::new(),
            ddl: Vec::new(),
            drafts: Vec::new(),
            savepoints: Vec::new(),
            implicit: false,
            settings: Vec::new(),
            locks: None,
        }
    }

    /// The implicit transaction of an extended-protocol group.
    pub(crate) fn implicit() -> Open {
        Open {
            implicit: true,
            ..Open::new(false)
        }
    }
}

/// Whether more of the connection's extended-protocol group is coming after the Execute
/// being run (set by the connection loop, which sees the read buffer: another Execute
/// before the next Sync, or no Sync yet).
#[derive(Default)]
pub(crate) struct GroupGoesOn(std::sync::atomic::AtomicBool);

impl GroupGoesOn {
    pub(crate) fn set(&self, on: bool) {
        self.0.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether it was marked, and the mark cleared.
    pub(crate) fn take(&self) -> bool {
        self.0.swap(false, std::sync::atomic::Ordering::Relaxed)
    }
}

pub(crate) fn group_goes_on<C: ClientInfo>(client: &C) -> Arc<GroupGoesOn> {
    client.session_extensions().get_or_insert_with(GroupGoesOn::default)
}

/// The catalog a statement of the connection's open block is planned against when the
/// block changed the schema (`permafrost_executor::SchemaDraft`).
pub(crate) fn draft_catalog(cell: &Cell) -> Option<Arc<permafrost_sql::Catalog>> {
    match &*lock(cell) {
        State::Open(o) => o.draft().map(|d| d.catalog().clone()),
        _ => None,
    }
}

/// Whether, in the bytes after an Execute, another Execute comes before a Sync (or no Sync
/// has arrived yet: the group may go on).
pub(crate) fn another_execute_before_sync(buf: &[u8]) -> bool {
    let mut i = 0;
    while i + 5 <= buf.len() {
        match buf[i] {
            b'S' => return false,
            b'E' => return true,
            _ => {}
        }
        let len = u32::from_be_bytes([buf[i + 1], buf[i + 2], buf[i + 3], buf[i + 4]]) as usize;
        if len < 4 {
            return false;
        }
        i += 1 + len;
    }
    true
}

/// The time a transaction starts (its `now()`), microseconds since the epoch.
pub(crate) fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// A connection's transaction state.
pub(crate) type Cell = Mutex<State>;

/// The transaction state of `client`'s connection.
pub(crate) fn of<C: ClientInfo>(client: &C) -> Arc<Cell> {
    client
        .session_extensions()
        .get_or_insert_with(|| Mutex::new(State::Idle))
}

pub(crate) fn lock(cell: &Cell) -> MutexGuard<'_, State> {
    cell.lock().unwrap_or_else(|p| p.into_inner())
}

/// What ReadyForQuery says of the connection.
pub(crate) fn status(cell: &Cell) -> TransactionStatus {
    match &*lock(cell) {
        State::Idle => TransactionStatus::Idle,
        State::Open(_) => TransactionStatus::Transaction,
        State::Failed(_) => TransactionStatus::Error,
    }
}

/// An open block aborts (an error inside it); any other state stays.
pub(crate) fn fail(st: &mut State) {
    if matches!(st, State::Open(_))
        && let State::Open(o) = std::mem::replace(st, State::Idle)
    {
        *st = State::Failed(o);
    }
}

/// What a savepoint statement does to the block.
#[derive(Debug, Clone, PartialEq)]
pub enum Savepoint {
    Set(String),
    RollbackTo(String),
    Release(String),
}

/// Applies a savepoint statement; the command tag and, for a ROLLBACK TO, the settings to
/// put back (each with its value at the savepoint), or the error (which aborts the block,
/// as in PostgreSQL).
pub(crate) fn savepoint(st: &mut State, sp: &Savepoint) -> PgWireResult<(&'static str, Vec<SettingUndo>)> {
    let missing = |name: &str| client_error("3B001", format!("savepoint \"{name}\" does not exist"));
    match (std::mem::replace(st, State::Idle), sp) {
        (State::Idle, _) => {
            let what = match sp {
                Savepoint::Set(_) => "SAVEPOINT",
                Savepoint::RollbackTo(_) => "ROLLBACK TO SAVEPOINT",
                Savepoint::Release(_) => "RELEASE SAVEPOINT",
            };
            Err(client_error(
                "25P01",
                format!("{what} can only be used in transaction blocks"),
            ))
        }
        (State::Open(mut o), Savepoint::Set(name)) => {
            let settings = o.settings.clone();
            o.savepoints
                .push((name.clone(), o.statements.len(), o.ddl.len(), settings));
            *st = State::Open(o);
            Ok(("SAVEPOINT", Vec::new()))
        }
        (State::Open(mut o) | State::Failed(mut o), Savepoint::RollbackTo(name)) => {
            match o.savepoints.iter().rposition(|(n, ..)| n == name) {
                Some(i) => {
                    let (_, len, ddl, ref settings) = o.savepoints[i];
                    let settings = settings.clone();
                    // The savepoint stays; later ones go.
                    o.savepoints.truncate(i + 1);
                    o.statements.truncate(len);
                    o.ddl.truncate(ddl);
                    o.drafts.truncate(ddl);
                    // Settings back to their values then: those changed since, to the
                    // savepoint's, or to the block's start when it had not changed them.
                    let back = o
                        .settings
                        .iter()
                        .map(|u| match settings.iter().find(|s| s.setting.name == u.setting.name) {
                            Some(then) => SettingUndo {
                                now: then.now.clone(),
                                ..u.clone()
                            },
                            None => SettingUndo {
                                now: u.before.clone(),
                                ..u.clone()
                            },
                        })
                        .collect();
                    o.settings = settings;
                    *st = State::Open(o);
                    Ok(("ROLLBACK", back))
                }
                None => {
                    *st = State::Failed(o);
                    Err(missing(name))
                }
            }
        }
        (State::Open(mut o), Savepoint::Release(name)) => match o.savepoints.iter().rposition(|(n, ..)| n == name) {
            Some(i) => {
                o.savepoints.truncate(i);
                *st = State::Open(o);
                Ok(("RELEASE", Vec::new()))
            }
            None => {
                *st = State::Failed(o);
                Err(missing(name))
            }
        },
        (failed @ State::Failed(_), _) => {
            *st = failed;
            Err(aborted())
        }
    }
}

/// Reads `SAVEPOINT name`, `RELEASE [SAVEPOINT] name` and `ROLLBACK [WORK | TRANSACTION]
/// TO [SAVEPOINT] name`.
pub(crate) fn parse_savepoint(sql: &str) -> PgWireResult<Savepoint> {
    let raw: Vec<&str> = sql.trim().trim_end_matches(';').split_whitespace().collect();
    let up: Vec<String> = raw.iter().map(|w| w.to_ascii_uppercase()).collect();
    let up: Vec<&str> = up.iter().map(String::as_str).collect();
    let name = |i: usize| -> PgWireResult<String> {
        match raw.get(i) {
            Some(n) if i + 1 == raw.len() => Ok(n.trim_matches('"').to_string()),
            _ => Err(syntax(sql)),
        }
    };
    match up.as_slice() {
        ["SAVEPOINT", _] => Ok(Savepoint::Set(name(1)?)),
        ["RELEASE", "SAVEPOINT", _] => Ok(Savepoint::Release(name(2)?)),
        ["RELEASE", _] => Ok(Savepoint::Release(name(1)?)),
        ["ROLLBACK" | "ABORT", rest @ ..] => {
            let skip = usize::from(matches!(rest.first(), Some(&"WORK" | &"TRANSACTION")));
            match &rest[skip..] {
                ["TO", "SAVEPOINT", _] => Ok(Savepoint::RollbackTo(name(skip + 3)?)),
                ["TO", _] => Ok(Savepoint::RollbackTo(name(skip + 2)?)),
                _ => Err(syntax(sql)),
            }
        }
        _ => Err(syntax(sql)),
    }
}

/// 25P02, for a statement after an error inside a transaction block.
pub(crate) fn aborted() -> PgWireError {
    client_error(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

/// The words of a transaction statement, upper case, without `;` and commas.
fn words(sql: &str) -> Vec<String> {
    sql.trim()
        .trim_end_matches(';')
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
        .collect()
}

fn syntax(sql: &str) -> PgWireError {
    client_error(
        "42601",
        format!("syntax error in transaction statement: {}", sql.trim()),
    )
}

/// `BEGIN [WORK | TRANSACTION] [mode, ...]` or `START TRANSACTION [mode, ...]`, where a
/// mode is `ISOLATION LEVEL {SERIALIZABLE | REPEATABLE READ | READ COMMITTED | READ
/// UNCOMMITTED}`, `READ WRITE`, `READ ONLY` or `[NOT] DEFERRABLE`: whether the block is
/// read-only.
pub(crate) fn parse_begin(sql: &str) -> PgWireResult<bool> {
    let w = words(sql);
    let mut i = match (w.first().map(String::as_str), w.get(1).map(String::as_str)) {
        (Some("BEGIN"), Some("WORK" | "TRANSACTION")) => 2,
        (Some("BEGIN"), _) => 1,
        (Some("START"), Some("TRANSACTION")) => 2,
        _ => return Err(syntax(sql)),
    };
    let mut read_only = false;
    let at = |i: usize| w.get(i).map(String::as_str);
    while i < w.len() {
        match (at(i), at(i + 1), at(i + 2), at(i + 3)) {
            (Some("ISOLATION"), Some("LEVEL"), Some("SERIALIZABLE"), _) => i += 3,
            (Some("ISOLATION"), Some("LEVEL"), Some("REPEATABLE"), Some("READ")) => i += 4,
            (Some("ISOLATION"), Some("LEVEL"), Some("READ"), Some("COMMITTED" | "UNCOMMITTED")) => i += 4,
            (Some("READ"), Some("WRITE"), ..) => {
                read_only = false;
                i += 2;
            }
            (Some("READ"), Some("ONLY"), ..) => {
                read_only = true;
                i += 2;
            }
            (Some("DEFERRABLE"), ..) => i += 1,
            (Some("NOT"), Some("DEFERRABLE"), ..) => i += 2,
            _ => return Err(syntax(sql)),
        }
    }
    Ok(read_only)
}

/// `COMMIT | END | ROLLBACK | ABORT [WORK | TRANSACTION]`: None; `ROLLBACK [WORK |
/// TRANSACTION] TO [SAVEPOINT] name`: that savepoint statement. `AND CHAIN` and two-phase
/// commit are not supported.
pub(crate) fn parse_end(sql: &str) -> PgWireResult<Option<Savepoint>> {
    let w = words(sql);
    let rest: Vec<&str> = w.iter().skip(1).map(String::as_str).collect();
    match rest.as_slice() {
        [] | ["WORK" | "TRANSACTION"] => Ok(None),
        ["WORK" | "TRANSACTION", "AND", "NO", "CHAIN"] | ["AND", "NO", "CHAIN"] => Ok(None),
        ["TO", ..] | ["WORK" | "TRANSACTION", "TO", ..] => parse_savepoint(sql).map(Some),
        [.., "AND", "CHAIN"] => Err(client_error("0A000", "AND CHAIN is not supported")),
        ["PREPARED", ..] => Err(client_error(
            "0A000",
            "prepared transactions (two-phase commit) are not supported",
        )),
        _ => Err(syntax(sql)),
    }
}

#[cfg(test)]
mod tests {

    fn msg(kind: u8, body: usize) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&u32::try_from(body + 4).unwrap().to_be_bytes());
        m.extend(std::iter::repeat_n(0u8, body));
        m
    }

    #[test]
    fn a_group_goes_on_while_another_execute_comes_before_sync() {
        let group = |msgs: &[Vec<u8>]| another_execute_before_sync(&msgs.concat());
        // Bind, Execute, ... Sync: the group goes on.
        assert!(group(&[msg(b'B', 10), msg(b'E', 5), msg(b'S', 0)]));
        // Sync next: the statement is the group's last.
        assert!(!group(&[msg(b'S', 0), msg(b'B', 10), msg(b'E', 5)]));
        assert!(!group(&[msg(b'D', 6), msg(b'S', 0)]));
        // Nothing more has arrived: it may go on.
        assert!(group(&[]));
        assert!(group(&[msg(b'B', 10)]));
        // A broken length stops the scan.
        assert!(!group(&[vec![b'B', 0, 0, 0, 1]]));
    }
    use super::*;

    fn begin(sql: &str) -> Option<bool> {
        parse_begin(sql).ok()
    }

    #[test]
    fn transaction_statements_are_read_as_postgresql_writes_them() {
        assert_eq!(begin("BEGIN"), Some(false));
        assert_eq!(begin("begin transaction;"), Some(false));
        assert_eq!(
            begin("START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"),
            Some(true)
        );
        assert_eq!(
            begin("BEGIN ISOLATION LEVEL SERIALIZABLE READ WRITE NOT DEFERRABLE"),
            Some(false)
        );
        assert_eq!(begin("BEGIN ISOLATION LEVEL READ COMMITTED"), Some(false));
        assert_eq!(begin("BEGIN ISOLATION"), None);
        assert_eq!(begin("BEGIN SOMETHING"), None);
        assert_eq!(begin("START"), None);
        assert_eq!(parse_end("COMMIT").ok(), Some(None));
        assert_eq!(parse_end("end transaction;").ok(), Some(None));
        assert_eq!(parse_end("ROLLBACK WORK").ok(), Some(None));
        assert_eq!(
            parse_end("ROLLBACK TO SAVEPOINT a").ok(),
            Some(Some(Savepoint::RollbackTo("a".into())))
        );
        assert_eq!(
            parse_savepoint("SAVEPOINT _pg3_1").ok(),
            Some(Savepoint::Set("_pg3_1".into()))
        );
        assert_eq!(
            parse_savepoint("RELEASE SAVEPOINT s").ok(),
            Some(Savepoint::Release("s".into()))
        );
        assert_eq!(parse_savepoint("release s;").ok(), Some(Savepoint::Release("s".into())));
        assert_eq!(
            parse_savepoint("ROLLBACK WORK TO s").ok(),
            Some(Savepoint::RollbackTo("s".into()))
        );
        assert!(parse_savepoint("SAVEPOINT").is_err());
        assert!(parse_savepoint("SAVEPOINT a b").is_err());
        assert!(parse_end("COMMIT AND CHAIN").is_err());
        assert!(parse_end("COMMIT PREPARED 'x'").is_err());
        assert!(parse_end("COMMIT NOW").is_err());
    }
}
