//! `interval` values: months, days and microseconds kept apart, as PostgreSQL keeps them
//! (a month is not a fixed number of days, nor a day of hours across a change of offset),
//! read in PostgreSQL's input forms and written in its default output style (`postgres`).

use std::cmp::Ordering;

use crate::datetime::{MICROS_PER_DAY, MICROS_PER_SEC, civil_from_days, days_from_civil};

const MICROS_PER_MINUTE: i64 = 60 * MICROS_PER_SEC;
const MICROS_PER_HOUR: i64 = 60 * MICROS_PER_MINUTE;
/// What comparison and `extract(epoch ...)` count a month as: 30 days (PostgreSQL's).
const DAYS_PER_MONTH: i64 = 30;

/// An interval: its fields each with its own sign.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    /// The interval's length with a month as 30 days, in microseconds: what orders and
    /// equates intervals (`'1 mon' = '30 days'`, as in PostgreSQL).
    pub fn span(&self) -> i128 {
        (i128::from(self.months) * i128::from(DAYS_PER_MONTH) + i128::from(self.days)) * i128::from(MICROS_PER_DAY)
            + i128::from(self.micros)
    }

    pub fn compare(&self, other: &Interval) -> Ordering {
        self.span().cmp(&other.span())
    }

    /// `-x`, `None` past the range.
    pub fn negate(&self) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_neg()?,
            days: self.days.checked_neg()?,
            micros: self.micros.checked_neg()?,
        })
    }

    /// `x + y` field by field, `None` past the range.
    pub fn add(&self, o: &Interval) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_add(o.months)?,
            days: self.days.checked_add(o.days)?,
            micros: self.micros.checked_add(o.micros)?,
        })
    }

    /// `x * f`: each field scaled, a fraction of a month spilling into days (30 a month)
    /// and a fraction of a day into microseconds, as PostgreSQL's `interval_mul`.
    pub fn scale(&self, f: f64) -> Option<Interval> {
        if !f.is_finite() {
            return None;
        }
        let months = f64::from(self.months) * f;
        let whole_months = months.trunc();
        let days = f64::from(self.days) * f + (months - whole_months) * DAYS_PER_MONTH as f64;
        let whole_days = days.trunc();
        let micros = self.micros as f64 * f + (days - whole_days) * MICROS_PER_DAY as f64;
        let fits = |x: f64, lo: f64, hi: f64| (lo..=hi).contains(&x);
        if !fits(whole_months, i32::MIN as f64, i32::MAX as f64)
            || !fits(whole_days, i32::MIN as f64, i32::MAX as f64)
            || !fits(micros.round(), i64::MIN as f64, i64::MAX as f64)
        {
            return None;
        }
        Some(Interval {
            months: whole_months as i32,
            days: whole_days as i32,
            micros: micros.round() as i64,
        })
    }

    /// `extract(epoch from x)`: seconds, a month as 30 days and a year as 365.25 days.
    pub fn epoch_seconds(&self) -> f64 {
        let years = f64::from(self.months / 12);
        let months = f64::from(self.months % 12);
        years * 365.25 * 86_400.0
            + months * DAYS_PER_MONTH as f64 * 86_400.0
            + f64::from(self.days) * 86_400.0
            + self.micros as f64 / MICROS_PER_SEC as f64
    }

    /// The interval between two moments `a - b` (microseconds), as PostgreSQL gives it:
    /// whole days and the rest (`justify_hours`).
    pub fn between(a: i64, b: i64) -> Option<Interval> {
        let d = a.checked_sub(b)?;
        let days = d / MICROS_PER_DAY;
        Some(Interval {
            months: 0,
            days: i32::try_from(days).ok()?,
            micros: d - days * MICROS_PER_DAY,
        })
    }
}

/// `t + x` for a timestamp `t` (microseconds since the epoch, its wall clock): the months
/// first (the day kept, or the month's last day if it has fewer), then the days, then the
/// time. `None` past the range.
pub fn add_to_timestamp(t: i64, x: &Interval) -> Option<i64> {
    let mut t = t;
    if x.months != 0 {
        let day = t.div_euclid(MICROS_PER_DAY);
        let time = t.rem_euclid(MICROS_PER_DAY);
        let (y, m, d) = civil_from_days(day);
        let total = y.checked_mul(12)? + i64::from(m) - 1 + i64::from(x.months);
        let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) as u32 + 1);
        let last = crate::datetime::days_in_month(ny, nm);
        t = days_from_civil(ny, nm, d.min(last))
            .checked_mul(MICROS_PER_DAY)?
            .checked_add(time)?;
    }
    t = t.checked_add(i64::from(x.days).checked_mul(MICROS_PER_DAY)?)?;
    t.checked_add(x.micros)
}

