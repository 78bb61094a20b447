// Decoding of `bwt` blocks on the GPU (the CPU reference is src/codec/bwt/: huffman.rs,
// zrle.rs, mtf.rs, transform.rs), many blocks of a batch at once, in the stages of the
// format's parallel decoder:
//  1. bwt_huffman (twice): one thread per gap-array subsequence decodes its codewords,
//     first to count them, then (after bwt_symbol_offsets made the counts offsets) to
//     write them;
//  2. bwt_mtf_chunks (twice) and bwt_mtf_compose: zero runs and move-to-front over
//     chunks of MTF_CHUNK symbols. A chunk first decodes with a symbolic list (the list
//     positions it started from), which gives its value count and its final list as a
//     permutation of its first; composing those per block gives every chunk's real first
//     list, and the second pass writes the bytes (the BWT's last column without '$');
//  3. bwt_histogram, bwt_rank_bases and bwt_lf: the LF mapping by a stable counting sort
//     of the last column in pieces of PIECE bytes (one warp each), packed with the byte
//     of each row into one word: entry[row] = LF(row) << 8 | L[row];
//  4. bwt_walk: one thread per auxiliary index rebuilds its stretch of the block,
//     backwards from the row of the suffix that follows it.
// Every field was checked by the host (src/codec/bwt/gpu/decompress.rs) as the CPU
// decoder checks it: geometry, tables (complete codes), selectors, auxiliary indices.
// What the bits decode to is checked here: a block that fails sets its status to a
// reason code (the Rust enum BwtDecodeError) and the later stages skip it; nothing is
// read or written outside the block's own ranges.

#if !defined(B_GAP) || !defined(B_CODEWORDS) || !defined(B_SYMBOLS) || !defined(B_RUN) ||       \
    !defined(B_LENGTH) || !defined(B_INDICES)
#error "bwt_decompress.cu needs its constants from the launcher"
#endif

#define MAX_CODE_LEN 16
#define LUT_BITS 10
#define MTF_CHUNK 2048  // symbols per move-to-front chunk
#define MTF_THREADS 64  // threads per block of bwt_mtf_chunks (a 256-byte list each)
#define PIECE 4096      // bytes of the last column per warp in the LF mapping
#define LF_WARPS 4      // warps per block of bwt_histogram and bwt_lf

// One block's place in the step's buffers and its geometry (the Rust BlockInfo).
struct BlockInfo {
    u64 bits_at;      // its Huffman bitstream in `bits`
    u64 out_at;       // its bytes in `out`, its symbols in `symbols` (room for n) and,
                      // its block index b added, its n + 1 LF entries in `entries`
    u32 n;            // bytes
    u32 total_bits;   // bitstream length
    u32 sub_first;    // its first gap-array subsequence (global)
    u32 nsub;
    u32 sel_at;       // its first selector
    u32 table_first;  // its first decoding table
    u32 chunk_first;  // its first MTF chunk (n / MTF_CHUNK rounded up)
    u32 piece_first;  // its first LF piece (n / PIECE rounded up)
    u32 aux_at;       // its first auxiliary index
    u32 naux;
    u32 used;         // distinct bytes (the MTF alphabet)
    u8 seg_log2, sub_log2, aux_log2, pad;
};

// One canonical Huffman table (the Rust DecodeTable's device image).
struct Table {
    u16 lut[1 << LUT_BITS];  // symbol << 5 | length for codes of at most LUT_BITS bits
    u16 sorted[260];         // symbols by (length, symbol)
    u32 first[MAX_CODE_LEN + 1], count[MAX_CODE_LEN + 1], offset[MAX_CODE_LEN + 1];
    u32 pad[3];
};

__device__ __forceinline__ void fail(u32* status, u32 block, u32 code) {
    atomicCAS(status + block, 0u, code);
}

// The 16 bits of the bitstream from bit `pos` (most significant first); bytes past the
// stream's `len` read as zeros, as on the CPU.
__device__ __forceinline__ u32 peek16(const u8* bits, u64 len, u64 pos) {
    const u64 byte = pos >> 3;
    u32 word = 0;
#pragma unroll
    for (u32 k = 0; k < 3; ++k) word = word << 8 | (byte + k < len ? bits[byte + k] : 0u);
    return (word >> (8 - (pos & 7))) & 0xffff;
}

