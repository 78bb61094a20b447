//! intpack as a registered codec ([`CodecFamily`]): its stream id, the options of its spec
//! (`intpack:w=4`), the value width settled from the data type, and its CPU and GPU paths.
//! The GPU paths are the pipelines intpack shares with lzss (`codec::blocks_gpu`), entered
//! after intpack's own checks of parameters and streams.

use std::fmt;

use super::gpu::launch::{IntpackShape, kernel_builds};
use super::{IntpackParams, NAME, read_layout};
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
    /// Integers by frame of reference, delta, runs and dictionary, bit-packed.
    pub const Intpack: CodecId = CodecId::from_byte(6);
}

/// intpack's options as a spec names them: `width: None` takes the value width from the
/// data type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IntpackOptions {
    pub width: Option<u8>,
}

/// The `intpack` codec.
pub(crate) struct Intpack;

impl CodecFamily for Intpack {
    type Options = IntpackOptions;
    type Params = IntpackParams;

    const NAME: &'static str = NAME;
    const SYNTAX: &'static str = "intpack[:w=1|2|4|8]";
    const IDS: &'static [(CodecId, &'static str)] = &[(CodecId::Intpack, NAME)];
    const SUITED: Suited = Suited::Integers;
    const AUTO: Option<AutoUse> = Some(AutoUse {
        strings: false,
        fixed_width: true,
        decode_speed: 3,
    });
    const DEVICE_STREAM_OUTPUTS: bool = true;

    fn default_options() -> IntpackOptions {
        IntpackOptions::default()
    }

    fn parse_options(options: &[SpecOption<'_>]) -> std::result::Result<IntpackOptions, String> {
        let mut width = None;
        for &(key, value) in options {
            match (key, value) {
                ("w", Some("auto")) => width = None,
                ("w", Some(value)) => {
                    let w = value
                        .parse()
                        .map_err(|_| format!("w must be 1, 2, 4, 8 or auto, got '{value}'"))?;
                    IntpackParams::new(w).map_err(|e| e.to_string())?;
                    width = Some(w);
                }
                _ => {
                    return Err(format!(
                        "unknown intpack option '{key}' (expected w=1|2|4|8)"
                    ));
                }
            }
        }
        Ok(IntpackOptions { width })
    }

    fn write_spec(options: &IntpackOptions, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match options.width {
            None => write!(f, "intpack"),
            Some(w) => write!(f, "intpack:w={w}"),
        }
    }

    fn spec_id(_options: &IntpackOptions) -> CodecId {
        CodecId::Intpack
    }

    /// The width the options give, else the largest of 8, 4, 2 and 1 dividing
    /// `type_width`.
    fn settle(
        options: &IntpackOptions,
        type_width: usize,
        _sample: &[u8],
    ) -> Result<IntpackParams> {
        match options.width {
            Some(width) => IntpackParams::new(width),
            None => Ok(IntpackParams::for_type_width(type_width)),
        }
    }

    fn id(_params: &IntpackParams) -> CodecId {
        CodecId::Intpack
    }

    fn max_compressed_len(params: &IntpackParams, len: usize) -> usize {
        super::max_compressed_len(len, params)
    }

    fn compress(params: &IntpackParams, input: &[u8]) -> Result<Vec<u8>> {
        super::try_compress(input, params)
    }

    fn claimed_len(_id: CodecId, stream: &[u8]) -> Result<u64> {
        Ok(super::decompressed_len(stream)? as u64)
    }

    /// The claim is checked against `expected` and the size table against the stream
    /// before the output is allocated (the table bounds it: 1024 values a block of at
    /// least 2 + W bytes).
    fn decompress_with_limit(_id: CodecId, stream: &[u8], expected: usize) -> Result<Vec<u8>> {
        super::decompress(stream, expected)
    }

    /// The header's length is checked against `out` before anything is decoded.
    fn decompress_into(_id: CodecId, stream: &[u8], out: &mut [u8]) -> Result<()> {
        super::decompress_into(stream, out)
    }

    fn has_gpu_path(_id: CodecId, _direction: Direction) -> bool {
        true
    }

    fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
        kernel_builds()
    }

    /// Input, a slot per block (a little over its values) and output.
    fn gpu_bytes_per_lane(_params: &IntpackParams, step: usize) -> usize {
        step * 4
    }

    fn compress_gpu(
        gpu: &Gpu,
        params: &IntpackParams,
        inputs: &[&[u8]],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<Vec<usize>> {
        params.validate()?;
        blocks_gpu::compress::compress(gpu, shape(params), inputs, memory, sink)
    }

    /// Each stream's header, size table and length are validated by the CPU decoder's own
    /// check ([`read_layout`]) before anything is decoded.
    fn decompress_gpu(
        gpu: &Gpu,
        _id: CodecId,
        inputs: &[&[u8]],
        lens: &[usize],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<()> {
        let read = |i: usize, stream: &[u8], len: usize| {
            read_layout(stream, Some(len)).map_err(|e| in_stream(e, i, inputs.len()))
        };
        blocks_gpu::decompress::decompress::<IntpackShape>(gpu, inputs, lens, read, memory, sink)
    }

    fn device_compressor(
        gpu: &Gpu,
        lane: &mut Lane,
        params: &IntpackParams,
        inputs: &[&[u8]],
    ) -> Result<Box<dyn DeviceJob>> {
        params.validate()?;
        let job = blocks_gpu::device::device_compress(gpu, lane, shape(params), inputs)?;
        Ok(Box::new(job))
    }

    /// All streams of one width, every block in one launch.
    fn device_decompressor(
        gpu: &Gpu,
        lane: &mut Lane,
        _id: CodecId,
        streams: &[&[u8]],
        resident: Option<&[CudaView<'_, u8>]>,
        lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>> {
        let job = blocks_gpu::device::device_decompress::<IntpackShape>(
            gpu,
            lane,
            streams,
            resident,
            lens,
            |stream, len| read_layout(stream, Some(len)),
        )?;
        Ok(Box::new(job))
    }
}

/// What the launchers need of `params`.
fn shape(params: &IntpackParams) -> IntpackShape {
    IntpackShape {
        width: params.width,
    }
}

/// A layout error of stream `i`, saying which stream when the batch has several.
fn in_stream(e: CodecError, i: usize, count: usize) -> CodecError {
    match e {
        CodecError::Corrupt { reason, .. } if count > 1 => {
            CodecError::corrupt(NAME, format!("stream {i}: {reason}"))
        }
        e => e,
    }
}
