//! Stream-level tests: round trips, block framing, and hostile input.

use super::*;
use proptest::prelude::*;

use crate::codec::test_data::{lcg_bytes, lcg_next};

fn text(len: usize) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "the ",
        "quick ",
        "brown ",
        "fox ",
        "jumps ",
        "over ",
        "lazy ",
        "dog ",
        "carefully ",
        "final ",
        "deposits ",
        "sleep ",
    ];
    let mut out = Vec::with_capacity(len + 16);
    let mut x = 99u64;
    while out.len() < len {
        // The state's bits 40.. (lcg_next returns bits 33..).
        out.extend_from_slice(WORDS[((lcg_next(&mut x) >> 7) % 12) as usize].as_bytes());
    }
    out.truncate(len);
    out
}

fn round_trip(data: &[u8], block_size: u32) -> Vec<u8> {
    let params = BwtParams::new(block_size).unwrap();
    let c = compress(data, &params);
    assert!(c.len() <= data.len() + 32 + 10 * data.len().div_ceil(block_size as usize));
    assert_eq!(read_header(&c).unwrap(), (params, data.len() as u64));
    assert_eq!(decompress(&c).unwrap(), data);
    c
}

#[test]
fn params_are_validated() {
    assert!(BwtParams::new(0).is_err());
    assert!(BwtParams::new(MIN_BLOCK_SIZE - 1).is_err());
    assert!(BwtParams::new(MAX_BLOCK_SIZE + 1).is_err());
    assert_eq!(BwtParams::default().block_size, 4 << 20);
    assert!(BwtParams::new(MIN_BLOCK_SIZE).is_ok());
}

#[test]
fn round_trips_edge_inputs() {
    let bs = MIN_BLOCK_SIZE;
    round_trip(b"", bs);
    round_trip(b"x", bs);
    round_trip(b"ab", bs);
    round_trip(&[7u8; 1000], bs);
    round_trip(&[0u8; 200_000], bs);
    let c = round_trip(&[b'z'; 300_000], bs);
    assert!(c.len() < 200, "{}", c.len());
    let r = lcg_bytes(150_000, 1, 256);
    let c = round_trip(&r, bs);
    assert!(c.len() <= r.len() + 60); // stored raw
    round_trip(&lcg_bytes(100_000, 2, 3), bs);
    let all: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    round_trip(&all, bs);
}

#[test]
fn text_compresses_across_block_sizes() {
    let t = text(300_000);
    let small = round_trip(&t, MIN_BLOCK_SIZE).len();
    let big = round_trip(&t, 1 << 20).len();
    assert!(big <= small);
    assert!(t.len() / big > 4, "ratio {}", t.len() as f64 / big as f64);
    // exact block boundaries
    round_trip(&t[..2 * MIN_BLOCK_SIZE as usize], MIN_BLOCK_SIZE);
    round_trip(&t[..2 * MIN_BLOCK_SIZE as usize + 1], MIN_BLOCK_SIZE);
}

#[test]
fn output_independent_of_thread_count() {
    let t = text(400_000);
    let p = BwtParams::new(MIN_BLOCK_SIZE).unwrap();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| compress(&t, &p));
    let many = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap()
        .install(|| compress(&t, &p));
    assert_eq!(one, many);
}

fn small_stream() -> (Vec<u8>, Vec<u8>) {
    let mut data = text(3000);
    data.extend_from_slice(&[b'q'; 500]);
    let c = compress(&data, &BwtParams::new(MIN_BLOCK_SIZE).unwrap());
    (data, c)
}

#[test]
fn truncation_at_every_length_fails() {
    let (_, c) = small_stream();
    for len in 0..c.len() {
        assert!(decompress(&c[..len]).is_err(), "truncated to {len}");
    }
    let mut longer = c.clone();
    longer.push(0);
    assert!(decompress(&longer).is_err());
}

#[test]
fn bit_flips_fail_cleanly() {
    let (data, c) = small_stream();
    for i in 0..c.len() {
        for bit in [0u8, 3, 7] {
            let mut m = c.clone();
            m[i] ^= 1 << bit;
            // the CRC makes any accepted output equal to the original
            if let Ok(out) = decompress(&m) {
                assert_eq!(out, data, "flip at byte {i} bit {bit}");
            }
        }
    }
}

#[test]
fn random_and_hostile_input() {
    for seed in 0..300 {
        let len = (seed * 7 % 200) as usize;
        let mut junk = lcg_bytes(len, seed, 256);
        let _ = decompress(&junk);
        if junk.len() > 8 {
            junk[..5].copy_from_slice(b"CZBW\x01");
            let _ = decompress(&junk);
        }
    }
    // huge claimed lengths
    let mut s = b"CZBW\x01".to_vec();
    varint::write_u64(&mut s, 1 << 20);
    varint::write_u64(&mut s, u64::MAX);
    s.extend_from_slice(&[8, 11, 14]);
    assert!(matches!(
        decompress(&s),
        Err(CodecError::TooLarge { .. }) | Err(CodecError::Corrupt { .. })
    ));
    let mut s = b"CZBW\x01".to_vec();
    varint::write_u64(&mut s, 1 << 20);
    varint::write_u64(&mut s, 1 << 40);
    s.extend_from_slice(&[8, 11, 14]);
    assert!(decompress(&s).is_err());
    assert!(matches!(
        decompress_with_limit(&s, 1 << 30),
        Err(CodecError::TooLarge { .. })
    ));
    // a bwt block claiming 64 MiB with a tiny payload
    let mut s = b"CZBW\x01".to_vec();
    varint::write_u64(&mut s, u64::from(MAX_BLOCK_SIZE));
    varint::write_u64(&mut s, u64::from(MAX_BLOCK_SIZE));
    s.extend_from_slice(&[8, 11, 14, 1, 3, 0, 0, 0, 0, 1, 1, 0]);
    assert!(decompress(&s).is_err());
    // limit is honoured for valid streams
    let (data, c) = small_stream();
    assert!(matches!(
        decompress_with_limit(&c, data.len() - 1),
        Err(CodecError::TooLarge { .. })
    ));
    assert_eq!(decompress_with_limit(&c, data.len()).unwrap(), data);
}

#[test]
fn checksum_is_checked() {
    let (_, mut c) = small_stream();
    let h = parse_header(&c).unwrap();
    // directory entry of block 0: kind, varint, crc
    let (_, used) = varint::read_u64(&c[h.len + 1..], NAME).unwrap();
    c[h.len + 1 + used] ^= 0x55;
    assert!(matches!(decompress(&c), Err(CodecError::Checksum { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn prop_round_trip(data in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..3000)) {
        let c = compress(&data, &BwtParams::new(MIN_BLOCK_SIZE).unwrap());
        prop_assert_eq!(decompress(&c).unwrap(), data);
    }

    #[test]
    fn prop_round_trip_blocks(seed in any::<u64>(), len in 0usize..200_000, modulo in 1u64..20) {
        let data = lcg_bytes(len, seed, modulo);
        let c = compress(&data, &BwtParams::new(MIN_BLOCK_SIZE).unwrap());
        prop_assert_eq!(decompress(&c).unwrap(), data);
    }

    #[test]
    fn prop_garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = decompress(&data);
        let mut d = b"CZBW\x01\x80\x80\x04".to_vec();
        d.extend_from_slice(&data);
        let _ = decompress(&d);
    }
}
