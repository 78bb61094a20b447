//! gmatch as a registered codec ([`CodecFamily`]): its three stream formats
//! ([`SnappyFormat`]) and their ids, the options of its spec (`gmatch:raw`,
//! `gmatch:framed`, `snappy`), and its CPU and GPU paths in each format.

use std::fmt;

use super::gpu::launch::kernel_builds;
use super::{NAME, gpu};
use crate::codec::error::Result;
use crate::codec::id::CodecId;
use crate::codec::interface::{
    AutoUse, CodecFamily, DeviceJob, Direction, Sink, SpecOption, Suited, id_name,
};
use crate::gpu::{Define, Gpu, HostMemory, KernelSource, Lane};
use cudarc::driver::CudaView;

#[allow(non_upper_case_globals)]
impl CodecId {
    /// One Snappy raw stream (Parquet pages, `--snappy raw`).
    pub const GmatchRaw: CodecId = CodecId::from_byte(2);
    /// The Snappy framing format.
    pub const GmatchFramed: CodecId = CodecId::from_byte(3);
    /// gmatch's blocks format: independent raw Snappy streams with a size table (what
    /// containers store for `gmatch`).
    pub const GmatchBlocks: CodecId = CodecId::from_byte(5);
}

/// Which of its formats gmatch writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SnappyFormat {
    /// Independent raw Snappy streams of 64 KiB blocks with a size table: what
    /// containers store, decodable in parallel (`gmatch`, the default).
    #[default]
    Blocks,
    /// One Snappy raw stream per buffer (what Parquet pages hold; `gmatch:raw`).
    Raw,
    /// The Snappy framing format: 64 KiB chunks with masked CRC-32C (`gmatch:framed`).
    Framed,
}

impl SnappyFormat {
    /// Each format with the id of its streams.
    const IDS: [(SnappyFormat, CodecId); 3] = [
        (SnappyFormat::Blocks, CodecId::GmatchBlocks),
        (SnappyFormat::Raw, CodecId::GmatchRaw),
        (SnappyFormat::Framed, CodecId::GmatchFramed),
    ];

    /// The id of the streams gmatch writes in this format.
    pub fn id(self) -> CodecId {
        Self::IDS
            .iter()
            .find(|(format, _)| *format == self)
            .map(|&(_, id)| id)
            .expect("every format has an id")
    }

    /// The format of a gmatch stream id (`None` for the other codecs).
    pub fn of(id: CodecId) -> Option<Self> {
        Self::IDS
            .iter()
            .find(|(_, listed)| *listed == id)
            .map(|&(format, _)| format)
    }
}

/// The format of `id`, which the registry only gives gmatch for gmatch's ids.
fn format_of(id: CodecId) -> SnappyFormat {
    SnappyFormat::of(id).expect("a gmatch id")
}

/// The `gmatch` codec.
pub(crate) struct Gmatch;

impl CodecFamily for Gmatch {
    type Options = SnappyFormat;
    type Params = SnappyFormat;

