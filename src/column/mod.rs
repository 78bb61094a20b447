//! Typed Arrow columns <-> compressed columns.
//!
//! An array is split into plain parts ([`plain`]): validity bitmap, fixed-width values,
//! lengths and bytes of variable-width values, a dictionary's keys and values; nested
//! arrays (lists, list views, fixed-size lists, structs, maps) keep their validity and
//! list lengths as parts and their children as child nodes, split the same way, as do
//! unions (type ids and dense offsets as parts) and run-end encoded arrays (run ends as
//! a part, the values as a child). Each part
//! is compressed on its own with the chosen codec (or the one [`CodecChoice::Auto`]
//! judges best on a sample) and stored raw when that would not shrink it. The result,
//! a [`CompressedColumn`], serializes to a self-checking container
//! ([`CompressedColumn::to_bytes`]) and decompresses to an array equal to the input:
//! same data type, nulls, values and field metadata.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{Array, ArrayRef, Int32Array, StringArray};
//! use colzip::column::{self, CodecChoice};
//!
//! let prices: ArrayRef = Arc::new(Int32Array::from(vec![Some(10), None, Some(10), Some(12)]));
//! let compressed = column::compress(&prices, &"lzss:s=4".parse::<CodecChoice>().unwrap()).unwrap();
//! let bytes = compressed.to_bytes().unwrap();
//! let back = column::decompress(&column::CompressedColumn::from_bytes(&bytes).unwrap()).unwrap();
//! assert_eq!(&back, &prices);
//!
//! let names: ArrayRef = Arc::new(StringArray::from(vec!["ann", "bob", "ann"]));
//! let compressed = column::compress(&names, &CodecChoice::Auto).unwrap();
//! assert_eq!(&column::decompress(&compressed).unwrap(), &names);
//! ```
//!
//! The functions without a suffix run the codecs on the CPU. Their `_on` variants take a
//! [`Placement`] (a [`Backend`](crate::gpu::Backend) resolved once). Every part of a column
//! — and with [`compress_columns_on`] / [`decompress_columns_on`], of every column of a
//! record batch — goes through the batched codec interface in one call per codec, which
//! the placement runs on the GPU or the CPU's cores from the call's total size. The
//! container is the same whichever ran, and either side decodes it.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{ArrayRef, Int64Array};
//! use colzip::codec::Placement;
//! use colzip::column::{self, CodecChoice};
//! use colzip::gpu::Backend;
//!
//! // Auto: batches of 1 MiB or more on the GPU when there is one, the rest on the CPU.
//! let placement = Placement::new(Backend::Auto)?;
//! let keys: ArrayRef = Arc::new(Int64Array::from_iter_values((0..200_000).map(|i| i / 8)));
//! let lzss: CodecChoice = "lzss".parse()?;
//! let compressed = column::compress_on(&keys, &lzss, placement)?;
//! assert_eq!(compressed, column::compress(&keys, &lzss)?); // the same bytes as the CPU
//! assert_eq!(&column::decompress_on(&compressed, placement)?, &keys);
//! # Ok::<(), colzip::Error>(())
//! ```

mod auto;
mod bytes;
mod checksum;
mod container;
mod layout;
mod nested;
mod parts;
pub mod plain;
mod rows;
mod run_end;
pub mod select;
mod types;
mod union;

use std::fmt;
use std::str::FromStr;

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::{DataType, Field};
use rayon::prelude::*;

use crate::codec::{CodecError, CodecId, CodecSpec, Placement};
use crate::{Error, Result};
pub use auto::AutoCodecs;
pub(crate) use bytes::Reader;
pub use checksum::part_checksum;
pub use container::{MAGIC, VERSION};
pub use plain::{PartRole, PlainNode, PlainPart};
pub use rows::decode_rows;

/// Which codec compresses a column's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CodecChoice {
    /// Per part, the best of the candidates on a sample (see the `auto` module).
    #[default]
    Auto,
    /// `auto` limited to some codecs (`auto:among=lzss+gmatch+bwt`).
    AutoAmong(AutoCodecs),
    /// This codec for every part (lzss picks each part's symbol width unless given).
    Spec(CodecSpec),
}

