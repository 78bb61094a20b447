//! The device-resident form of `bwt` decoding: the coded blocks of a batch uploaded once,
//! every stage of the decoder then run over them by the kernels alone (for callers that
//! keep data on the GPU and for `colzip bench`'s kernel figures). Stored blocks are
//! copies, not decoding: the resident form leaves them out, as gmatch's leaves out stored
//! framed chunks.

use rayon::prelude::*;

use super::launch::DecodeKernels;
use super::step::{Block, StepBuffers, check_verdicts, plan_blocks};
use crate::codec::batch::DeviceJob;
use crate::codec::bwt::{KIND_BWT, ParsedBlock, parse_block};
use crate::codec::error::Result;
use crate::gpu::{Gpu, HostMemory, Lane, copy_to_host};

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
    fn enqueue(&mut self, lane: &mut Lane) -> Result<()> {
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
