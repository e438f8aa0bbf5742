//! The five transactions (clauses 2.4 to 2.8) as interactive transactions over the wire:
//! one statement per round trip inside BEGIN ... COMMIT, through tokio-postgres's extended
//! protocol with statements prepared once per connection. The same text runs on Permafrost
//! and PostgreSQL 15; under PostgreSQL's default READ COMMITTED the reads that a write
//! depends on take their rows FOR UPDATE and the counters are incremented in place, so the
//! consistency conditions hold there too.

use rand::Rng;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio_postgres::{Client, Statement, Transaction};

use super::options::{DISTRICTS, Mix, Scale, TpccOptions};
use super::random::{Deck, NuConstants, TxnType, last_name, nurand};
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

/// The statements of one connection.
pub struct Statements {
    no_customer: Statement,
    no_district: Statement,
    no_order: Statement,
    no_new_order: Statement,
    no_item: Statement,
    no_stock: Vec<Statement>,
    no_stock_update: Statement,
    no_line: Statement,
    p_warehouse: Statement,
    p_district: Statement,
    by_name: Statement,
    p_customer: Statement,
    p_customer_data: Statement,
    p_update_bc: Statement,
    p_update: Statement,
    p_history: Statement,
    os_customer: Statement,
    os_order: Statement,
    os_lines: Statement,
    d_oldest: Statement,
    d_delete: Statement,
    d_order: Statement,
    d_lines: Statement,
    d_sum: Statement,
    d_customer: Statement,
    sl_next: Statement,
    sl_count: Statement,
}

impl Statements {
    pub async fn prepare(c: &Client) -> std::result::Result<Statements, tokio_postgres::Error> {
        let mut no_stock = Vec::new();
        for d in 1..=DISTRICTS {
            no_stock.push(c.prepare(&format!("{} FOR UPDATE", sql::no_stock(d))).await?);
        }
        Ok(Statements {
            no_customer: c.prepare(sql::NO_CUSTOMER).await?,
            no_district: c.prepare(sql::NO_DISTRICT).await?,
            no_order: c.prepare(sql::NO_ORDER).await?,
            no_new_order: c.prepare(sql::NO_NEW_ORDER).await?,
            no_item: c.prepare(sql::NO_ITEM).await?,
            no_stock,
            no_stock_update: c.prepare(sql::NO_STOCK_UPDATE).await?,
            no_line: c.prepare(sql::NO_LINE).await?,
            p_warehouse: c.prepare(sql::P_WAREHOUSE).await?,
            p_district: c.prepare(sql::P_DISTRICT).await?,
            by_name: c.prepare(sql::BY_NAME).await?,
            p_customer: c.prepare(&format!("{} FOR UPDATE", sql::P_CUSTOMER)).await?,
            p_customer_data: c.prepare(sql::P_CUSTOMER_DATA).await?,
            p_update_bc: c.prepare(sql::P_UPDATE_BC).await?,
            p_update: c.prepare(sql::P_UPDATE).await?,
            p_history: c.prepare(sql::P_HISTORY).await?,
            os_customer: c.prepare(sql::OS_CUSTOMER).await?,
            os_order: c.prepare(sql::OS_ORDER).await?,
            os_lines: c.prepare(sql::OS_LINES).await?,
            d_oldest: c.prepare(&format!("{} FOR UPDATE", sql::D_OLDEST)).await?,
            d_delete: c.prepare(sql::D_DELETE).await?,
            d_order: c.prepare(sql::D_ORDER).await?,
            d_lines: c.prepare(sql::D_LINES).await?,
            d_sum: c.prepare(sql::D_SUM).await?,
            d_customer: c.prepare(sql::D_CUSTOMER).await?,
            sl_next: c.prepare(sql::SL_NEXT).await?,
            sl_count: c.prepare(sql::SL_COUNT).await?,
        })
    }
}

/// A customer chosen by last name (60 %) or by id (clause 2.5.1.2, 2.6.1.2).
#[derive(Debug, Clone)]
pub enum Customer {
    ById(i32),
    ByName(String),
}

/// One transaction's inputs, drawn before its first attempt so that a retry runs the same
/// transaction.
#[derive(Debug, Clone)]
pub enum Input {
    NewOrder {
        w: i32,
        d: i32,
        c: i32,
        /// (item, supplying warehouse, quantity), sorted by warehouse and item (so that two
        /// New-Orders take their stock rows in one order); the unused item of a rollback last.
        lines: Vec<(i32, i32, i32)>,
    },
    Payment {
        w: i32,
        d: i32,
        c_w: i32,
        c_d: i32,
        customer: Customer,
        cents: i32,
    },
    OrderStatus {
        w: i32,
        d: i32,
        customer: Customer,
    },
    Delivery {
        w: i32,
        carrier: i32,
    },
    StockLevel {
        w: i32,
        d: i32,
        threshold: i32,
    },
}

