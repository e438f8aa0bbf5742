//! TPC-C's nine tables as plain PostgreSQL DDL (clause 1.3), and the initial population
//! (clause 4.3.3.1) loaded through the wire with multi-row INSERTs.
//!
//! The DDL names no partitioning: Permafrost chooses it (docs/architecture/multi-partition.md,
//! "A partitioning for plain DDL"), and the same text runs on PostgreSQL. ITEM is created
//! last, after STOCK, whose key holds its id after the warehouse's, so that Permafrost
//! replicates it.

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use super::options::{DISTRICTS, Scale, TpccOptions};
use super::random::{astring, data_with_original, last_name, nstring, nurand, zip};
use crate::BenchError;
use crate::way::Flavor;
use crate::ycsb::server::describe;

/// The tables, in the order they are created (and dropped in reverse).
pub const TABLES: [&str; 9] = [
    "warehouse",
    "district",
    "customer",
    "history",
    "new_order",
    "orders",
    "order_line",
    "stock",
    "item",
];

/// CREATE statements of the tables and the two secondary indexes the transactions need
/// (customers by last name, a customer's latest order).
pub const DDL: &[&str] = &[
    "CREATE TABLE warehouse (w_id integer NOT NULL, w_name varchar(10), w_street_1 varchar(20), \
     w_street_2 varchar(20), w_city varchar(20), w_state char(2), w_zip char(9), w_tax numeric(4,4), \
     w_ytd numeric(12,2), PRIMARY KEY (w_id))",
    "CREATE TABLE district (d_id integer NOT NULL, d_w_id integer NOT NULL, d_name varchar(10), \
     d_street_1 varchar(20), d_street_2 varchar(20), d_city varchar(20), d_state char(2), d_zip char(9), \
     d_tax numeric(4,4), d_ytd numeric(12,2), d_next_o_id integer, PRIMARY KEY (d_w_id, d_id))",
    "CREATE TABLE customer (c_id integer NOT NULL, c_d_id integer NOT NULL, c_w_id integer NOT NULL, \
     c_first varchar(16), c_middle char(2), c_last varchar(16), c_street_1 varchar(20), \
     c_street_2 varchar(20), c_city varchar(20), c_state char(2), c_zip char(9), c_phone char(16), \
     c_since timestamp, c_credit char(2), c_credit_lim numeric(12,2), c_discount numeric(4,4), \
     c_balance numeric(12,2), c_ytd_payment numeric(12,2), c_payment_cnt integer, \
     c_delivery_cnt integer, c_data varchar(500), PRIMARY KEY (c_w_id, c_d_id, c_id))",
    "CREATE TABLE history (h_c_id integer, h_c_d_id integer, h_c_w_id integer, h_d_id integer, \
     h_w_id integer, h_date timestamp, h_amount numeric(6,2), h_data varchar(24))",
    "CREATE TABLE new_order (no_o_id integer NOT NULL, no_d_id integer NOT NULL, \
     no_w_id integer NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
    "CREATE TABLE orders (o_id integer NOT NULL, o_d_id integer NOT NULL, o_w_id integer NOT NULL, \
     o_c_id integer, o_entry_d timestamp, o_carrier_id integer, o_ol_cnt integer, \
     o_all_local integer, PRIMARY KEY (o_w_id, o_d_id, o_id))",
    "CREATE TABLE order_line (ol_o_id integer NOT NULL, ol_d_id integer NOT NULL, \
     ol_w_id integer NOT NULL, ol_number integer NOT NULL, ol_i_id integer, ol_supply_w_id integer, \
     ol_delivery_d timestamp, ol_quantity integer, ol_amount numeric(6,2), ol_dist_info char(24), \
     PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
    "CREATE TABLE stock (s_i_id integer NOT NULL, s_w_id integer NOT NULL, s_quantity integer, \
     s_dist_01 char(24), s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24), \
     s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24), \
     s_dist_09 char(24), s_dist_10 char(24), s_ytd integer, s_order_cnt integer, \
     s_remote_cnt integer, s_data varchar(50), PRIMARY KEY (s_w_id, s_i_id))",
    "CREATE TABLE item (i_id integer NOT NULL, i_im_id integer, i_name varchar(24), \
     i_price numeric(5,2), i_data varchar(50), PRIMARY KEY (i_id))",
    "CREATE INDEX customer_by_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE INDEX orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
];

