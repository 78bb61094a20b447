//! Output files written safely: through an exclusive temporary file with an
//! unpredictable name in the output's directory, renamed over the output once complete.
//!
//! The temporary file is created with `O_CREAT | O_EXCL` (the `tempfile` crate), so it is
//! never an existing file, nor a symlink planted to redirect the write; two runs writing
//! the same output never share it. It is removed when the write fails, returns an error
//! or panics (its handle's `Drop` runs during unwinding), and when the rename fails. The
//! rename replaces a symlink at the output path itself, never its target. A temporary
//! file that a killed run left (no destructor runs on SIGKILL) is removed by the next
//! write of the same output ([`super::partial`]).
//!
//! Replacing is for regular files alone: a device node, FIFO, socket or directory at the
//! output path is refused (`--force` must never turn `/dev/null` into a file), as is
//! anything in `/dev` or `/proc` (`/dev/stdout` may resolve to a regular file), and a
//! replaced file's permission bits carry over to the new one (a 0600 output stays 0600).
//! Without `overwrite` the rename itself refuses an existing path (`renameat2` with
//! `RENAME_NOREPLACE`, or a hard link), so a file that appears during the write is kept.
//!
//! The finished file is flushed to disk (`fsync`) before the rename, so that after a power
//! loss the output is either absent or complete, never present and empty:
//! [`set_flush_before_rename`] turns that off for a process that prefers speed.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::{Error, Result};

/// Whether [`write_atomically`] flushes the finished file to disk before renaming it.
static FLUSH_BEFORE_RENAME: AtomicBool = AtomicBool::new(true);

/// Whether [`write_atomically`] flushes each finished file to disk before the rename (on
/// by default; `colzip --no-fsync` turns it off for the process).
pub fn set_flush_before_rename(flush: bool) {
    FLUSH_BEFORE_RENAME.store(flush, Ordering::Relaxed);
}

/// Writes `path` with `write`, which gets the temporary file: the output appears under
/// its name complete or not at all. With `overwrite` false an existing `path` (even one
/// that appeared meanwhile) is an error and is left alone. I/O errors of `write` that
/// carry no path are reported with `path`.
pub fn write_atomically<T>(
    path: &Path,
    overwrite: bool,
    write: impl FnOnce(File) -> Result<T>,
) -> Result<T> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| Error::format(format!("{} is not a file name", path.display())))?;
    let replaced = existing_file(path, overwrite)?;
    // What a killed run writing this output left behind (no destructor or signal handler
    // runs on SIGKILL).
    super::partial::remove_stale(dir, name);
    let prefix = super::partial::prefix(name);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(super::partial::SUFFIX);
    let temp = builder.tempfile_in(dir).map_err(|e| match dir.metadata() {
        Err(_) => Error::format(format!(
            "cannot write {}: its directory {} does not exist",
            path.display(),
            dir.display()
        )),
        Ok(_) => Error::file("create a temporary file in", dir)(e),
    })?;
    // The temporary file is 0600 while it is written; it gets the replaced file's mode, or
    // what a plain `File::create` gives (0o666 less the umask), just before the rename.
    #[cfg(unix)]
    let final_mode = match &replaced {
        Some(metadata) => std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o777,
        None => 0o666 & !current_umask(),
    };
    // Removed by a signal handler too, should Ctrl-C or a kill end the process meanwhile.
    let _registered = super::interrupted::register(temp.path(), super::interrupted::Kind::File);
    let file = temp
        .as_file()
        .try_clone()
        .map_err(Error::file("write", temp.path()))?;
    let value = write(file).map_err(|e| match e {
        Error::Io(source) => Error::File {
            action: "write",
            path: path.to_path_buf(),
            source,
        },
        other => other,
    })?;
    if FLUSH_BEFORE_RENAME.load(Ordering::Relaxed) {
        temp.as_file().sync_all().map_err(|source| Error::File {
            action: "flush to disk",
            path: path.to_path_buf(),
            source,
        })?;
    }
    #[cfg(unix)]
    temp.as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(final_mode))
        .map_err(Error::file("set the permissions of", temp.path()))?;
    let persisted = if overwrite {
        temp.persist(path)
    } else {
        temp.persist_noclobber(path)
    };
    // On failure the error holds the temporary file, removed when it is dropped here.
    persisted.map_err(|e| Error::File {
        action: "rename the finished output to",
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(value)
}

/// The metadata of the regular file at `path` when there is one to replace (`None` for
/// nothing there, or a symlink to a regular file, which is replaced itself); an error for
/// anything else (a device, FIFO, socket or directory, or a symlink to one) and, with
/// `overwrite` false, for anything at all.
fn existing_file(path: &Path, overwrite: bool) -> Result<Option<std::fs::Metadata>> {
    let Ok(metadata) = path.symlink_metadata() else {
        return Ok(None);
    };
    if !overwrite {
        return Err(Error::File {
            action: "write",
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "it exists (use --force to overwrite)",
            ),
        });
    }
    // `/dev/stdout` and `/proc/self/fd/N` are links to whatever a descriptor holds (a
    // regular file when redirected to one): never replaced, whatever they resolve to.
    let system_dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .canonicalize()
        .is_ok_and(|dir| dir == Path::new("/dev") || dir.starts_with("/proc"));
    if system_dir {
        return Err(Error::format(format!(
            "{} is a system file: only regular files outside /dev and /proc are replaced",
            path.display()
        )));
    }
    let kind = metadata.file_type();
    if kind.is_file() {
        return Ok(Some(metadata));
    }
    // A dangling symlink, or one to a regular file: the link is replaced, not its target.
    let target = if kind.is_symlink() {
        match path.metadata() {
            Ok(target) if !target.is_file() => target.file_type(),
            _ => return Ok(None),
        }
    } else {
        kind
    };
    Err(Error::format(format!(
        "{} is {}, not a regular file: only regular files are replaced",
        path.display(),
        special_file_kind(&target)
    )))
}

#[cfg(unix)]
fn special_file_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_file_kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// The process's umask, from `/proc/self/status` (0o022 where that is not readable):
/// setting it to read it would race with files other threads create.
#[cfg(unix)]
fn current_umask() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UMASK.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix("Umask:"))
                    .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            })
            .unwrap_or(0o022)
    })
}
