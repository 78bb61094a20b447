// LZSS decompression (docs/FORMAT.md, section lzss; the CPU reference is
// src/codec/lzss/decode.rs). One warp per chunk, in its own shared memory:
//   pass 1, 32 tokens at a time: each lane reads its token's flag; ballots and a warp
//     prefix sum over token lengths give every token's match index, literal index and
//     output position; literals are stored and every match symbol is marked with its
//     match's distance;
//   pass 2, 32 symbols at a time: each match symbol follows distances back to a literal
//     or to a symbol before the window (already final) and copies it. Chains inside a
//     window are short, so the warp never waits on one match after another.
// Every length, distance and offset is checked before it is used: a corrupt stream sets
// `error` (a reason code, and the lowest failing chunk) and no byte is written out of
// bounds. GPULZ decodes one chunk per thread; a warp per chunk keeps loads coalesced.

// Reason codes, mapped to messages by the launcher (src/gpu/lzss.rs).
#define E_TOTAL 1          // the sizes do not add up to the payload
#define E_SIZE 2           // a chunk size not in 1..=chunk length
#define E_TOKEN_COUNT 3    // truncated or out-of-range token count
#define E_FLAGS 4          // truncated flags or padding bits set
#define E_SECTIONS 5       // section sizes do not add up to the payload
#define E_LITERAL 6        // a literal past the chunk end
#define E_DISTANCE 7       // a distance not in 1..=min(window, position)
#define E_MATCH_END 8      // a match past the chunk end
#define E_UNFILLED 9       // tokens do not fill the chunk

__device__ __forceinline__ void fail(u32* error, u32 code, u64 chunk) {
    // error[1] keeps the lowest failing chunk, stored as its complement so that the
    // buffer starts as zeros.
    atomicCAS(&error[0], 0u, code);
    atomicMax(&error[1], 0xffffffffu - (u32)min(chunk, (u64)0xffffffffu));
}

