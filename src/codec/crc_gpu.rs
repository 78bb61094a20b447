//! The masked CRC-32C kernel of many byte ranges (`kernels/crc32c.cu`), which gmatch's
//! framing format and bwt's blocks both carry: shared here so that neither codec imports
//! the other.

use cudarc::driver::CudaFunction;

use crate::gpu::{Gpu, GpuResult, KernelSource};

/// Masked CRC-32C of byte ranges.
pub const CRC32C: KernelSource = KernelSource {
    name: "crc32c.cu",
    source: include_str!("../../kernels/crc32c.cu"),
};

/// The kernel's function on `gpu`.
pub(crate) fn crc_function(gpu: &Gpu) -> GpuResult<CudaFunction> {
    gpu.function(&CRC32C, &[], "crc32c_masked")
}
