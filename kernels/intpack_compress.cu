// intpack compression (docs/FORMAT.md, section intpack; the CPU reference is
// src/codec/intpack/{scheme,encode}.rs and these kernels write the same bytes).
//
// A launch covers the blocks of one or more streams of the same width W: block i's values
// are in[block_in[i] ..] (a multiple of 8), block_values[i] of them (1..=1024); its
// encoding goes to slots[i * slot_bytes(W) ..] and its length to sizes[i].
//
// intpack_encode_w{1,2,4,8}: one block of THREADS threads per 1024-value block, in shared
//   memory: min/max reductions (values, differences, non-zero differences), run starts by
//   a block scan, the distinct values by a bitmap of their range (ranges under 8192 W) or
//   a bitonic sort; a histogram of the values' bit counts above the minimum (frame with
//   exceptions: thread b measures low width b); the exact length of all six
//   schemes by the format's formulas, the shortest (lowest on a tie) written with every
//   packed field OR-ed into shared words by its own thread (deterministic: OR commutes).
// Then size_table_scan.cu gives every encoding's offset, and intpack_compact copies the
// encodings after the launch's size table. Headers and tails are the host's.

// Bits of an exception's position in scheme 5 (blocks hold at most 1024 values).
#define POSITION_BITS 10u

// Bytes of a block's slot: the longest encoding, 2 + W + 1024 W (scheme 0 with b = 8W),
// rounded up to 8. The launcher repeats it (src/codec/intpack/gpu/launch.rs, slot_bytes).
__host__ __device__ constexpr u32 slot_bytes(u32 w) {
    return (2 + w + BLOCK_VALUES * w + 7) & ~7u;
}

// Shared memory of intpack_encode_w<W>, each region a multiple of 8 bytes (the launcher's
// compress_shared_bytes repeats it):
//   values W * 1024 | sorted W * 1024 (biased, then the distinct ones) | run starts 2 * 1024 |
//   encoding slot_bytes(W) + 8 (u32 words, zeroed, the fields OR-ed in; before that, the
//   bitmap of distinct values)

// Writes the `bytes` low bytes of v at p, little-endian.
__device__ __forceinline__ void put_le(u8* p, u64 v, u32 bytes) {
    for (u32 k = 0; k < bytes; ++k) p[k] = (u8)(v >> (8 * k));
}

// ORs the field u (at most 64 bits, nothing above its width) in at bit `bit` of `words`.
// Words without a bit of u are not touched, so nothing past the encoding's end is.
__device__ __forceinline__ void or_field(u32* words, u32 bit, u64 u) {
    if (u == 0) return;
    const u32 w = bit >> 5, s = bit & 31;
    const u64 low = u << s;
    if ((u32)low) atomicOr(&words[w], (u32)low);
    if ((u32)(low >> 32)) atomicOr(&words[w + 1], (u32)(low >> 32));
    if (s) {
        const u32 high = (u32)(u >> (64 - s));
        if (high) atomicOr(&words[w + 2], high);
    }
}

// The frame header at byte `at`: b and ref (w bytes); returns the bit where its fields start.
__device__ __forceinline__ u32 put_frame_header(u8* enc, u32 at, u32 b, u64 ref, u32 w) {
    enc[at] = (u8)b;
    put_le(enc + at + 1, ref, w);
    return 8 * (at + 1 + w);
}

