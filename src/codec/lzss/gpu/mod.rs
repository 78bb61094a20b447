//! `lzss` on the GPU: the streams of the CPU reference, for batches of buffers through the
//! runtime's step pipeline. Callers go through the batched interface,
//! [`crate::codec::Codec`]; this module holds the pipelines' entry points (`compress.rs`,
//! `decompress.rs`, `device.rs`: lzss's checks of parameters and streams, then the
//! pipelines it shares with intpack, `codec::blocks_gpu`) and the kernels' launchers
//! (`launch.rs`: kernels I and III after GPULZ and the decoder, and lzss as a
//! `codec::blocks_gpu::BlockCodec`).

pub(crate) mod compress;
pub(crate) mod decompress;
pub(crate) mod device;
pub(crate) mod launch;

pub use launch::{LzssDecodeError, LzssShape, Matcher, compress_shared_bytes};
