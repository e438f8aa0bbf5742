//! The date/time functions: `extract` / `date_part` (a field of a date or timestamp) and
//! `date_trunc` (a timestamp cut down to a unit), with PostgreSQL's units, their
//! spellings, and its answers for years BC. The calendar itself is
//! `permafrost_types::datetime`'s.

use permafrost_types::datetime::{MICROS_PER_DAY, MICROS_PER_SEC, civil_from_days, days_from_civil};
use permafrost_types::{DataType, Numeric, TIMESTAMP_MAX, TIMESTAMP_MIN, Value, ValueRef};

use crate::error::{Result, SqlError};

/// A unit of `extract` and `date_trunc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    Dow,
    Isodow,
    Doy,
    Isoyear,
    Epoch,
    Timezone,
    TimezoneHour,
    TimezoneMinute,
}

/// The unit a name spells (PostgreSQL's names, plurals and abbreviations, any case).
fn unit(name: &str) -> Option<Unit> {
    use Unit::*;
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => Microseconds,
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => Milliseconds,
        "second" | "seconds" | "s" | "sec" | "secs" => Second,
        "minute" | "minutes" | "m" | "min" | "mins" => Minute,
        "hour" | "hours" | "h" | "hr" | "hrs" => Hour,
        "day" | "days" | "d" => Day,
        "week" | "weeks" | "w" => Week,
        "month" | "months" | "mon" | "mons" => Month,
        "quarter" | "qtr" => Quarter,
        "year" | "years" | "y" | "yr" | "yrs" => Year,
        "decade" | "decades" | "dec" | "decs" => Decade,
        "century" | "centuries" | "c" | "cent" => Century,
        "millennium" | "millennia" | "mil" | "mils" | "millenniums" => Millennium,
        "dow" => Dow,
        "isodow" => Isodow,
        "doy" => Doy,
        "isoyear" => Isoyear,
        "epoch" => Epoch,
        "timezone" => Timezone,
        "timezone_h" | "timezone_hour" => TimezoneHour,
        "timezone_m" | "timezone_minute" => TimezoneMinute,
        _ => return None,
    })
}

fn not_recognized(name: &str, ty: &DataType) -> SqlError {
    SqlError::InvalidArgument(format!(
        "unit \"{}\" not recognized for type {}",
        name.trim().to_ascii_lowercase(),
        ty.sql_name()
    ))
}

fn not_supported(name: &str, ty: &DataType) -> SqlError {
    SqlError::FeatureNotSupported(format!(
        "unit \"{}\" not supported for type {}",
        name.trim().to_ascii_lowercase(),
        ty.sql_name()
    ))
}

/// The calendar fields of a moment: astronomical year (0 is 1 BC), month, day, the day
/// count since 1970, and the microseconds of the day.
pub(super) struct Fields {
    pub(super) year: i64,
    pub(super) month: u32,
    pub(super) day: u32,
    pub(super) days: i64,
    pub(super) micros_of_day: i64,
}

pub(super) fn fields(micros: i64) -> Fields {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    Fields {
        year,
        month,
        day,
        days,
        micros_of_day: micros.rem_euclid(MICROS_PER_DAY),
    }
}

/// ISO 8601 day of the week, 1 (Monday) to 7 (Sunday), of a day count since 1970 (a
/// Thursday).
pub(super) fn isodow(days: i64) -> i64 {
    (days + 3).rem_euclid(7) + 1
}

/// The ISO 8601 year and week of a day.
pub(super) fn iso_week(days: i64) -> (i64, i64) {
    let thursday = days - isodow(days) + 4;
    let (year, _, _) = civil_from_days(thursday);
    (year, (thursday - days_from_civil(year, 1, 1)) / 7 + 1)
}

/// The year as PostgreSQL shows it: 1 BC is -1.
fn shown_year(astro: i64) -> i64 {
    if astro > 0 { astro } else { astro - 1 }
}

