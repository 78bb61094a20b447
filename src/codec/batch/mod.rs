//! The batched codec interface: every codec compresses and decompresses *many buffers in
//! one call*, in the shape nvCOMP's batched API made standard, whichever backend runs it.
//!
//! - [`Codec`] is a codec with its parameters settled ([`crate::codec::CodecSpec::settle`]); it
//!   answers the worst-case size of an output ([`Codec::max_compressed_len`]) and the
//!   device memory a GPU call takes ([`Codec::gpu_scratch_bytes`]).
//! - Three forms of memory: **ordinary** host memory (`Vec<u8>`, Arrow buffers:
//!   [`Codec::compress_into`] writes into the caller's buffers, [`Codec::compress_batch`]
//!   into one [`Packed`] allocation), **pinned** host memory ([`Codec::compress_pinned`]:
//!   copied to and from directly, at PCIe speed), and **device-resident** buffers for
//!   callers that keep data on the GPU (the codecs' `gpu` modules, used by `colzip bench`
//!   for the kernel figures).
//! - The same calls decode ([`CodecId::decompress_into`], [`CodecId::decompress_batch`],
//!   [`CodecId::decompress_pinned`]): each stream's output length is known to the caller
//!   (containers store it), so outputs are allocated once and never grow.
//! - Where it runs is the [`Placement`]'s decision, once per call from the batch's total
//!   size: on the GPU, through the runtime's step pipeline (copies, kernels and the
//!   host's gathering and scattering of successive steps overlap), or on the CPU's cores
//!   with rayon. Callers never branch on the backend, and the bytes are the same.
//!
//! ```
//! use colzip::codec::{CodecId, CodecSpec, Placement};
//! let pages: Vec<Vec<u8>> = (0..8u32).map(|i| (0..50_000u32).flat_map(|v| (v / (i + 2)).to_le_bytes()).collect()).collect();
//! let inputs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
//! let codec = "gmatch".parse::<CodecSpec>()?.settle(4, &pages[0])?;
//! let streams = codec.compress_batch(&Placement::CPU, &inputs)?;
//! let lens: Vec<usize> = pages.iter().map(Vec::len).collect();
//! let back = CodecId::GmatchBlocks.decompress_batch(&Placement::CPU, &streams.to_refs(), &lens)?;
//! assert_eq!(back.get(3), &pages[3][..]);
//! # Ok::<(), colzip::codec::CodecError>(())
//! ```

mod cpu;
mod devices;

use std::ops::Range;
use std::sync::Arc;

use super::error::{CodecError, Result};
use super::id::CodecId;
pub use super::interface::{DeviceJob, Packed};
use super::interface::{Direction, Sink};
use super::placement::Placement;
pub use super::registry::Codec;
use crate::gpu::{Gpu, HostMemory, Lane, PIPELINE_LANES, PinnedBuffer, PinnedPool, step_bytes};
use cudarc::driver::CudaView;
use rayon::prelude::*;

impl Codec {
    /// Device memory a GPU call on buffers of `lens` takes at most (the pipeline's lanes
    /// and their buffers; 0 for codecs without a GPU path).
    pub fn gpu_scratch_bytes(&self, lens: &[usize]) -> usize {
        let step = lens.iter().sum::<usize>().min(step_bytes());
        PIPELINE_LANES * self.gpu_bytes_per_lane(step)
    }

