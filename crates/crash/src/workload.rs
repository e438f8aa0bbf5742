//! The workload the harness runs against the server: transfers between accounts (as a
//! procedure call, and as BEGIN ... COMMIT blocks on connections of their own), event
//! inserts and reads, each acknowledged change remembered for the checks.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::SmallRng;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use permafrost_bench::ycsb::server::describe;

use crate::report::{INITIAL_BALANCE, INSERT_PCT, MAX_MESSAGES, PAD_BYTES, PAYLOAD_BYTES, RETRY_STALL, TRANSFER_PCT};

pub(super) fn initial_total(accounts: u64) -> i64 {
    accounts as i64 * INITIAL_BALANCE
}

pub(super) fn mix(x: u64) -> u64 {
    // splitmix64
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub(super) fn iteration_seed(seed: u64, iteration: u32) -> u64 {
    mix(mix(seed) ^ u64::from(iteration))
}

/// `len` characters derived from `key` (hex digits, nothing to quote).
pub(super) fn filler(prefix: String, key: u64, len: usize) -> String {
    let mut s = prefix;
    let mut x = key;
    while s.len() < len {
        x = mix(x);
        s += &format!("{x:016x}");
    }
    s.truncate(len);
    s
}

pub(super) fn account_pad(id: i64) -> String {
    filler(format!("a{id}-"), id as u64, PAD_BYTES)
}

pub(super) fn event_payload(id: i64) -> String {
    filler(format!("e{id}-"), (id as u64) ^ 0x5EED, PAYLOAD_BYTES)
}

/// The event ids of a data directory and what is known of each.
#[derive(Default)]
pub(super) struct Events {
    /// Flags by id (the ids are handed out in order from 0).
    pub(super) flags: Vec<u8>,
    /// What the server drew for each acknowledged event and answered (its
    /// `gen_random_uuid()`, `random()` and `now()` defaults and the value of its serial
    /// column, as text): what it must give back after every restart.
    pub(super) drawn: std::collections::HashMap<u64, Drawn>,
}

/// An event's values the server drew when it inserted it: uuid, random double, timestamp,
/// serial, and the value of its own sequence (`events_m_seq`, CREATE SEQUENCE), as text.
pub(super) type Drawn = [String; 5];

/// An event's drawn values from a row of `id, payload, u::text, r::text, at::text, n::text,
/// m::text`.
pub(super) fn drawn_of(row: &tokio_postgres::Row, first: usize) -> Drawn {
    std::array::from_fn(|k| row.get::<_, Option<String>>(first + k).unwrap_or_default())
}

pub(super) const ACKED: u8 = 1;
/// Found after a restart: must be there after every later one.
pub(super) const FOUND: u8 = 2;
/// Not acknowledged and not found after a restart: must never come back.
pub(super) const MISSING: u8 = 4;

impl Events {
    pub(super) fn set(&mut self, id: u64, flag: u8) {
        let i = id as usize;
        if self.flags.len() <= i {
            self.flags.resize(i + 1, 0);
        }
        self.flags[i] |= flag;
    }
}

/// Per-iteration counters of the workload's tasks.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) stop: AtomicBool,
    pub(super) transfers: AtomicU64,
    /// Of the transfers, those committed as BEGIN ... COMMIT blocks.
    pub(super) blocks: AtomicU64,
    pub(super) inserts: AtomicU64,
    /// Event inserts begun (for the rate).
    pub(super) inserts_started: AtomicU64,
    pub(super) reads: AtomicU64,
    pub(super) retries_53200: AtomicU64,
    pub(super) retries_40001: AtomicU64,
    pub(super) in_flight: [AtomicI64; 3],
    /// Unexpected answers: server errors other than the retryable ones, wrong rows.
    pub(super) problems: Mutex<Vec<String>>,
    pub(super) problem_count: AtomicU64,
}

impl Counters {
    pub(super) fn problem(&self, m: String) {
        self.problem_count.fetch_add(1, Ordering::Relaxed);
        let mut p = self.problems.lock().unwrap();
        if p.len() < MAX_MESSAGES {
            p.push(m);
        }
    }
}

/// The events of ids lo..hi found after a restart.
pub(super) type EventRows = (i64, i64, Vec<tokio_postgres::Row>);

