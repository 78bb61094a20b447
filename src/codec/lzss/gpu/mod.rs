//! `lzss` on the GPU: the streams of the CPU reference, for batches of buffers through the
//! runtime's step pipeline. Callers go through the batched interface,
//! [`crate::codec::Codec`]; this module holds the pipelines (`compress.rs`,
//! `decompress.rs`) and the kernels' launchers (`launch.rs`: kernels I–III after GPULZ
//! and the decoder).

pub(crate) mod compress;
pub(crate) mod decompress;
pub(crate) mod device;
pub(crate) mod launch;

pub use launch::{LzssDecodeError, LzssShape, Matcher, compress_shared_bytes};
