// G-match compression into Snappy elements (docs/FORMAT.md, section gmatch; the CPU
// reference is src/codec/gmatch/{hash,parse,encode}.rs and these kernels write the same
// bytes). One block of GM_THREADS threads per 64 KiB block of input:
//
//   0. every warp takes 32-position units: hash, whether the position writes the table
//      (`inserts`), its highest lower writing peer in the unit (__match_any_sync), and
//      whether it is its hash's last writer in the unit, packed into `work`;
//   1. pass 1: one warp walks the units in order against the 32 KiB table, so the index
//      array is the CPU's sequential rule (a lane with a peer takes it, the others read
//      the table as it was before the unit; the last writer of each hash writes);
//   2. every position gathers its three candidates, keeps those whose 4 bytes are equal
//      and measures them up to GM_CAP bytes (exact below the cap; the walk measures
//      longer ones to the end, only where the parse goes); a ballot builds the bitmap of
//      positions with a kept candidate (the skip pointers);
//   3. the greedy parse: each thread walks its GM_SEG-byte segment from its start, then
//      segments whose entry (where the previous segment's walk left off) differs walk
//      again until they rejoin their old path, until nothing changes (one or two rounds
//      on real data);
//   4. every thread sizes the elements of the matches starting in its segment (with the
//      literals before them; the last thread adds the tail), a block prefix sum places
//      them, and every thread writes its own segment's elements at its place.
// The elements go to the block's slot; gmatch_assemble (below) builds the final streams.

// Constants shared with Rust come from the launcher (src/codec/gmatch/gpu/launch.rs) as
// -D defines: GM_BLOCK, GM_HASH_BITS, GM_MULT, GM_NONE, GM_THREADS, GM_SLOT, GM_SLOT_OVERFLOW,
// GM_RECORD and the GM_FORMAT_* codes.
#if !defined(GM_BLOCK) || !defined(GM_HASH_BITS) || !defined(GM_MULT) || !defined(GM_NONE) ||   \
    !defined(GM_THREADS) || !defined(GM_SLOT) || !defined(GM_SLOT_OVERFLOW) ||              \
    !defined(GM_RECORD) || !defined(GM_FORMAT_RAW) || !defined(GM_FORMAT_FRAMED) ||          \
    !defined(GM_FORMAT_BLOCKS)
#error "gmatch_compress.cu needs its constants from the launcher"
#endif
#define GM_TABLE (1 << GM_HASH_BITS)
#define GM_SEG (GM_BLOCK / GM_THREADS)  // bytes per walking thread, a multiple of 32
#define GM_CAP 32                        // match bytes measured for every position
#define GM_UNRESOLVED 0xffffffffu        // best[p] of a match longer than the cap
// GM_SLOT, bytes of a block's slot, is more than the elements of any 64 KiB block can
// take (each match of 4+ bytes saves a byte, each literal run costs at most 3).

// The (possibly unaligned) 4 and 8 bytes at p; the input carries 16 bytes of padding so
// the aligned word after the last byte may be read.
__device__ __forceinline__ u32 load_u32(const u8* p) {
    const u64 a = (u64)p;
    const u32* w = (const u32*)(a & ~3ull);
    return __funnelshift_r(__ldg(w), __ldg(w + 1), (u32)(a & 3) * 8);
}

__device__ __forceinline__ u64 load_u64(const u8* p) {
    const u64 a = (u64)p;
    const u64* w = (const u64*)(a & ~7ull);
    const u32 sh = (u32)(a & 7) * 8;
    const u64 lo = __ldg(w);
    return sh == 0 ? lo : (lo >> sh) | (__ldg(w + 1) << (64 - sh));
}

__device__ __forceinline__ u32 gm_hash(u32 word) { return (word * GM_MULT) >> (32 - GM_HASH_BITS); }

