// The Huffman stage of bwt compression on the device (src/codec/bwt/huffman/choice.rs,
// code.rs and encode.rs): for many blocks at once, the same tables, selectors, gap array
// and bitstream as the CPU encoder, bit for bit.
//
// Per block, a `State` in device memory carries the symbol counts, the tables' code
// lengths (packed: all tables' lengths of a symbol in 16-bit fields of two u64) and the
// counts that train them. The host launches the same sequence for every block:
//
//  hufe_histogram           the symbol counts (a thread block per tile of symbols)
//  hufe_start               table count; starting cost vectors (or the one table)
//  4 x hufe_groups, _build  training over fixed groups of TRAIN_GROUP symbols: every
//                           group in parallel, counts per thread block, then the codes
//  2 x hufe_segment,        training with the real segmentation: the segments, each
//      _count, _build       segment's symbols counted for its table in parallel, tables
//                           no segment chose dropped
//  hufe_segment, _finish    the final segmentation; canonical codes
//  hufe_encode              every segment's codewords and gaps, in parallel
//
// The segmentation is sequential by definition: a segment's table is the one under which
// the most codewords start in it (ties: the earlier end, then the lower table), and where
// the next segment's first codeword starts depends on that choice (chains started
// elsewhere do not meet the true one: their bit offsets differ). So one warp per block
// walks it, every table at once, 32 symbols a step; blocks run side by side, and a step
// of many blocks costs the time of one block's walk.
//
// Code lengths: the CPU's two-queue Huffman construction (a warp per table: a rank sort,
// then the merge by one lane), weights halved until no code exceeds MAX_CODE_LEN; then
// canonical codes. Bits are MSB first: bit i of the stream is bit 7 - i % 8 of byte i / 8.
//
// Symbols of block b lie at symbols[layout[b].sym_at ...] (min(counts[b], max_sym) of
// them, u16); its alphabet has popcount(sets[b * 8 ..]) + 1 symbols.

#define MAX_TABLES 8
#define MAX_CODE_LEN 16
#define ROW 260         // per-table row of symbol-indexed arrays (alphabet <= 257)
#define TRAIN_GROUP 50
#define HUF_THREADS 256  // 8 warps: one per table when building codes
#define SYM_TILE 8192    // symbols per thread block of hufe_histogram
#define WINDOW 4096      // symbols hufe_segment holds in shared memory
#define SEG_CTA 256      // segments per thread block of hufe_count
#define SPILLED 0xffffffffu

// Per block, from the host (u32 each). The *_at fields are the block's first unit of
// each launch shape (units of the next block start where its own end); `max_sym` bounds
// its symbols.
struct Layout {
    u32 sym_at;    // first symbol in `symbols`
    u32 seg_at;    // first segment record
    u32 out_bits;  // byte offset of the bitstream in `out` (4-aligned)
    u32 out_sel;   // byte offset of the selectors in `out`
    u32 out_gaps;  // byte offset of the gap array in `out`
    u32 max_sym;
    u32 tile_at;   // first thread block of hufe_histogram
    u32 group_at;  // first thread block of hufe_groups
    u32 segcta_at; // first thread block of hufe_count
    u32 pad[7];
};
#define LAYOUT_WORDS 16
#define F_TILE 6
#define F_GROUP 7
#define F_SEGCTA 8

// Per block, to the host: the stream's geometry and the tables' code lengths.
struct Result {
    u32 total_bits;
    u32 ntables;
    u32 nseg;       // selectors (segments of total_bits)
    u32 nrecorded;  // segments in which a codeword starts (nseg or nseg - 1)
    u32 nsym;
    u32 alphabet;
    u32 pad0, pad1;
    u8 lens[MAX_TABLES * ROW];
};

// Per block, between kernels.
struct State {
    u32 freq[ROW];
    u32 f[MAX_TABLES][ROW];
    u64 packed[ROW][2];
    u8 lens[MAX_TABLES][ROW];
    u32 nt, nsym, alphabet;
    u32 nrec;        // segments of the last segmentation
    u32 total_bits;  // and its length in bits
    u32 overflow;    // more segments than records (a defect: the host refuses)
    u32 pad0, pad1;
};

static_assert(sizeof(Layout) == 4 * LAYOUT_WORDS, "Layout as the launcher writes it");
static_assert(sizeof(Result) == 32 + MAX_TABLES * ROW, "Result as the launcher reads it");
static_assert(sizeof(State) == 15632, "State as the launcher sizes it");

