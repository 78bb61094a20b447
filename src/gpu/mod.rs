//! The GPU runtime: the process's devices (every GPU of the host, or those `COLZIP_GPUS` names), kernels from `kernels/` compiled by NVRTC (and
//! cached on disk), lanes (a stream with reusable device and pinned buffers per concurrent
//! caller), the host pool lane holders' host work runs on, pinned staging, the pool of
//! pinned buffers that decoded outputs are handed out on, copies, the step pipeline that overlaps copies with kernels,
//! and the backend choice. It knows nothing of codecs: each codec's launchers and
//! pipelines live in its own folder (`codec::<name>::gpu`; lzss and intpack share their
//! pipelines in `codec::blocks_gpu`). One build runs everywhere:
//! without libcuda, libnvrtc or a device, [`Gpu::get`] is an error saying why and
//! [`Backend::Auto`] uses the CPU codecs, which write the same bytes.
//!
//! ```
//! use colzip::gpu::Backend;
//! // `auto` never fails: the GPU when usable, else the CPU.
//! let gpu = Backend::Auto.resolve().unwrap();
//! println!("{}", gpu.map_or("cpu".to_string(), |g| g.info().name.clone()));
//! ```

mod backend;
mod budget;
mod copy;
mod device;
mod error;
mod gather;
mod host;
mod kernel_cache;
mod lane;
mod launch;
mod pinned;
mod pinned_pool;
mod pipeline;
mod steps;

pub use backend::{BACKEND_ENV, Backend};
pub use budget::GPU_MEMORY_ENV;
pub use copy::{copy_to_device, copy_to_host};
#[cfg(test)]
pub(crate) use device::assert_kernels_compile;
pub use device::{
    Define, DeviceInfo, GPUS_ENV, Gpu, KernelOrigin, KernelSource, MemoryUse, SELFTEST,
    compile_kernel, nvrtc_available,
};
pub use error::{GpuError, GpuResult};
pub use gather::{GATHER, Piece, gather};
pub use host::on_host;
pub use kernel_cache::KERNEL_CACHE_ENV;
pub use lane::{Lane, LaneGuard, MAX_LANES, lane_bound};
pub(crate) use launch::{SharedOptIn, allow_shared};
pub use launch::{check_device_len, grid_blocks, launch_blocks, launch_error, launch_for};
pub use pinned::PinnedBuffer;
pub use pinned_pool::{PINNED_MEMORY_ENV, PinnedPool, PooledPinned};
pub use pipeline::{PIPELINE_LANES, Stages, run_pipeline};
pub use steps::{ArrayPack, HostMemory, step_bytes, upload_pieces};
