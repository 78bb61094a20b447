// The stages of bwt compression after the transform, on the device: move-to-front over
// each block's own alphabet and zero-run coding (src/codec/bwt/mtf.rs and zrle.rs), many
// blocks at once, in chunks of MTF_CHUNK bytes of the transformed text. The Huffman
// stage follows in bwt_huffman.cu.
//
// Whether a byte's MTF value is 0 does not depend on the list: it is 0 exactly when the
// byte repeats the one before it (or, first in its block, is the block's smallest byte).
// So the zero runs, and how many symbols each chunk writes, are known from the bytes; the
// list a chunk starts from is the block's sorted alphabet after the earlier chunks, each
// of which moves the bytes it touched to the front, most recent first.
//
//  1. bwte_alphabet: each chunk's bytes OR-ed into its block's 256-bit set;
//  2. bwte_chunks (pass 1): per chunk (a thread each), the bytes it touches in order of
//     last use, its leading and trailing zero values, and the symbols it writes but the
//     digits of the run before its first non-zero value;
//  3. bwte_compose: per block (256 threads), every chunk's first list, the zeros carried
//     into it, where its symbols start, and the block's symbol count;
//  4. bwte_chunks (pass 2): every chunk writes its symbols.
//
// Blocks lie one after another in `text` (`starts`: count + 1 offsets); symbol i of
// block b goes to symbols[starts[b] + i] (a block writes at most as many symbols as it
// has bytes). Chunk c of block b covers text[starts[b] + (c - chunk_first[b]) *
// MTF_CHUNK ...).

#define MTF_CHUNK 2048
#define MTF_THREADS 64  // threads per block of bwte_chunks (a 256-byte list each)
#define RUNA 0
#define RUNB 1

// Bijective base-2 digits of a zero run of k (k >= 0): how many symbols it writes.
__device__ __forceinline__ u32 run_digits(u64 k) {
    return k == 0 ? 0 : 63 - __clzll(k + 1);
}

// Writes the digits of a run of k zeros (least significant first) at out[*at...].
__device__ __forceinline__ void put_run(u16* out, u64* at, u64 k) {
    while (k > 0) {
        if (k & 1) {
            out[(*at)++] = RUNA;
            k = (k - 1) >> 1;
        } else {
            out[(*at)++] = RUNB;
            k = (k - 2) >> 1;
        }
    }
}

struct ChunkPlace {
    u32 block, from, to;
};

__device__ __forceinline__ ChunkPlace place(const u32* starts, const u32* chunk_block,
                                           const u32* chunk_first, u64 c) {
    ChunkPlace p;
    p.block = chunk_block[c];
    const u32 begin = starts[p.block], end = starts[p.block + 1];
    p.from = begin + (u32)(c - chunk_first[p.block]) * MTF_CHUNK;
    p.to = min(p.from + MTF_CHUNK, end);
    return p;
}

// The smallest byte of a block's set.
__device__ __forceinline__ u32 smallest(const u32* set) {
    for (u32 w = 0; w < 8; ++w)
        if (set[w] != 0) return w * 32 + __ffs(set[w]) - 1;
    return 0;
}

// Stage 1: sets[b * 8 ...] |= the bytes of each chunk of block b.
extern "C" __global__ void bwte_alphabet(const u8* text, const u32* starts,
                                         const u32* chunk_block, const u32* chunk_first,
                                         u64 nchunks, u32* sets) {
    const u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nchunks) return;
    const ChunkPlace p = place(starts, chunk_block, chunk_first, c);
    u32 set[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (u32 i = p.from; i < p.to; ++i) {
        const u32 v = text[i];
        set[v >> 5] |= 1u << (v & 31);
    }
    for (u32 w = 0; w < 8; ++w)
        if (set[w] != 0) atomicOr(&sets[p.block * 8 + w], set[w]);
}

