//! What a codec provides to the registry ([`CodecFamily`]): its names and spec syntax, the
//! parsing and settling of its parameters, its stream ids, its CPU paths and, where it has
//! them, its GPU paths. A codec implements it in its own folder; the registry
//! (`codec::registry`) lists the implementations, and the batched interface, the spec
//! parser and every list of codec names go through that list.

use std::fmt;
use std::hash::Hash;

use super::{DeviceJob, Sink};
use crate::codec::error::{CodecError, Result};
use crate::codec::id::CodecId;
use crate::gpu::{Define, Gpu, HostMemory, KernelSource, Lane};
use cudarc::driver::CudaView;

/// Which way a codec runs: a codec may have a GPU path in one direction only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    Compress,
    Decompress,
}

/// One option of a spec's text, `key` or `key=value` (`raw`, `w=4`).
pub type SpecOption<'a> = (&'a str, Option<&'a str>);

/// The kinds of data `auto` tries a codec on, and how it ranks among the candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoUse {
    /// Tried on string and binary bytes.
    pub strings: bool,
    /// Tried on fixed-width values, lengths and bitmaps.
    pub fixed_width: bool,
    /// Higher decodes faster: of candidates giving the same size, the fastest to decode
    /// wins.
    pub decode_speed: u8,
}

/// What a codec compresses well, which decides where it is offered by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suited {
    /// Any bytes: a default contender in measurements and statistics.
    AnyBytes,
    /// Integers of the data type's width only.
    Integers,
    /// Nothing: the container's fallback for data no codec shrinks.
    Nothing,
}

