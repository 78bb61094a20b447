// The Huffman stage of bwt compression on the device (src/codec/bwt/huffman/choice.rs,
// code.rs and encode.rs): for many blocks at once, the same tables, selectors, gap array
// and bitstream as the CPU encoder, bit for bit.
//
//  1. hufe_tables: a thread block per bwt block. The symbol histogram; the table count;
//     the starting cost vectors; four training passes over fixed groups of TRAIN_GROUP
//     symbols (every group in parallel, counts by shared atomics); two passes with the
//     real segmentation, tables no segment chose dropped; a last pass that records, per
//     segment, its table, its first symbol and the bit where that symbol starts. A pass
//     over segments is sequential within a block (where a segment starts depends on the
//     codes chosen before it): one warp runs it, every table simulated at once, 32
//     symbols a step by a warp scan of code lengths packed in 16-bit fields. Code
//     lengths: the CPU's two-queue Huffman construction (a warp per table: a rank sort,
//     then the merge by one lane), weights halved until no code exceeds MAX_CODE_LEN;
//     then canonical codes.
//  2. hufe_encode: a thread per segment writes its codewords at the recorded bit (OR-ed
//     into zeroed words: a codeword may cross into the next segment's word) and the gap
//     of every subsequence boundary its codewords start at or cross, and copies its
//     selector into the block's output.
//
// Symbols of block b lie at symbols[layout[b].sym_at ...] (counts[b] of them, u16); its
// alphabet has popcount(sets[b * 8 ..]) + 1 symbols. Bits are MSB first: bit i of the
// stream is bit 7 - i % 8 of byte i / 8.

#define MAX_TABLES 8
#define MAX_CODE_LEN 16
#define ALPHABET 257    // 256 byte values + 1
#define ROW 260         // per-table row of symbol-indexed arrays
#define TRAIN_GROUP 50
#define TRAIN_PASSES 4
#define SEGMENT_PASSES 2
#define HUF_THREADS 256  // 8 warps: one per table when building codes

// Per block, from the host (u32 each): where its symbols start, and the offsets of its
// segment records, its selectors/gaps/bits in the output (filled in for hufe_encode).
struct Layout {
    u32 sym_at;     // first symbol in `symbols`
    u32 seg_at;     // first segment record (capacity: the next block's seg_at)
    u32 out_bits;   // byte offset of the bitstream in `out` (4-aligned)
    u32 out_sel;    // byte offset of the selectors in `out`
    u32 out_gaps;   // byte offset of the gap array in `out`
    u32 pad0, pad1, pad2;
};

// Per block, to the host: the stream's geometry and the tables' code lengths.
struct Result {
    u32 total_bits;
    u32 ntables;
    u32 nseg;        // selectors (segments of total_bits)
    u32 nrecorded;   // segments in which a codeword starts (nseg or nseg - 1)
    u32 nsym;
    u32 alphabet;
    u32 pad0, pad1;
    u8 lens[MAX_TABLES * ROW];
};

// Shared state of hufe_tables.
struct TableState {
    u32 freq[ROW];
    u32 f[MAX_TABLES][ROW];
    u64 packed[ROW][2];
    u8 lens[MAX_TABLES][ROW];
    // Huffman construction scratch, one per warp (table)
    u16 order[MAX_TABLES][ROW];
    u16 parent[MAX_TABLES][2 * ROW];
    u32 iw[MAX_TABLES][ROW];
    u8 depth[MAX_TABLES][2 * ROW];
    u32 nt;
    u32 total_bits;
    u32 nrecorded;
};

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

