//! TPC-H tables generated in-process with the `tpchgen` crates, in parallel parts.

use std::fmt;
use std::str::FromStr;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::SchemaRef;
use rayon::prelude::*;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

use crate::{Error, Result};

/// The eight TPC-H tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    Customer,
    Lineitem,
    Nation,
    Orders,
    Part,
    Partsupp,
    Region,
    Supplier,
}

impl Table {
    pub const ALL: [Table; 8] = [
        Table::Customer,
        Table::Lineitem,
        Table::Nation,
        Table::Orders,
        Table::Part,
        Table::Partsupp,
        Table::Region,
        Table::Supplier,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Customer => "customer",
            Table::Lineitem => "lineitem",
            Table::Nation => "nation",
            Table::Orders => "orders",
            Table::Part => "part",
            Table::Partsupp => "partsupp",
            Table::Region => "region",
            Table::Supplier => "supplier",
        }
    }

    /// The table a column belongs to, by the prefix TPC-H gives every column name
    /// (`l_comment` is lineitem's, `ps_comment` partsupp's); whether it has such a
    /// column is not checked.
    ///
    /// ```
    /// use colzip::tpch::Table;
    /// assert_eq!(Table::of_column("ps_comment"), Some(Table::Partsupp));
    /// assert_eq!(Table::of_column("p_name"), Some(Table::Part));
    /// assert_eq!(Table::of_column("comment"), None);
    /// ```
    pub fn of_column(name: &str) -> Option<Table> {
        let (prefix, _) = name.split_once('_')?;
        Some(match prefix {
            "c" => Table::Customer,
            "l" => Table::Lineitem,
            "n" => Table::Nation,
            "o" => Table::Orders,
            "p" => Table::Part,
            "ps" => Table::Partsupp,
            "r" => Table::Region,
            "s" => Table::Supplier,
            _ => return None,
        })
    }

    /// The table's columns, as the TPC-H specification defines them (what progress over
    /// a table's columns counts before the table is generated).
    pub fn column_count(self) -> usize {
        match self {
            Table::Customer => 8,
            Table::Lineitem => 16,
            Table::Nation => 4,
            Table::Orders => 9,
            Table::Part => 9,
            Table::Partsupp => 5,
            Table::Region => 3,
            Table::Supplier => 7,
        }
    }

    /// Rows at scale factor 1 (nation and region do not scale).
    fn rows_at_sf1(self) -> f64 {
        match self {
            Table::Customer => 150_000.0,
            Table::Lineitem => 6_000_000.0,
            Table::Nation | Table::Region => 25.0,
            Table::Orders => 1_500_000.0,
            Table::Part => 200_000.0,
            Table::Partsupp => 800_000.0,
            Table::Supplier => 10_000.0,
        }
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Table {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let lower = text.trim().to_ascii_lowercase();
        Table::ALL.into_iter().find(|t| t.name() == lower || (lower == "order" && *t == Table::Orders)).ok_or_else(|| {
            Error::format(format!(
                "unknown TPC-H table '{text}' (expected customer, lineitem, nation, orders, part, partsupp, region or supplier)"
            ))
        })
    }
}

/// Rows per generated batch.
const BATCH_ROWS: usize = 64 * 1024;
/// Rows per generator part: parts are generated on worker threads.
const ROWS_PER_PART: f64 = 250_000.0;

/// A generated table: its schema and one array per column (cheap to clone: the arrays
/// are shared).
#[derive(Clone, Debug)]
pub struct TableData {
    pub table: Table,
    pub schema: SchemaRef,
    pub columns: Vec<ArrayRef>,
}

impl TableData {
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.len())
    }
}

/// Arrow bytes per generated row, averaged over the eight tables (1.78 GB for the
/// 8.66 million rows of SF 1, README), for the memory check.
const BYTES_PER_ROW: f64 = 210.0;

/// The Arrow memory `tables` take at scale factor `sf` (an estimate).
pub fn estimated_bytes(tables: &[Table], sf: f64) -> f64 {
    tables
        .iter()
        .map(|t| {
            let rows = match t {
                Table::Nation | Table::Region => t.rows_at_sf1(),
                _ => t.rows_at_sf1() * sf,
            };
            rows * BYTES_PER_ROW
        })
        .sum()
}

/// Refuses a scale factor that is not a positive number, or at which `tables` would not
/// fit in this machine's memory (where it can be read: `/proc/meminfo`), before anything
/// is generated: allocations then fail with an error, not an abort.
pub fn check_scale_factor(tables: &[Table], sf: f64) -> Result<()> {
    check_positive(sf)?;
    check_fits_memory(tables, sf)?;
    check_generable(tables, sf)
}

/// Refuses a scale factor at which `tables`, held whole, would not fit in this machine's
/// memory (where it can be read).
pub fn check_fits_memory(tables: &[Table], sf: f64) -> Result<()> {
    let needed = estimated_bytes(tables, sf);
    if let Some(memory) = crate::memory::physical_bytes()
        && needed > memory as f64
    {
        return Err(Error::format(format!(
            "TPC-H at scale factor {sf} takes about {:.1} GB of memory, more than this \
             machine's {:.1} GB",
            needed / 1e9,
            memory as f64 / 1e9
        )));
    }
    Ok(())
}

fn check_positive(sf: f64) -> Result<()> {
    if !(sf > 0.0 && sf.is_finite()) {
        return Err(Error::format(format!(
            "scale factor must be positive, got {sf}"
        )));
    }
    Ok(())
}