/// `t + x` for a timestamp with time zone, as PostgreSQL adds them: the months and days
/// move the wall-clock time in the session zone (crate::zone), so a day across a change of
/// offset is 23 or 25 hours; the time part moves the moment.
pub fn add_to_timestamptz(t: i64, x: &Interval) -> Option<i64> {
    let mut t = t;
    if x.months != 0 || x.days != 0 {
        let local = crate::zone::session_local(t)?;
        let moved = add_to_timestamp(local, &Interval { micros: 0, ..*x })?;
        t = crate::zone::session_utc(moved)?;
    }
    t.checked_add(x.micros)
}

/// Reads PostgreSQL's interval input: `number unit` pairs (`1 year 2 mons`, `3 days`,
/// `1.5 hours`, `-2 weeks`), a time `[-]HH:MM[:SS[.ffffff]]`, a trailing `ago` (negates),
/// a leading `@`, and ISO 8601's `P1Y2M3DT4H5M6S`. `None` when it is not one.
pub fn parse_interval(input: &str) -> Option<Interval> {
    let t = input.trim();
    if let Some(iso) = t.strip_prefix('P').or_else(|| t.strip_prefix('p')) {
        return parse_iso(iso);
    }
    let t = t.strip_prefix('@').unwrap_or(t).trim();
    let lower = t.to_ascii_lowercase();
    let (body, ago) = match lower.strip_suffix("ago") {
        Some(b) if b.ends_with(char::is_whitespace) || b.is_empty() => (b.trim().to_string(), true),
        _ => (lower.clone(), false),
    };
    let mut acc = Acc::default();
    let tokens = tokenize(&body)?;
    if tokens.is_empty() {
        return None;
    }
    let mut i = 0;
    while i < tokens.len() {
        let tok = &tokens[i];
        if tok.contains(':') {
            acc.micros += time_micros(tok)? as f64;
            i += 1;
            continue;
        }
        let n: f64 = tok.parse().ok().filter(|x: &f64| x.is_finite())?;
        match tokens
            .get(i + 1)
            .filter(|u| u.starts_with(|c: char| c.is_ascii_alphabetic()))
        {
            Some(unit) => {
                acc.add(n, unit)?;
                i += 2;
            }
            // A bare number is seconds.
            None => {
                acc.add(n, "second")?;
                i += 1;
            }
        }
    }
    let x = acc.finish()?;
    if ago { x.negate() } else { Some(x) }
}

/// The interval's fields as they are read: fractions kept until the end.
#[derive(Default)]
struct Acc {
    months: f64,
    days: f64,
    micros: f64,
}

impl Acc {
    fn add(&mut self, n: f64, unit: &str) -> Option<()> {
        // (A plural's `s` is dropped; `ms` and `us` are units of their own.)
        let unit = if unit == "ms" || unit == "us" {
            unit
        } else {
            unit.trim_end_matches('s')
        };
        match unit {
            "microsecond" | "u" | "us" | "usec" | "microsecon" => self.micros += n,
            "millisecond" | "m" if unit == "millisecond" => self.micros += n * 1e3,
            "ms" | "msec" | "millisecon" => self.micros += n * 1e3,
            "second" | "sec" | "secs" | "" => self.micros += n * 1e6,
            "minute" | "min" | "mins" | "m" => self.micros += n * 60e6,
            "hour" | "h" | "hr" | "hrs" => self.micros += n * 3600e6,
            "day" | "d" => self.days += n,
            "week" | "w" => self.days += n * 7.0,
            "month" | "mon" | "mons" => self.months += n,
            "year" | "y" | "yr" | "yrs" => self.months += n * 12.0,
            "decade" | "dec" | "decs" => self.months += n * 120.0,
            "century" | "centurie" | "cent" => self.months += n * 1200.0,
            "millennium" | "millennia" | "mil" | "mils" => self.months += n * 12000.0,
            _ => return None,
        }
        Some(())
    }

