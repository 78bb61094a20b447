//! `intpack` on the GPU, through the batched interface (ordinary, caller's and pinned
//! memory) and the device-resident form, writes exactly the CPU reference's bytes for
//! every width and every scheme, each side decodes the other's streams, and a corrupt
//! stream is an error on the GPU exactly when it is one on the CPU. Without a GPU these
//! tests say they were skipped; with `COLZIP_REQUIRE_GPU=1` a missing GPU is a failure.

mod common;

use colzip::codec::intpack::{self, BLOCK_VALUES, IntpackParams, Scheme};
use colzip::codec::{Codec, CodecId, Placement};
use colzip::gpu::Gpu;
use common::{Rng, cases, gpu_compress, gpu_decompress, gpu_or_skip, tpch_lineitem_columns};

const WIDTHS: [u8; 4] = [1, 2, 4, 8];

/// `values` as little-endian integers of `width` bytes (the low bytes of each).
fn pack_values(values: impl IntoIterator<Item = i64>, width: u8) -> Vec<u8> {
    values
        .into_iter()
        .flat_map(|v| v.to_le_bytes()[..usize::from(width)].to_vec())
        .collect()
}

/// `n` values of sixteen small ones (-100..-85) with every 30th one far above them (100):
/// scheme 5, frame with exceptions, wins at every width (W = 1 included).
fn small_values_far_outliers(n: usize) -> Vec<i64> {
    (0..n as i64)
        .map(|i| {
            if i % 30 == 7 {
                100
            } else {
                -100 + (i * 7 % 16)
            }
        })
        .collect()
}

/// The largest value of a `width`-byte signed integer.
fn signed_max(width: u8) -> i64 {
    (1i64 << (8 * u32::from(width) - 1)).wrapping_sub(1)
}

/// Inputs of every shape for `width`: each scheme's favourite, lengths around a block
/// and shorter than a value, tails, signed extremes.
fn shaped_inputs(width: u8, rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let w = usize::from(width);
    let max = signed_max(width);
    let min = max.wrapping_neg().wrapping_sub(1);
    let mut inputs: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("one value".into(), pack_values([-3], width)),
    ];
    for short in 1..w {
        inputs.push((format!("{short} bytes"), (1..=short as u8).collect()));
    }
    let n = 3 * BLOCK_VALUES + 77;
    let shapes: Vec<(&str, Vec<i64>)> = vec![
        ("constant", vec![42; n]),
        ("random", (0..n).map(|_| rng.next() as i64).collect()),
        (
            "small range",
            (0..n).map(|_| 1 + rng.below(50) as i64).collect(),
        ),
        (
            "negative range",
            (0..n).map(|_| -1000 + rng.below(900) as i64).collect(),
        ),
        ("sorted", (0..n as i64).map(|i| i * 3 + 100).collect()),
        (
            "sorted keys repeated",
            (0..n as i64).map(|i| 5_000 + i / 4).collect(),
        ),
        (
            "long runs of random values",
            (0..n).map(|i| (i / 100) as i64 * 7_919 % 1_000).collect(),
        ),
        (
            "runs of wandering values",
            (0..n)
                .scan(0i64, |v, i| {
                    if i % 16 == 0 {
                        *v += rng.below(200) as i64 - 100;
                    }
                    Some(*v)
                })
                .collect(),
        ),
        (
            "few distinct far apart",
            (0..n)
                .map(|_| [min, -7, 0, 1 << 5, max][rng.below(5) as usize])
                .collect(),
        ),
        (
            "sixteen distinct",
            (0..n)
                .map(|_| (rng.below(16) as i64) * 1_000_003 - 8_000_000)
                .collect(),
        ),
        (
            "alternating extremes",
            (0..n).map(|i| if i % 2 == 0 { min } else { max }).collect(),
        ),
        (
            "prices with a few large ones",
            (0..n)
                .map(|_| {
                    let price = 900 + rng.below(1_000) as i64;
                    if rng.below(30) == 0 {
                        price * 50
                    } else {
                        price
                    }
                })
                .collect(),
        ),
        (
            "small values with a few far above (every width)",
            small_values_far_outliers(n),
        ),
        (
            "wandering walk",
            (0..n)
                .scan(0i64, |v, _| {
                    *v = v.wrapping_add(rng.below(9) as i64 - 4);
                    Some(*v)
                })
                .collect(),
        ),
    ];
    for (name, values) in shapes {
        let bytes = pack_values(values, width);
        // Whole blocks, a short last block, one block less one value, and a tail.
        for cut in [bytes.len(), BLOCK_VALUES * w, (BLOCK_VALUES - 1) * w, 5 * w] {
            inputs.push((format!("{name} [..{cut}]"), bytes[..cut].to_vec()));
        }
        let mut tailed = bytes.clone();
        tailed.extend_from_slice(&[0xee; 7][..w - 1]);
        inputs.push((format!("{name} with a tail"), tailed));
    }
    inputs
}

