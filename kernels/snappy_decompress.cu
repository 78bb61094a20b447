// Snappy raw decompression of a batch of buffers (any valid stream, not only
// G-match's; the CPU reference is src/codec/gmatch/decode.rs). One warp per buffer:
// every lane parses the same element (the loads are broadcasts, so there is no
// divergence and no shuffle), then the warp copies its bytes, 32 at a time; an
// overlapping copy reads the period before it (out[op - offset + k % offset]), so
// the lanes never read a byte written in the same step.
//
// The launcher parsed each stream's varint preamble: a buffer is given by its element
// bytes (in[in_offsets[b] .. + in_lens[b]]) and its claimed length (out_lens[b], at
// out[out_offsets[b]]). Every tag, length and offset is checked before it is used; a
// corrupt buffer sets status[b] to a reason code and stops, and no byte is read or
// written outside the buffer's own ranges.

// Reason codes, mapped to messages by the launcher (src/gpu/snappy.rs).
#define S_TRUNCATED_TAG 1      // a tag's extra bytes run past the input
#define S_LITERAL_INPUT 2      // a literal runs past the input
#define S_PAST_LENGTH 3        // a literal or copy runs past the claimed length
#define S_OFFSET 4             // a copy offset of 0 or before the output start
#define S_SHORT 5              // the elements end before the claimed length
// (One more is produced by the launcher: a claimed length over the limit.)

extern "C" __global__ void snappy_decode_raw(const u8* in, const u64* in_offsets,
                                             const u64* in_lens, u8* out,
                                             const u64* out_offsets, const u64* out_lens,
                                             u64 count, u32* status) {
    const int lane = threadIdx.x & 31;
    const u64 b = (u64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (b >= count) return;
    const u8* src = in + in_offsets[b];
    const u64 end = in_lens[b];
    u8* dst = out + out_offsets[b];
    const u64 len = out_lens[b];
    u64 ip = 0, op = 0;
    u32 code = 0;
    while (ip < end) {
        const u32 tag = src[ip];
        u64 n, offset = 0;
        bool literal = (tag & 3) == 0;
        if (literal) {
            n = (tag >> 2) + 1;
            ip += 1;
            if (n > 60) {
                const u32 extra = (u32)n - 60;  // 1..4 little-endian bytes hold n - 1
                if (ip + extra > end) { code = S_TRUNCATED_TAG; break; }
                u64 v = 0;
                for (u32 k = 0; k < extra; ++k) v |= (u64)src[ip + k] << (8 * k);
                n = v + 1;
                ip += extra;
            }
            if (n > end - ip) { code = S_LITERAL_INPUT; break; }
        } else {
            const u32 extra = (tag & 3) == 1 ? 1 : ((tag & 3) == 2 ? 2 : 4);
            if (ip + 1 + extra > end) { code = S_TRUNCATED_TAG; break; }
            if ((tag & 3) == 1) {
                n = 4 + ((tag >> 2) & 7);
                offset = ((u64)(tag >> 5) << 8) | src[ip + 1];
            } else {
                n = (tag >> 2) + 1;
                for (u32 k = 0; k < extra; ++k) offset |= (u64)src[ip + 1 + k] << (8 * k);
            }
            ip += 1 + extra;
            if (offset == 0 || offset > op) { code = S_OFFSET; break; }
        }
        if (n > len - op) { code = S_PAST_LENGTH; break; }
        if (literal) {
            for (u64 k = lane; k < n; k += 32) dst[op + k] = src[ip + k];
            ip += n;
        } else {
            const u64 from = op - offset;
            for (u64 k = lane; k < n; k += 32) dst[op + k] = dst[from + (k < offset ? k : k % offset)];
        }
        op += n;
        __syncwarp();
    }
    if (code == 0 && op != len) code = S_SHORT;
    if (lane == 0) status[b] = code;
}
