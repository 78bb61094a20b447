//! Tab completion in the terminal shell: the word before the cursor completes to SQL
//! keywords, the session's tables and their columns, and its functions (colzip's too);
//! inside a string literal (`'data/li`) it completes file paths instead, as the paths of
//! `CREATE EXTERNAL TABLE … LOCATION`, `COPY … TO` and `SELECT … FROM 'file'` are typed.
//! The names are read from the session when the shell starts and after each statement,
//! so tables made by `CREATE TABLE` complete from the next line on.

use std::collections::BTreeSet;
use std::path::Path;

use datafusion::prelude::SessionContext;
use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

/// Keywords offered for completion (upper case; typed lower case, they complete lower).
const KEYWORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "ORDER",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "INNER",
    "LEFT",
    "RIGHT",
    "FULL",
    "OUTER",
    "CROSS",
    "ON",
    "USING",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IN",
    "EXISTS",
    "BETWEEN",
    "LIKE",
    "ILIKE",
    "IS",
    "NULL",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "DISTINCT",
    "UNION",
    "ALL",
    "INTERSECT",
    "EXCEPT",
    "WITH",
    "ASC",
    "DESC",
    "CREATE",
    "EXTERNAL",
    "TABLE",
    "VIEW",
    "DROP",
    "INSERT",
    "INTO",
    "VALUES",
    "COPY",
    "TO",
    "STORED",
    "LOCATION",
    "OPTIONS",
    "PARQUET",
    "COLZIP_PARQUET",
    "CSV",
    "JSON",
    "EXPLAIN",
    "ANALYZE",
    "DESCRIBE",
    "SHOW",
    "TABLES",
    "FUNCTIONS",
    "COLUMNS",
    "CAST",
    "INTERVAL",
    "DATE",
    "TIMESTAMP",
    "TRUE",
    "FALSE",
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
];

/// The names the shell completes to.
#[derive(Default)]
pub(super) struct SqlCompleter {
    /// Table, column and function names, as the session spells them.
    names: BTreeSet<String>,
}

impl SqlCompleter {
    /// The names of `ctx`: its tables (every catalog and schema), their columns and its
    /// functions.
    pub(super) async fn of(ctx: &SessionContext) -> Self {
        let mut names = BTreeSet::new();
        let state = ctx.state();
        names.extend(state.scalar_functions().keys().cloned());
        names.extend(state.aggregate_functions().keys().cloned());
        names.extend(state.window_functions().keys().cloned());
        names.extend(state.table_functions().keys().cloned());
        for catalog_name in ctx.catalog_names() {
            let Some(catalog) = ctx.catalog(&catalog_name) else {
                continue;
            };
            for schema_name in catalog.schema_names() {
                if schema_name == "information_schema" {
                    continue;
                }
                let Some(schema) = catalog.schema(&schema_name) else {
                    continue;
                };
                for table in schema.table_names() {
                    if let Ok(Some(provider)) = schema.table(&table).await {
                        names.extend(provider.schema().fields().iter().map(|f| f.name().clone()));
                    }
                    names.insert(table);
                }
            }
        }
        SqlCompleter { names }
    }

    /// The words `prefix` completes to: keywords in the prefix's case, then names
    /// (compared without case), sorted and without repeats.
    pub(super) fn candidates(&self, prefix: &str) -> Vec<String> {
        if prefix.is_empty() {
            return Vec::new();
        }
        let lower = prefix.to_ascii_lowercase();
        let lower_case = prefix.chars().all(|c| !c.is_ascii_uppercase());
        let mut out: BTreeSet<String> = KEYWORDS
            .iter()
            .filter(|k| k.to_ascii_lowercase().starts_with(&lower))
            .map(|k| {
                if lower_case {
                    k.to_ascii_lowercase()
                } else {
                    k.to_string()
                }
            })
            .collect();
        out.extend(
            self.names
                .iter()
                .filter(|n| n.to_ascii_lowercase().starts_with(&lower))
                .cloned(),
        );
        out.into_iter().collect()
    }
}

/// Directory entries read at most per completion: a Tab in a huge directory answers with
/// what the first ones offer instead of stalling the prompt.
const MOST_ENTRIES: usize = 10_000;

/// Where the string literal that `before` ends inside begins (the byte after its opening
/// quote), if it ends inside one. SQL writes a quote inside a literal as two: a quote
/// right after the one that closed a literal reopens that same literal.
fn open_literal(before: &str) -> Option<usize> {
    let mut open: Option<usize> = None;
    let mut closed: Option<(usize, usize)> = None;
    for (i, c) in before.char_indices() {
        if c != '\'' {
            continue;
        }
        match open {
            Some(start) => {
                open = None;
                closed = Some((i, start));
            }
            None => {
                open = Some(match closed {
                    Some((at, start)) if at + 1 == i => start,
                    _ => i + 1,
                });
            }
        }
    }
    open
}

