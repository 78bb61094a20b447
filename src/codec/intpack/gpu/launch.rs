//! Launchers of the `intpack` kernels: the encoder and the compaction
//! (`kernels/intpack_compress.cu`) and the decoder (`kernels/intpack_decompress.cu`),
//! with the launch shapes and shared memory each kernel's source assumes and the
//! decoder's reason codes (a Rust enum, passed to the kernel file as `-D` defines); and
//! intpack as a [`BlockCodec`]. The prefix sum of the encodings' sizes and the launch
//! sequences around these kernels are shared with lzss
//! ([`crate::codec::blocks_gpu::launch`]): a launch covers the blocks of one or more
//! streams of the same width `W`, each block given by its place (a multiple of 8) and its
//! value count.

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};

use crate::codec::blocks_gpu::launch::{
    BlockDecoder, BlockEncoder, CompressLaunch, DecodeLaunch, ReasonCode, reason_codes,
    scan_function,
};
use crate::codec::blocks_gpu::{BlockCodec, Buffers, Table, Words};
use crate::codec::intpack::{self, BLOCK_VALUES, IntpackParams, StreamLayout};
use crate::codec::varint;
use crate::gpu::{Define, Gpu, GpuResult, KernelSource, SharedOptIn, allow_shared, launch_error};

/// The encoder and the compaction (after the shared arithmetic of both kernel files).
pub const INTPACK_COMPRESS: KernelSource = KernelSource {
    name: "intpack_compress.cu",
    source: concat!(
        include_str!("../../../../kernels/intpack_common.cuh"),
        include_str!("../../../../kernels/intpack_compress.cu")
    ),
};
/// The decoder (after the shared arithmetic of both kernel files).
pub const INTPACK_DECOMPRESS: KernelSource = KernelSource {
    name: "intpack_decompress.cu",
    source: concat!(
        include_str!("../../../../kernels/intpack_common.cuh"),
        include_str!("../../../../kernels/intpack_decompress.cu")
    ),
};

/// Threads of an encoder or decoder block (one per 1024-value block): each owns 4
/// consecutive values.
const THREADS: u32 = 256;
/// Threads of a compaction block (one per encoding).
const COMPACT_THREADS: u32 = 128;

/// The block shape both kernel files are compiled with.
fn shape_defines() -> Vec<Define> {
    vec![
        Define::new("INTPACK_BLOCK_VALUES", BLOCK_VALUES),
        Define::new("INTPACK_THREADS", THREADS),
    ]
}

/// Every kernel file of intpack with the defines its launchers compile it with (the scan
/// is shared, listed in [`crate::codec::blocks_gpu::launch`]).
pub(crate) fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
    let mut decode = shape_defines();
    decode.extend(IntpackDecodeError::defines());
    vec![
        (INTPACK_COMPRESS, shape_defines()),
        (INTPACK_DECOMPRESS, decode),
    ]
}

reason_codes! {
    /// Why the decoder rejected a block (`E_*` in `kernels/intpack_decompress.cu`), in the
    /// CPU decoder's words where it has them.
    pub enum IntpackDecodeError {
        Total = 1, "E_TOTAL", "the block sizes do not add up to the encodings";
        Size = 2, "E_SIZE",
            "a block size is 0, longer than any encoding of its values, or past the stream";
        Scheme = 3, "E_SCHEME", "scheme byte greater than 5";
        Width = 4, "E_WIDTH",
            "frame's b larger than 8w, b > 0 in a frame of no values, or an exception \
             frame's h of 0 or b + h larger than 8w";
        Count = 5, "E_COUNT",
            "run count r, dictionary size d or exception count e of 0 or more than the \
             block's values";
        Length = 6, "E_LENGTH", "the block's encoding does not fill exactly its size";
        Runs = 7, "E_RUNS",
            "run of length 0, or run lengths that do not add up to the block's values";
        Index = 8, "E_INDEX", "dictionary index not below d";
        Exceptions = 9, "E_EXCEPTIONS",
            "exception positions not ascending or not below the block's values";
    }
}

/// What the launchers need of a stream's parameters: its width `W` (1, 2, 4 or 8, the
/// caller has validated it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct IntpackShape {
    /// Value width `W` in bytes.
    pub width: u8,
}

/// intpack as the shared pipelines see it: blocks are 1024 values of `W` bytes, each
/// given to the kernels by its value count, with a scratch slot of its longest encoding.
impl BlockCodec for IntpackShape {
    type Reason = IntpackDecodeError;
    type Encoder = CompressKernels;
    type Decoder = DecodeKernels;
    type Layout = StreamLayout;