impl Input {
    pub fn kind(&self) -> TxnType {
        match self {
            Input::NewOrder { .. } => TxnType::NewOrder,
            Input::Payment { .. } => TxnType::Payment,
            Input::OrderStatus { .. } => TxnType::OrderStatus,
            Input::Delivery { .. } => TxnType::Delivery,
            Input::StockLevel { .. } => TxnType::StockLevel,
        }
    }
}

/// What draws a terminal's inputs.
pub struct Inputs {
    pub rng: SmallRng,
    pub deck: Deck,
    pub nu: NuConstants,
    pub scale: Scale,
    pub warehouses: u32,
    /// The terminal's warehouse (clause 2.4.1.1: fixed per terminal) and its district for
    /// Stock-Level (clause 2.8.1.1).
    pub w: u32,
    pub d: u32,
    /// The Looking Glass paper's inputs: 10 local items per order, home customers by id.
    pub looking_glass: bool,
}

impl Inputs {
    /// A terminal's inputs: seeded by its number `n`, bound to warehouse (n mod
    /// warehouses) + 1 and, for Stock-Level, to a district (clause 2.8.1.1).
    pub fn for_terminal(opts: &TpccOptions, nu: NuConstants, n: usize) -> Inputs {
        let looking_glass = opts.mix == Mix::LookingGlass;
        Inputs {
            rng: SmallRng::seed_from_u64(opts.seed ^ (0x7e57 << 32) ^ n as u64),
            deck: if looking_glass {
                Deck::new_order_payment()
            } else {
                Deck::new()
            },
            nu,
            scale: opts.scale,
            warehouses: opts.warehouses,
            w: (n as u32 % opts.warehouses) + 1,
            d: (n as u32 / opts.warehouses % DISTRICTS) + 1,
            looking_glass,
        }
    }

    fn customer_id(&mut self) -> i32 {
        nurand(&mut self.rng, 1023, self.nu.c_id, 1, self.scale.customers) as i32
    }

    fn customer(&mut self) -> Customer {
        if !self.looking_glass && self.rng.random_range(1..=100) <= 60 {
            let n = nurand(&mut self.rng, 255, self.nu.c_last, 0, 999) % self.scale.last_names();
            Customer::ByName(last_name(n))
        } else {
            Customer::ById(self.customer_id())
        }
    }

    /// Another warehouse than the terminal's (there must be one).
    fn other_warehouse(&mut self) -> u32 {
        let o = self.rng.random_range(1..self.warehouses);
        if o >= self.w { o + 1 } else { o }
    }

    pub fn draw(&mut self) -> Input {
        let w = self.w as i32;
        match self.deck.deal(&mut self.rng) {
            TxnType::NewOrder => {
                let d = self.rng.random_range(1..=DISTRICTS) as i32;
                let c = self.customer_id();
                let count = if self.looking_glass {
                    10
                } else {
                    self.rng.random_range(5..=15)
                };
                let rollback = self.rng.random_range(1..=100) == 1;
                let mut lines = Vec::with_capacity(count);
                for _ in 0..count {
                    let item = nurand(&mut self.rng, 8191, self.nu.ol_i_id, 1, self.scale.items) as i32;
                    let supply = if !self.looking_glass && self.warehouses > 1 && self.rng.random_range(1..=100) == 1 {
                        self.other_warehouse()
                    } else {
                        self.w
                    };
                    lines.push((item, supply as i32, self.rng.random_range(1..=10)));
                }
                lines.sort_by_key(|&(i, s, _)| (s, i));
                if rollback {
                    let last = lines.len() - 1;
                    let (_, s, q) = lines.remove(last);
                    lines.push((self.scale.items as i32 + 1, s, q));
                }
                Input::NewOrder { w, d, c, lines }
            }
            TxnType::Payment => {
                let d = self.rng.random_range(1..=DISTRICTS) as i32;
                let (c_w, c_d) = if !self.looking_glass && self.warehouses > 1 && self.rng.random_range(1..=100) <= 15 {
                    (
                        self.other_warehouse() as i32,
                        self.rng.random_range(1..=DISTRICTS) as i32,
                    )
                } else {
                    (w, d)
                };
                Input::Payment {
                    w,
                    d,
                    c_w,
                    c_d,
                    customer: self.customer(),
                    cents: self.rng.random_range(100..=500_000),
                }
            }
            TxnType::OrderStatus => Input::OrderStatus {
                w,
                d: self.rng.random_range(1..=DISTRICTS) as i32,
                customer: self.customer(),
            },
            TxnType::Delivery => Input::Delivery {
                w,
                carrier: self.rng.random_range(1..=10),
            },
            TxnType::StockLevel => Input::StockLevel {
                w,
                d: self.d as i32,
                threshold: self.rng.random_range(10..=20),
            },
        }
    }
}

