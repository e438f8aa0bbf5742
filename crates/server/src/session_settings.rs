//! Session settings: what SET, RESET, SHOW and DISCARD do, as PostgreSQL reads and prints
//! them. Every setting a client may SET is in [`SETTINGS`]; a value either takes effect
//! or is refused with a clear error, never accepted and ignored:
//! - `statement_timeout` stops statements (crate::session);
//! - `application_name` is kept and reported (ParameterStatus), as PostgreSQL does;
//! - settings whose only values the server can honour are accepted with those values and
//!   refused (0A000) with others: `client_encoding` UTF8, `DateStyle` ISO,
//!   `extra_float_digits` 1 to 3 (floats are printed shortest-exact),
//!   `standard_conforming_strings` on, `IntervalStyle` postgres,
//!   `bytea_output` hex,
//!   `default_transaction_read_only` off, `default_table_access_method` heap,
//!   `default_tablespace` '' or pg_default;
//! - `client_min_messages` keeps less severe notices from the client (crate::handler);
//! - `search_path` takes any list: unqualified names are looked up in public, and a
//!   statement the path would make PostgreSQL read otherwise is refused or fails as there
//!   (permafrost_sql::search_path, checked in crate::handler);
//! - `row_security`, `xmloption` and `check_function_bodies` take every value, each of
//!   which holds here: no table has row-level security, there is no xml type, and a
//!   procedure's body is checked when it is created whatever the setting (so off, which
//!   pg_dump sets, does not let a body name a table created later);
//! - `TimeZone` is the zone each statement's timestamps with time zone are read and shown
//!   in (permafrost_types::zone; crate::session gives it to each statement, whose
//!   command-log record keeps it);
//! - `idle_in_transaction_session_timeout` ends a session left idle inside a block (25P03);
//! - `default_transaction_isolation` and `transaction_isolation` take every level: every
//!   transaction runs serializable, which every level allows;
//! - `lock_timeout` is kept: nothing ever waits for a lock here, so every value holds;
//! - `work_mem` is what the session's statements may hold for sorts, hash tables and
//!   groups before they spill (crate::session carries it to each statement); at most the
//!   server's, a quarter of `memory_limit` (22023 above it), which is its default.
//!
//! A name with a dot is a custom setting (crate::setting_values::make_custom): any value, and
//! it exists for a session once the session sets it. Read-only parameters
//! (`server_version`, ...) answer 55P02; other unknown names 42704. Inside
//! a transaction block a SET lasts if the block commits and is undone if it rolls back
//! (or rolls back to a savepoint taken before it);
//! `SET LOCAL` (and `set_config(..., true)`) lasts until the block ends, either way
//! (crate::txn::SettingUndo); outside one it warns and does nothing, as in PostgreSQL.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use permafrost_types::zone::Zone;
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};

use crate::error::client_error;
pub(crate) use crate::setting_values::TIME_ZONE;
use crate::setting_values::{IDLE_IN_TRANSACTION, MESSAGE_LEVELS, invalid};
pub use crate::setting_values::{SETTINGS, Setting, timeout_ms, zone_of};

/// The PostgreSQL version clients are told they talk to (the protocol and catalog
/// behaviour they may rely on).
pub const PG_VERSION: &str = "16.6";

/// What `version()` answers.
pub(crate) fn version_text() -> String {
    format!(
        "PostgreSQL {PG_VERSION} (Permafrost {}) on {}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    )
}

/// A parsed SET or RESET.
#[derive(Debug, Clone, PartialEq)]
pub enum SetStatement {
    /// `SET name TO value`, `RESET name` (`value` None: back to the default); `local`:
    /// `SET LOCAL`, which lasts until the end of the transaction block.
    Assign {
        name: &'static str,
        value: Option<String>,
        local: bool,
    },
    /// `RESET ALL`.
    ResetAll,
    /// `SET TRANSACTION ...` (`session`: `SET SESSION CHARACTERISTICS AS TRANSACTION`):
    /// whether it asks for READ ONLY.
    Transaction { session: bool, read_only: bool },
}

/// Parameters a client may read but not set (55P02), with their values.
pub fn read_only_parameter(name: &str) -> Option<&'static str> {
    Some(match name {
        "server_version" => PG_VERSION,
        "server_version_num" => "160006",
        "server_encoding" => "UTF8",
        "integer_datetimes" => "on",
        "max_identifier_length" => "63",
        "lc_collate" | "lc_ctype" => "C",
        "max_connections" => "10000",
        "is_superuser" => "on",
        "block_size" => "8192",
        _ => return None,
    })
}

