//! Decompression bombs (issue 13): small inputs whose headers claim gigabytes fail
//! without allocating their claims, and memory follows the output actually produced.
//! One test function, so that the counting allocator measures one case at a time.

mod crafted;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use colzip::archive::{ArchiveReader, ArchiveWriter, RawType, Source};
use colzip::codec::{CodecError, bwt, gmatch, lzss};
use colzip::column::CodecChoice;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            PEAK.fetch_max(
                LIVE.fetch_add(layout.size(), Relaxed) + layout.size(),
                Relaxed,
            );
        }
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            if new_size >= layout.size() {
                let grown = new_size - layout.size();
                PEAK.fetch_max(LIVE.fetch_add(grown, Relaxed) + grown, Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the peak of heap bytes it added.
fn peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let value = f();
    (value, PEAK.load(Relaxed) - base)
}

const MIB: usize = 1 << 20;

#[test]
fn bombs_fail_without_allocating_their_claims() {
    // bwt: 14 KB whose block directory claims 64 GiB (the archive aborted on a
    // 64 GiB allocation). The first block fails; one block's output was allocated.
    let (stream, claim) = crafted::bwt_directory_bomb(1024);
    assert!(stream.len() < 15_000 && claim == 64 << 30);
    let (result, used) = peak(|| bwt::decompress(&stream));
    assert!(
        matches!(result, Err(CodecError::Corrupt { .. })),
        "{result:?}"
    );
    assert!(used < 256 * MIB, "bwt bomb used {used} bytes");

    // The same kind of stream (16 blocks: 1 GiB) as a column of a raw `bytes` archive,
    // all checksums valid. (A batch claiming more than the machine's memory is refused
    // before decoding, like one over `--max-output`.)
    let (archive, _) = crafted::bwt_bomb_archive(16);
    let (result, used) = peak(|| ArchiveReader::new(archive.as_slice())?.next_batch());
    assert!(
        matches!(
            result,
            Err(colzip::Error::Codec(CodecError::Corrupt { .. }))
        ),
        "{result:?}"
    );
    assert!(used < 256 * MIB, "bwt bomb in an archive used {used} bytes");
    // With a limit, it is refused before any decoding.
    let (result, used) = peak(|| {
        ArchiveReader::new(archive.as_slice())?
            .with_max_output(1 << 29)
            .next_batch()
    });
    assert!(
        matches!(result, Err(colzip::Error::TooLarge { .. })),
        "{result:?}"
    );
    assert!(used < MIB, "refused bwt bomb used {used} bytes");

    // lzss: one-byte chunks claiming 16 KiB each (3 MB claiming 3.2 GB) are refused by
    // the size table check; chunks of the smallest encoded size fail at the first step.
    let (stream, _) = crafted::lzss_bomb(200_000, 1);
    let (result, used) = peak(|| lzss::decompress(&stream));
    assert!(
        matches!(result, Err(CodecError::Corrupt { .. })),
        "{result:?}"
    );
    assert!(used < 4 * MIB, "lzss bomb used {used} bytes");
    let (stream, claim) = crafted::lzss_bomb(100_000, 28);
    assert!(claim > 1 << 30);
    let (result, used) = peak(|| lzss::decompress(&stream));
    assert!(
        matches!(result, Err(CodecError::Corrupt { .. })),
        "{result:?}"
    );
    assert!(used < 32 * MIB, "lzss minimal-chunk bomb used {used} bytes");

    // Snappy raw: a claim of 64/3 of the elements (the most they can produce), whose
    // first element is bad, allocates at most 8 bytes per stream byte.
    let body = vec![0b10u8; 3 << 20]; // copy-2 elements with offset 0
    let mut stream = Vec::new();
    colzip::codec::varint::write_u64(
        &mut stream,
        (body.len() as u64 * 64 / 3).min(u32::MAX as u64),
    );
    stream.extend_from_slice(&body);
    let (result, used) = peak(|| gmatch::decompress_raw(&stream));
    assert!(
        matches!(result, Err(CodecError::Corrupt { .. })),
        "{result:?}"
    );
    assert!(
        used <= 8 * body.len() + MIB,
        "Snappy raw bomb used {used} bytes"
    );

    // A valid framed stream of 64 MiB decoded to a sink: memory is a step, not the output.
    let framed = gmatch::compress_framed(&vec![0u8; 64 * MIB]);
    let (result, used) =
        peak(|| gmatch::decompress_framed_to(&framed, usize::MAX, |_| Ok::<(), CodecError>(())));
    assert_eq!(result.unwrap(), 64 * MIB as u64);
    assert!(
        used < 20 * MIB,
        "streamed framed decoding used {used} bytes"
    );

    // Valid bwt blocks (16 MiB of zeros in 2 KB) in an archive: `--max-output` refuses
    // the batch before decoding it.
    let schema = RawType::Bytes.schema();
    let zeros = arrow::array::UInt8Array::from(vec![0u8; 16 * MIB]);
    let batch =
        arrow::array::RecordBatch::try_new(schema.clone(), vec![std::sync::Arc::new(zeros)])
            .unwrap();
    let mut writer = ArchiveWriter::new(Vec::new(), schema, Source::Raw(RawType::Bytes)).unwrap();
    writer
        .write_batch(&batch, &"bwt:block=64k".parse::<CodecChoice>().unwrap())
        .unwrap();
    let archive = writer.finish(false).unwrap();
    drop(batch);
    assert!(archive.len() < 64 << 10, "{} bytes", archive.len());
    let (result, used) = peak(|| {
        ArchiveReader::new(archive.as_slice())?
            .with_max_output(MIB as u64)
            .next_batch()
    });
    assert!(
        matches!(result, Err(colzip::Error::TooLarge { .. })),
        "{result:?}"
    );
    assert!(
        used < 4 * archive.len() + MIB,
        "refused archive used {used} bytes"
    );

    // A valid archive of 8 batches of 8 MiB decodes to a file with the memory of about
    // one batch: issue 13's target is 2x the largest block plus the output written.
    let schema = RawType::Int32.schema();
    let mut writer =
        ArchiveWriter::new(Vec::new(), schema.clone(), Source::Raw(RawType::Int32)).unwrap();
    let batch_bytes = 8 * MIB;
    let mut largest_compressed = 0;
    for b in 0..8 {
        let values = arrow::array::Int32Array::from_iter_values(
            (0..(batch_bytes / 4) as i32).map(|i| i / 16 + b),
        );
        let batch =
            arrow::array::RecordBatch::try_new(schema.clone(), vec![std::sync::Arc::new(values)])
                .unwrap();
        let columns = writer
            .write_batch(&batch, &"lzss".parse::<CodecChoice>().unwrap())
            .unwrap();
        largest_compressed = largest_compressed.max(columns[0].compressed_bytes());
    }
    let archive = writer.finish(false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batches.czip");
    std::fs::write(&path, &archive).unwrap();
    drop(archive);
    let out = dir.path().join("batches.out");
    let (result, used) = peak(|| {
        colzip::archive::decompress_file(
            &path,
            &out,
            None,
            colzip::codec::Placement::CPU,
            &mut |_| {},
        )
    });
    result.unwrap();
    assert_eq!(
        std::fs::metadata(&out).unwrap().len(),
        8 * batch_bytes as u64
    );
    assert!(
        used <= 2 * (batch_bytes + largest_compressed) + MIB,
        "decoding 8 batches of {batch_bytes} bytes ({largest_compressed} compressed) used {used}"
    );
}
