//! `intpack` on the GPU: the streams of the CPU reference, for batches of buffers through
//! the runtime's step pipeline. Callers go through the batched interface,
//! [`crate::codec::Codec`]; this module holds the entry points of the pipelines
//! (`compress.rs`, `decompress.rs`) and of the device-resident jobs (`device.rs`):
//! intpack's checks of parameters and streams, then the pipelines it shares with lzss,
//! `codec::blocks_gpu`; and the kernels' launchers (`launch.rs`: one thread block
//! per 1024-value block, in both directions, and intpack as a
//! `codec::blocks_gpu::BlockCodec`).

pub(crate) mod compress;
pub(crate) mod decompress;
pub(crate) mod device;
pub(crate) mod launch;

pub use launch::IntpackDecodeError;
