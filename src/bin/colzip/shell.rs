//! `colzip sql`'s shell: the statements of `-c`, `--file` or standard input run in a
//! session and printed (through the library's
//! [`statements`](colzip::datafusion::session::statements) runner). From a terminal,
//! the line-editing [`repl`](mod@repl); from a pipe, a loop reading lines until each statement's
//! `;` ([`StatementEnd`]), which goes on after errors.

mod bounded;
mod completion;
mod repl;
mod statement_end;

use std::io::{BufRead, Write};

use colzip::datafusion::session::statements::run_sql_timed;
use colzip::reporting::Format;
use colzip::{Error, Result};
use datafusion::prelude::SessionContext;

use bounded::{BoundedStatement, Line, Pushed, read_bounded_line, too_large};
use repl::repl;
use statement_end::StatementEnd;

/// Reads statements from `input` until EOF or `\q`, running each as soon as a line ends
/// it with a `;` (see [`StatementEnd`]: one inside a string, quoted identifier or comment
/// does not count); results go to `out`, errors to `errors` (the loop goes on after them;
/// a broken pipe on `out`, whose reader has gone, ends it and is returned). With `prompt`,
/// a prompt is written to `out` before each line. Returns the number of statements that
/// failed.
pub async fn interactive(
    ctx: &SessionContext,
    format: Format,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    errors: &mut dyn Write,
    prompt: bool,
    timing: bool,
) -> Result<usize> {
    let mut failed = 0;
    let mut statement = BoundedStatement::new();
    let mut line = String::new();
    loop {
        if prompt {
            write!(
                out,
                "{}",
                if statement.is_empty() {
                    "colzip> "
                } else {
                    "     -> "
                }
            )?;
            out.flush()?;
        }
        line.clear();
        match read_bounded_line(input, &mut line)? {
            Line::End => break,
            Line::Read => {}
            Line::TooLong => {
                writeln!(errors, "error: {}", too_large("a line"))?;
                failed += 1;
                statement.clear();
                continue;
            }
        }
        let trimmed = line.trim();
        if statement.is_empty() && (trimmed == "\\q" || trimmed == "quit" || trimmed == "exit") {
            break;
        }
        match statement.push_line(&line) {
            Pushed::More => {}
            Pushed::TooLarge => {
                writeln!(errors, "error: {}", too_large("a statement"))?;
                failed += 1;
            }
            Pushed::Ready => {
                let timings = timing.then_some(&mut *errors as &mut dyn Write);
                let sql = statement.take();
                if let Err(error) = run_sql_timed(ctx, &sql, format, None, out, timings).await {
                    // The reader of the output has gone (`… | head`): the statements
                    // still to come have nowhere to go.
                    if error.is_broken_pipe() {
                        return Err(error);
                    }
                    writeln!(errors, "error: {}", error.report())?;
                    failed += 1;
                }
            }
        }
    }
    // A last statement without its ';' still runs.
    let timings = timing.then_some(&mut *errors as &mut dyn Write);
    if !statement.text().trim().is_empty()
        && let Err(error) = run_sql_timed(ctx, statement.text(), format, None, out, timings).await
    {
        writeln!(errors, "error: {}", error.report())?;
        failed += 1;
    }
    Ok(failed)
}

/// Rows of a table result the terminal shell prints unless told otherwise.
pub const DEFAULT_MAX_ROWS: usize = 40;

/// Where `colzip sql` reads its statements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// SQL text given on the command line.
    Command(String),
    /// A file of SQL statements.
    File(std::path::PathBuf),
    /// Standard input, read line by line (with a prompt when it is a terminal).
    Stdin,
}

/// The SQL text of `path`, refused when over [`colzip::limits::MOST_SQL_BYTES`] (checked
/// before reading it).
fn read_sql_file(path: &std::path::Path) -> Result<String> {
    let cannot = |e: std::io::Error| Error::format(format!("cannot read {}: {e}", path.display()));
    let size = std::fs::metadata(path).map_err(cannot)?.len();
    check_sql_size(size, &path.display().to_string())?;
    std::fs::read_to_string(path).map_err(cannot)
}

/// Refuses SQL text of `bytes` bytes from `source` over [`colzip::limits::MOST_SQL_BYTES`].
fn check_sql_size(bytes: u64, source: &str) -> Result<()> {
    let most = colzip::limits::MOST_SQL_BYTES as u64;
    if bytes > most {
        return Err(Error::format(format!(
            "{source} holds {:.1} MB of SQL, over the {} MB colzip plans at once; split it into smaller files",
            bytes as f64 / 1e6,
            most >> 20
        )));
    }
    Ok(())
}

/// Runs `input` in `ctx` on a new multi-threaded runtime, printing to stdout (tables of at
/// most `max_rows` rows). Text and files stop at their first error, which is returned.
/// From a terminal, the [`repl`](fn@repl) runs (line editing, history, Ctrl-C cancelling a
/// statement). From a piped stdin, errors are printed and reading goes on; failures are
/// then returned as one error so the exit status shows them. With `timing`, each
/// statement's row count and time go to stderr ([`timing_line`](colzip::datafusion::session::statements::timing_line)); the terminal shell
/// shows them anyway (`\timing` turns them off).
pub fn run(
    ctx: &SessionContext,
    input: Input,
    format: Format,
    max_rows: Option<usize>,
    timing: bool,
) -> Result<()> {
    // Deeply nested statements recurse deeply: they run on a thread with a large stack
    // (the main thread's cannot grow), with workers of the same.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("colzip-sql".into())
            .stack_size(colzip::limits::SQL_STACK_BYTES)
            .spawn_scoped(scope, || run_here(ctx, input, format, max_rows, timing))
            .map_err(Error::from)?
            .join()
            .unwrap_or_else(|payload| Err(colzip::panics::error(payload)))
    })
}

/// [`run`] on the calling thread.
fn run_here(
    ctx: &SessionContext,
    input: Input,
    format: Format,
    max_rows: Option<usize>,
    timing: bool,
) -> Result<()> {
    use std::io::IsTerminal;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(colzip::limits::SQL_STACK_BYTES)
        .enable_all()
        .build()?;
    let stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let timings = timing.then_some(&mut stderr as &mut dyn Write);
    runtime.block_on(async {
        match input {
            Input::Command(sql) => {
                check_sql_size(sql.len() as u64, "the command")?;
                run_sql_timed(ctx, &sql, format, max_rows, &mut stdout.lock(), timings)
                    .await
                    .map(drop)
            }
            Input::File(path) => {
                let sql = read_sql_file(&path)?;
                run_sql_timed(ctx, &sql, format, max_rows, &mut stdout.lock(), timings)
                    .await
                    .map(drop)
            }
            // A screenful by default on a terminal (`--maxrows 0`: all).
            Input::Stdin if std::io::stdin().is_terminal() => repl(
                ctx,
                format,
                max_rows.or(Some(DEFAULT_MAX_ROWS)).filter(|&n| n > 0),
            )
            .await
            .map(drop),
            Input::Stdin => {
                let stdin = std::io::stdin();
                let terminal = false;
                let failed = interactive(
                    ctx,
                    format,
                    &mut stdin.lock(),
                    &mut stdout.lock(),
                    &mut std::io::stderr(),
                    terminal,
                    timing,
                )
                .await?;
                if failed > 0 && !terminal {
                    return Err(Error::format(format!("{failed} statement(s) failed")));
                }
                Ok(())
            }
        }
    })
}
