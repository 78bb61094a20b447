//! lzss as a registered codec ([`CodecFamily`]): its stream id, the options of its spec
//! (`lzss:s=2,w=128,c=2048`, `level=1..4`), the symbol width settled from the data, and
//! its CPU and GPU paths. The GPU paths are the pipelines lzss shares with intpack
//! (`codec::blocks_gpu`), entered after lzss's own checks of parameters and streams.

use std::fmt;

use super::gpu::launch::{LzssShape, kernel_builds, shape};
use super::{LzssParams, NAME, choose_symbol_width, read_layout};
use crate::codec::blocks_gpu;
use crate::codec::error::{CodecError, Result};
use crate::codec::id::CodecId;
use crate::codec::interface::{
    AutoUse, CodecFamily, DeviceJob, Direction, Sink, SpecOption, Suited,
};
use crate::gpu::{Define, Gpu, HostMemory, KernelSource, Lane};
use cudarc::driver::CudaView;

#[allow(non_upper_case_globals)]
impl CodecId {
    /// An `lzss` stream.
    pub const Lzss: CodecId = CodecId::from_byte(1);
}

/// lzss's options as a spec names them: `symbol_width: None` lets the data choose it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LzssOptions {
    pub symbol_width: Option<u8>,
    pub window: u8,
    pub chunk_size: u32,
}

impl Default for LzssOptions {
    /// The symbol width from the data, GPULZ's W=128 and C=2048.
    fn default() -> Self {
        let defaults = LzssParams::default();
        LzssOptions {
            symbol_width: None,
            window: defaults.window,
            chunk_size: defaults.chunk_size,
        }
    }
}

/// Bytes looked at when choosing the symbol width.
const SYMBOL_WIDTH_SAMPLE: usize = 256 * 1024;

/// The `lzss` codec.
pub(crate) struct Lzss;

impl CodecFamily for Lzss {
    type Options = LzssOptions;
    type Params = LzssParams;