    const WORDS: Words = Words {
        codec: intpack::NAME,
        block: "block",
        places: "block places",
        lens: "block value counts",
        payload: "bytes of encodings",
        grid_blocks: "intpack blocks",
        one_set: "one width",
        decode_checks_blocks: true,
    };
    const BUFFERS: Buffers = Buffers {
        input: "intpack.in",
        meta: "intpack.meta",
        scratch: "intpack.scratch",
        sizes: "intpack.sizes",
        offsets: "intpack.offsets",
        out: "intpack.out",
        staged: "intpack.staged",
        error: "intpack.error",
    };

    fn of_layout(layout: &StreamLayout) -> Self {
        IntpackShape {
            width: layout.width as u8,
        }
    }

    fn table(layout: &StreamLayout) -> Table<'_> {
        let blocks = layout.offsets.len() - 1;
        Table {
            len: layout.len,
            body: layout.body,
            table_at: layout.blocks_at - 2 * blocks,
            payload_at: layout.blocks_at,
            offsets: &layout.offsets,
        }
    }

    fn value_width(&self) -> usize {
        usize::from(self.width)
    }

    fn block_bytes(&self) -> usize {
        BLOCK_VALUES * usize::from(self.width)
    }

    fn block_len(&self, body: usize, k: usize) -> u16 {
        block_values(body, usize::from(self.width), k)
    }

    fn slot_bytes(&self) -> usize {
        slot_bytes(self.width)
    }

    /// The table and every block's longest encoding.
    fn out_bytes(&self, blocks: usize, _input: usize) -> usize {
        blocks * (2 + slot_bytes(self.width))
    }

    fn header(&self, len: usize) -> Vec<u8> {
        header(self.width, len)
    }

    fn max_compressed_len(&self, len: usize) -> usize {
        intpack::max_compressed_len(len, &IntpackParams { width: self.width })
    }

    fn encoder(&self, gpu: &Gpu) -> GpuResult<CompressKernels> {
        CompressKernels::new(gpu, self.width)
    }

    fn decoder(&self, gpu: &Gpu) -> GpuResult<DecodeKernels> {
        DecodeKernels::new(gpu, self.width)
    }
}

fn round8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// Bytes of a block's slot in the encoder's scratch: its longest encoding (scheme 0 with
/// `b = 8W`, `2 + W + 1024 W`) rounded up to 8 (`slot_bytes` in intpack_compress.cu).
fn slot_bytes(width: u8) -> usize {
    let w = usize::from(width);
    round8(2 + w + BLOCK_VALUES * w)
}

/// Shared memory of the encoder: values, sorted values, run starts and the encoding
/// (the layout written in intpack_compress.cu).
fn compress_shared_bytes(width: u8) -> usize {
    let w = usize::from(width);
    2 * BLOCK_VALUES * w + 2 * BLOCK_VALUES + slot_bytes(width) + 8
}

/// Shared memory of the decoder: the staged encoding (at most its longest valid length,
/// `7 + W + 1024 (W + 2)`: runs with `r = n`), the run or dictionary values and the run
/// starts (the layout written in intpack_decompress.cu).
fn decode_shared_bytes(width: u8) -> usize {
    let w = usize::from(width);
    round8(7 + w + BLOCK_VALUES * (w + 2)) + BLOCK_VALUES * w + 4 * BLOCK_VALUES
}

/// The opt-in to shared memory of the encoder and the decoder: exactly what they need (a
/// function per width, always launched with the same amount).
const SHARED_OPT_IN: SharedOptIn = SharedOptIn::Needed;

/// The compression kernels for one width.
pub(crate) struct CompressKernels {
    encode: CudaFunction,
    scan: CudaFunction,
    compact: CudaFunction,
    width: u8,
    shared_bytes: usize,
}

impl CompressKernels {
    pub(crate) fn new(gpu: &Gpu, width: u8) -> GpuResult<Self> {
        let defines = shape_defines();
        let encode = gpu.function(
            &INTPACK_COMPRESS,
            &defines,
            &format!("intpack_encode_w{width}"),
        )?;
        let shared_bytes = compress_shared_bytes(width);
        allow_shared(
            gpu,
            &encode,
            shared_bytes,
            "intpack compression",
            SHARED_OPT_IN,
        )?;
        Ok(CompressKernels {
            encode,
            scan: scan_function(gpu)?,
            compact: gpu.function(&INTPACK_COMPRESS, &defines, "intpack_compact")?,
            width,
            shared_bytes,
        })
    }
}

impl BlockEncoder for CompressKernels {
    fn scan(&self) -> &CudaFunction {
        &self.scan
    }