/// Rows per INSERT statement while loading.
const ROWS_PER_INSERT: usize = 100;
/// Connections loading in parallel.
pub const LOAD_CONNECTIONS: usize = 4;
/// How long a statement refused for a retryable reason (the memory budget while eviction
/// catches up) is tried again before the load gives up.
const LOAD_STALL: Duration = Duration::from_secs(60);
/// Items per stock-loading job.
const STOCK_CHUNK: u32 = 10_000;
/// Orders of a district per loading job (about 33,000 rows with their lines).
const ORDERS_CHUNK: u32 = 3000;

/// The load's jobs, largest last (taken from the end), and a progress bar over their rows
/// (hidden unless `shown`).
pub fn planned_jobs(opts: &TpccOptions, shown: bool) -> (Vec<Job>, indicatif::ProgressBar) {
    let mut jobs = jobs(opts);
    let total: u64 = jobs.iter().map(|&j| job_rows(j, &opts.scale)).sum();
    jobs.reverse();
    let bar = if shown {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template("loading {bar:40} {pos}/{len} rows ({per_sec}, eta {eta})")
                .expect("valid template"),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    (jobs, bar)
}

/// The tables the papers keep in memory (DeBrabant et al. §4.1: every table but these is
/// evictable): read by every transaction, small, never growing.
pub const KEPT_IN_MEMORY: [&str; 3] = ["warehouse", "district", "item"];

/// The CREATE statements for a server of `flavor`: [`DDL`], with Permafrost told which
/// tables to keep in memory (`evictable = false`; the partitioning it still chooses).
pub fn ddl(flavor: Flavor) -> Vec<String> {
    DDL.iter()
        .map(|d| {
            let kept = KEPT_IN_MEMORY
                .iter()
                .any(|t| d.starts_with(&format!("CREATE TABLE {t} (")));
            if kept && flavor == Flavor::Permafrost {
                format!("{d} WITH (evictable = false)")
            } else {
                d.to_string()
            }
        })
        .collect()
}

/// Drops the tables left by an earlier run and creates them again.
pub async fn create(client: &Client, flavor: Flavor) -> Result<(), BenchError> {
    for t in TABLES.iter().rev() {
        exec(client, &format!("DROP TABLE IF EXISTS {t}")).await?;
    }
    for d in ddl(flavor) {
        exec(client, &d).await?;
    }
    Ok(())
}

async fn exec(client: &Client, sql: &str) -> Result<(), BenchError> {
    client
        .batch_execute(sql)
        .await
        .map_err(|e| BenchError::Client(format!("{}: {}", first_words(sql), describe(&e))))
}

fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// A unit of the load, done by one connection with its own random numbers.
#[derive(Clone, Copy, Debug)]
pub enum Job {
    /// Items `from..=to`.
    Items { from: u32, to: u32 },
    /// A warehouse's row and its districts'.
    Warehouse { w: u32 },
    /// A warehouse's stock of items `from..=to`.
    Stock { w: u32, from: u32, to: u32 },
    /// A district's customers and their history rows.
    Customers { w: u32, d: u32 },
    /// Orders `from..=to` of a district, their lines and the undelivered ones' new_order
    /// rows.
    Orders { w: u32, d: u32, from: u32, to: u32 },
}

/// Every job of the load, largest first.
pub fn jobs(opts: &TpccOptions) -> Vec<Job> {
    let s = &opts.scale;
    let mut jobs = Vec::new();
    for w in 1..=opts.warehouses {
        for d in 1..=DISTRICTS {
            let mut from = 1;
            while from <= s.orders {
                let to = (from + ORDERS_CHUNK - 1).min(s.orders);
                jobs.push(Job::Orders { w, d, from, to });
                from = to + 1;
            }
            jobs.push(Job::Customers { w, d });
        }
        let mut from = 1;
        while from <= s.items {
            let to = (from + STOCK_CHUNK - 1).min(s.items);
            jobs.push(Job::Stock { w, from, to });
            from = to + 1;
        }
        jobs.push(Job::Warehouse { w });
    }
    let mut from = 1;
    while from <= s.items {
        let to = (from + STOCK_CHUNK - 1).min(s.items);
        jobs.push(Job::Items { from, to });
        from = to + 1;
    }
    jobs
}

/// Rows of one job, as INSERT statements of up to [`ROWS_PER_INSERT`] rows.
struct Inserts {
    statements: Vec<String>,
    table: &'static str,
    rows: usize,
    current: String,
}

impl Inserts {
    fn new() -> Inserts {
        Inserts {
            statements: Vec::new(),
            table: "",
            rows: 0,
            current: String::new(),
        }
    }

    /// Starts a row of `table`; its values follow through `push`.
    fn row(&mut self, table: &'static str) {
        if self.table != table || self.rows == ROWS_PER_INSERT {
            self.flush();
            self.table = table;
            let _ = write!(self.current, "INSERT INTO {table} VALUES (");
        } else {
            self.current.push_str(", (");
        }
        self.rows += 1;
    }

    fn end_row(&mut self) {
        self.current.push(')');
    }

    fn flush(&mut self) {
        if self.rows > 0 {
            self.statements.push(std::mem::take(&mut self.current));
        }
        self.current.clear();
        self.rows = 0;
        self.table = "";
    }

    fn finish(mut self) -> Vec<String> {
        self.flush();
        self.statements
    }
}

/// Writes one row's values: `values` are SQL literals already.
fn row(ins: &mut Inserts, table: &'static str, values: &[String]) {
    ins.row(table);
    ins.current.push_str(&values.join(", "));
    ins.end_row();
}

/// A string literal (the generated strings are alphanumeric; quotes are doubled anyway).
fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A fixed-point literal of `cents` hundredths.
fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", cents.abs() / 100, cents.abs() % 100)
}

