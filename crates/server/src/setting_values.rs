//! What each setting a client may SET accepts: [`SETTINGS`], and the checks that read a
//! value as PostgreSQL reads it and return it as SHOW prints it (crate::session_settings
//! keeps a session's values and parses SET, RESET and SHOW).

use permafrost_types::zone::Zone;
use pgwire::error::{PgWireError, PgWireResult};

use crate::error::client_error;

/// A setting a client may change.
pub struct Setting {
    /// Its name, lower case.
    pub name: &'static str,
    /// How PostgreSQL spells it in ParameterStatus and SHOW ALL.
    pub spelled: &'static str,
    pub default: &'static str,
    /// Checks a value; returns it as SHOW prints it.
    pub(crate) check: fn(&str) -> PgWireResult<String>,
    /// Reported to the client (ParameterStatus) when it changes.
    pub reported: bool,
    pub description: &'static str,
}

/// Every setting a client may SET.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "application_name",
        spelled: "application_name",
        default: "",
        check: application_name,
        reported: true,
        description: "The client's name for itself.",
    },
    Setting {
        name: "statement_timeout",
        spelled: "statement_timeout",
        default: "0",
        check: timeout_value,
        reported: false,
        description: "Statements running longer are cancelled (57014); 0: no limit.",
    },
    Setting {
        name: "work_mem",
        spelled: "work_mem",
        default: "0",
        check: work_mem,
        reported: false,
        description: "The memory a statement's sorts, hash tables and groups may hold before they spill to temporary \
                      files; at most the server's (a quarter of memory_limit), which is the default.",
    },
    Setting {
        name: "lock_timeout",
        spelled: "lock_timeout",
        default: "0",
        check: timeout_value,
        reported: false,
        description: "Kept; nothing ever waits for a lock here.",
    },
    Setting {
        name: IDLE_IN_TRANSACTION,
        spelled: "idle_in_transaction_session_timeout",
        default: "0",
        check: timeout_value,
        reported: false,
        description: "A session idle this long inside a transaction block is ended (25P03); 0: never.",
    },
    Setting {
        name: "client_encoding",
        spelled: "client_encoding",
        default: "UTF8",
        check: client_encoding,
        reported: true,
        description: "Only UTF8.",
    },
    Setting {
        name: "datestyle",
        spelled: "DateStyle",
        default: "ISO, MDY",
        check: |v| only(v, "DateStyle", &["iso", "iso, mdy", "mdy, iso"], "ISO, MDY"),
        reported: true,
        description: "Only ISO output (ISO, MDY).",
    },
    Setting {
        name: TIME_ZONE,
        spelled: "TimeZone",
        default: "UTC",
        check: time_zone,
        reported: true,
        description: "The zone timestamps with time zone are shown and read in (any IANA name, a POSIX TZ \
                      string, or hours east of UTC).",
    },
    Setting {
        name: "extra_float_digits",
        spelled: "extra_float_digits",
        default: "1",
        check: extra_float_digits,
        reported: false,
        description: "1 to 3: floating-point values are printed shortest-exact.",
    },
    Setting {
        name: "standard_conforming_strings",
        spelled: "standard_conforming_strings",
        default: "on",
        check: |v| only(v, "standard_conforming_strings", &["on", "true", "yes", "1"], "on"),
        reported: true,
        description: "Only on: backslashes in '...' are ordinary characters.",
    },
    Setting {
        name: "intervalstyle",
        spelled: "IntervalStyle",
        default: "postgres",
        check: |v| only(v, "IntervalStyle", &["postgres"], "postgres"),
        reported: true,
        description: "Only postgres.",
    },
    Setting {
        name: "bytea_output",
        spelled: "bytea_output",
        default: "hex",
        check: |v| only(v, "bytea_output", &["hex"], "hex"),
        reported: false,
        description: "Only hex.",
    },
    Setting {
        name: "search_path",
        spelled: "search_path",
        default: "\"$user\", public",
        check: search_path,
        reported: false,
        description: "The schemas unqualified names are looked up in. This server looks them up in public: a \
                      statement this path would make PostgreSQL answer otherwise is refused, or answered as \
                      PostgreSQL does when its names are not found.",
    },
    Setting {
        name: "default_transaction_isolation",
        spelled: "default_transaction_isolation",
        default: "serializable",
        check: isolation,
        reported: false,
        description: "Every level is accepted; transactions run serializable.",
    },
    Setting {
        name: "transaction_isolation",
        spelled: "transaction_isolation",
        default: "serializable",
        check: |v| isolation(v).map(|_| "serializable".into()),
        reported: false,
        description: "Transactions run serializable, which every level allows.",
    },
    Setting {
        name: "default_transaction_read_only",
        spelled: "default_transaction_read_only",
        default: "off",
        check: |v| only(v, "default_transaction_read_only", &["off", "false", "no", "0"], "off"),
        reported: false,
        description: "Only off.",
    },
    Setting {
        name: "default_table_access_method",
        spelled: "default_table_access_method",
        default: "heap",
        check: |v| only(v, "default_table_access_method", &["heap"], "heap"),
        reported: false,
        description: "Only heap: the name pg_am gives every table (SQLAlchemy's reflection compares with it).",
    },
    Setting {
        name: CLIENT_MIN_MESSAGES,
        spelled: "client_min_messages",
        default: "notice",
        check: |v| {
            let v = v.trim().to_ascii_lowercase();
            match MESSAGE_LEVELS.contains(&v.as_str()) {
                true => Ok(v),
                false => Err(crate::error::client_error_explained(
                    "22023",
                    format!("invalid value for parameter \"client_min_messages\": \"{v}\""),
                    None,
                    Some(format!("Available values: {}.", MESSAGE_LEVELS.join(", "))),
                )),
            }
        },
        reported: false,
        description: "The least severe notices the client is sent: debug5 to debug1, log, notice, warning or error.",
    },
    Setting {
        name: "check_function_bodies",
        spelled: "check_function_bodies",
        default: "on",
        check: |v| boolean("check_function_bodies", v),
        reported: false,
        description: "on or off (pg_dump sets off); a procedure's body is checked when it is created either way, \
                      so one that names a table not created yet is refused (create the table first).",
    },
    Setting {
        name: "row_security",
        spelled: "row_security",
        default: "on",
        check: |v| boolean("row_security", v),
        reported: false,
        description: "on or off: no table has row-level security policies (CREATE POLICY is refused), so both hold.",
    },
    Setting {
        name: "xmloption",
        spelled: "xmloption",
        default: "content",
        check: |v| {
            only(v, "xmloption", &["content"], "content").or_else(|_| only(v, "xmloption", &["document"], "document"))
        },
        reported: false,
        description: "content or document; kept: there is no xml type for it to govern.",
    },
    Setting {
        name: "default_tablespace",
        spelled: "default_tablespace",
        default: "",
        check: |v| match v.trim() {
            "" => Ok(String::new()),
            "pg_default" => Ok("pg_default".into()),
            other => Err(crate::error::client_error_explained(
                "22023",
                format!("invalid value for parameter \"default_tablespace\": \"{other}\""),
                Some(format!("Tablespace \"{other}\" does not exist.")),
                None,
            )),
        },
        reported: false,
        description: "Only the default tablespace ('' or pg_default): tables live in the data directory.",
    },
];

