//! TPC-C's random inputs (specification 5.11, clauses 2.1.6 and 4.3.2): NURand, the
//! customer last names made of syllables, random strings, and the deck of transaction types.

use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

/// The ten syllables of a customer's last name (clause 4.3.2.3).
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The constants C of NURand for one run (clause 2.1.6): one per A, drawn once. The
/// load's C for last names and the run's must differ by the rule of clause 2.1.6.1; a
/// single set drawn at the start serves both here, as the load and the run are one
/// program and the rule only concerns audited runs that load separately.
#[derive(Clone, Copy, Debug)]
pub struct NuConstants {
    pub c_last: u32,
    pub c_id: u32,
    pub ol_i_id: u32,
}

impl NuConstants {
    pub fn draw(rng: &mut SmallRng) -> NuConstants {
        NuConstants {
            c_last: rng.random_range(0..=255),
            c_id: rng.random_range(0..=1023),
            ol_i_id: rng.random_range(0..=8191),
        }
    }
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(rng: &mut SmallRng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    (((rng.random_range(0..=a) | rng.random_range(x..=y)) + c) % (y - x + 1)) + x
}

/// The last name of number `n` (0..=999): its three decimal digits as syllables.
pub fn last_name(n: u32) -> String {
    let n = n % 1000;
    let mut s = String::with_capacity(15);
    s.push_str(SYLLABLES[(n / 100) as usize]);
    s.push_str(SYLLABLES[(n / 10 % 10) as usize]);
    s.push_str(SYLLABLES[(n % 10) as usize]);
    s
}

/// A random alphanumeric string of `min..=max` characters (a-string, clause 4.3.2.2).
pub fn astring(rng: &mut SmallRng, min: usize, max: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let len = rng.random_range(min..=max);
    (0..len)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

/// A random string of digits of `len` characters (n-string).
pub fn nstring(rng: &mut SmallRng, len: usize) -> String {
    (0..len).map(|_| char::from(b'0' + rng.random_range(0..10u8))).collect()
}

/// An i_data or s_data value: 26 to 50 characters, 10 % of them with "ORIGINAL" at a
/// random place (clause 4.3.3.1).
pub fn data_with_original(rng: &mut SmallRng) -> String {
    let mut s = astring(rng, 26, 50);
    if rng.random_range(0..10) == 0 {
        let at = rng.random_range(0..=s.len() - 8);
        s.replace_range(at..at + 8, "ORIGINAL");
    }
    s
}

/// A zip code: four random digits then "11111" (clause 4.3.2.7).
pub fn zip(rng: &mut SmallRng) -> String {
    format!("{}11111", nstring(rng, 4))
}

/// The five transaction types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnType {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl TxnType {
    pub const ALL: [TxnType; 5] = [
        TxnType::NewOrder,
        TxnType::Payment,
        TxnType::OrderStatus,
        TxnType::Delivery,
        TxnType::StockLevel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TxnType::NewOrder => "new_order",
            TxnType::Payment => "payment",
            TxnType::OrderStatus => "order_status",
            TxnType::Delivery => "delivery",
            TxnType::StockLevel => "stock_level",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// The mix as a deck of 100 cards (clause 5.2.4.2: a deck rather than weights keeps the mix
/// exact over every hundred transactions): 45 New-Order, 43 Payment and 4 each of
/// Order-Status, Delivery and Stock-Level (clause 5.2.3's minimums), shuffled and dealt
/// again when empty.
pub struct Deck {
    cards: Vec<TxnType>,
    /// New-Order and Payment only, 50 of each (the Looking Glass paper's mix).
    pairs: bool,
}

impl Deck {
    pub fn new() -> Deck {
        Deck {
            cards: Vec::new(),
            pairs: false,
        }
    }

    /// A deck of 50 New-Orders and 50 Payments.
    pub fn new_order_payment() -> Deck {
        Deck {
            cards: Vec::new(),
            pairs: true,
        }
    }

    pub fn deal(&mut self, rng: &mut SmallRng) -> TxnType {
        if self.cards.is_empty() {
            let full = [
                (TxnType::NewOrder, 45),
                (TxnType::Payment, 43),
                (TxnType::OrderStatus, 4),
                (TxnType::Delivery, 4),
                (TxnType::StockLevel, 4),
            ];
            let pairs = [(TxnType::NewOrder, 50), (TxnType::Payment, 50)];
            for &(t, n) in if self.pairs { &pairs[..] } else { &full[..] } {
                self.cards.extend(std::iter::repeat_n(t, n));
            }
            self.cards.shuffle(rng);
        }
        self.cards.pop().expect("the deck was just filled")
    }
}

impl Default for Deck {
    fn default() -> Self {
        Deck::new()
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn last_names_are_the_specifications_syllables() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_its_range_and_is_skewed() {
        let mut rng = SmallRng::seed_from_u64(1);
        let c = NuConstants::draw(&mut rng);
        let mut counts = vec![0u32; 3001];
        for _ in 0..300_000 {
            let v = nurand(&mut rng, 1023, c.c_id, 1, 3000);
            assert!((1..=3000).contains(&v));
            counts[v as usize] += 1;
        }
        // Uniform would give 100 each; NURand's OR makes some values far more frequent.
        let max = *counts.iter().max().unwrap();
        assert!(max > 300, "the most frequent customer was drawn {max} times");
    }

    #[test]
    fn the_deck_deals_the_mix() {
        let mut rng = SmallRng::seed_from_u64(2);
        let mut deck = Deck::new();
        let mut n = [0u32; 5];
        for _ in 0..100 * 20 {
            n[deck.deal(&mut rng).index()] += 1;
        }
        assert_eq!(n, [900, 860, 80, 80, 80]);
    }

    #[test]
    fn data_strings_have_their_lengths() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut original = 0;
        for _ in 0..10_000 {
            let s = data_with_original(&mut rng);
            assert!((26..=50).contains(&s.len()));
            original += s.contains("ORIGINAL") as u32;
        }
        assert!((800..1200).contains(&original), "{original} of 10,000 say ORIGINAL");
        assert_eq!(zip(&mut rng).len(), 9);
    }
}
