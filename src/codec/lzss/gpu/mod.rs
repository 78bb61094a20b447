//! `lzss` on the GPU: the streams of the CPU reference, for batches of buffers through the
//! runtime's step pipeline. Callers go through the batched interface,
//! [`crate::codec::Codec`]; lzss enters the pipelines it shares with intpack
//! (`codec::blocks_gpu`) from its registration (`lzss/family.rs`), and this module holds
//! the kernels' launchers (`launch.rs`: kernels I and III after GPULZ and the decoder,
//! and lzss as a `codec::blocks_gpu::BlockCodec`).

pub(crate) mod launch;

pub use launch::{LzssDecodeError, LzssShape, Matcher, compress_shared_bytes};
