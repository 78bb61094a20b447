//! `bwt` on the GPU, through the batched interface. Compression writes the CPU's bytes
//! (ordinary, caller's and pinned memory; across steps; long repeats). Decoding
//! (ordinary, caller's and pinned memory): the CPU encoder's streams, at every block size
//! and with stored blocks, singly, batched and across pipeline steps, decode to the
//! input; corrupt streams are errors on the GPU exactly when the CPU decoder says so, and
//! the GPU's output equals the CPU's when both accept; the device-resident decoder
//! accepts and refuses the same streams. Without a GPU these tests say they were skipped;
//! with `COLZIP_REQUIRE_GPU=1` a missing GPU is a failure.

mod common;

use colzip::codec::bwt::{BwtParams, MIN_BLOCK_SIZE};
use colzip::codec::{Codec, CodecId, Placement};
use common::{
    Rng, cases, gpu_decompress, gpu_or_skip, mutate, random_words, tpch_lineitem_columns,
};

fn cpu_stream(input: &[u8], block_size: u32) -> Vec<u8> {
    Codec::Bwt(BwtParams::new(block_size).unwrap())
        .compress_one(&Placement::CPU, input)
        .unwrap()
}

/// Inputs for every stage: text (several tables, many symbols), one byte repeated (zero
/// runs of every length, across MTF chunks), random bytes (stored blocks), a two-letter
/// alphabet, all 256 byte values, sorted keys, and blocks of one byte.
fn inputs() -> Vec<Vec<u8>> {
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let words = [
        "carefully ",
        "final ",
        "deposits ",
        "haggle ",
        "blithely ",
        "ironic ",
    ];
    let text = random_words(&mut rng, &words, 60_000);
    // Under the sanitizer each input is cut to one 64 KiB block and a bit (racecheck
    // slows the decoder's shared-memory stages a thousandfold).
    let cut = cases(usize::MAX, 70_000);
    let all = vec![
        vec![7],
        b"banana".to_vec(),
        text,
        vec![0u8; 300_000],
        (0..150_000).map(|_| rng.next() as u8).collect(),
        (0..200_000).map(|_| b"ab"[rng.below(2) as usize]).collect(),
        (0..=255u8).cycle().take(140_000).collect(),
        (0..50_000u64).flat_map(|i| (i / 3).to_le_bytes()).collect(),
        // Long zero runs between rare bytes: run digits across chunk boundaries.
        (0..400_000u32)
            .map(|i| if i % 70_001 == 0 { 1 } else { 0 })
            .collect(),
    ];
    all.into_iter()
        .map(|mut input: Vec<u8>| {
            input.truncate(cut);
            input
        })
        .collect()
}

fn check_decodes(gpu: &'static colzip::gpu::Gpu, originals: &[Vec<u8>], block_size: u32) {
    let streams: Vec<Vec<u8>> = originals
        .iter()
        .map(|i| cpu_stream(i, block_size))
        .collect();
    let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
    let lens: Vec<usize> = originals.iter().map(Vec::len).collect();
    let decoded = gpu_decompress(gpu, CodecId::Bwt, &refs, &lens).unwrap();
    for (i, (d, e)) in decoded.iter().zip(originals).enumerate() {
        assert!(
            d == e,
            "block size {block_size}: input {i} ({} bytes) decoded wrong",
            e.len()
        );
    }
    // Into the caller's buffers (copied from the device block by block).
    let mut outputs: Vec<Vec<u8>> = lens.iter().map(|&l| vec![0x5a; l]).collect();
    let mut slices: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    CodecId::Bwt
        .decompress_into(&Placement::on(gpu), &refs, &mut slices)
        .unwrap();
    assert!(
        outputs == originals,
        "decompress_into, block size {block_size}"
    );
}

#[test]
fn gpu_decodes_the_cpu_streams_in_one_batch() {
    let Some(gpu) = gpu_or_skip("gpu_decodes_the_cpu_streams_in_one_batch") else {
        return;
    };
    let mut originals = inputs();
    // Under the sanitizer (whose racecheck is slow): the synthetic inputs, one block size.
    if cases(1, 0) == 1 {
        originals.extend(
            tpch_lineitem_columns(0.002)
                .into_iter()
                .map(|(_, bytes)| bytes),
        );
    }
    for &block_size in &[MIN_BLOCK_SIZE, 1 << 20][..cases(2, 1)] {
        check_decodes(gpu, &originals, block_size);
    }
}

/// Random words (seeded) filling two GPU steps of `step` bytes and `extra` bytes more.
fn words_over_two_steps(step: usize, seed: u64, extra: usize) -> Vec<u8> {
    let mut rng = Rng(seed);
    let words = ["regular ", "packages ", "sleep ", "furiously ", "quick "];
    let mut text = random_words(&mut rng, &words, (2 * step + extra) / 4);
    text.truncate(2 * step + extra);
    text
}

