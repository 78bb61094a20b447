// Snappy raw decompression of a batch of buffers (any valid stream, not only
// G-match's; the CPU reference is src/codec/gmatch/decode.rs). One warp per buffer,
// working in batches of up to 32 elements:
//  1. parse: lane j reads the element whose tag would be at input position ip + j;
//     the warp then follows the chain of tags from ip (one shuffle per element), so
//     the lanes holding the batch's elements are known, and a sum over them gives each
//     element's output position; then every element is checked, in order;
//  2. copy, in rounds: literals go at once; a copy goes in the first round where all
//     bytes it reads are written, that is when they lie before the first element still
//     pending (the first pending element itself always can). In a round, each lane
//     copies its own element if it is short (SD_LANE bytes or fewer), and the whole
//     warp copies the long ones, one after another.
// Two shared-memory windows per warp keep the element chain off global memory: the
// next SD_IN bytes of input (tags and literals are read from there) and the last
// SD_RING bytes of output (a copy reads its source there when no byte written in this
// batch can have replaced it). A batch holds the elements whose tags lie in 32 bytes
// of input, so its output spans at most 16 copies of 64 bytes and a literal; a literal
// longer than SD_SPAN bytes makes a batch of its own, so that a batch never writes two
// positions of the same ring slot out of order.
//
// The launcher parsed each stream's varint preamble: a buffer is given by its element
// bytes (in[in_offsets[b] .. + in_lens[b]]) and its claimed length (out_lens[b] < 2^32,
// at out[out_offsets[b]]). Every tag, length and offset is checked before it is used; a
// corrupt buffer sets status[b] to a reason code and stops, and no byte is read or
// written outside the buffer's own ranges.

#define SD_WARPS 8     // warps (buffers) per block; the launcher uses the same
#define SD_IN 512      // input window bytes per warp
#define SD_RING 4096   // output ring bytes per warp (a power of two)
#define SD_SPAN 2048   // a literal longer than this that is not a batch's first goes alone
#define SD_LANE 16     // longer elements are copied by the whole warp
#define SD_FULL 0xffffffffu

// Reason codes, mapped to messages by the launcher (src/gpu/snappy.rs).
#define S_TRUNCATED_TAG 1      // a tag's extra bytes run past the input
#define S_LITERAL_INPUT 2      // a literal runs past the input
#define S_PAST_LENGTH 3        // a literal or copy runs past the claimed length
#define S_OFFSET 4             // a copy offset of 0 or before the output start
#define S_SHORT 5              // the elements end before the claimed length
// (One more is produced by the launcher: a claimed length over the limit.)

