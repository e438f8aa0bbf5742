//! Dates and timestamps: their text forms in and out, as PostgreSQL has them (DateStyle
//! ISO), and the calendar arithmetic under them.
//!
//! A `timestamp` is microseconds since 1970-01-01 00:00:00 without a zone; a `timestamp
//! with time zone` is microseconds since 1970-01-01 00:00:00 UTC (PostgreSQL stores both
//! the same way, counting from 2000); a `date` is days since 1970-01-01. A `timestamptz`
//! is written in the session zone (crate::zone) with its offset there (`+00` in UTC,
//! `-04`, `+05:30`), and read in it when its text has no offset; an input with an offset
//! (`+05:30`, `Z`) is moved to UTC by it.

use std::fmt;

/// Microseconds in a second.
pub const MICROS_PER_SEC: i64 = 1_000_000;
/// Microseconds in a day.
pub const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SEC;

/// The earliest timestamp, PostgreSQL's: 4714-11-24 00:00:00 BC (Julian day 0), in
/// microseconds since 1970.
pub const TIMESTAMP_MIN: i64 = -210_866_803_200 * MICROS_PER_SEC;
/// The latest timestamp, 294246-12-31 23:59:59.999999: the last whole year that
/// microseconds since 1970 hold in 64 bits (PostgreSQL, counting from 2000, reaches
/// 294276-12-31).
pub const TIMESTAMP_MAX: i64 = 9_223_371_244_800 * MICROS_PER_SEC - 1;
/// The earliest date, 4714-11-24 BC, in days since 1970-01-01.
pub const DATE_MIN: i32 = -2_440_588;
/// The latest date, 5874897-12-31 (PostgreSQL's), in days since 1970-01-01.
pub const DATE_MAX: i32 = 2_145_042_905;

/// Days since 1970-01-01 of a proleptic Gregorian date (astronomical year: 0 is 1 BC).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a count of days since 1970-01-01 (astronomical year, month, day).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The days in month `m` (1 to 12) of year `y` (astronomical: 0 is 1 BC).
pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// The day a timestamp falls on (days since 1970-01-01).
pub fn day_of(micros: i64) -> i32 {
    micros.div_euclid(MICROS_PER_DAY) as i32
}

/// Midnight of a day, in microseconds since 1970.
pub fn start_of_day(days: i32) -> i64 {
    days as i64 * MICROS_PER_DAY
}

/// `YYYY-MM-DD` of a day count, and the era suffix (` BC` before year 1).
fn date_parts(days: i64) -> (String, &'static str) {
    let (y, m, d) = civil_from_days(days);
    let (year, era) = if y <= 0 { (1 - y, " BC") } else { (y, "") };
    (format!("{year:04}-{m:02}-{d:02}"), era)
}

/// The time of day `HH:MM:SS[.ffffff]`, the fraction without trailing zeros.
fn time_text(micros_of_day: i64) -> String {
    let secs = micros_of_day / MICROS_PER_SEC;
    let frac = micros_of_day % MICROS_PER_SEC;
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let digits = format!("{frac:06}");
        s.push('.');
        s.push_str(digits.trim_end_matches('0'));
    }
    s
}

/// A `time` as PostgreSQL writes it: `HH:MM:SS`, the fraction without its trailing zeros.
pub fn time_of_day_text(micros_of_day: i64) -> String {
    time_text(micros_of_day)
}

/// Reads a `time` (without time zone): `HH:MM[:SS[.ffffff]]` (up to `24:00:00`), or a
/// timestamp whose time is taken (`'2024-01-02 10:30'::time`); the microseconds of the
/// day. A zone after it is dropped, as PostgreSQL drops it for this type.
pub fn parse_time_of_day(input: &str) -> Result<i64, TimestampError> {
    let t = input.trim();
    let looks_dated = t.len() > 4 && t.as_bytes()[..4].iter().all(u8::is_ascii_digit) && t.as_bytes()[4] == b'-';
    if looks_dated {
        let f = parse_fields(t)?;
        return Ok(f.micros_of_day);
    }
    Ok(parse_time(t)?.0)
}

/// A timestamp as PostgreSQL writes it (ISO style): `YYYY-MM-DD HH:MM:SS`, the fraction
/// without its trailing zeros (none when whole), ` BC` before year 1.
pub fn timestamp_text(micros: i64) -> String {
    zoned_text(micros, "")
}

