//! The pinned pool that GPU decodes hand their outputs out on: buffers are reused, live
//! as long as the Arrow buffers on them, stay within the pool's limit (idle ones are
//! freed to make room), and a request beyond it is refused, upon which the zero-copy
//! decode writes the same bytes to ordinary memory. Without a GPU these tests say they
//! were skipped; with `COLZIP_REQUIRE_GPU=1` a missing GPU is a failure.

mod common;

use colzip::codec::{Codec, CodecId, CodecSpec, Placement};
use colzip::gpu::PinnedPool;
use common::gpu_or_skip;

const MIB: usize = 1 << 20;

#[test]
fn buffers_outlive_the_handle_and_come_back_when_the_last_arrow_buffer_goes() {
    let Some(gpu) = gpu_or_skip("buffers_outlive_the_handle") else {
        return;
    };
    let pool = PinnedPool::new(8 * MIB);
    let mut taken = pool.take(gpu, 3 * MIB).expect("room for 3 MiB");
    assert!(taken.len() >= 3 * MIB);
    taken.as_mut_slice()[..3 * MIB]
        .iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = (i % 251) as u8);
    let held = pool.held();
    assert!((3 * MIB..=8 * MIB).contains(&held));
    let buffers = taken.into_buffers(&[0..MIB, MIB..3 * MIB]);
    // The handle is gone; the Arrow buffers still read the pinned bytes.
    assert_eq!(pool.idle(), 0);
    assert_eq!(buffers[1][0], (MIB % 251) as u8);
    assert_eq!(buffers[1].len(), 2 * MIB);
    let first = buffers[0].clone();
    drop(buffers);
    assert_eq!(pool.idle(), 0, "a clone still holds the memory");
    assert_eq!(first[250], 250);
    drop(first);
    assert_eq!(pool.idle(), held, "the last buffer gave the memory back");
    // The next request of that size reuses it.
    let again = pool.take(gpu, 3 * MIB).unwrap();
    assert_eq!(pool.held(), held);
    assert_eq!(pool.idle(), 0);
    drop(again);
}

#[test]
fn the_limit_is_never_exceeded_and_idle_buffers_make_room() {
    let Some(gpu) = gpu_or_skip("the_limit_is_never_exceeded") else {
        return;
    };
    let pool = PinnedPool::new(4 * MIB);
    let a = pool.take(gpu, 2 * MIB).unwrap();
    let b = pool.take(gpu, 2 * MIB).unwrap();
    assert_eq!(pool.held(), 4 * MIB);
    // Exhausted: nothing idle to free.
    assert!(pool.take(gpu, MIB).is_none());
    assert!(pool.take(gpu, 5 * MIB).is_none(), "larger than the limit");
    assert_eq!(pool.refused(), 2);
    drop(a);
    drop(b);
    assert_eq!(pool.idle(), 4 * MIB);
    // A size the idle buffers do not serve: they are freed to make room.
    let c = pool.take(gpu, 3 * MIB).unwrap();
    assert!(pool.held() <= 4 * MIB);
    assert_eq!(pool.idle(), 0);
    drop(c);
    pool.release_idle();
    assert_eq!((pool.held(), pool.idle()), (0, 0));
}

#[test]
fn at_the_limit_a_larger_idle_buffer_is_lent_rather_than_pinning_anew() {
    let Some(gpu) = gpu_or_skip("at_the_limit_a_larger_idle_buffer_is_lent") else {
        return;
    };
    let pool = PinnedPool::new(8 * MIB);
    drop(pool.take(gpu, 7 * MIB).unwrap());
    assert_eq!((pool.held(), pool.idle()), (7 * MIB, 7 * MIB));
    // 1.5 MiB more would pass the limit: the idle 7 MiB buffer serves the request, where
    // freeing it and pinning 1.5 MiB would stall the driver twice.
    let small = pool.take(gpu, 3 * MIB / 2).unwrap();
    assert_eq!(small.len(), 7 * MIB);
    assert_eq!((pool.held(), pool.idle()), (7 * MIB, 0));
    drop(small);
    // Below the limit a much larger idle buffer is not lent: a new one is pinned.
    let pool = PinnedPool::new(64 * MIB);
    drop(pool.take(gpu, 32 * MIB).unwrap());
    let small = pool.take(gpu, MIB).unwrap();
    assert_eq!(small.len(), MIB);
    assert_eq!((pool.held(), pool.idle()), (33 * MIB, 32 * MIB));
}

#[test]
fn a_pool_without_room_gives_the_same_bytes_in_ordinary_memory() {
    let Some(gpu) = gpu_or_skip("a_pool_without_room") else {
        return;
    };
    let placement = Placement::on(gpu);
    let inputs: Vec<Vec<u8>> = (0..5u32)
        .map(|k| {
            (0..300_000u32)
                .flat_map(|v| (v / (k + 3)).to_le_bytes())
                .collect()
        })
        .collect();
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let lens: Vec<usize> = inputs.iter().map(Vec::len).collect();
    for spec in ["gmatch", "lzss", "intpack"] {
        let codec: Codec = spec
            .parse::<CodecSpec>()
            .unwrap()
            .settle(4, &inputs[0])
            .unwrap();
        let streams = codec.compress_batch(&Placement::CPU, &refs).unwrap();
        let id: CodecId = codec.id();
        let none = PinnedPool::new(0);
        let ordinary = id
            .decompress_buffers_in(&none, &placement, &streams.to_refs(), &lens)
            .unwrap();
        assert_eq!(none.refused(), 1);
        assert_eq!(none.held(), 0);
        let roomy = PinnedPool::new(64 * MIB);
        let pinned = id
            .decompress_buffers_in(&roomy, &placement, &streams.to_refs(), &lens)
            .unwrap();
        assert!(roomy.held() > 0);
        for i in 0..inputs.len() {
            assert_eq!(ordinary[i].as_slice(), refs[i], "{codec:?} ordinary {i}");
            assert_eq!(pinned[i].as_slice(), refs[i], "{codec:?} pinned {i}");
        }
        // The outputs outlive the call, and the streams.
        drop(streams);
        assert_eq!(pinned[4].as_slice(), refs[4]);
        drop(pinned);
        assert_eq!(roomy.idle(), roomy.held());
    }
}