// Where one warp's buffer and windows are.
struct Buffer {
    const u8* src;   // element bytes
    const u8* window;
    u32 wbase, wend; // window holds src[wbase .. wend)
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

// One lane copies a short literal.
__device__ __forceinline__ void lane_literal(const Buffer& b, bool near, u32 from, u32 at, u32 n) {
    for (u32 k = 0; k < n; ++k) put(b, at + k, input_byte(b, near, from + k));
}

// One lane copies a short copy, byte by byte (its own bytes when the offset is short).
__device__ __forceinline__ void lane_copy(const Buffer& b, bool near, u32 from, u32 at, u32 n) {
    for (u32 k = 0; k < n; ++k) put(b, at + k, output_byte(b, near, from + k));
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

extern "C" __global__ void __launch_bounds__(SD_WARPS * 32)
    snappy_decode_raw(const u8* in, const u64* in_offsets, const u64* in_lens, u8* out,
                      const u64* out_offsets, const u64* out_lens, u64 count, u32* status) {
    // Slack: the lanes read tags (and their 4 extra bytes) up to 35 bytes past the
    // batch start, which may lie past the window's end at the end of the input.
    __shared__ u8 windows[SD_WARPS][SD_IN + 40];
    __shared__ u8 rings[SD_WARPS][SD_RING];
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
        if (b.wend < end && (ip >= b.wend || b.wend - ip < 128)) {
            b.wbase = ip;
            b.wend = end - ip > SD_IN ? ip + SD_IN : end;
            for (u32 k = lane; k < SD_IN; k += 32) {
                if (k < b.wend - b.wbase) window[k] = b.src[b.wbase + k];
            }
            __syncwarp();
        }
        // 1. Lane j reads the element whose tag would be at ip + j.
        const u32 q = ip + lane;
        const u32 left = q < end ? end - q : 0;  // input bytes from that tag on
        const u8* w = window + (ip - b.wbase) + lane;
        const u32 tag = w[0], kind = tag & 3;
        u32 hdr, offset = 0, err = 0;
        u64 n;
        if (kind == 0) {
            n = (tag >> 2) + 1;
            hdr = 1;
            if (n > 60) {
                const u32 extra = (u32)n - 60;  // 1..4 little-endian bytes hold n - 1
                u32 v = 0;
                for (u32 k = 0; k < extra; ++k) v |= (u32)w[1 + k] << (8 * k);
                n = (u64)v + 1;
                hdr += extra;
            }
            if (hdr > left) err = S_TRUNCATED_TAG;
            else if (n > left - hdr) err = S_LITERAL_INPUT;
        } else {
            hdr = kind == 1 ? 2 : (kind == 2 ? 3 : 5);
            if (kind == 1) {
                n = 4 + ((tag >> 2) & 7);
                offset = ((tag >> 5) << 8) | w[1];
            } else {
                n = (tag >> 2) + 1;
                offset = (u32)w[1] | ((u32)w[2] << 8);
                if (kind == 3) offset |= ((u32)w[3] << 16) | ((u32)w[4] << 24);
            }
            if (hdr > left) err = S_TRUNCATED_TAG;
        }
        // Where the next tag is, relative to ip (an error ends the chain here).
        const u32 next = err ? 0xffffffffu : lane + hdr + (kind == 0 ? (u32)n : 0);
        // 2. Follow the chain of tags from ip: `starts` marks the lanes holding elements.
        u32 starts = 0, cur = 0;
        const u32 window_end = end - ip < 32 ? end - ip : 32;
        while (cur < window_end) {
            starts |= 1u << cur;
            cur = __shfl_sync(SD_FULL, next, cur);
        }
        const bool is_start = (starts >> lane) & 1;
        // 3. Output positions: an exclusive sum of the lengths over the elements.
        u64 sum = is_start ? n : 0;
        for (u32 d = 1; d < 32; d <<= 1) {
            const u64 v = __shfl_up_sync(SD_FULL, sum, d);
            if (lane >= d) sum += v;
        }
        const u64 at = op + sum - (is_start ? n : 0);
        if (is_start && err == 0) {
            if (n > len || at > len - n) err = S_PAST_LENGTH;
            else if (kind != 0 && (offset == 0 || offset > at)) err = S_OFFSET;
        }
        // 4. Keep the elements before the first error, and before a literal too long
        // to share the ring with the others (it starts the next batch, alone).
        const u32 bad = __ballot_sync(SD_FULL, is_start && err != 0);
        const u32 huge =
            __ballot_sync(SD_FULL, is_start && err == 0 && lane > 0 && kind == 0 && n > SD_SPAN);
        const u32 stop = min(bad ? __ffs(bad) - 1 : 32u, huge ? __ffs(huge) - 1 : 32u);
        const u32 keep = stop == 32 ? starts : starts & ((1u << stop) - 1);
        if (bad && stop == __ffs(bad) - 1) code = __shfl_sync(SD_FULL, err, stop);
        const bool mine = (keep >> lane) & 1;
        if (keep != 0) op += (u32)__shfl_sync(SD_FULL, sum, 31 - __clz(keep));
        ip += stop == 32 ? cur : stop;
        const u32 e_op = (u32)at, e_len = (u32)n;
        const bool e_lit = kind == 0;
        const u32 e_from = e_lit ? q + hdr : e_op - offset;
        // 5. Copy, in rounds.
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
            if (ready && short_el) lane_copy(b, near, e_from, e_op, e_len);
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
