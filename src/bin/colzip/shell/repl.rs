//! The shell on a terminal: line editing and history (rustyline; Up recalls a statement,
//! kept across sessions in `~/.colzip_history` or `$COLZIP_HISTORY`), Tab completion of
//! keywords, tables, columns and functions, backslash commands,
//! the row count and time of each statement, and Ctrl-C cancelling the statement that
//! runs (at the prompt it clears the line) while the session and its tables stay.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use datafusion::prelude::SessionContext;
use rustyline::Editor;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use tokio::sync::watch;

use super::bounded::{BoundedStatement, Pushed, too_large};
use super::completion::SqlCompleter;
use colzip::datafusion::session::statements::{run_sql_rows, timing_line};
use colzip::reporting::Format;
use colzip::{Error, Result};

/// The environment variable naming the history file.
pub const HISTORY_ENV: &str = "COLZIP_HISTORY";

const HELP: &str = "\
Statements end with ';' and may span lines. Up/Down recall earlier ones; Ctrl-C cancels
the running statement (at the prompt: clears the line); Ctrl-D or \\q quits.
  \\?              this help
  \\d              list the tables
  \\d NAME         describe table NAME
  \\timing         turn the row count and time after each statement off or on
  \\q              quit
Files are tables by their path: SELECT * FROM 'data/lineitem.parquet' (Parquet, CSV, JSON).
colzip's functions, with what each does: SHOW FUNCTIONS LIKE 'colzip%';
  DataFusion lists table functions there without a description. colzip_stats('table'
  [, 'codec,codec...']) gives a row per column and codec of the table: its sizes,
  ratio and speeds (docs/SQL.md, section \"Compressed tables and colzip's functions\").
";

/// What a line starting with `\` asks for.
enum Backslash {
    Help,
    Tables,
    Describe(String),
    Timing,
    Quit,
    Unknown(String),
}

fn backslash(line: &str) -> Backslash {
    let mut words = line.split_whitespace();
    match (words.next().unwrap_or(""), words.next()) {
        ("\\?" | "\\h" | "\\help", _) => Backslash::Help,
        ("\\d", None) => Backslash::Tables,
        ("\\d", Some(name)) => Backslash::Describe(name.trim_end_matches(';').to_string()),
        ("\\timing", _) => Backslash::Timing,
        ("\\q", _) => Backslash::Quit,
        (other, _) => Backslash::Unknown(other.to_string()),
    }
}

/// Where the history is kept: `$COLZIP_HISTORY`, else `~/.colzip_history`.
fn history_path() -> Option<PathBuf> {
    std::env::var_os(HISTORY_ENV)
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".colzip_history"))
        })
}

