//! The five transactions (clauses 2.4 to 2.8) as interactive transactions over the wire:
//! one statement per round trip inside BEGIN ... COMMIT, with statements prepared once per
//! connection ([`Session`]: PostgreSQL's driver for Permafrost and PostgreSQL 15, MariaDB's
//! for MariaDB). The logic is written once; each system gets its dialect's text of each
//! statement. Under PostgreSQL's READ COMMITTED and InnoDB's REPEATABLE READ the reads
//! that a write depends on take their rows FOR UPDATE and the counters are incremented in
//! place, so the consistency conditions hold there too.

use super::inputs::{Customer, Input};
use super::options::DISTRICTS;
pub use super::session::Failure;
use super::session::{Cells, Param, Result, Session, St};
use super::sql;

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Committed,
    /// A New-Order with an unused item, rolled back as clause 2.4.2.3 asks.
    RolledBack,
}

/// A Delivery's districts with no undelivered order (clause 2.7.4.2: skipped, counted).
#[derive(Debug, Default, Clone, Copy)]
pub struct Done {
    pub ended: Option<Ended>,
    pub skipped_deliveries: u32,
}

use Param::{Int, Text};

/// The one row a statement must return (the population guarantees it).
async fn one<S: Session>(s: &mut S, st: St, params: &[Param<'_>]) -> Result<S::Row> {
    s.query(st, params)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| Failure::Missing(format!("statement {} of the transaction returned no row", st.0)))
}

/// An integer column that must not be NULL.
fn int<R: Cells>(row: &R, i: usize) -> Result<i64> {
    row.int(i)?
        .ok_or_else(|| Failure::Missing(format!("column {i} is NULL")))
}

/// Runs one attempt of `input` in a transaction block of its own (rolled back when a
/// statement fails).
pub async fn run<S: Session>(s: &mut S, input: &Input) -> Result<Done> {
    s.begin().await?;
    let mut done = Done::default();
    let body = match input {
        Input::NewOrder { w, d, c, lines } => new_order(s, *w, *d, *c, lines).await,
        Input::Payment {
            w,
            d,
            c_w,
            c_d,
            customer,
            cents,
        } => payment(s, (*w, *d), (*c_w, *c_d), customer, *cents).await,
        Input::OrderStatus { w, d, customer } => order_status(s, *w, *d, customer).await,
        Input::Delivery { w, carrier } => delivery(s, *w, *carrier).await.map(|skipped| {
            done.skipped_deliveries = skipped;
            Ended::Committed
        }),
        Input::StockLevel { w, d, threshold } => stock_level(s, *w, *d, *threshold).await,
    };
    let ended = match body {
        Ok(ended) => ended,
        Err(e) => {
            // The block is over whatever the rollback answers; the statement's error is
            // the one to report.
            let _ = s.end(false).await;
            return Err(e);
        }
    };
    s.end(ended == Ended::Committed).await?;
    done.ended = Some(ended);
    Ok(done)
}

async fn new_order<S: Session>(s: &mut S, w: i32, d: i32, c: i32, lines: &[(i32, i32, i32)]) -> Result<Ended> {
    one(s, St::NO_CUSTOMER, &[Int(w), Int(d), Int(c)]).await?;
    let o_id = int(&one(s, St::NO_DISTRICT, &[Int(w), Int(d)]).await?, 0)? as i32;
    let all_local = lines.iter().all(|&(_, s, _)| s == w) as i32;
    let count = lines.len() as i32;
    let order = [Int(o_id), Int(d), Int(w), Int(c), Int(count), Int(all_local)];
    s.execute(St::NO_ORDER, &order).await?;
    s.execute(St::NO_NEW_ORDER, &[Int(o_id), Int(d), Int(w)]).await?;
    for (n, &(item, supply, qty)) in lines.iter().enumerate() {
        let Some(item_row) = s.query(St::NO_ITEM, &[Int(item)]).await?.into_iter().next() else {
            return Ok(Ended::RolledBack);
        };
        let price = int(&item_row, 0)?;
        let stock = one(s, St::no_stock(d), &[Int(item), Int(supply)]).await?;
        let quantity = int(&stock, 0)?;
        let dist_info = stock.text(2)?;
        let left = sql::stock_left(quantity, qty as i64) as i32;
        let remote = (supply != w) as i32;
        let update = [Int(left), Int(qty), Int(remote), Int(item), Int(supply)];
        s.execute(St::NO_STOCK_UPDATE, &update).await?;
        let amount = (qty as i64 * price) as i32;
        let number = n as i32 + 1;
        let line = [
            Int(o_id),
            Int(d),
            Int(w),
            Int(number),
            Int(item),
            Int(supply),
            Int(qty),
            Int(amount),
            Text(&dist_info),
        ];
        s.execute(St::NO_LINE, &line).await?;
    }
    Ok(Ended::Committed)
}

