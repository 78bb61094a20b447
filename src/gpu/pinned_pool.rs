//! A bounded pool of pinned host memory whose buffers outlive the call that filled them:
//! GPU decoders copy their outputs straight into a pool buffer, and the caller gets them
//! as Arrow [`Buffer`]s on that memory. A decoded column then costs one device→host copy
//! at PCIe speed, where ordinary memory costs a copy into pinned staging, another out of
//! it, and the page faults of fresh memory.
//!
//! Why a pool: pinning memory costs milliseconds per call (the driver locks and maps
//! every page), so buffers are kept and reused; the last Arrow buffer on a pool buffer
//! to be dropped gives it back. Why a bound: pinned memory cannot be swapped or given
//! back to the allocator while it is held, so the pool holds at most its limit (idle
//! buffers included). A caller the pool cannot serve gets `None` and decodes into
//! ordinary memory, with the same bytes.
//!
//! The limit comes from `COLZIP_PINNED_MEMORY` (`0` turns the pool off, `2g`, ...);
//! without it, an eighth of physical memory, at most 12 GiB. TPC-H SF 10 on a 128 GB
//! host with 16 partitions ran seven queries about 10% faster with 12 GiB than with 4, at
//! the same peak RSS (docs/PERFORMANCE.md): near its limit the pool frees idle buffers to
//! pin new ones of other sizes, and pinning costs milliseconds. So at its limit the pool
//! first lends an idle buffer larger than asked for, and frees only when none is.
//!
//! ```no_run
//! use colzip::gpu::{Gpu, PinnedPool};
//! let gpu = Gpu::get()?;
//! if let Some(mut buffer) = PinnedPool::global().take(gpu, 1 << 20) {
//!     buffer.as_mut_slice()[0] = 7;
//!     let arrow = buffer.into_buffers(&[0..1 << 20]);
//!     assert_eq!(arrow[0][0], 7);
//! } // the memory goes back to the pool when `arrow` is dropped
//! # Ok::<(), colzip::gpu::GpuError>(())
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};

use arrow::buffer::Buffer;

use super::device::Gpu;
use super::pinned::PinnedBuffer;

/// The environment variable that bounds the pinned memory of the pool.
pub const PINNED_MEMORY_ENV: &str = "COLZIP_PINNED_MEMORY";

/// The default bound: an eighth of physical memory, at most this.
const DEFAULT_MOST: usize = 12 << 30;

/// The smallest buffer the pool hands out (smaller requests get one of this size).
const SMALLEST: usize = 64 << 10;

/// The pinned memory pool; see the module's documentation.
pub struct PinnedPool {
    limit: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Idle buffers by their size.
    idle: BTreeMap<usize, Vec<PinnedBuffer>>,
    /// Bytes of every buffer the pool made and has not freed (idle or out).
    held: usize,
    /// Bytes of the idle buffers.
    idle_bytes: usize,
    /// Requests the pool could not serve.
    refused: u64,
}

impl PinnedPool {
    /// A pool holding at most `limit` bytes of pinned memory (0: none at all).
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(PinnedPool {
            limit,
            state: Mutex::new(State::default()),
        })
    }

    /// The process's pool, bounded by `COLZIP_PINNED_MEMORY` or the default. A value that
    /// is not a byte count is reported once on stderr and the default used.
    pub fn global() -> &'static Arc<PinnedPool> {
        static POOL: OnceLock<Arc<PinnedPool>> = OnceLock::new();
        POOL.get_or_init(|| PinnedPool::new(limit_from_env()))
    }

    /// The most pinned bytes the pool holds.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes of pinned memory the pool holds now (idle buffers and those out).
    pub fn held(&self) -> usize {
        self.state.lock().map_or(0, |s| s.held)
    }

    /// Bytes of the idle buffers, kept for the next requests.
    pub fn idle(&self) -> usize {
        self.state.lock().map_or(0, |s| s.idle_bytes)
    }

    /// Requests the pool could not serve within its limit.
    pub fn refused(&self) -> u64 {
        self.state.lock().map_or(0, |s| s.refused)
    }

    /// A buffer of at least `len` bytes (contents unspecified): an idle one of about that
    /// size, or a new one while the limit allows. At the limit, a larger idle buffer is
    /// lent before idle buffers are freed to pin a new one: pinning and unpinning take the
    /// driver's lock for milliseconds, stalling every other thread's GPU calls, where a
    /// roomier buffer only holds more memory while it is out. `None` when the limit or the
    /// driver refuses: the caller then uses ordinary memory.
    pub fn take(self: &Arc<Self>, gpu: &Gpu, len: usize) -> Option<PooledPinned> {
        let size = size_class(len)?;
        let mut state = self.state.lock().ok()?;
        let at_limit = state.held + size > self.limit;
        let idle_from = |state: &State, most: usize| {
            state
                .idle
                .range(size..=most)
                .find(|(_, buffers)| !buffers.is_empty())
                .map(|(&have, _)| have)
        };
        // An idle buffer of this size or up to four times larger; at the limit, any larger.
        let reusable = idle_from(&state, size.saturating_mul(4))
            .or_else(|| at_limit.then(|| idle_from(&state, usize::MAX)).flatten());
        if let Some(have) = reusable {
            let buffer = state.idle.get_mut(&have).and_then(Vec::pop)?;
            state.idle_bytes -= buffer.len();
            return Some(self.lend(buffer));
        }
        if size > self.limit {
            state.refused += 1;
            return None;
        }
        // Room for a new one: idle buffers go, largest first, until it fits. They are
        // freed after the pool's lock is released.
        let mut freed = Vec::new();
        while state.held + size > self.limit {
            let Some(largest) = state
                .idle
                .iter()
                .rev()
                .find(|(_, buffers)| !buffers.is_empty())
                .map(|(&have, _)| have)
            else {
                state.refused += 1;
                // What was freed on the way is unpinned outside the pool's lock too.
                drop(state);
                drop(freed);
                return None;
            };
            if let Some(buffer) = state.idle.get_mut(&largest).and_then(Vec::pop) {
                state.held -= buffer.len();
                state.idle_bytes -= buffer.len();
                freed.push(buffer);
            }
        }
        state.held += size;
        let held = state.held;
        drop(state);
        let started = std::time::Instant::now();
        let freed_bytes: usize = freed.iter().map(PinnedBuffer::len).sum();
        drop(freed);
        let pinned = PinnedBuffer::new(gpu, size);
        crate::trace::line(|| {
            format!(
                "pinned pool: {size} bytes pinned, {freed_bytes} idle bytes freed, in {:.2} ms ({held} bytes held)",
                started.elapsed().as_secs_f64() * 1e3
            )
        });
        match pinned {
            Ok(buffer) => Some(self.lend(buffer)),
            Err(_) => {
                let mut state = self.state.lock().ok()?;
                state.held -= size;
                state.refused += 1;
                None
            }
        }
    }

    fn lend(self: &Arc<Self>, buffer: PinnedBuffer) -> PooledPinned {
        PooledPinned {
            buffer: Some(buffer),
            pool: self.clone(),
        }
    }

    fn give_back(&self, buffer: PinnedBuffer) {
        if let Ok(mut state) = self.state.lock() {
            state.idle_bytes += buffer.len();
            state.idle.entry(buffer.len()).or_default().push(buffer);
        }
    }

    /// Frees every idle buffer (what a caller does that wants its pinned memory back).
    pub fn release_idle(&self) {
        let freed: Vec<PinnedBuffer> = match self.state.lock() {
            Ok(mut state) => {
                let freed: Vec<PinnedBuffer> = std::mem::take(&mut state.idle)
                    .into_values()
                    .flatten()
                    .collect();
                state.held -= state.idle_bytes;
                state.idle_bytes = 0;
                freed
            }
            Err(_) => Vec::new(),
        };
        drop(freed);
    }
}