#[test]
fn gpu_decodes_batches_larger_than_a_step() {
    let Some(gpu) = gpu_or_skip("gpu_decodes_batches_larger_than_a_step") else {
        return;
    };
    // Several steps of 64 KiB blocks, and one block larger than a step.
    let step = gpu.step_bytes();
    let text = words_over_two_steps(step, 17, 12_345);
    check_decodes(gpu, std::slice::from_ref(&text), MIN_BLOCK_SIZE);
    let big = (step + (1 << 16)).next_power_of_two() as u32;
    check_decodes(gpu, std::slice::from_ref(&text), big.min(64 << 20));
}

#[test]
fn corrupt_streams_are_errors_on_the_gpu_exactly_when_on_the_cpu() {
    let Some(gpu) = gpu_or_skip("corrupt_streams_are_errors_on_the_gpu_exactly_when_on_the_cpu")
    else {
        return;
    };
    let mut rng = Rng(2024);
    let per_stream = cases(60, 3);
    let (mut rejected, mut total) = (0, 0);
    for input in inputs().iter().filter(|i| i.len() > 1000) {
        let stream = cpu_stream(input, MIN_BLOCK_SIZE);
        for case in 0..per_stream {
            let mut bad = stream.clone();
            // Rewrites hit the last block's payload (indices, side information, bits).
            mutate(&mut rng, &mut bad, case, |rng, len| {
                len - 1 - rng.below(len.min(4000) as u64) as usize
            });
            total += 1;
            let cpu = CodecId::Bwt.decompress_batch(&Placement::CPU, &[&bad], &[input.len()]);
            let on_gpu = gpu_decompress(gpu, CodecId::Bwt, &[&bad], &[input.len()]);
            match (&cpu, &on_gpu) {
                (Ok(a), Ok(b)) => assert!(a.get(0) == &b[0][..], "case {case}: outputs differ"),
                (Err(_), Err(e)) => {
                    rejected += 1;
                    assert!(e.to_string().contains("bwt"), "{e}");
                }
                _ => panic!(
                    "case {case}: CPU {:?} but GPU {:?}",
                    cpu.as_ref().map(|v| v.bytes().len()),
                    on_gpu.as_ref().map(|v| v.len())
                ),
            }
        }
    }
    assert!(
        rejected > total / 2,
        "only {rejected} of {total} corrupt streams were rejected"
    );
}

/// Runs the device-resident decoder over `streams`: bytes of output it wrote, or its error
/// (when reading the streams or from the kernels' verdicts).
fn resident_decode(
    gpu: &'static colzip::gpu::Gpu,
    streams: &[&[u8]],
    lens: &[usize],
) -> colzip::codec::Result<usize> {
    let mut lane = gpu.lane().unwrap();
    let mut job = CodecId::Bwt.device_decompressor(gpu, &mut lane, streams, lens)?;
    job.enqueue(gpu, &mut lane)?;
    // A second run over the same buffers must give the same verdicts.
    job.enqueue(gpu, &mut lane)?;
    job.output_bytes(gpu, &mut lane)
}

#[test]
fn resident_streams_decode_on_the_device_and_corrupt_ones_fail() {
    let Some(gpu) = gpu_or_skip("resident_streams_decode_on_the_device_and_corrupt_ones_fail")
    else {
        return;
    };
    // Compressible inputs only: every block is coded, none stored, so the resident
    // decoder writes every byte.
    let originals: Vec<Vec<u8>> = inputs()
        .into_iter()
        .filter(|i| {
            let s = cpu_stream(i, MIN_BLOCK_SIZE);
            s.len() < i.len() / 2
        })
        .collect();
    assert!(originals.len() >= 3, "too few compressible inputs");
    let streams: Vec<Vec<u8>> = originals
        .iter()
        .map(|i| cpu_stream(i, MIN_BLOCK_SIZE))
        .collect();
    let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
    let lens: Vec<usize> = originals.iter().map(Vec::len).collect();
    assert_eq!(
        resident_decode(gpu, &refs, &lens).unwrap(),
        lens.iter().sum::<usize>()
    );

    let mut rng = Rng(99);
    let (mut rejected, mut total) = (0, 0);
    for (stream, original) in streams.iter().zip(&originals) {
        for case in 0..cases(20, 2) {
            let mut bad = stream.clone();
            // Rewrite one byte of the last block's payload.
            mutate(&mut rng, &mut bad, 3 * case + 2, |rng, len| {
                len - 1 - rng.below(len.min(4000) as u64) as usize
            });
            total += 1;
            let cpu = CodecId::Bwt.decompress_batch(&Placement::CPU, &[&bad], &[original.len()]);
            let resident = resident_decode(gpu, &[&bad], &[original.len()]);
            match (&cpu, &resident) {
                (Ok(_), Ok(written)) => assert_eq!(*written, original.len(), "case {case}"),
                (Err(_), Err(e)) => {
                    rejected += 1;
                    assert!(e.to_string().contains("bwt"), "{e}");
                }
                _ => panic!(
                    "case {case}: CPU {:?} but the resident decoder {:?}",
                    cpu.as_ref().map(|v| v.bytes().len()),
                    resident
                ),
            }
        }
    }
    assert!(
        rejected > total / 2,
        "only {rejected} of {total} corrupt streams were rejected"
    );
}