/// The setting named `name` (lower case): a declared one, or a custom one made before.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS
        .iter()
        .find(|s| s.name == name)
        .or_else(|| crate::setting_values::custom(name))
}

/// The setting a SET (or a start-up packet) names: a declared one, or a custom one (a name
/// with a dot), made if new; 42704 for another name.
fn setting_to_set(name: &str) -> PgWireResult<&'static Setting> {
    match setting(name) {
        Some(s) => Ok(s),
        None if name.contains('.') => crate::setting_values::make_custom(name),
        None => Err(client_error(
            "42704",
            format!("unrecognized configuration parameter \"{name}\""),
        )),
    }
}

/// The schema names of a search_path value, in order, each read as a name in text is
/// (quoted ones as written, others folded; `"$user"` as `$user`).
pub(crate) fn path_entries(path: &str) -> impl Iterator<Item = String> + '_ {
    path.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(permafrost_sql::bind::name_in_text)
}

/// Whether `s` is a custom setting (a name with a dot).
pub fn is_custom(s: &Setting) -> bool {
    !SETTINGS.iter().any(|d| std::ptr::eq(d, s))
}

/// A connection's settings that differ from their defaults.
#[derive(Default)]
pub struct SessionSettings {
    values: Mutex<HashMap<&'static str, String>>,
    /// Values the start-up packet gave (`application_name`, `TimeZone`): the session's
    /// defaults, which RESET goes back to, as in PostgreSQL.
    startup: Mutex<HashMap<&'static str, String>>,
    /// `idle_in_transaction_session_timeout` in milliseconds (0: none), kept beside its
    /// text: the connection reads it before each message it waits for inside a block.
    idle_in_transaction_ms: AtomicU64,
    /// The TimeZone's zone, beside its text (`None`: UTC): each statement takes it.
    zone: Mutex<Option<Zone>>,
    /// The custom settings this session has set (they exist for it from then on, '' once
    /// reset, as PostgreSQL's placeholders do), in the order first set.
    customs: Mutex<Vec<&'static Setting>>,
    /// Whether the search_path leaves public out (beside its text: each statement asks).
    public_unsearched: AtomicBool,
}