    fn finish(self) -> Option<Interval> {
        let months = self.months.trunc();
        let days = self.days + (self.months - months) * DAYS_PER_MONTH as f64;
        let whole_days = days.trunc();
        // A fraction of a microsecond is rounded as PostgreSQL rounds it: past a half away
        // from zero, else toward it.
        let exact = self.micros + (days - whole_days) * MICROS_PER_DAY as f64;
        let micros = match exact - exact.trunc() {
            f if f > 0.5 => exact.trunc() + 1.0,
            f if f < -0.5 => exact.trunc() - 1.0,
            _ => exact.trunc(),
        };
        let fits32 = |x: f64| (i32::MIN as f64..=i32::MAX as f64).contains(&x);
        if !fits32(months) || !fits32(whole_days) || !(i64::MIN as f64..=i64::MAX as f64).contains(&micros) {
            return None;
        }
        Some(Interval {
            months: months as i32,
            days: whole_days as i32,
            micros: micros as i64,
        })
    }
}

/// Splits interval input into numbers (with their sign), units and times: `1day` reads
/// as `1 day`.
fn tokenize(s: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        if !cur.is_empty() {
            out.push(std::mem::take(cur));
        }
    };
    let mut prev_alpha = false;
    for c in s.chars() {
        if c.is_whitespace() || c == ',' {
            flush(&mut cur, &mut out);
            prev_alpha = false;
            continue;
        }
        let alpha = c.is_ascii_alphabetic();
        if !cur.is_empty() && alpha != prev_alpha {
            flush(&mut cur, &mut out);
        }
        if !(alpha || c.is_ascii_digit() || "+-.:".contains(c)) {
            return None;
        }
        cur.push(c);
        prev_alpha = alpha;
    }
    flush(&mut cur, &mut out);
    Some(out)
}

/// `[-]HH:MM[:SS[.ffffff]]` in microseconds.
fn time_micros(t: &str) -> Option<i64> {
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let parts: Vec<&str> = t.split(':').collect();
    let (h, m, s) = match parts.as_slice() {
        [h, m] => (*h, *m, "0"),
        [h, m, s] => (*h, *m, *s),
        _ => return None,
    };
    let h: i64 = h.parse().ok()?;
    let m: i64 = m.parse().ok().filter(|m| (0..60).contains(m))?;
    let s: f64 = s.parse().ok().filter(|s: &f64| (0.0..60.0).contains(s))?;
    let v = h.checked_mul(MICROS_PER_HOUR)?.checked_add(m * MICROS_PER_MINUTE)? + (s * 1e6).round() as i64;
    Some(if neg { -v } else { v })
}

/// ISO 8601's duration after its `P`: `nY nM nW nD` then `T nH nM nS`.
fn parse_iso(s: &str) -> Option<Interval> {
    let mut acc = Acc::default();
    let mut in_time = false;
    let mut num = String::new();
    for c in s.chars() {
        match c {
            'T' | 't' => in_time = true,
            '0'..='9' | '.' | '-' | '+' => num.push(c),
            u => {
                let n: f64 = num.parse().ok()?;
                num.clear();
                let unit = match (u.to_ascii_uppercase(), in_time) {
                    ('Y', false) => "year",
                    ('M', false) => "month",
                    ('W', false) => "week",
                    ('D', false) => "day",
                    ('H', true) => "hour",
                    ('M', true) => "minute",
                    ('S', true) => "second",
                    _ => return None,
                };
                acc.add(n, unit)?;
            }
        }
    }
    if !num.is_empty() {
        return None;
    }
    acc.finish()
}

