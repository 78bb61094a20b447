// Snappy raw decompression of a batch of buffers (any valid stream, not only
// G-match's; the CPU reference is src/codec/gmatch/decode.rs). One warp per buffer,
// working in batches of up to 32 elements whose tags lie in SD_SPAN_IN input bytes:
//  1. parse: lane j decodes, without branches, the elements whose tags would be at
//     input positions ip + j and ip + 32 + j;
//  2. chain: the real tags are those reached from ip. Doubling a successor table five
//     times (pointer jumping) brings element i of the chain to lane i; a sum over the
//     lanes gives each element's output position; then every element is checked, in
//     order;
//  3. copy, in rounds: literals go at once; a copy goes in the first round where all
//     bytes it reads are written, that is when they lie before the first element still
//     pending (the first pending element itself always can). In a round, each lane
//     copies its own element if it is short (SD_LANE bytes or fewer; its source read as
//     whole aligned words unless it overlaps the copy or wraps around the ring), and
//     the whole warp copies the long ones, one after another.
// Two shared-memory windows per warp keep the element chain off global memory: the
// next SD_IN bytes of input (tags and literals are read from there) and the last
// SD_RING bytes of output (a copy reads its source there when no byte written in this
// batch can have replaced it). A batch holds the elements whose tags lie in 64 bytes
// of input, so its output spans at most 21 copies of 64 bytes, 64 bytes of literals
// and one last literal; a literal longer than SD_SPAN bytes makes a batch of its own,
// so that a batch never writes two positions of the same ring slot out of order.
// Blocks are small (SD_WARPS) so that a batch of buffers that fits the GPU at once
// spreads evenly over the SMs.
//
// The launcher parsed each stream's varint preamble: a buffer is given by its element
// bytes (in[in_offsets[b] .. + in_lens[b]]) and its claimed length (out_lens[b] < 2^32,
// at out[out_offsets[b]]); `in` and `out` extend 4 bytes past the last buffer, as the
// aligned words around a buffer's bytes are read whole. Every tag, length and offset is
// checked before it is used; a corrupt buffer sets status[b] to a reason code and
// stops, and no byte is written outside the buffer's own range.

// From the launcher (src/codec/gmatch/gpu/launch.rs): SD_WARPS, warps (buffers) per
// block, and the reason codes S_* (the Rust enum SnappyDecodeError).
#if !defined(SD_WARPS) || !defined(S_TRUNCATED_TAG) || !defined(S_LITERAL_INPUT) ||       \
    !defined(S_PAST_LENGTH) || !defined(S_OFFSET) || !defined(S_SHORT)
#error "snappy_decompress.cu needs its constants from the launcher"
#endif
#define SD_IN 512      // input window bytes per warp
#define SD_SPAN_IN 64u // input bytes whose tags one batch parses (two per lane)
#define SD_SLACK 80    // window bytes past SD_IN that a batch's tag reads may touch
#define SD_RING 4096   // output ring bytes per warp (a power of two)
#define SD_SPAN 2048   // a literal longer than this makes a batch of its own
#define SD_LANE 16     // longer elements are copied by the whole warp
#define SD_FULL 0xffffffffu

// Where one warp's buffer and windows are.
struct Buffer {
    const u8* src;   // element bytes
    const u8* window;
    u32 wbase, wend; // window[k] is src[wbase + k] for wbase + k in [.., wend); wbase
                     // may lie before the buffer (it wraps), only differences are used
    u8* dst;         // output
    u8* ring;        // output position p lives at ring[p % SD_RING]
};

// Byte `at` of the input; `windowed` says the element's bytes are all in the window.
__device__ __forceinline__ u8 input_byte(const Buffer& b, bool windowed, u32 at) {
    return windowed ? b.window[at - b.wbase] : b.src[at];
}

// Byte `at` of the output, written before; `in_ring` says the ring still holds it.
__device__ __forceinline__ u8 output_byte(const Buffer& b, bool in_ring, u32 at) {
    return in_ring ? b.ring[at & (SD_RING - 1)] : b.dst[at];
}

