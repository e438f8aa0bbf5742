//! `to_char(timestamp | timestamptz | date, format)` as PostgreSQL 15 writes it: the
//! template patterns of PostgreSQL's table 9.26 (`YYYY`, `MM`, `Mon`, `Month`, `DD`, `Day`,
//! `HH24`, `MI`, `SS`, `MS`, `US`, `AM`, ISO weeks, `J`, `Q`, `RM`, `TZ`, ...), the `FM`
//! prefix (no padding) and `TH`/`th` suffixes (ordinals of a number; after anything else
//! they are dropped, as PostgreSQL drops them), text in double quotes copied as it is. A
//! timestamptz is written as its wall-clock time in the session zone, `TZ` its abbreviation
//! there (`EDT`, `+0545`) and `OF`, `TZH`, `TZM` its offset; a timestamp has no `TZ` and
//! the offset `+00`, as PostgreSQL writes them. `to_char` of an interval writes its fields
//! ([`interval`]); of a number, number.rs.

pub(super) mod number;
use permafrost_types::Value;

use super::datefunc::{fields, iso_week, isodow, ordinal};
use crate::error::{Result, SqlError};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const ROMAN: [&str; 12] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

/// The date and time patterns, longer before shorter where one begins another (matched in
/// this order, case as written).
const PATTERNS: &[&str] = &[
    "Y,YYY", "y,yyy", "YYYY", "yyyy", "YYY", "yyy", "YY", "yy", "IYYY", "iyyy", "IYY", "iyy", "IY", "iy", "IDDD",
    "iddd", "ID", "id", "IW", "iw", "HH24", "hh24", "HH12", "hh12", "HH", "hh", "MI", "mi", "MS", "ms", "MM", "mm",
    "MONTH", "Month", "month", "MON", "Mon", "mon", "SSSSS", "sssss", "SSSS", "ssss", "SS", "ss", "US", "us", "A.M.",
    "a.m.", "P.M.", "p.m.", "AM", "am", "PM", "pm", "A.D.", "a.d.", "B.C.", "b.c.", "AD", "ad", "BC", "bc", "DAY",
    "Day", "day", "DDD", "ddd", "DD", "dd", "DY", "Dy", "dy", "D", "d", "WW", "ww", "W", "w", "CC", "cc", "J", "j",
    "Q", "q", "RM", "rm", "TZH", "tzh", "TZM", "tzm", "TZ", "tz", "OF", "of", "Y", "y", "I", "i",
];

/// A name in the case the pattern asks: all upper, capitalized, or all lower.
fn cased(name: &str, pattern: &str) -> String {
    let mut chars = pattern.chars();
    let first_upper = chars.next().is_some_and(char::is_uppercase);
    let second_upper = chars.next().is_some_and(char::is_uppercase);
    match (first_upper, second_upper) {
        (true, true) => name.to_uppercase(),
        (true, false) => name.to_string(),
        _ => name.to_lowercase(),
    }
}

/// The English ordinal suffix of `n` (`st`, `nd`, `rd`, `th`).
fn suffix(n: i64) -> &'static str {
    let n = n.abs();
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// A timestamptz's zone where `to_char` writes it: its offset east of UTC in seconds and
/// the zone's abbreviation.
pub(super) struct Shown {
    pub offset: i32,
    pub abbreviation: String,
}

