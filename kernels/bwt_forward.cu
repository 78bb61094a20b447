// Forward Burrows-Wheeler transform of many blocks at once, by prefix doubling.
//
// The blocks lie one after another in `text` (N bytes in all, N < 2^32); `starts` holds
// count + 1 offsets (starts[0] = 0, starts[count] = N). Each block is sorted as if a
// sentinel smaller than every byte followed it (src/codec/bwt/transform.rs): suffixes
// that run past their block's end compare as shorter.
//
// Every suffix gets a rank: one more than the position, in the sorted order of the whole
// batch, of the first suffix of its group (the suffixes equal in their first H bytes).
// The first sort orders (block, first 4 bytes); each round then sorts only the suffixes
// of groups larger than one, by (rank of the suffix, rank of the suffix H further on,
// 0 past the block's end), which orders them by their first 2H bytes, and H doubles. A
// group of one is final. The sorted list of a round occupies the same positions as the
// groups it came from, so it is kept as (position, suffix) pairs and no suffix array is
// needed: at the end `rank[i] - starts[b]` is the row of suffix i in its block's matrix.
//
// The sorts are least-significant-digit radix sorts of (u64 key, u32 suffix) pairs, 8 bits
// a pass: a histogram per tile, an exclusive scan of the counts (digit-major), and a
// stable scatter (ranks within a tile by __match_any_sync, in element order).

#define SORT_THREADS 256
#define SORT_ITEMS 8
#define SORT_TILE (SORT_THREADS * SORT_ITEMS)
#define SORT_WARPS (SORT_THREADS / 32)
#define SCAN_THREADS 1024
#define SCAN_ITEMS 4
#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)

// The block holding position i: the last b with starts[b] <= i.
__device__ __forceinline__ u32 block_of(const u32* starts, u32 count, u32 i) {
    u32 lo = 0, hi = count;
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) >> 1;
        if (starts[mid] <= i) lo = mid; else hi = mid;
    }
    return lo;
}

// Keys of the first sort: the block, then 4 symbols of 9 bits (byte + 1, 0 past the end).
extern "C" __global__ void bwtf_initial_keys(const u8* text, u32 n, const u32* starts,
                                             u32 count, u64* keys, u32* sufs, u32* pos) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 b = block_of(starts, count, i);
    const u32 end = starts[b + 1];
    u64 key = (u64)b << 36;
#pragma unroll
    for (u32 j = 0; j < 4; ++j) {
        const u64 sym = i + j < end ? (u64)text[i + j] + 1 : 0;
        key |= sym << (27 - 9 * j);
    }
    keys[i] = key;
    sufs[i] = i;
    pos[i] = i;
}

// Radix sort, pass 1: counts[digit * tiles + tile] of the digit at `shift`.
extern "C" __global__ void bwtf_radix_histogram(const u64* keys, u32 m, u32 shift, u32 tiles,
                                                u32* counts) {
    __shared__ u32 hist[256];
    hist[threadIdx.x] = 0;
    __syncthreads();
    const u32 base = blockIdx.x * SORT_TILE;
#pragma unroll
    for (u32 r = 0; r < SORT_ITEMS; ++r) {
        const u32 idx = base + r * SORT_THREADS + threadIdx.x;
        if (idx < m) atomicAdd(&hist[(u32)(keys[idx] >> shift) & 255], 1u);
    }
    __syncthreads();
    counts[threadIdx.x * tiles + blockIdx.x] = hist[threadIdx.x];
}

// Radix sort, pass 3: each tile's pairs to their places, stably; `offsets` is the
// exclusive scan of the histogram's counts.
extern "C" __global__ void bwtf_radix_scatter(const u64* keys_in, const u32* vals_in,
                                              u64* keys_out, u32* vals_out, u32 m, u32 shift,
                                              u32 tiles, const u32* offsets) {
    __shared__ u32 warp_hist[SORT_WARPS][256];
    __shared__ u32 running[256];
    const u32 tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    running[tid] = offsets[tid * tiles + blockIdx.x];
    const u32 base = blockIdx.x * SORT_TILE;
    for (u32 r = 0; r < SORT_ITEMS; ++r) {
#pragma unroll
        for (u32 w = 0; w < SORT_WARPS; ++w) warp_hist[w][tid] = 0;
        __syncthreads();
        const u32 idx = base + r * SORT_THREADS + tid;
        const bool valid = idx < m;
        const u64 key = valid ? keys_in[idx] : 0;
        const u32 digit = valid ? (u32)(key >> shift) & 255 : 256;
        const u32 peers = __match_any_sync(FULL_MASK, digit);
        const u32 before = __popc(peers & ((1u << lane) - 1));
        if (valid && before == 0) warp_hist[warp][digit] = __popc(peers);
        __syncthreads();
        // Thread `tid` turns digit tid's counts per warp into where each warp starts.
        u32 acc = running[tid];
#pragma unroll
        for (u32 w = 0; w < SORT_WARPS; ++w) {
            const u32 c = warp_hist[w][tid];
            warp_hist[w][tid] = acc;
            acc += c;
        }
        running[tid] = acc;
        __syncthreads();
        if (valid) {
            const u32 dst = warp_hist[warp][digit] + before;
            keys_out[dst] = key;
            vals_out[dst] = vals_in[idx];
        }
        __syncthreads();
    }
}

