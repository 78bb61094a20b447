//! Codec specifications as text (`name[:key=value,…]`), the form the CLI and SQL take.
//!
//! ```
//! use colzip::codec::CodecSpec;
//! let spec: CodecSpec = "lzss:s=2,w=128,c=2048".parse().unwrap();
//! assert_eq!(spec.to_string(), "lzss:s=2,w=128,c=2048");
//! assert_eq!("gmatch".parse::<CodecSpec>().unwrap().to_string(), "gmatch");
//! assert_eq!("gmatch:raw".parse::<CodecSpec>().unwrap().to_string(), "gmatch:raw");
//! assert_eq!("intpack:w=4".parse::<CodecSpec>().unwrap().to_string(), "intpack:w=4");
//! assert!("lzss:s=3".parse::<CodecSpec>().is_err());
//! ```
//!
//! The name picks the codec in the registry, which parses the options after it. A spec
//! leaves parameters that depend on the data open (lzss's symbol width, intpack's value
//! width); [`CodecSpec::settle`] fixes them and gives the [`Codec`](super::Codec) the
//! batched calls run.

use std::str::FromStr;

use super::error::{CodecError, Result};
use super::interface::SpecOption;
use super::lzss::LzssOptions;
use super::placement::Placement;
use super::registry::{CodecSpec, codecs, or_list};

impl CodecSpec {
    /// Compresses `input` on the CPU (a batch of one); its values are `type_width` bytes
    /// wide (1 for plain bytes).
    pub fn compress(&self, input: &[u8], type_width: usize) -> Result<Vec<u8>> {
        self.settle(type_width, input)?
            .compress_one(&Placement::CPU, input)
    }

    /// The default LZSS spec: symbol width from the data, GPULZ's W=128 and C=2048.
    pub fn lzss_default() -> Self {
        CodecSpec::Lzss(LzssOptions::default())
    }
}

impl FromStr for CodecSpec {
    type Err = CodecError;

    fn from_str(spec: &str) -> Result<Self> {
        let fail = |reason: String| CodecError::spec(spec, reason);
        let (name, options) = match spec.trim().split_once(':') {
            Some((name, options)) => (name, options),
            None => (spec.trim(), ""),
        };
        let options: Vec<SpecOption<'_>> = options
            .split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map(|o| match o.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (o, None),
            })
            .collect();
        match CodecSpec::parse_named(name, &options) {
            Some(parsed) => parsed.map_err(fail),
            None => {
                let names: Vec<&str> = codecs().map(|c| c.name).collect();
                Err(fail(format!(
                    "unknown codec '{}' (expected {})",
                    name.to_ascii_lowercase(),
                    or_list(&names)
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Codec;
    use super::super::id::CodecId;
    use super::super::intpack::IntpackParams;
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        for (text, canonical) in [
            ("lzss", "lzss:s=auto,w=128,c=2048"),
            ("lzss:level=1,s=4", "lzss:s=4,w=32,c=2048"),
            ("lzss:c=16k", "lzss:s=auto,w=128,c=16384"),
            ("gmatch:framed", "gmatch:framed"),
            ("gmatch:raw", "gmatch:raw"),
            ("gmatch:blocks", "gmatch"),
            ("snappy", "gmatch"),
            ("bwt:block=1m", "bwt:block=1048576"),
            ("intpack", "intpack"),
            ("intpack:w=4", "intpack:w=4"),
            ("INTPACK:w=auto", "intpack"),
            ("none", "stored"),
        ] {
            let spec: CodecSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), canonical);
            assert_eq!(canonical.parse::<CodecSpec>().unwrap(), spec);
        }
    }

    #[test]
    fn bad_specs_say_why() {
        for bad in [
            "zip",
            "lzss:s=3",
            "lzss:w=0",
            "lzss:c=100",
            "lzss:q=1",
            "gmatch:fast",
            "bwt:block=x",
            "lzss:level=9",
            "intpack:w=3",
            "intpack:w=x",
            "intpack:s=4",
            "intpack:w",
        ] {
            let err = bad.parse::<CodecSpec>().unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
        let err = "zip".parse::<CodecSpec>().unwrap_err().to_string();
        let names: Vec<&str> = codecs().map(|c| c.name).collect();
        assert!(
            err.contains(&format!("(expected {})", or_list(&names))),
            "{err}"
        );
    }

    #[test]
    fn intpack_takes_its_width_from_the_type() {
        let spec: CodecSpec = "intpack".parse().unwrap();
        for (type_width, width) in [(1, 1), (2, 2), (4, 4), (8, 8), (16, 8), (12, 4), (3, 1)] {
            assert_eq!(
                spec.settle(type_width, &[]).unwrap(),
                Codec::Intpack(IntpackParams { width }),
                "type width {type_width}"
            );
        }
        let fixed: CodecSpec = "intpack:w=2".parse().unwrap();
        assert_eq!(
            fixed.settle(8, &[]).unwrap(),
            Codec::Intpack(IntpackParams { width: 2 })
        );
        assert_eq!(fixed.id(), CodecId::Intpack);
        assert_eq!(fixed.family(), "intpack");
    }
}