// Length of the common prefix of blk[p..] and blk[c..] up to `limit` bytes (c < p),
// the first 4 known equal.
__device__ u32 match_length(const u8* blk, u32 p, u32 c, u32 limit) {
    u32 len = 4;
    while (len + 8 <= limit) {
        const u64 diff = load_u64(blk + p + len) ^ load_u64(blk + c + len);
        if (diff) return len + (u32)(__ffsll((long long)diff) - 1) / 8;
        len += 8;
    }
    while (len < limit && blk[p + len] == blk[c + len]) ++len;
    return len;
}

// The candidates of p from the index array as pass 1 wrote it: c1, c2 (the next on
// c1's chain) and the shifted c3; GM_NONE where there is none.
__device__ __forceinline__ void candidates(const u16* index, u32 n, u32 p, u32* cand) {
    cand[0] = cand[1] = cand[2] = GM_NONE;
    const u32 first = index[p];
    if (first != GM_NONE) {
        cand[0] = first;
        cand[1] = index[first];
    }
    if (p + 3 < n) {
        const u32 later = index[p + 3];
        if (later != GM_NONE && later >= 3) cand[2] = later - 3;
    }
}

// The match at p: (len << 16) | offset, 0 when no candidate is kept; each kept
// candidate measured up to `limit` bytes; the longest wins, the first of c1, c2, c3 on
// a tie. A later candidate is only measured if it also matches where the best so far
// stops (else it cannot be longer).
__device__ u32 best_match(const u8* blk, const u16* index, u32 n, u32 p, u32 limit) {
    u32 cand[3];
    candidates(index, n, p, cand);
    const u32 word = load_u32(blk + p);
    u32 best_len = 0, best_cand = 0;
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        if (cand[k] != GM_NONE && load_u32(blk + cand[k]) == word &&
            (best_len == 0 || (best_len < limit && blk[cand[k] + best_len] == blk[p + best_len]))) {
            const u32 len = match_length(blk, p, cand[k], limit);
            if (len > best_len) {
                best_len = len;
                best_cand = cand[k];
            }
        }
    }
    return best_len ? (best_len << 16) | (p - best_cand) : 0u;
}

__device__ __forceinline__ bool bit_set(const u32* bits, u32 p) { return (bits[p >> 5] >> (p & 31)) & 1; }

// The first set bit at or after p and before end, else end.
__device__ __forceinline__ u32 next_bit(const u32* bits, u32 p, u32 end) {
    while (p < end) {
        const u32 w = bits[p >> 5] >> (p & 31);
        if (w) return min(p + __ffs(w) - 1, end);
        p = (p | 31) + 1;
    }
    return end;
}

// Clears bits [a, b) of a bitmap whose words in that range belong to this thread.
__device__ __forceinline__ void clear_bits(u32* bits, u32 a, u32 b) {
    for (u32 p = a; p < b;) {
        const u32 word = p >> 5, lo = p & 31, hi = min(32u, b - (p - lo));
        const u32 mask = (hi == 32 ? 0xffffffffu : ((1u << hi) - 1)) & ~((1u << lo) - 1);
        bits[word] &= ~mask;
        p = (p - lo) + hi;
    }
}

// The exact match at a walked position, measuring one that reached the cap to the end
// (q is in this thread's segment: no other thread reads best[q] now).
__device__ __forceinline__ u32 resolved(const u8* blk, const u16* index, u32* best, u32 n, u32 q) {
    u32 m = best[q];
    if (m == GM_UNRESOLVED) {
        m = best_match(blk, index, n, q, n - q);
        best[q] = m;
    }
    return m;
}

// Walks the parse from `entry` over segment [s, e): marks the match starts in `starts`
// and returns where the walk leaves the segment (the end of a match reaching past it,
// else e). Again (`again`): bits of an earlier walk are replaced, and the walk stops
// where it lands on one of them (from there it is the earlier walk: `old_exit`).
__device__ u32 walk(const u8* blk, const u16* index, u32* best, u32 n, const u32* kept,
                    u32* starts, u32 entry, u32 s, u32 e, bool again, u32 old_exit) {
    if (again) clear_bits(starts, s, min(entry, e));
    u32 p = entry;
    while (p < e) {
        const u32 q = next_bit(kept, p, e);
        if (q >= e) return e;
        if (again && bit_set(starts, q)) return old_exit;
        const u32 len = resolved(blk, index, best, n, q) >> 16;
        starts[q >> 5] |= 1u << (q & 31);
        if (again) clear_bits(starts, q + 1, min(q + len, e));
        p = q + len;
    }
    return p;
}