// Position of `key` among the `d` sorted distinct values (it is one of them).
template <typename T>
__device__ __forceinline__ u32 dictionary_index(const T* distinct, u32 d, T key) {
    u32 lo = 0, hi = d;
    while (lo < hi) {
        const u32 mid = (lo + hi) >> 1;
        if (distinct[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Sorts the 1024 values of `keys` ascending (bitonic network, THREADS threads).
template <typename T>
__device__ __forceinline__ void bitonic_sort(T* keys) {
    for (u32 size = 2; size <= BLOCK_VALUES; size <<= 1) {
        for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
            for (u32 p = threadIdx.x; p < BLOCK_VALUES / 2; p += THREADS) {
                const u32 i = 2 * p - (p & (stride - 1));
                const u32 j = i + stride;
                const bool ascending = (i & size) == 0;
                const T a = keys[i], b = keys[j];
                if ((a > b) == ascending) {
                    keys[i] = b;
                    keys[j] = a;
                }
            }
            __syncthreads();
        }
    }
}

// Blocks whose values span fewer than this many (biased) values find their distinct
// values with a bitmap of the span in the encoding's words (1024 W bytes of them are
// free before the encoding is written) instead of sorting: every block of W = 1, and the
// small ranges typical of W >= 2 (quantities, dates, keys).
__host__ __device__ constexpr u64 bitmap_bits(u32 w) { return 8ull * BLOCK_VALUES * w; }

// The distinct values of values[0..n) (biased: value - lo is a bit of `bitmap`, which is
// zero and left zero) ascending into distinct[0..d).
template <int W>
__device__ __forceinline__ void distinct_by_bitmap(const typename Symbol<W>::T* values, u32 n,
                                                   u64 lo, u64 range, typename Symbol<W>::T* distinct,
                                                   u32* bitmap, u32* warp_sums, u32* d) {
    typedef typename Symbol<W>::T T;
    const u64 sign = sign_bit<W>();
    const u32 t = threadIdx.x;
    for (u32 j = t; j < n; j += THREADS) {
        const u32 p = (u32)((u64)(T)(values[j] ^ (T)sign) - lo);
        atomicOr(&bitmap[p >> 5], 1u << (p & 31));
    }
    __syncthreads();
    // Each thread takes consecutive words; a block scan of their counts gives ranks.
    const u32 words = (u32)(range >> 5) + 1;
    const u32 per = (words + THREADS - 1) / THREADS;
    const u32 first = min(t * per, words), end = min(first + per, words);
    u32 count = 0;
    for (u32 w = first; w < end; ++w) count += __popc(bitmap[w]);
    u32 at = block_exclusive_sum(count, warp_sums, d);
    for (u32 w = first; w < end; ++w) {
        for (u32 bits = bitmap[w]; bits; bits &= bits - 1)
            distinct[at++] = (T)(lo + 32 * w + (__ffs(bits) - 1));
    }
    __syncthreads();
    for (u32 w = t; w < words; w += THREADS) bitmap[w] = 0;
    __syncthreads();
}

// The distinct values of the n values in sorted[0..1024) (biased, padded with the
// largest) ascending into sorted[0..d): a bitonic sort, then each value that differs
// from the one before moves to its rank.
template <int W>
__device__ __forceinline__ void distinct_by_sorting(typename Symbol<W>::T* sorted, u32 n,
                                                    u32* warp_sums, u32* d) {
    typedef typename Symbol<W>::T T;
    bitonic_sort(sorted);
    T mine[ITEMS];
    bool is_new[ITEMS];
    u32 fresh = 0;
#pragma unroll
    for (u32 i = 0; i < ITEMS; ++i) {
        const u32 j = ITEMS * threadIdx.x + i;
        mine[i] = sorted[j];
        is_new[i] = j < n && (j == 0 || sorted[j - 1] != mine[i]);
        fresh += is_new[i];
    }
    // Every read of `sorted` above comes before the scan's barriers, every write after.
    u32 rank = block_exclusive_sum(fresh, warp_sums, d);
#pragma unroll
    for (u32 i = 0; i < ITEMS; ++i)
        if (is_new[i]) sorted[rank++] = mine[i];
    __syncthreads();
}

template <int W>
__device__ void encode_block(const u8* in, const u64* block_in, const u16* block_values,
                             u64 blocks, u8* slots, u16* sizes) {
    typedef typename Symbol<W>::T T;
    constexpr u32 SLOT = slot_bytes(W);
    const u64 sign = sign_bit<W>();
    extern __shared__ u64 shared_words[];
    __shared__ u64 scratch[2 * 3 * WARPS];
    __shared__ u32 warp_sums[32];
    // Values by significant bits of value - min (0..=64), then scheme 5's length at each
    // low width b (index b).
    __shared__ u32 bit_histogram[65];
    __shared__ u32 exceptions_length[64];

    const u64 block = blockIdx.x;
    if (block >= blocks) return;
    const u32 n = max(1u, min((u32)block_values[block], (u32)BLOCK_VALUES));
    const T* src = (const T*)(in + block_in[block]);
    T* values = (T*)shared_words;
    T* sorted = values + BLOCK_VALUES;
    u16* run_start = (u16*)(sorted + BLOCK_VALUES);
    u32* words = (u32*)(run_start + BLOCK_VALUES);
    u8* enc = (u8*)words;
    const u32 t = threadIdx.x;

    for (u32 j = t; j < BLOCK_VALUES; j += THREADS) {
        const T v = j < n ? src[j] : (T)0;
        values[j] = v;
        // Padding sorts after every value (it is never read as one).
        sorted[j] = j < n ? (T)(v ^ (T)sign) : (T)~(T)0;
    }
    for (u32 k = t; k < (SLOT + 8) / 4; k += THREADS) words[k] = 0;
    for (u32 k = t; k < 65; k += THREADS) bit_histogram[k] = 0;
    __syncthreads();

    // This thread's values [ITEMS t, ITEMS (t + 1)): biased minima and maxima of the
    // values (0), the differences v[j+1] - v[j] (1) and the non-zero ones, which are the
    // differences of consecutive run values (2); run starts.
    u64 lo[3] = {~0ull, ~0ull, ~0ull}, hi[3] = {0, 0, 0};
    u32 starts = 0;
#pragma unroll
    for (u32 i = 0; i < ITEMS; ++i) {
        const u32 j = ITEMS * t + i;
        if (j < n) {
            const T v = values[j];
            const u64 biased = (u64)(T)(v ^ (T)sign);
            lo[0] = min(lo[0], biased);
            hi[0] = max(hi[0], biased);
            starts += (j == 0 || values[j - 1] != v);
            if (j + 1 < n) {
                const T diff = (T)(values[j + 1] - v);
                const u64 d = (u64)(T)(diff ^ (T)sign);
                lo[1] = min(lo[1], d);
                hi[1] = max(hi[1], d);
                if (diff != 0) {
                    lo[2] = min(lo[2], d);
                    hi[2] = max(hi[2], d);
                }
            }
        }
    }
    block_min_max<3>(lo, hi, scratch);
    // Scheme 5: each value's bits above the minimum.
#pragma unroll
    for (u32 i = 0; i < ITEMS; ++i) {
        const u32 j = ITEMS * t + i;
        if (j < n) atomicAdd(&bit_histogram[bit_count((u64)(T)(values[j] ^ (T)sign) - lo[0])], 1u);
    }
    u32 r;
    u32 run = block_exclusive_sum(starts, warp_sums, &r);
#pragma unroll
    for (u32 i = 0; i < ITEMS; ++i) {
        const u32 j = ITEMS * t + i;
        if (j < n && (j == 0 || values[j - 1] != values[j])) run_start[run++] = (u16)j;
    }
    __syncthreads();
    // Run lengths: minimum and maximum.
    u64 length_lo[1] = {~0ull}, length_hi[1] = {0};
    for (u32 k = t; k < r; k += THREADS) {
        const u64 length = (k + 1 < r ? run_start[k + 1] : n) - run_start[k];
        length_lo[0] = min(length_lo[0], length);
        length_hi[0] = max(length_hi[0], length);
    }
    block_min_max<1>(length_lo, length_hi, scratch);

    // The distinct values, ascending (biased), to the front of `sorted`, and d.
    u32 d;
    if (hi[0] - lo[0] < bitmap_bits(W)) {
        distinct_by_bitmap<W>(values, n, lo[0], hi[0] - lo[0], sorted, words, warp_sums, &d);
    } else {
        distinct_by_sorting<W>(sorted, n, warp_sums, &d);
    }
    // The differences of consecutive distinct values (biased) give the dictionary's frame.
    u64 gap_lo[1] = {~0ull}, gap_hi[1] = {0};
    for (u32 k = t + 1; k < d; k += THREADS) {
        const u64 gap = (u64)(T)((T)(sorted[k] - sorted[k - 1]) ^ (T)sign);
        gap_lo[0] = min(gap_lo[0], gap);
        gap_hi[0] = max(gap_hi[0], gap);
    }
    block_min_max<1>(gap_lo, gap_hi, scratch);

    // Every scheme's exact length (docs/FORMAT.md); every thread computes the same.
    const u32 b_values = bit_count(hi[0] - lo[0]);
    const u32 b_deltas = n > 1 ? bit_count(hi[1] - lo[1]) : 0;
    const u32 b_run_deltas = r > 1 ? bit_count(hi[2] - lo[2]) : 0;
    const u32 b_lengths = bit_count(length_hi[0] - length_lo[0]);
    const u32 b_gaps = d > 1 ? bit_count(gap_hi[0] - gap_lo[0]) : 0;
    const u32 b_index = bit_count(d - 1);
    const u32 lengths_frame = frame_len(r, b_lengths, 2);
    u32 length[5];
    length[0] = 1 + frame_len(n, b_values, W);
    length[1] = 1 + W + frame_len(n - 1, b_deltas, W);
    length[2] = 3 + frame_len(r, b_values, W) + lengths_frame;
    length[3] = 3 + W + frame_len(r - 1, b_run_deltas, W) + lengths_frame;
    length[4] = 3 + W + frame_len(d - 1, b_gaps, W) + packed_len(n, b_index);
    // Scheme 5 at low width b (b < b_values): e(b) values have more than b bits. Thread b
    // measures b; the shortest, the lowest b on a tie (no encoding when b_values is 0).
    // The histogram is complete: the scan and reductions above passed barriers.
    if (t < b_values) {
        u32 e = 0;
        for (u32 k = t + 1; k <= b_values; ++k) e += bit_histogram[k];
        exceptions_length[t] = 5 + W + packed_len(n, t) + packed_len(e, POSITION_BITS) +
                               packed_len(e, b_values - t);
    }
    __syncthreads();
    u32 b_low = 0;
    length[5] = ~0u;
    for (u32 b = 0; b < b_values; ++b)
        if (exceptions_length[b] < length[5]) {
            length[5] = exceptions_length[b];
            b_low = b;
        }
    u32 e_count = 0;
    for (u32 k = b_low + 1; k <= b_values; ++k) e_count += bit_histogram[k];
    u32 scheme = 0;
    for (u32 s = 1; s < 6; ++s)
        if (length[s] < length[scheme]) scheme = s;
    const u32 len = length[scheme];

    // Fixed fields (thread 0), then the packed fields, each value's by its own thread.
    if (t == 0) {
        enc[0] = (u8)scheme;
        if (scheme == 0) {
            put_frame_header(enc, 1, b_values, lo[0] ^ sign, W);
        } else if (scheme == 1) {
            put_le(enc + 1, values[0], W);
            put_frame_header(enc, 1 + W, b_deltas, n > 1 ? lo[1] ^ sign : 0, W);
        } else if (scheme == 2 || scheme == 3) {
            put_le(enc + 1, r, 2);
            u32 at;
            if (scheme == 2) {
                put_frame_header(enc, 3, b_values, lo[0] ^ sign, W);
                at = 3 + frame_len(r, b_values, W);
            } else {
                put_le(enc + 3, values[0], W);
                put_frame_header(enc, 3 + W, b_run_deltas, r > 1 ? lo[2] ^ sign : 0, W);
                at = 3 + W + frame_len(r - 1, b_run_deltas, W);
            }
            put_frame_header(enc, at, b_lengths, length_lo[0], 2);
        } else if (scheme == 4) {
            put_le(enc + 1, d, 2);
            put_le(enc + 3, lo[0] ^ sign, W);  // the smallest value comes first
            put_frame_header(enc, 3 + W, b_gaps, d > 1 ? gap_lo[0] ^ sign : 0, W);
        } else {
            put_frame_header(enc, 1, b_low, lo[0] ^ sign, W);
            put_le(enc + 2 + W, e_count, 2);
            enc[4 + W] = (u8)(b_values - b_low);
        }
    }
    __syncthreads();
    if (scheme == 0) {
        const u32 base = 8 * (2 + W);
        if (b_values)
            for (u32 j = t; j < n; j += THREADS)
                or_field(words, base + j * b_values, (u64)(T)(values[j] ^ (T)sign) - lo[0]);
    } else if (scheme == 1) {
        const u32 base = 8 * (2 + 2 * W);
        if (b_deltas)
            for (u32 j = t; j + 1 < n; j += THREADS) {
                const u64 diff = (u64)(T)((T)(values[j + 1] - values[j]) ^ (T)sign);
                or_field(words, base + j * b_deltas, diff - lo[1]);
            }
    } else if (scheme == 2 || scheme == 3) {
        u32 lengths_at;
        if (scheme == 2) {
            const u32 base = 8 * (4 + W);
            if (b_values)
                for (u32 k = t; k < r; k += THREADS)
                    or_field(words, base + k * b_values,
                             (u64)(T)(values[run_start[k]] ^ (T)sign) - lo[0]);
            lengths_at = 3 + frame_len(r, b_values, W);
        } else {
            const u32 base = 8 * (4 + 2 * W);
            if (b_run_deltas)
                for (u32 k = t; k + 1 < r; k += THREADS) {
                    const T diff = (T)(values[run_start[k + 1]] - values[run_start[k]]);
                    or_field(words, base + k * b_run_deltas, (u64)(T)(diff ^ (T)sign) - lo[2]);
                }
            lengths_at = 3 + W + frame_len(r - 1, b_run_deltas, W);
        }
        const u32 base = 8 * (lengths_at + 3);
        if (b_lengths)
            for (u32 k = t; k < r; k += THREADS) {
                const u64 length = (k + 1 < r ? run_start[k + 1] : n) - run_start[k];
                or_field(words, base + k * b_lengths, length - length_lo[0]);
            }
    } else if (scheme == 5) {
        // Low bits of every value, then each exception's position and high bits at its
        // rank among the exceptions (a block scan over the thread's consecutive values).
        const u32 base = 8 * (5 + W);
        const u32 h = b_values - b_low;
        u64 offset[ITEMS];
        u32 mine = 0;
#pragma unroll
        for (u32 i = 0; i < ITEMS; ++i) {
            const u32 j = ITEMS * t + i;
            offset[i] = j < n ? (u64)(T)(values[j] ^ (T)sign) - lo[0] : 0;
            mine += (offset[i] >> b_low) != 0;
        }
        u32 total;
        u32 rank = block_exclusive_sum(mine, warp_sums, &total);
        const u32 positions = 8 * (5 + W + packed_len(n, b_low));
        const u32 highs = positions + 8 * packed_len(e_count, POSITION_BITS);
#pragma unroll
        for (u32 i = 0; i < ITEMS; ++i) {
            const u32 j = ITEMS * t + i;
            if (j >= n) continue;
            if (b_low) or_field(words, base + j * b_low, offset[i] & ((1ull << b_low) - 1));
            if (offset[i] >> b_low) {
                or_field(words, positions + rank * POSITION_BITS, j);
                or_field(words, highs + rank * h, offset[i] >> b_low);
                ++rank;
            }
        }
    } else {
        const u32 base = 8 * (4 + 2 * W);
        if (b_gaps)
            for (u32 k = t; k + 1 < d; k += THREADS) {
                const T gap = (T)(sorted[k + 1] - sorted[k]);
                or_field(words, base + k * b_gaps, (u64)(T)(gap ^ (T)sign) - gap_lo[0]);
            }
        const u32 index_base = 8 * (4 + 2 * W + packed_len(d - 1, b_gaps));
        if (b_index)
            for (u32 j = t; j < n; j += THREADS)
                or_field(words, index_base + j * b_index,
                         dictionary_index(sorted, d, (T)(values[j] ^ (T)sign)));
    }
    __syncthreads();
    // The encoding to the block's slot (8-aligned) as words; bytes past `len` are zeros.
    u32* slot = (u32*)(slots + block * SLOT);
    for (u32 k = t; k < (len + 3) / 4; k += THREADS) slot[k] = words[k];
    if (t == 0) sizes[block] = (u16)len;
}

#define ENCODE_KERNEL(W)                                                                    \
    extern "C" __global__ void __launch_bounds__(THREADS) intpack_encode_w##W(              \
        const u8* in, const u64* block_in, const u16* block_values, u64 blocks, u8* slots,    \
        u16* sizes) {                                                                        \
        encode_block<W>(in, block_in, block_values, blocks, slots, sizes);                   \
    }
ENCODE_KERNEL(1)
ENCODE_KERNEL(2)
ENCODE_KERNEL(4)
ENCODE_KERNEL(8)

// The launch's output: the size table (2 bytes per block, little-endian) then every
// encoding at its offset after it. One block of threads per encoding.
extern "C" __global__ void intpack_compact(const u8* slots, u32 slot_stride, const u16* sizes,
                                           const u64* offsets, u64 blocks, u8* out) {
    const u64 block = blockIdx.x;
    if (block >= blocks) return;
    const u32 size = min((u32)sizes[block], slot_stride);
    if (threadIdx.x == 0) {
        out[2 * block] = (u8)size;
        out[2 * block + 1] = (u8)(size >> 8);
    }
    const u8* src = slots + block * slot_stride;
    u8* dst = out + 2 * blocks + offsets[block];
    for (u32 k = threadIdx.x; k < size; k += blockDim.x) dst[k] = src[k];
}
