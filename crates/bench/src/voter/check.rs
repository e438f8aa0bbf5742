//! Voter's invariants, checked after every run, each a query counting what breaks it, so
//! that no statement holds more than a few thousand rows however large VOTES has grown:
//!
//! - every vote names a contestant that exists (the invalid ones were refused): one
//!   grouping of VOTES by contestant, the numbers that name nobody counted;
//! - every vote's state is its caller's area code's: one grouping by area code and state,
//!   the pairs that disagree with AREA_CODE_STATE counted;
//! - no caller has more votes than the limit: one grouping by phone number, the callers
//!   over the limit counted (it spills past the statement's working memory on Permafrost;
//!   MariaDB reads it in the order of its index on the number);
//! - VOTES holds exactly the votes accepted: its rows before the run plus those the run's
//!   calls were told were recorded (none lost, none recorded twice).
//!
//! They were once run per area code, with a join per vote: on MariaDB each of the first
//! two's 305 queries read the whole table (55 s per invariant at 800,000 votes), and on
//! Permafrost the third's read each area's evicted votes back through the index (246 s at
//! 12.9 million votes in 256 MiB, against 13.5 s as one grouping).

use std::time::Instant;

use tokio_postgres::Client;

use crate::tpcc::check::CheckResult;
use crate::ycsb::server::describe;

/// What a query's parameters are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Over {
    /// None: it reads the whole table once.
    Table,
    /// The vote limit, as `$1`.
    Limit,
}

/// (name, what it states, the query counting its violations, its parameters).
const QUERIES: &[(&str, &str, &str, Over)] = &[
    (
        "V1",
        "every vote names a contestant (violations: the numbers named that are no contestant's)",
        "SELECT count(*) FROM (SELECT contestant_number FROM votes GROUP BY contestant_number) v \
         LEFT JOIN contestants ON contestants.contestant_number = v.contestant_number \
         WHERE contestants.contestant_number IS NULL",
        Over::Table,
    ),
    (
        "V2",
        "every vote's state is its area code's (violations: the area codes and states that disagree)",
        "SELECT count(*) FROM (SELECT phone_number / 10000000 AS area, state FROM votes \
         GROUP BY phone_number / 10000000, state) v \
         LEFT JOIN area_code_state ON area_code_state.area_code = v.area \
         WHERE v.state <> coalesce(area_code_state.state, 'XX')",
        Over::Table,
    ),
    (
        "V3",
        "no caller has more votes than the limit",
        "SELECT count(*) FROM (SELECT phone_number FROM votes GROUP BY phone_number HAVING count(*) > $1) over_limit",
        Over::Limit,
    ),
];

/// The rows of VOTES.
pub const COUNT: &str = "SELECT count(*) FROM votes";

/// Each query's parameters.
fn ranges(max_votes: i64) -> impl Iterator<Item = (usize, Vec<i64>)> {
    QUERIES.iter().enumerate().flat_map(move |(i, (_, _, _, over))| {
        let params = match over {
            Over::Table => Vec::new(),
            Over::Limit => vec![max_votes],
        };
        std::iter::once((i, params))
    })
}

/// Each query: its invariant's index, its text and its parameters.
pub(crate) fn queries(max_votes: i64) -> impl Iterator<Item = (usize, &'static str, Vec<i64>)> {
    ranges(max_votes).map(|(i, params)| (i, QUERIES[i].2, params))
}

/// The results, given each query's count and the rows VOTES holds against those expected.
pub(crate) fn results(
    counts: Vec<(usize, Result<i64, String>, f64)>,
    total: (Result<i64, String>, i64, f64),
) -> Vec<CheckResult> {
    let mut out: Vec<CheckResult> = QUERIES
        .iter()
        .map(|(name, condition, _, _)| CheckResult::holding(name, condition))
        .collect();
    for (i, count, seconds) in counts {
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
    let mut counts = Vec::new();
    let mut prepared = Vec::new();
    for (_, _, sql, _) in QUERIES {
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
        counts.push((i, count, start.elapsed().as_secs_f64()));
    }
    let start = Instant::now();
    let rows = rows_over_wire(client).await;
    results(counts, (rows, expected, start.elapsed().as_secs_f64()))
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
    let counts = ranges(max_votes)
        .map(|(i, params)| {
            let start = Instant::now();
            let n = count(QUERIES[i].2, params);
            (i, n, start.elapsed().as_secs_f64())
        })
        .collect();
    let start = Instant::now();
    let rows = count(COUNT, Vec::new());
    results(counts, (rows, expected, start.elapsed().as_secs_f64()))
}
