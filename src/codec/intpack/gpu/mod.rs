//! `intpack` on the GPU: the streams of the CPU reference, for batches of buffers through
//! the runtime's step pipeline. Callers go through the batched interface,
//! [`crate::codec::Codec`]; intpack enters the pipelines it shares with lzss
//! (`codec::blocks_gpu`) from its registration (`intpack/family.rs`), and this module
//! holds the kernels' launchers (`launch.rs`: one thread block per 1024-value block, in
//! both directions, and intpack as a `codec::blocks_gpu::BlockCodec`).

pub(crate) mod launch;

pub use launch::IntpackDecodeError;
