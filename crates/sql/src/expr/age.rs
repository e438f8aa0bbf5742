//! `make_interval(...)`, `age(a, b)` (the symbolic difference of two timestamps in years, months and days, as
//! PostgreSQL's `timestamp_age` computes it) and `justify_days`, `justify_hours`,
//! `justify_interval` (an interval's days as 30-day months, its hours as 24-hour days).

use permafrost_types::datetime::{MICROS_PER_DAY, civil_from_days};
use permafrost_types::{Interval, Value, ValueRef};

use crate::error::{Result, SqlError};

/// Which justify function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Justify {
    Days,
    Hours,
    Interval,
}

const DAYS_PER_MONTH: i32 = 30;

fn out_of_range() -> SqlError {
    SqlError::Math {
        sqlstate: "22008",
        message: "interval out of range",
    }
}

/// `justify_*(x)`, as PostgreSQL 15 computes them (signs made to agree).
pub fn justify(kind: Justify, x: ValueRef<'_>) -> Result<Value> {
    let ValueRef::Interval(x) = x else {
        return Err(SqlError::Type(format!("justify of {}", x.kind_name())));
    };
    let (mut month, mut day, mut time) = (i64::from(x.months), i64::from(x.days), x.micros);
    let per_day = MICROS_PER_DAY;
    let dpm = i64::from(DAYS_PER_MONTH);
    match kind {
        Justify::Days => {
            carry(&mut day, &mut month, dpm);
            agree(&mut day, &mut month, dpm);
        }
        Justify::Hours => {
            carry(&mut time, &mut day, per_day);
            agree(&mut time, &mut day, per_day);
        }
        Justify::Interval => {
            if (day > 0 && time > 0) || (day < 0 && time < 0) {
                carry(&mut day, &mut month, dpm);
            }
            carry(&mut time, &mut day, per_day);
            carry(&mut day, &mut month, dpm);
            if month > 0 && (day < 0 || (day == 0 && time < 0)) {
                day += dpm;
                month -= 1;
            } else if month < 0 && (day > 0 || (day == 0 && time > 0)) {
                day -= dpm;
                month += 1;
            }
            agree(&mut time, &mut day, per_day);
        }
    }
    Ok(Value::Interval(Interval {
        months: i32::try_from(month).map_err(|_| out_of_range())?,
        days: i32::try_from(day).map_err(|_| out_of_range())?,
        micros: time,
    }))
}

/// Moves the whole `radix`es of `lo` into `hi` (truncating toward zero).
fn carry(lo: &mut i64, hi: &mut i64, radix: i64) {
    *hi += *lo / radix;
    *lo %= radix;
}

/// Makes `lo`'s sign `hi`'s when they differ, borrowing one `radix`.
fn agree(lo: &mut i64, hi: &mut i64, radix: i64) {
    if *hi > 0 && *lo < 0 {
        *lo += radix;
        *hi -= 1;
    } else if *hi < 0 && *lo > 0 {
        *lo -= radix;
        *hi += 1;
    }
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`: `[years, months,
/// weeks, days, hours, mins]` and the seconds (rounded to microseconds); past an
/// interval's fields, 22008 "interval out of range" as PostgreSQL answers.
pub fn make_interval(p: [i64; 6], secs: f64) -> Result<Value> {
    let [years, months, weeks, days, hours, mins] = p;
    let months = years.checked_mul(12).and_then(|y| y.checked_add(months));
    let days = weeks.checked_mul(7).and_then(|w| w.checked_add(days));
    let micros = (secs * 1e6).round_ties_even();
    let time = hours
        .checked_mul(3_600_000_000)
        .and_then(|h| h.checked_add(mins.checked_mul(60_000_000)?))
        .and_then(|t| {
            if micros.is_finite() && micros.abs() < 9.2e18 {
                t.checked_add(micros as i64)
            } else {
                None
            }
        });
    match (
        months.and_then(|m| i32::try_from(m).ok()),
        days.and_then(|d| i32::try_from(d).ok()),
        time,
    ) {
        (Some(months), Some(days), Some(micros)) => Ok(Value::Interval(Interval { months, days, micros })),
        _ => Err(out_of_range()),
    }
}

/// A timestamp's calendar fields: year, month (1..12), day, and microseconds of the day.
fn fields(t: i64) -> (i64, i64, i64, i64) {
    let (y, m, d) = civil_from_days(t.div_euclid(MICROS_PER_DAY));
    (y, i64::from(m), i64::from(d), t.rem_euclid(MICROS_PER_DAY))
}

fn leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Days of month `m` (1..12) of year `y`.
fn month_days(y: i64, m: i64) -> i64 {
    match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `age(a, b)` of two timestamps (microseconds; a timestamp with time zone's in the
/// session's zone, UTC): field by field, a negative field borrowing from the next, days
/// borrowed as the earlier timestamp's month has them (PostgreSQL's `timestamp_age`).
pub fn age(a: i64, b: i64) -> Result<Value> {
    let (y1, m1, d1, t1) = fields(a);
    let (y2, m2, d2, t2) = fields(b);
    let neg = a < b;
    let flip = |x: i64| if neg { -x } else { x };
    let mut time = flip(t1 - t2);
    let mut day = flip(d1 - d2);
    let mut month = flip(m1 - m2);
    let mut year = flip(y1 - y2);
    while time < 0 {
        time += MICROS_PER_DAY;
        day -= 1;
    }
    while day < 0 {
        // The days of the earlier timestamp's own month.
        let (y, m) = if neg { (y1, m1) } else { (y2, m2) };
        day += month_days(y, m);
        month -= 1;
    }
    while month < 0 {
        month += 12;
        year -= 1;
    }
    let months = flip(year * 12 + month);
    Ok(Value::Interval(Interval {
        months: i32::try_from(months).map_err(|_| out_of_range())?,
        days: i32::try_from(flip(day)).map_err(|_| out_of_range())?,
        micros: flip(time),
    }))
}
