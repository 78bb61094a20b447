//! Compress a TPC-H column with each codec and print the ratios:
//! `cargo run --release --example compress_column`.

use colzip::column::{self, CodecChoice, CompressedColumn};
use colzip::tpch::{self, Table};

fn main() -> colzip::Result<()> {
    let orders = tpch::generate(Table::Orders, 0.05)?;
    for name in ["o_orderdate", "o_comment"] {
        let array = &orders.columns[orders.schema.index_of(name)?];
        for codec in ["auto", "lzss", "gmatch", "bwt"] {
            let choice: CodecChoice = codec.parse()?;
            let compressed = column::compress(array.as_ref(), &choice)?;
            let bytes = compressed.to_bytes()?;
            // Containers are self-checking: parse and decompress to the same array.
            let back = column::decompress(&CompressedColumn::from_bytes(&bytes)?)?;
            assert_eq!(&back, array);
            println!(
                "{name:<12} {codec:<7} {:>10} plain bytes -> {:>9} bytes (ratio {:.2})",
                compressed.plain_bytes(),
                bytes.len(),
                compressed.plain_bytes() as f64 / bytes.len() as f64
            );
        }
    }
    Ok(())
}
