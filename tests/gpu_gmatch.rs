//! Snappy decompression on the GPU: streams from the `snap` crate and from gmatch, raw
//! (batched) and framed, decode to the input; corrupt streams are errors exactly when
//! the CPU decoder says so. Without a GPU these tests say they were skipped; with
//! `COLZIP_REQUIRE_GPU=1` a missing GPU is a failure.

mod common;

use colzip::codec::gmatch;
use common::{Rng, gpu_or_skip, tpch_lineitem_columns};
use std::io::Write;

/// Inputs with every element kind: incompressible bytes (long literals), runs (long
/// overlapping copies), text (copy-1 and copy-2), and lengths around the 64 KiB blocks.
fn inputs() -> Vec<Vec<u8>> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let words = [
        "select ",
        "from ",
        "lineitem ",
        "where ",
        "quickly ",
        "final ",
        "ironic ",
    ];
    let text: Vec<u8> = (0..40_000)
        .flat_map(|_| words[rng.below(words.len() as u64) as usize].bytes())
        .collect();
    vec![
        Vec::new(),
        vec![42],
        (0..100_000).map(|_| rng.next() as u8).collect(),
        (0..200_000).map(|i| (i / 1000) as u8).collect(),
        vec![0u8; 65_536 * 3 + 17],
        text,
        (0..70_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect(),
    ]
}

#[test]
fn gpu_decodes_snap_and_gmatch_raw_streams_in_one_batch() {
    let Some(gpu) = gpu_or_skip("gpu_decodes_snap_and_gmatch_raw_streams_in_one_batch") else {
        return;
    };
    let mut originals = inputs();
    originals.extend(
        tpch_lineitem_columns(0.01)
            .into_iter()
            .map(|(_, bytes)| bytes),
    );
    let mut streams = Vec::new();
    let mut expected = Vec::new();
    for input in &originals {
        streams.push(snap::raw::Encoder::new().compress_vec(input).unwrap());
        expected.push(input.clone());
        streams.push(gmatch::compress_raw(input).unwrap());
        expected.push(input.clone());
    }
    let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
    let decoded = gmatch::gpu::decompress_raw_batch(gpu, &refs, usize::MAX).unwrap();
    assert_eq!(decoded.len(), expected.len());
    for (i, (d, e)) in decoded.iter().zip(&expected).enumerate() {
        assert!(d == e, "buffer {i} ({} bytes) decoded wrong", e.len());
    }
    // One at a time too.
    for (stream, input) in streams.iter().zip(&expected) {
        assert!(gmatch::gpu::decompress_raw(gpu, stream, usize::MAX).unwrap() == *input);
    }
}

#[test]
fn gpu_decodes_framed_streams_of_snap_and_gmatch() {
    let Some(gpu) = gpu_or_skip("gpu_decodes_framed_streams_of_snap_and_gmatch") else {
        return;
    };
    for input in inputs().into_iter().chain(
        tpch_lineitem_columns(0.01)
            .into_iter()
            .map(|(_, bytes)| bytes),
    ) {
        let mut writer = snap::write::FrameEncoder::new(Vec::new());
        writer.write_all(&input).unwrap();
        let from_snap = writer.into_inner().unwrap();
        let ours = gmatch::compress_framed(&input);
        for stream in [from_snap, ours] {
            let decoded = gmatch::gpu::decompress_framed(gpu, &stream, usize::MAX).unwrap();
            assert!(decoded == input, "framed stream of {} bytes", input.len());
        }
    }
}

#[test]
fn corrupt_streams_are_errors_on_the_gpu_exactly_when_on_the_cpu() {
    let Some(gpu) = gpu_or_skip("corrupt_streams_are_errors_on_the_gpu_exactly_when_on_the_cpu")
    else {
        return;
    };
    let mut rng = Rng(99);
    let mut rejected = 0;
    for input in inputs().iter().filter(|i| i.len() > 1000) {
        let raw = gmatch::compress_raw(input).unwrap();
        let framed = gmatch::compress_framed(input);
        for case in 0..60 {
            for (framing, stream) in [(false, &raw), (true, &framed)] {
                let mut bad = stream.clone();
                match case % 3 {
                    0 => bad.truncate(rng.below(bad.len() as u64) as usize),
                    1 => {
                        for _ in 0..1 + rng.below(3) {
                            let at = rng.below(bad.len() as u64) as usize;
                            bad[at] ^= 1 << rng.below(8);
                        }
                    }
                    _ => {
                        // A tag near the start: kinds, lengths and offsets change.
                        let at = rng.below(64.min(bad.len() as u64)) as usize;
                        bad[at] = rng.next() as u8;
                    }
                }
                let (cpu, on_gpu) = if framing {
                    (
                        gmatch::decompress_framed(&bad),
                        gmatch::gpu::decompress_framed(gpu, &bad, usize::MAX),
                    )
                } else {
                    (
                        gmatch::decompress_raw(&bad),
                        gmatch::gpu::decompress_raw(gpu, &bad, usize::MAX),
                    )
                };
                match (&cpu, &on_gpu) {
                    (Ok(a), Ok(b)) => assert!(a == b, "case {case}: outputs differ"),
                    (Err(_), Err(e)) => {
                        rejected += 1;
                        assert!(e.to_string().contains("gmatch"), "{e}");
                    }
                    _ => panic!(
                        "case {case} framed={framing}: CPU {:?} but GPU {:?}",
                        cpu.as_ref().map(|v| v.len()),
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
    // A claimed length over the limit is refused before any work.
    let stream = gmatch::compress_raw(&[7u8; 10_000]).unwrap();
    assert!(gmatch::gpu::decompress_raw(gpu, &stream, 100).is_err());
}
