//! # colzip
//!
//! Compresses typed Apache Arrow columns with three codecs from the GPU compression
//! literature and one for integers, each with a CPU implementation that defines its
//! format:
//!
//! - **lzss**: multi-byte LZSS after GPULZ (symbols of 1/2/4/8 bytes, window ≤ 255
//!   symbols, independent chunks);
//! - **gmatch**: G-match, an LZ77 in two parallel passes whose output is the Snappy
//!   format, so every Snappy reader decodes it;
//! - **bwt**: Burrows–Wheeler transform + move-to-front + zero-run + Huffman coding with
//!   gap arrays for parallel decoding, for string columns;
//! - **intpack**: integers in blocks of 1024 by frame of reference, delta, runs or
//!   dictionary, bit-packed.
//!
//! Layers, from the bottom (each uses only those below it; `docs/ARCHITECTURE.md` has
//! the details):
//!
//! - [`memory`], [`limits`], [`measure`], [`trace`], and the CLI's `reporting` (output
//!   formats, one table/JSON/CSV renderer) and `panics`: helpers every layer may use;
//! - [`tpch`]: TPC-H tables generated in-process, and the 22 queries;
//! - [`gpu`]: the device runtime (devices, lanes, pinned staging and the pinned pool GPU
//!   decodes are handed out on, the step pipeline, the kernel cache) the GPU codecs are
//!   built on;
//! - [`codec`]: the codecs on plain bytes, each a folder implementing one trait and
//!   listed in one registry ([`codec::registry`]), driven through one batched interface
//!   on the CPU or the GPU;
//! - [`column`](mod@column): Arrow arrays to compressed columns (containers) and back;
//! - [`archive`]: files of many columns, and conversions from and to raw, Arrow IPC,
//!   Parquet, CSV and JSON-lines files; `parquet`: Parquet files with gmatch-made SNAPPY pages;
//! - `harness`: the measurements of `colzip tpch`, `colzip bench` and `colzip_stats`
//!   (a column against codecs and baselines; the GPU benchmark);
//! - `datafusion`: SQL functions, compressed tables and the `COLZIP_PARQUET` format;
//!   `cluster`: the same on Ballista.
//!
//! `reporting`, `panics` and `harness` serve the CLI, `colzip_stats`, the tests and the
//! benches; they are public for them but hidden from these docs and not part of the
//! library's interface.
//!
//! The `colzip` binary is a thin CLI over them.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{ArrayRef, Int64Array};
//! use colzip::column::{self, CodecChoice};
//!
//! let keys: ArrayRef = Arc::new(Int64Array::from_iter_values((0..10_000).map(|i| i / 4)));
//! let compressed = column::compress(&keys, &CodecChoice::Auto).unwrap();
//! assert!(compressed.compressed_bytes() * 4 < compressed.plain_bytes());
//! assert_eq!(&column::decompress(&compressed).unwrap(), &keys);
//! ```

pub mod archive;
#[cfg(feature = "ballista")]
pub mod cluster;
pub mod codec;
pub mod column;
#[cfg(feature = "datafusion")]
pub mod datafusion;
mod error;
pub mod gpu;
#[doc(hidden)]
pub mod harness;
pub mod limits;
pub mod measure;
pub mod memory;
#[doc(hidden)]
pub mod panics;
#[cfg(feature = "parquet")]
pub mod parquet;
#[doc(hidden)]
pub mod reporting;
pub mod tpch;
pub mod trace;

pub use error::{Error, Result, report};

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExamples;

/// docs/CODECS.md's Rust examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../docs/CODECS.md")]
pub struct CodecsExamples;
