//! Running the `colzip` binary from the CLI test binaries (each uses some of these).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A command running the `colzip` binary, to be given its arguments.
#[allow(dead_code)]
pub fn command() -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(env!("CARGO_BIN_EXE_colzip"));
    // The panic hook would print the default report too with backtraces asked for.
    command.env_remove("RUST_BACKTRACE");
    // colzip leaves alone a signal its parent set to be ignored, as shells expect, and a
    // test run under `nohup` or put in the background by a shell without job control
    // inherits SIGHUP or SIGINT ignored. colzip starts with the default actions, so the
    // signals the tests send reach its handlers (or else a test waits forever).
    // SAFETY: `signal` is async-signal-safe, and nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    command
}

/// Runs `colzip args`, capturing its output.
#[allow(dead_code)]
pub fn colzip(args: &[&str]) -> Output {
    command().args(args).output().expect("colzip runs")
}

/// A path as a command-line argument (the tests' paths are UTF-8).
#[allow(dead_code)]
pub fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Runs `colzip args`, which must fail without a panic; returns its stderr.
#[allow(dead_code)]
pub fn fails(args: &[&str]) -> String {
    let out = colzip(args);
    assert!(!out.status.success(), "colzip {args:?} should fail");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// Runs a command that must fail with exit code `code` and, for code 1, an error block:
/// one line `colzip: error: …`, any further lines indented under it. Returns its stderr.
#[allow(dead_code)]
pub fn fails_with(code: i32, args: &[&str]) -> String {
    let out = colzip(args);
    assert_eq!(out.status.code(), Some(code), "colzip {args:?}: {out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{stderr}"
    );
    if code == 1 {
        let mut lines = stderr.lines();
        assert!(
            lines.next().unwrap().starts_with("colzip: error: "),
            "{stderr}"
        );
        assert!(lines.all(|l| l.starts_with("  ")), "{stderr}");
    }
    stderr
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
    let mut child = command()
        .args(args)
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

/// Checks that `text` is a well-formed XML document whose root element is `<svg>`: tags
/// nest and close, attribute values are quoted, only whitespace lies outside the root.
/// Returns the names of the elements, in document order.
#[allow(dead_code)]
pub fn svg_elements(text: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut names = Vec::new();
    let mut roots = 0;
    let mut rest = text;
    while let Some(at) = rest.find('<') {
        let before = &rest[..at];
        assert!(
            !stack.is_empty() || before.trim().is_empty(),
            "text outside the root element: {before:?}"
        );
        rest = &rest[at..];
        if let Some(body) = rest.strip_prefix("<?") {
            let end = body.find("?>").expect("an unclosed <? ?>");
            rest = &body[end + 2..];
            continue;
        }
        if let Some(body) = rest.strip_prefix("<!--") {
            let end = body.find("-->").expect("an unclosed comment");
            rest = &body[end + 3..];
            continue;
        }
        // A tag: up to the '>' outside quotes.
        let mut quote = None;
        let end = rest
            .char_indices()
            .find(|&(_, c)| match quote {
                Some(q) => {
                    if c == q {
                        quote = None;
                    }
                    false
                }
                None if c == '"' || c == '\'' => {
                    quote = Some(c);
                    false
                }
                None => c == '>',
            })
            .map(|(i, _)| i)
            .expect("an unclosed tag");
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().expect("a closing tag without an opening one");
            assert_eq!(open, name.trim(), "tags cross");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name: String = tag.chars().take_while(|c| !c.is_whitespace()).collect();
        assert!(!name.is_empty(), "a tag without a name");
        // Attributes: name="value" pairs.
        let mut attributes = tag[name.len()..].trim();
        while !attributes.is_empty() {
            let eq = attributes.find('=').expect("an attribute without a value");
            let value = attributes[eq + 1..].trim_start();
            let q = value.chars().next().expect("an attribute without a value");
            assert!(
                q == '"' || q == '\'',
                "an unquoted attribute value in <{name}>"
            );
            let close = value[1..].find(q).expect("an unclosed attribute value");
            attributes = value[close + 2..].trim_start();
        }
        if stack.is_empty() {
            roots += 1;
            assert_eq!(name, "svg", "the root element is <{name}>, not <svg>");
        }
        names.push(name.clone());
        if !self_closing {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    assert!(rest.trim().is_empty(), "text after the root element");
    assert_eq!(roots, 1, "one root element");
    names
}