impl FromStr for CodecChoice {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("auto") {
            Ok(CodecChoice::Auto)
        } else if let Some(options) = text
            .get(..5)
            .filter(|head| head.eq_ignore_ascii_case("auto:"))
            .map(|_| &text[5..])
        {
            let fail = |reason: String| Error::Codec(CodecError::spec(text, reason));
            let (key, list) = options
                .split_once('=')
                .ok_or_else(|| fail("auto takes one option, among=CODEC+CODEC...".into()))?;
            if !key.trim().eq_ignore_ascii_case("among") {
                return Err(fail(format!(
                    "auto takes one option, among=CODEC+CODEC..., got '{}'",
                    key.trim()
                )));
            }
            let among = AutoCodecs::parse(list).map_err(fail)?;
            Ok(if among == AutoCodecs::ALL {
                CodecChoice::Auto
            } else {
                CodecChoice::AutoAmong(among)
            })
        } else {
            // Where `auto` is accepted, the error names it among the choices.
            text.parse().map(CodecChoice::Spec).map_err(|e| match e {
                CodecError::Spec { spec, reason } => Error::Codec(CodecError::Spec {
                    spec,
                    reason: reason.replace("(expected lzss,", "(expected auto, lzss,"),
                }),
                other => Error::Codec(other),
            })
        }
    }
}

impl CodecChoice {
    /// The codec `part` is compressed with: the spec itself, or under `Auto` the best
    /// candidate on a sample of the part (a part that does not shrink is then stored).
    pub fn spec_for(&self, part: &PlainPart) -> CodecSpec {
        match self {
            CodecChoice::Auto => auto::choose(part, AutoCodecs::ALL),
            CodecChoice::AutoAmong(among) => auto::choose(part, *among),
            CodecChoice::Spec(spec) => *spec,
        }
    }
}

impl fmt::Display for CodecChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecChoice::Auto => write!(f, "auto"),
            CodecChoice::AutoAmong(among) => write!(f, "auto:among={among}"),
            CodecChoice::Spec(spec) => spec.fmt(f),
        }
    }
}

/// One compressed part of a column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressedPart {
    pub role: PartRole,
    /// Bytes per element of the raw part.
    pub width: u32,
    pub codec: CodecId,
    /// Length of the raw part.
    pub raw_len: usize,
    /// [`part_checksum`] of the raw part.
    pub checksum: u64,
    /// The codec's stream (a slice of the container it was read from, when read).
    pub bytes: arrow::buffer::Buffer,
}

/// A compressed array (or a dictionary's values, as a child).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressedNode {
    pub rows: usize,
    pub null_count: usize,
    pub parts: Vec<CompressedPart>,
    pub children: Vec<CompressedNode>,
}

impl CompressedNode {
    /// Every part, depth first.
    pub fn all_parts(&self) -> Vec<&CompressedPart> {
        let mut parts: Vec<&CompressedPart> = self.parts.iter().collect();
        for child in &self.children {
            parts.extend(child.all_parts());
        }
        parts
    }
}

/// A compressed Arrow array with its field (name, type, nullability, metadata).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressedColumn {
    field: Field,
    root: CompressedNode,
}

impl CompressedColumn {
    /// The field the array was compressed with.
    pub fn field(&self) -> &Field {
        &self.field
    }

    /// The column's data type.
    pub fn data_type(&self) -> &DataType {
        self.field.data_type()
    }

    /// Row count.
    pub fn len(&self) -> usize {
        self.root.rows
    }

