//! Where codecs run: a [`Backend`] resolved once, then a decision per batched call from
//! the call's total size.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::{CodecError, Result};
use super::id::CodecId;
use super::interface::Direction;
use crate::gpu::{Backend, Gpu, GpuError};

/// Batches smaller than this (in uncompressed bytes) stay on the CPU under
/// [`Backend::Auto`], even with a GPU: below about 1 MiB the launches, the host↔device
/// copies and the synchronisation cost more than the CPU's cores take. The decision is
/// per call on the batch's total, so a table's many small parts go to the GPU together.
/// An explicit [`Backend::Gpu`] uses the GPU for every size.
pub const GPU_MIN_BYTES: usize = 1 << 20;

/// Where codecs run: a [`Backend`] resolved once, so the per-call decision neither fails
/// nor looks for a device again. Cheap to copy; pass it down to every call.
///
/// ```
/// use colzip::codec::{CodecId, Placement, GPU_MIN_BYTES};
/// use colzip::gpu::Backend;
/// let cpu = Placement::new(Backend::Cpu)?;
/// use colzip::codec::Direction::{Compress, Decompress};
/// assert!(cpu.gpu().is_none() && cpu.gpu_for(CodecId::Lzss, Compress, 1 << 30).is_none());
/// let auto = Placement::new(Backend::Auto)?;
/// // Small batches and codecs without a GPU path always run on the CPU under auto.
/// assert!(auto.gpu_for(CodecId::Lzss, Decompress, GPU_MIN_BYTES - 1).is_none());
/// assert!(auto.gpu_for(CodecId::Stored, Compress, 1 << 30).is_none());
/// # Ok::<(), colzip::codec::CodecError>(())
/// ```
#[derive(Clone, Copy)]
pub struct Placement {
    /// The GPUs batches may run on (none: the CPU); a batch splits across them.
    gpus: &'static [Gpu],
    /// Batches below this many bytes run on the CPU.
    min_bytes: usize,
    /// Whether a batch the GPU has no memory for runs on the CPU (`auto`) instead of
    /// failing (`gpu`).
    cpu_when_out_of_memory: bool,
}

impl Placement {
    /// Everything on the CPU.
    pub const CPU: Placement = Placement {
        gpus: &[],
        min_bytes: usize::MAX,
        cpu_when_out_of_memory: true,
    };

    /// Resolves `backend`: `Cpu` runs everything on the CPU; `Gpu` runs every batch of a
    /// codec with a GPU path on the GPU, and is an error naming the reason when no GPU is
    /// usable; `Auto` uses the GPU, when there is one, for batches of at least
    /// [`GPU_MIN_BYTES`], and runs a batch the GPU has no memory for on the CPU (under
    /// `Gpu` that is an error, [`GpuError::OutOfMemory`]).
    pub fn new(backend: Backend) -> Result<Placement> {
        Ok(match backend {
            Backend::Cpu => Placement::CPU,
            Backend::Gpu => Placement::on_all(Gpu::all().map_err(GpuError::for_backend_gpu)?),
            Backend::Auto => Placement {
                gpus: Gpu::all().unwrap_or(&[]),
                min_bytes: GPU_MIN_BYTES,
                cpu_when_out_of_memory: true,
            },
        })
    }

    /// Every batch of a codec with a GPU path on `gpu`; running out of device memory
    /// is an error.
    pub fn on(gpu: &'static Gpu) -> Placement {
        Placement::on_all(std::slice::from_ref(gpu))
    }

    /// Every batch of a codec with a GPU path split across `gpus`; running out of
    /// device memory is an error.
    pub fn on_all(gpus: &'static [Gpu]) -> Placement {
        Placement {
            gpus,
            min_bytes: 0,
            cpu_when_out_of_memory: false,
        }
    }

    /// Whether a batch that failed on the GPU with `error` runs again on the CPU: when
    /// the GPU ran out of memory under `auto` (the CPU writes the same bytes).
    pub fn retries_on_cpu(&self, error: &CodecError) -> bool {
        let retry = self.cpu_when_out_of_memory
            && matches!(error, CodecError::Gpu(GpuError::OutOfMemory { .. }));
        if retry {
            crate::trace::line(|| format!("{error}; this batch runs on the CPU"));
        }
        retry
    }

    /// The first GPU, if any, that this placement may use.
    pub fn gpu(&self) -> Option<&'static Gpu> {
        self.gpus.first()
    }

    /// Every GPU this placement may use (empty for the CPU).
    pub fn gpus(&self) -> &'static [Gpu] {
        self.gpus
    }

    /// The GPU to run `codec` on in `direction` for a batch of `len` bytes (the
    /// uncompressed total, for decompression too), or `None` for the CPU. With several
    /// GPUs, successive calls take them in turn, so concurrent callers spread over them.
    pub fn gpu_for(
        &self,
        codec: CodecId,
        direction: Direction,
        len: usize,
    ) -> Option<&'static Gpu> {
        let gpus = self.gpus_for(codec, direction, len);
        (!gpus.is_empty()).then(|| &gpus[next_turn(gpus.len())])
    }

    /// The GPU for work of `len` bytes that is not a codec's batch (a scan's selection of
    /// rows), or `None` for the CPU: by the same size rule, GPUs taken in turn.
    pub fn gpu_for_bytes(&self, len: usize) -> Option<&'static Gpu> {
        (!self.gpus.is_empty() && len >= self.min_bytes)
            .then(|| &self.gpus[next_turn(self.gpus.len())])
    }

    /// The GPUs a batch of `codec` in `direction` of `len` bytes may split across
    /// (empty: the CPU).
    pub fn gpus_for(&self, codec: CodecId, direction: Direction, len: usize) -> &'static [Gpu] {
        if codec.has_gpu_path(direction) && len >= self.min_bytes {
            self.gpus
        } else {
            &[]
        }
    }
}

/// Whose turn it is among several GPUs, for work that runs on one of them.
static NEXT_GPU: AtomicUsize = AtomicUsize::new(0);

/// Whose turn it is among `n` GPUs (an index below `n`): successive calls take them in
/// turn.
pub(crate) fn next_turn(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        n => NEXT_GPU.fetch_add(1, Ordering::Relaxed) % n,
    }
}

impl Default for Placement {
    /// [`Placement::CPU`].
    fn default() -> Self {
        Placement::CPU
    }
}

impl fmt::Debug for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Placement")
            .field(
                "gpus",
                &self
                    .gpus
                    .iter()
                    .map(|g| g.info().ordinal)
                    .collect::<Vec<_>>(),
            )
            .field("min_bytes", &self.min_bytes)
            .field("cpu_when_out_of_memory", &self.cpu_when_out_of_memory)
            .finish()
    }
}
