//! The codecs, on plain bytes. This layer knows nothing of Arrow: it turns byte buffers
//! (with a symbol width where that matters) into self-describing streams and back.
//!
//! | codec | module | stream |
//! |---|---|---|
//! | multi-byte LZSS (GPULZ) | [`lzss`] | header + chunk size table + chunks |
//! | G-match | [`gmatch`] | the Snappy raw or framing format, or blocks of raw streams |
//! | BWT + MTF + Huffman | [`bwt`] | header + independent blocks with gap arrays |
//! | frame of reference, delta, runs, dictionary | [`intpack`] | header + block size table + blocks of 1024 bit-packed values |
//!
//! Each codec implements one trait (`CodecFamily`, in `interface`) in its own folder, and
//! the registry ([`registry`]) lists them: the settled [`Codec`], the [`CodecSpec`], the
//! lookup of a stream's codec by its [`CodecId`] and every list of codec names come from
//! that list.
//!
//! Every codec is driven through one batched interface ([`batch`]): [`Codec`] (a codec
//! with settled parameters) compresses many buffers in one call and [`CodecId`] decodes
//! them, on the CPU's cores or on the GPU as a [`Placement`] decides, writing the same
//! bytes either way. On the GPU, `lzss` and `intpack`, whose streams are both blocks with
//! a u16 size table, share their pipelines (`blocks_gpu`). [`CodecSpec`] names a codec
//! and its parameters as text (`lzss:s=2,w=128,c=2048`, `gmatch:framed`, `bwt:block=4m`,
//! `intpack:w=4`), the form the CLI and SQL take. The byte-level formats are specified in `docs/FORMAT.md`.

pub mod batch;
mod blocks_gpu;
pub mod bwt;
mod crc_gpu;
mod error;
pub mod gmatch;
mod id;
mod interface;
pub mod intpack;
#[cfg(test)]
mod kernels_compile;
pub mod lzss;
mod output;
mod placement;
pub mod registry;
mod spec;
pub mod stored;
#[cfg(test)]
pub(crate) mod test_data;
pub mod varint;

pub use error::{CodecError, Result};
pub use gmatch::SnappyFormat;
pub use id::CodecId;
pub use interface::{AutoUse, DeviceJob, Direction, Packed, Suited};
pub use placement::{GPU_MIN_BYTES, Placement};
pub use registry::{Codec, CodecSpec};

/// Every kernel file of the codecs with the `-D` defines its launchers compile it with:
/// `colzip gpu` loads them all (so the on-disk kernel cache is warm for later
/// processes), and the tests compile them with NVRTC alone. Kernels codecs share (the
/// scan of the codecs with a u16 size table, the CRC-32C) are listed once, here.
pub fn kernel_builds() -> Vec<(crate::gpu::KernelSource, Vec<crate::gpu::Define>)> {
    let mut builds = registry::kernel_builds();
    builds.extend(blocks_gpu::launch::kernel_builds());
    builds.push((crc_gpu::CRC32C, Vec::new()));
    builds
}
