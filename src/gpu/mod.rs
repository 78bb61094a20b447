//! The GPU backend: the process's device, NVRTC-compiled kernels from `kernels/`, lanes
//! (a stream with reusable device and pinned buffers per concurrent caller), the kernels'
//! launchers, and the backend choice. One build runs everywhere: without libcuda, libnvrtc
//! or a device, [`Gpu::get`] is an error saying why and [`Backend::Auto`] uses the CPU
//! codecs, which write the same bytes.
//!
//! ```
//! use colzip::gpu::Backend;
//! // `auto` never fails: the GPU when usable, else the CPU.
//! let gpu = Backend::Auto.resolve().unwrap();
//! println!("{}", gpu.map_or("cpu".to_string(), |g| g.info().name.clone()));
//! ```

mod backend;
mod copy;
mod device;
pub mod gmatch;
mod lane;
pub mod lzss;
pub mod snappy;
mod timing;

pub use backend::{BACKEND_ENV, Backend};
pub use device::{DeviceInfo, Gpu, KernelSource, SELFTEST};
pub use lane::{Lane, LaneGuard, MAX_LANES, PinnedBuffer, parallel_concat, parallel_copy};

pub(crate) use copy::{copy_to_device, copy_to_host};
pub(crate) use device::gpu_error;
pub(crate) use timing::time_on_device;
