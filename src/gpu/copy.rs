//! Host↔device copies queued on a stream; empty ones queue nothing.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::device::gpu_error;
use crate::Result;

/// Queues the copy of `src` to `dst` at byte `at`.
pub(crate) fn copy_to_device(
    stream: &Arc<CudaStream>,
    src: &[u8],
    dst: &mut CudaSlice<u8>,
    at: usize,
) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    stream
        .memcpy_htod(src, &mut dst.slice_mut(at..at + src.len()))
        .map_err(|e| gpu_error("copy to device", e))
}

/// Queues the copy of `range` of `src` to `dst` (`range.len()` bytes).
pub(crate) fn copy_to_host(
    stream: &Arc<CudaStream>,
    src: &CudaSlice<u8>,
    range: Range<usize>,
    dst: &mut [u8],
) -> Result<()> {
    if range.is_empty() {
        return Ok(());
    }
    stream
        .memcpy_dtoh(&src.slice(range), dst)
        .map_err(|e| gpu_error("copy to host", e))
}
