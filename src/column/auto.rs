//! The `auto` codec choice: per part, the candidate with the best ratio on a sample.
//!
//! String and binary bytes try bwt and gmatch; fixed-width values, lengths and bitmaps
//! try lzss (symbol width from the data type, GPULZ §3.2.3), gmatch and intpack (value
//! width from the data type). `auto:among=lzss+gmatch` limits the candidates to the
//! codecs it names (to compare with an earlier `auto`, or to keep files readable by an
//! older colzip). The sample is three slices (start, middle, end) so a column sorted on
//! one end is judged fairly.

use std::fmt;

use super::plain::{PartRole, PlainPart};
use crate::codec::{CodecSpec, bwt, gmatch, intpack, lzss};

/// Bytes per sample slice; three slices are taken.
const SLICE: usize = 64 * 1024;

/// The codecs `auto` may choose among, as written after `auto:among=` (`lzss+gmatch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AutoCodecs {
    bits: u8,
}

/// Each codec `auto` knows, in the order it is written; its bit in [`AutoCodecs`] is
/// `1 << index`.
const NAMES: [&str; 4] = [lzss::NAME, gmatch::NAME, bwt::NAME, intpack::NAME];

/// The bits of the codecs named in `names`.
fn bits_of(names: &[&str]) -> u8 {
    names.iter().map(|name| bit(name)).fold(0, |a, b| a | b)
}

/// The bit of a codec family (0 for one `auto` never chooses).
fn bit(family: &str) -> u8 {
    NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(family))
        .map_or(0, |i| 1 << i)
}

impl AutoCodecs {
    /// Every codec: what plain `auto` chooses among.
    pub const ALL: AutoCodecs = AutoCodecs {
        bits: (1 << NAMES.len()) - 1,
    };

    /// Parses `lzss+gmatch+bwt`; the set must serve string bytes (bwt or gmatch) and
    /// fixed-width values (lzss, gmatch or intpack), so every part has a candidate.
    pub fn parse(list: &str) -> std::result::Result<Self, String> {
        let mut bits = 0;
        for name in list.split('+').map(str::trim) {
            match bit(name) {
                0 => {
                    return Err(format!(
                        "among names codecs joined by '+' (lzss, gmatch, bwt, intpack), got '{name}'"
                    ));
                }
                b => bits |= b,
            }
        }
        if bits & bits_of(&["bwt", "gmatch"]) == 0 {
            return Err("among needs bwt or gmatch for string bytes".into());
        }
        if bits & bits_of(&["lzss", "gmatch", "intpack"]) == 0 {
            return Err("among needs lzss, gmatch or intpack for fixed-width values".into());
        }
        Ok(AutoCodecs { bits })
    }

    /// The set without the codec family `family`.
    pub fn without(self, family: &str) -> AutoCodecs {
        AutoCodecs {
            bits: self.bits & !bit(family),
        }
    }

    /// Whether `spec`'s codec is in the set.
    pub fn allows(self, spec: &CodecSpec) -> bool {
        self.bits & bit(spec.family()) != 0
    }
}

impl fmt::Display for AutoCodecs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = NAMES
            .iter()
            .copied()
            .filter(|name| self.bits & bit(name) != 0)
            .collect();
        f.write_str(&names.join("+"))
    }
}

/// Picks the codec for `part` among the candidates for its role that `among` allows.
pub fn choose(part: &PlainPart, among: AutoCodecs) -> CodecSpec {
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
    // `AutoCodecs::parse` guarantees a candidate for each role.
    let candidates: Vec<CodecSpec> = candidates.into_iter().filter(|c| among.allows(c)).collect();
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array};

    use crate::codec::CodecId;
    use crate::column::{self, CodecChoice};

    #[test]
    fn among_parses_prints_and_refuses() {
        let choice: CodecChoice = "AUTO:among=gmatch+lzss+bwt".parse().unwrap();
        assert_eq!(choice.to_string(), "auto:among=lzss+gmatch+bwt");
        assert_eq!(choice.to_string().parse::<CodecChoice>().unwrap(), choice);
        // Naming every codec is plain auto.
        let all: CodecChoice = "auto:among=intpack+bwt+gmatch+lzss".parse().unwrap();
        assert_eq!(all, CodecChoice::Auto);
        for (text, reason) in [
            ("auto:among=lzss+zstd", "got 'zstd'"),
            ("auto:among=lzss", "bwt or gmatch for string bytes"),
            ("auto:among=bwt", "lzss, gmatch or intpack for fixed-width"),
            ("auto:level=3", "got 'level'"),
            ("auto:among", "among=CODEC+CODEC"),
        ] {
            let err = text.parse::<CodecChoice>().unwrap_err().to_string();
            assert!(err.contains(reason), "{text}: {err}");
        }
    }

    #[test]
    fn among_keeps_the_choice_to_the_named_codecs() {
        // Sorted keys: intpack wins under plain auto; without it lzss or gmatch does.
        let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(0..100_000));
        let codecs = |choice: &str| -> Vec<CodecId> {
            let compressed = column::compress(&keys, &choice.parse().unwrap()).unwrap();
            assert_eq!(&column::decompress(&compressed).unwrap(), &keys);
            compressed
                .root()
                .all_parts()
                .iter()
                .map(|part| part.codec)
                .collect()
        };
        assert_eq!(codecs("auto"), vec![CodecId::Intpack]);
        let without = codecs("auto:among=lzss+gmatch+bwt");
        assert!(
            without.iter().all(|c| *c != CodecId::Intpack),
            "{without:?}"
        );
    }
}