/// A tax rate of `ten_thousandths` (0..=2000: 0.0000 to 0.2000).
fn rate(ten_thousandths: u32) -> String {
    format!("0.{ten_thousandths:04}")
}

/// The address columns of a warehouse, district or customer: street 1, street 2, city,
/// state, zip.
fn address(rng: &mut SmallRng) -> [String; 5] {
    [
        lit(&astring(rng, 10, 20)),
        lit(&astring(rng, 10, 20)),
        lit(&astring(rng, 10, 20)),
        lit(&astring(rng, 2, 2)),
        lit(&zip(rng)),
    ]
}

/// A warehouse's or district's name, address and tax rate.
fn place(rng: &mut SmallRng) -> Vec<String> {
    let mut v = vec![lit(&astring(rng, 6, 10))];
    v.extend(address(rng));
    v.push(rate(rng.random_range(0..=2000)));
    v
}

/// The last name number of customer `c` at load (clause 4.3.3.1: the first thousand by
/// their number, the rest by NURand(255, 0, 999)).
pub fn loaded_last_name(rng: &mut SmallRng, scale: &Scale, c_last_c: u32, c: u32) -> u32 {
    if c <= scale.last_names() {
        c - 1
    } else {
        nurand(rng, 255, c_last_c, 0, 999) % scale.last_names()
    }
}

