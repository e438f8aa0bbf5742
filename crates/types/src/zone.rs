//! Time zones by name (`AT TIME ZONE 'Europe/Paris'`): the IANA database bundled into the
//! binary (jiff's copy, so a machine without /usr/share/zoneinfo reads the same), `UTC`
//! and its spellings, and PostgreSQL's numeric zones (`'+05'`, `'-03:30'`: POSIX-style,
//! so hours WEST of Greenwich are positive, as PostgreSQL reads them in AT TIME ZONE).

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::{Disambiguation, TimeZone};

use crate::datetime::TimestampError;

/// A zone a timestamp can be moved to.
#[derive(Debug, Clone)]
pub struct Zone(TimeZone);

impl Zone {
    /// The zone named `name`; `TimestampError::Zone` names an unknown one (22023).
    pub fn named(name: &str) -> Result<Zone, TimestampError> {
        let n = name.trim();
        if ["utc", "gmt", "z", "zulu", "uct", "universal"].contains(&n.to_ascii_lowercase().as_str()) {
            return Ok(Zone(TimeZone::UTC));
        }
        if let Some(seconds) = posix_offset(n) {
            let offset = jiff::tz::Offset::from_seconds(seconds).map_err(|_| TimestampError::Zone(n.to_string()))?;
            return Ok(Zone(TimeZone::fixed(offset)));
        }
        TimeZone::get(n)
            .map(Zone)
            .map_err(|_| TimestampError::Zone(n.to_string()))
    }

    /// The wall-clock time in this zone of the moment `utc_micros` (microseconds since
    /// the epoch, UTC), as microseconds since the epoch of a zoneless timestamp.
    pub fn to_local(&self, utc_micros: i64) -> Result<i64, TimestampError> {
        let ts = Timestamp::from_microsecond(utc_micros).map_err(|_| TimestampError::OutOfRange)?;
        let offset = self.0.to_offset(ts);
        Ok(utc_micros + i64::from(offset.seconds()) * 1_000_000)
    }

    /// The moment at which this zone's clocks show `local_micros` (a zoneless timestamp);
    /// a time skipped by a change of offset is read with the offset before it, a time
    /// shown twice as its first showing.
    pub fn to_utc(&self, local_micros: i64) -> Result<i64, TimestampError> {
        let ts = Timestamp::from_microsecond(local_micros).map_err(|_| TimestampError::OutOfRange)?;
        let civil: DateTime = TimeZone::UTC.to_datetime(ts);
        let moment = self
            .0
            .to_ambiguous_timestamp(civil)
            .disambiguate(Disambiguation::Compatible)
            .map_err(|_| TimestampError::OutOfRange)?;
        Ok(moment.as_microsecond())
    }
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
    use crate::datetime::{parse_timestamp, timestamp_text};

    #[test]
    fn iana_zones_move_moments_to_wall_clocks_and_back() {
        let paris = Zone::named("Europe/Paris").unwrap();
        // 2024-07-01 12:00 UTC is 14:00 in Paris (summer time); January is +01.
        let summer = parse_timestamp("2024-07-01 12:00:00").unwrap();
        assert_eq!(timestamp_text(paris.to_local(summer).unwrap()), "2024-07-01 14:00:00");
        let winter = parse_timestamp("2024-01-01 12:00:00").unwrap();
        assert_eq!(timestamp_text(paris.to_local(winter).unwrap()), "2024-01-01 13:00:00");
        assert_eq!(paris.to_utc(paris.to_local(summer).unwrap()).unwrap(), summer);
        // 02:30 on the spring-forward night does not exist: read with the offset before (+01).
        let gap = parse_timestamp("2024-03-31 02:30:00").unwrap();
        assert_eq!(timestamp_text(paris.to_utc(gap).unwrap()), "2024-03-31 01:30:00");
    }

    #[test]
    fn numeric_zones_are_posix_style() {
        let t = parse_timestamp("2024-01-01 12:00:00").unwrap();
        assert_eq!(
            timestamp_text(Zone::named("+05").unwrap().to_local(t).unwrap()),
            "2024-01-01 07:00:00"
        );
        assert_eq!(
            timestamp_text(Zone::named("-03:30").unwrap().to_local(t).unwrap()),
            "2024-01-01 15:30:00"
        );
        assert_eq!(Zone::named("utc").unwrap().to_local(t).unwrap(), t);
        assert!(matches!(Zone::named("Mars/Olympus"), Err(TimestampError::Zone(_))));
    }
}
