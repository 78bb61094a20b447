//! Helpers shared by the GPU test binaries.

use std::io::Write;

use colzip::gpu::Gpu;

/// The GPU, or `None` after saying on stderr that `test` was skipped. With
/// `COLZIP_REQUIRE_GPU=1` (the device machine's runs) a missing GPU fails the test.
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
