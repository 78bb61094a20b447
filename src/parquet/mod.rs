//! Standard Parquet files whose SNAPPY pages are made by colzip's `gmatch` codec (on the
//! GPU when there is one, the same bytes on the CPU), and reading SNAPPY Parquet back
//! with the pages of a row group decompressed in one batch (on the GPU when there is one).
//!
//! - [`write`](mod@write): [`write::ParquetWriter`] / [`write::write_batches`];
//! - [`read`]: [`read::ParquetReader`] / [`read::read_batches`];
//! - [`row_group`]: one row group's pages decompressed in one batched call and handed
//!   to the Arrow decoder (used by `read` and by the SQL scan);
//! - [`footer`]: the footer read and checked without trusting it (the parquet crate panics
//!   on some corrupt footers), before any reader uses it;
//! - `pages` (private): the batched page compression service both use;
//! - `encode` and `capture` (private): the writer's encoding stage and its access to the
//!   pages its encoders stored.

mod capture;
mod encode;
pub mod footer;
mod pages;
pub mod read;
pub mod row_group;
pub mod write;