/// A timestamp with time zone as PostgreSQL writes it: its wall-clock time in the
/// session zone and the zone's offset then, `YYYY-MM-DD HH:MM:SS+00` in UTC.
pub fn timestamptz_text(micros: i64) -> String {
    let offset = crate::zone::session_offset(micros);
    if offset == 0 {
        return zoned_text(micros, "+00");
    }
    let local = micros.saturating_add(i64::from(offset) * MICROS_PER_SEC);
    zoned_text(local, &crate::zone::offset_text(offset, false))
}

fn zoned_text(micros: i64, zone: &str) -> String {
    let (date, era) = date_parts(micros.div_euclid(MICROS_PER_DAY));
    format!("{date} {}{zone}{era}", time_text(micros.rem_euclid(MICROS_PER_DAY)))
}

/// A date as PostgreSQL writes it (ISO style): `YYYY-MM-DD`, ` BC` before year 1.
pub fn date_text(days: i32) -> String {
    let (date, era) = date_parts(days as i64);
    format!("{date}{era}")
}

pub(crate) fn format_timestamp(micros: i64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(&timestamp_text(micros))
}

/// Why a date or timestamp literal was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimestampError {
    /// Not a timestamp (22007).
    Syntax,
    /// A field out of its range, or a moment outside [`TIMESTAMP_MIN`] ..= [`TIMESTAMP_MAX`]
    /// (22008).
    OutOfRange,
    /// A month past 12 (22008; PostgreSQL hints at the DateStyle).
    Month,
    /// A time zone name it does not know (22023).
    Zone(String),
}

/// A literal read into its fields: the day, the time of day and the zone's offset from UTC
/// in seconds, when one was given.
struct Fields {
    days: i64,
    micros_of_day: i64,
    offset_secs: Option<i64>,
    /// A zone named after the time (`Europe/Paris`), whose offset then applies.
    zone: Option<crate::zone::Zone>,
}

/// Reads `YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]][zone]` with a year of one or more digits
/// and an optional ` BC` / ` AD` era. The zone is `Z`, `UTC`, `GMT`, a numeric offset
/// (`+05`, `-05:30`, `+0530`) or a zone's name (`Europe/Paris`). Fractions past microseconds are rounded.
fn parse_fields(input: &str) -> Result<Fields, TimestampError> {
    use TimestampError::{OutOfRange, Syntax};
    let mut s = input.trim();
    let mut bc = false;
    let lower = s.to_ascii_lowercase();
    if lower.ends_with(" bc") {
        bc = true;
        s = s[..s.len() - 3].trim_end();
    } else if lower.ends_with(" ad") {
        s = s[..s.len() - 3].trim_end();
    }
    let (date, time) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], Some(s[i + 1..].trim_start())),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let (Some(y), Some(m), Some(d), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(Syntax);
    };
    let (year, month, day) = (digits(y, 9)?, digits(m, 2)?, digits(d, 2)?);
    if !(1..=12).contains(&month) {
        return Err(TimestampError::Month);
    }
    if year == 0 {
        return Err(OutOfRange);
    }
    let astro = if bc { 1 - year } else { year };
    let month = month as u32;
    if day < 1 || day > days_in_month(astro, month) as i64 {
        return Err(OutOfRange);
    }
    let (micros_of_day, offset) = match time {
        Some(t) => parse_time(t)?,
        None => (0, None),
    };
    let (offset_secs, zone) = match offset {
        Some(Offset::Fixed(s)) => (Some(s), None),
        Some(Offset::Named(z)) => (None, Some(z)),
        None => (None, None),
    };
    Ok(Fields {
        days: days_from_civil(astro, month, day as u32),
        micros_of_day,
        offset_secs,
        zone,
    })
}

fn digits(t: &str, max_len: usize) -> Result<i64, TimestampError> {
    if t.is_empty() || t.len() > max_len || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TimestampError::Syntax);
    }
    t.parse::<i64>().map_err(|_| TimestampError::Syntax)
}

/// `HH:MM[:SS[.ffffff]][zone]`: the microseconds of the day and the zone's offset.
/// A zone after a time: an offset east of UTC in seconds, or a named zone.
enum Offset {
    Fixed(i64),
    Named(crate::zone::Zone),
}

