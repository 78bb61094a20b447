//! Running the `colzip` binary from the CLI test binaries (each uses some of these).

use std::process::{Command, Output};

/// Runs `colzip args`, capturing its output.
pub fn colzip(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_colzip"))
        .args(args)
        // The panic hook would print the default report too with backtraces asked for.
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("colzip runs")
}

/// Runs `colzip args`, which must succeed; returns its stdout.
pub fn ok(args: &[&str]) -> String {
    let out = colzip(args);
    assert!(
        out.status.success(),
        "colzip {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
