//! Voter's data and its callers: the contestants, the area codes of the United States and
//! Canada with their states (the `area_code_state` table), and the phone calls each
//! terminal makes.
//!
//! As H-Store's generator does: a call comes from a random area code and a random number
//! in it; half the calls vote for the area's favourite contestant and the others for one
//! drawn at random; one call in a hundred names a contestant who does not exist (the
//! fraud the transaction refuses).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The contestant number of the calls that name none that exists.
pub const INVALID_CONTESTANT: i32 = 999;
/// Phone numbers are the area code followed by seven digits.
pub const NUMBERS_PER_AREA: i64 = 10_000_000;

/// Each state's area codes.
pub const AREA_CODES: &[(&str, &[i16])] = &[
    ("AK", &[907]),
    ("AL", &[205, 251, 256, 334]),
    ("AR", &[479, 501, 870]),
    ("AZ", &[480, 520, 602, 623, 928]),
    (
        "CA",
        &[
            209, 213, 310, 323, 341, 369, 408, 415, 424, 442, 510, 530, 559, 562, 619, 626, 627, 628, 650, 661, 669,
            707, 714, 747, 760, 764, 805, 818, 831, 858, 909, 916, 925, 935, 949, 951,
        ],
    ),
    ("CO", &[303, 719, 720, 970]),
    ("CT", &[203, 475, 860, 959]),
    ("DC", &[202]),
    ("DE", &[302]),
    (
        "FL",
        &[
            239, 305, 321, 352, 386, 407, 561, 689, 727, 754, 772, 786, 813, 850, 863, 904, 927, 941, 954,
        ],
    ),
    ("GA", &[229, 404, 470, 478, 678, 706, 762, 770, 912]),
    ("HI", &[808]),
    ("IA", &[319, 515, 563, 641, 712]),
    ("ID", &[208]),
    (
        "IL",
        &[217, 224, 309, 312, 331, 464, 618, 630, 708, 773, 779, 815, 847, 872],
    ),
    ("IN", &[219, 260, 317, 574, 765, 812]),
    ("KS", &[316, 620, 785, 913]),
    ("KY", &[270, 502, 606, 859]),
    ("LA", &[225, 318, 337, 504, 985]),
    ("MA", &[339, 351, 413, 508, 617, 774, 781, 857, 978]),
    ("MD", &[240, 301, 410, 443]),
    ("ME", &[207]),
    (
        "MI",
        &[231, 248, 269, 278, 313, 517, 586, 616, 679, 734, 810, 906, 947, 989],
    ),
    ("MN", &[218, 320, 507, 612, 651, 763, 952]),
    ("MO", &[314, 417, 557, 573, 636, 660, 816, 975]),
    ("MS", &[228, 601, 662, 769]),
    ("MT", &[406]),
    ("NC", &[252, 336, 704, 828, 910, 919, 980, 984]),
    ("ND", &[701]),
    ("NE", &[308, 402]),
    ("NH", &[603]),
    ("NJ", &[201, 551, 609, 732, 848, 856, 862, 908, 973]),
    ("NM", &[505, 575, 957]),
    ("NV", &[702, 775]),
    (
        "NY",
        &[212, 315, 347, 516, 518, 585, 607, 631, 646, 716, 718, 845, 914, 917],
    ),
    ("OH", &[216, 234, 283, 330, 380, 419, 440, 513, 567, 614, 740, 937]),
    ("OK", &[405, 580, 918]),
    ("OR", &[503, 541, 971]),
    ("PA", &[215, 267, 412, 484, 570, 610, 717, 724, 814, 835, 878]),
    ("RI", &[401]),
    ("SC", &[803, 843, 864]),
    ("SD", &[605]),
    ("TN", &[423, 615, 731, 865, 901, 931]),
    (
        "TX",
        &[
            210, 214, 254, 281, 325, 361, 409, 430, 432, 469, 512, 682, 713, 737, 806, 817, 830, 832, 903, 915, 936,
            940, 956, 972, 979,
        ],
    ),
    ("UT", &[385, 435, 801]),
    ("VA", &[236, 276, 434, 540, 571, 703, 757, 804]),
    ("VT", &[802]),
    ("WA", &[206, 253, 360, 425, 509, 564]),
    ("WI", &[262, 414, 608, 715, 920]),
    ("WV", &[304]),
    ("WY", &[307]),
];

/// Every (area code, state), in the table's order.
pub fn area_codes() -> impl Iterator<Item = (i16, &'static str)> {
    AREA_CODES
        .iter()
        .flat_map(|(state, codes)| codes.iter().map(move |&c| (c, *state)))
}

/// A contestant's name.
pub fn contestant_name(n: i32) -> String {
    format!("Contestant {n:02}")
}

/// One call: the vote's id, the caller's number and the contestant voted for.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub vote_id: i64,
    pub phone: i64,
    pub contestant: i32,
}

/// A terminal's calls.
pub struct Caller {
    rng: SmallRng,
    codes: Vec<i16>,
    /// Each area code's favourite contestant, the same for every terminal of a run.
    favourites: Vec<i32>,
    contestants: i32,
    numbers: i64,
    next_id: i64,
    step: i64,
}

