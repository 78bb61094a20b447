//! Every GPU of a host: a batch splits across the devices and the bytes do not depend
//! on how many ran, nor do the partial states of colzip's chunked aggregates (whose
//! chunks take the devices in turn). These tests need two GPUs or more; with fewer they say they
//! were skipped (with `COLZIP_REQUIRE_GPUS=2`, on a machine that has them, that is a
//! failure).

mod common;

use colzip::codec::{Codec, CodecId, CodecSpec, Placement};
use common::{Rng, gpus_or_skip};

/// Buffers of varied sizes and contents, together well over the bytes at which a batch
/// splits across `devices` devices (a share under 64 MiB stays on fewer devices): six
/// buffers of 12-16 MiB per device.
fn buffers(devices: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(17);
    (0..6 * devices.max(2))
        .map(|i| {
            let len = (12 << 20) + rng.below(4 << 20) as usize + i;
            (0..len)
                .map(|j| ((j / (i + 3)) as u32 ^ (rng.below(4) as u32)) as u8)
                .collect()
        })
        .collect()
}

fn codecs(sample: &[u8]) -> Vec<Codec> {
    ["lzss", "gmatch"]
        .iter()
        .map(|name| {
            name.parse::<CodecSpec>()
                .unwrap()
                .settle(4, sample)
                .unwrap()
        })
        .collect()
}

#[test]
fn every_gpu_writes_the_bytes_of_one() {
    let Some(gpus) = gpus_or_skip("every_gpu_writes_the_bytes_of_one", 2) else {
        return;
    };
    let data = buffers(gpus.len());
    let inputs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let lens: Vec<usize> = data.iter().map(Vec::len).collect();
    let all = Placement::on_all(gpus);
    let one = Placement::on(&gpus[0]);
    for codec in codecs(&data[0]) {
        for gpu in gpus {
            // Idle lanes give their buffers back, so the peak shows this batch alone.
            gpu.set_memory_limit(None);
            gpu.reset_memory_peak();
        }
        let split = codec.compress_batch(&all, &inputs).unwrap();
        let used: Vec<bool> = gpus.iter().map(|g| g.memory_use().peak > 0).collect();
        assert!(used.iter().all(|&u| u), "{codec:?}: devices used {used:?}");
        let single = codec.compress_batch(&one, &inputs).unwrap();
        assert_eq!(split.ranges(), single.ranges(), "{codec:?}");
        assert_eq!(split.bytes(), single.bytes(), "{codec:?}");
        let cpu = codec.compress_batch(&Placement::CPU, &inputs).unwrap();
        assert_eq!(split.bytes(), cpu.bytes(), "{codec:?}");

        // Into the caller's buffers too.
        let mut outputs: Vec<Vec<u8>> = lens
            .iter()
            .map(|&l| vec![0; codec.max_compressed_len(l)])
            .collect();
        let mut slices: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        let sizes = codec.compress_into(&all, &inputs, &mut slices).unwrap();
        for (i, size) in sizes.iter().enumerate() {
            assert_eq!(&outputs[i][..*size], cpu.get(i), "{codec:?} buffer {i}");
        }

        // Decoding across both devices, in all three forms.
        let id: CodecId = codec.id();
        let streams = cpu.to_refs();
        let back = id.decompress_batch(&all, &streams, &lens).unwrap();
        for (i, buffer) in data.iter().enumerate() {
            assert_eq!(back.get(i), &buffer[..], "{codec:?} buffer {i}");
        }
        let owned = id.decompress_owned(&all, &streams, &lens).unwrap();
        assert!(owned.iter().zip(&data).all(|(a, b)| a == b), "{codec:?}");
        let mut outputs: Vec<Vec<u8>> = lens.iter().map(|&l| vec![0; l]).collect();
        let mut slices: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        id.decompress_into(&all, &streams, &mut slices).unwrap();
        assert!(outputs.iter().zip(&data).all(|(a, b)| a == b), "{codec:?}");
    }
}

#[test]
fn an_error_on_one_device_fails_the_batch() {
    let Some(gpus) = gpus_or_skip("an_error_on_one_device_fails_the_batch", 2) else {
        return;
    };
    let data = buffers(gpus.len());
    let inputs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let lens: Vec<usize> = data.iter().map(Vec::len).collect();
    let codec = codecs(&data[0])[0];
    let streams = codec.compress_batch(&Placement::CPU, &inputs).unwrap();
    let mut damaged: Vec<Vec<u8>> = streams.iter().map(<[u8]>::to_vec).collect();
    // The last stream goes to the last device: cut it short.
    let last = damaged.len() - 1;
    let half = damaged[last].len() / 2;
    damaged[last].truncate(half);
    let refs: Vec<&[u8]> = damaged.iter().map(Vec::as_slice).collect();
    let all = Placement::on_all(gpus);
    assert!(codec.id().decompress_batch(&all, &refs, &lens).is_err());
}

/// `colzip_ratio` and `colzip_compressed_size` over four partitions whose 4 MiB chunks
/// compress at once, each call on the next GPU in turn: the sums the partial states carry,
/// and so the results, are the CPU's.
#[cfg(feature = "datafusion")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chunked_aggregates_do_not_depend_on_the_devices() {
    use std::sync::Arc;

    use colzip::gpu::Backend;
    use colzip::tpch::{Table, generate};
    use datafusion::arrow::array::RecordBatch;
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::datasource::MemTable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    if gpus_or_skip("chunked_aggregates_do_not_depend_on_the_devices", 2).is_none() {
        return;
    }
    // About 1.2 million rows: some 8 MiB of l_comment per partition, several chunks each.
    let data = generate(Table::Lineitem, 0.2).unwrap();
    let batch = RecordBatch::try_new(data.schema, data.columns).unwrap();
    let quarter = batch.num_rows().div_ceil(4);
    let partitions: Vec<Vec<RecordBatch>> = (0..4)
        .map(|p| {
            let start = (p * quarter).min(batch.num_rows());
            let len = quarter.min(batch.num_rows() - start);
            (0..len)
                .step_by(8192)
                .map(|o| batch.slice(start + o, 8192.min(len - o)))
                .collect()
        })
        .collect();
    let sql = "SELECT l_returnflag, count(*), colzip_ratio(l_comment, 'gmatch'), \
               colzip_compressed_size(l_comment, 'lzss'), colzip_ratio(l_comment, 'bwt'), \
               colzip_compressed_size(l_extendedprice, 'lzss') \
               FROM lineitem GROUP BY l_returnflag ORDER BY l_returnflag";
    let mut results = Vec::new();
    for backend in [Backend::Gpu, Backend::Cpu] {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(4));
        let table = MemTable::try_new(batch.schema(), partitions.clone()).unwrap();
        ctx.register_table("lineitem", Arc::new(table)).unwrap();
        colzip::datafusion::functions::register_on(&ctx, backend).unwrap();
        let out = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        results.push(pretty_format_batches(&out).unwrap().to_string());
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0].lines().count(), 3 + 4, "{}", results[0]);
}
