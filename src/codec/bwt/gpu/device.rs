//! The device-resident forms of `bwt` (for callers that keep data on the GPU and for
//! `colzip bench`'s kernel figures).
//!
//! - Compression: the batch's bytes uploaded once; each run puts every step through every
//!   GPU stage of compression (transform, move-to-front, zero runs, Huffman coding, CRCs)
//!   on the lanes and steps of the host→host path, leaving the coded parts on the device.
//!   Not counted: what the host does with them (payloads and streams assembled).
//! - Decoding: the coded blocks of a batch uploaded once, every stage of the decoder then
//!   run over them by the kernels alone. Stored blocks are copies, not decoding: the
//!   resident form leaves them out, as gmatch's leaves out stored framed chunks.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudarc::driver::CudaSlice;
use cudarc::driver::sys::CUevent_flags;
use rayon::prelude::*;

use super::compress::{
    Kernels, batch_blocks, enqueue_step, on_lanes, plan_steps, starts, step_and_workers,
};
use super::launch::DecodeKernels;
use super::step::{Block, StepBuffers, check_verdicts, plan_blocks};
use crate::codec::bwt::{BwtParams, KIND_BWT, ParsedBlock, block_size, parse_block};
use crate::codec::error::Result;
use crate::codec::interface::DeviceJob;
use crate::gpu::{Gpu, GpuError, HostMemory, Lane, copy_to_host, upload_pieces};

/// Compression of resident buffers, step by step on the lanes of the host→host path.
pub(crate) struct DeviceCompress {
    kernels: Kernels,
    /// Every buffer's bytes, one after another.
    text: CudaSlice<u8>,
    /// Each step's bytes in `text` and its blocks' lengths.
    steps: Vec<(Range<usize>, Vec<usize>)>,
    workers: usize,
    /// Bytes the last run left on the device for the host.
    output: usize,
}

/// Uploads `inputs` for compression with `params`.
pub(crate) fn device_compress(
    gpu: &Gpu,
    lane: &mut Lane,
    params: &BwtParams,
    inputs: &[&[u8]],
) -> Result<DeviceCompress> {
    let bs = block_size(params);
    let blocks = batch_blocks(inputs, bs);
    let (step, workers) = step_and_workers(gpu, bs);
    let input_at = starts(inputs.iter().map(|i| i.len()));
    let steps = plan_steps(&blocks, step)
        .into_iter()
        .map(|run| {
            let run = &blocks[run];
            let at = |b: &super::compress::Block| input_at[b.input] + b.range.start;
            let start = at(&run[0]);
            let lens: Vec<usize> = run.iter().map(|b| b.range.len()).collect();
            (start..start + lens.iter().sum::<usize>(), lens)
        })
        .collect();
    let total: usize = inputs.iter().map(|i| i.len()).sum();
    let mut text = lane.take_device("resident.in", total.max(1))?;
    upload_pieces(
        gpu,
        lane,
        inputs,
        HostMemory::Ordinary,
        "resident.staging",
        &mut text,
    )?;
    lane.synchronize()?;
    Ok(DeviceCompress {
        kernels: Kernels::new(gpu)?,
        text,
        steps,
        workers,
        output: 0,
    })
}

impl DeviceJob for DeviceCompress {
    fn enqueue(&mut self, gpu: &Gpu, lane: &mut Lane) -> Result<()> {
        // The steps run on lanes of their own, after what `lane` queued so far; `lane`'s
        // stream then waits for each step, so its events time the whole run.
        let event = || {
            gpu.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .map_err(|e| GpuError::driver("event", e))
        };
        let ready = event()?;
        ready
            .record(lane.stream())
            .map_err(|e| GpuError::driver("event", e))?;
        let main = lane.stream().clone();
        let output = AtomicUsize::new(0);
        let (text, steps, kernels) = (&self.text, &self.steps, &self.kernels);
        on_lanes(gpu, self.workers, steps.len(), |worker, index| {
            worker
                .stream()
                .wait(&ready)
                .map_err(|e| GpuError::driver("event", e))?;
            let (range, lens) = &steps[index];
            let step = enqueue_step(worker, kernels, &text.slice(range.clone()), lens)?;
            output.fetch_add(step.put_back(worker), Ordering::Relaxed);
            let done = event()?;
            done.record(worker.stream())
                .map_err(|e| GpuError::driver("event", e))?;
            main.wait(&done).map_err(|e| GpuError::driver("event", e))?;
            Ok(true)
        })?;
        self.output = output.into_inner();
        Ok(())
    }

    fn output_bytes(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<usize> {
        lane.synchronize()?;
        Ok(self.output)
    }
}

/// Decoding of resident streams: every coded block of the batch in one run of the kernels.
pub(crate) struct DeviceDecompress {
    kernels: DecodeKernels,
    blocks: Vec<Block>,
    buffers: Option<StepBuffers>,
}

pub(crate) fn device_decompress(
    gpu: &Gpu,
    lane: &mut Lane,
    streams: &[&[u8]],
    lens: &[usize],
) -> Result<DeviceDecompress> {
    let (headers, blocks) = plan_blocks(streams, lens)?;
    let blocks: Vec<Block> = blocks
        .into_iter()
        .filter(|b| b.kind() == KIND_BWT)
        .collect();
    let buffers = if blocks.is_empty() {
        None
    } else {
        // On the host pool: the caller holds a lane (see `crate::gpu::on_host`).
        let parsed: Vec<ParsedBlock<'_>> = crate::gpu::on_host(|| {
            blocks
                .par_iter()
                .map(|b| parse_block(b.payload(streams), b.n(), &headers[b.stream]))
                .collect::<Result<_>>()
        })?;
        let buffers =
            StepBuffers::upload(gpu, lane, &parsed, &blocks, &headers, HostMemory::Ordinary)?;
        lane.synchronize()?;
        Some(buffers)
    };
    Ok(DeviceDecompress {
        kernels: DecodeKernels::new(gpu)?,
        blocks,
        buffers,
    })
}

impl DeviceJob for DeviceDecompress {
    fn enqueue(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<()> {
        match &mut self.buffers {
            Some(buffers) => buffers.enqueue(lane.stream(), &self.kernels),
            None => Ok(()),
        }
    }

    fn output_bytes(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<usize> {
        let Some(buffers) = &self.buffers else {
            return Ok(0);
        };
        let mut verdicts = vec![0u8; 8 * self.blocks.len()];
        copy_to_host(lane.stream(), &buffers.verdicts(), &mut verdicts)?;
        lane.synchronize()?;
        check_verdicts(&self.blocks, &verdicts)?;
        Ok(buffers.out_len)
    }
}