/// Why an attempt failed: the database refused a statement, or a row the population
/// guarantees was not there.
#[derive(Debug)]
pub enum Failure {
    Db(tokio_postgres::Error),
    Missing(String),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Failure {
        Failure::Db(e)
    }
}

type Result<T> = std::result::Result<T, Failure>;

/// Runs one attempt of `input` in a transaction block of its own.
pub async fn run(client: &mut Client, st: &Statements, input: &Input) -> Result<Done> {
    let tx = client.transaction().await?;
    let mut done = Done::default();
    let ended = match input {
        Input::NewOrder { w, d, c, lines } => new_order(&tx, st, *w, *d, *c, lines).await?,
        Input::Payment {
            w,
            d,
            c_w,
            c_d,
            customer,
            cents,
        } => payment(&tx, st, (*w, *d), (*c_w, *c_d), customer, *cents).await?,
        Input::OrderStatus { w, d, customer } => order_status(&tx, st, *w, *d, customer).await?,
        Input::Delivery { w, carrier } => {
            done.skipped_deliveries = delivery(&tx, st, *w, *carrier).await?;
            Ended::Committed
        }
        Input::StockLevel { w, d, threshold } => {
            let next: i32 = tx.query_one(&st.sl_next, &[w, d]).await?.get(0);
            tx.query_one(&st.sl_count, &[w, d, &next, threshold]).await?;
            Ended::Committed
        }
    };
    match ended {
        Ended::Committed => tx.commit().await?,
        Ended::RolledBack => tx.rollback().await?,
    }
    done.ended = Some(ended);
    Ok(done)
}

async fn new_order(
    tx: &Transaction<'_>,
    st: &Statements,
    w: i32,
    d: i32,
    c: i32,
    lines: &[(i32, i32, i32)],
) -> Result<Ended> {
    tx.query_one(&st.no_customer, &[&w, &d, &c]).await?;
    let o_id: i32 = tx.query_one(&st.no_district, &[&w, &d]).await?.get(0);
    let all_local = lines.iter().all(|&(_, s, _)| s == w) as i32;
    let count = lines.len() as i32;
    tx.execute(&st.no_order, &[&o_id, &d, &w, &c, &count, &all_local])
        .await?;
    tx.execute(&st.no_new_order, &[&o_id, &d, &w]).await?;
    for (n, &(item, supply, qty)) in lines.iter().enumerate() {
        let Some(item_row) = tx.query_opt(&st.no_item, &[&item]).await? else {
            return Ok(Ended::RolledBack);
        };
        let price: i64 = item_row.get(0);
        let stock = tx.query_one(&st.no_stock[d as usize - 1], &[&item, &supply]).await?;
        let quantity: i32 = stock.get(0);
        let dist_info: String = stock.get(2);
        let left = sql::stock_left(quantity as i64, qty as i64) as i32;
        let remote = (supply != w) as i32;
        tx.execute(&st.no_stock_update, &[&left, &qty, &remote, &item, &supply])
            .await?;
        let amount = (qty as i64 * price) as i32;
        let number = n as i32 + 1;
        tx.execute(
            &st.no_line,
            &[&o_id, &d, &w, &number, &item, &supply, &qty, &amount, &dist_info],
        )
        .await?;
    }
    Ok(Ended::Committed)
}

/// The customer's id: given, or the one in the middle of those with the name, ordered by
/// first name (clause 2.5.2.2). Every last name exists in every district at load (its
/// first thousand customers have them all), so a name nobody has is a database that lost
/// rows.
async fn customer_id(tx: &Transaction<'_>, st: &Statements, w: i32, d: i32, customer: &Customer) -> Result<i32> {
    match customer {
        Customer::ById(c) => Ok(*c),
        Customer::ByName(name) => {
            let rows = tx.query(&st.by_name, &[&w, &d, name]).await?;
            if rows.is_empty() {
                return Err(Failure::Missing(format!(
                    "no customer of district {d} of warehouse {w} is named {name}"
                )));
            }
            Ok(rows[(rows.len() - 1) / 2].get(0))
        }
    }
}

