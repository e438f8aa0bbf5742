//! TATP's population and its transactions' inputs, as the TATP description (version 1.0)
//! gives them and H-Store's port of it uses: subscribers 1 to N, each with 1 to 4
//! access-info rows and 1 to 4 special facilities (85 % of them active), each facility with
//! 0 to 3 call forwardings starting at 0, 8 or 16 h and ending 1 to 8 h later; subscribers
//! drawn uniformly (H-Store's choice, not the description's NURand), transactions from the
//! mix 35/10/35/2/14/2/2.

use std::fmt::Write;

use rand::rngs::SmallRng;
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};

/// The transaction types, in the mix's order, and their shares in percent.
pub const KINDS: [(&str, u32); 7] = [
    ("get_subscriber_data", 35),
    ("get_new_destination", 10),
    ("get_access_data", 35),
    ("update_subscriber_data", 2),
    ("update_location", 14),
    ("insert_call_forwarding", 2),
    ("delete_call_forwarding", 2),
];

/// The start times of call forwardings, in hours.
const START_TIMES: [i16; 3] = [0, 8, 16];
/// Subscribers per loading job.
pub const SUBSCRIBERS_PER_JOB: u32 = 1000;
/// Rows per INSERT statement while loading.
const ROWS_PER_INSERT: usize = 100;

/// A subscriber's number: its id as 15 digits.
pub fn sub_nbr(s_id: i32) -> String {
    format!("{s_id:015}")
}

fn letters(rng: &mut SmallRng, n: usize) -> String {
    (0..n).map(|_| rng.random_range(b'A'..=b'Z') as char).collect()
}

fn digits(rng: &mut SmallRng, n: usize) -> String {
    (0..n).map(|_| rng.random_range(b'0'..=b'9') as char).collect()
}

/// Rows of one table as INSERT statements of at most [`ROWS_PER_INSERT`] rows.
struct Inserts {
    head: String,
    rows: Vec<String>,
    out: Vec<String>,
}

impl Inserts {
    fn new(head: &str) -> Inserts {
        Inserts {
            head: head.to_string(),
            rows: Vec::new(),
            out: Vec::new(),
        }
    }

    fn push(&mut self, row: String) {
        self.rows.push(row);
        if self.rows.len() == ROWS_PER_INSERT {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.rows.is_empty() {
            self.out.push(format!("{} VALUES {}", self.head, self.rows.join(", ")));
            self.rows.clear();
        }
    }
}

/// The INSERT statements of subscribers `first..first + SUBSCRIBERS_PER_JOB` (up to
/// `subscribers`), their rows drawn from `seed`.
pub fn job_statements(seed: u64, first: u32, subscribers: u32) -> Vec<String> {
    let mut rng = SmallRng::seed_from_u64(seed ^ ((first as u64) << 20));
    let mut sub = Inserts::new(
        "INSERT INTO subscriber (s_id, sub_nbr, bit_1, bit_2, bit_3, bit_4, bit_5, bit_6, bit_7, bit_8, bit_9, bit_10, \
         hex_1, hex_2, hex_3, hex_4, hex_5, hex_6, hex_7, hex_8, hex_9, hex_10, byte2_1, byte2_2, byte2_3, byte2_4, \
         byte2_5, byte2_6, byte2_7, byte2_8, byte2_9, byte2_10, msc_location, vlr_location)",
    );
    let mut ai = Inserts::new("INSERT INTO access_info (s_id, ai_type, data1, data2, data3, data4)");
    let mut sf = Inserts::new("INSERT INTO special_facility (s_id, sf_type, is_active, error_cntrl, data_a, data_b)");
    let mut cf = Inserts::new("INSERT INTO call_forwarding (s_id, sf_type, start_time, end_time, numberx)");
    let last = (first + SUBSCRIBERS_PER_JOB - 1).min(subscribers);
    for s in first..=last {
        let mut row = format!("({s}, '{}'", sub_nbr(s as i32));
        for range in [2, 16, 256] {
            for _ in 0..10 {
                let _ = write!(row, ", {}", rng.random_range(0..range));
            }
        }
        let _ = write!(
            row,
            ", {}, {})",
            rng.random_range(1..=i32::MAX),
            rng.random_range(1..=i32::MAX)
        );
        sub.push(row);
        let n = rng.random_range(1..=4);
        for t in sample(&mut rng, 4, n) {
            ai.push(format!(
                "({s}, {}, {}, {}, '{}', '{}')",
                t + 1,
                rng.random_range(0..256),
                rng.random_range(0..256),
                letters(&mut rng, 3),
                letters(&mut rng, 5)
            ));
        }
        let n = rng.random_range(1..=4);
        for t in sample(&mut rng, 4, n) {
            let active = (rng.random_range(0..100) < 85) as i32;
            sf.push(format!(
                "({s}, {}, {active}, {}, {}, '{}')",
                t + 1,
                rng.random_range(0..256),
                rng.random_range(0..256),
                letters(&mut rng, 5)
            ));
            let forwardings = rng.random_range(0..=3);
            for k in sample(&mut rng, 3, forwardings) {
                let start = START_TIMES[k];
                cf.push(format!(
                    "({s}, {}, {start}, {}, '{}')",
                    t + 1,
                    start + rng.random_range(1..=8),
                    digits(&mut rng, 15)
                ));
            }
        }
    }
    let mut out = Vec::new();
    for mut t in [sub, ai, sf, cf] {
        t.flush();
        out.append(&mut t.out);
    }
    out
}

/// One transaction's inputs.
#[derive(Debug, Clone)]
pub enum Input {
    GetSubscriberData {
        s: i32,
    },
    GetNewDestination {
        s: i32,
        sf_type: i16,
        start_time: i16,
        end_time: i16,
    },
    GetAccessData {
        s: i32,
        ai_type: i16,
    },
    UpdateSubscriberData {
        s: i32,
        bit_1: i16,
        sf_type: i16,
        data_a: i16,
    },
    UpdateLocation {
        s: i32,
        vlr_location: i32,
    },
    InsertCallForwarding {
        s: i32,
        sf_type: i16,
        start_time: i16,
        end_time: i16,
        numberx: String,
    },
    DeleteCallForwarding {
        s: i32,
        sf_type: i16,
        start_time: i16,
    },
}

impl Input {
    /// Its type's index in [`KINDS`].
    pub fn kind(&self) -> usize {
        match self {
            Input::GetSubscriberData { .. } => 0,
            Input::GetNewDestination { .. } => 1,
            Input::GetAccessData { .. } => 2,
            Input::UpdateSubscriberData { .. } => 3,
            Input::UpdateLocation { .. } => 4,
            Input::InsertCallForwarding { .. } => 5,
            Input::DeleteCallForwarding { .. } => 6,
        }
    }

