//! What a pipeline step needs besides kernels: its pieces of host memory uploaded one
//! after another (gathered into pinned staging with all cores, or copied straight from
//! pinned memory), and its small per-item arrays packed so that they cross in one copy.

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::copy::copy_to_device;
use super::device::Gpu;
use super::error::GpuResult;
use super::lane::Lane;
use crate::memory::parallel_concat;

/// Where a batch's host buffers live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostMemory {
    /// Ordinary (pageable) memory: staged through pinned buffers.
    Ordinary,
    /// Page-locked memory (a [`PinnedBuffer`](super::PinnedBuffer)): copied from and to
    /// directly.
    Pinned,
}

/// Input bytes per pipeline step: large enough that a step fills the GPU and launches
/// are amortised, small enough that three lanes' staging stays a small part of memory and
/// the pipeline fills quickly. `COLZIP_GPU_STEP_MIB` overrides it (for measuring).
pub fn step_bytes() -> usize {
    std::env::var("COLZIP_GPU_STEP_MIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&mib| (1..=4096).contains(&mib))
        .map_or(32 << 20, |mib| mib << 20)
}

/// Copies `pieces` one after another to the start of `device`: from ordinary memory
/// through `lane`'s pinned buffer `staging` (gathered on all cores), from pinned memory
/// directly (adjacent pieces in one copy). The staging buffer goes back to the lane at
/// once: the lane's next step, which may reuse it, starts only after this one finished.
pub fn upload_pieces(
    gpu: &Gpu,
    lane: &mut Lane,
    pieces: &[&[u8]],
    memory: HostMemory,
    staging: &'static str,
    device: &mut CudaSlice<u8>,
) -> GpuResult<()> {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    if total == 0 {
        return Ok(());
    }
    let stream = lane.stream().clone();
    match memory {
        HostMemory::Ordinary => {
            let mut buffer = lane.take_pinned(gpu, staging, total)?;
            crate::trace::count(crate::trace::Counter::Gather, || {
                parallel_concat(&mut buffer.as_mut_slice()[..total], pieces)
            });
            copy_to_device(&stream, &buffer.as_slice()[..total], device)?;
            lane.put_pinned(staging, buffer);
        }
        HostMemory::Pinned => {
            let mut at = 0;
            let mut run: Option<(*const u8, usize)> = None;
            let mut flush = |run: (*const u8, usize), at: usize| -> GpuResult<()> {
                // SAFETY: a run is adjacent pieces of the caller's slices, all alive for
                // the call, so the joined range is valid memory of one allocation.
                let bytes = unsafe { std::slice::from_raw_parts(run.0, run.1) };
                copy_to_device(&stream, bytes, &mut device.slice_mut(at - run.1..at))
            };
            for piece in pieces.iter().filter(|p| !p.is_empty()) {
                run = match run {
                    Some((start, len)) if unsafe { start.add(len) } == piece.as_ptr() => {
                        Some((start, len + piece.len()))
                    }
                    Some(previous) => {
                        flush(previous, at)?;
                        Some((piece.as_ptr(), piece.len()))
                    }
                    None => Some((piece.as_ptr(), piece.len())),
                };
                at += piece.len();
            }
            if let Some(last) = run {
                flush(last, at)?;
            }
        }
    }
    Ok(())
}

/// Small arrays of one step (offsets, lengths, leads) packed into one buffer, each at a
/// multiple of 8 bytes, so that they reach the device in a single copy; a kernel takes
/// each one as a pointer into the uploaded buffer.
#[derive(Default, Debug)]
pub struct ArrayPack {
    bytes: Vec<u8>,
    spans: Vec<Range<usize>>,
}

impl ArrayPack {
    pub fn new() -> Self {
        ArrayPack::default()
    }

    fn push_bytes(&mut self, bytes: impl Iterator<Item = u8>) -> usize {
        self.bytes.resize(self.bytes.len().div_ceil(8) * 8, 0);
        let start = self.bytes.len();
        self.bytes.extend(bytes);
        self.spans.push(start..self.bytes.len());
        self.spans.len() - 1
    }

    /// Appends an array of u64; returns its index.
    pub fn push_u64(&mut self, values: &[u64]) -> usize {
        self.push_bytes(values.iter().flat_map(|v| v.to_le_bytes()))
    }

    /// Appends an array of u32; returns its index.
    pub fn push_u32(&mut self, values: &[u32]) -> usize {
        self.push_bytes(values.iter().flat_map(|v| v.to_le_bytes()))
    }

    /// Appends an array of bytes; returns its index.
    pub fn push_u8(&mut self, values: &[u8]) -> usize {
        self.push_bytes(values.iter().copied())
    }

    /// Appends an array of u16; returns its index.
    pub fn push_u16(&mut self, values: &[u16]) -> usize {
        self.push_bytes(values.iter().flat_map(|v| v.to_le_bytes()))
    }

    /// Reserves `len` zeroed bytes (an output array); returns its index.
    pub fn push_zeros(&mut self, len: usize) -> usize {
        self.push_bytes(std::iter::repeat_n(0, len))
    }

    /// Bytes of array `index` within the pack.
    pub fn span(&self, index: usize) -> Range<usize> {
        self.spans[index].clone()
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Copies the pack to the device through `lane`'s pinned buffer `staging`, into the
    /// lane's device buffer `name` (returned; give it back with `Lane::put_device`).
    pub fn upload(
        &self,
        gpu: &Gpu,
        lane: &mut Lane,
        staging: &'static str,
        name: &'static str,
    ) -> GpuResult<CudaSlice<u8>> {
        let mut device = lane.take_device(name, self.len())?;
        let mut buffer = lane.take_pinned(gpu, staging, self.len())?;
        buffer.as_mut_slice()[..self.len()].copy_from_slice(&self.bytes);
        copy_to_device(lane.stream(), &buffer.as_slice()[..self.len()], &mut device)?;
        lane.put_pinned(staging, buffer);
        Ok(device)
    }
}

#[cfg(test)]
mod tests {
    use super::ArrayPack;

    #[test]
    fn arrays_are_aligned_and_little_endian() {
        let mut pack = ArrayPack::new();
        let a = pack.push_u32(&[1, 2, 3]);
        let b = pack.push_u64(&[0x0102_0304_0506_0708]);
        let c = pack.push_zeros(5);
        assert_eq!(pack.span(a), 0..12);
        assert_eq!(pack.span(b), 16..24);
        assert_eq!(pack.span(c), 24..29);
        assert_eq!(
            &pack.bytes()[16..24],
            &0x0102_0304_0506_0708u64.to_le_bytes()
        );
    }
}
