//! Voter's invariants, checked after every run. Each but the last is a query counting the
//! votes that break it, run once per area code over the range of its phone numbers (the
//! violations added up), so that no statement reads more than an area code's votes
//! however large VOTES has grown:
//!
//! - every vote names a contestant that exists (the invalid ones were refused);
//! - every vote's state is its caller's area code's;
//! - no caller has more votes than the limit;
//! - VOTES holds exactly the votes accepted: its rows before the run plus those the run's
//!   calls were told were recorded (none lost, none recorded twice).

use std::time::Instant;

use tokio_postgres::Client;

use super::data::{NUMBERS_PER_AREA, area_codes};
use crate::tpcc::check::CheckResult;
use crate::ycsb::server::describe;

/// (name, what it states, the query counting its violations in the area code whose phone
/// numbers are `$1` to `$2` (excluded), whether it takes the vote limit as `$3`).
const PER_AREA: &[(&str, &str, &str, bool)] = &[
    (
        "V1",
        "every vote names a contestant",
        "SELECT count(*) FROM votes LEFT JOIN contestants ON contestants.contestant_number = votes.contestant_number \
         WHERE votes.phone_number >= $1 AND votes.phone_number < $2 AND contestants.contestant_number IS NULL",
        false,
    ),
    (
        "V2",
        "every vote's state is its area code's",
        "SELECT count(*) FROM votes LEFT JOIN area_code_state ON area_code_state.area_code = votes.phone_number / 10000000 \
         WHERE votes.phone_number >= $1 AND votes.phone_number < $2 AND votes.state <> coalesce(area_code_state.state, 'XX')",
        false,
    ),
    (
        "V3",
        "no caller has more votes than the limit",
        "SELECT count(*) FROM (SELECT phone_number FROM votes WHERE phone_number >= $1 AND phone_number < $2 \
         GROUP BY phone_number HAVING count(*) > $3) over_limit",
        true,
    ),
];

/// The rows of VOTES.
pub const COUNT: &str = "SELECT count(*) FROM votes";

/// Each per-area query's parameters, one list per area code.
fn ranges(max_votes: i64) -> impl Iterator<Item = (usize, Vec<i64>)> {
    PER_AREA.iter().enumerate().flat_map(move |(i, (_, _, _, limit))| {
        area_codes().map(move |(code, _)| {
            let low = code as i64 * NUMBERS_PER_AREA;
            let mut params = vec![low, low + NUMBERS_PER_AREA];
            if *limit {
                params.push(max_votes);
            }
            (i, params)
        })
    })
}

/// Each per-area query: its condition's index, its text and its parameters.
pub(crate) fn queries(max_votes: i64) -> impl Iterator<Item = (usize, &'static str, Vec<i64>)> {
    ranges(max_votes).map(|(i, params)| (i, PER_AREA[i].2, params))
}

/// The results, given each query's count and the rows VOTES holds against those expected.
pub(crate) fn results(
    per_area: Vec<(usize, Result<i64, String>, f64)>,
    total: (Result<i64, String>, i64, f64),
) -> Vec<CheckResult> {
    let mut out: Vec<CheckResult> = PER_AREA
        .iter()
        .map(|(name, condition, _, _)| CheckResult::holding(name, condition))
        .collect();
    for (i, count, seconds) in per_area {
        out[i].add(count, seconds);
    }
    let (rows, expected, seconds) = total;
    let (violations, error) = match rows {
        Ok(n) => (Some((n - expected).abs()), None),
        Err(e) => (None, Some(e)),
    };
    out.push(CheckResult {
        clause: "V4".into(),
        condition: format!("VOTES holds the {expected} votes accepted"),
        violations,
        error,
        seconds,
    });
    out
}

/// Checks the invariants over the wire; `expected` is the rows VOTES must hold.
pub async fn over_wire(client: &Client, max_votes: i64, expected: i64) -> Vec<CheckResult> {
    let mut per_area = Vec::new();
    let mut prepared = Vec::new();
    for (_, _, sql, _) in PER_AREA {
        prepared.push(client.prepare(sql).await.map_err(|e| describe(&e)));
    }
    for (i, params) in ranges(max_votes) {
        let start = Instant::now();
        let count = match &prepared[i] {
            Ok(st) => {
                let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
                    .collect();
                client
                    .query_one(st, &refs)
                    .await
                    .map(|r| r.get::<_, i64>(0))
                    .map_err(|e| describe(&e))
            }
            Err(e) => Err(e.clone()),
        };
        per_area.push((i, count, start.elapsed().as_secs_f64()));
    }
    let start = Instant::now();
    let rows = rows_over_wire(client).await;
    results(per_area, (rows, expected, start.elapsed().as_secs_f64()))
}

/// The rows of VOTES, over the wire.
pub async fn rows_over_wire(client: &Client) -> Result<i64, String> {
    client
        .query_one(COUNT, &[])
        .await
        .map(|r| r.get::<_, i64>(0))
        .map_err(|e| describe(&e))
}

/// Runs a counting query with its parameters: its count, or the error's text.
pub type Count<'a> = &'a dyn Fn(&str, Vec<i64>) -> Result<i64, String>;

/// Checks the invariants with `count`.
pub fn with(count: Count<'_>, max_votes: i64, expected: i64) -> Vec<CheckResult> {
    let per_area = ranges(max_votes)
        .map(|(i, params)| {
            let start = Instant::now();
            let n = count(PER_AREA[i].2, params);
            (i, n, start.elapsed().as_secs_f64())
        })
        .collect();
    let start = Instant::now();
    let rows = count(COUNT, Vec::new());
    results(per_area, (rows, expected, start.elapsed().as_secs_f64()))
}
