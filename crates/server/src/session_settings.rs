//! The session settings the server reads from SQL: `SET statement_timeout` and how
//! `SHOW statement_timeout` prints it, as PostgreSQL reads and prints them.

use pgwire::error::PgWireResult;

use crate::error::client_error;

/// Reads `SET [SESSION | LOCAL] statement_timeout { TO | = } value` and `RESET
/// statement_timeout`: `None` when the statement sets something else, else the timeout in
/// milliseconds (0: none) or the error for a bad value (22023, as PostgreSQL). A value is
/// milliseconds, or a number with a unit (`us`, `ms`, `s`, `min`, `h`, `d`), quoted or not,
/// or DEFAULT.
pub fn statement_timeout_setting(sql: &str) -> Option<PgWireResult<u64>> {
    let words: Vec<&str> = sql.trim().trim_end_matches(';').split_whitespace().collect();
    let mut w = words.iter().map(|s| s.to_ascii_lowercase());
    let first = w.next()?;
    let mut name = w.next()?;
    if first == "set" && (name == "session" || name == "local") {
        name = w.next()?;
    }
    let rest: Vec<String> = match name.clone().split_once('=') {
        Some((n, v)) => {
            name = n.to_string();
            std::iter::once(format!("={v}")).chain(w).collect()
        }
        None => w.collect(),
    };
    if name != "statement_timeout" {
        return None;
    }
    if first == "reset" {
        return Some(Ok(0));
    }
    let value = rest.join(" ");
    let value = value
        .strip_prefix('=')
        .or_else(|| value.strip_prefix("to "))
        .unwrap_or(&value)
        .trim()
        .trim_matches('\'')
        .trim();
    if value == "default" {
        return Some(Ok(0));
    }
    let bad = || {
        client_error(
            "22023",
            format!("invalid value for parameter \"statement_timeout\": \"{value}\""),
        )
    };
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (num, unit) = value.split_at(split);
    let Ok(n) = num.parse::<f64>() else {
        return Some(Err(bad()));
    };
    let ms = match unit.trim() {
        "" | "ms" => n,
        "us" => n / 1000.0,
        "s" => n * 1e3,
        "min" => n * 60e3,
        "h" => n * 3600e3,
        "d" => n * 86400e3,
        _ => return Some(Err(bad())),
    };
    if !(0.0..=i32::MAX as f64).contains(&ms) {
        return Some(Err(bad()));
    }
    Some(Ok(ms.round() as u64))
}

/// `statement_timeout` as SHOW prints it (PostgreSQL's units).
pub fn show_statement_timeout(ms: u64) -> String {
    match ms {
        0 => "0".into(),
        ms if ms % 86_400_000 == 0 => format!("{}d", ms / 86_400_000),
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}min", ms / 60_000),
        ms if ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => format!("{ms}ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_timeout_settings_are_read_as_postgresql_reads_them() {
        let v = |s: &str| statement_timeout_setting(s).map(|r| r.map_err(|e| e.to_string()));
        assert_eq!(v("SET statement_timeout = 5000"), Some(Ok(5000)));
        assert_eq!(v("set statement_timeout to '5s'"), Some(Ok(5000)));
        assert_eq!(v("SET SESSION statement_timeout='1min';"), Some(Ok(60_000)));
        assert_eq!(v("SET statement_timeout TO 0"), Some(Ok(0)));
        assert_eq!(v("SET statement_timeout = DEFAULT"), Some(Ok(0)));
        assert_eq!(v("RESET statement_timeout"), Some(Ok(0)));
        assert_eq!(v("SET statement_timeout = '250ms'"), Some(Ok(250)));
        assert!(matches!(v("SET statement_timeout = 'soon'"), Some(Err(_))));
        assert!(matches!(v("SET statement_timeout = '-5'"), Some(Err(_))));
        assert_eq!(v("SET search_path = public"), None);
        assert_eq!(v("RESET ALL"), None);
        assert_eq!(show_statement_timeout(0), "0");
        assert_eq!(show_statement_timeout(5000), "5s");
        assert_eq!(show_statement_timeout(60_000), "1min");
        assert_eq!(show_statement_timeout(250), "250ms");
    }
}