// The symbol whose codeword starts the 16 bits `v`, and its length.
__device__ __forceinline__ u32 decode_symbol(const Table* t, u32 v, u32* len) {
    const u32 e = t->lut[v >> (MAX_CODE_LEN - LUT_BITS)];
    if (e != 0) {
        *len = e & 31;
        return e >> 5;
    }
    for (u32 l = LUT_BITS + 1; l <= MAX_CODE_LEN; ++l) {
        const u32 d = (v >> (MAX_CODE_LEN - l)) - t->first[l];
        if (d < t->count[l]) {
            *len = l;
            return t->sorted[t->offset[l] + d];
        }
    }
    *len = MAX_CODE_LEN;  // unreachable for a complete code (checked on the host)
    return 0;
}

// Stage 1. `write` = 0: counts[s] = the symbols of subsequence s; 1: writes them at
// symbols[out_at + counts[s]] (counts made offsets by bwt_symbol_offsets).
extern "C" __global__ void bwt_huffman(const BlockInfo* blocks, const u32* sub_block, u64 nsubs,
                                       const u8* gaps, const u8* selectors, const Table* tables,
                                       const u8* bits, u32* counts, u16* symbols, u32* status,
                                       u32 write) {
    const u64 s = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= nsubs) return;
    const u32 b = sub_block[s];
    if (status[b] != 0) return;
    const BlockInfo& k = blocks[b];
    const u32 local = (u32)(s - k.sub_first);
    const u64 size = 1ull << k.sub_log2;
    const u64 base = (u64)local << k.sub_log2;
    const u64 start = base + gaps[s];
    const u64 end = min(base + size, (u64)k.total_bits);
    const u64 next = local + 1 < k.nsub ? base + size + gaps[s + 1] : (u64)k.total_bits;
    if ((local == 0 && start != 0) || start > k.total_bits) {
        fail(status, b, B_GAP);
        return;
    }
    const u8* stream = bits + k.bits_at;
    const u64 len = ((u64)k.total_bits + 7) >> 3;
    u16* out = symbols + k.out_at;
    const u32 at = write ? counts[s] : 0;
    u32 count = 0;
    u64 pos = start;
    while (pos < end) {
        const Table* t = tables + k.table_first + selectors[k.sel_at + (pos >> k.seg_log2)];
        u32 l;
        const u32 sym = decode_symbol(t, peek16(stream, len, pos), &l);
        pos += l;
        if (write) {
            if ((u64)at + count >= k.n) return;  // bwt_symbol_offsets checked the total
            out[at + count] = (u16)sym;
        }
        ++count;
    }
    // The codewords must end where the next subsequence's first one starts.
    if (pos != next) {
        fail(status, b, B_CODEWORDS);
        return;
    }
    if (!write) counts[s] = count;
}

// Stage 1, between the passes: per block, the exclusive prefix sums of its subsequences'
// counts (in place), and the total into sym_counts[b]; more symbols than bytes is an
// error. One block of 256 threads per data block.
extern "C" __global__ void bwt_symbol_offsets(const BlockInfo* blocks, u32 nblocks, u32* counts,
                                              u32* sym_counts, u32* status) {
    __shared__ u64 warp_sums[32];
    __shared__ u64 carry;
    const u32 b = blockIdx.x;
    if (b >= nblocks || status[b] != 0) return;
    const BlockInfo& k = blocks[b];
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (u32 from = 0; from < k.nsub; from += blockDim.x) {
        const u32 i = from + threadIdx.x;
        const u64 v = i < k.nsub ? counts[k.sub_first + i] : 0;
        u64 tile;
        const u64 before = block_exclusive_sum64(v, warp_sums, &tile);
        if (i < k.nsub) counts[k.sub_first + i] = (u32)min(carry + before, (u64)0xffffffffu);
        __syncthreads();
        if (threadIdx.x == 0) carry += tile;
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        if (carry > k.n) fail(status, b, B_SYMBOLS);
        sym_counts[b] = (u32)min(carry, (u64)k.n);
    }
}