__device__ __forceinline__ u32 literal_size(u32 len) {
    return len + (len <= 60 ? 1 : (len <= 256 ? 2 : 3));
}

// Copy elements of one match: copy-2 pieces of 64 while >= 68 remain, one of 60 if more
// than 64 remain, then a copy-1 (<= 11 bytes, offset < 2048) or a copy-2.
__device__ __forceinline__ u32 copy_size(u32 offset, u32 len) {
    u32 pieces = 0;
    if (len >= 68) {
        const u32 k = (len - 68) / 64 + 1;
        pieces = k;
        len -= 64 * k;
    }
    if (len > 64) {
        pieces += 1;
        len -= 60;
    }
    return 3 * pieces + (len <= 11 && offset < 2048 ? 2 : 3);
}

// One thread: a literal element of blk[from .. from+len) at out[at]; returns the end.
__device__ u32 write_literal(u8* out, u32 at, const u8* blk, u32 from, u32 len) {
    const u32 n = len - 1;
    if (n < 60) {
        out[at++] = (u8)(n << 2);
    } else if (n < 256) {
        out[at++] = 60 << 2;
        out[at++] = (u8)n;
    } else {
        out[at++] = 61 << 2;
        out[at++] = (u8)n;
        out[at++] = (u8)(n >> 8);
    }
    // Four loads before four stores: the input and the output never overlap.
    u32 k = 0;
    for (; k + 4 <= len; k += 4) {
        const u8 a = blk[from + k], b = blk[from + k + 1], c = blk[from + k + 2],
                 d = blk[from + k + 3];
        out[at + k] = a;
        out[at + k + 1] = b;
        out[at + k + 2] = c;
        out[at + k + 3] = d;
    }
    for (; k < len; ++k) out[at + k] = blk[from + k];
    return at + len;
}

// One thread: the copy elements of one match at out[at]; returns the end.
__device__ u32 write_copy(u8* out, u32 at, u32 offset, u32 len) {
    while (len > 64) {
        const u32 piece = len >= 68 ? 64 : 60;
        out[at] = (u8)(((piece - 1) << 2) | 2);
        out[at + 1] = (u8)offset;
        out[at + 2] = (u8)(offset >> 8);
        at += 3;
        len -= piece;
    }
    if (len <= 11 && offset < 2048) {
        out[at] = (u8)(((offset >> 8) << 5) | ((len - 4) << 2) | 1);
        out[at + 1] = (u8)offset;
        return at + 2;
    }
    out[at] = (u8)(((len - 1) << 2) | 2);
    out[at + 1] = (u8)offset;
    out[at + 2] = (u8)(offset >> 8);
    return at + 3;
}

// Exclusive max over the block's threads (every thread calls it).
__device__ u32 block_exclusive_max(u32 v, u32* warp_vals) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    u32 inclusive = v;
#pragma unroll
    for (int k = 1; k < 32; k <<= 1) {
        const u32 up = __shfl_up_sync(FULL_MASK, inclusive, k);
        if (lane >= k) inclusive = max(inclusive, up);
    }
    if (lane == 31) warp_vals[warp] = inclusive;
    __syncthreads();
    u32 before = 0;
    for (int w = 0; w < warp; ++w) before = max(before, warp_vals[w]);
    const u32 up = __shfl_up_sync(FULL_MASK, inclusive, 1);
    __syncthreads();
    return max(before, lane > 0 ? up : 0u);
}

