//! Every kernel file compiles with the constants its launchers give it (NVRTC only: no
//! driver or device needed). Skipped, saying so, where NVRTC cannot be loaded (CI); run
//! with NVRTC on the library path (e.g. from the `nvidia-cuda-nvrtc` wheel) to check
//! kernels without a GPU machine.

use crate::gpu::{SELFTEST, assert_kernels_compile};

#[test]
fn every_kernel_file_compiles_with_its_launchers_defines() {
    let mut builds = vec![(SELFTEST, Vec::new())];
    builds.extend(super::kernel_builds());
    assert_kernels_compile(
        "every_kernel_file_compiles_with_its_launchers_defines",
        &builds,
    );
}
