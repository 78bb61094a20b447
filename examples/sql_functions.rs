//! colzip's SQL functions over a TPC-H table generated in-process:
//! `cargo run --release --example sql_functions [SF]` (default SF 0.01).
//!
//! Ratios per codec and per group, the fields of `colzip tpch` for every column of a
//! table, and per-value compression that round-trips.

use colzip::datafusion::session::{
    TableKind, TpchSession,
    statements::{self, Format},
};

#[tokio::main]
async fn main() -> colzip::Result<()> {
    let sf = std::env::args()
        .nth(1)
        .map(|s| s.parse::<f64>())
        .transpose()
        .map_err(|e| colzip::Error::format(format!("SF must be a number: {e}")))?
        .unwrap_or(0.01);
    let session = TpchSession::new(sf, TableKind::Plain)?;
    let ctx = session.context();
    for sql in [
        // One ratio per codec on the same column.
        "SELECT colzip_ratio(l_comment, 'bwt') AS bwt, colzip_ratio(l_comment, 'gmatch') AS gmatch, \
         colzip_ratio(l_comment, 'lzss') AS lzss FROM lineitem",
        // Per group: the column layer compresses each group's values.
        "SELECT l_shipmode, count(*) AS n, colzip_compressed_size(l_shipdate, 'lzss') AS lzss_bytes \
         FROM lineitem GROUP BY l_shipmode ORDER BY l_shipmode",
        // Every column of a table with two codecs (the fields of `colzip tpch --format json`).
        "SELECT \"column\", codec, raw_bytes, compressed_bytes, round(ratio, 2) AS ratio \
         FROM colzip_stats('orders', 'gmatch,bwt') ORDER BY \"column\", codec",
        // Per value: a blob that decompresses to the original value.
        "SELECT count(*) AS equal_after_round_trip FROM customer \
         WHERE colzip_decompress(colzip_compress(c_comment, 'bwt')) = c_comment",
    ] {
        println!("{sql}");
        let batches = ctx
            .sql(sql)
            .await
            .map_err(|e| colzip::Error::format(e.to_string()))?
            .collect()
            .await
            .map_err(|e| colzip::Error::format(e.to_string()))?;
        let schema = batches
            .first()
            .map(|b| b.schema())
            .ok_or_else(|| colzip::Error::format("no result"))?;
        println!("{}", statements::render(&schema, &batches, Format::Table)?);
    }
    Ok(())
}
