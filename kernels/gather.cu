// Copies many byte ranges device to device in one launch: piece p goes from address
// src[p] to address dst[p], len[p] bytes; one block per piece. Pieces whose addresses and
// length are multiples of 8 move in 8-byte words, the others byte by byte.

extern "C" __global__ void gather_pieces(const u64* src, const u64* dst, const u64* len) {
    const u32 p = blockIdx.x;
    const u64 from = src[p], to = dst[p], n = len[p];
    if (((from | to | n) & 7) == 0) {
        const u64* in = (const u64*)from;
        u64* out = (u64*)to;
        for (u64 i = threadIdx.x; i < n / 8; i += blockDim.x) out[i] = in[i];
    } else {
        const u8* in = (const u8*)from;
        u8* out = (u8*)to;
        for (u64 i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
    }
}
