//! TPC-H tables generated in-process with `tpchgen` (whole, or in parts that can be
//! streamed), the checks of a scale factor against what this machine can hold, and the 22
//! queries' text. The DataFusion TPC-H tables, `colzip tpch`, `colzip bench` and
//! `colzip queries` take their data from here.
//!
//! ```
//! use colzip::tpch::{self, Table};
//!
//! let nation = tpch::generate(Table::Nation, 0.01)?;
//! assert_eq!(nation.rows(), 25);
//! assert!(tpch::queries::query(1).is_some());
//! # Ok::<(), colzip::Error>(())
//! ```

mod generate;
pub mod queries;

pub use generate::{
    Table, TableData, check_fits_memory, check_generable, check_scale_factor, estimated_bytes,
    generate, generate_parts, part_count,
};
