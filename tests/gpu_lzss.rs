//! `lzss` on the GPU, through the batched interface (ordinary, caller's and pinned
//! memory), writes exactly the CPU reference's bytes, each side decodes the other's
//! streams, and corrupt streams are errors on both. Without a GPU these tests say they
//! were skipped; with `COLZIP_REQUIRE_GPU=1` a missing GPU is a failure.

mod common;

use colzip::codec::lzss::{self, LzssParams};
use colzip::codec::{Codec, CodecId, Placement};
use common::{Rng, gpu_compress, gpu_decompress, gpu_or_skip, tpch_lineitem_columns};

/// Inputs that exercise every path: incompressible bytes, runs longer than the longest
/// match, small integers, text with repeats, and odd lengths with tails.
fn synthetic_inputs() -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let random: Vec<u8> = (0..70_001).map(|_| rng.next() as u8).collect();
    let runs: Vec<u8> = (0..50_000).map(|i| (i / 700) as u8).collect();
    let small_ints: Vec<u8> = (0..20_000u32)
        .flat_map(|_| (rng.below(50) as u32).to_le_bytes())
        .collect();
    let words = [
        "lorem ",
        "ipsum ",
        "dolor ",
        "sit ",
        "amet, ",
        "carefully ",
        "final ",
    ];
    let text: Vec<u8> = (0..12_000)
        .flat_map(|_| words[rng.below(words.len() as u64) as usize].bytes())
        .collect();
    let periodic: Vec<u8> = (0..33_333u64)
        .flat_map(|i| (i % 37).to_le_bytes())
        .collect();
    vec![
        ("empty".into(), Vec::new()),
        ("tiny".into(), vec![7, 7, 7, 7, 7]),
        ("random".into(), random),
        ("runs".into(), runs),
        ("small_ints".into(), small_ints),
        ("text".into(), text),
        ("periodic_u64".into(), periodic),
    ]
}

fn grid() -> Vec<LzssParams> {
    let mut grid = Vec::new();
    for s in [1u8, 2, 4, 8] {
        for w in [1u8, 32, 64, 128, 255] {
            for c in [2048u32, 2056, 4096, 8192, 16384] {
                grid.push(LzssParams::new(s, w, c).unwrap());
            }
        }
    }
    grid
}

fn check_same_bytes(gpu: &'static colzip::gpu::Gpu, name: &str, input: &[u8], params: &LzssParams) {
    let cpu = lzss::compress(input, params);
    let on_gpu = gpu_compress(gpu, &Codec::Lzss(*params), &[input]).remove(0);
    assert!(
        cpu == on_gpu,
        "{name} {params:?}: GPU stream ({} bytes) differs from CPU ({} bytes) at byte {:?}",
        on_gpu.len(),
        cpu.len(),
        cpu.iter().zip(&on_gpu).position(|(a, b)| a != b)
    );
    // Each side decodes the other's stream (the same bytes, but through both decoders).
    assert_eq!(
        gpu_decompress(gpu, CodecId::Lzss, &[&cpu], &[input.len()]).unwrap()[0],
        input,
        "{name} {params:?}: GPU decode"
    );
    assert_eq!(
        lzss::decompress(&on_gpu).unwrap(),
        input,
        "{name} {params:?}: CPU decode"
    );
}

#[test]
fn gpu_bytes_equal_cpu_bytes_on_synthetic_inputs_for_every_parameter() {
    let Some(gpu) =
        gpu_or_skip("gpu_bytes_equal_cpu_bytes_on_synthetic_inputs_for_every_parameter")
    else {
        return;
    };
    for (name, input) in synthetic_inputs() {
        for params in grid() {
            check_same_bytes(gpu, &name, &input, &params);
        }
    }
}

