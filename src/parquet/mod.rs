//! Standard Parquet files whose SNAPPY pages are made by colzip's `gmatch` codec (on the
//! GPU when there is one, the same bytes on the CPU), and reading SNAPPY Parquet back.
//!
//! (Being built in issue 5: each submodule's docs say what it holds.)

pub mod read;
pub mod write;
