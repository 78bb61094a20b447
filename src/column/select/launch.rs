//! Launchers of the row-selection kernels (`kernels/select.cu`): the tests, the count
//! and bitmap of passing rows, and the copy of one column's passing rows.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchArgs, LaunchConfig,
    PushKernelArg,
};

use crate::gpu::{Gpu, GpuResult, KernelSource, grid_blocks, launch_error};

/// The kernel file.
pub const SELECT: KernelSource = KernelSource {
    name: "select.cu",
    source: include_str!("../../../kernels/select.cu"),
};

/// Threads per CUDA block: one block works one tile.
pub(super) const THREADS: u32 = 256;
/// Rows of a tile, a multiple of [`THREADS`] and of 32 (a tile's first row within its
/// table block is then a multiple of 32, which the bitmap packing needs).
pub(super) const TILE_ROWS: usize = 4096;

/// The three kernels on one GPU.
pub(super) struct SelectKernels {
    test: CudaFunction,
    count: CudaFunction,
    compact: CudaFunction,
}

impl SelectKernels {
    pub(super) fn new(gpu: &Gpu) -> GpuResult<Self> {
        Ok(SelectKernels {
            test: gpu.function(&SELECT, &[], "select_test")?,
            count: gpu.function(&SELECT, &[], "select_count")?,
            compact: gpu.function(&SELECT, &[], "select_compact")?,
        })
    }
}

/// The tiles of a window and where each table block's rows start in the mask.
pub(super) struct Tiles<'a> {
    pub count: usize,
    pub block: CudaView<'a, u8>,
    pub start: CudaView<'a, u8>,
    pub rows: CudaView<'a, u8>,
    pub base: CudaView<'a, u8>,
}

impl<'a> Tiles<'a> {
    /// The four arguments every kernel of the file starts with.
    fn push(&'a self, launch: &mut LaunchArgs<'a>) {
        launch
            .arg(&self.block)
            .arg(&self.start)
            .arg(&self.rows)
            .arg(&self.base);
    }

    fn config(&self) -> GpuResult<LaunchConfig> {
        Ok(LaunchConfig {
            grid_dim: (grid_blocks(self.count, "select tiles")?, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        })
    }
}

/// One test of one column, as the kernel reads it.
pub(super) struct TestLaunch<'a> {
    /// The device address of each table block's values, and their width (u32 each).
    pub column: CudaView<'a, u8>,
    pub widths: CudaView<'a, u8>,
    pub signed: bool,
    pub op: u32,
    pub lo: i64,
    pub hi: i64,
    /// The sorted list of `IN` tests (at least one element's room, unread otherwise).
    pub list: CudaView<'a, u8>,
    pub list_len: u32,
    /// Whether this is the first test (it sets the mask; later ones AND into it).
    pub first: bool,
}

pub(super) fn enqueue_test(
    stream: &Arc<CudaStream>,
    kernels: &SelectKernels,
    tiles: &Tiles<'_>,
    test: &TestLaunch<'_>,
    mask: &mut CudaSlice<u8>,
) -> GpuResult<()> {
    let signed = u32::from(test.signed);
    let first = u32::from(test.first);
    let mut launch = stream.launch_builder(&kernels.test);
    tiles.push(&mut launch);
    launch
        .arg(&test.column)
        .arg(&test.widths)
        .arg(&signed)
        .arg(&test.op)
        .arg(&test.lo)
        .arg(&test.hi)
        .arg(&test.list)
        .arg(&test.list_len)
        .arg(mask)
        .arg(&first);
    // SAFETY: each tile reads `tile_rows` values of its block's width at its block's address
    // (the caller placed every block's whole values there) and writes its rows' mask
    // bytes, inside the mask of `base[last] + rows` bytes.
    unsafe { launch.launch(tiles.config()?) }.map_err(launch_error)?;
    Ok(())
}

pub(super) fn enqueue_count(
    stream: &Arc<CudaStream>,
    kernels: &SelectKernels,
    tiles: &Tiles<'_>,
    mask: &CudaSlice<u8>,
    bits_at: &CudaView<'_, u8>,
    bits: &mut CudaSlice<u8>,
    counts: &mut CudaSlice<u8>,
) -> GpuResult<()> {
    let mut launch = stream.launch_builder(&kernels.count);
    tiles.push(&mut launch);
    launch.arg(mask).arg(bits_at).arg(bits).arg(counts);
    // SAFETY: reads each tile's mask bytes; writes one u32 count per tile and the words
    // of its rows in its block's bitmap (blocks' bitmaps laid out by `bits_at`).
    unsafe { launch.launch(tiles.config()?) }.map_err(launch_error)?;
    Ok(())
}

/// One column's passing rows, as [`enqueue_compact`] writes them.
pub(super) struct CompactLaunch<'a> {
    /// The device address of each table block's values, and their width (u32 each).
    pub column: CudaView<'a, u8>,
    pub widths: CudaView<'a, u8>,
    /// The width of each output value, at least every block's (narrower values are
    /// sign-extended).
    pub out_width: u32,
}

pub(super) fn enqueue_compact(
    stream: &Arc<CudaStream>,
    kernels: &SelectKernels,
    tiles: &Tiles<'_>,
    mask: &CudaSlice<u8>,
    out_at: &CudaView<'_, u8>,
    compact: &CompactLaunch<'_>,
    out: &mut CudaViewMut<'_, u8>,
) -> GpuResult<()> {
    let mut launch = stream.launch_builder(&kernels.compact);
    tiles.push(&mut launch);
    launch
        .arg(mask)
        .arg(out_at)
        .arg(&compact.column)
        .arg(&compact.widths)
        .arg(&compact.out_width)
        .arg(out);
    // SAFETY: reads each tile's mask bytes and values; writes the passing values from
    // `out_at[t]` on, inside `out` (the total count of passing rows times `out_width`).
    unsafe { launch.launch(tiles.config()?) }.map_err(launch_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_file_compiles() {
        crate::gpu::assert_kernels_compile("the_kernel_file_compiles", &[(SELECT, Vec::new())]);
    }
}
