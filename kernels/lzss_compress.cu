// LZSS compression, after GPULZ (docs/FORMAT.md, section lzss; the CPU reference is
// src/codec/lzss/{matching,parse,encode}.rs and these kernels write the same bytes).
//
// A launch covers the chunks of one or more streams of the same parameters: chunk i's
// bytes are in[chunk_in[i] .. + chunk_lens[i]] (at a multiple of 8), its slot in
// `scratch` at i * C.
//
// Kernel I  (lzss_chunks_s{1,2,4,8}): one block per chunk, all in shared memory:
//   1. matching: a warp takes 32 consecutive positions and, for each distance d, compares
//      every position with the symbol d back; a ballot turns the 32 answers into a bit
//      mask whose runs of ones are the match lengths (extended word by word past the 32),
//      so a long match costs a few votes instead of a loop per thread;
//   2. parse: position i links to i + len (match) or i + 1 (literal); the greedy parse is
//      the set reached from 0, found by pointer jumping in log2(m) rounds (GPULZ runs it
//      on one thread);
//   3. encode: a block-wide prefix sum over (tokens, matches) gives every token's place.
//   A chunk whose encoding is not smaller is left in the input (size == its length).
// Kernel II is size_table_scan.cu. Kernel III (lzss_compact): one warp per chunk copies its
// payload to its offset after the size table, and writes the table entry.

// Shared-memory layout of kernel I for a chunk of C bytes and m = C / S symbols, each
// region rounded up to 8 bytes; the launcher computes the same total
// (src/gpu/lzss.rs, compress_shared_bytes):
//   sym C | out C | matches 2m: (len - min_match) << 8 | dist, 0 when none |
//   jump 2m + 2m: the pointer-jumping links, double-buffered | reached m: the parse's marks |
//   flags 4 (m / 32 + 1) | sums 128
__device__ __forceinline__ u32 round8(u32 x) { return (x + 7) & ~7u; }

// Count of trailing ones of `x`, 32 when all are ones.
__device__ __forceinline__ int trailing_ones(u32 x) { return __clz(__brev(~x)); }

// The matches of the 32 positions from `base` (a warp, one position per lane). NEAR_START:
// some positions have fewer than `window` symbols before them (their lane skips d > i).
template <int S, bool NEAR_START>
__device__ __forceinline__ void match_group(const typename Symbol<S>::T* sym, int m, int window,
                                            int base, u16* matches) {
    typedef typename Symbol<S>::T T;
    const int lane = threadIdx.x & 31;
    const int min_len = lzss_min_match(S), max_len = 255 + lzss_min_match(S);
    const int i = base + lane;
    const bool valid = i < m;
    const T mine = valid ? sym[i] : (T)0;
    const int cap = valid ? min(max_len, m - i) : 0;
    int best_len = 0, best_dist = 0;
    const int last_d = NEAR_START ? min(window, base + 31) : window;
    for (int d = 1; d <= last_d; ++d) {
        // Every so often, stop when every lane has a match as long as it can be (ties
        // keep the smallest distance, so later ones cannot win).
        if ((d & 7) == 0 && __all_sync(FULL_MASK, best_len == cap)) break;
        // Every valid position answers: its bit continues the runs of the lanes before.
        const bool eq = valid && (!NEAR_START || d <= i) && sym[i - d] == mine;
        const u32 mask = __ballot_sync(FULL_MASK, eq);
        if (mask == 0) continue;
        int run = trailing_ones(mask >> lane);  // 0 where this lane's symbol differs
        if (mask >> 31) {
            // Runs that reach the word's end continue into the next 32 positions.
            bool extend = run == 32 - lane && run < cap;
            for (int t = 1; t <= 9 && __any_sync(FULL_MASK, extend); ++t) {
                const int j = i + 32 * t;
                const bool e = j < m && j >= d && sym[j - d] == sym[j];
                const u32 word = __ballot_sync(FULL_MASK, e);
                if (extend) run += trailing_ones(word);
                extend = extend && word == FULL_MASK && run < cap;
            }
        }
        const int len = min(run, cap);
        if (len > best_len) {  // strictly longer: ties keep the smaller distance
            best_len = len;
            best_dist = d;
        }
    }
    if (valid) {
        matches[i] = best_len >= min_len ? (u16)(((best_len - min_len) << 8) | best_dist) : (u16)0;
    }
}

