//! Tests of the lzss codec: round trips, the exhaustive rule against the fast path, bad input.
use super::*;
use proptest::prelude::*;

const WIDTHS: [u8; 4] = [1, 2, 4, 8];
const WINDOWS: [u8; 5] = [1, 32, 64, 128, 255];
const CHUNKS: [u32; 4] = [2048, 4096, 8192, 16384];

/// Small deterministic generator (xorshift) so the tests need no seeds from outside.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Values from a small alphabet in little-endian `width`-byte integers: repeats at
/// symbol level, the kind of column the codec is for.
fn column(values: usize, width: usize, alphabet: u64, seed: u64) -> Vec<u8> {
    noise(values, seed)
        .iter()
        .flat_map(|&b| (u64::from(b) % alphabet).to_le_bytes()[..width].to_vec())
        .collect()
}

fn text(len: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "the ",
        "quick ",
        "furiously ",
        "deposits ",
        "sleep ",
        "carefully ",
        "final ",
        "packages ",
        "ironic ",
        "requests ",
        "haggle ",
        "blithely ",
    ];
    let mut out = Vec::with_capacity(len + 16);
    for b in noise(len, seed) {
        if out.len() >= len {
            break;
        }
        out.extend_from_slice(WORDS[usize::from(b) % WORDS.len()].as_bytes());
    }
    out.truncate(len);
    out
}

fn round_trip(input: &[u8], params: &LzssParams) -> Vec<u8> {
    let stream = compress(input, params);
    assert!(stream.len() <= max_compressed_len(input.len(), params));
    assert_eq!(read_header(&stream).unwrap(), (*params, input.len() as u64));
    let back = decompress(&stream).unwrap();
    assert!(
        back == input,
        "round trip failed for {params:?}, {} bytes",
        input.len()
    );
    stream
}

/// The exhaustive rule, greedy parse and encoder, chunk by chunk, as a GPU would run
/// them; must equal the fast path byte for byte.
fn reference_compress(input: &[u8], params: &LzssParams) -> Vec<u8> {
    let s = usize::from(params.symbol_width);
    let body = input.len() - input.len() % s;
    let mut sizes = Vec::new();
    let mut payload = Vec::new();
    for chunk in input[..body].chunks(params.chunk_size as usize) {
        let matches = find_matches(chunk, params.symbol_width, params.window);
        let tokens = greedy_parse(&matches);
        sizes.push(encode_tokens(chunk, params.symbol_width, &tokens, &mut payload) as u16);
    }
    let mut out = Vec::new();
    write_header(&mut out, params, input.len() as u64);
    sizes
        .iter()
        .for_each(|s| out.extend_from_slice(&s.to_le_bytes()));
    out.extend_from_slice(&payload);
    out.extend_from_slice(&input[body..]);
    out
}

#[test]
fn params_are_checked() {
    assert_eq!(
        LzssParams::default(),
        LzssParams::new(1, 128, 2048).unwrap()
    );
    assert!(LzssParams::new(3, 128, 2048).is_err());
    assert!(LzssParams::new(16, 128, 2048).is_err());
    assert!(LzssParams::new(4, 0, 2048).is_err());
    assert!(LzssParams::new(4, 1, 2040).is_err());
    assert!(LzssParams::new(4, 1, 2052).is_err());
    assert!(LzssParams::new(4, 1, 16392).is_err());
    assert!(LzssParams::new(8, 255, 16384).is_ok());
    let windows: Vec<u8> = (1..=4)
        .map(|l| LzssParams::window_for_level(l).unwrap())
        .collect();
    assert_eq!(windows, [32, 64, 128, 255]);
    assert!(LzssParams::window_for_level(0).is_err());
    assert!(LzssParams::window_for_level(5).is_err());
    let bad = LzssParams {
        symbol_width: 3,
        window: 1,
        chunk_size: 2048,
    };
    assert!(try_compress(b"abc", &bad).is_err());
}

#[test]
fn round_trips_every_parameter_combination() {
    for &s in &WIDTHS {
        let inputs: Vec<Vec<u8>> = vec![
            Vec::new(),
            vec![7],
            vec![0x55; 20_001],
            noise(9_000 + usize::from(s) - 1, u64::from(s)),
            column(5_000, usize::from(s), 20, 3),
            text(6_003, 4),
            b"abcabcabd".repeat(1000),
        ];
        for &w in &WINDOWS {
            for &c in &CHUNKS {
                let params = LzssParams::new(s, w, c).unwrap();
                for input in &inputs {
                    round_trip(input, &params);
                }
            }
        }
    }
}