/// The decade of an astronomical year as PostgreSQL numbers it (year / 10; before year 1
/// counted down from -1, so that decade -1 holds 1 to 10 BC).
fn decade(year: i64) -> i64 {
    if year >= 0 { year / 10 } else { -((8 - (year - 1)) / 10) }
}

/// The century (`len` 100) or millennium (`len` 1000) of an astronomical year: the first
/// is 1 (years 1 to `len`), the one before it -1.
pub(super) fn ordinal(year: i64, len: i64) -> i64 {
    if year > 0 {
        (year + len - 1) / len
    } else {
        -((len - 1 - (year - 1)) / len)
    }
}

/// The astronomical year a century or millennium `n` of `len` years starts at.
fn first_year(n: i64, len: i64) -> i64 {
    if n > 0 { (n - 1) * len + 1 } else { n * len + 1 }
}

/// The value of `extract(unit from v)` (`numeric`: numeric, as `extract` answers) or of
/// `date_part(unit, v)` (double precision).
pub(super) fn date_part(name: &str, v: ValueRef<'_>, numeric: bool) -> Result<Value> {
    if let ValueRef::Interval(x) = v {
        return interval_part(name, &x, numeric);
    }
    let (micros, ty, is_date) = match v {
        ValueRef::Timestamp(t) => (t, DataType::Timestamp, false),
        // A moment's fields are those of its wall-clock time in the session zone.
        ValueRef::TimestampTz(t) => (local(t)?, DataType::TimestampTz, false),
        // date_part(text, date) is PostgreSQL's date_part of the date's midnight.
        ValueRef::Date(d) => (d as i64 * MICROS_PER_DAY, DataType::Date, numeric),
        ValueRef::Time(t) => (t, DataType::Time, false),
        ValueRef::Null => return Ok(Value::Null),
        other => {
            return Err(SqlError::Type(format!(
                "extract and date_part take a date or timestamp, not {}",
                other.kind_name()
            )));
        }
    };
    let u = unit(name).ok_or_else(|| not_recognized(name, &ty))?;
    let f = fields(micros);
    let sec_us = f.micros_of_day % (60 * MICROS_PER_SEC);
    use Unit::*;
    if is_date && matches!(u, Microseconds | Milliseconds | Second | Minute | Hour) {
        return Err(not_supported(name, &ty));
    }
    if ty == DataType::Time && !matches!(u, Microseconds | Milliseconds | Second | Minute | Hour | Epoch) {
        return Err(not_supported(name, &ty));
    }
    if matches!(u, Timezone | TimezoneHour | TimezoneMinute) && ty != DataType::TimestampTz {
        return Err(not_supported(name, &ty));
    }
    // (value as a count of 10^-scale)
    let (count, scale): (i64, u32) = match u {
        Microseconds => (sec_us, 0),
        Milliseconds => (sec_us, 3),
        Second => (sec_us, 6),
        Minute => (f.micros_of_day / (60 * MICROS_PER_SEC) % 60, 0),
        Hour => (f.micros_of_day / (3600 * MICROS_PER_SEC), 0),
        Day => (f.day as i64, 0),
        Week => (iso_week(f.days).1, 0),
        Month => (f.month as i64, 0),
        Quarter => ((f.month as i64 - 1) / 3 + 1, 0),
        Year => (shown_year(f.year), 0),
        Decade => (decade(f.year), 0),
        Century => (ordinal(f.year, 100), 0),
        Millennium => (ordinal(f.year, 1000), 0),
        Dow => (isodow(f.days) % 7, 0),
        Isodow => (isodow(f.days), 0),
        Doy => (f.days - days_from_civil(f.year, 1, 1) + 1, 0),
        Isoyear => {
            let y = iso_week(f.days).0;
            (shown_year(y), 0)
        }
        Epoch if is_date => (f.days * 86_400, 0),
        Epoch => match v {
            ValueRef::TimestampTz(t) => (t, 6),
            _ => (micros, 6),
        },
        Timezone | TimezoneHour | TimezoneMinute => {
            let ValueRef::TimestampTz(t) = v else {
                return Err(not_supported(name, &ty));
            };
            let offset = i64::from(permafrost_types::zone::session_offset(t));
            match u {
                Timezone => (offset, 0),
                TimezoneHour => (offset / 3600, 0),
                _ => (offset / 60 % 60, 0),
            }
        }
    };
    Ok(if numeric {
        Value::Decimal(Numeric::new(count, scale))
    } else {
        Value::Double(count as f64 / 10f64.powi(scale as i32))
    })
}