// Stage 2. `write` = 0: chunk c decodes its symbols with the list of positions 0..used
// (values[c] = its value count, lists[c] = its final list as those positions); 1: with
// lists[c] = its real first list (bwt_mtf_compose) it writes its bytes at
// out[out_at + values[c]] (values made offsets).
extern "C" __global__ void __launch_bounds__(MTF_THREADS)
    bwt_mtf_chunks(const BlockInfo* blocks, const u32* chunk_block, u64 nchunks,
                   const u16* symbols, const u32* sym_counts, u64* values, u8* lists, u8* out,
                   u32* status, u32 write) {
    // list[i * MTF_THREADS + thread]: a thread's list is spread over the banks.
    __shared__ u8 shared_lists[256 * MTF_THREADS];
    const u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nchunks) return;
    const u32 b = chunk_block[c];
    if (status[b] != 0) return;
    const BlockInfo& k = blocks[b];
    const u32 count = sym_counts[b];
    const u32 from = (u32)(c - k.chunk_first) * MTF_CHUNK;
    if (from >= count) {  // past the block's symbols: bwt_mtf_compose ignores it
        if (!write) values[c] = 0;
        return;
    }
    const u32 to = min(from + MTF_CHUNK, count);
    u8* list = shared_lists + threadIdx.x;
    u8* chunk_list = lists + c * 256;
    for (u32 i = 0; i < k.used; ++i) list[i * MTF_THREADS] = write ? chunk_list[i] : (u8)i;
    const u16* sym = symbols + k.out_at;
    // The digits of a zero run that started before the chunk (a run has at most 33).
    u32 shift = 0;
    for (u32 i = from; i > 0 && sym[i - 1] <= 1 && shift <= 33; --i) ++shift;
    u64 total = 0;
    u8* dst = out + k.out_at + (write ? values[c] : 0);
    for (u32 i = from; i < to; ++i) {
        const u32 s = sym[i];
        if (s <= 1) {
            if (shift > 32) {
                fail(status, b, B_RUN);
                return;
            }
            const u64 run = (u64)(s + 1) << shift;
            if (write) {
                if (values[c] + total + run > k.n) return;  // checked by bwt_mtf_compose
                const u8 front = list[0];
                for (u64 r = 0; r < run; ++r) dst[total + r] = front;
            }
            total += run;
            ++shift;
            continue;
        }
        shift = 0;
        const u32 at = s - 1;  // < used: the tables code no larger symbol
        const u8 v = list[at * MTF_THREADS];
        for (u32 j = at; j > 0; --j) list[j * MTF_THREADS] = list[(j - 1) * MTF_THREADS];
        list[0] = v;
        if (write) {
            if (values[c] + total >= k.n) return;
            dst[total] = v;
        }
        ++total;
    }
    if (!write) {
        values[c] = total;
        for (u32 i = 0; i < k.used; ++i) chunk_list[i] = list[i * MTF_THREADS];
    }
}

// Stage 2, between the passes: per block (256 threads, one per list position), every
// chunk's real first list from the block's alphabet and the chunks' permutations, and
// the chunks' value offsets; values that do not add up to the block's length are an
// error.
extern "C" __global__ void bwt_mtf_compose(const BlockInfo* blocks, u32 nblocks,
                                           const u8* alphabets, const u32* sym_counts,
                                           u64* values, u8* lists, u32* status) {
    __shared__ u8 current[256];
    const u32 b = blockIdx.x, t = threadIdx.x;
    if (b >= nblocks || status[b] != 0) return;
    const BlockInfo& k = blocks[b];
    current[t] = alphabets[(u64)b * 256 + t];
    __syncthreads();
    const u32 chunks = (sym_counts[b] + MTF_CHUNK - 1) / MTF_CHUNK;
    u64 at = 0;
    for (u32 j = 0; j < chunks; ++j) {
        u8* list = lists + (u64)(k.chunk_first + j) * 256;
        const u8 moved = t < k.used ? current[list[t]] : 0;
        if (t < k.used) list[t] = current[t];
        if (t == 0) {
            const u64 v = values[k.chunk_first + j];
            values[k.chunk_first + j] = at;
            at += v;
        }
        __syncthreads();
        if (t < k.used) current[t] = moved;
        __syncthreads();
    }
    if (t == 0 && at != k.n) fail(status, b, B_LENGTH);
}

// Stage 3: counts of each byte value in each piece of the last column (a warp a piece).
extern "C" __global__ void __launch_bounds__(LF_WARPS * 32)
    bwt_histogram(const BlockInfo* blocks, const u32* piece_block, u64 npieces, const u8* out,
                  u32* piece_counts, const u32* status) {
    __shared__ u32 histograms[LF_WARPS][256];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u64 p = (u64)blockIdx.x * LF_WARPS + warp;
    if (p >= npieces) return;
    const u32 b = piece_block[p];
    if (status[b] != 0) return;
    const BlockInfo& k = blocks[b];
    u32* h = histograms[warp];
    for (u32 c = lane; c < 256; c += 32) h[c] = 0;
    __syncwarp();
    const u32 from = (u32)(p - k.piece_first) * PIECE;
    const u32 to = min(from + PIECE, k.n);
    const u8* column = out + k.out_at;
    for (u32 i = from + lane; i < to; i += 32) atomicAdd(&h[column[i]], 1u);
    __syncwarp();
    for (u32 c = lane; c < 256; c += 32) piece_counts[p * 256 + c] = h[c];
}

