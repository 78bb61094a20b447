//! The size bound on SQL read line by line, shared by the piped reader and the terminal
//! shell: a line or a statement over [`colzip::limits::MOST_SQL_BYTES`] is skipped with one
//! error, and reading goes on after it, without ever holding the whole of it.

use std::io::BufRead;

use super::StatementEnd;
use colzip::{Error, Result};

/// What [`read_bounded_line`] read.
pub(super) enum Line {
    /// A line (with its newline, when it had one).
    Read,
    /// A line longer than [`colzip::limits::MOST_SQL_BYTES`], skipped to its end.
    TooLong,
    /// The end of the input.
    End,
}

/// Reads a line of `input` into `line`, holding at most
/// [`colzip::limits::MOST_SQL_BYTES`] of it: a longer line is skipped, never held whole.
pub(super) fn read_bounded_line(input: &mut dyn BufRead, line: &mut String) -> Result<Line> {
    let most = colzip::limits::MOST_SQL_BYTES;
    let mut bytes = Vec::new();
    let read = <&mut dyn BufRead as std::io::Read>::take(&mut *input, most as u64 + 1)
        .read_until(b'\n', &mut bytes)?;
    if read == 0 {
        return Ok(Line::End);
    }
    if bytes.len() > most {
        input.skip_until(b'\n')?;
        return Ok(Line::TooLong);
    }
    line.push_str(
        std::str::from_utf8(&bytes)
            .map_err(|e| Error::format(format!("SQL input is not UTF-8: {e}")))?,
    );
    Ok(Line::Read)
}

/// The error for SQL text over [`colzip::limits::MOST_SQL_BYTES`] read line by line;
/// `what` is "a line" or "a statement".
pub(super) fn too_large(what: &str) -> String {
    format!(
        "{what} of over {} MB of SQL, more than colzip plans at once; it was skipped (split it into smaller statements)",
        colzip::limits::MOST_SQL_BYTES >> 20
    )
}

/// What [`BoundedStatement::push_line`] made of a line.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Pushed {
    /// The statement goes on past this line.
    More,
    /// The line ended the statement: [`BoundedStatement::take`] gives it.
    Ready,
    /// The statement went over the limit with this line: it is dropped, and the lines up
    /// to its end are read only to find that end.
    TooLarge,
}

/// The statement being read line by line, at most [`colzip::limits::MOST_SQL_BYTES`] long.
#[derive(Debug, Default)]
pub(super) struct BoundedStatement {
    text: String,
    end: StatementEnd,
    /// The statement went over the limit: the rest of it is read to find its end, and
    /// dropped.
    dropping: bool,
}

impl BoundedStatement {
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// Whether no statement text is held (the next line starts a statement, as far as
    /// the prompt and the shell's own commands are concerned).
    pub(super) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The text held so far.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// Adds `line`, with its newline when it had one.
    pub(super) fn push_line(&mut self, line: &str) -> Pushed {
        self.end.push(line);
        let mut pushed = Pushed::More;
        if !self.dropping && self.text.len() + line.len() > colzip::limits::MOST_SQL_BYTES {
            self.text = String::new();
            self.dropping = true;
            pushed = Pushed::TooLarge;
        }
        if self.dropping {
            if self.end.at_end() {
                (self.end, self.dropping) = (StatementEnd::new(), false);
            }
            return pushed;
        }
        self.text.push_str(line);
        if self.end.at_end() {
            Pushed::Ready
        } else {
            Pushed::More
        }
    }

    /// The statement held, leaving none.
    pub(super) fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.clear();
        text
    }

    /// Forgets what was read, including a statement being dropped.
    pub(super) fn clear(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_is_ready_at_its_semicolon() {
        let mut statement = BoundedStatement::new();
        assert_eq!(statement.push_line("SELECT\n"), Pushed::More);
        assert_eq!(statement.push_line("1;\n"), Pushed::Ready);
        assert_eq!(statement.take(), "SELECT\n1;\n");
        assert!(statement.is_empty());
    }

    #[test]
    fn an_oversized_statement_is_dropped_to_its_end() {
        let most = colzip::limits::MOST_SQL_BYTES;
        let mut statement = BoundedStatement::new();
        let half = format!("SELECT '{}'\n", "x".repeat(most / 2));
        assert_eq!(statement.push_line(&half), Pushed::More);
        assert_eq!(statement.push_line(&half), Pushed::TooLarge);
        assert!(statement.is_empty());
        assert_eq!(statement.push_line("more\n"), Pushed::More);
        assert_eq!(statement.push_line(";\n"), Pushed::More);
        // The next statement is read as usual.
        assert_eq!(statement.push_line("SELECT 2;\n"), Pushed::Ready);
        assert_eq!(statement.take(), "SELECT 2;\n");
    }
}