/// `extract(unit from x)` / `date_part(unit, x)` of an interval: its fields as PostgreSQL
/// reads them (years and months from the months, the day field, the time's hours, minutes
/// and seconds), or `epoch`, its length in seconds (a month as 30 days, a year as 365.25).
fn interval_part(name: &str, x: &permafrost_types::Interval, numeric: bool) -> Result<Value> {
    let u = unit(name).ok_or_else(|| not_recognized(name, &DataType::Interval))?;
    let sec_us = x.micros % (60 * MICROS_PER_SEC);
    use Unit::*;
    let (count, scale): (i64, u32) = match u {
        Microseconds => (sec_us, 0),
        Milliseconds => (sec_us, 3),
        Second => (sec_us, 6),
        Minute => (x.micros / (60 * MICROS_PER_SEC) % 60, 0),
        Hour => (x.micros / (3600 * MICROS_PER_SEC), 0),
        Day => (x.days.into(), 0),
        Month => ((x.months % 12).into(), 0),
        Quarter => (((x.months % 12) / 3 + 1).into(), 0),
        Year => ((x.months / 12).into(), 0),
        Decade => ((x.months / 120).into(), 0),
        Century => ((x.months / 1200).into(), 0),
        Millennium => ((x.months / 12000).into(), 0),
        Epoch => {
            let seconds = x.epoch_seconds();
            return Ok(if numeric {
                let micros = (seconds * 1e6).round() as i64;
                Value::Decimal(Numeric::new(micros, 6))
            } else {
                Value::Double(seconds)
            });
        }
        _ => return Err(not_supported(name, &DataType::Interval)),
    };
    Ok(if numeric {
        Value::Decimal(Numeric::new(count, scale))
    } else {
        Value::Double(count as f64 / 10f64.powi(scale as i32))
    })
}

/// `date_trunc(unit, v)`: `v` (a timestamp, with or without zone) cut down to the start
/// of its `unit`.
/// `date_trunc(unit, interval)`: the interval with the fields below `unit` zeroed, as
/// PostgreSQL splits it (years and months of its months, its days, and hours, minutes,
/// seconds of its time, each truncated toward zero).
fn interval_trunc(name: &str, x: permafrost_types::Interval) -> Result<Value> {
    let ty = DataType::Interval;
    let u = unit(name).ok_or_else(|| not_recognized(name, &ty))?;
    let (mut years, mut months, mut days, mut micros) = (x.months / 12, x.months % 12, x.days, x.micros);
    let to = |micros: i64, step: i64| micros / step * step;
    use Unit::*;
    match u {
        Millennium | Century | Decade | Year | Quarter | Month => {
            let keep = match u {
                Millennium => 1000,
                Century => 100,
                Decade => 10,
                _ => 1,
            };
            years = years / keep * keep;
            months = match u {
                Quarter => months / 3 * 3,
                Month => months,
                _ => 0,
            };
            days = 0;
            micros = 0;
        }
        Day => micros = 0,
        Hour => micros = to(micros, 3600 * MICROS_PER_SEC),
        Minute => micros = to(micros, 60 * MICROS_PER_SEC),
        Second => micros = to(micros, MICROS_PER_SEC),
        Milliseconds => micros = to(micros, 1000),
        Microseconds => {}
        Week => return Err(SqlError::WeekOfInterval),
        _ => return Err(not_recognized(name, &ty)),
    }
    Ok(Value::Interval(permafrost_types::Interval {
        months: years * 12 + months,
        days,
        micros,
    }))
}

