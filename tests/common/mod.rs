//! Helpers shared by the test binaries (each uses some of them).

#[cfg(feature = "datafusion")]
pub mod sql;

use std::io::Write;

use colzip::gpu::Gpu;

/// The GPU, or `None` after saying on stderr that `test` was skipped. With
/// `COLZIP_REQUIRE_GPU=1` (the device machine's runs) a missing GPU fails the test.
#[allow(dead_code)]
pub fn gpu_or_skip(test: &str) -> Option<&'static Gpu> {
    match Gpu::get() {
        Ok(gpu) => Some(gpu),
        Err(reason) => {
            assert!(
                std::env::var("COLZIP_REQUIRE_GPU").as_deref() != Ok("1"),
                "COLZIP_REQUIRE_GPU=1 but there is no usable GPU: {reason}"
            );
            // Straight to stderr: libtest captures eprintln!, and a skip must be visible.
            let _ = writeln!(
                std::io::stderr(),
                "{test}: skipped, no usable GPU ({reason})"
            );
            None
        }
    }
}

/// At least `at_least` GPUs, or `None` after saying on stderr that `test` was skipped.
/// With `COLZIP_REQUIRE_GPUS=N` (N >= `at_least`: a run on a machine with that many
/// devices) too few GPUs fail the test.
#[allow(dead_code)]
pub fn gpus_or_skip(test: &str, at_least: usize) -> Option<&'static [Gpu]> {
    let gpus = Gpu::all().unwrap_or(&[]);
    if gpus.len() >= at_least {
        return Some(gpus);
    }
    let required: usize = std::env::var("COLZIP_REQUIRE_GPUS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(
        required < at_least,
        "COLZIP_REQUIRE_GPUS={required} but {} GPU(s) are usable",
        gpus.len()
    );
    let _ = writeln!(
        std::io::stderr(),
        "{test}: skipped, needs {at_least} GPUs and {} are usable",
        gpus.len()
    );
    None
}

/// How many cases of a randomized GPU test to run: `full`, or `reduced` under
/// compute-sanitizer (`COLZIP_UNDER_SANITIZER=1`, set by `scripts/run-gpu.sh --sanitize`),
/// whose racecheck slows shared-memory kernels a thousandfold.
#[allow(dead_code)]
pub fn cases(full: usize, reduced: usize) -> usize {
    if std::env::var("COLZIP_UNDER_SANITIZER").as_deref() == Ok("1") {
        reduced
    } else {
        full
    }
}

/// A reproducible xorshift generator (no dependency for tests).
#[allow(dead_code)]
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Every plain lineitem column at `sf` (ints, cents, days, text bytes), named.
#[allow(dead_code)]
pub fn tpch_lineitem_columns(sf: f64) -> Vec<(String, Vec<u8>)> {
    let columns =
        colzip::harness::bench::plain_columns(colzip::tpch::Table::Lineitem, sf, None).unwrap();
    assert!(
        columns.len() >= 10,
        "lineitem has at least 10 plain columns"
    );
    columns.into_iter().map(|c| (c.name, c.bytes)).collect()
}

/// Compresses `inputs` with `codec` on `gpu` through every host form of the batched
/// interface (ordinary memory into one allocation, into the caller's buffers, pinned
/// memory), asserts that the three agree, and returns the streams.
#[allow(dead_code)]
pub fn gpu_compress(
    gpu: &'static Gpu,
    codec: &colzip::codec::Codec,
    inputs: &[&[u8]],
) -> Vec<Vec<u8>> {
    use colzip::codec::Placement;
    use colzip::gpu::PinnedBuffer;
    let placement = Placement::on(gpu);
    let packed = codec.compress_batch(&placement, inputs).unwrap();
    let streams: Vec<Vec<u8>> = packed.iter().map(<[u8]>::to_vec).collect();
    // Into the caller's buffers.
    let mut outputs: Vec<Vec<u8>> = inputs
        .iter()
        .map(|i| vec![0xa5; codec.max_compressed_len(i.len())])
        .collect();
    let sizes = {
        let mut slices: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        codec
            .compress_into(&placement, inputs, &mut slices)
            .unwrap()
    };
    for (i, (output, size)) in outputs.iter().zip(sizes).enumerate() {
        assert!(
            output[..size] == streams[i][..],
            "compress_into differs at {i}"
        );
    }
    // Pinned memory, straight from and to page-locked buffers.
    let total: usize = inputs.iter().map(|i| i.len()).sum();
    let mut pinned_in = PinnedBuffer::new(gpu, total).unwrap();
    let mut at = 0;
    for input in inputs {
        pinned_in.as_mut_slice()[at..at + input.len()].copy_from_slice(input);
        at += input.len();
    }
    let mut at = 0;
    let pinned_inputs: Vec<&[u8]> = inputs
        .iter()
        .map(|i| {
            at += i.len();
            &pinned_in.as_slice()[at - i.len()..at]
        })
        .collect();
    let room: usize = inputs
        .iter()
        .map(|i| codec.max_compressed_len(i.len()))
        .sum();
    let mut pinned_out = PinnedBuffer::new(gpu, room).unwrap();
    let ranges = codec
        .compress_pinned(gpu, &pinned_inputs, &mut pinned_out)
        .unwrap();
    for (i, range) in ranges.iter().enumerate() {
        assert!(
            pinned_out.as_slice()[range.clone()] == streams[i][..],
            "compress_pinned differs at {i}"
        );
    }
    streams
}

