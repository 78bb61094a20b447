//! Progress bars on stderr, drawn only when it is a terminal.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on stderr when it is a terminal, else a hidden one.
pub fn progress_bar() -> ProgressBar {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(0)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .expect("valid template"),
    );
    bar
}

pub fn bytes_bar(len: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg} [{elapsed_precise}] {bytes} ({bytes_per_sec})",
        )
        .expect("valid template"),
    );
    bar.set_message(what.to_string());
    bar
}

/// Progress as plain lines on stderr, for when it is not a terminal (a log, CI): a line
/// now and then, not one per step.
pub struct ProgressLines {
    command: &'static str,
    last: Option<Instant>,
}

impl ProgressLines {
    /// How often [`ProgressLines::step`] writes a line at most.
    const EVERY: Duration = Duration::from_secs(5);

    pub fn new(command: &'static str) -> Self {
        ProgressLines {
            command,
            last: None,
        }
    }

    /// Writes `what` (a stage beginning: always written).
    pub fn stage(&mut self, what: &str) {
        eprintln!("colzip {}: {what}", self.command);
        self.last = Some(Instant::now());
    }

    /// Writes `what` (a step of many) when none was written for a while.
    pub fn step(&mut self, what: impl FnOnce() -> String) {
        if self.last.is_none_or(|last| last.elapsed() >= Self::EVERY) {
            self.stage(&what());
        }
    }
}