    /// Compresses every input into the caller's `outputs` (each at least
    /// [`Self::max_compressed_len`] of its input); returns each stream's length.
    pub fn compress_into(
        &self,
        placement: &Placement,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<Vec<usize>> {
        check_count(inputs.len(), outputs.len())?;
        for (i, (input, output)) in inputs.iter().zip(outputs.iter()).enumerate() {
            let need = self.max_compressed_len(input.len());
            if output.len() < need {
                return Err(CodecError::invalid(
                    self.name(),
                    format!(
                        "output {i} holds {} bytes, the worst case is {need}",
                        output.len()
                    ),
                ));
            }
        }
        let lens: Vec<usize> = inputs.iter().map(|b| b.len()).collect();
        let gpus = placement.gpus_for(self.id(), Direction::Compress, lens.iter().sum());
        if !gpus.is_empty() {
            let groups = devices::split(&lens, gpus.len());
            let jobs = groups.iter().zip(devices::split_groups(outputs, &groups));
            let done = devices::across(gpus, jobs.collect(), |gpu, (group, outputs)| {
                let sink = &mut Sink::Buffers(outputs);
                self.compress_on_gpu(gpu, &inputs[group.clone()], HostMemory::Ordinary, sink)
            });
            match done {
                Err(e) if placement.retries_on_cpu(&e) => {}
                done => return done.map(|sizes| sizes.concat()),
            }
        }
        cpu::compress_into(self, inputs, outputs)
    }

    /// Compresses every input; the streams come back one after another in one allocation.
    pub fn compress_batch(&self, placement: &Placement, inputs: &[&[u8]]) -> Result<Packed> {
        let lens: Vec<usize> = inputs.iter().map(|b| b.len()).collect();
        let gpus = placement.gpus_for(self.id(), Direction::Compress, lens.iter().sum());
        if !gpus.is_empty() {
            // Each device's group writes its streams into its own region; the regions
            // are then closed up into one run of streams.
            let groups = devices::split(&lens, gpus.len());
            let rooms: Vec<usize> = groups
                .iter()
                .map(|g| {
                    lens[g.clone()]
                        .iter()
                        .map(|&l| self.max_compressed_len(l))
                        .sum()
                })
                .collect();
            let mut bytes = crate::memory::zeroed(rooms.iter().sum());
            let regions = split_bytes(&mut bytes, &rooms);
            let jobs = groups.iter().zip(regions);
            let done = devices::across(gpus, jobs.collect(), |gpu, (group, region)| {
                let sink = &mut Sink::packed(region, group.len());
                self.compress_on_gpu(gpu, &inputs[group.clone()], HostMemory::Ordinary, sink)
            });
            match done {
                Ok(sizes) => {
                    let (mut region_start, mut end) = (0, 0);
                    for (room, sizes) in rooms.iter().zip(&sizes) {
                        let written: usize = sizes.iter().sum();
                        bytes.copy_within(region_start..region_start + written, end);
                        end += written;
                        region_start += room;
                    }
                    return Ok(Packed::from_sizes(bytes, &sizes.concat()));
                }
                Err(e) if placement.retries_on_cpu(&e) => {}
                Err(e) => return Err(e),
            }
        }
        cpu::compress_batch(self, inputs)
    }

    /// Compresses one input (a batch of one).
    pub fn compress_one(&self, placement: &Placement, input: &[u8]) -> Result<Vec<u8>> {
        Ok(self.compress_batch(placement, &[input])?.into_bytes())
    }

    /// Compresses inputs that are slices of pinned memory (from [`PinnedBuffer`]s) on
    /// `gpu`, the streams one after another into `output` (at least the sum of
    /// [`Self::max_compressed_len`]); returns each stream's range in it. Copies go straight
    /// between the pinned buffers and the device.
    pub fn compress_pinned(
        &self,
        gpu: &Gpu,
        inputs: &[&[u8]],
        output: &mut PinnedBuffer,
    ) -> Result<Vec<Range<usize>>> {
        let need: usize = inputs
            .iter()
            .map(|i| self.max_compressed_len(i.len()))
            .sum();
        if output.len() < need {
            return Err(CodecError::invalid(
                self.name(),
                format!(
                    "pinned output holds {} bytes, the worst case is {need}",
                    output.len()
                ),
            ));
        }
        if !self.id().has_gpu_path(Direction::Compress) {
            return Err(CodecError::invalid(self.name(), "no GPU path"));
        }
        let mut sink = Sink::pinned(output.as_mut_slice(), inputs.len());
        let sizes = self.compress_on_gpu(gpu, inputs, HostMemory::Pinned, &mut sink)?;
        Ok(ranges_of(&sizes))
    }

    /// The device-resident form: `inputs` uploaded to `gpu` through `lane` and kept there,
    /// ready to be compressed by the kernels alone.
    pub fn device_compressor(
        &self,
        gpu: &Gpu,
        lane: &mut Lane,
        inputs: &[&[u8]],
    ) -> Result<Box<dyn DeviceJob>> {
        self.device_job(gpu, lane, inputs)
    }

    /// Whether [`Self::device_compressor`] has a device-resident form of this codec (one
    /// whose every stage runs on the GPU).
    pub fn has_device_compressor(&self) -> bool {
        self.id().has_gpu_path(Direction::Compress)
    }

    fn name(&self) -> &'static str {
        self.id().name()
    }
}