/// Compresses `inputs` on the GPU through every entry point and checks each stream equal
/// to the CPU's (so each side decodes the other's), and that the GPU decodes it back.
fn check_compresses(gpu: &'static colzip::gpu::Gpu, inputs: &[Vec<u8>], block_size: u32) {
    let codec = Codec::Bwt(BwtParams::new(block_size).unwrap());
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let cpu = codec.compress_batch(&Placement::CPU, &refs).unwrap();
    let on_gpu = codec.compress_batch(&Placement::on(gpu), &refs).unwrap();
    for (i, (g, c)) in on_gpu.iter().zip(cpu.iter()).enumerate() {
        assert!(
            g == c,
            "block size {block_size}: input {i} ({} bytes): GPU stream ({} bytes) differs from the CPU's ({} bytes)",
            inputs[i].len(),
            g.len(),
            c.len()
        );
    }
    // Into the caller's buffers, and from pinned memory.
    let mut outputs: Vec<Vec<u8>> = inputs
        .iter()
        .map(|i| vec![0u8; codec.max_compressed_len(i.len())])
        .collect();
    let mut slices: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    let sizes = codec
        .compress_into(&Placement::on(gpu), &refs, &mut slices)
        .unwrap();
    for (i, (out, &size)) in outputs.iter().zip(&sizes).enumerate() {
        assert!(cpu.get(i) == &out[..size], "compress_into, input {i}");
    }
    let total: usize = refs.iter().map(|r| r.len()).sum();
    let mut pinned_in = colzip::gpu::PinnedBuffer::new(gpu, total.max(1)).unwrap();
    let mut at = 0;
    for r in &refs {
        pinned_in.as_mut_slice()[at..at + r.len()].copy_from_slice(r);
        at += r.len();
    }
    let mut at = 0;
    let pinned_refs: Vec<&[u8]> = refs
        .iter()
        .map(|r| {
            at += r.len();
            &pinned_in.as_slice()[at - r.len()..at]
        })
        .collect();
    let room: usize = refs.iter().map(|r| codec.max_compressed_len(r.len())).sum();
    let mut pinned_out = colzip::gpu::PinnedBuffer::new(gpu, room).unwrap();
    let ranges = codec
        .compress_pinned(gpu, &pinned_refs, &mut pinned_out)
        .unwrap();
    for (i, range) in ranges.iter().enumerate() {
        assert!(
            cpu.get(i) == &pinned_out.as_slice()[range.clone()],
            "compress_pinned, input {i}"
        );
    }
    let streams: Vec<&[u8]> = on_gpu.iter().collect();
    let lens: Vec<usize> = inputs.iter().map(Vec::len).collect();
    let back = gpu_decompress(gpu, CodecId::Bwt, &streams, &lens).unwrap();
    assert!(back == inputs, "block size {block_size}: GPU round trip");

    // The device-resident form puts the same blocks through every GPU stage, alike run
    // after run: per block at least its alphabet and CRC (36 bytes), at most a Huffman
    // stream of 16-bit codes per byte with its side information.
    let mut lane = gpu.lane().unwrap();
    let mut job = codec.device_compressor(gpu, &mut lane, &refs).unwrap();
    let written: Vec<usize> = (0..2)
        .map(|_| {
            job.enqueue(gpu, &mut lane).unwrap();
            job.output_bytes(gpu, &mut lane).unwrap()
        })
        .collect();
    let blocks: usize = lens.iter().map(|l| l.div_ceil(block_size as usize)).sum();
    assert_eq!(
        written[0], written[1],
        "block size {block_size}: resident runs"
    );
    assert!(
        (36 * blocks..=3 * total + 4096 * blocks).contains(&written[0]),
        "block size {block_size}: {} bytes left on the device for {total} bytes in {blocks} blocks",
        written[0]
    );
}

