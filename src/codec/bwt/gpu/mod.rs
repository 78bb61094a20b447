//! `bwt` on the GPU: decompression of batches of streams, every stage of the format's
//! parallel decoder in kernels (gap-array Huffman decoding, zero runs and move-to-front
//! by chunks, the LF mapping and the inverse BWT by stretches, the block CRCs), writing
//! exactly the CPU decoder's bytes and failing exactly where it fails. Compression runs
//! on the CPU. Callers go through the batched interface, [`crate::codec::CodecId`]; this
//! module holds the step pipeline (`decompress.rs`), the device-resident form
//! (`device.rs`), what both upload and check (`step.rs`) and the kernels' launchers
//! (`launch.rs`).

pub(crate) mod decompress;
pub(crate) mod device;
pub(crate) mod launch;
mod step;

pub use launch::BwtDecodeError;
