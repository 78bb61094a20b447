//! A [`CompressedTable`] over a `.czip` archive: the archive's batches become the table's
//! blocks as they are stored, without decompressing or compressing anything, so a query
//! over an archive holds it compressed and decodes only the columns and windows it scans.

use std::path::Path;
use std::sync::Arc;

use super::{Block, CompressOptions, CompressedTable, Partitions};
use crate::archive::ArchiveReader;
use crate::{Error, Result};

impl CompressedTable {
    /// The table of the archive at `path` (any `colzip compress` archive: typed binary,
    /// text lines, Arrow IPC or Parquet sources), its batches spread over `partitions`
    /// (at least 1) in order, contiguous runs of batches per partition. `options` say
    /// where scans decode and how rows inserted later are compressed. The archive is read
    /// whole and checked (CRCs, schema, sizes) as `colzip decompress` checks it; blocks
    /// carry no zone maps (computing them would decode every column), so filters do not
    /// prune blocks.
    ///
    /// ```no_run
    /// use colzip::datafusion::table::{CompressOptions, CompressedTable};
    /// let table = CompressedTable::from_archive("lineitem.parquet.czip".as_ref(), 16, &CompressOptions::default())?;
    /// println!("{} rows held in {} bytes", table.num_rows(), table.compressed_bytes());
    /// # Ok::<(), colzip::Error>(())
    /// ```
    pub fn from_archive(path: &Path, partitions: usize, options: &CompressOptions) -> Result<Self> {
        let named = |e: Error| Error::format(format!("{}: {e}", path.display()));
        let file = std::fs::File::open(path)
            .map_err(|e| Error::format(format!("cannot open {}: {e}", path.display())))?;
        let len = file.metadata().map(|m| m.len()).ok();
        let mut reader =
            ArchiveReader::new(std::io::BufReader::with_capacity(1 << 20, file)).map_err(named)?;
        if let Some(len) = len {
            reader = reader.with_input_len(len);
        }
        let schema = reader.schema();
        let mut blocks = Vec::new();
        let mut plain_bytes = 0;
        while let Some((rows, columns)) = reader.next_compressed().map_err(named)? {
            plain_bytes += columns.iter().map(|c| c.plain_bytes()).sum::<usize>();
            let zones = vec![None; columns.len()];
            blocks.push(Arc::new(Block::new(rows, columns, zones)));
        }
        let per_partition = blocks.len().div_ceil(partitions.max(1)).max(1);
        let spread: Partitions = blocks.chunks(per_partition).map(<[_]>::to_vec).collect();
        Ok(CompressedTable::holding(
            schema,
            spread,
            options,
            plain_bytes,
        ))
    }
}