/// `to_char` of a wall-clock time (microseconds since 1970) with `format`; `zone`: that of
/// a timestamptz (or a date, which PostgreSQL reads as one); a timestamp has none.
pub(super) fn datetime(micros: i64, zone: Option<&Shown>, format: &str) -> Result<Value> {
    let offset = zone.map_or(0, |z| z.offset);
    let (sign, off_h, off_m) = (
        if offset < 0 { '-' } else { '+' },
        offset.unsigned_abs() / 3600,
        offset.unsigned_abs() % 3600 / 60,
    );
    let f = fields(micros);
    let year = if f.year > 0 { f.year } else { 1 - f.year };
    let (iso_year, iso_week_no) = iso_week(f.days);
    let iso_year = if iso_year > 0 { iso_year } else { 1 - iso_year };
    let doy = f.days - permafrost_types::datetime::days_from_civil(f.year, 1, 1) + 1;
    let iso_doy = (iso_week_no - 1) * 7 + isodow(f.days);
    let secs = f.micros_of_day / 1_000_000;
    let (hour, minute, second) = (secs / 3600, secs / 60 % 60, secs % 60);
    let frac = f.micros_of_day % 1_000_000;
    let dow = (isodow(f.days) % 7) as usize;
    render(format, |p, fill| {
        let num = |n: i64, width: usize| {
            if fill {
                n.to_string()
            } else if n < 0 {
                format!("-{:0width$}", -n, width = width.saturating_sub(1))
            } else {
                format!("{n:0width$}")
            }
        };
        let upper = p.to_ascii_uppercase();
        Ok(match upper.as_str() {
            "Y,YYY" => (format!("{},{:03}", year / 1000, year % 1000), Some(year)),
            "YYYY" => (num(year, 4), Some(year)),
            "YYY" => (num(year % 1000, 3), Some(year % 1000)),
            "YY" => (num(year % 100, 2), Some(year % 100)),
            "Y" => (num(year % 10, 1), Some(year % 10)),
            "IYYY" => (num(iso_year, 4), Some(iso_year)),
            "IYY" => (num(iso_year % 1000, 3), Some(iso_year % 1000)),
            "IY" => (num(iso_year % 100, 2), Some(iso_year % 100)),
            "I" => (num(iso_year % 10, 1), Some(iso_year % 10)),
            "IDDD" => (num(iso_doy, 3), Some(iso_doy)),
            "ID" => (num(isodow(f.days), 1), Some(isodow(f.days))),
            "IW" => (num(iso_week_no, 2), Some(iso_week_no)),
            "HH" | "HH12" => {
                let h = if hour % 12 == 0 { 12 } else { hour % 12 };
                (num(h, 2), Some(h))
            }
            "HH24" => (num(hour, 2), Some(hour)),
            "MI" => (num(minute, 2), Some(minute)),
            "SS" => (num(second, 2), Some(second)),
            // (FM does not shorten MS or US.)
            "MS" => (format!("{:03}", frac / 1000), Some(frac / 1000)),
            "US" => (format!("{frac:06}"), Some(frac)),
            "SSSS" | "SSSSS" => (secs.to_string(), Some(secs)),
            "AM" | "PM" => (cased(if hour >= 12 { "PM" } else { "AM" }, p), None),
            "A.M." | "P.M." => (cased(if hour >= 12 { "P.M." } else { "A.M." }, p), None),
            "AD" | "BC" => (cased(if f.year > 0 { "AD" } else { "BC" }, p), None),
            "A.D." | "B.C." => (cased(if f.year > 0 { "A.D." } else { "B.C." }, p), None),
            "MONTH" => {
                let name = cased(MONTHS[f.month as usize - 1], p);
                (if fill { name } else { format!("{name:<9}") }, None)
            }
            "MON" => (cased(&MONTHS[f.month as usize - 1][..3], p), None),
            "MM" => (num(f.month.into(), 2), Some(f.month.into())),
            "DAY" => {
                let name = cased(DAYS[dow], p);
                (if fill { name } else { format!("{name:<9}") }, None)
            }
            "DY" => (cased(&DAYS[dow][..3], p), None),
            "DDD" => (num(doy, 3), Some(doy)),
            "DD" => (num(f.day.into(), 2), Some(f.day.into())),
            "D" => (num(dow as i64 + 1, 1), Some(dow as i64 + 1)),
            "WW" => (num((doy - 1) / 7 + 1, 2), Some((doy - 1) / 7 + 1)),
            "W" => {
                let w = (i64::from(f.day) - 1) / 7 + 1;
                (num(w, 1), Some(w))
            }
            "CC" => {
                let c = ordinal(f.year, 100);
                (num(c, 2), Some(c))
            }
            "J" => (num(f.days + 2_440_588, 1), Some(f.days + 2_440_588)),
            "Q" => {
                let q = (i64::from(f.month) - 1) / 3 + 1;
                (num(q, 1), Some(q))
            }
            "RM" => {
                let r = cased(
                    ROMAN[f.month as usize - 1],
                    if p.starts_with('r') { "rm" } else { "RM" },
                );
                (if fill { r } else { format!("{r:<4}") }, None)
            }
            "TZ" => (zone.map_or(String::new(), |z| cased(&z.abbreviation, p)), None),
            // (FM shortens OF, not TZH or TZM; OF writes minutes only when there are some.)
            "OF" => {
                let h = if fill {
                    format!("{sign}{off_h}")
                } else {
                    format!("{sign}{off_h:02}")
                };
                (if off_m == 0 { h } else { format!("{h}:{off_m:02}") }, None)
            }
            "TZH" => (format!("{sign}{off_h:02}"), None),
            "TZM" => (format!("{off_m:02}"), None),
            _ => (String::new(), None),
        })
    })
}

