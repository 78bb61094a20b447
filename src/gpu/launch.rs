//! What every codec's launchers share: the error a failed launch becomes, and the
//! one-dimensional launch shape that covers a number of items.

use cudarc::driver::LaunchConfig;

use super::error::{GpuError, GpuResult};

/// A failed kernel launch as a [`GpuError`].
pub fn launch_error(e: impl std::fmt::Display) -> GpuError {
    GpuError::driver("kernel launch", e)
}

/// Blocks of `threads` threads, one thread per item, `items` items (at least one block);
/// too many blocks for one launch is an error naming `what` the items are.
pub fn launch_for(items: usize, threads: u32, what: &str) -> GpuResult<LaunchConfig> {
    let blocks = items.div_ceil(threads as usize).max(1);
    Ok(LaunchConfig {
        grid_dim: (
            u32::try_from(blocks)
                .map_err(|_| GpuError::Limit(format!("too many {what} in one launch")))?,
            1,
            1,
        ),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    })
}
