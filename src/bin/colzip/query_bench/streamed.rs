//! The stores built without ever holding a whole table, for runs without the `memory`
//! store ([`Config::reference`]): each table is generated a few parts at a time, each
//! part written to a Parquet file of its own (the `parquet` store, and the reference
//! answers) and, when the compressed store is wanted, compressed into it as it comes.
//! Memory then holds the compressed tables and a few parts' rows, so the compressed store
//! can be measured at scale factors whose plain tables would not fit.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;
use datafusion::prelude::ParquetReadOptions;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rayon::prelude::*;

use super::measure::Loaded;
use super::{Config, Event, Store};
use colzip::codec::Placement;
use colzip::datafusion::table::CompressedTable;
use colzip::tpch::{self, Table};
use colzip::{Error, Result};

/// The reference store (`parquet`, the files under `dir`) and, when `config` lists it,
/// the compressed store. Their load times count only their own work (writing the files;
/// compressing), not the generation both share.
pub(super) async fn load(
    config: &Config,
    placement: Placement,
    dir: &Path,
    progress: &(dyn Fn(Event<'_>) + Sync),
) -> Result<(Loaded, Option<Loaded>)> {
    let want_compressed = config.stores.contains(&Store::Compressed);
    let parquet_ctx = colzip::datafusion::session::context_from_env()?;
    let compressed_ctx = colzip::datafusion::session::context_from_env()?;
    let partitions = compressed_ctx.state().config().target_partitions().max(1);
    let options = config.compress_options(placement);
    // Enough parts at once to keep every core generating, few enough that their rows
    // (about 60 MB a part of lineitem) stay a small share of memory.
    let chunk = i32::try_from(2 * rayon::current_num_threads())
        .unwrap_or(32)
        .max(1);
    progress(Event::Loading(Store::Parquet));
    if want_compressed {
        progress(Event::Loading(Store::Compressed));
    }
    let (mut parquet_seconds, mut compress_seconds) = (0.0, 0.0);
    let (mut parquet_bytes, mut compressed_bytes) = (0u64, 0u64);
    for table in Table::ALL {
        progress(Event::Generating(table));
        let table_dir = dir.join(table.name());
        std::fs::create_dir_all(&table_dir).map_err(Error::file("create", &table_dir))?;
        let count = tpch::part_count(table, config.sf);
        let mut compressed: Option<CompressedTable> = None;
        let mut rows = 0;
        let mut first = 1;
        while first <= count {
            let last = first.saturating_add(chunk - 1).min(count);
            let parts = tpch::generate_parts(table, config.sf, first..=last)?;
            rows += parts
                .iter()
                .flatten()
                .map(RecordBatch::num_rows)
                .sum::<usize>();

            let started = Instant::now();
            parquet_bytes += parts
                .par_iter()
                .enumerate()
                .map(|(i, batches)| write_part(&table_dir, first + i as i32, batches))
                .sum::<Result<u64>>()?;
            parquet_seconds += started.elapsed().as_secs_f64();

            if want_compressed {
                let batches: Vec<RecordBatch> = parts.into_iter().flatten().collect();
                let started = Instant::now();
                if compressed.is_none()
                    && let Some(first) = batches.first()
                {
                    compressed = Some(CompressedTable::try_new(
                        first.schema(),
                        vec![Vec::new(); partitions],
                        &options,
                    )?);
                }
                if let Some(table) = &compressed {
                    table.insert_batches(batches)?;
                }
                compress_seconds += started.elapsed().as_secs_f64();
            }
            first = last + 1;
        }
        progress(Event::Generated { table, rows });

        let url = table_dir
            .to_str()
            .ok_or_else(|| Error::format(format!("{} is not UTF-8", table_dir.display())))?;
        // A trailing slash: DataFusion reads every file of the directory.
        parquet_ctx
            .register_parquet(
                table.name(),
                &format!("{url}/"),
                ParquetReadOptions::default(),
            )
            .await
            .map_err(Error::from)?;
        if let Some(table_data) = compressed {
            compressed_bytes += table_data.compressed_bytes() as u64;
            compressed_ctx
                .register_table(table.name(), Arc::new(table_data))
                .map_err(Error::from)?;
        }
    }
    let parquet = Loaded {
        store: Store::Parquet,
        ctx: parquet_ctx,
        bytes_held: parquet_bytes,
        load_seconds: parquet_seconds,
    };
    progress(Event::Loaded {
        store: Store::Parquet,
        bytes_held: parquet_bytes,
        seconds: parquet_seconds,
    });
    let compressed = want_compressed.then(|| {
        progress(Event::Loaded {
            store: Store::Compressed,
            bytes_held: compressed_bytes,
            seconds: compress_seconds,
        });
        Loaded {
            store: Store::Compressed,
            ctx: compressed_ctx,
            bytes_held: compressed_bytes,
            load_seconds: compress_seconds,
        }
    });
    Ok((parquet, compressed))
}

/// Writes the batches of part `part` to `dir/part-NNNNNN.parquet` (SNAPPY, as the
/// `parquet` store's other files); the file's bytes. A part without batches writes
/// nothing.
fn write_part(dir: &Path, part: i32, batches: &[RecordBatch]) -> Result<u64> {
    let Some(first) = batches.first() else {
        return Ok(0);
    };
    let path = dir.join(format!("part-{part:06}.parquet"));
    let file = std::fs::File::create(&path).map_err(Error::file("create", &path))?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer = ArrowWriter::try_new(file, first.schema(), Some(properties))?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.close()?;
    Ok(std::fs::metadata(&path)
        .map_err(Error::file("read the metadata of", &path))?
        .len())
}
