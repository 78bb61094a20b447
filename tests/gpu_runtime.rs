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
            assert!(error.to_string().starts_with("GPU: "), "{error}");
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
