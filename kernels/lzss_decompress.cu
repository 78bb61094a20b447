// LZSS decompression (docs/FORMAT.md, section lzss; the CPU reference is
// src/codec/lzss/decode.rs). One block of up to MAX_WARPS warps per chunk, in shared memory:
//   pass 1: the warps split the tokens into runs of whole 32-token batches; block prefix
//     sums of their match and symbol counts give each run's first match and position.
//     In a batch, each lane reads its token's flag; ballots and a warp prefix sum over
//     token lengths give every token's match index, literal index and position;
//     literals are stored, and every match symbol records its source symbol;
//   pass 2, a window of symbols at a time: every match symbol follows sources back to
//     a literal or to a symbol before the window, and copies it.
// Nothing waits on the match before it (GPULZ decodes a whole chunk on one thread).
// Every length, distance and offset is checked before it is used: a corrupt stream sets
// `error` (a reason code, and the lowest failing chunk) and no byte is written out of
// bounds.

// Reason codes E_* come from the launcher (src/codec/lzss/gpu/launch.rs, the Rust enum
// LzssDecodeError), as -D defines.
#if !defined(E_TOTAL) || !defined(E_SIZE) || !defined(E_TOKEN_COUNT) || !defined(E_FLAGS) ||  \
    !defined(E_SECTIONS) || !defined(E_LITERAL) || !defined(E_DISTANCE) ||                    \
    !defined(E_MATCH_END) || !defined(E_UNFILLED)
#error "lzss_decompress.cu needs its reason codes from the launcher"
#endif

__device__ __forceinline__ void fail(u32* error, u32 code, u64 chunk) {
    // error[1] keeps the lowest failing chunk, stored as its complement so that the
    // buffer starts as zeros.
    atomicCAS(&error[0], 0u, code);
    atomicMax(&error[1], 0xffffffffu - (u32)min(chunk, (u64)0xffffffffu));
}

// Most warps that share one chunk (the launcher's block is at most 32 * MAX_WARPS threads).
#define MAX_WARPS 8