/// The customer's id: given, or the one in the middle of those with the name, ordered by
/// first name (clause 2.5.2.2). Every last name exists in every district at load (its
/// first thousand customers have them all), so a name nobody has is a database that lost
/// rows.
async fn customer_id<S: Session>(s: &mut S, w: i32, d: i32, customer: &Customer) -> Result<i32> {
    match customer {
        Customer::ById(c) => Ok(*c),
        Customer::ByName(name) => {
            let rows = s.query(St::BY_NAME, &[Int(w), Int(d), Text(name)]).await?;
            if rows.is_empty() {
                return Err(Failure::Missing(format!(
                    "no customer of district {d} of warehouse {w} is named {name}"
                )));
            }
            Ok(int(&rows[(rows.len() - 1) / 2], 0)? as i32)
        }
    }
}

async fn payment<S: Session>(
    s: &mut S,
    (w, d): (i32, i32),
    (c_w, c_d): (i32, i32),
    customer: &Customer,
    cents: i32,
) -> Result<Ended> {
    let w_name = one(s, St::P_WAREHOUSE, &[Int(cents), Int(w)]).await?.text(0)?;
    let d_name = one(s, St::P_DISTRICT, &[Int(cents), Int(w), Int(d)]).await?.text(0)?;
    let c = customer_id(s, c_w, c_d, customer).await?;
    let credit = one(s, St::P_CUSTOMER, &[Int(c_w), Int(c_d), Int(c)]).await?.text(10)?;
    if credit == "BC" {
        let data = one(s, St::P_CUSTOMER_DATA, &[Int(c_w), Int(c_d), Int(c)])
            .await?
            .text(0)?;
        let new = sql::bad_credit_data(
            c as i64,
            (c_w as i64, c_d as i64),
            (w as i64, d as i64),
            cents as i64,
            &data,
        );
        let update = [Int(cents), Text(&new), Int(c_w), Int(c_d), Int(c)];
        s.execute(St::P_UPDATE_BC, &update).await?;
    } else {
        s.execute(St::P_UPDATE, &[Int(cents), Int(c_w), Int(c_d), Int(c)])
            .await?;
    }
    let h_data = format!("{w_name}    {d_name}");
    let history = [Int(c), Int(c_d), Int(c_w), Int(d), Int(w), Int(cents), Text(&h_data)];
    s.execute(St::P_HISTORY, &history).await?;
    Ok(Ended::Committed)
}

async fn order_status<S: Session>(s: &mut S, w: i32, d: i32, customer: &Customer) -> Result<Ended> {
    let c = customer_id(s, w, d, customer).await?;
    one(s, St::OS_CUSTOMER, &[Int(w), Int(d), Int(c)]).await?;
    if let Some(order) = s.query(St::OS_ORDER, &[Int(w), Int(d), Int(c)]).await?.first() {
        let o_id = int(order, 0)? as i32;
        s.query(St::OS_LINES, &[Int(w), Int(d), Int(o_id)]).await?;
    }
    Ok(Ended::Committed)
}

/// Delivers the oldest undelivered order of each district; the districts that had none.
async fn delivery<S: Session>(s: &mut S, w: i32, carrier: i32) -> Result<u32> {
    let mut skipped = 0;
    for d in 1..=DISTRICTS as i32 {
        let Some(oldest) = s.query(St::D_OLDEST, &[Int(w), Int(d)]).await?.into_iter().next() else {
            skipped += 1;
            continue;
        };
        let o_id = int(&oldest, 0)? as i32;
        if s.execute(St::D_DELETE, &[Int(w), Int(d), Int(o_id)]).await? == 0 {
            skipped += 1;
            continue;
        }
        let c = int(
            &one(s, St::D_ORDER, &[Int(carrier), Int(w), Int(d), Int(o_id)]).await?,
            0,
        )? as i32;
        s.execute(St::D_LINES, &[Int(w), Int(d), Int(o_id)]).await?;
        let sum = one(s, St::D_SUM, &[Int(w), Int(d), Int(o_id)]).await?.int(0)?;
        let credit = [Param::Big(sum.unwrap_or(0)), Int(w), Int(d), Int(c)];
        s.execute(St::D_CUSTOMER, &credit).await?;
    }
    Ok(skipped)
}

async fn stock_level<S: Session>(s: &mut S, w: i32, d: i32, threshold: i32) -> Result<Ended> {
    let next = int(&one(s, St::SL_NEXT, &[Int(w), Int(d)]).await?, 0)? as i32;
    one(s, St::SL_COUNT, &[Int(w), Int(d), Int(next), Int(threshold)]).await?;
    Ok(Ended::Committed)
}