__device__ __forceinline__ void put(const Buffer& b, u32 at, u8 v) {
    b.dst[at] = v;
    b.ring[at & (SD_RING - 1)] = v;
}

// Up to 16 bytes from `p` (any alignment) as four little-endian words, read as the
// aligned words that hold p[0 .. n): one load each, all in flight together, where a
// byte at a time would wait for each load in turn.
__device__ __forceinline__ void load_words(const u8* p, u32 n, u32 x[4]) {
    const u32 misalign = (u32)((u64)p & 3);
    const u32* w = (const u32*)(p - misalign);
    const u32 words = (misalign + n + 3) / 4;  // 1..5
    u32 a[5];
#pragma unroll
    for (u32 i = 0; i < 5; ++i) a[i] = i < words ? w[i] : 0;
#pragma unroll
    for (u32 i = 0; i < 4; ++i) x[i] = __funnelshift_r(a[i], a[i + 1], 8 * misalign);
}

// Writes bytes 0 .. n of the words `x` (n <= 16) at output position `at`.
__device__ __forceinline__ void put_words(const Buffer& b, u32 at, u32 n, const u32 x[4]) {
    for (u32 k = 0; k < n; ++k) {
        const u32 word = k < 4 ? x[0] : (k < 8 ? x[1] : (k < 12 ? x[2] : x[3]));
        put(b, at + k, (u8)(word >> (8 * (k & 3))));
    }
}

// One lane copies a short literal: from the window by words, else byte by byte.
__device__ __forceinline__ void lane_literal(const Buffer& b, bool near, u32 from, u32 at, u32 n) {
    if (near) {
        u32 x[4];
        load_words(b.window + (from - b.wbase), n, x);
        put_words(b, at, n, x);
    } else {
        for (u32 k = 0; k < n; ++k) put(b, at + k, b.src[from + k]);
    }
}

// One lane copies a short copy. A source far back in global memory (never overlapping
// the copy, being over SD_RING bytes back) is read by words. So is a ring range that the
// copy does not overlap and that does not wrap, when the whole aligned words around it
// hold no byte that a lane may write in this round: none at or past `mark` (the first
// pending element) and none whose ring slot this batch (ending at `batch_end`) reuses.
// Else byte by byte, in order (a short offset repeats bytes the copy itself writes).
__device__ __forceinline__ void lane_copy(const Buffer& b, bool near, u32 from, u32 at, u32 n,
                                          u32 mark, u32 batch_end) {
    const u32 slot = from & (SD_RING - 1);
    const bool whole_words = at - from >= n && slot + n <= SD_RING &&
                             (((u64)from + n + 3) & ~3ull) <= mark &&
                             batch_end - (from & ~3u) <= SD_RING;
    if (!near || whole_words) {
        u32 x[4];
        load_words(near ? b.ring + slot : b.dst + from, n, x);
        put_words(b, at, n, x);
    } else {
        for (u32 k = 0; k < n; ++k) put(b, at + k, output_byte(b, true, from + k));
    }
}

// The whole warp copies one element; a copy whose offset is shorter than its length
// repeats its source period (out[at + k] = out[from + k % offset]).
__device__ __forceinline__ void warp_copy(const Buffer& b, u32 lane, bool literal, bool near,
                                          u32 from, u32 at, u32 n) {
    const u32 offset = at - from;
    for (u32 k = lane; k < n; k += 32) {
        const u8 v = literal ? input_byte(b, near, from + k)
                             : output_byte(b, near, from + (k < offset ? k : k % offset));
        put(b, at + k, v);
    }
}