#[test]
fn gpu_compression_writes_the_cpu_bytes() {
    let Some(gpu) = gpu_or_skip("gpu_compression_writes_the_cpu_bytes") else {
        return;
    };
    let mut originals = inputs();
    originals.push(Vec::new());
    if cases(1, 0) == 1 {
        originals.extend(
            tpch_lineitem_columns(0.002)
                .into_iter()
                .map(|(_, bytes)| bytes),
        );
    }
    for &block_size in &[MIN_BLOCK_SIZE, 1 << 20][..cases(2, 1)] {
        check_compresses(gpu, &originals, block_size);
    }
    // Each input alone (a batch of one block, or of a few).
    for input in originals.iter().take(cases(usize::MAX, 3)) {
        check_compresses(gpu, std::slice::from_ref(input), MIN_BLOCK_SIZE);
    }
}

#[test]
fn gpu_compression_across_steps_and_long_repeats() {
    let Some(gpu) = gpu_or_skip("gpu_compression_across_steps_and_long_repeats") else {
        return;
    };
    let step = gpu.step_bytes();
    let text = words_over_two_steps(step, 4242, 777);
    check_compresses(gpu, std::slice::from_ref(&text), MIN_BLOCK_SIZE);
    // Periodic text (every suffix's group stays large for many rounds) and one byte
    // repeated over a whole block (log2 of the block's length rounds).
    let period: Vec<u8> = b"abcabcabd"
        .iter()
        .copied()
        .cycle()
        .take(cases(3 << 20, 100_000))
        .collect();
    let zeros = vec![0u8; cases(1 << 20, 70_000)];
    check_compresses(gpu, &[period, zeros], 1 << 20);
}

/// Symbol sequences for the Huffman stage alone: MTF-like (geometric), uniform, and
/// Fibonacci counts (a code deeper than 16 bits before the weights are halved), at the
/// sizes where the table count changes.
fn huffman_blocks() -> Vec<(Vec<u16>, usize)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut blocks = Vec::new();
    for (i, n) in [
        1usize, 2, 199, 200, 599, 1199, 2399, 4799, 39_999, 40_000, 250_000,
    ]
    .into_iter()
    .enumerate()
    {
        let n = cases(n, n.min(5_000));
        let alphabet = [2usize, 3, 17, 257][i % 4];
        // geometric: each further symbol half as likely
        let geometric = (0..n)
            .map(|_| (rng.next().trailing_zeros() as usize).min(alphabet - 1) as u16)
            .collect();
        blocks.push((geometric, alphabet));
        let uniform = (0..n).map(|_| rng.below(alphabet as u64) as u16).collect();
        blocks.push((uniform, alphabet));
    }
    let (mut a, mut b) = (1usize, 1usize);
    let mut fibonacci = Vec::new();
    for s in 0..cases(26, 18) as u16 {
        fibonacci.extend(std::iter::repeat_n(s, a));
        (a, b) = (b, a + b);
    }
    for i in (1..fibonacci.len()).rev() {
        fibonacci.swap(i, rng.below(i as u64 + 1) as usize);
    }
    blocks.push((fibonacci, 30));
    blocks
}

#[test]
fn gpu_huffman_stage_equals_the_cpu_encoder() {
    use colzip::codec::bwt::huffman::{Geometry, encode};
    use colzip::codec::bwt::{SEG_LOG2, SUB_LOG2};
    let Some(gpu) = gpu_or_skip("gpu_huffman_stage_equals_the_cpu_encoder") else {
        return;
    };
    let blocks = huffman_blocks();
    let refs: Vec<(&[u16], usize)> = blocks.iter().map(|(s, a)| (s.as_slice(), *a)).collect();
    let on_gpu = colzip::codec::bwt::gpu::huffman_on_device(gpu, &refs).unwrap();
    let geo = Geometry {
        seg_log2: SEG_LOG2,
        sub_log2: SUB_LOG2,
    };
    for (b, ((symbols, alphabet), g)) in blocks.iter().zip(&on_gpu).enumerate() {
        let mut freq = vec![0u32; *alphabet];
        for &s in symbols {
            freq[s as usize] += 1;
        }
        let c = encode(symbols, &freq, geo);
        let what = format!("block {b} ({} symbols, alphabet {alphabet})", symbols.len());
        assert_eq!(g.lens, c.lens, "{what}: code lengths");
        assert_eq!(g.total_bits, c.total_bits, "{what}: bitstream length");
        assert_eq!(g.selectors, c.selectors, "{what}: selectors");
        assert_eq!(g.gaps, c.gaps, "{what}: gap array");
        assert!(g.bits == c.bits, "{what}: bitstream");
    }
}
