//! Every kernel file compiles with the constants its launchers give it (NVRTC only: no
//! driver or device needed). Skipped, saying so, where NVRTC cannot be loaded (CI); run
//! with NVRTC on the library path (e.g. from the `nvidia-cuda-nvrtc` wheel) to check
//! kernels without a GPU machine.

use crate::gpu::{SELFTEST, compile_kernel, nvrtc_available};

#[test]
fn every_kernel_file_compiles_with_its_launchers_defines() {
    if !nvrtc_available() {
        eprintln!("every_kernel_file_compiles_with_its_launchers_defines: skipped, no NVRTC");
        return;
    }
    let mut builds = vec![(SELFTEST, Vec::new())];
    builds.extend(super::kernel_builds());
    for (kernel, defines) in builds {
        for arch in ["sm_80", "sm_90"] {
            let cubin = compile_kernel(&kernel, &defines, arch)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", kernel.name));
            assert!(!cubin.is_empty());
        }
    }
}