/// A codec as the registry sees it. Every function is associated (no `self`): a family is
/// a unit type, its values are its parameters ([`Self::Options`] as a spec names them,
/// [`Self::Params`] once settled).
///
/// The GPU part is optional: the defaults say there is no GPU path, and the batched calls
/// then run the codec on the CPU whatever the placement.
pub(crate) trait CodecFamily: 'static {
    /// Parameters as a spec names them; some may be left for the data to settle.
    type Options: Copy + Eq + Hash + fmt::Debug + Send + Sync + 'static;
    /// Parameters settled: what every buffer of a batch is compressed with.
    type Params: Copy + Eq + Hash + fmt::Debug + Send + Sync + 'static;

    /// The name in specs, errors and help texts (`lzss`).
    const NAME: &'static str;
    /// Other names a spec accepts (`snappy`).
    const ALIASES: &'static [&'static str] = &[];
    /// The spec's syntax, as help texts show it (`gmatch[:raw|framed]`).
    const SYNTAX: &'static str;
    /// Every stream id the codec writes or reads, with the name of each (`gmatch:raw`).
    const IDS: &'static [(CodecId, &'static str)];
    /// What the codec compresses well.
    const SUITED: Suited;
    /// Whether and where `auto` tries it.
    const AUTO: Option<AutoUse> = None;
    /// Whether the device-resident decoder ([`Self::device_decompressor`]) gives each
    /// stream's output in device memory ([`DeviceJob::stream_outputs`]).
    const DEVICE_STREAM_OUTPUTS: bool = false;

    /// The options of the bare name (`lzss`).
    fn default_options() -> Self::Options;
    /// The options of a spec's text after the name; the error says why (the caller adds
    /// the spec).
    fn parse_options(options: &[SpecOption<'_>]) -> std::result::Result<Self::Options, String>;
    /// The spec's canonical text, name included (what [`Self::parse_options`] reads back).
    fn write_spec(options: &Self::Options, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    /// The id of the streams a spec of `options` writes.
    fn spec_id(options: &Self::Options) -> CodecId;
    /// The parameters for data of `type_width` bytes per value (1 for plain bytes),
    /// judged on `sample` where the options leave them open.
    fn settle(options: &Self::Options, type_width: usize, sample: &[u8]) -> Result<Self::Params>;

    /// The id of the streams `params` writes.
    fn id(params: &Self::Params) -> CodecId;
    /// The largest stream an input of `len` bytes can give.
    fn max_compressed_len(params: &Self::Params, len: usize) -> usize;
    /// One buffer's stream, on the CPU.
    fn compress(params: &Self::Params, input: &[u8]) -> Result<Vec<u8>>;

    /// The output length a stream of `id` claims in its header, checked against what its
    /// bytes can produce where the format allows.
    fn claimed_len(id: CodecId, stream: &[u8]) -> Result<u64>;
    /// One stream's output, at most `expected` bytes (the caller checks it is exactly
    /// that): decoders grow it as they decode, so a claim allocates nothing by itself.
    fn decompress_with_limit(id: CodecId, stream: &[u8], expected: usize) -> Result<Vec<u8>>;
    /// One stream's output into `out`, exactly `out.len()` bytes. The default decodes
    /// into a buffer of its own and copies it.
    fn decompress_into(id: CodecId, stream: &[u8], out: &mut [u8]) -> Result<()> {
        let decoded = Self::decompress_with_limit(id, stream, out.len())?;
        if decoded.len() != out.len() {
            return Err(wrong_len(id_name::<Self>(id), decoded.len(), out.len()));
        }
        out.copy_from_slice(&decoded);
        Ok(())
    }

    /// Whether streams of `id` have a GPU path in `direction`.
    fn has_gpu_path(_id: CodecId, _direction: Direction) -> bool {
        false
    }
    /// Every kernel file of the codec with the `-D` defines its launchers compile it with.
    fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
        Vec::new()
    }
    /// Device memory one pipeline lane takes for a step of `step` input bytes.
    fn gpu_bytes_per_lane(_params: &Self::Params, _step: usize) -> usize {
        0
    }
    /// Compresses `inputs` on `gpu` into `sink`; returns each stream's length.
    fn compress_gpu(
        _gpu: &Gpu,
        _params: &Self::Params,
        _inputs: &[&[u8]],
        _memory: HostMemory,
        _sink: &mut Sink<'_, '_>,
    ) -> Result<Vec<usize>> {
        Err(no_gpu_path(Self::NAME))
    }
    /// Decodes `inputs` (each to exactly `lens[i]` bytes) on `gpu` into `sink`.
    fn decompress_gpu(
        _gpu: &Gpu,
        id: CodecId,
        _inputs: &[&[u8]],
        _lens: &[usize],
        _memory: HostMemory,
        _sink: &mut Sink<'_, '_>,
    ) -> Result<()> {
        Err(no_gpu_path(id_name::<Self>(id)))
    }
    /// `inputs` uploaded to `gpu` and kept there, ready to be compressed by the kernels
    /// alone.
    fn device_compressor(
        _gpu: &Gpu,
        _lane: &mut Lane,
        _params: &Self::Params,
        _inputs: &[&[u8]],
    ) -> Result<Box<dyn DeviceJob>> {
        Err(no_gpu_path(Self::NAME))
    }
    /// `streams` (each decoding to `lens[i]` bytes) uploaded to `gpu` and kept there,
    /// ready to be decoded by the kernels alone. With `resident` (the same streams
    /// already in device memory), a codec with [`Self::DEVICE_STREAM_OUTPUTS`] takes them
    /// from there; the others refuse it.
    fn device_decompressor(
        _gpu: &Gpu,
        _lane: &mut Lane,
        id: CodecId,
        _streams: &[&[u8]],
        _resident: Option<&[CudaView<'_, u8>]>,
        _lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>> {
        Err(no_gpu_path(id_name::<Self>(id)))
    }
}

/// The name of stream id `id` of family `F` (its family name for an id it does not list).
pub(crate) fn id_name<F: CodecFamily + ?Sized>(id: CodecId) -> &'static str {
    F::IDS
        .iter()
        .find(|(listed, _)| *listed == id)
        .map_or(F::NAME, |(_, name)| name)
}

/// The error of a call for a GPU path the codec does not have.
pub(crate) fn no_gpu_path(codec: &'static str) -> CodecError {
    CodecError::invalid(codec, "no GPU path")
}

/// The error of a stream that decoded to another length than its caller expects.
pub(crate) fn wrong_len(codec: &'static str, got: usize, expected: usize) -> CodecError {
    CodecError::corrupt(codec, format!("decoded {got} bytes, expected {expected}"))
}
