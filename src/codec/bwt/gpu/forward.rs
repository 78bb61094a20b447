//! The forward BWT of many blocks at once on the GPU (`kernels/bwt_forward.cu`): suffix
//! sorting by prefix doubling with radix sorts, then each block's last column and
//! auxiliary indices from the final ranks. The output equals libsais's
//! ([`crate::codec::bwt::transform::forward`]): both are the transform's definition.
//!
//! The host drives the rounds: after each it reads back how many suffixes are still in
//! groups of more than one (4 bytes), and stops at none. Text sorts in a few rounds (the
//! longest repeat decides: about log2 of it); a block of one repeated byte takes
//! log2(block) rounds.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, CudaView, LaunchConfig, PushKernelArg};

use crate::codec::bwt::transform::aux_count;
use crate::gpu::{
    Gpu, GpuError, GpuResult, KernelSource, Lane, copy_to_device, copy_to_host, launch_blocks,
    launch_error, launch_for,
};

/// The forward transform's kernels.
pub const BWT_FORWARD: KernelSource = KernelSource {
    name: "bwt_forward.cu",
    source: include_str!("../../../../kernels/bwt_forward.cu"),
};

/// `SORT_THREADS`, `SORT_TILE`, `SCAN_THREADS` and `SCAN_TILE` of the kernel file.
const SORT_THREADS: u32 = 256;
const SORT_TILE: usize = 256 * 8;
const SCAN_THREADS: u32 = 1024;
const SCAN_TILE: usize = 1024 * 4;
/// Threads per block of the kernels with a thread per element.
const THREADS: u32 = 256;

/// The kernels, loaded once per call.
pub(crate) struct ForwardKernels {
    initial_keys: CudaFunction,
    histogram: CudaFunction,
    scatter: CudaFunction,
    scan_tiles: CudaFunction,
    scan_add: CudaFunction,
    mark_heads: CudaFunction,
    mark_kept: CudaFunction,
    group_starts: CudaFunction,
    rank: CudaFunction,
    next_list: CudaFunction,
    emit: CudaFunction,
}

impl ForwardKernels {
    pub(crate) fn new(gpu: &Gpu) -> GpuResult<Self> {
        let f = |name: &str| gpu.function(&BWT_FORWARD, &[], name);
        Ok(ForwardKernels {
            initial_keys: f("bwtf_initial_keys")?,
            histogram: f("bwtf_radix_histogram")?,
            scatter: f("bwtf_radix_scatter")?,
            scan_tiles: f("bwtf_scan_tiles")?,
            scan_add: f("bwtf_scan_add")?,
            mark_heads: f("bwtf_mark_heads")?,
            mark_kept: f("bwtf_mark_kept")?,
            group_starts: f("bwtf_group_starts")?,
            rank: f("bwtf_rank")?,
            next_list: f("bwtf_next_list")?,
            emit: f("bwtf_emit")?,
        })
    }
}

fn per_element(n: usize) -> GpuResult<LaunchConfig> {
    launch_for(n, THREADS, "elements")
}