template <int S>
__device__ void decode_chunk(const u8* table_and_payload, const u64* offsets, u64 chunks,
                             u64 payload_len, const u64* chunk_out, const u16* chunk_lens,
                             u32 chunk_size, u32 window, u8* out, u32* error) {
    typedef typename Symbol<S>::T T;
    extern __shared__ u64 shared_words[];
    __shared__ u32 warp_matches[MAX_WARPS], warp_symbols[MAX_WARPS];
    __shared__ u32 failed;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const u64 chunk = blockIdx.x;
    if (chunk == 0 && threadIdx.x == 0 && offsets[chunks] != payload_len) fail(error, E_TOTAL, 0);
    if (chunk >= chunks) return;
    const u32 len = min((u32)chunk_lens[chunk], chunk_size);
    const u32 m = len / S;
    const u8* table = table_and_payload;
    const u32 size = table[2 * chunk] | ((u32)table[2 * chunk + 1] << 8);
    const u64 offset = offsets[chunk];
    // The checks up to the sections depend on the chunk only: every thread agrees.
    if (size == 0 || size > len || offset + size > payload_len) {
        if (threadIdx.x == 0) fail(error, E_SIZE, chunk);
        return;
    }
    const u8* payload = table_and_payload + 2 * chunks + offset;
    u8* dst = out + chunk_out[chunk];
    if (size == len) {
        for (u32 b = threadIdx.x; b < len; b += blockDim.x) dst[b] = payload[b];
        return;
    }
    const u32 tokens = size < 2 ? 0 : payload[0] | ((u32)payload[1] << 8);
    if (tokens == 0 || tokens > m) {
        if (threadIdx.x == 0) fail(error, E_TOKEN_COUNT, chunk);
        return;
    }
    const u32 flag_bytes = (tokens + 7) / 8;
    if (2 + flag_bytes > size ||
        ((tokens & 7) && (payload[1 + flag_bytes] >> (tokens & 7)) != 0)) {
        if (threadIdx.x == 0) fail(error, E_FLAGS, chunk);
        return;
    }
    const u8* flags = payload + 2;
    const int min_len = lzss_min_match(S);

    // Each warp takes a run of whole batches of 32 tokens: its first match index and
    // output position come from block prefix sums of the match and symbol counts.
    const u32 per = ((tokens + warps * 32 - 1) / (warps * 32)) * 32;
    const u32 t_first = min(warp * per, tokens), t_end = min(t_first + per, tokens);
    u32 ones = 0;
    // t_first is a multiple of 32, so runs own whole flag bytes (an empty run owns none).
    const u32 flag_end = t_first < t_end ? (t_end + 7) / 8 : t_first / 8;
    for (u32 b = t_first / 8 + lane; b < flag_end; b += 32) ones += __popc(flags[b]);
    const u32 my_matches = warp_sum(ones);
    if (lane == 0) warp_matches[warp] = my_matches;
    if (threadIdx.x == 0) failed = 0;
    __syncthreads();
    u32 match_count = 0, matches_before = 0;
    for (int w = 0; w < warps; ++w) {
        if (w < warp) matches_before += warp_matches[w];
        match_count += warp_matches[w];
    }
    const u32 literal_count = tokens - match_count;
    if ((u64)2 + flag_bytes + (u64)literal_count * S + 2 * (u64)match_count != size) {
        if (threadIdx.x == 0) fail(error, E_SECTIONS, chunk);
        return;
    }
    const u8* literals = flags + flag_bytes;
    const u8* lengths = literals + literal_count * S;
    const u8* dists = lengths + match_count;
    u32 match_symbols = 0;
    for (u32 k = lane; k < my_matches; k += 32) match_symbols += lengths[matches_before + k] + min_len;
    const u32 my_symbols = warp_sum(match_symbols) + (t_end - t_first - my_matches);
    if (lane == 0) warp_symbols[warp] = my_symbols;
    __syncthreads();
    u32 pos_base = 0, symbols = 0;
    for (int w = 0; w < warps; ++w) {
        if (w < warp) pos_base += warp_symbols[w];
        symbols += warp_symbols[w];
    }
    if (symbols != m) {
        if (threadIdx.x == 0) fail(error, E_UNFILLED, chunk);
        return;
    }

    // Shared memory: the chunk's symbols, then each symbol's source (u16): itself for a
    // literal, an earlier symbol for a match symbol. An overlapping match's symbol k
    // points to pos - dist + k % dist, before the match, so sources lead to literals
    // through earlier matches only.
    u8* buf_bytes = (u8*)shared_words;
    T* buf = (T*)buf_bytes;
    u16* source = (u16*)(buf_bytes + ((chunk_size + 7) & ~7u));
    const u32 below = (1u << lane) - 1;
    for (u32 batch = t_first; batch < t_end; batch += 32) {
        const u32 t = batch + lane;
        const bool active = t < t_end;
        const bool is_match = active && ((flags[t >> 3] >> (t & 7)) & 1);
        const u32 match_mask = __ballot_sync(FULL_MASK, is_match);
        const u32 mi = matches_before + __popc(match_mask & below);
        const u32 li = t - mi;
        const u32 mlen = is_match ? lengths[mi] + min_len : 0;
        const u32 dist = is_match ? dists[mi] : 0;
        const u32 tlen = !active ? 0 : (is_match ? mlen : 1);
        const u32 inclusive = warp_inclusive_sum(tlen);
        const u32 pos = pos_base + inclusive - tlen;
        u32 code = 0;
        if (active && pos + tlen > m) code = is_match ? E_MATCH_END : E_LITERAL;
        if (is_match && (dist == 0 || dist > window || dist > pos)) code = E_DISTANCE;
        const u32 bad = __ballot_sync(FULL_MASK, code != 0);
        if (bad) {
            if (lane == __ffs(bad) - 1) fail(error, code, chunk);
            failed = 1;
            break;
        }
        if (active && !is_match) {
            T v = 0;
#pragma unroll
            for (int b = 0; b < S; ++b) v |= (T)literals[li * S + b] << (8 * b);
            buf[pos] = v;
            source[pos] = (u16)pos;
        }
        for (u32 k = 0, r = 0; k < mlen; ++k) {
            source[pos + k] = (u16)(pos - dist + r);
            r = r + 1 == dist ? 0 : r + 1;
        }
        pos_base += __shfl_sync(FULL_MASK, inclusive, 31);
        matches_before += __popc(match_mask);
    }
    __syncthreads();
    if (failed) return;
    // Pass 2, a window of blockDim.x symbols at a time: every match symbol follows its
    // sources back to a literal or to a symbol before the window (final already) and
    // copies it; literals are never written here. Each step goes strictly earlier, and
    // within one window, so the walks are short.
    for (u32 w = 0; w < m; w += blockDim.x) {
        const u32 j = w + threadIdx.x;
        if (j < m) {
            u32 from = source[j];
            if (from != j) {
                u32 next;
                while (from >= w && (next = source[from]) != from) from = next;
                buf[j] = buf[from];
            }
        }
        __syncthreads();
    }
    // Output: 8-byte words (the launcher places every chunk at a multiple of 8), then bytes.
    for (u32 w = threadIdx.x; w < len / 8; w += blockDim.x) ((u64*)dst)[w] = ((const u64*)buf_bytes)[w];
    for (u32 b = (len / 8) * 8 + threadIdx.x; b < len; b += blockDim.x) dst[b] = buf_bytes[b];
}

#define DECODE_KERNEL(S)                                                                   \
    extern "C" __global__ void lzss_decode_s##S(                                            \
        const u8* table_and_payload, const u64* offsets, u64 chunks, u64 payload_len,          \
        const u64* chunk_out, const u16* chunk_lens, u32 chunk_size, u32 window, u8* out,      \
        u32* error) {                                                                        \
        decode_chunk<S>(table_and_payload, offsets, chunks, payload_len, chunk_out, chunk_lens, \
                        chunk_size, window, out, error);                                     \
    }
DECODE_KERNEL(1)
DECODE_KERNEL(2)
DECODE_KERNEL(4)
DECODE_KERNEL(8)
