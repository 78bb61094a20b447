//! What `SHOW FUNCTIONS` and `information_schema.routines` say of colzip's functions:
//! one DataFusion [`Documentation`] per function, built once.

use std::sync::OnceLock;

use datafusion::logical_expr::{DocSection, Documentation};

const SECTION: DocSection = DocSection {
    include: true,
    label: "colzip",
    description: Some("Compression of columns with colzip's codecs (lzss, gmatch, bwt, intpack)"),
};

const CODEC: &str = "A string literal: auto, lzss[:s=..,w=..,c=..], gmatch[:raw|framed], bwt[:block=SIZE], intpack[:w=1|2|4|8] or stored.";

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
            SECTION,
            "Compresses each value into a self-describing binary blob (colzip's column container); colzip_decompress gives the value back with its type.",
            "colzip_compress(value, 'codec')",
        )
        .with_argument("value", "A value of any type the column layer compresses.")
        .with_argument("codec", CODEC)
        .with_sql_example("SELECT colzip_decompress(colzip_compress(l_comment, 'bwt')) = l_comment FROM lineitem")
        .build()
    })
}

/// `colzip_decompress(blob [, 'type'])`.
pub(super) fn decompress() -> &'static Documentation {
    static DOC: OnceLock<Documentation> = OnceLock::new();
    built(&DOC, || {
        Documentation::builder(
            SECTION,
            "Decodes a blob made by colzip_compress back into its value, checking its checksums.",
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

/// `colzip_ratio(column, 'codec')`.
pub(super) fn ratio() -> &'static Documentation {
    static DOC: OnceLock<Documentation> = OnceLock::new();
    built(&DOC, || {
        Documentation::builder(
            SECTION,
            "Aggregate: the compression ratio of the group's values compressed as one column, plain bytes (colzip's plain parts: values, offsets, validity) / compressed bytes.",
            "colzip_ratio(column, 'codec')",
        )
        .with_argument("column", "The values to compress.")
        .with_argument("codec", CODEC)
        .with_sql_example("SELECT colzip_ratio(l_comment, 'bwt') FROM lineitem")
        .build()
    })
}

/// `colzip_compressed_size(column, 'codec')`.
pub(super) fn compressed_size() -> &'static Documentation {
    static DOC: OnceLock<Documentation> = OnceLock::new();
    built(&DOC, || {
        Documentation::builder(
            SECTION,
            "Aggregate: the bytes of codec streams the group's values compress to as one column.",
            "colzip_compressed_size(column, 'codec')",
        )
        .with_argument("column", "The values to compress.")
        .with_argument("codec", CODEC)
        .build()
    })
}
