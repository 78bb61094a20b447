//! Running the `colzip` binary from the CLI test binaries (each uses some of these).

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `colzip args`, capturing its output.
#[allow(dead_code)]
pub fn colzip(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_colzip"))
        .args(args)
        // The panic hook would print the default report too with backtraces asked for.
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("colzip runs")
}

/// Runs `colzip args`, which must succeed; returns its stdout.
#[allow(dead_code)]
pub fn ok(args: &[&str]) -> String {
    let out = colzip(args);
    assert!(
        out.status.success(),
        "colzip {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `colzip args` with `stdin` on its standard input (written from another thread, so
/// a large input cannot deadlock against a full stdout pipe), capturing its output.
#[allow(dead_code)]
pub fn with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_colzip"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("colzip runs");
    let mut input = child.stdin.take().expect("stdin is piped");
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // A command that exits without reading all of it closes the pipe: not an error here.
        let _ = input.write_all(&bytes);
    });
    let out = child.wait_with_output().expect("colzip runs");
    writer.join().expect("the writer thread ends");
    out
}