/// The size the pool allocates for `len` bytes: at least [`SMALLEST`], rounded up to one
/// of four sizes per power of two (so a buffer wastes at most a quarter of itself, and
/// requests of similar sizes share buffers). `None` when that overflows.
fn size_class(len: usize) -> Option<usize> {
    let len = len.max(SMALLEST);
    let octave = len.checked_next_power_of_two()? / 2;
    if octave == 0 || len == octave * 2 {
        return Some(len);
    }
    let quarter = (octave / 4).max(1);
    len.checked_next_multiple_of(quarter)
}

fn limit_from_env() -> usize {
    let default = crate::memory::physical_bytes().map_or(1 << 30, |bytes| {
        (bytes / 8).min(DEFAULT_MOST as u64) as usize
    });
    match std::env::var(PINNED_MEMORY_ENV) {
        Err(_) => default,
        Ok(text) => {
            match crate::memory::parse_byte_size(&text).and_then(|b| usize::try_from(b).ok()) {
                Some(bytes) => bytes,
                None => {
                    eprintln!(
                        "colzip: {PINNED_MEMORY_ENV}='{text}' is not a byte count (e.g. 512m, 2g); using {default} bytes"
                    );
                    default
                }
            }
        }
    }
}

/// A pool buffer lent to a caller; it goes back to the pool on drop.
pub struct PooledPinned {
    buffer: Option<PinnedBuffer>,
    pool: Arc<PinnedPool>,
}

impl PooledPinned {
    /// The buffer's bytes (at least the length asked for).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .map_or(&mut [], PinnedBuffer::as_mut_slice)
    }

    pub fn as_slice(&self) -> &[u8] {
        self.buffer.as_ref().map_or(&[], PinnedBuffer::as_slice)
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Arrow buffers on `ranges` of this buffer, without a copy. They share it: it goes
    /// back to the pool when the last of them is dropped. Ranges past the end are cut to
    /// it.
    pub fn into_buffers(self, ranges: &[Range<usize>]) -> Vec<Buffer> {
        let len = self.len();
        let base = self.as_slice().as_ptr();
        let owner: Arc<AssertUnwindSafe<PooledPinned>> = Arc::new(AssertUnwindSafe(self));
        ranges
            .iter()
            .map(|range| {
                let end = range.end.min(len);
                let start = range.start.min(end);
                // SAFETY: `base + start .. base + end` lies inside the pinned allocation,
                // which `owner` keeps alive (and out of the pool) as long as any buffer
                // on it; nothing writes it any more (`self` was moved into `owner`).
                unsafe {
                    let ptr = NonNull::new_unchecked(base.add(start).cast_mut());
                    Buffer::from_custom_allocation(ptr, end - start, owner.clone())
                }
            })
            .collect()
    }
}

impl Drop for PooledPinned {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            self.pool.give_back(buffer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn sizes_are_four_per_power_of_two_and_never_smaller_than_asked() {
        assert_eq!(size_class(0), Some(64 << 10));
        assert_eq!(size_class(1 << 20), Some(1 << 20));
        assert_eq!(size_class((1 << 20) + 1), Some((1 << 20) + (1 << 18)));
        assert_eq!(size_class(100 << 20), Some(112 << 20));
        for len in [1usize, 65_537, 3 << 20, (5 << 20) + 3, 1 << 33] {
            let size = size_class(len).unwrap();
            assert!(
                size >= len && size <= len.max(64 << 10) / 4 * 5 + 1,
                "{len} -> {size}"
            );
        }
        assert_eq!(size_class(usize::MAX), None);
    }
}
