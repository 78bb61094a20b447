//! G-match on the GPU: Snappy compression writing the same bytes as the CPU reference,
//! and Snappy decompression of any valid stream (G-match's, the `snap` crate's, other
//! writers'). Both take batches (many buffers, such as the pages of a row group, in one
//! launch) and both Snappy formats (raw and framed, whose CRC-32C the GPU computes).
//!
//! ```no_run
//! use colzip::codec::gmatch;
//! use colzip::gpu::Gpu;
//! let gpu = Gpu::get()?;
//! let pages: Vec<Vec<u8>> = (0..64u8).map(|i| vec![i; 100_000]).collect();
//! let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
//! let streams = gmatch::gpu::compress_raw_batch(gpu, &refs)?;
//! assert_eq!(streams[3], gmatch::compress_raw(&pages[3])?);
//! let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
//! let decoded = gmatch::gpu::decompress_raw_batch(gpu, &refs, usize::MAX)?;
//! assert_eq!(decoded, pages);
//! # Ok::<(), colzip::Error>(())
//! ```

mod decode;
mod encode;

pub use decode::{
    decompress_framed, decompress_raw, decompress_raw_batch, time_framed, time_raw_batch,
};
pub use encode::{
    Format, compress_batch, compress_framed, compress_raw, compress_raw_batch, time_compress,
};
