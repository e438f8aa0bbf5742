//! Time zones: the IANA database bundled into the binary (jiff's copy, so a machine
//! without /usr/share/zoneinfo reads the same), `UTC` and its spellings, and PostgreSQL's
//! numeric zones (`'+05'`, `'-03:30'`: POSIX-style, so hours WEST of Greenwich are
//! positive, as PostgreSQL reads them in AT TIME ZONE and SET TIME ZONE).
//!
//! The *session zone* is the TimeZone of the session whose statement is running, as
//! PostgreSQL's `session_timezone`: a `timestamptz` is a moment (microseconds since the
//! epoch, UTC) and the session zone decides how it is written and read as text, converted
//! to and from `timestamp`, `date` and `time`, truncated, and moved by days and months.
//! Whoever runs a statement sets it for the statement's thread with [`SessionZone::set`]
//! (the partition thread from the transaction's request or log record, the server from
//! the session around its planning and its encoding of rows); where nobody set it, it is
//! UTC. The guard is not `Send`, so it cannot be held across an `await`.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, TimeZone};

/// A zone a timestamp can be moved to (one pointer: requests and records carry it).
#[derive(Debug, Clone)]
pub struct Zone(Arc<Named>);

#[derive(Debug)]
struct Named {
    tz: TimeZone,
    /// Its name as SHOW TimeZone prints it.
    name: Box<str>,
}

impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        self.0.name == other.0.name
    }
}

impl Zone {
    fn new(tz: TimeZone, name: &str) -> Zone {
        Zone(Arc::new(Named { tz, name: name.into() }))
    }

    /// UTC.
    pub fn utc() -> Zone {
        Zone::new(TimeZone::UTC, "UTC")
    }

    /// The zone named `name`; `None` for a name it does not know.
    pub fn named(name: &str) -> Option<Zone> {
        let n = name.trim();
        if is_utc_name(n) {
            return Some(Zone::utc());
        }
        if let Some(seconds) = posix_offset(n) {
            let offset = jiff::tz::Offset::from_seconds(seconds).ok()?;
            return Some(Zone::new(TimeZone::fixed(offset), n));
        }
        // PostgreSQL's name of a fixed offset (`<+05:30>-05:30`): the part after `>` is
        // its POSIX offset (hours west).
        if let Some(rest) = n.strip_prefix('<').and_then(|r| r.split_once('>')).map(|(_, p)| p)
            && let Some(seconds) = posix_offset(rest)
        {
            let offset = jiff::tz::Offset::from_seconds(seconds).ok()?;
            return Some(Zone::new(TimeZone::fixed(offset), n));
        }
        if let Ok(tz) = TimeZone::get(n) {
            let name = tz.iana_name().unwrap_or(n).to_string();
            return Some(Zone::new(tz, &name));
        }
        // A POSIX TZ string (`UTC+3`, `<+05>-05`: hours WEST of Greenwich), as PostgreSQL
        // takes one; a plain word is a name it does not know.
        match TimeZone::posix(n) {
            Ok(tz) if n.bytes().any(|b| b.is_ascii_digit()) => Some(Zone::new(tz, n)),
            _ => None,
        }
    }

    /// The zone `seconds` EAST of Greenwich (`SET TIME ZONE 5.5`), named as PostgreSQL
    /// shows it (`<+05:30>-05:30`); `None` beyond PostgreSQL's range (±15 hours).
    pub fn east(seconds: i32) -> Option<Zone> {
        if seconds.abs() > 15 * 3600 {
            return None;
        }
        let offset = jiff::tz::Offset::from_seconds(seconds).ok()?;
        let shown = offset_text(seconds, false);
        let posix = offset_text(-seconds, false);
        Some(Zone::new(TimeZone::fixed(offset), &format!("<{shown}>{posix}")))
    }

    /// Its name, as SHOW TimeZone prints it (`America/New_York`, `UTC`, `+05`).
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Whether it is UTC under any spelling (no offset, ever).
    pub fn is_utc(&self) -> bool {
        self.0.tz == TimeZone::UTC
    }

    /// The zone's offset EAST of UTC, in seconds, at the moment `utc_micros`. Moments
    /// outside the years jiff knows (before -9999, after 9999) take the offset of its
    /// nearest one, as PostgreSQL takes the first and last rules of a zone.
    pub fn offset_at(&self, utc_micros: i64) -> i32 {
        self.0.tz.to_offset(clamped(utc_micros)).seconds()
    }

    /// The zone's abbreviation at the moment `utc_micros` (`EDT`, `CEST`, `IST`, `+0545`),
    /// as `to_char(..., 'TZ')` writes it.
    pub fn abbreviation_at(&self, utc_micros: i64) -> String {
        let info = self.0.tz.to_offset_info(clamped(utc_micros));
        info.abbreviation().to_string()
    }

