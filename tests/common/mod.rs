//! Helpers shared by the GPU test binaries (each uses some of them).

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
    let columns = colzip::bench::plain_columns(colzip::tpch::Table::Lineitem, sf, None).unwrap();
    assert!(
        columns.len() >= 10,
        "lineitem has at least 10 plain columns"
    );
    columns.into_iter().map(|c| (c.name, c.bytes)).collect()
}
