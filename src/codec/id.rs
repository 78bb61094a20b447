//! The codec of a stream, as the one byte containers store.

/// The codec of a stream, as one byte in containers. Each codec defines the ids of its
/// streams in its own folder (`CodecId::Lzss` in `lzss/family.rs`), and the registry
/// checks that no two codecs share one; [`CodecId::from_u8`] accepts only registered ids.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodecId(u8);

impl CodecId {
    /// The id stored as `byte` (for a codec's own definition of its ids).
    pub(crate) const fn from_byte(byte: u8) -> Self {
        CodecId(byte)
    }

    /// The byte containers store.
    pub const fn to_u8(self) -> u8 {
        self.0
    }
}

impl From<CodecId> for u8 {
    fn from(id: CodecId) -> u8 {
        id.0
    }
}
