//! Tab completion in the terminal shell: the word before the cursor completes to SQL
//! keywords, the session's tables and their columns, and its functions (colzip's too).
//! The names are read from the session when the shell starts and after each statement,
//! so tables made by `CREATE TABLE` complete from the next line on.

use std::collections::BTreeSet;

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

impl Completer for SqlCompleter {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let before = &line[..pos];
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
        let ctx = crate::datafusion::session::context().unwrap();
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
}