/// The statements of one job.
pub fn statements(job: Job, opts: &TpccOptions, c_last_c: u32) -> Vec<String> {
    let s = &opts.scale;
    let seed = opts.seed
        ^ match job {
            Job::Items { from, .. } => 1 << 40 | from as u64,
            Job::Warehouse { w } => 2 << 40 | (w as u64) << 20,
            Job::Stock { w, from, .. } => 3 << 40 | (w as u64) << 20 | from as u64,
            Job::Customers { w, d } => 4 << 40 | (w as u64) << 20 | d as u64,
            Job::Orders { w, d, from, .. } => 5 << 56 | (w as u64) << 40 | (d as u64) << 32 | from as u64,
        };
    let rng = &mut SmallRng::seed_from_u64(seed);
    let mut ins = Inserts::new();
    match job {
        Job::Items { from, to } => {
            for i in from..=to {
                let v = [
                    i.to_string(),
                    rng.random_range(1..=10_000u32).to_string(),
                    lit(&astring(rng, 14, 24)),
                    money(rng.random_range(100..=10_000)),
                    lit(&data_with_original(rng)),
                ];
                row(&mut ins, "item", &v);
            }
        }
        Job::Warehouse { w } => {
            let mut v = vec![w.to_string()];
            v.extend(place(rng));
            // W_YTD is 300,000.00 by the specification: the sum of its districts' D_YTD.
            v.push(money(1000 * (s.customers * DISTRICTS) as i64));
            row(&mut ins, "warehouse", &v);
            for d in 1..=DISTRICTS {
                let mut v = vec![d.to_string(), w.to_string()];
                v.extend(place(rng));
                v.extend([
                    // D_YTD is 30,000.00 by the specification for 3,000 customers; it is the
                    // sum of the district's initial history rows (10.00 each) at any scale.
                    money(1000 * s.customers as i64),
                    (s.orders + 1).to_string(),
                ]);
                row(&mut ins, "district", &v);
            }
        }
        Job::Stock { w, from, to } => {
            for i in from..=to {
                let mut v = vec![i.to_string(), w.to_string(), rng.random_range(10..=100u32).to_string()];
                for _ in 0..DISTRICTS {
                    v.push(lit(&astring(rng, 24, 24)));
                }
                v.extend(["0".into(), "0".into(), "0".into(), lit(&data_with_original(rng))]);
                row(&mut ins, "stock", &v);
            }
        }
        Job::Customers { w, d } => {
            for c in 1..=s.customers {
                let [s1, s2, city, state, zip] = address(rng);
                let credit = if rng.random_range(0..10) == 0 { "BC" } else { "GC" };
                let v = [
                    c.to_string(),
                    d.to_string(),
                    w.to_string(),
                    lit(&astring(rng, 8, 16)),
                    lit("OE"),
                    lit(&last_name(loaded_last_name(rng, s, c_last_c, c))),
                    s1,
                    s2,
                    city,
                    state,
                    zip,
                    lit(&nstring(rng, 16)),
                    "LOCALTIMESTAMP".into(),
                    lit(credit),
                    money(5_000_000),
                    rate(rng.random_range(0..=5000)),
                    money(-1000),
                    money(1000),
                    "1".into(),
                    "0".into(),
                    lit(&astring(rng, 300, 500)),
                ];
                row(&mut ins, "customer", &v);
            }
            for c in 1..=s.customers {
                let v = [
                    c.to_string(),
                    d.to_string(),
                    w.to_string(),
                    d.to_string(),
                    w.to_string(),
                    "LOCALTIMESTAMP".into(),
                    money(1000),
                    lit(&astring(rng, 12, 24)),
                ];
                row(&mut ins, "history", &v);
            }
        }
        Job::Orders { w, d, from, to } => {
            // Every chunk of a district deals its orders to the same shuffled customers, so
            // that the first `customers` orders go to every customer once (clause 4.3.3.1)
            // and the orders past them (a population grown beyond the specification's)
            // to every customer again, in the same order.
            let mut customers: Vec<u32> = (1..=s.customers).collect();
            customers.shuffle(&mut SmallRng::seed_from_u64(
                opts.seed ^ (6 << 56 | (w as u64) << 40 | (d as u64) << 32),
            ));
            let delivered = s.orders - s.new_orders;
            let mut lines = Vec::with_capacity((to - from + 1) as usize);
            for o in from..=to {
                let ol_cnt: u32 = rng.random_range(5..=15);
                lines.push(ol_cnt);
                let carrier = if o <= delivered {
                    rng.random_range(1..=10u32).to_string()
                } else {
                    "NULL".into()
                };
                let v = [
                    o.to_string(),
                    d.to_string(),
                    w.to_string(),
                    customers[(o as usize - 1) % customers.len()].to_string(),
                    "LOCALTIMESTAMP".into(),
                    carrier,
                    ol_cnt.to_string(),
                    "1".into(),
                ];
                row(&mut ins, "orders", &v);
            }
            for (o, ol_cnt) in (from..=to).zip(lines) {
                for n in 1..=ol_cnt {
                    let (delivery, amount) = if o <= delivered {
                        ("LOCALTIMESTAMP".to_string(), money(0))
                    } else {
                        ("NULL".to_string(), money(rng.random_range(1..=999_999)))
                    };
                    let v = [
                        o.to_string(),
                        d.to_string(),
                        w.to_string(),
                        n.to_string(),
                        rng.random_range(1..=s.items).to_string(),
                        w.to_string(),
                        delivery,
                        "5".into(),
                        amount,
                        lit(&astring(rng, 24, 24)),
                    ];
                    row(&mut ins, "order_line", &v);
                }
            }
            for o in (delivered + 1).max(from)..=to {
                row(&mut ins, "new_order", &[o.to_string(), d.to_string(), w.to_string()]);
            }
        }
    }
    ins.finish()
}

/// Rows a job loads (for the progress bar).
pub fn job_rows(job: Job, scale: &Scale) -> u64 {
    match job {
        Job::Items { from, to } | Job::Stock { from, to, .. } => (to - from + 1) as u64,
        Job::Warehouse { .. } => 1 + DISTRICTS as u64,
        Job::Customers { .. } => 2 * scale.customers as u64,
        // Ten order lines per order on average.
        Job::Orders { from, to, .. } => {
            let undelivered = (to + 1).saturating_sub((scale.orders - scale.new_orders + 1).max(from));
            (to - from + 1) as u64 * 11 + undelivered as u64
        }
    }
}