/// A moment of a timestamptz is cut down in its wall-clock time in the session zone, and
/// the result is the moment that zone's clocks show the cut time; a date is its midnight
/// there.
pub(super) fn date_trunc(name: &str, v: ValueRef<'_>) -> Result<Value> {
    let (micros, ty) = match v {
        ValueRef::Timestamp(t) => (t, DataType::Timestamp),
        ValueRef::TimestampTz(t) => (local(t)?, DataType::TimestampTz),
        ValueRef::Date(d) => (d as i64 * MICROS_PER_DAY, DataType::TimestampTz),
        ValueRef::Interval(x) => return interval_trunc(name, x),
        ValueRef::Null => return Ok(Value::Null),
        other => {
            return Err(SqlError::Type(format!(
                "date_trunc takes a timestamp, not {}",
                other.kind_name()
            )));
        }
    };
    let u = unit(name).ok_or_else(|| not_recognized(name, &ty))?;
    let f = fields(micros);
    let at = |us_of_day: i64| f.days * MICROS_PER_DAY + us_of_day;
    let first = |year: i64, month: u32| days_from_civil(year, month, 1) * MICROS_PER_DAY;
    use Unit::*;
    let r = match u {
        Microseconds => micros,
        Milliseconds => at(f.micros_of_day - f.micros_of_day % 1000),
        Second => at(f.micros_of_day - f.micros_of_day % MICROS_PER_SEC),
        Minute => at(f.micros_of_day - f.micros_of_day % (60 * MICROS_PER_SEC)),
        Hour => at(f.micros_of_day - f.micros_of_day % (3600 * MICROS_PER_SEC)),
        Day => at(0),
        Week => (f.days - isodow(f.days) + 1) * MICROS_PER_DAY,
        Month => first(f.year, f.month),
        Quarter => first(f.year, (f.month - 1) / 3 * 3 + 1),
        Year => first(f.year, 1),
        Decade => first(decade(f.year) * 10, 1),
        Century => first(first_year(ordinal(f.year, 100), 100), 1),
        Millennium => first(first_year(ordinal(f.year, 1000), 1000), 1),
        Dow | Isodow | Doy | Isoyear | Epoch | Timezone | TimezoneHour | TimezoneMinute => {
            return Err(not_supported(name, &ty));
        }
    };
    if !(TIMESTAMP_MIN..=TIMESTAMP_MAX).contains(&r) {
        return Err(out_of_range());
    }
    if ty == DataType::Timestamp {
        return Ok(Value::Timestamp(r));
    }
    let moment = permafrost_types::zone::session_utc(r).ok_or_else(out_of_range)?;
    if !(TIMESTAMP_MIN..=TIMESTAMP_MAX).contains(&moment) {
        return Err(out_of_range());
    }
    Ok(Value::TimestampTz(moment))
}

