//! Lanes: a stream with its own device buffers and pinned host staging, kept in a small
//! pool on the [`Gpu`] so that concurrent callers (rayon tasks, DataFusion partitions)
//! each get one, and buffers are allocated once and reused (pinned allocations cost
//! milliseconds; pageable device-to-host copies run at a fortieth of pinned ones).

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex};

use cudarc::driver::{CudaSlice, CudaStream, DriverError, sys::CUresult};

use super::budget::MemoryBudget;
use super::device::Gpu;
use super::error::{GpuError, GpuResult};
use super::pinned::PinnedBuffer;

/// Most lanes kept at once by default; a caller beyond that waits for a lane to come
/// back, which bounds the device and pinned memory the pool holds. Callers that must not
/// wait (see [`Gpu::lane`]) get lanes beyond it, freed when they come back.
/// `COLZIP_GPU_LANES` overrides it (for measuring): [`lane_bound`].
pub const MAX_LANES: usize = 8;

/// The lanes a GPU keeps at once: [`MAX_LANES`], or `COLZIP_GPU_LANES` (1 to 64).
pub fn lane_bound() -> usize {
    static BOUND: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BOUND.get_or_init(|| {
        std::env::var("COLZIP_GPU_LANES")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|n| (1..=64).contains(n))
            .unwrap_or(MAX_LANES)
    })
}

