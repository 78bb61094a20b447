//! The names of outputs' temporary files, and the removal of those a killed run left.
//!
//! An output `NAME` is written to `.NAME.PID.XXXXXX.partial` in its directory: `PID` is
//! the writing process, `XXXXXX` the unpredictable part. A run ended by SIGKILL (or a
//! crash) cannot remove its file; the next run writing the same `NAME` removes every
//! such file whose process no longer exists. A file of a live process, of another
//! output name, or not of this form is left alone, so two runs writing one output never
//! disturb each other. Private spool directories named `PREFIX.PID.XXXXXX` are swept
//! the same way ([`remove_stale_dirs`]).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The end of every temporary file's name.
pub(super) const SUFFIX: &str = ".partial";

/// Called with each stale file removed (`colzip --verbose` prints it).
static NOTICE: Mutex<Option<fn(&Path)>> = Mutex::new(None);

/// Has `notice` called with the path of each stale temporary file removed, from now on
/// in this process.
pub fn on_stale_partial_removed(notice: fn(&Path)) {
    if let Ok(mut current) = NOTICE.lock() {
        *current = Some(notice);
    }
}

/// The start of this process's temporary file names for an output named `name`.
pub(super) fn prefix(name: &OsStr) -> OsString {
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(format!(".{}.", std::process::id()));
    prefix
}

/// Removes the temporary files in `dir` of outputs named `name` whose writers have
/// ended; returns their paths. A file that cannot be read or removed stays: the new
/// output does not depend on it.
pub(super) fn remove_stale(dir: &Path, name: &OsStr) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = writer_pid(&entry.file_name(), name) else {
            continue;
        };
        // A regular file only (never a link's target), of a process that is gone.
        let regular = entry.file_type().is_ok_and(|kind| kind.is_file());
        if !regular || process_exists(pid) {
            continue;
        }
        let path = entry.path();
        if std::fs::remove_file(&path).is_ok() {
            if let Some(notice) = NOTICE.lock().ok().and_then(|n| *n) {
                notice(&path);
            }
            removed.push(path);
        }
    }
    removed
}

/// Removes the directories in `parent` named `PREFIX.PID.XXXXXX` (a process's private
/// spool directory, `prefix` being `PREFIX.`) whose process has ended, with what is in
/// them; returns their paths. Only real directories owned by this user are touched: a
/// link, another user's directory or a live process's is left alone.
pub fn remove_stale_dirs(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .as_bytes()
            .strip_prefix(prefix.as_bytes())
            .and_then(pid_and_random)
        else {
            continue;
        };
        let path = entry.path();
        let ours = path
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if !ours || process_exists(pid) {
            continue;
        }
        if std::fs::remove_dir_all(&path).is_ok() {
            if let Some(notice) = NOTICE.lock().ok().and_then(|n| *n) {
                notice(&path);
            }
            removed.push(path);
        }
    }
    removed
}

/// The pid of `PID.XXXXXX` (digits, a dot, then a part without dots).
fn pid_and_random(rest: &[u8]) -> Option<libc::pid_t> {
    let dot = rest.iter().position(|&b| b == b'.')?;
    let (pid, random) = (&rest[..dot], &rest[dot + 1..]);
    if pid.is_empty()
        || random.is_empty()
        || random.contains(&b'.')
        || !pid.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    std::str::from_utf8(pid)
        .ok()?
        .parse::<libc::pid_t>()
        .ok()
        .filter(|&pid| pid > 0)
}

/// The writer's pid when `file` is a temporary file of the output `name`
/// (`.NAME.PID.XXXXXX.partial`, the last part without dots).
fn writer_pid(file: &OsStr, name: &OsStr) -> Option<libc::pid_t> {
    let file = file.as_bytes();
    let name = name.as_bytes();
    let rest = file
        .strip_prefix(b".")?
        .strip_prefix(name)?
        .strip_prefix(b".")?;
    pid_and_random(rest.strip_suffix(SUFFIX.as_bytes())?)
}

/// Whether process `pid` exists: signal 0 is checked, not sent. Only ESRCH says it is
/// gone (EPERM is another user's live process).
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks the pid.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}