__device__ __forceinline__ u32 table_count(u32 nsym) {
    if (nsym < 200) return 1;
    if (nsym < 600) return 2;
    if (nsym < 1200) return 3;
    if (nsym < 2400) return 4;
    if (nsym < 4800) return 5;
    if (nsym < 40000) return 6;
    return MAX_TABLES;
}

__device__ __forceinline__ u32 field(const u64* w, u32 t) {
    return (u32)((w[t >> 2] >> (16 * (t & 3))) & 0xffff);
}

// The block whose units of field `f` hold `unit`: the last b with layout[b].f <= unit.
__device__ __forceinline__ u32 block_of(const Layout* layout, u32 nblocks, u32 f, u32 unit) {
    const u32* words = (const u32*)layout;
    u32 lo = 0, hi = nblocks;
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) >> 1;
        if (words[mid * LAYOUT_WORDS + f] <= unit) lo = mid; else hi = mid;
    }
    return lo;
}

__device__ __forceinline__ u32 symbol_count(const u64* counts, const Layout& L, u32 b) {
    return (u32)min(counts[b], (u64)L.max_sym);
}

// ---------------------------------------------------------------------------------------
// Code lengths

// Scratch of one warp's Huffman construction.
struct Build {
    u32 w[ROW];
    u32 iw[ROW];
    u16 order[ROW];
    u16 parent[2 * ROW];
    u8 depth[2 * ROW];
};

// Code lengths of `a` symbols from counts `counts` (0 read as 1) into `lens`; run by one
// whole warp. The CPU's huffman_lengths/build_lengths: leaves ordered by (weight,
// symbol), the two-queue merge taking an internal node only when it weighs strictly less
// than the next leaf; weights become w / 2 + 1 while a code is too long.
__device__ void build_lengths(Build* s, const u32* counts, u32 a, u8* lens) {
    const u32 lane = threadIdx.x & 31;
    u32* w = s->w;
    for (u32 i = lane; i < a; i += 32) w[i] = max(counts[i], 1u);
    __syncwarp();
    for (;;) {
        for (u32 i = lane; i < a; i += 32) {
            const u32 wi = w[i];
            u32 r = 0;
            for (u32 j = 0; j < a; ++j) r += (w[j] < wi || (w[j] == wi && j < i)) ? 1 : 0;
            s->order[r] = (u16)i;
        }
        __syncwarp();
        u32 deepest = 0;
        if (lane == 0) {
            const u32 n = a;
            u32 li = 0, ii = 0;
            for (u32 k = 0; k + 1 < n; ++k) {
                u32 node[2], wt[2];
                for (int p = 0; p < 2; ++p) {
                    const bool has_leaf = li < n, has_internal = ii < k;
                    if (has_leaf && (!has_internal || s->iw[ii] >= w[s->order[li]])) {
                        node[p] = s->order[li];
                        wt[p] = w[s->order[li]];
                        ++li;
                    } else {
                        node[p] = n + ii;
                        wt[p] = s->iw[ii];
                        ++ii;
                    }
                }
                s->parent[node[0]] = (u16)(n + k);
                s->parent[node[1]] = (u16)(n + k);
                s->iw[k] = wt[0] + wt[1];
            }
            s->depth[2 * n - 2] = 0;
            for (int node = (int)(2 * n) - 3; node >= 0; --node)
                s->depth[node] = s->depth[s->parent[node]] + 1;
            for (u32 i = 0; i < n; ++i) deepest = max(deepest, (u32)s->depth[i]);
        }
        deepest = __shfl_sync(FULL_MASK, deepest, 0);
        __syncwarp();
        if (deepest <= MAX_CODE_LEN) break;
        for (u32 i = lane; i < a; i += 32) w[i] = w[i] / 2 + 1;
        __syncwarp();
    }
    for (u32 i = lane; i < a; i += 32) lens[i] = s->depth[i];
    __syncwarp();
}

// st->packed from st->lens for the block's `nt` tables (absent tables: 16); all threads.
__device__ void pack_lengths(State* st, u32 a, u32 nt) {
    for (u32 i = threadIdx.x; i < a; i += blockDim.x) {
        u64 w0 = 0, w1 = 0;
        for (u32 t = 0; t < MAX_TABLES; ++t) {
            const u64 l = t < nt ? st->lens[t][i] : MAX_CODE_LEN;
            if (t < 4)
                w0 |= l << (16 * t);
            else
                w1 |= l << (16 * (t - 4));
        }
        st->packed[i][0] = w0;
        st->packed[i][1] = w1;
    }
}

