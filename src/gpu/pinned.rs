//! Page-locked host memory: what host↔device copies need to run at PCIe speed (from
//! pageable memory, device-to-host copies run at a fortieth of it).

use cudarc::driver::PinnedHostSlice;

use super::device::Gpu;
use super::error::{GpuError, GpuResult};

/// Page-locked host memory (not write-combined: the host reads results from it).
pub struct PinnedBuffer {
    _slice: PinnedHostSlice<u8>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain host memory owned by this value; access goes through
// `&self`/`&mut self`.
unsafe impl Send for PinnedBuffer {}
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    /// `len` bytes of pinned host memory (contents unspecified until written).
    pub fn new(gpu: &Gpu, len: usize) -> GpuResult<Self> {
        // SAFETY: the memory is only read after the caller wrote it (copies into it, or
        // device-to-host transfers the caller waited for).
        // Portable: every device's context may copy from and to it, not only `gpu`'s.
        let flags = cudarc::driver::sys::CU_MEMHOSTALLOC_PORTABLE;
        let mut slice = unsafe {
            gpu.context()
                .alloc_pinned_with_flags::<u8>(len.max(1), flags)
        }
        .map_err(|e| GpuError::driver(format!("cannot pin {len} bytes of host memory"), e))?;
        let ptr = slice
            .as_mut_ptr()
            .map_err(|e| GpuError::driver("pinned memory", e))?;
        Ok(PinnedBuffer {
            _slice: slice,
            ptr,
            len: len.max(1),
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` bytes owned by `_slice`, alive as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}