/// Small enough for the sanitizer's racecheck (a few chunks per symbol width and window,
/// both parse outcomes: long matches and literals), so the compression kernel's shared
/// memory is checked for hazards in minutes, not hours.
#[test]
fn gpu_compression_of_a_few_chunks_writes_the_cpu_bytes() {
    let Some(gpu) = gpu_or_skip("gpu_compression_of_a_few_chunks_writes_the_cpu_bytes") else {
        return;
    };
    let inputs: Vec<(String, Vec<u8>)> = synthetic_inputs()
        .into_iter()
        .filter(|(name, _)| ["runs", "small_ints", "text"].contains(&name.as_str()))
        .map(|(name, input)| (name, input[..input.len().min(6000)].to_vec()))
        .collect();
    for (name, input) in &inputs {
        for s in [1u8, 2, 4, 8] {
            for w in [32u8, 255] {
                check_same_bytes(gpu, name, input, &LzssParams::new(s, w, 2048).unwrap());
            }
        }
    }
}

#[test]
fn gpu_bytes_equal_cpu_bytes_on_tpch_lineitem_columns() {
    let Some(gpu) = gpu_or_skip("gpu_bytes_equal_cpu_bytes_on_tpch_lineitem_columns") else {
        return;
    };
    // GPULZ's grid (S 1/2/4, W 32..255, C 2048..16384) plus S=8 on every plain column.
    for (name, input) in tpch_lineitem_columns(0.01) {
        for params in grid()
            .into_iter()
            .filter(|p| p.window != 1 && p.chunk_size != 2056)
        {
            check_same_bytes(gpu, &name, &input, &params);
        }
    }
}

#[test]
fn batches_and_inputs_larger_than_a_step_go_through_the_pipeline() {
    let Some(gpu) = gpu_or_skip("batches_and_inputs_larger_than_a_step_go_through_the_pipeline")
    else {
        return;
    };
    // 2.5 steps of int32 values with a tail, so three lanes and a partial step run (80 MiB
    // at the default step, 2.5 MiB under the sanitizer's COLZIP_GPU_STEP_MIB=1).
    let values = gpu.step_bytes() * 5 / 2 / 4;
    let mut rng = Rng(42);
    let mut input: Vec<u8> = (0..values)
        .flat_map(|i| ((i as u32 / 3) ^ (rng.below(4) as u32)).to_le_bytes())
        .collect();
    input.extend_from_slice(&[1, 2, 3]);
    // And a batch of many small and odd-sized buffers with it, shorter than a symbol too.
    let mut batch: Vec<Vec<u8>> = synthetic_inputs().into_iter().map(|(_, b)| b).collect();
    batch.push(vec![9, 9, 9]);
    batch.push(input.clone());
    batch.push(vec![1]);
    let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
    let lens: Vec<usize> = batch.iter().map(Vec::len).collect();
    for params in [
        LzssParams::new(4, 32, 2048).unwrap(),
        LzssParams::new(1, 128, 16384).unwrap(),
        LzssParams::new(8, 255, 4096).unwrap(),
    ] {
        let on_gpu = gpu_compress(gpu, &Codec::Lzss(params), &refs);
        for (i, buffer) in batch.iter().enumerate() {
            assert!(
                on_gpu[i] == lzss::compress(buffer, &params),
                "{params:?} buffer {i}"
            );
        }
        let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
        assert!(gpu_decompress(gpu, CodecId::Lzss, &streams, &lens).unwrap() == batch);
    }
    // Streams of different parameters in one decoding batch.
    let mixed: Vec<Vec<u8>> = [2u8, 4, 8, 1]
        .iter()
        .map(|&s| lzss::compress(&input[..1_000_003], &LzssParams::new(s, 64, 2048).unwrap()))
        .collect();
    let streams: Vec<&[u8]> = mixed.iter().map(Vec::as_slice).collect();
    let back = gpu_decompress(gpu, CodecId::Lzss, &streams, &[1_000_003; 4]).unwrap();
    assert!(back.iter().all(|b| b[..] == input[..1_000_003]));
}