    const NAME: &'static str = NAME;
    const ALIASES: &'static [&'static str] = &["snappy"];
    const SYNTAX: &'static str = "gmatch[:raw|framed]";
    const IDS: &'static [(CodecId, &'static str)] = &[
        (CodecId::GmatchBlocks, NAME),
        (CodecId::GmatchRaw, "gmatch:raw"),
        (CodecId::GmatchFramed, "gmatch:framed"),
    ];
    const SUITED: Suited = Suited::AnyBytes;
    const AUTO: Option<AutoUse> = Some(AutoUse {
        strings: true,
        fixed_width: true,
        decode_speed: 2,
    });

    fn default_options() -> SnappyFormat {
        SnappyFormat::Blocks
    }

    fn parse_options(options: &[SpecOption<'_>]) -> std::result::Result<SnappyFormat, String> {
        let mut format = SnappyFormat::Blocks;
        for &(key, value) in options {
            format = match (key, value) {
                ("blocks", None) | ("format", Some("blocks")) => SnappyFormat::Blocks,
                ("raw", None) | ("format", Some("raw")) => SnappyFormat::Raw,
                ("framed", None) | ("format", Some("framed")) => SnappyFormat::Framed,
                _ => {
                    return Err(format!(
                        "unknown gmatch option '{key}' (expected blocks, raw or framed)"
                    ));
                }
            }
        }
        Ok(format)
    }

    fn write_spec(format: &SnappyFormat, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(id_name::<Gmatch>(format.id()))
    }

    fn spec_id(format: &SnappyFormat) -> CodecId {
        format.id()
    }

    fn settle(format: &SnappyFormat, _type_width: usize, _sample: &[u8]) -> Result<SnappyFormat> {
        Ok(*format)
    }

    fn id(format: &SnappyFormat) -> CodecId {
        format.id()
    }

    fn max_compressed_len(format: &SnappyFormat, len: usize) -> usize {
        match format {
            SnappyFormat::Raw => super::max_compressed_len(len) + 8,
            SnappyFormat::Framed => {
                let chunks = len.div_ceil(super::BLOCK_SIZE);
                10 + chunks * 8 + len
            }
            SnappyFormat::Blocks => super::max_blocks_len(len),
        }
    }

    fn compress(format: &SnappyFormat, input: &[u8]) -> Result<Vec<u8>> {
        Ok(match format {
            SnappyFormat::Raw => super::compress_raw(input)?,
            SnappyFormat::Framed => super::compress_framed(input),
            SnappyFormat::Blocks => super::compress_blocks(input),
        })
    }

    fn claimed_len(id: CodecId, stream: &[u8]) -> Result<u64> {
        Ok(match format_of(id) {
            SnappyFormat::Raw => super::raw_output_len(stream)? as u64,
            SnappyFormat::Framed => super::framed_output_len(stream)?,
            SnappyFormat::Blocks => super::blocks_output_len(stream)?,
        })
    }

    fn decompress_with_limit(id: CodecId, stream: &[u8], expected: usize) -> Result<Vec<u8>> {
        match format_of(id) {
            // The table is checked against the stream before the output is allocated, so
            // the claim is bounded by the bytes (64 KiB of output per 4 bytes of table).
            SnappyFormat::Blocks => super::decompress_blocks(stream, expected),
            SnappyFormat::Raw => super::decompress_raw_with_limit(stream, expected),
            SnappyFormat::Framed => super::decompress_framed_with_limit(stream, expected),
        }
    }

    /// Blocks and chunks decode in parallel straight into `out`, which the caller sized:
    /// no output grown step by step and copied again on one core.
    fn decompress_into(id: CodecId, stream: &[u8], out: &mut [u8]) -> Result<()> {
        match format_of(id) {
            SnappyFormat::Blocks => super::decompress_blocks_into(stream, out),
            SnappyFormat::Framed => super::decompress_framed_into(stream, out),
            SnappyFormat::Raw => super::decompress_raw_into(stream, out),
        }
    }

    fn has_gpu_path(_id: CodecId, _direction: Direction) -> bool {
        true
    }

    fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
        kernel_builds()
    }

    /// Input, scratch (6 bytes per input byte), slots and output.
    fn gpu_bytes_per_lane(_format: &SnappyFormat, step: usize) -> usize {
        step * (1 + 6 + 1) + 2 * step
    }

    fn compress_gpu(
        gpu: &Gpu,
        format: &SnappyFormat,
        inputs: &[&[u8]],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<Vec<usize>> {
        gpu::compress::compress(gpu, *format, inputs, memory, sink)
    }

    fn decompress_gpu(
        gpu: &Gpu,
        id: CodecId,
        inputs: &[&[u8]],
        lens: &[usize],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<()> {
        gpu::decompress::decompress(gpu, format_of(id), inputs, lens, memory, sink)
    }

    fn device_compressor(
        gpu: &Gpu,
        lane: &mut Lane,
        format: &SnappyFormat,
        inputs: &[&[u8]],
    ) -> Result<Box<dyn DeviceJob>> {
        let job = gpu::device::device_compress(gpu, lane, *format, inputs)?;
        Ok(Box::new(job))
    }

    fn device_decompressor(
        gpu: &Gpu,
        lane: &mut Lane,
        id: CodecId,
        streams: &[&[u8]],
        resident: Option<&[CudaView<'_, u8>]>,
        lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>> {
        if resident.is_some() {
            return Err(crate::codec::interface::no_gpu_path(NAME));
        }
        let job = gpu::device::device_decompress(gpu, lane, format_of(id), streams, lens)?;
        Ok(Box::new(job))
    }
}