/// The workload's prepared statements on one connection.
pub(super) struct Stmts {
    pub(super) transfer: Statement,
    pub(super) insert: Statement,
    /// The insert, its serial drawn by an explicit `nextval()` (every other event).
    pub(super) insert_nextval: Statement,
    pub(super) read: Statement,
}

/// Runs `f` again while it fails with 53200 (memory budget: eviction catching up) or
/// 40001 (retry).
pub(super) async fn retrying<T, F, Fut>(ctr: &Counters, mut f: F) -> Result<T, tokio_postgres::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, tokio_postgres::Error>>,
{
    let mut since = None;
    loop {
        let e = match f().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let code = e.code().map(|c| c.code().to_string());
        let first = *since.get_or_insert_with(Instant::now);
        match code.as_deref() {
            Some("53200") if first.elapsed() < RETRY_STALL => {
                ctr.retries_53200.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Some("40001") if first.elapsed() < RETRY_STALL => {
                ctr.retries_40001.fetch_add(1, Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
            _ => return Err(e),
        }
    }
}

pub(super) async fn prepare(c: &Client) -> Result<Stmts, tokio_postgres::Error> {
    Ok(Stmts {
        transfer: c.prepare("CALL transfer($1, $2, $3)").await?,
        insert: c
            .prepare("INSERT INTO events (id, payload) VALUES ($1, $2) RETURNING u::text, r::text, at::text, n::text, m::text")
            .await?,
        insert_nextval: c
            .prepare(
                "INSERT INTO events (id, payload, n) VALUES ($1, $2, nextval('events_n_seq')) \
                 RETURNING u::text, r::text, at::text, n::text, m::text",
            )
            .await?,
        read: c.prepare("SELECT balance, pad FROM accounts WHERE id = $1").await?,
    })
}

/// A transfer as a client without procedures writes it, on a connection of its own:
/// BEGIN, read the source's balance, two UPDATEs, COMMIT; the whole block again on 40001.
pub(super) struct BlockWorker {
    pub(super) client: Client,
    pub(super) ctr: Arc<Counters>,
    pub(super) accounts: u64,
    pub(super) rng: SmallRng,
}

impl BlockWorker {
    pub(super) async fn run(mut self) {
        let ctr = &*self.ctr;
        while !ctr.stop.load(Ordering::Relaxed) {
            let src = self.rng.random_range(0..self.accounts) as i64;
            let mut dst = self.rng.random_range(0..self.accounts - 1) as i64;
            if dst >= src {
                dst += 1;
            }
            let amount = self.rng.random_range(1..=100i64);
            let since = Instant::now();
            let r = loop {
                match transfer_block(&mut self.client, ctr, src, dst, amount).await {
                    Err(e) if e.code().map(|c| c.code()) == Some("40001") && since.elapsed() < RETRY_STALL => {
                        ctr.retries_40001.fetch_add(1, Ordering::Relaxed);
                    }
                    r => break r,
                }
            };
            match r {
                Ok(true) => {
                    ctr.transfers.fetch_add(1, Ordering::Relaxed);
                    ctr.blocks.fetch_add(1, Ordering::Relaxed);
                }
                Ok(false) => ctr.problem(format!("account {src} is missing (read in a block)")),
                Err(e) if e.as_db_error().is_some() => ctr.problem(describe(&e)),
                // The connection is gone: the server was killed.
                Err(_) => break,
            }
        }
    }
}

/// One transfer block; whether the source account was there.
async fn transfer_block(
    client: &mut Client,
    ctr: &Counters,
    src: i64,
    dst: i64,
    amount: i64,
) -> Result<bool, tokio_postgres::Error> {
    let t = client.transaction().await?;
    let row = t
        .query_opt("SELECT balance FROM accounts WHERE id = $1", &[&src])
        .await?;
    t.execute(
        "UPDATE accounts SET balance = balance - $1 WHERE id = $2",
        &[&amount, &src],
    )
    .await?;
    t.execute(
        "UPDATE accounts SET balance = balance + $1 WHERE id = $2",
        &[&amount, &dst],
    )
    .await?;
    ctr.in_flight[0].fetch_add(1, Ordering::SeqCst);
    let committed = t.commit().await;
    ctr.in_flight[0].fetch_sub(1, Ordering::SeqCst);
    committed.map(|()| row.is_some())
}

/// One of the workload's tasks: a statement at a time, many tasks per connection.
pub(super) struct Worker {
    pub(super) client: Arc<Client>,
    pub(super) stmts: Arc<Stmts>,
    pub(super) ctr: Arc<Counters>,
    pub(super) events: Arc<Mutex<Events>>,
    pub(super) next_event: Arc<AtomicU64>,
    pub(super) accounts: u64,
    /// When the workload started, and event inserts allowed per second since.
    pub(super) start: Instant,
    pub(super) insert_rate: u64,
    pub(super) rng: SmallRng,
}

impl Worker {
    pub(super) async fn run(mut self) {
        let (c, st, ctr) = (&*self.client, &*self.stmts, &*self.ctr);
        while !ctr.stop.load(Ordering::Relaxed) {
            let mut pick = self.rng.random_range(0..100u32);
            if (TRANSFER_PCT..TRANSFER_PCT + INSERT_PCT).contains(&pick) {
                let allowed = (self.start.elapsed().as_secs_f64() * self.insert_rate as f64) as u64;
                if ctr.inserts_started.fetch_add(1, Ordering::Relaxed) >= allowed {
                    ctr.inserts_started.fetch_sub(1, Ordering::Relaxed);
                    // Over the rate: a transfer or a read instead, in their proportion.
                    pick = self.rng.random_range(0..100 - INSERT_PCT);
                    if pick >= TRANSFER_PCT {
                        pick += INSERT_PCT;
                    }
                }
            }
            let r = if pick < TRANSFER_PCT {
                let src = self.rng.random_range(0..self.accounts) as i64;
                let mut dst = self.rng.random_range(0..self.accounts - 1) as i64;
                if dst >= src {
                    dst += 1;
                }
                let amount = self.rng.random_range(1..=100i64);
                let params: [&(dyn ToSql + Sync); 3] = [&src, &dst, &amount];
                ctr.in_flight[0].fetch_add(1, Ordering::SeqCst);
                let r = retrying(ctr, || c.execute(&st.transfer, &params)).await;
                ctr.in_flight[0].fetch_sub(1, Ordering::SeqCst);
                r.map(|_| {
                    ctr.transfers.fetch_add(1, Ordering::Relaxed);
                })
            } else if pick < TRANSFER_PCT + INSERT_PCT {
                let id = self.next_event.fetch_add(1, Ordering::SeqCst) as i64;
                let payload = event_payload(id);
                let params: [&(dyn ToSql + Sync); 2] = [&id, &payload];
                ctr.in_flight[1].fetch_add(1, Ordering::SeqCst);
                let insert = if id % 2 == 0 { &st.insert } else { &st.insert_nextval };
                let r = retrying(ctr, || c.query(insert, &params)).await;
                ctr.in_flight[1].fetch_sub(1, Ordering::SeqCst);
                r.map(|rows| {
                    if rows.len() == 1 {
                        let mut events = self.events.lock().unwrap();
                        events.set(id as u64, ACKED);
                        events.drawn.insert(id as u64, drawn_of(&rows[0], 0));
                        ctr.inserts.fetch_add(1, Ordering::Relaxed);
                    } else {
                        ctr.problem(format!("inserting event {id} answered {} rows", rows.len()));
                    }
                })
            } else {
                let id = self.rng.random_range(0..self.accounts) as i64;
                let params: [&(dyn ToSql + Sync); 1] = [&id];
                ctr.in_flight[2].fetch_add(1, Ordering::SeqCst);
                let r = retrying(ctr, || c.query_opt(&st.read, &params)).await;
                ctr.in_flight[2].fetch_sub(1, Ordering::SeqCst);
                r.map(|row| match row {
                    Some(row) => {
                        let pad: Option<String> = row.get(1);
                        if pad.as_deref() == Some(account_pad(id).as_str()) {
                            ctr.reads.fetch_add(1, Ordering::Relaxed);
                        } else {
                            ctr.problem(format!("account {id} read with the wrong padding {pad:?}"));
                        }
                    }
                    None => ctr.problem(format!("account {id} is missing")),
                })
            };
            if let Err(e) = r {
                if e.as_db_error().is_some() {
                    // The server answered with an error the workload does not expect.
                    ctr.problem(describe(&e));
                } else {
                    // The connection is gone: the server was killed.
                    break;
                }
            }
        }
    }
}
