//! How a session holds its tables: plain Arrow batches or every column compressed.

use crate::datafusion::table::CompressOptions;

/// How tables are held: the TPC-H tables of [`register_tables`](super::register_tables),
/// and those made by `CREATE TABLE` in a session set up with
/// [`set_table_kind`](super::set_table_kind).
#[derive(Clone, Debug, Default)]
pub enum TableKind {
    /// Arrow batches in a DataFusion `MemTable`.
    #[default]
    Plain,
    /// Every column compressed, in a
    /// [`CompressedTable`](crate::datafusion::table::CompressedTable).
    Compressed(CompressOptions),
}

impl TableKind {
    /// `plain`, or `compressed (CODEC)`.
    pub fn describe(&self) -> String {
        match self {
            TableKind::Plain => "plain".into(),
            TableKind::Compressed(options) => format!("compressed ({})", options.codec),
        }
    }
}
