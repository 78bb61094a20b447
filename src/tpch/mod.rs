//! The TPC-H column experiment: tables generated in-process with `tpchgen`, every column
//! compressed with colzip's codecs and with CPU baselines, round trips verified.
//!
//! ```no_run
//! use colzip::report::{Format, render};
//! use colzip::tpch::{self, Config, Table};
//!
//! let config = Config { sf: 0.01, tables: vec![Table::Nation], ..Config::default() };
//! let rows = tpch::run(&config, &mut |_| {})?;
//! print!("{}", render(&rows, Format::Table)?);
//! # Ok::<(), colzip::Error>(())
//! ```

mod baselines;
mod experiment;
mod generate;
pub mod queries;
mod report;

pub use baselines::Baseline;
pub use experiment::{
    Config, Contender, Event, Row, arrow_bytes, measure, measure_column, peer_form, run,
};
pub use generate::{
    Table, TableData, check_fits_memory, check_generable, check_scale_factor, estimated_bytes,
    generate, generate_parts, part_count,
};
pub use report::{CodecSummary, summarize};
