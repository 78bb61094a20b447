//! Many device-to-device copies in one launch (`kernels/gather.cu`): a caller that moves
//! hundreds of small ranges (one per stream of a batch) pays one launch instead of a
//! driver call per range, and concurrent callers do not queue on the driver's lock.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::copy::copy_to_device;
use super::device::{Gpu, KernelSource};
use super::error::GpuResult;
use super::lane::Lane;
use super::launch::{grid_blocks, launch_error};

/// The kernel file.
pub const GATHER: KernelSource = KernelSource {
    name: "gather.cu",
    source: include_str!("../../kernels/gather.cu"),
};

/// A copy of `len` bytes from device address `src` to device address `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub src: u64,
    pub dst: u64,
    pub len: u64,
}

/// Queues `pieces` on `lane`'s stream as one launch. The caller guarantees that every
/// range lies inside device memory it holds until the stream has run the copies, and
/// that no destination overlaps another piece's source or destination.
pub fn gather(gpu: &Gpu, lane: &mut Lane, pieces: &[Piece]) -> GpuResult<()> {
    let pieces: Vec<&Piece> = pieces.iter().filter(|p| p.len > 0).collect();
    if pieces.is_empty() {
        return Ok(());
    }
    let n = pieces.len();
    let mut table = Vec::with_capacity(24 * n);
    for field in [|p: &Piece| p.src, |p: &Piece| p.dst, |p: &Piece| p.len] {
        table.extend(pieces.iter().flat_map(|p| field(p).to_le_bytes()));
    }
    let mut device = lane.take_device("gather.table", table.len())?;
    // From ordinary memory: the driver has staged the bytes when the call returns, so
    // `table` may go.
    copy_to_device(lane.stream(), &table, &mut device)?;
    let function = gpu.function(&GATHER, &[], "gather_pieces")?;
    let config = LaunchConfig {
        grid_dim: (grid_blocks(n, "gathered pieces")?, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let (src, rest) = device.split_at(8 * n);
    let (dst, len) = rest.split_at(8 * n);
    let mut launch = lane.stream().launch_builder(&function);
    launch.arg(&src).arg(&dst).arg(&len);
    // SAFETY: each block copies its piece's range, which the caller vouches for.
    unsafe { launch.launch(config) }.map_err(launch_error)?;
    lane.put_device("gather.table", device);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_file_compiles() {
        crate::gpu::assert_kernels_compile("the_kernel_file_compiles", &[(GATHER, Vec::new())]);
    }
}