#[test]
fn resident_buffers_compress_and_decode_on_the_device() {
    let Some(gpu) = gpu_or_skip("resident_buffers_compress_and_decode_on_the_device") else {
        return;
    };
    let inputs: Vec<Vec<u8>> = synthetic_inputs().into_iter().map(|(_, b)| b).collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let lens: Vec<usize> = refs.iter().map(|r| r.len()).collect();
    let params = LzssParams::new(2, 128, 2048).unwrap();
    let streams: Vec<Vec<u8>> = refs.iter().map(|r| lzss::compress(r, &params)).collect();
    let mut lane = gpu.lane().unwrap();
    let mut job = Codec::Lzss(params)
        .device_compressor(gpu, &mut lane, &refs)
        .unwrap();
    job.enqueue(gpu, &mut lane).unwrap();
    // The kernels write the size tables and payloads: the streams less their headers
    // (5 bytes and the length's varint) and tails (the byte after the last whole symbol).
    let expected: usize = refs
        .iter()
        .zip(&streams)
        .map(|(r, s)| {
            let varint = ((64 - (r.len() as u64).max(1).leading_zeros()) as usize).div_ceil(7);
            s.len() - (5 + varint) - r.len() % 2
        })
        .sum();
    assert_eq!(job.output_bytes(gpu, &mut lane).unwrap(), expected);
    let stream_refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
    let mut job = CodecId::Lzss
        .device_decompressor(gpu, &mut lane, &stream_refs, &lens)
        .unwrap();
    job.enqueue(gpu, &mut lane).unwrap();
    job.output_bytes(gpu, &mut lane).unwrap();
}

#[test]
fn concurrent_callers_each_get_their_own_lane() {
    let Some(gpu) = gpu_or_skip("concurrent_callers_each_get_their_own_lane") else {
        return;
    };
    let inputs = synthetic_inputs();
    std::thread::scope(|scope| {
        for t in 0..12 {
            let inputs = &inputs;
            scope.spawn(move || {
                let params = LzssParams::new([1, 2, 4, 8][t % 4], 64, 4096).unwrap();
                let placement = Placement::on(gpu);
                for (name, input) in inputs {
                    let on_gpu = Codec::Lzss(params).compress_one(&placement, input).unwrap();
                    assert!(
                        on_gpu == lzss::compress(input, &params),
                        "{name} thread {t}"
                    );
                }
            });
        }
    });
}

#[test]
fn corrupt_streams_are_errors_on_the_gpu_exactly_when_on_the_cpu() {
    let Some(gpu) = gpu_or_skip("corrupt_streams_are_errors_on_the_gpu_exactly_when_on_the_cpu")
    else {
        return;
    };
    let mut rng = Rng(7);
    let inputs = synthetic_inputs();
    let mut rejected = 0;
    for (name, input) in inputs.iter().filter(|(_, i)| i.len() > 1000) {
        for s in [1u8, 2, 4, 8] {
            let params = LzssParams::new(s, 64, 2048).unwrap();
            let stream = lzss::compress(input, &params);
            for case in 0..40 {
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
                        // Bytes inside the first chunk's payload (tokens, flags, lengths).
                        let at = 8 + rng.below(64.min(bad.len() as u64 - 8)) as usize;
                        bad[at] = rng.next() as u8;
                    }
                    _ => bad.extend_from_slice(&[0, 1, 2]),
                }
                let cpu = CodecId::Lzss.decompress_batch(&Placement::CPU, &[&bad], &[input.len()]);
                let on_gpu = gpu_decompress(gpu, CodecId::Lzss, &[&bad], &[input.len()]);
                match (&cpu, &on_gpu) {
                    (Ok(a), Ok(b)) => {
                        assert!(
                            a.get(0) == &b[0][..],
                            "{name} S={s} case {case}: outputs differ"
                        )
                    }
                    (Err(_), Err(e)) => {
                        rejected += 1;
                        assert!(e.to_string().contains("lzss"), "{e}");
                    }
                    _ => panic!(
                        "{name} S={s} case {case}: CPU {:?} but GPU {:?}",
                        cpu.as_ref().map(|v| v.bytes().len()),
                        on_gpu.as_ref().map(|v| v.len())
                    ),
                }
            }
        }
    }
    assert!(
        rejected > 100,
        "only {rejected} corrupt streams were rejected"
    );
}
