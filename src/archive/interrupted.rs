//! Temporary files removed when the process is interrupted.
//!
//! An output is written to a temporary file that is renamed into place when complete, and
//! a piped input or output is spooled to a private directory. Both are removed on every
//! error and panic by their owners' `Drop`; this module removes them when a signal ends the
//! process instead (Ctrl-C's SIGINT, SIGTERM, SIGHUP), where no destructor runs.
//!
//! While a temporary path is in use it is registered ([`register`]); the guard that
//! returns unregisters it when dropped. [`install_handlers`] (the CLI calls it once at
//! start) installs a handler that unlinks every registered path, then ends the process
//! by the same signal with its default action, so the exit status still says which
//! signal it was. The handler only reads atomics and calls `unlink`, `rmdir`, `signal`
//! and `raise`, all async-signal-safe. A library user who does not install the handlers
//! loses nothing: registration is a few atomic operations.

use std::ffi::{CString, c_char};
use std::path::Path;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// Registered paths at once: a few outputs and spools per command are the most in use.
const SLOTS: usize = 64;

/// Each slot holds a leaked `CString` (null when free), and what it names.
static PATHS: [AtomicPtr<c_char>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
static KINDS: [AtomicU8; SLOTS] = [const { AtomicU8::new(0) }; SLOTS];

/// What to remove: a file (`unlink`), an empty directory (`rmdir`, after the files), or
/// a directory with whatever is in it (a tree other code fills, such as DataFusion's
/// Parquet writers: removed after the files and before the empty directories).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File = 0,
    Dir = 1,
    Tree = 2,
}

/// Unregisters its path when dropped (the owner removes it, or has renamed it into place).
#[must_use = "the path is unregistered when the guard drops"]
#[derive(Debug)]
pub struct Registered {
    slot: Option<usize>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            let old = PATHS[slot].swap(std::ptr::null_mut(), Ordering::SeqCst);
            if !old.is_null() {
                // SAFETY: the pointer came from `CString::into_raw` in `register`, and the
                // swap took it out of the table, so no handler reads it from now on.
                drop(unsafe { CString::from_raw(old) });
            }
        }
    }
}

/// Registers `path` for removal if a signal ends the process. With every slot taken the
/// path is not registered (it is still removed on errors and panics by its owner).
pub fn register(path: &Path, kind: Kind) -> Registered {
    use std::os::unix::ffi::OsStrExt;
    let Ok(text) = CString::new(path.as_os_str().as_bytes()) else {
        return Registered { slot: None };
    };
    let raw = text.into_raw();
    for (slot, entry) in PATHS.iter().enumerate() {
        if entry
            .compare_exchange(
                std::ptr::null_mut(),
                raw,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            KINDS[slot].store(kind as u8, Ordering::SeqCst);
            return Registered { slot: Some(slot) };
        }
    }
    // SAFETY: `raw` came from `into_raw` above and was not stored anywhere.
    drop(unsafe { CString::from_raw(raw) });
    Registered { slot: None }
}

extern "C" fn remove_and_reraise(signal: libc::c_int) {
    // Files first, then trees, then the directories they were in.
    for want in [Kind::File, Kind::Tree, Kind::Dir] {
        for slot in 0..SLOTS {
            let path = PATHS[slot].load(Ordering::SeqCst);
            if path.is_null() || KINDS[slot].load(Ordering::SeqCst) != want as u8 {
                continue;
            }
            // SAFETY: `path` is a NUL-terminated string that stays allocated while it is
            // in the table; unlink, rmdir and the tree's calls are async-signal-safe.
            unsafe {
                match want {
                    Kind::File => {
                        libc::unlink(path);
                    }
                    Kind::Dir => {
                        libc::rmdir(path);
                    }
                    Kind::Tree => super::remove_tree::remove_tree(path),
                }
            }
        }
    }
    // SAFETY: restoring the default action and raising the signal again ends the process
    // as the signal would have; both calls are async-signal-safe.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP (once per process; a signal whose
/// action is not the default, such as one a shell set to ignore, is left alone). For
/// commands that end on these signals: a program that handles Ctrl-C itself (the SQL
/// shell cancels a statement) must not install it.
pub fn install_handlers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: a zeroed sigaction is a valid "default" value to read into; the handler
            // is an `extern "C" fn(c_int)`, as sa_sigaction expects without SA_SIGINFO.
            unsafe {
                let mut current: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut current) != 0
                    || current.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = remove_and_reraise as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    });
}
