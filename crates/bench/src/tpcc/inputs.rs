//! A terminal's transaction inputs (clauses 2.4.1 to 2.8.1), drawn before a transaction's
//! first attempt so that a retry runs the same transaction; shared by every way of running
//! them (interactive blocks, procedure calls, embedded).

use rand::Rng;
use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::options::{DISTRICTS, Mix, Scale, TpccOptions};
use super::random::{Deck, NuConstants, TxnType, last_name, nurand};

/// A customer chosen by last name (60 %) or by id (clause 2.5.1.2, 2.6.1.2).
#[derive(Debug, Clone)]
pub enum Customer {
    ById(i32),
    ByName(String),
}

impl Customer {
    /// A procedure's two customer arguments: the id, or NULL and the last name.
    pub fn arguments(&self) -> (Option<i32>, Option<String>) {
        match self {
            Customer::ById(id) => (Some(*id), None),
            Customer::ByName(name) => (None, Some(name.clone())),
        }
    }
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