/// Most custom settings (names with a dot) one server makes: each is a [`Setting`] kept for
/// the process's life, so that every session's values and a block's undo name it alike.
const MAX_CUSTOM: usize = 10_000;

/// The custom settings made so far, by name.
fn customs() -> std::sync::MutexGuard<'static, std::collections::HashMap<String, &'static Setting>> {
    static CUSTOM: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<String, &'static Setting>>> =
        std::sync::OnceLock::new();
    CUSTOM
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The custom setting `name` (a name with a dot, `app.tenant`: PostgreSQL's placeholder
/// variables, which extensions and applications use), if one was made.
pub(crate) fn custom(name: &str) -> Option<&'static Setting> {
    customs().get(name).copied()
}

/// The custom setting `name`, made if it is new: any value, '' by default, its name two or
/// more identifiers joined by dots (42602 otherwise, as in PostgreSQL).
pub(crate) fn make_custom(name: &str) -> PgWireResult<&'static Setting> {
    let simple = |p: &str| {
        p.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    if !name.split('.').all(simple) {
        return Err(crate::error::client_error_explained(
            "42602",
            format!("invalid configuration parameter name \"{name}\""),
            Some("Custom parameter names must be two or more simple identifiers separated by dots.".into()),
            None,
        ));
    }
    let mut made = customs();
    if let Some(s) = made.get(name) {
        return Ok(s);
    }
    if made.len() >= MAX_CUSTOM {
        return Err(client_error(
            "53400",
            format!("too many custom settings ({MAX_CUSTOM} names with a dot) on this server"),
        ));
    }
    let name: &'static str = Box::leak(name.to_string().into_boxed_str());
    let s: &'static Setting = Box::leak(Box::new(Setting {
        name,
        spelled: name,
        default: "",
        check: |v| Ok(v.to_string()),
        reported: false,
        description: "A custom setting (a name with a dot): kept for the session, read by SHOW and current_setting.",
    }));
    made.insert(name.to_string(), s);
    Ok(s)
}

