//! Timing queued work with device events: the median of several runs after a warm-up.

use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::Result;
use crate::gpu::{Gpu, GpuError};
use crate::measure::upper_median;

/// Times `runs` enqueues of `work` on `stream` with device events (after a warm-up):
/// the median ([`upper_median`]: one of the runs), in seconds.
pub(crate) fn time_on_device(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    runs: usize,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let event = || {
        gpu.context()
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| GpuError::driver("event", e))
    };
    let (start, end) = (event()?, event()?);
    work()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        start
            .record(stream)
            .map_err(|e| GpuError::driver("event", e))?;
        work()?;
        end.record(stream)
            .map_err(|e| GpuError::driver("event", e))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(|e| GpuError::driver("event", e))?;
        times.push(f64::from(ms) / 1e3);
    }
    Ok(upper_median(&mut times))
}