/// The schemes of a stream's blocks (read from its size table and encodings).
fn schemes_of(stream: &[u8], len: usize, width: u8) -> Vec<u8> {
    let mut at = 2;
    while stream[at] & 0x80 != 0 {
        at += 1;
    }
    at += 1;
    let blocks = (len / usize::from(width)).div_ceil(BLOCK_VALUES);
    let sizes: Vec<usize> = (0..blocks)
        .map(|k| {
            usize::from(u16::from_le_bytes([
                stream[at + 2 * k],
                stream[at + 2 * k + 1],
            ]))
        })
        .collect();
    let mut block = at + 2 * blocks;
    sizes
        .iter()
        .map(|size| {
            let scheme = stream[block];
            block += size;
            scheme
        })
        .collect()
}

fn check_same_bytes(gpu: &'static Gpu, name: &str, input: &[u8], params: &IntpackParams) {
    let cpu = intpack::compress(input, params);
    let on_gpu = gpu_compress(gpu, &Codec::Intpack(*params), &[input]).remove(0);
    assert!(
        cpu == on_gpu,
        "{name} W={}: GPU stream ({} bytes) differs from CPU ({} bytes) at byte {:?}",
        params.width,
        on_gpu.len(),
        cpu.len(),
        cpu.iter().zip(&on_gpu).position(|(a, b)| a != b)
    );
    // Each side decodes the other's stream (the same bytes, but through both decoders).
    assert!(
        gpu_decompress(gpu, CodecId::Intpack, &[&cpu], &[input.len()]).unwrap()[0] == input,
        "{name} W={}: GPU decode",
        params.width
    );
    assert!(
        intpack::decompress(&on_gpu, input.len()).unwrap() == input,
        "{name} W={}: CPU decode",
        params.width
    );
}

#[test]
fn gpu_bytes_equal_cpu_bytes_for_every_width_and_scheme() {
    // The inputs cover every scheme (checked on the CPU, with or without a GPU).
    let inputs: Vec<Vec<(String, Vec<u8>)>> = {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        WIDTHS.iter().map(|&w| shaped_inputs(w, &mut rng)).collect()
    };
    for (width, inputs) in WIDTHS.into_iter().zip(&inputs) {
        let params = IntpackParams::new(width).unwrap();
        let mut seen = [0usize; intpack::SCHEMES];
        for (_, input) in inputs {
            let stream = intpack::compress(input, &params);
            for scheme in schemes_of(&stream, input.len(), width) {
                seen[usize::from(scheme)] += 1;
            }
        }
        assert!(
            seen.iter().all(|&count| count > 0),
            "W={width}: blocks per scheme {seen:?}: some scheme was never chosen"
        );
    }
    let Some(gpu) = gpu_or_skip("gpu_bytes_equal_cpu_bytes_for_every_width_and_scheme") else {
        return;
    };
    for (width, inputs) in WIDTHS.into_iter().zip(&inputs) {
        let params = IntpackParams::new(width).unwrap();
        for (name, input) in inputs {
            check_same_bytes(gpu, name, input, &params);
        }
    }
}

