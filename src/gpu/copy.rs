//! Host↔device copies queued on a stream (empty ones queue nothing). The host copies on
//! all cores that fill and empty pinned staging are in [`crate::memory`].

use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::error::{GpuError, GpuResult};

/// Queues the copy of `src` (host) into the start of `dst` (device).
pub fn copy_to_device(
    stream: &Arc<CudaStream>,
    src: &[u8],
    dst: &mut impl DevicePtrMut<u8>,
) -> GpuResult<()> {
    if src.is_empty() {
        return Ok(());
    }
    if dst.len() < src.len() {
        return Err(too_small("device", dst.len(), src.len()));
    }
    stream
        .memcpy_htod(src, dst)
        .map_err(|e| GpuError::driver("copy to device", e))
}

fn too_small(side: &str, have: usize, need: usize) -> GpuError {
    GpuError::Limit(format!(
        "copy of {need} bytes into a {side} buffer of {have}"
    ))
}

/// Queues the copy of `src` (device) into the start of `dst` (host).
pub fn copy_to_host(
    stream: &Arc<CudaStream>,
    src: &impl DevicePtr<u8>,
    dst: &mut [u8],
) -> GpuResult<()> {
    if src.len() == 0 {
        return Ok(());
    }
    if dst.len() < src.len() {
        return Err(too_small("host", dst.len(), src.len()));
    }
    stream
        .memcpy_dtoh(src, dst)
        .map_err(|e| GpuError::driver("copy to host", e))
}