    /// True when the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.root.rows == 0
    }

    /// The compressed parts as a tree.
    pub fn root(&self) -> &CompressedNode {
        &self.root
    }

    /// Bytes of codec streams (what [`Self::to_bytes`] writes, less a small header).
    pub fn compressed_bytes(&self) -> usize {
        self.root.all_parts().iter().map(|p| p.bytes.len()).sum()
    }

    /// Bytes of the plain parts before compression.
    pub fn plain_bytes(&self) -> usize {
        self.root.all_parts().iter().map(|p| p.raw_len).sum()
    }

    /// The container bytes (format in `docs/FORMAT.md`).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        container::write(self)
    }

    /// Writes the container to `out`, the parts' streams straight from where they are
    /// (no concatenated copy); [`Self::encoded_len`] bytes.
    pub fn write_to(&self, out: &mut impl std::io::Write) -> Result<()> {
        container::write_to(self, out)
    }

    /// Bytes of the container [`Self::write_to`] and [`Self::to_bytes`] write.
    pub fn encoded_len(&self) -> Result<usize> {
        container::encoded_len(self)
    }

    /// Parses a container; corrupt or truncated bytes give an `Err`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        container::read(arrow::buffer::Buffer::from(bytes))
    }

    /// [`Self::from_bytes`] without a copy: the parts' streams stay slices of `buffer`.
    pub fn from_buffer(buffer: arrow::buffer::Buffer) -> Result<Self> {
        container::read(buffer)
    }
}

/// Compresses `array` under an unnamed nullable field, on the CPU.
pub fn compress(array: &dyn Array, codec: &CodecChoice) -> Result<CompressedColumn> {
    compress_on(array, codec, Placement::CPU)
}

/// [`compress`] with the codecs placed by `placement`.
pub fn compress_on(
    array: &dyn Array,
    codec: &CodecChoice,
    placement: Placement,
) -> Result<CompressedColumn> {
    compress_field_on(
        &Field::new("", array.data_type().clone(), true),
        array,
        codec,
        placement,
    )
}

/// Compresses `array` on the CPU, keeping `field` (name, nullability, metadata) in the
/// container.
pub fn compress_field(
    field: &Field,
    array: &dyn Array,
    codec: &CodecChoice,
) -> Result<CompressedColumn> {
    compress_field_on(field, array, codec, Placement::CPU)
}

/// [`compress_field`] with the codecs placed by `placement`.
pub fn compress_field_on(
    field: &Field,
    array: &dyn Array,
    codec: &CodecChoice,
    placement: Placement,
) -> Result<CompressedColumn> {
    Ok(compress_columns_on(&[(field, array)], codec, placement)?.swap_remove(0))
}

/// Compresses every `(field, array)` (a record batch's columns) with their parts in one
/// batched call per codec.
pub fn compress_columns_on(
    columns: &[(&Field, &dyn Array)],
    codec: &CodecChoice,
    placement: Placement,
) -> Result<Vec<CompressedColumn>> {
    for (field, array) in columns {
        if field.data_type() != array.data_type() {
            return Err(Error::format(format!(
                "field '{}' is {} but the array is {}",
                field.name(),
                field.data_type(),
                array.data_type()
            )));
        }
        // Refuse unsupported types before doing any work.
        types::write_type(&mut Vec::new(), array.data_type())?;
    }
    let nodes = columns
        .par_iter()
        .map(|(_, array)| plain::encode(*array))
        .collect::<Result<Vec<_>>>()?;
    let mut all = Vec::new();
    let shapes: Vec<parts::Shape> = nodes
        .into_iter()
        .map(|node| parts::take_parts(node, &mut all))
        .collect();
    let mut compressed = parts::compress_parts(all, codec, &placement)?.into_iter();
    Ok(columns
        .iter()
        .zip(&shapes)
        .map(|((field, _), shape)| CompressedColumn {
            field: (*field).clone(),
            root: parts::compressed_node(shape, &mut compressed),
        })
        .collect())
}

/// Compresses already split parts on the CPU (the baselines of `colzip tpch` use the same
/// parts).
pub fn compress_node(node: PlainNode, codec: &CodecChoice) -> Result<CompressedNode> {
    compress_node_on(node, codec, Placement::CPU)
}