// Exclusive prefix sum, in place, of each SCAN_TILE values, each tile's total into
// sums[tile].
extern "C" __global__ void bwtf_scan_tiles(u32* values, u32 n, u32* sums) {
    __shared__ u32 warp_sums[32];
    const u32 first = blockIdx.x * SCAN_TILE + threadIdx.x * SCAN_ITEMS;
    u32 v[SCAN_ITEMS];
    u32 local = 0;
#pragma unroll
    for (u32 k = 0; k < SCAN_ITEMS; ++k) {
        v[k] = first + k < n ? values[first + k] : 0;
        local += v[k];
    }
    u32 total;
    u32 run = block_exclusive_sum(local, warp_sums, &total);
#pragma unroll
    for (u32 k = 0; k < SCAN_ITEMS; ++k) {
        if (first + k < n) values[first + k] = run;
        run += v[k];
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

// Adds each tile's scanned total to its values.
extern "C" __global__ void bwtf_scan_add(u32* values, u32 n, const u32* sums) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) values[i] += sums[i / SCAN_TILE];
}

__device__ __forceinline__ bool is_head(const u64* keys, u32 k) {
    return k == 0 || keys[k] != keys[k - 1];
}

// Whether the sorted list's element k is alone in its group (final).
__device__ __forceinline__ bool is_single(const u64* keys, u32 m, u32 k) {
    return is_head(keys, k) && (k + 1 == m || is_head(keys, k + 1));
}

// flags[k] = 1 where a group of the sorted list starts.
extern "C" __global__ void bwtf_mark_heads(const u64* keys, u32 m, u32* flags) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < m) flags[k] = is_head(keys, k) ? 1 : 0;
}

// flags[k] = 1 where the element is in a group of more than one (kept for the next round).
extern "C" __global__ void bwtf_mark_kept(const u64* keys, u32 m, u32* flags) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < m) flags[k] = is_single(keys, m, k) ? 0 : 1;
}

// Where each group starts: group_pos[group] = its first position (`ordinal`: the
// exclusive scan of the heads, so a head's group is its ordinal).
extern "C" __global__ void bwtf_group_starts(const u64* keys, u32 m, const u32* ordinal,
                                             const u32* pos, u32* group_pos) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < m && is_head(keys, k)) group_pos[ordinal[k]] = pos[k];
}

// New ranks of the list's suffixes: one more than their group's first position.
extern "C" __global__ void bwtf_rank(const u64* keys, u32 m, const u32* ordinal,
                                     const u32* group_pos, const u32* sufs, u32* rank) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= m) return;
    const u32 group = ordinal[k] + (is_head(keys, k) ? 1 : 0) - 1;
    rank[sufs[k]] = group_pos[group] + 1;
}

// The next round's list: the kept pairs (`index`: the exclusive scan of the kept flags),
// each with its key (rank of the suffix, rank of the suffix h further on or 0 past the
// block's end), packed as rank1 << bits | rank2.
extern "C" __global__ void bwtf_next_list(const u64* keys, u32 m, const u32* index,
                                          const u32* pos, const u32* sufs, const u32* rank,
                                          const u32* starts, u32 count, u32 h, u32 bits,
                                          u32* next_pos, u32* next_sufs, u64* next_keys) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= m || is_single(keys, m, k)) return;
    const u32 j = index[k];
    const u32 s = sufs[k];
    const u32 end = starts[block_of(starts, count, s) + 1];
    const u64 second = (u64)s + h < end ? rank[s + h] : 0;
    next_pos[j] = pos[k];
    next_sufs[j] = s;
    next_keys[j] = ((u64)rank[s] << bits) | second;
}

// The transform from the final ranks: out (N bytes, each block's last column without the
// sentinel) and the auxiliary indices of every block (`aux_first[b]`: where block b's
// start in `aux`), at rate 2^aux_log2.
extern "C" __global__ void bwtf_emit(const u8* text, u32 n, const u32* starts, u32 count,
                                     const u32* rank, u32 aux_log2, const u32* aux_first,
                                     u8* out, u32* aux) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 b = block_of(starts, count, i);
    const u32 bs = starts[b], len = starts[b + 1] - bs, local = i - bs;
    const u32 row = rank[i] - bs;  // 1..=len
    const u32 row0 = rank[bs] - bs;
    if (row < 1 || row > len || row0 < 1 || row0 > len) return;  // cannot happen
    if (local == 0) {
        out[bs] = text[bs + len - 1];
    } else {
        out[bs + (row < row0 ? row : row - 1)] = text[i - 1];
    }
    if ((local & ((1u << aux_log2) - 1)) == 0) aux[aux_first[b] + (local >> aux_log2)] = row;
}
