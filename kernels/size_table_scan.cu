// The scan of a stream's u16 size table, shared by the codecs whose streams are blocks
// with such a table (lzss: kernel II and the first step of its decoder; intpack: between
// the encoder and the compaction, and before the decoder): the exclusive prefix sum of the
// u16 block sizes, giving each block's offset; offsets[n] is the total. One block walks
// the array in tiles of 4 * blockDim.x sizes. The array holds one entry per 1 KiB or more
// of data, so a single block is a few microseconds per 100 MB.

#define ITEMS 4

extern "C" __global__ void scan_sizes_u16(const u16* sizes, u64 n, u64* offsets) {
    __shared__ u32 warp_sums[32];
    __shared__ u64 carry;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    const u64 tile = (u64)blockDim.x * ITEMS;
    for (u64 start = 0; start < n; start += tile) {
        const u64 first = start + (u64)threadIdx.x * ITEMS;
        u32 v[ITEMS];
        u32 local = 0;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            v[k] = first + k < n ? sizes[first + k] : 0;
            local += v[k];
        }
        u32 tile_total;
        // A tile sums to at most 4 * 1024 * 65535 < 2^32.
        u32 before = block_exclusive_sum(local, warp_sums, &tile_total);
        const u64 base = carry + before;
        u32 run = 0;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            if (first + k < n) offsets[first + k] = base + run;
            run += v[k];
        }
        __syncthreads();
        if (threadIdx.x == 0) carry += tile_total;
        __syncthreads();
    }
    if (threadIdx.x == 0) offsets[n] = carry;
}
