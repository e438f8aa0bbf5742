//! Which record each YCSB operation touches.
//!
//! Ranks are drawn from a Zipfian distribution with constant `s` over `1..=n` (rank 1 the
//! hottest; `s = 0` is uniform), using rejection-inversion sampling so any `s >= 0` works.
//! As in YCSB's scrambled Zipfian generator, ranks are then scattered over the key space,
//! so hot keys are not clustered at the low end; unlike YCSB's hash-mod, the scattering here
//! is a bijection (a Feistel permutation with cycle walking), so every rank maps to its own
//! key and the distribution over keys is exactly the Zipfian one.

use rand::Rng;
use rand_distr::{Distribution, Zipf};

/// A keyed permutation of `0..n`.
#[derive(Debug, Clone)]
pub struct Scrambler {
    n: u64,
    half_bits: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Scrambler {
    pub fn new(n: u64, seed: u64) -> Scrambler {
        assert!(n > 0);
        let bits = (64 - (n - 1).leading_zeros()).max(2);
        let half_bits = bits.div_ceil(2);
        let mut k = seed;
        let keys = [0u64; 4].map(|_| {
            k = k
                .wrapping_mul(0x5851_F42D_4C95_7F2D)
                .wrapping_add(0x1405_7B7E_F767_814F);
            k ^ (k >> 29)
        });
        Scrambler {
            n,
            half_bits,
            mask: (1u64 << half_bits) - 1,
            keys,
        }
    }

    #[inline]
    fn round(&self, x: u64, k: u64) -> u64 {
        let mut z = x.wrapping_add(k).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z ^= z >> 31;
        z.wrapping_mul(0xBF58_476D_1CE4_E5B9) & self.mask
    }

    #[inline]
    fn permute_once(&self, x: u64) -> u64 {
        let mut l = x >> self.half_bits;
        let mut r = x & self.mask;
        for &k in &self.keys {
            let t = r;
            r = l ^ self.round(r, k);
            l = t;
        }
        (l << self.half_bits) | r
    }

    /// The image of `x` (which must be below `n`).
    #[inline]
    pub fn permute(&self, x: u64) -> u64 {
        let mut y = self.permute_once(x);
        while y >= self.n {
            y = self.permute_once(y);
        }
        y
    }
}

/// Draws record keys in `0..n`.
#[derive(Debug, Clone)]
pub struct KeyChooser {
    n: u64,
    zipf: Option<Zipf<f64>>,
    scrambler: Scrambler,
}

impl KeyChooser {
    /// `skew` is the Zipfian constant s; 0 means uniform.
    pub fn new(n: u64, skew: f64) -> Result<KeyChooser, String> {
        if n == 0 {
            return Err("record count must be positive".into());
        }
        if !(skew >= 0.0 && skew.is_finite()) {
            return Err(format!("skew must be a finite number >= 0, got {skew}"));
        }
        let zipf = if skew == 0.0 {
            None
        } else {
            Some(Zipf::new(n as f64, skew).map_err(|e| format!("bad Zipfian parameters: {e}"))?)
        };
        Ok(KeyChooser {
            n,
            zipf,
            scrambler: Scrambler::new(n, 0x7065_726d_6166_726f),
        })
    }

    #[inline]
    pub fn next<R: Rng>(&self, rng: &mut R) -> u64 {
        let rank = match &self.zipf {
            Some(z) => (z.sample(rng) as u64).clamp(1, self.n) - 1,
            None => rng.random_range(0..self.n),
        };
        self.scrambler.permute(rank)
    }

    /// The key of the `rank`-th hottest record (0 = hottest).
    pub fn key_of_rank(&self, rank: u64) -> u64 {
        self.scrambler.permute(rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn scrambler_is_a_permutation() {
        for n in [1u64, 2, 3, 10, 1000, 4097] {
            let s = Scrambler::new(n, 42);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = s.permute(x);
                assert!(y < n);
                assert!(!seen[y as usize], "collision at n={n}");
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn skew_concentrates_accesses_on_few_keys_scattered_over_the_space() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let n = 100_000;
        let hot = KeyChooser::new(n, 1.0).unwrap();
        let mut counts = std::collections::HashMap::new();
        for _ in 0..100_000 {
            *counts.entry(hot.next(&mut rng)).or_insert(0u32) += 1;
        }
        let top = hot.key_of_rank(0);
        // With s = 1 over 1e5 items the top item gets ~8% of accesses.
        assert!(counts[&top] > 5_000, "top key got {}", counts[&top]);
        // Hot keys are not clustered at the low end.
        let top10: Vec<u64> = (0..10).map(|r| hot.key_of_rank(r)).collect();
        assert!(top10.iter().filter(|&&k| k < n / 10).count() < 6, "{top10:?}");
        let uniform = KeyChooser::new(n, 0.0).unwrap();
        let mut c2 = std::collections::HashMap::new();
        for _ in 0..100_000 {
            *c2.entry(uniform.next(&mut rng)).or_insert(0u32) += 1;
        }
        assert!(c2.values().max().unwrap() < &20);
        assert!(KeyChooser::new(n, -1.0).is_err());
    }
}