// The elements of the matches starting in [s, e) and the literals before them, from
// literal start `lit` (the last thread also the tail up to n): their size, and the
// literal start after them.
__device__ u32 segment_size(const u32* starts, const u32* best, u32 n, u32 s, u32 e, u32* lit,
                            bool last) {
    u32 size = 0, from = *lit;
    for (u32 q = next_bit(starts, s, e); q < e; q = next_bit(starts, q + 1, e)) {
        const u32 m = best[q];
        if (q > from) size += literal_size(q - from);
        size += copy_size(m & 0xffff, m >> 16);
        from = q + (m >> 16);
    }
    if (last && from < n) {
        size += literal_size(n - from);
        from = n;
    }
    *lit = from;
    return size;
}

extern "C" __global__ void __launch_bounds__(GM_THREADS)
    gmatch_blocks(const u8* in, const u64* block_in, const u32* block_len, u16* index_all,
                  u32* best_all, u8* slots, u32* out_sizes) {
    __shared__ u32 words[GM_TABLE / 2];  // pass 1: the table; then the two bitmaps
    __shared__ u32 exits[GM_THREADS];
    __shared__ u32 warp_vals[32];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const u32 b = blockIdx.x;
    const u8* blk = in + block_in[b];
    const u32 n = block_len[b];
    u16* index = index_all + (u64)b * GM_BLOCK;
    u32* best = best_all + (u64)b * GM_BLOCK;
    u8* out = slots + (u64)b * GM_SLOT;
    const u32 hashed = n >= 4 ? n - 3 : 0;
    u16* table = (u16*)words;

    // 0. Per unit: hash | needs the table << 15 | last writer << 16 | the lane of the
    //    in-unit candidate << 17, into `best` (free until step 2).
    for (u32 i = tid; i < GM_TABLE / 2; i += blockDim.x) words[i] = 0xffffffffu;
    for (u32 p = hashed + tid; p < n; p += blockDim.x) index[p] = GM_NONE;
    for (u32 base = warp * 32; base < hashed; base += blockDim.x) {
        const u32 p = base + lane;
        const bool active = p < hashed;
        const u32 word = active ? load_u32(blk + p) : 0;
        u32 prev = __shfl_up_sync(FULL_MASK, word, 1);
        if (lane == 0) prev = p > 0 ? load_u32(blk + p - 1) : ~word;
        const u32 h = gm_hash(word);
        const bool writes = active && word != prev;
        const u32 same = __match_any_sync(FULL_MASK, h) & __ballot_sync(FULL_MASK, writes);
        const u32 below = same & ((1u << lane) - 1);
        const bool last_writer = writes && (same >> lane) == 1;
        if (active) {
            const u32 peer_lane = below ? 31 - __clz(below) : 0;
            best[p] = h | ((u32)(below == 0) << 15) | ((u32)last_writer << 16) | (peer_lane << 17);
        }
    }
    __syncthreads();

    // 1. Pass 1, one warp, units in order; the next group's words are loaded ahead.
    if (warp == 0) {
        const int ahead = 8;
        u32 next[ahead];
#pragma unroll
        for (int k = 0; k < ahead; ++k) {
            const u32 p = k * 32 + lane;
            next[k] = p < hashed ? best[p] : 0;
        }
        for (u32 group = 0; group * 32 * ahead < hashed; ++group) {
            u32 cur[ahead];
#pragma unroll
            for (int k = 0; k < ahead; ++k) {
                cur[k] = next[k];
                const u32 p = ((group + 1) * ahead + k) * 32 + lane;
                next[k] = p < hashed ? best[p] : 0;
            }
#pragma unroll
            for (int k = 0; k < ahead; ++k) {
                const u32 p = (group * ahead + k) * 32 + lane;
                const u32 v = cur[k];
                const u32 h = v & (GM_TABLE - 1);
                const u32 cand = ((v >> 15) & 1) ? table[h] : p - lane + (v >> 17);
                __syncwarp();
                if (p < hashed && ((v >> 16) & 1)) table[h] = (u16)p;
                __syncwarp();
                if (p < hashed) index[p] = (u16)cand;
            }
        }
    }
    __syncthreads();

    // 2. Verification, matches measured up to GM_CAP bytes (exact below it; the walk
    //    measures longer ones to the end), and the bitmap of positions with a kept
    //    candidate.
    u32* kept = words;
    u32* starts = words + GM_BLOCK / 32;
    const u32 padded = (n + 31) & ~31u;
    for (u32 p = tid; p < padded; p += blockDim.x) {
        u32 m = 0;
        if (p < hashed) {
            m = best_match(blk, index, n, p, min(n - p, (u32)GM_CAP));
            if ((m >> 16) == GM_CAP && n - p > GM_CAP) m = GM_UNRESOLVED;
            best[p] = m;
        }
        const u32 mask = __ballot_sync(FULL_MASK, m != 0);
        if (lane == 0) {
            kept[p >> 5] = mask;
            starts[p >> 5] = 0;
        }
    }
    for (u32 w = padded / 32 + tid; w < GM_BLOCK / 32; w += blockDim.x) starts[w] = kept[w] = 0;
    __syncthreads();

    // 3. The parse: speculative walks per segment, then again where entries changed.
    const u32 s = min((u32)tid * GM_SEG, n), e = min(s + GM_SEG, n);
    u32 entry = s;
    exits[tid] = walk(blk, index, best, n, kept, starts, entry, s, e, false, 0);
    __syncthreads();
    for (;;) {
        const u32 from = tid == 0 ? 0 : exits[tid - 1];
        __syncthreads();
        const bool changed = from != entry;
        if (changed) {
            entry = from;
            exits[tid] = walk(blk, index, best, n, kept, starts, entry, s, e, true, exits[tid]);
        }
        if (!__syncthreads_or(changed)) break;
    }

    // 4. Sizes, places, bytes.
    u32 last_end = 0;
    for (u32 q = next_bit(starts, s, e); q < e; q = next_bit(starts, q + 1, e)) {
        last_end = q + (best[q] >> 16);
    }
    u32 lit = block_exclusive_max(last_end, warp_vals);
    const u32 lit_start = lit;
    const bool last = tid == (int)blockDim.x - 1;
    const u32 size = segment_size(starts, best, n, s, e, &lit, last);
    u32 total;
    const u32 at = block_exclusive_sum(size, warp_vals, &total);
    if (total > GM_SLOT) {
        if (tid == 0) out_sizes[b] = GM_SLOT_OVERFLOW;
        return;
    }
    // Every thread writes its own segment's elements at its place.
    u32 o = at, from = lit_start;
    for (u32 q = next_bit(starts, s, e); q < e; q = next_bit(starts, q + 1, e)) {
        const u32 m = best[q];
        if (q > from) o = write_literal(out, o, blk, from, q - from);
        o = write_copy(out, o, m & 0xffff, m >> 16);
        from = q + (m >> 16);
    }
    if (last && from < n) write_literal(out, o, blk, from, n - from);
    if (tid == 0) out_sizes[b] = total;
}

