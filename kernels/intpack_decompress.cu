// intpack decompression (docs/FORMAT.md, section intpack; the CPU reference is
// src/codec/intpack/decode.rs). One block of THREADS threads per block encoding: the
// encoding is staged in shared memory; thread 0 reads the fixed fields and checks every
// one ("Decoder validation": scheme, b <= 8w, r and d in 1..=n, frames of no values with
// b = 0, the encoding consuming exactly size[i] bytes); then every thread unpacks the
// fields of its values from their own bit offsets. Delta frames are block prefix sums;
// runs are found from the run starts (a prefix sum of the lengths, which must be >= 1
// and add up to n) by binary search; dictionary values are looked up in shared memory
// (indices must be < d); a frame with exceptions is unpacked like a frame, then a thread
// per exception checks its position (strictly ascending, below n) and adds its high bits
// there. A launch covers the blocks of one or more streams of the same W:
// block i's encoding is size[i] bytes at offsets[i] after the size table, its n values go
// to out[block_out[i] ..] (a multiple of 8). The host checked the headers and size tables.
// A corrupt encoding sets `error` (a reason code, and the lowest failing block); nothing
// is read or written out of bounds.

// Reason codes E_* come from the launcher (src/codec/intpack/gpu/launch.rs, the Rust enum
// IntpackDecodeError), as -D defines.
#if !defined(E_TOTAL) || !defined(E_SIZE) || !defined(E_SCHEME) || !defined(E_WIDTH) ||    \
    !defined(E_COUNT) || !defined(E_LENGTH) || !defined(E_RUNS) || !defined(E_INDEX) ||       \
    !defined(E_EXCEPTIONS)
#error "intpack_decompress.cu needs its reason codes from the launcher"
#endif

__device__ __forceinline__ void fail(u32* error, u32 code, u64 block) {
    // error[1] keeps the lowest failing block, stored as its complement so that the
    // buffer starts as zeros.
    atomicCAS(&error[0], 0u, code);
    atomicMax(&error[1], 0xffffffffu - (u32)min(block, (u64)0xffffffffu));
}

// The longest encoding of n values that passes every check: runs (scheme 2 or 3) with
// r = n, b = 8W and 16-bit lengths, 7 + W + n (W + 2) bytes. A larger size cannot be
// consumed exactly. The launcher sizes the staging area by it (decode_shared_bytes).
__host__ __device__ constexpr u32 longest_encoding(u32 w, u32 n) { return 7 + w + n * (w + 2); }

// Shared memory of intpack_decode_w<W>, each region a multiple of 8 bytes:
//   encoding round8(longest_encoding(W, 1024)) | values W * 1024 (run or dictionary
//   values) | run starts 4 * 1024

// The little-endian integer of `bytes` bytes at p.
__device__ __forceinline__ u64 get_le(const u8* p, u32 bytes) {
    u64 v = 0;
    for (u32 k = 0; k < bytes; ++k) v |= (u64)p[k] << (8 * k);
    return v;
}

// The b-bit field at bit `bit` (b <= 64), from the bytes that hold it and no others.
__device__ __forceinline__ u64 read_bits(const u8* enc, u32 bit, u32 b) {
    if (b == 0) return 0;
    const u32 at = bit >> 3, s = bit & 7, bytes = (s + b + 7) >> 3;  // at most 9
    u64 v = 0;
    for (u32 k = 0; k < min(bytes, 8u); ++k) v |= (u64)enc[at + k] << (8 * k);
    v >>= s;
    if (bytes == 9) v |= (u64)enc[at + 8] << (64 - s);
    return b == 64 ? v : v & ((1ull << b) - 1);
}

// A frame as read: its ref, b and the bit where its packed fields start.
struct Frame {
    u64 ref;
    u32 b, bit;
};