/// `make_date`, `make_time`, `make_timestamp` and `make_timestamptz` (`ty`) of their
/// integer fields (`ints`: year, month, day, then hour and minute; a time's hour and minute)
/// and `secs`, the seconds (a date's day). A negative year is BC, as in PostgreSQL.
pub(super) fn make_datetime(ty: DataType, ints: &[i64], secs: f64) -> Result<Value> {
    let date = |y: i64, m: i64, d: i64| -> Result<i64> {
        let bad = || SqlError::FieldOutOfRange(format!("date field value out of range: {y}-{m:02}-{d:02}"));
        let astro = if y < 0 { y + 1 } else { y };
        if y == 0 || !(1..=12).contains(&m) || d < 1 || y.abs() > 5_874_897 {
            return Err(bad());
        }
        if d > i64::from(permafrost_types::datetime::days_in_month(astro, m as u32)) {
            return Err(bad());
        }
        Ok(days_from_civil(astro, m as u32, d as u32))
    };
    let time = |h: i64, mi: i64, s: f64| -> Result<i64> {
        let micros = (s * 1e6).round();
        let ok = (0..=24).contains(&h) && (0..60).contains(&mi) && (0.0..=60.0).contains(&s) && s.is_finite();
        let total = ((h * 60 + mi) * 60) as f64 * 1e6 + micros;
        if !ok || total > 86_400e6 {
            // (The seconds as C's `%02g` writes them, as PostgreSQL's message does.)
            let secs = permafrost_types::double_text(s);
            let secs = if secs.len() < 2 { format!("0{secs}") } else { secs };
            return Err(SqlError::FieldOutOfRange(format!(
                "time field value out of range: {h:02}:{mi:02}:{secs}"
            )));
        }
        Ok(total as i64)
    };
    Ok(match ty {
        DataType::Date => {
            let days = date(ints[0], ints[1], secs as i64)?;
            Value::Date(i32::try_from(days).map_err(|_| out_of_range())?)
        }
        DataType::Time => Value::Time(time(ints[0], ints[1], secs)?),
        _ => {
            let local = date(ints[0], ints[1], ints[2])?
                .checked_mul(MICROS_PER_DAY)
                .and_then(|d| d.checked_add(time(ints[3], ints[4], secs).ok()?))
                .filter(|t| (TIMESTAMP_MIN..=TIMESTAMP_MAX).contains(t));
            let local = match local {
                Some(t) => t,
                None => {
                    time(ints[3], ints[4], secs)?;
                    return Err(out_of_range());
                }
            };
            if ty == DataType::Timestamp {
                Value::Timestamp(local)
            } else {
                let moment = permafrost_types::zone::session_utc(local).ok_or_else(out_of_range)?;
                Value::TimestampTz(moment)
            }
        }
    })
}

/// The wall-clock time of the moment `t` in the session zone.
fn local(t: i64) -> Result<i64> {
    permafrost_types::zone::session_local(t).ok_or_else(out_of_range)
}

fn out_of_range() -> SqlError {
    SqlError::Math {
        sqlstate: "22008",
        message: "timestamp out of range",
    }
}

/// `x AT TIME ZONE zone` (`to_local`: x a moment, the result its wall-clock time in zone;
/// else x a wall-clock time there, the result the moment).
pub(super) fn at_time_zone(x: ValueRef<'_>, zone: &str, to_local: bool) -> Result<Value> {
    let unknown = permafrost_types::TimestampError::Zone(zone.trim().to_string());
    let z = permafrost_types::zone::Zone::named(zone)
        .ok_or_else(|| SqlError::from(permafrost_types::datetime_error(&DataType::TimestampTz, unknown, zone)))?;
    in_zone(x, &z, zone, to_local)
}

/// `x AT TIME ZONE INTERVAL '...'`: in the fixed zone that far EAST of UTC (days or months
/// are 22023, as PostgreSQL has them).
pub(super) fn at_interval_zone(x: ValueRef<'_>, east: &permafrost_types::Interval, to_local: bool) -> Result<Value> {
    let shown = permafrost_types::interval_text(east);
    let z = (east.months == 0 && east.days == 0)
        .then(|| i32::try_from(east.micros / 1_000_000).ok())
        .flatten()
        .and_then(permafrost_types::zone::Zone::east)
        .ok_or_else(|| {
            SqlError::InvalidArgument(format!(
                "interval time zone \"{shown}\" must not include months or days"
            ))
        })?;
    in_zone(x, &z, &shown, to_local)
}

