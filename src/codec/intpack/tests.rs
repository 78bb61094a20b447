//! Tests of the intpack codec: round trips, the choice of scheme against the reference
//! lengths, exact bytes of small blocks, and every decoder check.
use super::scheme::{Analysis, NOT_SHORTEST};
use super::word::Word;
use super::*;
use crate::codec::test_data::lcg_next;

const WIDTHS: [u8; 4] = [1, 2, 4, 8];

/// A reproducible generator of 64-bit values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        (lcg_next(&mut self.0) << 32) ^ lcg_next(&mut self.0)
    }

    /// Uniform in `0..bound` (`bound > 0`).
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

/// Values as little-endian `width`-byte integers (each truncated to the width).
fn le(values: &[i64], width: u8) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes()[..usize::from(width)].to_vec())
        .collect()
}

/// Data shapes the codec is for, and some it is not.
fn shapes(values: usize, seed: u64) -> Vec<(&'static str, Vec<i64>)> {
    let mut rng = Rng(seed);
    let mut shapes: Vec<(&'static str, Vec<i64>)> = vec![
        (
            "quantities",
            (0..values).map(|_| 1 + rng.below(50) as i64).collect(),
        ),
        (
            "signed",
            (0..values).map(|_| rng.below(41) as i64 - 20).collect(),
        ),
        ("noise", (0..values).map(|_| rng.next() as i64).collect()),
        ("constant", vec![-3; values]),
    ];
    let mut key = 1_000_000i64;
    shapes.push((
        "sorted keys with runs",
        (0..values)
            .map(|_| {
                if rng.below(4) == 0 {
                    key += 1 + rng.below(3) as i64;
                }
                key
            })
            .collect(),
    ));
    let mut date = 8_000i64;
    shapes.push((
        "rising dates",
        (0..values)
            .map(|_| {
                date += rng.below(3) as i64;
                date + rng.below(5) as i64
            })
            .collect(),
    ));
    let far = [0i64, 1_000_000, -5_000_000_000, 77, i64::MAX, i64::MIN];
    shapes.push((
        "few far values",
        (0..values).map(|_| far[rng.below(6) as usize]).collect(),
    ));
    shapes.push((
        "prices with a few large ones",
        (0..values)
            .map(|_| {
                let price = 9_000 + rng.below(1_000) as i64;
                if rng.below(32) == 0 {
                    price * 40
                } else {
                    price
                }
            })
            .collect(),
    ));
    shapes.push((
        "runs of random values",
        (0..values)
            .scan((0i64, 0u64), |(value, left), _| {
                if *left == 0 {
                    *value = rng.below(1000) as i64;
                    *left = 1 + rng.below(64);
                }
                *left -= 1;
                Some(*value)
            })
            .collect(),
    ));
    shapes
}

fn round_trip(input: &[u8], width: u8) -> Vec<u8> {
    let params = IntpackParams::new(width).unwrap();
    let stream = compress(input, &params);
    assert!(
        stream.len() <= max_compressed_len(input.len(), &params),
        "W={width}, {} bytes: {} over the bound {}",
        input.len(),
        stream.len(),
        max_compressed_len(input.len(), &params)
    );
    assert_eq!(read_header(&stream).unwrap(), (params, input.len() as u64));
    assert_eq!(decompressed_len(&stream).unwrap(), input.len());
    let back = decompress(&stream, input.len()).unwrap();
    assert!(
        back == input,
        "round trip failed, W={width}, {} bytes",
        input.len()
    );
    let mut into = vec![0xAA; input.len()];
    decompress_into(&stream, &mut into).unwrap();
    assert!(into == input);
    stream
}

/// Offset of the first block's encoding in a stream.
fn blocks_at(stream: &[u8]) -> usize {
    decode::read_layout(stream, None).unwrap().blocks_at
}

#[test]
fn params_are_checked() {
    for w in WIDTHS {
        assert_eq!(IntpackParams::new(w).unwrap().width, w);
    }
    for bad in [0, 3, 5, 16] {
        assert!(IntpackParams::new(bad).is_err());
        assert!(try_compress(b"abcd", &IntpackParams { width: bad }).is_err());
    }
    let widths: Vec<u8> = [0, 1, 2, 3, 4, 6, 8, 12, 16, 32]
        .iter()
        .map(|&t| IntpackParams::for_type_width(t).width)
        .collect();
    assert_eq!(widths, [1, 1, 2, 1, 4, 2, 8, 4, 8, 8]);
}