/// [`compress_node`] with the codecs placed by `placement`: the node's parts in one
/// batched call per codec.
pub fn compress_node_on(
    node: PlainNode,
    codec: &CodecChoice,
    placement: Placement,
) -> Result<CompressedNode> {
    let mut all = Vec::new();
    let shape = parts::take_parts(node, &mut all);
    let compressed = parts::compress_parts(all, codec, &placement)?;
    Ok(parts::compressed_node(&shape, &mut compressed.into_iter()))
}

/// Decompresses a column on the CPU to an array equal to the one compressed.
pub fn decompress(column: &CompressedColumn) -> Result<ArrayRef> {
    decompress_on(column, Placement::CPU)
}

/// [`decompress`] with the codecs placed by `placement`.
pub fn decompress_on(column: &CompressedColumn, placement: Placement) -> Result<ArrayRef> {
    Ok(decompress_columns_on(&[column], placement)?.swap_remove(0))
}

/// Decompresses every column (a record batch's, or a scan's projection), their parts in
/// one batched call per codec: [`decompress_columns_to_plain`], then
/// [`arrays_from_plain`].
pub fn decompress_columns_on(
    columns: &[&CompressedColumn],
    placement: Placement,
) -> Result<Vec<ArrayRef>> {
    let nodes = decompress_columns_to_plain(columns, placement)?;
    arrays_from_plain(columns, nodes)
}

/// The codecs' half of [`decompress_columns_on`]: every column's parts decoded, one
/// batched call per codec (on the GPU or the cores as `placement` decides), checksums
/// checked; one plain node per column.
pub fn decompress_columns_to_plain(
    columns: &[&CompressedColumn],
    placement: Placement,
) -> Result<Vec<PlainNode>> {
    let all: Vec<&CompressedPart> = columns.iter().flat_map(|c| c.root.all_parts()).collect();
    let mut plain = parts::decompress_parts(&all, &placement)?.into_iter();
    Ok(columns
        .iter()
        .map(|c| parts::plain_node(&c.root, &mut plain))
        .collect())
}

/// The Arrow half of [`decompress_columns_on`]: each column's array built from its plain
/// node (decimals sign-extended, offsets or views made from lengths, every field
/// checked), the columns on all cores.
pub fn arrays_from_plain(
    columns: &[&CompressedColumn],
    nodes: Vec<PlainNode>,
) -> Result<Vec<ArrayRef>> {
    if nodes.len() != columns.len() {
        return Err(Error::format(format!(
            "{} plain nodes for {} columns",
            nodes.len(),
            columns.len()
        )));
    }
    columns
        .par_iter()
        .zip(nodes)
        .map(|(column, node)| plain::decode(column.data_type(), node))
        .collect()
}

/// Decodes every part of `node` on the CPU, checking lengths and checksums.
pub fn decompress_node(node: &CompressedNode) -> Result<PlainNode> {
    decompress_node_on(node, Placement::CPU)
}

/// [`decompress_node`] with the codecs placed by `placement`: the node's parts in one
/// batched call per codec.
pub fn decompress_node_on(node: &CompressedNode, placement: Placement) -> Result<PlainNode> {
    let all = node.all_parts();
    let mut plain = parts::decompress_parts(&all, &placement)?.into_iter();
    Ok(parts::plain_node(node, &mut plain))
}

/// Appends a field in the container's encoding (used by the archive header).
pub fn write_field(out: &mut Vec<u8>, field: &Field) -> Result<()> {
    types::write_field(out, field)
}

/// Reads a count-prefixed list of fields written with [`write_field`].
pub fn read_fields(bytes: &[u8]) -> Result<Vec<Field>> {
    let mut reader = bytes::Reader::new(bytes);
    let count = reader.varint()?;
    let mut fields = Vec::new();
    for _ in 0..count {
        fields.push(types::read_field(&mut reader)?);
    }
    if !reader.is_empty() {
        return Err(Error::format("trailing bytes after the schema"));
    }
    Ok(fields)
}
