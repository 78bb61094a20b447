//! The device memory colzip may hold: every device buffer the lanes allocate is counted
//! against an optional limit, so a process shares the GPU with others (or a test shows
//! what happens when memory runs out) without waiting for the driver to refuse. The
//! limit comes from `COLZIP_GPU_MEMORY` (`512m`, `2g`, ...) when the GPU opens, or from
//! [`Gpu::set_memory_limit`](super::Gpu::set_memory_limit) at any time.
//!
//! Running out is [`GpuError::OutOfMemory`]: under the `auto` backend the codecs then run
//! on the CPU (same bytes), under `gpu` the call fails with that error. Pipeline steps
//! shrink to fit the limit, so a column larger than it is still compressed on the GPU,
//! in more steps.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::{GpuError, GpuResult};

/// The environment variable that limits the device memory colzip holds.
pub const GPU_MEMORY_ENV: &str = "COLZIP_GPU_MEMORY";

/// No limit.
const UNLIMITED: usize = usize::MAX;

/// Device bytes held against a limit, shared by every lane of one GPU.
#[derive(Debug)]
pub(crate) struct MemoryBudget {
    limit: AtomicUsize,
    held: AtomicUsize,
    /// The most ever held at once (what the tests check against the limit).
    peak: AtomicUsize,
}

impl MemoryBudget {
    pub(crate) fn new(limit: Option<usize>) -> Self {
        MemoryBudget {
            limit: AtomicUsize::new(limit.unwrap_or(UNLIMITED)),
            held: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// The limit in `COLZIP_GPU_MEMORY`: `None` when unset, an error naming the value
    /// when it is not a byte count.
    pub(crate) fn limit_from_env() -> Result<Option<usize>, String> {
        match std::env::var(GPU_MEMORY_ENV) {
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{GPU_MEMORY_ENV} is not UTF-8")),
            Ok(text) => crate::memory::parse_byte_size(&text)
                .and_then(|bytes| usize::try_from(bytes).ok())
                .map(Some)
                .ok_or_else(|| {
                    format!("{GPU_MEMORY_ENV}='{text}' is not a byte count (e.g. 512m, 2g)")
                }),
        }
    }

    pub(crate) fn limit(&self) -> Option<usize> {
        Some(self.limit.load(Ordering::Relaxed)).filter(|&l| l != UNLIMITED)
    }

    pub(crate) fn set_limit(&self, limit: Option<usize>) {
        self.limit
            .store(limit.unwrap_or(UNLIMITED), Ordering::Relaxed);
    }

    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    pub(crate) fn reset_peak(&self) {
        self.peak.store(self.held(), Ordering::Relaxed);
    }

    /// Counts `bytes` more as held, or says why not when that would pass the limit.
    pub(crate) fn reserve(&self, bytes: usize) -> GpuResult<()> {
        let limit = self.limit.load(Ordering::Relaxed);
        let mut held = self.held.load(Ordering::Relaxed);
        loop {
            let after = held.checked_add(bytes).filter(|&after| after <= limit);
            let Some(after) = after else {
                return Err(GpuError::OutOfMemory {
                    requested: bytes,
                    held,
                    limit: self.limit(),
                });
            };
            match self
                .held
                .compare_exchange_weak(held, after, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.peak.fetch_max(after, Ordering::Relaxed);
                    return Ok(());
                }
                Err(now) => held = now,
            }
        }
    }

    /// Counts `bytes` (reserved before) as given back.
    pub(crate) fn release(&self, bytes: usize) {
        let _ = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |held| {
                Some(held.saturating_sub(bytes))
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_stop_at_the_limit_and_come_back() {
        let budget = MemoryBudget::new(Some(100));
        budget.reserve(60).unwrap();
        let refused = budget.reserve(41).unwrap_err();
        assert_eq!(
            refused,
            GpuError::OutOfMemory {
                requested: 41,
                held: 60,
                limit: Some(100)
            }
        );
        assert!(
            refused.to_string().contains("COLZIP_GPU_MEMORY"),
            "{refused}"
        );
        budget.reserve(40).unwrap();
        assert_eq!((budget.held(), budget.peak()), (100, 100));
        budget.release(70);
        assert_eq!(budget.held(), 30);
        budget.set_limit(None);
        budget.reserve(usize::MAX - 30).unwrap();
        assert!(
            budget.reserve(1).is_err(),
            "overflow is refused, not wrapped"
        );
    }
}