impl CodecId {
    /// Decodes one stream on the CPU, which must hold exactly `expected_len` bytes of
    /// output (nothing larger is allocated).
    pub fn decompress(self, stream: &[u8], expected_len: usize) -> Result<Vec<u8>> {
        self.decompress_one(&Placement::CPU, stream, expected_len)
    }

    /// Decodes one stream where `placement` says (a batch of one).
    pub fn decompress_one(
        self,
        placement: &Placement,
        stream: &[u8],
        expected_len: usize,
    ) -> Result<Vec<u8>> {
        let packed: Packed = self.decompress_batch(placement, &[stream], &[expected_len])?;
        Ok(packed.into_bytes())
    }

    /// Decodes every stream into the caller's `outputs`, each exactly as long as its
    /// stream's output (a stream that decodes to another length is corrupt).
    pub fn decompress_into(
        self,
        placement: &Placement,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<()> {
        check_count(inputs.len(), outputs.len())?;
        let lens: Vec<usize> = outputs.iter().map(|o| o.len()).collect();
        let gpus = placement.gpus_for(self, Direction::Decompress, lens.iter().sum());
        if !gpus.is_empty() {
            match self.decompress_across(gpus, inputs, &lens, outputs) {
                Err(e) if placement.retries_on_cpu(&e) => {}
                done => return done,
            }
        }
        cpu::decompress_into(self, inputs, outputs)
    }

    /// Decodes every stream, `lens[i]` bytes each; the outputs come back one after
    /// another in one allocation (sized from `lens`, which the caller trusts: a
    /// container's lengths, checked against its limits).
    pub fn decompress_batch(
        self,
        placement: &Placement,
        inputs: &[&[u8]],
        lens: &[usize],
    ) -> Result<Packed> {
        check_count(inputs.len(), lens.len())?;
        let total = lens.iter().try_fold(0usize, |sum, &l| sum.checked_add(l));
        let mut packed = total
            .and_then(|_| Packed::with_capacities(lens))
            .ok_or_else(|| CodecError::TooLarge {
                codec: self.name(),
                claimed: lens.iter().map(|&l| l as u64).fold(0, u64::saturating_add),
                limit: isize::MAX as u64,
            })?;
        let gpus = placement.gpus_for(self, Direction::Decompress, lens.iter().sum());
        if !gpus.is_empty() {
            let slots = &mut packed.slots_mut();
            match self.decompress_across(gpus, inputs, lens, slots) {
                Ok(()) => return Ok(packed),
                Err(e) if placement.retries_on_cpu(&e) => {}
                Err(e) => return Err(e),
            }
        }
        cpu::decompress_into(self, inputs, &mut packed.slots_mut())?;
        Ok(packed)
    }

    /// Decodes every stream into a buffer of its own, `lens[i]` bytes each. On the CPU the
    /// decoders grow each output as they decode, so an untrusted length allocates nothing
    /// by itself; on the GPU the outputs are allocated up front (lazily mapped, and the
    /// claims of lzss and gmatch streams are checked against what their bytes can produce
    /// before any kernel runs).
    pub fn decompress_owned(
        self,
        placement: &Placement,
        inputs: &[&[u8]],
        lens: &[usize],
    ) -> Result<Vec<Vec<u8>>> {
        check_count(inputs.len(), lens.len())?;
        let total = lens.iter().fold(0usize, |sum, &l| sum.saturating_add(l));
        let on_cpu = || {
            inputs
                .par_iter()
                .zip(lens)
                .map(|(stream, &len)| cpu::decompress_owned(self, stream, len))
                .collect()
        };
        let gpus = placement.gpus_for(self, Direction::Decompress, total);
        if gpus.is_empty() {
            return on_cpu();
        }
        let mut outputs = lens
            .iter()
            .map(|&len| {
                crate::memory::try_zeroed(len).ok_or(CodecError::OutOfMemory {
                    codec: self.name(),
                    bytes: len as u64,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut slices: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        match self.decompress_across(gpus, inputs, lens, &mut slices) {
            Ok(()) => Ok(outputs),
            Err(e) if placement.retries_on_cpu(&e) => {
                drop(outputs);
                on_cpu()
            }
            Err(e) => Err(e),
        }
    }

    /// The zero-copy form of [`Self::decompress_owned`]: every stream's output as an Arrow
    /// [`Buffer`](arrow::buffer::Buffer), `lens[i]` bytes each, 64-byte aligned.
    ///
    /// On the GPU the outputs land in one buffer of the [`PinnedPool`]: the device
    /// copies them there directly, and the buffers handed back sit on that pinned memory
    /// (no staging copy, no page faults). It goes back to the pool when the last of them
    /// is dropped, so a caller that keeps them long holds pinned memory that long. When
    /// the pool is exhausted (or off: `COLZIP_PINNED_MEMORY=0`), the outputs go to
    /// ordinary memory as [`Self::decompress_owned`] writes them; on the CPU they are
    /// that call's buffers. The bytes are the same either way.
    pub fn decompress_buffers(
        self,
        placement: &Placement,
        inputs: &[&[u8]],
        lens: &[usize],
    ) -> Result<Vec<arrow::buffer::Buffer>> {
        self.decompress_buffers_in(PinnedPool::global(), placement, inputs, lens)
    }

    /// [`Self::decompress_buffers`] with the GPU's outputs in buffers of `pool`.
    pub fn decompress_buffers_in(
        self,
        pool: &Arc<PinnedPool>,
        placement: &Placement,
        inputs: &[&[u8]],
        lens: &[usize],
    ) -> Result<Vec<arrow::buffer::Buffer>> {
        check_count(inputs.len(), lens.len())?;
        let total = lens.iter().fold(0usize, |sum, &l| sum.saturating_add(l));
        let gpus = placement.gpus_for(self, Direction::Decompress, total);
        if let Some(gpu) = gpus.first() {
            let ranges = aligned_ranges(lens, BUFFER_ALIGN);
            let room = ranges.last().map_or(0, |r| r.end);
            if let Some(mut pooled) = pool.take(gpu, room) {
                let done =
                    self.decompress_into_region(gpus, inputs, lens, pooled.as_mut_slice(), &ranges);
                match done {
                    Ok(()) => return Ok(pooled.into_buffers(&ranges)),
                    Err(e) if placement.retries_on_cpu(&e) => {
                        drop(pooled);
                        return self
                            .decompress_owned(&Placement::CPU, inputs, lens)
                            .map(into_arrow);
                    }
                    Err(e) => return Err(e),
                }
            }
            crate::trace::line(|| {
                format!(
                    "{}: the pinned pool has no room for {room} bytes; the outputs go to ordinary memory",
                    self.name()
                )
            });
        }
        self.decompress_owned(placement, inputs, lens)
            .map(into_arrow)
    }

    /// Decodes streams that are slices of pinned memory on `gpu`, the outputs one after
    /// another into `output` (at least the sum of `lens`); returns each output's range.
    pub fn decompress_pinned(
        self,
        gpu: &Gpu,
        inputs: &[&[u8]],
        lens: &[usize],
        output: &mut PinnedBuffer,
    ) -> Result<Vec<Range<usize>>> {
        check_count(inputs.len(), lens.len())?;
        let need: usize = lens.iter().sum();
        if output.len() < need {
            return Err(CodecError::invalid(
                self.name(),
                format!("pinned output holds {} bytes, {need} needed", output.len()),
            ));
        }
        let mut sink = Sink::pinned(output.as_mut_slice(), inputs.len());
        self.decompress_on_gpu(gpu, inputs, lens, HostMemory::Pinned, &mut sink)?;
        Ok(ranges_of(lens))
    }

    /// The device-resident form: `streams` (each decoding to `lens[i]` bytes) uploaded to
    /// `gpu` through `lane` and kept there, ready to be decoded by the kernels alone.
    pub fn device_decompressor(
        self,
        gpu: &Gpu,
        lane: &mut Lane,
        streams: &[&[u8]],
        lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>> {
        check_count(streams.len(), lens.len())?;
        self.device_job(gpu, lane, streams, None, lens)
    }

    /// [`Self::device_decompressor`] for streams already in device memory on `gpu`:
    /// `resident[i]` holds the bytes of `streams[i]` (the host copy, which gives the
    /// layout). The job's input is gathered device to device. For codecs whose
    /// [`CodecId::decodes_into_device_memory`] holds; the others refuse it.
    pub fn device_decompressor_resident(
        self,
        gpu: &Gpu,
        lane: &mut Lane,
        streams: &[&[u8]],
        resident: &[CudaView<'_, u8>],
        lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>> {
        check_count(streams.len(), lens.len())?;
        check_count(streams.len(), resident.len())?;
        self.device_job(gpu, lane, streams, Some(resident), lens)
    }

    /// Decodes on `gpus`, the batch split across them, into `outputs` (`lens[i]` bytes
    /// each, ordinary memory: written through pinned staging).
    fn decompress_across(
        self,
        gpus: &'static [Gpu],
        inputs: &[&[u8]],
        lens: &[usize],
        outputs: &mut [&mut [u8]],
    ) -> Result<()> {
        let groups = devices::split(lens, gpus.len());
        let jobs = groups.iter().zip(devices::split_groups(outputs, &groups));
        devices::across(gpus, jobs.collect(), |gpu, (group, outputs)| {
            let sink = &mut Sink::Buffers(outputs);
            let (inputs, lens) = (&inputs[group.clone()], &lens[group.clone()]);
            self.decompress_on_gpu(gpu, inputs, lens, HostMemory::Ordinary, sink)
        })?;
        Ok(())
    }

    /// Decodes on `gpus`, the batch split across them, output `i` into `region[ranges[i]]`
    /// (pinned memory, in order, written by the devices directly).
    fn decompress_into_region(
        self,
        gpus: &'static [Gpu],
        inputs: &[&[u8]],
        lens: &[usize],
        region: &mut [u8],
        ranges: &[Range<usize>],
    ) -> Result<()> {
        let groups = devices::split(lens, gpus.len());
        // Each group's part of the region, and its outputs' ranges in that part.
        let mut rest = region;
        let mut consumed = 0;
        let mut jobs = Vec::with_capacity(groups.len());
        for group in &groups {
            let end = ranges[group.clone()].last().map_or(consumed, |r| r.end);
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(end - consumed);
            let local: Vec<Range<usize>> = ranges[group.clone()]
                .iter()
                .map(|r| r.start - consumed..r.end - consumed)
                .collect();
            jobs.push((group.clone(), part, local));
            rest = tail;
            consumed = end;
        }
        devices::across(gpus, jobs, |gpu, (group, out, ranges)| {
            let sink = &mut Sink::Region { out, ranges };
            let (inputs, lens) = (&inputs[group.clone()], &lens[group.clone()]);
            self.decompress_on_gpu(gpu, inputs, lens, HostMemory::Ordinary, sink)
        })?;
        Ok(())
    }
}

fn check_count(inputs: usize, outputs: usize) -> Result<()> {
    if inputs != outputs {
        return Err(CodecError::invalid(
            "batch",
            format!("{inputs} inputs but {outputs} outputs"),
        ));
    }
    Ok(())
}

/// `bytes` cut into consecutive regions of `sizes` bytes (which add up to at most its
/// length).
fn split_bytes<'a>(bytes: &'a mut [u8], sizes: &[usize]) -> Vec<&'a mut [u8]> {
    let mut rest = bytes;
    sizes
        .iter()
        .map(|&size| {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(size);
            rest = tail;
            head
        })
        .collect()
}

/// Where the zero-copy outputs start: Arrow's own alignment, enough for every type.
const BUFFER_ALIGN: usize = 64;

/// Ranges of consecutive outputs of `sizes`, each starting at a multiple of `align`.
fn aligned_ranges(sizes: &[usize], align: usize) -> Vec<Range<usize>> {
    let mut at = 0usize;
    sizes
        .iter()
        .map(|&size| {
            let start = at.next_multiple_of(align);
            at = start + size;
            start..at
        })
        .collect()
}

/// Owned outputs as Arrow buffers (no copy).
fn into_arrow(outputs: Vec<Vec<u8>>) -> Vec<arrow::buffer::Buffer> {
    outputs
        .into_iter()
        .map(arrow::buffer::Buffer::from_vec)
        .collect()
}

/// Ranges of consecutive outputs of `sizes`.
fn ranges_of(sizes: &[usize]) -> Vec<Range<usize>> {
    let mut at = 0;
    sizes
        .iter()
        .map(|&size| {
            at += size;
            at - size..at
        })
        .collect()
}