/// Refuses a scale factor that is not a positive number or that the generators cannot
/// number the parts of; unlike [`check_scale_factor`], for callers that never hold a
/// whole table ([`generate_parts`] a few parts at a time).
pub fn check_generable(tables: &[Table], sf: f64) -> Result<()> {
    check_positive(sf)?;
    // The generators number their parts with an i32.
    if tables
        .iter()
        .any(|&table| table_parts(table, sf) > f64::from(i32::MAX))
    {
        return Err(Error::format(format!("scale factor {sf} is too large")));
    }
    Ok(())
}

/// How many parts [`generate_parts`] cuts `table` into at `sf` (about 250,000 rows each).
/// Call [`check_generable`] first: a scale factor it refuses has no count.
pub fn part_count(table: Table, sf: f64) -> i32 {
    table_parts(table, sf) as i32
}

fn table_parts(table: Table, sf: f64) -> f64 {
    if matches!(table, Table::Nation | Table::Region) {
        1.0
    } else {
        (table.rows_at_sf1() * sf / ROWS_PER_PART).ceil().max(1.0)
    }
}

/// Generates `table` at scale factor `sf`, in parts on the rayon pool.
pub fn generate(table: Table, sf: f64) -> Result<TableData> {
    check_scale_factor(&[table], sf)?;
    let batches: Vec<RecordBatch> = generate_parts(table, sf, 1..=part_count(table, sf))?
        .into_iter()
        .flatten()
        .collect();
    let schema = batches
        .first()
        .map(|b| b.schema())
        .ok_or_else(|| Error::format(format!("{table}: no rows generated")))?;
    let columns = (0..schema.fields().len())
        .into_par_iter()
        .map(|i| {
            let arrays: Vec<&dyn arrow::array::Array> =
                batches.iter().map(|b| b.column(i).as_ref()).collect();
            Ok(arrow::compute::concat(&arrays)?)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(TableData {
        table,
        schema,
        columns,
    })
}

/// The parts `parts` (numbered from 1 to [`part_count`]) of `table` at `sf`, generated in
/// parallel on the rayon pool: each part's batches, in order. Generating a table a few
/// parts at a time holds only those parts' rows, whatever the scale factor; the parts
/// together are exactly [`generate`]'s rows.
///
/// ```
/// use colzip::tpch::{self, Table};
/// let sf = 0.01;
/// let count = tpch::part_count(Table::Orders, sf);
/// let rows: usize = (1..=count)
///     .map(|p| tpch::generate_parts(Table::Orders, sf, p..=p))
///     .map(|parts| parts.map(|parts| parts.iter().flatten().map(|b| b.num_rows()).sum::<usize>()))
///     .sum::<colzip::Result<usize>>()?;
/// assert_eq!(rows, tpch::generate(Table::Orders, sf)?.rows());
/// # Ok::<(), colzip::Error>(())
/// ```
pub fn generate_parts(
    table: Table,
    sf: f64,
    parts: std::ops::RangeInclusive<i32>,
) -> Result<Vec<Vec<RecordBatch>>> {
    check_generable(&[table], sf)?;
    let count = part_count(table, sf);
    if *parts.start() < 1 || *parts.end() > count {
        return Err(Error::format(format!(
            "{table} at scale factor {sf} has parts 1 to {count}, not {}..={}",
            parts.start(),
            parts.end()
        )));
    }
    parts
        .into_par_iter()
        .map(|part| generate_part(table, sf, part, count))
        .collect()
}

fn collect(
    batches: impl Iterator<Item = std::result::Result<RecordBatch, arrow::error::ArrowError>>,
) -> Result<Vec<RecordBatch>> {
    batches.map(|b| b.map_err(Error::from)).collect()
}

fn generate_part(table: Table, sf: f64, part: i32, parts: i32) -> Result<Vec<RecordBatch>> {
    match table {
        Table::Customer => collect(
            CustomerArrow::new(CustomerGenerator::new(sf, part, parts)).with_batch_size(BATCH_ROWS),
        ),
        Table::Lineitem => collect(
            LineItemArrow::new(LineItemGenerator::new(sf, part, parts)).with_batch_size(BATCH_ROWS),
        ),
        Table::Nation => collect(
            NationArrow::new(NationGenerator::new(sf, part, parts)).with_batch_size(BATCH_ROWS),
        ),
        Table::Orders => collect(
            OrderArrow::new(OrderGenerator::new(sf, part, parts)).with_batch_size(BATCH_ROWS),
        ),
        Table::Part => {
            collect(PartArrow::new(PartGenerator::new(sf, part, parts)).with_batch_size(BATCH_ROWS))
        }
        Table::Partsupp => collect(
            PartSuppArrow::new(PartSuppGenerator::new(sf, part, parts)).with_batch_size(BATCH_ROWS),
        ),
        Table::Region => collect(
            RegionArrow::new(RegionGenerator::new(sf, part, parts)).with_batch_size(BATCH_ROWS),
        ),
        Table::Supplier => collect(
            SupplierArrow::new(SupplierGenerator::new(sf, part, parts)).with_batch_size(BATCH_ROWS),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_counts_are_the_generated_tables() {
        for table in Table::ALL {
            let data = generate(table, 0.001).unwrap();
            assert_eq!(table.column_count(), data.columns.len(), "{table}");
        }
    }

    #[test]
    fn parts_out_of_range_are_refused() {
        let count = part_count(Table::Orders, 0.01);
        let error = generate_parts(Table::Orders, 0.01, 0..=1)
            .unwrap_err()
            .to_string();
        assert!(error.contains(&format!("parts 1 to {count}")), "{error}");
        assert!(generate_parts(Table::Orders, 0.01, count..=count + 1).is_err());
        assert!(check_generable(&[Table::Lineitem], 1e12).is_err());
    }
}
