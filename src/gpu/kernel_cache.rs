//! Compiled kernels on disk, so a process reaches its first kernel without running NVRTC
//! (a few hundred milliseconds per file) when an earlier process compiled the same
//! kernels. An entry is the CUBIN NVRTC made, named by a hash of everything the CUBIN
//! depends on: the source, the compile options (architecture and `-D` defines), the NVRTC
//! version and the driver version. A missing, unreadable or stale entry only costs a
//! compilation; a failure to write one is ignored (it is a cache).
//!
//! Where: `COLZIP_KERNEL_CACHE` (a directory, or `off`), else `$XDG_CACHE_HOME/colzip/kernels`,
//! else `$HOME/.cache/colzip/kernels`; without any of these, nothing is cached.

use std::io::Write;
use std::path::PathBuf;

use xxhash_rust::xxh3::xxh3_128;

/// The environment variable that moves (or, with `off`, disables) the cache.
pub const KERNEL_CACHE_ENV: &str = "COLZIP_KERNEL_CACHE";

/// The cache directory of this process, if any.
#[derive(Clone, Debug)]
pub(crate) struct KernelCache {
    dir: Option<PathBuf>,
}

impl KernelCache {
    /// The directory the environment names.
    pub(crate) fn from_env() -> Self {
        let dir = match std::env::var_os(KERNEL_CACHE_ENV) {
            Some(value) if value == "off" => None,
            Some(value) if !value.is_empty() => Some(PathBuf::from(value)),
            _ => std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME")
                        .filter(|v| !v.is_empty())
                        .map(|home| PathBuf::from(home).join(".cache"))
                })
                .map(|base| base.join("colzip").join("kernels")),
        };
        KernelCache { dir }
    }

    /// The key of a compilation: a hash of every input that decides its output.
    pub(crate) fn key(parts: &[&[u8]]) -> String {
        let mut material = Vec::new();
        for part in parts {
            // Length-prefixed, so that moving bytes between parts changes the key.
            material.extend_from_slice(&(part.len() as u64).to_le_bytes());
            material.extend_from_slice(part);
        }
        format!("{:032x}", xxh3_128(&material))
    }

    /// The CUBIN stored under `key`, if there is one.
    pub(crate) fn load(&self, key: &str) -> Option<Vec<u8>> {
        let path = self.dir.as_ref()?.join(format!("{key}.cubin"));
        std::fs::read(path).ok().filter(|bytes| !bytes.is_empty())
    }

    /// Stores `cubin` under `key`: written to a temporary file in the directory and renamed,
    /// so concurrent processes never read half an entry.
    pub(crate) fn store(&self, key: &str, cubin: &[u8]) {
        let Some(dir) = &self.dir else { return };
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(dir)?;
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            file.write_all(cubin)?;
            file.persist(dir.join(format!("{key}.cubin")))
                .map_err(|e| e.error)?;
            Ok(())
        };
        let _ = write();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_keys_separate_their_parts() {
        let dir = tempfile::tempdir().unwrap();
        let cache = KernelCache {
            dir: Some(dir.path().join("kernels")),
        };
        let key = KernelCache::key(&[b"source", b"-DX=1"]);
        assert_ne!(key, KernelCache::key(&[b"source-", b"DX=1"]));
        assert!(cache.load(&key).is_none());
        cache.store(&key, b"cubin bytes");
        assert_eq!(cache.load(&key).unwrap(), b"cubin bytes");
        let off = KernelCache { dir: None };
        off.store(&key, b"x");
        assert!(off.load(&key).is_none());
    }
}
