//! G-match on the GPU, through the batched interface (ordinary, caller's and pinned
//! memory). Compression: the GPU's raw, framed and blocks streams are the CPU reference's
//! bytes (singly, batched, across pipeline steps) and `snap` decodes them.
//! Decompression: streams from the `snap` crate and from gmatch in every format decode to
//! the input; corrupt streams are errors exactly when the CPU decoder says so. Without a
//! GPU these tests say they were skipped; with `COLZIP_REQUIRE_GPU=1` a missing GPU is a
//! failure.

mod common;

use colzip::codec::{Codec, CodecId, Placement, SnappyFormat, gmatch};
use common::{
    Rng, cases, gpu_compress, gpu_decompress, gpu_or_skip, mutate, random_words,
    tpch_lineitem_columns,
};
use std::io::Write;

const FORMATS: [(SnappyFormat, CodecId); 3] = [
    (SnappyFormat::Raw, CodecId::GmatchRaw),
    (SnappyFormat::Framed, CodecId::GmatchFramed),
    (SnappyFormat::Blocks, CodecId::GmatchBlocks),
];

/// The CPU reference's streams of `inputs` in `format`.
fn cpu_streams(format: SnappyFormat, inputs: &[&[u8]]) -> Vec<Vec<u8>> {
    Codec::Gmatch(format)
        .compress_batch(&Placement::CPU, inputs)
        .unwrap()
        .into_vecs()
}

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
    let text = random_words(&mut rng, &words, 40_000);
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

/// Inputs that stress the compressor's rules: runs of every length around the match
/// cap (64) and the walk's 256-byte segments, matches crossing segments and blocks,
/// periods 1..=9, sparse and dense hash collisions, and lengths around the units.
fn compressor_inputs() -> Vec<Vec<u8>> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = inputs();
    for len in [
        3usize, 4, 5, 31, 32, 33, 63, 64, 65, 255, 256, 257, 65_535, 65_536, 65_537,
    ] {
        out.push((0..len).map(|_| rng.below(3) as u8).collect());
    }
    // Runs with random lengths (some far past the cap), separated by noise.
    let mut runs = Vec::new();
    while runs.len() < 300_000 {
        let len = [1, 3, 5, 60, 64, 65, 68, 200, 700, 3000][rng.below(10) as usize];
        let byte = rng.below(4) as u8;
        runs.extend(std::iter::repeat_n(byte, len));
        runs.extend((0..rng.below(6)).map(|_| rng.next() as u8));
    }
    out.push(runs);
    for period in 1..=9u64 {
        let pattern: Vec<u8> = (0..period).map(|_| rng.next() as u8).collect();
        out.push(pattern.iter().copied().cycle().take(150_000).collect());
    }
    // Long repeats of a random 5 KB piece with single-byte edits: long matches that
    // end at arbitrary places, across segment and block boundaries.
    let piece: Vec<u8> = (0..5000).map(|_| rng.next() as u8).collect();
    let mut edited = Vec::new();
    for _ in 0..60 {
        let mut copy = piece.clone();
        let at = rng.below(copy.len() as u64) as usize;
        copy[at] ^= 0x55;
        edited.extend_from_slice(&copy);
    }
    out.push(edited);
    // Sorted 8-byte keys (like l_orderkey) and small-alphabet bytes.
    out.push((0..40_000u64).flat_map(|i| (i / 3).to_le_bytes()).collect());
    out.push(
        (0..200_000)
            .map(|_| b"ACGT"[rng.below(4) as usize])
            .collect(),
    );
    out
}

#[test]
fn gpu_compression_writes_the_cpu_bytes() {
    let Some(gpu) = gpu_or_skip("gpu_compression_writes_the_cpu_bytes") else {
        return;
    };
    let mut all = compressor_inputs();
    all.extend(
        tpch_lineitem_columns(0.01)
            .into_iter()
            .map(|(_, bytes)| bytes),
    );
    for (i, input) in all.iter().enumerate() {
        for (format, _) in FORMATS {
            let on_gpu = gpu_compress(gpu, &Codec::Gmatch(format), &[input]).remove(0);
            let expected = cpu_streams(format, &[input]).remove(0);
            if on_gpu != expected {
                let first = on_gpu.iter().zip(&expected).position(|(a, b)| a != b);
                panic!(
                    "input {i} ({} bytes) {format:?}: GPU stream differs from the CPU's (lengths {} / {}, first difference at {first:?})",
                    input.len(),
                    on_gpu.len(),
                    expected.len()
                );
            }
        }
        let raw = gmatch::compress_raw(input).unwrap();
        assert_eq!(
            snap::raw::Decoder::new().decompress_vec(&raw).unwrap(),
            *input,
            "snap decodes input {i}"
        );
        let framed = gmatch::compress_framed(input);
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut snap::read::FrameDecoder::new(&framed[..]), &mut back)
            .unwrap();
        assert!(back == *input, "snap decodes framed input {i}");
    }
}

