//! The GPU runtime. Without a GPU these tests say they were skipped; with
//! `COLZIP_REQUIRE_GPU=1` (the device machine's runs) a missing GPU is a failure.

use std::sync::Arc;

mod common;

use colzip::gpu::{Backend, SELFTEST};
use common::gpu_or_skip;

#[test]
fn backend_choices_parse_and_resolve() {
    for (text, backend) in [
        ("auto", Backend::Auto),
        ("CPU", Backend::Cpu),
        (" gpu ", Backend::Gpu),
    ] {
        assert_eq!(text.parse::<Backend>().unwrap(), backend);
    }
    assert!(
        "cuda"
            .parse::<Backend>()
            .unwrap_err()
            .to_string()
            .contains("expected auto, cpu or gpu")
    );
    assert!(Backend::Cpu.resolve().unwrap().is_none());
    // Auto never fails; Gpu fails exactly when there is no GPU, with the reason.
    let auto = Backend::Auto.resolve().unwrap();
    match Backend::Gpu.resolve() {
        Ok(gpu) => assert!(gpu.is_some() && auto.is_some()),
        Err(error) => {
            assert!(auto.is_none());
            // One sentence, without a "GPU: " label doubling what it says.
            assert!(
                error
                    .to_string()
                    .starts_with("no usable GPU for backend 'gpu': "),
                "{error}"
            );
        }
    }
}

#[test]
fn kernels_compile_once_and_run() {
    let Some(gpu) = gpu_or_skip("kernels_compile_once_and_run") else {
        return;
    };
    let first = gpu.module(&SELFTEST, &[]).unwrap();
    let second = gpu.module(&SELFTEST, &[]).unwrap();
    assert!(
        Arc::ptr_eq(&first, &second),
        "the module is compiled once per process"
    );
    for len in [0, 1, 1000, 1 << 24] {
        gpu.self_test(len).unwrap();
    }
    let info = gpu.info();
    assert!(
        !info.name.is_empty() && info.multiprocessors > 0,
        "{info:?}"
    );
}

#[test]
fn streams_serve_concurrent_callers() {
    let Some(gpu) = gpu_or_skip("streams_serve_concurrent_callers") else {
        return;
    };
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| gpu.self_test(1 << 20).unwrap());
        }
    });
}

/// More callers than lanes, each a rayon worker of the global pool, on every codec (whose
/// host stages use many cores): all finish, with the CPU's bytes. Workers waiting for
/// lanes once starved the lane holders' host stages of the pool they needed: a deadlock
/// (a compressed table's load never ended); a watchdog turns a hang into a failure.
#[test]
fn more_rayon_callers_than_lanes_all_finish() {
    use colzip::codec::bwt::BwtParams;
    use colzip::codec::lzss::LzssParams;
    use colzip::codec::{Codec, Placement, SnappyFormat};
    use rayon::prelude::*;
    let Some(gpu) = gpu_or_skip("more_rayon_callers_than_lanes_all_finish") else {
        return;
    };
    let codecs = [
        Codec::Bwt(BwtParams::default()),
        Codec::Gmatch(SnappyFormat::Raw),
        Codec::Lzss(LzssParams::default()),
    ];
    let mut rng = common::Rng(7);
    let words = [
        "lorem", "ipsum", "dolor", "sit", "amet", "columnar", "gpu", "zip",
    ];
    let mut text = Vec::new();
    while text.len() < 3 << 20 {
        text.extend_from_slice(words[rng.below(words.len() as u64) as usize].as_bytes());
        text.push(b' ');
    }
    // 'static, for a thread the test does not join when it hangs.
    let text: &'static [u8] = Box::leak(text.into_boxed_slice());
    let calls = 4 * colzip::gpu::MAX_LANES.max(rayon::current_num_threads());
    let piece = move |k: usize| &text[(k * 4099) % (1 << 20)..][..2 << 20];
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let streams: Vec<Vec<u8>> = (0..calls)
            .into_par_iter()
            .map(|k| {
                codecs[k % codecs.len()]
                    .compress_one(&Placement::on(gpu), piece(k))
                    .unwrap()
            })
            .collect();
        let _ = done.send(streams);
    });
    let streams = finished
        .recv_timeout(std::time::Duration::from_secs(300))
        .expect("callers waiting for lanes did not finish in 300 s (deadlock)");
    for (k, stream) in streams.iter().enumerate() {
        let codec = codecs[k % codecs.len()];
        let cpu = codec.compress_one(&Placement::CPU, piece(k)).unwrap();
        assert!(*stream == cpu, "call {k} ({codec:?}): GPU bytes differ");
    }
}