/// Reads statements from the terminal until `\q` or Ctrl-D, running each when a line
/// ends it with a `;`; errors are printed and the shell goes on. Returns the number of
/// statements that failed.
pub async fn repl(ctx: &SessionContext, format: Format, max_rows: Option<usize>) -> Result<usize> {
    let mut editor = Editor::<SqlCompleter, DefaultHistory>::new()
        .map_err(|e| Error::format(format!("cannot start the shell: {e}")))?;
    editor.set_helper(Some(SqlCompleter::of(ctx).await));
    let history = history_path();
    if let Some(path) = &history {
        create_history_file(path);
        let _ = editor.load_history(path);
    }
    let interrupts = interrupts()?;
    let mut failed = 0;
    let mut timing = true;
    let mut statement = BoundedStatement::new();
    loop {
        let prompt = if statement.is_empty() {
            "colzip> "
        } else {
            "     -> "
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                statement.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(Error::format(format!("cannot read the terminal: {e}"))),
        };
        let trimmed = line.trim();
        if statement.is_empty() && trimmed.starts_with('\\') {
            let command = backslash(trimmed);
            // \q is not worth recalling: the next session's first Up would bring it back.
            if !matches!(command, Backslash::Quit) {
                remember(&mut editor, trimmed, history.as_deref());
            }
            let sql = match command {
                Backslash::Quit => break,
                Backslash::Help => {
                    print!("{HELP}");
                    continue;
                }
                Backslash::Timing => {
                    timing = !timing;
                    println!("timing is {}", if timing { "on" } else { "off" });
                    continue;
                }
                Backslash::Unknown(command) => {
                    eprintln!("error: unknown command {command} (\\? lists them)");
                    failed += 1;
                    continue;
                }
                Backslash::Tables => "SELECT table_catalog, table_schema, table_name, table_type \
                     FROM information_schema.tables WHERE table_schema <> 'information_schema' \
                     ORDER BY table_schema, table_name"
                    .to_string(),
                Backslash::Describe(name) => format!("DESCRIBE {name}"),
            };
            failed += usize::from(!run_one(ctx, &sql, format, max_rows, false, &interrupts).await);
            continue;
        }
        if statement.is_empty() && (trimmed == "quit" || trimmed == "exit") {
            break;
        }
        // The editor gives the line without its newline.
        match statement.push_line(&format!("{line}\n")) {
            Pushed::More => {}
            Pushed::TooLarge => {
                eprintln!("error: {}", too_large("a statement"));
                failed += 1;
            }
            Pushed::Ready => {
                let sql = statement.take();
                remember(&mut editor, sql.trim(), history.as_deref());
                failed +=
                    usize::from(!run_one(ctx, &sql, format, max_rows, timing, &interrupts).await);
                // The statement may have made or dropped tables.
                editor.set_helper(Some(SqlCompleter::of(ctx).await));
            }
        }
    }
    if !statement.text().trim().is_empty() {
        failed += usize::from(
            !run_one(ctx, statement.text(), format, max_rows, timing, &interrupts).await,
        );
    }
    Ok(failed)
}

/// Creates the history file, empty and private, where there is none. rustyline appends
/// to an existing file under its lock, but creates a missing one by truncating it before
/// the lock is taken: two shells starting on a new file could lose each other's first
/// entry. An existing file is left as it is.
fn create_history_file(path: &std::path::Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path);
}

/// Adds `entry` to the editor's history and appends it to the history file at once,
/// under the file's lock (rustyline's `append_history` merges with what other shells
/// appended meanwhile; saving would rewrite the file from this shell's memory alone and
/// lose theirs). A shell that is killed keeps what it ran.
fn remember(
    editor: &mut Editor<SqlCompleter, DefaultHistory>,
    entry: &str,
    history: Option<&std::path::Path>,
) {
    let _ = editor.add_history_entry(entry);
    if let Some(path) = history {
        let _ = editor.append_history(path);
    }
}

/// Runs `sql`, printing its results, then (with `timing`) its row count and time; Ctrl-C
/// cancels it and returns to the prompt at once. Whether it succeeded.
async fn run_one(
    ctx: &SessionContext,
    sql: &str,
    format: Format,
    max_rows: Option<usize>,
    timing: bool,
    interrupts: &watch::Receiver<u64>,
) -> bool {
    let started = Instant::now();
    let mut interrupts = interrupts.clone();
    // A Ctrl-C from before this statement does not cancel it.
    interrupts.borrow_and_update();
    let result = tokio::select! {
        result = run_apart(ctx, sql, format, max_rows) => Some(result),
        Ok(()) = interrupts.changed() => None,
    };
    let seconds = started.elapsed().as_secs_f64();
    match result {
        None => {
            eprintln!("query cancelled after {seconds:.3} s");
            false
        }
        Some(Err(error)) => {
            eprintln!("error: {}", error.report());
            false
        }
        Some(Ok(rows)) => {
            if timing {
                println!("{}", timing_line(rows.last().copied().flatten(), seconds));
            }
            let _ = std::io::stdout().flush();
            true
        }
    }
}

