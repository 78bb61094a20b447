// Snappy raw decompression of a batch of buffers (any valid stream, not only
// G-match's; the CPU reference is src/codec/gmatch/decode.rs). One warp per buffer:
// every lane parses the same element, then the warp copies its bytes, 32 at a time; an
// overlapping copy reads the period before it (out[op - offset + k % offset]), so the
// lanes never read a byte written in the same step. Two shared-memory windows per warp
// keep the element chain off global memory: the next SD_IN bytes of input (tags and
// short literals are read from there, refilled by one coalesced load) and the last SD_RING bytes of
// output (a copy whose offset is at most SD_RING - 64 reads its source there).
//
// The launcher parsed each stream's varint preamble: a buffer is given by its element
// bytes (in[in_offsets[b] .. + in_lens[b]]) and its claimed length (out_lens[b] < 2^32,
// at out[out_offsets[b]]). Every tag, length and offset is checked before it is used; a
// corrupt buffer sets status[b] to a reason code and stops, and no byte is read or
// written outside the buffer's own ranges.

#define SD_WARPS 8     // warps (buffers) per block; the launcher uses the same
#define SD_IN 512      // input window bytes per warp
#define SD_RING 2048   // output ring bytes per warp (a power of two)

// Reason codes, mapped to messages by the launcher (src/gpu/snappy.rs).
#define S_TRUNCATED_TAG 1      // a tag's extra bytes run past the input
#define S_LITERAL_INPUT 2      // a literal runs past the input
#define S_PAST_LENGTH 3        // a literal or copy runs past the claimed length
#define S_OFFSET 4             // a copy offset of 0 or before the output start
#define S_SHORT 5              // the elements end before the claimed length
// (One more is produced by the launcher: a claimed length over the limit.)

extern "C" __global__ void __launch_bounds__(SD_WARPS * 32)
    snappy_decode_raw(const u8* in, const u64* in_offsets, const u64* in_lens, u8* out,
                      const u64* out_offsets, const u64* out_lens, u64 count, u32* status) {
    __shared__ u8 windows[SD_WARPS][SD_IN];
    __shared__ u8 rings[SD_WARPS][SD_RING];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u64 b = (u64)blockIdx.x * SD_WARPS + warp;
    if (b >= count) return;
    u8* window = windows[warp];
    u8* ring = rings[warp];
    const u8* src = in + in_offsets[b];
    const u64 end = in_lens[b];
    u8* dst = out + out_offsets[b];
    const u32 len = (u32)out_lens[b];
    u64 ip = 0, wbase = 0, wend = 0;  // window holds src[wbase .. wend)
    u32 op = 0;
    u32 code = 0;
    while (ip < end) {
        // The tag, its up to 4 extra bytes and a short literal's bytes should be in
        // the window (a longer literal is read from global memory).
        if (ip + 5 + 64 > wend && wend < end) {
            wbase = ip;
            wend = min(end, wbase + SD_IN);
            for (u32 k = lane; k < SD_IN; k += 32) {
                if (wbase + k < wend) window[k] = src[wbase + k];
            }
            __syncwarp();
        }
        const u8* w = window + (ip - wbase);
        const u32 tag = w[0];
        u64 n64;
        u32 offset = 0;
        const bool literal = (tag & 3) == 0;
        if (literal) {
            n64 = (tag >> 2) + 1;
            if (n64 > 60) {
                const u32 extra = (u32)n64 - 60;  // 1..4 little-endian bytes hold n - 1
                if (ip + 1 + extra > end) { code = S_TRUNCATED_TAG; break; }
                u64 v = 0;
                for (u32 k = 0; k < extra; ++k) v |= (u64)w[1 + k] << (8 * k);
                n64 = v + 1;
                ip += extra;
            }
            ip += 1;
            if (n64 > end - ip) { code = S_LITERAL_INPUT; break; }
        } else {
            const u32 kind = tag & 3;
            const u32 extra = kind == 1 ? 1 : (kind == 2 ? 2 : 4);
            if (ip + 1 + extra > end) { code = S_TRUNCATED_TAG; break; }
            if (kind == 1) {
                n64 = 4 + ((tag >> 2) & 7);
                offset = ((tag >> 5) << 8) | w[1];
            } else {
                n64 = (tag >> 2) + 1;
                for (u32 k = 0; k < extra; ++k) offset |= (u32)w[1 + k] << (8 * k);
            }
            ip += 1 + extra;
            if (offset == 0 || offset > op) { code = S_OFFSET; break; }
        }
        if (n64 > len - op) { code = S_PAST_LENGTH; break; }
        const u32 n = (u32)n64;
        if (literal) {
            const bool windowed = ip + n <= wend;
            for (u32 k = lane; k < n; k += 32) {
                const u8 v = windowed ? window[ip - wbase + k] : src[ip + k];
                dst[op + k] = v;
                ring[(op + k) & (SD_RING - 1)] = v;
            }
            ip += n;
        } else if (offset <= SD_RING - 64) {
            // n <= 64: the source period and the bytes written do not meet in the ring.
            for (u32 k = lane; k < n; k += 32) {
                const u32 from = op - offset + (k < offset ? k : k % offset);
                const u8 v = ring[from & (SD_RING - 1)];
                dst[op + k] = v;
                ring[(op + k) & (SD_RING - 1)] = v;
            }
        } else {
            for (u32 k = lane; k < n; k += 32) {
                const u8 v = dst[op - offset + k];  // offset > n: no overlap
                dst[op + k] = v;
                ring[(op + k) & (SD_RING - 1)] = v;
            }
        }
        op += n;
        __syncwarp();
    }
    if (code == 0 && op != len) code = S_SHORT;
    if (lane == 0) status[b] = code;
}