    /// The subscriber it is for.
    pub fn subscriber(&self) -> i32 {
        match self {
            Input::GetSubscriberData { s }
            | Input::GetNewDestination { s, .. }
            | Input::GetAccessData { s, .. }
            | Input::UpdateSubscriberData { s, .. }
            | Input::UpdateLocation { s, .. }
            | Input::InsertCallForwarding { s, .. }
            | Input::DeleteCallForwarding { s, .. } => *s,
        }
    }
}

/// A terminal's transactions.
pub struct Inputs {
    rng: SmallRng,
    subscribers: i32,
}

impl Inputs {
    pub fn for_terminal(seed: u64, n: usize, subscribers: u32) -> Inputs {
        Inputs {
            rng: SmallRng::seed_from_u64(seed.wrapping_add(0x5851_f42d_4c95_7f2d_u64.wrapping_mul(n as u64 + 1))),
            subscribers: subscribers as i32,
        }
    }

    pub fn draw(&mut self) -> Input {
        let r = &mut self.rng;
        let s = r.random_range(1..=self.subscribers);
        let mut pick = r.random_range(0..100);
        let kind = KINDS
            .iter()
            .position(|(_, share)| {
                let here = pick < *share;
                pick = pick.saturating_sub(*share);
                here
            })
            .unwrap_or(0);
        let sf_type = r.random_range(1..=4);
        let start_time = START_TIMES[r.random_range(0..3)];
        match kind {
            0 => Input::GetSubscriberData { s },
            1 => Input::GetNewDestination {
                s,
                sf_type,
                start_time,
                end_time: r.random_range(1..=24),
            },
            2 => Input::GetAccessData {
                s,
                ai_type: r.random_range(1..=4),
            },
            3 => Input::UpdateSubscriberData {
                s,
                bit_1: r.random_range(0..2),
                sf_type,
                data_a: r.random_range(0..256),
            },
            4 => Input::UpdateLocation {
                s,
                vlr_location: r.random_range(1..=i32::MAX),
            },
            5 => Input::InsertCallForwarding {
                s,
                sf_type,
                start_time,
                end_time: start_time + r.random_range(1..=8),
                numberx: digits(r, 15),
            },
            _ => Input::DeleteCallForwarding { s, sf_type, start_time },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_has_its_shares() {
        assert_eq!(KINDS.iter().map(|k| k.1).sum::<u32>(), 100);
        let mut inputs = Inputs::for_terminal(1, 0, 1000);
        let mut counts = [0u32; 7];
        for _ in 0..100_000 {
            let i = inputs.draw();
            assert!((1..=1000).contains(&i.subscriber()));
            counts[i.kind()] += 1;
        }
        for (k, (name, share)) in KINDS.iter().enumerate() {
            let got = counts[k] as f64 / 1000.0;
            assert!((got - *share as f64).abs() < 1.0, "{name}: {got} % against {share} %");
        }
    }

    #[test]
    fn a_job_loads_each_subscriber_with_its_rows() {
        let sql = job_statements(3, 1, 250);
        let count = |table: &str| -> usize {
            sql.iter()
                .filter(|s| s.starts_with(&format!("INSERT INTO {table} ")))
                .map(|s| s.matches("), (").count() + 1)
                .sum()
        };
        assert_eq!(count("subscriber"), 250);
        let (ai, sf) = (count("access_info"), count("special_facility"));
        assert!((250..=1000).contains(&ai) && (250..=1000).contains(&sf), "{ai} {sf}");
        assert!(count("call_forwarding") <= sf * 3);
        assert!(sql.iter().any(|s| s.contains("'000000000000250'")));
    }
}