#[test]
fn round_trips_every_width_and_length() {
    for width in WIDTHS {
        let w = usize::from(width);
        // Empty, less than one value, a tail, one value, a short block, exactly one
        // block, one block and a tail, several blocks (the last short), many tasks.
        for values in [0, 1, 2, 7, 1000, 1023, 1024, 1025, 3000, 40_000] {
            for (name, shape) in shapes(values, values as u64 + u64::from(width)) {
                let mut input = le(&shape, width);
                round_trip(&input, width);
                for tail in 1..w {
                    input.push((tail * 37) as u8);
                    round_trip(&input, width);
                }
                let _ = name;
            }
        }
        for len in 0..w {
            round_trip(&vec![0x5A; len], width);
        }
    }
}

#[test]
fn empty_and_tail_only_streams_are_exact() {
    let params = IntpackParams::new(4).unwrap();
    assert_eq!(compress(&[], &params), [1, 4, 0]);
    assert_eq!(compress(&[9, 8, 7], &params), [1, 4, 3, 9, 8, 7]);
    assert_eq!(decompress(&[1, 4, 0], 0).unwrap(), Vec::<u8>::new());
}

#[test]
fn large_input_round_trips_in_parallel() {
    // 9 MiB of 8-byte values: over a thousand blocks, in many rayon tasks.
    let mut rng = Rng(5);
    let values: Vec<i64> = (0..(9 << 20) / 8)
        .map(|i| i / 3 + rng.below(4) as i64)
        .collect();
    let input = le(&values, 8);
    let stream = round_trip(&input, 8);
    assert!(stream.len() * 10 < input.len(), "{}", stream.len());
}

/// The scheme of a single-block stream's only block.
fn only_scheme(values: &[i64], width: u8) -> (Scheme, Vec<u8>) {
    let input = le(values, width);
    let stream = round_trip(&input, width);
    let block = stream[blocks_at(&stream)..].to_vec();
    let mut direct = Vec::new();
    let scheme = encode_block(&input, width, &mut direct).unwrap();
    assert_eq!(direct, block, "encode_block and compress disagree");
    assert_eq!(block[0], scheme as u8);
    assert_eq!(
        choose_scheme(&scheme_lengths(&input, width).unwrap()),
        scheme
    );
    assert_eq!(
        block.len(),
        scheme_lengths(&input, width).unwrap()[scheme as usize]
    );
    (scheme, block)
}

#[test]
fn each_scheme_is_chosen_for_its_shape() {
    let mut rng = Rng(11);
    for width in [4u8, 8] {
        // Random quantities 1..=50: frame of reference, 6 bits.
        let quantities: Vec<i64> = (0..1024).map(|_| 1 + rng.below(50) as i64).collect();
        let (scheme, block) = only_scheme(&quantities, width);
        assert_eq!(scheme, Scheme::Frame);
        assert_eq!(block[1], 6);

        // Strictly rising by 1..=8: delta, 3 bits.
        let mut x = 100_000i64;
        let rising: Vec<i64> = (0..1024)
            .map(|_| {
                x += 1 + rng.below(8) as i64;
                x
            })
            .collect();
        let (scheme, block) = only_scheme(&rising, width);
        assert_eq!(scheme, Scheme::Delta);
        assert_eq!(block[1 + usize::from(width)], 3);

        // Runs of random values: runs with frame values.
        let runs: Vec<i64> = shapes(1024, 3)
            .into_iter()
            .find(|(name, _)| *name == "runs of random values")
            .unwrap()
            .1;
        assert_eq!(only_scheme(&runs, width).0, Scheme::RunsFrame);

        // Sorted keys repeated a few times each: runs with delta values.
        let mut key = 5_000_000i64;
        let keys: Vec<i64> = (0..1024)
            .map(|_| {
                if rng.below(4) == 0 {
                    key += 1 + rng.below(4) as i64;
                }
                key
            })
            .collect();
        assert_eq!(only_scheme(&keys, width).0, Scheme::RunsDelta);

        // Four values far apart in random order: dictionary, 2-bit indices.
        let far = [0i64, 1_000_000, -5_000_000, 77];
        let few: Vec<i64> = (0..1024).map(|_| far[rng.below(4) as usize]).collect();
        let (scheme, block) = only_scheme(&few, width);
        assert_eq!(scheme, Scheme::Dictionary);
        assert_eq!(&block[1..3], &[4, 0]);
        assert_eq!(
            block.len(),
            1 + 2 + delta_frame_len(4, usize::from(width), block_gap_bits(&block, width)) + 256
        );

        // Prices in 1000..2000 with every 32nd one 20_000 higher: 10-bit values (of 15)
        // and 32 exceptions of 5 high bits at positions 0, 32, 64, ...
        let prices: Vec<i64> = (0..1024)
            .map(|j| 1_000 + rng.below(1_000) as i64 + if j % 32 == 0 { 20_000 } else { 0 })
            .collect();
        let (scheme, block) = only_scheme(&prices, width);
        assert_eq!(scheme, Scheme::FrameExceptions);
        let w = usize::from(width);
        let min = *prices.iter().min().unwrap();
        assert_eq!(block[1], 10, "b");
        assert_eq!(&block[2..2 + w], &min.to_le_bytes()[..w], "ref");
        assert_eq!(&block[2 + w..4 + w], &[32, 0], "e");
        assert_eq!(block[4 + w], 15 - 10, "h");
        assert_eq!(block.len(), 5 + w + 1280 + 40 + 20);
        // The first position field (10 bits) is 0, the second 32.
        let positions = 5 + w + 1280;
        assert_eq!(block[positions], 0);
        assert_eq!(block[positions + 1], 32 << 2);
    }
}

