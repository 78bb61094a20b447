//! The registry: the one list of colzip's codecs. A codec is a folder implementing
//! `CodecFamily` and one line here; from this list come the settled codec ([`Codec`]),
//! the spec ([`CodecSpec`]), the lookup of a stream's codec by its id, and every list of
//! codec names the CLI, SQL, `auto` and the measurements show ([`codecs`]).

use std::fmt;

use super::error::Result;
use super::id::CodecId;
use super::interface::{
    AutoUse, CodecFamily, DeviceJob, Direction, Sink, SpecOption, Suited, id_name,
};
use crate::gpu::{Define, Gpu, HostMemory, KernelSource, Lane};
use cudarc::driver::CudaView;

/// Writes [`Codec`], [`CodecSpec`], their dispatch to each codec's [`CodecFamily`], and
/// the list of families, from one line per codec: its variant, then its module (a folder
/// of `codec/`) with the family type, the settled parameters and the spec's options it
/// defines. The fallback, `stored`, is a unit variant and comes last in lists.
macro_rules! registry {
    (
        $(#[$stored_doc:meta])* fallback $stored:ident($stored_module:ident: $stored_family:ident);
        $( $(#[$doc:meta])* $variant:ident($module:ident: $family:ident, $params:ident, $options:ident), )*
    ) => {
        registry! {
            @paths
            $(#[$stored_doc])* fallback $stored(super::$stored_module::$stored_family);
            $( $(#[$doc])* $variant(
                super::$module::$family,
                super::$module::$params,
                super::$module::$options
            ), )*
        }
    };
    (
        @paths
        $(#[$stored_doc:meta])* fallback $stored:ident($stored_family:ty);
        $( $(#[$doc:meta])* $variant:ident($family:ty, $params:ty, $options:ty), )*
    ) => {
        /// A codec with its parameters settled: what every buffer of a batch is compressed
        /// with.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Codec {
            $( $(#[$doc])* $variant($params), )*
            $(#[$stored_doc])* $stored,
        }

        /// A codec and its parameters, as a user names them; parameters that depend on
        /// the data may be left open, for [`CodecSpec::settle`] to fix.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum CodecSpec {
            $( $(#[$doc])* $variant($options), )*
            $(#[$stored_doc])* $stored,
        }

        /// Every codec, in the order lists of codecs show them.
        static FAMILIES: &[&(dyn Registered + Sync)] =
            &[$( &Family::<$family>::VALUE, )* &Family::<$stored_family>::VALUE];

        impl Codec {
            /// The id of the streams this codec writes.
            pub fn id(&self) -> CodecId {
                match self {
                    $( Codec::$variant(p) => <$family as CodecFamily>::id(p), )*
                    Codec::$stored => <$stored_family as CodecFamily>::id(&()),
                }
            }

            /// The largest stream an input of `len` bytes can give: an output buffer of
            /// this size always suffices.
            pub fn max_compressed_len(&self, len: usize) -> usize {
                match self {
                    $( Codec::$variant(p) => <$family as CodecFamily>::max_compressed_len(p, len), )*
                    Codec::$stored => <$stored_family as CodecFamily>::max_compressed_len(&(), len),
                }
            }

            /// Device memory one pipeline lane takes for a step of `step` input bytes.
            pub(crate) fn gpu_bytes_per_lane(&self, step: usize) -> usize {
                match self {
                    $( Codec::$variant(p) => <$family as CodecFamily>::gpu_bytes_per_lane(p, step), )*
                    Codec::$stored => <$stored_family as CodecFamily>::gpu_bytes_per_lane(&(), step),
                }
            }

            /// One buffer's stream, on the CPU.
            pub(crate) fn compress_on_cpu(&self, input: &[u8]) -> Result<Vec<u8>> {
                match self {
                    $( Codec::$variant(p) => <$family as CodecFamily>::compress(p, input), )*
                    Codec::$stored => <$stored_family as CodecFamily>::compress(&(), input),
                }
            }

            /// Compresses `inputs` on `gpu` into `sink`; returns each stream's length.
            pub(crate) fn compress_on_gpu(
                &self,
                gpu: &Gpu,
                inputs: &[&[u8]],
                memory: HostMemory,
                sink: &mut Sink<'_, '_>,
            ) -> Result<Vec<usize>> {
                match self {
                    $( Codec::$variant(p) => <$family as CodecFamily>::compress_gpu(gpu, p, inputs, memory, sink), )*
                    Codec::$stored => <$stored_family as CodecFamily>::compress_gpu(gpu, &(), inputs, memory, sink),
                }
            }

            /// `inputs` uploaded to `gpu` and kept there (see
            /// [`Codec::device_compressor`]).
            pub(crate) fn device_job(
                &self,
                gpu: &Gpu,
                lane: &mut Lane,
                inputs: &[&[u8]],
            ) -> Result<Box<dyn DeviceJob>> {
                match self {
                    $( Codec::$variant(p) => <$family as CodecFamily>::device_compressor(gpu, lane, p, inputs), )*
                    Codec::$stored => <$stored_family as CodecFamily>::device_compressor(gpu, lane, &(), inputs),
                }
            }
        }

        impl CodecSpec {
            /// The id of the streams this spec writes.
            pub fn id(&self) -> CodecId {
                match self {
                    $( CodecSpec::$variant(o) => <$family as CodecFamily>::spec_id(o), )*
                    CodecSpec::$stored => <$stored_family as CodecFamily>::spec_id(&()),
                }
            }

            /// The codec family's name, without parameters.
            pub fn family(&self) -> &'static str {
                match self {
                    $( CodecSpec::$variant(_) => <$family as CodecFamily>::NAME, )*
                    CodecSpec::$stored => <$stored_family as CodecFamily>::NAME,
                }
            }

            /// The spec of a family's bare name (its default options), or `None` for a
            /// name no codec has.
            pub fn named(name: &str) -> Option<CodecSpec> {
                $( if Family::<$family>::VALUE.is_named(name) {
                    return Some(CodecSpec::$variant(<$family as CodecFamily>::default_options()));
                } )*
                Family::<$stored_family>::VALUE.is_named(name).then_some(CodecSpec::$stored)
            }

            /// The spec `name` (a family's name or alias) and `options` give; `None` for a
            /// name no codec has, else the options' error.
            pub(crate) fn parse_named(
                name: &str,
                options: &[SpecOption<'_>],
            ) -> Option<std::result::Result<CodecSpec, String>> {
                $( if Family::<$family>::VALUE.is_named(name) {
                    return Some(<$family as CodecFamily>::parse_options(options).map(CodecSpec::$variant));
                } )*
                Family::<$stored_family>::VALUE.is_named(name).then(|| {
                    <$stored_family as CodecFamily>::parse_options(options).map(|()| CodecSpec::$stored)
                })
            }

            /// The codec with its parameters settled for data of `type_width` bytes per
            /// value (1 for plain bytes), judged on `sample` where the spec leaves them
            /// open (lzss's symbol width; intpack's value width is the largest of 8, 4, 2
            /// and 1 dividing `type_width`).
            pub fn settle(&self, type_width: usize, sample: &[u8]) -> Result<Codec> {
                Ok(match self {
                    $( CodecSpec::$variant(o) => Codec::$variant(<$family as CodecFamily>::settle(o, type_width, sample)?), )*
                    CodecSpec::$stored => {
                        <$stored_family as CodecFamily>::settle(&(), type_width, sample)?;
                        Codec::$stored
                    }
                })
            }
        }

        impl fmt::Display for CodecSpec {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( CodecSpec::$variant(o) => <$family as CodecFamily>::write_spec(o, f), )*
                    CodecSpec::$stored => <$stored_family as CodecFamily>::write_spec(&(), f),
                }
            }
        }
    };
}

registry! {
    /// No compression (what the container falls back to when a codec would expand data).
    fallback Stored(stored: Stored);
    /// Multi-byte LZSS.
    Lzss(lzss: Lzss, LzssParams, LzssOptions),
    /// G-match, writing Snappy.
    Gmatch(gmatch: Gmatch, SnappyFormat, SnappyFormat),
    /// BWT + move-to-front + Huffman.
    Bwt(bwt: Bwt, BwtParams, BwtParams),
    /// Integers by frame of reference, delta, runs and dictionary, bit-packed.
    Intpack(intpack: Intpack, IntpackParams, IntpackOptions),
}

/// What the registry tells of a codec: its names and spec syntax (for help texts, parsers
/// and lists of codecs), what it suits and whether `auto` tries it.
#[derive(Clone, Copy, Debug)]
pub struct CodecInfo {
    /// The name in specs (`gmatch`).
    pub name: &'static str,
    /// Other names a spec accepts (`snappy`).
    pub aliases: &'static [&'static str],
    /// The spec's syntax (`gmatch[:raw|framed]`).
    pub syntax: &'static str,
    /// Every stream id, with its name.
    pub ids: &'static [(CodecId, &'static str)],
    /// What it compresses well.
    pub suited: Suited,
    /// Whether and where `auto` tries it.
    pub auto: Option<AutoUse>,
    /// Whether it has a GPU path (in either direction, for some stream id).
    pub has_gpu_path: bool,
}

/// Every codec, in the order lists of codecs show them (`stored` last).
pub fn codecs() -> impl Iterator<Item = CodecInfo> {
    FAMILIES.iter().map(|family| family.info())
}

/// The names of the codecs that suit `suited`, in registry order.
pub fn names_suited(suited: Suited) -> Vec<&'static str> {
    codecs()
        .filter(|c| c.suited == suited)
        .map(|c| c.name)
        .collect()
}

/// Every codec's syntax joined by `", "` (`lzss[:…], gmatch[:raw|framed], …, stored`), for
/// help texts.
pub fn syntax_list() -> String {
    codecs().map(|c| c.syntax).collect::<Vec<_>>().join(", ")
}

/// `names` as an English list: `a, b, c or d`.
pub fn or_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// The family of a registered stream id.
fn family_of(id: CodecId) -> &'static (dyn Registered + Sync) {
    FAMILIES
        .iter()
        .copied()
        .find(|family| family.has_id(id))
        .expect("every CodecId is a registered codec's")
}

impl CodecId {
    /// The id stored in a container byte, or `None` for one no codec has.
    pub fn from_u8(byte: u8) -> Option<Self> {
        let id = CodecId::from_byte(byte);
        FAMILIES.iter().any(|f| f.has_id(id)).then_some(id)
    }

    /// The short name (`stored`, `lzss`, `gmatch`, `gmatch:raw`, `gmatch:framed`, `bwt`,
    /// `intpack`).
    pub fn name(self) -> &'static str {
        family_of(self).id_name(self)
    }

    /// Whether the codec has a GPU path in `direction`: the batched calls run it on the
    /// GPU when their [`Placement`](super::Placement) says so. The others run on the CPU
    /// whatever the backend.
    pub fn has_gpu_path(self, direction: Direction) -> bool {
        family_of(self).has_gpu_path(self, direction)
    }

    /// Whether this codec's device-resident decoder leaves each stream's output in device
    /// memory where a caller can read it ([`DeviceJob::stream_outputs`]).
    pub fn decodes_into_device_memory(self) -> bool {
        family_of(self).decodes_into_device_memory()
    }

    /// The output length a stream of this codec claims in its header.
    pub fn claimed_len(self, stream: &[u8]) -> Result<u64> {
        family_of(self).claimed_len(self, stream)
    }

    /// One stream's output on the CPU, at most `expected` bytes.
    pub(crate) fn decompress_with_limit(self, stream: &[u8], expected: usize) -> Result<Vec<u8>> {
        family_of(self).decompress_with_limit(self, stream, expected)
    }

    /// One stream's output on the CPU into `out`, exactly `out.len()` bytes.
    pub(crate) fn decompress_exact(self, stream: &[u8], out: &mut [u8]) -> Result<()> {
        family_of(self).decompress_into(self, stream, out)
    }

    /// Decodes `inputs` on `gpu` into `sink`.
    pub(crate) fn decompress_on_gpu(
        self,
        gpu: &Gpu,
        inputs: &[&[u8]],
        lens: &[usize],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<()> {
        family_of(self).decompress_gpu(gpu, self, inputs, lens, memory, sink)
    }

    /// `streams` uploaded to `gpu` and kept there (see
    /// [`CodecId::device_decompressor`]).
    pub(crate) fn device_job(
        self,
        gpu: &Gpu,
        lane: &mut Lane,
        streams: &[&[u8]],
        resident: Option<&[CudaView<'_, u8>]>,
        lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>> {
        family_of(self).device_decompressor(gpu, lane, self, streams, resident, lens)
    }
}

impl fmt::Debug for CodecId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match FAMILIES.iter().find(|family| family.has_id(*self)) {
            Some(family) => write!(f, "CodecId({})", family.id_name(*self)),
            None => write!(f, "CodecId({})", self.to_u8()),
        }
    }
}

/// Every kernel file of the codecs with the `-D` defines its launchers compile it with.
pub(crate) fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
    FAMILIES.iter().flat_map(|f| f.kernel_builds()).collect()
}

/// A family as the lookups by name and id see it: [`CodecFamily`]'s functions that need
/// no parameters, callable on a value.
trait Registered {
    fn info(&self) -> CodecInfo;
    fn is_named(&self, name: &str) -> bool;
    fn has_id(&self, id: CodecId) -> bool;
    fn id_name(&self, id: CodecId) -> &'static str;
    fn has_gpu_path(&self, id: CodecId, direction: Direction) -> bool;
    fn decodes_into_device_memory(&self) -> bool;
    fn kernel_builds(&self) -> Vec<(KernelSource, Vec<Define>)>;
    fn claimed_len(&self, id: CodecId, stream: &[u8]) -> Result<u64>;
    fn decompress_with_limit(&self, id: CodecId, stream: &[u8], expected: usize)
    -> Result<Vec<u8>>;
    fn decompress_into(&self, id: CodecId, stream: &[u8], out: &mut [u8]) -> Result<()>;
    fn decompress_gpu(
        &self,
        gpu: &Gpu,
        id: CodecId,
        inputs: &[&[u8]],
        lens: &[usize],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<()>;
    fn device_decompressor(
        &self,
        gpu: &Gpu,
        lane: &mut Lane,
        id: CodecId,
        streams: &[&[u8]],
        resident: Option<&[CudaView<'_, u8>]>,
        lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>>;
}

/// A family's value in the list (the families are types; the list holds values).
struct Family<F>(std::marker::PhantomData<F>);

impl<F> Family<F> {
    const VALUE: Self = Family(std::marker::PhantomData);
}

impl<F: CodecFamily> Registered for Family<F> {
    fn info(&self) -> CodecInfo {
        CodecInfo {
            name: F::NAME,
            aliases: F::ALIASES,
            syntax: F::SYNTAX,
            ids: F::IDS,
            suited: F::SUITED,
            auto: F::AUTO,
            has_gpu_path: F::IDS.iter().any(|&(id, _)| {
                F::has_gpu_path(id, Direction::Compress)
                    || F::has_gpu_path(id, Direction::Decompress)
            }),
        }
    }

    fn is_named(&self, name: &str) -> bool {
        std::iter::once(&F::NAME)
            .chain(F::ALIASES)
            .any(|n| n.eq_ignore_ascii_case(name))
    }

    fn has_id(&self, id: CodecId) -> bool {
        F::IDS.iter().any(|&(listed, _)| listed == id)
    }

    fn id_name(&self, id: CodecId) -> &'static str {
        id_name::<F>(id)
    }

    fn has_gpu_path(&self, id: CodecId, direction: Direction) -> bool {
        F::has_gpu_path(id, direction)
    }

    fn decodes_into_device_memory(&self) -> bool {
        F::DEVICE_STREAM_OUTPUTS
    }

    fn kernel_builds(&self) -> Vec<(KernelSource, Vec<Define>)> {
        F::kernel_builds()
    }

    fn claimed_len(&self, id: CodecId, stream: &[u8]) -> Result<u64> {
        F::claimed_len(id, stream)
    }

    fn decompress_with_limit(
        &self,
        id: CodecId,
        stream: &[u8],
        expected: usize,
    ) -> Result<Vec<u8>> {
        F::decompress_with_limit(id, stream, expected)
    }

    fn decompress_into(&self, id: CodecId, stream: &[u8], out: &mut [u8]) -> Result<()> {
        F::decompress_into(id, stream, out)
    }

    fn decompress_gpu(
        &self,
        gpu: &Gpu,
        id: CodecId,
        inputs: &[&[u8]],
        lens: &[usize],
        memory: HostMemory,
        sink: &mut Sink<'_, '_>,
    ) -> Result<()> {
        F::decompress_gpu(gpu, id, inputs, lens, memory, sink)
    }

    fn device_decompressor(
        &self,
        gpu: &Gpu,
        lane: &mut Lane,
        id: CodecId,
        streams: &[&[u8]],
        resident: Option<&[CudaView<'_, u8>]>,
        lens: &[usize],
    ) -> Result<Box<dyn DeviceJob>> {
        F::device_decompressor(gpu, lane, id, streams, resident, lens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_are_unique() {
        let ids: Vec<u8> = codecs()
            .flat_map(|c| c.ids.iter().map(|(id, _)| id.to_u8()))
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            ids.len(),
            "an id is registered twice: {ids:?}"
        );
        let mut names: Vec<String> = codecs()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .map(str::to_ascii_lowercase)
            .collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a name is registered twice");
    }

    #[test]
    fn every_id_reads_back_and_names_itself() {
        for info in codecs() {
            for &(id, name) in info.ids {
                assert_eq!(CodecId::from_u8(id.to_u8()), Some(id));
                assert_eq!(id.name(), name);
            }
        }
        assert_eq!(CodecId::from_u8(200), None);
    }

    #[test]
    fn every_bare_name_is_a_spec_of_its_family() {
        for info in codecs() {
            let spec = CodecSpec::named(info.name).unwrap();
            assert_eq!(spec.family(), info.name);
            assert_eq!(info.name.parse::<CodecSpec>().unwrap(), spec);
        }
    }
}