#[test]
fn lengths_not_a_multiple_of_the_symbol() {
    for &s in &WIDTHS {
        let params = LzssParams::new(s, 64, 2048).unwrap();
        let base = column(3000, 8, 10, 9);
        for len in [1, 2, 3, 5, 7, 9, 2047, 2049, 2055, 4095, 4097, 4103] {
            let stream = round_trip(&base[..len], &params);
            let tail = len % usize::from(s);
            assert_eq!(stream[stream.len() - tail..], base[len - tail..len]);
        }
    }
}

#[test]
fn fast_path_equals_the_reference_rule() {
    for &s in &WIDTHS {
        for &w in &[1u8, 3, 32, 255] {
            let params = LzssParams::new(s, w, 2048).unwrap();
            let inputs = [
                column(1500, usize::from(s), 6, 11),
                column(700, 4, 3, 12),
                text(5000, 13),
                noise(3000, 14),
                vec![9; 4096 + 8],
                b"aab".repeat(1400),
                [noise(600, 15), noise(600, 15), vec![1; 700], noise(600, 16)].concat(),
            ];
            for input in &inputs {
                assert_eq!(
                    compress(input, &params),
                    reference_compress(input, &params),
                    "{params:?}"
                );
            }
        }
    }
}

#[test]
fn incompressible_chunks_are_stored() {
    let params = LzssParams::default();
    let input = noise(64 * 1024, 21);
    let stream = round_trip(&input, &params);
    let chunks = input.len() / 2048;
    assert_eq!(stream.len(), max_compressed_len(input.len(), &params));
    assert_eq!(stream.len(), input.len() + 2 * chunks + 5 + 3);
}

#[test]
fn runs_and_repeats_compress_well() {
    for &s in &WIDTHS {
        let params = LzssParams::new(s, 128, 4096).unwrap();
        let zeros = round_trip(&vec![0; 1 << 16], &params);
        assert!(zeros.len() < (1 << 16) / 50, "S={s}: {}", zeros.len());
        let pattern = round_trip(&column(40, usize::from(s), 256, 5).repeat(400), &params);
        assert!(pattern.len() < 40 * 400 * usize::from(s) / 8, "S={s}");
    }
}

#[test]
fn overlapping_matches_decode() {
    // One literal then one match of distance 1 covering the rest, for every width.
    for &s in &WIDTHS {
        let su = usize::from(s);
        let params = LzssParams::new(s, 4, 2048).unwrap();
        let mut input = vec![0u8; 2048];
        for (k, b) in input.iter_mut().enumerate() {
            *b = (k % su) as u8 + 1;
        }
        let stream = compress(&input, &params);
        assert_eq!(decompress(&stream).unwrap(), input);
    }
    let mut out = *b"abc.........";
    copy_match(&mut out, 3, 3, 9);
    assert_eq!(&out, b"abcabcabcabc");
    let mut out = *b"ab....";
    copy_match(&mut out, 2, 1, 4);
    assert_eq!(&out, b"abbbbb");
}