#[test]
fn gpu_bytes_equal_cpu_bytes_on_random_blocks() {
    let Some(gpu) = gpu_or_skip("gpu_bytes_equal_cpu_bytes_on_random_blocks") else {
        return;
    };
    // Many small random shapes in one batch per width: values from a random pool of a
    // random size and range, in runs of random lengths, sorted or not.
    let mut rng = Rng(11);
    for width in WIDTHS {
        let params = IntpackParams::new(width).unwrap();
        let inputs: Vec<Vec<u8>> = (0..cases(200, 20))
            .map(|_| {
                let n = 1 + rng.below(2 * BLOCK_VALUES as u64 + 50) as usize;
                let pool_size = {
                    let k = rng.below(4) as usize;
                    1 + rng.below([2, 16, 300, 5000][k])
                };
                let shift = rng.below(64) as u32;
                let pool: Vec<i64> = (0..pool_size)
                    .map(|_| (rng.next() as i64) >> shift)
                    .collect();
                let run = {
                    let k = rng.below(3) as usize;
                    1 + rng.below([1, 3, 40][k]) as usize
                };
                let mut values: Vec<i64> = (0..n)
                    .map(|i| pool[(i / run * 7 + rng.below(2) as usize) % pool.len()])
                    .collect();
                if rng.below(3) == 0 {
                    values.sort_unstable();
                }
                let mut bytes = pack_values(values, width);
                bytes.extend((0..rng.below(u64::from(width))).map(|_| rng.next() as u8));
                bytes
            })
            .collect();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let on_gpu = gpu_compress(gpu, &Codec::Intpack(params), &refs);
        for (i, input) in inputs.iter().enumerate() {
            let cpu = intpack::compress(input, &params);
            assert!(
                on_gpu[i] == cpu,
                "W={width} input {i} ({} bytes): differs at byte {:?}",
                input.len(),
                cpu.iter().zip(&on_gpu[i]).position(|(a, b)| a != b)
            );
        }
        let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
        let lens: Vec<usize> = inputs.iter().map(Vec::len).collect();
        assert!(gpu_decompress(gpu, CodecId::Intpack, &streams, &lens).unwrap() == inputs);
    }
}

#[test]
fn gpu_bytes_equal_cpu_bytes_on_tpch_lineitem_columns() {
    let Some(gpu) = gpu_or_skip("gpu_bytes_equal_cpu_bytes_on_tpch_lineitem_columns") else {
        return;
    };
    for (name, input) in tpch_lineitem_columns(0.01) {
        for width in WIDTHS {
            check_same_bytes(gpu, &name, &input, &IntpackParams::new(width).unwrap());
        }
    }
}

#[test]
fn batches_and_inputs_larger_than_a_step_go_through_the_pipeline() {
    let Some(gpu) = gpu_or_skip("batches_and_inputs_larger_than_a_step_go_through_the_pipeline")
    else {
        return;
    };
    // 2.5 steps of int32 keys with a tail, so three lanes and a partial step run, in a
    // batch with many small and odd-sized buffers (shorter than a value too).
    let values = gpu.step_bytes() * 5 / 2 / 4;
    let mut rng = Rng(42);
    let mut big: Vec<u8> = (0..values)
        .flat_map(|i| ((i as u32 / 3) ^ (rng.below(4) as u32)).to_le_bytes())
        .collect();
    big.extend_from_slice(&[1, 2, 3]);
    let mut batch: Vec<Vec<u8>> = shaped_inputs(4, &mut rng)
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    batch.insert(3, big.clone());
    batch.push(vec![9, 9, 9]);
    let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
    let lens: Vec<usize> = batch.iter().map(Vec::len).collect();
    for width in WIDTHS {
        let params = IntpackParams::new(width).unwrap();
        let on_gpu = gpu_compress(gpu, &Codec::Intpack(params), &refs);
        for (i, buffer) in batch.iter().enumerate() {
            assert!(
                on_gpu[i] == intpack::compress(buffer, &params),
                "W={width} buffer {i}"
            );
        }
        let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
        assert!(gpu_decompress(gpu, CodecId::Intpack, &streams, &lens).unwrap() == batch);
    }
    // Streams of every width in one decoding batch.
    let cut = &big[..1_000_003];
    let mixed: Vec<Vec<u8>> = [2u8, 4, 8, 1]
        .iter()
        .map(|&w| intpack::compress(cut, &IntpackParams::new(w).unwrap()))
        .collect();
    let streams: Vec<&[u8]> = mixed.iter().map(Vec::as_slice).collect();
    let back = gpu_decompress(gpu, CodecId::Intpack, &streams, &[cut.len(); 4]).unwrap();
    assert!(back.iter().all(|b| b[..] == cut[..]));
}

