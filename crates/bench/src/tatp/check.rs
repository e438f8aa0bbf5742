//! TATP's invariants, checked after every run (the description states the population's
//! rules, not conditions to check; these are they, and what the run may change). Each but
//! the last two is a query counting what breaks it, run once per range of 10,000
//! subscribers (the violations added up), so that no statement reads more than a range:
//!
//! - every subscriber has 1 to 4 access-info rows;
//! - every subscriber has 1 to 4 special facilities;
//! - every call forwarding belongs to a special facility, starts at 0, 8 or 16 h and ends 1
//!   to 8 h later;
//! - SUBSCRIBER holds the population;
//! - CALL_FORWARDING holds the rows it held before the run, plus those the run's
//!   Insert-Call-Forwardings were told they inserted, less those its
//!   Delete-Call-Forwardings deleted.

use std::time::Instant;

use tokio_postgres::Client;

use crate::tpcc::check::CheckResult;
use crate::ycsb::server::describe;

/// Subscribers per checking query.
const RANGE: i32 = 10_000;

/// (name, what it states, the query counting its violations among subscribers `$1` to `$2`
/// excluded).
const PER_RANGE: &[(&str, &str, &str)] = &[
    (
        "T1",
        "every subscriber has 1 to 4 access-info rows",
        "SELECT count(*) FROM subscriber LEFT JOIN (SELECT s_id AS a_s_id, count(*) AS n FROM access_info \
         WHERE s_id >= $1 AND s_id < $2 GROUP BY s_id) a ON a.a_s_id = subscriber.s_id \
         WHERE subscriber.s_id >= $1 AND subscriber.s_id < $2 AND (a.n IS NULL OR a.n > 4)",
    ),
    (
        "T2",
        "every subscriber has 1 to 4 special facilities",
        "SELECT count(*) FROM subscriber LEFT JOIN (SELECT s_id AS f_s_id, count(*) AS n FROM special_facility \
         WHERE s_id >= $1 AND s_id < $2 GROUP BY s_id) f ON f.f_s_id = subscriber.s_id \
         WHERE subscriber.s_id >= $1 AND subscriber.s_id < $2 AND (f.n IS NULL OR f.n > 4)",
    ),
    (
        "T3",
        "every call forwarding has its facility, starts at 0, 8 or 16 and ends 1 to 8 h later",
        "SELECT count(*) FROM call_forwarding cf LEFT JOIN special_facility sf \
         ON sf.s_id = cf.s_id AND sf.sf_type = cf.sf_type WHERE cf.s_id >= $1 AND cf.s_id < $2 \
         AND (sf.s_id IS NULL OR cf.start_time NOT IN (0, 8, 16) OR cf.end_time <= cf.start_time \
         OR cf.end_time > cf.start_time + 8)",
    ),
];

pub const SUBSCRIBERS: &str = "SELECT count(*) FROM subscriber";
pub const FORWARDINGS: &str = "SELECT count(*) FROM call_forwarding";

/// Each per-range query: its condition's index, its text and its parameters (`$1`, `$2`).
pub(crate) fn queries(subscribers: u32) -> impl Iterator<Item = (usize, &'static str, [i32; 2])> {
    let top = subscribers as i32 + 1;
    PER_RANGE.iter().enumerate().flat_map(move |(i, (_, _, sql))| {
        (1..top)
            .step_by(RANGE as usize)
            .map(move |low| (i, *sql, [low, (low + RANGE).min(top)]))
    })
}

/// The results, given each per-range query's count and the rows SUBSCRIBER and
/// CALL_FORWARDING hold (or the errors counting them).
pub(crate) fn results(
    per_range: Vec<(usize, Result<i64, String>, f64)>,
    expected: &Expected,
    subscribers: Result<i64, String>,
    forwardings: Result<i64, String>,
) -> Vec<CheckResult> {
    let mut out: Vec<CheckResult> = PER_RANGE
        .iter()
        .map(|(name, condition, _)| CheckResult::holding(name, condition))
        .collect();
    for (i, count, seconds) in per_range {
        out[i].add(count, seconds);
    }
    let totals = [
        (
            "SUBSCRIBER holds the population's",
            subscribers,
            expected.subscribers as i64,
        ),
        ("CALL_FORWARDING holds the", forwardings, expected.forwardings),
    ];
    for (n, (condition, rows, expected)) in totals.into_iter().enumerate() {
        let (violations, error) = match rows {
            Ok(r) => (Some((r - expected).abs()), None),
            Err(e) => (None, Some(e)),
        };
        out.push(CheckResult {
            clause: format!("T{}", PER_RANGE.len() + 1 + n),
            condition: format!("{condition} {expected} rows"),
            violations,
            error,
            seconds: 0.0,
        });
    }
    out
}

/// What the totals are checked against: the population, and CALL_FORWARDING's rows.
pub struct Expected {
    pub subscribers: u32,
    pub forwardings: i64,
}

/// Checks the invariants over the wire.
pub async fn over_wire(client: &Client, expected: &Expected) -> Vec<CheckResult> {
    let mut prepared = Vec::new();
    for (_, _, sql) in PER_RANGE {
        prepared.push(client.prepare(sql).await.map_err(|e| describe(&e)));
    }
    let mut per_range = Vec::new();
    for (i, _, [low, high]) in queries(expected.subscribers) {
        let start = Instant::now();
        let count = match &prepared[i] {
            Ok(st) => client
                .query_one(st, &[&low, &high])
                .await
                .map(|r| r.get::<_, i64>(0))
                .map_err(|e| describe(&e)),
            Err(e) => Err(e.clone()),
        };
        per_range.push((i, count, start.elapsed().as_secs_f64()));
    }
    let subscribers = count_over_wire(client, SUBSCRIBERS).await;
    let forwardings = count_over_wire(client, FORWARDINGS).await;
    results(per_range, expected, subscribers, forwardings)
}

/// A count over the wire.
pub async fn count_over_wire(client: &Client, sql: &str) -> Result<i64, String> {
    client
        .query_one(sql, &[])
        .await
        .map(|r| r.get::<_, i64>(0))
        .map_err(|e| describe(&e))
}

/// Checks the invariants with `count` (voter's [`Count`](crate::voter::check::Count)).
pub fn with(count: crate::voter::check::Count<'_>, expected: &Expected) -> Vec<CheckResult> {
    let per_range = queries(expected.subscribers)
        .map(|(i, sql, [low, high])| {
            let start = Instant::now();
            let n = count(sql, vec![low as i64, high as i64]);
            (i, n, start.elapsed().as_secs_f64())
        })
        .collect();
    let subscribers = count(SUBSCRIBERS, Vec::new());
    let forwardings = count(FORWARDINGS, Vec::new());
    results(per_range, expected, subscribers, forwardings)
}