template <int S>
__device__ void find_matches(const typename Symbol<S>::T* sym, int m, int window, u16* matches) {
    const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int base = warp * 32; base < m; base += warps * 32) {
        if (base < window) {
            match_group<S, true>(sym, m, window, base, matches);
        } else {
            match_group<S, false>(sym, m, window, base, matches);
        }
    }
}

// Hash chains: the other way to the same matches (the CPU's way). Every position with
// min_match symbols after it is linked to the previous position whose first min_match
// symbols hash alike, so a search visits, nearest first, every position that can give a
// match long enough to take (plus collisions, which the comparison rejects). The links
// are built 32 positions per step by a warp (by one per segment of a long chunk), lanes
// of equal hash found with __match_any_sync; then each thread walks the chains of its
// positions within the window.
#define HASH_BITS 12
#define HASH_SIZE (1 << HASH_BITS)
#define NO_POS 0xffffu

template <int S>
__device__ __forceinline__ u32 chain_hash(const typename Symbol<S>::T* sym, int i) {
    u32 key;
    if (S == 1) {
        const u8* b = (const u8*)sym;
        key = b[i] | ((u32)b[i + 1] << 8) | ((u32)b[i + 2] << 16);
    } else if (S == 2) {
        key = (u32)sym[i] | ((u32)sym[i + 1] << 16);
    } else if (S == 4) {
        key = (u32)sym[i];
    } else {
        const u64 v = (u64)sym[i];
        key = (u32)v ^ (u32)(v >> 32) * 0x85ebca6bu;
    }
    return (key * 0x9e3779b1u) >> (32 - HASH_BITS);
}

// Segments of a chunk that link their chains in parallel, one warp each: long chunks
// only (m >= 4096 symbols), so that a segment (>= 2048 positions) is longer than any
// window and a segment's first occurrence of a hash needs only the previous segment's
// last one. The launcher sizes the head tables with the same rule (src/gpu/lzss.rs).
__device__ __forceinline__ int chain_segments(int m) {
    return m >= 4096 ? min(8, min((int)(blockDim.x >> 5), m / 2048)) : 1;
}

template <int S>
__device__ void link_chains(const typename Symbol<S>::T* sym, int m, u16* heads, u16* prev) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int segments = chain_segments(m);
    for (int h = threadIdx.x; h < segments * HASH_SIZE; h += blockDim.x) heads[h] = NO_POS;
    __syncthreads();
    const int keyed = m - lzss_min_match(S) + 1;  // positions with a whole key
    const int seg_len = ((keyed + segments - 1) / segments + 31) & ~31;
    if (warp < segments) {
        u16* head = heads + warp * HASH_SIZE;
        const u32 below = (1u << lane) - 1;
        const int seg_end = min(keyed, (warp + 1) * seg_len);
        for (int base = warp * seg_len; base < seg_end; base += 32) {
            const int i = base + lane;
            const bool valid = i < seg_end;
            const u32 h = valid ? chain_hash<S>(sym, i) : HASH_SIZE + lane;
            const u32 same = __match_any_sync(FULL_MASK, h);
            const u16 older = valid ? head[h] : (u16)NO_POS;
            __syncwarp();
            const u32 earlier = same & below;
            if (valid) {
                prev[i] = earlier ? (u16)(base + 31 - __clz(earlier)) : older;
                if ((same >> lane) == 1) head[h] = (u16)i;  // the group's last lane
            }
            __syncwarp();
        }
    }
    __syncthreads();
    if (segments > 1) {
        // A segment's first occurrence of a hash continues in the previous segment.
        for (int i = seg_len + threadIdx.x; i < keyed; i += blockDim.x) {
            if (prev[i] == NO_POS) prev[i] = heads[(i / seg_len - 1) * HASH_SIZE + chain_hash<S>(sym, i)];
        }
        __syncthreads();
    }
}

template <int S>
__device__ void find_matches_chained(const typename Symbol<S>::T* sym, int m, int window,
                                     const u16* prev, u16* matches) {
    const int min_len = lzss_min_match(S), max_len = 255 + lzss_min_match(S);
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
        const int cap = min(max_len, m - i);
        int best_len = min_len - 1, best_dist = 0;
        if (cap >= min_len) {
            u32 p = prev[i];
            while (p != NO_POS && i - (int)p <= window) {
                // A candidate can only win if it also matches the symbol at best_len.
                if (sym[p + best_len] == sym[i + best_len]) {
                    int len = 0;
                    while (len < cap && sym[p + len] == sym[i + len]) ++len;
                    if (len > best_len) {
                        best_len = len;
                        best_dist = i - (int)p;
                        if (len == cap) break;
                    }
                }
                p = prev[p];
            }
        }
        matches[i] = best_dist ? (u16)(((best_len - min_len) << 8) | best_dist) : (u16)0;
    }
}