impl Caller {
    /// Terminal `n` of `terminals`: its vote ids are `first_id + n`, then every
    /// `terminals`-th one after, so no two terminals' ids meet. `numbers` is how many phone
    /// numbers each area code has (the specification's ten million; fewer make the vote
    /// limit fire).
    pub fn new(seed: u64, n: usize, terminals: usize, contestants: i32, numbers: i64, first_id: i64) -> Caller {
        let mut shared = SmallRng::seed_from_u64(seed);
        let codes: Vec<i16> = area_codes().map(|(c, _)| c).collect();
        let favourites = codes.iter().map(|_| shared.random_range(1..=contestants)).collect();
        Caller {
            rng: SmallRng::seed_from_u64(seed ^ (0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(n as u64 + 1))),
            codes,
            favourites,
            contestants,
            numbers: numbers.clamp(1, NUMBERS_PER_AREA),
            next_id: first_id + n as i64,
            step: terminals.max(1) as i64,
        }
    }

    pub fn call(&mut self) -> Call {
        let area = self.rng.random_range(0..self.codes.len());
        let contestant = if self.rng.random_range(0..100) == 0 {
            INVALID_CONTESTANT
        } else if self.rng.random_bool(0.5) {
            self.favourites[area]
        } else {
            self.rng.random_range(1..=self.contestants)
        };
        let phone = self.codes[area] as i64 * NUMBERS_PER_AREA + self.rng.random_range(0..self.numbers);
        let vote_id = self.next_id;
        self.next_id += self.step;
        Call {
            vote_id,
            phone,
            contestant,
        }
    }
}

/// Votes per INSERT statement of the votes loaded before a run.
pub const VOTES_PER_INSERT: i64 = 1000;

/// The INSERT of the votes loaded before a run with ids `first..=last` (at most
/// [`VOTES_PER_INSERT`] of them). Vote `i` comes from area code `i mod 305` and the number
/// `(i div 305) mod numbers` in it, so the callers take turns and none has more than
/// `votes / (305 * numbers)` votes, rounded up (`VoterOptions::validate` keeps that within
/// the limit); half vote for their area's favourite, as the run's callers do, and every one
/// names a contestant that exists. The ids are below any a run gives
/// (`VoterOptions::first_vote_id`).
pub fn loaded_votes(seed: u64, contestants: i32, numbers: i64, first: i64, last: i64) -> String {
    let mut shared = SmallRng::seed_from_u64(seed);
    let codes: Vec<(i16, &str)> = area_codes().collect();
    let favourites: Vec<i32> = codes.iter().map(|_| shared.random_range(1..=contestants)).collect();
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5bd1_e995_u64.wrapping_mul(first as u64));
    let mut sql = String::from("INSERT INTO votes (vote_id, phone_number, state, contestant_number, created) VALUES ");
    for i in first..=last {
        let area = (i as usize) % codes.len();
        let (code, state) = codes[area];
        let number = (i / codes.len() as i64) % numbers;
        let contestant = if rng.random_bool(0.5) {
            favourites[area]
        } else {
            rng.random_range(1..=contestants)
        };
        if i > first {
            sql.push_str(", ");
        }
        let phone = code as i64 * NUMBERS_PER_AREA + number;
        sql.push_str(&format!("({i}, {phone}, '{state}', {contestant}, now())"));
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaded_votes_are_valid_and_callers_take_turns() {
        let sql = loaded_votes(7, 6, 2, 1, 1000);
        assert_eq!(sql.matches("now())").count(), 1000);
        let codes: Vec<(i16, &str)> = area_codes().collect();
        // Vote 305 is the second number's first vote: area code 0's number 1.
        let (code, state) = codes[0];
        assert!(sql.contains(&format!("(305, {}, '{state}', ", code as i64 * NUMBERS_PER_AREA + 1)));
        // Vote 610 comes back to number 0 (two numbers per area).
        assert!(sql.contains(&format!("(610, {}, '{state}', ", code as i64 * NUMBERS_PER_AREA)));
        assert!(!sql.contains(&format!(", {INVALID_CONTESTANT}, ")));
    }

    #[test]
    fn every_area_code_once_with_a_state() {
        let all: Vec<(i16, &str)> = area_codes().collect();
        assert_eq!(all.len(), 305);
        let mut codes: Vec<i16> = all.iter().map(|(c, _)| *c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), 305, "an area code appears twice");
        assert!(all.iter().all(|(c, s)| (200..1000).contains(c) && s.len() == 2));
    }

    #[test]
    fn calls_are_valid_numbers_with_unique_ids() {
        let mut a = Caller::new(7, 0, 2, 6, 100, 1);
        let mut b = Caller::new(7, 1, 2, 6, 100, 1);
        let (ca, cb): (Vec<Call>, Vec<Call>) = (0..5000).map(|_| (a.call(), b.call())).unzip();
        let mut ids: Vec<i64> = ca.iter().chain(&cb).map(|c| c.vote_id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 10_000);
        let invalid = ca.iter().filter(|c| c.contestant == INVALID_CONTESTANT).count();
        assert!((10..120).contains(&invalid), "{invalid} invalid of 5000");
        for c in ca.iter().filter(|c| c.contestant != INVALID_CONTESTANT) {
            assert!((1..=6).contains(&c.contestant));
            assert!(area_codes().any(|(code, _)| code as i64 == c.phone / NUMBERS_PER_AREA));
            assert!(c.phone % NUMBERS_PER_AREA < 100);
        }
    }
}