#[test]
fn resident_buffers_compress_and_decode_on_the_device() {
    let Some(gpu) = gpu_or_skip("resident_buffers_compress_and_decode_on_the_device") else {
        return;
    };
    let mut rng = Rng(5);
    for width in WIDTHS {
        let inputs: Vec<Vec<u8>> = shaped_inputs(width, &mut rng)
            .into_iter()
            .map(|(_, b)| b)
            .collect();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let lens: Vec<usize> = refs.iter().map(|r| r.len()).collect();
        let params = IntpackParams::new(width).unwrap();
        let streams: Vec<Vec<u8>> = refs.iter().map(|r| intpack::compress(r, &params)).collect();
        let mut lane = gpu.lane().unwrap();
        let mut job = Codec::Intpack(params)
            .device_compressor(gpu, &mut lane, &refs)
            .unwrap();
        job.enqueue(gpu, &mut lane).unwrap();
        // The kernels write the size tables and encodings: the streams less their headers
        // (2 bytes and the length's varint) and tails (the bytes after the last value).
        let expected: usize = refs
            .iter()
            .zip(&streams)
            .map(|(r, s)| {
                let varint = ((64 - (r.len() as u64).max(1).leading_zeros()) as usize).div_ceil(7);
                s.len() - (2 + varint) - r.len() % usize::from(width)
            })
            .sum();
        assert_eq!(
            job.output_bytes(gpu, &mut lane).unwrap(),
            expected,
            "W={width}"
        );
        let stream_refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
        let mut job = CodecId::Intpack
            .device_decompressor(gpu, &mut lane, &stream_refs, &lens)
            .unwrap();
        job.enqueue(gpu, &mut lane).unwrap();
        let whole: usize = lens.iter().map(|l| l - l % usize::from(width)).sum();
        assert!(job.output_bytes(gpu, &mut lane).unwrap() >= whole);
    }
}

#[test]
fn concurrent_callers_each_get_their_own_lane() {
    let Some(gpu) = gpu_or_skip("concurrent_callers_each_get_their_own_lane") else {
        return;
    };
    let inputs = shaped_inputs(8, &mut Rng(3));
    std::thread::scope(|scope| {
        for t in 0..8 {
            let inputs = &inputs;
            scope.spawn(move || {
                let params = IntpackParams::new(WIDTHS[t % 4]).unwrap();
                let placement = Placement::on(gpu);
                for (name, input) in inputs {
                    let on_gpu = Codec::Intpack(params)
                        .compress_one(&placement, input)
                        .unwrap();
                    assert!(
                        on_gpu == intpack::compress(input, &params),
                        "{name} thread {t}"
                    );
                }
            });
        }
    });
}

/// A stream of `len` bytes of `width`-byte values from block encodings and a tail.
fn stream_of(width: u8, len: usize, blocks: &[Vec<u8>], tail: &[u8]) -> Vec<u8> {
    let mut stream = vec![intpack::VERSION, width];
    colzip::codec::varint::write_u64(&mut stream, len as u64);
    for block in blocks {
        stream.extend_from_slice(&(block.len() as u16).to_le_bytes());
    }
    for block in blocks {
        stream.extend_from_slice(block);
    }
    stream.extend_from_slice(tail);
    stream
}