impl SessionSettings {
    fn lock(&self) -> MutexGuard<'_, HashMap<&'static str, String>> {
        self.values.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a notice of `severity` (NOTICE, WARNING) goes to the client, as
    /// `client_min_messages` says.
    pub fn sends(&self, severity: &str) -> bool {
        let Some(s) = setting(crate::setting_values::CLIENT_MIN_MESSAGES) else {
            return true;
        };
        let level = |l: &str| MESSAGE_LEVELS.iter().position(|m| m.eq_ignore_ascii_case(l));
        match (level(severity), level(&self.get(s))) {
            (Some(sent), Some(least)) => sent >= least,
            _ => true,
        }
    }

    /// Whether the search_path leaves public out (unqualified names are then not found
    /// there in PostgreSQL).
    pub fn public_unsearched(&self) -> bool {
        self.public_unsearched.load(Ordering::Relaxed)
    }

    /// The schemas this session's search_path puts before public (all of them when it
    /// leaves public out) that `has_schema` says exist (`$user` is a schema named `user`),
    /// in order, and whether public is on the path.
    pub fn path_schemas(&self, user: &str, has_schema: impl Fn(&str) -> bool) -> (Vec<String>, bool) {
        let mut ahead = Vec::new();
        let Some(path) = setting("search_path").map(|s| self.get(s)) else {
            return (ahead, true);
        };
        for name in path_entries(&path) {
            let name = if name == "$user" { user.to_string() } else { name };
            if name == permafrost_sql::namespace::PUBLIC {
                return (ahead, true);
            }
            if has_schema(&name) {
                ahead.push(name);
            }
        }
        (ahead, false)
    }

    /// The value of a setting as SHOW prints it.
    pub fn get(&self, s: &Setting) -> String {
        let set = self.lock().get(s.name).cloned();
        set.unwrap_or_else(|| self.reset_value(s))
    }

    /// What RESET gives a setting: the start-up packet's value, else the default.
    fn reset_value(&self, s: &Setting) -> String {
        let startup = self.startup.lock().unwrap_or_else(|p| p.into_inner());
        startup.get(s.name).cloned().unwrap_or_else(|| s.default.to_string())
    }

    /// Makes `value` (checked) the session's default of `s`, as the start-up packet gives it.
    pub fn set_startup(&self, s: &'static Setting, value: String) {
        self.startup
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(s.name, value);
        self.set(s, None);
    }

    /// Sets a setting (None: back to the session's default); returns the value now in
    /// effect.
    pub fn set(&self, s: &'static Setting, value: Option<String>) -> String {
        if is_custom(s) {
            let mut customs = self.customs.lock().unwrap_or_else(|p| p.into_inner());
            if !customs.iter().any(|c| std::ptr::eq(*c, s)) {
                customs.push(s);
            }
        }
        let reset = self.reset_value(s);
        let mut m = self.lock();
        let now = match value {
            Some(v) if v != reset => {
                m.insert(s.name, v.clone());
                v
            }
            _ => {
                m.remove(s.name);
                reset
            }
        };
        if s.name == IDLE_IN_TRANSACTION {
            // Stored as checked: whole milliseconds.
            self.idle_in_transaction_ms
                .store(now.parse().unwrap_or(0), Ordering::Relaxed);
        }
        if s.name == "search_path" {
            let public = path_entries(&now).any(|e| e == permafrost_sql::namespace::PUBLIC);
            self.public_unsearched.store(!public, Ordering::Relaxed);
        }
        if s.name == TIME_ZONE {
            // (Stored as checked: a name its zone is found by again.)
            *self.zone.lock().unwrap_or_else(|p| p.into_inner()) = zone_of(&now).filter(|z| !z.is_utc());
        }
        now
    }

    /// Whether `s` exists for this session: a declared setting, or a custom one it has set.
    pub fn knows(&self, s: &Setting) -> bool {
        !is_custom(s) || self.customs().iter().any(|c| std::ptr::eq(*c, s))
    }

    /// The custom settings this session has set, in the order first set.
    pub fn customs(&self) -> Vec<&'static Setting> {
        self.customs.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The session's TimeZone (`None`: UTC).
    pub fn zone(&self) -> Option<Zone> {
        self.zone.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The settings whose values differ from the session's defaults (what RESET ALL resets).
    pub fn changed(&self) -> Vec<&'static str> {
        self.lock().keys().copied().collect()
    }

    /// How long a session may stay idle inside a transaction block
    /// (`idle_in_transaction_session_timeout`); `None`: no limit.
    pub fn idle_in_transaction_timeout(&self) -> Option<std::time::Duration> {
        match self.idle_in_transaction_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(std::time::Duration::from_millis(ms)),
        }
    }
}

/// The settings of `client`'s connection.
pub fn of<C: ClientInfo>(client: &C) -> Arc<SessionSettings> {
    client.session_extensions().get_or_insert_with(SessionSettings::default)
}

/// `SET TIME ZONE INTERVAL '+02:00' [HOUR [TO MINUTE]]`: a zone that many hours east of
/// UTC, as PostgreSQL takes it (days or months are 22023 with its DETAIL).
fn interval_zone(text: &str) -> PgWireResult<String> {
    let rest = text[8..].trim();
    let (quoted, fields) = match rest.strip_prefix('\'').and_then(|r| r.split_once('\'')) {
        Some((q, f)) => (q, f.trim().to_ascii_lowercase()),
        None => return Err(syntax(text)),
    };
    let fields: Vec<&str> = fields.split_whitespace().collect();
    if !matches!(fields.as_slice(), [] | ["hour"] | ["hour", "to", "minute"]) {
        return Err(client_error(
            "42601",
            "time zone interval must be HOUR or HOUR TO MINUTE",
        ));
    }
    let bad = || invalid("TimeZone", text);
    let iv = permafrost_types::parse_interval(quoted).ok_or_else(bad)?;
    if iv.months != 0 || iv.days != 0 {
        return Err(crate::error::client_error_explained(
            "22023",
            format!("invalid value for parameter \"TimeZone\": \"{text}\""),
            Some("Cannot specify days in time zone interval.".into()),
            None,
        ));
    }
    let seconds = i32::try_from(iv.micros / 1_000_000).map_err(|_| bad())?;
    Zone::east(seconds).map(|z| z.name().to_string()).ok_or_else(bad)
}

