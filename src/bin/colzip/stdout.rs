//! Standard output that may close early: `colzip info X | head -1`. Writes return the
//! error instead of panicking as `println!` does, and [`closed_under`] tells an error that
//! only says the reader went away, which the process ends on quietly, as other tools do.

use std::io::Write;

use colzip::{Error, Result};

/// Writes `text` and a line end to standard output.
pub fn line(text: impl std::fmt::Display) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    Ok(out.flush()?)
}

/// Whether `error` is a broken pipe (anywhere in its chain of sources) while standard
/// output is a pipe or socket whose reader has gone: the reader wanted no more, so there
/// is nothing to report. A broken pipe elsewhere, with standard output still read, is a
/// real error.
pub fn closed_under(error: &Error) -> bool {
    error.is_broken_pipe() && reader_gone()
}

/// Whether standard output's reader has closed its end: `poll` reports an error (a pipe
/// without readers) or a hang-up (a socket) on it, without waiting.
fn reader_gone() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a count of 1 and no wait.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready == 1 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}

/// Ends the process as a write to a closed pipe ends other tools: by SIGPIPE, so that the
/// shell sees status 141 and prints nothing. Called after every destructor has run.
pub fn end_by_sigpipe() -> std::process::ExitCode {
    // SAFETY: restoring the default action and raising the signal; Rust's runtime set
    // SIGPIPE to ignored, so the default must be put back for the signal to end us.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Should the signal be blocked: the status a shell reports for it.
    std::process::ExitCode::from(141)
}
