//! The column container: one compressed Arrow array as bytes (see `docs/FORMAT.md`).
//!
//! ```text
//! magic "CZCL" | version u8 (2) | field (types.rs) | node | crc32c u32 LE of all before
//! node := rows varint | null_count varint | part count u8 | part* | child count varint | node*
//! part := role u8 | width varint | codec id u8 | raw length varint | stored length varint
//!         | part checksum u64 LE (xxh3 of the xxh3s of the raw bytes' 1 MiB pieces) | stored bytes
//! ```
//! The CRC covers the compressed bytes, so a damaged container is refused before any of it
//! is decoded; every part's checksum checks the decoded bytes. Version 2 stores gmatch
//! parts as blocks (codec 5) and hashes parts piece by piece; version 1 containers
//! (single raw Snappy streams, whole-part xxh3) are refused with an error naming the
//! version.

use std::io::Write;

use arrow::buffer::Buffer;
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
pub const VERSION: u8 = 2;
/// Nodes nested deeper than this are refused: a node is as deep as its type, so this is
/// the type encoding's bound.
const MAX_DEPTH: usize = types::MAX_DEPTH;

/// A container as pieces: the small encoded headers and the parts' streams, in order.
/// Written one after another (no concatenated copy), with the CRC accumulated over them.
struct Pieces<'a> {
    pieces: Vec<Piece<'a>>,
}

enum Piece<'a> {
    Header(Vec<u8>),
    Stream(&'a [u8]),
}

impl Piece<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Header(bytes) => bytes,
            Piece::Stream(bytes) => bytes,
        }
    }
}

fn pieces(column: &CompressedColumn) -> Result<Pieces<'_>> {
    let mut head = Vec::with_capacity(64);
    head.extend_from_slice(MAGIC);
    head.push(VERSION);
    types::write_field(&mut head, &column.field)?;
    let mut pieces = Vec::new();
    node_pieces(&mut head, &mut pieces, &column.root);
    pieces.push(Piece::Header(head));
    Ok(Pieces { pieces })
}

/// Appends `node`'s headers to `head`, moving it into `pieces` before each part's stream.
fn node_pieces<'a>(head: &mut Vec<u8>, pieces: &mut Vec<Piece<'a>>, node: &'a CompressedNode) {
    varint::write_u64(head, node.rows as u64);
    varint::write_u64(head, node.null_count as u64);
    head.push(node.parts.len() as u8);
    for part in &node.parts {
        head.push(part.role as u8);
        varint::write_u64(head, u64::from(part.width));
        head.push(part.codec.to_u8());
        varint::write_u64(head, part.raw_len as u64);
        varint::write_u64(head, part.bytes.len() as u64);
        head.extend_from_slice(&part.checksum.to_le_bytes());
        pieces.push(Piece::Header(std::mem::take(head)));
        pieces.push(Piece::Stream(&part.bytes));
    }
    // A varint (a struct may have hundreds of fields); below 128 it is the single byte
    // older builds wrote as a u8, so their containers read the same.
    varint::write_u64(head, node.children.len() as u64);
    for child in &node.children {
        node_pieces(head, pieces, child);
    }
}

impl Pieces<'_> {
    /// Bytes the container takes (its CRC included).
    fn len(&self) -> usize {
        self.pieces.iter().map(|p| p.bytes().len()).sum::<usize>() + 4
    }

    fn write_to(&self, out: &mut impl Write) -> Result<()> {
        let mut crc = 0;
        for piece in &self.pieces {
            let bytes = piece.bytes();
            crc = crc32c::crc32c_append(crc, bytes);
            out.write_all(bytes)?;
        }
        out.write_all(&crc.to_le_bytes())?;
        Ok(())
    }
}

pub(super) fn write(column: &CompressedColumn) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_to(column, &mut out)?;
    Ok(out)
}

/// Bytes [`write_to`] writes for `column`.
pub(super) fn encoded_len(column: &CompressedColumn) -> Result<usize> {
    Ok(pieces(column)?.len())
}

/// Writes `column`'s container to `out`, its streams straight from where they are.
pub(super) fn write_to(column: &CompressedColumn, out: &mut impl Write) -> Result<()> {
    pieces(column)?.write_to(out)
}

/// Parses a container; the parts' streams are slices of `buffer` (no copies).
pub(super) fn read(buffer: Buffer) -> Result<CompressedColumn> {
    let bytes = buffer.as_slice();
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
        let hint = if version < VERSION {
            ": it was written by an older colzip; compress the source again"
        } else {
            ": it was written by a newer colzip"
        };
        return Err(Error::format(format!(
            "column container version {version} is not supported (this build reads version {VERSION}){hint}"
        )));
    }
    let field: Field = types::read_field(&mut reader)?;
    let root = read_node(&mut reader, &buffer, 0)?;
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

fn read_node(reader: &mut Reader<'_>, buffer: &Buffer, depth: usize) -> Result<CompressedNode> {
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
        let stored = reader.take(stored_len)?;
        let at = stored.as_ptr() as usize - buffer.as_ptr() as usize;
        let bytes = buffer.slice_with_length(at, stored.len());
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
    // No capacity from the count: every child takes bytes, so the loop ends with them.
    let child_count = reader.varint()?;
    let mut children = Vec::new();
    for _ in 0..child_count {
        children.push(read_node(reader, buffer, depth + 1)?);
    }
    Ok(CompressedNode {
        rows,
        null_count,
        parts,
        children,
    })
}