/// Decodes `stream` on the CPU and on the GPU: both fail, or both give the same bytes.
/// Returns whether it was rejected.
fn same_verdict(gpu: &'static Gpu, stream: &[u8], len: usize, what: &str) -> bool {
    let cpu = CodecId::Intpack.decompress_batch(&Placement::CPU, &[stream], &[len]);
    let on_gpu = gpu_decompress(gpu, CodecId::Intpack, &[stream], &[len]);
    match (&cpu, &on_gpu) {
        (Ok(a), Ok(b)) => {
            assert!(a.get(0) == &b[0][..], "{what}: outputs differ");
            false
        }
        (Err(_), Err(e)) => {
            assert!(e.to_string().contains("intpack"), "{what}: {e}");
            true
        }
        _ => panic!(
            "{what}: CPU {:?} but GPU {:?}",
            cpu.as_ref().map(|v| v.bytes().len()),
            on_gpu.as_ref().map(|v| v.len())
        ),
    }
}

/// One block of each scheme for `width`, with its value count: (scheme, n, encoding).
fn blocks_of_every_scheme(width: u8) -> Vec<(Scheme, usize, Vec<u8>)> {
    let max = signed_max(width);
    let shapes: Vec<Vec<i64>> = vec![
        (0..300).map(|i| i * 7_919 % 61).collect(),
        (0..300).map(|i| i * 3 - 100).collect(),
        (0..300).map(|i| [9, -4, 30][(i / 50) % 3]).collect(),
        (0..300).map(|i| 1_000 + i / 20).collect(),
        (0..300)
            .map(|i| [-max, 3, max, 77, -9][(i * 7) % 5])
            .collect(),
        vec![5],
        (0..BLOCK_VALUES as i64).map(|i| i / 3).collect(),
        small_values_far_outliers(300),
    ];
    shapes
        .into_iter()
        .map(|values| {
            let n = values.len();
            let mut encoding = Vec::new();
            let scheme =
                intpack::encode_block(&pack_values(values, width), width, &mut encoding).unwrap();
            (scheme, n, encoding)
        })
        .collect()
}