fn parse_time(t: &str) -> Result<(i64, Option<Offset>), TimestampError> {
    use TimestampError::{OutOfRange, Syntax};
    let (t, zone) = match t.find(|c: char| c == '+' || c == '-' || c.is_ascii_alphabetic()) {
        Some(i) => (t[..i].trim_end(), Some(t[i..].trim())),
        None => (t, None),
    };
    let (hms, frac) = match t.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (t, None),
    };
    let mut f = hms.split(':');
    let (Some(h), Some(mi)) = (f.next(), f.next()) else {
        return Err(Syntax);
    };
    let sec = f.next();
    if f.next().is_some() || (frac.is_some() && sec.is_none()) {
        return Err(Syntax);
    }
    let (h, mi, sec) = (digits(h, 2)?, digits(mi, 2)?, sec.map_or(Ok(0), |x| digits(x, 2))?);
    if h > 24 || mi > 59 || sec > 59 || (h == 24 && (mi, sec) != (0, 0)) {
        return Err(OutOfRange);
    }
    let mut us = 0i64;
    if let Some(frac) = frac {
        if frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Syntax);
        }
        let digits: String = frac.chars().chain(std::iter::repeat('0')).take(7).collect();
        let seven: i64 = digits.parse().map_err(|_| Syntax)?;
        us = (seven + 5) / 10;
        if h == 24 && us != 0 {
            return Err(OutOfRange);
        }
    }
    // The time is read first: a malformed one is a syntax error, whatever follows it.
    let offset = match zone {
        // (A zone's name starts with a letter; `UTC`, `Z` and their kin are offsets.)
        Some(z) if z.starts_with(|c: char| c.is_ascii_alphabetic()) && !crate::zone::is_utc_name(z) => {
            let named = crate::zone::Zone::named(z).ok_or_else(|| {
                if z.bytes().all(|b| b.is_ascii_alphanumeric() || b"/_+-".contains(&b)) {
                    TimestampError::Zone(z.to_ascii_lowercase())
                } else {
                    TimestampError::Syntax
                }
            })?;
            Some(Offset::Named(named))
        }
        Some(z) => Some(Offset::Fixed(parse_zone(z)?)),
        None => None,
    };
    Ok((((h * 60 + mi) * 60 + sec) * MICROS_PER_SEC + us, offset))
}

/// A zone after a time: `Z`, `UTC`, `GMT` (any case) or `+HH`, `+HH:MM`, `+HHMM`,
/// `+HH:MM:SS`; the offset east of UTC in seconds.
fn parse_zone(z: &str) -> Result<i64, TimestampError> {
    use TimestampError::{OutOfRange, Syntax};
    let (sign, rest) = match z.as_bytes().first() {
        Some(b'+') => (1, &z[1..]),
        Some(b'-') => (-1, &z[1..]),
        _ => {
            return if crate::zone::is_utc_name(z) {
                Ok(0)
            } else if z.bytes().all(|b| b.is_ascii_alphanumeric() || b"/_+-".contains(&b)) {
                Err(TimestampError::Zone(z.to_string()))
            } else {
                Err(Syntax)
            };
        }
    };
    let fields: Vec<&str> = rest.split(':').collect();
    let (h, m, s) = match fields.as_slice() {
        [hhmm] if hhmm.len() == 4 => (digits(&hhmm[..2], 2)?, digits(&hhmm[2..], 2)?, 0),
        [h] => (digits(h, 2)?, 0, 0),
        [h, m] => (digits(h, 2)?, digits(m, 2)?, 0),
        [h, m, s] => (digits(h, 2)?, digits(m, 2)?, digits(s, 2)?),
        _ => return Err(Syntax),
    };
    if h > 15 || m > 59 || s > 59 {
        return Err(OutOfRange);
    }
    Ok(sign * ((h * 60 + m) * 60 + s))
}

fn check_timestamp(micros: Option<i64>) -> Result<i64, TimestampError> {
    match micros {
        Some(m) if (TIMESTAMP_MIN..=TIMESTAMP_MAX).contains(&m) => Ok(m),
        _ => Err(TimestampError::OutOfRange),
    }
}

fn local_micros(f: &Fields) -> Option<i64> {
    f.days.checked_mul(MICROS_PER_DAY)?.checked_add(f.micros_of_day)
}

