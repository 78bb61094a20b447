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
use crate::codec::registry::{CodecInfo, codecs, or_list};
use crate::codec::{AutoUse, CodecSpec};

/// Bytes per sample slice; three slices are taken. Trying every candidate on the
/// sample is most of a load's host work when the codecs themselves run on the GPU, so
/// the sample is kept small: TPC-H SF 1 under `auto` on the CPU backend (2 cores) gave
/// the very same 230,790,139 bytes with 16 KiB slices as with 64 KiB ones, and loaded in
/// 4.0 s instead of 6.5 s (8 KiB slices: 0.13% more bytes).
const SLICE: usize = 16 * 1024;

/// The codecs `auto` may choose among, as written after `auto:among=` (`lzss+gmatch`):
/// a bit per codec the registry lets `auto` try, in registry order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AutoCodecs {
    bits: u32,
}

/// Each codec `auto` may try, in registry order; its bit in [`AutoCodecs`] is
/// `1 << index`.
fn candidates() -> impl Iterator<Item = (CodecInfo, AutoUse)> {
    codecs().filter_map(|info| info.auto.map(|auto| (info, auto)))
}

/// The bit of a codec family (0 for one `auto` never chooses).
fn bit(family: &str) -> u32 {
    candidates()
        .position(|(info, _)| info.name.eq_ignore_ascii_case(family))
        .map_or(0, |i| 1 << i)
}

/// The codecs `auto` tries where `serves` says, slowest decoder first (the order they are
/// tried in: of equal sizes the later wins).
fn serving(serves: impl Fn(&AutoUse) -> bool) -> Vec<(CodecInfo, AutoUse)> {
    let mut tried: Vec<(CodecInfo, AutoUse)> =
        candidates().filter(|(_, auto)| serves(auto)).collect();
    tried.sort_by_key(|(_, auto)| auto.decode_speed);
    tried
}

/// The names of [`serving`]'s codecs.
fn names_serving(serves: impl Fn(&AutoUse) -> bool) -> Vec<&'static str> {
    serving(serves).iter().map(|(info, _)| info.name).collect()
}

/// The bits of `names`.
fn bits_of(names: &[&str]) -> u32 {
    names.iter().map(|name| bit(name)).fold(0, |a, b| a | b)
}

impl AutoCodecs {
    /// Every codec `auto` may try: what plain `auto` chooses among (every bit set, so a
    /// set naming every codec equals it).
    pub const ALL: AutoCodecs = AutoCodecs { bits: u32::MAX };

    /// Parses `lzss+gmatch+bwt`; the set must serve string bytes and fixed-width values
    /// (each codec says which it serves), so every part has a candidate.
    pub fn parse(list: &str) -> std::result::Result<Self, String> {
        let mut bits = 0;
        for name in list.split('+').map(str::trim) {
            match bit(name) {
                0 => {
                    let names: Vec<&str> = candidates().map(|(info, _)| info.name).collect();
                    return Err(format!(
                        "among names codecs joined by '+' ({}), got '{name}'",
                        names.join(", ")
                    ));
                }
                b => bits |= b,
            }
        }
        let strings = names_serving(|auto| auto.strings);
        if bits & bits_of(&strings) == 0 {
            return Err(format!(
                "among needs {} for string bytes",
                or_list(&strings)
            ));
        }
        let fixed = names_serving(|auto| auto.fixed_width);
        if bits & bits_of(&fixed) == 0 {
            return Err(format!(
                "among needs {} for fixed-width values",
                or_list(&fixed)
            ));
        }
        if bits == (1 << candidates().count()) - 1 {
            return Ok(AutoCodecs::ALL);
        }
        Ok(AutoCodecs { bits })
    }

    /// The set without the codec family `family`.
    pub fn without(self, family: &str) -> AutoCodecs {
        let known = (1u32 << candidates().count()) - 1;
        AutoCodecs {
            bits: self.bits & known & !bit(family),
        }
    }

    /// The syntax of `auto` as help texts show it: `auto[:among=lzss+gmatch+bwt+intpack]`.
    pub fn syntax() -> String {
        let names: Vec<&str> = candidates().map(|(info, _)| info.name).collect();
        format!("auto[:among={}]", names.join("+"))
    }

    /// Whether `spec`'s codec is in the set.
    pub fn allows(self, spec: &CodecSpec) -> bool {
        self.bits & bit(spec.family()) != 0
    }
}

impl fmt::Display for AutoCodecs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = candidates()
            .map(|(info, _)| info.name)
            .filter(|name| self.bits & bit(name) != 0)
            .collect();
        f.write_str(&names.join("+"))
    }
}

/// Picks the codec for `part` among the candidates for its role that `among` allows.
pub fn choose(part: &PlainPart, among: AutoCodecs) -> CodecSpec {
    let strings = part.role == PartRole::Data;
    let tried = serving(|auto| {
        if strings {
            auto.strings
        } else {
            auto.fixed_width
        }
    });
    // `AutoCodecs::parse` guarantees a candidate for each role.
    let candidates: Vec<CodecSpec> = tried
        .iter()
        .map(|(info, _)| CodecSpec::named(info.name).expect("a registered name"))
        .filter(|c| among.allows(c))
        .collect();
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