async fn payment(
    tx: &Transaction<'_>,
    st: &Statements,
    (w, d): (i32, i32),
    (c_w, c_d): (i32, i32),
    customer: &Customer,
    cents: i32,
) -> Result<Ended> {
    let wh = tx.query_one(&st.p_warehouse, &[&cents, &w]).await?;
    let w_name: String = wh.get(0);
    let di = tx.query_one(&st.p_district, &[&cents, &w, &d]).await?;
    let d_name: String = di.get(0);
    let c = customer_id(tx, st, c_w, c_d, customer).await?;
    let row = tx.query_one(&st.p_customer, &[&c_w, &c_d, &c]).await?;
    let credit: String = row.get(10);
    if credit == "BC" {
        let data: String = tx.query_one(&st.p_customer_data, &[&c_w, &c_d, &c]).await?.get(0);
        let new = sql::bad_credit_data(
            c as i64,
            (c_w as i64, c_d as i64),
            (w as i64, d as i64),
            cents as i64,
            &data,
        );
        tx.execute(&st.p_update_bc, &[&cents, &new, &c_w, &c_d, &c]).await?;
    } else {
        tx.execute(&st.p_update, &[&cents, &c_w, &c_d, &c]).await?;
    }
    let h_data = format!("{w_name}    {d_name}");
    tx.execute(&st.p_history, &[&c, &c_d, &c_w, &d, &w, &cents, &h_data])
        .await?;
    Ok(Ended::Committed)
}

async fn order_status(tx: &Transaction<'_>, st: &Statements, w: i32, d: i32, customer: &Customer) -> Result<Ended> {
    let c = customer_id(tx, st, w, d, customer).await?;
    tx.query_one(&st.os_customer, &[&w, &d, &c]).await?;
    if let Some(order) = tx.query_opt(&st.os_order, &[&w, &d, &c]).await? {
        let o_id: i32 = order.get(0);
        tx.query(&st.os_lines, &[&w, &d, &o_id]).await?;
    }
    Ok(Ended::Committed)
}

/// Delivers the oldest undelivered order of each district; the districts that had none.
async fn delivery(tx: &Transaction<'_>, st: &Statements, w: i32, carrier: i32) -> Result<u32> {
    let mut skipped = 0;
    for d in 1..=DISTRICTS as i32 {
        let Some(oldest) = tx.query_opt(&st.d_oldest, &[&w, &d]).await? else {
            skipped += 1;
            continue;
        };
        let o_id: i32 = oldest.get(0);
        if tx.execute(&st.d_delete, &[&w, &d, &o_id]).await? == 0 {
            skipped += 1;
            continue;
        }
        let c: i32 = tx.query_one(&st.d_order, &[&carrier, &w, &d, &o_id]).await?.get(0);
        tx.execute(&st.d_lines, &[&w, &d, &o_id]).await?;
        let sum: Option<i64> = tx.query_one(&st.d_sum, &[&w, &d, &o_id]).await?.get(0);
        tx.execute(&st.d_customer, &[&sum.unwrap_or(0), &w, &d, &c]).await?;
    }
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    /// The inputs have the specification's proportions: 1 % of New-Orders roll back, 1 % of
    /// order lines and 15 % of payments go to another warehouse, 60 % of customers are
    /// named by last name.
    #[test]
    fn inputs_have_the_specifications_proportions() {
        let mut inputs = Inputs {
            rng: SmallRng::seed_from_u64(5),
            deck: Deck::new(),
            nu: NuConstants::draw(&mut SmallRng::seed_from_u64(6)),
            scale: Scale::SPEC,
            warehouses: 4,
            w: 2,
            d: 3,
            looking_glass: false,
        };
        let (mut orders, mut rollbacks, mut lines, mut remote_lines) = (0, 0, 0, 0);
        let (mut payments, mut remote_payments, mut named, mut customers) = (0, 0, 0, 0);
        for _ in 0..200_000 {
            match inputs.draw() {
                Input::NewOrder { w, lines: l, .. } => {
                    assert_eq!(w, 2);
                    assert!((5..=15).contains(&l.len()));
                    orders += 1;
                    rollbacks += (l.last().unwrap().0 == Scale::SPEC.items as i32 + 1) as u32;
                    lines += l.len();
                    remote_lines += l.iter().filter(|&&(_, s, _)| s != 2).count();
                    assert!(
                        l.iter().all(|&(i, s, q)| (1..=100_001).contains(&i)
                            && (1..=4).contains(&s)
                            && (1..=10).contains(&q))
                    );
                }
                Input::Payment { c_w, customer, .. } => {
                    payments += 1;
                    remote_payments += (c_w != 2) as u32;
                    customers += 1;
                    named += matches!(customer, Customer::ByName(_)) as u32;
                }
                Input::StockLevel { w, d, .. } => assert_eq!((w, d), (2, 3)),
                _ => {}
            }
        }
        let pct = |a: usize, b: usize| 100.0 * a as f64 / b as f64;
        assert!(
            (0.8..1.2).contains(&pct(rollbacks as usize, orders)),
            "{rollbacks} of {orders}"
        );
        assert!(
            (0.9..1.1).contains(&pct(remote_lines, lines)),
            "{remote_lines} of {lines}"
        );
        assert!((14.0..16.0).contains(&pct(remote_payments as usize, payments)));
        assert!((58.0..62.0).contains(&pct(named as usize, customers)));
    }
}