/// Parses a PostgreSQL timestamp literal: `YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]]` with a
/// year of one or more digits and an optional ` BC` / ` AD` era, from 4714-11-24 BC to
/// 294246-12-31. A time zone is read and ignored, as PostgreSQL does for a timestamp
/// without time zone (pgjdbc's setTimestamp sends one).
pub fn parse_timestamp(input: &str) -> Result<i64, TimestampError> {
    let f = parse_fields(input)?;
    check_timestamp(local_micros(&f))
}

/// Parses a timestamp with time zone: the form of [`parse_timestamp`], the moment moved to
/// UTC by its zone's offset; without a zone it is in the session zone (crate::zone).
pub fn parse_timestamptz(input: &str) -> Result<i64, TimestampError> {
    let f = parse_fields(input)?;
    let utc = local_micros(&f).and_then(|local| match (f.offset_secs, &f.zone) {
        (Some(offset), _) => local.checked_sub(offset * MICROS_PER_SEC),
        (None, Some(zone)) => zone.to_utc(local),
        (None, None) => crate::zone::session_utc(local),
    });
    check_timestamp(utc)
}

/// Parses a date: `YYYY-MM-DD` with an optional era, from 4714-11-24 BC to 5874897-12-31;
/// a time after it is read and dropped, as PostgreSQL does.
pub fn parse_date(input: &str) -> Result<i32, TimestampError> {
    let f = parse_fields(input)?;
    match i32::try_from(f.days) {
        Ok(d) if (DATE_MIN..=DATE_MAX).contains(&d) => Ok(d),
        _ => Err(TimestampError::OutOfRange),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What PostgreSQL 15 answers for `SELECT x::timestamp` (DateStyle ISO), and the
    /// SQLSTATE of what it refuses.
    #[test]
    fn timestamps_parse_and_print_as_postgresql_does() {
        for (input, pg) in [
            ("2020-01-02 03:04:05", "2020-01-02 03:04:05"),
            ("2020-01-02T03:04:05.25", "2020-01-02 03:04:05.25"),
            ("2020-01-02 03:04:05.000001", "2020-01-02 03:04:05.000001"),
            ("2020-01-02 03:04:05.1234567", "2020-01-02 03:04:05.123457"),
            ("2020-01-02 03:04", "2020-01-02 03:04:00"),
            ("2020-1-2", "2020-01-02 00:00:00"),
            ("1969-12-31 23:59:59.5", "1969-12-31 23:59:59.5"),
            ("0001-01-01", "0001-01-01 00:00:00"),
            ("0001-12-31 BC", "0001-12-31 00:00:00 BC"),
            ("4714-11-24 BC", "4714-11-24 00:00:00 BC"),
            ("44-03-15 BC", "0044-03-15 00:00:00 BC"),
            ("10000-01-01", "10000-01-01 00:00:00"),
            ("294246-12-31 23:59:59.999999", "294246-12-31 23:59:59.999999"),
            ("2024-02-29 AD", "2024-02-29 00:00:00"),
            ("  2020-01-02 03:04:05  ", "2020-01-02 03:04:05"),
            ("2020-01-02 24:00:00", "2020-01-03 00:00:00"),
            // A time zone is ignored (timestamp without time zone).
            ("2024-03-01 00:00:00+00", "2024-03-01 00:00:00"),
            ("2024-03-01 10:00:00.5-05:30", "2024-03-01 10:00:00.5"),
            ("2024-03-01T10:00:00Z", "2024-03-01 10:00:00"),
            ("2024-03-01 10:00+0530", "2024-03-01 10:00:00"),
            ("2024-03-01 10:00 UTC", "2024-03-01 10:00:00"),
        ] {
            let t = parse_timestamp(input).unwrap_or_else(|e| panic!("{input}: {e:?}"));
            assert_eq!(timestamp_text(t), pg, "{input}");
            assert_eq!(parse_timestamp(pg), Ok(t), "{pg} reads back");
        }
        for (input, e) in [
            ("4714-11-23 BC", TimestampError::OutOfRange),
            ("300000-01-01", TimestampError::OutOfRange),
            ("2023-02-29", TimestampError::OutOfRange),
            ("2020-13-01", TimestampError::Month),
            ("2020-01-01 24:00:01", TimestampError::OutOfRange),
            ("0000-01-01", TimestampError::OutOfRange),
            ("abc", TimestampError::Syntax),
            ("2020-01", TimestampError::Syntax),
            ("2020-01-01 03", TimestampError::Syntax),
            ("2020-01-01 03:04:05.", TimestampError::Syntax),
            ("2020-01-01 03:04:05.x", TimestampError::Syntax),
            ("-2020-01-01", TimestampError::Syntax),
            ("2020-01-01 03:04:05+", TimestampError::Syntax),
            ("2020-01-01 03:04:05+x", TimestampError::Syntax),
        ] {
            assert_eq!(parse_timestamp(input), Err(e), "{input}");
        }
        assert_eq!(timestamp_text(TIMESTAMP_MIN), "4714-11-24 00:00:00 BC");
        assert_eq!(timestamp_text(TIMESTAMP_MAX), "294246-12-31 23:59:59.999999");
    }

    /// What PostgreSQL 15 answers for `SELECT x::timestamptz` with TimeZone UTC.
    #[test]
    fn timestamps_with_time_zone_move_to_utc() {
        for (input, pg) in [
            ("2024-03-01 10:00:00", "2024-03-01 10:00:00+00"),
            ("2024-03-01 10:00:00+02", "2024-03-01 08:00:00+00"),
            ("2024-03-01 01:00:00.25-05:30", "2024-03-01 06:30:00.25+00"),
            ("2024-03-01 23:00+0130", "2024-03-01 21:30:00+00"),
            ("2024-03-01T00:30:00+01:00", "2024-02-29 23:30:00+00"),
            ("2024-03-01 10:00:00Z", "2024-03-01 10:00:00+00"),
            ("2024-03-01 10:00:00 UTC", "2024-03-01 10:00:00+00"),
            ("2024-03-01 10:00:00 etc/utc", "2024-03-01 10:00:00+00"),
            ("2024-03-01", "2024-03-01 00:00:00+00"),
            ("0044-03-15 12:00:00+00 BC", "0044-03-15 12:00:00+00 BC"),
        ] {
            let t = parse_timestamptz(input).unwrap_or_else(|e| panic!("{input}: {e:?}"));
            assert_eq!(timestamptz_text(t), pg, "{input}");
            assert_eq!(parse_timestamptz(pg), Ok(t), "{pg} reads back");
        }
        // A zone named after the time gives its offset then (EST in March, -05).
        assert_eq!(
            parse_timestamptz("2024-03-01 10:00 America/New_York").map(timestamptz_text),
            Ok("2024-03-01 15:00:00+00".into())
        );
        assert_eq!(
            parse_timestamptz("2024-03-01 10:00 Mars/Olympus"),
            Err(TimestampError::Zone("mars/olympus".into()))
        );
        assert_eq!(
            parse_timestamptz("2024-03-01 10:00+16"),
            Err(TimestampError::OutOfRange)
        );
        assert_eq!(
            parse_timestamptz("2024-03-01 10:00 +1:2:3:4"),
            Err(TimestampError::Syntax)
        );
    }

    /// What PostgreSQL 15 answers for `SELECT x::date`.
    #[test]
    fn dates_parse_and_print_as_postgresql_does() {
        for (input, pg) in [
            ("2024-02-29", "2024-02-29"),
            ("2024-2-9", "2024-02-09"),
            ("1970-01-01", "1970-01-01"),
            ("1969-12-31", "1969-12-31"),
            ("2024-03-01 23:59:59", "2024-03-01"),
            ("0001-12-31 BC", "0001-12-31 BC"),
            ("4714-11-24 BC", "4714-11-24 BC"),
            ("5874897-12-31", "5874897-12-31"),
        ] {
            let d = parse_date(input).unwrap_or_else(|e| panic!("{input}: {e:?}"));
            assert_eq!(date_text(d), pg, "{input}");
            assert_eq!(parse_date(pg), Ok(d), "{pg} reads back");
        }
        assert_eq!(parse_date("1970-01-02"), Ok(1));
        assert_eq!(parse_date("4714-11-24 BC"), Ok(DATE_MIN));
        assert_eq!(parse_date("5874897-12-31"), Ok(DATE_MAX));
        assert_eq!(parse_date("5874898-01-01"), Err(TimestampError::OutOfRange));
        assert_eq!(parse_date("2023-02-29"), Err(TimestampError::OutOfRange));
        assert_eq!(day_of(-1), -1);
        assert_eq!(start_of_day(-1), -MICROS_PER_DAY);
    }
}