// Code lengths of table t from weights w (the counts, 0 read as 1) of a symbols into
// s->lens[t]; run by one whole warp. The CPU's huffman_lengths/build_lengths: leaves
// ordered by (weight, symbol), the two-queue merge taking an internal node only when it
// weighs strictly less than the next leaf; weights become w / 2 + 1 while too deep.
__device__ void build_lengths(TableState* s, u32* w, u32 a, u32 t) {
    const u32 lane = threadIdx.x & 31;
    u16* order = s->order[t];
    u16* parent = s->parent[t];
    u32* iw = s->iw[t];
    u8* depth = s->depth[t];
    for (u32 i = lane; i < a; i += 32) w[i] = max(w[i], 1u);
    __syncwarp();
    for (;;) {
        for (u32 i = lane; i < a; i += 32) {
            const u32 wi = w[i];
            u32 r = 0;
            for (u32 j = 0; j < a; ++j) r += (w[j] < wi || (w[j] == wi && j < i)) ? 1 : 0;
            order[r] = (u16)i;
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
                    if (has_leaf && (!has_internal || iw[ii] >= w[order[li]])) {
                        node[p] = order[li];
                        wt[p] = w[order[li]];
                        ++li;
                    } else {
                        node[p] = n + ii;
                        wt[p] = iw[ii];
                        ++ii;
                    }
                }
                parent[node[0]] = (u16)(n + k);
                parent[node[1]] = (u16)(n + k);
                iw[k] = wt[0] + wt[1];
            }
            depth[2 * n - 2] = 0;
            for (int node = (int)(2 * n) - 3; node >= 0; --node)
                depth[node] = depth[parent[node]] + 1;
            for (u32 i = 0; i < n; ++i) deepest = max(deepest, (u32)depth[i]);
        }
        deepest = __shfl_sync(FULL_MASK, deepest, 0);
        if (deepest <= MAX_CODE_LEN) break;
        for (u32 i = lane; i < a; i += 32) w[i] = w[i] / 2 + 1;
        __syncwarp();
    }
    for (u32 i = lane; i < a; i += 32) s->lens[t][i] = s->depth[t][i];
    __syncwarp();
}

// packed[sym] = the code lengths of all tables in 16-bit fields (absent tables: 16).
__device__ void pack_lengths(TableState* s, u32 a, u32 nt) {
    for (u32 i = threadIdx.x; i < a; i += blockDim.x) {
        u64 w0 = 0, w1 = 0;
        for (u32 t = 0; t < MAX_TABLES; ++t) {
            const u64 l = t < nt ? s->lens[t][i] : MAX_CODE_LEN;
            if (t < 4)
                w0 |= l << (16 * t);
            else
                w1 |= l << (16 * (t - 4));
        }
        s->packed[i][0] = w0;
        s->packed[i][1] = w1;
    }
}

__device__ void zero_counts(TableState* s, u32 a) {
    for (u32 i = threadIdx.x; i < MAX_TABLES * ROW; i += blockDim.x) (&s->f[0][0])[i] = 0;
    (void)a;
}

// Inclusive warp scan of a u64 holding four 16-bit fields (no field overflows: 32
// lengths of at most 16 bits each).
__device__ __forceinline__ u64 warp_scan64(u64 v) {
    const u32 lane = threadIdx.x & 31;
#pragma unroll
    for (u32 k = 1; k < 32; k <<= 1) {
        const u64 up = __shfl_up_sync(FULL_MASK, v, k);
        if (lane >= k) v += up;
    }
    return v;
}

// One pass over the segments of a block by warp 0 (the CPU's assign_segments): for each
// segment, the table under which the most codewords start in it (ties: the earlier end,
// then the lower table). With `count`, the chosen table's counts of its symbols grow;
// with `record`, selectors, first symbols and first bits are stored. Returns the
// stream's length in bits; *recorded receives the number of segments passed.
__device__ u32 assign_segments(TableState* s, const u16* sym, u32 nsym, u32 nt, u32 seg_log2,
                               bool count, u8* sel, u32* seg_sym, u32* seg_pos,
                               u32* recorded) {
    const u32 lane = threadIdx.x & 31;
    u32 i = 0, pos = 0, k = 0;
    while (i < nsym) {
        const u32 end = ((pos >> seg_log2) + 1) << seg_log2;
        const u32 rem = end - pos;
        u32 cnt[MAX_TABLES], sum[MAX_TABLES];
        u32 done = 0;  // bit t: table t has passed the segment's end
#pragma unroll
        for (u32 t = 0; t < MAX_TABLES; ++t) {
            cnt[t] = 0;
            sum[t] = 0;
            if (t >= nt) done |= 1u << t;
        }
        for (u32 c = i; done != (1u << MAX_TABLES) - 1; c += 32) {
            const u32 at = c + lane;
            const bool present = at < nsym;
            u64 w[2] = {0, 0};
            if (present) {
                const u32 v = sym[at];
                w[0] = s->packed[v][0];
                w[1] = s->packed[v][1];
            }
            u64 inc[2];
            inc[0] = warp_scan64(w[0]);
            inc[1] = warp_scan64(w[1]);
#pragma unroll
            for (u32 t = 0; t < MAX_TABLES; ++t) {
                if (done & (1u << t)) continue;  // uniform across the warp
                const u32 incl = field(inc, t), len = field(w, t);
                const bool ok = present && sum[t] + incl - len < rem;
                const u32 mask = __ballot_sync(FULL_MASK, ok);
                const u32 got = __popc(mask);
                const u32 add = __shfl_sync(FULL_MASK, incl, got > 0 ? got - 1 : 0);
                if (got > 0) sum[t] += add;
                cnt[t] += got;
                if (got < 32) done |= 1u << t;
            }
        }
        u32 best = 0, best_j = 0, best_p = 0xffffffffu;
        bool first = true;
#pragma unroll
        for (u32 t = 0; t < MAX_TABLES; ++t) {
            if (t >= nt) continue;
            if (first || cnt[t] > best_j || (cnt[t] == best_j && sum[t] < best_p)) {
                best = t;
                best_j = cnt[t];
                best_p = sum[t];
                first = false;
            }
        }
        if (count)
            for (u32 j = i + lane; j < i + best_j; j += 32) atomicAdd(&s->f[best][sym[j]], 1u);
        if (sel != 0 && lane == 0) {
            sel[k] = (u8)best;
            seg_sym[k] = i;
            seg_pos[k] = pos;
        }
        i += best_j;
        pos += best_p;
        ++k;
    }
    *recorded = k;
    return pos;
}