/// The `b` of a dictionary block's gaps frame.
fn block_gap_bits(block: &[u8], width: u8) -> u32 {
    u32::from(block[3 + usize::from(width)])
}

#[test]
fn ties_go_to_the_lowest_scheme() {
    assert_eq!(choose_scheme(&[5, 5, 5, 5, 5, 5]), Scheme::Frame);
    assert_eq!(choose_scheme(&[6, 5, 5, 5, 5, 5]), Scheme::Delta);
    assert_eq!(choose_scheme(&[6, 6, 5, 5, 5, 5]), Scheme::RunsFrame);
    assert_eq!(choose_scheme(&[6, 6, 6, 5, 5, 5]), Scheme::RunsDelta);
    assert_eq!(choose_scheme(&[6, 6, 6, 6, 5, 5]), Scheme::Dictionary);
    assert_eq!(choose_scheme(&[6, 6, 6, 6, 6, 5]), Scheme::FrameExceptions);
    // Two 1-byte values one apart: frame 1 + 1 + 1 + 1 bytes, delta 1 + 1 + 1 + 1 (one
    // difference, so b = 0): equal, and the frame is written.
    let lengths = scheme_lengths(&[10, 11], 1).unwrap();
    assert_eq!((lengths[0], lengths[1]), (4, 4));
    assert_eq!(only_scheme(&[10, 11], 1).0, Scheme::Frame);
}

/// The encoder's fast analysis measures exactly what the reference does wherever it
/// measures, and chooses what the reference chooses, over many small and full blocks of
/// every shape (ties included: the test fails if it meets none).
#[test]
fn fast_analysis_agrees_with_the_reference() {
    let mut ties = 0;
    let mut chosen = [0usize; SCHEMES];
    for width in WIDTHS {
        for seed in 0..60u64 {
            let mut rng = Rng(seed);
            let n = match seed % 4 {
                0 => 1 + rng.below(8) as usize,
                1 => 1 + rng.below(100) as usize,
                _ => 1024,
            };
            for (_, shape) in shapes(n, seed * 7 + u64::from(width)) {
                let block = le(&shape, width);
                let reference = scheme_lengths(&block, width).unwrap();
                let (measured, chosen_fast) = fast_lengths(&block, width);
                for (s, (&fast, &exact)) in measured.iter().zip(&reference).enumerate() {
                    assert!(
                        fast == exact || fast == NOT_SHORTEST,
                        "W={width} n={n} scheme {s}: fast {fast} reference {exact}"
                    );
                }
                let want = choose_scheme(&reference);
                assert_eq!(chosen_fast, want, "W={width} n={n} {reference:?}");
                let best = reference[want as usize];
                ties += usize::from(reference.iter().filter(|&&l| l == best).count() > 1);
                chosen[want as usize] += 1;
            }
        }
    }
    assert!(ties > 10, "only {ties} ties");
    assert!(chosen.iter().all(|&c| c > 0), "{chosen:?}");
}

