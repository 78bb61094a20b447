//! The GPU under memory pressure and under many callers: a device-memory limit
//! (`COLZIP_GPU_MEMORY`, [`Gpu::set_memory_limit`]) shrinks the pipeline's steps so a
//! column larger than the limit still runs on the GPU within it; a limit too small for
//! one step is a clear error under the `gpu` backend and a CPU run (same bytes) under
//! `auto`; 32 callers at once share the GPU's lanes and all get their own bytes back.
//! Without a GPU these tests say they were skipped; with `COLZIP_REQUIRE_GPU=1` a missing
//! GPU is a failure.

mod common;

use std::sync::Mutex;

use colzip::codec::{Codec, CodecError, CodecId, Placement, SnappyFormat, lzss::LzssParams};
use colzip::gpu::{Backend, Gpu, GpuError};
use common::{gpu_or_skip, tpch_lineitem_columns};

/// The memory limit is the GPU's, shared by the whole process: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `len` bytes of lineitem columns, one after another and repeated.
fn lineitem_bytes(len: usize) -> Vec<u8> {
    tpch_lineitem_columns(0.01)
        .iter()
        .flat_map(|(_, bytes)| bytes.iter().copied())
        .cycle()
        .take(len)
        .collect()
}

fn codecs() -> [Codec; 3] {
    [
        Codec::Gmatch(SnappyFormat::Blocks),
        Codec::Gmatch(SnappyFormat::Raw),
        Codec::Lzss(LzssParams::new(4, 32, 2048).unwrap()),
    ]
}

/// Sets the limit for the life of the value, and lifts it afterwards (a failing
/// assertion included).
struct Limit(&'static Gpu);

impl Limit {
    fn set(gpu: &'static Gpu, bytes: usize) -> Limit {
        gpu.set_memory_limit(Some(bytes));
        gpu.reset_memory_peak();
        Limit(gpu)
    }
}

impl Drop for Limit {
    fn drop(&mut self) {
        self.0.set_memory_limit(None);
    }
}

#[test]
fn a_column_larger_than_the_memory_limit_runs_on_the_gpu_within_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpu) = gpu_or_skip("a_column_larger_than_the_memory_limit_runs_on_the_gpu_within_it")
    else {
        return;
    };
    let limit = 8 << 20;
    let column = lineitem_bytes(3 * limit + 12_345);
    let _limit = Limit::set(gpu, limit);
    let on_gpu = Placement::on(gpu);
    for codec in codecs() {
        let stream = codec.compress_one(&on_gpu, &column).unwrap();
        assert!(
            stream == codec.compress_one(&Placement::CPU, &column).unwrap(),
            "{codec:?}: GPU bytes differ from the CPU's under a memory limit"
        );
        let id = codec.id();
        if id != CodecId::GmatchRaw {
            // A raw Snappy stream is one unit of decoding: it needs room for all of it.
            let back = id
                .decompress_batch(&on_gpu, &[&stream], &[column.len()])
                .unwrap();
            assert!(
                back.get(0) == &column[..],
                "{codec:?}: GPU decoding differs"
            );
        }
        let used = gpu.memory_use();
        assert!(
            used.peak <= limit,
            "{codec:?}: {} bytes held at the peak, the limit is {limit}",
            used.peak
        );
    }
}

#[test]
fn out_of_gpu_memory_is_an_error_under_gpu_and_a_cpu_run_under_auto() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpu) = gpu_or_skip("out_of_gpu_memory_is_an_error_under_gpu_and_a_cpu_run_under_auto")
    else {
        return;
    };
    let column = lineitem_bytes(6 << 20);
    // Smaller than any step's buffers.
    let _limit = Limit::set(gpu, 32 << 10);
    let auto = Placement::new(Backend::Auto).unwrap();
    for codec in codecs() {
        let id = codec.id();
        assert!(
            auto.gpu_for(id, colzip::codec::Direction::Compress, column.len())
                .is_some(),
            "auto puts a {}-byte batch on the GPU",
            column.len()
        );
        let refused = codec
            .compress_one(&Placement::on(gpu), &column)
            .unwrap_err();
        assert!(
            matches!(refused, CodecError::Gpu(GpuError::OutOfMemory { .. })),
            "{codec:?}: {refused:?}"
        );
        let message = refused.to_string();
        assert!(
            message.contains("GPU out of memory") && message.contains("COLZIP_GPU_MEMORY"),
            "{message}"
        );
        // Under auto the same call runs on the CPU and writes the CPU's bytes.
        let expected = codec.compress_one(&Placement::CPU, &column).unwrap();
        assert!(
            codec.compress_one(&auto, &column).unwrap() == expected,
            "{codec:?}"
        );
        let lens = [column.len()];
        let refused = id
            .decompress_batch(&Placement::on(gpu), &[&expected], &lens)
            .unwrap_err();
        assert!(
            matches!(refused, CodecError::Gpu(GpuError::OutOfMemory { .. })),
            "{codec:?}: {refused:?}"
        );
        let back = id.decompress_batch(&auto, &[&expected], &lens).unwrap();
        assert!(back.get(0) == &column[..], "{codec:?} batch");
        let owned = id.decompress_owned(&auto, &[&expected], &lens).unwrap();
        assert!(owned[0] == column, "{codec:?} owned");
    }
}

#[test]
fn thirty_two_callers_share_the_gpu() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpu) = gpu_or_skip("thirty_two_callers_share_the_gpu") else {
        return;
    };
    let base = lineitem_bytes(40 << 20);
    let on_gpu = Placement::on(gpu);
    std::thread::scope(|scope| {
        let callers: Vec<_> = (0..32usize)
            .map(|caller| {
                let base = &base;
                scope.spawn(move || {
                    // Each caller its own bytes, sizes and codec.
                    let start = caller * 997_531 % (base.len() / 2);
                    let input = &base[start..start + (1 << 20) + caller * 4099];
                    let codec = codecs()[caller % 3];
                    let stream = codec.compress_one(&on_gpu, input).unwrap();
                    assert!(
                        stream == codec.compress_one(&Placement::CPU, input).unwrap(),
                        "caller {caller} ({codec:?}): GPU bytes differ"
                    );
                    let back = codec
                        .id()
                        .decompress_batch(&on_gpu, &[&stream], &[input.len()])
                        .unwrap();
                    assert!(back.get(0) == input, "caller {caller}: decoding differs");
                })
            })
            .collect();
        for caller in callers {
            caller.join().unwrap();
        }
    });
}
