//! TPC-C's consistency conditions (clause 3.3.2), checked after every run: each is a query
//! that counts the warehouses, districts, orders or customers violating it, so 0 is a pass.
//! Conditions 1 to 10 and 12; 11 holds only right after the load and is not checked.

use serde::Serialize;
use tokio_postgres::Client;

use crate::ycsb::server::describe;

/// (clause, what it states, the query counting its violations).
///
/// The per-order and per-customer conditions (6, 10, 12) join each order or customer to
/// the grouping of its rows (a LEFT JOIN: a customer with no rows must add up to zero), and
/// they and the joins of every order (5, 7) are checked one district at a time
/// ([`PER_DISTRICT`]: `$1` the warehouse, `$2` the district, the violations added up): a
/// derived table or a set operation is held whole while its query reads it, so over a
/// whole database grown by a run they needed more than one statement's working memory
/// (54000 on Permafrost after 30 s of stored procedures in a 1 GiB budget). A grouping
/// spills, and the derived tables here hold one row per order or customer of a district;
/// the UNION ALL of a district's orders and order lines these conditions used before held
/// 528,000 rows at 8x a 256 MiB budget, past 64 MiB (Permafrost holds a set operation's
/// rows within `work_mem`).
pub const CONDITIONS: &[(&str, &str, &str)] = &[
    (
        "3.3.2.1",
        "W_YTD = sum(D_YTD) of its districts",
        "SELECT count(*) FROM warehouse JOIN (SELECT d_w_id, sum(d_ytd) AS s FROM district GROUP BY d_w_id) d \
         ON d.d_w_id = w_id WHERE w_ytd <> d.s",
    ),
    (
        "3.3.2.2",
        "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district",
        "SELECT count(*) FROM district \
         JOIN (SELECT o_w_id, o_d_id, max(o_id) AS m FROM orders GROUP BY o_w_id, o_d_id) o \
         ON o.o_w_id = d_w_id AND o.o_d_id = d_id \
         LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) AS m FROM new_order GROUP BY no_w_id, no_d_id) n \
         ON n.no_w_id = d_w_id AND n.no_d_id = d_id \
         WHERE d_next_o_id - 1 <> o.m OR (n.m IS NOT NULL AND n.m <> o.m)",
    ),
    (
        "3.3.2.3",
        "max(NO_O_ID) - min(NO_O_ID) + 1 = rows of NEW_ORDER per district",
        "SELECT count(*) FROM (SELECT max(no_o_id) - min(no_o_id) + 1 - count(*) AS gap FROM new_order \
         GROUP BY no_w_id, no_d_id) n WHERE gap <> 0",
    ),
    (
        "3.3.2.4",
        "sum(O_OL_CNT) = rows of ORDER_LINE per district",
        "SELECT count(*) FROM (SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS s FROM orders GROUP BY o_w_id, o_d_id) o \
         JOIN (SELECT ol_w_id, ol_d_id, count(*) AS c FROM order_line GROUP BY ol_w_id, ol_d_id) l \
         ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id WHERE o.s <> l.c",
    ),
    (
        "3.3.2.5",
        "O_CARRIER_ID is null exactly for the orders in NEW_ORDER",
        "SELECT count(*) FROM orders LEFT JOIN new_order \
         ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id \
         WHERE o_w_id = $1 AND o_d_id = $2 \
         AND ((o_carrier_id IS NULL AND no_o_id IS NULL) OR (o_carrier_id IS NOT NULL AND no_o_id IS NOT NULL))",
    ),
    (
        "3.3.2.6",
        "O_OL_CNT = the order's rows of ORDER_LINE",
        "SELECT count(*) FROM orders LEFT JOIN \
         (SELECT ol_o_id, count(*) AS n FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 GROUP BY ol_o_id) l \
         ON l.ol_o_id = o_id \
         WHERE o_w_id = $1 AND o_d_id = $2 AND o_ol_cnt <> coalesce(l.n, 0)",
    ),
    (
        "3.3.2.7",
        "OL_DELIVERY_D is null exactly when its order's O_CARRIER_ID is",
        "SELECT count(*) FROM orders JOIN order_line \
         ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
         WHERE o_w_id = $1 AND o_d_id = $2 \
         AND ((o_carrier_id IS NULL AND ol_delivery_d IS NOT NULL) OR (o_carrier_id IS NOT NULL AND ol_delivery_d IS NULL))",
    ),
    (
        "3.3.2.8",
        "W_YTD = sum(H_AMOUNT) of its history",
        "SELECT count(*) FROM warehouse JOIN (SELECT h_w_id, sum(h_amount) AS s FROM history GROUP BY h_w_id) h \
         ON h.h_w_id = w_id WHERE w_ytd <> h.s",
    ),
    (
        "3.3.2.9",
        "D_YTD = sum(H_AMOUNT) of its history",
        "SELECT count(*) FROM district \
         JOIN (SELECT h_w_id, h_d_id, sum(h_amount) AS s FROM history GROUP BY h_w_id, h_d_id) h \
         ON h.h_w_id = d_w_id AND h.h_d_id = d_id WHERE d_ytd <> h.s",
    ),
    (
        "3.3.2.10",
        "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT) per customer",
        "SELECT count(*) FROM customer \
         LEFT JOIN (SELECT o_c_id, sum(ol_amount) AS s FROM orders JOIN order_line \
            ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
            WHERE o_w_id = $1 AND o_d_id = $2 AND ol_delivery_d IS NOT NULL GROUP BY o_c_id) d ON d.o_c_id = c_id \
         LEFT JOIN (SELECT h_c_id, sum(h_amount) AS s FROM history \
            WHERE h_c_w_id = $1 AND h_c_d_id = $2 GROUP BY h_c_id) h ON h.h_c_id = c_id \
         WHERE c_w_id = $1 AND c_d_id = $2 AND c_balance <> coalesce(d.s, 0) - coalesce(h.s, 0)",
    ),
    (
        "3.3.2.12",
        "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT) per customer",
        "SELECT count(*) FROM customer \
         LEFT JOIN (SELECT o_c_id, sum(ol_amount) AS s FROM orders JOIN order_line \
            ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
            WHERE o_w_id = $1 AND o_d_id = $2 AND ol_delivery_d IS NOT NULL GROUP BY o_c_id) d ON d.o_c_id = c_id \
         WHERE c_w_id = $1 AND c_d_id = $2 AND c_balance + c_ytd_payment <> coalesce(d.s, 0)",
    ),
];

