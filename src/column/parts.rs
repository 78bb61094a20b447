//! The parts of many columns through the batched codec interface: every part is given
//! its codec (the spec's, or `auto`'s choice on a sample), parts of the same settled codec
//! go to the codec in one call (on the GPU or the CPU's cores as the placement decides for
//! the call's total), and decoding does the same per codec id. A record batch's columns
//! thus cost one call per codec, not one per part.

use std::collections::BTreeMap;

use arrow::buffer::Buffer;
use rayon::prelude::*;

use super::checksum::part_checksum;
use super::plain::{PlainNode, PlainPart};
use super::{CodecChoice, CompressedNode, CompressedPart};
use crate::codec::{Codec, CodecId, CodecSpec, Placement, SnappyFormat};
use crate::{Error, Result};

/// A node tree without its parts: where the parts, taken out depth first, go back.
pub(super) struct Shape {
    rows: usize,
    null_count: usize,
    parts: usize,
    children: Vec<Shape>,
}

/// Takes `node`'s parts out (depth first, appended to `parts`); returns its shape.
pub(super) fn take_parts(node: PlainNode, parts: &mut Vec<PlainPart>) -> Shape {
    let count = node.parts.len();
    parts.extend(node.parts);
    Shape {
        rows: node.rows,
        null_count: node.null_count,
        parts: count,
        children: node
            .children
            .into_iter()
            .map(|child| take_parts(child, parts))
            .collect(),
    }
}

/// The compressed node of `shape`, its parts taken in order from `parts`.
pub(super) fn compressed_node(
    shape: &Shape,
    parts: &mut impl Iterator<Item = CompressedPart>,
) -> CompressedNode {
    CompressedNode {
        rows: shape.rows,
        null_count: shape.null_count,
        parts: parts.by_ref().take(shape.parts).collect(),
        children: shape
            .children
            .iter()
            .map(|child| compressed_node(child, parts))
            .collect(),
    }
}

/// The plain node of a compressed `node`, its parts taken in order from `parts`.
pub(super) fn plain_node(
    node: &CompressedNode,
    parts: &mut impl Iterator<Item = PlainPart>,
) -> PlainNode {
    PlainNode {
        rows: node.rows,
        null_count: node.null_count,
        parts: parts.by_ref().take(node.parts.len()).collect(),
        children: node
            .children
            .iter()
            .map(|child| plain_node(child, parts))
            .collect(),
    }
}

/// The codec a part is compressed with. Containers hold gmatch as blocks (independent
/// raw Snappy streams), so `gmatch:raw` parts are written as blocks too.
fn codec_for(choice: &CodecChoice, part: &PlainPart) -> Result<Codec> {
    let spec = match choice.spec_for(part) {
        CodecSpec::Gmatch(SnappyFormat::Raw) => CodecSpec::Gmatch(SnappyFormat::Blocks),
        spec => spec,
    };
    Ok(spec.settle(part.symbol_width(), &part.bytes)?)
}

/// Compresses `parts`, one batched call per settled codec; a part that does not shrink
/// is stored.
pub(super) fn compress_parts(
    parts: Vec<PlainPart>,
    choice: &CodecChoice,
    placement: &Placement,
) -> Result<Vec<CompressedPart>> {
    let codecs = parts
        .par_iter()
        .map(|part| codec_for(choice, part))
        .collect::<Result<Vec<_>>>()?;
    let checksums: Vec<u64> = parts.par_iter().map(|p| part_checksum(&p.bytes)).collect();
    let mut groups: BTreeMap<usize, (Codec, Vec<usize>)> = BTreeMap::new();
    let mut first_of: Vec<(Codec, usize)> = Vec::new();
    for (i, codec) in codecs.iter().enumerate() {
        let key = match first_of.iter().find(|(c, _)| c == codec) {
            Some(&(_, key)) => key,
            None => {
                first_of.push((*codec, i));
                i
            }
        };
        groups.entry(key).or_insert((*codec, Vec::new())).1.push(i);
    }
    let mut streams: Vec<Option<Buffer>> = vec![None; parts.len()];
    for (codec, members) in groups.into_values() {
        if codec == Codec::Stored {
            continue;
        }
        let inputs: Vec<&[u8]> = members.iter().map(|&i| &parts[i].bytes[..]).collect();
        let mut outputs: Vec<Vec<u8>> = inputs
            .iter()
            .map(|input| crate::memory::zeroed(codec.max_compressed_len(input.len())))
            .collect();
        let sizes = {
            let mut slices: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
            codec.compress_into(placement, &inputs, &mut slices)?
        };
        for ((&i, mut output), size) in members.iter().zip(outputs).zip(sizes) {
            if size < parts[i].bytes.len() {
                output.truncate(size);
                output.shrink_to_fit();
                streams[i] = Some(Buffer::from_vec(output));
            }
        }
    }
    Ok(parts
        .into_iter()
        .zip(codecs)
        .zip(streams)
        .zip(checksums)
        .map(|(((part, codec), stream), checksum)| {
            let raw_len = part.bytes.len();
            let (codec, bytes) = match stream {
                Some(stream) => (codec.id(), stream),
                None => (CodecId::Stored, part.bytes),
            };
            CompressedPart {
                role: part.role,
                width: part.width,
                codec,
                raw_len,
                checksum,
                bytes,
            }
        })
        .collect())
}

/// Decodes `parts`, one batched call per codec, and checks every checksum.
pub(super) fn decompress_parts(
    parts: &[&CompressedPart],
    placement: &Placement,
) -> Result<Vec<PlainPart>> {
    // Each codec's parts in one call, each into a buffer of its own (stored parts are
    // copied too: a slice of a container need not be aligned for the column's type). On
    // the GPU the buffers are pinned memory the device wrote directly.
    let mut groups: BTreeMap<CodecId, Vec<usize>> = BTreeMap::new();
    for (i, part) in parts.iter().enumerate() {
        groups.entry(part.codec).or_default().push(i);
    }
    let mut outputs: Vec<Buffer> = vec![Buffer::from_vec(Vec::<u8>::new()); parts.len()];
    for (codec, members) in groups {
        let inputs: Vec<&[u8]> = members.iter().map(|&i| &parts[i].bytes[..]).collect();
        let lens: Vec<usize> = members.iter().map(|&i| parts[i].raw_len).collect();
        let decoded = codec.decompress_buffers(placement, &inputs, &lens)?;
        for (&i, bytes) in members.iter().zip(decoded) {
            outputs[i] = bytes;
        }
    }
    outputs
        .into_par_iter()
        .zip(parts.par_iter())
        .map(|(bytes, part)| {
            if part_checksum(&bytes) != part.checksum {
                return Err(Error::Checksum {
                    what: format!("{} part", part.role.name()),
                });
            }
            Ok(PlainPart {
                role: part.role,
                width: part.width,
                bytes,
            })
        })
        .collect()
}
