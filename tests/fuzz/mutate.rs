//! The mutation engine: byte-level operations that know the shapes colzip's formats are
//! made of (little-endian u16/u32/u64 fields, LEB128 varints, length-prefixed ranges),
//! applied one to four at a time, with splices from other seeds. Deterministic from the
//! seed of the random generator, so every failure names an input that can be replayed.

/// xorshift64* (small, fast, good enough to pick mutations).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // splitmix64 of the seed, so that consecutive seeds give unrelated streams
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Values that sit on the edges of the formats' fields.
const INTERESTING: [u64; 40] = [
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    15,
    16,
    31,
    32,
    63,
    64,
    65,
    127,
    128,
    255,
    256,
    257,
    1023,
    1024,
    2047,
    2048,
    4095,
    4096,
    16383,
    16384,
    32767,
    32768,
    65535,
    65536,
    1 << 20,
    1 << 24,
    1 << 26,
    (1 << 31) - 1,
    1 << 31,
    u32::MAX as u64,
    1 << 36,
    u64::MAX,
];

fn interesting(rng: &mut Rng) -> u64 {
    let v = INTERESTING[rng.below(INTERESTING.len())];
    match rng.below(4) {
        0 => v.wrapping_sub(1),
        1 => v.wrapping_add(1),
        _ => v,
    }
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// Applies one to four mutations to `data`; `others` are seeds to splice from.
pub fn mutate(rng: &mut Rng, data: &mut Vec<u8>, others: &[&[u8]]) {
    let count = 1 + rng.below(4);
    for _ in 0..count {
        mutate_once(rng, data, others);
    }
}

fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, others: &[&[u8]]) {
    let len = data.len();
    if len == 0 {
        let n = 1 + rng.below(16);
        data.extend(rng.bytes(n));
        return;
    }
    let pos = rng.below(len);
    match rng.below(16) {
        0 => data[pos] ^= 1 << rng.below(8),
        1 => data[pos] = rng.next() as u8,
        2 => data[pos] = interesting(rng) as u8,
        3 => {
            let delta = 1 + rng.below(8) as u8;
            data[pos] = if rng.chance(2) {
                data[pos].wrapping_add(delta)
            } else {
                data[pos].wrapping_sub(delta)
            };
        }
        4..=6 => {
            let width = [2, 4, 8][rng.below(3)];
            let bytes = interesting(rng).to_le_bytes();
            let end = (pos + width).min(len);
            data[pos..end].copy_from_slice(&bytes[..end - pos]);
        }
        7 => {
            // A varint at `pos` (if one parses there) replaced by another value.
            let mut end = pos;
            while end < len && end - pos < 10 && data[end] & 0x80 != 0 {
                end += 1;
            }
            let end = (end + 1).min(len);
            let value = varint(interesting(rng));
            data.splice(pos..end, value);
        }
        8 => {
            let n = 1 + rng.below(16);
            let bytes = rng.bytes(n);
            data.splice(pos..pos, bytes);
        }
        9 => {
            let n = 1 + rng.below(64.min(len - pos));
            data.drain(pos..pos + n);
        }
        10 => {
            let n = 1 + rng.below(256.min(len - pos));
            let copy = data[pos..pos + n].to_vec();
            let at = rng.below(len + 1);
            data.splice(at..at, copy);
        }
        11 => {
            let n = 1 + rng.below(256.min(len - pos));
            let from = rng.below(len - n + 1);
            let copy = data[from..from + n].to_vec();
            data[pos..pos + n].copy_from_slice(&copy);
        }
        12 => {
            if let Some(other) = (!others.is_empty()).then(|| others[rng.below(others.len())])
                && !other.is_empty()
            {
                let from = rng.below(other.len());
                let n = 1 + rng.below((other.len() - from).min(512));
                let end = (pos + n).min(len);
                data.splice(pos..end, other[from..from + n].iter().copied());
            }
        }
        13 => data.truncate(pos),
        14 => {
            let n = 1 + rng.below(32);
            data.extend(rng.bytes(n));
        }
        _ => {
            let n = 1 + rng.below(64.min(len - pos));
            let at = rng.below(len - n + 1);
            if at + n <= pos || pos + n <= at {
                for k in 0..n {
                    data.swap(pos + k, at + k);
                }
            }
        }
    }
}
