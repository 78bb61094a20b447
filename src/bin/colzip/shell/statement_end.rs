//! Where a statement typed line by line ends: at a `;` that is SQL, not one inside a
//! string literal, a quoted identifier or a comment.

/// What the text seen so far is in the middle of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum Context {
    #[default]
    Code,
    /// `'…'`; a doubled `''` inside is a quote, which leaving and entering again gives.
    SingleQuoted,
    /// `"…"`, an identifier; `""` works as `''` does.
    DoubleQuoted,
    /// `--` up to the end of the line.
    LineComment,
    /// `/* … */`.
    BlockComment,
}

/// Reads the text of statements as it comes (line by line) and tells whether it ends with
/// a statement's `;`: the last thing that is SQL code is a `;`, and no string, quoted
/// identifier or block comment is open. A comment after the `;` does not matter.
#[derive(Clone, Debug, Default)]
pub struct StatementEnd {
    context: Context,
    /// The last character of code, outside quotes and comments, ignoring whitespace.
    last_code: Option<char>,
    /// The one before it: what `last_code` was when a `-` or `/` turns out to open a
    /// comment.
    earlier_code: Option<char>,
    /// The previous character, for the two-character `--`, `/*` and `*/`.
    previous: Option<char>,
}

impl StatementEnd {
    /// Nothing read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads more text.
    pub fn push(&mut self, text: &str) {
        for c in text.chars() {
            self.step(c);
        }
    }

    /// Whether the text read so far ends a statement.
    pub fn at_end(&self) -> bool {
        matches!(self.context, Context::Code | Context::LineComment) && self.last_code == Some(';')
    }

    fn step(&mut self, c: char) {
        let previous = self.previous.replace(c);
        match self.context {
            Context::Code => match c {
                '\'' => self.enter(Context::SingleQuoted, c),
                '"' => self.enter(Context::DoubleQuoted, c),
                '-' if previous == Some('-') => self.open_comment(Context::LineComment),
                '*' if previous == Some('/') => self.open_comment(Context::BlockComment),
                c if !c.is_whitespace() => self.code(c),
                _ => {}
            },
            Context::SingleQuoted if c == '\'' => self.context = Context::Code,
            Context::DoubleQuoted if c == '"' => self.context = Context::Code,
            Context::LineComment if c == '\n' => self.context = Context::Code,
            Context::BlockComment if c == '/' && previous == Some('*') => {
                self.context = Context::Code;
                // `*/` then `*` must not look like `/*` again.
                self.previous = None;
            }
            _ => {}
        }
    }

    fn code(&mut self, c: char) {
        self.earlier_code = self.last_code.replace(c);
    }

    /// Opens a quote: its text is code, so the statement no longer ends here.
    fn enter(&mut self, context: Context, quote: char) {
        self.context = context;
        self.code(quote);
    }

    /// The `-` or `/` just read as code opens a comment: it was no code after all.
    fn open_comment(&mut self, context: Context) {
        self.context = context;
        self.last_code = self.earlier_code;
        // `/*/` must not close the comment it opens.
        self.previous = None;
    }
}

#[cfg(test)]
mod tests {
    use super::StatementEnd;

    /// Feeds `lines` one by one and says after which ones a statement ended.
    fn ends(lines: &[&str]) -> Vec<bool> {
        let mut end = StatementEnd::new();
        lines
            .iter()
            .map(|line| {
                end.push(line);
                end.push("\n");
                end.at_end()
            })
            .collect()
    }

    #[test]
    fn a_semicolon_of_code_ends_a_statement() {
        assert_eq!(ends(&["select 1;"]), [true]);
        assert_eq!(ends(&["select 1", "  + 1 ;  "]), [false, true]);
        assert_eq!(ends(&["select 1; select 2"]), [false]);
        assert_eq!(ends(&["select 1; -- done"]), [true]);
        assert_eq!(ends(&["select 1; /* done */"]), [true]);
        assert_eq!(ends(&[""]), [false]);
    }

    #[test]
    fn semicolons_in_strings_identifiers_and_comments_do_not() {
        assert_eq!(
            ends(&["select 'a multi-line;", "string;", "' as s;"]),
            [false, false, true]
        );
        // '' is a quote inside a string, not its end.
        assert_eq!(ends(&["select 'it''s;", "' as s;"]), [false, true]);
        assert_eq!(ends(&["select 'it''s' as s;"]), [true]);
        assert_eq!(ends(&["select 1 as \"a;", "b\";"]), [false, true]);
        assert_eq!(
            ends(&["select 1 as \"say \"\"hi\"\";", "\";"]),
            [false, true]
        );
        assert_eq!(ends(&["select 1 -- not yet;", "as a;"]), [false, true]);
        assert_eq!(ends(&["select 1 /* not;", "yet; */ as a;"]), [false, true]);
        // A quote inside a comment opens nothing, and '--' inside a string is no comment.
        assert_eq!(ends(&["select 1 -- don't", "as a;"]), [false, true]);
        assert_eq!(ends(&["select '--' as a;"]), [true]);
        // Subtraction is not a comment; `*/*` closes a comment and opens none, `/*/` opens
        // one and closes none.
        assert_eq!(ends(&["select 3 - -1;"]), [true]);
        assert_eq!(ends(&["select 2 /* x */*3;"]), [true]);
        assert_eq!(ends(&["select 2 /*/ x;", "*/ as a;"]), [false, true]);
    }
}
