//! The crate-wide error type: codec errors plus what the column, file and CLI layers add.

use thiserror::Error;

use crate::codec::CodecError;

/// Everything that can go wrong in colzip.
#[derive(Debug, Error)]
pub enum Error {
    /// A codec rejected its parameters or its stream.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A container, archive or option that is not well formed.
    #[error("{0}")]
    Format(String),
    /// An Arrow type (or combination of options) colzip does not handle.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A codec specification string that does not parse (e.g. `lzss:s=3`).
    #[error("invalid codec specification '{spec}': {reason}")]
    CodecSpec { spec: String, reason: String },
    /// The uncompressed data's checksum does not match the one stored.
    #[error("checksum mismatch in {what}: the data is corrupt")]
    Checksum { what: String },
    /// No usable GPU, or a CUDA/NVRTC failure.
    #[error("GPU: {0}")]
    Gpu(String),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("Arrow error: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[cfg(feature = "parquet")]
    #[error("Parquet error: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
}

impl Error {
    /// Shorthand for [`Error::Format`].
    pub fn format(message: impl Into<String>) -> Self {
        Error::Format(message.into())
    }
}

/// Result of colzip operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
