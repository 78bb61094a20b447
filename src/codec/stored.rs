//! `stored`: no compression, the container's fallback when a codec would expand data. A
//! registered codec (`CodecFamily`) like the others, with no options and no GPU path.

use std::fmt;

use super::error::Result;
use super::id::CodecId;
use super::interface::{CodecFamily, SpecOption, Suited, wrong_len};

/// The codec's name in specs, errors and containers.
pub const NAME: &str = "stored";

#[allow(non_upper_case_globals)]
impl CodecId {
    /// Bytes as they are.
    pub const Stored: CodecId = CodecId::from_byte(0);
}

/// The `stored` codec.
pub(crate) struct Stored;

impl CodecFamily for Stored {
    type Options = ();
    type Params = ();

    const NAME: &'static str = NAME;
    const ALIASES: &'static [&'static str] = &["none"];
    const SYNTAX: &'static str = NAME;
    const IDS: &'static [(CodecId, &'static str)] = &[(CodecId::Stored, NAME)];
    const SUITED: Suited = Suited::Nothing;

    fn default_options() {}

    fn parse_options(options: &[SpecOption<'_>]) -> std::result::Result<(), String> {
        match options.first() {
            Some((key, _)) => Err(format!("stored takes no option, got '{key}'")),
            None => Ok(()),
        }
    }

    fn write_spec(_options: &(), f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(NAME)
    }

    fn spec_id(_options: &()) -> CodecId {
        CodecId::Stored
    }

    fn settle(_options: &(), _type_width: usize, _sample: &[u8]) -> Result<()> {
        Ok(())
    }

    fn id(_params: &()) -> CodecId {
        CodecId::Stored
    }

    fn max_compressed_len(_params: &(), len: usize) -> usize {
        len
    }

    fn compress(_params: &(), input: &[u8]) -> Result<Vec<u8>> {
        Ok(input.to_vec())
    }

    fn claimed_len(_id: CodecId, stream: &[u8]) -> Result<u64> {
        Ok(stream.len() as u64)
    }

    fn decompress_with_limit(_id: CodecId, stream: &[u8], _expected: usize) -> Result<Vec<u8>> {
        Ok(stream.to_vec())
    }

    fn decompress_into(_id: CodecId, stream: &[u8], out: &mut [u8]) -> Result<()> {
        if stream.len() != out.len() {
            return Err(wrong_len(NAME, stream.len(), out.len()));
        }
        out.copy_from_slice(stream);
        Ok(())
    }
}