/// Decodes `streams` (of `lens` bytes each) with `id` on `gpu` through the ordinary and
/// pinned forms, asserting that they agree; the ordinary form's result.
#[allow(dead_code)]
pub fn gpu_decompress(
    gpu: &'static Gpu,
    id: colzip::codec::CodecId,
    streams: &[&[u8]],
    lens: &[usize],
) -> colzip::codec::Result<Vec<Vec<u8>>> {
    use colzip::codec::Placement;
    use colzip::gpu::PinnedBuffer;
    let placement = Placement::on(gpu);
    let packed = id.decompress_batch(&placement, streams, lens);
    let total: usize = lens.iter().sum();
    let mut out = PinnedBuffer::new(gpu, total).unwrap();
    let pinned = id.decompress_pinned(gpu, streams, lens, &mut out);
    match (&packed, &pinned) {
        (Ok(packed), Ok(ranges)) => {
            for (i, range) in ranges.iter().enumerate() {
                assert!(
                    packed.get(i) == &out.as_slice()[range.clone()],
                    "pinned decode differs at {i}"
                );
            }
        }
        (Err(_), Err(_)) => {}
        _ => panic!("ordinary and pinned decoding disagree: {packed:?} / {pinned:?}"),
    }
    // The zero-copy form: Arrow buffers on the pinned pool, aligned for any type.
    let buffers = id.decompress_buffers(&placement, streams, lens);
    match (&packed, &buffers) {
        (Ok(packed), Ok(buffers)) => {
            assert_eq!(buffers.len(), packed.len());
            for (i, buffer) in buffers.iter().enumerate() {
                assert!(
                    buffer.as_slice() == packed.get(i),
                    "zero-copy decode differs at {i}"
                );
                assert_eq!(
                    buffer.as_ptr() as usize % 64,
                    0,
                    "buffer {i} is not aligned"
                );
            }
        }
        (Err(_), Err(_)) => {}
        _ => panic!("ordinary and zero-copy decoding disagree: {packed:?} / {buffers:?}"),
    }
    packed.map(|p| p.into_vecs())
}

/// `count` words drawn from `words` with `rng`, concatenated (text with repeats).
#[allow(dead_code)]
pub fn random_words(rng: &mut Rng, words: &[&str], count: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|_| words[rng.below(words.len() as u64) as usize].bytes())
        .collect()
}

/// Case `case` of the corrupt-stream tests, applied to `stream`: a truncation, one to
/// three bit flips, or a random byte at the place `rewrite_at` picks (given the length).
#[allow(dead_code)]
pub fn mutate(
    rng: &mut Rng,
    stream: &mut Vec<u8>,
    case: usize,
    rewrite_at: impl FnOnce(&mut Rng, usize) -> usize,
) {
    match case % 3 {
        0 => stream.truncate(rng.below(stream.len() as u64) as usize),
        1 => {
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(stream.len() as u64) as usize;
                stream[at] ^= 1 << rng.below(8);
            }
        }
        _ => {
            let at = rewrite_at(rng, stream.len());
            stream[at] = rng.next() as u8;
        }
    }
}

/// The names of the entries in `dir`, sorted (what a run left behind).
#[allow(dead_code)]
pub fn dir_listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