    const NAME: &'static str = NAME;
    const SYNTAX: &'static str = "lzss[:s=1|2|4|8|auto,w=1..255,c=2048..16384,level=1..4]";
    const IDS: &'static [(CodecId, &'static str)] = &[(CodecId::Lzss, NAME)];
    const SUITED: Suited = Suited::AnyBytes;
    const AUTO: Option<AutoUse> = Some(AutoUse {
        strings: false,
        fixed_width: true,
        decode_speed: 1,
    });
    const DEVICE_STREAM_OUTPUTS: bool = true;

    fn default_options() -> LzssOptions {
        LzssOptions::default()
    }

    fn parse_options(options: &[SpecOption<'_>]) -> std::result::Result<LzssOptions, String> {
        let defaults = LzssParams::default();
        let (mut s, mut w, mut c) = (None, defaults.window, defaults.chunk_size);
        for &(key, value) in options {
            let value = value.ok_or_else(|| format!("option '{key}' needs a value"))?;
            match key {
                "s" => {
                    s = match value {
                        "auto" => None,
                        v => Some(
                            v.parse()
                                .map_err(|_| format!("s must be 1, 2, 4, 8 or auto, got '{v}'"))?,
                        ),
                    }
                }
                "w" => {
                    w = value
                        .parse()
                        .map_err(|_| format!("w must be 1..=255, got '{value}'"))?
                }
                "level" => {
                    let level = value
                        .parse()
                        .map_err(|_| format!("level must be 1..=4, got '{value}'"))?;
                    w = LzssParams::window_for_level(level).map_err(|e| e.to_string())?;
                }
                "c" => {
                    c = crate::memory::parse_byte_size(value)
                        .and_then(|c| u32::try_from(c).ok())
                        .ok_or_else(|| format!("c must be a chunk size in bytes, got '{value}'"))?
                }
                other => {
                    return Err(format!(
                        "unknown lzss option '{other}' (expected s, w, c or level)"
                    ));
                }
            }
        }
        // Validate with the width the spec names, or the narrowest when automatic.
        LzssParams::new(s.unwrap_or(1), w, c).map_err(|e| e.to_string())?;
        Ok(LzssOptions {
            symbol_width: s,
            window: w,
            chunk_size: c,
        })
    }

    fn write_spec(options: &LzssOptions, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match options.symbol_width {
            Some(s) => write!(f, "lzss:s={s}")?,
            None => write!(f, "lzss:s=auto")?,
        }
        write!(f, ",w={},c={}", options.window, options.chunk_size)
    }

    fn spec_id(_options: &LzssOptions) -> CodecId {
        CodecId::Lzss
    }

    /// The width the options give, else the best for data of `type_width` bytes per
    /// value judged on `sample` (GPULZ §3.2.3).
    fn settle(options: &LzssOptions, type_width: usize, sample: &[u8]) -> Result<LzssParams> {
        let sample = &sample[..sample.len().min(SYMBOL_WIDTH_SAMPLE)];
        let s = options.symbol_width.unwrap_or_else(|| {
            choose_symbol_width(sample, type_width, options.window, options.chunk_size)
        });
        LzssParams::new(s, options.window, options.chunk_size)
            .map_err(|_| CodecError::invalid(NAME, "bad parameters"))
    }

    fn id(_params: &LzssParams) -> CodecId {
        CodecId::Lzss
    }

    fn max_compressed_len(params: &LzssParams, len: usize) -> usize {
        super::max_compressed_len(len, params)
    }

    fn compress(params: &LzssParams, input: &[u8]) -> Result<Vec<u8>> {
        super::try_compress(input, params)
    }

    fn claimed_len(_id: CodecId, stream: &[u8]) -> Result<u64> {
        Ok(super::decompressed_len(stream)? as u64)
    }

    fn decompress_with_limit(_id: CodecId, stream: &[u8], expected: usize) -> Result<Vec<u8>> {
        super::decompress_with_limit(stream, expected)
    }

    fn decompress_into(_id: CodecId, stream: &[u8], out: &mut [u8]) -> Result<()> {
        super::decompress_into(stream, out)
    }

    fn has_gpu_path(_id: CodecId, _direction: Direction) -> bool {
        true
    }

    fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
        kernel_builds()
    }

    /// Input, a slot per chunk (a little over its bytes) and output.
    fn gpu_bytes_per_lane(_params: &LzssParams, step: usize) -> usize {
        step * 4
    }

    fn compress_gpu(
        gpu: &Gpu,
        params: &LzssParams,
        inputs: &[&[u8]],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<Vec<usize>> {
        params.validate()?;
        blocks_gpu::compress::compress(gpu, shape(params), inputs, memory, sink)
    }

    /// Each stream is validated as the CPU decoder validates it (header, size table,
    /// total length) before anything is decoded.
    fn decompress_gpu(
        gpu: &Gpu,
        _id: CodecId,
        inputs: &[&[u8]],
        lens: &[usize],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<()> {
        let read = |i: usize, stream: &[u8], len: usize| {
            let layout = read_layout(stream, len)?;
            if layout.len != len {
                return Err(CodecError::corrupt(
                    NAME,
                    format!("stream {i} claims {} bytes, expected {len}", layout.len),
                ));
            }
            Ok(layout)
        };
        blocks_gpu::decompress::decompress::<LzssShape>(gpu, inputs, lens, read, memory, sink)
    }

    fn device_compressor(
        gpu: &Gpu,
        lane: &mut Lane,
        params: &LzssParams,
        inputs: &[&[u8]],
    ) -> Result<Box<dyn DeviceJob>> {
        params.validate()?;
        let job = blocks_gpu::device::device_compress(gpu, lane, shape(params), inputs)?;
        Ok(Box::new(job))
    }

    /// All streams of one parameter set, every chunk in one launch.
    fn device_decompressor(
        gpu: &Gpu,
        lane: &mut Lane,
        _id: CodecId,
        streams: &[&[u8]],
        resident: Option<&[CudaView<'_, u8>]>,
        lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>> {
        let job = blocks_gpu::device::device_decompress::<LzssShape>(
            gpu,
            lane,
            streams,
            resident,
            lens,
            read_layout,
        )?;
        Ok(Box::new(job))
    }
}