/// The clauses whose query is run once per district, with the warehouse and district as
/// `$1` and `$2`.
pub const PER_DISTRICT: [&str; 5] = ["3.3.2.5", "3.3.2.6", "3.3.2.7", "3.3.2.10", "3.3.2.12"];

/// The districts, as (warehouse, district), of a database whose DISTRICT table is read
/// by `SELECT d_w_id, d_id FROM district`.
pub const DISTRICTS_QUERY: &str = "SELECT d_w_id, d_id FROM district ORDER BY d_w_id, d_id";

/// One condition's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub clause: String,
    pub condition: String,
    /// Rows violating it (0: it holds); None when the query failed.
    pub violations: Option<i64>,
    /// The query's error, when it failed.
    pub error: Option<String>,
    pub seconds: f64,
}

impl CheckResult {
    pub fn passed(&self) -> bool {
        self.violations == Some(0)
    }

    /// A condition's result so far: it holds (nothing counted yet).
    pub fn holding(clause: &str, condition: &str) -> CheckResult {
        CheckResult {
            clause: clause.to_string(),
            condition: condition.to_string(),
            violations: Some(0),
            error: None,
            seconds: 0.0,
        }
    }

    /// Adds one of its queries' count (or error) and time, for a condition checked by
    /// several queries whose violations add up.
    pub fn add(&mut self, count: Result<i64, String>, seconds: f64) {
        self.seconds += seconds;
        match count {
            Ok(n) => self.violations = self.violations.map(|v| v + n),
            Err(e) => {
                self.violations = None;
                self.error.get_or_insert(e);
            }
        }
    }

    /// The lines a report prints of `checks`: how many of them hold (`what`: "conditions",
    /// "invariants"), then each that does not, with its violations or its error.
    pub fn summary(checks: &[CheckResult], what: &str) -> String {
        let passed = checks.iter().filter(|c| c.passed()).count();
        let mut s = format!("{what}: {passed} of {} hold\n", checks.len());
        for c in checks.iter().filter(|c| !c.passed()) {
            match (&c.violations, &c.error) {
                (_, Some(e)) => s.push_str(&format!("  {} {}: could not check: {e}\n", c.clause, c.condition)),
                (Some(v), None) => s.push_str(&format!("  {} {}: {v} violations\n", c.clause, c.condition)),
                (None, None) => {}
            }
        }
        s
    }
}

/// Checks every condition over the PostgreSQL protocol.
pub async fn check(client: &Client) -> Vec<CheckResult> {
    let districts = match client.query(DISTRICTS_QUERY, &[]).await {
        Ok(rows) => Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect()),
        Err(e) => Err(describe(&e)),
    };
    let count = async |sql: &str, params: &[i32]| {
        let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
            .iter()
            .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
            .collect();
        match client.query_one(sql, &params).await {
            Ok(row) => Ok(row.get::<_, i64>(0)),
            Err(e) => Err(describe(&e)),
        }
    };
    check_with(districts, count).await
}

/// Checks every condition, given the districts (warehouse, district) and what runs a
/// condition's query with its parameters and answers its count.
pub async fn check_with(
    districts: Result<Vec<(i32, i32)>, String>,
    mut count: impl AsyncFnMut(&str, &[i32]) -> Result<i64, String>,
) -> Vec<CheckResult> {
    let mut out = Vec::new();
    for (clause, condition, sql) in CONDITIONS {
        let start = std::time::Instant::now();
        let (violations, error) = if PER_DISTRICT.contains(clause) {
            match &districts {
                Err(e) => (None, Some(e.clone())),
                Ok(ds) => {
                    let mut n = 0;
                    let mut error = None;
                    for &(w, d) in ds {
                        match count(sql, &[w, d]).await {
                            Ok(v) => n += v,
                            Err(e) => {
                                error = Some(e);
                                break;
                            }
                        }
                    }
                    (error.is_none().then_some(n), error)
                }
            }
        } else {
            match count(sql, &[]).await {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(e)),
            }
        };
        out.push(CheckResult {
            clause: clause.to_string(),
            condition: condition.to_string(),
            violations,
            error,
            seconds: start.elapsed().as_secs_f64(),
        });
    }
    out
}
