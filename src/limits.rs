//! Bounds on what a user may ask of the machine, sized by the machine: a mistyped count
//! gets a clear error instead of minutes spent spawning threads or gigabytes of buffers.

/// The most worker threads or query partitions: 16 per core, at least 256.
pub fn most_workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(16, |n| n.get());
    (cores * 16).max(256)
}

/// The most SQL text one `colzip sql` command or file may hold: DataFusion's parser and
/// planner take memory and time far beyond the text's size on huge inputs (100 MB of SQL
/// made the parser allocate 5.9 GB).
pub const MOST_SQL_BYTES: usize = 16 << 20;

/// The stack of the thread that parses, plans and runs SQL, and of the runtime's workers:
/// DataFusion's parser, planner and expression evaluation recurse once per level of a
/// nested expression, and a 10,000-term `1+1+…` overflowed the main thread's 8 MiB. The
/// memory is reserved, not committed: only the pages a deep statement touches are used.
pub const SQL_STACK_BYTES: usize = 1 << 30;

/// The deepest expression a SQL statement may nest by default (`a + b + …` and
/// `x OR y OR …` count one level a term): DataFusion plans such chains in time quadratic
/// in their length (its type coercion recomputes the type of the whole chain below each
/// operator: 1,000 terms of `1+1+…` plan in 1.3 s, 2,000 took 5.9 s, 10,000 minutes), so
/// deeper ones are refused with a clear error rather than left to run that long. The
/// session option `colzip.max_expression_depth` changes it.
pub const MOST_EXPRESSION_DEPTH: usize = 1_000;

/// The most nesting a SQL statement may hold by default, summed over its expressions:
/// each expression counts the expressions open around it, so a chain of `n` terms counts
/// about `n²`. DataFusion's planning time grows with this sum (it formats the name of
/// every nested expression), so a statement of many expressions each within
/// [`MOST_EXPRESSION_DEPTH`] is bounded too: one sum at that depth counts about 1,000,000
/// and plans in seconds, and this allows three. The session option `colzip.max_nesting`
/// changes it.
pub const MOST_NESTING: usize = 3_000_000;

/// The most set operations (`UNION`, `INTERSECT`, `EXCEPT`) a SQL statement may hold by
/// default: DataFusion plans a chain of them in time quadratic in its length (its union
/// flattening and source spans walk the whole chain below each one: 1,000 `UNION ALL`s
/// plan in 1.2 s, 2,000 in 5.3 s, 5,000 in 21 s). The session option
/// `colzip.max_set_operations` changes it.
pub const MOST_SET_OPERATIONS: usize = 1_000;