/// The completions of `typed`, a path as typed so far inside a literal (a quote doubled):
/// the names in its directory (the working directory for a bare name) that start with
/// its last component, directories with a `/` after them, sorted, each written as the
/// literal needs; hidden names only once a `.` is typed. Also where the last component
/// begins in `typed`, which the completions replace.
pub(super) fn path_candidates(typed: &str) -> (usize, Vec<String>) {
    let cut = typed.rfind('/').map_or(0, |i| i + 1);
    let (dir, prefix) = typed.split_at(cut);
    let (dir, prefix) = (dir.replace("''", "'"), prefix.replace("''", "'"));
    let dir = if dir.is_empty() {
        Path::new(".")
    } else {
        Path::new(&dir)
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (cut, Vec::new());
    };
    let mut out: Vec<String> = entries
        .take(MOST_ENTRIES)
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            if !name.starts_with(&prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            let name = name.replace('\'', "''");
            // Through links: a link to a directory completes as one.
            Some(if entry.path().is_dir() {
                format!("{name}/")
            } else {
                name
            })
        })
        .collect();
    out.sort();
    (cut, out)
}

impl Completer for SqlCompleter {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let before = &line[..pos];
        if let Some(literal) = open_literal(before) {
            let (cut, paths) = path_candidates(&before[literal..]);
            return Ok((literal + cut, paths));
        }
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| {
                i + before[i..].chars().next().map_or(1, char::len_utf8)
            });
        Ok((start, self.candidates(&before[start..])))
    }
}

impl Hinter for SqlCompleter {
    type Hint = String;
}
impl Highlighter for SqlCompleter {}
impl Validator for SqlCompleter {}
impl Helper for SqlCompleter {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn words_complete_to_keywords_tables_columns_and_functions() {
        let ctx = colzip::datafusion::session::context().unwrap();
        ctx.sql("CREATE TABLE lineitem (l_orderkey INT, l_comment VARCHAR)")
            .await
            .unwrap();
        let completer = SqlCompleter::of(&ctx).await;
        assert_eq!(completer.candidates("linei"), ["lineitem"]);
        assert_eq!(completer.candidates("l_c"), ["l_comment"]);
        assert_eq!(completer.candidates("SEL"), ["SELECT"]);
        assert_eq!(completer.candidates("sel"), ["select"]);
        assert!(
            completer
                .candidates("colzip_ra")
                .contains(&"colzip_ratio".to_string())
        );
        assert!(completer.candidates("").is_empty());
    }

    #[test]
    fn inside_a_string_literal_paths_complete() {
        assert_eq!(open_literal("SELECT * FROM 'da"), Some(15));
        assert_eq!(open_literal("SELECT 'it''s"), Some(8));
        assert_eq!(open_literal("SELECT 'it''"), Some(8));
        assert_eq!(open_literal("SELECT 'it'''"), None);
        assert_eq!(open_literal("SELECT 'a', 'b"), Some(13));
        assert_eq!(open_literal("SELECT 'a' FROM t"), None);
        assert_eq!(open_literal("SELECT dat"), None);

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data.parquet"), b"").unwrap();
        std::fs::write(dir.path().join("other.csv"), b"").unwrap();
        std::fs::write(dir.path().join(".hidden"), b"").unwrap();
        std::fs::write(dir.path().join("data/lineitem.parquet"), b"").unwrap();
        let base = format!("{}/", dir.path().display());
        let (cut, found) = path_candidates(&format!("{base}da"));
        assert_eq!(cut, base.len());
        assert_eq!(found, ["data.parquet", "data/"]);
        assert_eq!(
            path_candidates(&format!("{base}data/li")).1,
            ["lineitem.parquet"]
        );
        assert_eq!(
            path_candidates(&base).1,
            ["data.parquet", "data/", "other.csv"]
        );
        assert_eq!(path_candidates(&format!("{base}.h")).1, [".hidden"]);
        std::fs::write(dir.path().join("it's.csv"), b"").unwrap();
        assert_eq!(path_candidates(&format!("{base}it''")).1, ["it''s.csv"]);
        assert!(path_candidates(&format!("{base}missing/x")).1.is_empty());

        // Through the completer: the candidates replace the path's last component, and a
        // keyword-looking word in a literal is a path, not a keyword.
        let completer = SqlCompleter::default();
        let history = rustyline::history::DefaultHistory::new();
        let context = Context::new(&history);
        let line = format!("SELECT * FROM '{base}oth");
        let (start, found) = completer.complete(&line, line.len(), &context).unwrap();
        assert_eq!(
            (start, found),
            (line.len() - 3, vec!["other.csv".to_string()])
        );
        let (_, found) = completer.complete("SELECT 'dat", 11, &context).unwrap();
        assert!(!found.contains(&"date".to_string()), "{found:?}");
    }
}
