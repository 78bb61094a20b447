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

/// The deepest expression a SQL statement may nest (`a + b + …` and `x OR y OR …` count
/// one level a term): DataFusion plans such chains in time quadratic in their length (a
/// 2,000-term sum took 5.9 s to plan, 10,000 terms minutes), so deeper ones are refused
/// with a clear error rather than left to run that long.
pub const MOST_EXPRESSION_DEPTH: usize = 1_000;