/// The count of Ctrl-Cs (SIGINT) seen so far, kept by a thread with a runtime of its own.
/// The statement's operators may keep every worker of the shared runtime busy, and its
/// signal driver runs only on an idle worker: a Ctrl-C waited for there could go unseen
/// for seconds. (At the prompt the terminal is raw, so Ctrl-C is a key, not a signal.)
fn interrupts() -> Result<watch::Receiver<u64>> {
    let (count, interrupts) = watch::channel(0u64);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Registered here, before any statement runs, so that the first Ctrl-C is caught
    // rather than ending the process.
    let mut signals = {
        let _in_it = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?
    };
    std::thread::Builder::new()
        .name("colzip-ctrl-c".into())
        .spawn(move || {
            runtime.block_on(async {
                while signals.recv().await.is_some() {
                    count.send_modify(|n| *n += 1);
                }
            })
        })
        .map_err(|e| Error::format(format!("cannot start the Ctrl-C thread: {e}")))?;
    Ok(interrupts)
}

/// Runs `sql` on a thread of its own (polling it there, its operators' tasks on the
/// runtime's workers), printing to stdout. The shell's task only waits for it, so Ctrl-C
/// is seen even while an operator computes for seconds between two yields, which would
/// starve a `select!` polling both on one thread. Dropping the returned future cancels
/// the statement: its future is dropped at its next yield (DataFusion's operators yield
/// to the runtime regularly, and dropping a plan's stream aborts its spawned tasks).
async fn run_apart(
    ctx: &SessionContext,
    sql: &str,
    format: Format,
    max_rows: Option<usize>,
) -> Result<Vec<Option<usize>>> {
    let (done, result) = tokio::sync::oneshot::channel();
    // Dropped with this future: the statement's thread then stops at its next yield.
    let (_cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::runtime::Handle::current();
    let (ctx, sql) = (ctx.clone(), sql.to_string());
    std::thread::Builder::new()
        .name("colzip-statement".into())
        // Deeply nested statements recurse deeply while planned and polled.
        .stack_size(colzip::limits::SQL_STACK_BYTES)
        .spawn(move || {
            let mut out = std::io::stdout();
            let finished = runtime.block_on(async {
                tokio::select! {
                    result = run_sql_rows(&ctx, &sql, format, max_rows, &mut out) => Some(result),
                    _ = cancelled => None,
                }
            });
            let _ = out.flush();
            if let Some(finished) = finished {
                // The shell may have stopped waiting (cancelled): nothing to tell it then.
                let _ = done.send(finished);
            }
        })
        .map_err(|e| Error::format(format!("cannot start the statement's thread: {e}")))?;
    result
        .await
        .unwrap_or_else(|_| Err(Error::format("the statement stopped without a result")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backslash_commands_parse() {
        assert!(matches!(backslash("\\?"), Backslash::Help));
        assert!(matches!(backslash("\\d"), Backslash::Tables));
        assert!(matches!(backslash("\\d  lineitem;"), Backslash::Describe(n) if n == "lineitem"));
        assert!(matches!(backslash("\\timing"), Backslash::Timing));
        assert!(matches!(backslash("\\q"), Backslash::Quit));
        assert!(matches!(backslash("\\x"), Backslash::Unknown(c) if c == "\\x"));
    }

    /// What `remember` does with the file, from four writers at once: every entry is
    /// kept whole (saving each shell's history from its memory instead tears entries and
    /// loses the other shells').
    #[test]
    fn writers_appending_to_one_history_file_keep_every_entry_whole() {
        use rustyline::history::History;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history");
        let entry =
            |writer: usize, i: usize| format!("SELECT {writer}, {i}, '{}';", "x".repeat(3000));
        create_history_file(&path);
        std::thread::scope(|scope| {
            for writer in 0..4 {
                let path = &path;
                scope.spawn(move || {
                    let mut history = DefaultHistory::new();
                    for i in 0..20 {
                        history.add(&entry(writer, i)).unwrap();
                        history.append(path).unwrap();
                    }
                });
            }
        });
        let mut kept = DefaultHistory::new();
        kept.load(&path).unwrap();
        let kept: Vec<&String> = kept.iter().collect();
        assert_eq!(kept.len(), 4 * 20);
        for writer in 0..4 {
            for i in 0..20 {
                assert!(
                    kept.contains(&&entry(writer, i)),
                    "writer {writer}, entry {i}"
                );
            }
        }
    }
}
