// Shared by every kernel file (prepended by the launcher, NVRTC has no include path here):
// fixed-width types without the standard headers, and warp/block scans.
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define FULL_MASK 0xffffffffu

// Inclusive prefix sum over the 32 lanes of a warp.
__device__ __forceinline__ u32 warp_inclusive_sum(u32 v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int k = 1; k < 32; k <<= 1) {
        u32 up = __shfl_up_sync(FULL_MASK, v, k);
        if (lane >= k) v += up;
    }
    return v;
}

__device__ __forceinline__ u32 warp_sum(u32 v) {
#pragma unroll
    for (int k = 16; k > 0; k >>= 1) v += __shfl_xor_sync(FULL_MASK, v, k);
    return v;
}

// Exclusive prefix sum over the block (blockDim.x a multiple of 32, at most 1024);
// `warp_sums` is 32 words of shared memory; `total` receives the block's sum.
// Every thread of the block must call it.
__device__ __forceinline__ u32 block_exclusive_sum(u32 v, u32* warp_sums, u32* total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    u32 inclusive = warp_inclusive_sum(v);
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        u32 s = lane < warps ? warp_sums[lane] : 0;
        s = warp_inclusive_sum(s);
        warp_sums[lane] = s;
    }
    __syncthreads();
    u32 before = warp > 0 ? warp_sums[warp - 1] : 0;
    *total = warp_sums[warps - 1];
    __syncthreads();  // warp_sums may be reused right after
    return before + inclusive - v;
}

// Inclusive prefix sum of 64-bit words over the 32 lanes of a warp (wrapping).
__device__ __forceinline__ u64 warp_inclusive_sum64(u64 v) {
    const u32 lane = threadIdx.x & 31;
#pragma unroll
    for (u32 k = 1; k < 32; k <<= 1) {
        const u64 up = __shfl_up_sync(FULL_MASK, v, k);
        if (lane >= k) v += up;
    }
    return v;
}

// Exclusive prefix sum of 64-bit words over the block (wrapping; blockDim.x a multiple of
// 32, at most 1024); `warp_sums` is 32 words of shared memory; `total` receives the
// block's sum. Every thread of the block must call it.
__device__ __forceinline__ u64 block_exclusive_sum64(u64 v, u64* warp_sums, u64* total) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const u64 inclusive = warp_inclusive_sum64(v);
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) warp_sums[lane] = warp_inclusive_sum64(lane < warps ? warp_sums[lane] : 0);
    __syncthreads();
    const u64 before = warp > 0 ? warp_sums[warp - 1] : 0;
    *total = warp_sums[warps - 1];
    __syncthreads();  // warp_sums may be reused right after
    return before + inclusive - v;
}

// LZSS constants (src/codec/lzss/mod.rs): shortest match in symbols for a symbol width.
__device__ __forceinline__ constexpr int lzss_min_match(int s) {
    return s == 1 ? 3 : (s == 2 ? 2 : 1);
}

template <int S> struct Symbol;
template <> struct Symbol<1> { typedef u8 T; };
template <> struct Symbol<2> { typedef u16 T; };
template <> struct Symbol<4> { typedef u32 T; };
template <> struct Symbol<8> { typedef u64 T; };