    /// The wall-clock time in this zone of the moment `utc_micros` (microseconds since
    /// the epoch, UTC), as microseconds since the epoch of a zoneless timestamp.
    /// `None` past the range of i64.
    pub fn to_local(&self, utc_micros: i64) -> Option<i64> {
        utc_micros.checked_add(i64::from(self.offset_at(utc_micros)) * 1_000_000)
    }

    /// The moment at which this zone's clocks show `local_micros` (a zoneless timestamp),
    /// as PostgreSQL resolves it: a time skipped by a change of offset is read with the
    /// offset before the change, a time shown twice with the offset after it.
    pub fn to_utc(&self, local_micros: i64) -> Option<i64> {
        if self.is_utc() {
            return Some(local_micros);
        }
        let ts = clamped(local_micros);
        let civil: DateTime = TimeZone::UTC.to_datetime(ts);
        let offset = match self.0.tz.to_ambiguous_timestamp(civil).offset() {
            AmbiguousOffset::Unambiguous { offset } => offset,
            AmbiguousOffset::Gap { before, .. } => before,
            AmbiguousOffset::Fold { after, .. } => after,
        };
        local_micros.checked_sub(i64::from(offset.seconds()) * 1_000_000)
    }
}

/// `micros` as a jiff timestamp, clamped to the years it knows.
fn clamped(micros: i64) -> Timestamp {
    let min = Timestamp::MIN.as_microsecond();
    let max = Timestamp::MAX.as_microsecond();
    Timestamp::from_microsecond(micros.clamp(min, max)).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// An offset east of UTC as PostgreSQL writes it after a time: `+05`, `-03:30`,
/// `-04:56:02`; `colon_minutes` writes `+00:00` for a whole hour (JSON's form).
pub fn offset_text(seconds: i32, colon_minutes: bool) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let s = seconds.unsigned_abs();
    let (h, m, sec) = (s / 3600, s / 60 % 60, s % 60);
    match (m, sec) {
        (_, 0) if m != 0 || colon_minutes => format!("{sign}{h:02}:{m:02}"),
        (0, 0) => format!("{sign}{h:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{sec:02}"),
    }
}

thread_local! {
    /// The zone of the statement running on this thread; `None`: UTC.
    static SESSION: RefCell<Option<Zone>> = const { RefCell::new(None) };
}

/// Sets the session zone of this thread until it is dropped (then the one before is back).
#[must_use = "the zone is set only while the guard lives"]
pub struct SessionZone {
    before: Option<Zone>,
    _not_send: PhantomData<*const ()>,
}

impl SessionZone {
    /// Makes `zone` the session zone (`None`, or UTC: UTC).
    pub fn set(zone: Option<&Zone>) -> SessionZone {
        let zone = zone.filter(|z| !z.is_utc()).cloned();
        let before = SESSION.with(|s| std::mem::replace(&mut *s.borrow_mut(), zone));
        SessionZone {
            before,
            _not_send: PhantomData,
        }
    }
}

impl Drop for SessionZone {
    fn drop(&mut self) {
        let before = self.before.take();
        SESSION.with(|s| *s.borrow_mut() = before);
    }
}

/// Runs `f` with the session zone (`None`: UTC).
pub fn with_session<R>(f: impl FnOnce(Option<&Zone>) -> R) -> R {
    SESSION.with(|s| f(s.borrow().as_ref()))
}

/// The session zone (UTC when none is set).
pub fn session() -> Zone {
    with_session(|z| z.cloned()).unwrap_or_else(Zone::utc)
}

/// The wall-clock time in the session zone of the moment `utc_micros`.
pub fn session_local(utc_micros: i64) -> Option<i64> {
    with_session(|z| z.map_or(Some(utc_micros), |z| z.to_local(utc_micros)))
}

/// The moment at which the session zone's clocks show `local_micros`.
pub fn session_utc(local_micros: i64) -> Option<i64> {
    with_session(|z| z.map_or(Some(local_micros), |z| z.to_utc(local_micros)))
}

/// The session zone's offset east of UTC, in seconds, at the moment `utc_micros`.
pub fn session_offset(utc_micros: i64) -> i32 {
    with_session(|z| z.map_or(0, |z| z.offset_at(utc_micros)))
}

/// Whether a zone name is UTC under another spelling.
pub fn is_utc_name(z: &str) -> bool {
    matches!(
        z.to_ascii_lowercase().as_str(),
        "z" | "utc" | "gmt" | "zulu" | "etc/utc" | "etc/gmt" | "etc/zulu" | "universal" | "etc/universal" | "uct"
    )
}