#[test]
fn choose_symbol_width_follows_the_data() {
    // 30 distinct random 32-bit values: only whole values repeat.
    let table: Vec<u32> = noise(120, 30)
        .chunks(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let ints: Vec<u8> = noise(16 * 1024, 31)
        .iter()
        .flat_map(|&b| table[usize::from(b) % 30].to_le_bytes())
        .collect();
    assert_eq!(choose_symbol_width(&ints, 4, 128, 2048), 4);
    assert_eq!(choose_symbol_width(&ints, 12, 128, 2048), 4);
    let table: Vec<u64> = noise(240, 32)
        .chunks(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let longs: Vec<u8> = noise(8 * 1024, 33)
        .iter()
        .flat_map(|&b| table[usize::from(b) % 30].to_le_bytes())
        .collect();
    assert_eq!(choose_symbol_width(&longs, 8, 128, 2048), 8);
    // Small integers: their zero bytes repeat across values, S=1 compresses best.
    assert_eq!(
        choose_symbol_width(&column(16 * 1024, 4, 50, 34), 4, 128, 2048),
        1
    );
    assert_eq!(choose_symbol_width(&ints, 3, 128, 2048), 1);
    assert_eq!(choose_symbol_width(&ints, 0, 128, 2048), 1);
    assert_eq!(choose_symbol_width(&[], 8, 128, 2048), 8);
    // Text stored in "8-byte values" repeats at byte level only: fall back to S=1.
    let words = text(32 * 1024, 33);
    assert_eq!(choose_symbol_width(&words, 8, 128, 2048), 1);
}

fn sample_stream() -> (Vec<u8>, Vec<u8>) {
    let mut input = column(1200, 2, 12, 41);
    input.extend_from_slice(&noise(2100, 42));
    input.push(0xAB);
    let params = LzssParams::new(2, 32, 2048).unwrap();
    (compress(&input, &params), input)
}

#[test]
fn truncated_streams_are_errors() {
    let (stream, _) = sample_stream();
    for len in 0..stream.len() {
        assert!(
            decompress(&stream[..len]).is_err(),
            "prefix of {len} bytes decoded"
        );
    }
    let mut longer = stream.clone();
    longer.push(0);
    assert!(decompress(&longer).is_err());
}

#[test]
fn bit_flips_never_panic() {
    let (stream, input) = sample_stream();
    let mut wrong = 0;
    for byte in 0..stream.len() {
        for bit in 0..8 {
            let mut bad = stream.clone();
            bad[byte] ^= 1 << bit;
            if let Ok(out) = decompress(&bad) {
                wrong += usize::from(out != input);
            }
        }
    }
    // Flips in literal bytes, lengths or distances can decode to other valid output.
    assert!(wrong > 0);
}

#[test]
fn random_streams_are_errors_or_bounded() {
    for seed in 0..300 {
        let mut junk = noise(64 + seed as usize * 3, seed);
        // Also a plausible header so the chunk decoder sees junk too.
        if seed % 2 == 0 {
            junk[..5].copy_from_slice(&[1, [1, 2, 4, 8][seed as usize % 4], 200, 0, 8]);
        }
        if let Ok(out) = decompress_with_limit(&junk, 1 << 20) {
            assert!(out.len() < 1 << 20);
        }
    }
}

#[test]
fn huge_claims_are_refused_before_allocating() {
    for claimed in [u64::MAX, 1 << 62, 1 << 40, 1 << 20] {
        let mut stream = vec![VERSION, 4, 128, 0, 8];
        varint::write_u64(&mut stream, claimed);
        stream.extend_from_slice(&[0; 16]);
        assert!(decompress(&stream).is_err());
        assert!(matches!(
            decompress_with_limit(&stream, 1000),
            Err(CodecError::TooLarge { limit: 1000, .. })
        ));
    }
    let stream = compress(&[1u8; 5000], &LzssParams::default());
    assert!(matches!(
        decompress_with_limit(&stream, 4999),
        Err(CodecError::TooLarge { .. })
    ));
    assert_eq!(
        decompress_with_limit(&stream, 5000).unwrap(),
        vec![1u8; 5000]
    );
}

#[test]
fn header_fields_are_validated() {
    let stream = compress(
        &column(3000, 4, 9, 51),
        &LzssParams::new(4, 64, 4096).unwrap(),
    );
    for (at, value) in [(0, 2u8), (1, 3), (1, 0), (2, 0), (3, 1), (4, 0), (4, 0x41)] {
        let mut bad = stream.clone();
        bad[at] = value;
        assert!(
            read_header(&bad).is_err() || decompress(&bad).is_err(),
            "{at}={value}"
        );
    }
}

#[test]
fn handmade_chunks_are_checked() {
    let params = LzssParams::new(1, 4, 2048).unwrap();
    let mut out = vec![0u8; 8];
    // T=2: literal 'a', then a match of 4+3=7 symbols at distance 1.
    let good = [2, 0, 0b10, b'a', 4, 1];
    decode_chunk(&good, &mut out, &params).unwrap();
    assert_eq!(out, b"aaaaaaaa");
    let cases: [&[u8]; 8] = [
        &[2, 0, 0b10, b'a', 4, 0],    // distance 0
        &[2, 0, 0b10, b'a', 4, 5],    // distance past the window
        &[2, 0, 0b01, b'a', 4, 1],    // match before any output
        &[2, 0, 0b10, b'a', 5, 1],    // passes the chunk end
        &[2, 0, 0b10, b'a', 3, 1],    // leaves the chunk short
        &[0, 0, 0, 0, 0],             // no tokens
        &[2, 0, 0b110, b'a', 4, 1],   // padding bit set
        &[7, 0, 0, b'a', b'b', b'c'], // sections do not add up
    ];
    for case in cases {
        assert!(decode_chunk(case, &mut out, &params).is_err(), "{case:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn proptest_round_trips(
        data in proptest::collection::vec(0u8..6, 0..9000),
        s_idx in 0usize..4,
        w in 1u8..=255,
        c_idx in 0usize..4,
    ) {
        let params = LzssParams::new(WIDTHS[s_idx], w, CHUNKS[c_idx]).unwrap();
        let stream = compress(&data, &params);
        prop_assert_eq!(decompress(&stream).unwrap(), data);
    }

    #[test]
    fn proptest_reference_equality(
        data in proptest::collection::vec(0u8..4, 0..3000),
        s_idx in 0usize..4,
        w in 1u8..=255,
    ) {
        let params = LzssParams::new(WIDTHS[s_idx], w, 2048).unwrap();
        prop_assert_eq!(compress(&data, &params), reference_compress(&data, &params));
    }

    #[test]
    fn proptest_garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = decompress_with_limit(&data, 1 << 22);
    }
}

#[test]
fn decompress_into_matches_decompress_and_checks_the_length() {
    for (len, s) in [(0usize, 1u8), (5, 4), (100_003, 2), (3 << 20, 4)] {
        let data = column(len / usize::from(s) + 1, usize::from(s), 7, len as u64)[..len].to_vec();
        let params = LzssParams::new(s, 128, 2048).unwrap();
        let stream = compress(&data, &params);
        let mut out = vec![0xAAu8; len];
        decompress_into(&stream, &mut out).unwrap();
        assert_eq!(out, data, "len {len}");
        let mut short = vec![0u8; len.saturating_sub(1)];
        if len > 0 {
            assert!(matches!(
                decompress_into(&stream, &mut short),
                Err(CodecError::TooLarge { .. })
            ));
        }
        let mut long = vec![0u8; len + 1];
        let err = decompress_into(&stream, &mut long).unwrap_err();
        assert!(err.to_string().contains("expected"), "{err}");
    }
}

/// The chunk decoder as plainly as the spec reads, one token and one byte at a time, every
/// check at its token: the fast decoder must give the same bytes, and fail exactly when
/// this one does. `None` is an error.
fn reference_decode_chunk(
    payload: &[u8],
    out_len: usize,
    s: usize,
    window: usize,
) -> Option<Vec<u8>> {
    if payload.len() == out_len {
        return Some(payload.to_vec());
    }
    if payload.len() > out_len || payload.len() < 2 {
        return None;
    }
    let tokens = usize::from(u16::from_le_bytes([payload[0], payload[1]]));
    if tokens == 0 || tokens > out_len / s {
        return None;
    }
    let flag_len = tokens.div_ceil(8);
    let flags = payload.get(2..2 + flag_len)?;
    let bit = |t: usize| (flags[t / 8] >> (t % 8)) & 1 == 1;
    if (tokens..flag_len * 8).any(bit) {
        return None;
    }
    let matches = (0..tokens).filter(|&t| bit(t)).count();
    let literal_bytes = (tokens - matches) * s;
    let rest = &payload[2 + flag_len..];
    if rest.len() != literal_bytes + 2 * matches {
        return None;
    }
    let (literals, rest) = rest.split_at(literal_bytes);
    let (lengths, dists) = rest.split_at(matches);
    let mut out = Vec::with_capacity(out_len);
    let (mut l, mut k) = (0, 0);
    for t in 0..tokens {
        if bit(t) {
            let len = (usize::from(lengths[k]) + min_match_len(s as u8)) * s;
            let dist = usize::from(dists[k]) * s;
            k += 1;
            if dist == 0 || dist > window * s || dist > out.len() || out.len() + len > out_len {
                return None;
            }
            for _ in 0..len {
                out.push(out[out.len() - dist]);
            }
        } else {
            if out.len() + s > out_len {
                return None;
            }
            out.extend_from_slice(&literals[l..l + s]);
            l += s;
        }
    }
    (out.len() == out_len).then_some(out)
}

/// A chunk of `m` symbols made of random tokens (matches of every distance up to the
/// window, most of them overlapping their source, and of every length), and its tokens.
fn random_chunk(m: usize, s: u8, window: u8, seed: u64) -> (Vec<u8>, Vec<Token>) {
    let su = usize::from(s);
    let (min, max) = (min_match_len(s), max_match_len(s));
    let r = noise(4 * m + 16, seed);
    let mut r = r.iter().map(|&b| usize::from(b));
    let mut next = move || r.next().unwrap_or(0);
    let mut chunk: Vec<u8> = Vec::with_capacity(m * su);
    let mut tokens = Vec::new();
    let mut pos = 0;
    while pos < m {
        let left = m - pos;
        if pos == 0 || left < min || next() % 3 == 0 {
            for _ in 0..su {
                chunk.push((next() % 5) as u8);
            }
            tokens.push(Token::Literal { pos: pos as u32 });
            pos += 1;
            continue;
        }
        let reach = usize::from(window).min(pos);
        // Short distances (overlapping copies) half of the time.
        let dist = 1 + if next() % 2 == 0 {
            next() % reach.min(16)
        } else {
            next() % reach
        };
        let longest = max.min(left);
        let len = match next() % 4 {
            0 => longest,
            1 => min + next() % (longest - min + 1).min(8),
            _ => min + (next() * 7 + next()) % (longest - min + 1),
        };
        for _ in 0..len * su {
            chunk.push(chunk[chunk.len() - dist * su]);
        }
        tokens.push(Token::Match {
            pos: pos as u32,
            m: Match {
                len: len as u16,
                dist: dist as u8,
            },
        });
        pos += len;
    }
    (chunk, tokens)
}

#[test]
fn decoder_equals_the_plain_decoder_on_random_and_damaged_chunks() {
    let mut seed = 1u64;
    for &s in &WIDTHS {
        let su = usize::from(s);
        for &w in &[1u8, 2, 3, 7, 16, 33, 128, 255] {
            for &c in &[2048u32, 16384] {
                let params = LzssParams::new(s, w, c).unwrap();
                for m in [1, 2, 17, 100, c as usize / su / 2 + 3, c as usize / su] {
                    seed += 1;
                    let (chunk, tokens) = random_chunk(m, s, w, seed);
                    let mut payload = Vec::new();
                    encode_tokens(&chunk, s, &tokens, &mut payload);
                    let expected =
                        reference_decode_chunk(&payload, chunk.len(), su, usize::from(w));
                    assert_eq!(expected.as_deref(), Some(&chunk[..]), "{params:?} m={m}");
                    // The intact payload, then damaged copies: one changed byte anywhere,
                    // changed match bytes (lengths and distances sit at the end), a cut.
                    let mut cases = vec![payload.clone()];
                    let flips = noise(24, seed ^ 0x55);
                    for (k, &f) in flips.iter().enumerate() {
                        let mut bad = payload.clone();
                        let at = if k % 2 == 0 {
                            usize::from(f) * 131 % bad.len()
                        } else {
                            bad.len() - 1 - usize::from(f) % bad.len().min(40)
                        };
                        bad[at] ^= f | 1;
                        cases.push(bad);
                    }
                    cases.push(payload[..payload.len() - 1].to_vec());
                    for case in &cases {
                        let mut out = vec![0xA5u8; chunk.len()];
                        let got = decode_chunk(case, &mut out, &params).ok().map(|()| out);
                        let want = reference_decode_chunk(case, chunk.len(), su, usize::from(w));
                        assert_eq!(got, want, "{params:?} m={m}");
                    }
                }
            }
        }
    }
}

#[test]
fn fast_path_equals_the_reference_rule_on_periodic_inputs() {
    // Repeats at every period up to the window (in bytes, so also periods that are not
    // whole symbols), with a changed byte now and then: long overlapping matches, ties
    // between distances, matches cut by the chunk end and by the length cap.
    for &s in &WIDTHS {
        let su = usize::from(s);
        for &w in &[1u8, 2, 5, 32, 255] {
            for &c in &[2048u32, 16384] {
                let params = LzssParams::new(s, w, c).unwrap();
                let mut periods: Vec<usize> = (1..=2 * su + 1).collect();
                periods.extend([usize::from(w) * su, usize::from(w) * su + 1, 3 * su + 1]);
                for p in periods {
                    let unit = noise(p, p as u64 + u64::from(w));
                    let mut input = unit.repeat(c as usize / p + 40);
                    for k in (0..input.len()).step_by(997) {
                        input[k] = input[k].wrapping_add(1);
                    }
                    let stream = compress(&input, &params);
                    assert_eq!(
                        stream,
                        reference_compress(&input, &params),
                        "{params:?} period {p}"
                    );
                    assert_eq!(decompress(&stream).unwrap(), input);
                }
            }
        }
    }
}