template <int S>
__device__ void decode_chunk(const u8* table_and_payload, const u64* offsets, u64 chunks,
                             u64 payload_len, u64 body_len, u32 chunk_size, u32 window,
                             u8* out, u32* error) {
    typedef typename Symbol<S>::T T;
    extern __shared__ u64 shared_words[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u64 chunk = (u64)blockIdx.x * (blockDim.x >> 5) + warp;
    if (chunk == 0 && lane == 0 && offsets[chunks] != payload_len) fail(error, E_TOTAL, 0);
    if (chunk >= chunks) return;
    const u64 start = chunk * chunk_size;
    const u32 len = (u32)min((u64)chunk_size, body_len - start);
    const u32 m = len / S;
    const u8* table = table_and_payload;
    const u32 size = table[2 * chunk] | ((u32)table[2 * chunk + 1] << 8);
    const u64 offset = offsets[chunk];
    if (size == 0 || size > len || offset + size > payload_len) {
        if (lane == 0) fail(error, E_SIZE, chunk);
        return;
    }
    const u8* payload = table_and_payload + 2 * chunks + offset;
    u8* dst = out + start;
    if (size == len) {
        for (u32 b = lane; b < len; b += 32) dst[b] = payload[b];
        return;
    }
    if (size < 2) {
        if (lane == 0) fail(error, E_TOKEN_COUNT, chunk);
        return;
    }
    const u32 tokens = payload[0] | ((u32)payload[1] << 8);
    if (tokens == 0 || tokens > m) {
        if (lane == 0) fail(error, E_TOKEN_COUNT, chunk);
        return;
    }
    const u32 flag_bytes = (tokens + 7) / 8;
    if (2 + flag_bytes > size ||
        ((tokens & 7) && (payload[1 + flag_bytes] >> (tokens & 7)) != 0)) {
        if (lane == 0) fail(error, E_FLAGS, chunk);
        return;
    }
    const u8* flags = payload + 2;
    u32 ones = 0;
    for (u32 b = lane; b < flag_bytes; b += 32) ones += __popc(flags[b]);
    const u32 match_count = warp_sum(ones);
    const u32 literal_count = tokens - match_count;
    if ((u64)2 + flag_bytes + (u64)literal_count * S + 2 * (u64)match_count != size) {
        if (lane == 0) fail(error, E_SECTIONS, chunk);
        return;
    }
    const u8* literals = flags + flag_bytes;
    const u8* lengths = literals + literal_count * S;
    const u8* dists = lengths + match_count;

    // This warp's shared memory: the chunk's symbols, then one byte per symbol: the
    // distance of the match that covers it, 0 for a literal.
    u8* buf_bytes = (u8*)shared_words + (u64)warp * (((chunk_size + 7) & ~7u) + ((chunk_size / S + 7) & ~7u));
    T* buf = (T*)buf_bytes;
    u8* source_dist = buf_bytes + ((chunk_size + 7) & ~7u);
    const u32 below = (1u << lane) - 1;
    const int min_len = lzss_min_match(S);
    u32 pos_base = 0, matches_before = 0;
    // Pass 1: every token's place; literals stored, match symbols marked with their distance.
    for (u32 batch = 0; batch < tokens; batch += 32) {
        const u32 t = batch + lane;
        const bool active = t < tokens;
        const bool is_match = active && ((flags[t >> 3] >> (t & 7)) & 1);
        const u32 match_mask = __ballot_sync(FULL_MASK, is_match);
        const u32 mi = matches_before + __popc(match_mask & below);
        const u32 li = t - mi;
        const u32 mlen = is_match ? lengths[mi] + min_len : 0;
        const u32 dist = is_match ? dists[mi] : 0;
        const u32 tlen = !active ? 0 : (is_match ? mlen : 1);
        const u32 inclusive = warp_inclusive_sum(tlen);
        const u32 pos = pos_base + inclusive - tlen;
        const u32 batch_len = __shfl_sync(FULL_MASK, inclusive, 31);
        u32 code = 0;
        if (active && pos + tlen > m) code = is_match ? E_MATCH_END : E_LITERAL;
        if (is_match && (dist == 0 || dist > window || dist > pos)) code = E_DISTANCE;
        const u32 bad = __ballot_sync(FULL_MASK, code != 0);
        if (bad) {
            if (lane == __ffs(bad) - 1) fail(error, code, chunk);
            return;
        }
        if (active && !is_match) {
            T v = 0;
#pragma unroll
            for (int b = 0; b < S; ++b) v |= (T)literals[li * S + b] << (8 * b);
            buf[pos] = v;
            source_dist[pos] = 0;
        }
        for (u32 k = 0; k < mlen; ++k) source_dist[pos + k] = (u8)dist;
        pos_base += batch_len;
        matches_before += __popc(match_mask);
    }
    if (pos_base != m) {
        if (lane == 0) fail(error, E_UNFILLED, chunk);
        return;
    }
    __syncwarp();
    // Pass 2, 32 symbols at a time: a match symbol copies from `dist` symbols back,
    // following sources that are themselves match symbols of this window (not yet
    // written) until it reaches a literal or a symbol before the window (final).
    for (u32 w = 0; w < m; w += 32) {
        const u32 j = w + lane;
        if (j < m) {
            const u32 d = source_dist[j];
            if (d != 0) {
                u32 from = j - d;
                while (from >= w && source_dist[from] != 0) from -= source_dist[from];
                buf[j] = buf[from];
            }
        }
        __syncwarp();
    }
    // Output: 8-byte words (chunks start at multiples of C, a multiple of 8), then bytes.
    for (u32 w = lane; w < len / 8; w += 32) ((u64*)dst)[w] = ((const u64*)buf_bytes)[w];
    for (u32 b = (len / 8) * 8 + lane; b < len; b += 32) dst[b] = buf_bytes[b];
}

#define DECODE_KERNEL(S)                                                                   \
    extern "C" __global__ void lzss_decode_s##S(const u8* table_and_payload, const u64* offsets, \
                                                u64 chunks, u64 payload_len, u64 body_len,  \
                                                u32 chunk_size, u32 window, u8* out,         \
                                                u32* error) {                                \
        decode_chunk<S>(table_and_payload, offsets, chunks, payload_len, body_len, chunk_size, \
                        window, out, error);                                                 \
    }
DECODE_KERNEL(1)
DECODE_KERNEL(2)
DECODE_KERNEL(4)
DECODE_KERNEL(8)
