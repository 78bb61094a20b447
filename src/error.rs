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
    /// Arguments that do not go together, or do not fit the input (`--type` on a Parquet
    /// file): the caller's mistake, which the CLI reports with exit status 2, as it does
    /// arguments it cannot parse.
    #[error("{0}")]
    Usage(String),
    /// An Arrow type (or combination of options) colzip does not handle.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The uncompressed data's checksum does not match the one stored.
    #[error("checksum mismatch in {what}: the data is corrupt")]
    Checksum { what: String },
    /// Decoding would produce more than the caller allows (e.g. `--max-output`).
    #[error("{what} claims {claimed} bytes of output, more than the limit of {limit}")]
    TooLarge {
        what: String,
        claimed: u64,
        limit: u64,
    },
    /// An I/O error on a file, with what was being done and the file's path.
    #[error("cannot {action} {}: {source}", path.display())]
    File {
        action: &'static str,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// A panic caught at the edge (a bug: every input should give an error instead).
    #[error("internal error (a bug in colzip, please report it): {0}")]
    Panic(String),
    /// No usable GPU, a CUDA/NVRTC failure, or a backend name (an option's or
    /// `COLZIP_BACKEND`'s) other than auto, cpu or gpu.
    #[error("{}", .0.labelled())]
    Gpu(#[from] crate::gpu::GpuError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("Arrow error: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[cfg(feature = "parquet")]
    #[error("Parquet error: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// A DataFusion planning or execution error (boxed: DataFusion's error is large).
    #[cfg(feature = "datafusion")]
    #[error("{0}")]
    DataFusion(Box<datafusion::error::DataFusionError>),
}

#[cfg(feature = "datafusion")]
impl From<datafusion::error::DataFusionError> for Error {
    /// Arrow errors stay Arrow errors, and a colzip error that went through DataFusion
    /// (as an external error) comes back as itself.
    fn from(error: datafusion::error::DataFusionError) -> Self {
        use datafusion::error::DataFusionError;
        match error {
            DataFusionError::ArrowError(e, _) => Error::Arrow(*e),
            DataFusionError::External(e) => match e.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::DataFusion(Box::new(DataFusionError::External(other))),
            },
            other => Error::DataFusion(Box::new(other)),
        }
    }
}

#[cfg(feature = "datafusion")]
impl From<Error> for datafusion::error::DataFusionError {
    /// A colzip error inside DataFusion: an external error (see the reverse `From`).
    fn from(error: Error) -> Self {
        datafusion::error::DataFusionError::External(Box::new(error))
    }
}

#[cfg(feature = "datafusion")]
impl From<CodecError> for datafusion::error::DataFusionError {
    /// As the crate's `Error` (an external error), so it comes back as one.
    fn from(error: CodecError) -> Self {
        Error::from(error).into()
    }
}

#[cfg(feature = "datafusion")]
impl From<crate::gpu::GpuError> for datafusion::error::DataFusionError {
    /// As the crate's `Error` (an external error), so it comes back as one.
    fn from(error: crate::gpu::GpuError) -> Self {
        Error::from(error).into()
    }
}

impl Error {
    /// Shorthand for [`Error::Format`].
    pub fn format(message: impl Into<String>) -> Self {
        Error::Format(message.into())
    }

    /// Shorthand for [`Error::Usage`].
    pub fn usage(message: impl Into<String>) -> Self {
        Error::Usage(message.into())
    }

    /// The message for a terminal: its first line, and any further lines (DataFusion's
    /// and Arrow's errors may have several) indented under it, so a multi-line error
    /// reads as one block.
    pub fn report(&self) -> String {
        report(&self.to_string())
    }

    /// Whether this is a broken pipe anywhere in its chain of sources: a write whose
    /// reader has gone.
    pub fn is_broken_pipe(&self) -> bool {
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(e) = current {
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return true;
            }
            current = e.source();
        }
        false
    }

    /// For `map_err`: an I/O error while doing `action` ("open", "write", …) on `path`.
    pub fn file(
        action: &'static str,
        path: impl Into<std::path::PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Error::File {
            action,
            path,
            source,
        }
    }
}

/// `message` as one block: the first non-empty line, then the others indented by two
/// spaces (blank lines dropped).
pub fn report(message: &str) -> String {
    let mut lines = message
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty());
    let mut out = lines.next().unwrap_or("").trim().to_string();
    for line in lines {
        out.push_str("\n  ");
        out.push_str(line.trim_start());
    }
    out
}

/// Result of colzip operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::CodecSpec;
    use crate::gpu::{Backend, GpuError};

    /// The lower layers' errors print the same wrapped in the crate's `Error` as alone:
    /// the CLI and SQL report them through it.
    #[test]
    fn lower_layers_errors_read_the_same_wrapped() {
        let backend = " CUDA ".parse::<Backend>().unwrap_err();
        assert_eq!(
            backend.to_string(),
            "unknown backend 'cuda' (expected auto, cpu or gpu)"
        );
        let spec = "lzss:s=3".parse::<CodecSpec>().unwrap_err();
        assert!(
            spec.to_string()
                .starts_with("invalid codec specification 'lzss:s=3': "),
            "{spec}"
        );
        let missing = GpuError::Unavailable("no usable GPU: no driver".into());
        for (wrapped, alone) in [
            (Error::from(backend.clone()), backend.to_string()),
            (
                Error::from(CodecError::from(backend.clone())),
                backend.to_string(),
            ),
            (Error::from(spec.clone()), spec.to_string()),
            (Error::from(missing.clone()), missing.to_string()),
        ] {
            assert_eq!(wrapped.to_string(), alone);
        }
    }
}
