//! What a TPC-C run is asked for: the population's size, the warehouses, the terminals,
//! how long.

use serde::Serialize;

use crate::BenchError;

/// Districts per warehouse (clause 1.2.1).
pub const DISTRICTS: u32 = 10;
/// The population's cardinalities (clause 1.2.1 and 4.3.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Scale {
    /// Rows of ITEM, and of STOCK per warehouse.
    pub items: u32,
    /// Customers per district.
    pub customers: u32,
    /// Orders per district at load.
    pub orders: u32,
    /// Undelivered orders per district at load (the last ones).
    pub new_orders: u32,
}

impl Scale {
    /// The specification's: 100,000 items, 3,000 customers and orders per district, the last
    /// 900 of them undelivered.
    pub const SPEC: Scale = Scale {
        items: 100_000,
        customers: 3000,
        orders: 3000,
        new_orders: 900,
    };

    /// A population about 35 times smaller, for tests: not TPC-C.
    pub fn small() -> Scale {
        Scale {
            items: 2000,
            customers: 90,
            orders: 90,
            new_orders: 27,
        }
    }

    /// The specification's population with `orders` orders per district (at least its
    /// 3,000, as `TpccOptions::validate` requires): the orders past the 3,000th are delivered ones, dealt to the customers again,
    /// whose lines' amounts are zero as the loaded delivered orders' are, so the
    /// consistency conditions hold of them. It grows ORDERS, ORDER_LINE and (through the
    /// runs) HISTORY as a database that has taken orders for a long time has.
    pub fn grown(orders: u32) -> Scale {
        Scale { orders, ..Scale::SPEC }
    }

    /// How many distinct last names the population holds (1,000 by the specification).
    pub fn last_names(&self) -> u32 {
        self.customers.min(1000)
    }
}

/// Which transactions are run, with which inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    /// The specification's: all five transactions (45/43/4/4/4) and their inputs.
    Full,
    /// The OLTP-through-the-looking-glass paper's (section 4.2): New-Order and Payment half
    /// and half, every order of 10 items from the home warehouse (1 % still naming an
    /// unused item), every payment to a home customer chosen by id.
    LookingGlass,
}

impl Mix {
    pub fn parse(s: &str) -> Result<Mix, String> {
        match s {
            "full" => Ok(Mix::Full),
            "looking-glass" => Ok(Mix::LookingGlass),
            _ => Err(format!("{s}: give full or looking-glass")),
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct TpccOptions {
    pub warehouses: u32,
    /// Terminals: one connection each, bound to warehouse (n mod warehouses) + 1.
    pub clients: usize,
    /// Seconds run before the measured ones.
    pub warmup: f64,
    /// Seconds measured.
    pub duration: f64,
    pub seed: u64,
    pub scale: Scale,
    pub mix: Mix,
    /// Create and load the tables first (otherwise they must hold an earlier load of the
    /// same warehouses and scale).
    pub load: bool,
    /// Run the transactions (otherwise only load, and check the conditions).
    pub run: bool,
}

impl Default for TpccOptions {
    fn default() -> Self {
        TpccOptions {
            warehouses: 2,
            clients: 8,
            warmup: 10.0,
            duration: 60.0,
            seed: 42,
            scale: Scale::SPEC,
            mix: Mix::Full,
            load: true,
            run: true,
        }
    }
}

impl TpccOptions {
    pub fn validate(&self) -> Result<(), BenchError> {
        if !(1..=10_000).contains(&self.warehouses) {
            return Err(BenchError::Options("--warehouses must be between 1 and 10000".into()));
        }
        if !(1..=4096).contains(&self.clients) {
            return Err(BenchError::Options("--clients must be between 1 and 4096".into()));
        }
        if self.scale.orders < self.scale.new_orders.max(self.scale.customers) || self.scale.orders > 10_000_000 {
            return Err(BenchError::Options(format!(
                "--orders must be between {} and 10000000",
                self.scale.new_orders.max(self.scale.customers)
            )));
        }
        if !self.load && !self.run {
            return Err(BenchError::Options("nothing to do: neither load nor run".into()));
        }
        if !(self.duration > 0.0 && self.warmup >= 0.0) {
            return Err(BenchError::Options(
                "--duration must be positive and --warmup not negative".into(),
            ));
        }
        Ok(())
    }
}
