//! Reproducible test inputs shared by the codecs' unit tests (no dependency).

/// One step of a 64-bit linear congruential generator: the new state's top 31 bits.
pub fn lcg_next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// `len` bytes below `modulo` from the generator seeded with `seed`.
pub fn lcg_bytes(len: usize, seed: u64, modulo: u64) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| (lcg_next(&mut state) % modulo) as u8)
        .collect()
}