template <int S, bool CHAINS>
__device__ void compress_chunk(const u8* in, const u64* chunk_in, const u16* chunk_lens,
                               u32 chunk_size, int window, u8* scratch, u16* sizes) {
    typedef typename Symbol<S>::T T;
    extern __shared__ u64 shared_words[];
    const u64 chunk = blockIdx.x;
    const u64 start = chunk_in[chunk];
    const int len = (int)min((u32)chunk_lens[chunk], chunk_size);
    const int m = len / S;
    const int tid = threadIdx.x, threads = blockDim.x;
    const int max_m = chunk_size / S;

    // Each region starts at a multiple of 8 bytes.
    u8* base = (u8*)shared_words;
    u8* sym_bytes = base;
    u8* out = sym_bytes + round8(chunk_size);
    u16* matches = (u16*)(out + round8(chunk_size));
    u16* jump_a = (u16*)((u8*)matches + round8(2 * max_m));
    u16* jump_b = (u16*)((u8*)jump_a + round8(2 * max_m));
    u8* reached = (u8*)jump_b + round8(2 * max_m);
    u32* flags = (u32*)(reached + round8(max_m));
    u32* sums = (u32*)((u8*)flags + round8(4 * (max_m / 32 + 1)));
    u16* head = (u16*)((u8*)sums + 128);  // hash chains only: HASH_SIZE entries per segment

    // Load: 8-byte words (the launcher places every chunk at a multiple of 8).
    const u64* src_words = (const u64*)(in + start);
    for (int w = tid; w < len / 8; w += threads) ((u64*)sym_bytes)[w] = src_words[w];
    for (int b = (len / 8) * 8 + tid; b < len; b += threads) sym_bytes[b] = in[start + b];
    for (int w = tid; w < max_m / 32 + 1; w += threads) flags[w] = 0;
    __syncthreads();

    const T* sym = (const T*)sym_bytes;
    if (CHAINS) {
        link_chains<S>(sym, m, head, jump_b);  // jump_b holds the links until the parse
        find_matches_chained<S>(sym, m, window, jump_b, matches);
    } else {
        find_matches<S>(sym, m, window, matches);
    }
    __syncthreads();

    // Parse: links, then pointer jumping. Round k marks next^(2^k)(p) for every marked p
    // and squares the links, so after ceil(log2 m) rounds every position reachable from
    // 0 is marked. The marks are bytes in two buffers, `reached` and `out` (unused until
    // the encode; C >= m bytes): a round reads `marks` and writes `next_marks`, which
    // swap at the round's barrier, so no byte is read and written by different threads in
    // one round (racecheck-clean without atomics). Every marked position lies on the
    // chain from 0, so the marks a round writes never meet: the carried ones (already
    // marked) are each written by their own thread, and the pushed ones (next^(2^k) of
    // distinct chain positions, none marked yet) are distinct. The buffer a round writes
    // holds an older subset of the marks, so it needs no clearing. A round that pushes
    // nothing ends the parse: after round k the marks are next^t(0) for t < 2^(k+1), and
    // next^(2^(k+1))(0), past them all, is new unless the chain has left the chunk.
    const int min_len = lzss_min_match(S);
    for (int i = tid; i < m; i += threads) {
        const u16 v = matches[i];
        jump_a[i] = (u16)(i + (v ? (v >> 8) + min_len : 1));
        reached[i] = i == 0;
        out[i] = i == 0;
    }
    __syncthreads();
    u16* links = jump_a;
    u16* next_links = jump_b;
    u8* marks = reached;
    u8* next_marks = out;
    for (int span = 1; span < m; span <<= 1) {
        int pushed = 0;
        for (int i = tid; i < m; i += threads) {
            const int j = links[i];
            const bool marked = marks[i] != 0;
            if (marked) next_marks[i] = 1;
            if (j < m) {
                if (marked && !marks[j]) {
                    next_marks[j] = 1;
                    pushed = 1;
                }
                next_links[i] = links[j];
            } else {
                next_links[i] = (u16)m;
            }
        }
        const int any_pushed = __syncthreads_or(pushed);
        u16* t = links;
        links = next_links;
        next_links = t;
        u8* r = marks;
        marks = next_marks;
        next_marks = r;
        if (!any_pushed) break;
    }
    if (marks != reached) {
        // The encode writes `out`: the marks move to `reached` first.
        for (int i = tid; i < m; i += threads) reached[i] = marks[i];
        __syncthreads();
    }

    // Token and match counts before each thread's run of positions.
    const int per = (m + threads - 1) / threads;
    const int first = min(tid * per, m), last = min(first + per, m);
    u32 local = 0;
    for (int i = first; i < last; ++i) {
        if (reached[i]) local += 0x10000u | (matches[i] != 0 ? 1u : 0u);
    }
    u32 total;
    u32 run = block_exclusive_sum(local, sums, &total);
    const int tokens = total >> 16, match_count = total & 0xffff;
    const int literal_count = tokens - match_count;
    const int flag_bytes = (tokens + 7) / 8;
    const int size = 2 + flag_bytes + literal_count * S + 2 * match_count;
    if (size >= len) {
        if (tid == 0) sizes[chunk] = (u16)len;  // stored: kernel III copies the input
        return;
    }
    const int literal_at = 2 + flag_bytes;
    const int length_at = literal_at + literal_count * S;
    const int dist_at = length_at + match_count;
    for (int i = first; i < last; ++i) {
        if (!reached[i]) continue;
        const int t = run >> 16, mi = run & 0xffff;
        const u16 v = matches[i];
        if (v) {
            atomicOr(&flags[t >> 5], 1u << (t & 31));
            out[length_at + mi] = (u8)(v >> 8);
            out[dist_at + mi] = (u8)v;
            run += 0x10001u;
        } else {
            const int li = t - mi;
#pragma unroll
            for (int b = 0; b < S; ++b) out[literal_at + li * S + b] = sym_bytes[i * S + b];
            run += 0x10000u;
        }
    }
    __syncthreads();
    if (tid == 0) {
        out[0] = (u8)tokens;
        out[1] = (u8)(tokens >> 8);
    }
    for (int b = tid; b < flag_bytes; b += threads) out[2 + b] = (u8)(flags[b >> 2] >> ((b & 3) * 8));
    __syncthreads();
    u8* dst = scratch + chunk * chunk_size;
    for (int w = tid; w < size / 8; w += threads) ((u64*)dst)[w] = ((const u64*)out)[w];
    for (int b = (size / 8) * 8 + tid; b < size; b += threads) dst[b] = out[b];
    if (tid == 0) sizes[chunk] = (u16)size;
}

