//! Output files written safely: through an exclusive temporary file with an
//! unpredictable name in the output's directory, renamed over the output once complete.
//!
//! The temporary file is created with `O_CREAT | O_EXCL` (the `tempfile` crate), so it is
//! never an existing file, nor a symlink planted to redirect the write; two runs writing
//! the same output never share it. It is removed when the write fails, returns an error
//! or panics (its handle's `Drop` runs during unwinding), and when the rename fails. The
//! rename replaces a symlink at the output path itself, never its target.

use std::fs::File;
use std::path::Path;

use crate::{Error, Result};

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
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".partial");
    // What a plain `File::create` gives (0o666 less the umask), not `tempfile`'s 0o600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let temp = builder
        .tempfile_in(dir)
        .map_err(Error::file("create a temporary file in", dir))?;
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