// Loads the window from input position ip on: whole aligned words where they lie in
// [ip, end), single bytes at the edges, so nothing outside the buffer is read.
__device__ __forceinline__ void refill(Buffer& b, u8* window, u32 lane, u32 ip, u32 end) {
    __syncwarp();  // every lane is done reading the window before it is overwritten
    const u32 shift = (u32)((u64)(b.src + ip) & 3);  // window[0] is 4-byte aligned
    b.wbase = ip - shift;
    b.wend = end - ip > SD_IN - shift ? ip + SD_IN - shift : end;
    const u32 valid_end = b.wend - b.wbase;  // window[shift .. valid_end) is needed
    const u8* from = b.src + ip - shift;
    // All loads first, so they are in flight together.
    u32 words[SD_IN / 128];
    bool whole[SD_IN / 128];
#pragma unroll
    for (u32 r = 0; r < SD_IN / 128; ++r) {
        const u32 k = 4 * lane + 128 * r;
        whole[r] = k >= shift && k + 4 <= valid_end;
        if (whole[r]) words[r] = *(const u32*)(from + k);
    }
#pragma unroll
    for (u32 r = 0; r < SD_IN / 128; ++r) {
        const u32 k = 4 * lane + 128 * r;
        if (whole[r]) {
            *(u32*)(window + k) = words[r];
        } else {
#pragma unroll
            for (u32 t = k; t < k + 4; ++t) {
                if (t >= shift && t < valid_end) window[t] = from[t];
            }
        }
    }
    __syncwarp();
}

// One element as its tag says: kind (0 literal, 1..3 copy), tag bytes, length, offset,
// and a reason code when the tag or the literal's bytes run past the input.
struct Element {
    u32 kind, hdr, n, offset, err;
};

// Parses the element whose tag is window[p]; `left` input bytes start there. The tag
// and the 4 bytes after it come from three aligned words, and every kind is decoded
// without branches, so the lanes of a warp never split on the kinds they read.
__device__ __forceinline__ Element parse_element(const u8* window, u32 p, u32 left) {
    const u32* words = (const u32*)window;
    const u32 w0 = words[p >> 2], w1 = words[(p >> 2) + 1], w2 = words[(p >> 2) + 2];
    const u32 lo = __funnelshift_r(w0, w1, 8 * (p & 3));  // bytes p .. p + 3
    const u32 hi = __funnelshift_r(w1, w2, 8 * (p & 3));  // bytes p + 4 .. p + 7
    const u32 tag = lo & 0xff, code = tag >> 2;
    const u32 v = __funnelshift_r(lo, hi, 8);  // the 4 bytes after the tag
    Element e;
    e.kind = tag & 3;
    const bool literal = e.kind == 0;
    // A literal of over 60 bytes keeps its length - 1 in the next 1..4 bytes.
    const u32 extra = literal && code >= 60 ? code - 59 : 0;
    const u32 mask = extra >= 4 ? 0xffffffffu : (1u << (8 * extra)) - 1;
    e.hdr = literal ? 1 + extra : (e.kind == 1 ? 2 : (e.kind == 2 ? 3 : 5));
    const u64 n = literal ? (extra ? (u64)(v & mask) + 1 : code + 1)
                          : (e.kind == 1 ? 4 + (code & 7) : code + 1);
    e.offset = e.kind == 1 ? ((tag >> 5) << 8) | (v & 0xff) : (e.kind == 2 ? v & 0xffff : v);
    e.err = e.hdr > left ? S_TRUNCATED_TAG : (literal && n > left - e.hdr ? S_LITERAL_INPUT : 0);
    e.n = (u32)n;  // (exact when err is 0: n <= left < 2^32)
    return e;
}

// Where the tag after `e` (whose tag is `rel` bytes past the batch start) would be,
// relative to the batch start; past every batch when `e` is corrupt, so the chain ends.
__device__ __forceinline__ u32 next_tag(const Element& e, u32 rel) {
    return e.err ? 0xffffffffu : rel + e.hdr + (e.kind == 0 ? e.n : 0);
}

// The tag after position p (relative to the batch start, at most SD_SPAN_IN) by the
// successor table `jumps` (lane j: position j in the low half, 32 + j in the high
// half); positions past the span are their own successors. Every lane takes part.
__device__ __forceinline__ u32 follow(u32 p, u32 jumps, u32 span) {
    const u32 t = __shfl_sync(SD_FULL, jumps, p & 31);
    return p >= span ? p : (p < 32 ? t & 0xffff : t >> 16);
}