// Builds the final bytes from the blocks' elements: one block of threads per record.
// A record (GM_RECORD = 64 bytes, written by gmatch_layout) is
//   u64 dst | u64 src | u32 body_len | u32 flags | u32 prefix_len | u32 pad | u8 prefix[32]
// and produces out[dst..] = prefix ++ body, where the body is the record's block slot
// (flags & 1 == 0) or in[src .. src + body_len] (stored); flags & 2: bytes 4..8 of the
// prefix are replaced by crcs[record] (little-endian), the framed chunk's masked CRC.
extern "C" __global__ void gmatch_assemble(const u8* records, u64 count, const u8* slots,
                                           const u8* in, const u32* crcs, u8* out) {
    const u64 r = blockIdx.x;
    if (r >= count) return;
    const u8* rec = records + r * GM_RECORD;
    const u64 dst = *(const u64*)rec, src = *(const u64*)(rec + 8);
    const u32 body_len = *(const u32*)(rec + 16), flags = *(const u32*)(rec + 20);
    const u32 prefix_len = *(const u32*)(rec + 24);
    u8* to = out + dst;
    for (u32 k = threadIdx.x; k < prefix_len; k += blockDim.x) {
        u8 v = rec[32 + k];
        if ((flags & 2) && k >= 4 && k < 8) v = (u8)(crcs[r] >> (8 * (k - 4)));
        to[k] = v;
    }
    to += prefix_len;
    const u8* from = (flags & 1) ? in + src : slots + r * GM_SLOT;
    for (u32 k = threadIdx.x; k < body_len; k += blockDim.x) to[k] = from[k];
}