fn fast_lengths(block: &[u8], width: u8) -> ([usize; SCHEMES], Scheme) {
    fn run<T: Word>(block: &[u8]) -> ([usize; SCHEMES], Scheme) {
        let mut analysis = Analysis::<T>::new();
        // Twice, to check that the scratch (the bitmap) is left clean between blocks.
        analysis.run(block);
        analysis.run(block);
        (analysis.lengths, analysis.scheme)
    }
    // The encoder's signed form and the unsigned (sign-flipped) form measure alike.
    fn both<S: Word, U: Word>(block: &[u8]) -> ([usize; SCHEMES], Scheme) {
        let signed = run::<S>(block);
        assert_eq!(signed, run::<U>(block));
        signed
    }
    match width {
        1 => both::<i8, u8>(block),
        2 => both::<i16, u16>(block),
        4 => both::<i32, u32>(block),
        _ => both::<i64, u64>(block),
    }
}

#[test]
fn constant_block_has_b_zero() {
    for width in WIDTHS {
        let (scheme, block) = only_scheme(&[-2; 1024], width);
        assert_eq!(scheme, Scheme::Frame);
        let mut want = vec![0u8, 0];
        want.extend_from_slice(&(-2i64).to_le_bytes()[..usize::from(width)]);
        assert_eq!(block, want);
    }
}

#[test]
fn random_block_has_b_eight_w() {
    let mut rng = Rng(99);
    for width in WIDTHS {
        let w = usize::from(width);
        let mut values: Vec<i64> = (0..1024).map(|_| rng.next() as i64).collect();
        // The signed extremes of the width: max - min is all ones.
        let top = 8 * w as u32 - 1;
        values[10] = i64::MIN >> (63 - top);
        values[20] = i64::MAX >> (63 - top);
        let (scheme, block) = only_scheme(&values, width);
        // Delta ties with the frame here (both 2 + W + 1024 W) and loses the tie.
        assert_eq!(scheme, Scheme::Frame);
        assert_eq!(usize::from(block[1]), 8 * w);
        assert_eq!(block.len(), 2 + w + 1024 * w);
        assert_eq!(&block[2..2 + w], &values[10].to_le_bytes()[..w]);
    }
}

#[test]
fn signed_values_pack_in_their_range() {
    let mut rng = Rng(3);
    let values: Vec<i64> = (0..4096).map(|_| rng.below(41) as i64 - 20).collect();
    for width in WIDTHS {
        let input = le(&values, width);
        let stream = round_trip(&input, width);
        // 6 bits a value (41 values), and a few bytes per block.
        assert!(
            stream.len() <= 4096 * 6 / 8 + 4 * 16 + 8,
            "W={width}: {}",
            stream.len()
        );
        let block = &stream[blocks_at(&stream)..];
        assert_eq!(block[..2], [0, 6]);
        let min = values[..1024].iter().min().unwrap();
        assert_eq!(
            &block[2..2 + usize::from(width)],
            &min.to_le_bytes()[..usize::from(width)]
        );
    }
}

#[test]
fn worst_case_bound_holds_for_noise() {
    let mut rng = Rng(17);
    for width in WIDTHS {
        let params = IntpackParams::new(width).unwrap();
        for len in [0, 1, 9, 8192, 8193, 100_000] {
            let input: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let stream = round_trip(&input, width);
            let bound = max_compressed_len(len, &params);
            assert!(stream.len() <= bound);
            // Full blocks of noise come within a byte or two a block of the bound.
            let blocks = (len / usize::from(width)).div_ceil(BLOCK_VALUES);
            if len >= 8192 {
                assert!(
                    stream.len() + 2 * blocks >= bound,
                    "{} vs {bound}",
                    stream.len()
                );
            }
        }
    }
}

// Decoder checks: each rule of docs/FORMAT.md's "Decoder validation", with the error it
// gives.

/// A stream of the given block encodings for `len` bytes of `width`-byte values (the
/// tail is zeros).
fn stream_of(width: u8, len: usize, blocks: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![VERSION, width];
    varint::write_u64(&mut out, len as u64);
    for b in blocks {
        out.extend_from_slice(&(b.len() as u16).to_le_bytes());
    }
    for b in blocks {
        out.extend_from_slice(b);
    }
    out.extend(std::iter::repeat_n(0, len % usize::from(width)));
    out
}