// What thread 0 reads of an encoding, for every thread.
struct Parsed {
    u32 scheme, code;
    u32 count;  // r, d or e
    u64 first;  // a delta frame's first value
    Frame values;   // values, differences, run values or their differences, dictionary gaps
    Frame lengths;  // run lengths (w = 2)
    u32 index_bits, index_bit;  // dictionary indices; scheme 5: high bits h, their field
    u32 positions_bit;          // scheme 5: the positions' field
};

// Bits of an exception's position in scheme 5.
#define POSITION_BITS 10u

// Reads w bytes at *at, within `size`.
__device__ __forceinline__ bool read_word(const u8* enc, u32 size, u32* at, u32 w, u64* v,
                                          u32* code) {
    if (*at + w > size) {
        *code = E_LENGTH;
        return false;
    }
    *v = get_le(enc + *at, w);
    *at += w;
    return true;
}

// Reads the frame of c values of w bytes at *at: b <= 8w (0 when c is 0), within `size`.
__device__ __forceinline__ bool read_frame(const u8* enc, u32 size, u32* at, u32 c, u32 w,
                                           Frame* f, u32* code) {
    if (*at + 1 + w > size) {
        *code = E_LENGTH;
        return false;
    }
    const u32 b = enc[*at];
    if (b > 8 * w || (c == 0 && b != 0)) {
        *code = E_WIDTH;
        return false;
    }
    f->b = b;
    f->ref = get_le(enc + *at + 1, w);
    f->bit = 8 * (*at + 1 + w);
    *at += 1 + w + packed_len(c, b);
    if (*at > size) {
        *code = E_LENGTH;
        return false;
    }
    return true;
}

// Reads a count (r or d) that must be in 1..=n.
__device__ __forceinline__ bool read_count(const u8* enc, u32 size, u32* at, u32 n, u32* count,
                                           u32* code) {
    u64 c;
    if (!read_word(enc, size, at, 2, &c, code)) return false;
    if (c == 0 || c > n) {
        *code = E_COUNT;
        return false;
    }
    *count = (u32)c;
    return true;
}

// Reads and checks the fixed fields of an encoding of n values and `size` bytes.
template <int W>
__device__ void parse(const u8* enc, u32 size, u32 n, Parsed* p) {
    u32 at = 1, code = 0;
    p->scheme = enc[0];
    p->count = 0;
    p->first = 0;
    p->index_bits = 0;
    p->index_bit = 0;
    p->positions_bit = 0;
    bool ok = true;
    switch (p->scheme) {
    case 0:
        ok = read_frame(enc, size, &at, n, W, &p->values, &code);
        break;
    case 1:
        ok = read_word(enc, size, &at, W, &p->first, &code) &&
             read_frame(enc, size, &at, n - 1, W, &p->values, &code);
        break;
    case 2:
    case 3:
        ok = read_count(enc, size, &at, n, &p->count, &code) &&
             (p->scheme == 2 ? read_frame(enc, size, &at, p->count, W, &p->values, &code)
                             : read_word(enc, size, &at, W, &p->first, &code) &&
                                   read_frame(enc, size, &at, p->count - 1, W, &p->values, &code)) &&
             read_frame(enc, size, &at, p->count, 2, &p->lengths, &code);
        break;
    case 4:
        ok = read_count(enc, size, &at, n, &p->count, &code) &&
             read_word(enc, size, &at, W, &p->first, &code) &&
             read_frame(enc, size, &at, p->count - 1, W, &p->values, &code);
        if (ok) {
            p->index_bits = bit_count(p->count - 1);
            p->index_bit = 8 * at;
            at += packed_len(n, p->index_bits);
        }
        break;
    case 5: {
        // b, ref, e, h: b + h <= 8W with h >= 1; then the low bits, positions, high bits.
        u64 b, ref, h;
        ok = read_word(enc, size, &at, 1, &b, &code) && read_word(enc, size, &at, W, &ref, &code) &&
             read_count(enc, size, &at, n, &p->count, &code) &&
             read_word(enc, size, &at, 1, &h, &code);
        if (ok && (h == 0 || b + h > 8 * W)) {
            ok = false;
            code = E_WIDTH;
        }
        if (ok) {
            p->values.b = (u32)b;
            p->values.ref = ref;
            p->values.bit = 8 * at;
            at += packed_len(n, (u32)b);
            p->positions_bit = 8 * at;
            at += packed_len(p->count, POSITION_BITS);
            p->index_bits = (u32)h;
            p->index_bit = 8 * at;
            at += packed_len(p->count, (u32)h);
        }
        break;
    }
    default:
        ok = false;
        code = E_SCHEME;
    }
    if (ok && at != size) code = E_LENGTH;
    p->code = code;
}

