//! The column container: one compressed Arrow array as bytes (see `docs/FORMAT.md`).
//!
//! ```text
//! magic "CZCL" | version u8 (1) | field (types.rs) | node | crc32c u32 LE of all before
//! node := rows varint | null_count varint | part count u8 | part* | child count u8 | node*
//! part := role u8 | width varint | codec id u8 | raw length varint | stored length varint
//!         | xxh3-64 of the raw bytes u64 LE | stored bytes
//! ```
//! The CRC covers the compressed bytes, so a damaged container is refused before any of it
//! is decoded; the xxh3 of every part checks the decoded bytes.

use arrow::datatypes::Field;

use super::bytes::Reader;
use super::plain::PartRole;
use super::{CompressedColumn, CompressedNode, CompressedPart};
use super::{layout, types};
use crate::codec::{CodecId, varint};
use crate::{Error, Result};

/// The first bytes of every column container.
pub const MAGIC: &[u8; 4] = b"CZCL";
/// The container version this build writes and reads.
pub const VERSION: u8 = 1;
/// Nodes nested deeper than this are refused (a dictionary of dictionaries is 2).
const MAX_DEPTH: usize = 16;

pub(super) fn write(column: &CompressedColumn) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(column.compressed_bytes() + 64);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    types::write_field(&mut out, &column.field)?;
    write_node(&mut out, &column.root);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

fn write_node(out: &mut Vec<u8>, node: &CompressedNode) {
    varint::write_u64(out, node.rows as u64);
    varint::write_u64(out, node.null_count as u64);
    out.push(node.parts.len() as u8);
    for part in &node.parts {
        out.push(part.role as u8);
        varint::write_u64(out, u64::from(part.width));
        out.push(part.codec as u8);
        varint::write_u64(out, part.raw_len as u64);
        varint::write_u64(out, part.bytes.len() as u64);
        out.extend_from_slice(&part.checksum.to_le_bytes());
        out.extend_from_slice(&part.bytes);
    }
    out.push(node.children.len() as u8);
    for child in &node.children {
        write_node(out, child);
    }
}

pub(super) fn read(bytes: &[u8]) -> Result<CompressedColumn> {
    if bytes.len() < MAGIC.len() + 1 + 4 || &bytes[..4] != MAGIC {
        return Err(Error::format("not a colzip column container (bad magic)"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    if crc32c::crc32c(body) != stored {
        return Err(Error::Checksum {
            what: "column container".into(),
        });
    }
    let mut reader = Reader::new(&body[4..]);
    let version = reader.u8()?;
    if version != VERSION {
        return Err(Error::format(format!(
            "container version {version} is not supported (this build reads {VERSION})"
        )));
    }
    let field: Field = types::read_field(&mut reader)?;
    let root = read_node(&mut reader, 0)?;
    if !reader.is_empty() {
        return Err(Error::format("trailing bytes after the column"));
    }
    // Every length is checked against the type, the rows and the streams before any of
    // it is trusted for an allocation.
    layout::check_node(field.data_type(), &root).map_err(|e| match e {
        Error::Format(m) => Error::format(format!("column '{}': {m}", field.name())),
        other => other,
    })?;
    Ok(CompressedColumn { field, root })
}

fn read_node(reader: &mut Reader<'_>, depth: usize) -> Result<CompressedNode> {
    if depth > MAX_DEPTH {
        return Err(Error::format("container nodes nested too deeply"));
    }
    let rows = reader.varint_usize()?;
    let null_count = reader.varint_usize()?;
    if null_count > rows {
        return Err(Error::format(format!("{null_count} nulls in {rows} rows")));
    }
    let part_count = reader.u8()?;
    let mut parts = Vec::with_capacity(part_count as usize);
    for _ in 0..part_count {
        let role = reader.u8()?;
        let role = PartRole::from_u8(role)
            .ok_or_else(|| Error::format(format!("unknown part role {role}")))?;
        let width =
            u32::try_from(reader.varint()?).map_err(|_| Error::format("part width too large"))?;
        let codec = reader.u8()?;
        let codec = CodecId::from_u8(codec)
            .ok_or_else(|| Error::format(format!("unknown codec id {codec}")))?;
        let raw_len = reader.varint_usize()?;
        let stored_len = reader.varint_usize()?;
        let checksum = reader.u64_le()?;
        let bytes = reader.take(stored_len)?.to_vec();
        if codec == CodecId::Stored && stored_len != raw_len {
            return Err(Error::format(
                "stored part whose length differs from its raw length",
            ));
        }
        parts.push(CompressedPart {
            role,
            width,
            codec,
            raw_len,
            checksum,
            bytes,
        });
    }
    let child_count = reader.u8()?;
    let mut children = Vec::with_capacity(child_count as usize);
    for _ in 0..child_count {
        children.push(read_node(reader, depth + 1)?);
    }
    Ok(CompressedNode {
        rows,
        null_count,
        parts,
        children,
    })
}