// Per chunk: info[c * 4 ...] = {touched count, leading zeros (MTF_CHUNK + 1 when every
// value is zero), trailing zeros, symbols written but the first run's digits}.
// Pass 1 (write == 0) also lists the touched bytes at lists[c * 256], most recent first;
// pass 2 writes the symbols from the first list compose left there.
extern "C" __global__ void __launch_bounds__(MTF_THREADS)
    bwte_chunks(const u8* text, const u32* starts, const u32* chunk_block,
                const u32* chunk_first, u64 nchunks, const u32* sets, u8* lists, u32* info,
                const u64* sym_at, const u64* carry_in, const u32* used, u16* symbols,
                u32 write) {
    __shared__ u8 shared_lists[256 * MTF_THREADS];
    const u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nchunks) return;
    const ChunkPlace p = place(starts, chunk_block, chunk_first, c);
    const u32 begin = starts[p.block];
    // The byte before the chunk (for the first chunk: one that makes the block's first
    // byte a zero value exactly when it is the smallest).
    const u32 before = p.from > begin ? text[p.from - 1] : smallest(sets + p.block * 8);
    if (!write) {
        u32 seen[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        u8* touched = lists + c * 256;
        u32 count = 0;
        for (u32 i = p.to; i-- > p.from;) {
            const u32 v = text[i];
            if (!(seen[v >> 5] & (1u << (v & 31)))) {
                seen[v >> 5] |= 1u << (v & 31);
                touched[count++] = (u8)v;
            }
        }
        u32 lead = 0, run = 0, local = 0;
        bool nonzero = false;
        u32 prev = before;
        for (u32 i = p.from; i < p.to; ++i) {
            const u32 v = text[i];
            if (v == prev) {
                ++run;
            } else {
                if (nonzero) local += run_digits(run);
                else lead = run;
                local += 1;
                nonzero = true;
                run = 0;
            }
            prev = v;
        }
        u32* out = info + c * 4;
        out[0] = count;
        out[1] = nonzero ? lead : MTF_CHUNK + 1;
        out[2] = run;
        out[3] = local;
        return;
    }
    // Pass 2: move-to-front from the chunk's first list, symbols written as on the CPU.
    u8* list = shared_lists + threadIdx.x;
    const u8* first = lists + c * 256;
    const u32 n_used = used[p.block];
    for (u32 i = 0; i < n_used; ++i) list[i * MTF_THREADS] = first[i];
    u16* out = symbols + begin;
    u64 at = sym_at[c];
    u64 run = carry_in[c];
    for (u32 i = p.from; i < p.to; ++i) {
        const u8 v = text[i];
        if (list[0] == v) {
            ++run;
            continue;
        }
        u32 j = 1;
        u8 prev = list[0];
        // Shift right until v is found (it is in the block's alphabet).
        while (j < n_used) {
            const u8 cur = list[j * MTF_THREADS];
            list[j * MTF_THREADS] = prev;
            if (cur == v) break;
            prev = cur;
            ++j;
        }
        list[0] = v;
        put_run(out, &at, run);
        run = 0;
        out[at++] = (u16)(j + 1);
    }
    // The block's last chunk writes the block's final run.
    if (p.to == starts[p.block + 1]) put_run(out, &at, run);
}

// Stage 3: per block (256 threads, one per list position): every chunk's first list
// (written over its touched list), the zeros carried into it and where its symbols
// start; used[b] and symbol_counts[b] for the block.
extern "C" __global__ void bwte_compose(const u32* starts, const u32* chunk_first,
                                        u32 nblocks, const u32* sets, u8* lists,
                                        const u32* info, u64* sym_at, u64* carry_in,
                                        u32* used, u64* symbol_counts) {
    __shared__ u8 current[256];
    __shared__ u8 touched[256];
    __shared__ u32 in_touched[8];
    __shared__ u32 warp_sums[32];
    const u32 b = blockIdx.x, t = threadIdx.x;
    if (b >= nblocks) return;
    const u32* set = sets + b * 8;
    // The sorted alphabet: position of byte t = the set bits below it.
    const bool has = set[t >> 5] & (1u << (t & 31));
    u32 n_used;
    const u32 rank = block_exclusive_sum(has ? 1 : 0, warp_sums, &n_used);
    if (has) current[rank] = (u8)t;
    if (t == 0) used[b] = n_used;
    const u32 n = starts[b + 1] - starts[b];
    const u32 chunks = (n + MTF_CHUNK - 1) / MTF_CHUNK;
    u64 at = 0, carry = 0;
    __syncthreads();
    for (u32 j = 0; j < chunks; ++j) {
        const u64 c = (u64)chunk_first[b] + j;
        u8* list = lists + c * 256;
        const u32* ci = info + c * 4;
        const u32 k = ci[0];
        if (t < 8) in_touched[t] = 0;
        __syncthreads();
        if (t < k) {
            touched[t] = list[t];
            atomicOr(&in_touched[list[t] >> 5], 1u << (list[t] & 31));
        }
        __syncthreads();
        // The chunk starts from `current`; after it, its touched bytes lead, then the
        // others in their order.
        const u8 mine = current[t];
        if (t < n_used) list[t] = mine;
        const bool stays = t < n_used && !(in_touched[mine >> 5] & (1u << (mine & 31)));
        u32 kept;
        const u32 to = block_exclusive_sum(stays ? 1 : 0, warp_sums, &kept);
        if (t < k) current[t] = touched[t];
        if (stays) current[k + to] = mine;
        if (t == 0) {
            carry_in[c] = carry;
            sym_at[c] = at;
            const u32 lead = ci[1], trail = ci[2], local = ci[3];
            const u32 len = min(MTF_CHUNK, n - j * MTF_CHUNK);
            if (lead > MTF_CHUNK) {  // every value zero: the run goes on
                carry += len;
            } else {
                at += run_digits(carry + lead) + local;
                carry = trail;
            }
            if (j + 1 == chunks) {
                at += run_digits(carry);
                symbol_counts[b] = at;
            }
        }
        __syncthreads();
    }
}