    fn encode(&self, stream: &CudaStream, l: &mut CompressLaunch<'_>, grid: u32) -> GpuResult<()> {
        let blocks = l.blocks as u64;
        let mut launch = stream.launch_builder(&self.encode);
        launch
            .arg(&l.input)
            .arg(&l.block_in)
            .arg(&l.block_lens)
            .arg(&blocks)
            .arg(&mut l.scratch)
            .arg(&mut l.sizes);
        let config = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: self.shared_bytes as u32,
        };
        // SAFETY: block i reads its values (within `input`, as the caller placed them) and
        // writes its encoding within scratch[i * slot .. (i + 1) * slot] and sizes[i].
        unsafe { launch.launch(config) }.map_err(launch_error)?;
        Ok(())
    }

    fn compact(&self, stream: &CudaStream, l: &mut CompressLaunch<'_>, grid: u32) -> GpuResult<()> {
        let blocks = l.blocks as u64;
        let slot_stride = slot_bytes(self.width) as u32;
        let mut launch = stream.launch_builder(&self.compact);
        launch
            .arg(&mut l.scratch)
            .arg(&slot_stride)
            .arg(&mut l.sizes)
            .arg(&mut l.offsets)
            .arg(&blocks)
            .arg(&mut l.out);
        let config = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (COMPACT_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: writes the table (2 * blocks bytes) and encodings of at most a slot each;
        // the caller sized `out` for the table and every block's longest encoding.
        unsafe { launch.launch(config) }
            .map(|_| ())
            .map_err(launch_error)
    }
}

/// The decoder's kernels for one width.
pub(crate) struct DecodeKernels {
    decode: CudaFunction,
    scan: CudaFunction,
    shared_bytes: usize,
}

impl DecodeKernels {
    pub(crate) fn new(gpu: &Gpu, width: u8) -> GpuResult<Self> {
        let mut defines = shape_defines();
        defines.extend(IntpackDecodeError::defines());
        let decode = gpu.function(
            &INTPACK_DECOMPRESS,
            &defines,
            &format!("intpack_decode_w{width}"),
        )?;
        let shared_bytes = decode_shared_bytes(width);
        allow_shared(
            gpu,
            &decode,
            shared_bytes,
            "intpack decompression",
            SHARED_OPT_IN,
        )?;
        Ok(DecodeKernels {
            decode,
            scan: scan_function(gpu)?,
            shared_bytes,
        })
    }
}

impl BlockDecoder for DecodeKernels {
    fn scan(&self) -> &CudaFunction {
        &self.scan
    }

    fn decode(&self, stream: &CudaStream, l: &mut DecodeLaunch<'_>, grid: u32) -> GpuResult<()> {
        let blocks = l.blocks as u64;
        let payload_len = l.payload_len as u64;
        let mut launch = stream.launch_builder(&self.decode);
        launch
            .arg(&l.table_and_payload)
            .arg(&mut l.offsets)
            .arg(&blocks)
            .arg(&payload_len)
            .arg(&l.block_out)
            .arg(&l.block_lens)
            .arg(&mut l.out)
            .arg(&mut l.error);
        let config = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: self.shared_bytes as u32,
        };
        // SAFETY: the decoder checks every size and field against the lengths passed here
        // before reading; block i writes only its values at out[block_out[i] ..], which the
        // caller placed within `out`.
        unsafe { launch.launch(config) }
            .map(|_| ())
            .map_err(launch_error)
    }
}

/// The stream header: version, `W` and the input's length as a varint.
fn header(width: u8, len: usize) -> Vec<u8> {
    let mut header = vec![intpack::VERSION, width];
    varint::write_u64(&mut header, len as u64);
    header
}

/// Values in block `k` of a body of `body` bytes of `width`-byte values.
fn block_values(body: usize, width: usize, k: usize) -> u16 {
    (body / width - k * BLOCK_VALUES).min(BLOCK_VALUES) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_fits_every_width_on_a_48_kib_device() {
        // Besides the dynamic part, about 1 KiB of static shared memory in the encoder
        // (reductions, scan, the bit histogram) and less in the decoder.
        for width in [1u8, 2, 4, 8] {
            assert!(compress_shared_bytes(width) + 2048 <= 48 << 10, "W={width}");
            assert!(decode_shared_bytes(width) + 1024 <= 48 << 10, "W={width}");
        }
        assert_eq!(slot_bytes(8), 8208);
    }

    #[test]
    fn header_and_block_values() {
        assert_eq!(block_values(4 * 2500, 4, 2), 2500 - 2048);
        assert_eq!(header(4, 300), [1, 4, 0xac, 0x02]);
    }

    #[test]
    fn reason_codes_round_trip() {
        for &(e, _) in IntpackDecodeError::ALL {
            assert_eq!(IntpackDecodeError::from_code(e as u32), Some(e));
        }
        assert_eq!(IntpackDecodeError::from_code(0), None);
    }
}