/// An interval in PostgreSQL's default output style: `1 year 2 mons 3 days 04:05:06`,
/// `-1 days +02:00:00`, `00:00:00` for none.
pub fn interval_text(x: &Interval) -> String {
    // PostgreSQL's rules: each nonzero field with its sign, a `+` before a positive one
    // that follows a negative one, the time shown when nonzero or when nothing else is.
    let mut out = String::new();
    let mut before_negative = false;
    let mut field = |out: &mut String, n: i64, unit: &str| {
        if n == 0 {
            return;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        let plus = if before_negative && n > 0 { "+" } else { "" };
        out.push_str(&format!("{plus}{n} {unit}{}", if n == 1 { "" } else { "s" }));
        before_negative = n < 0;
    };
    field(&mut out, (x.months / 12).into(), "year");
    field(&mut out, (x.months % 12).into(), "mon");
    field(&mut out, x.days.into(), "day");
    if x.micros != 0 || out.is_empty() {
        let m = x.micros.unsigned_abs();
        let (h, rest) = (m / MICROS_PER_HOUR as u64, m % MICROS_PER_HOUR as u64);
        let (mi, rest) = (rest / MICROS_PER_MINUTE as u64, rest % MICROS_PER_MINUTE as u64);
        let (s, us) = (rest / MICROS_PER_SEC as u64, rest % MICROS_PER_SEC as u64);
        let sign = if x.micros < 0 {
            "-"
        } else if before_negative {
            "+"
        } else {
            ""
        };
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&format!("{sign}{h:02}:{mi:02}:{s:02}"));
        if us != 0 {
            let frac = format!("{us:06}");
            out.push('.');
            out.push_str(frac.trim_end_matches('0'));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What PostgreSQL 15 prints for `SELECT 'x'::interval`.
    #[test]
    fn input_and_output_as_postgresql() {
        for (input, pg) in [
            ("1 day", "1 day"),
            ("2 days", "2 days"),
            ("-1 day", "-1 days"),
            ("1 year 2 months 3 days 04:05:06", "1 year 2 mons 3 days 04:05:06"),
            ("1.5 hours", "01:30:00"),
            ("1.5 days", "1 day 12:00:00"),
            ("1.5 months", "1 mon 15 days"),
            ("90 minutes", "01:30:00"),
            ("00:00:00", "00:00:00"),
            ("0", "00:00:00"),
            ("-01:30:00", "-01:30:00"),
            ("1 day -01:00:00", "1 day -01:00:00"),
            ("-1 day 01:00:00", "-1 days +01:00:00"),
            ("2 weeks", "14 days"),
            ("1 day ago", "-1 days"),
            ("@ 3 hours", "03:00:00"),
            ("P1Y2M3DT4H5M6S", "1 year 2 mons 3 days 04:05:06"),
            ("10 secs", "00:00:10"),
            ("1.25 seconds", "00:00:01.25"),
            ("3 mons", "3 mons"),
            ("1 mon", "1 mon"),
            ("120 days", "120 days"),
            ("-2 years -3 mons", "-2 years -3 mons"),
            ("-1 mon 2 days", "-1 mons +2 days"),
        ] {
            let x = parse_interval(input).unwrap_or_else(|| panic!("{input}"));
            assert_eq!(interval_text(&x), pg, "{input}");
        }
        for bad in ["", "day", "1 fortnight", "1:70", "abc", "P1X"] {
            assert_eq!(parse_interval(bad), None, "{bad}");
        }
    }

    #[test]
    fn arithmetic_as_postgresql() {
        let t = crate::datetime::parse_timestamp("2024-01-31 10:00:00").unwrap();
        let month = parse_interval("1 month").unwrap();
        let shown = |m: i64| crate::datetime::timestamp_text(m);
        assert_eq!(shown(add_to_timestamp(t, &month).unwrap()), "2024-02-29 10:00:00");
        let x = parse_interval("1 day 2 hours").unwrap();
        assert_eq!(shown(add_to_timestamp(t, &x).unwrap()), "2024-02-01 12:00:00");
        assert_eq!(
            shown(add_to_timestamp(t, &x.negate().unwrap()).unwrap()),
            "2024-01-30 08:00:00"
        );
        let b = crate::datetime::parse_timestamp("2024-01-30 09:00:00").unwrap();
        assert_eq!(interval_text(&Interval::between(t, b).unwrap()), "1 day 01:00:00");
        assert_eq!(interval_text(&Interval::between(b, t).unwrap()), "-1 days -01:00:00");
        assert_eq!(month.compare(&parse_interval("30 days").unwrap()), Ordering::Equal);
        assert_eq!(
            interval_text(&parse_interval("1 mon 1 day").unwrap().scale(1.5).unwrap()),
            "1 mon 16 days 12:00:00"
        );
        assert_eq!(parse_interval("1 day").unwrap().epoch_seconds(), 86_400.0);
    }
}