/// One loading connection: takes jobs until none are left.
pub async fn loader(
    client: &Client,
    opts: &TpccOptions,
    c_last_c: u32,
    jobs: &Mutex<Vec<Job>>,
    loaded: &AtomicU64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(), BenchError> {
    loop {
        let Some(job) = jobs.lock().expect("the job list is never poisoned").pop() else {
            return Ok(());
        };
        for sql in statements(job, opts, c_last_c) {
            let mut first_refusal = None::<Instant>;
            loop {
                match client.batch_execute(&sql).await {
                    Ok(()) => break,
                    Err(e) if e.code() == Some(&SqlState::OUT_OF_MEMORY) => {
                        let since = *first_refusal.get_or_insert_with(Instant::now);
                        if since.elapsed() > LOAD_STALL {
                            return Err(BenchError::Client(format!(
                                "loading {job:?} stalled: refused for {} s, last: {}",
                                LOAD_STALL.as_secs(),
                                describe(&e)
                            )));
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Err(e) => {
                        return Err(BenchError::Client(format!("loading {job:?}: {}", describe(&e))));
                    }
                }
            }
        }
        progress(loaded.fetch_add(job_rows(job, &opts.scale), Ordering::Relaxed) + job_rows(job, &opts.scale));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_postgresqls() {
        assert_eq!(money(-1000), "-10.00");
        assert_eq!(money(30_000_000), "300000.00");
        assert_eq!(money(7), "0.07");
        assert_eq!(rate(5), "0.0005");
        assert_eq!(lit("it's"), "'it''s'");
    }

    #[test]
    fn a_district_loads_its_orders_lines_and_new_orders() {
        let opts = TpccOptions {
            scale: Scale::small(),
            ..TpccOptions::default()
        };
        let all = Job::Orders {
            w: 1,
            d: 2,
            from: 1,
            to: 90,
        };
        let sql = statements(all, &opts, 7).join("\n");
        let count = |t: &str| sql.matches(&format!("INSERT INTO {t} ")).count();
        assert!(count("orders") >= 1 && count("order_line") >= 1 && count("new_order") == 1);
        let new_orders = sql.lines().find(|l| l.starts_with("INSERT INTO new_order")).unwrap();
        assert_eq!(new_orders.matches('(').count() as u32, opts.scale.new_orders);
        // The same seed gives the same rows.
        assert_eq!(sql, statements(all, &opts, 7).join("\n"));
    }

    #[test]
    fn a_grown_population_loads_in_chunks_that_deal_every_customer_again() {
        let opts = TpccOptions {
            warehouses: 1,
            scale: Scale {
                orders: 7000,
                ..Scale::small()
            },
            ..TpccOptions::default()
        };
        opts.validate().unwrap();
        let chunks: Vec<Job> = jobs(&opts)
            .into_iter()
            .filter(|j| matches!(j, Job::Orders { d: 1, .. }))
            .collect();
        assert_eq!(chunks.len(), 3, "{chunks:?}");
        let rows: u64 = chunks.iter().map(|j| job_rows(*j, &opts.scale)).sum();
        assert_eq!(rows, 7000 * 11 + 27);
        // Orders 1 and 91 (one customer round later) go to the same customer; only the
        // last 27 orders are undelivered.
        let sql = statements(
            Job::Orders {
                w: 1,
                d: 1,
                from: 1,
                to: 3000,
            },
            &opts,
            7,
        )
        .join("\n");
        let customer = |o: u32| {
            let at = sql.find(&format!("({o}, 1, 1, ")).unwrap() + format!("({o}, 1, 1, ").len();
            sql[at..].split(',').next().unwrap().to_string()
        };
        assert_eq!(customer(1), customer(91));
        assert!(!sql.contains("INSERT INTO new_order"));
        let last = statements(
            Job::Orders {
                w: 1,
                d: 1,
                from: 6001,
                to: 7000,
            },
            &opts,
            7,
        )
        .join("\n");
        let new_orders = last.lines().find(|l| l.starts_with("INSERT INTO new_order")).unwrap();
        assert_eq!(new_orders.matches('(').count(), 27);
        assert!(new_orders.contains("(6974, 1, 1)") && !new_orders.contains("(6973, 1, 1)"));
        // Fewer orders than customers is refused, not raised in silence.
        let few = TpccOptions {
            scale: Scale {
                orders: 89,
                ..Scale::small()
            },
            ..TpccOptions::default()
        };
        assert!(few.validate().unwrap_err().to_string().contains("--orders"));
    }
}
