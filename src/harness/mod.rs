//! The measurements behind `colzip tpch`, `colzip bench` and the SQL function
//! `colzip_stats`: harnesses, not the library's interface (hidden from its docs; the
//! CLI, `colzip_stats`, the integration tests and the benches use them).
//!
//! - [`columns`]: a column compressed with each contender (colzip's codecs and CPU
//!   baselines), the round trip verified, ratio and speeds reported; over the TPC-H
//!   tables in `colzip tpch`, over a session's table in `colzip_stats`;
//! - [`bench`](mod@bench): every codec through the batched interface on the GPU and the
//!   CPU (`colzip bench`).
//!
//! Both report their rows through [`crate::report`] and their medians through
//! [`crate::measure`].

pub mod bench;
pub mod columns;
