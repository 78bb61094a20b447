//! bwt as a registered codec ([`CodecFamily`]): its stream id, the options of its spec
//! (`bwt:block=4m`), and its CPU and GPU paths.

use std::fmt;

use super::gpu::launch::kernel_builds;
use super::{BwtParams, NAME, gpu};
use crate::codec::error::Result;
use crate::codec::id::CodecId;
use crate::codec::interface::{
    AutoUse, CodecFamily, DeviceJob, Direction, Sink, SpecOption, Suited,
};
use crate::gpu::{Define, Gpu, HostMemory, KernelSource, Lane};
use cudarc::driver::CudaView;

#[allow(non_upper_case_globals)]
impl CodecId {
    /// A `bwt` stream: BWT + move-to-front + Huffman.
    pub const Bwt: CodecId = CodecId::from_byte(4);
}

/// The `bwt` codec.
pub(crate) struct Bwt;

impl CodecFamily for Bwt {
    type Options = BwtParams;
    type Params = BwtParams;

    const NAME: &'static str = NAME;
    const SYNTAX: &'static str = "bwt[:block=SIZE]";
    const IDS: &'static [(CodecId, &'static str)] = &[(CodecId::Bwt, NAME)];
    const SUITED: Suited = Suited::AnyBytes;
    const AUTO: Option<AutoUse> = Some(AutoUse {
        strings: true,
        fixed_width: false,
        decode_speed: 0,
    });

    fn default_options() -> BwtParams {
        BwtParams::default()
    }

    fn parse_options(options: &[SpecOption<'_>]) -> std::result::Result<BwtParams, String> {
        let mut params = BwtParams::default();
        for &(key, value) in options {
            match (key, value) {
                ("block", Some(value)) => {
                    let size = crate::memory::parse_byte_size(value)
                        .and_then(|c| u32::try_from(c).ok())
                        .ok_or_else(|| format!("block must be a size in bytes, got '{value}'"))?;
                    params = BwtParams::new(size).map_err(|e| e.to_string())?;
                }
                _ => {
                    return Err(format!("unknown bwt option '{key}' (expected block=SIZE)"));
                }
            }
        }
        Ok(params)
    }

    fn write_spec(params: &BwtParams, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bwt:block={}", params.block_size)
    }

    fn spec_id(_params: &BwtParams) -> CodecId {
        CodecId::Bwt
    }

    fn settle(params: &BwtParams, _type_width: usize, _sample: &[u8]) -> Result<BwtParams> {
        Ok(*params)
    }

    fn id(_params: &BwtParams) -> CodecId {
        CodecId::Bwt
    }

    fn max_compressed_len(params: &BwtParams, len: usize) -> usize {
        super::max_compressed_len(len, params)
    }

    fn compress(params: &BwtParams, input: &[u8]) -> Result<Vec<u8>> {
        Ok(super::compress(input, params))
    }

    fn claimed_len(_id: CodecId, stream: &[u8]) -> Result<u64> {
        super::decompressed_len(stream)
    }

    fn decompress_with_limit(_id: CodecId, stream: &[u8], expected: usize) -> Result<Vec<u8>> {
        super::decompress_with_limit(stream, expected)
    }

    /// Compression runs the transform and the stages after it on the GPU and assembles
    /// the payloads on the host's cores.
    fn has_gpu_path(_id: CodecId, _direction: Direction) -> bool {
        true
    }

    fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
        kernel_builds()
    }

    fn compress_gpu(
        gpu: &Gpu,
        params: &BwtParams,
        inputs: &[&[u8]],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<Vec<usize>> {
        gpu::compress::compress(gpu, params, inputs, memory, sink)
    }

    fn decompress_gpu(
        gpu: &Gpu,
        _id: CodecId,
        inputs: &[&[u8]],
        lens: &[usize],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<()> {
        gpu::decompress::decompress(gpu, inputs, lens, memory, sink)
    }

    fn device_compressor(
        gpu: &Gpu,
        lane: &mut Lane,
        params: &BwtParams,
        inputs: &[&[u8]],
    ) -> Result<Box<dyn DeviceJob>> {
        let job = gpu::device::device_compress(gpu, lane, params, inputs)?;
        Ok(Box::new(job))
    }

    fn device_decompressor(
        gpu: &Gpu,
        lane: &mut Lane,
        _id: CodecId,
        streams: &[&[u8]],
        resident: Option<&[CudaView<'_, u8>]>,
        lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>> {
        if resident.is_some() {
            return Err(crate::codec::interface::no_gpu_path(NAME));
        }
        let job = gpu::device::device_decompress(gpu, lane, streams, lens)?;
        Ok(Box::new(job))
    }
}
