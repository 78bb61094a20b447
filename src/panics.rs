//! Panics turned into errors at the edges (the CLI, the SQL shell), so that a bug shows
//! as one error line and an exit code, never a backtrace on a user's terminal. The goal
//! stays that none happens: every input is validated before it is trusted.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use crate::Error;

/// The latest panic's message and place, recorded by the hook.
static LAST: Mutex<Option<String>> = Mutex::new(None);

/// Replaces the default panic hook (which prints a multi-line report) with one that
/// records the message and where it happened, for [`error`]. With `RUST_BACKTRACE` set,
/// the default report is printed as well.
pub fn install_hook() {
    let default = panic::take_hook();
    let verbose = std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0");
    panic::set_hook(Box::new(move |info| {
        let message = format!(
            "{}{}",
            payload_text(info.payload()),
            info.location()
                .map(|l| format!(" (at {}:{})", l.file(), l.line()))
                .unwrap_or_default()
        );
        if let Ok(mut last) = LAST.lock() {
            *last = Some(message);
        }
        if verbose {
            default(info);
        }
    }));
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// The error for a caught panic: the hook's record when there is one (it has the
/// place), else the payload's text.
pub fn error(payload: Box<dyn Any + Send>) -> Error {
    let recorded = LAST.lock().ok().and_then(|mut last| last.take());
    Error::Panic(recorded.unwrap_or_else(|| payload_text(payload.as_ref())))
}

/// Runs `f`, turning a panic into [`Error::Panic`].
pub fn catch<T>(f: impl FnOnce() -> crate::Result<T>) -> crate::Result<T> {
    panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| Err(error(payload)))
}
