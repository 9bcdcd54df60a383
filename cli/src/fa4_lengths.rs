//! The sequence lengths of ../shared/anchors/fa4_bench.py's varlen mode for a seed, so that `flashgen bench
//! --varlen SEED` times exactly the batch FlashAttention-4 was timed on. fa4_bench.py draws them with
//! Python's `random.Random(seed).randint(256, 4096)` until 16384 tokens are packed (the last one cut to fit);
//! this is that generator: CPython's Mersenne Twister (MT19937, seeded by `init_by_array` with the seed's
//! 32-bit words) and its `randint` (rejection sampling on `getrandbits(n.bit_length())`).

/// Tokens fa4_bench.py packs per batch.
pub const TOTAL_TOKENS: usize = 16384;
const SHORTEST: u32 = 256;
const LONGEST: u32 = 4096;

struct Mt19937 {
    state: [u32; 624],
    index: usize,
}

impl Mt19937 {
    fn init_genrand(seed: u32) -> Mt19937 {
        let mut state = [0u32; 624];
        state[0] = seed;
        for i in 1..624 {
            state[i] = 1_812_433_253u32.wrapping_mul(state[i - 1] ^ (state[i - 1] >> 30)).wrapping_add(i as u32);
        }
        Mt19937 { state, index: 624 }
    }

    /// CPython's seeding of an integer seed: `init_by_array` over its 32-bit words, least significant first
    /// (one word, 0, for seed 0).
    fn from_seed(seed: u64) -> Mt19937 {
        let mut key = vec![seed as u32];
        if seed >> 32 != 0 {
            key.push((seed >> 32) as u32);
        }
        let mut mt = Mt19937::init_genrand(19_650_218);
        let s = &mut mt.state;
        let (n, len) = (624usize, key.len());
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..n.max(len) {
            s[i] = (s[i] ^ (s[i - 1] ^ (s[i - 1] >> 30)).wrapping_mul(1_664_525)).wrapping_add(key[j]).wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= n {
                s[0] = s[n - 1];
                i = 1;
            }
            if j >= len {
                j = 0;
            }
        }
        for _ in 0..n - 1 {
            s[i] = (s[i] ^ (s[i - 1] ^ (s[i - 1] >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= n {
                s[0] = s[n - 1];
                i = 1;
            }
        }
        s[0] = 0x8000_0000;
        mt
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            for k in 0..624 {
                let y = (self.state[k] & 0x8000_0000) | (self.state[(k + 1) % 624] & 0x7fff_ffff);
                let mut v = self.state[(k + 397) % 624] ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.state[k] = v;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.randint(lo, hi)`: lo + a uniform draw below hi - lo + 1 by rejection on its bit length.
    fn randint(&mut self, lo: u32, hi: u32) -> u32 {
        let n = hi - lo + 1;
        let bits = 32 - n.leading_zeros();
        loop {
            let r = self.next_u32() >> (32 - bits);
            if r < n {
                return lo + r;
            }
        }
    }
}

/// fa4_bench.py's varlen lengths for `seed`: 256..4096 tokens each, 16384 in all.
pub fn lengths(seed: u64) -> Vec<usize> {
    let mut rng = Mt19937::from_seed(seed);
    let mut lens = Vec::new();
    let mut total = 0;
    while total < TOTAL_TOKENS {
        let n = (rng.randint(SHORTEST, LONGEST) as usize).min(TOTAL_TOKENS - total);
        lens.push(n);
        total += n;
    }
    lens
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_lengths_are_pythons() {
        // python3 -c "import random; r = random.Random(0); ..." as fa4_bench.py draws them
        assert_eq!(super::lengths(0), [3714, 1833, 3360, 3902, 1978, 421, 1176]);
        assert_eq!(super::lengths(1), [806, 2587, 3727, 3542, 3384, 514, 1300, 524]);
    }
}