// The `count` values of a delta frame (the first, then each one the one before plus
// ref plus its field) into dst: a block prefix sum, each thread over its ITEMS values.
template <typename T>
__device__ __forceinline__ void delta_values(const u8* enc, const Parsed& p, u32 count, T* dst,
                                             u64* warp_sums) {
    u64 inclusive[ITEMS];
    u64 local = 0;
#pragma unroll
    for (u32 i = 0; i < ITEMS; ++i) {
        const u32 k = ITEMS * threadIdx.x + i;
        if (k < count)
            local += k == 0 ? p.first
                            : p.values.ref + read_bits(enc, p.values.bit + (k - 1) * p.values.b,
                                                       p.values.b);
        inclusive[i] = local;
    }
    u64 block_total;
    const u64 before = block_exclusive_sum64(local, warp_sums, &block_total);
#pragma unroll
    for (u32 i = 0; i < ITEMS; ++i) {
        const u32 k = ITEMS * threadIdx.x + i;
        if (k < count) dst[k] = (T)(before + inclusive[i]);
    }
}

template <int W>
__device__ void decode_block(const u8* table_and_payload, const u64* offsets, u64 blocks,
                             u64 payload_len, const u64* block_out, const u16* block_values,
                             u8* out, u32* error) {
    typedef typename Symbol<W>::T T;
    constexpr u32 STAGE = (longest_encoding(W, BLOCK_VALUES) + 7) & ~7u;
    extern __shared__ u64 shared_words[];
    __shared__ Parsed parsed;
    __shared__ u64 warp_sums[32];
    const u32 t = threadIdx.x;
    const u64 block = blockIdx.x;
    if (block == 0 && t == 0 && offsets[blocks] != payload_len) fail(error, E_TOTAL, 0);
    if (block >= blocks) return;
    const u32 n = max(1u, min((u32)block_values[block], (u32)BLOCK_VALUES));
    const u8* table = table_and_payload;
    const u32 size = table[2 * block] | ((u32)table[2 * block + 1] << 8);
    const u64 offset = offsets[block];
    // Depends on the block only: every thread agrees.
    if (size == 0 || size > longest_encoding(W, n) || offset + size > payload_len) {
        if (t == 0) fail(error, E_SIZE, block);
        return;
    }
    u8* enc = (u8*)shared_words;
    T* values = (T*)(enc + STAGE);
    u32* starts = (u32*)(values + BLOCK_VALUES);
    const u8* payload = table_and_payload + 2 * blocks + offset;
    for (u32 k = t; k < size; k += THREADS) enc[k] = payload[k];
    __syncthreads();
    if (t == 0) parse<W>(enc, size, n, &parsed);
    __syncthreads();
    const Parsed p = parsed;
    if (p.code) {
        if (t == 0) fail(error, p.code, block);
        return;
    }
    T* dst = (T*)(out + block_out[block]);
    const Frame f = p.values;
    if (p.scheme == 0) {
        for (u32 j = t; j < n; j += THREADS) dst[j] = (T)(f.ref + read_bits(enc, f.bit + j * f.b, f.b));
        return;
    }
    if (p.scheme == 1) {
        delta_values(enc, p, n, dst, warp_sums);
        return;
    }
    if (p.scheme == 5) {
        for (u32 j = t; j < n; j += THREADS) dst[j] = (T)(f.ref + read_bits(enc, f.bit + j * f.b, f.b));
        // Every value's low part is stored before an exception adds to it.
        __syncthreads();
        bool bad = false;
        for (u32 k = t; k < p.count; k += THREADS) {
            const u32 j = (u32)read_bits(enc, p.positions_bit + k * POSITION_BITS, POSITION_BITS);
            const u32 before =
                k ? (u32)read_bits(enc, p.positions_bit + (k - 1) * POSITION_BITS, POSITION_BITS) : 0;
            if (j >= n || (k && j <= before)) {
                bad = true;
                continue;
            }
            const u64 high = read_bits(enc, p.index_bit + k * p.index_bits, p.index_bits);
            dst[j] = (T)(dst[j] + (T)(high << f.b));
        }
        if (__syncthreads_or(bad) && t == 0) fail(error, E_EXCEPTIONS, block);
        return;
    }
    // Run values or the dictionary to shared memory.
    if (p.scheme == 2) {
        for (u32 k = t; k < p.count; k += THREADS)
            values[k] = (T)(f.ref + read_bits(enc, f.bit + k * f.b, f.b));
    } else {
        delta_values(enc, p, p.count, values, warp_sums);
    }
    if (p.scheme == 4) {
        __syncthreads();
        bool bad = false;
        for (u32 j = t; j < n; j += THREADS) {
            const u64 index = read_bits(enc, p.index_bit + j * p.index_bits, p.index_bits);
            if (index < p.count) dst[j] = values[index];
            else bad = true;
        }
        if (__syncthreads_or(bad) && t == 0) fail(error, E_INDEX, block);
        return;
    }
    // Runs: each length is ref + field in 16-bit arithmetic, at least 1; the starts are
    // their exclusive prefix sum, and the lengths must add up to n.
    const Frame l = p.lengths;
    u32 lengths[ITEMS];
    u32 local = 0;
    bool bad = false;
#pragma unroll
    for (u32 i = 0; i < ITEMS; ++i) {
        const u32 k = ITEMS * t + i;
        lengths[i] = k < p.count ? (u16)(l.ref + read_bits(enc, l.bit + k * l.b, l.b)) : 0;
        bad |= k < p.count && lengths[i] == 0;
        local += lengths[i];
    }
    u32 total;
    u32 start = block_exclusive_sum(local, (u32*)warp_sums, &total);
#pragma unroll
    for (u32 i = 0; i < ITEMS; ++i) {
        const u32 k = ITEMS * t + i;
        if (k < p.count) starts[k] = start;
        start += lengths[i];
    }
    if (__syncthreads_or(bad) || total != n) {
        if (t == 0) fail(error, E_RUNS, block);
        return;
    }
    // Value j belongs to the last run starting at or before it (starts[0] = 0).
    for (u32 j = t; j < n; j += THREADS) {
        u32 lo = 0, hi = p.count;
        while (hi - lo > 1) {
            const u32 mid = (lo + hi) >> 1;
            if (starts[mid] <= j) lo = mid; else hi = mid;
        }
        dst[j] = values[lo];
    }
}

#define DECODE_KERNEL(W)                                                                    \
    extern "C" __global__ void __launch_bounds__(THREADS) intpack_decode_w##W(              \
        const u8* table_and_payload, const u64* offsets, u64 blocks, u64 payload_len,          \
        const u64* block_out, const u16* block_values, u8* out, u32* error) {                 \
        decode_block<W>(table_and_payload, offsets, blocks, payload_len, block_out,           \
                        block_values, out, error);                                           \
    }
DECODE_KERNEL(1)
DECODE_KERNEL(2)
DECODE_KERNEL(4)
DECODE_KERNEL(8)
