//! Lanes: a stream with its own device buffers and pinned host staging, kept in a small
//! pool on the [`Gpu`] so that concurrent callers (rayon tasks, DataFusion partitions)
//! each get one, and buffers are allocated once and reused (pinned allocations cost
//! milliseconds; pageable device-to-host copies run at a fortieth of pinned ones).

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex};

use cudarc::driver::{CudaSlice, CudaStream, PinnedHostSlice};
use rayon::prelude::*;

use super::device::{Gpu, gpu_error};
use crate::{Error, Result};

/// Most lanes alive at once; a caller beyond that waits for a lane to come back, which
/// bounds the device and pinned memory the pool holds.
pub const MAX_LANES: usize = 8;

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
    pub fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        // SAFETY: the memory is only read after the caller wrote it (copies into it, or
        // device-to-host transfers the caller waited for).
        let mut slice = unsafe { gpu.context().alloc_pinned_with_flags::<u8>(len.max(1), 0) }
            .map_err(|e| gpu_error(&format!("cannot pin {len} bytes of host memory"), e))?;
        let ptr = slice
            .as_mut_ptr()
            .map_err(|e| gpu_error("pinned memory", e))?;
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

/// A stream and the buffers its work uses, named by the code that uses them.
pub struct Lane {
    stream: Arc<CudaStream>,
    device: HashMap<&'static str, CudaSlice<u8>>,
    pinned: HashMap<&'static str, PinnedBuffer>,
}

impl Lane {
    fn new(gpu: &Gpu) -> Result<Self> {
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
    pub fn take_device(&mut self, name: &'static str, len: usize) -> Result<CudaSlice<u8>> {
        let len = len.max(1);
        match self.device.remove(name) {
            Some(buffer) if buffer.len() >= len => Ok(buffer),
            old => {
                drop(old);
                // SAFETY: every kernel and copy that reads this buffer first writes the
                // bytes it reads.
                unsafe { self.stream.alloc::<u8>(len) }
                    .map_err(|e| gpu_error(&format!("cannot allocate {len} bytes on the GPU"), e))
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
    ) -> Result<PinnedBuffer> {
        match self.pinned.remove(name) {
            Some(buffer) if buffer.len() >= len => Ok(buffer),
            old => {
                drop(old);
                PinnedBuffer::new(gpu, len)
            }
        }
    }

    pub fn put_pinned(&mut self, name: &'static str, buffer: PinnedBuffer) {
        self.pinned.insert(name, buffer);
    }

    /// Waits for the lane's queued work; a failed kernel or copy is an `Err`.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| gpu_error("GPU work failed", e))
    }
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
    pub fn try_lane(&self) -> Result<Option<LaneGuard<'_>>> {
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
    pub fn lane(&self) -> Result<LaneGuard<'_>> {
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

fn poisoned<T>(_: T) -> Error {
    Error::Gpu("lane pool poisoned".into())
}

/// `dst.copy_from_slice(src)` on all cores for large copies (one core copies about
/// 10 GB/s; staging through pinned memory must not be the bottleneck).
pub fn parallel_copy(dst: &mut [u8], src: &[u8]) {
    const PIECE: usize = 4 << 20;
    if src.len() < 2 * PIECE {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(PIECE)
            .zip(src.par_chunks(PIECE))
            .for_each(|(d, s)| d.copy_from_slice(s));
    }
}

/// Pieces per task of [`parallel_concat`] (about 1 MiB of 64 KiB pages).
const PIECES_PER_TASK: usize = 16;

/// Copies `pieces` one after another into `dst` (exactly as long as they are together)
/// on all cores, many small pieces or few large ones: how a batch of pages or blocks
/// goes into a staging buffer.
pub fn parallel_concat(dst: &mut [u8], pieces: &[&[u8]]) {
    let mut targets = Vec::with_capacity(pieces.len());
    let mut rest = dst;
    for piece in pieces {
        let (target, tail) = std::mem::take(&mut rest).split_at_mut(piece.len());
        targets.push(target);
        rest = tail;
    }
    targets
        .into_par_iter()
        .zip(pieces)
        .with_min_len(PIECES_PER_TASK)
        .for_each(|(target, piece)| parallel_copy(target, piece));
}

#[cfg(test)]
mod concat_tests {
    use super::parallel_concat;

    #[test]
    fn concatenated_pieces_are_the_pieces_one_after_another() {
        let a: Vec<u8> = (0..(1 << 16) * 40 + 17).map(|i| (i % 251) as u8).collect();
        let b = b"short".to_vec();
        let c: Vec<u8> = (0..(1 << 16) * 3).map(|i| (i % 13) as u8).collect();
        let mut joined = vec![0; a.len() + b.len() + c.len()];
        parallel_concat(&mut joined, &[&a, &b, &[], &c]);
        assert_eq!(joined, [a, b, c].concat());
    }
}