// Stage 3: per block (256 threads, one per byte value), the piece counts become each
// piece's first row for that value: 1 (the '$' row) + the bytes smaller than it + its
// occurrences in earlier pieces.
extern "C" __global__ void bwt_rank_bases(const BlockInfo* blocks, u32 nblocks,
                                          u32* piece_counts, const u32* status) {
    __shared__ u32 warp_sums[32];
    const u32 b = blockIdx.x, c = threadIdx.x;
    if (b >= nblocks || status[b] != 0) return;
    const BlockInfo& k = blocks[b];
    const u32 pieces = (k.n + PIECE - 1) / PIECE;
    u32* counts = piece_counts + (u64)k.piece_first * 256;
    u32 run = 0;
    for (u32 j = 0; j < pieces; ++j) {
        const u32 v = counts[j * 256 + c];
        counts[j * 256 + c] = run;
        run += v;
    }
    u32 all;
    const u32 smaller = block_exclusive_sum(run, warp_sums, &all);
    for (u32 j = 0; j < pieces; ++j) counts[j * 256 + c] += 1 + smaller;
}

// Stage 3: entry[row] = LF(row) << 8 | L[row] for every row but '$' (the row of
// auxiliary index 0), whose entry is 0. A warp walks its piece 32 bytes at a time; lanes
// holding the same byte rank themselves by __match_any_sync.
extern "C" __global__ void __launch_bounds__(LF_WARPS * 32)
    bwt_lf(const BlockInfo* blocks, const u32* piece_block, u64 npieces, const u8* out,
           const u32* piece_counts, const u32* aux, u64* entries, const u32* status) {
    __shared__ u32 next_rows[LF_WARPS][256];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u64 p = (u64)blockIdx.x * LF_WARPS + warp;
    if (p >= npieces) return;
    const u32 b = piece_block[p];
    if (status[b] != 0) return;
    const BlockInfo& k = blocks[b];
    u32* next = next_rows[warp];
    for (u32 c = lane; c < 256; c += 32) next[c] = piece_counts[p * 256 + c];
    const u32 primary = aux[k.aux_at];  // the '$' row, in 1..=n (checked on the host)
    u64* entry = entries + k.out_at + b;
    const u32 from = (u32)(p - k.piece_first) * PIECE;
    const u32 to = min(from + PIECE, k.n);
    if (from == 0 && lane == 0) entry[primary] = 0;
    __syncwarp();
    const u8* column = out + k.out_at;
    for (u32 i0 = from; i0 < to; i0 += 32) {
        const u32 i = i0 + lane;
        const bool valid = i < to;
        const u32 x = valid ? column[i] : 256 + lane;
        const u32 same = __match_any_sync(FULL_MASK, x);
        const u32 rank = __popc(same & ((1u << lane) - 1));
        if (valid) {
            const u32 row = i + (i >= primary ? 1 : 0);
            entry[row] = (u64)(next[x] + rank) << 8 | x;
        }
        __syncwarp();
        if (valid && lane == 31 - __clz(same)) next[x] += __popc(same);
        __syncwarp();
    }
}

// Stage 4: thread j of a block rebuilds bytes [j R, (j + 1) R) (R = 2^aux_log2), from the
// row of the suffix at (j + 1) R (auxiliary index j + 1, or row 0, '$', for the last); it
// must end on the row of the suffix at j R, auxiliary index j (as on the CPU,
// src/codec/bwt/transform.rs).
extern "C" __global__ void bwt_walk(const BlockInfo* blocks, const u32* aux_block, u64 nauxs,
                                    const u32* aux, const u64* entries, u8* out, u32* status) {
    const u64 g = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= nauxs) return;
    const u32 b = aux_block[g];
    if (status[b] != 0) return;
    const BlockInfo& k = blocks[b];
    const u32 j = (u32)(g - k.aux_at);
    const u32 from = j << k.aux_log2;
    const u32 to = (u32)min((u64)from + (1ull << k.aux_log2), (u64)k.n);
    u32 row = j + 1 < k.naux ? aux[g + 1] : 0;
    const u64* entry = entries + k.out_at + b;
    u8* dst = out + k.out_at;
    for (u32 i = to; i > from; --i) {
        const u64 e = entry[row];
        dst[i - 1] = (u8)e;
        row = (u32)(e >> 8);  // <= n: LF values are rows
    }
    if (row != aux[g]) fail(status, b, B_INDICES);
}