#[test]
fn corrupt_fields_are_errors_on_the_gpu_exactly_when_on_the_cpu() {
    // A block of every scheme for every width (checked on the CPU, GPU or not).
    let blocks = WIDTHS.map(blocks_of_every_scheme);
    for (width, blocks) in WIDTHS.into_iter().zip(&blocks) {
        let schemes: Vec<Scheme> = blocks.iter().map(|b| b.0).collect();
        for scheme in [
            Scheme::Frame,
            Scheme::Delta,
            Scheme::RunsFrame,
            Scheme::RunsDelta,
            Scheme::Dictionary,
            Scheme::FrameExceptions,
        ] {
            assert!(schemes.contains(&scheme), "W={width}: no {scheme:?} block");
        }
    }
    let Some(gpu) = gpu_or_skip("corrupt_fields_are_errors_on_the_gpu_exactly_when_on_the_cpu")
    else {
        return;
    };
    // Under the sanitizer, fewer values per fixed byte and fewer random bytes.
    let reduced = cases(0, 1) == 1;
    let mut rng = Rng(17);
    let mut rejected = 0;
    let mut tried = 0;
    for (width, blocks) in WIDTHS.into_iter().zip(&blocks) {
        let w = usize::from(width);
        let values: Vec<u8> = if reduced {
            vec![0, 8 * width + 1, 0xff]
        } else {
            vec![0, 1, 2, 8 * width, 8 * width + 1, 17, 0xff]
        };
        for (scheme, n, encoding) in blocks {
            // A block of n values as the stream's only one, followed by a tail.
            let len = n * w + w - 1;
            let tail = vec![0x5a; w - 1];
            let mut check = |block: Vec<u8>, what: &str| {
                tried += 1;
                let stream = stream_of(width, len, &[block], &tail);
                let what = format!("W={width} {scheme:?} n={n}: {what}");
                if same_verdict(gpu, &stream, len, &what) {
                    rejected += 1;
                }
            };
            check(encoding.clone(), "intact");
            // Every rule of FORMAT.md's "Decoder validation" that a block can break:
            // a scheme byte > 5 (and 5 on another scheme's fields), b > 8w (and every
            // other b), r, d or e of 0 or above n, h of 0 or b + h > 8w, a block that
            // leaves bytes or ends early, run lengths of 0 or a wrong sum, indices >= d,
            // exception positions out of order; every byte of the fixed fields set to
            // every interesting value.
            for byte in [5u8, 6, 0x80, 0xff] {
                let mut bad = encoding.clone();
                bad[0] = byte;
                check(bad, &format!("scheme byte {byte}"));
            }
            // The fixed fields (under the sanitizer, the scheme byte and the first three).
            let fixed = encoding.len().min(if reduced { 4 } else { 3 + 2 * w + 4 });
            for at in 0..fixed {
                for &value in &values {
                    let mut bad = encoding.clone();
                    bad[at] = value;
                    check(bad, &format!("byte {at} = {value}"));
                }
                let mut bad = encoding.clone();
                bad[at] = bad[at].wrapping_add(1);
                check(bad, &format!("byte {at} + 1"));
            }
            let mut longer = encoding.clone();
            longer.push(0);
            check(longer, "a byte left over");
            let mut shorter = encoding.clone();
            shorter.pop();
            check(shorter, "a byte short");
            // Packed fields: random bytes after the fixed part.
            for case in 0..cases(30, 4) {
                let mut bad = encoding.clone();
                let at = rng.below(bad.len() as u64) as usize;
                bad[at] = rng.next() as u8;
                if case % 2 == 1 {
                    let at = rng.below(bad.len() as u64) as usize;
                    bad[at] ^= 1 << rng.below(8);
                }
                check(bad, &format!("random byte at {at}"));
            }
        }
    }
    assert!(
        rejected * 4 > tried,
        "only {rejected} of {tried} corrupt streams were rejected"
    );
}

#[test]
fn corrupt_streams_are_errors_on_the_gpu_exactly_when_on_the_cpu() {
    let Some(gpu) = gpu_or_skip("corrupt_streams_are_errors_on_the_gpu_exactly_when_on_the_cpu")
    else {
        return;
    };
    let mut rng = Rng(7);
    let (mut rejected, mut tried) = (0, 0);
    for width in WIDTHS {
        let params = IntpackParams::new(width).unwrap();
        let inputs: Vec<(String, Vec<u8>)> = shaped_inputs(width, &mut Rng(9))
            .into_iter()
            .filter(|(name, input)| input.len() > 1000 && !name.contains("[.."))
            .collect();
        for (name, input) in &inputs {
            let stream = intpack::compress(input, &params);
            for case in 0..cases(24, 3) {
                let mut bad = stream.clone();
                match case % 4 {
                    0 => bad.truncate(rng.below(bad.len() as u64) as usize),
                    1 => {
                        for _ in 0..1 + rng.below(4) {
                            let at = rng.below(bad.len() as u64) as usize;
                            bad[at] ^= 1 << rng.below(8);
                        }
                    }
                    2 => {
                        // Inside the size table or the first encodings.
                        let at = 3 + rng.below(64.min(bad.len() as u64 - 3)) as usize;
                        bad[at] = rng.next() as u8;
                    }
                    _ => bad.extend_from_slice(&[0, 1, 2]),
                }
                let what = format!("{name} W={width} case {case}");
                tried += 1;
                if same_verdict(gpu, &bad, input.len(), &what) {
                    rejected += 1;
                }
            }
        }
    }
    // Most damage is caught (a flipped bit inside a packed field may decode to other
    // values, on both sides alike).
    assert!(
        rejected * 3 > tried,
        "only {rejected} of {tried} corrupt streams were rejected"
    );
}