// Adds a thread block's counts (shared, MAX_TABLES x ROW) into the block's state.
__device__ void flush_counts(State* st, const u32 (*f)[ROW]) {
    for (u32 x = threadIdx.x; x < MAX_TABLES * ROW; x += blockDim.x) {
        const u32 v = f[x / ROW][x % ROW];
        if (v) atomicAdd(&st->f[x / ROW][x % ROW], v);
    }
}

// ---------------------------------------------------------------------------------------
// Counts and the first tables

extern "C" __global__ void __launch_bounds__(HUF_THREADS)
    hufe_histogram(const u16* symbols, const u64* counts, const Layout* layout, u32 nblocks,
                   State* states) {
    __shared__ u32 hist[ROW];
    const u32 b = block_of(layout, nblocks, F_TILE, blockIdx.x);
    const Layout L = layout[b];
    const u32 nsym = symbol_count(counts, L, b);
    const u32 from = (blockIdx.x - L.tile_at) * SYM_TILE;
    if (from >= nsym) return;
    const u32 to = min(from + SYM_TILE, nsym);
    for (u32 i = threadIdx.x; i < ROW; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    const u16* sym = symbols + L.sym_at;
    for (u32 i = from + threadIdx.x; i < to; i += blockDim.x) atomicAdd(&hist[sym[i]], 1u);
    __syncthreads();
    for (u32 i = threadIdx.x; i < ROW; i += blockDim.x)
        if (hist[i]) atomicAdd(&states[b].freq[i], hist[i]);
}

extern "C" __global__ void __launch_bounds__(HUF_THREADS)
    hufe_start(const u64* counts, const u32* sets, const Layout* layout, u32 nblocks,
               State* states) {
    __shared__ Build scratch;
    const u32 b = blockIdx.x;
    if (b >= nblocks) return;
    State* st = states + b;
    const Layout L = layout[b];
    const u32 nsym = symbol_count(counts, L, b);
    u32 used = 0;
    for (u32 w = 0; w < 8; ++w) used += __popc(sets[b * 8 + w]);
    const u32 a = used + 1;
    const u32 nt = table_count(nsym);
    if (threadIdx.x == 0) {
        st->nsym = nsym;
        st->alphabet = a;
        st->nt = nt;
    }
    if (nt == 1) {
        if (threadIdx.x < 32) build_lengths(&scratch, st->freq, a, st->lens[0]);
    } else if (threadIdx.x == 0) {
        // starting cost vectors: table t is cheap (1) on a band of about 1/nt of the
        // occurrences, dear (8) elsewhere
        u64 total = 0;
        for (u32 i = 0; i < a; ++i) total += st->freq[i];
        u32 sy = 0;
        u64 cum = 0;
        for (u32 t = 0; t < nt; ++t) {
            const u64 goal = total * (t + 1) / nt;
            const u32 lo = sy;
            while (sy < a && (sy == lo || cum + st->freq[sy] <= goal || t + 1 == nt)) {
                cum += st->freq[sy];
                ++sy;
            }
            for (u32 i = 0; i < a; ++i) st->lens[t][i] = (i >= lo && i < sy) ? 1 : 8;
        }
    }
    __syncthreads();
    pack_lengths(st, a, nt);
}

// Training over fixed groups: a thread per group of TRAIN_GROUP symbols, the group to the
// table that codes it shortest (ties: the lower table); counts per thread block.
extern "C" __global__ void __launch_bounds__(HUF_THREADS)
    hufe_groups(const u16* symbols, const Layout* layout, u32 nblocks, State* states) {
    __shared__ u64 packed[ROW][2];
    __shared__ u32 f[MAX_TABLES][ROW];
    const u32 b = block_of(layout, nblocks, F_GROUP, blockIdx.x);
    const Layout L = layout[b];
    State* st = states + b;
    const u32 nsym = st->nsym, nt = st->nt, a = st->alphabet;
    const u32 first = (blockIdx.x - L.group_at) * HUF_THREADS;
    if (nt == 1 || first * TRAIN_GROUP >= nsym) return;
    for (u32 i = threadIdx.x; i < a; i += blockDim.x) {
        packed[i][0] = st->packed[i][0];
        packed[i][1] = st->packed[i][1];
    }
    for (u32 x = threadIdx.x; x < MAX_TABLES * ROW; x += blockDim.x) f[x / ROW][x % ROW] = 0;
    __syncthreads();
    const u32 g = first + threadIdx.x;
    const u16* sym = symbols + L.sym_at;
    if (g * TRAIN_GROUP < nsym) {
        const u32 from = g * TRAIN_GROUP, to = min(from + TRAIN_GROUP, nsym);
        u64 cost[2] = {0, 0};
        for (u32 j = from; j < to; ++j) {
            const u32 v = sym[j];
            cost[0] += packed[v][0];
            cost[1] += packed[v][1];
        }
        u32 best = 0, best_c = 0xffffffffu;
        for (u32 t = 0; t < nt; ++t) {
            const u32 c = field(cost, t);
            if (c < best_c) {
                best_c = c;
                best = t;
            }
        }
        for (u32 j = from; j < to; ++j) atomicAdd(&f[best][sym[j]], 1u);
    }
    __syncthreads();
    flush_counts(st, f);
}

// New code lengths from the counts (a warp per table), packed; the counts zeroed for the
// next pass. With `drop`, tables no segment chose are dropped first (order kept).
extern "C" __global__ void __launch_bounds__(HUF_THREADS)
    hufe_build(u32 nblocks, u32 drop, State* states) {
    __shared__ Build scratch[MAX_TABLES];
    __shared__ u32 kept;
    const u32 b = blockIdx.x;
    if (b >= nblocks) return;
    State* st = states + b;
    const u32 a = st->alphabet;
    u32 nt = st->nt;
    if (nt == 1) return;
    if (drop) {
        if (threadIdx.x == 0) {
            u32 k = 0;
            for (u32 t = 0; t < nt; ++t) {
                bool any = false;
                for (u32 i = 0; i < a; ++i) any |= st->f[t][i] != 0;
                if (any) {
                    if (k != t)
                        for (u32 i = 0; i < a; ++i) st->f[k][i] = st->f[t][i];
                    ++k;
                }
            }
            kept = k;
        }
        __syncthreads();
        nt = kept;
    }
    const u32 warp = threadIdx.x >> 5;
    if (warp < nt) build_lengths(&scratch[warp], st->f[warp], a, st->lens[warp]);
    __syncthreads();
    if (threadIdx.x == 0) st->nt = nt;
    pack_lengths(st, a, nt);
    for (u32 x = threadIdx.x; x < MAX_TABLES * ROW; x += blockDim.x) st->f[x / ROW][x % ROW] = 0;
}

// ---------------------------------------------------------------------------------------
// The segmentation

// The segmentation of a block by one warp (the CPU's assign_segments): for each segment
// in turn, the table under which the most codewords start in it (ties: the earlier end,
// then the lower table), every table at once, 32 symbols a step by a warp scan of the
// packed lengths. Symbols are read through a window in shared memory, WINDOW at a time,
// so the walk waits on global memory once per window, not once per step. Records each
// segment's table, first symbol and first bit; `all`: every block (the last
// segmentation), otherwise blocks of one table have none to train.
extern "C" __global__ void __launch_bounds__(32)
    hufe_segment(const u16* symbols, const Layout* layout, u32 nblocks, u32 nrecords,
                 State* states, u32 seg_log2, u32 all, u8* seg_sel, u32* seg_sym,
                 u32* seg_pos) {
    __shared__ u64 packed[ROW][2];
    __shared__ u16 window[WINDOW];
    const u32 b = blockIdx.x;
    if (b >= nblocks) return;
    const Layout L = layout[b];
    State* st = states + b;
    const u32 nsym = st->nsym, nt = st->nt;
    if (!all && nt == 1) return;
    const u32 lane = threadIdx.x;
    for (u32 i = lane; i < st->alphabet; i += 32) {
        packed[i][0] = st->packed[i][0];
        packed[i][1] = st->packed[i][1];
    }
    const u32 capacity = (b + 1 < nblocks ? layout[b + 1].seg_at : nrecords) - L.seg_at;
    const u16* sym = symbols + L.sym_at;
    const u32 seg_bits = 1u << seg_log2;
    u32 i = 0, pos = 0, k = 0, win = 0, win_end = 0;
    while (i < nsym) {
        const u32 rem = seg_bits - (pos & (seg_bits - 1));
        u32 cnt[MAX_TABLES], sum[MAX_TABLES];
        u32 done = 0;  // bit t: table t has passed the segment's end
#pragma unroll
        for (u32 t = 0; t < MAX_TABLES; ++t) {
            cnt[t] = 0;
            sum[t] = 0;
            if (t >= nt) done |= 1u << t;
        }
        for (u32 c = i; done != (1u << MAX_TABLES) - 1; c += 32) {
            if (c + 32 > win_end && win_end < nsym) {
                // refill the window from c (a segment holds far fewer than WINDOW symbols)
                __syncwarp();
                win = c;
                win_end = min(c + WINDOW, nsym);
                for (u32 j = win + lane; j < win_end; j += 32) window[j - win] = sym[j];
                __syncwarp();
            }
            const u32 at = c + lane;
            const bool present = at < nsym;
            u64 w0 = 0, w1 = 0;
            if (present) {
                const u32 v = window[at - win];
                w0 = packed[v][0];
                w1 = packed[v][1];
            }
            // Four 16-bit fields per word: no field overflows (32 lengths of at most 16 bits).
            const u64 inc[2] = {warp_inclusive_sum64(w0), warp_inclusive_sum64(w1)};
            const u64 w[2] = {w0, w1};
            u32 got[MAX_TABLES], incl[MAX_TABLES];
#pragma unroll
            for (u32 t = 0; t < MAX_TABLES; ++t) {
                incl[t] = field(inc, t);
                const bool ok = present && sum[t] + incl[t] - field(w, t) < rem;
                got[t] = __popc(__ballot_sync(FULL_MASK, ok));
            }
#pragma unroll
            for (u32 t = 0; t < MAX_TABLES; ++t) {
                const u32 add = __shfl_sync(FULL_MASK, incl[t], got[t] > 0 ? got[t] - 1 : 0);
                if (!(done & (1u << t))) {
                    if (got[t] > 0) sum[t] += add;
                    cnt[t] += got[t];
                    if (got[t] < 32) done |= 1u << t;
                }
            }
        }
        u32 best = 0, best_j = 0, best_p = 0xffffffffu;
        bool first = true;
#pragma unroll
        for (u32 t = 0; t < MAX_TABLES; ++t) {
            if (t < nt && (first || cnt[t] > best_j || (cnt[t] == best_j && sum[t] < best_p))) {
                best = t;
                best_j = cnt[t];
                best_p = sum[t];
                first = false;
            }
        }
        if (lane == 0 && k < capacity) {
            seg_sel[L.seg_at + k] = (u8)best;
            seg_sym[L.seg_at + k] = i;
            seg_pos[L.seg_at + k] = pos;
        }
        i += best_j;
        pos += best_p;
        ++k;
    }
    if (lane == 0) {
        st->nrec = k;
        st->total_bits = pos;
        if (k > capacity) st->overflow = 1;
    }
}

// Training with the segmentation: each segment's symbols counted for its table.
extern "C" __global__ void __launch_bounds__(SEG_CTA)
    hufe_count(const u16* symbols, const Layout* layout, u32 nblocks, State* states,
               const u8* seg_sel, const u32* seg_sym) {
    __shared__ u32 f[MAX_TABLES][ROW];
    const u32 b = block_of(layout, nblocks, F_SEGCTA, blockIdx.x);
    const Layout L = layout[b];
    State* st = states + b;
    const u32 nrec = st->nrec, nsym = st->nsym;
    const u32 first = (blockIdx.x - L.segcta_at) * SEG_CTA;
    if (st->nt == 1 || first >= nrec) return;
    for (u32 x = threadIdx.x; x < MAX_TABLES * ROW; x += blockDim.x) f[x / ROW][x % ROW] = 0;
    __syncthreads();
    const u32 d = first + threadIdx.x;
    const u16* sym = symbols + L.sym_at;
    if (d < nrec) {
        const u32 t = seg_sel[L.seg_at + d];
        const u32 from = seg_sym[L.seg_at + d];
        const u32 to = d + 1 < nrec ? seg_sym[L.seg_at + d + 1] : nsym;
        for (u32 j = from; j < to; ++j) atomicAdd(&f[t][sym[j]], 1u);
    }
    __syncthreads();
    flush_counts(st, f);
}

// The block's result: bitstream length, selectors of a final segment without a codeword
// start, canonical codes, code lengths.
extern "C" __global__ void __launch_bounds__(HUF_THREADS)
    hufe_finish(const Layout* layout, u32 nblocks, u32 nrecords, const State* states,
                u32 seg_log2, u8* seg_sel, u16* codes, Result* results) {
    const u32 b = blockIdx.x;
    if (b >= nblocks) return;
    const Layout L = layout[b];
    const State* st = states + b;
    const u32 nt = st->nt, a = st->alphabet, nrec = st->nrec;
    const u32 total_bits = st->total_bits;
    const u32 nseg = (total_bits + (1u << seg_log2) - 1) >> seg_log2;
    const u32 capacity = (b + 1 < nblocks ? layout[b + 1].seg_at : nrecords) - L.seg_at;
    u8* sel = seg_sel + L.seg_at;
    if (threadIdx.x == 0 && nseg <= capacity)
        for (u32 k = nrec; k < nseg && nrec > 0; ++k) sel[k] = sel[nrec - 1];
    u16* block_codes = codes + (u64)b * MAX_TABLES * ROW;
    if (threadIdx.x < nt) {
        const u32 t = threadIdx.x;
        u32 count[MAX_CODE_LEN + 2], next[MAX_CODE_LEN + 2];
        for (u32 l = 0; l < MAX_CODE_LEN + 2; ++l) count[l] = 0;
        for (u32 i = 0; i < a; ++i) count[st->lens[t][i]] += 1;
        count[0] = 0;
        next[0] = 0;
        for (u32 l = 1; l <= MAX_CODE_LEN; ++l) next[l] = (next[l - 1] + count[l - 1]) << 1;
        for (u32 i = 0; i < a; ++i) block_codes[t * ROW + i] = (u16)(next[st->lens[t][i]]++);
    }
    Result* r = results + b;
    for (u32 i = threadIdx.x; i < MAX_TABLES * ROW; i += blockDim.x)
        r->lens[i] = (i / ROW) < nt ? st->lens[i / ROW][i % ROW] : 0;
    if (threadIdx.x == 0) {
        r->total_bits = total_bits;
        r->ntables = nt;
        r->nseg = st->overflow ? SPILLED : nseg;
        r->nrecorded = nrec;
        r->nsym = st->nsym;
        r->alphabet = a;
    }
}

// ---------------------------------------------------------------------------------------
// The bitstream

// Thread g handles segment g - layout[b].seg_at of the block b whose records hold g.
extern "C" __global__ void hufe_encode(const u16* symbols, const Layout* layout,
                                       const Result* results, u32 nblocks, u64 nrecords,
                                       u32 sub_log2, const u8* seg_sel, const u32* seg_sym,
                                       const u32* seg_pos, const u16* codes, u8* out) {
    const u64 g = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= nrecords) return;
    const u32 b = block_of(layout, nblocks, 1, (u32)g);
    const Layout L = layout[b];
    const Result* r = results + b;
    const u32 k = (u32)(g - L.seg_at);
    if (k >= r->nseg) return;
    out[L.out_sel + k] = seg_sel[L.seg_at + k];
    if (k >= r->nrecorded) return;
    const u32 t = seg_sel[L.seg_at + k];
    const u32 from = seg_sym[L.seg_at + k];
    const u32 to = k + 1 < r->nrecorded ? seg_sym[L.seg_at + k + 1] : r->nsym;
    const u8* lens = r->lens + t * ROW;
    const u16* code = codes + (u64)b * MAX_TABLES * ROW + t * ROW;
    const u16* sym = symbols + L.sym_at;
    u32* words = (u32*)(out + L.out_bits);
    u8* gaps = out + L.out_gaps;
    const u32 sub_mask = (1u << sub_log2) - 1;
    u32 p = seg_pos[L.seg_at + k];
    u32 word = p >> 5, fill = p & 31;
    u64 acc = 0;
    for (u32 j = from; j < to; ++j) {
        const u32 v = sym[j];
        const u32 l = lens[v];
        // the gap of a subsequence boundary this codeword starts at or crosses
        if ((p & sub_mask) == 0) {
            gaps[p >> sub_log2] = 0;
        } else {
            const u32 boundary = (p | sub_mask) + 1;
            if (boundary < p + l) gaps[boundary >> sub_log2] = (u8)(p + l - boundary);
        }
        acc |= (u64)code[v] << (64 - fill - l);
        fill += l;
        if (fill >= 32) {
            atomicOr(&words[word], __byte_perm((u32)(acc >> 32), 0, 0x0123));
            acc <<= 32;
            fill -= 32;
            ++word;
        }
        p += l;
    }
    if (fill > 0) atomicOr(&words[word], __byte_perm((u32)(acc >> 32), 0, 0x0123));
}