/// `to_char` of an interval: its fields as PostgreSQL 15 gives them (years, months of the
/// year, days, hours past 23, negative fields signed), the day of its span `DDD` (a month
/// counted as 30 days), `WW`, `Q`, `CC`. The names of months and days, eras and zones are
/// PostgreSQL's error (an interval is not tied to calendar dates); the patterns whose value
/// PostgreSQL computes as if the interval were a date (`IW`, `IYYY`, `IDDD`, `J`, `W`, `RM`,
/// `Y,YYY`) are refused (0A000).
pub(super) fn interval(iv: permafrost_types::Interval, format: &str) -> Result<Value> {
    let (year, month) = (i64::from(iv.months / 12), i64::from(iv.months % 12));
    let day = i64::from(iv.days);
    let secs = iv.micros / 1_000_000;
    let (hour, minute, second) = (secs / 3600, secs / 60 % 60, secs % 60);
    let frac = iv.micros % 1_000_000;
    let yday = (year * 12 + month) * 30 + day;
    render(format, |p, fill| {
        // A field PostgreSQL writes with one more digit when it is negative ("-04").
        let wide = |n: i64, width: usize| match (fill, n < 0) {
            (true, _) => n.to_string(),
            (false, true) => format!("{n:0w$}", w = width + 1),
            (false, false) => format!("{n:0width$}"),
        };
        let plain = |n: i64, width: usize| if fill { n.to_string() } else { format!("{n:0width$}") };
        let upper = p.to_ascii_uppercase();
        Ok(match upper.as_str() {
            "YYYY" => (wide(year, 4), Some(year)),
            "YYY" => (wide(year % 1000, 3), Some(year % 1000)),
            "YY" => (wide(year % 100, 2), Some(year % 100)),
            "Y" => (wide(year % 10, 1), Some(year % 10)),
            "MM" => (wide(month, 2), Some(month)),
            "DD" => (plain(day, 2), Some(day)),
            "DDD" => (plain(yday, 3), Some(yday)),
            "WW" => (plain((yday - 1) / 7 + 1, 2), Some((yday - 1) / 7 + 1)),
            "Q" if month == 0 => (String::new(), None),
            "Q" => (plain((month - 1) / 3 + 1, 1), Some((month - 1) / 3 + 1)),
            "CC" => (plain(year / 100, 2), Some(year / 100)),
            "HH" | "HH12" => {
                let h = if hour % 12 == 0 { 12 } else { hour % 12 };
                // (As wide as the hours are: "012" for -36 hours.)
                (plain(h, if hour < 0 { 3 } else { 2 }), Some(h))
            }
            "HH24" => (wide(hour, 2), Some(hour)),
            "MI" => (wide(minute, 2), Some(minute)),
            "SS" => (wide(second, 2), Some(second)),
            "MS" => (format!("{:03}", frac / 1000), Some(frac / 1000)),
            "US" => (format!("{frac:06}"), Some(frac)),
            "SSSS" | "SSSSS" => {
                let s = hour * 3600 + minute * 60 + second;
                (s.to_string(), Some(s))
            }
            "AM" | "PM" => (cased(if hour >= 12 { "PM" } else { "AM" }, p), None),
            "A.M." | "P.M." => (cased(if hour >= 12 { "P.M." } else { "A.M." }, p), None),
            "IW" | "IYYY" | "IYY" | "IY" | "I" | "IDDD" | "J" | "W" | "RM" | "Y,YYY" => {
                return Err(SqlError::Unsupported(format!(
                    "to_char of an interval with the pattern {p} (PostgreSQL computes it as if the interval \
                     were a date)"
                )));
            }
            _ => {
                return Err(SqlError::InvalidDatetimeFormat {
                    message: "invalid format specification for an interval value".into(),
                    hint: "Intervals are not tied to specific calendar dates.".into(),
                });
            }
        })
    })
}

