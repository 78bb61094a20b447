//! Lanes: a stream with its own device buffers and pinned host staging, kept in a small
//! pool on the [`Gpu`] so that concurrent callers (rayon tasks, DataFusion partitions)
//! each get one, and buffers are allocated once and reused (pinned allocations cost
//! milliseconds; pageable device-to-host copies run at a fortieth of pinned ones).

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex};

use cudarc::driver::{CudaSlice, CudaStream};

use super::device::Gpu;
use super::error::{GpuError, GpuResult};
use super::pinned::PinnedBuffer;

/// Most lanes alive at once; a caller beyond that waits for a lane to come back, which
/// bounds the device and pinned memory the pool holds.
pub const MAX_LANES: usize = 8;

/// A stream and the buffers its work uses, named by the code that uses them.
pub struct Lane {
    stream: Arc<CudaStream>,
    device: HashMap<&'static str, CudaSlice<u8>>,
    pinned: HashMap<&'static str, PinnedBuffer>,
}

impl Lane {
    fn new(gpu: &Gpu) -> GpuResult<Self> {
        Ok(Lane {
            stream: gpu.stream()?,
            device: HashMap::new(),
            pinned: HashMap::new(),
        })
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The device buffer `name`, at least `len` bytes (grown, contents lost, when
    /// smaller). Give it back with [`Lane::put_device`] to keep it for the next call.
    pub fn take_device(&mut self, name: &'static str, len: usize) -> GpuResult<CudaSlice<u8>> {
        match self.device.remove(name) {
            Some(buffer) if buffer.len() >= len.max(1) => Ok(buffer),
            old => {
                let len = grown(old.as_ref().map_or(0, |b| b.len()), len);
                drop(old);
                // SAFETY: every kernel and copy that reads this buffer first writes the
                // bytes it reads.
                unsafe { self.stream.alloc::<u8>(len) }.map_err(|e| {
                    GpuError::driver(format!("cannot allocate {len} bytes on the GPU"), e)
                })
            }
        }
    }

    pub fn put_device(&mut self, name: &'static str, buffer: CudaSlice<u8>) {
        self.device.insert(name, buffer);
    }

    /// The pinned host buffer `name`, at least `len` bytes; give it back with
    /// [`Lane::put_pinned`].
    pub fn take_pinned(
        &mut self,
        gpu: &Gpu,
        name: &'static str,
        len: usize,
    ) -> GpuResult<PinnedBuffer> {
        match self.pinned.remove(name) {
            Some(buffer) if buffer.len() >= len => Ok(buffer),
            old => {
                let len = grown(old.as_ref().map_or(0, |b| b.len()), len);
                drop(old);
                PinnedBuffer::new(gpu, len)
            }
        }
    }

    pub fn put_pinned(&mut self, name: &'static str, buffer: PinnedBuffer) {
        self.pinned.insert(name, buffer);
    }

    /// Waits for the lane's queued work; a failed kernel or copy is an `Err`.
    pub fn synchronize(&self) -> GpuResult<()> {
        crate::trace::count(crate::trace::Counter::Wait, || self.stream.synchronize())
            .map_err(|e| GpuError::driver("GPU work failed", e))
    }
}

/// The size a buffer of `old` bytes is replaced by when `needed` do not fit: at least a
/// quarter more than before (callers whose sizes creep up reallocate a few times, not at
/// every call), in whole 64 KiB.
fn grown(old: usize, needed: usize) -> usize {
    const GRAIN: usize = 64 << 10;
    needed.max(1).max(old + old / 4).div_ceil(GRAIN) * GRAIN
}

/// The pool of lanes of one GPU.
#[derive(Default)]
pub(crate) struct LanePool {
    idle: Mutex<Vec<Lane>>,
    created: Mutex<usize>,
    returned: Condvar,
}

/// A lane taken from the pool; it goes back on drop.
pub struct LaneGuard<'g> {
    gpu: &'g Gpu,
    lane: Option<Lane>,
}

impl Deref for LaneGuard<'_> {
    type Target = Lane;
    fn deref(&self) -> &Lane {
        self.lane.as_ref().expect("lane present until drop")
    }
}

impl DerefMut for LaneGuard<'_> {
    fn deref_mut(&mut self) -> &mut Lane {
        self.lane.as_mut().expect("lane present until drop")
    }
}

impl Drop for LaneGuard<'_> {
    fn drop(&mut self) {
        if let Some(lane) = self.lane.take() {
            let pool = self.gpu.lanes();
            // Work still queued on a lane that is dropped early (an error path) must end
            // before its buffers are reused.
            let _ = lane.synchronize();
            if let Ok(mut idle) = pool.idle.lock() {
                idle.push(lane);
            }
            pool.returned.notify_one();
        }
    }
}

impl Gpu {
    /// A lane when one is idle or may be created now, without waiting (a second lane for
    /// overlapping copies with compute must not deadlock callers holding one each).
    pub fn try_lane(&self) -> GpuResult<Option<LaneGuard<'_>>> {
        let pool = self.lanes();
        let mut idle = pool.idle.lock().map_err(poisoned)?;
        if let Some(lane) = idle.pop() {
            return Ok(Some(LaneGuard {
                gpu: self,
                lane: Some(lane),
            }));
        }
        drop(idle);
        let mut created = pool.created.lock().map_err(poisoned)?;
        if *created >= MAX_LANES {
            return Ok(None);
        }
        *created += 1;
        drop(created);
        match Lane::new(self) {
            Ok(lane) => Ok(Some(LaneGuard {
                gpu: self,
                lane: Some(lane),
            })),
            Err(e) => {
                *pool.created.lock().map_err(poisoned)? -= 1;
                Err(e)
            }
        }
    }

    /// A lane for this caller: an idle one, a new one while fewer than [`MAX_LANES`]
    /// exist, or the next one given back.
    pub fn lane(&self) -> GpuResult<LaneGuard<'_>> {
        let pool = self.lanes();
        let mut idle = pool.idle.lock().map_err(poisoned)?;
        loop {
            if let Some(lane) = idle.pop() {
                return Ok(LaneGuard {
                    gpu: self,
                    lane: Some(lane),
                });
            }
            {
                let mut created = pool.created.lock().map_err(poisoned)?;
                if *created < MAX_LANES {
                    *created += 1;
                    drop(created);
                    drop(idle);
                    let lane = Lane::new(self);
                    if lane.is_err() {
                        *pool.created.lock().map_err(poisoned)? -= 1;
                    }
                    return Ok(LaneGuard {
                        gpu: self,
                        lane: Some(lane?),
                    });
                }
            }
            idle = pool.returned.wait(idle).map_err(poisoned)?;
        }
    }
}

fn poisoned<T>(_: T) -> GpuError {
    GpuError::Limit("lane pool poisoned".into())
}