thread_local! {
    /// Lanes the current thread holds.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A stream and the buffers its work uses, named by the code that uses them.
pub struct Lane {
    stream: Arc<CudaStream>,
    device: HashMap<&'static str, CudaSlice<u8>>,
    pinned: HashMap<&'static str, PinnedBuffer>,
    /// The size of the current device buffer of each name, whether it is in `device` or
    /// out with the caller: what this lane holds of the GPU's [`MemoryBudget`]. A buffer
    /// a caller drops instead of giving back is replaced, and released, at the next take
    /// of its name.
    sizes: HashMap<&'static str, usize>,
    pool: Arc<LanePool>,
}

impl Lane {
    fn new(gpu: &Gpu) -> GpuResult<Self> {
        Ok(Lane {
            stream: gpu.stream()?,
            device: HashMap::new(),
            pinned: HashMap::new(),
            sizes: HashMap::new(),
            pool: gpu.lanes().clone(),
        })
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The device buffer `name`, at least `len` bytes (grown, contents lost, when
    /// smaller). Give it back with [`Lane::put_device`] to keep it for the next call.
    /// Past the memory limit, or when the device is full, the buffers of idle lanes are
    /// freed and the allocation tried again; then it is [`GpuError::OutOfMemory`].
    pub fn take_device(&mut self, name: &'static str, len: usize) -> GpuResult<CudaSlice<u8>> {
        let old = match self.device.remove(name) {
            Some(buffer) if buffer.len() >= len.max(1) => return Ok(buffer),
            old => old,
        };
        let roomy = grown(old.as_ref().map_or(0, |b| b.len()), len);
        drop(old);
        if let Some(previous) = self.sizes.remove(name) {
            self.pool.budget.release(previous);
        }
        // The roomy size saves reallocations; the exact one is tried before giving up.
        let buffer = self
            .allocate(roomy)
            .or_else(|_| self.allocate(len.max(1)))?;
        self.sizes.insert(name, buffer.len());
        Ok(buffer)
    }

    /// `len` bytes of device memory, counted against the budget. When there is no room,
    /// the buffers this lane keeps for other work and those of idle lanes are freed
    /// first.
    fn allocate(&mut self, len: usize) -> GpuResult<CudaSlice<u8>> {
        if self.pool.budget.reserve(len).is_err() {
            self.make_room();
            self.pool.budget.reserve(len)?;
        }
        let out_of_memory = |r: &Result<CudaSlice<u8>, DriverError>| {
            matches!(r, Err(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY)))
        };
        // SAFETY: every kernel and copy that reads this buffer first writes the bytes it
        // reads.
        let mut allocated = unsafe { self.stream.alloc::<u8>(len) };
        if out_of_memory(&allocated) {
            self.make_room();
            // SAFETY: as above.
            allocated = unsafe { self.stream.alloc::<u8>(len) };
        }
        let budget = &self.pool.budget;
        allocated.map_err(|e| {
            budget.release(len);
            match e {
                DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY) => GpuError::OutOfMemory {
                    requested: len,
                    held: budget.held(),
                    limit: None,
                },
                e => GpuError::driver(format!("cannot allocate {len} bytes on the GPU"), e),
            }
        })
    }

    /// Frees the buffers this lane keeps (work queued on them finishes first: frees are
    /// ordered on the lane's stream) and those of idle lanes.
    fn make_room(&mut self) {
        self.free_device_buffers();
        self.pool.free_idle_buffers();
    }

    /// Frees the device buffers this lane keeps (not those out with a caller).
    fn free_device_buffers(&mut self) {
        for (name, buffer) in self.device.drain() {
            drop(buffer);
            if let Some(size) = self.sizes.remove(name) {
                self.pool.budget.release(size);
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

impl Drop for Lane {
    fn drop(&mut self) {
        let held: usize = self.sizes.values().sum();
        self.pool.budget.release(held);
    }
}

/// The size a buffer of `old` bytes is replaced by when `needed` do not fit: at least a
/// quarter more than before (callers whose sizes creep up reallocate a few times, not at
/// every call), in whole 64 KiB.
fn grown(old: usize, needed: usize) -> usize {
    const GRAIN: usize = 64 << 10;
    needed.max(1).max(old + old / 4).div_ceil(GRAIN) * GRAIN
}

/// The pool of lanes of one GPU, and the device memory they hold.
pub(crate) struct LanePool {
    idle: Mutex<Vec<Lane>>,
    created: Mutex<usize>,
    returned: Condvar,
    pub(crate) budget: MemoryBudget,
}

impl LanePool {
    pub(crate) fn new(memory_limit: Option<usize>) -> Self {
        LanePool {
            idle: Mutex::new(Vec::new()),
            created: Mutex::new(0),
            returned: Condvar::new(),
            budget: MemoryBudget::new(memory_limit),
        }
    }

    /// Frees the device buffers of every idle lane, for a caller that needs the room.
    pub(crate) fn free_idle_buffers(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            for lane in idle.iter_mut() {
                // Work a lane queued before it was given back has ended (the guard waited
                // for it), so its buffers are free to go.
                lane.free_device_buffers();
            }
        }
    }
}

/// A lane taken from the pool; it goes back on drop. It stays on the thread that took it
/// (not `Send`): that thread counts as holding a lane until the drop.
pub struct LaneGuard<'g> {
    gpu: &'g Gpu,
    lane: Option<Lane>,
    _same_thread: std::marker::PhantomData<*const ()>,
}

impl<'g> LaneGuard<'g> {
    fn new(gpu: &'g Gpu, lane: Lane) -> Self {
        HELD.with(|held| held.set(held.get() + 1));
        LaneGuard {
            gpu,
            lane: Some(lane),
            _same_thread: std::marker::PhantomData,
        }
    }
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
            HELD.with(|held| held.set(held.get().saturating_sub(1)));
            let pool = self.gpu.lanes();
            // Work still queued on a lane that is dropped early (an error path) must end
            // before its buffers are reused.
            let _ = lane.synchronize();
            // Under a memory limit, buffers are not kept between calls: the next call may
            // be another codec's, and room held for this one would starve it.
            let mut lane = lane;
            if pool.budget.limit().is_some() {
                lane.free_device_buffers();
            }
            // A lane made beyond the bound (for a caller that could not wait) is freed.
            let beyond = pool
                .created
                .lock()
                .map(|mut created| {
                    let beyond = *created > lane_bound();
                    if beyond {
                        *created -= 1;
                    }
                    beyond
                })
                .unwrap_or(false);
            if !beyond && let Ok(mut idle) = pool.idle.lock() {
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
            return Ok(Some(LaneGuard::new(self, lane)));
        }
        drop(idle);
        let mut created = pool.created.lock().map_err(poisoned)?;
        if *created >= lane_bound() {
            return Ok(None);
        }
        *created += 1;
        drop(created);
        match Lane::new(self) {
            Ok(lane) => Ok(Some(LaneGuard::new(self, lane))),
            Err(e) => {
                *pool.created.lock().map_err(poisoned)? -= 1;
                Err(e)
            }
        }
    }

    /// A lane for this caller: an idle one, a new one while fewer than [`lane_bound`]
    /// exist, or the next one given back.
    ///
    /// Two kinds of callers never wait, and get a new lane beyond the bound instead: a
    /// thread that already holds a lane (a codec nesting a call in another: waiting would
    /// block the lane it holds), and a thread of the runtime's host pool ([`on_host`](super::on_host), whose work lane holders wait
    /// for). So a lane holder never waits for a lane, and every lane comes back.
    pub fn lane(&self) -> GpuResult<LaneGuard<'_>> {
        let must_not_wait = HELD.with(|held| held.get() > 0) || super::host::is_host_thread();
        let pool = self.lanes();
        let mut idle = pool.idle.lock().map_err(poisoned)?;
        loop {
            if let Some(lane) = idle.pop() {
                return Ok(LaneGuard::new(self, lane));
            }
            {
                let mut created = pool.created.lock().map_err(poisoned)?;
                if *created < lane_bound() || must_not_wait {
                    *created += 1;
                    drop(created);
                    drop(idle);
                    let lane = Lane::new(self);
                    if lane.is_err() {
                        *pool.created.lock().map_err(poisoned)? -= 1;
                    }
                    return Ok(LaneGuard::new(self, lane?));
                }
            }
            idle = pool.returned.wait(idle).map_err(poisoned)?;
        }
    }
}

fn poisoned<T>(_: T) -> GpuError {
    GpuError::Limit("lane pool poisoned".into())
}