/// The text of `format` with each pattern replaced by what `field` writes for it (`fill`:
/// under FM), and the number it wrote, for a `TH` suffix: quoted text, a backslash before a
/// quote, the FM / TM / FX prefixes and the TH / th suffixes handled here.
fn render(format: &str, field: impl Fn(&str, bool) -> Result<(String, Option<i64>)>) -> Result<Value> {
    let mut out = String::new();
    let b = format.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let rest = &format[i..];
        if let Some(q) = rest.strip_prefix('"') {
            // Quoted text, a backslash escaping the next character.
            let mut chars = q.char_indices();
            let mut end = q.len();
            while let Some((k, c)) = chars.next() {
                match c {
                    '"' => {
                        end = k;
                        break;
                    }
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            out.push(n);
                        }
                    }
                    c => out.push(c),
                }
            }
            i += 1 + (end + 1).min(q.len());
            continue;
        }
        if let Some(r) = rest.strip_prefix('\\') {
            match r.chars().next() {
                Some('"') => {
                    out.push('"');
                    i += 2;
                }
                _ => {
                    out.push('\\');
                    i += 1;
                }
            }
            continue;
        }
        // A prefix: FM (no padding), TM (names: English here), FX; what follows one that is
        // no pattern is copied as it is.
        let mut fill = false;
        let mut at = i;
        let r = &format[at..];
        if r.starts_with("FM") || r.starts_with("fm") {
            fill = true;
            at += 2;
        } else if r.starts_with("TM") || r.starts_with("tm") || r.starts_with("FX") || r.starts_with("fx") {
            at += 2;
        }
        let rest = &format[at..];
        let Some(p) = PATTERNS.iter().find(|p| rest.starts_with(**p)) else {
            if at > i && (rest.starts_with('"') || rest.starts_with('\\')) {
                i = at;
                continue;
            }
            let c = rest.chars().next().unwrap_or_default();
            if !rest.is_empty() {
                out.push(c);
            }
            i = at + c.len_utf8().max(1).min(rest.len());
            continue;
        };
        i = at + p.len();
        let (text, number) = field(p, fill)?;
        out.push_str(&text);
        // An ordinal suffix after a number (dropped after anything else).
        let after = &format[i..];
        let upper_th = after.starts_with("TH");
        if upper_th || after.starts_with("th") {
            i += 2;
            if let Some(n) = number {
                out.push_str(&if upper_th {
                    suffix(n).to_uppercase()
                } else {
                    suffix(n).to_string()
                });
            }
        }
    }
    Ok(Value::text(out))
}