fn corrupt_with(stream: &[u8], expected: usize, reason: &str) {
    let err = decompress(stream, expected).unwrap_err();
    assert!(
        matches!(&err, CodecError::Corrupt { codec, .. } if *codec == NAME),
        "{err}"
    );
    assert!(
        err.to_string().contains(reason),
        "expected '{reason}', got: {err}"
    );
    let mut out = vec![0u8; expected];
    assert!(decompress_into(stream, &mut out).is_err());
}

#[test]
fn header_errors() {
    corrupt_with(&[], 0, "shorter than its header");
    corrupt_with(&[1, 4], 0, "shorter than its header");
    corrupt_with(&[1, 4, 0x80], 0, "truncated varint");
    corrupt_with(&[2, 4, 0], 0, "unknown version 2");
    corrupt_with(&[1, 3, 0], 0, "value width 3");
    corrupt_with(&[1, 16, 0], 0, "value width 16");
    let stream = compress(&[1, 2, 3, 4, 5, 6, 7, 8], &IntpackParams::new(4).unwrap());
    corrupt_with(&stream, 9, "stream holds 8 bytes, 9 expected");
    corrupt_with(&stream, 7, "stream holds 8 bytes, 7 expected");
    assert!(decompressed_len(&[1, 4]).is_err());
}

#[test]
fn size_table_errors() {
    // 1 MiB claimed by 4 bytes: the table (256 entries) is not there.
    let mut claim = vec![1, 4];
    varint::write_u64(&mut claim, 1 << 20);
    corrupt_with(&claim, 1 << 20, "size table runs past the stream");
    assert!(decompressed_len(&claim).is_err());

    let input: Vec<u8> = (0..5000u32).flat_map(|i| (i * i).to_le_bytes()).collect();
    let stream = compress(&input, &IntpackParams::new(4).unwrap());
    let table = 2 + 3; // version, W and a 3-byte varint of 20000
    assert_eq!(blocks_at(&stream), table + 2 * 5);
    // One byte more or less after the table than the sizes say.
    let mut longer = stream.clone();
    longer.push(0);
    corrupt_with(&longer, input.len(), "its header and size table say");
    corrupt_with(
        &stream[..stream.len() - 1],
        input.len(),
        "its header and size table say",
    );
    let mut bigger = stream.clone();
    bigger[table] = bigger[table].wrapping_add(1);
    corrupt_with(&bigger, input.len(), "its header and size table say");
    // A size below the smallest block encoding.
    let mut tiny = stream.clone();
    tiny[table..table + 2].copy_from_slice(&3u16.to_le_bytes());
    corrupt_with(&tiny, input.len(), "below the smallest encoding");
}

