//! The codec layer's error type. It knows nothing of Arrow or files: a codec either gets
//! parameters it cannot use, or a stream it cannot decode.

use thiserror::Error;

use crate::gpu::GpuError;

/// What went wrong inside a codec.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodecError {
    /// Parameters out of range (e.g. an LZSS window of 0, a symbol width of 3).
    #[error("invalid {codec} parameter: {reason}")]
    InvalidParams { codec: &'static str, reason: String },
    /// A codec specification string that does not parse (e.g. `lzss:s=3`): an unknown
    /// name, or options the codec does not take.
    #[error("invalid codec specification '{spec}': {reason}")]
    Spec { spec: String, reason: String },
    /// The stream is truncated, corrupt or not of this codec.
    #[error("corrupt {codec} stream: {reason}")]
    Corrupt { codec: &'static str, reason: String },
    /// The stream claims more output than the caller allows.
    #[error("{codec} stream claims {claimed} bytes of output, more than the limit of {limit}")]
    TooLarge {
        codec: &'static str,
        claimed: u64,
        limit: u64,
    },
    /// The GPU path failed (no device, a CUDA failure, a launch the runtime refused);
    /// corrupt streams are `Corrupt` on the GPU as on the CPU.
    #[error("{}", .0.labelled())]
    Gpu(#[from] GpuError),
    /// Memory for the output could not be had (a fallible allocation failed).
    #[error("{codec}: no memory for {bytes} bytes of output")]
    OutOfMemory { codec: &'static str, bytes: u64 },
    /// A checksum over decoded data did not match.
    #[error("{codec} checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        codec: &'static str,
        stored: u32,
        computed: u32,
    },
}

impl CodecError {
    /// Shorthand for [`CodecError::Corrupt`].
    pub fn corrupt(codec: &'static str, reason: impl Into<String>) -> Self {
        CodecError::Corrupt {
            codec,
            reason: reason.into(),
        }
    }

    /// Shorthand for [`CodecError::Spec`].
    pub fn spec(spec: impl Into<String>, reason: impl Into<String>) -> Self {
        CodecError::Spec {
            spec: spec.into(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`CodecError::InvalidParams`].
    pub fn invalid(codec: &'static str, reason: impl Into<String>) -> Self {
        CodecError::InvalidParams {
            codec,
            reason: reason.into(),
        }
    }
}

/// Result of codec operations.
pub type Result<T, E = CodecError> = std::result::Result<T, E>;
