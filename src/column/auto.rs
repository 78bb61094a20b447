//! The `auto` codec choice: per part, the candidate with the best ratio on a sample.
//!
//! String and binary bytes try bwt and gmatch; fixed-width values, lengths and bitmaps
//! try lzss (symbol width from the data type, GPULZ §3.2.3), gmatch and intpack (value
//! width from the data type). The sample is
//! three slices (start, middle, end) so a column sorted on one end is judged fairly.

use super::plain::{PartRole, PlainPart};
use crate::codec::CodecSpec;

/// Bytes per sample slice; three slices are taken.
const SLICE: usize = 64 * 1024;

/// Picks the codec for `part` among the candidates for its role.
pub fn choose(part: &PlainPart) -> CodecSpec {
    let candidates: Vec<CodecSpec> = match part.role {
        PartRole::Data => vec![
            CodecSpec::Bwt(Default::default()),
            CodecSpec::Gmatch(Default::default()),
        ],
        // intpack last: it decodes fastest, so it wins ties.
        _ => vec![
            CodecSpec::lzss_default(),
            CodecSpec::Gmatch(Default::default()),
            CodecSpec::Intpack { width: None },
        ],
    };
    let sample = sample(&part.bytes, part.symbol_width());
    if sample.is_empty() {
        return candidates[candidates.len() - 1];
    }
    // Ties go to the later candidate, the faster one.
    let mut best = (candidates[0], usize::MAX);
    for spec in candidates {
        let size = spec
            .compress(&sample, part.symbol_width())
            .map_or(usize::MAX, |c| c.len());
        if size <= best.1 {
            best = (spec, size);
        }
    }
    best.0
}

/// Up to three slices of the part, each aligned to the symbol width.
fn sample(bytes: &[u8], symbol_width: usize) -> Vec<u8> {
    if bytes.len() <= 3 * SLICE {
        return bytes.to_vec();
    }
    let align = |pos: usize| pos - pos % symbol_width;
    let mut out = Vec::with_capacity(3 * SLICE);
    for start in [
        0,
        align(bytes.len() / 2 - SLICE / 2),
        align(bytes.len() - SLICE),
    ] {
        out.extend_from_slice(&bytes[start..start + SLICE]);
    }
    out
}
