//! The types every codec and the batched interface share: what a codec provides to the
//! registry ([`CodecFamily`]), where a batch's streams or outputs go ([`Sink`]), one
//! allocation of many buffers ([`Packed`]) and work over buffers resident on the GPU
//! ([`DeviceJob`]).
//!
//! This is the bottom of the codec layer: the codecs implement [`CodecFamily`] with these
//! types, the registry lists the codecs, and the batched interface (`batch`) drives them
//! through the registry, so no codec imports what dispatches to it.

mod family;
mod packed;
mod sink;

pub use family::{AutoUse, Direction, SpecOption, Suited};
pub(crate) use family::{CodecFamily, id_name, no_gpu_path, wrong_len};
pub use packed::Packed;
pub(crate) use sink::Sink;

use cudarc::driver::CudaSlice;

use super::error::Result;
use crate::gpu::{Gpu, Lane};

/// Work over buffers resident on the GPU (the device-resident form): built by
/// [`Codec::device_compressor`](super::Codec::device_compressor) or
/// [`CodecId::device_decompressor`](super::CodecId::device_decompressor), which upload the
/// buffers once; each [`DeviceJob::enqueue`] then runs the kernels alone, device memory
/// to device memory.
pub trait DeviceJob {
    /// Queues the kernels on `lane` (repeatable: every run rewrites the same outputs).
    /// A job may also run work on other lanes of `gpu`; `lane`'s stream then waits for
    /// it, so events recorded on `lane` around the call time the whole run.
    fn enqueue(&mut self, gpu: &Gpu, lane: &mut Lane) -> Result<()>;
    /// Waits for the lane and returns the bytes of output the last run wrote, checked
    /// (a decoder's errors are reported here).
    fn output_bytes(&mut self, gpu: &Gpu, lane: &mut Lane) -> Result<usize>;
    /// A decoder's output buffer on the device and each stream's range in it, every
    /// range starting at a multiple of 8 (valid once [`Self::output_bytes`] has
    /// checked a run). `None` for jobs whose outputs are not laid out stream by stream,
    /// and for compressors.
    fn stream_outputs(&self) -> Option<(&CudaSlice<u8>, &[std::ops::Range<usize>])> {
        None
    }
    /// Gives the job's device buffers back to `lane` for its next work (dropped, they
    /// would be freed, and freeing device memory waits for the whole device).
    fn give_back(self: Box<Self>, _lane: &mut Lane) {}
}
