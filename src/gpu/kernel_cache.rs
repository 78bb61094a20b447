//! Compiled kernels on disk, so a process reaches its first kernel without running NVRTC
//! (a few hundred milliseconds per file) when an earlier process compiled the same
//! kernels. An entry is the CUBIN NVRTC made, named by a hash of everything the CUBIN
//! depends on: the source, the compile options (architecture and `-D` defines), the NVRTC
//! version and the driver version. A missing, unreadable or stale entry only costs a
//! compilation; a failure to write one is ignored (it is a cache).
//!
//! Where: `COLZIP_KERNEL_CACHE` (a directory, or `off`), else `$XDG_CACHE_HOME/colzip/kernels`,
//! else `$HOME/.cache/colzip/kernels`; without any of these, nothing is cached.
//!
//! Trust: a CUBIN from the cache runs on the GPU as this process, so the cache is used only
//! where no one else can have written it. The directory (made 0700 when colzip creates it)
//! and every entry must belong to the process's effective user and be writable by no
//! group or other user; otherwise the cache is not read or written, and colzip says why
//! once per process and compiles afresh. Each entry also carries a 128-bit hash of its
//! CUBIN, checked before loading, so a truncated or damaged entry is compiled again
//! rather than loaded. (The hash is no defence against a writer with the user's own
//! rights: such a writer could change colzip itself.)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

use xxhash_rust::xxh3::xxh3_128;

/// What an entry starts with: a tag of the entry format, then the CUBIN's xxh3-128.
const ENTRY_MAGIC: &[u8; 8] = b"CZKCUB1\n";
const HEADER_LEN: usize = ENTRY_MAGIC.len() + 16;

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

    /// The CUBIN stored under `key`, if there is one whose directory and file are
    /// trusted and whose hash matches.
    pub(crate) fn load(&self, key: &str) -> Option<Vec<u8>> {
        let dir = self.trusted_dir()?;
        let path = dir.join(format!("{key}.cubin"));
        let file = std::fs::File::open(&path).ok()?;
        if let Err(why) = check_private(&file.metadata().ok()?) {
            warn_once(&path, &why);
            return None;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut bytes).ok()?;
        let (header, cubin) = bytes.split_at_checked(HEADER_LEN)?;
        let hash = xxh3_128(cubin).to_le_bytes();
        (header[..ENTRY_MAGIC.len()] == ENTRY_MAGIC[..]
            && header[ENTRY_MAGIC.len()..] == hash
            && !cubin.is_empty())
        .then(|| cubin.to_vec())
    }

    /// Stores `cubin` under `key`: written to a temporary file in the directory and renamed,
    /// so concurrent processes never read half an entry.
    pub(crate) fn store(&self, key: &str, cubin: &[u8]) {
        let Some(dir) = &self.dir else { return };
        if !dir.exists() {
            let _ = make_private_dir(dir);
        }
        let Some(dir) = self.trusted_dir() else {
            return;
        };
        let write = || -> std::io::Result<()> {
            // 0600, as tempfile makes them.
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            file.write_all(ENTRY_MAGIC)?;
            file.write_all(&xxh3_128(cubin).to_le_bytes())?;
            file.write_all(cubin)?;
            file.persist(dir.join(format!("{key}.cubin")))
                .map_err(|e| e.error)?;
            Ok(())
        };
        let _ = write();
    }

    /// The directory, when it exists and no one but this user can write to it.
    fn trusted_dir(&self) -> Option<&Path> {
        let dir = self.dir.as_deref()?;
        let metadata = std::fs::metadata(dir).ok()?;
        if !metadata.is_dir() {
            return None;
        }
        match check_private(&metadata) {
            Ok(()) => Some(dir),
            Err(why) => {
                warn_once(dir, &why);
                None
            }
        }
    }
}

/// Creates `dir` and its missing parents, 0700.
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Why a file or directory with `metadata` is not to be trusted: another owner than this
/// process's effective user, or write permission for its group or others.
fn check_private(metadata: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    if metadata.uid() != user {
        return Err(format!("it belongs to user {}, not {user}", metadata.uid()));
    }
    if metadata.mode() & 0o022 != 0 {
        return Err(format!(
            "its group or other users may write to it (mode {:o})",
            metadata.mode() & 0o777
        ));
    }
    Ok(())
}

/// Says once per process why the cache is not used.
fn warn_once(path: &Path, why: &str) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "colzip: not using the kernel cache at {}: {why}; compiling kernels afresh",
            path.display()
        );
    });
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

    #[test]
    fn a_damaged_entry_is_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let cache = KernelCache {
            dir: Some(dir.path().join("kernels")),
        };
        let key = KernelCache::key(&[b"source"]);
        cache.store(&key, b"cubin bytes");
        let path = dir.path().join("kernels").join(format!("{key}.cubin"));
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(cache.load(&key).is_none());
        // An entry of the old format (the bare CUBIN) is not loaded either.
        std::fs::write(&path, b"cubin bytes").unwrap();
        assert!(cache.load(&key).is_none());
        cache.store(&key, b"cubin bytes");
        assert_eq!(cache.load(&key).unwrap(), b"cubin bytes");
    }

    #[test]
    fn a_directory_others_can_write_is_neither_read_nor_written() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let kernels = dir.path().join("kernels");
        let cache = KernelCache {
            dir: Some(kernels.clone()),
        };
        let key = KernelCache::key(&[b"source"]);
        cache.store(&key, b"cubin bytes");
        let mode = std::fs::metadata(&kernels).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "made private");
        assert_eq!(cache.load(&key).unwrap(), b"cubin bytes");

        std::fs::set_permissions(&kernels, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(cache.load(&key).is_none(), "a world-writable directory");
        let other = KernelCache::key(&[b"other"]);
        cache.store(&other, b"x");
        assert!(!kernels.join(format!("{other}.cubin")).exists());
        std::fs::set_permissions(&kernels, std::fs::Permissions::from_mode(0o700)).unwrap();

        // An entry another user could have written.
        let entry = kernels.join(format!("{key}.cubin"));
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(cache.load(&key).is_none(), "a world-writable entry");
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(cache.load(&key).unwrap(), b"cubin bytes");

        // A directory of another user (only root can give one away).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&kernels, Some(65534), None).unwrap();
            assert!(cache.load(&key).is_none(), "a directory of another user");
        }
    }
}
