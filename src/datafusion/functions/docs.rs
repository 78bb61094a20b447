//! What `SHOW FUNCTIONS` and `information_schema.routines` say of colzip's functions:
//! one DataFusion [`Documentation`] per function, built once.

use std::sync::{LazyLock, OnceLock};

use datafusion::logical_expr::{DocSection, Documentation};

use crate::codec::Suited;
use crate::codec::registry;

/// The section of colzip's functions, naming the codecs of the registry.
fn section() -> DocSection {
    static DESCRIPTION: LazyLock<String> = LazyLock::new(|| {
        let names: Vec<&str> = registry::codecs()
            .filter(|c| c.suited != Suited::Nothing)
            .map(|c| c.name)
            .collect();
        format!(
            "Compression of columns with colzip's codecs ({})",
            names.join(", ")
        )
    });
    DocSection {
        include: true,
        label: "colzip",
        description: Some(DESCRIPTION.as_str()),
    }
}

/// What a codec argument takes: `auto` or any codec's spec.
fn codec_argument() -> String {
    let forms: Vec<&str> = registry::codecs().map(|c| c.syntax).collect();
    format!("A string literal: auto, {}.", registry::or_list(&forms))
}

fn built(
    cell: &'static OnceLock<Documentation>,
    make: fn() -> Documentation,
) -> &'static Documentation {
    cell.get_or_init(make)
}

/// `colzip_compress(value, 'codec')`.
pub(super) fn compress() -> &'static Documentation {
    static DOC: OnceLock<Documentation> = OnceLock::new();
    built(&DOC, || {
        Documentation::builder(
            section(),
            "Compresses each value into a self-describing binary blob (colzip's column container); colzip_decompress gives the value back with its type.",
            "colzip_compress(value, 'codec')",
        )
        .with_argument("value", "A value of any type the column layer compresses.")
        .with_argument("codec", codec_argument())
        .with_sql_example("SELECT colzip_decompress(colzip_compress(l_comment, 'bwt')) = l_comment FROM lineitem")
        .build()
    })
}

/// `colzip_decompress(blob [, 'type'])`.
pub(super) fn decompress() -> &'static Documentation {
    static DOC: OnceLock<Documentation> = OnceLock::new();
    built(&DOC, || {
        Documentation::builder(
            section(),
            "Decodes a blob made by colzip_compress back into its value, checking its checksums. The result has the value's type, known when a query is planned (from colzip_compress in the same query, or the second argument); listings show it as Null.",
            "colzip_decompress(blob [, 'arrow type'])",
        )
        .with_argument("blob", "Binary made by colzip_compress.")
        .with_argument(
            "arrow type",
            "Optional string literal naming the result type when planning needs it, e.g. 'Int32'.",
        )
        .build()
    })
}

/// What the chunked aggregates measure, in one sentence of their descriptions.
const CHUNKS: &str = "The group's values are cut, in the order they arrive, into chunks of about 4 MiB (counted from the values alone: 4 bytes and the bytes of a string, a fixed-width value's width, one bit of validity a row), each compressed as one column; each partial aggregation (one per input partition) ends its last chunk at its last row. Batch boundaries, the order partial results merge in, executors and GPUs do not change the result; how the input is partitioned can.";

/// `colzip_ratio(column, 'codec')`.
pub(super) fn ratio() -> &'static Documentation {
    static DOC: OnceLock<Documentation> = OnceLock::new();
    built(&DOC, || {
        Documentation::builder(
            section(),
            format!(
                "Aggregate: the compression ratio of the group's values, plain bytes (colzip's plain parts: values, offsets, validity) / compressed bytes, summed over chunks. {CHUNKS} Its partial state is three sums, so it suits a cluster; colzip_ratio_exact compresses the group as one column. colzip_stats' ratio divides Arrow's in-memory bytes (its raw_bytes column) instead, higher for view-typed strings."
            ),
            "colzip_ratio(column, 'codec')",
        )
        .with_argument("column", "The values to compress.")
        .with_argument("codec", codec_argument())
        .with_sql_example("SELECT colzip_ratio(l_comment, 'bwt') FROM lineitem")
        .build()
    })
}

/// `colzip_compressed_size(column, 'codec')`.
pub(super) fn compressed_size() -> &'static Documentation {
    static DOC: OnceLock<Documentation> = OnceLock::new();
    built(&DOC, || {
        Documentation::builder(
            section(),
            format!(
                "Aggregate: the bytes of codec streams the group's values compress to, summed over chunks. {CHUNKS} Its partial state is three sums; colzip_compressed_size_exact compresses the group as one column."
            ),
            "colzip_compressed_size(column, 'codec')",
        )
        .with_argument("column", "The values to compress.")
        .with_argument("codec", codec_argument())
        .build()
    })
}

/// `colzip_ratio_exact(column, 'codec')`.
pub(super) fn ratio_exact() -> &'static Documentation {
    static DOC: OnceLock<Documentation> = OnceLock::new();
    built(&DOC, || {
        Documentation::builder(
            section(),
            "Aggregate: the compression ratio of the group's values compressed as one column, in the order they arrive, plain bytes / compressed bytes (as colzip_ratio counts them). Its partial state is the group's values themselves, so it is meant for one process: on a cluster every value crosses the shuffle; colzip_ratio keeps three sums instead.",
            "colzip_ratio_exact(column, 'codec')",
        )
        .with_argument("column", "The values to compress.")
        .with_argument("codec", codec_argument())
        .with_sql_example("SELECT colzip_ratio_exact(l_comment, 'bwt') FROM lineitem")
        .build()
    })
}

/// `colzip_compressed_size_exact(column, 'codec')`.
pub(super) fn compressed_size_exact() -> &'static Documentation {
    static DOC: OnceLock<Documentation> = OnceLock::new();
    built(&DOC, || {
        Documentation::builder(
            section(),
            "Aggregate: the bytes of codec streams the group's values compress to as one column, in the order they arrive. Its partial state is the group's values themselves, so it is meant for one process: on a cluster every value crosses the shuffle; colzip_compressed_size keeps three sums instead.",
            "colzip_compressed_size_exact(column, 'codec')",
        )
        .with_argument("column", "The values to compress.")
        .with_argument("codec", codec_argument())
        .build()
    })
}