/// The setting that filters the notices a session is sent (crate::handler).
pub(crate) const CLIENT_MIN_MESSAGES: &str = "client_min_messages";

/// The levels of `client_min_messages`, least severe first.
pub(crate) const MESSAGE_LEVELS: [&str; 9] = [
    "debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error",
];

/// A boolean setting as PostgreSQL reads one (`on`, `true`, `yes`, `1` and their opposites,
/// or an unambiguous prefix of them); shown `on` or `off`.
fn boolean(name: &str, v: &str) -> PgWireResult<String> {
    let t = v.trim().to_ascii_lowercase();
    let prefix_of = |w: &str| !t.is_empty() && w.starts_with(t.as_str());
    if t == "1" || t == "on" || prefix_of("true") || prefix_of("yes") {
        Ok("on".into())
    } else if t == "0" || (t.len() >= 2 && prefix_of("off")) || prefix_of("false") || prefix_of("no") {
        Ok("off".into())
    } else {
        Err(crate::error::client_error_explained(
            "22023",
            format!("parameter \"{name}\" requires a Boolean value"),
            None,
            None,
        ))
    }
}

/// The setting [`SessionSettings::idle_in_transaction_timeout`] reads.
pub(crate) const IDLE_IN_TRANSACTION: &str = "idle_in_transaction_session_timeout";

/// The session TimeZone's name (crate::session: each statement runs in its zone).
pub(crate) const TIME_ZONE: &str = "timezone";

pub(crate) fn invalid(name: &str, v: &str) -> PgWireError {
    client_error("22023", format!("invalid value for parameter \"{name}\": \"{v}\""))
}

pub(crate) fn unsupported(name: &str, v: &str, accepted: &str) -> PgWireError {
    client_error(
        "0A000",
        format!("value \"{v}\" of parameter \"{name}\" is not supported (accepted: {accepted})"),
    )
}