#[test]
fn block_errors() {
    // Blocks of 4 one-byte values (W = 1).
    let n = 4;
    let check = |block: Vec<u8>, reason: &str| corrupt_with(&stream_of(1, n, &[block]), n, reason);
    // A valid block of each scheme first: the crafting is right.
    for (block, want) in [
        (vec![0, 2, 5, 0b1110_0100], [5u8, 6, 7, 8]),
        (vec![1, 5, 0, 1], [5, 6, 7, 8]),
        (vec![2, 2, 0, 0, 5, 0, 2, 0], [5, 5, 5, 5]),
        // Run values 5 and 7 (b = 2, fields 0 and 2), lengths 1 and 3 (ref 1, b = 2).
        (vec![2, 2, 0, 2, 5, 0b1000, 2, 1, 0, 0b1000], [5, 7, 7, 7]),
        (vec![3, 2, 0, 5, 0, 2, 2, 1, 0, 0b1000], [5, 7, 7, 7]),
        // Dictionary 5, 14 (one gap of 9), 1-bit indices 0, 1, 1, 0.
        (vec![4, 2, 0, 5, 0, 9, 0b0110], [5, 14, 14, 5]),
        // Frame with exceptions: ref 5, b = 2, low bits 0, 1, 3, 2; one exception at
        // position 2 with high bits 48 (h = 6): 5 + 3 + 48 * 4 = 200.
        (
            vec![5, 2, 5, 1, 0, 6, 0b1011_0100, 2, 0, 48],
            [5, 6, 200, 7],
        ),
    ] {
        let stream = stream_of(1, n, std::slice::from_ref(&block));
        assert_eq!(decompress(&stream, n).unwrap(), want, "{block:?}");
    }
    check(vec![6, 0, 0], "scheme byte greater than 5");
    check(vec![255, 0, 0], "scheme byte greater than 5");
    // Frames with exceptions: h = 0, b + h > 8w, e of 0 or above n, positions past the
    // block or repeated, and encodings a byte too long or too short.
    let exceptions = |b: u8, e: u16, h: u8, tail: &[u8]| {
        let mut block = vec![5, b, 5];
        block.extend_from_slice(&e.to_le_bytes());
        block.push(h);
        block.push(0b1011_0100);
        block.extend_from_slice(tail);
        block
    };
    check(exceptions(2, 1, 0, &[2, 0]), "h of 0");
    check(exceptions(2, 1, 7, &[2, 0, 48]), "b + h larger than 8w");
    check(exceptions(2, 0, 6, &[]), "exception count e of 0");
    check(
        exceptions(2, 5, 6, &[2, 0, 48]),
        "exception count e of 0 or more than",
    );
    check(
        exceptions(2, 1, 6, &[4, 0, 48]),
        "not ascending or not below",
    );
    // Positions 2 and 2 (10 bits each), high bits 48 and 48 (6 bits each).
    check(
        exceptions(2, 2, 6, &[2, 8, 0, 0x30, 0x0c]),
        "not ascending or not below",
    );
    check(exceptions(2, 1, 6, &[2, 0, 48, 0]), "bytes left after");
    check(
        exceptions(2, 1, 6, &[2, 0]),
        "block ends inside a packed field",
    );
    check(vec![5, 2, 5, 1], "block ends inside a count");
    check(vec![0, 9, 5, 0, 0, 0, 0, 0], "b larger than 8w");
    check(vec![1, 5, 9, 1, 0, 0, 0, 0, 0, 0], "b larger than 8w");
    // Run lengths are 2-byte values: b = 17 is too large.
    check(vec![2, 1, 0, 0, 5, 17, 4, 0, 0, 0, 0], "b larger than 8w");
    check(vec![2, 0, 0, 0, 5, 0, 4, 0], "run count r of 0");
    check(
        vec![2, 5, 0, 0, 5, 0, 1, 0],
        "run count r of 0 or more than",
    );
    check(vec![3, 0, 0, 5, 0, 0, 0, 4, 0], "run count r of 0");
    check(vec![2, 2, 0, 0, 5, 0, 3, 0], "run lengths do not add up");
    check(vec![2, 2, 0, 0, 5, 0, 1, 0], "run lengths do not add up");
    check(
        vec![2, 2, 0, 2, 5, 0b1000, 2, 0, 0, 0b1000],
        "run of length 0",
    );
    check(vec![4, 0, 0, 5, 0, 9, 0, 0], "dictionary size d of 0");
    check(
        vec![4, 5, 0, 5, 0, 9, 0, 0],
        "dictionary size d of 0 or more than",
    );
    // d = 3: indices of 2 bits, one of them 3.
    check(
        vec![4, 3, 0, 5, 0, 9, 0b1100_0000],
        "dictionary index not below d",
    );
    // A frame of no values (d = 1) with b > 0.
    check(vec![4, 1, 0, 5, 1, 0, 0], "frame of no values with b > 0");
    // Not consumed exactly: a byte too many, a byte too few (for each scheme).
    check(vec![0, 2, 5, 0b1110_0100, 0], "bytes left after");
    check(vec![1, 5, 0, 1, 0], "bytes left after");
    check(
        vec![2, 2, 0, 2, 5, 0b1000, 2, 1, 0, 0b1000, 0],
        "bytes left after",
    );
    check(
        vec![3, 2, 0, 5, 0, 2, 2, 1, 0, 0b1000, 0],
        "bytes left after",
    );
    check(vec![4, 2, 0, 5, 0, 9, 0b0110, 0], "bytes left after");
    check(vec![0, 2, 5], "block ends inside a packed field");
    check(vec![4, 2, 0, 5, 0, 9], "block ends inside the indices");
    check(vec![3, 2, 0, 5], "block ends before a frame");
    check(vec![3, 2, 0, 5, 0], "block ends inside a value");
    check(
        vec![2, 2, 0, 2, 5, 0b1000, 2, 1, 0],
        "block ends inside a packed field",
    );
    // Errors name the block.
    let good = vec![0, 0, 1];
    let stream = stream_of(1, 2048 + 1, &[good.clone(), good, vec![7, 0, 0]]);
    corrupt_with(&stream, 2049, "block 2: scheme byte");
    // The per-block entry point checks the same things.
    assert!(decode_block(&[6, 0, 0], &mut [0; 4], 1).is_err());
    assert!(decode_block(&[0, 0, 1], &mut [0; 3], 2).is_err());
    let mut out = [0u8; 4];
    decode_block(&[0, 2, 5, 0b1110_0100], &mut out, 1).unwrap();
    assert_eq!(out, [5, 6, 7, 8]);
}