/// Kilobytes as PostgreSQL shows a memory setting: in the largest unit that divides them.
pub fn show_memory(kb: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "TB"), (1 << 20, "GB"), (1 << 10, "MB")];
    match UNITS.iter().find(|(n, _)| kb != 0 && kb.is_multiple_of(*n)) {
        Some((n, unit)) => format!("{}{unit}", kb / n),
        None => format!("{kb}kB"),
    }
}

/// A timeout in milliseconds as SHOW prints it (PostgreSQL's units).
pub fn show_timeout(ms: u64) -> String {
    match ms {
        0 => "0".into(),
        ms if ms % 86_400_000 == 0 => format!("{}d", ms / 86_400_000),
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}min", ms / 60_000),
        ms if ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => format!("{ms}ms"),
    }
}

/// The value of a setting as SHOW prints it, from what [`Setting`]'s check returned;
/// `server_work_mem` (bytes) is what `work_mem` is when the session has not set it.
pub fn shown(s: &Setting, value: &str, server_work_mem: usize) -> String {
    match s.name {
        "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
            show_timeout(value.parse().unwrap_or(0))
        }
        "work_mem" => match value.parse().unwrap_or(0) {
            0 => show_memory(server_work_mem as u64 / 1024),
            kb => show_memory(kb),
        },
        _ => value.to_string(),
    }
}

/// The words of a SET value: quoted strings unquoted (`''` read as `'`), identifiers and
/// numbers as they are, joined with `, ` when a list.
fn value_text(rest: &str) -> Option<String> {
    // (Each item with whether it was quoted: `''` is an empty value, a bare nothing is not.)
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = rest.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = true;
                loop {
                    match chars.next()? {
                        '\'' if chars.peek() == Some(&'\'') => {
                            chars.next();
                            cur.push('\'');
                        }
                        '\'' => break,
                        x => cur.push(x),
                    }
                }
            }
            ',' => items.push((std::mem::take(&mut cur).trim().to_string(), std::mem::take(&mut quoted))),
            x => cur.push(x),
        }
    }
    items.push((cur.trim().to_string(), quoted));
    if items.iter().any(|(v, quoted)| v.is_empty() && !quoted) {
        return None;
    }
    Some(items.into_iter().map(|(v, _)| v).collect::<Vec<_>>().join(", "))
}

fn syntax(sql: &str) -> PgWireError {
    client_error("42601", format!("syntax error in SET or RESET: {}", sql.trim()))
}

