//! The device-resident form: buffers uploaded once and kept on the GPU, compressed or
//! decoded there by the kernels alone (no host copies between runs), for callers that
//! keep their data in GPU memory and for `colzip bench`'s kernel figures.

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::super::{BLOCK_SIZE, NAME};
use super::compress::{Launch, header};
use super::decompress::{Source, units};
use super::launch::{
    CompressKernels, DecodeKernels, DecodeLaunch, DecodeLayout, INPUT_PADDING, LayoutFormat,
    WORD_SLACK, enqueue_decode,
};
use crate::codec::SnappyFormat;
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::DeviceJob;
use crate::gpu::{Gpu, Lane, copy_to_device, copy_to_host};

/// Uploads `pieces` one after another into a new device buffer with `padding` spare bytes.
fn resident(lane: &mut Lane, pieces: &[&[u8]], padding: usize) -> Result<CudaSlice<u8>> {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let mut device = lane.take_device("resident.in", total + padding)?;
    let joined = pieces.concat();
    copy_to_device(lane.stream(), &joined, &mut device)?;
    lane.synchronize()?;
    Ok(device)
}

/// Compression of resident buffers: every 64 KiB block in one launch.
pub(crate) struct DeviceCompress {
    kernels: CompressKernels,
    input: CudaSlice<u8>,
    launch: Launch,
}

pub(crate) fn device_compress(
    gpu: &Gpu,
    lane: &mut Lane,
    format: SnappyFormat,
    inputs: &[&[u8]],
) -> Result<DeviceCompress> {
    let mut pieces = Vec::new();
    let mut lens = Vec::new();
    let mut leads = Vec::new();
    for input in inputs {
        let mut lead = header(format, input.len())?.len() as u32;
        for block in input.chunks(BLOCK_SIZE) {
            pieces.push(block);
            lens.push(block.len());
            leads.push(std::mem::take(&mut lead));
        }
    }
    let layout = LayoutFormat::from(format);
    let input = resident(lane, &pieces, INPUT_PADDING)?;
    let launch = Launch::prepare(gpu, lane, layout, &lens, leads)?;
    lane.synchronize()?;
    Ok(DeviceCompress {
        kernels: CompressKernels::new(gpu)?,
        input,
        launch,
    })
}

impl DeviceJob for DeviceCompress {
    fn enqueue(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<()> {
        self.launch.enqueue(lane, &self.kernels, &self.input)
    }

    fn output_bytes(&mut self, gpu: &Gpu, lane: &mut Lane) -> Result<usize> {
        self.launch.output_len(gpu, lane)
    }
}

/// Decoding of resident streams: their units' elements one after another, one launch.
pub(crate) struct DeviceDecompress {
    kernels: DecodeKernels,
    count: usize,
    framed: bool,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    spans: [Range<usize>; 4],
    output: CudaSlice<u8>,
    results: CudaSlice<u8>,
    out_len: usize,
}

pub(crate) fn device_decompress(
    gpu: &Gpu,
    lane: &mut Lane,
    format: SnappyFormat,
    streams: &[&[u8]],
    lens: &[usize],
) -> Result<DeviceDecompress> {
    let units = units(format, streams, lens)?;
    let mut pieces = Vec::new();
    let mut layout = DecodeLayout::default();
    let (mut in_at, mut out_at) = (0u64, 0u64);
    // Stored framed chunks are copies, not decoding: the resident form leaves them out.
    for unit in &units {
        let Source::Elements(elements) = unit.source else {
            continue;
        };
        pieces.push(elements);
        let (input, output) = (in_at as usize, out_at as usize);
        layout.push(input..input + elements.len(), output..output + unit.out_len);
        in_at += elements.len() as u64;
        out_at += unit.out_len as u64;
    }
    let (meta, spans) = layout.pack();
    let input = resident(lane, &pieces, WORD_SLACK)?;
    let meta = meta.upload(gpu, lane, "resident.meta", "resident.meta")?;
    let count = layout.len();
    let output = lane.take_device("resident.out", out_at as usize + WORD_SLACK)?;
    let results = lane.take_device("resident.results", 8 * count)?;
    lane.synchronize()?;
    Ok(DeviceDecompress {
        kernels: DecodeKernels::new(gpu)?,
        count,
        framed: format == SnappyFormat::Framed,
        input,
        meta,
        spans,
        output,
        results,
        out_len: out_at as usize,
    })
}

impl DeviceJob for DeviceDecompress {
    fn enqueue(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<()> {
        let (status, crcs) = self.results.split_at_mut(4 * self.count);
        enqueue_decode(
            lane.stream(),
            &self.kernels,
            DecodeLaunch {
                count: self.count,
                input: self.input.slice(..),
                in_offsets: self.meta.slice(self.spans[0].clone()),
                in_lens: self.meta.slice(self.spans[1].clone()),
                output: self.output.slice_mut(..),
                out_offsets: self.meta.slice(self.spans[2].clone()),
                out_lens: self.meta.slice(self.spans[3].clone()),
                status,
                crcs: self.framed.then_some(crcs),
            },
        )?;
        Ok(())
    }

    fn output_bytes(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<usize> {
        let mut status = vec![0u8; 4 * self.count];
        copy_to_host(
            lane.stream(),
            &self.results.slice(..4 * self.count),
            &mut status,
        )?;
        lane.synchronize()?;
        if status.iter().any(|&b| b != 0) {
            return Err(CodecError::corrupt(
                NAME,
                "a resident stream did not decode (GPU)",
            ));
        }
        Ok(self.out_len)
    }
}
