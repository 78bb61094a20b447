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

use super::bounded::{BoundedStatement, Pushed, too_large};
use super::completion::SqlCompleter;
use super::{OutputFormat, run_sql_rows};
use crate::{Error, Result};

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
colzip's functions: SHOW FUNCTIONS LIKE 'colzip%';
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
pub async fn repl(
    ctx: &SessionContext,
    format: OutputFormat,
    max_rows: Option<usize>,
) -> Result<usize> {
    let mut editor = Editor::<SqlCompleter, DefaultHistory>::new()
        .map_err(|e| Error::format(format!("cannot start the shell: {e}")))?;
    editor.set_helper(Some(SqlCompleter::of(ctx).await));
    let history = history_path();
    if let Some(path) = &history {
        // A first session has none yet.
        let _ = editor.load_history(path);
    }
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
            failed += usize::from(!run_one(ctx, &sql, format, max_rows, false).await);
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
                failed += usize::from(!run_one(ctx, &sql, format, max_rows, timing).await);
                // The statement may have made or dropped tables.
                editor.set_helper(Some(SqlCompleter::of(ctx).await));
            }
        }
    }
    if !statement.text().trim().is_empty() {
        failed += usize::from(!run_one(ctx, statement.text(), format, max_rows, timing).await);
    }
    Ok(failed)
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
/// cancels it. Whether it succeeded.
async fn run_one(
    ctx: &SessionContext,
    sql: &str,
    format: OutputFormat,
    max_rows: Option<usize>,
    timing: bool,
) -> bool {
    let started = Instant::now();
    let mut out = std::io::stdout();
    // Dropping the statement's future stops its execution: DataFusion's tasks end with it.
    let result = tokio::select! {
        result = run_sql_rows(ctx, sql, format, max_rows, &mut out) => Some(result),
        _ = tokio::signal::ctrl_c() => None,
    };
    let seconds = started.elapsed().as_secs_f64();
    match result {
        None => {
            eprintln!("cancelled after {seconds:.3} s");
            false
        }
        Some(Err(error)) => {
            eprintln!("error: {}", error.report());
            false
        }
        Some(Ok(rows)) => {
            if timing {
                println!(
                    "{}",
                    super::timing_line(rows.last().copied().flatten(), seconds)
                );
            }
            let _ = out.flush();
            true
        }
    }
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
}
