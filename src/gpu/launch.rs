//! What every codec's launchers share: the error a failed launch becomes, the
//! one-dimensional launch shapes (a thread per item, or a given number of blocks), the
//! check that a device buffer holds what a launch reads or writes, and the opt-in to
//! dynamic shared memory beyond the default 48 KiB.

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, LaunchConfig};

use super::device::Gpu;
use super::error::{GpuError, GpuResult};

/// A failed kernel launch as a [`GpuError`].
pub fn launch_error(e: impl std::fmt::Display) -> GpuError {
    GpuError::driver("kernel launch", e)
}

/// Blocks of `threads` threads, one thread per item, `items` items (at least one block);
/// too many blocks for one launch is an error naming `what` the items are.
pub fn launch_for(items: usize, threads: u32, what: &str) -> GpuResult<LaunchConfig> {
    launch_blocks(items.div_ceil(threads as usize), threads, what)
}

/// `blocks` thread blocks (at least one) of `threads` threads, for kernels that give each
/// block a unit of work (a tile, a block of a stream); too many for one launch is an error
/// naming `what` there are too many of.
pub fn launch_blocks(blocks: usize, threads: u32, what: &str) -> GpuResult<LaunchConfig> {
    Ok(LaunchConfig {
        grid_dim: (grid_blocks(blocks.max(1), what)?, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// Checks that a device buffer of `have` bytes holds the `need` a launch reads or writes;
/// the error names the codec and the buffer.
pub fn check_device_len(codec: &str, what: &str, have: usize, need: usize) -> GpuResult<()> {
    if have < need {
        return Err(GpuError::Limit(format!(
            "{codec} {what}: {have} bytes on the device, {need} needed"
        )));
    }
    Ok(())
}

/// `count` thread blocks as a grid dimension; more than a launch takes is an error
/// naming `what` there are too many of.
pub fn grid_blocks(count: usize, what: &str) -> GpuResult<u32> {
    u32::try_from(count).map_err(|_| GpuError::Limit(format!("too many {what} in one launch")))
}

/// How much dynamic shared memory [`allow_shared`] lets a function use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SharedOptIn {
    /// Everything the device allows beyond the function's static shared memory: the same
    /// value whatever the caller needs, for a function that launches with different
    /// amounts (the attribute belongs to the function, which callers share); each launch
    /// asks for what it needs.
    DeviceLimit,
    /// Exactly the bytes asked for, for a function that always launches with them.
    Needed,
}

/// Lets `function` use `bytes` of dynamic shared memory, when the device has them (with
/// its static shared memory); `what` names the work in the error when it has not.
pub(crate) fn allow_shared(
    gpu: &Gpu,
    function: &CudaFunction,
    bytes: usize,
    what: &str,
    opt_in: SharedOptIn,
) -> GpuResult<()> {
    let limit = gpu.info().shared_memory_per_block;
    let static_bytes = function
        .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        .map_err(|e| GpuError::driver("shared memory attribute", e))?
        as usize;
    if bytes + static_bytes > limit {
        return Err(GpuError::Limit(format!(
            "{what} needs {} bytes of shared memory per block, the device has {limit}",
            bytes + static_bytes
        )));
    }
    let allowed = match opt_in {
        SharedOptIn::DeviceLimit => limit - static_bytes,
        SharedOptIn::Needed => bytes,
    };
    function
        .set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            allowed as i32,
        )
        .map_err(|e| GpuError::driver("shared memory attribute", e))?;
    Ok(())
}