#define CHUNKS_KERNEL(S)                                                                    \
    extern "C" __global__ void lzss_chunks_s##S(const u8* in, const u64* chunk_in,           \
                                                const u16* chunk_lens, u32 chunk_size,      \
                                                u32 window, u8* scratch, u16* sizes) {      \
        compress_chunk<S, false>(in, chunk_in, chunk_lens, chunk_size, (int)window, scratch,  \
                                 sizes);                                                    \
    }                                                                                       \
    extern "C" __global__ void lzss_chunks_chained_s##S(const u8* in, const u64* chunk_in,   \
                                                        const u16* chunk_lens,              \
                                                        u32 chunk_size, u32 window,          \
                                                        u8* scratch, u16* sizes) {          \
        compress_chunk<S, true>(in, chunk_in, chunk_lens, chunk_size, (int)window, scratch,   \
                                sizes);                                                     \
    }
CHUNKS_KERNEL(1)
CHUNKS_KERNEL(2)
CHUNKS_KERNEL(4)
CHUNKS_KERNEL(8)

// Kernel III: `out` receives the size table (u16 per chunk) then the payloads at
// their offsets; a stored chunk is copied from the input.
extern "C" __global__ void lzss_compact(const u8* in, const u64* chunk_in, const u16* chunk_lens,
                                        u32 chunk_size, const u8* scratch, const u16* sizes,
                                        const u64* offsets, u64 chunks, u8* out) {
    const int lane = threadIdx.x & 31;
    const u64 chunk = (u64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (chunk >= chunks) return;
    const u32 len = min((u32)chunk_lens[chunk], chunk_size);
    const u32 size = sizes[chunk];
    const u8* src = size == len ? in + chunk_in[chunk] : scratch + chunk * chunk_size;
    u8* dst = out + 2 * chunks + offsets[chunk];
    if (lane == 0) {
        out[2 * chunk] = (u8)size;
        out[2 * chunk + 1] = (u8)(size >> 8);
    }
    for (u32 b = lane; b < size; b += 32) dst[b] = src[b];
}