extern "C" __global__ void __launch_bounds__(HUF_THREADS)
    hufe_tables(const u16* symbols, const u64* counts, const u32* sets, const Layout* layout,
                u32 nblocks, u32 seg_log2, u8* seg_sel, u32* seg_sym, u32* seg_pos,
                u16* codes, Result* results) {
    __shared__ TableState s;
    const u32 b = blockIdx.x;
    if (b >= nblocks) return;
    const u32 tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const Layout L = layout[b];
    const u16* sym = symbols + L.sym_at;
    const u32 nsym = (u32)counts[b];
    u32 used = 0;
    for (u32 w = 0; w < 8; ++w) used += __popc(sets[b * 8 + w]);
    const u32 a = used + 1;

    for (u32 i = tid; i < ROW; i += blockDim.x) s.freq[i] = 0;
    __syncthreads();
    for (u32 i = tid; i < nsym; i += blockDim.x) atomicAdd(&s.freq[sym[i]], 1u);
    __syncthreads();

    u32 nt = table_count(nsym);
    if (nt == 1) {
        if (warp == 0) {
            for (u32 i = lane; i < a; i += 32) s.f[0][i] = s.freq[i];
            __syncwarp();
            build_lengths(&s, s.f[0], a, 0);
        }
    } else if (tid == 0) {
        // starting cost vectors: table t is cheap (1) on a band of about 1/nt of the
        // occurrences, dear (8) elsewhere
        u64 total = 0;
        for (u32 i = 0; i < a; ++i) total += s.freq[i];
        u32 sy = 0;
        u64 cum = 0;
        for (u32 t = 0; t < nt; ++t) {
            const u64 goal = total * (t + 1) / nt;
            const u32 lo = sy;
            while (sy < a && (sy == lo || cum + s.freq[sy] <= goal || t + 1 == nt)) {
                cum += s.freq[sy];
                ++sy;
            }
            for (u32 i = 0; i < a; ++i) s.lens[t][i] = (i >= lo && i < sy) ? 1 : 8;
        }
    }
    __syncthreads();

    if (nt > 1) {
        for (u32 pass = 0; pass < TRAIN_PASSES; ++pass) {
            pack_lengths(&s, a, nt);
            zero_counts(&s, a);
            __syncthreads();
            const u32 groups = (nsym + TRAIN_GROUP - 1) / TRAIN_GROUP;
            for (u32 g = tid; g < groups; g += blockDim.x) {
                const u32 from = g * TRAIN_GROUP, to = min(from + TRAIN_GROUP, nsym);
                u64 cost0 = 0, cost1 = 0;
                for (u32 j = from; j < to; ++j) {
                    cost0 += s.packed[sym[j]][0];
                    cost1 += s.packed[sym[j]][1];
                }
                const u64 cost[2] = {cost0, cost1};
                u32 best = 0, best_c = 0xffffffffu;
                for (u32 t = 0; t < nt; ++t) {
                    const u32 c = field(cost, t);
                    if (c < best_c) {
                        best_c = c;
                        best = t;
                    }
                }
                for (u32 j = from; j < to; ++j) atomicAdd(&s.f[best][sym[j]], 1u);
            }
            __syncthreads();
            if (warp < nt) build_lengths(&s, s.f[warp], a, warp);
            __syncthreads();
        }
        for (u32 pass = 0; pass < SEGMENT_PASSES; ++pass) {
            pack_lengths(&s, a, nt);
            zero_counts(&s, a);
            __syncthreads();
            if (warp == 0) {
                u32 ignored;
                assign_segments(&s, sym, nsym, nt, seg_log2, true, 0, 0, 0, &ignored);
            }
            __syncthreads();
            if (tid == 0) {
                // tables no segment chose are dropped, the others keep their order
                u32 kept = 0;
                for (u32 t = 0; t < nt; ++t) {
                    bool any = false;
                    for (u32 i = 0; i < a; ++i) any |= s.f[t][i] != 0;
                    if (any) {
                        if (kept != t)
                            for (u32 i = 0; i < a; ++i) s.f[kept][i] = s.f[t][i];
                        ++kept;
                    }
                }
                s.nt = kept;
            }
            __syncthreads();
            nt = s.nt;
            if (warp < nt) build_lengths(&s, s.f[warp], a, warp);
            __syncthreads();
        }
    }

    pack_lengths(&s, a, nt);
    __syncthreads();
    u8* sel = seg_sel + L.seg_at;
    if (warp == 0) {
        u32 recorded;
        const u32 bits = assign_segments(&s, sym, nsym, nt, seg_log2, false, sel,
                                         seg_sym + L.seg_at, seg_pos + L.seg_at, &recorded);
        if (lane == 0) {
            s.total_bits = bits;
            s.nrecorded = recorded;
        }
    }
    __syncthreads();
    const u32 total_bits = s.total_bits, nrecorded = s.nrecorded;
    const u32 nseg = (total_bits + (1u << seg_log2) - 1) >> seg_log2;
    // a final segment in which no codeword starts repeats the previous selector
    if (tid == 0)
        for (u32 k = nrecorded; k < nseg; ++k) sel[k] = sel[nrecorded - 1];

    // canonical codes: a thread per table
    u16* block_codes = codes + (u64)b * MAX_TABLES * ROW;
    if (tid < nt) {
        u32 count[MAX_CODE_LEN + 2], next[MAX_CODE_LEN + 2];
        for (u32 l = 0; l < MAX_CODE_LEN + 2; ++l) count[l] = 0;
        for (u32 i = 0; i < a; ++i) count[s.lens[tid][i]] += 1;
        count[0] = 0;
        next[0] = 0;
        for (u32 l = 1; l <= MAX_CODE_LEN; ++l) next[l] = (next[l - 1] + count[l - 1]) << 1;
        for (u32 i = 0; i < a; ++i) block_codes[tid * ROW + i] = (u16)(next[s.lens[tid][i]]++);
    }
    Result* r = results + b;
    for (u32 i = tid; i < MAX_TABLES * ROW; i += blockDim.x)
        r->lens[i] = (i / ROW) < nt ? s.lens[i / ROW][i % ROW] : 0;
    if (tid == 0) {
        r->total_bits = total_bits;
        r->ntables = nt;
        r->nseg = nseg;
        r->nrecorded = nrecorded;
        r->nsym = nsym;
        r->alphabet = a;
    }
}

// Stage 2: thread g handles segment g - layout[b].seg_at of the block b whose records
// hold g (`seg_first`: nblocks + 1 record offsets, the last the total capacity).
extern "C" __global__ void hufe_encode(const u16* symbols, const Layout* layout,
                                       const Result* results, u32 nblocks, u64 nrecords,
                                       u32 sub_log2, const u8* seg_sel, const u32* seg_sym,
                                       const u32* seg_pos, const u16* codes, u8* out) {
    const u64 g = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= nrecords) return;
    // the block: the last whose seg_at <= g
    u32 lo = 0, hi = nblocks;
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) / 2;
        if (layout[mid].seg_at <= g) lo = mid; else hi = mid;
    }
    const u32 b = lo;
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