// The value of lane `src` for its lower (`lo`) or upper (`hi`) position; every lane
// takes part.
__device__ __forceinline__ u32 gather(u32 lo, u32 hi, u32 src, bool upper) {
    const u32 a = __shfl_sync(SD_FULL, lo, src), b = __shfl_sync(SD_FULL, hi, src);
    return upper ? b : a;
}

extern "C" __global__ void __launch_bounds__(SD_WARPS * 32)
    snappy_decode_raw(const u8* in, const u64* in_offsets, const u64* in_lens, u8* out,
                      const u64* out_offsets, const u64* out_lens, u64 count, u32* status) {
    // Slack: the lanes read tags (and their 4 extra bytes, as aligned words) up to
    // SD_SPAN_IN + 11 bytes past the batch start, which may lie past the window's end at
    // the end of the input.
    __shared__ __align__(4) u8 windows[SD_WARPS][SD_IN + SD_SLACK];
    __shared__ __align__(4) u8 rings[SD_WARPS][SD_RING];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u64 id = (u64)blockIdx.x * SD_WARPS + warp;
    if (id >= count) return;
    u8* window = windows[warp];
    Buffer b{in + in_offsets[id], window, 0, 0, out + out_offsets[id], rings[warp]};
    // A valid stream of under 2^32 output bytes is shorter than 2^32 bytes unless the
    // output is within 2% of 2^32; a longer one stops at 2^32 - 1 as too short.
    const u32 end = in_lens[id] > 0xffffffffull ? 0xffffffffu : (u32)in_lens[id];
    const u32 len = (u32)out_lens[id];
    u32 ip = 0, op = 0, code = 0;
    while (ip < end && code == 0) {
        // Refill the window when the batch's tags and short literals might leave it.
        if (b.wend < end && (ip >= b.wend || b.wend - ip < 128)) refill(b, window, lane, ip, end);
        // 1. Lane j parses the elements whose tags would be at ip + j and ip + 32 + j.
        const u32 at_window = ip - b.wbase;
        const u32 lo_left = ip + lane < end ? end - (ip + lane) : 0;
        const u32 hi_left = ip + 32 + lane < end ? end - (ip + 32 + lane) : 0;
        const Element lo = parse_element(window, at_window + lane, lo_left);
        const Element hi = parse_element(window, at_window + 32 + lane, hi_left);
        const u32 lo_next = next_tag(lo, lane), hi_next = next_tag(hi, 32 + lane);
        // 2. Find the chain of tags from ip by doubling: J_k(p), the tag 2^k elements after
        // position p, for both positions of every lane; lane i composes the J_k of the
        // bits of i, so it reaches element i's tag (`rel`) in five steps. Positions past
        // the span (and a corrupt element's "next") are their own successors.
        const u32 span = end - ip < SD_SPAN_IN ? end - ip : SD_SPAN_IN;
        // The successor table packs both positions of a lane (u16 each, clamped to 64).
        u32 jumps = min(lo_next, SD_SPAN_IN) | (min(hi_next, SD_SPAN_IN) << 16), rel = 0;
        for (u32 k = 0; k < 5; ++k) {
            const u32 step = follow(rel, jumps, span);
            if ((lane >> k) & 1) rel = step;
            if (k < 4) {
                const u32 lo2 = follow(jumps & 0xffff, jumps, span);
                const u32 hi2 = follow(jumps >> 16, jumps, span);
                jumps = lo2 | (hi2 << 16);
            }
        }
        // Positions rise along the chain, so the lanes still inside the span are a prefix.
        const u32 elements = __popc(__ballot_sync(SD_FULL, rel < span));
        const u32 src = rel & 31;
        const bool upper = rel >= 32;
        const u32 meta = gather(lo.kind | (lo.hdr << 2) | (lo.err << 5),
                                hi.kind | (hi.hdr << 2) | (hi.err << 5), src, upper);
        const u32 e_len = gather(lo.n, hi.n, src, upper);
        const u32 e_offset = gather(lo.offset, hi.offset, src, upper);
        // Where the batch's last element ends (the next batch's start, relative to ip),
        // unclamped: a literal may run far past the span.
        const u32 last = __shfl_sync(SD_FULL, rel, elements - 1);
        const u32 cur = gather(lo_next, hi_next, last & 31, last >= 32);
        const bool e_lit = (meta & 3) == 0;
        const u32 e_hdr = (meta >> 2) & 7, e_err = meta >> 5;
        // A literal too long to share the ring with the others goes alone: it ends the
        // batch when first, else starts the next one. Then the output positions: a sum
        // of the lengths (a lone literal's is under 2^32, the others' sum under 2^17).
        const u32 huge =
            __ballot_sync(SD_FULL, lane < elements && e_err == 0 && e_lit && e_len > SD_SPAN);
        const u32 cut = (huge & 1) ? 1 : (huge ? __ffs(huge) - 1 : elements);
        const bool in_cut = lane < cut;
        u32 sum = in_cut ? e_len : 0;
        for (u32 d = 1; d < 32; d <<= 1) {
            const u32 v = __shfl_up_sync(SD_FULL, sum, d);
            if (lane >= d) sum += v;
        }
        const u64 at = (u64)op + sum - (in_cut ? e_len : 0);
        u32 err = in_cut ? e_err : 0;
        if (in_cut && err == 0) {
            if (e_len > len || at > len - e_len) err = S_PAST_LENGTH;
            else if (!e_lit && (e_offset == 0 || e_offset > at)) err = S_OFFSET;
        }
        // Keep the elements before the first error.
        const u32 bad = __ballot_sync(SD_FULL, err != 0);
        const u32 keep = bad ? __ffs(bad) - 1 : cut;
        if (bad) code = __shfl_sync(SD_FULL, err, keep);
        const bool mine = lane < keep;
        if (keep != 0) op += __shfl_sync(SD_FULL, sum, keep - 1);
        const u32 batch_ip = ip;
        ip += keep == elements ? cur : __shfl_sync(SD_FULL, rel, keep & 31);
        const u32 e_op = (u32)at;
        const u32 e_from = e_lit ? batch_ip + rel + e_hdr : e_op - e_offset;
        // 3. Copy, in rounds.
        const bool near = e_lit ? e_from + e_len <= b.wend : op - e_from <= SD_RING;
        const bool short_el = e_len <= SD_LANE;
        if (mine && e_lit && short_el) lane_literal(b, near, e_from, e_op, e_len);
        bool done = !mine || (e_lit && short_el);
        for (;;) {
            __syncwarp();
            const u32 pending = __ballot_sync(SD_FULL, !done);
            if (pending == 0) break;
            const u32 mark = __shfl_sync(SD_FULL, e_op, __ffs(pending) - 1);
            // A copy reads [e_from, min(e_from + e_len, e_op)) of earlier output (then
            // its own bytes, in order, when the offset is shorter than the length).
            const bool ready = !done && (e_lit || min(e_from + e_len, e_op) <= mark);
            if (ready && short_el) lane_copy(b, near, e_from, e_op, e_len, mark, op);
            for (u32 longs = __ballot_sync(SD_FULL, ready && !short_el); longs != 0;
                 longs &= longs - 1) {
                const u32 j = __ffs(longs) - 1;
                warp_copy(b, lane, __shfl_sync(SD_FULL, e_lit, j), __shfl_sync(SD_FULL, near, j),
                          __shfl_sync(SD_FULL, e_from, j), __shfl_sync(SD_FULL, e_op, j),
                          __shfl_sync(SD_FULL, e_len, j));
            }
            done = done || ready;
        }
    }
    if (code == 0 && op != len) code = S_SHORT;
    if (lane == 0) status[id] = code;
}
