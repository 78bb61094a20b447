//! The runtime's error type. It knows nothing of codecs: the device is missing, a CUDA or
//! NVRTC call failed, work on the device broke a rule the runtime checks, or the backend
//! asked for is not one. The codec layer wraps it (`CodecError::Gpu`) and adds what its
//! kernels mean.

use thiserror::Error;

use super::budget::GPU_MEMORY_ENV;

/// What went wrong on the GPU side.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GpuError {
    /// No usable GPU: no driver, no NVRTC, no device, or a device that would not open.
    /// The message is whole ("no usable GPU: …"): it says GPU already, so the layers
    /// above print it without their "GPU: " label ([`GpuError::labelled`]).
    #[error("{0}")]
    Unavailable(String),
    /// A CUDA driver call (allocation, copy, launch, synchronisation) failed.
    #[error("{what}: {detail}")]
    Driver { what: String, detail: String },
    /// NVRTC rejected a kernel file (the log says why; a build defect, not a user error).
    #[error("NVRTC cannot compile {kernel}: {log}")]
    Compile { kernel: String, log: String },
    /// Device memory ran out: the limit colzip was given ([`GPU_MEMORY_ENV`]) or the
    /// device itself (`limit: None`). Under the `auto` backend the codecs fall back to the
    /// CPU on this error.
    #[error("{}", out_of_memory_message(*requested, *held, *limit))]
    OutOfMemory {
        requested: usize,
        held: usize,
        limit: Option<usize>,
    },
    /// A request the runtime cannot serve (a launch larger than the grid allows, a buffer
    /// too small for the work given).
    #[error("{0}")]
    Limit(String),
    /// A backend name other than auto, cpu or gpu (the name lowercased).
    #[error("unknown backend '{0}' (expected auto, cpu or gpu)")]
    UnknownBackend(String),
    /// A setting in the environment that cannot be used (`COLZIP_BACKEND` naming no
    /// backend, or not UTF-8); the message is whole and names the variable.
    #[error("{0}")]
    Setting(String),
}

impl GpuError {
    /// This error, when it says there is no usable GPU, saying too that backend 'gpu' was
    /// what asked for one (the backend that cannot fall back to the CPU).
    pub fn for_backend_gpu(self) -> GpuError {
        match self {
            GpuError::Unavailable(message) => GpuError::Unavailable(message.replacen(
                "no usable GPU: ",
                "no usable GPU for backend 'gpu': ",
                1,
            )),
            other => other,
        }
    }

    /// The error as the layers above print it: labelled "GPU: " unless it already says
    /// there is no usable GPU, which would read "GPU: no usable GPU", or is about the
    /// choice of backend rather than a GPU's failure (the user's mistake, said as such).
    pub fn labelled(&self) -> String {
        match self {
            GpuError::Unavailable(_) | GpuError::UnknownBackend(_) | GpuError::Setting(_) => {
                self.to_string()
            }
            other => format!("GPU: {other}"),
        }
    }

    /// A failed driver call: what was being done and the driver's message.
    pub fn driver(what: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        GpuError::Driver {
            what: what.into(),
            detail: detail.to_string(),
        }
    }
}

fn out_of_memory_message(requested: usize, held: usize, limit: Option<usize>) -> String {
    const MIB: f64 = (1 << 20) as f64;
    let (requested, held) = (requested as f64 / MIB, held as f64 / MIB);
    match limit {
        Some(limit) => format!(
            "GPU out of memory: {requested:.1} MiB more would pass the {:.1} MiB that \
             {GPU_MEMORY_ENV} allows ({held:.1} MiB held)",
            limit as f64 / MIB
        ),
        None => format!(
            "GPU out of memory: the device has no room for {requested:.1} MiB more \
             ({held:.1} MiB held by colzip)"
        ),
    }
}

/// Result of runtime operations.
pub type GpuResult<T> = std::result::Result<T, GpuError>;