#[test]
fn gpu_compresses_a_batch_and_across_steps() {
    let Some(gpu) = gpu_or_skip("gpu_compresses_a_batch_and_across_steps") else {
        return;
    };
    // Pages of every size, empty ones included, in one batch.
    let mut rng = Rng(7);
    let columns = tpch_lineitem_columns(0.01);
    let comment = &columns
        .iter()
        .find(|(name, _)| name == "l_comment")
        .unwrap()
        .1;
    let mut pages: Vec<Vec<u8>> = vec![Vec::new()];
    let mut at = 0;
    while at < comment.len() {
        let len = [0usize, 1, 100, 4096, 65_536, 100_000, 1 << 20][rng.below(7) as usize];
        let end = (at + len).min(comment.len());
        pages.push(comment[at..end].to_vec());
        at = end;
    }
    pages.push(Vec::new());
    let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
    for (format, id) in FORMATS {
        let on_gpu = gpu_compress(gpu, &Codec::Gmatch(format), &refs);
        assert!(on_gpu == cpu_streams(format, &refs), "{format:?} batch");
        let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
        let lens: Vec<usize> = pages.iter().map(Vec::len).collect();
        assert!(
            gpu_decompress(gpu, id, &streams, &lens).unwrap() == pages,
            "{format:?} decode"
        );
    }
    // More than one pipeline step: 4.5 steps of lineitem bytes (150 MB at the default
    // step, 4.7 MB under the sanitizer's COLZIP_GPU_STEP_MIB=1).
    let big: Vec<u8> = columns
        .iter()
        .flat_map(|(_, bytes)| bytes.iter().copied())
        .cycle()
        .take(gpu.step_bytes() * 9 / 2 + 12_345)
        .collect();
    for (format, id) in FORMATS {
        let on_gpu = gpu_compress(gpu, &Codec::Gmatch(format), &[&big]).remove(0);
        assert!(
            on_gpu == cpu_streams(format, &[&big]).remove(0),
            "{format:?} big"
        );
        let back = gpu_decompress(gpu, id, &[&on_gpu], &[big.len()]).unwrap();
        assert!(back[0] == big, "{format:?} big decode");
    }
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
    let lens: Vec<usize> = expected.iter().map(Vec::len).collect();
    let decoded = gpu_decompress(gpu, CodecId::GmatchRaw, &refs, &lens).unwrap();
    assert_eq!(decoded.len(), expected.len());
    for (i, (d, e)) in decoded.iter().zip(&expected).enumerate() {
        assert!(d == e, "buffer {i} ({} bytes) decoded wrong", e.len());
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
            let decoded =
                gpu_decompress(gpu, CodecId::GmatchFramed, &[&stream], &[input.len()]).unwrap();
            assert!(
                decoded[0] == input,
                "framed stream of {} bytes",
                input.len()
            );
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
    let per_stream = cases(40, 12);
    // Under the sanitizer, the first 24 KiB of each input (still several framed chunks'
    // worth of elements of every kind) keep racecheck's run within minutes.
    let cut = cases(usize::MAX, 24 << 10);
    for input in inputs().iter().filter(|i| i.len() > 1000) {
        let input = &input[..input.len().min(cut)];
        for (format, id) in FORMATS {
            let stream = cpu_streams(format, &[input]).remove(0);
            for case in 0..per_stream {
                let mut bad = stream.clone();
                // Rewrites hit a tag (or table entry) near the start.
                mutate(&mut rng, &mut bad, case, |rng, len| {
                    rng.below(64.min(len as u64)) as usize
                });
                let cpu = id.decompress_batch(&Placement::CPU, &[&bad], &[input.len()]);
                let on_gpu = gpu_decompress(gpu, id, &[&bad], &[input.len()]);
                match (&cpu, &on_gpu) {
                    (Ok(a), Ok(b)) => assert!(a.get(0) == &b[0][..], "case {case}: outputs differ"),
                    (Err(_), Err(e)) => {
                        rejected += 1;
                        assert!(e.to_string().contains("gmatch"), "{e}");
                    }
                    _ => panic!(
                        "case {case} {format:?}: CPU {:?} but GPU {:?}",
                        cpu.as_ref().map(|v| v.bytes().len()),
                        on_gpu.as_ref().map(|v| v.len())
                    ),
                }
            }
        }
    }
    // A third of the mutations are truncations, nearly always errors (5 inputs, 3 formats).
    let expected = 15 * per_stream / 4;
    assert!(
        rejected > expected,
        "only {rejected} corrupt streams were rejected (expected over {expected})"
    );
}

#[test]
fn resident_buffers_compress_and_decode_on_the_device() {
    let Some(gpu) = gpu_or_skip("resident_buffers_compress_and_decode_on_the_device") else {
        return;
    };
    let columns = tpch_lineitem_columns(0.01);
    let refs: Vec<&[u8]> = columns.iter().map(|(_, b)| b.as_slice()).collect();
    let lens: Vec<usize> = refs.iter().map(|r| r.len()).collect();
    let mut lane = gpu.lane().unwrap();
    for (format, id) in FORMATS {
        let codec = Codec::Gmatch(format);
        let streams = cpu_streams(format, &refs);
        let mut job = codec.device_compressor(gpu, &mut lane, &refs).unwrap();
        job.enqueue(gpu, &mut lane).unwrap();
        let written = job.output_bytes(gpu, &mut lane).unwrap();
        assert_eq!(
            written,
            streams.iter().map(Vec::len).sum::<usize>(),
            "{format:?}"
        );
        let stream_refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
        let mut job = id
            .device_decompressor(gpu, &mut lane, &stream_refs, &lens)
            .unwrap();
        job.enqueue(gpu, &mut lane).unwrap();
        job.output_bytes(gpu, &mut lane).unwrap();
    }
}
