//! The runtime's error type. It knows nothing of codecs: the device is missing, a CUDA or
//! NVRTC call failed, or work on the device broke a rule the runtime checks. The codec
//! layer wraps it (`CodecError::Gpu`) and adds what its kernels mean.

use thiserror::Error;

/// What went wrong on the GPU side.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GpuError {
    /// No usable GPU: no driver, no NVRTC, no device, or a device that would not open.
    #[error("no usable GPU: {0}")]
    Unavailable(String),
    /// A CUDA driver call (allocation, copy, launch, synchronisation) failed.
    #[error("{what}: {detail}")]
    Driver { what: String, detail: String },
    /// NVRTC rejected a kernel file (the log says why; a build defect, not a user error).
    #[error("NVRTC cannot compile {kernel}: {log}")]
    Compile { kernel: String, log: String },
    /// A request the runtime cannot serve (a launch larger than the grid allows, a buffer
    /// too small for the work given).
    #[error("{0}")]
    Limit(String),
}

impl GpuError {
    /// A failed driver call: what was being done and the driver's message.
    pub fn driver(what: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        GpuError::Driver {
            what: what.into(),
            detail: detail.to_string(),
        }
    }
}

/// Result of runtime operations.
pub type GpuResult<T> = std::result::Result<T, GpuError>;