__device__ __forceinline__ u32 varint_len(u32 v) { return v < 128 ? 1 : (v < 16384 ? 2 : 3); }

__device__ __forceinline__ u32 put_varint(u8* p, u32 v) {
    u32 n = 0;
    while (v >= 128) {
        p[n++] = (u8)(v | 128);
        v >>= 7;
    }
    p[n++] = (u8)v;
    return n;
}

// Lays out the output of a launch's blocks (one thread block, tiles of blockDim.x blocks).
// Block b's piece is lead[b] bytes that the host fills (the headers of the buffers that
// start there) followed by its stream:
//   raw:    its elements;
//   blocks: varint(len) and its elements (the block as a raw Snappy stream);
//   framed: a chunk header (type, 3-byte length), the masked CRC, then varint(len) and the
//           elements, or the block's bytes when that does not save an eighth of them.
// Writes each block's assembly record, each stream's length (stream_lens[b], without the
// lead), the output's total in status[0] and, in status[1], 1 if a block's elements did
// not fit its slot (GM_SLOT_OVERFLOW from gmatch_blocks).
extern "C" __global__ void gmatch_layout(const u32* sizes, const u32* block_len,
                                         const u64* block_in, const u32* lead, u64 count,
                                         u32 format, u8* records, u32* stream_lens,
                                         u64* status) {
    __shared__ u32 warp_sums[32];
    __shared__ u64 carry;
    __shared__ u32 overflow;
    if (threadIdx.x == 0) {
        carry = 0;
        overflow = 0;
    }
    __syncthreads();
    for (u64 start = 0; start < count; start += blockDim.x) {
        const u64 b = start + threadIdx.x;
        const bool live = b < count;
        u32 size = live ? sizes[b] : 0, len = live ? block_len[b] : 0;
        if (live && size > GM_SLOT) {
            atomicOr(&overflow, 1u);
            size = 0;
        }
        u32 stream = 0, prefix_len = 0, body_len = size, flags = 0;
        u8 prefix[16];
        if (live) {
            if (format == GM_FORMAT_RAW) {
                stream = size;
            } else if (format == GM_FORMAT_BLOCKS) {
                prefix_len = put_varint(prefix, len);
                stream = prefix_len + size;
            } else {
                const u32 raw_len = varint_len(len) + size;
                const bool stored = raw_len >= len - len / 8;
                const u32 body = stored ? len : raw_len;
                prefix[0] = stored ? 0x01 : 0x00;
                prefix[1] = (u8)(4 + body);
                prefix[2] = (u8)((4 + body) >> 8);
                prefix[3] = (u8)((4 + body) >> 16);
                prefix_len = 8;  // bytes 4..8: the CRC, filled by gmatch_assemble
                if (!stored) prefix_len += put_varint(prefix + 8, len);
                body_len = stored ? len : size;
                flags = (stored ? 1u : 0u) | 2u;
                stream = 8 + body;
            }
        }
        const u32 piece = live ? lead[b] + stream : 0;
        u32 tile_total;
        const u32 before = block_exclusive_sum(piece, warp_sums, &tile_total);
        if (live) {
            u8* rec = records + b * GM_RECORD;
            *(u64*)rec = carry + before + lead[b];
            *(u64*)(rec + 8) = block_in[b];
            *(u32*)(rec + 16) = body_len;
            *(u32*)(rec + 20) = flags;
            *(u32*)(rec + 24) = prefix_len;
            *(u32*)(rec + 28) = 0;
            for (u32 k = 0; k < prefix_len; ++k) rec[32 + k] = prefix[k];
            stream_lens[b] = stream;
        }
        __syncthreads();
        if (threadIdx.x == 0) carry += tile_total;
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        status[0] = carry;
        status[1] = overflow;
    }
}