/// Accepts one of `allowed` (case-insensitive, blanks ignored), shown as `shown`.
fn only(v: &str, name: &str, allowed: &[&str], shown: &str) -> PgWireResult<String> {
    // Case and blanks aside: `ISO,MDY` is `iso, mdy`.
    let norm = v
        .to_ascii_lowercase()
        .split(',')
        .map(|part| part.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ");
    if allowed.iter().any(|a| *a == norm) {
        Ok(shown.to_string())
    } else {
        Err(unsupported(name, v, shown))
    }
}

/// A client encoding: UTF8 only, its name read as PostgreSQL reads one (case and
/// punctuation aside: asyncpg sends `'utf-8'`, quotes and all).
fn client_encoding(v: &str) -> PgWireResult<String> {
    let name: String = v.chars().filter(char::is_ascii_alphanumeric).collect();
    only(&name, "client_encoding", &["utf8", "unicode"], "UTF8").map_err(|_| unsupported("client_encoding", v, "UTF8"))
}

/// A TimeZone: `LOCAL` (the default, UTC), a number of hours EAST of UTC (`-3`, `5.5`, as
/// PostgreSQL reads a number here), an IANA name (any case; shown as the database spells
/// it), or a POSIX TZ string (`UTC+3`: hours WEST). Anything else is 22023, as PostgreSQL.
fn time_zone(v: &str) -> PgWireResult<String> {
    zone_of(v)
        .map(|z| z.name().to_string())
        .ok_or_else(|| invalid("TimeZone", v))
}

/// The zone a TimeZone value names (see [`time_zone`]).
pub fn zone_of(v: &str) -> Option<Zone> {
    let t = v.trim();
    if t.eq_ignore_ascii_case("local") {
        return Some(Zone::utc());
    }
    if let Ok(hours) = t.parse::<f64>() {
        return hours
            .is_finite()
            .then(|| Zone::east((hours * 3600.0).round() as i32))
            .flatten();
    }
    Zone::named(t)
}

fn application_name(v: &str) -> PgWireResult<String> {
    // As PostgreSQL: at most 63 bytes (NAMEDATALEN - 1), cut at a character boundary.
    let mut end = v.len().min(63);
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    Ok(v[..end].to_string())
}

fn timeout_value(v: &str) -> PgWireResult<String> {
    timeout_ms(v)
        .map(|ms| ms.to_string())
        .ok_or_else(|| invalid("statement_timeout", v))
}

/// `work_mem` as kilobytes: a number (kB) or one with a unit (`B`, `kB`, `MB`, `GB`, `TB`),
/// 64 kB to 2147483647 kB as in PostgreSQL; the server's own bound is checked where it is
/// known (`handler/session_statements.rs`).
fn work_mem(v: &str) -> PgWireResult<String> {
    let t = v.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "kB" => 1.0,
        "B" => 1.0 / 1024.0,
        "MB" => 1024.0,
        "GB" => 1024.0 * 1024.0,
        "TB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(crate::error::client_error_explained(
                "22023",
                format!("invalid value for parameter \"work_mem\": \"{v}\""),
                None,
                Some("Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".".into()),
            ));
        }
    };
    let kb = num.parse::<f64>().map_err(|_| invalid("work_mem", v))? * scale;
    let kb = kb.round();
    if !(64.0..=2_147_483_647.0).contains(&kb) {
        return Err(client_error(
            "22023",
            format!("{kb} kB is outside the valid range for parameter \"work_mem\" (64 .. 2147483647)"),
        ));
    }
    Ok((kb as u64).to_string())
}

fn extra_float_digits(v: &str) -> PgWireResult<String> {
    match v.trim().parse::<i32>() {
        Ok(n @ 1..=3) => Ok(n.to_string()),
        Ok(n @ -15..=0) => Err(unsupported("extra_float_digits", &n.to_string(), "1 to 3")),
        _ => Err(invalid("extra_float_digits", v)),
    }
}

/// A search path: schema names (quoted or not) separated by commas, as PostgreSQL takes
/// one (schemas that do not exist are skipped when names are looked up).
fn search_path(v: &str) -> PgWireResult<String> {
    match v.trim().is_empty() || v.split(',').all(|s| !s.trim().is_empty()) {
        true => Ok(v.trim().to_string()),
        false => Err(invalid("search_path", v)),
    }
}

fn isolation(v: &str) -> PgWireResult<String> {
    let norm = v.to_ascii_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
    match norm.as_str() {
        "serializable" | "repeatable read" | "read committed" | "read uncommitted" => Ok(norm),
        _ => Err(invalid("default_transaction_isolation", v)),
    }
}

/// Milliseconds from a timeout value: milliseconds, or a number with a unit (`us`, `ms`,
/// `s`, `min`, `h`, `d`).
pub fn timeout_ms(value: &str) -> Option<u64> {
    let value = value.trim();
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (num, unit) = value.split_at(split);
    let n = num.parse::<f64>().ok()?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "us" => n / 1000.0,
        "s" => n * 1e3,
        "min" => n * 60e3,
        "h" => n * 3600e3,
        "d" => n * 86400e3,
        _ => return None,
    };
    (0.0..=i32::MAX as f64).contains(&ms).then(|| ms.round() as u64)
}