/// Reads a SET or RESET statement and checks its value.
pub fn parse(sql: &str) -> PgWireResult<SetStatement> {
    let text = sql.trim().trim_end_matches(';').trim();
    let lower = text.to_ascii_lowercase();
    let mut words = lower.split_whitespace();
    let first = words.next().unwrap_or("");
    if first == "reset" {
        let name = words.next().ok_or_else(|| syntax(sql))?;
        if words.next().is_some() {
            return Err(syntax(sql));
        }
        if name == "all" {
            return Ok(SetStatement::ResetAll);
        }
        return assign(name, None, false);
    }
    // SET [SESSION | LOCAL] ...
    let mut rest = text[3..].trim_start();
    let mut rest_lower = lower[3..].trim_start().to_string();
    let local = rest_lower.starts_with("local ");
    if local {
        rest = rest[6..].trim_start();
        rest_lower = rest_lower[6..].trim_start().to_string();
    }
    let session = rest_lower.starts_with("session ");
    if session {
        rest = rest[8..].trim_start();
        rest_lower = rest_lower[8..].trim_start().to_string();
    }
    if let Some(chars) = rest_lower.strip_prefix("characteristics as transaction") {
        return transaction(chars, true, sql);
    }
    if let Some(modes) = rest_lower.strip_prefix("transaction ") {
        return transaction(modes, false, sql);
    }
    let (name, value) = if let Some(v) = rest_lower.strip_prefix("time zone") {
        ("timezone".to_string(), rest[rest.len() - v.len()..].to_string())
    } else if let Some(v) = rest_lower.strip_prefix("names ") {
        ("client_encoding".to_string(), rest[rest.len() - v.len()..].to_string())
    } else if let Some(v) = rest_lower.strip_prefix("schema ") {
        (
            "search_path".to_string(),
            format!("{}, public", rest[rest.len() - v.len()..].trim()),
        )
    } else {
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '=')
            .ok_or_else(|| syntax(sql))?;
        let name = rest_lower[..end].to_string();
        let after = rest[end..].trim_start();
        let after_lower = after.to_ascii_lowercase();
        let v = if let Some(v) = after.strip_prefix('=') {
            v
        } else if after_lower.starts_with("to ") || after_lower.starts_with("to'") {
            &after[2..]
        } else {
            return Err(syntax(sql));
        };
        (name, v.to_string())
    };
    let value = value.trim();
    if value.eq_ignore_ascii_case("default") {
        return assign(&name, None, local);
    }
    if name == TIME_ZONE && value.to_ascii_lowercase().starts_with("interval") {
        return interval_zone(value).map(|v| SetStatement::Assign {
            name: TIME_ZONE,
            value: Some(v),
            local,
        });
    }
    let v = value_text(value).ok_or_else(|| syntax(sql))?;
    assign(&name, Some(v), local)
}

/// `value` for setting `s` as it is kept and shown, if it is one `s` takes.
pub fn checked(s: &Setting, value: &str) -> Option<String> {
    (s.check)(value).ok()
}

/// Refuses a `work_mem` (kilobytes, as SET checked it) above the server's (bytes): a
/// statement may not hold more than a quarter of the memory budget.
pub(crate) fn work_mem_within(kb: Option<&str>, server: usize) -> PgWireResult<()> {
    let kb: u64 = kb.and_then(|v| v.parse().ok()).unwrap_or(0);
    let max = server as u64 / 1024;
    if kb <= max {
        return Ok(());
    }
    Err(crate::error::client_error_explained(
        "22023",
        format!("{kb} kB is outside the valid range for parameter \"work_mem\" here (64 .. {max})"),
        Some(format!(
            "A statement may hold at most a quarter of the server's memory budget (memory_limit): {}.",
            show_memory(max)
        )),
        Some("Start the server with a larger memory_limit to allow more.".into()),
    ))
}

