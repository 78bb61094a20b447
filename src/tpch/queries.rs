//! The 22 TPC-H queries as SQL text, each one statement, with the specification's
//! default substitution parameters (the values its validation run uses). Q15's view is a
//! common table expression. Written for DataFusion's SQL dialect: dates as
//! `date '1998-12-01' - interval '90' day`.
//!
//! ```
//! use colzip::tpch::queries;
//! assert!(queries::query(1).unwrap().contains("from lineitem"));
//! assert!(queries::query(15).unwrap().trim_start().contains("with revenue0 as"));
//! assert_eq!(queries::QUERIES.len(), 22);
//! assert!(queries::query(0).is_none() && queries::query(23).is_none());
//! ```

/// The queries, Q1 first.
pub const QUERIES: [&str; 22] = [
    include_str!("queries/q01.sql"),
    include_str!("queries/q02.sql"),
    include_str!("queries/q03.sql"),
    include_str!("queries/q04.sql"),
    include_str!("queries/q05.sql"),
    include_str!("queries/q06.sql"),
    include_str!("queries/q07.sql"),
    include_str!("queries/q08.sql"),
    include_str!("queries/q09.sql"),
    include_str!("queries/q10.sql"),
    include_str!("queries/q11.sql"),
    include_str!("queries/q12.sql"),
    include_str!("queries/q13.sql"),
    include_str!("queries/q14.sql"),
    include_str!("queries/q15.sql"),
    include_str!("queries/q16.sql"),
    include_str!("queries/q17.sql"),
    include_str!("queries/q18.sql"),
    include_str!("queries/q19.sql"),
    include_str!("queries/q20.sql"),
    include_str!("queries/q21.sql"),
    include_str!("queries/q22.sql"),
];

/// Query `n` (1 to 22), or `None`.
pub fn query(n: usize) -> Option<&'static str> {
    n.checked_sub(1).and_then(|i| QUERIES.get(i)).copied()
}
