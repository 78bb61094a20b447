//! `intpack` on the GPU: the streams of the CPU reference, for batches of buffers through
//! the runtime's step pipeline. Callers go through the batched interface,
//! [`crate::codec::Codec`]; this module holds the pipelines (`compress.rs`,
//! `decompress.rs`), the device-resident jobs (`device.rs`) and the kernels' launchers
//! (`launch.rs`: one thread block per 1024-value block, in both directions).

pub(crate) mod compress;
pub(crate) mod decompress;
pub(crate) mod device;
pub(crate) mod launch;

pub use launch::IntpackDecodeError;