/// Bits to write values up to `v`.
fn bits_for(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// The forward transform's output on the device: every block's transformed bytes, one
/// after another as the blocks were, and its auxiliary indices (u32), block after block.
pub(crate) struct Transformed {
    pub out: CudaSlice<u8>,
    pub aux: CudaSlice<u8>,
    /// Where each block's indices start in `aux` (in indices), and their total last.
    pub aux_first: Vec<usize>,
}

/// Scratch of a run, grown as needed and kept by the lane.
struct Scratch {
    keys: [CudaSlice<u8>; 2],
    sufs: [CudaSlice<u8>; 2],
    pos: [CudaSlice<u8>; 2],
    rank: CudaSlice<u8>,
    flags: CudaSlice<u8>,
    group_pos: CudaSlice<u8>,
    counts: CudaSlice<u8>,
    /// Tile totals of every level of a scan.
    sums: Vec<CudaSlice<u8>>,
}

const SCRATCH: [&str; 10] = [
    "bwtf.keys0",
    "bwtf.keys1",
    "bwtf.sufs0",
    "bwtf.sufs1",
    "bwtf.pos0",
    "bwtf.pos1",
    "bwtf.rank",
    "bwtf.flags",
    "bwtf.groups",
    "bwtf.counts",
];
/// Names of the scan levels' buffers (3 levels cover 2^32 values).
const SUMS: [&str; 4] = ["bwtf.sums0", "bwtf.sums1", "bwtf.sums2", "bwtf.sums3"];

impl Scratch {
    fn take(lane: &mut Lane, n: usize) -> GpuResult<Self> {
        let tiles = n.div_ceil(SORT_TILE);
        let mut t = |i: usize, len: usize| lane.take_device(SCRATCH[i], len);
        let keys = [t(0, 8 * n)?, t(1, 8 * n)?];
        let sufs = [t(2, 4 * n)?, t(3, 4 * n)?];
        let pos = [t(4, 4 * n)?, t(5, 4 * n)?];
        let (rank, flags, group_pos) = (t(6, 4 * n)?, t(7, 4 * n)?, t(8, 4 * n)?);
        let counts = t(9, 4 * 256 * tiles)?;
        // The largest scan is of the sort's counts or of the flags.
        let levels = scan_levels((256 * tiles).max(n));
        if levels.len() > SUMS.len() {
            return Err(GpuError::Limit(format!(
                "bwt forward transform: {n} bytes in one run"
            )));
        }
        let sums = levels
            .iter()
            .zip(SUMS)
            .map(|(&len, name)| lane.take_device(name, 4 * len))
            .collect::<GpuResult<Vec<_>>>()?;
        Ok(Scratch {
            keys,
            sufs,
            pos,
            rank,
            flags,
            group_pos,
            counts,
            sums,
        })
    }

    fn put_back(self, lane: &mut Lane) {
        let [k0, k1] = self.keys;
        let [s0, s1] = self.sufs;
        let [p0, p1] = self.pos;
        for (name, buffer) in SCRATCH.into_iter().zip([
            k0,
            k1,
            s0,
            s1,
            p0,
            p1,
            self.rank,
            self.flags,
            self.group_pos,
            self.counts,
        ]) {
            lane.put_device(name, buffer);
        }
        for (name, buffer) in SUMS.into_iter().zip(self.sums) {
            lane.put_device(name, buffer);
        }
    }
}

/// Exclusive prefix sum in place of `n` u32 in `values`, by tiles whose totals are
/// scanned the same way one level down (`sums`, one buffer per level); the total lands in
/// the first value of the level [`scan_total_level`] names.
fn scan(
    stream: &Arc<CudaStream>,
    k: &ForwardKernels,
    values: &mut CudaSlice<u8>,
    n: usize,
    sums: &mut [CudaSlice<u8>],
) -> GpuResult<()> {
    let tiles = n.div_ceil(SCAN_TILE);
    let n32 = n as u32;
    let Some((level, below)) = sums.split_first_mut() else {
        return Err(GpuError::Limit(
            "bwt forward transform: scan too deep".into(),
        ));
    };
    // SAFETY (each launch): the kernels touch values[0..n) and level[0..tiles), both
    // allocated for at least that (Scratch::take).
    let mut launch = stream.launch_builder(&k.scan_tiles);
    launch.arg(&mut *values).arg(&n32).arg(&mut *level);
    unsafe { launch.launch(launch_blocks(tiles, SCAN_THREADS, "thread blocks")?) }
        .map_err(launch_error)?;
    if tiles > 1 {
        scan(stream, k, level, tiles, below)?;
        let mut launch = stream.launch_builder(&k.scan_add);
        launch.arg(&mut *values).arg(&n32).arg(&*level);
        unsafe { launch.launch(per_element(n)?) }.map_err(launch_error)?;
    }
    Ok(())
}

/// Sizes of the levels of tile totals a scan of `n` values needs (the last is 1).
fn scan_levels(n: usize) -> Vec<usize> {
    let mut levels = vec![n.div_ceil(SCAN_TILE).max(1)];
    while let Some(&last) = levels.last()
        && last > 1
    {
        levels.push(last.div_ceil(SCAN_TILE));
    }
    levels
}

/// The level whose first value is the total after [`scan`] of `n` values.
fn scan_total_level(n: usize) -> usize {
    scan_levels(n).len() - 1
}

/// Sorts `m` (key, suffix) pairs of `keys[*cur]`, `sufs[*cur]` by the low `key_bits`
/// bits of the keys, stably; `*cur` then names the buffers holding the result.
fn sort(
    stream: &Arc<CudaStream>,
    k: &ForwardKernels,
    s: &mut Scratch,
    cur: &mut usize,
    m: usize,
    key_bits: u32,
) -> GpuResult<()> {
    let tiles = m.div_ceil(SORT_TILE);
    let (m32, tiles32) = (m as u32, tiles as u32);
    for shift in (0..key_bits).step_by(8) {
        let (a, b) = (*cur, 1 - *cur);
        let (keys_in, keys_out) = split_pair(&mut s.keys, a);
        let (sufs_in, sufs_out) = split_pair(&mut s.sufs, a);
        // SAFETY: tiles * SORT_TILE covers m; counts holds 256 * tiles u32 (Scratch::take).
        let mut launch = stream.launch_builder(&k.histogram);
        launch
            .arg(&*keys_in)
            .arg(&m32)
            .arg(&shift)
            .arg(&tiles32)
            .arg(&mut s.counts);
        unsafe { launch.launch(launch_blocks(tiles, SORT_THREADS, "thread blocks")?) }
            .map_err(launch_error)?;
        scan(stream, k, &mut s.counts, 256 * tiles, &mut s.sums)?;
        let mut launch = stream.launch_builder(&k.scatter);
        launch
            .arg(&*keys_in)
            .arg(&*sufs_in)
            .arg(keys_out)
            .arg(sufs_out)
            .arg(&m32)
            .arg(&shift)
            .arg(&tiles32)
            .arg(&s.counts);
        unsafe { launch.launch(launch_blocks(tiles, SORT_THREADS, "thread blocks")?) }
            .map_err(launch_error)?;
        *cur = b;
    }
    Ok(())
}

/// The buffer `a` of a pair and the other one.
fn split_pair(pair: &mut [CudaSlice<u8>; 2], a: usize) -> (&mut CudaSlice<u8>, &mut CudaSlice<u8>) {
    let [x, y] = pair;
    if a == 0 { (x, y) } else { (y, x) }
}

/// Transforms the blocks of `lens` bytes that lie one after another in `text` (on the
/// device), with auxiliary indices at rate `2^aux_log2`. Every block must be non-empty;
/// the blocks together must be under 2^32 - 1 bytes.
pub(crate) fn forward(
    lane: &mut Lane,
    k: &ForwardKernels,
    text: &CudaView<'_, u8>,
    lens: &[usize],
    aux_log2: u8,
) -> GpuResult<Transformed> {
    let n: usize = lens.iter().sum();
    let count = lens.len();
    if lens.contains(&0) || n >= u32::MAX as usize || count >= 1 << 28 {
        return Err(GpuError::Limit(format!(
            "bwt forward transform: {count} blocks of {n} bytes in one run"
        )));
    }
    let mut aux_first = Vec::with_capacity(count + 1);
    let mut starts = Vec::with_capacity(4 * (count + 1));
    let (mut at, mut aux_at) = (0usize, 0usize);
    for &len in lens {
        starts.extend_from_slice(&(at as u32).to_le_bytes());
        aux_first.push(aux_at);
        at += len;
        aux_at += aux_count(len, aux_log2);
    }
    starts.extend_from_slice(&(n as u32).to_le_bytes());
    aux_first.push(aux_at);
    let first_bytes: Vec<u8> = aux_first[..count]
        .iter()
        .flat_map(|&a| (a as u32).to_le_bytes())
        .collect();
    let stream = lane.stream().clone();
    let mut starts_device = lane.take_device("bwtf.starts", starts.len())?;
    copy_to_device(&stream, &starts, &mut starts_device)?;
    let mut first_device = lane.take_device("bwtf.auxfirst", first_bytes.len())?;
    copy_to_device(&stream, &first_bytes, &mut first_device)?;
    let mut s = Scratch::take(lane, n)?;
    let (n32, count32) = (n as u32, count as u32);

    // SAFETY (every launch): each kernel indexes its arrays below n (or m <= n), all
    // allocated for n elements (Scratch::take); text holds n bytes.
    let mut launch = stream.launch_builder(&k.initial_keys);
    launch
        .arg(text)
        .arg(&n32)
        .arg(&starts_device)
        .arg(&count32)
        .arg(&mut s.keys[0])
        .arg(&mut s.sufs[0])
        .arg(&mut s.pos[0]);
    unsafe { launch.launch(per_element(n)?) }.map_err(launch_error)?;
    let mut cur = 0;
    sort(
        &stream,
        k,
        &mut s,
        &mut cur,
        n,
        36 + bits_for(count as u64 - 1),
    )?;

    let bits = bits_for(n as u64);
    let (mut m, mut h, mut pos_cur) = (n, 4u64, 0usize);
    loop {
        let m32 = m as u32;
        let keys = &s.keys[cur];
        let mut launch = stream.launch_builder(&k.mark_heads);
        launch.arg(keys).arg(&m32).arg(&mut s.flags);
        unsafe { launch.launch(per_element(m)?) }.map_err(launch_error)?;
        scan(&stream, k, &mut s.flags, m, &mut s.sums)?;
        let keys = &s.keys[cur];
        let mut launch = stream.launch_builder(&k.group_starts);
        launch
            .arg(keys)
            .arg(&m32)
            .arg(&s.flags)
            .arg(&s.pos[pos_cur])
            .arg(&mut s.group_pos);
        unsafe { launch.launch(per_element(m)?) }.map_err(launch_error)?;
        let mut launch = stream.launch_builder(&k.rank);
        launch
            .arg(keys)
            .arg(&m32)
            .arg(&s.flags)
            .arg(&s.group_pos)
            .arg(&s.sufs[cur])
            .arg(&mut s.rank);
        unsafe { launch.launch(per_element(m)?) }.map_err(launch_error)?;
        let mut launch = stream.launch_builder(&k.mark_kept);
        launch.arg(keys).arg(&m32).arg(&mut s.flags);
        unsafe { launch.launch(per_element(m)?) }.map_err(launch_error)?;
        scan(&stream, k, &mut s.flags, m, &mut s.sums)?;
        // Kept = the exclusive scan's total.
        let mut total = [0u8; 4];
        copy_to_host(
            &stream,
            &s.sums[scan_total_level(m)].slice(0..4),
            &mut total,
        )?;
        stream
            .synchronize()
            .map_err(|e| GpuError::driver("synchronize", e))?;
        let kept = u32::from_le_bytes(total) as usize;
        crate::trace::line(|| format!("bwt forward: round h={h}, {m} sorted, {kept} left"));
        if kept == 0 {
            break;
        }
        if h >= u64::from(u32::MAX) / 2 {
            return Err(GpuError::Limit(
                "bwt forward transform did not converge".into(),
            ));
        }
        let h32 = h as u32;
        let (keys_now, keys_next) = split_pair(&mut s.keys, cur);
        let (sufs_now, sufs_next) = split_pair(&mut s.sufs, cur);
        let (pos_now, pos_next) = split_pair(&mut s.pos, pos_cur);
        let mut launch = stream.launch_builder(&k.next_list);
        launch
            .arg(&*keys_now)
            .arg(&m32)
            .arg(&s.flags)
            .arg(&*pos_now)
            .arg(&*sufs_now)
            .arg(&s.rank)
            .arg(&starts_device)
            .arg(&count32)
            .arg(&h32)
            .arg(&bits)
            .arg(pos_next)
            .arg(sufs_next)
            .arg(keys_next);
        unsafe { launch.launch(per_element(m)?) }.map_err(launch_error)?;
        cur = 1 - cur;
        pos_cur = 1 - pos_cur;
        m = kept;
        h *= 2;
        sort(&stream, k, &mut s, &mut cur, m, 2 * bits)?;
    }

    let mut out = lane.take_device("bwtf.out", n)?;
    let mut aux = lane.take_device("bwtf.aux", 4 * aux_at)?;
    let shift = u32::from(aux_log2);
    let mut launch = stream.launch_builder(&k.emit);
    launch
        .arg(text)
        .arg(&n32)
        .arg(&starts_device)
        .arg(&count32)
        .arg(&s.rank)
        .arg(&shift)
        .arg(&first_device)
        .arg(&mut out)
        .arg(&mut aux);
    unsafe { launch.launch(per_element(n)?) }.map_err(launch_error)?;
    s.put_back(lane);
    lane.put_device("bwtf.starts", starts_device);
    lane.put_device("bwtf.auxfirst", first_device);
    Ok(Transformed {
        out,
        aux,
        aux_first,
    })
}
