//! The GPU pipelines of the codecs whose streams are *blocks with a u16 size table*
//! (`lzss`, `intpack`): a header, a u16 size per block, the blocks' encodings one after
//! another, and a tail of the bytes after the last whole value. Both codecs compress the
//! same way on the device (each block encoded into a slot of scratch, the prefix sum of
//! the sizes, the compaction of the slots after the size table) and decode the same way
//! (the prefix sum of the size table, then every block decoded at its place); the host
//! writes headers and tails. This module holds what does not depend on the format: the
//! steps through the runtime's pipeline (`compress.rs`, `decompress.rs`), the
//! device-resident jobs (`device.rs`) and the launch sequences around the codec's own
//! kernels, with the shared scan (`launch.rs`, `kernels/size_table_scan.cu`).
//!
//! A codec comes in through [`BlockCodec`] (its parameters as the launchers need them,
//! its block geometry, where a stream's parts are, its decoder's reason codes, its words
//! in errors and its buffer names) and its kernels through [`launch::BlockEncoder`] and
//! [`launch::BlockDecoder`]; its stream format (headers, layouts, validation) stays in its
//! own folder, as do its kernels' launch shapes.

pub(crate) mod compress;
pub(crate) mod decompress;
pub(crate) mod device;
pub(crate) mod launch;

use cudarc::driver::CudaSlice;
use launch::{BlockDecoder, BlockEncoder, ReasonCode};

use crate::gpu::{Gpu, GpuResult, Lane, PinnedBuffer};

/// A codec whose streams are blocks with a u16 size table, as the shared pipelines see it:
/// a value of it is one parameter set (streams of equal values share launches, in the
/// order of `Ord`).
pub(crate) trait BlockCodec: Copy + Ord + Send + Sync {
    /// Why its decoder rejects a block.
    type Reason: ReasonCode;
    /// The codec's own kernels for compression and decoding.
    type Encoder: BlockEncoder;
    type Decoder: BlockDecoder;
    /// A validated stream's layout, as the codec's CPU decoder reads it.
    type Layout: Sync;

    /// What the codec calls things in errors.
    const WORDS: Words;
    /// The names of its lanes' reusable buffers.
    const BUFFERS: Buffers;

    /// The parameter set of a stream of `layout`.
    fn of_layout(layout: &Self::Layout) -> Self;
    /// Where the parts of a stream of `layout` are.
    fn table(layout: &Self::Layout) -> Table<'_>;
    /// Bytes of a whole value (symbol or integer): a stream's body is its input's whole
    /// values, the tail the bytes after them.
    fn value_width(&self) -> usize;
    /// Input bytes of a whole block.
    fn block_bytes(&self) -> usize;
    /// What the kernels are given of block `k` of a body of `body` bytes (as a u16): its
    /// bytes (lzss) or its values (intpack).
    fn block_len(&self, body: usize, k: usize) -> u16;
    /// Bytes of a block's slot in the encoder's scratch.
    fn slot_bytes(&self) -> usize;
    /// Bytes of a compression launch's output (size table then encodings) for `blocks`
    /// blocks of `input` bytes of device input.
    fn out_bytes(&self, blocks: usize, input: usize) -> usize;
    /// The stream header of an input of `len` bytes.
    fn header(&self, len: usize) -> Vec<u8>;
    /// The worst-case stream length of an input of `len` bytes.
    fn max_compressed_len(&self, len: usize) -> usize;
    /// The compression kernels for this parameter set.
    fn encoder(&self, gpu: &Gpu) -> GpuResult<Self::Encoder>;
    /// The decoder's kernels for this parameter set.
    fn decoder(&self, gpu: &Gpu) -> GpuResult<Self::Decoder>;
}

/// Where a validated stream's parts are.
pub(crate) struct Table<'a> {
    /// Uncompressed bytes (`N`), and the part of them that is whole values.
    pub len: usize,
    pub body: usize,
    /// Byte offsets in the stream of the size table and of the first block's encoding.
    pub table_at: usize,
    pub payload_at: usize,
    /// Offset of every block's encoding from `payload_at`, and their total last.
    pub offsets: &'a [usize],
}

impl Table<'_> {
    /// Blocks in the stream (entries of its size table).
    pub fn blocks(&self) -> usize {
        self.offsets.len() - 1
    }
}

/// What a codec calls things in the shared pipelines' errors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Words {
    /// The codec's name.
    pub codec: &'static str,
    /// A block, in decoder errors (`chunk`, `block`).
    pub block: &'static str,
    /// The array of block places, in launch errors.
    pub places: &'static str,
    /// The array of what [`BlockCodec::block_len`] gives, in launch errors.
    pub lens: &'static str,
    /// The encodings' bytes, in the error of an impossible total.
    pub payload: &'static str,
    /// The blocks, in the error of a launch of more than a grid holds.
    pub grid_blocks: &'static str,
    /// What streams decoded together must share in the device-resident form.
    pub one_set: &'static str,
    /// Whether a decode launch checks the lengths of its block places and lengths, as
    /// its compression launch does.
    pub decode_checks_blocks: bool,
}

/// The names of a codec's lane buffers (device and pinned).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buffers {
    pub input: &'static str,
    pub meta: &'static str,
    pub scratch: &'static str,
    pub sizes: &'static str,
    pub offsets: &'static str,
    pub out: &'static str,
    pub staged: &'static str,
    pub error: &'static str,
}

/// Gives a step's buffers back to `lane` for its next step: the staging of its output
/// (when the sink is staged), the pinned buffer the host read the launch's offsets or
/// status from, then its device buffers.
fn give_back<const N: usize>(
    lane: &mut Lane,
    staged: Option<(&'static str, PinnedBuffer)>,
    host: (&'static str, PinnedBuffer),
    device: [(&'static str, CudaSlice<u8>); N],
) {
    if let Some((name, staging)) = staged {
        lane.put_pinned(name, staging);
    }
    lane.put_pinned(host.0, host.1);
    for (name, buffer) in device {
        lane.put_device(name, buffer);
    }
}