/// A numeric zone (`+05`, `-3`, `+05:30`, `0530`): its offset EAST of UTC in seconds,
/// read POSIX-style as PostgreSQL reads it in AT TIME ZONE (the sign says west).
fn posix_offset(z: &str) -> Option<i32> {
    let (west, rest) = match z.as_bytes().first()? {
        b'+' => (1, &z[1..]),
        b'-' => (-1, &z[1..]),
        b'0'..=b'9' => (1, z),
        _ => return None,
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let num = |s: &str| -> Option<i32> { (!s.is_empty() && s.len() <= 2).then(|| s.parse().ok()).flatten() };
    let (h, m, s) = match parts.as_slice() {
        [hhmm] if hhmm.len() == 4 => (num(&hhmm[..2])?, num(&hhmm[2..])?, 0),
        [h] => (num(h)?, 0, 0),
        [h, m] => (num(h)?, num(m)?, 0),
        [h, m, s] => (num(h)?, num(m)?, num(s)?),
        _ => return None,
    };
    (h <= 15 && m < 60 && s < 60).then(|| -west * ((h * 60 + m) * 60 + s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Microseconds of `seconds` since the epoch (moments and wall-clock times alike).
    fn us(seconds: i64) -> i64 {
        seconds * 1_000_000
    }

    #[test]
    fn iana_zones_move_moments_to_wall_clocks_and_back() {
        let paris = Zone::named("Europe/Paris").unwrap();
        // 2024-07-01 12:00 UTC is 14:00 in Paris (summer time); January is +01.
        let summer = us(1_719_835_200);
        assert_eq!(paris.to_local(summer), Some(us(1_719_842_400)));
        let winter = us(1_704_110_400);
        assert_eq!(paris.to_local(winter), Some(us(1_704_114_000)));
        assert_eq!(paris.to_utc(paris.to_local(summer).unwrap()), Some(summer));
        // 02:30 on the spring-forward night does not exist: read with the offset before
        // (+01), 01:30 UTC.
        assert_eq!(paris.to_utc(us(1_711_852_200)), Some(us(1_711_848_600)));
        // 02:30 on the fall-back night is shown twice: read with the offset after (+01).
        assert_eq!(paris.offset_at(paris.to_utc(us(1_729_996_200)).unwrap()), 3600);
    }

    #[test]
    fn zones_are_found_again_by_the_names_they_show() {
        for name in ["America/New_York", "asia/kolkata", "UTC+3", "-03:30", "Etc/GMT+5"] {
            let z = Zone::named(name).unwrap();
            let again = Zone::named(z.name()).unwrap();
            assert_eq!(again.offset_at(0), z.offset_at(0), "{name}");
        }
        assert_eq!(Zone::named("asia/kolkata").unwrap().name(), "Asia/Kolkata");
        let east = Zone::east(5 * 3600 + 1800).unwrap();
        assert_eq!(east.name(), "<+05:30>-05:30");
        assert_eq!(Zone::named(east.name()).unwrap().offset_at(0), 19_800);
        assert_eq!(Zone::east(-3 * 3600).unwrap().name(), "<-03>+03");
        assert_eq!(Zone::named("UTC+3").unwrap().offset_at(0), -3 * 3600);
        assert!(Zone::named("PST").is_none());
        assert!(Zone::named("Mars/Olympus").is_none());
    }

    #[test]
    fn offsets_are_written_as_postgresql_writes_them() {
        assert_eq!(offset_text(0, false), "+00");
        assert_eq!(offset_text(-4 * 3600, false), "-04");
        assert_eq!(offset_text(19_800, false), "+05:30");
        assert_eq!(offset_text(-(4 * 3600 + 56 * 60 + 2), false), "-04:56:02");
        assert_eq!(offset_text(0, true), "+00:00");
    }

    #[test]
    fn numeric_zones_are_posix_style() {
        let t = us(1_704_110_400);
        // '+05' is five hours WEST, '-03:30' three and a half EAST.
        assert_eq!(Zone::named("+05").unwrap().to_local(t), Some(us(1_704_092_400)));
        assert_eq!(Zone::named("-03:30").unwrap().to_local(t), Some(us(1_704_123_000)));
        assert_eq!(Zone::named("utc").unwrap().to_local(t), Some(t));
    }

    #[test]
    fn the_session_zone_is_set_for_a_scope() {
        let t = us(1_719_835_200);
        assert_eq!(session_offset(t), 0);
        {
            let _ny = SessionZone::set(Zone::named("America/New_York").as_ref());
            assert_eq!(session_offset(t), -4 * 3600);
            {
                let _utc = SessionZone::set(None);
                assert_eq!(session_local(t), Some(t));
            }
            assert_eq!(session_local(t), Some(t - us(4 * 3600)));
        }
        assert_eq!(session().name(), "UTC");
    }
}