fn in_zone(x: ValueRef<'_>, z: &permafrost_types::zone::Zone, zone: &str, to_local: bool) -> Result<Value> {
    let (ValueRef::Timestamp(t) | ValueRef::TimestampTz(t)) = x else {
        return Err(SqlError::Type(format!("AT TIME ZONE of {}", x.kind_name())));
    };
    let moved = if to_local { z.to_local(t) } else { z.to_utc(t) };
    let out = permafrost_types::TimestampError::OutOfRange;
    let moved =
        moved.ok_or_else(|| SqlError::from(permafrost_types::datetime_error(&DataType::TimestampTz, out, zone)))?;
    Ok(if to_local {
        Value::Timestamp(moved)
    } else {
        Value::TimestampTz(moved)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Value {
        Value::Timestamp(permafrost_types::parse_timestamp(s).unwrap())
    }

    /// PostgreSQL 15's answers for `extract(u from timestamp '...')`.
    #[test]
    fn extract_answers_as_postgresql() {
        let t = ts("2024-12-30 13:45:05.25");
        for (u, pg) in [
            ("year", "2024"),
            ("month", "12"),
            ("day", "30"),
            ("hour", "13"),
            ("minute", "45"),
            ("second", "5.250000"),
            ("milliseconds", "5250.000"),
            ("microseconds", "5250000"),
            ("dow", "1"),
            ("isodow", "1"),
            ("doy", "365"),
            ("week", "1"),
            ("isoyear", "2025"),
            ("quarter", "4"),
            ("decade", "202"),
            ("century", "21"),
            ("millennium", "3"),
            ("epoch", "1735566305.250000"),
            ("YEARS", "2024"),
        ] {
            assert_eq!(date_part(u, t.as_ref(), true).unwrap().to_string(), pg, "{u}");
        }
        let bc = ts("0044-03-15 00:00:00 BC");
        assert_eq!(date_part("year", bc.as_ref(), true).unwrap().to_string(), "-44");
        assert_eq!(date_part("century", bc.as_ref(), true).unwrap().to_string(), "-1");
        let sunday = ts("2023-01-01");
        assert_eq!(date_part("dow", sunday.as_ref(), true).unwrap().to_string(), "0");
        assert_eq!(date_part("week", sunday.as_ref(), true).unwrap().to_string(), "52");
        assert_eq!(date_part("isoyear", sunday.as_ref(), true).unwrap().to_string(), "2022");
        assert_eq!(date_part("second", t.as_ref(), false).unwrap(), Value::Double(5.25));
        let d = Value::Date(permafrost_types::parse_date("2000-01-02").unwrap());
        assert_eq!(date_part("epoch", d.as_ref(), true).unwrap().to_string(), "946771200");
        assert_eq!(date_part("hour", d.as_ref(), true).unwrap_err().sqlstate(), "0A000");
        assert_eq!(date_part("hour", d.as_ref(), false).unwrap(), Value::Double(0.0));
        assert_eq!(
            date_part("fortnight", t.as_ref(), true).unwrap_err().sqlstate(),
            "22023"
        );
    }

    /// PostgreSQL 15's answers for `date_trunc(u, timestamp '...')`.
    #[test]
    fn date_trunc_answers_as_postgresql() {
        let t = ts("2024-08-14 13:45:05.123456");
        for (u, pg) in [
            ("microseconds", "2024-08-14 13:45:05.123456"),
            ("milliseconds", "2024-08-14 13:45:05.123"),
            ("second", "2024-08-14 13:45:05"),
            ("minute", "2024-08-14 13:45:00"),
            ("hour", "2024-08-14 13:00:00"),
            ("day", "2024-08-14 00:00:00"),
            ("week", "2024-08-12 00:00:00"),
            ("month", "2024-08-01 00:00:00"),
            ("quarter", "2024-07-01 00:00:00"),
            ("year", "2024-01-01 00:00:00"),
            ("decade", "2020-01-01 00:00:00"),
            ("century", "2001-01-01 00:00:00"),
            ("millennium", "2001-01-01 00:00:00"),
        ] {
            assert_eq!(date_trunc(u, t.as_ref()).unwrap().to_string(), pg, "{u}");
        }
        let d = Value::Date(permafrost_types::parse_date("2024-02-15").unwrap());
        assert_eq!(
            date_trunc("month", d.as_ref()).unwrap().to_string(),
            "2024-02-01 00:00:00+00"
        );
        assert_eq!(date_trunc("dow", t.as_ref()).unwrap_err().sqlstate(), "0A000");
        assert_eq!(date_trunc("nope", t.as_ref()).unwrap_err().sqlstate(), "22023");
    }
}
