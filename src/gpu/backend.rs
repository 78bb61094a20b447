//! Which backend runs the codecs: `auto` (the GPU when one is usable, else the CPU),
//! `cpu`, or `gpu` (an error when there is none). `COLZIP_BACKEND` sets the default.

use std::fmt;
use std::str::FromStr;

use super::device::Gpu;
use super::{GpuError, GpuResult};

/// The environment variable that sets the default backend of the CLI and SQL.
pub const BACKEND_ENV: &str = "COLZIP_BACKEND";

/// A backend choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    #[default]
    Auto,
    Cpu,
    Gpu,
}

impl Backend {
    /// The choice in `COLZIP_BACKEND`, `Auto` when it is unset; an error when it is not
    /// one of auto, cpu, gpu.
    pub fn from_env() -> GpuResult<Backend> {
        match std::env::var(BACKEND_ENV) {
            Ok(value) => value
                .parse()
                .map_err(|e| GpuError::Setting(format!("{BACKEND_ENV}: {e}"))),
            Err(std::env::VarError::NotPresent) => Ok(Backend::Auto),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(GpuError::Setting(format!("{BACKEND_ENV} is not UTF-8")))
            }
        }
    }

    /// The GPU to run on, or `None` for the CPU. `Gpu` errors when no GPU is usable,
    /// saying why; `Auto` falls back to the CPU.
    pub fn resolve(self) -> GpuResult<Option<&'static Gpu>> {
        match self {
            Backend::Cpu => Ok(None),
            Backend::Gpu => Gpu::get().map(Some).map_err(GpuError::for_backend_gpu),
            Backend::Auto => Ok(Gpu::get().ok()),
        }
    }
}

impl FromStr for Backend {
    type Err = GpuError;

    fn from_str(text: &str) -> GpuResult<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "cpu" => Ok(Backend::Cpu),
            "gpu" => Ok(Backend::Gpu),
            other => Err(GpuError::UnknownBackend(other.to_string())),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Auto => "auto",
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        })
    }
}