/// The settings a start-up packet gives, checked, in the order they apply: the `-c
/// name=value` (or `--name=value`) switches of its `options`, then its other parameters,
/// which win, as in PostgreSQL. `server_work_mem` bounds `work_mem` (bytes). What
/// PostgreSQL would refuse is its error, which ends the start-up (FATAL): an unknown
/// parameter (42704), one that cannot be set (55P02), a value that does not check.
pub(crate) fn startup_values(
    params: &std::collections::BTreeMap<String, String>,
    server_work_mem: usize,
) -> PgWireResult<Vec<(&'static Setting, String)>> {
    let mut given: Vec<(String, String)> = Vec::new();
    if let Some(options) = params.get("options") {
        let words = split_options(options);
        let mut w = words.iter();
        while let Some(word) = w.next() {
            let pair = match word.as_str() {
                "-c" => w.next().map(String::as_str),
                _ => word.strip_prefix("-c").or_else(|| word.strip_prefix("--")),
            };
            let Some((name, value)) = pair.and_then(|p| p.split_once('=')) else {
                return Err(client_error(
                    "42601",
                    format!("invalid command-line argument for server process: {word}"),
                ));
            };
            given.push((name.replace('-', "_"), value.to_string()));
        }
    }
    let rest = params.iter().filter(|(k, _)| {
        !matches!(k.as_str(), "user" | "database" | "replication" | "options") && !k.starts_with("_pq_.")
    });
    given.extend(rest.map(|(k, v)| (k.clone(), v.clone())));
    let mut out: Vec<(&'static Setting, String)> = Vec::new();
    for (name, value) in given {
        let name = name.to_ascii_lowercase();
        if read_only_parameter(&name).is_some() {
            return Err(client_error(
                "55P02",
                format!("parameter \"{name}\" cannot be changed now"),
            ));
        }
        let s = setting_to_set(&name)?;
        // (SQL_ASCII asks for no conversion: what a UTF8-only server does, as PostgreSQL
        // does for it; psql in a C locale asks for it.)
        let v = match s.name {
            "client_encoding"
                if value
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .collect::<String>()
                    .eq_ignore_ascii_case("sqlascii") =>
            {
                "UTF8".to_string()
            }
            _ => (s.check)(&value)?,
        };
        if s.name == "work_mem" {
            work_mem_within(Some(&v), server_work_mem)?;
        }
        out.retain(|(x, _)| x.name != s.name);
        out.push((s, v));
    }
    Ok(out)
}

/// The words of a start-up packet's `options`: split at spaces, a backslash taking the
/// next character as it is (PostgreSQL's `pg_split_opts`).
fn split_options(options: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// `SET [LOCAL] name` to `value` (`None`: RESET), checked.
pub(crate) fn assign(name: &str, value: Option<String>, local: bool) -> PgWireResult<SetStatement> {
    let name = name.trim_matches('"').to_ascii_lowercase();
    if read_only_parameter(&name).is_some() {
        return Err(client_error("55P02", format!("parameter \"{name}\" cannot be changed")));
    }
    let s = setting_to_set(&name)?;
    let value = value.map(|v| (s.check)(&v)).transpose()?;
    Ok(SetStatement::Assign {
        name: s.name,
        value,
        local,
    })
}

/// `SET TRANSACTION` modes: isolation levels (all run serializable), READ WRITE, READ
/// ONLY, [NOT] DEFERRABLE.
fn transaction(modes: &str, session: bool, sql: &str) -> PgWireResult<SetStatement> {
    let w: Vec<&str> = modes
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let mut i = 0;
    let mut read_only = false;
    while i < w.len() {
        match &w[i..] {
            ["isolation", "level", "serializable", ..] => i += 3,
            ["isolation", "level", "repeatable", "read", ..] => i += 4,
            ["isolation", "level", "read", "committed" | "uncommitted", ..] => i += 4,
            ["read", "write", ..] => i += 2,
            ["read", "only", ..] => {
                read_only = true;
                i += 2;
            }
            ["deferrable", ..] => i += 1,
            ["not", "deferrable", ..] => i += 2,
            _ => return Err(syntax(sql)),
        }
    }
    if session && read_only {
        return Err(client_error("0A000", "read-only sessions are not supported"));
    }
    Ok(SetStatement::Transaction { session, read_only })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(sql: &str) -> Result<(&'static str, Option<String>), String> {
        match parse(sql) {
            Ok(SetStatement::Assign { name, value, .. }) => Ok((name, value)),
            Ok(other) => Err(format!("{other:?}")),
            Err(e) => Err(match e {
                PgWireError::UserError(i) => i.code,
                e => e.to_string(),
            }),
        }
    }

    #[test]
    fn settings_are_read_as_postgresql_reads_them() {
        assert_eq!(
            set("SET statement_timeout = 5000"),
            Ok(("statement_timeout", Some("5000".into())))
        );
        assert_eq!(
            set("set statement_timeout to '5s'"),
            Ok(("statement_timeout", Some("5000".into())))
        );
        assert_eq!(
            set("SET SESSION statement_timeout='1min';"),
            Ok(("statement_timeout", Some("60000".into())))
        );
        assert_eq!(set("SET statement_timeout = DEFAULT"), Ok(("statement_timeout", None)));
        assert_eq!(set("RESET statement_timeout"), Ok(("statement_timeout", None)));
        assert_eq!(set("SET statement_timeout = 'soon'"), Err("22023".into()));
        assert_eq!(set("SET work_mem = '64MB'"), Ok(("work_mem", Some("65536".into()))));
        assert_eq!(set("SET work_mem TO 4096"), Ok(("work_mem", Some("4096".into()))));
        assert_eq!(set("SET work_mem = '131072B'"), Ok(("work_mem", Some("128".into()))));
        assert_eq!(set("SET work_mem = '10'"), Err("22023".into()));
        assert_eq!(set("SET work_mem = '4XB'"), Err("22023".into()));
        assert_eq!(show_memory(65536), "64MB");
        assert_eq!(show_memory(1536), "1536kB");
        assert_eq!(
            set("SET application_name = 'my app'"),
            Ok(("application_name", Some("my app".into())))
        );
        assert_eq!(
            set("SET application_name TO 'it''s'"),
            Ok(("application_name", Some("it's".into())))
        );
        assert_eq!(set("SET TIME ZONE 'UTC'"), Ok(("timezone", Some("UTC".into()))));
        assert_eq!(set("SET TimeZone TO 'Etc/UTC'"), Ok(("timezone", Some("UTC".into()))));
        assert_eq!(
            set("SET TIME ZONE 'europe/berlin'"),
            Ok(("timezone", Some("Europe/Berlin".into())))
        );
        assert_eq!(set("SET TIME ZONE -3"), Ok(("timezone", Some("<-03>+03".into()))));
        assert_eq!(
            set("SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE"),
            Ok(("timezone", Some("<+05:30>-05:30".into())))
        );
        assert_eq!(set("SET TIME ZONE LOCAL"), Ok(("timezone", Some("UTC".into()))));
        assert_eq!(set("SET TimeZone = 'Mars/Olympus'"), Err("22023".into()));
        assert_eq!(set("SET TIME ZONE INTERVAL '1 day'"), Err("22023".into()));
        assert_eq!(set("SET TIME ZONE INTERVAL '1' HOUR TO SECOND"), Err("42601".into()));
        assert_eq!(
            set("SET datestyle = ISO, MDY"),
            Ok(("datestyle", Some("ISO, MDY".into())))
        );
        assert_eq!(set("SET DateStyle = 'German'"), Err("0A000".into()));
        assert_eq!(
            set("SET extra_float_digits = 3"),
            Ok(("extra_float_digits", Some("3".into())))
        );
        assert_eq!(set("SET extra_float_digits = 0"), Err("0A000".into()));
        assert_eq!(
            set("SET client_encoding = 'UTF8'"),
            Ok(("client_encoding", Some("UTF8".into())))
        );
        assert_eq!(set("SET NAMES 'LATIN1'"), Err("0A000".into()));
        assert_eq!(
            set("SET search_path TO myapp, public"),
            Ok(("search_path", Some("myapp, public".into())))
        );
        assert_eq!(
            set("SET search_path = myapp"),
            Ok(("search_path", Some("myapp".into())))
        );
        assert_eq!(set("SET search_path = ''"), Ok(("search_path", Some("".into()))));
        assert_eq!(set("SET search_path = 'a,,b'"), Err("22023".into()));
        assert_eq!(set("SET server_version = '9'"), Err("55P02".into()));
        assert_eq!(set("SET no_such_thing = 1"), Err("42704".into()));
        assert_eq!(set("SET app.tenant = 7"), Ok(("app.tenant", Some("7".into()))));
        assert_eq!(set("SET \"bad.\" = 1"), Err("42602".into()));
        let session = SessionSettings::default();
        let custom = setting("app.tenant").expect("made by the SET above");
        assert!(
            !session.knows(custom),
            "a custom setting exists for a session once it sets it"
        );
        session.set(custom, None);
        assert!(session.knows(custom));
        assert_eq!(
            parse("SET LOCAL statement_timeout = 1").ok(),
            Some(SetStatement::Assign {
                name: "statement_timeout",
                value: Some("1".into()),
                local: true
            })
        );
        assert_eq!(set("SET statement_timeout 5"), Err("42601".into()));
        assert_eq!(parse("RESET ALL").ok(), Some(SetStatement::ResetAll));
        assert_eq!(
            parse("SET TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY").ok(),
            Some(SetStatement::Transaction {
                session: false,
                read_only: true
            })
        );
        assert_eq!(
            parse("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE").ok(),
            Some(SetStatement::Transaction {
                session: true,
                read_only: false
            })
        );
        assert_eq!(show_timeout(5000), "5s");
        assert_eq!(show_timeout(250), "250ms");
        assert_eq!(show_timeout(60_000), "1min");
    }
}