/// Random byte changes, insertions and truncations of valid streams: an error or the
/// expected length of output, never a panic.
#[test]
fn mutated_streams_never_panic() {
    let mut rng = Rng(2024);
    let mut decoded = 0;
    for width in WIDTHS {
        for (_, shape) in shapes(2500, u64::from(width)) {
            let mut input = le(&shape, width);
            input.push(1);
            let stream = compress(&input, &IntpackParams::new(width).unwrap());
            for _ in 0..150 {
                let mut bad = stream.clone();
                match rng.below(4) {
                    0 => bad.truncate(rng.below(bad.len() as u64) as usize),
                    1 => {
                        let at = rng.below(bad.len() as u64) as usize;
                        bad.insert(at, rng.next() as u8);
                    }
                    _ => {
                        for _ in 0..1 + rng.below(3) {
                            let at = rng.below(bad.len() as u64) as usize;
                            bad[at] ^= 1 << rng.below(8);
                        }
                    }
                }
                if let Ok(out) = decompress(&bad, input.len()) {
                    assert_eq!(out.len(), input.len());
                    decoded += 1;
                }
                let _ = decompressed_len(&bad);
            }
        }
    }
    // Flips inside packed fields decode to other values: some mutations must decode.
    assert!(decoded > 0);
}

/// The dictionary's distinct values are found four ways (a one-word bitmap, a bitmap of
/// the range, radix-sorted offsets, sorted values): each gives the reference's bytes.
#[test]
fn dictionary_is_built_by_every_route() {
    let mut rng = Rng(8);
    for (width, palette) in [
        (1u8, vec![0i64, 5, 63]),
        (8, vec![0, 5, 63]),
        (2, vec![0, 1000, 60_000]),
        (4, vec![-7, 1000, 60_000]),
        (8, vec![0, 1_000_000, 4_000_000_000]),
        (4, vec![-1_000_000_000, 0, 1_000_000_000]),
        (8, vec![0, 1 << 40, -(1 << 40)]),
    ] {
        let values: Vec<i64> = (0..1000)
            .map(|_| palette[rng.below(palette.len() as u64) as usize])
            .collect();
        let (scheme, block) = only_scheme(&values, width);
        assert_eq!(scheme, Scheme::Dictionary, "W={width} {palette:?}");
        assert_eq!(&block[1..3], &[3, 0]);
    }
}

/// The frame decoder (vector kernels and scalar loop) against `pack` for every width,
/// every `b`, counts around the 8-value groups, and fields with and without bytes after
/// them (the kernels' 16-byte loads must stop where the field's bytes do).
#[test]
fn frames_decode_for_every_width_and_bits() {
    let mut rng = Rng(0x5eed);
    for width in WIDTHS {
        let w = usize::from(width);
        for b in 0..=8 * u32::from(width) {
            for count in [1usize, 7, 8, 9, 15, 16, 17, 63, 64, 100, 1023, 1024] {
                let mask = if b == 0 { 0 } else { u64::MAX >> (64 - b) };
                let fields: Vec<u64> = (0..count).map(|_| rng.next() & mask).collect();
                let reference = rng.next();
                let mut field = Vec::new();
                pack(fields.iter().copied(), b, &mut field);
                let expected: Vec<u8> = fields
                    .iter()
                    .flat_map(|&u| u.wrapping_add(reference).to_le_bytes()[..w].to_vec())
                    .collect();
                for trailing in [0usize, 3, 40] {
                    let mut padded = field.clone();
                    padded.resize(field.len() + trailing, 0xA5);
                    let mut out = vec![0u8; count * w];
                    let decode = |out: &mut [u8]| match width {
                        1 => fused::unpack_frame_into(&padded, b, reference as u8, out),
                        2 => fused::unpack_frame_into(&padded, b, reference as u16, out),
                        4 => fused::unpack_frame_into(&padded, b, reference as u32, out),
                        _ => fused::unpack_frame_into(&padded, b, reference, out),
                    };
                    decode(&mut out);
                    assert_eq!(out, expected, "W={w} b={b} count={count} +{trailing} bytes");
                }
            }
        }
    }
}
