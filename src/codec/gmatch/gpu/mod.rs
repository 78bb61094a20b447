//! G-match on the GPU: compression writing the same bytes as the CPU reference in every
//! format (raw, framed, blocks), and decompression of any valid Snappy stream (G-match's,
//! the `snap` crate's, other writers'), for batches of buffers through the runtime's step
//! pipeline. Callers go through the batched interface, [`crate::codec::Codec`]; this
//! module holds the pipelines (`compress.rs`, `decompress.rs`) and the kernels' launchers
//! (`launch.rs`).

pub(crate) mod compress;
pub(crate) mod decompress;
pub(crate) mod device;
pub(crate) mod launch;

pub use launch::{LayoutFormat, SnappyDecodeError};
