//! `bwt` on the GPU. Decompression: every stage of the format's parallel decoder in
//! kernels (gap-array Huffman decoding, zero runs and move-to-front by chunks, the LF
//! mapping and the inverse BWT by stretches, the block CRCs), writing exactly the CPU
//! decoder's bytes and failing exactly where it fails. Compression: the forward transform
//! of many blocks at once by suffix sorting, move-to-front, zero runs and the Huffman
//! stage and the block CRCs on the GPU (the host assembles the payloads), the CPU's
//! bytes. Callers go through the batched interface, [`crate::codec::Codec`] and
//! [`crate::codec::CodecId`]; this module holds the step pipelines (`compress.rs`,
//! `decompress.rs`), the device-resident forms of both (`device.rs`),
//! what decoding uploads and checks (`step.rs`), and the launchers (`forward.rs` for the
//! transform, `symbols.rs` for move-to-front and zero runs, `huffman.rs` for the
//! Huffman stage, `launch.rs` for decoding).

pub(crate) mod compress;
pub(crate) mod decompress;
pub(crate) mod device;
pub(crate) mod forward;
pub(crate) mod huffman;
pub(crate) mod launch;
mod step;
pub(crate) mod symbols;

#[doc(hidden)]
pub use huffman::huffman_on_device;
pub use launch::BwtDecodeError;
