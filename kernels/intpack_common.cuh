// What intpack_compress.cu and intpack_decompress.cu share (the launcher puts this file
// in front of each, after common.cuh: src/codec/intpack/gpu/launch.rs): the format's
// arithmetic on values of W bytes, bit widths, frame lengths, and block-wide reductions
// and scans of 64-bit words. docs/FORMAT.md, section intpack, is the specification.
//
// Launch shape (both kernels): one block of INTPACK_THREADS threads per 1024-value block
// of the stream, thread t owning the ITEMS consecutive values [ITEMS t, ITEMS (t + 1)), so
// prefix sums over values are a local sum and one block scan.

#if !defined(INTPACK_BLOCK_VALUES) || !defined(INTPACK_THREADS)
#error "intpack kernels need INTPACK_BLOCK_VALUES and INTPACK_THREADS from the launcher"
#endif

#define BLOCK_VALUES INTPACK_BLOCK_VALUES
#define THREADS INTPACK_THREADS
#define ITEMS (BLOCK_VALUES / THREADS)
#define WARPS (THREADS / 32)
static_assert(ITEMS * THREADS == BLOCK_VALUES, "threads must divide the block");
static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, one block");

// The sign bit of a W-byte value: value ^ sign is its "biased" form, whose unsigned order
// is the value's signed order. Biasing adds 2^(8W-1), so differences of biased values are
// the differences of the values.
template <int W> __device__ __forceinline__ u64 sign_bit() { return 1ull << (8 * W - 1); }

// The low 8W bits of x.
template <int W> __device__ __forceinline__ u64 low_bytes(u64 x) {
    return W == 8 ? x : x & ((1ull << (8 * W)) - 1);
}

// Significant bits of x (bits(0) = 0).
__device__ __forceinline__ u32 bit_count(u64 x) { return 64 - __clzll(x); }

// ceil(c * b / 8): bytes of c packed fields of b bits.
__device__ __forceinline__ u32 packed_len(u32 c, u32 b) { return (c * b + 7) / 8; }

// Bytes of a frame of c values of w bytes packed with b bits: b, ref, the fields.
__device__ __forceinline__ u32 frame_len(u32 c, u32 b, u32 w) { return 1 + w + packed_len(c, b); }

// Min and max over the block of K pairs (lo[k], hi[k]); every thread gets the results.
// `scratch` holds 2 * K * WARPS words. Every thread of the block must call it.
template <int K>
__device__ __forceinline__ void block_min_max(u64 (&lo)[K], u64 (&hi)[K], u64* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            lo[k] = min(lo[k], __shfl_xor_sync(FULL_MASK, lo[k], o));
            hi[k] = max(hi[k], __shfl_xor_sync(FULL_MASK, hi[k], o));
        }
        if (lane == 0) {
            scratch[(2 * k) * WARPS + warp] = lo[k];
            scratch[(2 * k + 1) * WARPS + warp] = hi[k];
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < K; ++k) {
        for (int w = 0; w < WARPS; ++w) {
            lo[k] = min(lo[k], scratch[(2 * k) * WARPS + w]);
            hi[k] = max(hi[k], scratch[(2 * k + 1) * WARPS + w]);
        }
    }
    __syncthreads();  // scratch may be reused right after
}
