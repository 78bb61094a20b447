// Masked CRC-32C of many byte ranges (the Snappy framing format's chunk checksums; the
// CPU reference is src/codec/gmatch/frame.rs, masked_crc32c). One block per range: each
// thread takes the CRC of its slice with a byte table, shifts it past the bytes that
// follow the slice (multiplication by x^(8·k) modulo the polynomial), and the block XORs
// the results: crc(A ++ B) = crc(A) · x^(8·|B|) ^ crc(B) for the standard CRC (initial
// value and final XOR all ones).

#define CRC_POLY 0x82F63B78u  // CRC-32C (Castagnoli), bit-reflected

// a · b modulo the polynomial, bit-reflected (bit 31 holds x^0).
__device__ u32 crc_multiply(u32 a, u32 b) {
    u32 product = 0;
    for (u32 m = 1u << 31; m; m >>= 1) {
        if (a & m) product ^= b;
        b = (b & 1) ? (b >> 1) ^ CRC_POLY : b >> 1;
    }
    return product;
}

// x^(8·bytes) modulo the polynomial, from powers[k] = x^(2^k).
__device__ u32 crc_shift_power(u64 bytes, const u32* powers) {
    u32 power = 1u << 31;  // x^0
    u32 k = 3;             // 8 = 2^3
    for (; bytes; bytes >>= 1, ++k) {
        if (bytes & 1) power = crc_multiply(powers[k & 31], power);
    }
    return power;
}

extern "C" __global__ void crc32c_masked(const u8* data, const u64* offsets, const u64* lens,
                                         u64 count, u32* crcs) {
    __shared__ u32 table[256];
    __shared__ u32 powers[32];
    __shared__ u32 partial[32];
    const u64 r = blockIdx.x;
    if (r >= count) return;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    for (int i = tid; i < 256; i += blockDim.x) {
        u32 c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ CRC_POLY : c >> 1;
        table[i] = c;
    }
    if (tid == 0) {
        powers[0] = 1u << 30;  // x^1
        for (int k = 1; k < 32; ++k) powers[k] = crc_multiply(powers[k - 1], powers[k - 1]);
    }
    __syncthreads();
    const u8* bytes = data + offsets[r];
    const u64 len = lens[r];
    const u64 slice = (len + blockDim.x - 1) / blockDim.x;
    const u64 from = min(len, (u64)tid * slice), to = min(len, from + slice);
    u32 c = 0xffffffffu;
    for (u64 i = from; i < to; ++i) c = table[(c ^ bytes[i]) & 0xff] ^ (c >> 8);
    c = ~c;
    u32 term = from < to ? crc_multiply(crc_shift_power(len - to, powers), c) : 0u;
#pragma unroll
    for (int k = 16; k > 0; k >>= 1) term ^= __shfl_xor_sync(FULL_MASK, term, k);
    if (lane == 0) partial[warp] = term;
    __syncthreads();
    if (tid == 0) {
        u32 crc = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) crc ^= partial[w];
        crcs[r] = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
    }
}
