// Row selection over decoded columns in device memory: a conjunction of tests on
// integer values, then the rows that pass copied together, column by column, in order.
//
// A window of table blocks is cut into tiles of at most SELECT_TILE_ROWS rows, each inside
// one block (tile_block[t], first row tile_start[t], tile_rows[t] rows); one CUDA block
// works one tile. A column is given by the device address of each table block's values
// (column[b]); values are little-endian integers of `width` bytes (1, 2, 4 or 8), read
// sign- or zero-extended to 64 bits. The pass mask has one byte per row of the window,
// row r of block b at base[b] + r.
//
// Tests (`op`): 0 range lo <= v <= hi; 1 v != lo; 2 v in list; 3 v not in list; 4 no
// row; 5 every row; 6 lookup: v passes when bit v of block b's bitmap is set, list[2b]
// being the word where that bitmap starts and list[2b + 1] the values it covers (the host
// builds one for every block of the window). Lists of 2 and 3 are sorted ascending.

typedef long long i64;

__device__ __forceinline__ i64 read_value(const u8* values, u64 row, u32 width, u32 is_signed) {
    switch (width) {
    case 1:
        return is_signed ? (i64)((const signed char*)values)[row] : (i64)values[row];
    case 2:
        return is_signed ? (i64)((const short*)values)[row] : (i64)((const u16*)values)[row];
    case 4:
        return is_signed ? (i64)((const int*)values)[row] : (i64)((const u32*)values)[row];
    default:
        return ((const i64*)values)[row];
    }
}

__device__ __forceinline__ bool in_list(i64 v, const i64* list, u32 len) {
    u32 lo = 0, hi = len;
    while (lo < hi) {
        u32 mid = (lo + hi) >> 1;
        if (list[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo < len && list[lo] == v;
}

// Whether value v of block b passes a lookup (op 6). Every read is checked against
// list_len: an entry outside the list fails.
__device__ __forceinline__ bool in_lookup(i64 v, u32 b, const u64* list, u32 list_len) {
    if (v < 0 || 2 * (u64)b + 1 >= list_len) return false;
    const u64 start = list[2 * (u64)b], count = list[2 * (u64)b + 1];
    if ((u64)v >= count) return false;
    const u64 word = start + (u64)v / 64;
    if (word >= list_len) return false;
    return (list[word] >> ((u64)v % 64)) & 1;
}

extern "C" __global__ void select_test(const u32* tile_block, const u32* tile_start,
                                       const u32* tile_rows, const u64* base,
                                       const u64* column, const u32* widths, u32 is_signed,
                                       u32 op,
                                       i64 lo, i64 hi, const i64* list, u32 list_len,
                                       u8* mask, u32 first) {
    const u32 t = blockIdx.x;
    const u32 b = tile_block[t];
    const u64 start = tile_start[t];
    const u32 rows = tile_rows[t];
    const u8* values = (const u8*)column[b];
    const u32 width = widths[b];
    u8* out = mask + base[b] + start;
    for (u32 r = threadIdx.x; r < rows; r += blockDim.x) {
        bool pass;
        if (op == 4) {
            pass = false;
        } else if (op == 5) {
            pass = true;
        } else {
            const i64 v = read_value(values, start + r, width, is_signed);
            // In unsigned arithmetic, where wrapping is defined: one compare a value.
            if (op == 0) pass = (u64)v - (u64)lo <= (u64)hi - (u64)lo;
            else if (op == 1) pass = v != lo;
            else if (op == 6) pass = in_lookup(v, b, (const u64*)list, list_len);
            else pass = in_list(v, list, list_len) == (op == 2);
        }
        out[r] = first ? (u8)pass : (u8)(out[r] & (u8)pass);
    }
}

// Counts each tile's passing rows (counts[t]) and packs the mask into bits, one bitmap per
// table block starting at word bits_at[b] (u32 words, bit r of the block at word r / 32):
// a tile's first row is a multiple of 32 within its block, so a warp's 32 rows are one
// word.
extern "C" __global__ void select_count(const u32* tile_block, const u32* tile_start,
                                        const u32* tile_rows, const u64* base, const u8* mask,
                                        const u64* bits_at, u32* bits, u32* counts) {
    const u32 t = blockIdx.x;
    const u32 b = tile_block[t];
    const u32 start = tile_start[t];
    const u32 rows = tile_rows[t];
    const u8* in = mask + base[b] + start;
    u32 total = 0;
    for (u32 at = 0; at < rows; at += blockDim.x) {
        const u32 r = at + threadIdx.x;
        const bool pass = r < rows && in[r] != 0;
        const u32 word = __ballot_sync(FULL_MASK, pass);
        if ((threadIdx.x & 31) == 0 && at + threadIdx.x < rows) {
            bits[bits_at[b] + (start + r) / 32] = word;
        }
        total += __syncthreads_count(pass);
    }
    if (threadIdx.x == 0) counts[t] = total;
}

// Copies the passing rows of one column, in order: tile t's go to `out` from row out_at[t]
// on (the exclusive prefix sum of the tiles' counts), each `out_width` bytes: a value
// stored narrower in its block (a decimal narrowed there, never an unsigned type) is
// sign-extended to it.
extern "C" __global__ void select_compact(const u32* tile_block, const u32* tile_start,
                                          const u32* tile_rows, const u64* base,
                                          const u8* mask, const u64* out_at,
                                          const u64* column, const u32* widths, u32 out_width,
                                          u8* out) {
    __shared__ u32 warp_sums[32];
    const u32 t = blockIdx.x;
    const u32 b = tile_block[t];
    const u64 start = tile_start[t];
    const u32 rows = tile_rows[t];
    const u8* in = mask + base[b] + start;
    const u8* values = (const u8*)column[b];
    const u32 width = widths[b];
    u64 next = out_at[t];
    for (u32 at = 0; at < rows; at += blockDim.x) {
        const u32 r = at + threadIdx.x;
        const u32 pass = r < rows && in[r] != 0;
        u32 passed;
        const u32 before = block_exclusive_sum(pass, warp_sums, &passed);
        if (pass) {
            const u64 from = start + r, to = next + before;
            if (width == out_width) {
                switch (width) {
                case 1: out[to] = values[from]; break;
                case 2: ((u16*)out)[to] = ((const u16*)values)[from]; break;
                case 4: ((u32*)out)[to] = ((const u32*)values)[from]; break;
                default: ((u64*)out)[to] = ((const u64*)values)[from]; break;
                }
            } else {
                const i64 v = read_value(values, from, width, 1);
                switch (out_width) {
                case 2: ((short*)out)[to] = (short)v; break;
                case 4: ((int*)out)[to] = (int)v; break;
                default: ((i64*)out)[to] = v; break;
                }
            }
        }
        next += passed;
        __syncthreads();
    }
}
